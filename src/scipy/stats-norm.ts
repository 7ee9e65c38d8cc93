/** @file jax.scipy.stats.norm: the normal distribution's pdf, logpdf, cdf, logcdf, sf, logsf, ppf and isf with loc and scale. */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import { promoteArgsInexact } from "../numpy/core.js";
import { type ArrayInput, c } from "../numpy/elementwise-util.js";
import { logNdtr, ndtr, ndtri } from "./special.js";

type Loc = ArrayInput;
/** (x - loc) / scale with x, loc and scale promoted to one inexact dtype and broadcast. */
function z(fn: string, x: ArrayInput, loc: Loc, scale: Loc): [Array, Array] {
  const [a, l, s] = promoteArgsInexact(`norm.${fn}`, x, loc, scale);
  return [ops.div(ops.sub(a, l), s), s];
}
/** norm.logpdf(x, loc=0, scale=1) = -((x - loc)/scale)^2 / 2 - log(scale) - log(2 pi) / 2. */
export function logpdf(x: ArrayInput, loc: Loc = 0, scale: Loc = 1): Array {
  const [t, s] = z("logpdf", x, loc, scale);
  return ops.sub(ops.sub(ops.mul(c(t, -0.5), ops.mul(t, t)), ops.log(s)), c(t, 0.5 * Math.log(2 * Math.PI)));
}
/** norm.pdf(x, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: ArrayInput, loc: Loc = 0, scale: Loc = 1): Array => ops.exp(logpdf(x, loc, scale));
/** norm.cdf(x, loc=0, scale=1) = ndtr((x - loc)/scale). */
export const cdf = (x: ArrayInput, loc: Loc = 0, scale: Loc = 1): Array => ndtr(z("cdf", x, loc, scale)[0]);
/** norm.logcdf(x, loc=0, scale=1) = log_ndtr((x - loc)/scale). */
export const logcdf = (x: ArrayInput, loc: Loc = 0, scale: Loc = 1): Array => logNdtr(z("logcdf", x, loc, scale)[0]);
/** norm.sf(x, loc=0, scale=1) = 1 - cdf = ndtr(-(x - loc)/scale). */
export const sf = (x: ArrayInput, loc: Loc = 0, scale: Loc = 1): Array => ndtr(ops.neg(z("sf", x, loc, scale)[0]));
/** norm.logsf(x, loc=0, scale=1) = log_ndtr(-(x - loc)/scale). */
export const logsf = (x: ArrayInput, loc: Loc = 0, scale: Loc = 1): Array =>
  logNdtr(ops.neg(z("logsf", x, loc, scale)[0]));
/** norm.ppf(q, loc=0, scale=1) = loc + scale ndtri(q), the quantile function. */
export function ppf(q: ArrayInput, loc: Loc = 0, scale: Loc = 1): Array {
  const [p, l, s] = promoteArgsInexact("norm.ppf", q, loc, scale);
  return ops.add(l, ops.mul(s, ndtri(p)));
}
/** norm.isf(q, loc=0, scale=1) = loc - scale ndtri(q), the inverse survival function. */
export function isf(q: ArrayInput, loc: Loc = 0, scale: Loc = 1): Array {
  const [p, l, s] = promoteArgsInexact("norm.isf", q, loc, scale);
  return ops.sub(l, ops.mul(s, ndtri(p)));
}
