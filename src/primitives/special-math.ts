/** @file Scalar special functions for the reference interpreter: erf, erfc, erfinv, lgamma, digamma. */

const SQRT_PI = Math.sqrt(Math.PI);

/** erf by its Maclaurin series for small |x| and a Lentz continued fraction for erfc elsewhere. */
export function erf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const a = Math.abs(x);
  if (a < 2.5) {
    // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
    let term = x,
      sum = x;
    const x2 = x * x;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / SQRT_PI) * sum;
  }
  const c = erfcPositive(a);
  return x > 0 ? 1 - c : c - 1;
}

/** erfc(x) for x >= 2.5 by the continued fraction erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...)))). */
function erfcPositive(x: number): number {
  if (x > 27) return 0;
  // modified Lentz for K = x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...))))
  const tiny = 1e-300;
  let f = x,
    C = x,
    D = 0;
  for (let n = 1; n < 500; n++) {
    const an = n / 2;
    D = x + an * D;
    if (D === 0) D = tiny;
    D = 1 / D;
    C = x + an / C;
    if (C === 0) C = tiny;
    const delta = C * D;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / SQRT_PI / f;
}

export function erfc(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (x >= 2.5) return erfcPositive(x);
  if (x <= -2.5) return 2 - erfcPositive(-x);
  return 1 - erf(x);
}

/** erfinv by an initial rational guess refined with Newton steps on erf. */
export function erfinv(y: number): number {
  if (Number.isNaN(y) || y < -1 || y > 1) return NaN;
  if (y === 1) return Infinity;
  if (y === -1) return -Infinity;
  // Giles' single-precision approximation as a starting point
  let w = -Math.log((1 - y) * (1 + y));
  let x: number;
  if (w < 5) {
    w -= 2.5;
    let p = 2.81022636e-8;
    for (const c of [
      3.43273939e-7, -3.5233877e-6, -4.39150654e-6, 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
      1.50140941,
    ])
      p = c + p * w;
    x = p * y;
  } else {
    w = Math.sqrt(w) - 3;
    let p = -0.000200214257;
    for (const c of [
      0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
      2.83297682,
    ])
      p = c + p * w;
    x = p * y;
  }
  for (let i = 0; i < 3; i++) {
    const err = Math.abs(y) > 0.9 ? -(erfc(x) - (1 - y)) : erf(x) - y;
    const step = err / ((2 / SQRT_PI) * Math.exp(-x * x));
    if (!Number.isFinite(step)) break;
    x -= step;
  }
  return x;
}

const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** log|Gamma(x)| by the Lanczos approximation (g=7) with reflection for x < 0.5. */
export function lgamma(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (x === Infinity || x === -Infinity) return Infinity;
  if (x <= 0 && Number.isInteger(x)) return Infinity;
  if (x < 0.5) {
    // reflection: Gamma(x) Gamma(1-x) = pi / sin(pi x)
    return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgamma(1 - x);
  }
  const z = x - 1;
  let a = LANCZOS[0];
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i] / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** digamma by recurrence up to x >= 6 and the asymptotic series; reflection for x < 0. */
export function digamma(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (x <= 0 && Number.isInteger(x)) return NaN;
  if (x < 0) return digamma(1 - x) - Math.PI / Math.tan(Math.PI * x);
  let r = 0;
  while (x < 15) {
    r -= 1 / x;
    x += 1;
  }
  const f = 1 / (x * x);
  // psi(x) ~ ln x - 1/2x - 1/12x^2 + 1/120x^4 - 1/252x^6 + 1/240x^8 - 5/660x^10
  return r + Math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f * (5 / 660)))));
}

/** Next representable float32 after x toward y. */
export function nextafterF32(x: number, y: number): number {
  if (Number.isNaN(x) || Number.isNaN(y)) return NaN;
  if (x === y) return y;
  const buf = new Float32Array([x]);
  const u = new Int32Array(buf.buffer);
  if (x === 0) {
    u[0] = 1;
    return y > 0 ? buf[0] : -buf[0];
  }
  if (y > x === x > 0) u[0] += 1;
  else u[0] -= 1;
  return buf[0];
}
export function nextafterF64(x: number, y: number): number {
  if (Number.isNaN(x) || Number.isNaN(y)) return NaN;
  if (x === y) return y;
  const buf = new Float64Array([x]);
  const u = new BigInt64Array(buf.buffer);
  if (x === 0) {
    u[0] = 1n;
    return y > 0 ? buf[0] : -buf[0];
  }
  if (y > x === x > 0) u[0] += 1n;
  else u[0] -= 1n;
  return buf[0];
}

const BERNOULLI_2K = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6];
const factorial = (n: number): number => {
  let r = 1;
  for (let i = 2; i <= n; i++) r *= i;
  return r;
};

/**
 * polygamma(m, x) for integer m >= 1 and x > 0: shift x up with psi^(m)(x) = psi^(m)(x+1) + (-1)^(m+1) m!/x^(m+1),
 * then the asymptotic series psi^(m)(x) ~ (-1)^(m+1) [(m-1)!/x^m + m!/(2x^(m+1)) + sum_k B_2k (2k+m-1)!/((2k)! x^(2k+m))].
 */
export function polygamma(m: number, x: number): number {
  if (m === 0) return digamma(x);
  if (!Number.isInteger(m) || m < 0 || Number.isNaN(x)) return NaN;
  if (x <= 0 && Number.isInteger(x)) return NaN;
  if (x <= 0) return NaN; // reflection for negative x is not needed by JAX's uses (it returns nan too)
  const sgn = m % 2 === 1 ? 1 : -1;
  const mf = factorial(m);
  let acc = 0;
  while (x < 15) {
    acc += mf / x ** (m + 1);
    x += 1;
  }
  let s = factorial(m - 1) / x ** m + mf / (2 * x ** (m + 1));
  for (let k = 1; k <= BERNOULLI_2K.length; k++)
    s += (BERNOULLI_2K[k - 1] * factorial(2 * k + m - 1)) / (factorial(2 * k) * x ** (2 * k + m));
  return sgn * (acc + s);
}
