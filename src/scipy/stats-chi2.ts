/** @file jax.scipy.stats.chi2: the chi-squared distribution's logpdf, pdf, cdf, logcdf, sf and logsf with df, loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote, sel, standardize } from "./stats-util.js";
import { xlogy } from "./special.js";

type P = Param;
/** chi2.logpdf(x, df, loc=0, scale=1) = (df/2 - 1) log y - y/2 - lgamma(df/2) - df log(2)/2 - log(scale); -inf for x < loc. */
export function logpdf(x: P, df: P, loc: P = 0, scale: P = 1): Array {
  const [v, d, l, s] = promote("chi2.logpdf", x, df, loc, scale);
  const ok = ops.ge(v, l);
  const y = sel(ok, standardize(v, l, s), c(v, 1));
  const h = ops.mul(d, c(d, 0.5));
  const kernel = ops.sub(xlogy(ops.sub(h, c(h, 1)), y), ops.mul(y, c(y, 0.5)));
  const norm = ops.neg(ops.add(ops.lgamma(h), ops.mul(h, c(h, Math.LN2))));
  return maskTo(ops.not(ok), -Infinity, ops.add(ops.sub(norm, ops.log(s)), kernel));
}
/** chi2.pdf(x, df, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: P, df: P, loc: P = 0, scale: P = 1): Array => ops.exp(logpdf(x, df, loc, scale));
/** [df/2, clamp(0, (x - loc)/(2 scale), inf)]: the igamma arguments of JAX's chi2.cdf / sf. */
function halves(fn: string, x: P, df: P, loc: P, scale: P): [Array, Array] {
  const [v, d, l, s] = promote(fn, x, df, loc, scale);
  return [ops.mul(d, c(d, 0.5)), ops.clamp(0, ops.div(ops.sub(v, l), ops.mul(s, c(s, 2))), Infinity)];
}
/** chi2.cdf(x, df, loc=0, scale=1) = gammainc(df/2, clamp(0, (x - loc)/(2 scale), inf)) (lax.igamma). */
export const cdf = (x: P, df: P, loc: P = 0, scale: P = 1): Array =>
  ops.igamma(...halves("chi2.cdf", x, df, loc, scale));
/** chi2.logcdf(x, df, loc=0, scale=1) = log(cdf), as JAX. */
export const logcdf = (x: P, df: P, loc: P = 0, scale: P = 1): Array => ops.log(cdf(x, df, loc, scale));
/** chi2.sf(x, df, loc=0, scale=1) = gammaincc(df/2, clamp(0, (x - loc)/(2 scale), inf)) (lax.igammac). */
export const sf = (x: P, df: P, loc: P = 0, scale: P = 1): Array =>
  ops.igammac(...halves("chi2.sf", x, df, loc, scale));
/** chi2.logsf(x, df, loc=0, scale=1) = log(sf), as JAX. */
export const logsf = (x: P, df: P, loc: P = 0, scale: P = 1): Array => ops.log(sf(x, df, loc, scale));
