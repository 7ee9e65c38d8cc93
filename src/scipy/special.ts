/** @file jax.scipy.special: logit/expit, erf family, gamma family (betaln, multigammaln, factorial, poch), incomplete gamma / beta, scaled Bessel i0e/i1e, Hurwitz zeta, xlogy/xlog1py, entr/relEntr/klDiv, the normal CDF family, logsumexp, softmax. */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import { checkOptions } from "../core/check-args.js";
import { array, promoteArgsInexact } from "../numpy/core.js";
import { defaultFloatDType } from "../core/dtype.js";
import { customJvp } from "../transforms/custom-derivatives.js";
import { whileLoopFlat } from "../transforms/control-flow.js";
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
/** True where x is 0 or a negative integer (the poles of Gamma). */
const gammaPole = (x: Array): Array => ops.and(ops.le(x, c(x, 0)), ops.eq(x, ops.floor(x)));
/**
 * gammasgn(x): the sign of Gamma(x): 1 for x > 0, +-1 at +-0, (-1)^ceil(-x) for negative non-integers, NaN at the
 * negative integers, -inf and NaN (SciPy's values).
 */
export const gammasgn = un("gammasgn", (x) => {
  const negOdd = ops.eq(ops.rem(ops.ceil(ops.neg(x)), c(x, 2)), c(x, 1));
  const neg = sel(negOdd, c(x, -1), c(x, 1));
  const zero = ops.eq(x, c(x, 0));
  // +-0: the sign of x (1/x is +-inf)
  const atZero = sel(ops.gt(ops.div(c(x, 1), x), c(x, 0)), c(x, 1), c(x, -1));
  const bad = ops.or(ops.ne(x, x), ops.and(gammaPole(x), ops.not(zero)));
  return sel(bad, c(x, NaN), sel(zero, atZero, sel(ops.gt(x, c(x, 0)), c(x, 1), neg)));
});
/** rgamma(x) = 1 / Gamma(x), 0 at the poles (+-0 at +-0). */
export const rgamma = un("rgamma", (x) => {
  const s = gammasgn(x);
  const v = ops.mul(s, ops.exp(ops.neg(ops.lgamma(x))));
  return sel(gammaPole(x), sel(ops.eq(x, c(x, 0)), ops.mul(s, c(x, 0)), c(x, 0)), v);
});
/** beta(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), as sign * exp(betaln(a, b)) (0 where a + b is a pole of Gamma). */
export const beta = bin("beta", (a, b) => {
  const ab = ops.add(a, b);
  const sab = sel(gammaPole(ab), c(a, 1), gammasgn(ab));
  const sign = ops.mul(ops.mul(gammasgn(a), gammasgn(b)), sab);
  return ops.mul(sign, ops.exp(ops.sub(ops.add(ops.lgamma(a), ops.lgamma(b)), ops.lgamma(ab))));
});

/** B_0 .. B_n as exact rationals (Akiyama-Tanigawa on BigInt fractions), then rounded; B_1 = -1/2 as SciPy. */
function bernoulliNumbers(n: number): number[] {
  const gcd = (p: bigint, q: bigint): bigint => {
    p = p < 0n ? -p : p;
    while (q) [p, q] = [q, p % q];
    return p;
  };
  type Q = [bigint, bigint];
  const norm = ([p, q]: Q): Q => {
    const g = gcd(p, q) || 1n;
    return q < 0n ? [-p / g, -q / g] : [p / g, q / g];
  };
  const out: number[] = [];
  const row: Q[] = [];
  for (let m = 0; m <= n; m++) {
    row.push([1n, BigInt(m + 1)]);
    for (let j = m; j >= 1; j--) {
      const [p1, q1] = row[j - 1],
        [p2, q2] = row[j];
      // row[j-1] = j (row[j-1] - row[j])
      row[j - 1] = norm([BigInt(j) * (p1 * q2 - p2 * q1), q1 * q2]);
    }
    const [p, q] = row[0];
    // Akiyama-Tanigawa gives B_1 = +1/2; SciPy's (and JAX's) convention is -1/2
    out.push(m === 1 ? -0.5 : Number(p) / Number(q));
  }
  return out;
}
/** bernoulli(n): the Bernoulli numbers B_0 .. B_n (n a static non-negative integer), in the default float dtype. */
export function bernoulli(n: number): Array {
  if (!Number.isInteger(n) || n < 0)
    throw new TypeError(`bernoulli: n must be a static non-negative integer, got ${String(n)}`);
  return array(bernoulliNumbers(n), { dtype: defaultFloatDType() });
}

