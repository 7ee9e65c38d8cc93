/** @file jnp shape manipulation (reshape, transpose, concatenate, stack, split, tile, repeat, flip, roll, rot90, ...). */
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import type { DType } from "../core/dtype.js";
import { prod } from "../core/shape.js";
import { describe } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import {
  JSArray,
  arr,
  axisList,
  bcast,
  broadcastShape,
  castTo,
  concreteOf,
  normalizeAxis,
  numbersOf,
  parseArgs,
  promoteAll,
  range,
  shapeStr,
  staticInt,
  staticInts,
  takeStatic,
} from "./struct-util.js";

type AL = ArrayLike | NestedValue;

// ---------------------------------------------------------------- shape queries
/** jnp.shape. */
export const shape = (a: AL): number[] => arr("shape", a).shape;
/** jnp.ndim. */
export const ndim = (a: AL): number => arr("ndim", a).ndim;
/** jnp.size(a, axis?). */
export function size(a: AL, ...args: unknown[]): number {
  const { axis } = parseArgs<{ axis: number | number[] | null }>("size", args, ["axis"]);
  const x = arr("size", a);
  if (axis === undefined || axis === null) return x.size;
  return prod(axisList("size", axis, x.ndim).map((i) => x.shape[i]));
}

// ---------------------------------------------------------------- reshape / ravel
function resolveShape(fn: string, x: Array, s: readonly number[]): number[] {
  const neg = s.filter((d) => d === -1).length;
  if (neg > 1) throw new Error(`${fn}: can only specify one unknown dimension (-1), got shape ${shapeStr(s)}`);
  for (const d of s)
    if (!Number.isInteger(d) || d < -1)
      throw new TypeError(`${fn}: shape entries must be non-negative integers or -1, got ${shapeStr(s)}`);
  const known = prod(s.filter((d) => d !== -1));
  const out = [...s];
  if (neg) {
    const i = s.indexOf(-1);
    if (known === 0 || x.size % known !== 0)
      throw new TypeError(
        `${fn}: cannot reshape array of shape ${shapeStr(x.shape)} (size ${x.size}) into shape ${shapeStr(s)}`,
      );
    out[i] = x.size / known;
  }
  if (prod(out) !== x.size)
    throw new TypeError(
      `${fn}: cannot reshape array of shape ${shapeStr(x.shape)} (size ${x.size}) into shape ${shapeStr(s)}`,
    );
  return out;
}
/** jnp.reshape(a, shape, order="C"); shape may hold one -1; order "F" reshapes in column-major order. */
export function reshape(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ shape: number | number[]; order: string; newshape: number | number[] }>(
    "reshape",
    args,
    ["shape", "order"],
    ["newshape"],
  );
  const x = arr("reshape", a);
  const sh = o.shape ?? o.newshape;
  if (sh === undefined) throw new TypeError("reshape: missing the shape argument");
  const s = resolveShape("reshape", x, typeof sh === "number" ? [sh] : staticInts("reshape", sh, "shape"));
  const order = o.order ?? "C";
  if (order === "C" || order === "A") return ops.reshape(x, s);
  if (order !== "F") throw new TypeError(`reshape: order must be "C", "F" or "A", got ${JSON.stringify(order)}`);
  // column-major: reverse the axes, reshape to the reversed shape, reverse back
  const xt = ops.transpose(x, range(x.ndim).reverse());
  const r = ops.reshape(xt, [...s].reverse());
  return ops.transpose(r, range(s.length).reverse());
}
/** jnp.ravel(a, order="C"). */
export function ravel(a: AL, ...args: unknown[]): Array {
  const { order } = parseArgs<{ order: string }>("ravel", args, ["order"]);
  const x = arr("ravel", a);
  if (order === "F") return ops.reshape(ops.transpose(x, range(x.ndim).reverse()), [x.size]);
  return ops.reshape(x, [x.size]);
}

