/** @file Shared helpers of the jax.scipy.stats families: argument promotion, standardization and support masks. */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import { broadcastTo, promoteArgsInexact } from "../numpy/core.js";
import { broadcastShapes } from "../core/shape.js";
import { type ArrayInput, c, sel } from "../numpy/elementwise-util.js";

export type { ArrayInput };
export { c, sel, ops };
/** A distribution parameter: an array, a nested JS array or a JS number (weakly typed, as a Python scalar in JAX). */
export type Param = ArrayInput;

/** The arguments promoted to one inexact dtype and broadcast to one shape, as JAX's promote_args_inexact. */
export const promote = (fn: string, ...xs: Param[]): Array[] => promoteArgsInexact(`scipy.stats.${fn}`, ...xs);

/** (x - loc) / scale. */
export const standardize = (x: Array, loc: Array, scale: Array): Array => ops.div(ops.sub(x, loc), scale);

/** where(cond, v, value) with value a JS number (NaN or +-inf for out-of-support or invalid parameters). */
export const maskTo = (cond: Array, value: number, v: Array): Array => sel(cond, c(v, value), v);

/** isnan(x). */
export const isNan = (x: Array): Array => ops.ne(x, x);
/** q outside [0, 1] or NaN: the quantile functions return NaN there. */
export const badProb = (q: Array): Array => ops.or(isNan(q), ops.or(ops.lt(q, c(q, 0)), ops.gt(q, c(q, 1))));
/** A polynomial in t with coefficients k[0] + k[1] t + ... (Horner). */
const poly = (t: Array, k: readonly number[]): Array =>
  k.reduceRight<Array | null>((acc, v) => (acc ? ops.add(ops.mul(acc, t), c(t, v)) : c(t, v)), null)!;
/**
 * exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0, from the polynomial approximations
 * of Abramowitz & Stegun 9.8.1 (|x| <= 3.75, |error| < 1.6e-7 in I0) and 9.8.2 (above, relative error < 1.9e-7):
 * float32 accuracy. A local stand-in until a lax bessel_i0e primitive exists.
 */
export function i0e(x: Array): Array {
  const a = ops.abs(x);
  const small = ops.le(a, c(a, 3.75));
  const s = sel(small, a, c(a, 3.75)),
    b = sel(small, c(a, 3.75), a);
  const t = ops.div(s, c(s, 3.75));
  const lo = ops.mul(
    poly(ops.mul(t, t), [1, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813]),
    ops.exp(ops.neg(s)),
  );
  const hi = ops.div(
    poly(
      ops.div(c(b, 3.75), b),
      [0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537, -0.01647633, 0.00392377],
    ),
    ops.sqrt(b),
  );
  return sel(small, lo, hi);
}

/** The arrays broadcast to their common shape (same dtype assumed), for lax ops that do not broadcast. */
export function bcast(fn: string, ...xs: Array[]): Array[] {
  const shape = broadcastShapes(`scipy.stats.${fn}`, ...xs.map((x) => x.shape));
  return xs.map((x) => broadcastTo(x, shape, `scipy.stats.${fn}`));
}
