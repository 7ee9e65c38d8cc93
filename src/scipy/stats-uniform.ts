/** @file jax.scipy.stats.uniform: the uniform distribution on [loc, loc + scale]: logpdf, pdf, cdf and ppf. */
import type { Array } from "../core/array.js";
import { type Param, badProb, c, maskTo, ops, promote, sel } from "./stats-util.js";

/** uniform.logpdf(x, loc=0, scale=1) = -log(scale) on [loc, loc + scale], -inf outside. */
export function logpdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("uniform.logpdf", x, loc, scale);
  const out = ops.or(ops.gt(a, ops.add(l, s)), ops.lt(a, l));
  return maskTo(out, -Infinity, ops.neg(ops.log(s)));
}
/** uniform.pdf(x, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logpdf(x, loc, scale));
/** uniform.cdf(x, loc=0, scale=1) = 0 below loc, (x - loc)/scale on the support, 1 above (NaN stays NaN). */
export function cdf(x: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, l, s] = promote("uniform.cdf", x, loc, scale);
  const t = ops.div(ops.sub(a, l), s);
  const z = c(t, 0);
  return sel(ops.lt(a, l), z, sel(ops.gt(a, ops.add(l, s)), c(t, 1), sel(ops.ge(a, l), t, z)));
}
/** uniform.ppf(q, loc=0, scale=1) = loc + scale q; NaN outside [0, 1]. */
export function ppf(q: Param, loc: Param = 0, scale: Param = 1): Array {
  const [p, l, s] = promote("uniform.ppf", q, loc, scale);
  return maskTo(badProb(p), NaN, ops.add(l, ops.mul(s, p)));
}
