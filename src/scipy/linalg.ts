/** @file jax.scipy.linalg: Cholesky / LU factor-and-solve, solveTriangular, solve (assume_a), inv, det, qr, svd, eigh, eighTridiagonal; expm, toeplitz, hilbert, polar, blockDiag live in linalg-matrix.ts. */
import type { Array, ArrayLike, NestedValue } from "../core/array.js";
import { isComplex } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { mH, mT } from "../primitives/linalg.js";
import * as lax from "../lax/linalg.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import * as jla from "../numpy/linalg.js";
import { arr, shapeStr } from "../numpy/struct-util.js";
import { inexact, promoteNoBroadcast, squareArg } from "./linalg-matrix.js";
import { tridiagonalEigvals } from "./linalg-tridiagonal.js";

export { expm, expmFrechet, toeplitz, hilbert, polar, blockDiag } from "./linalg-matrix.js";
export { schur, hessenberg, rsf2csf, sqrtm, funm } from "./linalg-schur.js";

type AL = ArrayLike | NestedValue;

// ---------------------------------------------------------------- helpers
/** Two operands promoted to a common inexact dtype. */
function inexact2(fn: string, a: AL, b: AL): [Array, Array] {
  const [x, y] = promoteNoBroadcast(fn, true, a, b);
  const w = (v: Array): Array =>
    v.dtype === "float16" || v.dtype === "bfloat16" ? ops.convert(v, "float32") : ops.convert(v, v.dtype);
  return [w(x), w(y)];
}
/**
 * Broadcasts a's batch dims against b's. b is a (batch of) vector [..., n] when b.ndim == a.ndim - 1 (JAX's rule for
 * the scipy.linalg solvers), or only when b is 1-D with `numpyVectors` (jnp.linalg.solve's rule, which
 * scipy.linalg.solve's LU path follows); otherwise a (batch of) matrix [..., n, k].
 */
function solveOperands(fn: string, a: Array, b: Array, numpyVectors = false): { a: Array; b: Array; vec: boolean } {
  const n = a.shape[a.ndim - 1];
  if (b.ndim === 0) throw new Error(`${fn}: b must be at least 1-D, got a scalar (a has shape ${shapeStr(a.shape)})`);
  const vec = numpyVectors ? b.ndim === 1 : b.ndim === a.ndim - 1;
  const bm = vec ? ops.reshape(b, [...b.shape, 1]) : b;
  if (bm.ndim < 2 || bm.shape[bm.ndim - 2] !== n)
    throw new Error(
      `${fn}: incompatible shapes: a has shape ${shapeStr(a.shape)} and b has shape ${shapeStr(b.shape)}; expected b.shape[-${vec ? 1 : 2}] == ${n}`,
    );
  const ab = a.shape.slice(0, -2),
    bb = bm.shape.slice(0, -2);
  const nd = Math.max(ab.length, bb.length);
  const batch: number[] = [];
  for (let i = 0; i < nd; i++) {
    const u = ab[ab.length - nd + i] ?? 1,
      v = bb[bb.length - nd + i] ?? 1;
    if (u !== v && u !== 1 && v !== 1)
      throw new Error(
        `${fn}: batch dimensions of a ${shapeStr(a.shape)} and b ${shapeStr(b.shape)} do not broadcast together`,
      );
    batch.push(Math.max(u, v));
  }
  const to = (x: Array, tail: number[]): Array =>
    ops.broadcastInDim(
      x,
      [...batch, ...tail],
      [...x.shape.keys()].map((i) => i + batch.length + 2 - x.ndim),
    );
  return { a: to(a, [n, n]), b: to(bm, bm.shape.slice(-2)), vec };
}
const unvec = (x: Array, vec: boolean): Array => (vec ? ops.reshape(x, x.shape.slice(0, -1)) : x);

