/** @file jnp padding and resizing: pad (constant/edge/reflect/symmetric (even/odd)/wrap/linear_ramp/maximum/minimum/mean/median/empty/callable), resize, append, insert, delete, trimZeros. */
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { isInteger } from "../core/dtype.js";
import { prod } from "../core/shape.js";
import { ConcretizationTypeError } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import {
  JSArray,
  arr,
  bcast,
  concreteOf,
  normalizeAxis,
  numbersOf,
  parseArgs,
  promoteAll,
  range,
  requireConcrete,
  shapeStr,
  staticInts,
  takeStatic,
} from "./struct-util.js";
import { splitOpts } from "./core.js";
import { applyAlongAxis } from "./functional.js";
import { median } from "./quantile.js";
import { tile } from "./shape-ops.js";

type AL = ArrayLike | NestedValue;
type PadMode =
  | "constant"
  | "edge"
  | "reflect"
  | "symmetric"
  | "wrap"
  | "linear_ramp"
  | "maximum"
  | "minimum"
  | "mean"
  | "median"
  | "empty";
interface PadOpts {
  padWidth: unknown;
  mode: PadMode;
  constantValues: unknown;
  endValues: unknown;
  reflectType: "even" | "odd";
  statLength: unknown;
}

/** Broadcasts a pad spec (scalar, [v], [b, a], [[b, a]], or one pair per axis) to ndim [before, after] pairs, NumPy-style. */
function pairs(fn: string, v: unknown, ndim: number, what: string): [number, number][] {
  const x = v instanceof Array ? v : arr(fn, v as AL);
  const vals = numbersOf(requireConcrete(fn, x, what));
  const s = x.shape;
  const bad = () =>
    new Error(
      `${fn}: ${what} of shape ${shapeStr(s)} cannot be broadcast to (${ndim}, 2) (one (before, after) pair per axis)`,
    );
  if (s.length > 2) throw bad();
  const s0 = s.length === 2 ? s[0] : 1,
    s1 = s.length === 0 ? 1 : s[s.length - 1];
  if ((s0 !== 1 && s0 !== ndim) || (s1 !== 1 && s1 !== 2)) throw bad();
  return range(ndim).map(
    (i) => [0, 1].map((j) => vals[(s0 === 1 ? 0 : i) * s1 + (s1 === 1 ? 0 : j)]) as [number, number],
  );
}
/** Source index along an axis of size n for padded position p (may be outside [0, n)). */
function srcIndex(mode: PadMode, p: number, n: number): number {
  const mod = (a: number, m: number) => ((a % m) + m) % m;
  switch (mode) {
    case "edge":
      return Math.min(Math.max(p, 0), n - 1);
    case "wrap":
      return mod(p, n);
    case "reflect": {
      if (n === 1) return 0;
      const q = mod(p, 2 * (n - 1));
      return q < n ? q : 2 * (n - 1) - q;
    }
    default: {
      const q = mod(p, 2 * n);
      return q < n ? q : 2 * n - 1 - q;
    } // symmetric
  }
}
const sliceAxis = (x: Array, lo: number, hi: number, ax: number) => ops.sliceInDim(x, lo, hi, 1, ax);
function fullAt(x: Array, ax: number, w: number, v: Array): Array {
  const s = [...x.shape];
  s[ax] = w;
  return bcast(v, s);
}

/**
 * A callable pad mode, as JAX's: called with each 1-D slice along each axis in turn (already padded, the new
 * entries zero), that axis's (before, after) widths, the axis and pad's other options; it returns the slice.
 */
export type PadFunction = (
  vector: Array,
  iaxisPadWidth: [number, number],
  iaxis: number,
  kwargs: Record<string, unknown>,
) => Array;

/**
 * jnp.pad(array, padWidth, mode="constant", {constantValues, endValues, reflectType, statLength}); mode may be a
 * PadFunction, which then gets every other option as its kwargs.
 */
