/** @file Scalar float64 references of the incomplete gamma/beta functions, scaled Bessel i0e/i1e and Hurwitz zeta (the interpreter's kernels and the lowerings' templates). */
import { digamma, lgamma } from "./special-math.js";

// ---------------------------------------------------------------- incomplete gamma
// The dual-number kernels (value, d/da) below are shared with random_gamma_grad (src/primitives/random.ts): P by its
// series, Q by the modified Lentz continued fraction, in float64.
type Dual = [number, number];
const EPS = 1e-16;
const FPMIN = 1e-300;

/** log of the shared prefactor x^a e^-x / Gamma(a) and its derivative in a. */
export function logPrefactor(a: number, x: number): Dual {
  return [a * Math.log(x) - x - lgamma(a), Math.log(x) - digamma(a)];
}

/** P(a, x) = prefactor * sum_n x^n / (a (a+1) ... (a+n)), as a dual number in a. */
export function seriesP(a: number, x: number): Dual {
  let ap = a;
  let del: Dual = [1 / a, -1 / (a * a)];
  const sum: Dual = [del[0], del[1]];
  for (let n = 0; n < 100000; n++) {
    ap += 1;
    // del *= x / ap ; d(x/ap)/da = -x/ap^2
    const r = x / ap,
      dr = -x / (ap * ap);
    del = [del[0] * r, del[1] * r + del[0] * dr];
    sum[0] += del[0];
    sum[1] += del[1];
    if (Math.abs(del[0]) < Math.abs(sum[0]) * EPS && Math.abs(del[1]) <= Math.abs(sum[1]) * EPS) break;
  }
  const [lp, dlp] = logPrefactor(a, x);
  const pre = Math.exp(lp);
  return [sum[0] * pre, (sum[1] + sum[0] * dlp) * pre];
}

/** Q(a, x) = prefactor * continued fraction (modified Lentz), as a dual number in a. */
export function contFracQ(a: number, x: number): Dual {
  let b: Dual = [x + 1 - a, -1];
  let c: Dual = [1 / FPMIN, 0];
  let d: Dual = [1 / b[0], 1 / (b[0] * b[0])]; // d(1/b) = -b'/b^2 = 1/b^2
  let h: Dual = [d[0], d[1]];
  for (let i = 1; i < 100000; i++) {
    const an: Dual = [-i * (i - a), i];
    b = [b[0] + 2, b[1]];
    // d = an * d + b
    d = [an[0] * d[0] + b[0], an[1] * d[0] + an[0] * d[1] + b[1]];
    if (Math.abs(d[0]) < FPMIN) d = [FPMIN, 0];
    // c = b + an / c
    c = [b[0] + an[0] / c[0], b[1] + (an[1] * c[0] - an[0] * c[1]) / (c[0] * c[0])];
    if (Math.abs(c[0]) < FPMIN) c = [FPMIN, 0];
    d = [1 / d[0], -d[1] / (d[0] * d[0])];
    const del: Dual = [d[0] * c[0], d[1] * c[0] + d[0] * c[1]];
    h = [h[0] * del[0], h[1] * del[0] + h[0] * del[1]];
    if (Math.abs(del[0] - 1) < EPS && Math.abs(del[1]) < EPS) break;
  }
  const [lp, dlp] = logPrefactor(a, x);
  const pre = Math.exp(lp);
  return [h[0] * pre, (h[1] + h[0] * dlp) * pre];
}

/**
 * The incomplete-gamma kernel shared with lax.igamma/igammac/igamma_grad_a (a > 0, 0 < x < inf): for x < a + 1 the
 * series' P(a, x) and dP/da (`series` true), otherwise the continued fraction's Q(a, x) and dQ/da.
 */
export function igammaDuals(a: number, x: number): { series: boolean; value: number; grad: number } {
  const series = x < a + 1;
  const [value, grad] = series ? seriesP(a, x) : contFracQ(a, x);
  return { series, value, grad };
}

// P(a, x) by its power series for x < a + 1 and Q(a, x) by the Lentz continued fraction otherwise (the dual-number
// kernels shared with random_gamma_grad also give dP/da). Edge values follow JAX's igamma_impl / igammac_impl:
// NaN for x < 0, a < 0, a = x = 0, a = x = inf or NaN operands; P(a, 0) = 0, P(a, inf) = 1, P(inf, x) = 0 and
// P(0, x > 0) = 1 (the limit, as SciPy).
function igammaDomainError(a: number, x: number): boolean {
  return (
    Number.isNaN(a) || Number.isNaN(x) || x < 0 || a < 0 || (a === 0 && x === 0) || (a === Infinity && x === Infinity)
  );
}

