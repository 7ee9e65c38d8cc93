/**
 * @file ONNX lowerings of the matrix decompositions qr, eigh and svd: jaxts programs (installed from src/lowerings/index.ts) that mirror the
 * float64 reference kernels step for step (Householder QR with LAPACK signs, one-sided Jacobi svd); eigh here is cyclic Jacobi
 * while the reference is Householder + tridiagonal QR, so its eigenvalues agree to rounding and its vectors up to sign / basis.
 */
import type { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import * as ops from "../primitives/ops.js";
import { type EighParams, type SvdParams, mm, mT, triPart } from "../primitives/linalg.js";
import { fromNums } from "../primitives/ref-util.js";
import { foriLoop, scan, whileLoop } from "../transforms/scan.js";
import { type LoweringProgram, tooSlowOnOnnx } from "../transforms/lower-fun.js";
import { F64, anyTrue, f64, isNan, lead, range, zeros } from "./util.js";

/**
 * Largest Jacobi dimension jit lowers into ONNX. Cyclic Jacobi applies n(n-1)/2 rotations per sweep, one Loop
 * iteration each, with a fixed per-iteration cost in ORT: at n = 64 an eigh took ~3 s in ONNX vs ~40 ms on the
 * interpreter's kernel. Above this size jit runs eigh/svd as a host step; exportOnnx lowers any size. Native sessions
 * take the jaxts.Eigh / jaxts.Svd custom ops instead (src/lowerings/linalg-native.ts) at every size, so this rule
 * applies only where those are unavailable or switched off (JAXTS_NATIVE_LINALG=0).
 */
export const jacobiLoweringOptions = { maxN: 16 };

const c64 = (v: number): Array => ops.full([], v, F64);

/** ||x|| over the last axis, scaled by max|x| as the reference's scaledNorm (NaN if any entry is NaN, inf if one is inf). */
function scaledNorm(x: Array): Array {
  const ax = ops.abs(x),
    nd = x.ndim;
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
  const x = ops.div(a, hs),
    y = ops.div(b, hs);
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
  const nd = a.ndim,
    sh = a.shape,
    m = sh[nd - 2],
    n = sh[nd - 1],
    k = Math.min(m, n),
    B = sh.slice(0, nd - 2);
  const rowI = ops.iota("int32", sh, nd - 2),
    colI = ops.iota("int32", sh, nd - 1);
  const rowV = ops.iota("int32", [...B, m], nd - 2);
  const taus0 = ops.full([...B, k], 0, F64);
  if (k === 0) return [a, taus0];
  const tauI = ops.iota("int32", [...B, k], nd - 2);
  const [w, taus] = foriLoop(
    0,
    k,
    (j: Array, [w, taus]: [Array, Array]): [Array, Array] => {
      const colj = ops.reduceSum(ops.select(ops.eq(colI, j), w, zeros(w)), [nd - 1]); // [...B, m]
      const below = ops.gt(rowV, j),
        atJ = ops.eq(rowV, j);
      const x = ops.select(below, colj, zeros(colj));
      const alpha = ops.reduceSum(ops.select(atJ, colj, zeros(colj)), [nd - 2]); // [...B]
      const xnorm = scaledNorm(x);
      const skip = ops.eq(xnorm, c64(0));
      const h = hypot(alpha, xnorm);
      const negAlpha = ops.or(
        ops.lt(alpha, c64(0)),
        ops.and(ops.eq(alpha, c64(0)), ops.lt(ops.div(c64(1), alpha), c64(0))),
      );
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
      const colNew = ops.select(
        ops.gt(rowI, j),
        ops.broadcastInDim(vb, sh, [...range(nd - 2), nd - 2]),
        ops.select(ops.eq(rowI, j), lead(beta, sh), w),
      );
      const wNew = ops.select(isCol, colNew, upd);
      const skipM = lead(skip, sh);
      const tausNew = ops.select(ops.eq(tauI, j), lead(ops.select(skip, zeros(tau), tau), taus.shape), taus);
      return [ops.select(skipM, w, wNew), tausNew];
    },
    [a, taus0] as [Array, Array],
  );
  return [w, taus];
}

/** First qCols columns of H_0 ... H_{k-1} (dorgqr): Q = eye, then Q -= tau_j v_j (v_j^T Q) for j = k-1 .. 0. */
function householderProduct(w: Array, taus: Array, qCols: number): Array {
  const nd = w.ndim,
    sh = w.shape,
    m = sh[nd - 2],
    B = sh.slice(0, nd - 2),
    k = taus.shape[taus.ndim - 1];
  const qs = [...B, m, qCols];
  const q0 = ops.convert(ops.eq(ops.iota("int32", qs, nd - 2), ops.iota("int32", qs, nd - 1)), F64);
  if (k === 0) return q0;
  const colI = ops.iota("int32", sh, nd - 1),
    rowV = ops.iota("int32", [...B, m], nd - 2),
    tauI = ops.iota("int32", taus.shape, nd - 2);
  const qRow = ops.iota("int32", qs, nd - 2);
  return foriLoop(
    0,
    k,
    (i: Array, q: Array): Array => {
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
    },
    q0,
  );
}

export const qrLowering: LoweringProgram<{ full_matrices: boolean }> = ([a], { full_matrices }) => {
  const nd = a.ndim,
    m = a.shape[nd - 2],
    n = a.shape[nd - 1],
    k = Math.min(m, n),
    B = a.shape.slice(0, nd - 2);
  const [w, taus] = geqrf(f64(a));
  const rows = full_matrices ? m : k;
  const r = triPart(
    ops.slice(
      w,
      a.shape.map(() => 0),
      [...B, rows, n],
    ),
    false,
    0,
  );
  const q = householderProduct(w, taus, rows);
  return [ops.convert(q, a.dtype), ops.convert(r, a.dtype)];
};

// ---------------------------------------------------------------- shared Jacobi machinery
const EPS = 2 ** -52;
const MAX_SWEEPS = 100;
type Step = (c: [Array, Array, Array], pq: [Array, Array]) => [[Array, Array, Array], null];
/** One cyclic sweep: a scan over the static schedule of pairs (p, q), p < q < n, row by row as the reference. */
function sweepPairs(step: Step, init: [Array, Array, Array], n: number): [Array, Array, Array] {
  const ps: number[] = [],
    qs: number[] = [];
  for (let p = 0; p < n - 1; p++)
    for (let q = p + 1; q < n; q++) {
      ps.push(p);
      qs.push(q);
    }
  const av = new ShapedArray([ps.length], "int32");
  return scan(step, init, [fromNums(av, ps), fromNums(av, qs)] as [Array, Array])[0];
}
/**
 * Cyclic sweeps of `step` over the pairs of n, carrying [X, Y, rotated?] (rotated? per batch element, shape `batch`),
 * until a sweep rotates nothing in any batch element or MAX_SWEEPS sweeps ran: the final [X, Y].
 */
function jacobiSweeps(step: Step, X0: Array, Y0: Array, batch: readonly number[], n: number): [Array, Array] {
  const rot0 = ops.full(batch, false, "bool");
  const [, , X, Y] = whileLoop(
    ([sweep, any]: [Array, Array, Array, Array]) => ops.and(ops.lt(sweep, ops.full([], MAX_SWEEPS, "int32")), any),
    ([sweep, , X, Y]: [Array, Array, Array, Array]): [Array, Array, Array, Array] => {
      const [X2, Y2, rot] = sweepPairs(step, [X, Y, rot0], n);
      return [ops.add(sweep, ops.full([], 1, "int32")), anyTrue(rot), X2, Y2];
    },
    [ops.full([], 0, "int32"), ops.full([], true, "bool"), X0, Y0] as [Array, Array, Array, Array],
  );
  return [X, Y];
}
/** Column j of x [...B, r, c] where colMask = (col == j): [...B, r]. */
const pickCol = (x: Array, colMask: Array): Array => ops.reduceSum(ops.select(colMask, x, zeros(x)), [x.ndim - 1]);
/** v [...B, r] as a column broadcast over `shape` [...B, r, c]. */
const asCol = (v: Array, shape: readonly number[]): Array =>
  ops.broadcastInDim(v, shape, [...range(v.ndim - 1), v.ndim - 1]);
/** v [...B, c] as a row broadcast over `shape` [...B, r, c]. */
const asRow = (v: Array, shape: readonly number[]): Array =>
  ops.broadcastInDim(v, shape, [...range(v.ndim - 1), v.ndim]);
/** The smaller root t = tan(phi) of t^2 + 2 z t - 1 = 0 (the reference's rotation angle), for z = cot(2 phi). */
function smallRoot(z: Array): Array {
  const az = ops.abs(z);
  const sgn = ops.select(ops.ge(z, c64(0)), ops.fullLike(z, 1), ops.fullLike(z, -1));
  const big = ops.gt(az, c64(1e150));
  const zs = ops.select(big, zeros(z), z); // keeps z^2 finite on the unused branch
  const regular = ops.div(sgn, ops.add(az, ops.sqrt(ops.add(ops.mul(zs, zs), c64(1)))));
  return ops.select(big, ops.div(c64(1), ops.mul(c64(2), z)), regular);
}
/**
 * Stable ordering permutation of keys [...B, n] as a one-hot float64 matrix P [...B, n(src), n(dst)] with
 * P[src, dst] = 1 iff key src lands at dst (ascending or descending, ties in index order, as the reference sort).
 */
function sortPermutation(keys: Array, ascending: boolean): Array {
  const nd = keys.ndim,
    n = keys.shape[nd - 1],
    sh = [...keys.shape, n];
  const ki = ops.broadcastInDim(keys, sh, [...range(nd - 1), nd - 1]); // [.., i, j] = key_i
  const kj = ops.broadcastInDim(keys, sh, [...range(nd - 1), nd]); // [.., i, j] = key_j
  const ii = ops.iota("int32", sh, nd - 1),
    jj = ops.iota("int32", sh, nd);
  const before = ops.or(ascending ? ops.lt(ki, kj) : ops.gt(ki, kj), ops.and(ops.eq(ki, kj), ops.lt(ii, jj)));
  // rank_j = #{i : key_i sorts before key_j}
  const rank = ops.reduceSum(ops.convert(before, "int32"), [nd - 1]); // [...B, n] indexed by j
  const rankSrc = ops.broadcastInDim(rank, sh, [...range(nd - 1), nd - 1]);
  return ops.convert(ops.eq(rankSrc, jj), F64);
}
/** Per batch: are all entries of x [...B, r, c] finite? */
const allFinite = (x: Array): Array => ops.reduceAnd(ops.isFinite(x), [x.ndim - 2, x.ndim - 1]);

// ---------------------------------------------------------------- eigh: cyclic Jacobi (Rutishauser's rotations)
/** Cyclic Jacobi on symmetric A [...B, n, n] (n >= 2), sweeping until one full sweep rotates nothing: [A, V]. */
function jacobiEigh(A0: Array, absTol: Array): [Array, Array] {
  const nd = A0.ndim,
    sh = A0.shape,
    n = sh[nd - 1];
  const rowI = ops.iota("int32", sh, nd - 2),
    colI = ops.iota("int32", sh, nd - 1);
  const V0 = ops.convert(ops.eq(rowI, colI), F64);
  const tol = lead(absTol, sh.slice(0, nd - 2));
  const vs = sh.slice(0, nd - 1),
    vecI = ops.iota("int32", vs, nd - 2);
  /** Entry i of the vectors x [...B, n]: [...B]. */
  const at = (x: Array, isI: Array): Array => ops.reduceSum(ops.select(isI, x, zeros(x)), [nd - 2]);
  const rotate = ([A, V, rot]: [Array, Array, Array], [p, q]: [Array, Array]): [[Array, Array, Array], null] => {
    const cP = ops.eq(colI, p),
      cQ = ops.eq(colI, q),
      rP = ops.eq(rowI, p),
      rQ = ops.eq(rowI, q);
    const vP = ops.eq(vecI, p),
      vQ = ops.eq(vecI, q);
    const arp = pickCol(A, cP),
      arq = pickCol(A, cQ); // columns p and q of A
    const apq = at(arp, vQ),
      app = at(arp, vP),
      aqq = at(arq, vQ);
    const aa = ops.abs(apq);
    const skip = ops.or(ops.le(aa, ops.mul(c64(EPS), ops.sqrt(ops.abs(ops.mul(app, aqq))))), ops.le(aa, tol));
    const apqS = ops.select(skip, ops.fullLike(apq, 1), apq);
    // theta = cot(2 phi), t = tan(phi), tau = tan(phi / 2)
    const t = smallRoot(ops.div(ops.sub(aqq, app), ops.mul(c64(2), apqS)));
    const c = ops.div(c64(1), ops.sqrt(ops.add(ops.mul(t, t), c64(1))));
    const s = ops.mul(t, c),
      tau = ops.div(s, ops.add(c64(1), c));
    const sV = lead(s, vs),
      tauV = lead(tau, vs),
      skipV = lead(skip, vs);
    const rot2 = (xp: Array, xq: Array): [Array, Array] => [
      ops.sub(xp, ops.mul(sV, ops.add(xq, ops.mul(tauV, xp)))),
      ops.add(xq, ops.mul(sV, ops.sub(xp, ops.mul(tauV, xq)))),
    ];
    const [nrp, nrq] = rot2(arp, arq);
    // new columns p and q (also rows, by symmetry): rotated entries, the new diagonal pair, zero at (p, q)
    const newP = ops.select(vP, lead(ops.sub(app, ops.mul(t, apq)), vs), nrp);
    const newQ = ops.select(vQ, lead(ops.add(aqq, ops.mul(t, apq)), vs), nrq);
    const colP = ops.select(vQ, zeros(arp), ops.select(skipV, arp, newP));
    const colQ = ops.select(vP, zeros(arq), ops.select(skipV, arq, newQ));
    const An = ops.select(
      cP,
      asCol(colP, sh),
      ops.select(cQ, asCol(colQ, sh), ops.select(rP, asRow(colP, sh), ops.select(rQ, asRow(colQ, sh), A))),
    );
    const vp = pickCol(V, cP),
      vq = pickCol(V, cQ);
    const [nvp, nvq] = rot2(vp, vq);
    const Vn = ops.select(
      cP,
      asCol(ops.select(skipV, vp, nvp), sh),
      ops.select(cQ, asCol(ops.select(skipV, vq, nvq), sh), V),
    );
    return [[An, Vn, ops.or(rot, ops.not(skip))], null];
  };
  return jacobiSweeps(rotate, A0, V0, sh.slice(0, nd - 2), n);
}

export const eighLowering: LoweringProgram<EighParams> = ([a], { lower, sort_eigenvalues }) => {
  const nd = a.ndim,
    sh = a.shape,
    n = sh[nd - 1];
  tooSlowOnOnnx(
    "eigh",
    n > jacobiLoweringOptions.maxN,
    `n = ${n} > ${jacobiLoweringOptions.maxN}: cyclic Jacobi in an ONNX Loop is slower than the interpreter's kernel; jit runs it as a host step (exportOnnx lowers any size)`,
  );
  const x = f64(a);
  const rowI = ops.iota("int32", sh, nd - 2),
    colI = ops.iota("int32", sh, nd - 1);
  // the triangle named by `lower`, mirrored
  let A = ops.select(lower ? ops.ge(rowI, colI) : ops.le(rowI, colI), x, mT(x));
  const finite = allFinite(x);
  A = ops.select(lead(finite, sh), A, zeros(A));
  const absTol = ops.mul(c64(EPS * EPS), ops.sqrt(ops.reduceSum(ops.mul(A, A), [nd - 2, nd - 1])));
  let V: Array;
  if (n >= 2) [A, V] = jacobiEigh(A, absTol);
  else V = ops.convert(ops.eq(rowI, colI), F64);
  let w = ops.reduceSum(ops.select(ops.eq(rowI, colI), A, zeros(A)), [nd - 1]);
  if (sort_eigenvalues && n >= 2) {
    const perm = sortPermutation(w, true);
    w = ops.reduceSum(ops.mul(perm, ops.broadcastInDim(w, perm.shape, [...range(nd - 2), nd - 2])), [nd - 2]);
    V = mm(V, perm);
  }
  const nanV = ops.fullLike(V, NaN),
    nanW = ops.fullLike(w, NaN);
  V = ops.select(lead(finite, V.shape), V, nanV);
  w = ops.select(lead(finite, w.shape), w, nanW);
  return [ops.convert(V, a.dtype), ops.convert(w, a.dtype)];
};

// ---------------------------------------------------------------- svd: one-sided (Hestenes) Jacobi
/** Column pairs of W [...B, R, C] (C >= 2) rotated until |w_p . w_q| <= R eps ||w_p|| ||w_q|| for every pair: [W, V]. */
function jacobiSvd(W0: Array, withV: boolean): [Array, Array | null] {
  const nd = W0.ndim,
    sh = W0.shape,
    R = sh[nd - 2],
    C = sh[nd - 1],
    B = sh.slice(0, nd - 2);
  const vsh = [...B, C, C];
  const colW = ops.iota("int32", sh, nd - 1),
    colV = ops.iota("int32", vsh, nd - 1);
  const V0 = ops.convert(ops.eq(ops.iota("int32", vsh, nd - 2), colV), F64);
  const tol = c64(Math.max(R, 1) * EPS);
  const step = ([W, V, rotd]: [Array, Array, Array], [p, q]: [Array, Array]): [[Array, Array, Array], null] => {
    const cpW = ops.eq(colW, p),
      cqW = ops.eq(colW, q);
    const wp = pickCol(W, cpW),
      wq = pickCol(W, cqW); // [...B, R]
    const alpha = ops.reduceSum(ops.mul(wp, wp), [nd - 2]),
      beta = ops.reduceSum(ops.mul(wq, wq), [nd - 2]);
    const gamma = ops.reduceSum(ops.mul(wp, wq), [nd - 2]);
    const skip = ops.or(
      ops.eq(gamma, c64(0)),
      ops.le(ops.abs(gamma), ops.mul(ops.mul(tol, ops.sqrt(alpha)), ops.sqrt(beta))),
    );
    const gS = ops.select(skip, ops.fullLike(gamma, 1), gamma);
    // zeta = (beta - alpha) / (2 gamma), t = tan(phi) (smaller root), c = cos(phi), s = sin(phi)
    const t = smallRoot(ops.div(ops.sub(beta, alpha), ops.mul(c64(2), gS)));
    const c = ops.div(c64(1), ops.sqrt(ops.add(c64(1), ops.mul(t, t)))),
      s = ops.mul(c, t);
    /** Columns p, q of X (xp, xq given) replaced by c x_p - s x_q and s x_p + c x_q (kept when skipped). */
    const rot = (X: Array, cp: Array, cq: Array, xp: Array, xq: Array): Array => {
      const xs = xp.shape,
        cM = lead(c, xs),
        sM = lead(s, xs),
        sk = lead(skip, xs);
      const np = ops.select(sk, xp, ops.sub(ops.mul(cM, xp), ops.mul(sM, xq)));
      const nq = ops.select(sk, xq, ops.add(ops.mul(sM, xp), ops.mul(cM, xq)));
      return ops.select(cp, asCol(np, X.shape), ops.select(cq, asCol(nq, X.shape), X));
    };
    const Wn = rot(W, cpW, cqW, wp, wq);
    let Vn = V;
    if (withV) {
      const cpV = ops.eq(colV, p),
        cqV = ops.eq(colV, q);
      Vn = rot(V, cpV, cqV, pickCol(V, cpV), pickCol(V, cqV));
    }
    return [[Wn, Vn, ops.or(rotd, ops.not(skip))], null];
  };
  const [W, V] = jacobiSweeps(step, W0, V0, B, C);
  return [W, withV ? V : null];
}

/**
 * The reference's completeOrthonormal: each column j of U [...B, R, cols] not marked valid becomes the standard basis
 * vector e_i least covered by the valid columns (first minimum), Gram-Schmidt-orthogonalised twice (column by column,
 * in index order) against them, normalised, and then counts as valid.
 */
function completeOrthonormal(U0: Array, valid0: Array): Array {
  const nd = U0.ndim,
    sh = U0.shape,
    R = sh[nd - 2],
    cols = sh[nd - 1],
    B = sh.slice(0, nd - 2);
  const colI = ops.iota("int32", sh, nd - 1),
    rowV = ops.iota("int32", [...B, R], nd - 2),
    validI = ops.iota("int32", valid0.shape, nd - 2);
  const colOf = (U: Array, c: number): Array =>
    ops.reshape(ops.slice(U, [...B.map(() => 0), 0, c], [...B, R, c + 1]), [...B, R]);
  const flag = (valid: Array, c: number): Array =>
    ops.reshape(ops.slice(valid, [...B.map(() => 0), c], [...B, c + 1]), B);
  const [U] = foriLoop(
    0,
    cols,
    (j: Array, [U, valid]: [Array, Array]): [Array, Array] => {
      const vj = ops.reduceOr(ops.and(ops.eq(validI, j), valid), [nd - 2]);
      let cover = ops.full([...B, R], 0, F64);
      for (let c = 0; c < cols; c++) {
        const u = colOf(U, c);
        cover = ops.add(cover, ops.select(lead(flag(valid, c), [...B, R]), ops.mul(u, u), zeros(u)));
      }
      const best = ops.argmin(cover, nd - 2, "int32");
      let r = ops.convert(ops.eq(rowV, lead(best, [...B, R])), F64);
      for (let pass = 0; pass < 2; pass++) {
        for (let c = 0; c < cols; c++) {
          const u = colOf(U, c);
          const d = ops.reduceSum(ops.mul(u, r), [nd - 2]);
          r = ops.select(lead(flag(valid, c), [...B, R]), ops.sub(r, ops.mul(lead(d, [...B, R]), u)), r);
        }
      }
      const norm = ops.sqrt(ops.reduceSum(ops.mul(r, r), [nd - 2]));
      const Un = ops.select(ops.eq(colI, j), asCol(ops.div(r, lead(norm, [...B, R])), sh), U);
      const validN = ops.or(valid, ops.eq(validI, j));
      return [ops.select(lead(vj, sh), U, Un), validN];
    },
    [U0, valid0] as [Array, Array],
  );
  return U;
}

export const svdLowering: LoweringProgram<SvdParams> = ([a], { full_matrices, compute_uv }) => {
  const nd = a.ndim,
    m = a.shape[nd - 2],
    n = a.shape[nd - 1],
    B = a.shape.slice(0, nd - 2);
  const transposed = m < n,
    R = transposed ? n : m,
    C = transposed ? m : n;
  tooSlowOnOnnx(
    "svd",
    C > jacobiLoweringOptions.maxN,
    `min(m, n) = ${C} > ${jacobiLoweringOptions.maxN}: one-sided Jacobi in an ONNX Loop is slower than the interpreter's kernel; jit runs it as a host step (exportOnnx lowers any size)`,
  );
  const x = f64(a);
  const finite = allFinite(x);
  let W = transposed ? mT(x) : x;
  W = ops.select(lead(finite, W.shape), W, zeros(W));
  // scale by a power of two (exact) near max|a| so that sums of squares cannot overflow
  const maxAbs = ops.reduceMax(ops.abs(W), [nd - 2, nd - 1]);
  const pos = ops.gt(maxAbs, c64(0));
  const e = ops.floor(ops.div(ops.log(ops.select(pos, maxAbs, ops.fullLike(maxAbs, 1))), c64(Math.LN2)));
  const scale = ops.select(pos, ops.pow(ops.fullLike(e, 2), e), ops.fullLike(e, 1));
  W = ops.div(W, lead(scale, W.shape));
  let V: Array | null = null;
  if (C >= 2) [W, V] = jacobiSvd(W, compute_uv);
  else if (compute_uv) V = ops.full([...B, 1, 1], 1, F64);
  const norms = ops.sqrt(ops.reduceSum(ops.mul(W, W), [nd - 2])); // [...B, C]
  const perm = C >= 2 ? sortPermutation(norms, false) : ops.full([...B, 1, 1], 1, F64);
  const sorted = ops.reduceSum(ops.mul(perm, ops.broadcastInDim(norms, perm.shape, [...range(nd - 2), nd - 2])), [
    nd - 2,
  ]);
  const nanIf = (v: Array): Array => ops.select(lead(finite, v.shape), v, ops.fullLike(v, NaN));
  const sOut = ops.convert(nanIf(ops.mul(sorted, lead(scale, sorted.shape))), a.dtype);
  if (!compute_uv) return [sOut];
  const ucW = full_matrices ? R : C;
  // u_j = w_order[j] / s_j where s_j > 0; the rest (and columns C.. of a full u) are completed
  const ws = mm(W, perm);
  const posS = ops.gt(sorted, c64(0));
  let Uw = ops.div(ws, asRow(ops.select(posS, sorted, ops.fullLike(sorted, 1)), ws.shape));
  Uw = ops.select(asRow(posS, ws.shape), Uw, zeros(Uw));
  let valid = posS;
  if (ucW > C) {
    Uw = ops.concatenate([Uw, ops.full([...B, R, ucW - C], 0, F64)], nd - 1);
    valid = ops.concatenate([valid, ops.full([...B, ucW - C], false, "bool")], nd - 2);
  }
  Uw = completeOrthonormal(Uw, valid);
  const Vs = mm(V!, perm);
  const [u, vt] = transposed ? [Vs, mT(Uw)] : [Uw, mT(Vs)];
  return [sOut, ops.convert(nanIf(u), a.dtype), ops.convert(nanIf(vt), a.dtype)];
};