export function pad(array: AL, ...args: unknown[]): Array {
  const [pos, raw] = splitOpts<Record<string, unknown>>(args);
  const fnMode = pos[1] ?? raw.mode;
  if (typeof fnMode === "function") {
    if (pos.length > 2)
      throw new TypeError(`pad: takes at most 2 positional arguments (padWidth, mode), got ${pos.length}`);
    const { padWidth, mode: _mode, ...kwargs } = raw;
    if (pos[0] !== undefined && padWidth !== undefined)
      throw new TypeError('pad: got multiple values for argument "padWidth"');
    return padWithFunction(arr("pad", array), pos[0] ?? padWidth, fnMode as PadFunction, kwargs);
  }
  const o = parseArgs<PadOpts>(
    "pad",
    args,
    ["padWidth", "mode"],
    ["constantValues", "endValues", "reflectType", "statLength"],
  );
  let x = arr("pad", array);
  const nd = x.ndim;
  if (o.padWidth === undefined) throw new TypeError("pad: missing the padWidth argument");
  const pw = pairs("pad", o.padWidth, nd, "padWidth");
  for (const [b, a] of pw)
    if (!Number.isInteger(b) || !Number.isInteger(a) || b < 0 || a < 0)
      throw new Error(`pad: padWidth must hold non-negative integers, got ${JSON.stringify(o.padWidth)}`);
  const mode = o.mode ?? "constant";
  const valid = [
    "constant",
    "edge",
    "reflect",
    "symmetric",
    "wrap",
    "linear_ramp",
    "maximum",
    "minimum",
    "mean",
    "median",
    "empty",
  ];
  if (!valid.includes(mode))
    throw new Error(`pad: unimplemented mode ${JSON.stringify(mode)}; expected one of ${valid.join(", ")}`);
  if (nd === 0) return x;
  if (mode === "constant" || mode === "empty") {
    const cv = pairs("pad", o.constantValues ?? 0, nd, "constantValues");
    const c0 = cv[0][0];
    if (cv.every(([b, a]) => b === c0 && a === c0))
      return ops.pad(
        x,
        ops.scalarLike(x, c0),
        pw.map(([b, a]): [number, number, number] => [b, a, 0]),
      );
    for (let ax = 0; ax < nd; ax++) {
      const cfgB = range(nd).map((i): [number, number, number] => [i === ax ? pw[ax][0] : 0, 0, 0]);
      const cfgA = range(nd).map((i): [number, number, number] => [0, i === ax ? pw[ax][1] : 0, 0]);
      x = ops.pad(ops.pad(x, ops.scalarLike(x, cv[ax][0]), cfgB), ops.scalarLike(x, cv[ax][1]), cfgA);
    }
    return x;
  }
  const reflectType = o.reflectType ?? "even";
  if (reflectType !== "even" && reflectType !== "odd")
    throw new Error(`pad: reflectType must be "even" or "odd", got ${JSON.stringify(o.reflectType)}`);
  for (let ax = 0; ax < nd; ax++) {
    const [b, a] = pw[ax],
      n = x.shape[ax];
    if (b === 0 && a === 0) continue;
    if (n === 0)
      throw new Error(
        `pad: can't extend empty axis ${ax} using modes other than 'constant' or 'empty' (shape ${shapeStr(x.shape)})`,
      );
    if ((mode === "reflect" || mode === "symmetric") && reflectType === "odd") {
      x = reflectOdd(x, ax, b, a, mode);
    } else if (mode === "edge" || mode === "reflect" || mode === "symmetric" || mode === "wrap") {
      x = takeStatic(
        x,
        range(b + n + a).map((p) => srcIndex(mode, p - b, n)),
        ax,
      );
    } else if (mode === "linear_ramp") {
      const ev = pairs("pad", o.endValues ?? 0, nd, "endValues")[ax];
      x = ops.concatenate([ramp(x, ax, b, ev[0], true), x, ramp(x, ax, a, ev[1], false)], ax);
    } else {
      const sl =
        o.statLength === undefined || o.statLength === null ? [n, n] : pairs("pad", o.statLength, nd, "statLength")[ax];
      const stat = (lo: number, hi: number) => {
        const r = sliceAxis(x, lo, hi, ax);
        if (mode === "maximum") return ops.reduceMax(r, [ax]);
        if (mode === "minimum") return ops.reduceMin(r, [ax]);
        const f = isInteger(x.dtype) || x.dtype === "bool" ? ops.convert(r, "float32") : r;
        const m =
          mode === "median" ? median(f, { axis: ax }) : ops.div(ops.reduceSum(f, [ax]), ops.scalarLike(f, hi - lo));
        return ops.convert(isInteger(x.dtype) ? ops.round(m, 1) : m, x.dtype);
      };
      const keep = (v: Array) =>
        ops.reshape(
          v,
          x.shape.map((d, i) => (i === ax ? 1 : d)),
        );
      const lo = keep(stat(0, Math.min(Math.max(sl[0], 1), n))),
        hi = keep(stat(n - Math.min(Math.max(sl[1], 1), n), n));
      x = ops.concatenate([fullAt(x, ax, b, lo), x, fullAt(x, ax, a, hi)], ax);
    }
  }
  return x;
}
/**
 * pad with a callable mode (JAX's _pad_func, not NumPy's in-place protocol): zero padding first, then along each
 * axis in turn the function maps every 1-D slice (applyAlongAxis, a vmap) to its new values.
 */
