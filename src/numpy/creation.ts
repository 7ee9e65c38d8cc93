/** @file jnp array creation: zeros/ones/full(+Like), arange, linspace/logspace/geomspace, eye/tri/diag, meshgrid, indices. */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import {
  type DType,
  defaultFloatDType,
  defaultIntDType,
  isFloat,
  isInteger,
  numberLiteralDType,
  promoteTypes,
} from "../core/dtype.js";
import { broadcastShapes, checkAllocatable, checkShape, shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { vmap } from "../transforms/api.js";
import { array, asArrayArg, broadcastTo, checkIntLiteral, promoteDtypes } from "./core.js";
import { type ArrayInput, type Args, axisOf, c, concreteInt, parseArgs, sel, userDType } from "./elementwise-util.js";
import { power, sign, log10 } from "./elementwise-arith.js";
import { sum } from "./reductions.js";

export type ShapeArg = number | readonly number[];
function shapeOf(fn: string, s: unknown): number[] {
  if (s instanceof Array)
    throw new TypeError(`${fn}: shape must be a non-negative integer or a list of them, got an Array ${s.aval.str()}`);
  const shape = checkShape(fn, globalThis.Array.isArray(s) ? [...s] : s);
  checkAllocatable(fn, shape);
  return shape;
}

/** zeros(shape, dtype = default float). */
export function zeros(
  shape: ShapeArg,
  ...args: Args<[dtype: DType | null], { dtype?: DType | null; device?: unknown }>
): Array {
  const o = parseArgs<{ dtype: DType }>("zeros", args, ["dtype"], ["device"]);
  return ops.full(shapeOf("zeros", shape), 0, userDType("zeros", o.dtype) ?? defaultFloatDType());
}
export function ones(
  shape: ShapeArg,
  ...args: Args<[dtype: DType | null], { dtype?: DType | null; device?: unknown }>
): Array {
  const o = parseArgs<{ dtype: DType }>("ones", args, ["dtype"], ["device"]);
  return ops.full(shapeOf("ones", shape), 1, userDType("ones", o.dtype) ?? defaultFloatDType());
}
/** empty is zeros (XLA has no uninitialized memory). */
export function empty(
  shape: ShapeArg,
  ...args: Args<[dtype: DType | null], { dtype?: DType | null; device?: unknown }>
): Array {
  const o = parseArgs<{ dtype: DType }>("empty", args, ["dtype"], ["device"]);
  return ops.full(shapeOf("empty", shape), 0, userDType("empty", o.dtype) ?? defaultFloatDType());
}
/** full(shape, fillValue, dtype): without dtype a JS scalar fill gives a weakly typed result (as lax.full). */
export function full(
  shape: ShapeArg,
  fillValue: ArrayInput,
  ...args: Args<[dtype: DType | null], { dtype?: DType | null; device?: unknown }>
): Array {
  const o = parseArgs<{ dtype: DType }>("full", args, ["dtype"], ["device"]);
  const s = shapeOf("full", shape);
  const v = asArrayArg("full", fillValue);
  const d = userDType("full", o.dtype);
  if (d && o.dtype) checkIntLiteral(fillValue, d, o.dtype, "full");
  const conv = d ? ops.convert(exactFill(fillValue, v, d), d, false) : v;
  return broadcastTo(conv, s, "full");
}
/** The fill value as an array: a JS integer going to an integer dtype is stored in it directly (its literal dtype could round it). */
function exactFill(raw: unknown, v: Array, d: DType): Array {
  return isInteger(d) && (typeof raw === "number" || typeof raw === "bigint") ? array(raw, d) : v;
}
interface LikeOpts {
  dtype: DType | null;
  shape: ShapeArg | null;
  device: unknown;
}
function likeImpl(fn: string, a: ArrayInput, v: ArrayInput, o: Partial<LikeOpts>): Array {
  const x = asArrayArg(fn, a);
  const d = userDType(fn, o.dtype);
  const s = o.shape === undefined || o.shape === null ? x.shape : shapeOf(fn, o.shape);
  checkIntLiteral(v, d ?? x.dtype, o.dtype ?? x.dtype, fn);
  const fill = ops.convert(exactFill(v, asArrayArg(fn, v), d ?? x.dtype), d ?? x.dtype, d ? false : x.weakType);
  return broadcastTo(fill, s, fn);
}
export function zerosLike(
  a: ArrayInput,
  ...args: Args<[dtype: DType | null, shape: ShapeArg | null], Partial<LikeOpts>>
): Array {
  return likeImpl("zeros_like", a, 0, parseArgs<LikeOpts>("zeros_like", args, ["dtype", "shape"], ["device"]));
}
export function onesLike(
  a: ArrayInput,
  ...args: Args<[dtype: DType | null, shape: ShapeArg | null], Partial<LikeOpts>>
): Array {
  return likeImpl("ones_like", a, 1, parseArgs<LikeOpts>("ones_like", args, ["dtype", "shape"], ["device"]));
}
export function emptyLike(
  a: ArrayInput,
  ...args: Args<[dtype: DType | null, shape: ShapeArg | null], Partial<LikeOpts>>
): Array {
  return likeImpl("empty_like", a, 0, parseArgs<LikeOpts>("empty_like", args, ["dtype", "shape"], ["device"]));
}
export function fullLike(
  a: ArrayInput,
  fillValue: ArrayInput,
  ...args: Args<[dtype: DType | null, shape: ShapeArg | null], Partial<LikeOpts>>
): Array {
  return likeImpl("full_like", a, fillValue, parseArgs<LikeOpts>("full_like", args, ["dtype", "shape"], ["device"]));
}

/** A concrete JS scalar from a number or 0-d concrete Array (arange/linspace bounds must be static). */
function scalarArg(fn: string, name: string, v: unknown): number {
  if (v instanceof Array) {
    if (!(v instanceof ArrayImpl))
      throw new TypeError(
        `${fn}: ${name} must be concrete (a JS number or a concrete array), got a traced ${v.aval.str()}`,
      );
    if (v.ndim !== 0) throw new Error(`${fn}: arguments must be scalars; got ${name} of shape ${shapeStr(v.shape)}`);
    return Number(v.item());
  }
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v !== "number" || Number.isNaN(v))
    throw new TypeError(`${fn}: ${name} must be a number, got ${JSON.stringify(v)}`);
  return v;
}
const dtypeOfScalar = (v: unknown): { dtype: DType; weakType: boolean } =>
  v instanceof Array
    ? { dtype: v.dtype, weakType: v.weakType }
    : {
        dtype: typeof v === "number" ? numberLiteralDType(v) : defaultIntDType(),
        weakType: true,
      };

