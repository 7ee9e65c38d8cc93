/** @file Complex qr, eigh, svd, eig, pinv, lstsq, matrixRank, norms and cond against NumPy (LAPACK) fixtures: invariants, jit, vmap, complex64, grads by finite differences. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as lax from "../../src/lax/index.js";
import * as np from "../../src/numpy/index.js";
import { jit, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { type CFix, abs2, assertCloseC, checkGradFd, decodeC } from "../helpers/complex-fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Fx {
  qr: { name: string; a: CFix; q: CFix; r: CFix; qc: CFix; rc: CFix }[];
  eigh: { name: string; a: CFix; w: CFix }[];
  svd: {
    name: string;
    a: CFix;
    s: CFix;
    pinv: CFix;
    rank: CFix;
    fro: CFix;
    nuc: CFix;
    two: CFix;
    one: CFix;
    cond: CFix | null;
    b?: CFix;
    lstsq?: CFix;
  }[];
  eig: { name: string; a: CFix; w: CFix }[];
  norms: Record<"x" | "two" | "one" | "inf" | "three" | "zero", CFix>;
}
const fx = loadFixture<Fx>("complex-decomp.json");
const tol = { rtol: 1e-10, atol: 1e-10 };
const H = (x: Array): Array => np.conj(np.swapaxes(x, -1, -2));
const eyeC = (n: number): Array => np.astype(np.eye(n), "complex128");
/** Asserts x^H x = I over the last two axes (orthonormal columns). */
function assertUnitaryCols(x: Array, msg: string, t = tol): void {
  const k = x.shape[x.ndim - 1];
  assertCloseC(np.matmul(H(x), x), np.broadcastTo(eyeC(k), [...x.shape.slice(0, -2), k, k]), { ...t, msg });
}
/** x * s broadcast over columns (x [..., m, k], s real [..., k]). */
const scaleCols = (x: Array, s: Array): Array => np.multiply(x, np.expandDims(np.astype(s, x.dtype), -2));

for (const c of fx.qr)
  test(`complex qr ${c.name}: Q and R equal NumPy's (zgeqrf, real diagonal of R), reduced and complete; jit`, () =>
    withX64(() => {
      const a = decodeC(c.a);
      const r = np.linalg.qr(a) as np.linalg.QRResult;
      assertCloseC(r.Q, c.q, { ...tol, msg: "Q" });
      assertCloseC(r.R, c.r, { ...tol, msg: "R" });
      const full = np.linalg.qr(a, "complete") as np.linalg.QRResult;
      assertCloseC(full.R, c.rc, { ...tol, msg: "complete R" });
      assertUnitaryCols(full.Q, "complete Q^H Q");
      assertCloseC(np.matmul(full.Q, full.R), a, { ...tol, msg: "complete Q R" });
      const jq = jit((x: Array) => np.linalg.qr(x, "r") as Array)(a);
      assertCloseC(jq, c.r, { ...tol, msg: "jit R" });
      const q32 = np.linalg.qr(np.astype(a, "complex64")) as np.linalg.QRResult;
      assert.equal(q32.Q.dtype, "complex64");
      assertCloseC(np.astype(q32.R, "complex128"), c.r, { rtol: 1e-4, atol: 1e-4, msg: "complex64 R" });
    }));

for (const c of fx.eigh)
  test(`complex eigh ${c.name}: real eigenvalues equal NumPy's, A V = V diag(w), V^H V = I; UPLO "U"; jit`, () =>
    withX64(() => {
      const a = decodeC(c.a);
      const { eigenvalues: w, eigenvectors: v } = np.linalg.eigh(a);
      assert.equal(w.dtype, "float64");
      assertCloseC(w, c.w, { ...tol, msg: "w" });
      assertCloseC(np.matmul(a, v), scaleCols(v, w), { ...tol, msg: "A V = V diag(w)" });
      assertUnitaryCols(v, "V^H V");
      // the strict upper triangle alone (the lower one zeroed), without symmetrization, gives the same eigenvalues
      const upper = np.triu(a);
      assertCloseC(np.linalg.eigh(upper, "U", { symmetrizeInput: false }).eigenvalues, c.w, { ...tol, msg: "UPLO U" });
      assertCloseC(jit((x: Array) => np.linalg.eigvalsh(x))(a), c.w, { ...tol, msg: "jit eigvalsh" });
      const w32 = np.linalg.eigvalsh(np.astype(a, "complex64"));
      assert.equal(w32.dtype, "float32");
      assertCloseC(np.astype(w32, "float64"), c.w, { rtol: 1e-4, atol: 1e-4, msg: "complex64 w" });
    }));

