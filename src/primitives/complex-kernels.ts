/** @file Scalar complex arithmetic on (re, im) pairs in float64: the interpreter's kernels for complex primitives. */

/** A complex result as a pair [re, im]. */
export type C = [number, number];

export const cmul = (a: number, b: number, c: number, d: number): C => [a * c - b * d, a * d + b * c];

/** (a+ib)/(c+id) by Smith's algorithm (no overflow in c^2 + d^2). */
export function cdiv(a: number, b: number, c: number, d: number): C {
  if (d === 0) return [a / c, b / c];
  if (Math.abs(c) >= Math.abs(d)) {
    const r = d / c,
      den = c + d * r;
    return [(a + b * r) / den, (b - a * r) / den];
  }
  const r = c / d,
    den = c * r + d;
  return [(a * r + b) / den, (b * r - a) / den];
}

export const cexp = (x: number, y: number): C => {
  const e = Math.exp(x);
  // exp(x + 0i) stays real even when exp(x) is infinite
  return y === 0 ? [e, y] : [e * Math.cos(y), e * Math.sin(y)];
};
export const clog = (x: number, y: number): C => [Math.log(Math.hypot(x, y)), Math.atan2(y, x)];

/** Principal square root: branch cut on the negative real axis, sqrt(conj z) = conj sqrt(z). */
export function csqrt(x: number, y: number): C {
  if (x === 0 && y === 0) return [0, y];
  const r = Math.hypot(x, y);
  if (x >= 0) {
    const t = Math.sqrt((r + x) / 2);
    return [t, y / (2 * t)];
  }
  const t = Math.sqrt((r - x) / 2);
  return [Math.abs(y) / (2 * t), y < 0 || Object.is(y, -0) ? -t : t];
}

// sin(x+iy) = sin x cosh y + i cos x sinh y; cos(x+iy) = cos x cosh y - i sin x sinh y
export const csin = (x: number, y: number): C => [Math.sin(x) * Math.cosh(y), Math.cos(x) * Math.sinh(y)];
export const ccos = (x: number, y: number): C => [Math.cos(x) * Math.cosh(y), -Math.sin(x) * Math.sinh(y)];
export const csinh = (x: number, y: number): C => [Math.sinh(x) * Math.cos(y), Math.cosh(x) * Math.sin(y)];
export const ccosh = (x: number, y: number): C => [Math.cosh(x) * Math.cos(y), Math.sinh(x) * Math.sin(y)];

/** tanh(x+iy) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y), with the |x| large limit taken directly. */
export function ctanh(x: number, y: number): C {
  if (Math.abs(x) > 20) return [Math.sign(x), 4 * Math.sin(y) * Math.cos(y) * Math.exp(-2 * Math.abs(x))];
  const den = Math.cosh(2 * x) + Math.cos(2 * y);
  return [Math.sinh(2 * x) / den, Math.sin(2 * y) / den];
}
// tan z = -i tanh(i z)
export const ctan = (x: number, y: number): C => {
  const [a, b] = ctanh(-y, x);
  return [b, -a];
};

// expm1(x+iy) = (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y, accurate near 0
export const cexpm1 = (x: number, y: number): C => {
  const s = Math.sin(y / 2);
  return [Math.expm1(x) * Math.cos(y) - 2 * s * s, Math.exp(x) * Math.sin(y)];
};
// log1p(x+iy) = log|1+z| + i arg(1+z), with log|1+z| = log1p(2x + x^2 + y^2)/2
export const clog1p = (x: number, y: number): C => [Math.log1p(x * (2 + x) + y * y) / 2, Math.atan2(y, 1 + x)];

/** a^b = exp(b log a), with 0^b = 0 for Re(b) > 0 and 0^0 = 1 (NumPy's convention). */
export function cpow(a: number, b: number, c: number, d: number): C {
  if (a === 0 && b === 0) {
    if (c === 0 && d === 0) return [1, 0];
    return c > 0 ? [0, 0] : [NaN, NaN];
  }
  if (d === 0 && b === 0 && a > 0) return [a ** c, 0];
  const [lr, li] = clog(a, b);
  const [er, ei] = cmul(c, d, lr, li);
  return cexp(er, ei);
}

/** z^n for an integer n by repeated squaring (1/z^-n for negative n). */
export function cipow(x: number, y: number, n: number): C {
  let acc: C = [1, 0],
    base: C = [x, y],
    e = Math.abs(n);
  while (e > 0) {
    if (e & 1) acc = cmul(acc[0], acc[1], base[0], base[1]);
    base = cmul(base[0], base[1], base[0], base[1]);
    e >>= 1;
  }
  return n < 0 ? cdiv(1, 0, acc[0], acc[1]) : acc;
}

/** sign(z) = z / |z| (0 at 0). */
export const csign = (x: number, y: number): C => {
  const r = Math.hypot(x, y);
  return r === 0 ? [0, 0] : [x / r, y / r];
};
export const crsqrt = (x: number, y: number): C => {
  const [a, b] = csqrt(x, y);
  return cdiv(1, 0, a, b);
};
// logistic(z) = 1 / (1 + exp(-z))
export const clogistic = (x: number, y: number): C => {
  const [a, b] = cexp(-x, -y);
  return cdiv(1, 0, 1 + a, b);
};
