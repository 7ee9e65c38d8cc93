/** @file ONNX lowering of complex values (float tensors [..., 2]): each rule against the reference interpreter, and jitted complex programs that compile to one ONNX step with no host step. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import { onnxBackend } from "../../src/backends/onnx/onnx-backend.js";
import type { Array } from "../../src/core/array.js";
import { ArrayImpl } from "../../src/core/array-impl.js";
import { ShapedArray } from "../../src/core/aval.js";
import { config } from "../../src/core/config.js";
import { joinComplex } from "../../src/core/convert.js";
import type { DType } from "../../src/core/dtype.js";
import { evalJaxpr } from "../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { type Params, getPrimitive } from "../../src/core/primitive.js";
import { evalTrace, withTrace } from "../../src/core/trace.js";
import { compileJaxpr } from "../../src/compiler/compile.js";
import * as ops from "../../src/primitives/ops.js";
import { fftNativeOptions } from "../../src/primitives/complex-lower.js";
import { nativeLinalgOps } from "../../src/backends/onnx/ort-runtime.js";
import * as lax from "../../src/lax/index.js";
import * as np from "../../src/numpy/index.js";
import { jit } from "../../src/transforms/api.js";
import { assertCloseC } from "../helpers/complex-fixtures.js";
import { arr } from "./harness.js";

/** A complex array of `shape` cycling through (re, im) pairs. */
function carr(dtype: "complex64" | "complex128", shape: number[], pairs: [number, number][]): ArrayImpl {
  const n = shape.reduce((a, b) => a * b, 1);
  const re: number[] = [],
    im: number[] = [];
  for (let i = 0; i < n; i++) {
    const [a, b] = pairs[i % pairs.length];
    re.push(a);
    im.push(b);
  }
  return new ArrayImpl(new ShapedArray(shape, dtype), joinComplex(re, im, dtype));
}
// finite values with signed zeros, pure reals and imaginaries, small and large parts
const PAIRS: [number, number][] = [
  [1.5, -0.5],
  [-2, 3],
  [0, 0],
  [-4, -0],
  [-4, 0],
  [0.3, 1e-8],
  [1e-9, 2e-9],
  [25, 1],
  [-30, -2],
  [0, -1.25],
  [3, 4],
  [0.7, 0.2],
];

/**
 * Traces f, asserts the jaxpr compiles to ONNX with no host step (strict: a failing rule throws), and compares the
 * ONNX result with the interpreter's.
 */
function checkLowered(label: string, f: (...xs: Array[]) => Array[], args: ArrayImpl[], tol = {}): void {
  const { jaxpr, consts } = traceToJaxpr(
    f,
    args.map((a) => a.aval),
    label,
  );
  const program = compileJaxpr(jaxpr, { strict: true });
  assert.deepEqual(program.notes, [], `${label}: host steps:\n${program.notes.join("\n")}`);
  assert.ok(
    program.steps.every((s) => s.kind === "onnx"),
    `${label}: every step is ONNX`,
  );
  const prev = config.backend;
  config.update("backend", "interpreter");
  let expected: ArrayImpl[];
  try {
    expected = withTrace(evalTrace, () => evalJaxpr(jaxpr, consts as ArrayImpl[], args)) as ArrayImpl[];
  } finally {
    config.update("backend", prev);
  }
  const actual = onnxBackend.executeJaxpr!(jaxpr, consts as ArrayImpl[], args, { name: label });
  actual.forEach((a, i) => assertCloseC(a, expected[i], { ...tol, msg: `${label} out ${i}` }));
}
const prim =
  (name: string, params: Params = {}) =>
  (...xs: Array[]) =>
    ops.bindN(getPrimitive(name), xs, params);

