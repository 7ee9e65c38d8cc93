/** @file jax.scipy.stats.chi2: the chi-squared distribution's logpdf and pdf with df, loc and scale (cdf/sf after lax.igamma). */
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
