/** @file reduce_window_sum / reduce_window_max / reduce_window_min: windowed reductions (pooling) with padding, strides and base/window dilation. */
import type { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { type DType, isFloat, isBool, isBigInt } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { type AxisData, type BDim, type MaybeZero, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { prod, shapeStr, stridesOf } from "../core/shape.js";
import { bind1 } from "../core/trace.js";
import { fromNums, nums } from "./ref-util.js";
import * as ops from "./ops.js";
import { dilateDim } from "./conv.js";
import { ONNX_TYPE, roundTo, reshape as lowerReshape, transpose as lowerTranspose } from "../compiler/lower-util.js";
import * as LS from "../compiler/lower-structural.js";
import { lowerFun } from "../compiler/context.js";

export type WindowParams = {
  window_dimensions: number[];
  window_strides: number[];
  padding: [number, number][];
  base_dilation: number[];
  window_dilation: number[];
};
export type WindowKind = "sum" | "max" | "min";

const LOWEST: Record<string, number> = {
  int8: -128,
  int16: -32768,
  int32: -2147483648,
  uint8: 0,
  uint16: 0,
  uint32: 0,
  bool: 0,
};
const HIGHEST: Record<string, number> = {
  int8: 127,
  int16: 32767,
  int32: 2147483647,
  uint8: 255,
  uint16: 65535,
  uint32: 4294967295,
  bool: 1,
};
/** The identity of the reduction for dtype d (the padding value): 0, the lowest value, the highest value. */
export function windowInit(kind: WindowKind, d: DType): number {
  if (kind === "sum") return 0;
  if (isFloat(d)) return kind === "max" ? -Infinity : Infinity;
  return kind === "max" ? LOWEST[d] : HIGHEST[d];
}

function windowShape(name: string, x: ShapedArray, p: WindowParams): number[] {
  const bad = (m: string) =>
    new TypeError(
      `${name}: ${m}; operand ${x.str()}, params ${JSON.stringify({ window_dimensions: p.window_dimensions, window_strides: p.window_strides, padding: p.padding, base_dilation: p.base_dilation, window_dilation: p.window_dilation })}`,
    );
  for (const [k, v] of [
    ["window_dimensions", p.window_dimensions],
    ["window_strides", p.window_strides],
    ["base_dilation", p.base_dilation],
    ["window_dilation", p.window_dilation],
  ] as const) {
    if (v.length !== x.ndim) throw bad(`${k} ${shapeStr(v)} must have one entry per operand dimension (${x.ndim})`);
    if (v.some((e) => !Number.isInteger(e) || e < (k === "window_dimensions" ? 0 : 1)))
      throw bad(`${k} ${shapeStr(v)} must hold ${k === "window_dimensions" ? "non-negative" : "positive"} integers`);
  }
  if (p.padding.length !== x.ndim) throw bad(`padding has ${p.padding.length} pairs, expected ${x.ndim}`);
  if (isBigInt(x.dtype) || x.dtype === "bool") throw bad(`unsupported dtype ${x.dtype}`);
  return x.shape.map((n, i) => {
    const padded = dilateDim(n, p.base_dilation[i]) + p.padding[i][0] + p.padding[i][1];
    const win = dilateDim(p.window_dimensions[i], p.window_dilation[i]);
    return padded < win ? 0 : Math.floor((padded - win) / p.window_strides[i]) + 1;
  });
}

function windowImpl(
  kind: WindowKind,
  X: Float64Array,
  xShape: readonly number[],
  p: WindowParams,
  outShape: number[],
  init: number,
): Float64Array {
  const nd = xShape.length,
    xs = stridesOf(xShape);
  const r = new Float64Array(prod(outShape));
  const win = p.window_dimensions,
    nWin = prod(win);
  const oi = new globalThis.Array<number>(nd).fill(0);
  for (let q = 0; q < r.length; q++) {
    let acc = init;
    const ki = new globalThis.Array<number>(nd).fill(0);
    for (let w = 0; w < nWin; w++) {
      let off = 0,
        ok = true;
      for (let d = 0; d < nd; d++) {
        // position in the padded, base-dilated operand -> operand index (holes and padding hold the identity)
        const pos = oi[d] * p.window_strides[d] + ki[d] * p.window_dilation[d] - p.padding[d][0];
        if (pos < 0 || pos % p.base_dilation[d] !== 0 || pos / p.base_dilation[d] >= xShape[d]) {
          ok = false;
          break;
        }
        off += (pos / p.base_dilation[d]) * xs[d];
      }
      if (ok) {
        const v = X[off];
        if (kind === "sum") acc += v;
        else if (Number.isNaN(v) || Number.isNaN(acc)) acc = NaN;
        else if (kind === "max" ? v > acc : v < acc) acc = v;
      }
      for (let d = nd - 1; d >= 0; d--) {
        if (++ki[d] < win[d]) break;
        ki[d] = 0;
      }
    }
    r[q] = acc;
    for (let d = nd - 1; d >= 0; d--) {
      if (++oi[d] < outShape[d]) break;
      oi[d] = 0;
    }
  }
  return r;
}

/** The window's elements as prod(window) strided slices of the padded operand, each of the output's shape. */
export function windowPatches(x: Array, init: number, p: WindowParams): Array[] {
  const outShape = windowShape("reduce_window", x.aval, p);
  const xp = ops.pad(
    x,
    ops.scalarLike(x, init),
    p.padding.map(([lo, hi], i): [number, number, number] => [lo, hi, p.base_dilation[i] - 1]),
  );
  const res: Array[] = [];
  const win = p.window_dimensions,
    nWin = prod(win),
    ki = win.map(() => 0);
  for (let w = 0; w < nWin; w++) {
    const start = ki.map((k, d) => k * p.window_dilation[d]);
    const limit = start.map((s, d) => s + (outShape[d] - 1) * p.window_strides[d] + 1);
    res.push(
      outShape.some((n) => n === 0)
        ? ops.full(outShape, init, x.dtype, x.weakType)
        : ops.slice(xp, start, limit, p.window_strides),
    );
    for (let d = win.length - 1; d >= 0; d--) {
      if (++ki[d] < win[d]) break;
      ki[d] = 0;
    }
  }
  return res;
}
/** reduce_window written with pad, slice and elementwise ops (the fallback lowering). */
function windowByPatches(kind: WindowKind, x: Array, p: WindowParams): Array {
  const ps = windowPatches(x, windowInit(kind, x.dtype), p);
  const f = kind === "sum" ? ops.add : kind === "max" ? ops.max : ops.min;
  if (ps.length === 0)
    return ops.full(windowShape("reduce_window", x.aval, p), windowInit(kind, x.dtype), x.dtype, x.weakType);
  return ps.reduce((a, b) => f(a, b));
}

/** Transpose of reduce_window_sum: each window offset scatters the cotangent back (interior pad by stride-1), then undo padding and base dilation. */
function sumTranspose(ct: Array, aval: ShapedArray, p: WindowParams): Array {
  const outShape = ct.shape;
  if (ct.size === 0) return ops.zerosLikeAval(aval);
  const padded = aval.shape.map((n, d) => dilateDim(n, p.base_dilation[d]) + p.padding[d][0] + p.padding[d][1]);
  const win = p.window_dimensions,
    nWin = prod(win),
    ki = win.map(() => 0);
  let acc: Array | null = null;
  for (let w = 0; w < nWin; w++) {
    const cfg = ki.map((k, d): [number, number, number] => {
      const lo = k * p.window_dilation[d];
      return [lo, padded[d] - (lo + (outShape[d] - 1) * p.window_strides[d] + 1), p.window_strides[d] - 1];
    });
    const t = ops.pad(ct, ops.scalarLike(ct, 0), cfg);
    acc = acc === null ? t : ops.add(acc, t);
    for (let d = win.length - 1; d >= 0; d--) {
      if (++ki[d] < win[d]) break;
      ki[d] = 0;
    }
  }
  if (acc === null) return ops.zerosLikeAval(aval);
  const unpadded = ops.pad(
    acc,
    ops.scalarLike(acc, 0),
    p.padding.map(([lo, hi]): [number, number, number] => [-lo, -hi, 0]),
  );
  return ops.slice(
    unpadded,
    aval.shape.map(() => 0),
    unpadded.shape,
    p.base_dilation,
  );
}

/** Windows tile the operand (stride = window, no dilation or padding): each element lies in at most one window. */
function tiles(shape: readonly number[], p: WindowParams): boolean {
  return shape.every(
    (n, d) =>
      p.window_strides[d] === p.window_dimensions[d] &&
      p.window_dimensions[d] >= 1 &&
      p.window_dilation[d] === 1 &&
      p.base_dilation[d] === 1 &&
      p.padding[d][0] === 0 &&
      p.padding[d][1] === 0 &&
      n >= p.window_dimensions[d],
  );
}
/** The windows of x as a trailing axis: crop to whole windows, split each dim into (windows, offset), move offsets last, flatten them. */
function windowAxis(x: Array, outShape: readonly number[], win: readonly number[]): Array {
  const c = ops.slice(
    x,
    win.map(() => 0),
    outShape.map((o, d) => o * win[d]),
  );
  // only dims with a window > 1 split (fewer, smaller transposes)
  const shape: number[] = [],
    keep: number[] = [],
    offs: number[] = [];
  outShape.forEach((o, d) => {
    keep.push(shape.length);
    shape.push(o);
    if (win[d] > 1) {
      offs.push(shape.length);
      shape.push(win[d]);
    }
  });
  const moved = ops.transpose(ops.reshape(c, shape), [...keep, ...offs]);
  return ops.reshape(moved, [...outShape, prod(win)]);
}
/** The chooser jvp for tiling windows with reshapes, an argmax and a one-hot select (transposes to cheap ops, no interior padding). */
function tiledChooserJvp(kind: WindowKind, x: Array, t: Array, y: Array, p: WindowParams): Array {
  const xw = windowAxis(x, y.shape, p.window_dimensions),
    tw = windowAxis(t, y.shape, p.window_dimensions);
  const last = y.ndim;
  // one-hot of the first maximal (minimal) element of each window
  const idx = kind === "max" ? ops.argmax(xw, last, "int32") : ops.argmin(xw, last, "int32");
  const hot = ops.eq(
    ops.iota("int32", xw.shape, last),
    ops.broadcastInDim(idx, xw.shape, [...globalThis.Array(last).keys()]),
  );
  return ops.reduceSum(ops.select(hot, tw, ops.zerosLikeArray(tw)), [last]);
}

/** ORT MaxPool / AveragePool over the pooled dims (moved last, the rest flattened into the batch); explicit Pad with the identity. */
function lowerWindow(
  kind: WindowKind,
  ctx: LoweringContext,
  [x]: string[],
  p: WindowParams,
  [a]: ShapedArray[],
  [o]: ShapedArray[],
): string[] {
  const op = kind === "sum" ? "AveragePool" : "MaxPool";
  const d = a.dtype;
  const pooled = [...a.shape.keys()].filter(
    (i) => p.window_dimensions[i] !== 1 || p.window_strides[i] !== 1 || p.window_dilation[i] !== 1,
  );
  const direct =
    o.size > 0 &&
    pooled.length >= 1 &&
    pooled.length <= 3 &&
    ctx.supports(op, ctx.repr(d)) &&
    (kind !== "min" || isFloat(d)) &&
    (kind !== "sum" || p.window_dilation.every((v) => v === 1));
  if (!direct) return lowerFun(ctx, (y) => [windowByPatches(kind, y, p)], [a], [x]);
  const rest = [...a.shape.keys()].filter((i) => !pooled.includes(i));
  let y = kind === "min" ? ctx.op("Neg", [x]) : x;
  const pk: WindowKind = kind === "min" ? "max" : kind;
  let shape = [...a.shape];
  if (p.padding.some(([lo, hi]) => lo !== 0 || hi !== 0) || p.base_dilation.some((v) => v !== 1)) {
    const cfg = p.padding.map(([lo, hi], i): [number, number, number] => [lo, hi, p.base_dilation[i] - 1]);
    y = LS.pad(ctx, y, ctx.scalar(d, windowInit(pk, d)), new ShapedArray(shape, d), cfg);
    shape = shape.map((n, i) => dilateDim(n, p.base_dilation[i]) + p.padding[i][0] + p.padding[i][1]);
  }
  y = lowerTranspose(ctx, y, [...rest, ...pooled]);
  y = lowerReshape(ctx, y, [prod(rest.map((i) => shape[i])), 1, ...pooled.map((i) => shape[i])]);
  const attrs = {
    kernel_shape: pooled.map((i) => p.window_dimensions[i]),
    strides: pooled.map((i) => p.window_strides[i]),
  };
  if (kind === "sum")
    y = roundTo(
      ctx,
      ctx.op("Mul", [
        ctx.op("AveragePool", [y], attrs),
        ctx.scalar(d, prod(pooled.map((i) => p.window_dimensions[i]))),
      ]),
      d,
    );
  else {
    const mp = (v: string) => ctx.op("MaxPool", [v], { ...attrs, dilations: pooled.map((i) => p.window_dilation[i]) });
    const pooledY = mp(y);
    // ORT's MaxPool skips NaN; XLA's max propagates it: pool a NaN indicator alongside
    y = isFloat(d)
      ? ctx.op("Where", [
          ctx.op("Greater", [
            mp(ctx.op("Cast", [ctx.op("IsNaN", [y])], { to: ONNX_TYPE[ctx.repr(d)] })),
            ctx.scalar(d, 0),
          ]),
          ctx.scalar(d, NaN),
          pooledY,
        ])
      : pooledY;
  }
  y = lowerReshape(ctx, y, [...rest.map((i) => o.shape[i]), ...pooled.map((i) => o.shape[i])]);
  const order = [...rest, ...pooled];
  y = lowerTranspose(
    ctx,
    y,
    [...o.shape.keys()].map((i) => order.indexOf(i)),
  );
  return [kind === "min" ? ctx.op("Neg", [y]) : y];
}

/** Batching: the vmapped axis gets a unit window. */
function vmapWindow(kind: WindowKind) {
  return (_a: AxisData, [x]: Array[], [d]: BDim[], p: WindowParams): [Array[], BDim[]] => {
    const ins = <T>(v: T[], e: T) => {
      const r = [...v];
      r.splice(d!, 0, e);
      return r;
    };
    return [
      [
        reduceWindow(kind, x, {
          window_dimensions: ins(p.window_dimensions, 1),
          window_strides: ins(p.window_strides, 1),
          padding: ins(p.padding, [0, 0] as [number, number]),
          base_dilation: ins(p.base_dilation, 1),
          window_dilation: ins(p.window_dilation, 1),
        }),
      ],
      [d],
    ];
  };
}

function defWindow(kind: WindowKind): Primitive<WindowParams> {
  const name = `reduce_window_${kind}`;
  return new Primitive<WindowParams>(name, {
    lower: (ctx, xs, p, a, o) => lowerWindow(kind, ctx, xs, p, a, o),
    abstractEval([x], p) {
      if (isBool(x.dtype)) throw new TypeError(`${name}: unsupported dtype bool`);
      return [new ShapedArray(windowShape(name, x, p), x.dtype, x.weakType)];
    },
    impl([x], p, [out]) {
      return [fromNums(out, windowImpl(kind, nums(x), x.shape, p, out.shape as number[], windowInit(kind, x.dtype)))];
    },
    jvp([x], [t], p) {
      const y = reduceWindow(kind, x, p);
      if (t instanceof Zero) return [[y], [new Zero(y.aval)]];
      if (kind === "sum") return [[y], [reduceWindow("sum", t, p)]];
      if (tiles(x.shape, p)) return [[y], [tiledChooserJvp(kind, x, t, y, p)]];
      // JAX's chooser jvp: the tangent of the first window element equal to the max (min)
      const px = windowPatches(x, windowInit(kind, x.dtype), p),
        pt = windowPatches(t, 0, p);
      let acc: Array = ops.zerosLikeArray(y);
      for (let k = px.length - 1; k >= 0; k--) acc = ops.select(ops.eq(px[k], y), pt[k], acc);
      return [[y], [acc]];
    },
    transpose:
      kind === "sum"
        ? ([ct], [x], p) => {
            const aval = (x as UndefinedPrimal).aval;
            return [
              ct instanceof Zero ? new Zero(aval) : ops.convert(sumTranspose(ct, aval, p), aval.dtype, aval.weakType),
            ] as MaybeZero[];
          }
        : undefined,
    vmap: vmapWindow(kind),
  });
}

export const reduceWindowSumP = defWindow("sum");
export const reduceWindowMaxP = defWindow("max");
export const reduceWindowMinP = defWindow("min");
const PRIMS: Record<WindowKind, Primitive<WindowParams>> = {
  sum: reduceWindowSumP,
  max: reduceWindowMaxP,
  min: reduceWindowMinP,
};

/** Binds reduce_window_{sum,max,min} with explicit params. */
export function reduceWindow(kind: WindowKind, x: Array, p: WindowParams): Array {
  return bind1(PRIMS[kind], [x], {
    window_dimensions: [...p.window_dimensions],
    window_strides: [...p.window_strides],
    padding: p.padding.map(([l, h]): [number, number] => [l, h]),
    base_dilation: [...p.base_dilation],
    window_dilation: [...p.window_dilation],
  });
}
