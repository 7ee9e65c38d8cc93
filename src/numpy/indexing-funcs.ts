/** @file jnp index functions: take, takeAlongAxis, putAlongAxis, nonzero/argwhere/flatnonzero, compress, extract, choose, put, place, index helpers. */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { isInteger } from "../core/dtype.js";
import { prod } from "../core/shape.js";
import type { GatherMode } from "../primitives/indexing.js";
import * as ops from "../primitives/ops.js";
import {
  JSArray,
  arr,
  bcast,
  broadcastShape,
  concreteOf,
  constInts,
  indexDType,
  intArrayArg,
  normalizeAxis,
  normalizeIndex,
  numbersOf,
  parseArgs,
  promoteAll,
  range,
  requireConcrete,
  shapeStr,
  staticInts,
} from "./struct-util.js";
import { type NonzeroOpts, flatNonzero, nonzeroOf, staticSize } from "./nonzero-util.js";

type AL = ArrayLike | NestedValue;
type TakeMode = "fill" | "clip" | "wrap" | "raise" | "promise_in_bounds" | null;

/** Index values for a gather along an axis of size n under a jnp take mode. */
function modeIndices(fn: string, idx: Array, n: number, mode: TakeMode | undefined): [Array, GatherMode] {
  if (mode === undefined || mode === null || mode === "fill") return [normalizeIndex(idx, n), "fill"];
  if (mode === "clip") return [idx, "clip"];
  if (mode === "promise_in_bounds") return [idx, "clip"];
  if (mode === "wrap") {
    const nn = ops.scalarLike(idx, n);
    return [ops.rem(ops.add(ops.rem(idx, nn), nn), nn), "clip"];
  }
  if (mode === "raise")
    throw new Error(
      `${fn}: the 'raise' mode is not supported (JAX cannot report out-of-bound indices); use "fill", "clip" or "wrap"`,
    );
  throw new Error(
    `${fn}: invalid mode ${JSON.stringify(mode)}; expected "fill", "clip", "wrap" or "promise_in_bounds"`,
  );
}

/** jnp.take(a, indices, axis=null, out=null, mode=null, uniqueIndices, indicesAreSorted, fillValue). Out-of-bound indices fill (NaN / int min) by default. */
export function take(a: AL, indices: AL, ...args: unknown[]): Array {
  const o = parseArgs<{
    axis: number | null;
    out: null;
    mode: TakeMode;
    uniqueIndices: boolean;
    indicesAreSorted: boolean;
    fillValue: number;
  }>("take", args, ["axis", "out", "mode", "uniqueIndices", "indicesAreSorted", "fillValue"]);
  let x = arr("take", a);
  const idx = intArrayArg("take", indices);
  if (o.axis === undefined || o.axis === null) x = ops.reshape(x, [x.size]);
  const ax = normalizeAxis("take", o.axis ?? 0, x.ndim);
  const n = x.shape[ax];
  const outShape = [...x.shape.slice(0, ax), ...idx.shape, ...x.shape.slice(ax + 1)];
  if (n === 0) {
    if (idx.size !== 0)
      throw new RangeError(
        `take: cannot do a non-empty take from an empty axis (axis ${ax} of shape ${shapeStr(x.shape)})`,
      );
    return ops.full(outShape, 0, x.dtype);
  }
  const [iv, gm] = modeIndices("take", ops.convert(idx, "int32"), n, o.mode);
  const g = ops.gather(x, ops.reshape(iv, [...idx.shape, 1]), [ax], gm, o.fillValue ?? null);
  // gather puts the index dims first; move them to the taken axis' place
  const k = idx.ndim,
    perm = [...range(ax).map((i) => k + i), ...range(k), ...range(x.ndim - 1 - ax).map((i) => k + ax + i)];
  return ops.transpose(g, perm);
}

