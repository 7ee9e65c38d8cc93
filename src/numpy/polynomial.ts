/** @file jnp polynomials (coefficients highest power first): polyadd, polysub, polymul, polyval, polyder, polyint, polyfit, roots, vander. */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { complexDType, defaultFloatDType, isComplex, isFloat } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { promoteDtypes } from "./core.js";
import { convolve } from "./elementwise-misc.js";
import { type ArrayInput, parseArgs } from "./elementwise-util.js";
import { inv, lstsq } from "./linalg.js";
import { numbersOf, range, requireConcrete, shapeStr, staticInt } from "./struct-util.js";

/** A 1-D coefficient array (0-d becomes length 1), naming fn on higher ranks. */
function coeffs(fn: string, p: Array, what = "p"): Array {
  if (p.ndim === 0) return ops.reshape(p, [1]);
  if (p.ndim !== 1)
    throw new Error(
      `${fn}: ${what} must be a 1-D array of coefficients (highest power first), got shape ${shapeStr(p.shape)}`,
    );
  return p;
}
const toInexact = (xs: Array[]): Array[] =>
  xs.length && !isFloat(xs[0].dtype) && !isComplex(xs[0].dtype)
    ? xs.map((x) => ops.convert(x, defaultFloatDType(), x.weakType))
    : xs;
/** Left-pads a 1-D array with zeros to length n. */
const padFront = (x: Array, n: number): Array =>
  x.shape[0] === n ? x : ops.pad(x, ops.full([], 0, x.dtype), [[n - x.shape[0], 0, 0]]);

/** jnp.polyadd(a1, a2): the coefficient sum, the shorter one aligned to the lowest power (dtypes promote, ints stay ints). */
export function polyadd(a1: ArrayInput, a2: ArrayInput): Array {
  const [p, q] = promoteDtypes("polyadd", [a1, a2]).map((x, i) => coeffs("polyadd", x, i ? "a2" : "a1"));
  const n = Math.max(p.shape[0], q.shape[0]);
  return ops.add(padFront(p, n), padFront(q, n));
}
/** jnp.polysub(a1, a2) = polyadd(a1, -a2). */
export function polysub(a1: ArrayInput, a2: ArrayInput): Array {
  const [p, q] = promoteDtypes("polysub", [a1, a2]).map((x, i) => coeffs("polysub", x, i ? "a2" : "a1"));
  const n = Math.max(p.shape[0], q.shape[0]);
  return ops.sub(padFront(p, n), padFront(q, n));
}
/** jnp.polymul(a1, a2, trimLeadingZeros=false): the product's coefficients, a full convolution (inexact dtype, as in JAX). */
export function polymul(a1: ArrayInput, a2: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<{ trimLeadingZeros: boolean }>("polymul", args, ["trimLeadingZeros"]);
  let [p, q] = toInexact(promoteDtypes("polymul", [a1, a2])).map((x, i) => coeffs("polymul", x, i ? "a2" : "a1"));
  if (o.trimLeadingZeros) [p, q] = [trimLeading("polymul", p), trimLeading("polymul", q)];
  return convolve(p, q, "full");
}
function trimLeading(fn: string, p: Array): Array {
  const v = numbersOf(
    requireConcrete(fn, p, "the coefficients", "Pass trimLeadingZeros=false (the default) under jit."),
  );
  const k = v.findIndex((x) => x !== 0);
  return k <= 0 ? (k < 0 ? ops.full([1], 0, p.dtype) : p) : ops.sliceInDim(p, k, p.shape[0], 1, 0);
}
/** jnp.polyval(p, x): p[0] x^(n-1) + ... + p[n-1], by Horner's rule, elementwise over x (inexact dtype). */
export function polyval(p: ArrayInput, x: ArrayInput, ...args: unknown[]): Array {
  parseArgs<{ unroll: number }>("polyval", args, ["unroll"]);
  const [pc, xa] = toInexact(promoteDtypes("polyval", [p, x]));
  const pp = coeffs("polyval", pc);
  // y = (...((p0 x + p1) x + p2) ...) x + p_{n-1}
  let y = ops.fullLike(ops.convert(xa, xa.dtype, false), 0);
  for (let i = 0; i < pp.shape[0]; i++)
    y = ops.add(ops.mul(y, xa), ops.broadcastInDim(ops.reshape(ops.sliceInDim(pp, i, i + 1, 1, 0), []), y.shape, []));
  return y;
}
/** jnp.polyder(p, m=1): the m-th derivative's coefficients (m = 0 returns p; inexact dtype). */
export function polyder(p: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<{ m: number }>("polyder", args, ["m"]);
  const m = staticInt("polyder", o.m ?? 1, "m (the order of the derivative)");
  if (m < 0) throw new Error(`polyder: the order of the derivative m must be non-negative, got ${m}`);
  const pp = coeffs("polyder", toInexact(promoteDtypes("polyder", [p]))[0]);
  if (m === 0) return pp;
  const n = pp.shape[0];
  if (m >= n) return ops.full([0], 0, pp.dtype);
  // d^m/dx^m x^k = k (k-1) ... (k-m+1) x^(k-m): coefficient i (power n-1-i) gets that falling factorial
  const f = range(n - m).map((i) => range(m).reduce((acc, j) => acc * (n - 1 - i - j), 1));
  return ops.mul(ops.sliceInDim(pp, 0, n - m, 1, 0), constOf(f, pp));
}
/** jnp.polyint(p, m=1, k=0): the m-th antiderivative; k gives the m integration constants (a scalar is used for all). */
export function polyint(p: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<{ m: number; k: ArrayInput | null }>("polyint", args, ["m", "k"]);
  const m = staticInt("polyint", o.m ?? 1, "m (the order of the antiderivative)");
  if (m < 0) throw new Error(`polyint: the order of the antiderivative m must be non-negative, got ${m}`);
  const [pp0, k0] = toInexact(promoteDtypes("polyint", [p, o.k ?? 0]));
  const pp = coeffs("polyint", pp0);
  if (m === 0) return pp;
  let k = ops.convert(k0.ndim === 0 ? ops.broadcastInDim(k0, [m], []) : k0, pp.dtype, false);
  if (k.ndim !== 1 || k.shape[0] !== m)
    throw new Error(`polyint: k must be a scalar or have length m = ${m}, got shape ${shapeStr(k0.shape)}`);
  // integrating m times maps x^j to x^(j+m) j!/(j+m)!; constant k[i] (from integration i) ends as a term of power m-1-i with 1/(m-1-i)!
  const n = pp.shape[0];
  const fall = (top: number, cnt: number): number => range(cnt).reduce((acc, j) => acc * (top - j), 1);
  const scaleP = range(n).map((i) => 1 / fall(n - 1 - i + m, m));
  const scaleK = range(m).map((i) => 1 / fall(m - 1 - i, m - 1 - i));
  k = ops.mul(k, constOf(scaleK, k));
  return ops.concatenate([ops.mul(pp, constOf(scaleP, pp)), k], 0);
}
/** Float64 JS numbers as a 1-D constant of like's dtype. */
function constOf(v: readonly number[], like: Array): Array {
  return ops.convert(new ArrayImpl(new ShapedArray([v.length], "float64"), Float64Array.from(v)), like.dtype, false);
}