for (const c of fx.svd)
  test(`complex svd ${c.name}: s equals NumPy's, U diag(s) Vh = A, unitary factors; pinv, rank, norms, cond, lstsq`, () =>
    withX64(() => {
      const a = decodeC(c.a);
      const { U, S, Vh } = np.linalg.svd(a, false) as np.linalg.SVDResult;
      assert.equal(S.dtype, "float64");
      assertCloseC(S, c.s, { ...tol, msg: "s" });
      assertCloseC(np.matmul(scaleCols(U, S), Vh), a, { ...tol, msg: "U diag(s) Vh" });
      assertUnitaryCols(U, "U^H U");
      assertUnitaryCols(H(Vh), "Vh Vh^H");
      const full = np.linalg.svd(a) as np.linalg.SVDResult;
      assertUnitaryCols(full.U, "full U");
      assertUnitaryCols(full.Vh, "full Vh");
      assertCloseC(np.linalg.svdvals(a), c.s, { ...tol, msg: "svdvals" });
      const [u2, s2, vh2] = lax.linalg.svd(a, { fullMatrices: false });
      assertCloseC(np.matmul(scaleCols(u2, s2), vh2), a, { ...tol, msg: "lax svd" });
      assertCloseC(np.linalg.pinv(a), c.pinv, { ...tol, msg: "pinv" });
      assertCloseC(np.linalg.matrixRank(a), c.rank, { msg: "matrixRank" });
      assertCloseC(np.linalg.matrixNorm(a), c.fro, { ...tol, msg: "fro" });
      assertCloseC(np.linalg.matrixNorm(a, false, "nuc"), c.nuc, { ...tol, msg: "nuc" });
      assertCloseC(np.linalg.norm(a, 2, [-2, -1]), c.two, { ...tol, msg: "2-norm" });
      assertCloseC(np.linalg.norm(a, 1, [-2, -1]), c.one, { ...tol, msg: "1-norm" });
      if (c.cond) assertCloseC(np.linalg.cond(a), c.cond, { rtol: 1e-8, atol: 1e-10, msg: "cond" });
      if (c.b && c.lstsq) {
        const [x, , rank] = np.linalg.lstsq(a, decodeC(c.b));
        assertCloseC(x, c.lstsq, { ...tol, msg: "lstsq x" });
        assertCloseC(rank, c.rank, { msg: "lstsq rank" });
      }
      assertCloseC(jit((x: Array) => np.linalg.svdvals(x))(a), c.s, { ...tol, msg: "jit svdvals" });
    }));

test("complex eigh / svd: vmap equals a loop over slices; complex64 svd reconstructs", () =>
  withX64(() => {
    const a = decodeC(fx.eigh.find((c) => c.name === "batch")!.a);
    const wv = vmap((x: Array) => np.linalg.eigvalsh(x))(a);
    for (let i = 0; i < 2; i++)
      assertCloseC(np.take(wv, i, 0), np.linalg.eigvalsh(np.take(a, i, 0)), { ...tol, msg: `vmap eigh ${i}` });
    const b = decodeC(fx.svd.find((c) => c.name === "2x4x2")!.a);
    const sv = vmap((x: Array) => np.linalg.svdvals(x))(b);
    for (let i = 0; i < 2; i++)
      assertCloseC(np.take(sv, i, 0), np.linalg.svdvals(np.take(b, i, 0)), { ...tol, msg: `vmap svd ${i}` });
    const b32 = np.astype(decodeC(fx.svd[0].a), "complex64");
    const r = np.linalg.svd(b32) as np.linalg.SVDResult;
    assert.equal(r.S.dtype, "float32");
    assert.equal(r.U.dtype, "complex64");
    assertCloseC(np.matmul(scaleCols(r.U, r.S), r.Vh), b32, { rtol: 1e-4, atol: 1e-5, msg: "complex64 svd" });
  }));

for (const c of fx.eig)
  test(`complex eig ${c.name}: eigenvalues equal NumPy's (sorted), A V = V diag(w) with unit columns`, () =>
    withX64(() => {
      const a = decodeC(c.a);
      const { eigenvalues: w, eigenvectors: v } = np.linalg.eig(a);
      assertCloseC(np.sortComplex(w), c.w, { rtol: 1e-9, atol: 1e-9, msg: "w" });
      assertCloseC(np.matmul(a, v), np.multiply(v, np.expandDims(w, -2)), { rtol: 1e-8, atol: 1e-8, msg: "A V" });
      assertCloseC(np.sortComplex(np.linalg.eigvals(a)), c.w, { rtol: 1e-9, atol: 1e-9, msg: "eigvals" });
      assertCloseC(np.linalg.norm(v, null, -2), np.ones(w.shape, "float64"), { ...tol, msg: "unit columns" });
    }));

