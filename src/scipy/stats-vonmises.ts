/** @file jax.scipy.stats.vonmises: the von Mises distribution's logpdf and pdf with concentration kappa. */
import type { Array } from "../core/array.js";
import { type Param, c, i0e, maskTo, ops, promote } from "./stats-util.js";

/** vonmises.logpdf(x, kappa) = kappa (cos x - 1) - log(2 pi i0e(kappa)); NaN where kappa <= 0. */
export function logpdf(x: Param, kappa: Param): Array {
  const [v, k] = promote("vonmises.logpdf", x, kappa);
  const lp = ops.sub(ops.mul(k, ops.sub(ops.cos(v), c(v, 1))), ops.log(ops.mul(c(k, 2 * Math.PI), i0e(k))));
  return maskTo(ops.le(k, c(k, 0)), NaN, lp);
}
/** vonmises.pdf(x, kappa) = exp(logpdf). */
export const pdf = (x: Param, kappa: Param): Array => ops.exp(logpdf(x, kappa));