// ---------------------------------------------------------------- axis permutations
/** jnp.transpose(a, axes=null): reverses the axes by default. */
export function transpose(a: AL, ...args: unknown[]): Array {
  const { axes } = parseArgs<{ axes: number[] | null }>("transpose", args, ["axes"]);
  const x = arr("transpose", a);
  if (axes === undefined || axes === null) return ops.transpose(x, range(x.ndim).reverse());
  if (axes.length !== x.ndim)
    throw new Error(
      `transpose: axes ${shapeStr(axes)} don't match array of shape ${shapeStr(x.shape)} (expected ${x.ndim} axes)`,
    );
  return ops.transpose(x, axisList("transpose", axes, x.ndim));
}
/** jnp.permuteDims(a, axes) (array API). */
export function permuteDims(a: AL, ...args: unknown[]): Array {
  const { axes } = parseArgs<{ axes: number[] }>("permuteDims", args, ["axes"]);
  if (!axes) throw new TypeError("permuteDims: the axes argument is required");
  return transpose(a, axes);
}
/** jnp.swapaxes(a, axis1, axis2). */
export function swapaxes(a: AL, ...args: unknown[]): Array {
  const { axis1, axis2 } = parseArgs<{ axis1: number; axis2: number }>("swapaxes", args, ["axis1", "axis2"]);
  const x = arr("swapaxes", a);
  const i = normalizeAxis("swapaxes", axis1 as number, x.ndim),
    j = normalizeAxis("swapaxes", axis2 as number, x.ndim);
  const p = range(x.ndim);
  p[i] = j;
  p[j] = i;
  return ops.transpose(x, p);
}
/** jnp.matrixTranspose(x): swaps the last two axes. */
export function matrixTranspose(a: AL): Array {
  const x = arr("matrixTranspose", a);
  if (x.ndim < 2)
    throw new Error(`matrixTranspose: input array must be at least 2-dimensional, got shape ${shapeStr(x.shape)}`);
  return swapaxes(x, -1, -2);
}
/** jnp.moveaxis(a, source, destination) with ints or equal-length lists. */
export function moveaxis(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ source: number | number[]; destination: number | number[] }>("moveaxis", args, [
    "source",
    "destination",
  ]);
  const x = arr("moveaxis", a);
  const src = axisList("moveaxis", o.source as number | number[], x.ndim),
    dst = axisList("moveaxis", o.destination as number | number[], x.ndim);
  if (src.length !== dst.length)
    throw new Error(
      `moveaxis: source ${JSON.stringify(o.source)} and destination ${JSON.stringify(o.destination)} must have the same number of elements`,
    );
  const rest = range(x.ndim).filter((i) => !src.includes(i));
  const perm = new JSArray<number>(x.ndim).fill(-1);
  dst.forEach((d, i) => {
    perm[d] = src[i];
  });
  let k = 0;
  for (let i = 0; i < x.ndim; i++) if (perm[i] === -1) perm[i] = rest[k++];
  return ops.transpose(x, perm);
}

// ---------------------------------------------------------------- adding and removing axes
/** jnp.expandDims(a, axis) (int or list; positions refer to the result). */
export function expandDims(a: AL, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number | number[] }>("expandDims", args, ["axis"]);
  if (axis === undefined) throw new TypeError("expandDims: missing the axis argument");
  const x = arr("expandDims", a);
  const list = typeof axis === "number" ? [axis] : axis;
  const out = axisList("expandDims", list, x.ndim + list.length).sort((p, q) => p - q);
  const s = [...x.shape];
  for (const d of out) s.splice(d, 0, 1);
  return ops.reshape(x, s);
}
/** jnp.squeeze(a, axis=null): removes size-1 axes (all, or the given ones, which must have size 1). */
export function squeeze(a: AL, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number | number[] | null }>("squeeze", args, ["axis"]);
  const x = arr("squeeze", a);
  const dims =
    axis === undefined || axis === null
      ? range(x.ndim).filter((i) => x.shape[i] === 1)
      : axisList("squeeze", axis, x.ndim);
  for (const d of dims)
    if (x.shape[d] !== 1)
      throw new Error(
        `squeeze: cannot select an axis to squeeze out which has size not equal to one (axis ${d} of an array of shape ${shapeStr(x.shape)})`,
      );
  return ops.reshape(
    x,
    x.shape.filter((_, i) => !dims.includes(i)),
  );
}
function atleast(fn: string, nd: 1 | 2 | 3, xs: AL[]): Array | Array[] {
  const res = xs.map((v) => {
    const x = arr(fn, v);
    if (x.ndim >= nd) return x;
    if (nd === 1) return ops.reshape(x, [1]);
    if (nd === 2) return ops.reshape(x, x.ndim === 0 ? [1, 1] : [1, x.shape[0]]);
    return ops.reshape(x, x.ndim === 0 ? [1, 1, 1] : x.ndim === 1 ? [1, x.shape[0], 1] : [...x.shape, 1]);
  });
  return res.length === 1 ? res[0] : res;
}
/** jnp.atleast1d(...arys): one array in, one out; several in, a list out. */
export function atleast1d(x: AL): Array;
export function atleast1d(...xs: AL[]): Array | Array[];
export function atleast1d(...xs: AL[]): Array | Array[] {
  return atleast("atleast1d", 1, xs);
}
/** jnp.atleast2d. */
export function atleast2d(x: AL): Array;
export function atleast2d(...xs: AL[]): Array | Array[];
export function atleast2d(...xs: AL[]): Array | Array[] {
  return atleast("atleast2d", 2, xs);
}
/** jnp.atleast3d. */
export function atleast3d(x: AL): Array;
export function atleast3d(...xs: AL[]): Array | Array[];
export function atleast3d(...xs: AL[]): Array | Array[] {
  return atleast("atleast3d", 3, xs);
}
const one = (x: Array | Array[]): Array => x as Array;