// ---------------------------------------------------------------- Cholesky
interface CholOpts {
  lower: boolean;
  overwriteA: boolean;
  checkFinite: boolean;
}
/** scipy.linalg.cholesky(a, lower=false): the upper factor U with a = U^H U (or lower L with a = L L^H); the other triangle is zero. */
export function cholesky(a: AL, ...args: Args<[lower: boolean], Partial<CholOpts>>): Array {
  const o = parseArgs<CholOpts>("scipy.linalg.cholesky", args, ["lower", "overwriteA", "checkFinite"]);
  const x = squareArg("scipy.linalg.cholesky", a);
  const l = lax.cholesky(o.lower ? x : mH(x), { symmetrizeInput: false });
  return o.lower ? l : mH(l);
}
/** scipy.linalg.cho_factor(a, lower=false): `[c, lower]` for choSolve; c is the triangular factor (zeros elsewhere, as JAX). */
export function choFactor(a: AL, ...args: Args<[lower: boolean], Partial<CholOpts>>): [Array, boolean] {
  const o = parseArgs<CholOpts>("scipy.linalg.choFactor", args, ["lower", "overwriteA", "checkFinite"]);
  const lower = o.lower ?? false;
  return [cholesky(a, { lower }), lower];
}
/** scipy.linalg.cho_solve([c, lower], b): x with a x = b from choFactor's factor of a. */
export function choSolve(
  cAndLower: readonly [AL, boolean],
  b: AL,
  ...args: Args<[overwriteB: boolean], { overwriteB?: boolean; checkFinite?: boolean }>
): Array {
  parseArgs("scipy.linalg.choSolve", args, ["overwriteB", "checkFinite"]);
  if (!globalThis.Array.isArray(cAndLower) || cAndLower.length !== 2 || typeof cAndLower[1] !== "boolean")
    throw new TypeError("scipy.linalg.choSolve: expected c_and_lower = [c, lower] (as choFactor returns)");
  const [c0, y0] = inexact2("scipy.linalg.choSolve", cAndLower[0], b);
  const lower = cAndLower[1];
  const c = squareArg("scipy.linalg.choSolve", c0);
  const s = solveOperands("scipy.linalg.choSolve", c, y0);
  // lower: L y = b, L^H x = y; upper: U^H y = b, U x = y
  const conjA = isComplex(c.dtype);
  const y = lax.triangularSolve(s.a, s.b, { leftSide: true, lower, transposeA: !lower, conjugateA: !lower && conjA });
  const x = lax.triangularSolve(s.a, y, { leftSide: true, lower, transposeA: lower, conjugateA: lower && conjA });
  return unvec(x, s.vec);
}

// ---------------------------------------------------------------- LU
/** The identity's rows gathered by perm [..., m]: p[..., i, j] = (perm[..., i] == j). */
function permMatrix(perm: Array, m: number, dtype: Array["dtype"]): Array {
  const shape = [...perm.shape, m];
  const rows = ops.broadcastInDim(perm, shape, [...perm.shape.keys()]);
  return ops.convert(ops.eq(rows, ops.iota("int32", shape, shape.length - 1)), dtype);
}
/** Splits lax.linalg.lu's packed factor [..., m, n] into unit-lower L [..., m, k] and upper U [..., k, n]. */
function splitLU(lu: Array): [Array, Array] {
  const m = lu.shape[lu.ndim - 2],
    n = lu.shape[lu.ndim - 1],
    k = Math.min(m, n);
  const lpart = ops.sliceInDim(lu, 0, k, 1, lu.ndim - 1);
  const upart = ops.sliceInDim(lu, 0, k, 1, lu.ndim - 2);
  const tri = (x: Array, lowerStrict: boolean): Array => {
    const i = ops.iota("int32", x.shape, x.ndim - 2),
      j = ops.iota("int32", x.shape, x.ndim - 1);
    const keep = lowerStrict ? ops.gt(i, j) : ops.le(i, j);
    const z = ops.full(x.shape, 0, x.dtype);
    const base = ops.select(keep, x, z);
    if (!lowerStrict) return base;
    return ops.add(base, ops.convert(ops.eq(i, j), x.dtype));
  };
  return [tri(lpart, true), tri(upart, false)];
}
/**
 * scipy.linalg.lu(a, permute_l=false): `[p, l, u]` with a = p @ l @ u (p a permutation matrix, l unit lower
 * [..., m, k], u upper [..., k, n], k = min(m, n)); with permuteL, `[p @ l, u]`.
 */
