/** @file Tests the pure-TypeScript linalg reference kernels against NumPy fixtures (test/fixtures/linalg-kernels.json) and algebraic invariants. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { repoPath } from "../../helpers/repo-root.js";

import {
  cholesky,
  det,
  eigh,
  geqrf,
  householderProduct,
  inv,
  lu,
  luPivotsToPermutation,
  qr,
  slogdet,
  solve,
  svd,
  triangularSolve,
} from "../../../src/backends/interpreter/linalg-kernels.js";

type Num = number | string;
interface Case {
  name: string;
  batch: number;
  tol: number;
  a: Num[];
}
interface Fixture {
  cholesky: (Case & { n: number; l: Num[] | null })[];
  triangularSolve: (Omit<Case, "name"> & {
    m: number;
    n: number;
    b: Num[];
    x: Num[];
    leftSide: boolean;
    lower: boolean;
    transposeA: boolean;
    unitDiagonal: boolean;
  })[];
  lu: (Case & { m: number; n: number; lu: Num[]; pivots: number[]; permutation: number[] })[];
  qr: (Case & {
    m: number;
    n: number;
    compareFactors: boolean;
    qFull: Num[];
    rFull: Num[];
    qReduced: Num[];
    rReduced: Num[];
  })[];
  eigh: (Case & { n: number; lower: boolean; symmetrizeInput: boolean; w: Num[]; v: Num[] })[];
  svd: (Case & { m: number; n: number; s: Num[]; u: Num[]; vt: Num[] })[];
  det: (Case & {
    n: number;
    det: Num[];
    sign: Num[];
    logabsdet: Num[];
    hadamard: Num[];
    roundingSingular: boolean;
  })[];
  inv: (Case & { n: number; inv: Num[] })[];
  solve: (Case & { n: number; nrhs: number; b: Num[]; x: Num[] })[];
}

const fx = JSON.parse(readFileSync(repoPath("test", "fixtures", "linalg-kernels.json"), "utf8")) as Fixture;

/** Decodes a fixture list ("NaN"/"Infinity"/"-Infinity" strings allowed). */
function f64(xs: Num[]): Float64Array {
  return Float64Array.from(xs, (x) => (typeof x === "number" ? x : Number(x)));
}

function maxAbs(x: ArrayLike<number>, start = 0, end = x.length): number {
  let m = 0;
  for (let i = start; i < end; i++) if (Number.isFinite(x[i])) m = Math.max(m, Math.abs(x[i]));
  return m;
}

/**
 * Asserts |got - exp| <= tol * max|exp| elementwise, with the scale taken per block
 * of `block` elements (one matrix); non-finite expected values must match exactly.
 */
function assertClose(
  got: ArrayLike<number>,
  exp: ArrayLike<number>,
  tol: number,
  msg: string,
  block = exp.length,
): void {
  assert.equal(got.length, exp.length, `${msg}: length`);
  for (let s = 0; s < exp.length; s += Math.max(block, 1)) {
    const end = Math.min(s + block, exp.length);
    const scale = Math.max(maxAbs(exp, s, end), Number.MIN_VALUE);
    for (let i = s; i < end; i++) {
      if (!Number.isFinite(exp[i])) {
        assert.ok(Object.is(got[i], exp[i]), `${msg}[${i}]: got ${got[i]}, expected ${exp[i]}`);
        continue;
      }
      const err = Math.abs(got[i] - exp[i]);
      assert.ok(err <= tol * scale, `${msg}[${i}]: got ${got[i]}, expected ${exp[i]} (err ${err}, scale ${scale})`);
    }
  }
}

/** Batched row-major matmul [batch, m, k] @ [batch, k, n]. */
function matmul(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  batch: number,
  m: number,
  k: number,
  n: number,
): Float64Array {
  const c = new Float64Array(batch * m * n);
  for (let bi = 0; bi < batch; bi++)
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let t = 0; t < k; t++) s += a[bi * m * k + i * k + t] * b[bi * k * n + t * n + j];
        c[bi * m * n + i * n + j] = s;
      }
  return c;
}

function transpose(a: ArrayLike<number>, batch: number, m: number, n: number): Float64Array {
  const t = new Float64Array(batch * m * n);
  for (let bi = 0; bi < batch; bi++)
    for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) t[bi * m * n + j * m + i] = a[bi * m * n + i * n + j];
  return t;
}

