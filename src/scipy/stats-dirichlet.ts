/** @file jax.scipy.stats.dirichlet: the Dirichlet distribution's logpdf and pdf; x has the K categories (or K - 1) on axis 0. */
import type { Array } from "../core/array.js";
import { defaultFloatDType, isInexact } from "../core/dtype.js";
import { promoteDtypes } from "../numpy/core.js";
import { shapeStr } from "../core/shape.js";
import { type Param, c, maskTo, ops } from "./stats-util.js";
import { xlogy } from "./special.js";

/**
 * dirichlet.logpdf(x, alpha) = sum_i xlogy(alpha_i - 1, x_i) - (sum_i gammaln(alpha_i) - gammaln(sum_i alpha_i)),
 * alpha 1-D of length K, x of shape (K, ...) or (K - 1, ...) (the last component is then 1 - sum); -inf off the
 * simplex (a component <= 0, or the sum further than 1e-6 from 1).
 */
export function logpdf(x: Param, alpha: Param): Array {
  const fn = "scipy.stats.dirichlet.logpdf";
  let [v, a] = promoteDtypes(fn, [x, alpha]).map((t) =>
    isInexact(t.dtype) ? t : ops.convert(t, defaultFloatDType(), t.weakType),
  );
  if (a.ndim !== 1) throw new Error(`${fn}: alpha must be one-dimensional, got shape ${shapeStr(a.shape)}`);
  const K = a.shape[0];
  if (v.ndim === 0 || (v.shape[0] !== K && v.shape[0] !== K - 1))
    throw new Error(
      `${fn}: x must have ${K} or ${K - 1} entries on axis 0 for alpha of shape ${shapeStr(a.shape)}, got x of shape ${shapeStr(v.shape)}`,
    );
  if (v.shape[0] === K - 1) {
    const rest = ops.sub(c(v, 1), ops.reduceSum(v, [0]));
    v = ops.concatenate([v, ops.reshape(rest, [1, ...rest.shape])], 0);
  }
  const norm = ops.sub(ops.reduceSum(ops.lgamma(a), [0]), ops.lgamma(ops.reduceSum(a, [0])));
  const ab = ops.reshape(a, [K, ...v.shape.slice(1).map(() => 1)]);
  const lp = ops.sub(ops.reduceSum(xlogy(ops.sub(ab, c(ab, 1)), v), [0]), norm);
  const positive = ops.reduceAnd(ops.gt(v, c(v, 0)), [0]);
  const sums1 = ops.lt(ops.abs(ops.sub(ops.reduceSum(v, [0]), c(v, 1))), c(v, 1e-6));
  return maskTo(ops.not(ops.and(positive, sums1)), -Infinity, lp);
}
/** dirichlet.pdf(x, alpha) = exp(logpdf). */
export const pdf = (x: Param, alpha: Param): Array => ops.exp(logpdf(x, alpha));
