/**
 * @file Indexing primitives: gather / scatter over a set of operand axes (point indices, like ONNX GatherND/ScatterND),
 * dynamic_slice and dynamic_update_slice. jnp's advanced indexing lowers onto these.
 */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { wrapInt } from "../core/convert.js";
import { type DType, allocate, isFloat, isInteger, isUnsigned, intRange } from "../core/dtype.js";
import { type MaybeZero, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { prod, shapeStr, stridesOf } from "../core/shape.js";
import { fromNums, nums } from "./ref-util.js";
import * as ops from "./bind-ops.js";
import * as LI from "../compiler/lower-indexing.js";

export type GatherMode = "clip" | "fill" | "drop" | "promise_in_bounds";
export type ScatterReduce = "none" | "add" | "mul" | "min" | "max";
type GP = { axes: number[]; mode: GatherMode; fill_value: number | null };
type SP = { axes: number[]; reduce: ScatterReduce; mode: GatherMode };

const rest = (shape: readonly number[], axes: readonly number[]) => shape.filter((_, i) => !axes.includes(i));
function checkIdx(name: string, x: ShapedArray, idx: ShapedArray, axes: readonly number[]): void {
  if (!isInteger(idx.dtype)) throw new TypeError(`${name}: indices must be integers, got ${idx.str()}`);
  if (idx.ndim < 1 || idx.shape[idx.ndim - 1] !== axes.length)
    throw new TypeError(
      `${name}: indices ${idx.str()} must end in a dimension of size ${axes.length} (one per indexed axis ${shapeStr(axes)})`,
    );
  for (const a of axes)
    if (a < 0 || a >= x.ndim) throw new TypeError(`${name}: axis ${a} out of range for operand ${x.str()}`);
  if (new Set(axes).size !== axes.length) throw new TypeError(`${name}: repeated axes ${shapeStr(axes)}`);
}
export function defaultFill(d: DType): number {
  if (isFloat(d)) return NaN;
  if (d === "bool") return 1;
  return isUnsigned(d) ? intRange(d)[1] : intRange(d)[0];
}

/** For each index tuple: the operand offset of its slice start, or -1 when out of bounds (fill/drop). */
function tupleOffsets(x: ShapedArray, idx: ArrayImpl, axes: readonly number[], mode: GatherMode): Float64Array {
  // one index tuple per position of the leading (batch) dims of `indices`, even when no axis is indexed
  const k = axes.length,
    nb = prod(idx.shape.slice(0, -1));
  const iv = nums(idx),
    xs = stridesOf(x.shape);
  const offs = new Float64Array(nb);
  for (let b = 0; b < offs.length; b++) {
    let o = 0;
    for (let j = 0; j < k; j++) {
      let i = iv[b * k + j];
      const n = x.shape[axes[j]];
      if (i < 0 || i >= n) {
        if (mode === "fill" || mode === "drop") {
          o = -1;
          break;
        }
        i = Math.min(Math.max(i, 0), n - 1);
      }
      o += i * xs[axes[j]];
    }
    offs[b] = o;
  }
  return offs;
}
/** Relative offsets of the non-indexed ("window") elements. */
function windowOffsets(x: ShapedArray, axes: readonly number[]): Float64Array {
  const xs = stridesOf(x.shape);
  const dims = [...x.shape.keys()].filter((i) => !axes.includes(i));
  const n = prod(dims.map((d) => x.shape[d]));
  const out = new Float64Array(n);
  const idx = new globalThis.Array<number>(dims.length).fill(0);
  for (let w = 0; w < n; w++) {
    out[w] = idx.reduce((a, v, j) => a + v * xs[dims[j]], 0);
    for (let j = dims.length - 1; j >= 0; j--) {
      if (++idx[j] < x.shape[dims[j]]) break;
      idx[j] = 0;
    }
  }
  return out;
}

export const gatherP = new Primitive<GP>(
  "gather",
  {
    lower: (ctx, [x, i], p, [a, ia], [o]) => [
      LI.gather(ctx, x, i, a, ia, o, p.axes, p.mode, p.fill_value ?? defaultFill(a.dtype)),
    ],
    abstractEval([x, idx], { axes }) {
      checkIdx("gather", x, idx, axes);
      return [new ShapedArray([...idx.shape.slice(0, -1), ...rest(x.shape, axes)], x.dtype, x.weakType)];
    },
    impl([x, idx], { axes, mode, fill_value }, [out]) {
      const offs = tupleOffsets(x.aval, idx, axes, mode);
      const win = windowOffsets(x.aval, axes);
      const o = allocate(out.dtype, out.size) as Float64Array;
      const src = x.buffer as Float64Array;
      const fill = fill_value ?? defaultFill(x.dtype);
      const fillStored = fromNums(new ShapedArray([], x.dtype), [fill]).buffer[0] as number;
      for (let b = 0; b < offs.length; b++)
        for (let w = 0; w < win.length; w++) {
          o[b * win.length + w] = offs[b] < 0 ? fillStored : src[offs[b] + win[w]];
        }
      return [new ArrayImpl(out, o)];
    },
    jvp([x, idx], [t], p) {
      const y = ops.gather(x, idx, p.axes, p.mode, p.fill_value);
      return [[y], [t instanceof Zero ? new Zero(y.aval) : ops.gather(t, idx, p.axes, p.mode, 0)]];
    },
    transpose([ct], [x, idx], { axes, mode }) {
      const a = (x as UndefinedPrimal).aval;
      if (ct instanceof Zero) return [new Zero(a), null];
      return [ops.scatter(ops.zerosLikeAval(a), idx as Array, ct, axes, "add", mode === "fill" ? "drop" : mode), null];
    },
    vmap(axis, [x, idx], [dx, di], p) {
      if (di === null) {
        const xb = ops.moveaxis(x, dx!, 0);
        const y = ops.gather(
          xb,
          idx,
          p.axes.map((a) => a + 1),
          p.mode,
          p.fill_value,
        );
        return [[y], [idx.ndim - 1]];
      }
      const xb = dx === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, dx, 0);
      const [ib, axesB] = batchIndices(ops.moveaxis(idx, di, 0), axis.size, p.axes);
      return [[ops.gather(xb, ib, axesB, p.mode, p.fill_value)], [0]];
    },
  },
  { cost: "move", exactOnScalars: true },
);