interface ArangeOpts {
  stop: number | null;
  step: number | null;
  dtype: DType | null;
  device: unknown;
}
/** arange(stop) / arange(start, stop, step, dtype): start + step * iota; dtype from the arguments (ints -> int32). */
export function arange(
  start: number | Array,
  ...args: Args<[stop: number | Array | null, step: number | Array | null, dtype: DType | null], Partial<ArangeOpts>>
): Array {
  const o = parseArgs<ArangeOpts>("arange", args, ["stop", "step", "dtype"], ["device"]);
  const given = [start, o.stop, o.step].filter((v) => v !== undefined && v !== null);
  const d = userDType("arange", o.dtype) ?? promoteTypes(...given.map(dtypeOfScalar)).dtype;
  let lo = scalarArg("arange", o.stop == null && o.step == null ? "stop" : "start", start);
  let hi: number;
  if (o.stop === undefined || o.stop === null) {
    hi = lo;
    lo = 0;
  } else hi = scalarArg("arange", "stop", o.stop);
  const step = o.step === undefined || o.step === null ? 1 : scalarArg("arange", "step", o.step);
  if (step === 0) throw new Error("arange: step must not be zero");
  const size = Math.max(0, Math.ceil((hi - lo) / step));
  const work: DType = isFloat(d) && (d === "float16" || d === "bfloat16") ? "float32" : d;
  const io = ops.iota(work, [size], 0);
  const r = ops.add(ops.full([], lo, work), ops.mul(ops.full([], step, work), io));
  return ops.convert(r, d, false);
}

