/** @file jax.scipy.stats.t: Student's t distribution's logpdf and pdf with df, loc and scale (cdf after lax.betainc). */
import type { Array } from "../core/array.js";
import { type Param, c, ops, promote, standardize } from "./stats-util.js";

/**
 * t.logpdf(x, df, loc=0, scale=1) = lgamma((df+1)/2) - lgamma(df/2) - log(pi df scale^2)/2
 * - (df+1)/2 log1p(z^2/df), z = (x - loc)/scale.
 */
export function logpdf(x: Param, df: Param, loc: Param = 0, scale: Param = 1): Array {
  const [a, d, l, s] = promote("t.logpdf", x, df, loc, scale);
  const z = standardize(a, l, s);
  const h = ops.mul(d, c(d, 0.5)),
    h1 = ops.add(h, c(h, 0.5));
  const norm = ops.sub(
    ops.add(ops.lgamma(h), ops.mul(c(s, 0.5), ops.log(ops.mul(ops.mul(ops.mul(s, s), c(s, Math.PI)), d)))),
    ops.lgamma(h1),
  );
  return ops.neg(ops.add(norm, ops.mul(h1, ops.log1p(ops.div(ops.mul(z, z), d)))));
}
/** t.pdf(x, df, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: Param, df: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logpdf(x, df, loc, scale));