for (const dt of ["complex64", "complex128"] as const) {
  const z = carr(dt, [3, 4], PAIRS),
    w = carr(
      dt,
      [3, 4],
      [...PAIRS].reverse().map(([a, b]) => [b + 0.5, a - 0.25]),
    );
  const s = carr(dt, [], [[0.5, -2]]);
  const part: DType = dt === "complex64" ? "float32" : "float64";
  // the lowered transcendental functions compute in float64 and round once, as the interpreter's kernels
  const tol = dt === "complex64" ? { rtol: 2e-6, atol: 1e-6 } : { rtol: 1e-12, atol: 1e-14 };

  test(`${dt}: elementwise complex rules lower to ONNX and match the interpreter`, () => {
    for (const n of [
      "exp",
      "log",
      "sqrt",
      "sin",
      "cos",
      "tan",
      "tanh",
      "sinh",
      "cosh",
      "expm1",
      "log1p",
      "sign",
      "rsqrt",
      "logistic",
      "abs",
      "neg",
      "real",
      "imag",
      "conj",
      "copy",
    ]) {
      // log/rsqrt/... of 0 is infinite or NaN on both: compare away from 0
      const x = ["log", "rsqrt", "logistic"].includes(n) ? carr(dt, [3, 4], PAIRS.slice(0, 2)) : z;
      checkLowered(`${n}(${dt})`, prim(n), [x], tol);
    }
    for (const y of [0, 1, 3, -2, 5]) checkLowered(`integer_pow(${dt}, ${y})`, prim("integer_pow", { y }), [z], tol);
    for (const n of ["add", "sub", "mul", "div", "pow", "eq", "ne"]) {
      checkLowered(`${n}(${dt}, ${dt})`, prim(n), [z, w], tol);
      checkLowered(`${n}(${dt}, rank-0)`, prim(n), [z, s], tol);
    }
    checkLowered(`eq(z, z) (${dt})`, prim("eq"), [z, z]);
    checkLowered(`complex(${part})`, prim("complex"), [arr(part, [2, 3], [1, -2, 0, 3.5, -0, 7]), arr(part, [], [2])]);
  });

  test(`${dt}: conversions, structural ops, reductions and dot_general lower to ONNX`, () => {
    const other = dt === "complex64" ? "complex128" : "complex64";
    checkLowered(`convert ${dt} -> ${other}`, (x) => [ops.convert(x, other)], [z], { rtol: 2e-6, atol: 1e-6 });
    checkLowered(`convert ${dt} -> ${part}`, (x) => [ops.convert(x, part)], [z]);
    checkLowered(`convert ${dt} -> int32`, (x) => [ops.convert(x, "int32")], [z]);
    checkLowered(`convert int32 -> ${dt}`, (x) => [ops.convert(x, dt)], [arr("int32", [4], [-3, 0, 7, 100000])]);
    checkLowered(`convert ${part} -> ${dt}`, (x) => [ops.convert(x, dt)], [arr(part, [3], [-1.5, -0, 2])]);
    checkLowered(`transpose`, (x) => [ops.transpose(x, [1, 0])], [z]);
    checkLowered(`reshape`, (x) => [ops.reshape(x, [2, 6])], [z]);
    checkLowered(`broadcast_in_dim`, (x) => [ops.broadcastInDim(x, [2, 3, 4], [1, 2])], [z]);
    checkLowered(`slice`, (x) => [ops.slice(x, [1, 0], [3, 4], [1, 2])], [z]);
    checkLowered(
      `pad`,
      (x) => [
        ops.pad(x, ops.scalarLike(x, 0), [
          [1, 0, 1],
          [0, 2, 0],
        ]),
      ],
      [z],
    );
    checkLowered(`concatenate`, (x, y) => [ops.concatenate([x, y], 1)], [z, w]);
    checkLowered(`rev`, (x) => [ops.rev(x, [0, 1])], [z]);
    checkLowered(`select_n`, (p, x, y) => [ops.select(p, x, y)], [arr("bool", [3, 4], [true, false, false]), z, w]);
    checkLowered(`reduce_sum`, (x) => [ops.reduceSum(x, [1]), ops.reduceSum(x, [0, 1])], [z], { rtol: 1e-5 });
    checkLowered(`cumsum`, (x) => [ops.cumulative("cumsum", x, 1)], [z], { rtol: 1e-5 });
    const dn = [
      [[1], [0]],
      [[], []],
    ];
    checkLowered(
      `dot_general`,
      (a, b) => [ops.dotGeneral(a, b, dn as never)],
      [z, ops.transpose(w, [1, 0]) as ArrayImpl],
      {
        rtol: 1e-5,
      },
    );
  });
}

test("complex64 fft lowers to ORT's DFT (or jaxts.Fft) for every fft_type; complex128 is a host step without jaxts.Fft64 (ORT's float64 DFT)", () => {
  const x = carr("complex64", [2, 6], PAIRS);
  const tol = { rtol: 2e-5, atol: 2e-5 };
  checkLowered("FFT", (v) => [ops.fft(v, "FFT", [6])], [x], tol);
  checkLowered("IFFT", (v) => [ops.fft(v, "IFFT", [6])], [x], tol);
  checkLowered("FFT 2-D", (v) => [ops.fft(v, "FFT", [2, 6])], [x], tol);
  checkLowered("IFFT 2-D", (v) => [ops.fft(v, "IFFT", [2, 6])], [x], tol);
  const r = arr("float32", [2, 7], [0.5, -1, 2, 3, 0, 1.5, -2.5, 4, 1, 0.25, -3, 2, 1, 0]);
  checkLowered("RFFT odd", (v) => [ops.fft(v, "RFFT", [7])], [r], tol);
  checkLowered("RFFT 2-D", (v) => [ops.fft(v, "RFFT", [2, 7])], [r], tol);
  const h = carr("complex64", [2, 4], PAIRS);
  checkLowered("IRFFT even", (v) => [ops.fft(v, "IRFFT", [6])], [h], tol);
  checkLowered("IRFFT odd", (v) => [ops.fft(v, "IRFFT", [7])], [h], tol);
  checkLowered("IRFFT 2-D", (v) => [ops.fft(v, "IRFFT", [2, 7])], [h], tol);
  const { jaxpr } = traceToJaxpr((v) => [ops.fft(v, "FFT", [4])], [new ShapedArray([4], "complex128")], "fft128");
  // with the native FFT (the default in native-runner sessions) complex128 is an ONNX step; without it a host step
  if (fftNativeOptions.enabled && nativeLinalgOps()) assert.deepEqual(compileJaxpr(jaxpr, { strict: true }).notes, []);
  const saved = fftNativeOptions.enabled;
  fftNativeOptions.enabled = false;
  try {
    const notes = compileJaxpr(jaxpr, { strict: true }).notes;
    assert.equal(notes.length, 1);
    assert.match(notes[0], /fft runs on the interpreter: .*float64 DFT/);
  } finally {
    fftNativeOptions.enabled = saved;
  }
});