interface LinOpts {
  num: number;
  endpoint: boolean;
  retstep: boolean;
  dtype: DType | null;
  axis: number;
  device: unknown;
}
function linspaceImpl(fn: string, start: ArrayInput, stop: ArrayInput, o: Partial<LinOpts>): [Array, Array] {
  const num = concreteInt(fn, "num", o.num ?? 50);
  if (num < 0) throw new Error(`${fn}: number of samples, ${num}, must be non-negative`);
  const endpoint = o.endpoint ?? true;
  const [s0, e0] = promoteDtypes(fn, [start, stop]);
  const inexact = (t: DType): DType => (isFloat(t) ? t : defaultFloatDType());
  const d = userDType(fn, o.dtype) ?? inexact(s0.dtype);
  const cd = inexact(d);
  const bounds = broadcastShapes(fn, s0.shape, e0.shape);
  const s = broadcastTo(ops.convert(s0, cd, false), bounds, fn),
    e = broadcastTo(ops.convert(e0, cd, false), bounds, fn);
  const axis = axisOf(fn, o.axis ?? 0, [...bounds, 0]);
  const outShape = [...bounds];
  outShape.splice(axis, 0, num);
  const bshape = [...bounds];
  bshape.splice(axis, 0, 1);
  const div = endpoint ? num - 1 : num;
  let out: Array, delta: Array;
  if (num > 1) {
    delta = ops.div(ops.sub(e, s), ops.full([], div, cd));
    const iotaShape = bshape.map((_, i) => (i === axis ? div : 1));
    const step = ops.div(ops.reshape(ops.iota(cd, [div], 0), iotaShape), ops.full([], div, cd));
    const sb = ops.reshape(s, bshape),
      eb = ops.reshape(e, bshape);
    const tgt = bshape.map((v, i) => (i === axis ? div : v));
    const stepB = broadcastTo(step, tgt, fn);
    out = ops.add(
      ops.mul(broadcastTo(sb, tgt, fn), ops.sub(c(stepB, 1), stepB)),
      ops.mul(broadcastTo(eb, tgt, fn), stepB),
    );
    if (endpoint) out = ops.concatenate([out, eb], axis);
  } else if (num === 1) {
    delta = endpoint ? ops.full(bounds, NaN, cd) : ops.sub(e, s);
    out = ops.reshape(s, bshape);
  } else {
    delta = ops.full(bounds, NaN, cd);
    out = ops.full(outShape, 0, cd);
  }
  if (isInteger(d)) out = ops.floor(out);
  return [ops.convert(out, d, false), delta];
}
/** linspace(start, stop, num=50, endpoint=true, retstep=false, dtype, axis=0); retstep returns [samples, step]. */
export function linspace(
  start: ArrayInput,
  stop: ArrayInput,
  ...args: Args<[num: number, endpoint: boolean, retstep: boolean, dtype: DType | null, axis: number], Partial<LinOpts>>
): Array | [Array, Array] {
  const o = parseArgs<LinOpts>("linspace", args, ["num", "endpoint", "retstep", "dtype", "axis"], ["device"]);
  const [out, delta] = linspaceImpl("linspace", start, stop, o);
  return o.retstep ? [out, delta] : out;
}
interface LogOpts {
  num: number;
  endpoint: boolean;
  base: number;
  dtype: DType | null;
  axis: number;
}
/** logspace: base ** linspace(start, stop). */
export function logspace(
  start: ArrayInput,
  stop: ArrayInput,
  ...args: Args<[num: number, endpoint: boolean, base: number, dtype: DType | null, axis: number], Partial<LogOpts>>
): Array {
  const o = parseArgs<LogOpts>("logspace", args, ["num", "endpoint", "base", "dtype", "axis"]);
  const [s0, e0] = promoteDtypes("logspace", [start, stop]);
  const d = userDType("logspace", o.dtype) ?? (isFloat(s0.dtype) ? s0.dtype : defaultFloatDType());
  const cd = isFloat(d) ? d : defaultFloatDType();
  const [lin] = linspaceImpl("logspace", s0, e0, { num: o.num, endpoint: o.endpoint, dtype: cd, axis: o.axis });
  const r = power(ops.convert(asArrayArg("logspace", o.base ?? 10.0), cd, false), lin);
  return castSpaced(r, d);
}
/** geomspace: geometric progression from start to stop (signs must agree), endpoints exact. */
export function geomspace(
  start: ArrayInput,
  stop: ArrayInput,
  ...args: Args<[num: number, endpoint: boolean, dtype: DType | null, axis: number], Partial<LogOpts>>
): Array {
  const o = parseArgs<LogOpts>("geomspace", args, ["num", "endpoint", "dtype", "axis"]);
  const [s0, e0] = promoteDtypes("geomspace", [start, stop]);
  const d = userDType("geomspace", o.dtype) ?? (isFloat(s0.dtype) ? s0.dtype : defaultFloatDType());
  const cd = isFloat(d) ? d : defaultFloatDType();
  const s = ops.convert(s0, cd, false),
    e = ops.convert(e0, cd, false);
  const sg = sign(s);
  const [lin] = linspaceImpl("geomspace", log10(ops.div(s, sg)), log10(ops.div(e, sg)), {
    num: o.num,
    endpoint: o.endpoint,
    dtype: cd,
    axis: 0,
  });
  let r = ops.mul(broadcastTo(sg, lin.shape.slice(1), "geomspace"), power(ops.full([], 10, cd), lin));
  const n = r.shape[0];
  const bounds = r.shape.slice(1);
  // pin the endpoints to the exact inputs, as NumPy does
  if (n > 0) {
    const parts = [broadcastTo(ops.reshape(s, [1, ...s.shape]), [1, ...bounds], "geomspace")];
    const endpoint = o.endpoint ?? true;
    if (n > 2 || (n === 2 && !endpoint)) parts.push(ops.sliceInDim(r, 1, endpoint ? n - 1 : n, 1, 0));
    if (endpoint && n > 1) parts.push(broadcastTo(ops.reshape(e, [1, ...e.shape]), [1, ...bounds], "geomspace"));
    r = ops.concatenate(parts, 0);
  }
  const axis = axisOf("geomspace", o.axis ?? 0, r.shape);
  r = ops.moveaxis(r, 0, axis);
  return castSpaced(r, d);
}
/**
 * The float progression cast to d. For integer d, JAX converts (truncating toward zero); values within 1e-5 relative
 * of an integer are snapped to it first, so exact powers (geomspace(1, 256, 9) = 1, 2, 4, ...) do not lose one to
 * float32 rounding of 10^x (NumPy computes them in float64 and gets the exact integers).
 */