/** Full operand coordinates for take/putAlongAxis: int32 [...outShape, ndim]. */
function alongCoords(x: Array, iv: Array, ax: number, outShape: number[]): Array {
  const comps = range(x.ndim).map((d) => {
    const c =
      d === ax
        ? bcast(iv, outShape)
        : x.shape[d] === 1
          ? ops.full(outShape, 0, "int32")
          : ops.iota("int32", outShape, d);
    return ops.reshape(c, [...outShape, 1]);
  });
  return ops.concatenate(comps, outShape.length);
}
function alongSetup(
  fn: string,
  a: AL,
  indices: AL,
  axis: number | null | undefined,
): { x: Array; idx: Array; ax: number; outShape: number[] } {
  let x = arr(fn, a);
  let idx = intArrayArg(fn, indices);
  if (axis === null || axis === undefined) {
    if (idx.ndim !== 1) throw new Error(`${fn}: indices must be 1-D when axis=null, got shape ${shapeStr(idx.shape)}`);
    x = ops.reshape(x, [x.size]);
  }
  if (x.ndim !== idx.ndim)
    throw new Error(
      `${fn}: indices and arr must have the same number of dimensions; got indices of shape ${shapeStr(idx.shape)} and arr of shape ${shapeStr(x.shape)}`,
    );
  const ax = normalizeAxis(fn, axis ?? 0, x.ndim);
  const arrShape = x.shape.map((d, i) => (i === ax ? 1 : d));
  const outShape = broadcastShape([idx.shape, arrShape], fn);
  idx = ops.convert(idx, "int32");
  return { x, idx, ax, outShape };
}
/** jnp.takeAlongAxis(arr, indices, axis, mode=null, fillValue): out-of-bound indices fill by default. */
export function takeAlongAxis(a: AL, indices: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ axis: number | null; mode: TakeMode; fillValue: number }>("takeAlongAxis", args, [
    "axis",
    "mode",
    "fillValue",
  ]);
  // axis defaults to -1 (JAX's and NumPy 2's signature); an explicit null means the flattened array
  const { x, idx, ax, outShape } = alongSetup("takeAlongAxis", a, indices, o.axis === undefined ? -1 : o.axis);
  if (x.shape[ax] === 0) return ops.full(outShape, 0, x.dtype);
  const [iv, gm] = modeIndices("takeAlongAxis", idx, x.shape[ax], o.mode);
  return ops.gather(x, alongCoords(x, iv, ax, outShape), range(x.ndim), gm, o.fillValue ?? null);
}
/** jnp.putAlongAxis(arr, indices, values, axis, {inplace: false, mode}): like JAX, inplace must be false. */
export function putAlongAxis(a: AL, indices: AL, values: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ axis: number | null; inplace: boolean; mode: TakeMode }>("putAlongAxis", args, [
    "axis",
    "inplace",
    "mode",
  ]);
  if (o.inplace !== false)
    throw new Error("putAlongAxis: JAX arrays are immutable; pass { inplace: false } to get the updated array");
  const { x, idx, ax, outShape } = alongSetup("putAlongAxis", a, indices, o.axis);
  const iv = normalizeIndex(idx, x.shape[ax]);
  const coords = alongCoords(x, iv, ax, outShape);
  const v = bcast(ops.convert(arr("putAlongAxis", values), x.dtype), outShape);
  const n = prod(outShape);
  const mode = o.mode === "clip" ? "clip" : "drop";
  const r = ops.scatter(x, ops.reshape(coords, [n, x.ndim]), ops.reshape(v, [n]), range(x.ndim), "none", mode);
  return o.axis === null || o.axis === undefined ? ops.reshape(r, arr("putAlongAxis", a).shape) : r;
}