function padWithFunction(x: Array, padWidth: unknown, f: PadFunction, kwargs: Record<string, unknown>): Array {
  if (padWidth === undefined) throw new TypeError("pad: missing the padWidth argument");
  const nd = x.ndim;
  const pw = pairs("pad", padWidth, nd, "padWidth");
  for (const [b, a] of pw)
    if (!Number.isInteger(b) || !Number.isInteger(a) || b < 0 || a < 0)
      throw new Error(`pad: padWidth must hold non-negative integers, got ${JSON.stringify(padWidth)}`);
  let y = ops.pad(
    x,
    ops.scalarLike(x, 0),
    pw.map(([b, a]): [number, number, number] => [b, a, 0]),
  );
  for (let ax = 0; ax < nd; ax++) {
    const want = y.shape[ax];
    y = applyAlongAxis(
      (v: Array) => {
        const r = f(v, pw[ax], ax, kwargs);
        if (!(r instanceof Array) || r.ndim !== 1 || r.shape[0] !== want)
          throw new Error(
            `pad: the mode function must return the padded 1-D slice of length ${want} along axis ${ax}, got ${r instanceof Array ? `shape ${shapeStr(r.shape)}` : String(r)}`,
          );
        return ops.convert(r, y.dtype);
      },
      ax,
      y,
    );
  }
  return y;
}

/**
 * reflect / symmetric padding with reflectType "odd" along ax: each block of at most n - 1 (reflect) or n
 * (symmetric) values is the mirror image of the values next to the current edge, negated about that edge
 * (2 * edge - mirrored), and the new outermost value is the edge of the next block, as NumPy extends long pads
 * block by block (JAX's _pad_symmetric_or_reflect does the same).
 */
