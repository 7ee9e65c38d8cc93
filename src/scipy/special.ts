/** @file jax.scipy.special: logit/expit, erf family, gamma family (betaln, multigammaln), xlogy/xlog1py, entr/relEntr/klDiv, the normal CDF family, logsumexp, softmax. */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import { promoteArgsInexact } from "../numpy/core.js";
import { type ArrayInput, c, sel } from "../numpy/elementwise-util.js";
import { customJvp } from "../transforms/custom-derivatives.js";

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
/**
 * x op(y) defined as 0 where x == 0, with JAX's custom derivative x' op(y) + y' x op'(y): at x == 0 the derivative in
 * x is op(y) (e.g. log 2 for xlogy(0, 2)), not the 0 that differentiating the select would give.
 */
function xTimes(name: string, op: (y: Array) => Array, dop: (x: Array, y: Array) => Array, safeY: number) {
  const f = customJvp((x: Array, y: Array): Array => {
    const z = ops.eq(x, c(x, 0));
    return sel(z, c(x, 0), ops.mul(x, op(sel(z, c(y, safeY), y))));
  });
  f.defjvp(([x, y], [tx, ty]) => [f(x, y), ops.add(ops.mul(tx, op(y)), ops.mul(ty, dop(x, y)))]);
  return bin(name, (x, y) => f(x, y));
}
/** xlogy(x, y) = x log(y), defined as 0 where x == 0 (also for y == 0); d/dx = log(y), d/dy = x / y (JAX's rule). */
export const xlogy = xTimes("xlogy", ops.log, (x, y) => ops.div(x, y), 1);
/** xlog1py(x, y) = x log1p(y), defined as 0 where x == 0 (also for y == -1); d/dx = log1p(y), d/dy = x / (1 + y). */
export const xlog1py = xTimes("xlog1py", ops.log1p, (x, y) => ops.div(x, ops.add(c(y, 1), y)), 0);
/** x log(x) (0 at 0) with JAX's derivative log(x) + 1 (so entr'(0) is +inf, as JAX's). */
const xlogx = customJvp((x: Array): Array => xlogy(x, x));
xlogx.defjvp(([x], [t]) => [xlogx(x), ops.mul(t, ops.add(ops.log(x), c(x, 1)))]);
/** entr(x) = -x log(x) for x > 0, 0 at 0, -inf for x < 0. */
export const entr = un("entr", (x) => sel(ops.lt(x, c(x, 0)), c(x, -Infinity), ops.neg(xlogx(x))));
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