function castSpaced(r: Array, d: DType): Array {
  if (!isInteger(d)) return ops.convert(r, d, false);
  const near = ops.round(r, 0);
  const snap = ops.le(
    ops.abs(ops.sub(r, near)),
    ops.mul(ops.max(ops.abs(near), ops.fullLike(r, 1)), ops.fullLike(r, 1e-5)),
  );
  // truncation toward zero: floor for positives, ceil for negatives
  const trunc = ops.select(ops.lt(r, ops.fullLike(r, 0)), ops.ceil(r), ops.floor(r));
  return ops.convert(ops.select(snap, near, trunc), d, false);
}

// ---------------------------------------------------------------- matrices
/** [rows, cols] index grids of shape (n, m) as int32 arrays. */
const grid = (n: number, m: number): [Array, Array] => [ops.iota("int32", [n, m], 0), ops.iota("int32", [n, m], 1)];
interface EyeOpts {
  M: number | null;
  k: number;
  dtype: DType | null;
  device: unknown;
}
/** eye(N, M=N, k=0, dtype): ones on the k-th diagonal. */
export function eye(
  N: number,
  ...args: Args<[M: number | null, k: number, dtype: DType | null], Partial<EyeOpts>>
): Array {
  const o = parseArgs<EyeOpts>("eye", args, ["M", "k", "dtype"], ["device"]);
  const n = concreteInt("eye", "N", N, 0),
    m = o.M === undefined || o.M === null ? n : concreteInt("eye", "M", o.M, 0);
  const k = concreteInt("eye", "k", o.k ?? 0);
  const [i, j] = grid(n, m);
  return ops.convert(ops.eq(ops.add(i, c(i, k)), j), userDType("eye", o.dtype) ?? defaultFloatDType());
}
export function identity(n: number, ...args: Args<[dtype: DType | null], { dtype?: DType | null }>): Array {
  const o = parseArgs<{ dtype: DType }>("identity", args, ["dtype"]);
  return eye(n, { dtype: o.dtype });
}
/** tri(N, M=N, k=0, dtype): ones at and below the k-th diagonal. */
export function tri(
  N: number,
  ...args: Args<[M: number | null, k: number, dtype: DType | null], Partial<EyeOpts>>
): Array {
  const o = parseArgs<EyeOpts>("tri", args, ["M", "k", "dtype"]);
  const n = concreteInt("tri", "N", N, 0),
    m = o.M === undefined || o.M === null ? n : concreteInt("tri", "M", o.M, 0);
  const [i, j] = grid(n, m);
  return ops.convert(
    ops.le(j, ops.add(i, c(i, concreteInt("tri", "k", o.k ?? 0)))),
    userDType("tri", o.dtype) ?? defaultFloatDType(),
  );
}
function triMask(fn: string, m: ArrayInput, k: unknown, lower: boolean): Array {
  const x = asArrayArg(fn, m);
  if (x.ndim < 2) throw new Error(`${fn}: input array must be at least 2-dimensional, got shape ${shapeStr(x.shape)}`);
  const kk = concreteInt(fn, "k", k ?? 0);
  const [i, j] = grid(x.shape[x.ndim - 2], x.shape[x.ndim - 1]);
  const keep = lower ? ops.le(j, ops.add(i, c(i, kk))) : ops.ge(j, ops.add(i, c(i, kk)));
  return sel(keep, x, ops.scalarLike(x, 0));
}
export function tril(m: ArrayInput, ...args: Args<[k: number], { k?: number }>): Array {
  return triMask("tril", m, parseArgs<{ k: number }>("tril", args, ["k"]).k, true);
}
export function triu(m: ArrayInput, ...args: Args<[k: number], { k?: number }>): Array {
  return triMask("triu", m, parseArgs<{ k: number }>("triu", args, ["k"]).k, false);
}

