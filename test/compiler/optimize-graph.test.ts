/** @file Graph rewrites before serialization: folded broadcasts, Gemm forms of matrix products and their epilogues, relu's select as Max, collapsed reshapes, dead nodes; every program still matches the interpreter. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { loweringSummary, onnxBackendOptions } from "../../src/backends/onnx/onnx-backend.js";
import type { ArrayImpl } from "../../src/core/array-impl.js";
import type { Array } from "../../src/core/array.js";
import * as ops from "../../src/primitives/ops.js";
import { compileOptions } from "../../src/compiler/compile.js";
import { arr, checkProgram } from "./harness.js";

// these programs are about the ONNX graph: keep pure elementwise ones on ONNX Runtime too, unfused
onnxBackendOptions.fuseElementwise = false;
compileOptions.fuseInGraph = false;

/** Compiles f for args, checks it against the interpreter (float tolerance), returns the ONNX summary. */
function program(
  f: (...xs: Array[]) => Array[],
  args: ArrayImpl[],
  label: string,
  tol?: { rtol?: number; atol?: number },
): string {
  return loweringSummary(checkProgram(f, args, label, tol), label);
}

const seq = (n: number, scale = 1, shift = 0): number[] =>
  globalThis.Array.from({ length: n }, (_, i) => (((i * 7919) % 17) - 8) * scale + shift);
const count = (text: string, op: string): number => (text.match(new RegExp(`= ${op}[\\[(]`, "g")) ?? []).length;

test("a bias broadcast folds into the broadcasting op (no Expand), and a matrix product plus bias becomes one Gemm", () => {
  const x = arr("float32", [4, 3], seq(12, 0.5)),
    w = arr("float32", [3, 5], seq(15, 0.25)),
    b = arr("float32", [5], seq(5, 0.1));
  const text = program(
    (xv, wv, bv) => [
      ops.add(
        ops.dotGeneral(xv, wv, [
          [[1], [0]],
          [[], []],
        ]),
        ops.broadcastInDim(bv, [4, 5], [1]),
      ),
    ],
    [x, w, b],
    "affine",
  );
  assert.equal(count(text, "Expand"), 0, text);
  assert.equal(count(text, "Gemm"), 1, text);
  assert.equal(count(text, "Add"), 0, text);
  const t2 = program(
    (xv, bv) => [ops.mul(xv, ops.broadcastInDim(bv, [4, 3], [0]))],
    [x, arr("float32", [4], [1, -2, 3, 0.5])],
    "rowscale",
  );
  assert.equal(count(t2, "Expand"), 0, t2);
});

test("transposed operands and results of matrix products are Gemm attributes, not Transpose nodes", () => {
  const a = arr("float32", [3, 4], seq(12, 0.5)),
    b = arr("float32", [3, 5], seq(15, 0.3)),
    c = arr("float32", [5, 4], seq(20, 0.2));
  // a^T b (contract dim 0 of both), a c^T (contract dim 1 of both), (a^T b)^T
  const text = program(
    (av, bv, cv) => {
      const atb = ops.dotGeneral(av, bv, [
        [[0], [0]],
        [[], []],
      ]);
      return [
        atb,
        ops.dotGeneral(av, cv, [
          [[1], [1]],
          [[], []],
        ]),
        ops.transpose(
          ops.dotGeneral(av, bv, [
            [[0], [0]],
            [[], []],
          ]),
          [1, 0],
        ),
      ];
    },
    [a, b, c],
    "transposes",
  );
  assert.equal(count(text, "Transpose"), 0, text);
  assert.equal(count(text, "Gemm"), 3, text);
  assert.match(text, /Gemm\[transA=1 transB=0\]/);
  assert.match(text, /Gemm\[transA=0 transB=1\]/);
});

