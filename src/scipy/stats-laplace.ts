/** @file jax.scipy.stats.laplace: the Laplace distribution's logpdf, pdf and cdf with loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, c, ops, promote, sel, standardize } from "./stats-util.js";

/** laplace.logpdf(x, loc=0, scale=1) = -|x - loc|/scale - log(2 scale). */
export function logpdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("laplace.logpdf", x, loc, scale);
  return ops.neg(ops.add(ops.div(ops.abs(ops.sub(a, l)), s), ops.log(ops.mul(c(s, 2), s))));
}
/** laplace.pdf(x, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logpdf(x, loc, scale));
/** laplace.cdf(x, loc=0, scale=1) = exp(z)/2 for z = (x - loc)/scale <= 0, 1 - exp(-z)/2 above. */
export function cdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("laplace.cdf", x, loc, scale);
  const z = standardize(a, l, s);
  const neg = ops.le(z, c(z, 0));
  const e = ops.mul(c(z, 0.5), ops.exp(ops.neg(ops.abs(z))));
  return sel(neg, e, ops.sub(c(z, 1), e));
}
