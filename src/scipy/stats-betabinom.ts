/** @file jax.scipy.stats.betabinom: the beta-binomial distribution's logpmf and pmf with n, a, b and loc. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote, sel } from "./stats-util.js";
import { betaln } from "./special.js";

type P = Param;
/**
 * betabinom.logpmf(k, n, a, b, loc=0) = -log1p(n) - betaln(n - y + 1, y + 1) + betaln(y + a, n - y + b) - betaln(a, b),
 * y = floor(k) - loc; 0 where y = n = 0; -inf for y < 0, y > n or y + a <= 0; NaN where n < 0, a <= 0 or b <= 0.
 */
export function logpmf(k: P, n: P, a: P, b: P, loc: P = 0): Array {
  const [kk, nn, aa, bb, l] = promote("betabinom.logpmf", k, n, a, b, loc);
  const y = ops.sub(ops.floor(kk), l);
  const one = c(y, 1),
    zero = c(y, 0);
  const ny = ops.sub(nn, y);
  const comb = ops.neg(ops.add(ops.log1p(nn), betaln(ops.add(ny, one), ops.add(y, one))));
  const lp0 = ops.add(comb, ops.sub(betaln(ops.add(y, aa), ops.add(ny, bb)), betaln(aa, bb)));
  const lp = sel(ops.and(ops.eq(y, zero), ops.eq(nn, zero)), zero, lp0);
  const outside = ops.or(ops.or(ops.lt(y, zero), ops.gt(y, nn)), ops.le(ops.add(y, aa), zero));
  const bad = ops.or(ops.or(ops.lt(nn, zero), ops.le(aa, zero)), ops.le(bb, zero));
  return maskTo(bad, NaN, maskTo(outside, -Infinity, lp));
}
/** betabinom.pmf(k, n, a, b, loc=0) = exp(logpmf). */
export const pmf = (k: P, n: P, a: P, b: P, loc: P = 0): Array => ops.exp(logpmf(k, n, a, b, loc));
