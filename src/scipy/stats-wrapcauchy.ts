/** @file jax.scipy.stats.wrapcauchy: the wrapped Cauchy distribution's logpdf and pdf with shape c. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote } from "./stats-util.js";

/** wrapcauchy.logpdf(x, c) = log(1 - c^2) - log(2 pi) - log(1 + c^2 - 2 c cos x) on [0, 2 pi]; -inf outside; NaN unless 0 < c < 1. */
export function logpdf(x: Param, cc: Param): Array {
  const [v, r] = promote("wrapcauchy.logpdf", x, cc);
  const r2 = ops.mul(r, r),
    one = c(r, 1);
  const lp = ops.sub(
    ops.sub(ops.log(ops.sub(one, r2)), c(r, Math.log(2 * Math.PI))),
    // 1 + c^2 - 2c cos x written as (1 - c)^2 + 4c sin^2(x/2): no cancellation for c near 1 and x near 0
    ops.log(
      ops.add(ops.square(ops.sub(one, r)), ops.mul(ops.mul(c(r, 4), r), ops.square(ops.sin(ops.mul(v, c(v, 0.5)))))),
    ),
  );
  const inside = maskTo(ops.or(ops.lt(v, c(v, 0)), ops.gt(v, c(v, 2 * Math.PI))), -Infinity, lp);
  return maskTo(ops.not(ops.and(ops.gt(r, c(r, 0)), ops.lt(r, one))), NaN, inside);
}
/** wrapcauchy.pdf(x, c) = exp(logpdf). */
export const pdf = (x: Param, cc: Param): Array => ops.exp(logpdf(x, cc));