interface DiagonalOpts {
  offset: number;
  axis1: number;
  axis2: number;
}
/** diagonal(a, offset, axis1, axis2): the diagonal becomes the last axis of the result. */
export function diagonal(
  a: ArrayInput,
  ...args: Args<[offset: number, axis1: number, axis2: number], Partial<DiagonalOpts>>
): Array {
  const o = parseArgs<DiagonalOpts>("diagonal", args, ["offset", "axis1", "axis2"]);
  return diagonalImpl("diagonal", asArrayArg("diagonal", a), o);
}
function diagonalImpl(fn: string, x: Array, o: Partial<DiagonalOpts>): Array {
  if (x.ndim < 2)
    throw new Error(`${fn}: requires an array of at least two dimensions, got shape ${shapeStr(x.shape)}`);
  const a1 = axisOf(fn, o.axis1 ?? 0, x.shape),
    a2 = axisOf(fn, o.axis2 ?? 1, x.shape);
  if (a1 === a2)
    throw new Error(`${fn}: axis1 and axis2 cannot be the same (both ${a1}) for shape ${shapeStr(x.shape)}`);
  const off = concreteInt(fn, "offset", o.offset ?? 0);
  const n1 = x.shape[a1],
    n2 = x.shape[a2];
  const len = Math.max(0, off >= 0 ? Math.min(n1, n2 - off) : Math.min(n1 + off, n2));
  const idx = new Int32Array(len * 2);
  for (let t = 0; t < len; t++) {
    idx[2 * t] = off >= 0 ? t : t - off;
    idx[2 * t + 1] = off >= 0 ? t + off : t;
  }
  const g = ops.gather(x, ArrayImpl.of([len, 2], "int32", idx), [a1, a2], "clip");
  return ops.moveaxis(g, 0, g.ndim - 1);
}
/** diag(v, k): a 1-D v builds a square matrix with v on diagonal k; a 2-D v returns its k-th diagonal. */
export function diag(v: ArrayInput, ...args: Args<[k: number], { k?: number }>): Array {
  const k = concreteInt("diag", "k", parseArgs<{ k: number }>("diag", args, ["k"]).k ?? 0);
  const x = asArrayArg("diag", v);
  if (x.ndim === 2) return diagonalImpl("diag", x, { offset: k });
  if (x.ndim !== 1) throw new Error(`diag: input must be 1- or 2-dimensional, got shape ${shapeStr(x.shape)}`);
  const n = x.shape[0] + Math.abs(k);
  const padded = ops.pad(x, ops.scalarLike(x, 0), [[0, Math.abs(k), 0]]);
  const [i, j] = grid(n, n);
  const vals = k >= 0 ? ops.broadcastInDim(padded, [n, n], [0]) : ops.broadcastInDim(padded, [n, n], [1]);
  return ops.select(ops.eq(ops.sub(j, i), c(i, k)), vals, ops.full([n, n], 0, x.dtype, x.weakType));
}
export function diagflat(v: ArrayInput, ...args: Args<[k: number], { k?: number }>): Array {
  const x = asArrayArg("diagflat", v);
  return diag(ops.reshape(x, [x.size]), ...args);
}
interface TraceOpts extends DiagonalOpts {
  dtype: DType | null;
  out: null;
}
/** trace(a, offset, axis1, axis2, dtype): sum of the diagonal (integers sum in the default int). */
export function trace(
  a: ArrayInput,
  ...args: Args<[offset: number, axis1: number, axis2: number, dtype: DType | null, out: null], Partial<TraceOpts>>
): Array {
  const o = parseArgs<TraceOpts>("trace", args, ["offset", "axis1", "axis2", "dtype", "out"]);
  const d = diagonalImpl("trace", asArrayArg("trace", a), o);
  return sum(d, { axis: -1, dtype: o.dtype ?? null });
}

