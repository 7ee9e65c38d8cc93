/** @file jnp sorting and searching: sort, argsort, lexsort, partition, searchsorted, unique, topK, bincount, histogram, digitize. */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { type DType, canonicalizeDType, complexDType, isComplex, isFloat, isInteger } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { sortMany, topKAlong } from "../primitives/sort.js";
import { nonzero } from "./indexing-funcs.js";
import {
  arr,
  bcast,
  concreteOf,
  indexDType,
  normalizeAxis,
  numbersOf,
  parseArgs,
  promoteAll,
  promoteInexact,
  range,
  requireConcrete,
  shapeStr,
  staticInt,
} from "./struct-util.js";
import { extent } from "../core/extent.js";

type AL = ArrayLike | NestedValue;
interface SortOpts {
  axis: number | null;
  kind: string | null;
  order: null;
  stable: boolean;
  descending: boolean;
  dtype: DType;
}

function sortSetup(fn: string, a: AL, axis: number | null | undefined): [Array, number] {
  let x = arr(fn, a);
  if (axis === null) x = ops.reshape(x, [x.size]);
  if (x.ndim === 0)
    throw new Error(`${fn}: cannot sort a 0-d array along axis ${axis ?? -1} (use axis=null, or a 1-d array)`);
  return [x, normalizeAxis(fn, axis ?? -1, x.ndim)];
}
function checkOrder(fn: string, o: Partial<SortOpts>): void {
  if (o.order !== undefined && o.order !== null)
    throw new TypeError(`${fn}: the 'order' argument is not supported (JAX arrays have no record dtypes)`);
}

