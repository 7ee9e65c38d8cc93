/** @file jax.scipy.stats.expon: the exponential distribution's logpdf, pdf, cdf, logcdf, sf, logsf and ppf with loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, badProb, c, maskTo, ops, promote, sel } from "./stats-util.js";

/** expon.logpdf(x, loc=0, scale=1) = -(x - loc)/scale - log(scale) for x >= loc, -inf below. */
export function logpdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("expon.logpdf", x, loc, scale);
  return maskTo(ops.lt(a, l), -Infinity, ops.neg(ops.add(ops.div(ops.sub(a, l), s), ops.log(s))));
}
/** expon.pdf(x, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logpdf(x, loc, scale));
/** expon.logsf(x, loc=0, scale=1) = -(x - loc)/scale for x >= loc, 0 below. */
export function logsf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("expon.logsf", x, loc, scale);
  const t = ops.div(ops.sub(l, a), s);
  return sel(ops.lt(a, l), c(t, 0), t);
}
/** expon.sf(x, loc=0, scale=1) = exp(logsf). */
export const sf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logsf(x, loc, scale));
/** expon.cdf(x, loc=0, scale=1) = -expm1(-(x - loc)/scale) for x >= loc, 0 below. */
export function cdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("expon.cdf", x, loc, scale);
  const t = ops.div(ops.sub(l, a), s);
  return sel(ops.lt(a, l), c(t, 0), ops.neg(ops.expm1(t)));
}
/** expon.logcdf(x, loc=0, scale=1) = log1p(-sf). */
export const logcdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.log1p(ops.neg(sf(x, loc, scale)));
/** expon.ppf(q, loc=0, scale=1) = loc - scale log1p(-q); NaN outside [0, 1]. */
export function ppf(q: Param, loc: Param = 0, scale: Param = 1): Array {
  const [p, l, s] = promote("expon.ppf", q, loc, scale);
  return maskTo(badProb(p), NaN, ops.sub(l, ops.mul(s, ops.log1p(ops.neg(p)))));
}
