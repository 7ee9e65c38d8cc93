/** @file jax.scipy.stats.gumbel_l (exported as gumbelL): the left-skewed Gumbel distribution, sf exp(-exp(z)), with loc and scale. */
import type { Array } from "../core/array.js";
import { type Param, ops } from "./stats-util.js";
import { ofZ, quantile } from "./stats-gumbel-util.js";

/** gumbel_l.logpdf(x, loc=0, scale=1) = z - exp(z) - log(scale), z = (x - loc)/scale. */
export const logpdf = ofZ("gumbel_l.logpdf", (z) => ops.sub(z, ops.exp(z)), true);
/** gumbel_l.pdf(x, loc=0, scale=1) = exp(logpdf). */
export const pdf = (x: Param, loc: Param = 0, scale: Param = 1): Array => ops.exp(logpdf(x, loc, scale));
/** gumbel_l.logcdf(x, loc=0, scale=1) = log(-expm1(-exp(z))). */
export const logcdf = ofZ("gumbel_l.logcdf", (z) => ops.log(ops.neg(ops.expm1(ops.neg(ops.exp(z))))));
/** gumbel_l.cdf(x, loc=0, scale=1) = -expm1(-exp(z)). */
export const cdf = ofZ("gumbel_l.cdf", (z) => ops.neg(ops.expm1(ops.neg(ops.exp(z)))));
/** gumbel_l.logsf(x, loc=0, scale=1) = -exp(z). */
export const logsf = ofZ("gumbel_l.logsf", (z) => ops.neg(ops.exp(z)));
/** gumbel_l.sf(x, loc=0, scale=1) = exp(-exp(z)). */
export const sf = ofZ("gumbel_l.sf", (z) => ops.exp(ops.neg(ops.exp(z))));
/** gumbel_l.ppf(p, loc=0, scale=1) = loc + scale log(-log1p(-p)). */
export const ppf = quantile("gumbel_l.ppf", (p) => ops.log(ops.neg(ops.log1p(ops.neg(p)))));
