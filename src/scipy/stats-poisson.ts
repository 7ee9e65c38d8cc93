/** @file jax.scipy.stats.poisson: the Poisson distribution's logpmf and pmf with mu and loc (cdf after lax.igamma). */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote } from "./stats-util.js";
import { xlogy } from "./special.js";

/** poisson.logpmf(k, mu, loc=0) = xlogy(y, mu) - gammaln(y + 1) - mu, y = k - loc; -inf for y < 0 or non-integer k. */
export function logpmf(k: Param, mu: Param, loc: Param = 0): Array {
  const [kk, m, l] = promote("poisson.logpmf", k, mu, loc);
  const y = ops.sub(kk, l);
  const lp = ops.sub(ops.sub(xlogy(y, m), ops.lgamma(ops.add(y, c(y, 1)))), m);
  return maskTo(ops.or(ops.lt(y, c(y, 0)), ops.ne(ops.round(kk, 1), kk)), -Infinity, lp);
}
/** poisson.pmf(k, mu, loc=0) = exp(logpmf). */
export const pmf = (k: Param, mu: Param, loc: Param = 0): Array => ops.exp(logpmf(k, mu, loc));
