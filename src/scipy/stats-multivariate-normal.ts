/** @file jax.scipy.stats.multivariate_normal (exported as multivariateNormal): logpdf and pdf with mean and cov (scalar, (n, n) or batched). */
import type { Array } from "../core/array.js";
import { defaultFloatDType, isInexact } from "../core/dtype.js";
import { broadcastTo, promoteDtypes } from "../numpy/core.js";
import { broadcastShapes, shapeStr } from "../core/shape.js";
import { type Param, bcast, c, ops } from "./stats-util.js";
import * as P from "../primitives/linalg.js";
import { cholesky } from "../lax/linalg.js";

/** JAX's promote_dtypes_inexact: one common dtype, integers and bools to the default float; no broadcasting. */
const promoteInexact = (fn: string, xs: Param[]): Array[] =>
  promoteDtypes(fn, xs).map((a) => (isInexact(a.dtype) ? a : ops.convert(a, defaultFloatDType(), a.weakType)));
const sumLast = (x: Array): Array => ops.reduceSum(x, [x.ndim - 1]);
const LOG2PI = Math.log(2 * Math.PI);
/**
 * multivariate_normal.logpdf(x, mean, cov, allowSingular?) with x of shape (..., n). A 0-d mean is the univariate
 * case; a 0-d cov is cov * I; otherwise cov is (..., n, n), factored as L L^T (Cholesky) and the quadratic form is
 * |L^-1 (x - mean)|^2, so logpdf = -|z|^2/2 - n log(2 pi)/2 - sum(log diag L). allowSingular is not supported (as in JAX).
 */
export function logpdf(x: Param, mean: Param, cov: Param, allowSingular: null = null): Array {
  const fn = "scipy.stats.multivariateNormal.logpdf";
  if (allowSingular !== null && allowSingular !== undefined)
    throw new Error(`${fn}: allowSingular is not implemented (as in JAX); pass null`);
  const [xa, m, cv] = promoteInexact(fn, [x, mean, cov]);
  if (m.ndim === 0) {
    const [xb, mb, cb] = bcast("multivariateNormal.logpdf", xa, m, cv);
    const d = ops.sub(xb, mb);
    return ops.sub(
      ops.mul(c(d, -0.5), ops.div(ops.mul(d, d), cb)),
      ops.mul(c(cb, 0.5), ops.add(c(cb, LOG2PI), ops.log(cb))),
    );
  }
  const n = m.shape[m.ndim - 1];
  const [xb, mb] = bcast("multivariateNormal.logpdf", xa, m);
  const y = ops.sub(xb, mb);
  if (cv.ndim === 0) {
    return ops.sub(
      ops.mul(c(y, -0.5), ops.div(sumLast(ops.mul(y, y)), cv)),
      ops.mul(c(cv, n / 2), ops.add(c(cv, LOG2PI), ops.log(cv))),
    );
  }
  if (cv.ndim < 2 || cv.shape[cv.ndim - 1] !== n || cv.shape[cv.ndim - 2] !== n)
    throw new Error(
      `${fn}: cov must be a scalar or (..., ${n}, ${n}) for a mean of shape ${shapeStr(m.shape)}, got cov of shape ${shapeStr(cv.shape)}`,
    );
  const L = cholesky(cv);
  const batch = broadcastShapes(fn, y.shape.slice(0, -1), L.shape.slice(0, -2));
  const yb = ops.reshape(broadcastTo(y, [...batch, n], fn), [...batch, n, 1]);
  const Lb = broadcastTo(L, [...batch, n, n], fn);
  const z = ops.reshape(P.triangularSolve(Lb, yb, { leftSide: true, lower: true }), [...batch, n]);
  const logDet = sumLast(ops.log(P.diagPart(L)));
  return ops.sub(ops.sub(ops.mul(c(z, -0.5), sumLast(ops.mul(z, z))), c(z, (n / 2) * LOG2PI)), logDet);
}
/** multivariate_normal.pdf(x, mean, cov) = exp(logpdf). */
export const pdf = (x: Param, mean: Param, cov: Param): Array => ops.exp(logpdf(x, mean, cov));