// ---------------------------------------------------------------- broadcasting
/** jnp.broadcastShapes(...shapes). */
export function broadcastShapes(...shapes: (number | number[])[]): number[] {
  return broadcastShape(
    shapes.map((s) => (typeof s === "number" ? [s] : s)),
    "broadcastShapes",
  );
}
/** jnp.broadcastTo(array, shape). */
export function broadcastTo(a: AL, ...args: unknown[]): Array {
  const { shape: sh } = parseArgs<{ shape: number | number[] }>("broadcastTo", args, ["shape"]);
  const x = arr("broadcastTo", a);
  const s = typeof sh === "number" ? [sh] : staticInts("broadcastTo", sh, "shape");
  const bad = () =>
    new Error(`broadcastTo: cannot broadcast an array of shape ${shapeStr(x.shape)} to shape ${shapeStr(s)}`);
  if (x.ndim > s.length) throw bad();
  x.shape.forEach((d, i) => {
    const t = s[s.length - x.ndim + i];
    if (d !== 1 && d !== t) throw bad();
  });
  return bcast(x, s);
}
/** jnp.broadcastArrays(...args): a list of arrays broadcast to a common shape. */
export function broadcastArrays(...args: AL[]): Array[] {
  const xs = args.map((a) => arr("broadcastArrays", a));
  const s = broadcastShape(
    xs.map((x) => x.shape),
    "broadcastArrays",
  );
  return xs.map((x) => bcast(x, s));
}