/** jnp.sort(a, axis=-1, {stable, descending}); axis=null sorts the flattened array. NaNs sort last. */
export function sort(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<SortOpts>("sort", args, ["axis"], ["kind", "order", "stable", "descending", "dtype"]);
  checkOrder("sort", o);
  const [x, ax] = sortSetup("sort", a, o.axis);
  const r = isComplex(x.dtype)
    ? complexOfKeys(sortMany(complexKeys(x), ax, o.stable ?? true, 2))
    : sortMany([x], ax, o.stable ?? true, 1)[0];
  return o.descending ? ops.rev(r, [ax]) : r;
}
/** A complex array's lexicographic sort keys: its real and imaginary parts (NumPy's and JAX's complex order). */
const complexKeys = (x: Array): Array[] => [ops.real(x), ops.imag(x)];
const complexOfKeys = ([re, im]: Array[]): Array => ops.complexOf(re, im);
/** jnp.argsort(a, axis=-1, {stable, descending, dtype}): indices that sort a (stable: ties keep their order, also when descending). */
export function argsort(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<SortOpts>("argsort", args, ["axis"], ["kind", "order", "stable", "descending", "dtype"]);
  checkOrder("argsort", o);
  let [x, ax] = sortSetup("argsort", a, o.axis);
  let iota = ops.iota(o.dtype ? canonicalizeDType(o.dtype) : indexDType(), x.shape, ax);
  const stable = o.stable ?? true;
  // stable descending: reverse both, sort ascending, reverse the indices back
  if (o.descending && stable) {
    x = ops.rev(x, [ax]);
    iota = ops.rev(iota, [ax]);
  }
  const keys = isComplex(x.dtype) ? complexKeys(x) : [x];
  const idx = sortMany([...keys, iota], ax, stable, keys.length)[keys.length];
  return o.descending ? ops.rev(idx, [ax]) : idx;
}
/** jnp.msort(a) = sort(a, axis=0). */
export const msort = (a: AL): Array => sort(a, 0);
/** jnp.lexsort(keys, axis=-1): indirect stable sort by several keys; the last key is the primary one (complex keys lexicographic). */
export function lexsort(keys: AL[] | Array, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number }>("lexsort", args, ["axis"]);
  const ks: Array[] =
    keys instanceof Array
      ? range(keys.shape[0]).map((i) => ops.squeeze(ops.sliceInDim(keys, i, i + 1, 1, 0), [0]))
      : keys.map((k) => arr("lexsort", k));
  if (ks.length === 0) throw new TypeError("lexsort: need sequence of keys with len > 0");
  const s0 = ks[0].shape;
  for (const k of ks)
    if (k.shape.join() !== s0.join())
      throw new Error(
        `lexsort: all keys need to be the same shape, got ${ks.map((q) => shapeStr(q.shape)).join(", ")}`,
      );
  if (s0.length === 0) throw new Error("lexsort: keys must be at least 1-dimensional");
  const ax = normalizeAxis("lexsort", axis ?? -1, s0.length);
  const iota = ops.iota(indexDType(), s0, ax);
  // a complex key orders lexicographically: its real part, then its imaginary part (as JAX's lax.sort and NumPy)
  const sortKeys = [...ks].reverse().flatMap((k) => (isComplex(k.dtype) ? complexKeys(k) : [k]));
  const outs = sortMany([...sortKeys, iota], ax, true, sortKeys.length);
  return outs[outs.length - 1];
}
/** jnp.partition(a, kth, axis=-1): implemented as a full sort (a valid partition: a[kth] is in place, smaller before, larger after). */
export function partition(a: AL, kth: number, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number }>("partition", args, ["axis"]);
  const [x, ax] = sortSetup("partition", a, axis ?? -1);
  checkKth("partition", kth, x.shape[ax]);
  return sortMany([x], ax, true, 1)[0];
}
/** jnp.argpartition(a, kth, axis=-1): indices of a valid partition (a full argsort). */
export function argpartition(a: AL, kth: number, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number }>("argpartition", args, ["axis"]);
  const [x, ax] = sortSetup("argpartition", a, axis ?? -1);
  checkKth("argpartition", kth, x.shape[ax]);
  return argsort(x, ax);
}
function checkKth(fn: string, kth: number, n: number): void {
  const k = staticInt(fn, kth, "kth");
  if (k < -n || k >= n) throw new RangeError(`${fn}: kth ${k} is out of bounds for an axis of size ${n}`);
}
/** jnp.sort_complex(a): sorts along the last axis (lexicographically for complex values) and returns a complex array. */
export function sortComplex(a: AL): Array {
  const x = sort(a, -1);
  return isComplex(x.dtype) ? x : ops.convert(x, complexDType(promoteInexact("sortComplex", [x])[0].dtype));
}

/** jnp.top_k(a, k, { axis = -1, mode = "largest", sorted = true }): [values, indices] of the k largest (or smallest) entries along axis. */
export function topK(operand: AL, k: number, ...args: unknown[]): [Array, Array] {
  const o = parseArgs<{ axis: number; mode: "largest" | "smallest"; sorted: boolean }>(
    "topK",
    args,
    [],
    ["axis", "mode", "sorted"],
  );
  const x = arr("topK", operand);
  if (x.ndim === 0) throw new Error("topK: operand must be at least 1-dimensional, got a 0-d array");
  const axis = o.axis ?? -1;
  if (typeof axis !== "number" || !Number.isInteger(axis) || axis < -x.ndim || axis >= x.ndim)
    throw new RangeError(
      `topK: axis ${JSON.stringify(axis)} is out of bounds for an array of shape ${shapeStr(x.shape)}`,
    );
  const ax = axis < 0 ? axis + x.ndim : axis;
  const n = x.shape[ax];
  if (!Number.isInteger(k) || k < 0 || k > n)
    throw new RangeError(
      `topK: k must be an integer in [0, ${n}] (dimension ${ax} of shape ${shapeStr(x.shape)}), got ${k}`,
    );
  const mode = o.mode ?? "largest";
  if (mode !== "largest" && mode !== "smallest")
    throw new Error(`topK: mode must be "largest" or "smallest", got ${JSON.stringify(mode)}`);
  if (mode === "largest") return topKAlong(x, k, ax);
  // smallest: the largest of an order-reversing map (negation for floats, bitwise not for ints and bools), mapped back
  const flip = (y: Array): Array => (isFloat(y.dtype) ? ops.neg(y) : ops.not(y));
  const [v, i] = topKAlong(flip(x), k, ax);
  return [flip(v), i];
}