/** jnp.vander(x, N=len(x), increasing=false): columns x^(N-1) ... x^0 (or ascending powers); keeps x's dtype. */
export function vander(x: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<{ N: number | null; increasing: boolean }>("vander", args, ["N", "increasing"]);
  const xa = promoteDtypes("vander", [x])[0];
  if (xa.ndim !== 1) throw new Error(`vander: x must be a one-dimensional array, got shape ${shapeStr(xa.shape)}`);
  const N = o.N === undefined || o.N === null ? xa.shape[0] : staticInt("vander", o.N, "N");
  if (N < 0) throw new Error(`vander: N must be non-negative, got ${N}`);
  const pows = range(N).map((j) => (o.increasing ? j : N - 1 - j));
  const cols = pows.map((e) => ops.reshape(powInt(xa, e), [xa.shape[0], 1]));
  return N === 0 ? ops.full([xa.shape[0], 0], 0, xa.dtype) : ops.concatenate(cols, 1);
}
/** x^e for a static non-negative integer e by repeated squaring (exact for ints, differentiable for floats). */
function powInt(x: Array, e: number): Array {
  let acc: Array = ops.fullLike(ops.convert(x, x.dtype, false), 1),
    b = x;
  for (let k = e; k > 0; k >>= 1) {
    if (k & 1) acc = ops.mul(acc, b);
    if (k > 1) b = ops.mul(b, b);
  }
  return acc;
}

interface PolyfitOpts {
  rcond: number | null;
  full: boolean;
  w: ArrayInput | null;
  cov: boolean | "unscaled";
}
/**
 * jnp.polyfit(x, y, deg, rcond=null, full=false, w=null, cov=false): least-squares coefficients, highest power first
 * (y may be 2-D); full adds [residuals, rank, singularValues, rcond]; cov (true or "unscaled") adds the coefficients'
 * covariance [coef, V] (V: [deg+1, deg+1], or [deg+1, deg+1, k] for a 2-D y).
 */
