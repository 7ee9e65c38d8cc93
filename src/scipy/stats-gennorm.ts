/** @file jax.scipy.stats.gennorm: the generalized normal distribution's logpdf and pdf with shape beta (cdf after lax.igamma). */
import type { Array } from "../core/array.js";
import { type Param, c, ops, promote } from "./stats-util.js";

/** gennorm.logpdf(x, beta) = log(beta/2) - lgamma(1/beta) - |x|^beta. */
export function logpdf(x: Param, beta: Param): Array {
  const [v, b] = promote("gennorm.logpdf", x, beta);
  return ops.sub(ops.sub(ops.log(ops.mul(c(b, 0.5), b)), ops.lgamma(ops.div(c(b, 1), b))), ops.pow(ops.abs(v), b));
}
/** gennorm.pdf(x, beta) = exp(logpdf). */
export const pdf = (x: Param, beta: Param): Array => ops.exp(logpdf(x, beta));