test("complex vector norms match NumPy (2, 1, inf, 3, 0)", () =>
  withX64(() => {
    const n = fx.norms,
      x = decodeC(n.x);
    assertCloseC(np.linalg.norm(x), n.two, { ...tol, msg: "2" });
    assertCloseC(np.linalg.vectorNorm(x), n.two, { ...tol, msg: "vectorNorm" });
    assertCloseC(np.linalg.norm(x, 1), n.one, { ...tol, msg: "1" });
    assertCloseC(np.linalg.norm(x, Infinity), n.inf, { ...tol, msg: "inf" });
    assertCloseC(np.linalg.norm(x, 3), n.three, { ...tol, msg: "3" });
    assertCloseC(np.linalg.norm(x, 0), n.zero, { ...tol, msg: "0" });
  }));

/** A fixed real weight array of the given shape (distinct entries, so no symmetric cancellation). */
const weights = (shape: number[], k = 1): Array =>
  np.reshape(np.astype(np.sin(np.multiply(np.arange(shape.reduce((x, y) => x * y, 1)), k)), "float64"), shape);

test("complex qr / eigh / svd: grads of real, phase-invariant functions follow JAX's convention (finite differences)", () =>
  withX64(() => {
    const a = decodeC(fx.qr.find((c) => c.name === "5x3")!.a);
    checkGradFd(
      (z) => {
        const { Q, R } = np.linalg.qr(z) as np.linalg.QRResult;
        return np.add(
          np.sum(np.multiply(np.real(Q), weights([5, 3]))),
          np.sum(np.multiply(np.imag(R), weights([3, 3], 2))),
        );
      },
      a,
      "qr",
      2e-6,
    );
    const h = decodeC(fx.eigh.find((c) => c.name === "3")!.a);
    checkGradFd(
      (z) => {
        const { eigenvalues: w, eigenvectors: v } = np.linalg.eigh(z);
        return np.add(np.sum(np.multiply(w, weights([3]))), np.sum(np.multiply(abs2(v), weights([3, 3], 3))));
      },
      h,
      "eigh",
      2e-6,
    );
    for (const name of ["3x3", "5x3", "3x5"]) {
      const s = decodeC(fx.svd.find((c) => c.name === name)!.a);
      const [m, n] = s.shape,
        k = Math.min(m, n);
      checkGradFd(
        (z) => {
          const { U, S, Vh } = np.linalg.svd(z, false) as np.linalg.SVDResult;
          const t = np.add(np.sum(np.multiply(S, weights([k]))), np.sum(np.multiply(abs2(U), weights([m, k], 2))));
          return np.add(t, np.sum(np.multiply(abs2(Vh), weights([k, n], 3))));
        },
        s,
        `svd ${name}`,
        2e-6,
      );
    }
    const e = decodeC(fx.eig.find((c) => c.name === "4")!.a);
    checkGradFd((z) => np.sum(abs2(np.linalg.eigvals(z))), e, "eigvals", 2e-6);
    checkGradFd((z) => np.linalg.norm(z, "nuc"), decodeC(fx.svd[0].a), "nuclear norm", 2e-6);
  }));

const rootsFx = loadFixture<{ roots: { name: string; c: CFix; roots: CFix; dtype: string }[] }>(
  "complex-decomp.json",
).roots;
for (const c of rootsFx)
  test(`roots ${c.name}: NumPy's roots and dtype (complex when any root is complex), complex64 without x64`, () => {
    const r = withX64(() => np.roots(decodeC(c.c)));
    assert.equal(r.dtype, c.dtype);
    const sorted = isComplexDtype(c.dtype) ? np.sortComplex(r) : np.sort(r);
    withX64(() => assertCloseC(sorted, c.roots, { rtol: 1e-9, atol: 1e-9, msg: "roots" }));
    if (c.name === "x2+1") {
      const r32 = np.roots(np.array([1, 0, 1]));
      assert.equal(r32.dtype, "complex64");
      assert.deepEqual(r32.tolist(), [
        { re: 0, im: 1 },
        { re: 0, im: -1 },
      ]);
    }
  });
const isComplexDtype = (d: string): boolean => d.startsWith("complex");
