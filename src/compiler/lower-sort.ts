/** @file Lowerings for sort / top_k (stable ONNX TopK on a total-order integer key) and the threefry2x32 block function (uint32 Add/BitwiseXor/BitShift). */
import type { ShapedArray } from "../core/aval.js";
import { type DType, isFloat } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { ONNX_TYPE, cast, orderKey, rawCast } from "./lower-util.js";

/**
 * A key whose integer order is lax.sort's total order: for floats, the bit pattern with negative
 * values' magnitude bits flipped, NaN canonicalized (sorting last) and -0 equal to 0.
 */
export function sortKey(ctx: LoweringContext, x: string, d: DType): string {
  if (!isFloat(d)) return orderKey(ctx, x, d, "TopK")[0];
  const fd: DType = d === "float64" ? "float64" : "float32";
  const it: DType = fd === "float64" ? "int64" : "int32";
  let v = rawCast(ctx, x, d, fd);
  v = ctx.op("Where", [ctx.op("IsNaN", [v]), ctx.scalar(fd, NaN), v]);
  v = ctx.op("Where", [ctx.op("Equal", [v, ctx.scalar(fd, 0)]), ctx.scalar(fd, 0), v]);
  const bits = ctx.op("BitCast", [v], { to: ONNX_TYPE[it] });
  const mag = ctx.scalar(it, it === "int64" ? 2n ** 63n - 1n : 0x7fffffff);
  return ctx.op("Where", [ctx.op("Less", [bits, ctx.scalar(it, 0)]), ctx.op("BitwiseXor", [bits, mag]), bits]);
}

/** sort: lexicographic by the first num_keys operands (least significant key first, each pass a stable TopK). */
export function sort(ctx: LoweringContext, xs: string[], avals: ShapedArray[], dim: number, numKeys: number): string[] {
  const n = avals[0].shape[dim];
  if (n <= 1 || avals[0].size === 0) return xs;
  let perm: string | null = null;
  for (let j = numKeys - 1; j >= 0; j--) {
    let k = sortKey(ctx, xs[j], avals[j].dtype);
    if (perm) k = ctx.op("GatherElements", [k, perm], { axis: dim });
    const [, p] = ctx.node("TopK", [k, ctx.ints([n])], { axis: dim, largest: 0, sorted: 1 }, 2);
    perm = perm ? ctx.op("GatherElements", [perm, p], { axis: dim }) : p;
  }
  return xs.map((x) => ctx.op("GatherElements", [x, perm!], { axis: dim }));
}

/** top_k along the last axis: NaN counts as largest, ties keep the lower index. */
export function topK(ctx: LoweringContext, x: string, a: ShapedArray, k: number): string[] {
  const axis = a.ndim - 1;
  const key = sortKey(ctx, x, a.dtype);
  const [, idx] = ctx.node("TopK", [key, ctx.ints([k])], { axis, largest: 1, sorted: 1 }, 2);
  return [ctx.op("GatherElements", [x, idx], { axis }), cast(ctx, idx, "int64", "int32")];
}

const ROT = [
  [13, 15, 26, 6],
  [17, 29, 16, 24],
];
const PARITY = 0x1bd11bda;

/** threefry2x32(k0, k1, x0, x1): 20 rounds of add / rotate / xor on uint32 (ONNX broadcasting = NumPy's). */
export function threefry2x32(
  ctx: LoweringContext,
  k0: string,
  k1: string,
  x0: string,
  x1: string,
  out: ShapedArray,
): string[] {
  const u = (v: number) => ctx.scalar("uint32", v >>> 0);
  const add = (p: string, q: string) => ctx.op("Add", [p, q]);
  const rotl = (v: string, r: number) =>
    ctx.op("BitwiseOr", [
      ctx.op("BitShift", [v, u(r)], { direction: "LEFT" }),
      ctx.op("BitShift", [v, u(32 - r)], { direction: "RIGHT" }),
    ]);
  const ks = [k0, k1, ctx.op("BitwiseXor", [ctx.op("BitwiseXor", [k0, k1]), u(PARITY)])];
  let a = add(x0, ks[0]);
  let b = add(x1, ks[1]);
  for (let g = 0; g < 5; g++) {
    for (const r of ROT[g % 2]) {
      a = add(a, b);
      b = ctx.op("BitwiseXor", [rotl(b, r), a]);
    }
    a = add(a, ks[(g + 1) % 3]);
    b = add(add(b, ks[(g + 2) % 3]), u(g + 1));
  }
  // outputs take the broadcast shape even when every operand broadcasts from a smaller one
  const shape = ctx.ints(out.shape);
  return [ctx.op("Expand", [a, shape]), ctx.op("Expand", [b, shape])];
}