function eye(batch: number, n: number): Float64Array {
  const e = new Float64Array(batch * n * n);
  for (let bi = 0; bi < batch; bi++) for (let i = 0; i < n; i++) e[bi * n * n + i * n + i] = 1;
  return e;
}

/** Asserts the columns of q: [batch, m, c] are orthonormal to within tol. */
function assertOrthonormalColumns(
  q: Float64Array,
  batch: number,
  m: number,
  c: number,
  tol: number,
  msg: string,
): void {
  assertClose(matmul(transpose(q, batch, m, c), q, batch, c, m, c), eye(batch, c), tol, `${msg}: Q^T Q = I`);
}

/** Columns [0, cols) of [rows, stride] block b, compared up to a per-column sign where `ok(j)`. */
function assertColumnsUpToSign(
  got: Float64Array,
  exp: Float64Array,
  batch: number,
  rows: number,
  stride: number,
  ok: (bi: number, j: number) => boolean,
  tol: number,
  msg: string,
): void {
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * rows * stride;
    for (let j = 0; j < stride; j++) {
      if (!ok(bi, j)) continue;
      let dot = 0;
      for (let i = 0; i < rows; i++) dot += got[o + i * stride + j] * exp[o + i * stride + j];
      const sgn = dot < 0 ? -1 : 1;
      for (let i = 0; i < rows; i++) {
        const err = Math.abs(sgn * got[o + i * stride + j] - exp[o + i * stride + j]);
        assert.ok(err <= tol, `${msg}: batch ${bi} column ${j} row ${i} err ${err}`);
      }
    }
  }
}

/** Smallest distance from values[j] to another value in its batch row, relative to `scale`. */
function relGap(values: Float64Array, bi: number, k: number, j: number, scale: number): number {
  let g = Infinity;
  for (let t = 0; t < k; t++) if (t !== j) g = Math.min(g, Math.abs(values[bi * k + t] - values[bi * k + j]));
  return g / scale;
}

test("cholesky matches numpy.linalg.cholesky", () => {
  for (const c of fx.cholesky) {
    const a = f64(c.a);
    const l = cholesky(a, c.batch, c.n);
    if (c.l === null) {
      assert.ok(
        l.every((x) => Number.isNaN(x)),
        `${c.name}: expected all NaN`,
      );
      continue;
    }
    assertClose(l, f64(c.l), c.tol, `${c.name}: L`, c.n * c.n);
    // Reading only the lower triangle gives the same factor even with junk above the diagonal.
    const junk = a.slice();
    for (let bi = 0; bi < c.batch; bi++)
      for (let i = 0; i < c.n; i++) for (let j = i + 1; j < c.n; j++) junk[bi * c.n * c.n + i * c.n + j] = 1e3 + i - j;
    assertClose(cholesky(junk, c.batch, c.n, { symmetrizeInput: false }), l, 0, `${c.name}: lower-only`);
  }
});

test("triangularSolve matches numpy for every option combination", () => {
  for (const c of fx.triangularSolve) {
    const opts = { leftSide: c.leftSide, lower: c.lower, transposeA: c.transposeA, unitDiagonal: c.unitDiagonal };
    const x = triangularSolve(f64(c.a), f64(c.b), c.batch, c.m, c.n, opts);
    assertClose(x, f64(c.x), c.tol, `triangularSolve ${JSON.stringify(opts)}`, c.m * c.n);
  }
  // Defaults are JAX's: right side, upper, no transpose: x @ a = b.
  const x = triangularSolve(Float64Array.of(2, 1, 0, 4), Float64Array.of(2, 5), 1, 1, 2);
  assertClose(x, Float64Array.of(1, 1), 0, "defaults");
});

