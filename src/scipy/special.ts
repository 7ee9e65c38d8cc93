/** @file jax.scipy.special: logit/expit, erf family, gamma family (betaln, multigammaln, factorial, poch), incomplete gamma / beta, scaled Bessel i0e/i1e, Hurwitz zeta, xlogy/xlog1py, entr/relEntr/klDiv, the normal CDF family, logsumexp, softmax. */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import { checkOptions } from "../core/check-args.js";
import { promoteArgsInexact } from "../numpy/core.js";
import { type ArrayInput, c, sel } from "../numpy/elementwise-util.js";

export { logsumexp } from "../numpy/reductions.js";
export { softmax, logSoftmax } from "../nn/functions.js";

const un =
  (name: string, f: (x: Array) => Array) =>
  (x: ArrayInput): Array =>
    f(promoteArgsInexact(name, x)[0]);
const bin =
  (name: string, f: (x: Array, y: Array) => Array) =>
  (x: ArrayInput, y: ArrayInput): Array => {
    const [a, b] = promoteArgsInexact(name, x, y);
    return f(a, b);
  };

/** expit(x) = 1 / (1 + exp(-x)), the logistic sigmoid. */
export const expit = un("expit", ops.logistic);
/** logit(p) = log(p / (1 - p)), expit's inverse. */
export const logit = un("logit", (p) => ops.log(ops.div(p, ops.sub(c(p, 1), p))));
/** log_expit(x) = log(expit(x)) = -log1p(exp(-x)), computed stably as -softplus(-x). */
export const logExpit = un("log_expit", (x) => {
  const m = ops.max(ops.neg(x), c(x, 0));
  // -softplus(-x) = -(max(-x, 0) + log1p(exp(-|x|)))
  return ops.neg(ops.add(m, ops.log1p(ops.exp(ops.neg(ops.abs(x))))));
});
export const erf = un("erf", ops.erf);
export const erfc = un("erfc", ops.erfc);
export const erfinv = un("erfinv", ops.erfInv);
/** gammaln(x) = log |Gamma(x)|. */
export const gammaln = un("gammaln", ops.lgamma);
/** gamma(x) = sign(Gamma(x)) exp(gammaln(x)); the sign is -1 on (-2k-1, -2k) for k >= 0. */
export const gamma = un("gamma", (x) => {
  const negOdd = ops.eq(ops.rem(ops.floor(ops.neg(x)), c(x, 2)), c(x, 0));
  const sign = sel(ops.and(ops.lt(x, c(x, 0)), negOdd), c(x, -1), c(x, 1));
  return ops.mul(sign, ops.exp(ops.lgamma(x)));
});
export const digamma = un("digamma", ops.digamma);
/** polygamma(n, x): the n-th derivative of digamma (n a static non-negative integer). */
export function polygamma(n: number, x: ArrayInput): Array {
  if (!Number.isInteger(n) || n < 0)
    throw new TypeError(`polygamma: n must be a static non-negative integer, got ${String(n)}`);
  const [a] = promoteArgsInexact("polygamma", x);
  return n === 0 ? ops.digamma(a) : ops.polygamma(n, a);
}
/** xlogy(x, y) = x log(y), defined as 0 where x == 0 (also for y == 0). */
export const xlogy = bin("xlogy", (x, y) => {
  const z = ops.eq(x, c(x, 0));
  return sel(z, c(x, 0), ops.mul(x, ops.log(sel(z, c(y, 1), y))));
});
/** xlog1py(x, y) = x log1p(y), defined as 0 where x == 0 (also for y == -1). */
export const xlog1py = bin("xlog1py", (x, y) => {
  const z = ops.eq(x, c(x, 0));
  return sel(z, c(x, 0), ops.mul(x, ops.log1p(sel(z, c(y, 0), y))));
});
/** entr(x) = -x log(x) for x > 0, 0 at 0, -inf for x < 0. */
export const entr = un("entr", (x) => {
  const pos = ops.gt(x, c(x, 0));
  const v = ops.neg(ops.mul(x, ops.log(sel(pos, x, c(x, 1)))));
  return sel(pos, v, sel(ops.eq(x, c(x, 0)), c(x, 0), c(x, -Infinity)));
});
/** betaln(a, b) = log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b). */
export const betaln = bin("betaln", (a, b) =>
  ops.sub(ops.add(ops.lgamma(a), ops.lgamma(b)), ops.lgamma(ops.add(a, b))),
);
/** multigammaln(a, d) = d (d - 1)/4 log(pi) + sum_{j=1..d} gammaln(a + (1 - j)/2) (d a static positive integer). */
export function multigammaln(a: ArrayInput, d: number): Array {
  if (!Number.isInteger(d) || d < 1)
    throw new TypeError(`multigammaln: d must be a static positive integer, got ${String(d)}`);
  const [x] = promoteArgsInexact("multigammaln", a);
  let acc = c(x, ((d * (d - 1)) / 4) * Math.log(Math.PI));
  for (let j = 1; j <= d; j++) acc = ops.add(acc, ops.lgamma(ops.add(x, c(x, (1 - j) / 2))));
  return acc;
}
/** rel_entr(x, y) = x log(x / y) for x, y > 0; 0 for x == 0, y >= 0; +inf otherwise. */
export const relEntr = bin("rel_entr", (x, y) => entropyTerm(x, y, false));
/** kl_div(x, y) = x log(x / y) - x + y for x, y > 0; y for x == 0, y >= 0; +inf otherwise. */
export const klDiv = bin("kl_div", (x, y) => entropyTerm(x, y, true));
function entropyTerm(x: Array, y: Array, kl: boolean): Array {
  const pos = ops.and(ops.gt(x, c(x, 0)), ops.gt(y, c(y, 0)));
  const sx = sel(pos, x, c(x, 1)),
    sy = sel(pos, y, c(y, 1));
  let v = ops.mul(sx, ops.log(ops.div(sx, sy)));
  if (kl) v = ops.add(ops.sub(v, sx), sy);
  const zero = ops.and(ops.eq(x, c(x, 0)), ops.ge(y, c(y, 0)));
  return sel(pos, v, sel(zero, kl ? y : c(x, 0), c(x, Infinity)));
}
/** ndtr(x): the standard normal CDF, erfc(-x / sqrt 2) / 2. */
export const ndtr = un("ndtr", (x) => ops.mul(c(x, 0.5), ops.erfc(ops.mul(x, c(x, -Math.SQRT1_2)))));
/** ndtri(p): the standard normal quantile, sqrt 2 erfinv(2p - 1). */
export const ndtri = un("ndtri", (p) => ops.mul(c(p, Math.SQRT2), ops.erfInv(ops.sub(ops.mul(c(p, 2), p), c(p, 1)))));
/**
 * log_ndtr(x) = log(ndtr(x)): log1p(-ndtr(-x)) for x > 0, log(ndtr(x)) down to x = -5, then the asymptotic series
 * -x^2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8) where ndtr underflows.
 */