// ---------------------------------------------------------------- exponential integrals
const EULER_GAMMA = 0.5772156649015329;
/** E1 uses its alternating series up to x = 1.5 (30 terms) and the continued fraction above (60 unrolled steps). */
const E1_SPLIT = 1.5;
/** Ei uses its positive series up to x = 40 (100 terms) and the asymptotic series above (40 terms). */
const EI_SPLIT = 40;

/**
 * for k = 1..n: carry = body(k, carry), as a while loop with a scalar counter of x's dtype (one traced body: unrolling
 * these 30-100 step recurrences made graphs the float32 ONNX compile took seconds to minutes on).
 */
function fori(x: Array, n: number, init: Array[], body: (k: Array, ...carry: Array[]) => Array[]): Array[] {
  const k0 = ops.full([], 1, x.dtype);
  const out = whileLoopFlat(
    (k) => ops.le(k, c(k, n)),
    (k, ...cs) => [ops.add(k, c(k, 1)), ...body(k, ...cs)],
    [k0, ...init],
  );
  return out.slice(1);
}

/**
 * E1(x) for x > 0: -gamma - ln x - sum_k (-x)^k / (k k!) for x <= 1.5, else e^-x times the continued fraction
 * 1/(x+1- 1^2/(x+3- 2^2/(x+5- ...))) by the modified Lentz steps (unrolled; 60 steps give < 3e-15 at x = 1.5).
 */
function e1Positive(x: Array): Array {
  const small = ops.le(x, c(x, E1_SPLIT));
  const xs = sel(small, x, c(x, 1)),
    xl = sel(small, c(x, 2), x);
  const [, s] = fori(x, 30, [ops.fullLike(xs, 1), ops.fullLike(xs, 0)], (k, t, s) => {
    const tn = ops.mul(t, ops.div(ops.neg(xs), k));
    return [tn, ops.add(s, ops.div(tn, k))];
  });
  const series = ops.sub(ops.neg(ops.add(c(x, EULER_GAMMA), ops.log(xs))), s);
  const b0 = ops.add(xl, c(x, 1));
  const d0 = ops.div(c(x, 1), b0);
  const [, , , h] = fori(x, 60, [b0, ops.fullLike(xl, 1e30), d0, d0], (i, b, cc, d, h) => {
    const an = ops.neg(ops.mul(i, i));
    const bn = ops.add(b, c(x, 2));
    const dn = ops.div(c(x, 1), ops.add(ops.mul(an, d), bn));
    const cn = ops.add(bn, ops.div(an, cc));
    return [bn, cn, dn, ops.mul(h, ops.mul(cn, dn))];
  });
  return sel(small, series, ops.mul(h, ops.exp(ops.neg(xl))));
}

/** Ei(x) for x > 0: gamma + ln x + sum_k x^k / (k k!) up to x = 40, else e^x/x sum_k k!/x^k. */
function eiPositive(x: Array): Array {
  const small = ops.le(x, c(x, EI_SPLIT));
  const xs = sel(small, x, c(x, 1)),
    xl = sel(small, c(x, 2 * EI_SPLIT), x);
  const [, s] = fori(x, 100, [ops.fullLike(xs, 1), ops.fullLike(xs, 0)], (k, t, s) => {
    const tn = ops.mul(t, ops.div(xs, k));
    return [tn, ops.add(s, ops.div(tn, k))];
  });
  const series = ops.add(ops.add(c(x, EULER_GAMMA), ops.log(xs)), s);
  const [, v] = fori(x, 40, [ops.fullLike(xl, 1), ops.fullLike(xl, 1)], (k, u, v) => {
    const un = ops.mul(u, ops.div(k, xl));
    return [un, ops.add(v, un)];
  });
  return sel(small, series, ops.mul(ops.div(ops.exp(xl), xl), v));
}

const exp1Core = customJvp((x: Array): Array => {
  const pos = ops.gt(x, c(x, 0));
  const fin = ops.and(pos, ops.lt(x, c(x, Infinity)));
  const r = sel(fin, e1Positive(sel(fin, x, c(x, 1))), c(x, 0)); // E1(inf) = 0
  return sel(pos, r, sel(ops.eq(x, c(x, 0)), c(x, Infinity), c(x, NaN)));
});
exp1Core.defjvp(([x], [t]) => [exp1Core(x), ops.mul(t, ops.neg(ops.div(ops.exp(ops.neg(x)), x)))]);
/** exp1(x) = E1(x) = int_x^inf e^-t / t dt for x > 0; inf at 0, NaN for x < 0 (SciPy's real values). */
export const exp1 = un("exp1", (x) => exp1Core(x));

