/** @file Lowerings for shape and layout primitives: broadcast_in_dim, pad (with interior padding), rev, bitcast, select_n, clamp, iota. */
import type { ShapedArray } from "../core/aval.js";
import type { DType } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { ONNX_TYPE, computeDtype, expand, minMax, rawCast, reshape, select } from "./lower-util.js";

const same = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((v, i) => v === b[i]);

export function broadcastInDim(
  ctx: LoweringContext,
  x: string,
  a: ShapedArray,
  shape: readonly number[],
  bd: readonly number[],
): string {
  const r = shape.map(() => 1);
  bd.forEach((d, i) => {
    r[d] = a.shape[i];
  });
  const y = same(r, a.shape) ? x : reshape(ctx, x, r);
  return same(r, shape) ? y : expand(ctx, y, shape);
}

/** Slice along `axes` with static starts/ends/steps. */
export function slice(
  ctx: LoweringContext,
  x: string,
  starts: readonly number[],
  ends: readonly number[],
  axes: readonly number[],
  steps?: readonly number[],
): string {
  const ins = [x, ctx.ints(starts), ctx.ints(ends), ctx.ints(axes)];
  if (steps && steps.some((s) => s !== 1)) ins.push(ctx.ints(steps));
  return ctx.op("Slice", ins);
}

export function rev(ctx: LoweringContext, x: string, dims: readonly number[]): string {
  if (dims.length === 0) return x;
  return slice(
    ctx,
    x,
    dims.map(() => -1),
    dims.map(() => -(2 ** 63)),
    dims,
    dims.map(() => -1),
  );
}

/** pad with (lo, hi, interior) per dim; negative lo/hi crop. */
export function pad(
  ctx: LoweringContext,
  x: string,
  v: string,
  a: ShapedArray,
  pc: readonly (readonly [number, number, number])[],
): string {
  const d = a.dtype;
  const cd = computeDtype(ctx, "Pad(constant)", d);
  let y = rawCast(ctx, x, d, cd);
  const pv = rawCast(ctx, v, d, cd);
  const shape = [...a.shape];
  // interior padding: view dim k as [n, 1], pad the unit axis to interior+1, flatten, drop the trailing pad
  pc.forEach(([, , int], k) => {
    const n = shape[k];
    if (int === 0 || n === 0) return;
    const split = [...shape.slice(0, k), n, 1, ...shape.slice(k + 1)];
    const pads = [...split, ...split].map(() => 0);
    pads[split.length + k + 1] = int;
    y = ctx.op("Pad", [reshape(ctx, y, split), ctx.ints(pads), pv]);
    const flat = [...shape];
    flat[k] = n * (int + 1);
    y = reshape(ctx, y, flat);
    y = slice(ctx, y, [0], [n + (n - 1) * int], [k]);
    shape[k] = n + (n - 1) * int;
  });
  const lo = pc.map(([l]) => Math.max(l, 0)),
    hi = pc.map(([, h]) => Math.max(h, 0));
  if (lo.some((p) => p > 0) || hi.some((p) => p > 0)) {
    y = ctx.op("Pad", [y, ctx.ints([...lo, ...hi]), pv]);
    pc.forEach((_, k) => {
      shape[k] += lo[k] + hi[k];
    });
  }
  const cropAxes = pc.map((_, k) => k).filter((k) => pc[k][0] < 0 || pc[k][1] < 0);
  if (cropAxes.length) {
    y = slice(
      ctx,
      y,
      cropAxes.map((k) => Math.max(-pc[k][0], 0)),
      cropAxes.map((k) => shape[k] - Math.max(-pc[k][1], 0)),
      cropAxes,
    );
  }
  return rawCast(ctx, y, cd, d);
}

export function bitcast(ctx: LoweringContext, x: string, from: DType, to: DType): string {
  if (from === to) return x;
  let src = x,
    sd = from;
  if (from === "bfloat16") src = ctx.op("Cast", [x], { to: ONNX_TYPE.bfloat16 });
  if (from === "bool") {
    src = ctx.op("Cast", [x], { to: ONNX_TYPE.uint8 });
    sd = "uint8";
  }
  const target: DType = to === "bool" ? "uint8" : to;
  let y = sd === target ? src : ctx.op("BitCast", [src], { to: ONNX_TYPE[target] });
  if (to === "bool") y = ctx.op("Cast", [y], { to: ONNX_TYPE.bool });
  if (to === "bfloat16") y = ctx.op("Cast", [y], { to: ONNX_TYPE.float32 });
  return y;
}

export function selectN(ctx: LoweringContext, pred: string, pd: DType, cases: string[], d: DType): string {
  if (cases.length === 1) return cases[0];
  if (pd === "bool") return select(ctx, pred, cases[1], cases[0], d);
  let r = cases[cases.length - 1];
  for (let k = cases.length - 2; k >= 0; k--)
    r = select(ctx, ctx.op("Equal", [pred, ctx.scalar(pd, k)]), cases[k], r, d);
  return r;
}

export function clamp(ctx: LoweringContext, lo: string, x: string, hi: string, d: DType): string {
  return minMax(ctx, "Min", minMax(ctx, "Max", x, lo, d), hi, d);
}

export function iota(ctx: LoweringContext, d: DType, shape: readonly number[], dim: number): string {
  const n = shape[dim];
  const r = ctx.repr(d);
  const cd: DType = ctx.supports("Range", r) ? r : r === "float16" ? "float32" : "int64";
  let y = ctx.op("Range", [ctx.scalar(cd, 0), ctx.scalar(cd, n), ctx.scalar(cd, 1)]);
  const rs = shape.map((s, i) => (i === dim ? s : 1));
  if (rs.length !== 1) y = reshape(ctx, y, rs);
  if (!same(rs, shape)) y = expand(ctx, y, shape);
  return cd === r ? y : ctx.op("Cast", [y], { to: ONNX_TYPE[r] });
}
