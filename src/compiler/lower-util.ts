/** @file Helpers for lowering rules (imported by the primitive definitions): JAX-exact casts, dtype-safe select, computing in a dtype ORT supports, bfloat16 rounding. */
import { type DType, isBigInt, isFloat, isInteger, isUnsigned, intRange } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { OnnxLoweringContext } from "./context.js";

/** The single value every element of constant `x` holds (possibly broadcast), else undefined. */
function uniformConstant(ctx: OnnxLoweringContext, x: string): number | undefined {
  const c = ctx.constantOf(x);
  if (!c || c.data.length === 0) return undefined;
  const v = Number(c.data[0]);
  for (let i = 1; i < c.data.length; i++) if (!Object.is(Number(c.data[i]), v)) return undefined;
  return v;
}

/**
 * select(x <= k, k, x) is Max(x, k) and select(x >= k, k, x) is Min(x, k) for a constant k, ties included:
 * ORT's Max/Min return their second operand on a tie (so -0 <= 0 gives the constant, as the select does) and
 * propagate NaN (NaN <= k is false: the select gives x). This is relu's select against zero.
 */
function clampSelect(ctx: LoweringContext, cond: string, a: string, b: string): string | undefined {
  if (!(ctx instanceof OnnxLoweringContext)) return undefined;
  const p = ctx.producerOf(cond);
  if (!p || (p.opType !== "LessOrEqual" && p.opType !== "GreaterOrEqual") || p.inputs[0] !== b) return undefined;
  const k = uniformConstant(ctx, p.inputs[1]);
  if (k === undefined || !Object.is(k, uniformConstant(ctx, a)) || ctx.constantOf(p.inputs[1])!.data.length !== 1)
    return undefined;
  return ctx.op(p.opType === "LessOrEqual" ? "Max" : "Min", [b, p.inputs[1]]);
}

/** True when `x` is a constant (possibly broadcast) none of whose elements is -0.0. */
function constantWithoutNegZero(ctx: LoweringContext, x: string): boolean {
  if (!(ctx instanceof OnnxLoweringContext)) return false;
  const c = ctx.constantOf(x);
  if (!c) return false;
  for (let i = 0; i < c.data.length; i++) if (Object.is(Number(c.data[i]), -0)) return false;
  return true;
}

/** ONNX TensorProto data type codes (for Cast's `to`). */
export const ONNX_TYPE: Readonly<Record<DType, number>> = {
  float32: 1,
  uint8: 2,
  int8: 3,
  uint16: 4,
  int16: 5,
  int32: 6,
  int64: 7,
  bool: 9,
  float16: 10,
  float64: 11,
  uint32: 12,
  uint64: 13,
  complex64: 14,
  complex128: 15,
  bfloat16: 16,
};

/** Bit width of a dtype. */
export const bitWidth = (d: DType): number =>
  d === "bool" || d.endsWith("8") ? 8 : d.endsWith("16") ? 16 : d.endsWith("32") ? 32 : 64;

