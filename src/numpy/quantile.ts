/** @file jnp quantiles: quantile / percentile / median and their NaN-aware forms (methods as JAX's, inverted_cdf with weights). */
import { Array } from "../core/array.js";
import { isComplex } from "../core/dtype.js";
import { prod as shapeProd, shapesEqual, shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { sortMany } from "../primitives/sort.js";
import { asArrayArg, broadcastTo, promoteDtypes } from "./core.js";
import { type ArrayInput, type Args, type Axis, axesOf, axisOf, c, parseArgs, toInexact } from "./elementwise-util.js";

/** Picks s[..., idx] along the last axis for an integer index array shaped like s without its last axis (after broadcasting). */
function pickLast(s: Array, idx: Array): Array {
  const n = s.shape[s.ndim - 1];
  const shape = [...idx.shape, n];
  const sb = broadcastTo(s, shape, "quantile");
  const ib = ops.broadcastInDim(idx, shape, [...idx.shape.keys()]);
  return ops.reduceSum(ops.select(ops.eq(ib, ops.iota("int32", shape, shape.length - 1)), sb, ops.fullLike(sb, 0)), [
    shape.length - 1,
  ]);
}
type Method = "linear" | "lower" | "higher" | "nearest" | "midpoint" | "inverted_cdf";
interface QuantOpts {
  axis: Axis;
  out: null;
  overwriteInput: boolean;
  method: Method;
  keepdims: boolean;
  weights: ArrayInput | null;
}
type QuantArgs = Args<
  [axis: Axis, out: null, overwriteInput: boolean, method: Method, keepdims: boolean],
  Partial<QuantOpts>
>;
const Q_NAMES = ["axis", "out", "overwriteInput", "method", "keepdims"] as const;
function quantileImpl(
  fn: string,
  a: ArrayInput,
  q: ArrayInput,
  o: Partial<QuantOpts>,
  nanAware: boolean,
  scale = 1,
): Array {
  const method = o.method ?? "linear";
  if (!["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf"].includes(method))
    throw new Error(
      `${fn}: method must be one of linear, lower, higher, nearest, midpoint, inverted_cdf; got ${JSON.stringify(method)}`,
    );
  let x = toInexact(fn, a);
  let w: Array | null = null;
  if (o.weights !== undefined && o.weights !== null) {
    if (method !== "inverted_cdf")
      throw new Error(`${fn}: only method "inverted_cdf" supports weights (as JAX and NumPy), got method ${method}`);
    [x, w] = promoteDtypes(fn, [x, toInexact(fn, o.weights)]);
    w = weightsLike(fn, w, x.shape, o.axis);
  }
  if (isComplex(x.dtype)) throw new TypeError(`${fn}: complex input is not supported (got ${x.dtype}), as JAX`);
  let qa = ops.convert(asArrayArg(fn, q), x.dtype, false);
  if (qa.ndim > 1) throw new Error(`${fn}: q must be zero- or one-dimensional, got shape ${shapeStr(qa.shape)}`);
  if (scale !== 1) qa = ops.div(qa, c(qa, scale));
  const axes = axesOf(fn, o.axis, x.shape);
  const keep = [...x.shape.keys()].filter((k) => !axes.includes(k));
  const n = shapeProd(axes.map((k) => x.shape[k]));
  if (n === 0) throw new Error(`${fn}: cannot take a quantile over an empty axis (shape ${shapeStr(x.shape)})`);
  const batch = keep.map((k) => x.shape[k]);
  const flatten = (v: Array) => ops.reshape(ops.transpose(v, [...keep, ...axes]), [...batch, n]);
  const flat = flatten(x);
  // lax.sort along the last axis (NaNs last), the weights carried along; the O(n^2) rank-by-comparison sort took
  // 6 s at n = 5000
  const [s, ws] =
    method === "inverted_cdf"
      ? sortMany([flat, w ? flatten(w) : ops.fullLike(flat, 1)], flat.ndim - 1)
      : [sortMany([flat], flat.ndim - 1)[0]];
  const nanM = ops.ne(flat, flat);
  // valid count per slice (NaNs sort last and are skipped by the nan* forms)
  const cnt = nanAware
    ? ops.convert(ops.reduceSum(ops.convert(ops.not(nanM), "int32"), [batch.length]), x.dtype)
    : ops.full(batch, n, x.dtype);
  const outShape = [...qa.shape, ...batch];
  const qb = ops.broadcastInDim(qa, outShape, [...qa.shape.keys()]);
  const cb = ops.broadcastInDim(
    cnt,
    outShape,
    batch.map((_, i) => qa.ndim + i),
  );
  const pos = ops.mul(qb, ops.sub(cb, c(cb, 1)));
  const maxIdx = ops.convert(ops.max(ops.sub(cb, c(cb, 1)), c(cb, 0)), "int32");
  const clampIdx = (v: Array) => ops.min(ops.max(ops.convert(v, "int32"), ops.fullLike(maxIdx, 0)), maxIdx);
  const loF = ops.floor(pos),
    hiF = ops.ceil(pos);
  const sb = ops.broadcastInDim(
    s,
    [...outShape, n],
    [...batch.keys()].map((i) => qa.ndim + i).concat([outShape.length]),
  );
  const lo = pickLast(sb, clampIdx(loF)),
    hi = pickLast(sb, clampIdx(hiF));
  let r: Array;
  switch (method) {
    case "lower":
      r = lo;
      break;
    case "higher":
      r = hi;
      break;
    case "nearest":
      r = pickLast(sb, clampIdx(ops.round(pos, 1)));
      break;
    case "midpoint":
      r = ops.mul(ops.add(lo, hi), c(lo, 0.5));
      break;
    case "inverted_cdf":
      r = invertedCdf(s, ws, qb, batch.length, clampIdx, sb);
      break;
    default: {
      const t = ops.sub(pos, loF);
      r = ops.add(lo, ops.mul(ops.sub(hi, lo), t));
    }
  }
  const anyNan = ops.broadcastInDim(
    ops.reduceOr(nanM, [batch.length]),
    outShape,
    batch.map((_, i) => qa.ndim + i),
  );
  if (nanAware) r = ops.select(ops.eq(cb, c(cb, 0)), ops.fullLike(r, NaN), r);
  else r = ops.select(anyNan, ops.fullLike(r, NaN), r);
  if (o.keepdims) r = ops.reshape(r, [...qa.shape, ...x.shape.map((d, k) => (axes.includes(k) ? 1 : d))]);
  return r;
}
/**
 * Weights for `x`: its shape, or (with an axis) the shape of the reduced axes in the order given, broadcast to
 * x's shape (JAX's rule).
 */
function weightsLike(fn: string, w: Array, shape: readonly number[], axis: Axis | undefined): Array {
  if (shapesEqual(w.shape, shape)) return w;
  const given =
    axis === null || axis === undefined
      ? null
      : (typeof axis === "number" ? [axis] : [...axis]).map((ax) => axisOf(fn, ax, shape));
  if (given === null)
    throw new Error(
      `${fn}: weights of shape ${shapeStr(w.shape)} must match a's shape ${shapeStr(shape)} when axis is null`,
    );
  const want = given.map((ax) => shape[ax]);
  if (!shapesEqual(w.shape, want))
    throw new Error(
      `${fn}: weights of shape ${shapeStr(w.shape)} must match a's shape ${shapeStr(shape)} or the reduced axes' ${shapeStr(want)}`,
    );
  // w's dims follow the axes as given; broadcast_in_dim wants them increasing
  const order = [...given.keys()].sort((p, q) => given[p] - given[q]);
  return ops.broadcastInDim(
    ops.transpose(w, order),
    shape,
    order.map((i) => given[i]),
  );
}

/**
 * inverted_cdf: the first sorted value whose cumulative weight reaches q times the total (NumPy's and JAX's
 * weighted quantile; unit weights without `weights`). NaN values and negative or NaN weights count zero; a slice
 * with a negative or NaN weight gives NaN (JAX's choice, traceable; NumPy raises on negative weights).
 */
function invertedCdf(s: Array, ws: Array, qb: Array, nBatch: number, clampIdx: (v: Array) => Array, sb: Array): Array {
  const last = s.ndim - 1,
    n = s.shape[last];
  const outShape = qb.shape;
  const zero = ops.fullLike(ws, 0);
  const bad = ops.or(ops.lt(ws, zero), ops.ne(ws, ws));
  const cw = ops.cumulative("cumsum", ops.select(ops.or(bad, ops.ne(s, s)), zero, ws), last);
  const batchDims = [...s.shape.keys()].slice(0, nBatch).map((i) => outShape.length - nBatch + i);
  const total = ops.reshape(ops.sliceInDim(cw, n - 1, n, 1, last), s.shape.slice(0, nBatch));
  const target = ops.mul(qb, ops.broadcastInDim(total, outShape, batchDims));
  const full = [...outShape, n];
  const below = ops.lt(
    ops.broadcastInDim(cw, full, [...batchDims, outShape.length]),
    ops.broadcastInDim(target, full, [...outShape.keys()]),
  );
  const r = pickLast(sb, clampIdx(ops.reduceSum(ops.convert(below, "int32"), [outShape.length])));
  const anyBad = ops.broadcastInDim(ops.reduceOr(bad, [nBatch]), outShape, batchDims);
  return ops.select(anyBad, ops.fullLike(r, NaN), r);
}
/**
 * quantile(a, q, axis, out, overwriteInput, method="linear", keepdims, { weights }): q's dims come first in the
 * result; methods linear, lower, higher, nearest, midpoint and inverted_cdf (the only one taking weights).
 */
export function quantile(a: ArrayInput, q: ArrayInput, ...args: QuantArgs): Array {
  return quantileImpl("quantile", a, q, parseArgs<QuantOpts>("quantile", args, Q_NAMES, ["weights"]), false);
}
export function nanquantile(a: ArrayInput, q: ArrayInput, ...args: QuantArgs): Array {
  return quantileImpl("nanquantile", a, q, parseArgs<QuantOpts>("nanquantile", args, Q_NAMES, ["weights"]), true);
}
/** percentile: quantile with q in [0, 100]. */
export function percentile(a: ArrayInput, q: ArrayInput, ...args: QuantArgs): Array {
  return quantileImpl("percentile", a, q, parseArgs<QuantOpts>("percentile", args, Q_NAMES, ["weights"]), false, 100);
}
export function nanpercentile(a: ArrayInput, q: ArrayInput, ...args: QuantArgs): Array {
  return quantileImpl(
    "nanpercentile",
    a,
    q,
    parseArgs<QuantOpts>("nanpercentile", args, Q_NAMES, ["weights"]),
    true,
    100,
  );
}
type MedArgs = Args<
  [axis: Axis, out: null, overwriteInput: boolean, keepdims: boolean],
  { axis?: Axis; out?: null; overwriteInput?: boolean; keepdims?: boolean }
>;
export function median(a: ArrayInput, ...args: MedArgs): Array {
  return quantileImpl(
    "median",
    a,
    0.5,
    parseArgs<QuantOpts>("median", args, ["axis", "out", "overwriteInput", "keepdims"]),
    false,
  );
}
export function nanmedian(a: ArrayInput, ...args: MedArgs): Array {
  return quantileImpl(
    "nanmedian",
    a,
    0.5,
    parseArgs<QuantOpts>("nanmedian", args, ["axis", "out", "overwriteInput", "keepdims"]),
    true,
  );
}
