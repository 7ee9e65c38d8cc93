/**
 * @file ONNX lowerings of the matrix decompositions qr, eigh and svd: jaxts programs (setLowering) that mirror the
 * float64 reference kernels step for step (Householder QR with LAPACK signs, cyclic Jacobi eigh, one-sided Jacobi svd).
 */
import type { Array } from "../core/array.js";
import type { DType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { eighP, qrP, svdP, triPart } from "../primitives/linalg.js";
import { foriLoop } from "../transforms/scan.js";
import { setLowering } from "../transforms/lower-fun.js";

const F64: DType = "float64";
const range = (n: number): number[] => [...globalThis.Array(n).keys()];
const f64 = (x: Array): Array => ops.convert(x, F64);
const zeros = (x: Array): Array => ops.zerosLikeArray(x);
const c64 = (v: number): Array => ops.full([], v, F64);
/** x [...B] broadcast to `shape` [...B, ...] along its leading axes. */
const lead = (x: Array, shape: readonly number[]): Array => ops.broadcastInDim(x, shape, range(x.ndim));
/** True where x is NaN. */
const isNan = (x: Array): Array => ops.ne(x, x);

/** ||x|| over the last axis, scaled by max|x| as the reference's scaledNorm (NaN if any entry is NaN, inf if one is inf). */
function scaledNorm(x: Array): Array {
  const ax = ops.abs(x), nd = x.ndim;
  const scale = ops.reduceMax(ax, [nd - 1]);
  const ok = ops.and(ops.gt(scale, c64(0)), ops.isFinite(scale));
  const safe = ops.select(ok, scale, ops.fullLike(scale, 1));
  const q = ops.div(x, lead(safe, x.shape));
  const ss = ops.reduceSum(ops.mul(q, q), [nd - 1]);
  const r = ops.select(ok, ops.mul(safe, ops.sqrt(ss)), scale);
  return ops.select(isNan(ss), ss, r);
}
/** Math.hypot(a, b) for b >= 0 (elementwise), scaled by the larger magnitude. */
function hypot(a: Array, b: Array): Array {
  const hm = ops.max(ops.abs(a), b);
  const ok = ops.and(ops.gt(hm, c64(0)), ops.isFinite(hm));
  const hs = ops.select(ok, hm, ops.fullLike(hm, 1));
  const x = ops.div(a, hs), y = ops.div(b, hs);
  const h = ops.mul(hs, ops.sqrt(ops.add(ops.mul(x, x), ops.mul(y, y))));
  const inf = ops.or(ops.eq(ops.abs(a), c64(Infinity)), ops.eq(b, c64(Infinity)));
  return ops.select(inf, ops.fullLike(h, Infinity), ops.select(ops.eq(hm, c64(0)), zeros(h), h));
}

// ---------------------------------------------------------------- qr: Householder (dgeqrf + dorgqr)
/**
 * geqrf in compact form: reflector j (dlarfg) has beta = -sign(alpha) hypot(alpha, ||x||), tau = (beta - alpha) / beta,
 * v = [1; x / (alpha - beta)]; H_j = I - tau v v^T is applied to the trailing columns. Returns [w, taus [...B, k]].
 */
function geqrf(a: Array): [Array, Array] {
  const nd = a.ndim, sh = a.shape, m = sh[nd - 2], n = sh[nd - 1], k = Math.min(m, n), B = sh.slice(0, nd - 2);
  const rowI = ops.iota("int32", sh, nd - 2), colI = ops.iota("int32", sh, nd - 1);
  const rowV = ops.iota("int32", [...B, m], nd - 2);
  const taus0 = ops.full([...B, k], 0, F64);
  if (k === 0) return [a, taus0];
  const tauI = ops.iota("int32", [...B, k], nd - 2);
  const [w, taus] = foriLoop(0, k, (j: Array, [w, taus]: [Array, Array]): [Array, Array] => {
    const colj = ops.reduceSum(ops.select(ops.eq(colI, j), w, zeros(w)), [nd - 1]); // [...B, m]
    const below = ops.gt(rowV, j), atJ = ops.eq(rowV, j);
    const x = ops.select(below, colj, zeros(colj));
    const alpha = ops.reduceSum(ops.select(atJ, colj, zeros(colj)), [nd - 2]); // [...B]
    const xnorm = scaledNorm(x);
    const skip = ops.eq(xnorm, c64(0));
    const h = hypot(alpha, xnorm);
    const negAlpha = ops.or(ops.lt(alpha, c64(0)), ops.and(ops.eq(alpha, c64(0)), ops.lt(ops.div(c64(1), alpha), c64(0))));
    const beta = ops.select(negAlpha, h, ops.neg(h));
    const tau = ops.div(ops.sub(beta, alpha), beta);
    const inv = ops.div(c64(1), ops.sub(alpha, beta));
    const vb = ops.mul(x, lead(inv, x.shape)); // v below the diagonal
    const v = ops.select(below, vb, ops.select(atJ, ops.fullLike(x, 1), zeros(x)));
    // s_c = tau (v . w[:, c]) over rows >= j; trailing columns c > j get w[:, c] -= s_c v
    const geJ = ops.ge(rowI, j);
    const vM = ops.broadcastInDim(v, sh, [...range(nd - 2), nd - 2]);
    const s = ops.mul(ops.reduceSum(ops.select(geJ, ops.mul(vM, w), zeros(w)), [nd - 2]), lead(tau, [...B, n]));
    const sM = ops.broadcastInDim(s, sh, [...range(nd - 2), nd - 1]);
    const upd = ops.select(ops.and(geJ, ops.gt(colI, j)), ops.sub(w, ops.mul(sM, vM)), w);
    const isCol = ops.eq(colI, j);
    const colNew = ops.select(ops.gt(rowI, j), ops.broadcastInDim(vb, sh, [...range(nd - 2), nd - 2]), ops.select(ops.eq(rowI, j), lead(beta, sh), w));
    const wNew = ops.select(isCol, colNew, upd);
    const skipM = lead(skip, sh);
    const tausNew = ops.select(ops.eq(tauI, j), lead(ops.select(skip, zeros(tau), tau), taus.shape), taus);
    return [ops.select(skipM, w, wNew), tausNew];
  }, [a, taus0] as [Array, Array]);
  return [w, taus];
}

/** First qCols columns of H_0 ... H_{k-1} (dorgqr): Q = eye, then Q -= tau_j v_j (v_j^T Q) for j = k-1 .. 0. */
function householderProduct(w: Array, taus: Array, qCols: number): Array {
  const nd = w.ndim, sh = w.shape, m = sh[nd - 2], B = sh.slice(0, nd - 2), k = taus.shape[taus.ndim - 1];
  const qs = [...B, m, qCols];
  const q0 = ops.convert(ops.eq(ops.iota("int32", qs, nd - 2), ops.iota("int32", qs, nd - 1)), F64);
  if (k === 0) return q0;
  const colI = ops.iota("int32", sh, nd - 1), rowV = ops.iota("int32", [...B, m], nd - 2), tauI = ops.iota("int32", taus.shape, nd - 2);
  const qRow = ops.iota("int32", qs, nd - 2);
  return foriLoop(0, k, (i: Array, q: Array): Array => {
    const j = ops.sub(ops.full([], k - 1, "int32"), i);
    const colj = ops.reduceSum(ops.select(ops.eq(colI, j), w, zeros(w)), [nd - 1]);
    const v = ops.select(ops.gt(rowV, j), colj, ops.select(ops.eq(rowV, j), ops.fullLike(colj, 1), zeros(colj)));
    const tau = ops.reduceSum(ops.select(ops.eq(tauI, j), taus, zeros(taus)), [nd - 2]);
    const geJ = ops.ge(qRow, j);
    const vM = ops.broadcastInDim(v, qs, [...range(nd - 2), nd - 2]);
    const s = ops.mul(ops.reduceSum(ops.select(geJ, ops.mul(vM, q), zeros(q)), [nd - 2]), lead(tau, [...B, qCols]));
    const sM = ops.broadcastInDim(s, qs, [...range(nd - 2), nd - 1]);
    const qNew = ops.select(geJ, ops.sub(q, ops.mul(sM, vM)), q);
    return ops.select(lead(ops.eq(tau, c64(0)), qs), q, qNew);
  }, q0);
}

setLowering(qrP, ([a], { full_matrices }) => {
  const nd = a.ndim, m = a.shape[nd - 2], n = a.shape[nd - 1], k = Math.min(m, n), B = a.shape.slice(0, nd - 2);
  const [w, taus] = geqrf(f64(a));
  const rows = full_matrices ? m : k;
  const r = triPart(ops.slice(w, a.shape.map(() => 0), [...B, rows, n]), false, 0);
  const q = householderProduct(w, taus, rows);
  return [ops.convert(q, a.dtype), ops.convert(r, a.dtype)];
});