/** Prepends the batch position to every index tuple so a batched operand (batch at axis 0) is indexed per example. */
function batchIndices(idx: Array, n: number, axes: readonly number[]): [Array, number[]] {
  const bshape = [...idx.shape.slice(0, -1), 1];
  const b = ops.convert(ops.iota("int32", bshape, 0), idx.dtype);
  return [ops.concatenate([b, idx], idx.ndim - 1), [0, ...axes.map((a) => a + 1)]];
}

export const scatterP = new Primitive<SP>("scatter", {
  lower: (ctx, [x, i, u], p, [a, ia, ua]) => [LI.scatter(ctx, x, i, u, a, ia, ua, p.axes, p.reduce, p.mode)],
  abstractEval([x, idx, upd], { axes }) {
    checkIdx("scatter", x, idx, axes);
    const want = [...idx.shape.slice(0, -1), ...rest(x.shape, axes)];
    if (upd.shape.join() !== want.join() || upd.dtype !== x.dtype)
      throw new TypeError(
        `scatter: updates ${upd.str()} must have shape ${shapeStr(want)} and dtype ${x.dtype} for operand ${x.str()} and indices ${idx.str()}`,
      );
    return [x];
  },
  impl([x, idx, upd], { axes, reduce, mode }, [out]) {
    const offs = tupleOffsets(x.aval, idx, axes, mode === "fill" ? "drop" : mode);
    const win = windowOffsets(x.aval, axes);
    const r = nums(x),
      u = nums(upd);
    const int = isInteger(x.dtype);
    for (let b = 0; b < offs.length; b++) {
      if (offs[b] < 0) continue;
      for (let w = 0; w < win.length; w++) {
        const j = offs[b] + win[w],
          v = u[b * win.length + w];
        switch (reduce) {
          case "none":
            r[j] = v;
            break;
          case "add":
            r[j] = x.dtype === "bool" ? (r[j] || v ? 1 : 0) : int ? wrapInt(r[j] + v, x.dtype) : r[j] + v;
            break;
          case "mul":
            r[j] = int ? wrapInt(Math.imul(r[j], v), x.dtype) : r[j] * v;
            break;
          case "min":
            r[j] = Number.isNaN(v) || v < r[j] ? v : r[j];
            break;
          case "max":
            r[j] = Number.isNaN(v) || v > r[j] ? v : r[j];
            break;
        }
      }
    }
    return [fromNums(out, r)];
  },
  jvp([x, idx, upd], [tx, , tu], p) {
    const y = ops.scatter(x, idx, upd, p.axes, p.reduce, p.mode);
    if (tx instanceof Zero && tu instanceof Zero) return [[y], [new Zero(y.aval)]];
    const txa = tx instanceof Zero ? ops.zerosLikeArray(x) : tx,
      tua = tu instanceof Zero ? ops.zerosLikeArray(upd) : tu;
    if (p.reduce === "add" || p.reduce === "none") return [[y], [ops.scatter(txa, idx, tua, p.axes, p.reduce, p.mode)]];
    if (p.reduce === "mul") {
      // y = x * prod(u at i): dy = tx * P + x * dP, with dP by scattering u-tangents multiplicatively is not linear;
      // use the identity dy = tx*P + y * sum(tu/u) valid where u != 0
      const P = ops.scatter(ops.fullLike(x, 1), idx, upd, p.axes, "mul", p.mode);
      const S = ops.scatter(ops.zerosLikeArray(x), idx, ops.div(tua, upd), p.axes, "add", p.mode);
      return [[y], [ops.add(ops.mul(txa, P), ops.mul(y, S))]];
    }
    // min/max: tangent of whichever value won (ties: average) — same chooser idea as reduce_max
    const xWins = ops.convert(ops.eq(x, y), x.dtype);
    const uWinsAtIdx = ops.convert(ops.eq(upd, ops.gather(y, idx, p.axes, "clip")), x.dtype);
    const cnt = ops.add(xWins, ops.scatter(ops.zerosLikeArray(x), idx, uWinsAtIdx, p.axes, "add", p.mode));
    const num = ops.add(
      ops.mul(txa, xWins),
      ops.scatter(ops.zerosLikeArray(x), idx, ops.mul(tua, uWinsAtIdx), p.axes, "add", p.mode),
    );
    return [[y], [ops.div(num, cnt)]];
  },
  transpose([ct], [x, idx, upd], { axes, reduce, mode }) {
    if (reduce !== "add" && reduce !== "none") throw new Error(`scatter transpose: scatter-${reduce} is not linear`);
    const xa = x instanceof UndefinedPrimal ? x.aval : (x as Array).aval;
    const ua = upd instanceof UndefinedPrimal ? upd.aval : (upd as Array).aval;
    if (ct instanceof Zero)
      return [
        x instanceof UndefinedPrimal ? new Zero(xa) : null,
        null,
        upd instanceof UndefinedPrimal ? new Zero(ua) : null,
      ];
    const ctx = reduce === "add" ? ct : ops.scatter(ct, idx as Array, ops.zerosLikeAval(ua), axes, "none", mode);
    const ctu = ops.gather(ct, idx as Array, axes, mode === "drop" ? "fill" : "clip", 0);
    return [x instanceof UndefinedPrimal ? ctx : null, null, upd instanceof UndefinedPrimal ? ctu : null];
  },
  vmap(axis, [x, idx, upd], [dx, di, du], p) {
    const xb = dx === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, dx, 0);
    const ib0 = di === null ? ops.broadcastBatch(idx, axis.size, 0) : ops.moveaxis(idx, di, 0);
    const ub = du === null ? ops.broadcastBatch(upd, axis.size, 0) : ops.moveaxis(upd, du, 0);
    const [ib, axesB] = batchIndices(ib0, axis.size, p.axes);
    return [[ops.scatter(xb, ib, ub, axesB, p.reduce, p.mode)], [0]];
  },
});