/** Regularized lower incomplete gamma P(a, x). */
export function igamma(a: number, x: number): number {
  if (igammaDomainError(a, x)) return NaN;
  if (x === 0) return 0;
  if (x === Infinity) return 1;
  if (a === Infinity) return 0;
  if (a === 0) return 1;
  const d = igammaDuals(a, x);
  return d.series ? d.value : 1 - d.value;
}

/** Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x). */
export function igammac(a: number, x: number): number {
  if (igammaDomainError(a, x)) return NaN;
  if (x === 0) return 1;
  if (x === Infinity) return 0;
  if (a === Infinity) return 1;
  if (a === 0) return 0;
  const d = igammaDuals(a, x);
  return d.series ? 1 - d.value : d.value;
}

/** dP(a, x)/da: NaN for a <= 0, x < 0 or NaN operands (as JAX's igamma_grad_a), 0 at x = 0 and x = inf. */
export function igammaGradA(a: number, x: number): number {
  if (Number.isNaN(a) || Number.isNaN(x) || a <= 0 || x < 0) return NaN;
  if (x === 0 || x === Infinity) return 0;
  if (a === Infinity) return 0;
  const d = igammaDuals(a, x);
  return d.series ? d.grad : -d.grad;
}

// ---------------------------------------------------------------- regularized incomplete beta
const BETA_EPS = 1e-16;
const BETA_TINY = 1e-300;
/** Maximum continued-fraction terms (JAX uses 600 in float64). */
export const BETA_MAX_TERMS = 600;

/**
 * The continued fraction of I_x(a, b) (DLMF 8.17.22) by the modified Lentz method: partial numerators
 * d_{2m+1} = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and d_{2m} = m(b-m)x / ((a+2m-1)(a+2m)), two per step.
 */
export function betaContFrac(a: number, b: number, x: number): number {
  const fix = (v: number): number => (Math.abs(v) < BETA_TINY ? BETA_TINY : v);
  let c = 1;
  let d = 1 / fix(1 - ((a + b) * x) / (a + 1));
  let h = d;
  for (let m = 1; m <= BETA_MAX_TERMS; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 / fix(1 + aa * d);
    c = fix(1 + aa / c);
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 / fix(1 + aa * d);
    c = fix(1 + aa / c);
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < BETA_EPS) break;
  }
  return h;
}

/**
 * I_x(a, b), the regularized incomplete beta function. Edge values follow JAX's regularized_incomplete_beta: NaN for
 * a < 0, b < 0, x outside [0, 1], a = b = 0 (b = inf counts as a = 0, a = inf as b = 0) or NaN operands; then 0 or 1
 * in the degenerate cases. Otherwise the continued fraction at x < (a+1)/(a+b+2), else 1 - I_{1-x}(b, a).
 */
export function betainc(a: number, b: number, x: number): number {
  const aZero = a === 0 || b === Infinity,
    bZero = b === 0 || a === Infinity;
  if (Number.isNaN(a) || Number.isNaN(b) || Number.isNaN(x) || a < 0 || b < 0 || x < 0 || x > 1 || (aZero && bZero))
    return NaN;
  if ((aZero && x !== 0) || (bZero && x === 1)) return 1;
  if ((bZero && x !== 1) || (aZero && x === 0)) return 0;
  const direct = x < (a + 1) / (a + b + 2);
  const [p, q, y] = direct ? [a, b, x] : [b, a, 1 - x];
  // prefactor y^p (1-y)^q / (p B(p, q))
  const lbeta = lgamma(p) + lgamma(q) - lgamma(p + q);
  const r = (Math.exp(p * Math.log(y) + q * Math.log1p(-y) - lbeta) / p) * betaContFrac(p, q, y);
  return direct ? r : 1 - r;
}

