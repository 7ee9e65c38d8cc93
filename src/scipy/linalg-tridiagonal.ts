/**
 * @file Eigenvalues of a symmetric (Hermitian) tridiagonal matrix by parallel bisection on Sturm counts, the algorithm
 * of jax.scipy.linalg.eigh_tridiagonal (Gershgorin bracket, LAPACK-style pivmin guard, one bisection per wanted index).
 */
import type { Array } from "../core/array.js";
import { finfo, isComplex, realDType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { jit } from "../transforms/api-jit.js";
import { scan, whileLoop } from "../transforms/scan.js";

const c = (like: Array, v: number): Array => ops.full([], v, like.dtype);

/**
 * The number of eigenvalues below each x (a vector), by the Sturm recurrence q_0 = a_0 - x,
 * q_i = a_i - b_{i-1}^2 / q_{i-1} - x, counting the q_i <= pivmin (pivots nudged away from zero).
 */
function sturmCounts(alpha: Array, betaSq: Array, pivmin: Array, alpha0Pert: Array, x: Array): Array {
  const n = alpha.shape[0];
  const a0 = ops.broadcastInDim(ops.slice(alpha, [0], [1]), x.shape, [0]);
  const q0raw = ops.sub(a0, x);
  const count0 = ops.convert(ops.lt(q0raw, ops.fullLike(q0raw, 0)), "int32");
  const q0 = ops.select(ops.eq(a0, x), alpha0Pert, q0raw);
  const step = ([q, count]: [Array, Array], [ai, bi]: [Array, Array]): [[Array, Array], null] => {
    const qi = ops.sub(
      ops.sub(ops.broadcastInDim(ai, x.shape, []), ops.div(ops.broadcastInDim(bi, x.shape, []), q)),
      x,
    );
    const small = ops.le(qi, pivmin);
    const next = ops.select(small, ops.min(qi, ops.neg(pivmin)), qi);
    return [[next, ops.add(count, ops.convert(small, "int32"))], null];
  };
  const [[, counts]] = scan(
    step,
    [q0, count0] as [Array, Array],
    [ops.slice(alpha, [1], [n]), betaSq] as [Array, Array],
  );
  return counts;
}

/** The bisection itself (jitted: traced once per shape and dtype); tolIn is -inf when no tol was given. */
const bisect = jit((alpha: Array, beta: Array, targets: Array, tolIn: Array): Array => {
  const complex = isComplex(beta.dtype);
  const a = complex ? ops.real(alpha) : alpha;
  const betaSq = complex ? ops.real(ops.mul(beta, ops.conj(beta))) : ops.square(beta);
  const betaAbs = complex ? ops.sqrt(betaSq) : ops.abs(beta);
  const n = a.shape[0],
    k = targets.shape[0];
  const info = finfo(realDType(a.dtype));
  // Gershgorin discs bound the spectrum: a_i -/+ (|b_{i-1}| + |b_i|)
  const rowSum = ops.concatenate(
    [
      ops.slice(betaAbs, [0], [1]),
      ops.add(ops.slice(betaAbs, [0], [n - 2]), ops.slice(betaAbs, [1], [n - 1])),
      ops.slice(betaAbs, [n - 2], [n - 1]),
    ],
    0,
  );
  const lmax = ops.reduceMax(ops.add(a, rowSum), [0]);
  const lmin = ops.reduceMin(ops.sub(a, rowSum), [0]);
  const tNorm = ops.max(ops.abs(lmin), ops.abs(lmax));
  // the smallest safe pivot (LAPACK's pivmin): safemin * max(1, max b^2)
  const f = a.dtype === "float32" ? Math.fround : (v: number) => v;
  const safemin = Math.max(f(1 / info.max), f(f(1 + info.eps) * info.tiny));
  const pivmin = ops.mul(c(a, safemin), ops.max(c(a, 1), ops.reduceMax(betaSq, [0])));
  const eps = c(a, info.eps);
  const e0 = ops.mul(eps, ops.slice(betaAbs, [0], [1]));
  const alpha0Pert = ops.broadcastInDim(ops.reshape(ops.mul(e0, e0), []), [k], []);
  const absTol = ops.max(tolIn, ops.mul(eps, tNorm));
  // worst case: as many halvings as mantissa bits + 1
  const maxIt = info.nmant + 1;
  const fudge = 2.1;
  const normSlack = ops.mul(ops.mul(ops.mul(c(a, n), c(a, fudge)), eps), tNorm);
  const lower0 = ops.sub(ops.sub(lmin, normSlack), ops.mul(c(a, 2 * fudge), pivmin));
  const upper0 = ops.add(ops.add(lmax, normSlack), ops.mul(c(a, fudge), pivmin));
  const vec = (s: Array): Array => ops.broadcastInDim(s, [k], []);
  const half = c(a, 0.5);
  const pivK = vec(pivmin);
  type St = [Array, Array, Array, Array];
  const init: St = [ops.full([], 0, "int32"), vec(lower0), vec(ops.mul(half, ops.add(upper0, lower0))), vec(upper0)];
  const [, , mid] = whileLoop<St>(
    ([i, lo, , hi]) =>
      ops.and(ops.lt(i, ops.full([], maxIt, "int32")), ops.lt(absTol, ops.reduceMax(ops.sub(hi, lo), [0]))),
    ([i, lo, m, hi]) => {
      const counts = sturmCounts(a, betaSq, pivK, alpha0Pert, m);
      const nlo = ops.select(ops.le(counts, targets), m, lo);
      const nhi = ops.select(ops.gt(counts, targets), m, hi);
      return [ops.add(i, ops.full([], 1, "int32")), nlo, ops.mul(vec(half), ops.add(nlo, nhi)), nhi];
    },
    init,
  );
  return mid;
});

/**
 * Eigenvalues number lo..hi (ascending, inclusive) of the tridiagonal matrix with diagonal d [n] and off-diagonal e
 * [n-1] (same dtype), to absolute tolerance max(tol, eps * ||T||).
 */
export function tridiagonalEigvals(d: Array, e: Array, lo: number, hi: number, tol: number | null): Array {
  const n = d.shape[0];
  if (n <= 1) return isComplex(d.dtype) ? ops.real(d) : d;
  const targets = ops.add(ops.iota("int32", [hi - lo + 1], 0), ops.full([hi - lo + 1], lo, "int32"));
  const rd = realDType(d.dtype);
  return bisect(d, e, targets, ops.full([], tol ?? -Infinity, rd));
}