// ---------------------------------------------------------------- searching
const isNan = (x: Array): Array => (isFloat(x.dtype) ? ops.ne(x, x) : ops.full(x.shape, false, "bool"));
/** a < b in lax.sort's total order (NaN largest). */
function totalLt(a: Array, b: Array): Array {
  if (!isFloat(a.dtype)) return ops.lt(a, b);
  return ops.or(ops.lt(a, b), ops.and(isNan(b), ops.not(isNan(a))));
}
/** jnp.searchsorted(a, v, side="left", sorter=null): insertion indices (int32) into the sorted 1-D array a. */
export function searchsorted(a: AL, v: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ side: "left" | "right"; sorter: AL | null; method: string }>(
    "searchsorted",
    args,
    ["side", "sorter"],
    ["method"],
  );
  let [sa, sv] = promoteAll("searchsorted", [arr("searchsorted", a), arr("searchsorted", v)]);
  if (sa.ndim !== 1) throw new Error(`searchsorted: a should be 1-dimensional, got shape ${shapeStr(sa.shape)}`);
  const side = o.side ?? "left";
  if (side !== "left" && side !== "right")
    throw new Error(`searchsorted: side must be "left" or "right", got ${JSON.stringify(side)}`);
  if (o.sorter !== undefined && o.sorter !== null) {
    const s = arr("searchsorted", o.sorter);
    if (s.shape.join() !== sa.shape.join())
      throw new Error(`searchsorted: sorter of shape ${shapeStr(s.shape)} must match a of shape ${shapeStr(sa.shape)}`);
    sa = ops.gather(sa, ops.reshape(ops.convert(s, "int32"), [sa.shape[0], 1]), [0], "clip");
  }
  const method = o.method ?? "default";
  if (!["default", "scan", "scan_unrolled", "sort", "compare_all"].includes(method))
    throw new Error(
      `searchsorted: method must be one of "scan", "scan_unrolled", "sort", "compare_all", got ${JSON.stringify(method)}`,
    );
  const n = sa.shape[0];
  if (n === 0) return ops.full(sv.shape, 0, "int32");
  // JAX's "compare_all" costs n per query: kept where that is small (few ops beat a search's ~8 per halving)
  const compareAll = method === "compare_all" || (method === "default" && n * Math.max(1, sv.size) <= 1 << 16);
  return compareAll ? searchCompareAll(sa, sv, side) : searchBinary(sa, sv, side);
}
/** left: #{a_i < v}; right: #{a_i <= v} = #{not (v < a_i)}, counted over every a_i ([...v.shape, n] comparisons). */
function searchCompareAll(sa: Array, sv: Array, side: "left" | "right"): Array {
  const big = [...sv.shape, sa.shape[0]];
  const ab = ops.broadcastInDim(sa, big, [sv.ndim]);
  const vb = ops.broadcastInDim(sv, big, range(sv.ndim));
  const hit = side === "left" ? totalLt(ab, vb) : ops.not(totalLt(vb, ab));
  return ops.reduceSum(ops.convert(hit, "int32"), [sv.ndim]);
}
/**
 * The same counts by binary search (JAX's default "scan" method): each query's answer lies in [lo, hi], halved
 * ceil(log2(n + 1)) times: a[mid] before v (left: a[mid] < v; right: not v < a[mid]) moves lo past mid, else hi to mid.
 */
