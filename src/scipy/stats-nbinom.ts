/** @file jax.scipy.stats.nbinom: the negative binomial distribution (failures before the n-th success): logpmf and pmf with n, p and loc. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote } from "./stats-util.js";
import { xlogy } from "./special.js";

type P = Param;
/** nbinom.logpmf(k, n, p, loc=0) = gammaln(y+n) - gammaln(n) - gammaln(y+1) + xlogy(n, p) + xlogy(y, 1-p), y = k - loc; -inf for k < loc. */
export function logpmf(k: P, n: P, p: P, loc: P = 0): Array {
  const [kk, nn, pp, l] = promote("nbinom.logpmf", k, n, p, loc);
  const y = ops.sub(kk, l);
  const one = c(y, 1);
  const comb = ops.sub(ops.sub(ops.lgamma(ops.add(y, nn)), ops.lgamma(nn)), ops.lgamma(ops.add(y, one)));
  const lin = ops.add(xlogy(nn, pp), xlogy(y, ops.sub(one, pp)));
  return maskTo(ops.lt(kk, l), -Infinity, ops.add(comb, lin));
}
/** nbinom.pmf(k, n, p, loc=0) = exp(logpmf). */
export const pmf = (k: P, n: P, p: P, loc: P = 0): Array => ops.exp(logpmf(k, n, p, loc));