export function polyfit(x: ArrayInput, y: ArrayInput, deg: number, ...args: unknown[]): Array | Array[] {
  const o = parseArgs<PolyfitOpts>("polyfit", args, ["rcond", "full", "w", "cov"]);
  const d = staticInt("polyfit", deg, "deg");
  if (d < 0) throw new Error(`polyfit: expected deg >= 0, got ${d}`);
  const [xa, ya] = toInexact(promoteDtypes("polyfit", [x, y]));
  if (xa.ndim !== 1) throw new Error(`polyfit: expected a 1-D vector for x, got shape ${shapeStr(xa.shape)}`);
  if (xa.shape[0] === 0) throw new Error("polyfit: expected a non-empty vector for x");
  if (ya.ndim < 1 || ya.ndim > 2)
    throw new Error(`polyfit: expected a 1-D or 2-D array for y, got shape ${shapeStr(ya.shape)}`);
  if (ya.shape[0] !== xa.shape[0])
    throw new Error(
      `polyfit: x and y must have the same length along axis 0, got shapes ${shapeStr(xa.shape)} and ${shapeStr(ya.shape)}`,
    );
  const rcond = o.rcond ?? xa.shape[0] * finfoEps(xa);
  let lhs = vander(xa, d + 1),
    rhs = ya;
  if (o.w !== undefined && o.w !== null) {
    const w = ops.convert(promoteDtypes("polyfit", [o.w])[0], xa.dtype, false);
    if (w.ndim !== 1 || w.shape[0] !== xa.shape[0])
      throw new Error(`polyfit: w must be 1-D with x's length ${xa.shape[0]}, got shape ${shapeStr(w.shape)}`);
    lhs = ops.mul(lhs, ops.broadcastInDim(w, lhs.shape, [0]));
    rhs = ops.mul(rhs, ops.broadcastInDim(w, rhs.shape, [0]));
  }
  // scale the columns to unit norm for conditioning, solve, then undo the scaling
  const scale = ops.sqrt(ops.reduceSum(ops.mul(lhs, lhs), [0]));
  const res = lstsq(ops.div(lhs, ops.broadcastInDim(scale, lhs.shape, [1])), rhs, rcond);
  const scaled = ops.div(lhs, ops.broadcastInDim(scale, lhs.shape, [1]));
  const coef = ops.div(res[0], ops.broadcastInDim(scale, res[0].shape, [0]));
  if (o.full) return [coef, res[1], res[2], res[3], ops.full([], rcond, xa.dtype)];
  if (!o.cov) return coef;
  if (o.cov !== true && o.cov !== "unscaled")
    throw new TypeError(`polyfit: cov must be a boolean or "unscaled", got ${JSON.stringify(o.cov)}`);
  // V = inv(A^T A) / outer(scale, scale), times residuals / (n - order) unless "unscaled"
  const order = d + 1,
    n = xa.shape[0];
  let V = inv(
    ops.dotGeneral(scaled, scaled, [
      [[0], [0]],
      [[], []],
    ]),
  );
  V = ops.div(
    V,
    ops.mul(ops.broadcastInDim(scale, [order, order], [0]), ops.broadcastInDim(scale, [order, order], [1])),
  );
  if (o.cov === "unscaled")
    return [coef, ya.ndim === 1 ? V : ops.broadcastInDim(V, [order, order, ya.shape[1]], [0, 1])];
  if (n <= order)
    throw new Error(
      `polyfit: the number of data points (${n}) must exceed order (${order}) to scale the covariance matrix`,
    );
  const fac = ops.div(res[1], ops.full(res[1].shape, n - order, res[1].dtype));
  if (ya.ndim === 1) return [coef, ops.mul(V, ops.broadcastInDim(ops.reshape(fac, []), V.shape, []))];
  const shape = [order, order, ya.shape[1]];
  return [coef, ops.mul(ops.broadcastInDim(V, shape, [0, 1]), ops.broadcastInDim(fac, shape, [2]))];
}
const finfoEps = (x: Array): number =>
  x.dtype === "float64" ? 2 ** -52 : x.dtype === "float16" ? 2 ** -10 : x.dtype === "bfloat16" ? 2 ** -7 : 2 ** -23;

/**
 * jnp.roots(p, stripZeros=true): the roots of p. As numpy.roots: a real array (sorted descending) when p is real and
 * every root is real, else a complex array (sorted by real part, then imaginary part, descending); complex
 * coefficients are accepted. JAX's roots is always complex. Needs concrete coefficients (not under jit).
 */