export function lu(
  a: AL,
  ...args: Args<[permuteL: boolean], { permuteL?: boolean; overwriteA?: boolean; checkFinite?: boolean }>
): [Array, Array, Array] | [Array, Array] {
  const o = parseArgs<{ permuteL: boolean }>("scipy.linalg.lu", args, ["permuteL", "overwriteA", "checkFinite"]);
  const x = inexact("scipy.linalg.lu", a);
  if (x.ndim < 2) throw new Error(`scipy.linalg.lu: expected a (batch of) matrix, got shape ${shapeStr(x.shape)}`);
  const [packed, , perm] = lax.lu(x);
  const [l, u] = splitLU(packed);
  const m = x.shape[x.ndim - 2];
  // a[perm] = l u, so a = p l u with p[perm[i], i] = 1, i.e. p = (rows of I gathered by perm)^T
  const p = mT(permMatrix(perm, m, x.dtype));
  if (o.permuteL) return [jla.matmul(p, l), u];
  return [p, l, u];
}
/** scipy.linalg.lu_factor(a): `[lu, piv]`, the packed factor and LAPACK-style 0-based row-swap pivots (int32). */
export function luFactor(
  a: AL,
  ...args: Args<[overwriteA: boolean], { overwriteA?: boolean; checkFinite?: boolean }>
): [Array, Array] {
  parseArgs("scipy.linalg.luFactor", args, ["overwriteA", "checkFinite"]);
  const x = squareArg("scipy.linalg.luFactor", a);
  const [packed, piv] = lax.lu(x);
  return [packed, piv];
}
/** The permutation [..., m] that the row swaps piv [..., k] (swap i with piv[i], in order) apply to 0..m-1. */
function pivotsToPermutation(piv: Array, m: number): Array {
  const shape = [...piv.shape.slice(0, -1), m];
  const k = piv.shape[piv.ndim - 1];
  const iota = ops.iota("int32", shape, shape.length - 1);
  let perm = iota;
  const last = shape.length - 1;
  const pick = (v: Array, idx: Array): Array =>
    ops.reduceSum(ops.select(ops.eq(iota, idx), v, ops.full(shape, 0, "int32")), [last]);
  const bc = (s: Array): Array => ops.broadcastInDim(s, shape, [...s.shape.keys()]);
  for (let i = 0; i < k; i++) {
    const j = bc(ops.squeeze(ops.sliceInDim(piv, i, i + 1, 1, piv.ndim - 1), [piv.ndim - 1]));
    const ii = ops.full(shape, i, "int32");
    const pi = bc(pick(perm, ii)),
      pj = bc(pick(perm, j));
    perm = ops.select(ops.eq(iota, ii), pj, ops.select(ops.eq(iota, j), pi, perm));
  }
  return perm;
}
/**
 * scipy.linalg.lu_solve([lu, piv], b, trans=0): solves a x = b (trans 0), a^T x = b (1) or a^H x = b (2) from
 * luFactor's output.
 */
