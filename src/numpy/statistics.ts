/** @file jnp cov, corrcoef, unwrap, the window functions (bartlett, blackman, hamming, hanning, kaiser) and isin. */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { defaultFloatDType, isComplex, isInteger } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { sortMany } from "../primitives/sort.js";
import { asArrayArg, promoteArgsInexact, promoteDtypes } from "./core.js";
import { remainder } from "./elementwise-arith.js";
import { diff } from "./elementwise-misc.js";
import { type ArrayInput, axisOf, c, parseArgs, sel } from "./elementwise-util.js";
import { cumsum } from "./reductions.js";
import { searchsorted } from "./sorting.js";
import { range, shapeStr, staticInt } from "./struct-util.js";

// ---------------------------------------------------------------- windows (float64 on the host, then the default float)
function windowOf(fn: string, M: unknown, f: (n: number, M: number) => number): Array {
  const m = staticInt(fn, M, "M (the window length)");
  const v = m < 1 ? [] : m === 1 ? [1] : range(m).map((n) => f(n, m));
  return ops.convert(
    new ArrayImpl(new ShapedArray([v.length], "float64"), Float64Array.from(v)),
    defaultFloatDType(),
    false,
  );
}
/** jnp.bartlett(M): the triangular window 1 - |2n/(M-1) - 1|. */
export const bartlett = (M: number): Array => windowOf("bartlett", M, (n, m) => 1 - Math.abs((2 * n) / (m - 1) - 1));
/** jnp.blackman(M): 0.42 - 0.5 cos(2 pi n/(M-1)) + 0.08 cos(4 pi n/(M-1)). */
export const blackman = (M: number): Array =>
  windowOf(
    "blackman",
    M,
    (n, m) => 0.42 - 0.5 * Math.cos((2 * Math.PI * n) / (m - 1)) + 0.08 * Math.cos((4 * Math.PI * n) / (m - 1)),
  );
/** jnp.hamming(M): 0.54 - 0.46 cos(2 pi n/(M-1)). */
export const hamming = (M: number): Array =>
  windowOf("hamming", M, (n, m) => 0.54 - 0.46 * Math.cos((2 * Math.PI * n) / (m - 1)));
/** jnp.hanning(M): 0.5 - 0.5 cos(2 pi n/(M-1)). */
export const hanning = (M: number): Array =>
  windowOf("hanning", M, (n, m) => 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / (m - 1)));
/** jnp.kaiser(M, beta): I0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / I0(beta) (beta static). */
export function kaiser(M: number, beta: number | Array): Array {
  const b = beta instanceof Array ? Number(beta.item()) : beta;
  if (typeof b !== "number" || Number.isNaN(b))
    throw new TypeError(`kaiser: beta must be a number, got ${String(beta)}`);
  return windowOf(
    "kaiser",
    M,
    (n, m) => besselI0(b * Math.sqrt(Math.max(0, 1 - ((2 * n) / (m - 1) - 1) ** 2))) / besselI0(b),
  );
}
/** The modified Bessel function I0 by its power series sum ((x/2)^k / k!)^2 (converges for every x; windows use |x| <~ 50). */
function besselI0(x: number): number {
  const q = (x * x) / 4;
  let term = 1,
    sum = 1;
  for (let k = 1; k < 500 && term > 1e-17 * sum; k++) {
    term *= q / (k * k);
    sum += term;
  }
  return sum;
}