test("lu matches getrf partial pivoting and reconstructs a[perm] = L U", () => {
  for (const c of fx.lu) {
    const { m, n, batch } = c;
    const k = Math.min(m, n);
    const a = f64(c.a);
    const res = lu(a, batch, m, n);
    assertClose(res.lu, f64(c.lu), c.tol, `${c.name}: lu`, m * n);
    assert.deepEqual(Array.from(res.pivots), c.pivots, `${c.name}: pivots`);
    assert.deepEqual(Array.from(res.permutation), c.permutation, `${c.name}: permutation`);
    const L = new Float64Array(batch * m * k);
    const U = new Float64Array(batch * k * n);
    const pa = new Float64Array(batch * m * n);
    for (let bi = 0; bi < batch; bi++) {
      for (let i = 0; i < m; i++) {
        for (let j = 0; j < n; j++) {
          const v = res.lu[bi * m * n + i * n + j];
          if (j < i && j < k) L[bi * m * k + i * k + j] = v;
          if (j >= i && i < k) U[bi * k * n + i * n + j] = v;
          pa[bi * m * n + i * n + j] = a[bi * m * n + res.permutation[bi * m + i] * n + j];
        }
        if (i < k) L[bi * m * k + i * k + i] = 1;
      }
    }
    assertClose(matmul(L, U, batch, m, k, n), pa, 1e-13, `${c.name}: L U = P A`, m * n);
  }
  assert.deepEqual(Array.from(luPivotsToPermutation(Int32Array.of(2, 2, 2), 1, 3, 4)), [2, 0, 1, 3]);
});

test("qr matches numpy.linalg.qr (LAPACK signs) in both modes", () => {
  for (const c of fx.qr) {
    const { m, n, batch } = c;
    const k = Math.min(m, n);
    const a = f64(c.a);
    for (const full of [true, false]) {
      const { q, r } = qr(a, batch, m, n, full);
      const qc = full ? m : k;
      const rr = full ? m : k;
      const tag = `${c.name} (${full ? "complete" : "reduced"})`;
      assert.equal(q.length, batch * m * qc, `${tag}: q shape`);
      assert.equal(r.length, batch * rr * n, `${tag}: r shape`);
      if (c.compareFactors) {
        assertClose(q, f64(full ? c.qFull : c.qReduced), c.tol, `${tag}: q`, m * qc);
        assertClose(r, f64(full ? c.rFull : c.rReduced), c.tol, `${tag}: r`, rr * n);
      } else {
        // Rank deficient: compare |diag R| only (trailing directions are rounding noise).
        const er = f64(full ? c.rFull : c.rReduced);
        const scale = maxAbs(er);
        for (let bi = 0; bi < batch; bi++)
          for (let i = 0; i < k; i++) {
            const idx = bi * rr * n + i * n + i;
            assert.ok(Math.abs(Math.abs(r[idx]) - Math.abs(er[idx])) <= 1e-12 * scale, `${tag}: |R[${i},${i}]|`);
          }
      }
      for (let bi = 0; bi < batch; bi++)
        for (let i = 0; i < rr; i++)
          for (let j = 0; j < Math.min(i, n); j++) assert.equal(r[bi * rr * n + i * n + j], 0, `${tag}: R upper`);
      assertOrthonormalColumns(q, batch, m, qc, 1e-13, tag);
      assertClose(matmul(q, r, batch, m, qc, n), a, 1e-13, `${tag}: Q R = A`, m * n);
    }
  }
});

test("geqrf + householderProduct reproduce qr's Q", () => {
  const a = Float64Array.from({ length: 2 * 5 * 3 }, (_, i) => Math.sin(i * 1.7) + (i % 4));
  const { a: f, taus } = geqrf(a, 2, 5, 3);
  const q = householderProduct(f, taus, 2, 5, 3, 3);
  assertClose(q, qr(a, 2, 5, 3, false).q, 0, "Q");
});

test("eigh matches numpy.linalg.eigh: ascending w, A V = V diag(w)", () => {
  for (const c of fx.eigh) {
    const { n, batch } = c;
    const opts = { lower: c.lower, symmetrizeInput: c.symmetrizeInput };
    const { v, w } = eigh(f64(c.a), batch, n, opts);
    const ew = f64(c.w);
    assertClose(w, ew, c.tol, `${c.name}: w`, n);
    for (let bi = 0; bi < batch; bi++)
      for (let j = 1; j < n; j++) assert.ok(w[bi * n + j - 1] <= w[bi * n + j], `${c.name}: ascending`);
    assertOrthonormalColumns(v, batch, n, n, 1e-13, c.name);
    // Residual of the effective symmetric matrix, which numpy's V also diagonalises.
    const ev = f64(c.v);
    const sym = matmul(matmul(ev, eyeScaled(ew, batch, n), batch, n, n, n), transpose(ev, batch, n, n), batch, n, n, n);
    const av = matmul(sym, v, batch, n, n, n);
    const vw = matmul(v, eyeScaled(w, batch, n), batch, n, n, n);
    assertClose(av, vw, 1e-12, `${c.name}: A V = V diag(w)`, n * n);
    const scale = (bi: number): number => Math.max(maxAbs(ew, bi * n, bi * n + n), Number.MIN_VALUE);
    assertColumnsUpToSign(v, ev, batch, n, n, (bi, j) => relGap(ew, bi, n, j, scale(bi)) > 1e-6, 1e-9, `${c.name}: v`);
    const unsorted = eigh(f64(c.a), batch, n, { ...opts, sortEigenvalues: false });
    for (let bi = 0; bi < batch; bi++) {
      const got = Array.from(unsorted.w.subarray(bi * n, bi * n + n)).sort((x, y) => x - y);
      assertClose(got, w.subarray(bi * n, bi * n + n), 0, `${c.name}: unsorted w`);
    }
  }
});

