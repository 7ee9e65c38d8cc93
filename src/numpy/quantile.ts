/** @file jnp quantiles: quantile / percentile / median and their NaN-aware forms (methods as JAX's, inverted_cdf with weights). */
import { Array } from "../core/array.js";
import { prod as shapeProd, shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { sortMany } from "../primitives/sort.js";
import { asArrayArg, broadcastTo } from "./core.js";
import { type ArrayInput, type Args, type Axis, axesOf, c, parseArgs, toInexact } from "./elementwise-util.js";

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
type Method = "linear" | "lower" | "higher" | "nearest" | "midpoint";
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
  if (o.weights !== undefined && o.weights !== null) throw new Error(`${fn}: weights are not supported`);
  const method = o.method ?? "linear";
  if (!["linear", "lower", "higher", "nearest", "midpoint"].includes(method))
    throw new Error(
      `${fn}: method must be one of linear, lower, higher, nearest, midpoint; got ${JSON.stringify(method)}`,
    );
  const x = toInexact(fn, a);
  let qa = ops.convert(asArrayArg(fn, q), x.dtype, false);
  if (qa.ndim > 1) throw new Error(`${fn}: q must be zero- or one-dimensional, got shape ${shapeStr(qa.shape)}`);
  if (scale !== 1) qa = ops.div(qa, c(qa, scale));
  const axes = axesOf(fn, o.axis, x.shape);
  const keep = [...x.shape.keys()].filter((k) => !axes.includes(k));
  const n = shapeProd(axes.map((k) => x.shape[k]));
  if (n === 0) throw new Error(`${fn}: cannot take a quantile over an empty axis (shape ${shapeStr(x.shape)})`);
  const batch = keep.map((k) => x.shape[k]);
  const flat = ops.reshape(ops.transpose(x, [...keep, ...axes]), [...batch, n]);
  // lax.sort along the last axis (NaNs last); the O(n^2) rank-by-comparison sort took 6 s at n = 5000
  const s = sortMany([flat], flat.ndim - 1)[0];
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
/** quantile(a, q, axis, out, overwriteInput, method="linear", keepdims): q's dims come first in the result. */
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