test("an SGD update w - lr * (x^T g) is one Gemm with alpha = -lr and C = w", () => {
  const x = arr("float32", [6, 4], seq(24, 0.5)),
    g = arr("float32", [6, 3], seq(18, 0.25)),
    w = arr("float32", [4, 3], seq(12, 0.1, 1));
  const text = program(
    (xv, gv, wv) => [
      ops.sub(
        wv,
        ops.mul(
          ops.dotGeneral(xv, gv, [
            [[0], [0]],
            [[], []],
          ]),
          ops.scalarLike(wv, 0.01),
        ),
      ),
    ],
    [x, g, w],
    "sgd",
    { rtol: 1e-5, atol: 1e-6 },
  );
  assert.equal(count(text, "Gemm"), 1, text);
  assert.equal(count(text, "Mul") + count(text, "Sub"), 0, text);
  assert.match(text, /alpha=-0\.0099999/);
  // a Gemm result read twice keeps its epilogue ops
  const t2 = program(
    (xv, gv, wv) => {
      const d = ops.dotGeneral(xv, gv, [
        [[0], [0]],
        [[], []],
      ]);
      return [ops.sub(wv, d), d];
    },
    [x, g, w],
    "shared",
  );
  assert.equal(count(t2, "Sub"), 1, t2);
  // an empty contraction (K = 0) keeps its epilogue: ORT's Gemm returns C unscaled there, so x y - w would come out as +w
  const e = arr("float32", [3, 0], []),
    f = arr("float32", [0, 4], []),
    z = arr("float32", [3, 4], seq(12, 0.5, 1));
  const t3 = program(
    (ev, fv, zv) => [
      ops.sub(
        ops.dotGeneral(ev, fv, [
          [[1], [0]],
          [[], []],
        ]),
        zv,
      ),
    ],
    [e, f, z],
    "empty contraction",
  );
  assert.equal(count(t3, "Sub"), 1, t3);
});

test("relu's select against zero is Max (exact on NaN and -0); other float selects keep exact -0 handling", () => {
  const x = arr("float32", [2, 4], [NaN, -0, 0, -1, 2, -Infinity, Infinity, 1e-3]);
  const relu = program(
    (v) => {
      const z = ops.full(v.shape, 0, "float32");
      return [ops.select(ops.le(v, z), z, v)];
    },
    [x],
    "relu",
  );
  assert.equal(count(relu, "Max"), 1, relu);
  assert.equal(count(relu, "Where"), 0, relu);
  assert.equal(count(relu, "BitCast"), 0, relu);
  // relu's backward select(x <= 0, 0, g): the value taken where the predicate holds is a constant -> plain Where
  const g = arr("float32", [2, 4], [-0, 1, -0, 2, -3, -0, 5, 6]);
  const back = program(
    (v, gv) => {
      const z = ops.full(v.shape, 0, "float32");
      return [ops.select(ops.le(v, z), z, gv)];
    },
    [x, g],
    "reluback",
  );
  assert.equal(count(back, "Where"), 1, back);
  assert.equal(count(back, "BitCast"), 0, back);
  // a non-constant value where the predicate holds may be -0.0: selected by bit pattern
  const general = program((v, gv) => [ops.select(ops.lt(v, gv), gv, v)], [x, g], "select");
  assert.ok(count(general, "BitCast") > 0, general);
});

test("reshape chains collapse and dead nodes disappear", () => {
  const x = arr("float32", [4, 3], seq(12));
  const text = program(
    (v) => {
      const s = ops.reduceSum(v, [1]);
      const back = ops.reshape(ops.reshape(s, [4, 1]), [4]);
      return [ops.mul(back, ops.reshape(ops.reshape(back, [2, 2]), [4]))];
    },
    [x],
    "reshapes",
  );
  assert.equal(count(text, "Reshape"), 0, text);
  // the compiled graph has only live nodes: an unused broadcast leaves nothing behind
  const t2 = program(
    (v) => {
      void ops.broadcastInDim(v, [2, 4, 3], [1, 2]);
      return [ops.neg(v)];
    },
    [x],
    "dead",
  );
  assert.equal(count(t2, "Expand"), 0, t2);
});

test("a float32 sum over a matrix's leading axis (a bias gradient) is a product with a ones row; small and other-axis sums stay ReduceSum, ints never become a (float-only) Gemm", () => {
  const big = arr("float32", [64, 160], seq(64 * 160, 0.125, 0.5));
  const text = program((xv) => [ops.reduceSum(xv, [0])], [big], "colsum", { rtol: 1e-5, atol: 1e-5 });
  assert.equal(count(text, "ReduceSum"), 0, text);
  assert.equal(count(text, "Gemm"), 1, text);
  const rows = program((xv) => [ops.reduceSum(xv, [1])], [big], "rowsum", { rtol: 1e-5, atol: 1e-5 });
  assert.equal(count(rows, "ReduceSum"), 1, rows);
  const small = program((xv) => [ops.reduceSum(xv, [0])], [arr("float32", [8, 16], seq(128, 0.5))], "small");
  assert.equal(count(small, "ReduceSum"), 1, small);
  const ints = program((xv) => [ops.reduceSum(xv, [0])], [arr("int32", [64, 160], seq(64 * 160))], "ints");
  assert.equal(count(ints, "Gemm"), 0, ints);
});
