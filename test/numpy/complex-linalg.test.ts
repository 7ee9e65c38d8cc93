/** @file Complex linalg.solve / inv / det / slogdet against NumPy (LAPACK) fixtures: batches, complex64, jit, vmap, gradients by finite differences. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as lax from "../../src/lax/index.js";
import * as np from "../../src/numpy/index.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { type CFix, abs2, assertCloseC, checkGradFd, cx, decodeC, partsOfArray } from "../helpers/complex-fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Case {
  name: string;
  a: CFix;
  b: CFix;
  solve: CFix;
  inv: CFix;
  det: CFix;
  sign: CFix;
  logabsdet: CFix;
}
const fx = loadFixture<{ cases: Case[] }>("complex-linalg.json");
const tol = { rtol: 1e-10, atol: 1e-10 };

for (const c of fx.cases) {
  test(`complex linalg ${c.name}: solve, inv, det, slogdet match NumPy (complex128, jit, complex64)`, () =>
    withX64(() => {
      const a = decodeC(c.a),
        b = decodeC(c.b);
      assertCloseC(np.linalg.solve(a, b), c.solve, { ...tol, msg: "solve" });
      assertCloseC(np.linalg.inv(a), c.inv, { ...tol, msg: "inv" });
      assertCloseC(np.linalg.det(a), c.det, { ...tol, msg: "det" });
      const s = np.linalg.slogdet(a);
      assertCloseC(s.sign, c.sign, { ...tol, msg: "slogdet sign" });
      assertCloseC(s.logabsdet, c.logabsdet, { ...tol, msg: "slogdet logabsdet" });
      assertCloseC(jit((x: Array, y: Array) => np.linalg.solve(x, y))(a, b), c.solve, { ...tol, msg: "jit solve" });
      const a32 = np.astype(a, "complex64"),
        b32 = np.astype(b, "complex64");
      const x32 = np.linalg.solve(a32, b32);
      assert.equal(x32.dtype, "complex64");
      assertCloseC(np.astype(x32, "complex128"), c.solve, { rtol: 1e-3, atol: 1e-4, msg: "complex64 solve" });
      assertCloseC(np.astype(np.linalg.det(a32), "complex128"), c.det, {
        rtol: 1e-4,
        atol: 1e-5,
        msg: "complex64 det",
      });
    }));
}

test("complex linalg: vmap of det and solve over a batch equals the batched call (NumPy's values)", () =>
  withX64(() => {
    const c = fx.cases.find((k) => k.name === "batch")!;
    const a = decodeC(c.a),
      b = decodeC(c.b);
    assertCloseC(vmap((x: Array) => np.linalg.det(x))(a), c.det, { ...tol, msg: "vmap det" });
    assertCloseC(vmap((x: Array, y: Array) => np.linalg.solve(x, y))(a, b), c.solve, { ...tol, msg: "vmap solve" });
  }));

test("complex linalg: grad of |det A|^2 and of sum |solve(A, b)|^2 follow JAX's convention (df/dx - i df/dy)", () =>
  withX64(() => {
    const c = fx.cases.find((k) => k.name === "random/3")!;
    const a = decodeC(c.a),
      b = decodeC(c.b);
    checkGradFd((z) => abs2(np.linalg.det(z)), a, "|det|^2 wrt A");
    checkGradFd((z) => np.sum(abs2(np.linalg.solve(z, b))), a, "sum |solve|^2 wrt A");
    checkGradFd((z) => np.sum(abs2(np.linalg.solve(a, z))), b, "sum |solve|^2 wrt b");
    checkGradFd((z) => np.sum(np.real(np.linalg.inv(z))), a, "sum Re inv wrt A");
    checkGradFd((z) => np.linalg.slogdet(z).logabsdet, a, "logabsdet wrt A");
  }));

test("complex linalg: holomorphic grad of det is det(A) inv(A)^T (Jacobi's formula, from NumPy's values)", () =>
  withX64(() => {
    const c = fx.cases.find((k) => k.name === "random/3")!;
    const a = decodeC(c.a);
    const g = grad((z: Array) => np.linalg.det(z), { holomorphic: true })(a);
    const want = np.multiply(decodeC(c.det), np.transpose(decodeC(c.inv)));
    assertCloseC(g, want, { ...tol, msg: "d det / dA" });
  }));

test("complex linalg: errors name the function and shape", () =>
  withX64(() => {
    const rect = cx([1, 2, 3, 4, 5, 6], [0, 1, 0, 1, 0, 1], [2, 3]);
    assert.throws(() => np.linalg.solve(rect, cx([1, 2], [0, 0], [2])), /linalg\.solve: .*square.*\(2, 3\)/);
    assert.throws(() => np.linalg.det(rect), /linalg\.det: .*square/);
    const sq = cx([2, 0, 0, 2], [0, 1, -1, 0], [2, 2]);
    assert.throws(
      () => np.linalg.solve(sq, cx([1, 2, 3], [0, 0, 0], [3])),
      /linalg\.solve: .*b\.shape\[0\] to equal 2/,
    );
  }));

const chol = loadFixture<{ cholesky: { name: string; a: CFix; L: CFix }[] }>("complex-linalg.json").cholesky;
for (const c of chol)
  test(`complex cholesky ${c.name}: L and upper U = L^H match NumPy; complex64 and jit agree`, () =>
    withX64(() => {
      const a = decodeC(c.a);
      const L = np.linalg.cholesky(a);
      assertCloseC(L, c.L, { ...tol, msg: "L" });
      const Lt = decodeC(c.L);
      assertCloseC(np.linalg.cholesky(a, { upper: true }), np.conj(np.swapaxes(Lt, -1, -2)), { ...tol, msg: "U" });
      assertCloseC(jit((x: Array) => np.linalg.cholesky(x))(a), c.L, { ...tol, msg: "jit" });
      const L32 = np.linalg.cholesky(np.astype(a, "complex64"));
      assert.equal(L32.dtype, "complex64");
      assertCloseC(np.astype(L32, "complex128"), c.L, { rtol: 1e-4, atol: 1e-5, msg: "complex64" });
    }));

test("complex cholesky: vmap equals the batched call; a non-positive-definite matrix gives NaN; grad by finite differences", () =>
  withX64(() => {
    const c = chol.find((k) => k.name === "batch")!;
    assertCloseC(vmap((x: Array) => np.linalg.cholesky(x))(decodeC(c.a)), c.L, { ...tol, msg: "vmap" });
    const [re] = partsOfArray(np.linalg.cholesky(cx([1, 0, 0, -1], [0, 0, 0, 0], [2, 2])));
    assert.ok(re.every(Number.isNaN), `non-PD: ${re}`);
    const a = decodeC(chol.find((k) => k.name === "3")!.a);
    checkGradFd((z) => np.sum(abs2(np.linalg.cholesky(z))), a, "sum |L|^2 wrt A");
    checkGradFd((z) => np.sum(np.imag(np.linalg.cholesky(z))), a, "sum Im L wrt A");
  }));

test("complex lax.linalg: cholesky symmetrizes with the Hermitian part; triangular_solve honours conjugateA and transposeA", () =>
  withX64(() => {
    const c = chol.find((k) => k.name === "3")!;
    const a = decodeC(c.a);
    // only the lower triangle is meaningful after symmetrization of a Hermitian input; the upper is conj-mirrored
    assertCloseC(lax.linalg.cholesky(a), c.L, { ...tol, msg: "lax cholesky" });
    const L = decodeC(c.L),
      b = decodeC(fx.cases.find((k) => k.name === "random/3")!.b);
    const LH = np.conj(np.swapaxes(L, -1, -2));
    for (const [opts, op] of [
      [{ leftSide: true, lower: true }, L],
      [{ leftSide: true, lower: true, transposeA: true }, np.swapaxes(L, -1, -2)],
      [{ leftSide: true, lower: true, conjugateA: true }, np.conj(L)],
      [{ leftSide: true, lower: true, transposeA: true, conjugateA: true }, LH],
    ] as const) {
      const x = lax.linalg.triangularSolve(L, b, opts);
      assertCloseC(np.matmul(op, x), b, { ...tol, msg: `op(L) x = b with ${JSON.stringify(opts)}` });
      assertCloseC(np.linalg.triangularSolve(L, b, opts), x, {
        ...tol,
        msg: `jnp.linalg.triangularSolve ${JSON.stringify(opts)}`,
      });
    }
    const bt = np.swapaxes(b, -1, -2);
    const xr = lax.linalg.triangularSolve(L, bt, { leftSide: false, lower: true, transposeA: true, conjugateA: true });
    assertCloseC(np.matmul(xr, LH), bt, { ...tol, msg: "x L^H = b" });
  }));