// ---------------------------------------------------------------- joining
function joinArgs(fn: string, arrays: unknown): Array[] {
  if (arrays instanceof Array)
    return arrays.ndim === 0
      ? [arrays]
      : range(arrays.shape[0]).map((i) => ops.squeeze(ops.sliceInDim(arrays, i, i + 1, 1, 0), [0]));
  if (!JSArray.isArray(arrays)) throw new TypeError(`${fn}: expected a sequence of arrays, got ${describe(arrays)}`);
  if (arrays.length === 0)
    throw new Error(
      `${fn}: need at least one array to ${fn === "concatenate" || fn === "concat" ? "concatenate" : "stack"}`,
    );
  return promoteAll(
    fn,
    arrays.map((a) => arr(fn, a as AL)),
  );
}
function concatChecked(fn: string, xs: Array[], axis: number): Array {
  const nd = xs[0].ndim;
  if (nd === 0)
    throw new Error(
      `${fn}: zero-dimensional arrays cannot be concatenated (got shapes ${xs.map((x) => shapeStr(x.shape)).join(", ")})`,
    );
  xs.forEach((x, i) => {
    if (x.ndim !== nd)
      throw new Error(
        `${fn}: all the input arrays must have the same number of dimensions, but the array at index 0 has ${nd} dimension(s) and the array at index ${i} has ${x.ndim} dimension(s) (shapes ${xs.map((y) => shapeStr(y.shape)).join(", ")})`,
      );
  });
  const ax = normalizeAxis(fn, axis, nd);
  xs.forEach((x, i) =>
    x.shape.forEach((d, j) => {
      if (j !== ax && d !== xs[0].shape[j]) {
        throw new Error(
          `${fn}: all the input array dimensions except for the concatenation axis must match exactly, but along dimension ${j}, the array at index 0 has size ${xs[0].shape[j]} and the array at index ${i} has size ${d} (shapes ${xs.map((y) => shapeStr(y.shape)).join(", ")}; axis ${axis})`,
        );
      }
    }),
  );
  return ops.concatenate(xs, ax);
}
/** jnp.concatenate(arrays, axis=0, dtype=null); axis=null flattens every input first. */
export function concatenate(arrays: AL[] | Array, ...args: unknown[]): Array {
  const o = parseArgs<{ axis: number | null; dtype: DType }>("concatenate", args, ["axis", "dtype"]);
  let xs = joinArgs("concatenate", arrays);
  if (o.axis === null) xs = xs.map((x) => ops.reshape(x, [x.size]));
  return castTo(concatChecked("concatenate", xs, o.axis ?? 0), o.dtype);
}
/** jnp.concat(arrays, axis=0) (array API). */
export function concat(arrays: AL[] | Array, ...args: unknown[]): Array {
  const o = parseArgs<{ axis: number | null }>("concat", args, ["axis"]);
  let xs = joinArgs("concat", arrays);
  if (o.axis === null) xs = xs.map((x) => ops.reshape(x, [x.size]));
  return concatChecked("concat", xs, o.axis ?? 0);
}
/** jnp.stack(arrays, axis=0, out=null, dtype=null): joins equal-shaped arrays along a new axis. */
export function stack(arrays: AL[] | Array, ...args: unknown[]): Array {
  const o = parseArgs<{ axis: number; out: null; dtype: DType }>("stack", args, ["axis", "out", "dtype"]);
  const xs = joinArgs("stack", arrays);
  const s0 = xs[0].shape;
  xs.forEach((x) => {
    if (x.shape.join() !== s0.join())
      throw new Error(
        `stack: all input arrays must have the same shape, got ${xs.map((y) => shapeStr(y.shape)).join(", ")}`,
      );
  });
  const ax = normalizeAxis("stack", o.axis ?? 0, s0.length + 1);
  const ys = xs.map((x) => {
    const s = [...x.shape];
    s.splice(ax, 0, 1);
    return ops.reshape(x, s);
  });
  return castTo(ops.concatenate(ys, ax), o.dtype);
}
/** jnp.hstack(tup, dtype=null). */
export function hstack(tup: AL[] | Array, ...args: unknown[]): Array {
  const o = parseArgs<{ dtype: DType }>("hstack", args, ["dtype"]);
  const xs = joinArgs("hstack", tup).map((x) => one(atleast1d(x)));
  return castTo(concatChecked("hstack", xs, xs[0].ndim === 1 ? 0 : 1), o.dtype);
}
/** jnp.vstack(tup, dtype=null). */
export function vstack(tup: AL[] | Array, ...args: unknown[]): Array {
  const o = parseArgs<{ dtype: DType }>("vstack", args, ["dtype"]);
  return castTo(
    concatChecked(
      "vstack",
      joinArgs("vstack", tup).map((x) => one(atleast2d(x))),
      0,
    ),
    o.dtype,
  );
}
/** jnp.dstack(tup, dtype=null). */
export function dstack(tup: AL[] | Array, ...args: unknown[]): Array {
  const o = parseArgs<{ dtype: DType }>("dstack", args, ["dtype"]);
  return castTo(
    concatChecked(
      "dstack",
      joinArgs("dstack", tup).map((x) => one(atleast3d(x))),
      2,
    ),
    o.dtype,
  );
}
/** jnp.columnStack(tup): 1-D inputs become columns. */
export function columnStack(tup: AL[] | Array): Array {
  const xs = joinArgs("columnStack", tup).map((x) => (x.ndim < 2 ? ops.reshape(x, [x.size, 1]) : x));
  return concatChecked("columnStack", xs, 1);
}
/** jnp.unstack(x, axis=0): the slices along axis as a list. */
export function unstack(a: AL, ...args: unknown[]): Array[] {
  const { axis } = parseArgs<{ axis: number }>("unstack", args, ["axis"]);
  const x = arr("unstack", a);
  if (x.ndim === 0) throw new Error("unstack: the input must have at least 1 dimension, got a 0-d array");
  const ax = normalizeAxis("unstack", axis ?? 0, x.ndim);
  return range(x.shape[ax]).map((i) => ops.squeeze(ops.sliceInDim(x, i, i + 1, 1, ax), [ax]));
}