// ---------------------------------------------------------------- dynamic_slice / dynamic_update_slice
function clampStarts(x: ShapedArray, starts: ArrayImpl[], sizes: readonly number[]): number[] {
  return starts.map((s, i) => Math.min(Math.max(Number(s.item()), 0), x.shape[i] - sizes[i]));
}
function checkStarts(name: string, x: ShapedArray, starts: ShapedArray[]): void {
  if (starts.length !== x.ndim)
    throw new TypeError(`${name}: needs ${x.ndim} start indices for ${x.str()}, got ${starts.length}`);
  for (const s of starts)
    if (s.ndim !== 0 || !isInteger(s.dtype))
      throw new TypeError(`${name}: start indices must be integer scalars, got ${s.str()}`);
}
export const dynamicSliceP = new Primitive<{ slice_sizes: number[] }>(
  "dynamic_slice",
  {
    lower: (ctx, [x, ...s], p, [a, ...sa]) => [LI.dynamicSlice(ctx, x, s, a, sa, p.slice_sizes)],
    abstractEval([x, ...starts], { slice_sizes }) {
      checkStarts("dynamic_slice", x, starts);
      if (slice_sizes.length !== x.ndim || slice_sizes.some((s, i) => s < 0 || s > x.shape[i]))
        throw new TypeError(`dynamic_slice: slice_sizes ${shapeStr(slice_sizes)} must fit in ${x.str()}`);
      return [new ShapedArray(slice_sizes, x.dtype, x.weakType)];
    },
    impl([x, ...starts], { slice_sizes }, [out]) {
      const s = clampStarts(x.aval, starts, slice_sizes);
      const r = ops.slice(
        x,
        s,
        s.map((v, i) => v + slice_sizes[i]),
      ) as ArrayImpl;
      return [new ArrayImpl(out, r.shareableBuffer)];
    },
    jvp([x, ...starts], [t], p) {
      const y = ops.dynamicSlice(x, starts, p.slice_sizes);
      return [[y], [t instanceof Zero ? new Zero(y.aval) : ops.dynamicSlice(t, starts, p.slice_sizes)]];
    },
    transpose([ct], [x, ...starts]) {
      const a = (x as UndefinedPrimal).aval;
      if (ct instanceof Zero) return [new Zero(a), ...starts.map(() => null)];
      return [ops.dynamicUpdateSlice(ops.zerosLikeAval(a), ct, starts as Array[]), ...starts.map(() => null)];
    },
    vmap(axis, [x, ...starts], [dx, ...ds], { slice_sizes }) {
      if (ds.every((d) => d === null)) {
        const xb = ops.moveaxis(x, dx!, 0);
        return [
          [ops.dynamicSlice(xb, [ops.full([], 0, starts[0].dtype), ...starts], [axis.size, ...slice_sizes])],
          [0],
        ];
      }
      const xb = dx === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, dx, 0);
      const grid = sliceGrid(xb.shape.slice(1), starts, ds, axis.size, slice_sizes);
      return [[ops.gather(xb, grid, [...xb.shape.keys()], "clip")], [0]];
    },
  },
  { cost: "move", exactOnScalars: true },
);