function reflectOdd(x: Array, ax: number, before: number, after: number, mode: "reflect" | "symmetric"): Array {
  const n = x.shape[ax];
  const offset = mode === "reflect" && n > 1 ? 1 : 0;
  const block = Math.max(n - offset, 1);
  const two = (v: Array) => ops.mul(ops.scalarLike(v, 2), v);
  let edge = sliceAxis(x, 0, 1, ax);
  for (let left = before; left > 0;) {
    const w = Math.min(left, block);
    left -= w;
    const m = ops.rev(sliceAxis(x, offset, offset + w, ax), [ax]);
    const p = ops.sub(bcast(two(edge), m.shape), m);
    edge = sliceAxis(p, 0, 1, ax);
    x = ops.concatenate([p, x], ax);
  }
  edge = sliceAxis(x, x.shape[ax] - 1, x.shape[ax], ax);
  for (let left = after; left > 0;) {
    const w = Math.min(left, block);
    left -= w;
    const len = x.shape[ax];
    const m = ops.rev(sliceAxis(x, len - offset - w, len - offset, ax), [ax]);
    const p = ops.sub(bcast(two(edge), m.shape), m);
    edge = sliceAxis(p, w - 1, w, ax);
    x = ops.concatenate([x, p], ax);
  }
  return x;
}
/** linear_ramp padding region of width w: from endValue (outermost) towards the edge value (exclusive). */
function ramp(x: Array, ax: number, w: number, endValue: number, before: boolean): Array {
  const n = x.shape[ax];
  const edge = sliceAxis(x, before ? 0 : n - 1, before ? 1 : n, ax);
  const s = [...x.shape];
  s[ax] = w;
  const f = isInteger(x.dtype) ? ops.convert(edge, "float32") : edge;
  // position k from the outside: end + (edge - end) * k / w
  let k = ops.convert(ops.iota("int32", s, ax), f.dtype);
  if (!before) k = ops.sub(ops.scalarLike(k, w - 1), k);
  const e = ops.scalarLike(f, endValue);
  const v = ops.add(e, ops.mul(ops.sub(bcast(f, s), e), ops.div(k, ops.scalarLike(k, Math.max(w, 1)))));
  return ops.convert(isInteger(x.dtype) ? ops.floor(v) : v, x.dtype);
}

/** jnp.resize(a, newShape): repeats the flattened data cyclically to fill the new shape. */
export function resize(a: AL, newShape: number | number[]): Array {
  const x = arr("resize", a);
  const s = typeof newShape === "number" ? [newShape] : staticInts("resize", newShape, "newShape");
  if (s.some((d) => d < 0))
    throw new Error(`resize: all elements of newShape must be non-negative, got ${shapeStr(s)}`);
  const total = prod(s);
  if (x.size === 0) return ops.full(s, 0, x.dtype);
  const flat = ops.reshape(x, [x.size]);
  const t = tile(flat, Math.ceil(total / x.size));
  return ops.reshape(ops.sliceInDim(t, 0, total, 1, 0), s);
}

/** jnp.append(arr, values, axis=null). */
export function append(a: AL, values: AL, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number | null }>("append", args, ["axis"]);
  const x = arr("append", a),
    v = arr("append", values);
  const [px, pv] = promoteAll("append", [x, v]);
  if (axis === undefined || axis === null)
    return ops.concatenate([ops.reshape(px, [px.size]), ops.reshape(pv, [pv.size])], 0);
  if (px.ndim !== pv.ndim)
    throw new Error(
      `append: arr of shape ${shapeStr(px.shape)} and values of shape ${shapeStr(pv.shape)} must have the same number of dimensions`,
    );
  const ax = normalizeAxis("append", axis, px.ndim);
  px.shape.forEach((d, i) => {
    if (i !== ax && pv.shape[i] !== d)
      throw new Error(
        `append: arr of shape ${shapeStr(px.shape)} and values of shape ${shapeStr(pv.shape)} must match except along axis ${ax}`,
      );
  });
  return ops.concatenate([px, pv], ax);
}
/** Static positions along an axis of size n from an int, list, slice-like {start, stop, step} or bool mask. */
function staticPositions(fn: string, obj: unknown, n: number, allowBool: boolean): { idx: number[]; scalar: boolean } {
  if (obj !== null && typeof obj === "object" && !(obj instanceof Array) && !JSArray.isArray(obj)) {
    const s = obj as { start?: number | null; stop?: number | null; step?: number | null };
    const step = s.step ?? 1;
    const [lo, hi] = sliceBounds(s.start ?? null, s.stop ?? null, step, n);
    const out: number[] = [];
    for (let i = lo; step > 0 ? i < hi : i > hi; i += step) out.push(i);
    return { idx: out, scalar: false };
  }
  const a = obj instanceof Array ? obj : arr(fn, obj as AL);
  const c = requireConcrete(fn, a, "obj");
  if (a.dtype === "bool") {
    if (!allowBool) throw new TypeError(`${fn}: boolean obj is not supported`);
    if (a.ndim !== 1 || a.shape[0] !== n)
      throw new Error(
        `${fn}: boolean array argument obj must be one dimensional and match the axis length of ${n}, got shape ${shapeStr(a.shape)}`,
      );
    return { idx: numbersOf(c).flatMap((v, i) => (v ? [i] : [])), scalar: false };
  }
  if (a.ndim > 1)
    throw new Error(
      `${fn}: index array argument obj must be one dimensional or scalar, got shape ${shapeStr(a.shape)}`,
    );
  if (a.size > 0 && !isInteger(a.dtype)) throw new TypeError(`${fn}: obj must be integers, got ${a.aval.str()}`);
  return { idx: numbersOf(c), scalar: a.ndim === 0 };
}
/** Python slice.indices(n) for a step of either sign: [start, stop] clamped. */
export function sliceBounds(start: number | null, stop: number | null, step: number, n: number): [number, number] {
  if (step === 0) throw new Error("slice step cannot be zero");
  const norm = (v: number, lo: number, hi: number) => (v < 0 ? Math.max(v + n, lo) : Math.min(v, hi));
  if (step > 0) return [start === null ? 0 : norm(start, 0, n), stop === null ? n : norm(stop, 0, n)];
  return [start === null ? n - 1 : norm(start, -1, n - 1), stop === null ? -1 : norm(stop, -1, n - 1)];
}