const expiCore = customJvp((x: Array): Array => {
  const pos = ops.gt(x, c(x, 0)),
    neg = ops.lt(x, c(x, 0));
  const inf = ops.eq(ops.abs(x), c(x, Infinity));
  const ax = sel(ops.and(ops.or(pos, neg), ops.not(inf)), ops.abs(x), c(x, 1));
  const r = sel(pos, eiPositive(ax), ops.neg(e1Positive(ax)));
  // Ei(inf) = inf, Ei(-inf) = -0
  const atInf = sel(pos, c(x, Infinity), c(x, -0));
  return sel(ops.eq(x, c(x, 0)), c(x, -Infinity), sel(ops.ne(x, x), x, sel(inf, atInf, r)));
});
expiCore.defjvp(([x], [t]) => [expiCore(x), ops.mul(t, ops.div(ops.exp(x), x))]);
/** expi(x) = Ei(x), the exponential integral: -E1(-x) for x < 0, -inf at 0. */
export const expi = un("expi", (x) => expiCore(x));

/**
 * E_n(x) for integer n >= 1 and x > 0 (n, x float arrays of one shape): for x <= 1.5 the series
 * E_n = (-x)^(n-1)/(n-1)! (psi(n) - ln x) - sum_{i != n-1} (-x)^i / (i! (i - n + 1)) (30 terms; the psi term only
 * where n - 1 <= 30, beyond which it is below 1.5^30/30!), else e^-x times the continued fraction
 * 1/(x+n- 1 n/(x+n+2- 2 (n+1)/(x+n+4- ...))) (modified Lentz, 60 unrolled steps).
 */
function expnPositive(n: Array, x: Array): Array {
  const small = ops.le(x, c(x, E1_SPLIT));
  const xs = sel(small, x, c(x, 1)),
    xl = sel(small, c(x, 2), x);
  const nm1 = ops.sub(n, c(n, 1));
  // the i = 0 term: 1/(n-1) for n > 1; for n = 1 it is the psi term below
  const psiN = ops.sub(ops.digamma(n), ops.log(xs));
  const n1 = ops.eq(nm1, c(n, 0));
  // i = 0: 1/(n-1) for n > 1, the psi term (times (-x)^0/0! = 1) for n = 1
  const s0 = sel(n1, psiN, ops.div(c(x, 1), sel(n1, c(n, 1), nm1)));
  const [, s] = fori(x, 30, [ops.fullLike(xs, 1), s0], (i, fact, s) => {
    const fn = ops.mul(fact, ops.div(ops.neg(xs), i));
    const at = ops.eq(nm1, i);
    const del = ops.div(ops.neg(fn), sel(at, c(n, 1), ops.sub(i, nm1)));
    return [fn, ops.add(s, sel(at, ops.mul(fn, psiN), del))];
  });
  const b0 = ops.add(xl, n);
  const d0 = ops.div(c(x, 1), b0);
  const [, , , h] = fori(x, 60, [b0, ops.fullLike(xl, 1e30), d0, d0], (i, b, cc, d, h) => {
    const an = ops.mul(ops.neg(i), ops.add(nm1, i));
    const bn = ops.add(b, c(x, 2));
    const dn = ops.div(c(x, 1), ops.add(ops.mul(an, d), bn));
    const cn = ops.add(bn, ops.div(an, cc));
    return [bn, cn, dn, ops.mul(h, ops.mul(cn, dn))];
  });
  return sel(small, s, ops.mul(h, ops.exp(ops.neg(xl))));
}

const expnCore = customJvp(
  (n: Array, x: Array): Array => {
    const intN = ops.and(ops.eq(n, ops.floor(n)), ops.ge(n, c(n, 0)));
    const nan = ops.or(ops.or(ops.ne(x, x), ops.ne(n, n)), ops.or(ops.not(intN), ops.lt(x, c(x, 0))));
    const zero = ops.eq(x, c(x, 0)),
      inf = ops.eq(x, c(x, Infinity)),
      n0 = ops.eq(n, c(n, 0));
    const ok = ops.not(ops.or(ops.or(nan, zero), ops.or(inf, n0)));
    const r = expnPositive(sel(ok, n, c(n, 1)), sel(ok, x, c(x, 1)));
    // E_0(x) = e^-x / x; E_n(0) = 1/(n-1) for n > 1, inf for n <= 1; E_n(inf) = 0
    const xs = sel(zero, c(x, 1), x);
    const atZero = sel(
      ops.gt(n, c(n, 1)),
      ops.div(c(x, 1), sel(ops.gt(n, c(n, 1)), ops.sub(n, c(n, 1)), c(n, 1))),
      c(x, Infinity),
    );
    let out = sel(n0, ops.div(ops.exp(ops.neg(xs)), xs), r);
    out = sel(inf, c(x, 0), out);
    out = sel(zero, atZero, out);
    return sel(nan, c(x, NaN), out);
  },
  { nondiffArgnums: [0] },
);
// d/dx E_n(x) = -E_{n-1}(x) (JAX's rule); n is not differentiated
expnCore.defjvp(([n, x], [, t]) => [expnCore(n, x), ops.mul(t, ops.neg(expnCore(ops.sub(n, c(n, 1)), x)))]);
/** expn(n, x): the generalized exponential integral E_n(x) = int_1^inf e^(-x t) / t^n dt (integer n >= 0, x >= 0). */
export function expn(n: ArrayInput, x: ArrayInput): Array {
  const [pn, px] = promoteArgsInexact("expn", n, x);
  return expnCore(pn, px);
}