// ---------------------------------------------------------------- cov / corrcoef
interface CovOpts {
  y: ArrayInput | null;
  rowvar: boolean;
  bias: boolean;
  ddof: number | null;
  fweights: ArrayInput | null;
  aweights: ArrayInput | null;
}
/** jnp.cov(m, y=null, rowvar=true, bias=false, ddof=null, fweights=null, aweights=null): the covariance matrix (0-d for one variable). */
export function cov(m: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<CovOpts>("cov", args, ["y", "rowvar", "bias", "ddof", "fweights", "aweights"]);
  const rowvar = o.rowvar ?? true;
  let x = asArrayArg("cov", m);
  if (x.ndim > 2) throw new Error(`cov: m has more than 2 dimensions, got shape ${shapeStr(x.shape)}`);
  // observations along axis 1 (NumPy: array(m, ndmin=2), transposed when rowvar is false and it has several rows)
  const rows = (a: Array): Array => {
    const r = a.ndim < 2 ? ops.reshape(a, [1, a.size]) : a;
    return !rowvar && r.shape[0] !== 1 ? ops.transpose(r, [1, 0]) : r;
  };
  x = rows(x);
  if (o.y !== undefined && o.y !== null) {
    const y0 = asArrayArg("cov", o.y);
    if (y0.ndim > 2) throw new Error(`cov: y has more than 2 dimensions, got shape ${shapeStr(y0.shape)}`);
    const ya = rows(y0);
    if (ya.shape[1] !== x.shape[1])
      throw new Error(`cov: m and y must have the same number of observations, got ${x.shape[1]} and ${ya.shape[1]}`);
    x = ops.concatenate(
      promoteDtypes("cov", [x, ya]).map((a) => ops.convert(a, a.dtype, false)),
      0,
    );
  }
  [x] = promoteArgsInexact("cov", x);
  if (x.shape[0] === 0) return ops.full([0, 0], NaN, x.dtype);
  const n = x.shape[1];
  const ddof = o.ddof ?? (o.bias ? 0 : 1);
  let w: Array | null = null;
  const weights = (v: ArrayInput, what: string, integer: boolean): Array => {
    const a = asArrayArg("cov", v);
    if (a.ndim !== 1 || a.shape[0] !== n)
      throw new Error(
        `cov: ${what} must be 1-D with one weight per observation (${n}), got shape ${shapeStr(a.shape)}`,
      );
    if (integer && !isInteger(a.dtype)) throw new TypeError(`cov: fweights must be integers, got ${a.aval.str()}`);
    return ops.convert(a, x.dtype, false);
  };
  if (o.fweights !== undefined && o.fweights !== null) w = weights(o.fweights, "fweights", true);
  if (o.aweights !== undefined && o.aweights !== null) {
    const aw = weights(o.aweights, "aweights", false);
    w = w ? ops.mul(w, aw) : aw;
  }
  // weighted mean avg = sum(w x)/sum(w); normalization fact = v1 - ddof v2/v1 with v1 = sum w, v2 = sum w*aweights
  let avg: Array, fact: Array;
  if (w === null) {
    avg = ops.div(ops.reduceSum(x, [1]), c(x, n));
    fact = c(x, n - ddof);
  } else {
    const v1 = ops.reduceSum(w, [0]);
    avg = ops.div(ops.reduceSum(ops.mul(x, ops.broadcastInDim(w, x.shape, [1])), [1]), v1);
    if (ddof === 0) fact = v1;
    else if (o.aweights === undefined || o.aweights === null) fact = ops.sub(v1, c(v1, ddof));
    else {
      const aw = weights(o.aweights, "aweights", false);
      fact = ops.sub(v1, ops.div(ops.mul(c(v1, ddof), ops.reduceSum(ops.mul(w, aw), [0])), v1));
    }
  }
  fact = sel(ops.le(fact, c(fact, 0)), c(fact, 0), fact);
  const xc = ops.sub(x, ops.broadcastInDim(avg, x.shape, [0]));
  const xw = w === null ? xc : ops.mul(xc, ops.broadcastInDim(w, x.shape, [1]));
  const prod = ops.dotGeneral(xw, xc, [
    [[1], [1]],
    [[], []],
  ]);
  const out = ops.div(prod, ops.broadcastInDim(fact, prod.shape, []));
  // NumPy and JAX squeeze the result: one variable gives a 0-d variance
  return ops.squeeze(
    out,
    out.shape.flatMap((d, i) => (d === 1 ? [i] : [])),
  );
}
/** jnp.corrcoef(x, y=null, rowvar=true): Pearson correlation coefficients cov / sqrt(diag diag^T), clipped to [-1, 1]. */
export function corrcoef(x: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<{ y: ArrayInput | null; rowvar: boolean }>("corrcoef", args, ["y", "rowvar"]);
  const cv = cov(x, o.y ?? null, o.rowvar ?? true);
  if (cv.ndim === 0) return ops.div(cv, cv);
  const k = cv.shape[0];
  const d = ops.sqrt(
    ops.reshape(
      ops.gather(
        ops.reshape(cv, [k * k]),
        ops.convert(ops.mul(ops.iota("int32", [k, 1], 0), ops.full([k, 1], k + 1, "int32")), "int32"),
        [0],
        "clip",
      ),
      [k],
    ),
  );
  const r = ops.div(ops.div(cv, ops.broadcastInDim(d, cv.shape, [0])), ops.broadcastInDim(d, cv.shape, [1]));
  return ops.clamp(c(r, -1), r, c(r, 1));
}