test("jitted complex programs (x*y + exp(z), an fft, a complex matmul) compile to one ONNX step with no host step", () => {
  const x = carr("complex64", [4, 4], PAIRS),
    y = carr("complex64", [4, 4], PAIRS.slice(3)),
    zz = carr("complex64", [4, 4], PAIRS.slice(5));
  const f = (a: Array, b: Array, c: Array): Array =>
    np.add(np.matmul(np.add(np.multiply(a, b), np.exp(c)), np.fft.fft(c)), np.abs(a));
  const { jaxpr } = traceToJaxpr((a, b, c) => [f(a, b, c)], [x.aval, y.aval, zz.aval], "program");
  const program = compileJaxpr(jaxpr, { strict: true });
  assert.deepEqual(program.notes, []);
  assert.equal(program.steps.length, 1);
  assert.equal(program.steps[0].kind, "onnx");
  checkLowered("program", (a, b, c) => [f(a, b, c)], [x, y, zz], { rtol: 2e-5, atol: 2e-5 });
  // and jit runs it (the ONNX result, against the interpreter's)
  assertCloseC(
    jit(f)(x, y, zz),
    withInterpreter(() => f(x, y, zz)),
    { rtol: 2e-5, atol: 2e-5 },
  );
});

function withInterpreter<T>(g: () => T): T {
  const prev = config.backend;
  config.update("backend", "interpreter");
  try {
    return g();
  } finally {
    config.update("backend", prev);
  }
}

test("control flow carrying complex values (scan, while, cond) lowers to ONNX Loop / If and matches the interpreter", () => {
  for (const dt of ["complex64", "complex128"] as const) {
    const tol = dt === "complex64" ? { rtol: 2e-5, atol: 2e-5 } : { rtol: 1e-12, atol: 1e-12 };
    const c0 = carr(dt, [3], PAIRS.slice(0, 3)),
      xs = carr(dt, [5, 3], PAIRS);
    // scan: complex carry and xs, complex ys (forward and reverse)
    for (const reverse of [false, true])
      checkLowered(
        `${dt} scan${reverse ? " reverse" : ""}`,
        (c, x) => {
          const [cf, ys] = lax.scan(
            (carry: Array, xi: Array): [Array, Array] => {
              const next = ops.add(
                ops.mul(carry, ops.mul(xi, ops.scalarLike(xi, 0.25))),
                ops.exp(ops.mul(xi, ops.scalarLike(xi, 0.1))),
              );
              return [next, ops.mul(next, ops.conj(xi))];
            },
            c,
            x,
            { reverse },
          );
          return [cf, ys];
        },
        [c0, xs],
        tol,
      );
    // while: an int counter beside a complex carry
    const w = carr(dt, [3], PAIRS.slice(3, 6));
    checkLowered(
      `${dt} while`,
      (z, m) => {
        const [, out] = lax.whileLoop(
          ([i]: Array[]) => ops.lt(i, ops.full([], 4, "int32")),
          ([i, v]: Array[]) => [ops.add(i, ops.full([], 1, "int32")), ops.add(ops.mul(v, m), ops.scalarLike(v, 1))],
          [ops.full([], 0, "int32"), z],
        );
        return [out];
      },
      [c0, w],
      tol,
    );
    // cond: both branches complex
    for (const p of [true, false])
      checkLowered(
        `${dt} cond ${p}`,
        (z, m) => {
          const r = lax.cond(
            ops.full([], p, "bool"),
            (a: Array, b: Array) => ops.mul(a, b),
            (a: Array, b: Array) => ops.sub(ops.conj(a), b),
            z,
            m,
          );
          return [r as Array];
        },
        [c0, w],
        tol,
      );
  }
});
