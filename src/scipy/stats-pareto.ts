/** @file jax.scipy.stats.pareto: the Pareto distribution's logpdf, pdf, cdf, logcdf, sf, logsf and ppf with shape b, loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, badProb, c, maskTo, ops, promote, sel, standardize } from "./stats-util.js";

type P = Param;
const below = (x: Array, l: Array, s: Array): Array => ops.lt(x, ops.add(l, s));
/** pareto.logpdf(x, b, loc=0, scale=1) = log(b/scale) - (b + 1) log((x - loc)/scale) for x >= loc + scale, -inf below. */
export function logpdf(x: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [a, bb, l, s] = promote("pareto.logpdf", x, b, loc, scale);
  const z = standardize(a, l, s);
  const v = ops.neg(ops.add(ops.log(ops.div(s, bb)), ops.mul(ops.add(bb, c(bb, 1)), ops.log(z))));
  return maskTo(below(a, l, s), -Infinity, v);
}
/** pareto.pdf(x, b, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: P, b: P, loc: P = 0, scale: P = 1): Array => ops.exp(logpdf(x, b, loc, scale));
/** pareto.cdf(x, b, loc=0, scale=1) = 1 - z^-b, z = (x - loc)/scale; 0 below the support. */
export function cdf(x: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [a, bb, l, s] = promote("pareto.cdf", x, b, loc, scale);
  const v = ops.sub(c(a, 1), ops.pow(standardize(a, l, s), ops.neg(bb)));
  return sel(below(a, l, s), c(v, 0), v);
}
/** pareto.logcdf(x, b, loc=0, scale=1) = log1p(-z^-b); -inf below the support. */
export function logcdf(x: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [a, bb, l, s] = promote("pareto.logcdf", x, b, loc, scale);
  const v = ops.log1p(ops.neg(ops.pow(standardize(a, l, s), ops.neg(bb))));
  return maskTo(below(a, l, s), -Infinity, v);
}
/** pareto.logsf(x, b, loc=0, scale=1) = -b log z; 0 below the support. */
export function logsf(x: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [a, bb, l, s] = promote("pareto.logsf", x, b, loc, scale);
  const v = ops.neg(ops.mul(bb, ops.log(standardize(a, l, s))));
  return sel(below(a, l, s), c(v, 0), v);
}
/** pareto.sf(x, b, loc=0, scale=1) = exp(logsf). */
export const sf = (x: P, b: P, loc: P = 0, scale: P = 1): Array => ops.exp(logsf(x, b, loc, scale));
/** pareto.ppf(q, b, loc=0, scale=1) = loc + scale (1 - q)^(-1/b); NaN outside [0, 1]. */
export function ppf(q: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [p, bb, l, s] = promote("pareto.ppf", q, b, loc, scale);
  const v = ops.add(l, ops.mul(s, ops.pow(ops.sub(c(p, 1), p), ops.neg(ops.div(c(bb, 1), bb)))));
  return maskTo(badProb(p), NaN, v);
}