export function luSolve(
  luAndPiv: readonly [AL, AL],
  b: AL,
  ...args: Args<[trans: 0 | 1 | 2], { trans?: 0 | 1 | 2; overwriteB?: boolean; checkFinite?: boolean }>
): Array {
  const o = parseArgs<{ trans: number }>("scipy.linalg.luSolve", args, ["trans", "overwriteB", "checkFinite"]);
  const trans = o.trans ?? 0;
  if (trans !== 0 && trans !== 1 && trans !== 2)
    throw new Error(`scipy.linalg.luSolve: trans must be 0, 1 or 2, got ${JSON.stringify(trans)}`);
  if (!globalThis.Array.isArray(luAndPiv) || luAndPiv.length !== 2)
    throw new TypeError("scipy.linalg.luSolve: expected lu_and_piv = [lu, piv] (as luFactor returns)");
  const [lu0, y0] = inexact2("scipy.linalg.luSolve", luAndPiv[0], b);
  const packed = squareArg("scipy.linalg.luSolve", lu0);
  const piv = ops.convert(arr("scipy.linalg.luSolve", luAndPiv[1]), "int32");
  const n = packed.shape[packed.ndim - 1];
  if (piv.shape[piv.ndim - 1] !== n)
    throw new Error(
      `scipy.linalg.luSolve: piv of shape ${shapeStr(piv.shape)} does not match lu of shape ${shapeStr(packed.shape)}`,
    );
  const perm = pivotsToPermutation(piv, n);
  const s = solveOperands("scipy.linalg.luSolve", packed, y0);
  const pm = permMatrix(
    ops.broadcastInDim(
      perm,
      [...s.a.shape.slice(0, -1)],
      [...perm.shape.keys()].map((i) => i + s.a.ndim - 1 - perm.ndim),
    ),
    n,
    s.a.dtype,
  );
  let x: Array;
  if (trans === 0) {
    const y = lax.triangularSolve(s.a, jla.matmul(pm, s.b), { leftSide: true, lower: true, unitDiagonal: true });
    x = lax.triangularSolve(s.a, y, { leftSide: true, lower: false });
  } else {
    const conjugateA = trans === 2 && isComplex(s.a.dtype);
    const y = lax.triangularSolve(s.a, s.b, { leftSide: true, lower: false, transposeA: true, conjugateA });
    const z = lax.triangularSolve(s.a, y, {
      leftSide: true,
      lower: true,
      unitDiagonal: true,
      transposeA: true,
      conjugateA,
    });
    x = jla.matmul(mT(pm), z);
  }
  return unvec(x, s.vec);
}
// ---------------------------------------------------------------- triangular and general solves
interface TriOpts {
  trans: 0 | 1 | 2 | "N" | "T" | "C";
  lower: boolean;
  unitDiagonal: boolean;
  overwriteB: boolean;
  debug: unknown;
  checkFinite: boolean;
}
/** scipy.linalg.solve_triangular(a, b, trans=0, lower=false, unit_diagonal=false): solves op(a) x = b, b [..., n] or [..., n, k]. */
export function solveTriangular(
  a: AL,
  b: AL,
  ...args: Args<
    [trans: 0 | 1 | 2 | "N" | "T" | "C", lower: boolean, unitDiagonal: boolean, overwriteB: boolean],
    Partial<TriOpts>
  >
): Array {
  const fn = "scipy.linalg.solveTriangular";
  const o = parseArgs<TriOpts>(fn, args, ["trans", "lower", "unitDiagonal", "overwriteB", "debug", "checkFinite"]);
  const t = o.trans ?? 0;
  const tr = t === 0 || t === "N" ? 0 : t === 1 || t === "T" ? 1 : t === 2 || t === "C" ? 2 : -1;
  if (tr < 0) throw new Error(`${fn}: invalid trans argument ${JSON.stringify(t)} (expected 0, 1, 2, "N", "T" or "C")`);
  const [x0, y0] = inexact2(fn, a, b);
  const x = squareArg(fn, x0);
  const s = solveOperands(fn, x, y0);
  const r = lax.triangularSolve(s.a, s.b, {
    leftSide: true,
    lower: o.lower ?? false,
    transposeA: tr !== 0,
    conjugateA: tr === 2 && isComplex(x.dtype),
    unitDiagonal: o.unitDiagonal ?? false,
  });
  return unvec(r, s.vec);
}
interface SolveOpts {
  lower: boolean;
  overwriteA: boolean;
  overwriteB: boolean;
  debug: unknown;
  checkFinite: boolean;
  assumeA: "gen" | "sym" | "her" | "pos";
}
/**
 * scipy.linalg.solve(a, b, lower=false, ..., assume_a="gen"): "gen", "sym" and "her" use the LU solve of
 * jnp.linalg.solve (as JAX); "pos" factors a by Cholesky (reading a's `lower` triangle) and solves twice.
 */
