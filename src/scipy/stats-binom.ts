/** @file jax.scipy.stats.binom: the binomial distribution's logpmf and pmf with n, p and loc (cdf after lax.betainc). */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote, sel } from "./stats-util.js";
import { xlog1py, xlogy } from "./special.js";

type P = Param;
/**
 * binom.logpmf(k, n, p, loc=0) = gammaln(n+1) - gammaln(y+1) - gammaln(n-y+1) + xlogy(y, p) + xlog1py(n - y, -p),
 * y = k - loc; exactly 0 where the outcome is certain (y = n = 0, or the linear term is 0); -inf outside [0, n].
 */
export function logpmf(k: P, n: P, p: P, loc: P = 0): Array {
  const [kk, nn, pp, l] = promote("binom.logpmf", k, n, p, loc);
  const y = ops.sub(kk, l);
  const one = c(y, 1),
    zero = c(y, 0);
  const comb = ops.sub(
    ops.lgamma(ops.add(nn, one)),
    ops.add(ops.lgamma(ops.add(y, one)), ops.lgamma(ops.add(ops.sub(nn, y), one))),
  );
  const lin = ops.add(xlogy(y, pp), xlog1py(ops.sub(nn, y), ops.neg(pp)));
  const certain = ops.or(ops.and(ops.eq(y, zero), ops.eq(nn, zero)), ops.eq(lin, zero));
  const lp = sel(certain, zero, ops.add(comb, lin));
  return maskTo(ops.not(ops.and(ops.ge(kk, l), ops.lt(kk, ops.add(ops.add(l, nn), one)))), -Infinity, lp);
}
/** binom.pmf(k, n, p, loc=0) = exp(logpmf). */
export const pmf = (k: P, n: P, p: P, loc: P = 0): Array => ops.exp(logpmf(k, n, p, loc));