function searchBinary(sa: Array, sv: Array, side: "left" | "right"): Array {
  const n = sa.shape[0];
  const int = (k: number) => ops.full(sv.shape, k, "int32");
  let lo = int(0),
    hi = int(n);
  for (let k = Math.ceil(Math.log2(n + 1)); k > 0; k--) {
    const mid = ops.shiftRightArithmetic(ops.add(lo, hi), int(1));
    const am = ops.gather(sa, ops.reshape(ops.min(mid, int(n - 1)), [...sv.shape, 1]), [0], "clip");
    const before = side === "left" ? totalLt(am, sv) : ops.not(totalLt(sv, am));
    const open = ops.lt(lo, hi);
    lo = ops.select(ops.and(open, before), ops.add(mid, int(1)), lo);
    hi = ops.select(ops.and(open, ops.not(before)), mid, hi);
  }
  return lo;
}
/** jnp.digitize(x, bins, right=false): bin indices for increasing or decreasing bins. */
export function digitize(x: AL, bins: AL, ...args: unknown[]): Array {
  const { right } = parseArgs<{ right: boolean; method: string }>("digitize", args, ["right"], ["method"]);
  const b = arr("digitize", bins),
    xv = arr("digitize", x);
  if (b.ndim !== 1) throw new Error(`digitize: bins must be a 1-dimensional array, got shape ${shapeStr(b.shape)}`);
  const n = b.shape[0];
  if (n === 0) return ops.full(xv.shape, 0, "int32");
  const side = right ? "left" : "right";
  const inc = searchsorted(b, xv, side);
  const dec = ops.sub(ops.full(xv.shape, n, "int32"), searchsorted(ops.rev(b, [0]), xv, side));
  const increasing = ops.ge(ops.sliceInDim(b, n - 1, n, 1, 0), ops.sliceInDim(b, 0, 1, 1, 0));
  return ops.select(bcast(ops.reshape(increasing, []), xv.shape), inc, dec);
}

