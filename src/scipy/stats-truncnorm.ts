/**
 * @file jax.scipy.stats.truncnorm: the normal distribution truncated to [a, b] (in standard deviations from loc):
 * logpdf, pdf, logcdf, cdf, logsf and sf with loc and scale (ppf needs no special function but JAX has none).
 */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote, sel, standardize } from "./stats-util.js";
import { logNdtr, ndtr } from "./special.js";
import { logpdf as normLogpdf } from "./stats-norm.js";

type P = Param;
/** log(exp(x) - exp(y)) for x >= y: x + log(-expm1(y - x)); -inf where x == y (also both -inf). */
function logDiff(x: Array, y: Array): Array {
  const same = ops.eq(x, y);
  const d = sel(same, c(x, -1), ops.sub(y, x));
  return maskTo(same, -Infinity, ops.add(x, ops.log(ops.neg(ops.expm1(d)))));
}
/**
 * log(ndtr(b) - ndtr(a)), the standard normal mass of [a, b]: for intervals in one tail, as a difference of log_ndtr
 * (mirrored to the left tail when a > 0); for intervals around 0, log1p(-ndtr(a) - ndtr(-b)). Same split as scipy / JAX.
 */
function logGaussMass(a: Array, b: Array): Array {
  const left = ops.le(b, c(b, 0)),
    right = ops.gt(a, c(a, 0));
  const central = ops.not(ops.or(left, right));
  const at = sel(right, ops.neg(b), a),
    bt = sel(right, ops.neg(a), b);
  const tail = logDiff(logNdtr(bt), logNdtr(at));
  const mid = ops.log1p(ops.neg(ops.add(ndtr(a), ndtr(ops.neg(b)))));
  return sel(central, mid, tail);
}
/** truncnorm.logpdf(x, a, b, loc=0, scale=1) = norm.logpdf(x, loc, scale) - log mass[a, b]; -inf outside; NaN where a >= b. */
export function logpdf(x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, bb, l, s] = promote("truncnorm.logpdf", x, a, b, loc, scale);
  const z = standardize(v, l, s);
  const val = ops.sub(normLogpdf(v, l, s), logGaussMass(aa, bb));
  return maskTo(ops.ge(aa, bb), NaN, maskTo(ops.or(ops.lt(z, aa), ops.gt(z, bb)), -Infinity, val));
}
/** truncnorm.pdf(x, a, b, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array => ops.exp(logpdf(x, a, b, loc, scale));
/**
 * truncnorm.logcdf(x, a, b, loc=0, scale=1) = log mass[a, z] - log mass[a, b], z = (x - loc)/scale; near 1 (above
 * -0.1) as log1p(-sf) for accuracy; 0 above b, -inf below a, NaN where a >= b.
 */
export function logcdf(x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, bb, l, s] = promote("truncnorm.logcdf", x, a, b, loc, scale);
  const z = standardize(v, l, s);
  // clamp z into [a, b] so the masses stay finite off the support (those lanes are replaced below)
  const zc = ops.min(ops.max(z, aa), bb);
  const total = logGaussMass(aa, bb);
  const lc = ops.sub(logGaussMass(aa, zc), total);
  const ls = ops.sub(logGaussMass(zc, bb), total);
  const inner = sel(ops.gt(lc, c(lc, -0.1)), ops.log1p(ops.neg(ops.exp(ls))), lc);
  const r = sel(ops.ge(z, bb), c(z, 0), maskTo(ops.le(z, aa), -Infinity, inner));
  return maskTo(ops.ge(aa, bb), NaN, r);
}
/** truncnorm.cdf(x, a, b, loc=0, scale=1) = exp(logcdf). */
export const cdf = (x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array => ops.exp(logcdf(x, a, b, loc, scale));
/** truncnorm.logsf(x, a, b, loc=0, scale=1) = logcdf(-x, -b, -a, -loc, scale) by symmetry. */
export function logsf(x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array {
  const [v, aa, bb, l, s] = promote("truncnorm.logsf", x, a, b, loc, scale);
  return logcdf(ops.neg(v), ops.neg(bb), ops.neg(aa), ops.neg(l), s);
}
/** truncnorm.sf(x, a, b, loc=0, scale=1) = exp(logsf). */
export const sf = (x: P, a: P, b: P, loc: P = 0, scale: P = 1): Array => ops.exp(logsf(x, a, b, loc, scale));