// ---------------------------------------------------------------- exponentially scaled Bessel I0, I1
/** |x| at and below which i0e/i1e use the power series, above which the asymptotic expansion. */
export const BESSEL_SPLIT = 25;
/** Power-series terms (enough for 1e-18 relative at |x| = 25). */
export const BESSEL_SERIES_TERMS = 45;
/** Asymptotic-series terms (the error at |x| = 25 is below 1e-17 after 19). */
export const BESSEL_ASYMPTOTIC_TERMS = 22;

/**
 * e^-|x| I_nu(|x|) for nu = 0, 1 and x >= 0: for x <= 25 the series I_nu(x) = (x/2)^nu sum_k (x^2/4)^k / (k! (k+nu)!)
 * (positive terms, no cancellation); above, the expansion e^-x I_nu(x) ~ (2 pi x)^-1/2 sum_k (-1)^k a_k(nu) / x^k
 * with a_k(nu) = prod_{j<=k} (4 nu^2 - (2j-1)^2) / (8 j) (DLMF 10.40.1).
 */
function scaledBesselI(nu: 0 | 1, x: number): number {
  if (x === Infinity) return 0;
  if (x <= BESSEL_SPLIT) {
    const q = (x * x) / 4;
    let t = nu === 0 ? 1 : x / 2;
    let s = t;
    for (let k = 1; k <= BESSEL_SERIES_TERMS; k++) {
      t *= q / (k * (k + nu));
      s += t;
    }
    return s * Math.exp(-x);
  }
  let t = 1,
    s = 1;
  for (let k = 1; k <= BESSEL_ASYMPTOTIC_TERMS; k++) {
    t *= -(4 * nu * nu - (2 * k - 1) ** 2) / (8 * k * x);
    s += t;
  }
  return s / Math.sqrt(2 * Math.PI * x);
}

/** i0e(x) = e^-|x| I0(x) (even). */
export function besselI0e(x: number): number {
  if (Number.isNaN(x)) return NaN;
  return scaledBesselI(0, Math.abs(x));
}

/** i1e(x) = e^-|x| I1(x) (odd). */
export function besselI1e(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const r = scaledBesselI(1, Math.abs(x));
  return x < 0 ? -r : r;
}

// ---------------------------------------------------------------- Hurwitz zeta
/** q is shifted up to at least this before the Euler-Maclaurin tail. */
export const ZETA_SHIFT = 9;
/** B_2j / (2j)! for j = 1..12 (Euler-Maclaurin tail coefficients). */
export const ZETA_TAIL: readonly number[] = (() => {
  const b2j = [
    1 / 6,
    -1 / 30,
    1 / 42,
    -1 / 30,
    5 / 66,
    -691 / 2730,
    7 / 6,
    -3617 / 510,
    43867 / 798,
    -174611 / 330,
    854513 / 138,
    -236364091 / 2730,
  ];
  let f = 1;
  return b2j.map((b, i) => {
    f *= (2 * i + 1) * (2 * i + 2);
    return b / f;
  });
})();

/**
 * Hurwitz zeta(x, q) = sum_k (q + k)^-x for x > 1: add terms until w = q + k >= 9, then the Euler-Maclaurin tail
 * w^(1-x)/(x-1) + w^-x/2 + sum_j B_2j/(2j)! x (x+1) ... (x+2j-2) w^(-x-2j+1). As SciPy (Cephes): 1 at x = inf
 * and q = 1, inf at x = 1 or at q a non-positive integer, NaN for x < 1 or for q < 0 with x not an integer.
 */
export function zeta(x: number, q: number): number {
  if (Number.isNaN(x) || Number.isNaN(q)) return NaN;
  if (x === 1) return Infinity;
  if (x < 1) return NaN;
  if (q <= 0) {
    if (q === Math.floor(q)) return Infinity;
    if (x !== Math.floor(x)) return NaN;
  }
  if (x === Infinity) return q === 1 ? 1 : q > 1 ? 0 : Infinity;
  let s = 0,
    w = q;
  while (w < ZETA_SHIFT) {
    s += w ** -x;
    w += 1;
  }
  s += w ** (1 - x) / (x - 1);
  s += 0.5 * w ** -x;
  let fac = x * w ** (-x - 1); // x (x+1) ... (x+2j-2) w^(-x-2j+1) for j = 1
  for (let j = 0; j < ZETA_TAIL.length; j++) {
    const t = ZETA_TAIL[j] * fac;
    s += t;
    fac *= ((x + 2 * j + 1) * (x + 2 * j + 2)) / (w * w);
  }
  return s;
}