/** Index grid [n, ...sizes, 1 + ndim] addressing a per-example (clamped) dynamic window. */
function sliceGrid(
  shape: readonly number[],
  starts: Array[],
  ds: (number | null)[],
  n: number,
  sizes: readonly number[],
): Array {
  const gshape = [n, ...sizes];
  const comps: Array[] = [ops.iota("int32", [...gshape, 1], 0)];
  starts.forEach((s, i) => {
    const sb = ds[i] === null ? ops.broadcastBatch(s, n, 0) : ops.moveaxis(s, ds[i]!, 0);
    const clamped = ops.clamp(
      ops.full([], 0, "int32"),
      ops.convert(sb, "int32"),
      ops.full([], shape[i] - sizes[i], "int32"),
    );
    const st = ops.broadcastInDim(clamped, [...gshape, 1], [0]);
    comps.push(ops.add(st, ops.iota("int32", [...gshape, 1], i + 1)));
  });
  return ops.concatenate(comps, gshape.length);
}

export const dynamicUpdateSliceP = new Primitive(
  "dynamic_update_slice",
  {
    lower: (ctx, [x, u, ...s], _p, [a, ua, ...sa]) => [LI.dynamicUpdateSlice(ctx, x, u, s, a, ua, sa)],
    abstractEval([x, upd, ...starts]) {
      checkStarts("dynamic_update_slice", x, starts);
      if (upd.dtype !== x.dtype || upd.ndim !== x.ndim || upd.shape.some((s, i) => s > x.shape[i]))
        throw new TypeError(
          `dynamic_update_slice: update ${upd.str()} must fit in operand ${x.str()} with the same dtype`,
        );
      return [x];
    },
    impl([x, upd, ...starts], _p, [out]) {
      const s = clampStarts(x.aval, starts, upd.shape);
      const o = x.buffer.slice() as Float64Array;
      const xs = stridesOf(x.shape),
        us = upd.shape,
        u = upd.buffer as Float64Array;
      const idx = new globalThis.Array<number>(us.length).fill(0);
      for (let k = 0; k < upd.size; k++) {
        let off = 0;
        for (let d = 0; d < us.length; d++) off += (s[d] + idx[d]) * xs[d];
        o[off] = u[k];
        for (let d = us.length - 1; d >= 0; d--) {
          if (++idx[d] < us[d]) break;
          idx[d] = 0;
        }
      }
      return [new ArrayImpl(out, o)];
    },
    jvp([x, upd, ...starts], [tx, tu]) {
      const y = ops.dynamicUpdateSlice(x, upd, starts);
      if (tx instanceof Zero && tu instanceof Zero) return [[y], [new Zero(y.aval)]];
      return [
        [y],
        [
          ops.dynamicUpdateSlice(
            tx instanceof Zero ? ops.zerosLikeArray(x) : tx,
            tu instanceof Zero ? ops.zerosLikeArray(upd) : tu,
            starts,
          ),
        ],
      ];
    },
    transpose([ct], [x, upd, ...starts]) {
      const xa = x instanceof UndefinedPrimal ? x.aval : (x as Array).aval;
      const ua = upd instanceof UndefinedPrimal ? upd.aval : (upd as Array).aval;
      const nul = starts.map(() => null);
      if (ct instanceof Zero)
        return [
          x instanceof UndefinedPrimal ? new Zero(xa) : null,
          upd instanceof UndefinedPrimal ? new Zero(ua) : null,
          ...nul,
        ];
      const ctx = ops.dynamicUpdateSlice(ct, ops.zerosLikeAval(ua), starts as Array[]);
      const ctu = ops.dynamicSlice(ct, starts as Array[], ua.shape);
      return [x instanceof UndefinedPrimal ? ctx : null, upd instanceof UndefinedPrimal ? ctu : null, ...nul];
    },
    vmap(axis, [x, upd, ...starts], [dx, du, ...ds]) {
      const xb = dx === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, dx, 0);
      const ub = du === null ? ops.broadcastBatch(upd, axis.size, 0) : ops.moveaxis(upd, du, 0);
      if (ds.every((d) => d === null))
        return [[ops.dynamicUpdateSlice(xb, ub, [ops.full([], 0, starts[0].dtype), ...starts])], [0]];
      const grid = sliceGrid(
        xb.shape.slice(1),
        starts,
        ds,
        axis.size,
        upd.shape.slice(dx === null && du === null ? 0 : 0, undefined).length === upd.ndim
          ? ub.shape.slice(1)
          : ub.shape.slice(1),
      );
      return [[ops.scatter(xb, grid, ub, [...xb.shape.keys()], "none", "clip")], [0]];
    },
  },
  { cost: "move", exactOnScalars: true },
);

export type { MaybeZero };