export function roots(p: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<{ stripZeros: boolean }>("roots", args, ["stripZeros"]);
  const pa = coeffs("roots", toInexact(promoteDtypes("roots", [p]))[0]);
  const cplx = isComplex(pa.dtype);
  const conc = requireConcrete(
    "roots",
    pa,
    "the coefficients",
    "roots needs the coefficients' values (it finds complex candidates on the host).",
  );
  let vr: number[], vi: number[];
  if (cplx) {
    const b = conc.dataSync() as Float32Array | Float64Array;
    vr = range(pa.shape[0]).map((i) => b[2 * i]);
    vi = range(pa.shape[0]).map((i) => b[2 * i + 1]);
  } else {
    vr = numbersOf(conc);
    vi = vr.map(() => 0);
  }
  const nz = (i: number): boolean => vr[i] !== 0 || vi[i] !== 0;
  const lead = range(vr.length).findIndex(nz);
  if (lead < 0) return ops.full([0], 0, pa.dtype);
  if (o.stripZeros === false && lead > 0)
    throw new Error(
      `roots: leading zero coefficients with stripZeros=false would give infinite roots (JAX returns NaN there); got ${lead} leading zero(s) in a ${vr.length}-coefficient polynomial`,
    );
  let last = vr.length - 1;
  while (!nz(last)) last--;
  const zeros = vr.length - 1 - last;
  const found = polyRootsComplex(vr.slice(lead, last + 1), vi.slice(lead, last + 1));
  for (let i = 0; i < zeros; i++) found.push([0, 0]);
  // a k-fold real root comes back with imaginary noise ~ eps^(1/k) (NumPy's companion-matrix roots show the same), so a
  // root of a real polynomial counts as real below 1e-4 relative
  const allReal = !cplx && found.every(([re, im]) => Math.abs(im) <= 1e-4 * Math.max(1, Math.hypot(re, im)));
  if (allReal)
    return constOf(
      found.map(([re]) => re).sort((a, b) => b - a),
      pa,
    );
  found.sort((x, y) => y[0] - x[0] || y[1] - x[1]);
  const parts = (k: 0 | 1): Array =>
    new ArrayImpl(
      new ShapedArray([found.length], "float64"),
      Float64Array.from(found, (z) => z[k]),
    );
  return ops.convert(ops.complexOf(parts(0), parts(1)), complexDType(pa.dtype), false);
}
/** All complex roots of the polynomial with coefficients qr + i qi (leading one nonzero) by Aberth-Ehrlich in float64. */
function polyRootsComplex(qr: readonly number[], qi: readonly number[]): [number, number][] {
  const n = qr.length - 1;
  if (n < 1) return [];
  const d0 = qr[0] * qr[0] + qi[0] * qi[0];
  // monic: a_j = q_j / q_0
  const a: [number, number][] = qr.map((r, j) => [(r * qr[0] + qi[j] * qi[0]) / d0, (qi[j] * qr[0] - r * qi[0]) / d0]);
  // initial guesses on a circle of the Cauchy bound's radius
  const R = 1 + Math.max(...a.slice(1).map(([x, y]) => Math.hypot(x, y)));
  let z: [number, number][] = range(n).map((k) => {
    const t = (2 * Math.PI * k) / n + 0.4;
    return [R * Math.cos(t), R * Math.sin(t)];
  });
  const mul = (x: [number, number], y: [number, number]): [number, number] => [
    x[0] * y[0] - x[1] * y[1],
    x[0] * y[1] + x[1] * y[0],
  ];
  const div = (x: [number, number], y: [number, number]): [number, number] => {
    const d = y[0] * y[0] + y[1] * y[1];
    return [(x[0] * y[0] + x[1] * y[1]) / d, (x[1] * y[0] - x[0] * y[1]) / d];
  };
  for (let it = 0; it < 500; it++) {
    let moved = 0;
    const nz = z.map((zi, i) => {
      // p(z) and p'(z) by Horner
      let pv: [number, number] = [a[0][0], a[0][1]],
        dv: [number, number] = [0, 0];
      for (let j = 1; j <= n; j++) {
        dv = mul(dv, zi);
        dv = [dv[0] + pv[0], dv[1] + pv[1]];
        pv = mul(pv, zi);
        pv = [pv[0] + a[j][0], pv[1] + a[j][1]];
      }
      if (pv[0] === 0 && pv[1] === 0) return zi;
      const ratio = div(pv, dv);
      let s: [number, number] = [0, 0];
      z.forEach((zj, j) => {
        if (j !== i) {
          const r = div([1, 0], [zi[0] - zj[0], zi[1] - zj[1]]);
          s = [s[0] + r[0], s[1] + r[1]];
        }
      });
      // w = ratio / (1 - ratio * sum 1/(z_i - z_j))
      const rs = mul(ratio, s);
      const w = div(ratio, [1 - rs[0], -rs[1]]);
      moved = Math.max(moved, Math.hypot(w[0], w[1]) / Math.max(1, Math.hypot(zi[0], zi[1])));
      return [zi[0] - w[0], zi[1] - w[1]] as [number, number];
    });
    z = nz;
    if (moved < 1e-15) break;
  }
  return z;
}
