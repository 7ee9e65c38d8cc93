/** @file jax.scipy.stats.poisson: the Poisson distribution's logpmf, pmf, cdf and entropy with mu and loc. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote, sel } from "./stats-util.js";
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
/** poisson.cdf(k, mu, loc=0) = gammaincc(floor(k - loc + 1), mu) (lax.igammac), 0 for k - loc < 0, as JAX. */
export function cdf(k: Param, mu: Param, loc: Param = 0): Array {
  const [kk, m, l] = promote("poisson.cdf", k, mu, loc);
  const y = ops.sub(kk, l);
  return maskTo(ops.lt(y, c(y, 0)), 0, ops.igammac(ops.floor(ops.add(y, c(y, 1))), m));
}
/**
 * poisson.entropy(mu, loc=0) = -sum_k pmf(k) log pmf(k): summed over k < 250 for mu < 100 (the mass beyond is below
 * float precision there), the asymptotic log(2 pi e mu)/2 - 1/(12 mu) from 100 on (relative error ~1e-6 at 100);
 * 0 at mu = 0. The shape is mu's and loc's broadcast (loc does not change the entropy). JAX switches the same way.
 */
export function entropy(mu: Param, loc: Param = 0): Array {
  const [m] = promote("poisson.entropy", mu, loc);
  const K = 250;
  const big = ops.ge(m, c(m, 100));
  const ms = ops.reshape(sel(big, c(m, 1), m), [1, ...m.shape]);
  const k = ops.iota(m.dtype, [K, ...m.shape], 0);
  const msb = ops.broadcastInDim(ms, [K, ...m.shape], [...ms.shape.keys()]);
  const lp = ops.sub(ops.sub(xlogy(k, msb), ops.lgamma(ops.add(k, c(k, 1)))), msb);
  const terms = sel(ops.eq(lp, c(lp, -Infinity)), c(lp, 0), ops.neg(ops.mul(ops.exp(lp), lp)));
  const summed = ops.reduceSum(terms, [0]);
  const mb = sel(big, m, c(m, 100));
  const asym = ops.sub(
    ops.mul(c(mb, 0.5), ops.log(ops.mul(c(mb, 2 * Math.PI * Math.E), mb))),
    ops.div(c(mb, 1 / 12), mb),
  );
  return sel(ops.eq(m, c(m, 0)), c(m, 0), sel(big, asym, summed));
}
