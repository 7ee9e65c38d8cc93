/** @file jax.scipy.stats.logistic: the logistic distribution's logpdf, pdf, cdf, sf, ppf and isf with loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, c, ops, promote, standardize } from "./stats-util.js";
import { expit, logit } from "./special.js";

/** logistic.logpdf(x, loc=0, scale=1) = -2 logaddexp(z/2, -z/2) - log(scale), z = (x - loc)/scale (overflow-free). */
export function logpdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("logistic.logpdf", x, loc, scale);
  const h = ops.abs(ops.mul(standardize(a, l, s), c(a, 0.5)));
  // logaddexp(h, -h) = |h| + log1p(exp(-2|h|))
  const lae = ops.add(h, ops.log1p(ops.exp(ops.mul(h, c(h, -2)))));
  return ops.sub(ops.mul(c(a, -2), lae), ops.log(s));
}
/** logistic.pdf(x, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logpdf(x, loc, scale));
/** logistic.cdf(x, loc=0, scale=1) = expit((x - loc)/scale). */
export function cdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("logistic.cdf", x, loc, scale);
  return expit(standardize(a, l, s));
}
/** logistic.sf(x, loc=0, scale=1) = expit(-(x - loc)/scale). */
export function sf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("logistic.sf", x, loc, scale);
  return expit(ops.neg(standardize(a, l, s)));
}
/** logistic.ppf(q, loc=0, scale=1) = loc + scale logit(q). */
export function ppf(q: Param, loc: Param = 0, scale: Param = 1): Array {
  const [p, l, s] = promote("logistic.ppf", q, loc, scale);
  return ops.add(ops.mul(logit(p), s), l);
}
/** logistic.isf(q, loc=0, scale=1) = loc - scale logit(q). */
export function isf(q: Param, loc: Param = 0, scale: Param = 1): Array {
  const [p, l, s] = promote("logistic.isf", q, loc, scale);
  return ops.sub(l, ops.mul(logit(p), s));
}
