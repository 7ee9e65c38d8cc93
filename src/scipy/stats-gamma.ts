/** @file jax.scipy.stats.gamma: the gamma distribution's logpdf, pdf, cdf, logcdf, sf and logsf with shape a, loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote, sel, standardize } from "./stats-util.js";
import { xlogy } from "./special.js";

type P = Param;
/** gamma.logpdf(x, a, loc=0, scale=1) = xlogy(a - 1, y) - y - gammaln(a) - log(scale), y = (x - loc)/scale; -inf for x < loc. */
export function logpdf(x: P, a: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, l, s] = promote("gamma.logpdf", x, a, loc, scale);
  const ok = ops.ge(v, l);
  const y = sel(ok, standardize(v, l, s), c(v, 1));
  const lp = ops.sub(ops.sub(xlogy(ops.sub(aa, c(aa, 1)), y), y), ops.add(ops.lgamma(aa), ops.log(s)));
  return maskTo(ops.not(ok), -Infinity, lp);
}
/** gamma.pdf(x, a, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: P, a: P, loc: P = 0, scale: P = 1): Array => ops.exp(logpdf(x, a, loc, scale));
/** y = (x - loc)/scale clamped to [0, inf], as JAX's gamma.cdf / sf (x below loc gives cdf 0, sf 1). */
const clampedY = (v: Array, l: Array, s: Array): Array => ops.clamp(0, standardize(v, l, s), Infinity);
/** gamma.cdf(x, a, loc=0, scale=1) = gammainc(a, clamp(0, (x - loc)/scale, inf)) (lax.igamma). */
export function cdf(x: P, a: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, l, s] = promote("gamma.cdf", x, a, loc, scale);
  return ops.igamma(aa, clampedY(v, l, s));
}
/** gamma.logcdf(x, a, loc=0, scale=1) = log(cdf), as JAX. */
export const logcdf = (x: P, a: P, loc: P = 0, scale: P = 1): Array => ops.log(cdf(x, a, loc, scale));
/** gamma.sf(x, a, loc=0, scale=1) = gammaincc(a, clamp(0, (x - loc)/scale, inf)) (lax.igammac). */
export function sf(x: P, a: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, l, s] = promote("gamma.sf", x, a, loc, scale);
  return ops.igammac(aa, clampedY(v, l, s));
}
/** gamma.logsf(x, a, loc=0, scale=1) = log(sf), as JAX. */
export const logsf = (x: P, a: P, loc: P = 0, scale: P = 1): Array => ops.log(sf(x, a, loc, scale));
