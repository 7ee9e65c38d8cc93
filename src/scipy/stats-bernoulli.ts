/** @file jax.scipy.stats.bernoulli: the Bernoulli distribution's logpmf, pmf (with loc), cdf and ppf. */
import type { Array } from "../core/array.js";
import { type Param, c, isNan, maskTo, ops, promote, sel } from "./stats-util.js";
import { xlog1py, xlogy } from "./special.js";

/** bernoulli.logpmf(k, p, loc=0) = xlogy(y, p) + xlog1py(1 - y, -p), y = k - loc; -inf outside [0, 1]. */
export function logpmf(k: Param, p: Param, loc: Param = 0): Array {
  const [kk, pp, l] = promote("bernoulli.logpmf", k, p, loc);
  const y = ops.sub(kk, l);
  const lp = ops.add(xlogy(y, pp), xlog1py(ops.sub(c(y, 1), y), ops.neg(pp)));
  return maskTo(ops.or(ops.lt(y, c(y, 0)), ops.gt(y, c(y, 1))), -Infinity, lp);
}
/** bernoulli.pmf(k, p, loc=0) = exp(logpmf). */
export const pmf = (k: Param, p: Param, loc: Param = 0): Array => ops.exp(logpmf(k, p, loc));
const badP = (p: Array): Array => ops.or(isNan(p), ops.or(ops.lt(p, c(p, 0)), ops.gt(p, c(p, 1))));
/** bernoulli.cdf(k, p) = 0 for k < 0, 1 - p for 0 <= k < 1, 1 for k >= 1; NaN for NaN k or p outside [0, 1]. */
export function cdf(k: Param, p: Param): Array {
  const [kk, pp] = promote("bernoulli.cdf", k, p);
  const v = sel(ops.lt(kk, c(kk, 0)), c(kk, 0), sel(ops.lt(kk, c(kk, 1)), ops.sub(c(pp, 1), pp), c(kk, 1)));
  return maskTo(ops.or(isNan(kk), badP(pp)), NaN, v);
}
/** bernoulli.ppf(q, p) = 0 for q <= 1 - p, else 1; NaN for q or p outside [0, 1]. */
export function ppf(q: Param, p: Param): Array {
  const [qq, pp] = promote("bernoulli.ppf", q, p);
  const v = sel(ops.le(qq, ops.sub(c(pp, 1), pp)), c(qq, 0), c(qq, 1));
  return maskTo(ops.or(badP(qq), badP(pp)), NaN, v);
}
