/** @file jax.scipy.stats.gennorm: the generalized normal distribution's logpdf, pdf and cdf with shape beta. */
import type { Array } from "../core/array.js";
import { type Param, c, ops, promote } from "./stats-util.js";

/** gennorm.logpdf(x, beta) = log(beta/2) - lgamma(1/beta) - |x|^beta. */
export function logpdf(x: Param, beta: Param): Array {
  const [v, b] = promote("gennorm.logpdf", x, beta);
  return ops.sub(ops.sub(ops.log(ops.mul(c(b, 0.5), b)), ops.lgamma(ops.div(c(b, 1), b))), ops.pow(ops.abs(v), b));
}
/** gennorm.pdf(x, beta) = exp(logpdf). */
export const pdf = (x: Param, beta: Param): Array => ops.exp(logpdf(x, beta));
/** gennorm.cdf(x, beta) = (1 + sign(x) gammainc(1/beta, |x|^beta))/2 (lax.igamma), as JAX (no loc / scale there either). */
export function cdf(x: Param, beta: Param): Array {
  const [v, b] = promote("gennorm.cdf", x, beta);
  const p = ops.igamma(ops.div(c(b, 1), b), ops.pow(ops.abs(v), b));
  return ops.mul(c(v, 0.5), ops.add(c(v, 1), ops.mul(ops.sign(v), p)));
}