// ---------------------------------------------------------------- nonzero family
/** jnp.nonzero(a, {size, fillValue}): one index array per dimension. */
export function nonzero(a: AL, opts: Partial<NonzeroOpts> = {}): Array[] {
  checkArity("nonzero", arguments, 2, "nonzero(a, { size, fillValue })");
  checkOptions("nonzero", opts, ["size", "fillValue"], "nonzero(a, { size, fillValue })");
  return nonzeroOf("nonzero", a, opts);
}
/** jnp.argwhere(a, {size, fillValue}): [N, ndim] indices of nonzero entries. */
export function argwhere(a: AL, opts: Partial<NonzeroOpts> = {}): Array {
  checkArity("argwhere", arguments, 2, "argwhere(a, { size, fillValue })");
  checkOptions("argwhere", opts, ["size", "fillValue"], "argwhere(a, { size, fillValue })");
  const x = arr("argwhere", a);
  const cols = nonzero(x.ndim === 0 ? ops.reshape(x, [1]) : x, opts);
  const st = ops.concatenate(
    cols.map((c) => ops.reshape(c, [c.shape[0], 1])),
    1,
  );
  return x.ndim === 0 ? ops.sliceInDim(st, 0, 0, 1, 1) : st;
}
/** jnp.flatnonzero(a, {size, fillValue}). */
export function flatnonzero(a: AL, opts: Partial<NonzeroOpts> = {}): Array {
  checkArity("flatnonzero", arguments, 2, "flatnonzero(a, { size, fillValue })");
  checkOptions("flatnonzero", opts, ["size", "fillValue"], "flatnonzero(a, { size, fillValue })");
  const x = arr("flatnonzero", a);
  return nonzero(ops.reshape(x, [x.size]), opts)[0];
}
/** jnp.compress(condition, a, axis=null, {size, fillValue}). */
export function compress(condition: AL, a: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ axis: number | null; out: null; size: number; fillValue: number }>(
    "compress",
    args,
    ["axis", "out"],
    ["size", "fillValue"],
  );
  const c0 = arr("compress", condition);
  if (c0.ndim !== 1) throw new Error(`compress: condition must be a 1-D array, got shape ${shapeStr(c0.shape)}`);
  let x = arr("compress", a);
  if (o.axis === undefined || o.axis === null) x = ops.reshape(x, [x.size]);
  const ax = normalizeAxis("compress", o.axis ?? 0, x.ndim);
  x = ops.moveaxis(x, ax, 0);
  let cond = c0.dtype === "bool" ? c0 : ops.ne(c0, ops.scalarLike(c0, 0));
  const n = x.shape[0];
  if (cond.shape[0] > n) {
    const extra = concreteOf(ops.sliceInDim(cond, n, cond.shape[0], 1, 0));
    if (extra && numbersOf(extra).some((v) => v))
      throw new RangeError(
        `compress: condition of length ${cond.shape[0]} selects entries past the end of axis ${ax} (size ${n})`,
      );
    cond = ops.sliceInDim(cond, 0, n, 1, 0);
  } else if (cond.shape[0] < n) x = ops.sliceInDim(x, 0, cond.shape[0], 1, 0);
  const size = staticSize("compress", cond, o.size);
  const [pos, count] = flatNonzero(cond, size);
  let r = ops.gather(x, ops.reshape(pos, [size, 1]), [0], "clip");
  if (o.size !== undefined) {
    const valid = ops.broadcastInDim(ops.lt(ops.iota("int32", [size], 0), count), r.shape, [0]);
    r = ops.select(valid, r, ops.full(r.shape, o.fillValue ?? 0, r.dtype));
  }
  return ops.moveaxis(r, 0, ax);
}
/** jnp.extract(condition, arr, {size, fillValue}) = compress(ravel(condition), ravel(arr)). */
export function extract(condition: AL, a: AL, opts: { size?: number; fillValue?: number } = {}): Array {
  const c = arr("extract", condition),
    x = arr("extract", a);
  return compress(ops.reshape(c, [c.size]), ops.reshape(x, [x.size]), { ...opts });
}

/** jnp.choose(a, choices, out=null, mode="raise"). */
export function choose(a: AL, choices: AL[], ...args: unknown[]): Array {
  const o = parseArgs<{ out: null; mode: "raise" | "wrap" | "clip" }>("choose", args, ["out", "mode"]);
  let idx = arr("choose", a);
  if (!isInteger(idx.dtype))
    throw new TypeError(`choose: the index array a must be integer typed, got ${idx.aval.str()}`);
  const cs = promoteAll(
    "choose",
    choices.map((c) => arr("choose", c)),
  );
  const n = cs.length;
  if (n === 0) throw new Error("choose: choices must not be empty");
  const mode = o.mode ?? "raise";
  idx = ops.convert(idx, "int32");
  if (mode === "raise") {
    const c = requireConcrete("choose", idx, "a (with mode='raise')", "Use mode='wrap' or mode='clip' instead.");
    if (numbersOf(c).some((v) => v < 0 || v >= n))
      throw new RangeError(`choose: invalid entry in choice array (entries must be in [0, ${n}))`);
  } else if (mode === "wrap") {
    const nn = ops.full([], n, "int32");
    idx = ops.rem(ops.add(ops.rem(idx, nn), nn), nn);
  } else if (mode === "clip") idx = ops.clamp(0, idx, n - 1);
  else throw new Error(`choose: mode=${JSON.stringify(mode)} not understood; must be "raise", "wrap" or "clip"`);
  const shape = broadcastShape([idx.shape, ...cs.map((c) => c.shape)], "choose");
  const bs = cs.map((c) => bcast(c, shape));
  if (n === 1) return bs[0];
  return ops.selectN(bcast(idx, shape), bs);
}