/** jnp.insert(arr, obj, values, axis=null) with a static obj (int, list or slice). */
export function insert(a: AL, obj: unknown, values: AL, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number | null }>("insert", args, ["axis"]);
  let x = arr("insert", a);
  if (axis === undefined || axis === null) x = ops.reshape(x, [x.size]);
  const ax = normalizeAxis("insert", axis ?? 0, x.ndim);
  const n = x.shape[ax];
  let v = ops.convert(arr("insert", values), x.dtype);
  if (obj instanceof Array && !concreteOf(obj)) return insertTraced(x, ax, obj, v);
  const { idx, scalar } = staticPositions("insert", obj, n, false);
  if (idx.length === 1) {
    let i = idx[0];
    if (i < -n || i > n) throw new RangeError(`insert: index ${i} is out of bounds for axis ${ax} with size ${n}`);
    if (i < 0) i += n;
    if (v.ndim < x.ndim) v = ops.reshape(v, [...new JSArray<number>(x.ndim - v.ndim).fill(1), ...v.shape]);
    if (scalar) v = ops.moveaxis(v, 0, ax);
    const s = [...x.shape];
    s[ax] = v.shape[ax];
    v = bcast(v, s);
    return ops.concatenate([sliceAxis(x, 0, i, ax), v, sliceAxis(x, i, n, ax)], ax);
  }
  const k = idx.length;
  const norm = idx.map((i) => {
    if (i < -n || i > n) throw new RangeError(`insert: index ${i} is out of bounds for axis ${ax} with size ${n}`);
    return i < 0 ? i + n : i;
  });
  const s = [...x.shape];
  s[ax] = k;
  v = bcast(v, s);
  // stable order of the insertion points; the j-th smallest moves right by j
  const order = range(k).sort((p, q) => norm[p] - norm[q] || p - q);
  const newPos = new JSArray<number>(k);
  order.forEach((p, j) => {
    newPos[p] = norm[p] + j;
  });
  const src = new JSArray<number>(n + k).fill(-1);
  newPos.forEach((p, i) => {
    src[p] = n + i;
  });
  let old = 0;
  for (let p = 0; p < n + k; p++) if (src[p] === -1) src[p] = old++;
  return takeStatic(ops.concatenate([x, v], ax), src, ax);
}