// ---------------------------------------------------------------- unique
export interface UniqueOpts {
  returnIndex: boolean;
  returnInverse: boolean;
  returnCounts: boolean;
  axis: number | null;
  equalNan: boolean;
  size: number;
  fillValue: number;
  sorted: boolean;
}
interface UniqueParts {
  values: Array;
  indices: Array;
  inverse: Array;
  counts: Array;
}
function uniqueCore(fn: string, a: AL, o: Partial<UniqueOpts>): UniqueParts {
  const x0 = arr(fn, a);
  const flat = o.axis === undefined || o.axis === null;
  const x = flat ? ops.reshape(x0, [x0.size]) : x0;
  if (x.ndim === 0) throw new Error(`${fn}: axis ${o.axis} is out of bounds for a 0-d array`);
  const ax = normalizeAxis(fn, o.axis ?? 0, x.ndim);
  const aux0 = ops.moveaxis(x, ax, 0);
  const N = aux0.shape[0],
    rest = aux0.shape.slice(1),
    M = rest.reduce((p, q) => p * q, 1);
  if (o.size !== undefined && N === 0 && o.size > 0 && o.fillValue === undefined)
    throw new Error(`${fn}: for zero-sized input with a nonzero size argument, fillValue must be given`);
  const rows = ops.reshape(aux0, [N, M]);
  // lexicographic sort of the rows (first column most significant), stable, with the permutation
  const cols = range(M).map((j) => ops.reshape(ops.sliceInDim(rows, j, j + 1, 1, 1), [N]));
  const iota = ops.iota(indexDType(), [N], 0);
  const perm = M === 0 || N === 0 ? iota : sortMany([...cols, iota], 0, true, M)[M];
  const aux = N === 0 ? rows : ops.gather(rows, ops.reshape(ops.convert(perm, "int32"), [N, 1]), [0], "clip");
  // mask[i]: row i of the sorted rows differs from row i-1 (NaNs equal when equalNan)
  let mask: Array;
  if (N === 0) mask = ops.full([0], false, "bool");
  else if (N === 1 || M === 0)
    mask = ops.concatenate([ops.full([1], true, "bool"), ops.full([N - 1], false, "bool")], 0);
  else {
    const hi = ops.sliceInDim(aux, 1, N, 1, 0),
      lo = ops.sliceInDim(aux, 0, N - 1, 1, 0);
    let ne = ops.ne(hi, lo);
    if (isFloat(aux.dtype) && (o.equalNan ?? true)) ne = ops.and(ne, ops.not(ops.and(isNan(hi), isNan(lo))));
    mask = ops.concatenate([ops.full([1], true, "bool"), ops.reduceOr(ne, [1])], 0);
  }
  let size: number;
  if (o.size === undefined || o.size === null) {
    const c = requireConcrete(
      fn,
      mask,
      "the input",
      `Pass a static size (e.g. ${fn}(x, { size: 3 })) to use it inside jit/vmap.`,
    );
    size = numbersOf(c).filter((v) => v).length;
  } else size = staticInt(fn, o.size, "size");
  const count = ops.reduceSum(ops.convert(mask, "int32"), [0]);
  const ind = nonzero(mask.size ? mask : ops.full([1], false, "bool"), { size })[0];
  const ind32 = ops.reshape(ops.convert(ind, "int32"), [size, 1]);
  let values = N === 0 ? ops.full([size, M], 0, x.dtype) : ops.gather(aux, ind32, [0], "clip");
  if (o.size !== undefined && o.fillValue !== undefined) {
    const valid = ops.broadcastInDim(ops.lt(ops.iota("int32", [size], 0), count), values.shape, [0]);
    values = ops.select(valid, values, ops.full(values.shape, o.fillValue, values.dtype));
  }
  values = ops.moveaxis(ops.reshape(values, [size, ...rest]), 0, ax);
  const indices = N === 0 ? ops.full([size], 0, indexDType()) : ops.gather(perm, ind32, [0], "clip");
  // inverse: group id of each original row
  const gid = ops.sub(ops.cumulative("cumsum", ops.convert(mask, indexDType()), 0), ops.full([], 1, indexDType()));
  let inverse =
    N === 0
      ? ops.full([0], 0, indexDType())
      : ops.scatter(
          ops.full([N], 0, indexDType()),
          ops.reshape(ops.convert(perm, "int32"), [N, 1]),
          gid,
          [0],
          "none",
          "clip",
        );
  if (flat) inverse = ops.reshape(inverse, x0.shape);
  // counts: differences of consecutive group starts (padded groups count 0)
  const starts = nonzero(mask.size ? mask : ops.full([1], false, "bool"), { size: size + 1, fillValue: N })[0];
  const counts = ops.sub(ops.sliceInDim(starts, 1, size + 1, 1, 0), ops.sliceInDim(starts, 0, size, 1, 0));
  return { values, indices, inverse, counts: ops.convert(counts, indexDType()) };
}
/** jnp.unique(ar, returnIndex, returnInverse, returnCounts, axis, {equalNan, size, fillValue}): the sorted unique values, or [values, index?, inverse?, counts?]. */
export function unique(ar: AL, ...args: unknown[]): Array | Array[] {
  const o = parseArgs<UniqueOpts>(
    "unique",
    args,
    ["returnIndex", "returnInverse", "returnCounts", "axis"],
    ["equalNan", "size", "fillValue", "sorted"],
  );
  const u = uniqueCore("unique", ar, o);
  const out = [u.values];
  if (o.returnIndex) out.push(u.indices);
  if (o.returnInverse) out.push(u.inverse);
  if (o.returnCounts) out.push(u.counts);
  return out.length === 1 ? out[0] : out;
}
/** jnp.uniqueValues(x, {size, fillValue}). */
export function uniqueValues(x: AL, opts: { size?: number; fillValue?: number } = {}): Array {
  checkArity("uniqueValues", arguments, 2, "uniqueValues(x, { size, fillValue })");
  checkOptions("uniqueValues", opts, ["size", "fillValue"], "uniqueValues(x, { size, fillValue })");
  return uniqueCore("uniqueValues", x, opts).values;
}
/** jnp.uniqueCounts(x) -> {values, counts}. */
export function uniqueCounts(
  x: AL,
  opts: { size?: number; fillValue?: number } = {},
): { values: Array; counts: Array } {
  checkArity("uniqueCounts", arguments, 2, "uniqueCounts(x, { size, fillValue })");
  checkOptions("uniqueCounts", opts, ["size", "fillValue"], "uniqueCounts(x, { size, fillValue })");
  const u = uniqueCore("uniqueCounts", x, opts);
  return { values: u.values, counts: u.counts };
}
/** jnp.uniqueInverse(x) -> {values, inverseIndices}. */
export function uniqueInverse(
  x: AL,
  opts: { size?: number; fillValue?: number } = {},
): { values: Array; inverseIndices: Array } {
  checkArity("uniqueInverse", arguments, 2, "uniqueInverse(x, { size, fillValue })");
  checkOptions("uniqueInverse", opts, ["size", "fillValue"], "uniqueInverse(x, { size, fillValue })");
  const u = uniqueCore("uniqueInverse", x, opts);
  return { values: u.values, inverseIndices: u.inverse };
}
/** jnp.uniqueAll(x) -> {values, indices, inverseIndices, counts}. */
export function uniqueAll(
  x: AL,
  opts: { size?: number; fillValue?: number } = {},
): { values: Array; indices: Array; inverseIndices: Array; counts: Array } {
  checkArity("uniqueAll", arguments, 2, "uniqueAll(x, { size, fillValue })");
  checkOptions("uniqueAll", opts, ["size", "fillValue"], "uniqueAll(x, { size, fillValue })");
  const u = uniqueCore("uniqueAll", x, opts);
  return { values: u.values, indices: u.indices, inverseIndices: u.inverse, counts: u.counts };
}