export function solve(
  a: AL,
  b: AL,
  ...args: Args<
    [lower: boolean, overwriteA: boolean, overwriteB: boolean, debug: unknown, checkFinite: boolean, assumeA: string],
    Partial<SolveOpts>
  >
): Array {
  const fn = "scipy.linalg.solve";
  const o = parseArgs<SolveOpts>(fn, args, ["lower", "overwriteA", "overwriteB", "debug", "checkFinite", "assumeA"]);
  const assume = o.assumeA ?? "gen";
  if (!["gen", "sym", "her", "pos"].includes(assume))
    throw new Error(`${fn}: expected assumeA to be one of "gen", "sym", "her", "pos", got ${JSON.stringify(assume)}`);
  const [x0, y0] = inexact2(fn, a, b);
  const x = squareArg(fn, x0);
  const s = solveOperands(fn, x, y0, assume !== "pos");
  if (assume !== "pos") return unvec(jla.solve(s.a, s.b), s.vec);
  return unvec(choSolve(choFactor(s.a, { lower: o.lower ?? false }), s.b), s.vec);
}
/** scipy.linalg.inv(a): jnp.linalg.inv. */
export function inv(
  a: AL,
  ...args: Args<[overwriteA: boolean], { overwriteA?: boolean; checkFinite?: boolean }>
): Array {
  parseArgs("scipy.linalg.inv", args, ["overwriteA", "checkFinite"]);
  return jla.inv(squareArg("scipy.linalg.inv", a));
}
/** scipy.linalg.det(a): jnp.linalg.det. */
export function det(
  a: AL,
  ...args: Args<[overwriteA: boolean], { overwriteA?: boolean; checkFinite?: boolean }>
): Array {
  parseArgs("scipy.linalg.det", args, ["overwriteA", "checkFinite"]);
  return jla.det(squareArg("scipy.linalg.det", a));
}

// ---------------------------------------------------------------- qr, svd, eigh
interface QrOpts {
  overwriteA: boolean;
  lwork: unknown;
  mode: "full" | "r" | "economic";
  pivoting: boolean;
  checkFinite: boolean;
}
/** scipy.linalg.qr(a, mode="full"): `[q, r]` (full), `[q, r]` reduced ("economic") or `[r]` ("r"); pivoting is unsupported (as JAX's tuple forms). */
export function qr(
  a: AL,
  ...args: Args<[overwriteA: boolean, lwork: unknown, mode: string, pivoting: boolean], Partial<QrOpts>>
): [Array, Array] | [Array] {
  const fn = "scipy.linalg.qr";
  const o = parseArgs<QrOpts>(fn, args, ["overwriteA", "lwork", "mode", "pivoting", "checkFinite"]);
  const mode = o.mode ?? "full";
  if (mode !== "full" && mode !== "r" && mode !== "economic")
    throw new Error(`${fn}: unsupported mode ${JSON.stringify(mode)} (expected "full", "r" or "economic")`);
  if (o.pivoting) throw new Error(`${fn}: pivoting=true is not supported`);
  const x = inexact(fn, a);
  if (x.ndim < 2) throw new Error(`${fn}: expected a (batch of) matrix, got shape ${shapeStr(x.shape)}`);
  const [q, r] = lax.qr(x, { fullMatrices: mode !== "economic" });
  return mode === "r" ? [r] : [q, r];
}
interface SvdOpts {
  fullMatrices: boolean;
  computeUv: boolean;
  overwriteA: boolean;
  checkFinite: boolean;
  lapackDriver: string;
}
/** scipy.linalg.svd(a, full_matrices=true, compute_uv=true): `[u, s, vh]`, or s alone when computeUv is false. */
export function svd(
  a: AL,
  ...args: Args<
    [fullMatrices: boolean, computeUv: boolean, overwriteA: boolean, checkFinite: boolean, lapackDriver: string],
    Partial<SvdOpts>
  >
): [Array, Array, Array] | Array {
  const fn = "scipy.linalg.svd";
  const o = parseArgs<SvdOpts>(fn, args, ["fullMatrices", "computeUv", "overwriteA", "checkFinite", "lapackDriver"]);
  const x = inexact(fn, a);
  if (x.ndim < 2) throw new Error(`${fn}: expected a (batch of) matrix, got shape ${shapeStr(x.shape)}`);
  if (o.computeUv === false) return lax.svd(x, { computeUv: false });
  const r = lax.svd(x, { fullMatrices: o.fullMatrices ?? true, computeUv: true });
  return r;
}
interface EighOpts {
  b: AL | null;
  lower: boolean;
  eigvalsOnly: boolean;
  overwriteA: boolean;
  overwriteB: boolean;
  turbo: boolean;
  eigvals: unknown;
  type: number;
  checkFinite: boolean;
  subsetByIndex: unknown;
}
/** scipy.linalg.eigh(a, b=null, lower=true, eigvals_only=false): `[w, v]` (ascending w, eigenvectors in v's columns) or w; b must be null (as JAX). */
export function eigh(
  a: AL,
  ...args: Args<[b: AL | null, lower: boolean, eigvalsOnly: boolean], Partial<EighOpts>>
): [Array, Array] | Array {
  const fn = "scipy.linalg.eigh";
  const o = parseArgs<EighOpts>(
    fn,
    args,
    ["b", "lower", "eigvalsOnly"],
    ["overwriteA", "overwriteB", "turbo", "eigvals", "type", "checkFinite", "subsetByIndex"],
  );
  if (o.b !== undefined && o.b !== null) throw new Error(`${fn}: only b=null is supported (the standard eigenproblem)`);
  if (o.eigvals != null || o.subsetByIndex != null)
    throw new Error(`${fn}: eigvals / subsetByIndex (a subset of the spectrum) is not supported`);
  if (o.type !== undefined && o.type !== 1) throw new Error(`${fn}: only type=1 is supported, got ${o.type}`);
  const x = squareArg(fn, a);
  const [v, w] = lax.eigh(x, { lower: o.lower ?? true, symmetrizeInput: false });
  return o.eigvalsOnly ? w : [w, v];
}
interface TridiagOpts {
  eigvalsOnly: boolean;
  select: "a" | "v" | "i";
  selectRange: unknown;
  tol: number | null;
}
/**
 * scipy.linalg.eigh_tridiagonal(d, e, eigvals_only, select, select_range, tol): the eigenvalues of the symmetric
 * (Hermitian) tridiagonal matrix with diagonal d [n] and off-diagonal e [n-1], ascending, by JAX's parallel bisection
 * (src/scipy/linalg-tridiagonal.ts). As in JAX: eigvalsOnly must be true; select "a" (all) or "i" (indices
 * selectRange[0]..selectRange[1], inclusive); "v" is not implemented.
 */