// ---------------------------------------------------------------- spence
const PI2_6 = (Math.PI * Math.PI) / 6;
/** Li2(w) = sum_k w^k / k^2 for |w| <= 1/2 (50 terms: 2^-50/2500 < 1e-18). */
function li2Series(w: Array): Array {
  const [, s] = fori(w, 50, [ops.fullLike(w, 1), ops.fullLike(w, 0)], (k, p, s) => {
    const pn = ops.mul(p, w);
    return [pn, ops.add(s, ops.div(pn, ops.mul(k, k)))];
  });
  return s;
}
const spenceCore = customJvp((x: Array): Array => {
  // spence(x) = Li2(1 - x), each branch mapped to a series argument of modulus <= 1/2:
  //   x in [1/2, 3/2]: Li2(1 - x) directly
  //   x in (0, 1/2):   pi^2/6 - ln(1 - x) ln x - Li2(x)                     (Euler's reflection)
  //   x in (3/2, 2]:   -Li2((x-1)/x) - ln(x)^2 / 2                           (Landen)
  //   x > 2:           -(pi^2/6 - ln((x-1)/x) ln(1/x) - Li2(1/x)) - ln(x)^2 / 2 (both)
  const one = c(x, 1),
    half = c(x, 0.5);
  const mid = ops.and(ops.ge(x, half), ops.le(x, c(x, 1.5)));
  const low = ops.and(ops.gt(x, c(x, 0)), ops.lt(x, half));
  const high = ops.and(ops.gt(x, c(x, 1.5)), ops.le(x, c(x, 2)));
  const big = ops.and(ops.gt(x, c(x, 2)), ops.lt(x, c(x, Infinity)));
  const xs = sel(ops.or(ops.or(mid, low), ops.or(high, big)), x, one);
  const w = sel(mid, ops.sub(one, xs), sel(low, xs, sel(high, ops.div(ops.sub(xs, one), xs), ops.div(one, xs))));
  const l = li2Series(w);
  const lnx = ops.log(xs);
  const rLow = ops.sub(ops.sub(c(x, PI2_6), ops.mul(ops.log1p(ops.neg(xs)), lnx)), l);
  const halfLn2 = ops.mul(half, ops.mul(lnx, lnx));
  const rHigh = ops.sub(ops.neg(l), halfLn2);
  const wBig = ops.div(ops.sub(xs, one), xs);
  const rBig = ops.sub(ops.neg(ops.sub(ops.sub(c(x, PI2_6), ops.mul(ops.log(wBig), ops.neg(lnx))), l)), halfLn2);
  const r = sel(mid, l, sel(low, rLow, sel(high, rHigh, rBig)));
  // spence(0) = pi^2/6; NaN for x < 0, NaN and (as SciPy) inf
  const edge = sel(ops.eq(x, c(x, 0)), c(x, PI2_6), c(x, NaN));
  return sel(ops.or(ops.or(mid, low), ops.or(high, big)), r, edge);
});
// d/dx spence(x) = ln(x) / (1 - x), -1 at x = 1
spenceCore.defjvp(([x], [t]) => {
  const one = c(x, 1);
  const at1 = ops.eq(x, one);
  const d = sel(at1, c(x, -1), ops.div(ops.log(x), ops.sub(one, sel(at1, c(x, 0), x))));
  return [spenceCore(x), ops.mul(t, d)];
});
/** spence(x) = int_1^x ln t / (1 - t) dt = Li2(1 - x) for x >= 0 (NaN below), SciPy's convention. */
export const spence = un("spence", (x) => spenceCore(x));