/** diag(values) as [batch, n, n]. */
function eyeScaled(values: Float64Array, batch: number, n: number): Float64Array {
  const d = new Float64Array(batch * n * n);
  for (let bi = 0; bi < batch; bi++) for (let i = 0; i < n; i++) d[bi * n * n + i * n + i] = values[bi * n + i];
  return d;
}

test("svd matches numpy.linalg.svd: descending s, U S Vt = A", () => {
  for (const c of fx.svd) {
    const { m, n, batch } = c;
    const k = Math.min(m, n);
    const a = f64(c.a);
    const es = f64(c.s);
    const eu = f64(c.u);
    const evt = f64(c.vt);
    const sOnly = svd(a, batch, m, n, { computeUv: false });
    assert.equal(sOnly.u, undefined);
    assertClose(sOnly.s, es, c.tol, `${c.name}: s (computeUv=false)`, k);
    for (const full of [true, false]) {
      const tag = `${c.name} (${full ? "full" : "reduced"})`;
      const { s, u, vt } = svd(a, batch, m, n, { fullMatrices: full });
      assert.ok(u !== undefined && vt !== undefined);
      const uc = full ? m : k;
      const vr = full ? n : k;
      assert.equal(u.length, batch * m * uc, `${tag}: u shape`);
      assert.equal(vt.length, batch * vr * n, `${tag}: vt shape`);
      assertClose(s, es, c.tol, `${tag}: s`, k);
      assertClose(s, sOnly.s, 0, `${tag}: s equals computeUv=false s`);
      for (let bi = 0; bi < batch; bi++)
        for (let j = 0; j < k; j++) {
          assert.ok(s[bi * k + j] >= 0, `${tag}: s >= 0`);
          if (j > 0) assert.ok(s[bi * k + j - 1] >= s[bi * k + j], `${tag}: descending`);
        }
      assertOrthonormalColumns(u, batch, m, uc, 1e-13, `${tag}: u`);
      assertOrthonormalColumns(transpose(vt, batch, vr, n), batch, n, vr, 1e-13, `${tag}: vt`);
      // U[:, :k] diag(s) Vt[:k, :] = A.
      const us = new Float64Array(batch * m * k);
      const vtk = new Float64Array(batch * k * n);
      for (let bi = 0; bi < batch; bi++) {
        for (let i = 0; i < m; i++)
          for (let j = 0; j < k; j++) us[bi * m * k + i * k + j] = u[bi * m * uc + i * uc + j] * s[bi * k + j];
        vtk.set(vt.subarray(bi * vr * n, bi * vr * n + k * n), bi * k * n);
      }
      assertClose(matmul(us, vtk, batch, m, k, n), a, 1e-13, `${tag}: U S Vt = A`, m * n);
      // Singular vectors of well-separated singular values agree with numpy up to sign (u column j pairs with vt row j).
      const smax = (bi: number): number => Math.max(es[bi * k], Number.MIN_VALUE);
      const ok = (bi: number, j: number): boolean => j < k && relGap(es, bi, k, j, smax(bi)) > 1e-6;
      const euCols = new Float64Array(batch * m * uc);
      for (let bi = 0; bi < batch; bi++)
        for (let i = 0; i < m; i++)
          for (let j = 0; j < uc; j++) euCols[bi * m * uc + i * uc + j] = eu[bi * m * m + i * m + j];
      assertColumnsUpToSign(u, euCols, batch, m, uc, ok, 1e-9, `${tag}: u`);
      const evtRows = evt.slice();
      const gotV = transpose(vt, batch, vr, n);
      const expV = transpose(evtRows, batch, n, n);
      const expVk = new Float64Array(batch * n * vr);
      for (let bi = 0; bi < batch; bi++)
        for (let i = 0; i < n; i++)
          for (let j = 0; j < vr; j++) expVk[bi * n * vr + i * vr + j] = expV[bi * n * n + i * n + j];
      assertColumnsUpToSign(gotV, expVk, batch, n, vr, ok, 1e-9, `${tag}: v`);
      // Joint sign: u_j^T A v_j = s_j (not -s_j).
      const av = matmul(a, gotV, batch, m, n, vr);
      for (let bi = 0; bi < batch; bi++)
        for (let j = 0; j < k; j++) {
          let d = 0;
          for (let i = 0; i < m; i++) d += u[bi * m * uc + i * uc + j] * av[bi * m * vr + i * vr + j];
          assert.ok(Math.abs(d - s[bi * k + j]) <= 1e-13 * smax(bi), `${tag}: u_j^T A v_j = s_j`);
        }
    }
  }
});