// ---------------------------------------------------------------- counting and histograms
/** jnp.bincount(x, weights=null, minlength=0, {length}): negative values count in bin 0; traced x needs a static length. */
export function bincount(x: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ weights: AL | null; minlength: number; length: number }>(
    "bincount",
    args,
    ["weights", "minlength"],
    ["length"],
  );
  const xv = arr("bincount", x);
  if (!isInteger(xv.dtype)) throw new TypeError(`bincount: x must have an integer type, got ${xv.aval.str()}`);
  if (xv.ndim !== 1)
    throw new Error(`bincount: only 1-dimensional input is supported, got shape ${shapeStr(xv.shape)}`);
  const minlength = staticInt("bincount", o.minlength ?? 0, "minlength");
  let length: number;
  if (o.length === undefined || o.length === null) {
    const c = concreteOf(xv);
    if (!c)
      throw new Error(
        "bincount: x is traced, so the output length is unknown; pass a static length (e.g. bincount(x, { length: 5 }))",
      );
    const v = numbersOf(c);
    length = Math.max(minlength, v.length ? Math.max(0, extent(v)[1]) + 1 : 0);
  } else length = staticInt("bincount", o.length, "length");
  let w: Array;
  if (o.weights === undefined || o.weights === null) w = ops.full(xv.shape, 1, indexDType());
  else {
    w = arr("bincount", o.weights);
    if (w.shape.join() !== xv.shape.join())
      throw new Error(`bincount: weights of shape ${shapeStr(w.shape)} must match x of shape ${shapeStr(xv.shape)}`);
    if (w.dtype === "bool") w = ops.convert(w, indexDType());
    if (w.weakType) w = ops.convert(w, w.dtype);
  }
  const idx = ops.max(ops.convert(xv, "int32"), ops.full([], 0, "int32"));
  return ops.scatter(ops.full([length], 0, w.dtype), ops.reshape(idx, [xv.shape[0], 1]), w, [0], "add", "drop");
}
function linspaceEdges(lo: Array, hi: Array, bins: number): Array {
  const i = ops.convert(ops.iota("int32", [bins + 1], 0), lo.dtype);
  const step = ops.div(ops.sub(hi, lo), ops.scalarLike(lo, bins));
  const e = ops.add(bcast(lo, [bins + 1]), ops.mul(i, bcast(step, [bins + 1])));
  // the last edge is exactly hi (as numpy.linspace)
  return ops.concatenate([ops.sliceInDim(e, 0, bins, 1, 0), ops.reshape(hi, [1])], 0);
}
/** jnp.histogramBinEdges(a, bins=10, range=null, weights=null). */
export function histogramBinEdges(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ bins: number | AL; range: [number, number] | null; weights: AL | null }>(
    "histogramBinEdges",
    args,
    ["bins", "range", "weights"],
  );
  const [x] = promoteInexact("histogramBinEdges", [arr("histogramBinEdges", a)]);
  const bins = o.bins ?? 10;
  if (typeof bins !== "number") {
    const b = arr("histogramBinEdges", bins);
    if (b.ndim !== 1)
      throw new Error(`histogramBinEdges: bins must be an integer or a 1-D array, got shape ${shapeStr(b.shape)}`);
    return ops.convert(b, x.dtype);
  }
  if (!Number.isInteger(bins) || bins < 1)
    throw new Error(`histogramBinEdges: bins must be a positive integer, got ${bins}`);
  let lo: Array, hi: Array;
  if (o.range) {
    lo = ops.full([], o.range[0], x.dtype);
    hi = ops.full([], o.range[1], x.dtype);
  } else if (x.size === 0) {
    lo = ops.full([], 0, x.dtype);
    hi = ops.full([], 1, x.dtype);
  } else {
    const f = ops.reshape(x, [x.size]);
    lo = ops.reduceMin(f, [0]);
    hi = ops.reduceMax(f, [0]);
  }
  const same = ops.eq(lo, hi);
  lo = ops.select(same, ops.sub(lo, ops.scalarLike(lo, 0.5)), lo);
  hi = ops.select(same, ops.add(hi, ops.scalarLike(hi, 0.5)), hi);
  return linspaceEdges(lo, hi, bins);
}
/** jnp.histogram(a, bins=10, range=null, weights=null, density=null) -> [hist, binEdges]. */
export function histogram(a: AL, ...args: unknown[]): [Array, Array] {
  const o = parseArgs<{
    bins: number | AL;
    range: [number, number] | null;
    weights: AL | null;
    density: boolean | null;
  }>("histogram", args, ["bins", "range", "weights", "density"]);
  const [x] = promoteInexact("histogram", [arr("histogram", a)]);
  const edges = histogramBinEdges(x, o.bins ?? 10, o.range ?? null);
  const flat = ops.reshape(x, [x.size]);
  const ne = edges.shape[0];
  let w: Array;
  if (o.weights === undefined || o.weights === null) w = ops.full([x.size], 1, o.density ? x.dtype : indexDType());
  else {
    w = arr("histogram", o.weights);
    if (w.shape.join() !== x.shape.join())
      throw new Error(`histogram: weights of shape ${shapeStr(w.shape)} must match a of shape ${shapeStr(x.shape)}`);
    w = ops.reshape(o.density ? promoteInexact("histogram", [w])[0] : ops.convert(w, w.dtype), [x.size]);
  }
  let bin = searchsorted(edges, flat, "right");
  // values equal to the last edge fall in the last bin
  bin = ops.select(
    ops.eq(flat, bcast(ops.reshape(ops.sliceInDim(edges, ne - 1, ne, 1, 0), []), flat.shape)),
    ops.full(flat.shape, ne - 1, "int32"),
    bin,
  );
  let counts = ops.sliceInDim(
    ops.scatter(ops.full([ne], 0, w.dtype), ops.reshape(bin, [x.size, 1]), w, [0], "add", "drop"),
    1,
    ne,
    1,
    0,
  );
  if (o.density) {
    const widths = ops.sub(ops.sliceInDim(edges, 1, ne, 1, 0), ops.sliceInDim(edges, 0, ne - 1, 1, 0));
    const c = ops.convert(counts, edges.dtype);
    counts = ops.div(ops.div(c, widths), bcast(ops.reduceSum(c, [0]), c.shape));
  }
  return [counts, edges];
}