/** jnp.put(a, ind, v, mode=null, {inplace: false}): flat-index assignment; v cycles to the number of indices. */
export function put(a: AL, ind: AL, v: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ mode: TakeMode; inplace: boolean }>("put", args, ["mode"], ["inplace"]);
  if (o.inplace !== false)
    throw new Error("put: JAX arrays are immutable; pass { inplace: false } to get the updated array");
  const x = arr("put", a);
  const ia = intArrayArg("put", ind);
  const idx = ops.reshape(ia, [ia.size]);
  let vals = ops.convert(arr("put", v), x.dtype);
  vals = ops.reshape(vals, [vals.size]);
  const k = idx.shape[0];
  if (vals.size === 0 && k > 0) throw new Error("put: cannot put an empty set of values");
  if (vals.size !== k && k > 0)
    vals = ops.gather(
      vals,
      constInts(
        range(k).map((i) => i % vals.size),
        [k, 1],
      ),
      [0],
      "clip",
    );
  const flat = ops.reshape(x, [x.size]);
  let iv = ops.convert(idx, "int32");
  let mode: GatherMode = "drop";
  if (o.mode === "clip") mode = "clip";
  else if (o.mode === "wrap") {
    const nn = ops.full([], x.size, "int32");
    iv = ops.rem(ops.add(ops.rem(iv, nn), nn), nn);
  } else iv = normalizeIndex(iv, x.size);
  return ops.reshape(
    ops.scatter(flat, ops.reshape(iv, [k, 1]), k ? vals : ops.full([0], 0, x.dtype), [0], "none", mode),
    x.shape,
  );
}
/** jnp.place(arr, mask, vals, {inplace: false}): writes vals (cycled) into the positions where the concrete mask is true. */
export function place(a: AL, mask: AL, vals: AL, opts: { inplace?: boolean } = {}): Array {
  if (opts.inplace !== false)
    throw new Error("place: JAX arrays are immutable; pass { inplace: false } to get the updated array");
  const x = arr("place", a),
    m = arr("place", mask);
  if (m.size !== x.size)
    throw new Error(
      `place: mask of shape ${shapeStr(m.shape)} must have the same size as arr of shape ${shapeStr(x.shape)}`,
    );
  const pos = numbersOf(requireConcrete("place", m, "mask")).flatMap((b, i) => (b ? [i] : []));
  return put(x, constInts(pos), vals, { inplace: false });
}

// ---------------------------------------------------------------- index construction helpers
/** jnp.diagIndices(n, ndim=2). */
export function diagIndices(n: number, ndim = 2): Array[] {
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`diagIndices: n argument must be a non-negative integer, got ${n}`);
  return range(ndim).map(() => ops.iota(indexDType(), [n], 0));
}
/** jnp.diagIndicesFrom(arr): needs every dimension equal and ndim >= 2. */
export function diagIndicesFrom(a: AL): Array[] {
  const x = arr("diagIndicesFrom", a);
  if (x.ndim < 2) throw new Error(`diagIndicesFrom: input array must be at least 2-d, got shape ${shapeStr(x.shape)}`);
  if (x.shape.some((d) => d !== x.shape[0]))
    throw new Error(
      `diagIndicesFrom: all dimensions of the input must be of equal length, got shape ${shapeStr(x.shape)}`,
    );
  return diagIndices(x.shape[0], x.ndim);
}
function triIndices(n: number, k: number, m: number | undefined, lower: boolean): Array[] {
  const cols = m ?? n;
  const r: number[] = [],
    c: number[] = [];
  for (let i = 0; i < n; i++)
    for (let j = 0; j < cols; j++)
      if (lower ? j - i <= k : j - i >= k) {
        r.push(i);
        c.push(j);
      }
  return [constInts(r, [r.length], indexDType()), constInts(c, [c.length], indexDType())];
}
/** jnp.trilIndices(n, k=0, m=null). */
export function trilIndices(n: number, k = 0, m?: number): Array[] {
  return triIndices(n, k, m, true);
}
/** jnp.triuIndices(n, k=0, m=null). */
export function triuIndices(n: number, k = 0, m?: number): Array[] {
  return triIndices(n, k, m, false);
}
function triFrom(fn: string, a: AL, k: number, lower: boolean): Array[] {
  const x = arr(fn, a);
  if (x.ndim !== 2) throw new Error(`${fn}: input array must be 2-d, got shape ${shapeStr(x.shape)}`);
  return triIndices(x.shape[0], k, x.shape[1], lower);
}
/** jnp.trilIndicesFrom(arr, k=0). */
export const trilIndicesFrom = (a: AL, k = 0): Array[] => triFrom("trilIndicesFrom", a, k, true);
/** jnp.triuIndicesFrom(arr, k=0). */
export const triuIndicesFrom = (a: AL, k = 0): Array[] => triFrom("triuIndicesFrom", a, k, false);