/** Pairwise comparison matrix [rows, cols] of a [rows] and b [cols] by `cmp`. */
function outer(a: Array, b: Array, cmp: (p: Array, q: Array) => Array): Array {
  const shape = [a.shape[0], b.shape[0]];
  return cmp(ops.broadcastInDim(a, shape, [0]), ops.broadcastInDim(b, shape, [1]));
}
const countTrue = (m: Array, axis: number) => ops.reduceSum(ops.convert(m, "int32"), [axis]);
/** x gathered along ax at traced int32 positions (shape [m]). */
function gatherAlong(x: Array, pos: Array, ax: number): Array {
  return ops.moveaxis(ops.gather(x, ops.reshape(pos, [pos.shape[0], 1]), [ax], "clip"), 0, ax);
}

/**
 * insert with a traced integer obj (JAX supports it; the idea of its construction, not its code): negative
 * positions count from the end and the rest are clipped to [0, n] (no error under jit); insert j lands at
 * obj[j] + (its rank in a stable order of obj); every output position then gathers either its inserted value or
 * the next original entry from concatenate([x, values]).
 */
function insertTraced(x: Array, ax: number, obj: Array, values: Array): Array {
  if (obj.ndim > 1)
    throw new Error(
      `insert: obj must be a slice, a one-dimensional array or a scalar, got shape ${shapeStr(obj.shape)}`,
    );
  if (!isInteger(obj.dtype)) throw new TypeError(`insert: obj must be integers, got ${obj.aval.str()}`);
  const n = x.shape[ax];
  let v = values;
  if (v.ndim < x.ndim) v = ops.reshape(v, [...new JSArray<number>(x.ndim - v.ndim).fill(1), ...v.shape]);
  let idx = ops.convert(obj, "int32");
  if (obj.size === 1) {
    if (obj.ndim === 0) v = ops.moveaxis(v, 0, ax);
    idx = bcast(ops.reshape(idx, []), [v.shape[ax]]);
  }
  const k = idx.shape[0];
  const s = [...x.shape];
  s[ax] = k;
  v = bcast(v, s);
  idx = ops.select(ops.lt(idx, ops.scalarLike(idx, 0)), ops.add(idx, ops.scalarLike(idx, n)), idx);
  idx = ops.clamp(0, idx, n);
  const iota = ops.iota("int32", [k], 0);
  // stable rank: earlier smaller, or equal and earlier in obj
  const ahead = ops.or(
    outer(idx, idx, (p, q) => ops.gt(p, q)),
    ops.and(
      outer(idx, idx, (p, q) => ops.eq(p, q)),
      outer(iota, iota, (p, q) => ops.gt(p, q)),
    ),
  );
  const newPos = ops.add(idx, countTrue(ahead, 1));
  const p = ops.iota("int32", [n + k], 0);
  const hit = outer(p, newPos, (a, b) => ops.eq(a, b));
  const which = ops.reduceSum(ops.select(hit, ops.iota("int32", hit.shape, 1), ops.fullLike(hit, 0, "int32")), [1]);
  const before = countTrue(
    outer(p, newPos, (a, b) => ops.gt(a, b)),
    1,
  );
  const src = ops.select(ops.reduceOr(hit, [1]), ops.add(which, ops.scalarLike(which, n)), ops.sub(p, before));
  return gatherAlong(ops.concatenate([x, v], ax), src, ax);
}

/**
 * delete with traced unique integer indices (JAX's assume_unique_indices path): out-of-range indices are clipped
 * as JAX does; output i takes original position i + #{j : d_j - (number of d below d_j) <= i}.
 */
function deleteTraced(x: Array, ax: number, obj: Array): Array {
  const n = x.shape[ax];
  let d = ops.reshape(ops.convert(obj, "int32"), [obj.size]);
  d = ops.clamp(0, ops.select(ops.lt(d, ops.scalarLike(d, 0)), ops.add(d, ops.scalarLike(d, n)), d), n);
  const k = d.shape[0];
  if (k > n)
    throw new Error(
      `delete: ${k} unique indices cannot be deleted from axis ${ax} of size ${n} (shape ${shapeStr(x.shape)})`,
    );
  const shifted = ops.sub(
    d,
    countTrue(
      outer(d, d, (p, q) => ops.gt(p, q)),
      1,
    ),
  );
  const i = ops.iota("int32", [n - k], 0);
  const pos = ops.add(
    i,
    countTrue(
      outer(i, shifted, (p, q) => ops.ge(p, q)),
      1,
    ),
  );
  return gatherAlong(x, pos, ax);
}