// ---------------------------------------------------------------- splitting
function splitImpl(fn: string, x: Array, spec: unknown, axis: number, equal: boolean): Array[] {
  if (x.ndim === 0) throw new Error(`${fn}: cannot split a 0-d array`);
  const ax = normalizeAxis(fn, axis, x.ndim),
    n = x.shape[ax];
  let bounds: number[];
  if (typeof spec === "number" || (spec instanceof Array && spec.ndim === 0)) {
    const s = staticInt(fn, spec, "indices_or_sections");
    if (s <= 0) throw new Error(`${fn}: number of sections must be larger than 0, got ${s}`);
    if (equal && n % s !== 0)
      throw new Error(
        `${fn}: array split does not result in an equal division: axis ${ax} of size ${n} into ${s} sections`,
      );
    const q = Math.floor(n / s),
      r = n % s;
    bounds = range(s + 1).map((i) => i * q + Math.min(i, r));
  } else {
    const idx = staticInts(fn, spec, "indices_or_sections").map((i) => Math.min(Math.max(i < 0 ? i + n : i, 0), n));
    bounds = [0, ...idx, n];
  }
  const out: Array[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const lo = bounds[i],
      hi = Math.max(bounds[i], bounds[i + 1]);
    out.push(ops.sliceInDim(x, lo, hi, 1, ax));
  }
  return out;
}
/** jnp.split(ary, indicesOrSections, axis=0): equal sections (must divide) or split points. */
export function split(a: AL, ...args: unknown[]): Array[] {
  const o = parseArgs<{ indicesOrSections: unknown; axis: number }>("split", args, ["indicesOrSections", "axis"]);
  return splitImpl("split", arr("split", a), o.indicesOrSections, o.axis ?? 0, true);
}
/** jnp.arraySplit: like split but sections may be unequal. */
export function arraySplit(a: AL, ...args: unknown[]): Array[] {
  const o = parseArgs<{ indicesOrSections: unknown; axis: number }>("arraySplit", args, ["indicesOrSections", "axis"]);
  return splitImpl("arraySplit", arr("arraySplit", a), o.indicesOrSections, o.axis ?? 0, false);
}
/** jnp.hsplit (axis 1, or 0 for 1-D). */
export function hsplit(a: AL, indicesOrSections: unknown): Array[] {
  const x = arr("hsplit", a);
  return splitImpl("hsplit", x, indicesOrSections, x.ndim === 1 ? 0 : 1, true);
}
/** jnp.vsplit (axis 0, needs 2-D). */
export function vsplit(a: AL, indicesOrSections: unknown): Array[] {
  const x = arr("vsplit", a);
  // JAX (unlike NumPy) splits a 1-D array along axis 0 too; only a 0-d array has no axis 0
  if (x.ndim < 1)
    throw new Error(`vsplit: only works on arrays of 1 or more dimensions, got shape ${shapeStr(x.shape)}`);
  return splitImpl("vsplit", x, indicesOrSections, 0, true);
}
/** jnp.dsplit (axis 2, needs 3-D). */
export function dsplit(a: AL, indicesOrSections: unknown): Array[] {
  const x = arr("dsplit", a);
  if (x.ndim < 3)
    throw new Error(`dsplit: only works on arrays of 3 or more dimensions, got shape ${shapeStr(x.shape)}`);
  return splitImpl("dsplit", x, indicesOrSections, 2, true);
}

