/** @file jax.scipy.stats.gamma: the gamma distribution's logpdf and pdf with shape a, loc and scale (cdf/sf after lax.igamma). */
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
