/** @file jax.scipy.stats.multinomial: the multinomial distribution's logpmf and pmf for integer counts x (..., K), n and probabilities p. */
import type { Array } from "../core/array.js";
import { defaultFloatDType, isInexact, isInteger } from "../core/dtype.js";
import { asArrayArg } from "../numpy/core.js";
import { promoteDtypes } from "../numpy/core.js";
import { type Param, bcast, c, maskTo, ops } from "./stats-util.js";
import { xlogy } from "./special.js";

/**
 * multinomial.logpmf(x, n, p) = gammaln(n + 1) + sum_i (xlogy(x_i, p_i) - gammaln(x_i + 1)) over the last axis;
 * -inf where the counts do not sum to n. x and n must be integers (as JAX requires); the result has p's float dtype.
 */
export function logpmf(x: Param, n: Param, p: Param): Array {
  const fn = "scipy.stats.multinomial.logpmf";
  let [pp] = promoteDtypes(fn, [p]);
  if (!isInexact(pp.dtype)) pp = ops.convert(pp, defaultFloatDType(), pp.weakType);
  const [xi, ni] = promoteDtypes(fn, [asArrayArg(fn, x), asArrayArg(fn, n)]);
  if (!isInteger(xi.dtype) || !isInteger(ni.dtype))
    throw new TypeError(`${fn}: x and n must be of integer type; got x.dtype=${xi.dtype}, n.dtype=${ni.dtype}`);
  const xf = ops.convert(xi, pp.dtype, false),
    nf = ops.convert(ni, pp.dtype, false);
  const last = xf.ndim - 1;
  const terms = ops.reduceSum(ops.sub(xlogy(xf, pp), ops.lgamma(ops.add(xf, c(xf, 1)))), [last]);
  const [g, t, total, nb] = bcast(
    "multinomial.logpmf",
    ops.lgamma(ops.add(nf, c(nf, 1))),
    terms,
    ops.reduceSum(xf, [last]),
    nf,
  );
  return maskTo(ops.ne(total, nb), -Infinity, ops.add(g, t));
}
/** multinomial.pmf(x, n, p) = exp(logpmf). */
export const pmf = (x: Param, n: Param, p: Param): Array => ops.exp(logpmf(x, n, p));