// ---------------------------------------------------------------- tiling and repeating
/** jnp.tile(A, reps). */
export function tile(a: AL, reps: number | number[]): Array {
  let x = arr("tile", a);
  const r = typeof reps === "number" ? [reps] : staticInts("tile", reps, "reps");
  if (r.some((v) => v < 0)) throw new Error(`tile: reps must be non-negative, got ${shapeStr(r)}`);
  const nd = Math.max(r.length, x.ndim);
  const rr = [...new JSArray<number>(nd - r.length).fill(1), ...r];
  x = ops.reshape(x, [...new JSArray<number>(nd - x.ndim).fill(1), ...x.shape]);
  // broadcast to [r0, d0, r1, d1, ...] then merge each pair
  const big = x.shape.flatMap((d, i) => [rr[i], d]);
  const y = ops.broadcastInDim(
    x,
    big,
    range(nd).map((i) => 2 * i + 1),
  );
  return ops.reshape(
    y,
    x.shape.map((d, i) => d * rr[i]),
  );
}
/** Static source index for each output position of a repeat with per-element counts. */
function repeatIndex(counts: number[], total: number): number[] {
  const out: number[] = [];
  counts.forEach((c, i) => {
    for (let k = 0; k < c; k++) out.push(i);
  });
  const last = counts.length - 1;
  while (out.length < total) out.push(last);
  return out.slice(0, total);
}
/** jnp.repeat(a, repeats, axis=null, {totalRepeatLength}): scalar or per-element repeats; traced repeats need totalRepeatLength. */
export function repeat(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ repeats: unknown; axis: number | null; totalRepeatLength: number }>(
    "repeat",
    args,
    ["repeats", "axis"],
    ["totalRepeatLength"],
  );
  let x = arr("repeat", a);
  if (o.axis === undefined || o.axis === null) {
    x = ops.reshape(x, [x.size]);
  }
  const ax = normalizeAxis("repeat", o.axis ?? 0, Math.max(x.ndim, 1));
  if (x.ndim === 0) x = ops.reshape(x, [1]);
  const n = x.shape[ax];
  const rep = o.repeats;
  const total = o.totalRepeatLength;
  if (typeof rep === "number" || (rep instanceof Array && rep.ndim === 0 && concreteOf(rep))) {
    const r = staticInt("repeat", rep, "repeats");
    if (r < 0) throw new Error(`repeat: repeats may not contain negative values, got ${r}`);
    if (total === undefined || total === r * n) {
      const big = [...x.shape.slice(0, ax + 1), r, ...x.shape.slice(ax + 1)];
      const y = ops.broadcastInDim(
        x,
        big,
        range(x.ndim).map((i) => (i <= ax ? i : i + 1)),
      );
      const s = [...x.shape];
      s[ax] = n * r;
      return ops.reshape(y, s);
    }
    return takeStatic(x, repeatIndex(new JSArray<number>(n).fill(r), total), ax);
  }
  const ra = rep instanceof Array ? rep : arr("repeat", rep as AL);
  const c = concreteOf(ra);
  if (c) {
    let counts = numbersOf(c);
    if (counts.length === 1) counts = new JSArray<number>(n).fill(counts[0]);
    if (counts.length !== n)
      throw new Error(
        `repeat: repeats has ${counts.length} entries but axis ${ax} of the array (shape ${shapeStr(x.shape)}) has size ${n}`,
      );
    if (counts.some((v) => v < 0)) throw new Error("repeat: repeats may not contain negative values");
    const t = total ?? counts.reduce((p, q) => p + q, 0);
    if (n === 0) return x;
    return takeStatic(x, repeatIndex(counts, t), ax);
  }
  if (total === undefined)
    throw new Error(
      "repeat: with traced (non-concrete) repeats, the totalRepeatLength argument must be given statically",
    );
  if (ra.ndim > 1 || (ra.ndim === 1 && ra.shape[0] !== n && ra.shape[0] !== 1))
    throw new Error(`repeat: repeats of shape ${shapeStr(ra.shape)} do not match axis ${ax} of size ${n}`);
  // source index of output j = number of cumulative ends <= j, clipped to the last element
  const ends = ops.cumulative("cumsum", bcast(ops.convert(ra, "int32"), [n]), 0);
  const j = ops.iota("int32", [total, n], 0);
  const cnt = ops.reduceSum(ops.convert(ops.le(ops.broadcastInDim(ends, [total, n], [1]), j), "int32"), [1]);
  const idx = ops.min(cnt, ops.full([], n - 1, "int32"));
  return ops.moveaxis(ops.gather(x, ops.reshape(idx, [total, 1]), [ax], "clip"), 0, ax);
}