/** jnp.unravelIndex(indices, shape): out-of-bound flat indices are clipped into range, negative ones wrap once (as in JAX). */
export function unravelIndex(indices: AL, shape: number[]): Array[] {
  const idx = intArrayArg("unravelIndex", indices);
  const s = staticInts("unravelIndex", shape, "shape");
  if (s.some((d) => d < 0)) throw new Error(`unravelIndex: shape must be non-negative, got ${shapeStr(s)}`);
  const total = prod(s);
  if (total === 0) {
    if (idx.size) throw new RangeError(`unravelIndex: cannot unravel indices into an empty shape ${shapeStr(s)}`);
    return s.map(() => ops.full(idx.shape, 0, idx.dtype));
  }
  let c = ops.clamp(-total, idx, total - 1);
  c = ops.select(ops.lt(c, ops.scalarLike(c, 0)), ops.add(c, ops.scalarLike(c, total)), c);
  const out: Array[] = new JSArray(s.length);
  for (let d = s.length - 1; d >= 0; d--) {
    out[d] = ops.rem(c, ops.scalarLike(c, s[d]));
    c = ops.div(c, ops.scalarLike(c, s[d]));
  }
  return out;
}
/** jnp.ravelMultiIndex(multiIndex, dims, mode="raise", order="C"). */
export function ravelMultiIndex(multiIndex: AL[], dims: number[], ...args: unknown[]): Array {
  const o = parseArgs<{ mode: "raise" | "wrap" | "clip"; order: "C" | "F" }>("ravelMultiIndex", args, [
    "mode",
    "order",
  ]);
  const d = staticInts("ravelMultiIndex", dims, "dims");
  if (multiIndex.length !== d.length)
    throw new Error(
      `ravelMultiIndex: multiIndex has ${multiIndex.length} arrays but dims ${shapeStr(d)} has ${d.length} entries`,
    );
  const idx = promoteAll(
    "ravelMultiIndex",
    multiIndex.map((m) => intArrayArg("ravelMultiIndex", m)),
  );
  const shape = broadcastShape(
    idx.map((i) => i.shape),
    "ravelMultiIndex",
  );
  const mode = o.mode ?? "raise";
  const fixed = idx.map((i, k) => {
    const n = d[k];
    if (mode === "raise") {
      const c = requireConcrete(
        "ravelMultiIndex",
        i,
        "multiIndex (with mode='raise')",
        "Use mode='wrap' or mode='clip' instead.",
      );
      if (numbersOf(c).some((v) => v < 0 || v >= n))
        throw new RangeError(`ravelMultiIndex: invalid entry in coordinates array (dimension ${k} has size ${n})`);
      return i;
    }
    if (mode === "clip") return ops.clamp(0, i, n - 1);
    if (mode === "wrap") {
      const nn = ops.scalarLike(i, n);
      return ops.rem(ops.add(ops.rem(i, nn), nn), nn);
    }
    throw new Error(`ravelMultiIndex: invalid mode ${JSON.stringify(mode)}`);
  });
  const order = o.order ?? "C";
  const strides = d.map((_, k) => (order === "C" ? prod(d.slice(k + 1)) : prod(d.slice(0, k))));
  let out = ops.full(shape, 0, fixed[0].dtype);
  fixed.forEach((i, k) => {
    out = ops.add(out, ops.mul(bcast(i, shape), ops.full([], strides[k], i.dtype)));
  });
  return out;
}
/** jnp.ix_(...args): an open mesh from 1-D integer (or boolean) sequences. */
export function ix_(...args: AL[]): Array[] {
  const n = args.length;
  return args.map((a, k) => {
    let x = arr("ix_", a);
    if (x.ndim !== 1) throw new Error(`ix_: arguments must be 1-D, got shape ${shapeStr(x.shape)} for argument ${k}`);
    if (x.dtype === "bool") x = nonzero(x)[0];
    else if (!isInteger(x.dtype))
      throw new TypeError(`ix_: arguments must be integer or boolean arrays, got ${x.aval.str()}`);
    return ops.reshape(
      x,
      range(n).map((i) => (i === k ? x.shape[0] : 1)),
    );
  });
}