// ---------------------------------------------------------------- grids
interface MeshOpts {
  copy: boolean;
  sparse: boolean;
  indexing: "xy" | "ij";
}
/** meshgrid(...xi, { indexing = "xy", sparse }): coordinate arrays from 1-D vectors. */
export function meshgrid(...args: (ArrayInput | Partial<MeshOpts>)[]): Array[] {
  const hasOpts =
    args.length > 0 &&
    typeof args[args.length - 1] === "object" &&
    !(args[args.length - 1] instanceof Array) &&
    !globalThis.Array.isArray(args[args.length - 1]);
  const o = parseArgs<MeshOpts>("meshgrid", hasOpts ? [args[args.length - 1]] : [], [], ["copy", "sparse", "indexing"]);
  const xs = (hasOpts ? args.slice(0, -1) : args).map((x) => asArrayArg("meshgrid", x as ArrayInput));
  for (const x of xs)
    if (x.ndim !== 1) throw new Error(`meshgrid: arguments must be 1-D, got shape ${shapeStr(x.shape)}`);
  const indexing = o.indexing ?? "xy";
  if (indexing !== "xy" && indexing !== "ij")
    throw new Error(`meshgrid: indexing must be "xy" or "ij", got ${JSON.stringify(indexing)}`);
  const dimOf = (i: number): number => (indexing === "xy" && xs.length >= 2 && i < 2 ? 1 - i : i);
  const shape = xs.map((_, i) => xs[dimOf(i)].shape[0]);
  return xs.map((x, i) => {
    const d = dimOf(i);
    if (o.sparse)
      return ops.reshape(
        x,
        shape.map((n, k) => (k === d ? n : 1)),
      );
    return ops.broadcastInDim(x, shape, [d]);
  });
}
/** indices(dimensions, dtype = int32, sparse): grid of index arrays stacked on a leading axis. */
export function indices(
  dimensions: readonly number[],
  ...args: Args<[dtype: DType | null, sparse: boolean], { dtype?: DType | null; sparse?: boolean }>
): Array | Array[] {
  const o = parseArgs<{ dtype: DType; sparse: boolean }>("indices", args, ["dtype", "sparse"]);
  const dims = shapeOf("indices", dimensions);
  const d = userDType("indices", o.dtype) ?? defaultIntDType();
  const outs = dims.map((_, i) =>
    o.sparse
      ? ops.reshape(
          ops.iota(d, [dims[i]], 0),
          dims.map((n, k) => (k === i ? n : 1)),
        )
      : ops.iota(d, dims, i),
  );
  if (o.sparse) return outs;
  if (dims.length === 0) return ops.full([0], 0, d);
  return ops.concatenate(
    outs.map((x) => ops.reshape(x, [1, ...dims])),
    0,
  );
}
/** fromfunction(fn, shape, { dtype = float32 }): fn sees scalar indices, vmapped over every dimension as in JAX. */
export function fromfunction(
  fn: (...idx: Array[]) => Array,
  shape: readonly number[],
  opts: { dtype?: DType | null } = {},
): Array {
  const o = parseArgs<{ dtype: DType }>("fromfunction", [opts], [], ["dtype"]);
  const d = userDType("fromfunction", o.dtype) ?? defaultFloatDType();
  const dims = shapeOf("fromfunction", shape);
  if (dims.length === 0) return fn();
  // the innermost vmap maps the last index, the outermost the first: out[i, j, ...] = fn(i, j, ...)
  let g = fn as (...idx: Array[]) => Array;
  for (let i = dims.length - 1; i >= 0; i--)
    g = vmap(g, { inAxes: dims.map((_, j) => (j === i ? 0 : null)) }) as (...idx: Array[]) => Array;
  return g(...dims.map((n) => ops.iota(d, [n], 0)));
}
/** copy(a): a new array with the same contents. */
export function copy(a: ArrayInput, opts?: { order?: string | null }): Array {
  checkArity("copy", arguments, 2, "copy(a, { order })");
  checkOptions("copy", opts, ["order"], "copy(a, { order })");
  return ops.copy(asArrayArg("copy", a));
}
