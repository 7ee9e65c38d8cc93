/** @file Test helper shared by fused-elementwise.test.ts and native-isa-child.ts: edge values and one fused program per operation, to compare the native fused kernel with the WebAssembly one. */
import type { FusedSpec } from "../../../src/compiler/fuse-elementwise.js";

/** Zeros of both signs, subnormals, the exp/log/tanh clamp points, the 2^23 rounding edge, overflow, NaN, infinities. */
export const FUSED_EDGE_VALUES: readonly number[] = [
  0,
  -0,
  1e-45,
  -1e-45,
  1.17549435e-38,
  -1.17549435e-38,
  1e-30,
  0.5,
  -0.5,
  1.5,
  -1.5,
  2.5,
  88.72,
  89,
  -104,
  9,
  -9,
  8388607.5,
  -8388607.5,
  8388608,
  16777217,
  3.4e38,
  -3.4e38,
  NaN,
  Infinity,
  -Infinity,
];

/** A labelled program with its full-size inputs and scalar operands. */
export type FusedProgram = [string, FusedSpec, Float32Array[], number[]];
type V = FusedSpec["values"][number];

/** A FusedSpec over `len` elements without params. */
export const fusedSpec = (
  values: FusedSpec["values"],
  outputs: number[],
  numInputs: number,
  len: number,
  numScalars = 0,
): FusedSpec => ({
  values,
  outputs,
  params: [],
  numInputs,
  numScalars,
  shape: [len],
});

/** One program per unary (on |a| where the domain needs it), binary and comparison operation (comparisons feed logic and selects: masks are not outputs). */
export function operationPrograms(a: Float32Array, b: Float32Array): FusedProgram[] {
  const len = a.length;
  const pos = a.map((v) => Math.abs(v));
  const unary = ["neg", "abs", "sqrt", "rsqrt", "floor", "ceil", "sign", "exp", "log", "tanh", "logistic"] as const;
  const binary = ["add", "sub", "mul", "div", "max", "min"] as const;
  const compare = ["eq", "ne", "lt", "le", "gt", "ge"] as const;
  const in0: V = { kind: "input", index: 0 },
    in1: V = { kind: "input", index: 1 };
  return [
    ...unary.map((op): FusedProgram => [
      op,
      fusedSpec([in0, { kind: "op", op, args: [0] }], [1], 1, len),
      [op === "log" || op === "sqrt" || op === "rsqrt" ? pos : a],
      [],
    ]),
    ...binary.map((op): FusedProgram => [
      op,
      fusedSpec([in0, in1, { kind: "op", op, args: [0, 1] }], [2], 2, len),
      [a, b],
      [],
    ]),
    ...compare.map((op): FusedProgram => [
      op,
      fusedSpec(
        [
          in0,
          in1,
          { kind: "op", op, args: [0, 1] },
          { kind: "op", op: "not", args: [2] },
          { kind: "op", op: "and", args: [2, 3] },
          { kind: "op", op: "or", args: [2, 4] },
          { kind: "op", op: "select", args: [5, 0, 1] },
          { kind: "scalar", index: 0 },
          { kind: "const", value: -0.25 },
          { kind: "op", op: "select", args: [3, 7, 8] },
        ],
        [6, 9],
        2,
        len,
        1,
      ),
      [a, b],
      [1.75],
    ]),
  ];
}