export function eighTridiagonal(
  d: AL,
  e: AL,
  ...args: Args<[eigvalsOnly: boolean, select: string, selectRange: unknown, tol: number | null], Partial<TridiagOpts>>
): Array {
  const fn = "scipy.linalg.eighTridiagonal";
  const o = parseArgs<TridiagOpts>(fn, args, ["eigvalsOnly", "select", "selectRange", "tol"]);
  if (!o.eigvalsOnly) throw new Error(`${fn}: calculation of eigenvectors is not implemented (pass eigvalsOnly: true)`);
  const [dd, ee] = inexact2(fn, d, e);
  if (dd.ndim !== 1 || ee.ndim !== 1 || ee.shape[0] !== Math.max(dd.shape[0] - 1, 0))
    throw new Error(
      `${fn}: expected d of shape [n] and e of shape [n-1], got ${shapeStr(dd.shape)} and ${shapeStr(ee.shape)}`,
    );
  const n = dd.shape[0];
  const select = o.select ?? "a";
  let lo = 0,
    hi = n - 1;
  if (select === "i") {
    const r = o.selectRange;
    if (r === undefined || r === null) throw new Error(`${fn}: for select="i", selectRange must be specified`);
    if (!globalThis.Array.isArray(r) || r.length !== 2 || !r.every((v) => Number.isInteger(v)))
      throw new Error(`${fn}: selectRange must be two integer indices [lo, hi], got ${JSON.stringify(r)}`);
    [lo, hi] = r as [number, number];
    if (lo > hi) throw new Error(`${fn}: got an empty index range in selectRange: [${lo}, ${hi}]`);
    if (n > 1 && (lo < 0 || hi >= n))
      throw new Error(`${fn}: selectRange [${lo}, ${hi}] is outside the eigenvalue indices 0..${n - 1}`);
  } else if (select === "v") throw new Error(`${fn}: select="v" is not implemented (as in JAX)`);
  else if (select !== "a") throw new Error(`${fn}: select must be "a", "i" or "v", got ${JSON.stringify(select)}`);
  if (o.tol !== undefined && o.tol !== null && !(typeof o.tol === "number"))
    throw new Error(`${fn}: tol must be a number or null, got ${typeof o.tol}`);
  return tridiagonalEigvals(dd, ee, lo, hi, o.tol ?? null);
}