// ---------------------------------------------------------------- flipping and rolling
/** jnp.flip(m, axis=null). */
export function flip(m: AL, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number | number[] | null }>("flip", args, ["axis"]);
  const x = arr("flip", m);
  return ops.rev(x, axisList("flip", axis, x.ndim));
}
/** jnp.fliplr (axis 1; needs 2-D). */
export function fliplr(m: AL): Array {
  const x = arr("fliplr", m);
  if (x.ndim < 2) throw new Error(`fliplr: input must be at least 2-d, got shape ${shapeStr(x.shape)}`);
  return ops.rev(x, [1]);
}
/** jnp.flipud (axis 0; needs 1-D). */
export function flipud(m: AL): Array {
  const x = arr("flipud", m);
  if (x.ndim < 1) throw new Error("flipud: input must be at least 1-d, got a 0-d array");
  return ops.rev(x, [0]);
}
function roll1(x: Array, shift: number | Array, ax: number): Array {
  const n = x.shape[ax];
  if (n === 0) return x;
  if (typeof shift === "number") {
    const s = ((shift % n) + n) % n;
    if (s === 0) return x;
    return ops.concatenate([ops.sliceInDim(x, n - s, n, 1, ax), ops.sliceInDim(x, 0, n - s, 1, ax)], ax);
  }
  // traced shift: out[i] = x[(i - shift) mod n]
  const sh = ops.convert(shift, "int32");
  const i = ops.iota("int32", [n], 0);
  const nn = ops.full([], n, "int32");
  const src = ops.rem(ops.add(ops.rem(ops.sub(i, sh), nn), nn), nn);
  return ops.moveaxis(ops.gather(x, ops.reshape(src, [n, 1]), [ax], "clip"), 0, ax);
}
/** jnp.roll(a, shift, axis=null): shift and axis may be tuples (broadcast against each other). */
export function roll(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ shift: number | number[] | Array; axis: number | number[] | null }>("roll", args, [
    "shift",
    "axis",
  ]);
  const x = arr("roll", a);
  if (o.shift === undefined) throw new TypeError("roll: missing the shift argument");
  const shifts: (number | Array)[] =
    o.shift instanceof Array
      ? o.shift.ndim === 0
        ? [concreteOf(o.shift) ? Number(concreteOf(o.shift)!.item()) : o.shift]
        : numbersOf(
            concreteOf(o.shift) ??
              (() => {
                throw new Error("roll: a traced shift must be a scalar");
              })(),
          )
      : typeof o.shift === "number"
        ? [o.shift]
        : o.shift;
  if (o.axis === undefined || o.axis === null) {
    if (shifts.length !== 1)
      throw new Error(`roll: with axis=null, shift must be a scalar, got ${shifts.length} shifts`);
    return ops.reshape(roll1(ops.reshape(x, [x.size]), shifts[0], 0), x.shape);
  }
  const axes = typeof o.axis === "number" ? [o.axis] : o.axis;
  const k = Math.max(shifts.length, axes.length);
  if ((shifts.length !== 1 && shifts.length !== k) || (axes.length !== 1 && axes.length !== k))
    throw new Error(`roll: shift (${shifts.length} entries) and axis (${axes.length} entries) must broadcast together`);
  let y = x;
  for (let i = 0; i < k; i++)
    y = roll1(y, shifts[shifts.length === 1 ? 0 : i], normalizeAxis("roll", axes[axes.length === 1 ? 0 : i], x.ndim));
  return y;
}
/** jnp.rot90(m, k=1, axes=[0, 1]). */
export function rot90(m: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ k: number; axes: [number, number] }>("rot90", args, ["k", "axes"]);
  const x = arr("rot90", m);
  const axes = o.axes ?? [0, 1];
  if (axes.length !== 2) throw new Error(`rot90: axes must have length 2, got ${JSON.stringify(axes)}`);
  if (x.ndim < 2) throw new Error(`rot90: the array must have at least 2 dimensions, got shape ${shapeStr(x.shape)}`);
  const a0 = normalizeAxis("rot90", axes[0], x.ndim),
    a1 = normalizeAxis("rot90", axes[1], x.ndim);
  if (a0 === a1) throw new Error(`rot90: axes must be different, got ${JSON.stringify(axes)}`);
  const k = (((o.k ?? 1) % 4) + 4) % 4;
  const perm = range(x.ndim);
  perm[a0] = a1;
  perm[a1] = a0;
  if (k === 0) return x;
  if (k === 2) return ops.rev(x, [a0, a1]);
  if (k === 1) return ops.transpose(ops.rev(x, [a1]), perm);
  return ops.rev(ops.transpose(x, perm), [a1]);
}
