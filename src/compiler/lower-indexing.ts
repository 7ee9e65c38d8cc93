/** @file Lowerings for gather/scatter (as GatherND/ScatterND with the indexed axes moved first), dynamic_slice and dynamic_update_slice. */
import type { ShapedArray } from "../core/aval.js";
import type { DType } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import {
  minMax,
  rawCast,
  reshape,
  select,
  transpose,
  unsqueeze0,
  computeDtype,
  expand,
  roundTo,
} from "./lower-util.js";
import { slice } from "./lower-structural.js";
import { reduce } from "./lower-reduce.js";

type Mode = "clip" | "fill" | "drop" | "promise_in_bounds";
type Reduce = "none" | "add" | "mul" | "min" | "max";

const restDims = (nd: number, axes: readonly number[]) => [...Array(nd).keys()].filter((i) => !axes.includes(i));
const inverse = (perm: readonly number[]) => perm.map((_, i) => perm.indexOf(i));

/** Index tuples as int64, clamped into bounds; plus (for fill/drop) which tuples were in bounds. */
function indexTuples(
  ctx: LoweringContext,
  idx: string,
  ia: ShapedArray,
  x: ShapedArray,
  axes: readonly number[],
  checkBounds: boolean,
): { ic: string; valid: string | null } {
  const ii = rawCast(ctx, idx, ia.dtype, "int64");
  const ub = ctx.constant(
    "int64",
    [axes.length],
    axes.map((a) => BigInt(Math.max(x.shape[a] - 1, 0))),
  );
  const zero = ctx.scalar("int64", 0);
  const ic = ctx.op("Max", [ctx.op("Min", [ii, ub]), zero]);
  if (!checkBounds) return { ic, valid: null };
  const inb = ctx.op("And", [ctx.op("GreaterOrEqual", [ii, zero]), ctx.op("LessOrEqual", [ii, ub])]);
  const valid = ctx.op("ReduceMin", [inb, ctx.ints([ia.ndim - 1])], { keepdims: 0 });
  return { ic, valid };
}

export function gather(
  ctx: LoweringContext,
  x: string,
  idx: string,
  a: ShapedArray,
  ia: ShapedArray,
  out: ShapedArray,
  axes: readonly number[],
  mode: Mode,
  fill: number,
): string {
  const nb = ia.ndim - 1;
  if (axes.length === 0) return expand(ctx, reshape(ctx, x, [...Array(nb).fill(1), ...a.shape]), out.shape);
  const perm = [...axes, ...restDims(a.ndim, axes)];
  const xt = transpose(ctx, x, perm);
  const { ic, valid } = indexTuples(ctx, idx, ia, a, axes, mode === "fill" || mode === "drop");
  const g = ctx.op("GatherND", [xt, ic], { batch_dims: 0 });
  if (!valid) return g;
  const v = reshape(ctx, valid, [...ia.shape.slice(0, -1), ...Array(out.ndim - nb).fill(1)]);
  return select(ctx, v, g, ctx.scalar(a.dtype, fill), a.dtype);
}

export function scatter(
  ctx: LoweringContext,
  x: string,
  idx: string,
  upd: string,
  a: ShapedArray,
  ia: ShapedArray,
  ua: ShapedArray,
  axes: readonly number[],
  red: Reduce,
  mode: Mode,
): string {
  const d = a.dtype;
  const nb = ia.ndim - 1;
  if (axes.length === 0) return scatterWhole(ctx, x, upd, a, ua, nb, red);
  // reduction kernels: f16 add/mul/min/max run in float32; bool add/mul are or/and (max/min on uint8)
  let cd: DType = ctx.repr(d);
  let red2: Reduce = red;
  if (d === "bool" && red !== "none") {
    cd = "uint8";
    red2 = red === "add" || red === "max" ? "max" : "min";
  }
  if (red !== "none" && cd === "float16") cd = "float32";
  const key = `ScatterND(${red2})`;
  if (!ctx.supports(key, cd)) cd = computeDtype(ctx, key, cd);
  const perm = [...axes, ...restDims(a.ndim, axes)];
  let xt = rawCast(ctx, transpose(ctx, x, perm), d, cd);
  const u = rawCast(ctx, upd, d, cd);
  const drop = mode === "fill" || mode === "drop";
  let { ic, valid } = indexTuples(ctx, idx, ia, a, axes, drop);
  const n0 = a.shape[axes[0]];
  if (valid) {
    // out-of-bounds tuples write into an extra trailing row of the first indexed axis, sliced off afterwards
    const tshape = perm.map((p) => a.shape[p]);
    tshape[0] = 1;
    const trash = ctx.op("Expand", [ctx.scalar(cd, 0), ctx.ints(tshape)]);
    xt = ctx.op("Concat", [xt, trash], { axis: 0 });
    const redirect = ctx.constant(
      "int64",
      [axes.length],
      axes.map((_, j) => BigInt(j === 0 ? n0 : 0)),
    );
    ic = ctx.op("Where", [ctx.op("Unsqueeze", [valid, ctx.ints([-1])]), ic, redirect]);
  }
  let y = ctx.op("ScatterND", [xt, ic, u], { reduction: red2 });
  if (valid) y = slice(ctx, y, [0], [n0], [0]);
  y = transpose(ctx, y, inverse(perm));
  return roundTo(ctx, rawCast(ctx, y, cd, d), d);
}

