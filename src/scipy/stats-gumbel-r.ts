/** @file jax.scipy.stats.gumbel_r (exported as gumbelR): the right-skewed Gumbel distribution, cdf exp(-exp(-z)), with loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, ops } from "./stats-util.js";
import { ofZ, quantile } from "./stats-gumbel-util.js";
import { log1mexp } from "../nn/functions.js";

const e = (z: Array): Array => ops.exp(ops.neg(z));
/** gumbel_r.logpdf(x, loc=0, scale=1) = -(z + exp(-z)) - log(scale), z = (x - loc)/scale. */
export const logpdf = ofZ("gumbel_r.logpdf", (z) => ops.neg(ops.add(z, e(z))), true);
/** gumbel_r.pdf(x, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logpdf(x, loc, scale));
/** gumbel_r.logcdf(x, loc=0, scale=1) = -exp(-z). */
export const logcdf = ofZ("gumbel_r.logcdf", (z) => ops.neg(e(z)));
/** gumbel_r.cdf(x, loc=0, scale=1) = exp(-exp(-z)). */
export const cdf = ofZ("gumbel_r.cdf", (z) => ops.exp(ops.neg(e(z))));
/** gumbel_r.logsf(x, loc=0, scale=1) = log(1 - exp(-exp(-z))) = log1mexp(exp(-z)). */
export const logsf = ofZ("gumbel_r.logsf", (z) => log1mexp(e(z)));
/** gumbel_r.sf(x, loc=0, scale=1) = -expm1(-exp(-z)). */
export const sf = ofZ("gumbel_r.sf", (z) => ops.neg(ops.expm1(ops.neg(e(z)))));
/** gumbel_r.ppf(p, loc=0, scale=1) = loc - scale log(-log p). */
export const ppf = quantile("gumbel_r.ppf", (p) => ops.neg(ops.log(ops.neg(ops.log(p)))));