test("det and slogdet match numpy", () => {
  for (const c of fx.det) {
    const { n, batch } = c;
    const a = f64(c.a);
    const d = det(a, batch, n);
    const { sign, logabsdet } = slogdet(a, batch, n);
    const ed = f64(c.det);
    const es = f64(c.sign);
    const el = f64(c.logabsdet);
    const had = f64(c.hadamard);
    for (let bi = 0; bi < batch; bi++) {
      const tag = `${c.name}[${bi}]`;
      if (!Number.isFinite(ed[bi])) assert.equal(d[bi], ed[bi], `${tag}: det`);
      else if (!c.roundingSingular && ed[bi] !== 0)
        assert.ok(Math.abs(d[bi] - ed[bi]) <= c.tol * Math.abs(ed[bi]), `${tag}: det ${d[bi]} vs ${ed[bi]}`);
      else assert.ok(Math.abs(d[bi] - ed[bi]) <= 1e-14 * had[bi], `${tag}: det ${d[bi]} vs ${ed[bi]} (singular)`);
      if (c.roundingSingular) continue;
      assert.equal(sign[bi], es[bi], `${tag}: sign`);
      if (Number.isFinite(el[bi])) assert.ok(Math.abs(logabsdet[bi] - el[bi]) <= c.tol, `${tag}: logabsdet`);
      else assert.equal(logabsdet[bi], el[bi], `${tag}: logabsdet`);
    }
  }
  assertClose(det(new Float64Array(0), 1, 0), [1], 0, "det of 0x0");
});

test("inv and solve match numpy", () => {
  for (const c of fx.inv) {
    const a = f64(c.a);
    const x = inv(a, c.batch, c.n);
    assertClose(x, f64(c.inv), c.tol, `${c.name}: inv`, c.n * c.n);
  }
  for (const c of fx.solve) {
    const x = solve(f64(c.a), f64(c.b), c.batch, c.n, c.nrhs);
    assertClose(x, f64(c.x), c.tol, `${c.name}: solve`, c.n * c.nrhs);
  }
  const singular = inv(Float64Array.of(1, 2, 2, 4), 1, 2);
  assert.ok(
    singular.some((x) => !Number.isFinite(x)),
    "singular inverse is non-finite",
  );
});

test("non-finite input and empty shapes", () => {
  const bad = Float64Array.of(1, NaN, NaN, 2);
  const e = eigh(bad, 1, 2);
  assert.ok([...e.w, ...e.v].every(Number.isNaN), "eigh NaN");
  const s = svd(bad, 1, 2, 2);
  assert.ok([...s.s, ...(s.u ?? []), ...(s.vt ?? [])].every(Number.isNaN), "svd NaN");
  assert.ok(cholesky(bad, 1, 2).every(Number.isNaN), "cholesky NaN");
  assert.equal(svd(new Float64Array(0), 0, 3, 3).s.length, 0);
  const wide = svd(new Float64Array(0), 1, 0, 2);
  assert.deepEqual(Array.from(wide.vt ?? []), [1, 0, 0, 1]);
  assert.equal(qr(new Float64Array(0), 1, 2, 0, true).q.length, 4);
  assert.throws(() => lu(new Float64Array(3), 1, 2, 2), RangeError);
});