/** Scatter with no indexed axes: every update addresses the whole operand. */
function scatterWhole(
  ctx: LoweringContext,
  x: string,
  upd: string,
  a: ShapedArray,
  ua: ShapedArray,
  nb: number,
  red: Reduce,
): string {
  const n = ua.shape.slice(0, nb).reduce((p, q) => p * q, 1);
  if (n === 0) return x;
  const flat = reshape(ctx, upd, [n, ...a.shape]);
  if (red === "none") return reshape(ctx, slice(ctx, flat, [n - 1], [n], [0]), a.shape);
  const d = a.dtype;
  const fa = ua.update({ shape: [n, ...a.shape] });
  const kind =
    d === "bool"
      ? red === "add" || red === "max"
        ? "or"
        : "and"
      : red === "add"
        ? "sum"
        : red === "mul"
          ? "prod"
          : red;
  const r = reduce(ctx, kind, flat, fa, [0], a);
  if (d === "bool") return ctx.op(kind === "or" ? "Or" : "And", [x, r]);
  if (red === "min" || red === "max") return minMax(ctx, red === "max" ? "Max" : "Min", x, r, d);
  const op = red === "add" ? "Add" : "Mul";
  const cd = computeDtype(ctx, op, d);
  return roundTo(ctx, rawCast(ctx, ctx.op(op, [rawCast(ctx, x, d, cd), rawCast(ctx, r, d, cd)]), cd, d), d);
}

/** Clamped start indices as a 1-D int64 tensor. */
function starts(
  ctx: LoweringContext,
  ss: string[],
  sa: ShapedArray[],
  shape: readonly number[],
  sizes: readonly number[],
): string {
  const parts = ss.map((s, i) => {
    const v = rawCast(ctx, s, sa[i].dtype, "int64");
    const c = ctx.op("Max", [ctx.op("Min", [v, ctx.scalar("int64", shape[i] - sizes[i])]), ctx.scalar("int64", 0)]);
    return unsqueeze0(ctx, c);
  });
  return parts.length === 1 ? parts[0] : ctx.op("Concat", parts, { axis: 0 });
}

export function dynamicSlice(
  ctx: LoweringContext,
  x: string,
  ss: string[],
  a: ShapedArray,
  sa: ShapedArray[],
  sizes: readonly number[],
): string {
  if (a.ndim === 0) return x;
  const st = starts(ctx, ss, sa, a.shape, sizes);
  const en = ctx.op("Add", [st, ctx.ints(sizes)]);
  return ctx.op("Slice", [x, st, en, ctx.ints([...a.shape.keys()])]);
}

export function dynamicUpdateSlice(
  ctx: LoweringContext,
  x: string,
  upd: string,
  ss: string[],
  a: ShapedArray,
  ua: ShapedArray,
  sa: ShapedArray[],
): string {
  if (a.ndim === 0) return upd;
  const d = a.dtype;
  const st = starts(ctx, ss, sa, a.shape, ua.shape);
  // pad the update (and a mask) out to the operand's shape at the start offsets, then select
  const after = ctx.op("Sub", [ctx.ints(a.shape.map((n, i) => n - ua.shape[i])), st]);
  const pads = ctx.op("Concat", [st, after], { axis: 0 });
  const cd = computeDtype(ctx, "Pad(constant)", d);
  const padded = rawCast(ctx, ctx.op("Pad", [rawCast(ctx, upd, d, cd), pads, ctx.scalar(cd, 0)]), cd, d);
  const ones = ctx.op("Expand", [ctx.scalar("bool", true), ctx.ints(ua.shape)]);
  const mask = ctx.op("Pad", [ones, pads, ctx.scalar("bool", false)]);
  return select(ctx, mask, padded, x, d);
}