export const logNdtr = un("log_ndtr", (x) => {
  const half = c(x, 0.5),
    r2 = c(x, -Math.SQRT1_2);
  const nd = (v: Array): Array => ops.mul(half, ops.erfc(ops.mul(v, r2)));
  const upper = ops.log1p(ops.neg(nd(ops.neg(x))));
  const midX = ops.max(x, c(x, -5));
  const mid = ops.log(nd(midX));
  const lowX = ops.min(x, c(x, -5));
  const iz = ops.div(c(x, 1), ops.mul(lowX, lowX));
  const series = ops.add(
    c(x, 1),
    ops.mul(
      iz,
      ops.add(c(x, -1), ops.mul(iz, ops.add(c(x, 3), ops.mul(iz, ops.add(c(x, -15), ops.mul(iz, c(x, 105))))))),
    ),
  );
  const low = ops.sub(
    ops.sub(ops.mul(c(x, -0.5), ops.mul(lowX, lowX)), ops.log(ops.neg(lowX))),
    ops.sub(c(x, 0.5 * Math.log(2 * Math.PI)), ops.log(series)),
  );
  return sel(ops.gt(x, c(x, 0)), upper, sel(ops.ge(x, c(x, -5)), mid, low));
});
/** gammainc(a, x): the regularized lower incomplete gamma function P(a, x) (lax.igamma). */
export const gammainc = bin("gammainc", ops.igamma);
/** gammaincc(a, x): the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (lax.igammac). */
export const gammaincc = bin("gammaincc", ops.igammac);
/** betainc(a, b, x): the regularized incomplete beta function I_x(a, b); differentiable in x only, as in JAX. */
export function betainc(a: ArrayInput, b: ArrayInput, x: ArrayInput): Array {
  const [pa, pb, px] = promoteArgsInexact("betainc", a, b, x);
  return ops.betainc(pa, pb, px);
}
/** i0e(x) = exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0. */
export const i0e = un("i0e", ops.besselI0e);
/** i1e(x) = exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1. */
export const i1e = un("i1e", ops.besselI1e);
/** i0(x) = exp(|x|) i0e(x), the modified Bessel function of order 0 (overflows to inf beyond |x| ~ 713 in float64). */
export const i0 = un("i0", (x) => ops.mul(ops.exp(ops.abs(x)), ops.besselI0e(x)));
/** i1(x) = exp(|x|) i1e(x), the modified Bessel function of order 1. */
export const i1 = un("i1", (x) => ops.mul(ops.exp(ops.abs(x)), ops.besselI1e(x)));
/**
 * zeta(x, q): the Hurwitz zeta function sum_k (q + k)^-x (lax.zeta). As in JAX, q is required (the Riemann zeta
 * function is zeta(x, 1) for x > 1; its continuation to x < 1 is not implemented).
 */
export function zeta(x: ArrayInput, q?: ArrayInput): Array {
  if (q === undefined)
    throw new TypeError(
      "zeta: the Riemann zeta function is not implemented; pass q (zeta(x, 1) is Riemann's for x > 1)",
    );
  const [px, pq] = promoteArgsInexact("zeta", x, q);
  return ops.zeta(px, pq);
}
/** factorial(n) = Gamma(n + 1) for n >= 0, 0 for n < 0 (exact: true is not supported, as in JAX). */
export function factorial(n: ArrayInput, opts: { exact?: boolean } = {}): Array {
  checkOptions("scipy.special.factorial", opts, ["exact"], "factorial(n, { exact?: false })");
  if (opts.exact) throw new TypeError("factorial: exact=true is not supported (as in JAX); omit it for Gamma(n + 1)");
  const [x] = promoteArgsInexact("factorial", n);
  return sel(ops.lt(x, c(x, 0)), c(x, 0), ops.exp(ops.lgamma(ops.add(x, c(x, 1)))));
}
/** poch(z, m) = Gamma(z + m) / Gamma(z), the rising factorial (1 where m == 0). */
export const poch = bin("poch", (z, m) => sel(ops.eq(m, c(m, 0)), c(z, 1), ops.div(gamma(ops.add(z, m)), gamma(z))));
