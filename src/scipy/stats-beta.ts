/** @file jax.scipy.stats.beta: the beta distribution's logpdf, pdf, cdf, logcdf, sf and logsf with a, b, loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote, standardize } from "./stats-util.js";
import { betaln, xlog1py, xlogy } from "./special.js";

type P = Param;
/**
 * beta.logpdf(x, a, b, loc=0, scale=1) = xlogy(a - 1, y) + xlog1py(b - 1, -y) - betaln(a, b) - log(scale) with
 * y = (x - loc)/scale on [0, 1]; -inf outside [loc, loc + scale]; NaN where a <= 0, b <= 0 or scale <= 0.
 */
export function logpdf(x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, bb, l, s] = promote("beta.logpdf", x, a, b, loc, scale);
  const y = standardize(v, l, s);
  const one = c(v, 1);
  const lin = ops.add(xlogy(ops.sub(aa, one), y), xlog1py(ops.sub(bb, one), ops.neg(y)));
  const lp = ops.sub(ops.sub(lin, betaln(aa, bb)), ops.log(s));
  const out = maskTo(ops.or(ops.gt(v, ops.add(l, s)), ops.lt(v, l)), -Infinity, lp);
  const zero = c(v, 0);
  return maskTo(ops.or(ops.or(ops.le(aa, zero), ops.le(bb, zero)), ops.le(s, zero)), NaN, out);
}
/** beta.pdf(x, a, b, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array => ops.exp(logpdf(x, a, b, loc, scale));
/** beta.cdf(x, a, b, loc=0, scale=1) = betainc(a, b, clamp(0, (x - loc)/scale, 1)) (lax.betainc), as JAX. */
export function cdf(x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, bb, l, s] = promote("beta.cdf", x, a, b, loc, scale);
  return ops.betainc(aa, bb, ops.clamp(0, standardize(v, l, s), 1));
}
/** beta.logcdf(x, a, b, loc=0, scale=1) = log(cdf), as JAX. */
export const logcdf = (x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array => ops.log(cdf(x, a, b, loc, scale));
/** beta.sf(x, a, b, loc=0, scale=1) = betainc(b, a, 1 - clamp(0, (x - loc)/scale, 1)), as JAX (accurate in the upper tail). */
export function sf(x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, bb, l, s] = promote("beta.sf", x, a, b, loc, scale);
  const y = ops.clamp(0, standardize(v, l, s), 1);
  return ops.betainc(bb, aa, ops.sub(c(y, 1), y));
}
/** beta.logsf(x, a, b, loc=0, scale=1) = log(sf), as JAX. */
export const logsf = (x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array => ops.log(sf(x, a, b, loc, scale));