/** The unsigned integer dtype of the same width. */
export const unsignedOf = (d: DType): DType =>
  (({ 8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64" }) as Record<number, DType>)[bitWidth(d)];
/** The signed integer dtype of the same width. */
export const signedOf = (d: DType): DType =>
  (({ 8: "int8", 16: "int16", 32: "int32", 64: "int64" }) as Record<number, DType>)[bitWidth(d)];

/** A plain ONNX Cast between ONNX element types (int->int wraps, float->int is ORT's cvtt). */
export function rawCast(ctx: LoweringContext, x: string, from: DType, to: DType): string {
  const f = ctx.repr(from),
    t = ctx.repr(to);
  if (f === t) return x;
  return ctx.op("Cast", [x], { to: ONNX_TYPE[t] });
}

/** Rounds a float32-held value to bfloat16 precision when `d` is bfloat16 (no-op otherwise). */
export function roundTo(ctx: LoweringContext, x: string, d: DType): string {
  if (d !== "bfloat16") return x;
  return ctx.op("Cast", [ctx.op("Cast", [x], { to: ONNX_TYPE.bfloat16 })], { to: ONNX_TYPE.float32 });
}

/** Largest float64 strictly below 2^bits (the clamp bound for 64-bit float->int casts). */
const BELOW_2_63 = 9223372036854774784;
const BELOW_2_64 = 18446744073709549568;

/**
 * convert_element_type semantics (the reference interpreter's castNumber): float->int truncates toward
 * zero and saturates, NaN -> 0; float->bool is x != 0 (NaN -> true, as JAX's compare NE); everything else as ONNX Cast
 * (int->int wraps; floats round to nearest even). bfloat16 values are float32 in the graph.
 */
export function cast(ctx: LoweringContext, x: string, from: DType, to: DType): string {
  if (from === to) return x;
  if (from === "bfloat16") return cast(ctx, x, "float32", to);
  // ORT casts float64 to a half type through float32, which rounds twice; round to odd first to round once
  if (from === "float64" && (to === "float16" || to === "bfloat16"))
    return cast(ctx, castRoundToOdd(ctx, x), "float32", to);
  if (to === "bfloat16") {
    const b = ctx.op("Cast", [x], { to: ONNX_TYPE.bfloat16 });
    return ctx.op("Cast", [b], { to: ONNX_TYPE.float32 });
  }
  if (isFloat(from) && to === "bool") {
    // x != 0 (JAX lowers the cast to a NE compare with 0): NaN != 0, so NaN -> true, like the interpreter
    return ctx.op("Not", [ctx.op("Equal", [x, ctx.scalar(from, 0)])]);
  }
  if (isFloat(from) && isInteger(to)) {
    const w = bitWidth(to);
    // clamp bounds are exact in float32 for 8/16-bit targets; otherwise work in float64
    const wd: DType = from === "float32" && w <= 16 ? "float32" : "float64";
    const xf = rawCast(ctx, x, from, wd);
    const xn = ctx.op("Where", [ctx.op("IsNaN", [xf]), ctx.scalar(wd, 0), xf]);
    const [lo, hi] = intRange(to);
    if (w < 64) {
      const c = ctx.op("Clip", [xn, ctx.scalar(wd, lo), ctx.scalar(wd, hi)]);
      return ctx.op("Cast", [c], { to: ONNX_TYPE[to] });
    }
    const top = to === "int64" ? BELOW_2_63 : BELOW_2_64;
    const c = ctx.op("Clip", [xn, ctx.scalar(wd, lo), ctx.scalar(wd, top)]);
    const r = ctx.op("Cast", [c], { to: ONNX_TYPE[to] });
    const over = ctx.op("Greater", [xn, ctx.scalar(wd, top)]);
    return select(ctx, over, ctx.scalar(to, to === "int64" ? 2n ** 63n - 1n : 2n ** 64n - 1n), r, to);
  }
  return ctx.op("Cast", [x], { to: ONNX_TYPE[ctx.repr(to)] });
}

/**
 * float64 -> float32 rounded to odd: an inexact result with an even last bit steps one ulp toward x. A value rounded
 * to odd with p >= q + 2 bits then rounds to nearest-even at q bits exactly as x would (float16 q=11, bfloat16 q=8).
 */
function castRoundToOdd(ctx: LoweringContext, x: string): string {
  const y = ctx.op("Cast", [x], { to: ONNX_TYPE.float32 });
  const back = ctx.op("Cast", [y], { to: ONNX_TYPE.float64 });
  const bits = ctx.op("BitCast", [y], { to: ONNX_TYPE.int32 });
  const even = ctx.op("Equal", [ctx.op("BitwiseAnd", [bits, ctx.scalar("int32", 1)]), ctx.scalar("int32", 0)]);
  const inexact = ctx.op("Not", [ctx.op("Or", [ctx.op("Equal", [back, x]), ctx.op("IsNaN", [x])])]);
  const fix = ctx.op("Cast", [ctx.op("And", [inexact, even])], { to: ONNX_TYPE.int32 });
  // magnitudes grow with the bit pattern for either sign: +1 when |y| < |x|, else -1
  const away = ctx.op("Cast", [ctx.op("Less", [ctx.op("Abs", [back]), ctx.op("Abs", [x])])], { to: ONNX_TYPE.int32 });
  const step = ctx.op("Mul", [fix, ctx.op("Sub", [ctx.op("Add", [away, away]), ctx.scalar("int32", 1)])]);
  return ctx.op("BitCast", [ctx.op("Add", [bits, step])], { to: ONNX_TYPE.float32 });
}

/**
 * Where(cond, a, b) for any dtype. ORT lacks Where kernels for bool and several integer types, and its float
 * kernels turn a selected -0.0 from `a` into +0.0, so floats are selected as their integer bit patterns
 * (unless `a` is a constant without -0.0, the common select-against-zero).
 */
export function select(ctx: LoweringContext, cond: string, a: string, b: string, d: DType): string {
  const r = ctx.repr(d);
  if (r === "float32" || r === "float64") {
    const m = clampSelect(ctx, cond, a, b);
    if (m) return m;
    // the -0.0 mangling only affects values taken from `a`: a constant `a` without -0.0 selects exactly
    if (constantWithoutNegZero(ctx, a)) return ctx.op("Where", [cond, a, b]);
  }
  if (r === "float32" || r === "float64") {
    const it: DType = r === "float64" ? "int64" : "int32";
    const bits = (v: string) => ctx.op("BitCast", [v], { to: ONNX_TYPE[it] });
    return ctx.op("BitCast", [ctx.op("Where", [cond, bits(a), bits(b)])], { to: ONNX_TYPE[r] });
  }
  if (r === "float16") {
    const w = (v: string) => ctx.op("Cast", [v], { to: ONNX_TYPE.float32 });
    return ctx.op("Cast", [select(ctx, cond, w(a), w(b), "float32")], { to: ONNX_TYPE.float16 });
  }
  if (ctx.supports("Where", r)) return ctx.op("Where", [cond, a, b]);
  if (r === "bool") return ctx.op("Or", [ctx.op("And", [cond, a]), ctx.op("And", [ctx.op("Not", [cond]), b])]);
  const w: DType = bitWidth(r) === 64 ? "int64" : "int32";
  const y = ctx.op("Where", [cond, rawCast(ctx, a, r, w), rawCast(ctx, b, r, w)]);
  return rawCast(ctx, y, w, r);
}

/** Dtypes to try, in order, when ORT lacks a kernel at `d` (all preserve wrap-around arithmetic after casting back). */
const WIDER: Readonly<Record<DType, readonly DType[]>> = {
  bool: ["uint8", "int32"],
  int8: ["int32", "int64"],
  uint8: ["int32", "int64"],
  int16: ["int32", "int64"],
  uint16: ["int32", "int64"],
  int32: ["int64"],
  uint32: ["int64", "int32"],
  int64: [],
  uint64: ["int64"],
  float16: ["float32", "float64"],
  bfloat16: ["float32"],
  float32: ["float64"],
  float64: [],
  complex64: [],
  complex128: [],
};

/** The dtype to compute `op` in for values of dtype `d`: repr(d) when ORT supports it, else a wider one. */
export function computeDtype(ctx: LoweringContext, op: string, d: DType): DType {
  const r = ctx.repr(d);
  if (ctx.supports(op, r)) return r;
  for (const w of WIDER[r]) if (ctx.supports(op, w)) return w;
  return ctx.unsupported(`ONNX Runtime has no ${op} kernel for ${d}`);
}

/**
 * Emits `op` on inputs of dtype `d`, casting to a supported dtype and back when needed. `outDtype`
 * (default d) is the result's dtype; results of a different dtype (e.g. bool) are not cast back.
 */
export function opIn(
  ctx: LoweringContext,
  op: string,
  d: DType,
  inputs: string[],
  attrs: Record<string, import("../core/lowering-types.js").OnnxAttr> = {},
  outDtype: DType = d,
  key = op,
): string {
  const cd = computeDtype(ctx, key, d);
  const ins = inputs.map((x) => rawCast(ctx, x, d, cd));
  const y = ctx.op(op, ins, attrs);
  if (outDtype !== d) return y;
  return roundTo(ctx, rawCast(ctx, y, cd, d), d);
}

/**
 * An order-preserving key for comparisons/sorting where ORT kernels are missing: returns [value, dtype]
 * with uint64 mapped to int64 by flipping the sign bit, and narrow types widened.
 */
export function orderKey(ctx: LoweringContext, x: string, d: DType, op: string): [string, DType] {
  const r = ctx.repr(d);
  if (ctx.supports(op, r)) return [x, r];
  if (r === "uint64") {
    const f = ctx.op("BitwiseXor", [x, ctx.scalar("uint64", 2n ** 63n)]);
    return [ctx.op("Cast", [f], { to: ONNX_TYPE.int64 }), "int64"];
  }
  const order: DType[] =
    r === "bool"
      ? ["uint8", "int32"]
      : r === "uint32"
        ? ["int64"]
        : isFloat(r)
          ? ["float32", "float64"]
          : ["int32", "int64"];
  for (const w of order) if (ctx.supports(op, w)) return [rawCast(ctx, x, r, w), w];
  return ctx.unsupported(`ONNX Runtime has no ${op} kernel for ${d}`);
}

/** Inverse of orderKey for values (not indices): maps a key back to dtype d. */
export function fromOrderKey(ctx: LoweringContext, k: string, kd: DType, d: DType): string {
  const r = ctx.repr(d);
  if (kd === r) return k;
  if (r === "uint64")
    return ctx.op("BitwiseXor", [ctx.op("Cast", [k], { to: ONNX_TYPE.uint64 }), ctx.scalar("uint64", 2n ** 63n)]);
  return rawCast(ctx, k, kd, r);
}

/** The float dtype composite formulas compute in for float dtype d (f16/bf16 -> f32). */
export const mathDtype = (d: DType): DType => (d === "float64" ? "float64" : "float32");

/**
 * Elementwise binary min/max: ORT's Max/Min propagate NaN like lax.max/min. On a +0/-0 tie they return the
 * second operand (so relu's max(x, 0.0) gives +0 for -0), where Math.max prefers +0 either way; making ties
 * exact would cost eight kernels per max, so this corner is left to ORT.
 */
export function minMax(ctx: LoweringContext, which: "Max" | "Min", a: string, b: string, d: DType): string {
  if (d === "bool") return ctx.op(which === "Max" ? "Or" : "And", [a, b]);
  return opIn(ctx, which, d, [a, b]);
}

/** An int64 scalar-to-1-D: Unsqueeze a rank-0 value to shape [1]. */
export function unsqueeze0(ctx: LoweringContext, x: string): string {
  return ctx.op("Unsqueeze", [x, ctx.ints([0])]);
}

/** Reshape with a static target shape. */
export function reshape(ctx: LoweringContext, x: string, shape: readonly number[]): string {
  return ctx.op("Reshape", [x, ctx.ints(shape)], { allowzero: 1 });
}

/** Broadcasts x (whose rank equals shape's rank, with 1s where broadcast) to `shape`. */
export function expand(ctx: LoweringContext, x: string, shape: readonly number[]): string {
  return ctx.op("Expand", [x, ctx.ints(shape)]);
}

/** Transpose unless the permutation is the identity. */
export function transpose(ctx: LoweringContext, x: string, perm: readonly number[]): string {
  return perm.every((p, i) => p === i) ? x : ctx.op("Transpose", [x], { perm: [...perm] });
}

/** The identity element of a reduction at dtype d (as a JS value for ctx.scalar). */
export function reduceInit(
  kind: "sum" | "prod" | "max" | "min" | "and" | "or" | "xor",
  d: DType,
): number | bigint | boolean {
  switch (kind) {
    case "sum":
    case "or":
    case "xor":
      return d === "bool" ? false : isBigInt(d) ? 0n : 0;
    case "prod":
      return isBigInt(d) ? 1n : 1;
    case "and":
      return d === "bool"
        ? true
        : isBigInt(d)
          ? d === "uint64"
            ? 2n ** 64n - 1n
            : -1n
          : isUnsigned(d)
            ? intRange(d)[1]
            : -1;
    case "max":
      if (isFloat(d)) return -Infinity;
      if (d === "bool") return false;
      if (d === "int64") return -(2n ** 63n);
      if (d === "uint64") return 0n;
      return intRange(d)[0];
    case "min":
      if (isFloat(d)) return Infinity;
      if (d === "bool") return true;
      if (d === "int64") return 2n ** 63n - 1n;
      if (d === "uint64") return 2n ** 64n - 1n;
      return intRange(d)[1];
  }
}

/** A constant array of `shape` filled with a scalar (Expand of a rank-0 constant). */
export function filled(ctx: LoweringContext, d: DType, shape: readonly number[], v: number | bigint | boolean): string {
  const s = ctx.scalar(d, v);
  return shape.length === 0 ? s : ctx.op("Expand", [s, ctx.ints(shape)]);
}