/** jnp.delete(arr, obj, axis=null) with a static obj (int, list, slice or bool mask). */
export function deleteItems(a: AL, obj: unknown, ...args: unknown[]): Array {
  const { axis, assumeUniqueIndices } = parseArgs<{ axis: number | null; assumeUniqueIndices: boolean }>(
    "delete",
    args,
    ["axis"],
    ["assumeUniqueIndices"],
  );
  let x = arr("delete", a);
  if (axis === undefined || axis === null) x = ops.reshape(x, [x.size]);
  const ax = normalizeAxis("delete", axis ?? 0, x.ndim);
  const n = x.shape[ax];
  if (obj instanceof Array && !concreteOf(obj)) {
    if (assumeUniqueIndices && isInteger(obj.dtype)) return deleteTraced(x, ax, obj);
    throw new ConcretizationTypeError(
      `delete: a traced obj ${obj.aval.str()} needs { assumeUniqueIndices: true } and integer indices (as JAX); otherwise obj must be concrete (a JS list, slice or a concrete array)`,
    );
  }
  const isBoolMask =
    obj instanceof Array ? obj.dtype === "bool" : JSArray.isArray(obj) && obj.length > 0 && typeof obj[0] === "boolean";
  const { idx } = staticPositions("delete", obj, n, true);
  const drop = new Set(
    idx.map((i) => {
      if (!isBoolMask && (i < -n || i >= n))
        throw new RangeError(`delete: index ${i} is out of bounds for axis ${ax} with size ${n}`);
      return i < 0 ? i + n : i;
    }),
  );
  return takeStatic(
    x,
    range(n).filter((i) => !drop.has(i)),
    ax,
  );
}

/**
 * jnp.trimZeros(filt, trim="fb", axis=null): strips leading ("f") and/or trailing ("b") zeros of a concrete array
 * along each of the given axes (all when null; as JAX and NumPy 2.2), a position counting as zero when the whole
 * slice through it is zero. The result's shape depends on the values, so filt must be concrete (JAX's rule).
 */
export function trimZeros(filt: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ trim: string; axis: number | readonly number[] | null }>("trimZeros", args, ["trim", "axis"]);
  const trim = o.trim ?? "fb";
  if (typeof trim !== "string")
    throw new TypeError(`trimZeros: trim must be a string of "f" and/or "b", got ${String(trim)}`);
  const x = arr("trimZeros", filt);
  const v = numbersOf(requireConcrete("trimZeros", x, "the input", "trimZeros's result shape depends on the values"));
  const axes =
    o.axis === undefined || o.axis === null
      ? range(x.ndim)
      : (typeof o.axis === "number" ? [o.axis] : [...o.axis]).map((ax) => normalizeAxis("trimZeros", ax, x.ndim));
  const front = trim.toLowerCase().includes("f"),
    back = trim.toLowerCase().includes("b");
  if (!front && !back) return x;
  let r = x;
  const strides = x.shape.map((_, i) => prod(x.shape.slice(i + 1)));
  for (const ax of new Set(axes)) {
    const n = x.shape[ax];
    // nonzero[i]: some entry with index i along ax is nonzero
    const nonzero = new JSArray<boolean>(n).fill(false);
    v.forEach((val, flat) => {
      if (val !== 0) nonzero[Math.floor(flat / strides[ax]) % n] = true;
    });
    let lo = 0,
      hi = n;
    if (!nonzero.includes(true)) hi = 0;
    else {
      if (front) while (!nonzero[lo]) lo++;
      if (back) while (!nonzero[hi - 1]) hi--;
    }
    r = ops.sliceInDim(r, lo, hi, 1, ax);
  }
  return r;
}
