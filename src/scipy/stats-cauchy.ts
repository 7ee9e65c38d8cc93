/** @file jax.scipy.stats.cauchy: the Cauchy distribution's logpdf, pdf, cdf, logcdf, sf, logsf, ppf and isf with loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, c, ops, promote, standardize } from "./stats-util.js";

/** cauchy.logpdf(x, loc=0, scale=1) = -log(pi scale) - log1p(z^2), z = (x - loc)/scale. */
export function logpdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("cauchy.logpdf", x, loc, scale);
  const z = standardize(a, l, s);
  return ops.neg(ops.add(ops.log(ops.mul(c(s, Math.PI), s)), ops.log1p(ops.mul(z, z))));
}
/** cauchy.pdf(x, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logpdf(x, loc, scale));
const cdfOf = (z: Array): Array => ops.add(c(z, 0.5), ops.mul(c(z, 1 / Math.PI), ops.atan(z)));
/** cauchy.cdf(x, loc=0, scale=1) = 1/2 + atan((x - loc)/scale)/pi. */
export function cdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("cauchy.cdf", x, loc, scale);
  return cdfOf(standardize(a, l, s));
}
/** cauchy.logcdf(x, loc=0, scale=1) = log(cdf). */
export const logcdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.log(cdf(x, loc, scale));
/** cauchy.sf(x, loc=0, scale=1) = cdf(-x, -loc, scale). */
export function sf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("cauchy.sf", x, loc, scale);
  return cdfOf(ops.neg(standardize(a, l, s)));
}
/** cauchy.logsf(x, loc=0, scale=1) = log(sf). */
export const logsf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.log(sf(x, loc, scale));
/** cauchy.ppf(q, loc=0, scale=1) = loc + scale tan(pi (q - 1/2)). */
export function ppf(q: Param, loc: Param = 0, scale: Param = 1): Array {
  const [p, l, s] = promote("cauchy.ppf", q, loc, scale);
  return ops.add(ops.mul(ops.tan(ops.sub(ops.mul(c(p, Math.PI), p), c(p, Math.PI / 2))), s), l);
}
/** cauchy.isf(q, loc=0, scale=1) = loc + scale tan(pi/2 - pi q). */
export function isf(q: Param, loc: Param = 0, scale: Param = 1): Array {
  const [p, l, s] = promote("cauchy.isf", q, loc, scale);
  return ops.add(ops.mul(ops.tan(ops.sub(c(p, Math.PI / 2), ops.mul(c(p, Math.PI), p))), s), l);
}
