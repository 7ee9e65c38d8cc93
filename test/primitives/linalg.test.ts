/** @file The linalg primitives (cholesky, triangular_solve, lu, qr, eigh, svd) through the shared harness: JAX's jvp rules vs finite differences, vjp, vmap, jit. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as P from "../../src/primitives/linalg.js";
import { type Spec, checkSpec } from "./harness.js";

/** x x^T + n I: symmetric positive definite from any square x (batched). */
const spd = (x: Array): Array =>
  ops.add(P.mm(x, P.mT(x)), ops.mul(P.eyeLike(x.shape, x.dtype), ops.scalarLike(x, x.shape[x.ndim - 1])));
/** Well-conditioned triangular-ish matrix: x + 4 I. */
const diagDom = (x: Array): Array => ops.add(x, ops.mul(P.eyeLike(x.shape, x.dtype), ops.scalarLike(x, 4)));
const sym = (x: Array): Array => ops.mul(ops.add(x, P.mT(x)), ops.scalarLike(x, 0.5));

const SPECS: Spec[] = [
  { name: "cholesky", f: (x) => P.cholesky(spd(x)), args: [{ shape: [3, 3] }] },
  { name: "cholesky (batched)", f: (x) => P.cholesky(spd(x)), args: [{ shape: [2, 3, 3] }] },
  {
    name: "triangular_solve left lower",
    f: (a, b) => P.triangularSolve(diagDom(a), b, { leftSide: true, lower: true }),
    args: [{ shape: [3, 3] }, { shape: [3, 2] }],
  },
  {
    name: "triangular_solve right upper transposed",
    f: (a, b) => P.triangularSolve(diagDom(a), b, { leftSide: false, lower: false, transposeA: true }),
    args: [{ shape: [3, 3] }, { shape: [2, 3] }],
  },
  {
    name: "triangular_solve unit diagonal",
    f: (a, b) => P.triangularSolve(a, b, { leftSide: true, lower: true, unitDiagonal: true }),
    args: [{ shape: [3, 3], lo: -0.5, hi: 0.5 }, { shape: [3, 1] }],
  },
  { name: "lu (square)", f: (x) => P.lu(diagDom(x)), args: [{ shape: [3, 3] }] },
  { name: "lu (tall)", f: (x) => P.lu(x), args: [{ shape: [4, 2] }] },
  { name: "lu (wide)", f: (x) => P.lu(x), args: [{ shape: [2, 4] }] },
  { name: "qr (reduced, tall)", f: (x) => P.qr(x), args: [{ shape: [4, 3] }] },
  { name: "qr (square, full)", f: (x) => P.qr(x, true), args: [{ shape: [3, 3] }] },
  { name: "eigh", f: (x) => P.eigh(sym(x)), args: [{ shape: [3, 3] }] },
  { name: "eigh (batched)", f: (x) => P.eigh(sym(x)), args: [{ shape: [2, 3, 3] }] },
  { name: "svd (values only)", f: (x) => P.svd(x, false, false), args: [{ shape: [3, 2] }] },
  { name: "svd (reduced, tall)", f: (x) => P.svd(x, false, true), args: [{ shape: [4, 3] }] },
  { name: "svd (reduced, wide)", f: (x) => P.svd(x, false, true), args: [{ shape: [2, 3] }] },
];
for (const s of SPECS) test(`linalg primitives harness: ${s.name}`, () => checkSpec(s));

test("float32 linalg primitives compute in float64 and round", () => {
  config.update("enableX64", false);
  const a = array(
    [
      [4, 2],
      [2, 3],
    ],
    { dtype: "float32" },
  );
  const L = P.cholesky(a);
  assert.equal(L.dtype, "float32");
  assert.deepEqual(L.tolist(), [
    [2, 0],
    [1, Math.fround(Math.sqrt(2))],
  ]);
  const [lu, piv, perm] = P.lu(
    array(
      [
        [1, 2],
        [3, 4],
      ],
      { dtype: "float32" },
    ),
  );
  assert.deepEqual(
    [lu.tolist(), piv.tolist(), perm.tolist()],
    [
      [
        [3, 4],
        [Math.fround(1 / 3), Math.fround(2 - 4 / 3)],
      ],
      [1, 1],
      [1, 0],
    ],
  );
});

test("linalg primitive errors name the primitive and shapes", () => {
  assert.throws(
    () => P.cholesky(ops.full([2, 3], 1, "float32")),
    /cholesky: operand must be a batch of square matrices, got f32\[2,3\]/,
  );
  assert.throws(
    () => P.cholesky(ops.full([2, 2], 1, "int32")),
    /cholesky: only float32 and float64 operands are supported, got i32\[2,2\]/,
  );
  assert.throws(
    () => P.triangularSolve(ops.full([3, 3], 1, "float32"), ops.full([2, 2], 1, "float32"), { leftSide: true }),
    /triangular_solve: a f32\[3,3\] is 3x3 but b f32\[2,2\] has 2 rows \(left_side=true\)/,
  );
  assert.throws(() => P.svd(ops.full([3], 1, "float32")), /svd: operand must have at least 2 dimensions/);
});

test("qr and svd jvps refuse the cases JAX does not implement", async () => {
  const { jvp } = await import("../../src/transforms/api.js");
  const x = ops.full([2, 3], 1, "float32");
  assert.throws(() => jvp((a: Array) => P.qr(a)[0], [x], [x]), /qr jvp: unimplemented case of the QR derivative/);
  assert.throws(
    () => jvp((a: Array) => P.svd(a)[1], [ops.full([2, 2], 1, "float32")], [ops.full([2, 2], 1, "float32")]),
    /svd jvp: the derivative of the singular vectors is not implemented for full_matrices=true/,
  );
});