// ---------------------------------------------------------------- unwrap
/** jnp.unwrap(p, discont=period/2, axis=-1, period=2 pi): removes jumps larger than discont by adding multiples of period. */
export function unwrap(p: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<{ discont: number | null; axis: number; period: number }>("unwrap", args, [
    "discont",
    "axis",
    "period",
  ]);
  const [x] = promoteArgsInexact("unwrap", p);
  if (x.ndim === 0) throw new Error("unwrap: p must be at least 1-dimensional, got a 0-d array");
  const axis = axisOf("unwrap", o.axis ?? -1, x.shape);
  const period = o.period ?? 2 * Math.PI;
  const discont = o.discont ?? period / 2;
  const half = period / 2;
  if (x.shape[axis] < 2) return x;
  const dd = diff(x, 1, axis);
  // ddmod = (dd + period/2) mod period - period/2, with -period/2 mapped to +period/2 where dd > 0
  let ddmod = ops.sub(remainder(ops.add(dd, c(dd, half)), c(dd, period)), c(dd, half));
  ddmod = sel(ops.and(ops.eq(ddmod, c(ddmod, -half)), ops.gt(dd, c(dd, 0))), c(ddmod, half), ddmod);
  const corr = sel(ops.lt(ops.abs(dd), c(dd, discont)), c(dd, 0), ops.sub(ddmod, dd));
  const n = x.shape[axis];
  const head = ops.sliceInDim(x, 0, 1, 1, axis);
  const tail = ops.add(ops.sliceInDim(x, 1, n, 1, axis), cumsum(corr, axis));
  return ops.concatenate([head, tail], axis);
}

// ---------------------------------------------------------------- isin
/** jnp.isin(element, testElements, assumeUnique=false, invert=false): element-shaped booleans "element occurs in testElements". */
export function isin(element: ArrayInput, testElements: ArrayInput, ...args: unknown[]): Array {
  const o = parseArgs<{ assumeUnique: boolean; invert: boolean; method: string }>(
    "isin",
    args,
    ["assumeUnique", "invert"],
    ["method"],
  );
  const method = o.method ?? "auto";
  if (!["auto", "compare_all", "binary_search", "sort"].includes(method))
    throw new Error(
      `isin: method must be one of "auto", "compare_all", "binary_search", "sort", got ${JSON.stringify(method)}`,
    );
  const [e, t] = promoteDtypes("isin", [element, testElements]);
  const tf = ops.reshape(t, [t.size]);
  let hit: Array;
  if (t.size === 0) hit = ops.full(e.shape, false, "bool");
  else if (
    method === "compare_all" ||
    isComplex(e.dtype) ||
    e.dtype === "bool" ||
    (method === "auto" && e.size * t.size <= 1 << 16)
  ) {
    const shape = [...e.shape, t.size];
    const eq = ops.eq(ops.broadcastInDim(e, shape, range(e.ndim)), ops.broadcastInDim(tf, shape, [e.ndim]));
    hit = ops.reduceOr(eq, [e.ndim]);
  } else {
    // JAX's large-size method: sort the test elements once, binary-search each element, compare with what it lands on
    const sorted = sortMany([tf], 0)[0];
    const at = ops.min(searchsorted(sorted, e), ops.full(e.shape, t.size - 1, "int32"));
    hit = ops.eq(ops.gather(sorted, ops.reshape(at, [...e.shape, 1]), [0], "clip"), e);
  }
  return o.invert ? ops.not(hit) : hit;
}
