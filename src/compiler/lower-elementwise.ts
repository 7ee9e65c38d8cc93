/** @file Lowerings for the integer and bit-level elementwise primitives (exact JAX/interpreter semantics: wrap-around, x/0, shifts past the width, popcount, clz, integer powers). */
import { type DType, isBigInt, isFloat, isSignedInt, isUnsigned, intRange } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { F, viaDtype } from "./lower-math.js";
import {
  ONNX_TYPE,
  bitWidth,
  computeDtype,
  filled,
  opIn,
  orderKey,
  rawCast,
  select,
  signedOf,
  unsignedOf,
} from "./lower-util.js";

/** The all-ones value of an integer dtype as ctx.scalar expects it. */
const allOnes = (d: DType): number | bigint =>
  d === "uint64" ? 2n ** 64n - 1n : d === "int64" ? -1n : isUnsigned(d) ? intRange(d)[1] : -1;

/** Integer division truncating toward zero, x/0 = -1 (all ones for unsigned), INT_MIN/-1 wraps. */
export function intDiv(ctx: LoweringContext, a: string, b: string, d: DType): string {
  const bz = ctx.op("Equal", [b, ctx.scalar(d, 0)]);
  const bm1 = isSignedInt(d) ? ctx.op("Equal", [b, ctx.scalar(d, -1)]) : null;
  const guard = bm1 ? ctx.op("Or", [bz, bm1]) : bz;
  const bs = select(ctx, guard, ctx.scalar(d, 1), b, d);
  let q = opIn(ctx, "Div", d, [a, bs]);
  if (bm1) q = select(ctx, bm1, opIn(ctx, "Sub", d, [ctx.scalar(d, 0), a]), q, d);
  return select(ctx, bz, ctx.scalar(d, allOnes(d)), q, d);
}

/** Integer remainder with the sign of the dividend; x % 0 = x. */
export function intRem(ctx: LoweringContext, a: string, b: string, d: DType): string {
  const bz = ctx.op("Equal", [b, ctx.scalar(d, 0)]);
  const guard = isSignedInt(d) ? ctx.op("Or", [bz, ctx.op("Equal", [b, ctx.scalar(d, -1)])]) : bz;
  const bs = select(ctx, guard, ctx.scalar(d, 1), b, d);
  // a - trunc(a / b) * b (ORT's integer Mod goes through double and is inexact for 64-bit values)
  const q = opIn(ctx, "Div", d, [a, bs]);
  const r = opIn(ctx, "Sub", d, [a, opIn(ctx, "Mul", d, [q, bs])]);
  return select(ctx, bz, a, r, d);
}

/** The dtype integer multiply/select chains run in: int32 for <= 32 bits, int64 otherwise. */
const chainDtype = (d: DType): DType => (bitWidth(d) === 64 ? "int64" : "int32");

/** pow for integer operands: binary exponentiation over the exponent's bits; negative exponents give 0. */
export function intPow(ctx: LoweringContext, a: string, b: string, d: DType): string {
  const cd = chainDtype(d);
  const e = rawCast(ctx, b, d, "int64");
  let base = rawCast(ctx, a, d, cd);
  let acc = ctx.scalar(cd, 1);
  const one64 = ctx.scalar("int64", 1);
  const bits = isSignedInt(d) ? bitWidth(d) - 1 : bitWidth(d);
  for (let k = 0; k < bits; k++) {
    const bit = ctx.op("Equal", [
      ctx.op("BitwiseAnd", [ctx.op("Div", [e, ctx.scalar("int64", 2 ** k)]), one64]),
      one64,
    ]);
    acc = ctx.op("Where", [bit, ctx.op("Mul", [acc, base]), acc]);
    if (k + 1 < bits) base = ctx.op("Mul", [base, base]);
  }
  acc = ctx.op("Where", [ctx.op("Less", [e, ctx.scalar("int64", 0)]), ctx.scalar(cd, 0), acc]);
  return rawCast(ctx, acc, cd, d);
}

/** integer_pow{y}: repeated squaring (wrapping) for ints; x^y in float64 (one rounding) for floats. */
export function integerPow(ctx: LoweringContext, x: string, d: DType, y: number, shape: readonly number[]): string {
  if (isFloat(d)) {
    if (y === 0) return filled(ctx, d, shape, 1);
    if (y === 1) return x;
    if (y === 2 && d !== "float16") return opIn(ctx, "Mul", d, [x, x]);
    return viaDtype(ctx, [x], d, "float64", (m, [v]) => {
      const p = m.pow(v, Math.abs(y));
      return y < 0 ? m.div(1, p) : p;
    });
  }
  if (y < 0) return filled(ctx, d, shape, isBigInt(d) ? 0 : 1);
  if (y === 0) return filled(ctx, d, shape, 1);
  const cd = chainDtype(d);
  let base = rawCast(ctx, x, d, cd);
  let acc: string | null = null;
  for (let e = y; e > 0; e >>= 1) {
    if (e & 1) acc = acc === null ? base : ctx.op("Mul", [acc, base]);
    if (e > 1) base = ctx.op("Mul", [base, base]);
  }
  return rawCast(ctx, acc!, cd, d);
}

/** x as the unsigned type BitShift works on (uint8/uint32/uint64), zero-extended; returns [value, dtype]. */
function toShiftable(ctx: LoweringContext, x: string, d: DType): [string, DType] {
  const u = unsignedOf(d);
  const xu = rawCast(ctx, x, d, u);
  if (u === "uint16") return [rawCast(ctx, xu, "uint16", "uint32"), "uint32"];
  return [xu, u];
}
function fromShiftable(ctx: LoweringContext, x: string, sd: DType, d: DType): string {
  const u = unsignedOf(d);
  return rawCast(ctx, rawCast(ctx, x, sd, u), u, d);
}

/** shift_left / shift_right_logical / shift_right_arithmetic; amounts outside [0, width) give 0 (arithmetic: the sign fill). */
export function shift(
  ctx: LoweringContext,
  kind: "left" | "logical" | "arithmetic",
  a: string,
  b: string,
  d: DType,
): string {
  const w = bitWidth(d);
  const big = ctx.op("GreaterOrEqual", [b, ctx.scalar(d, w)]);
  const oob = isSignedInt(d) ? ctx.op("Or", [big, ctx.op("Less", [b, ctx.scalar(d, 0)])]) : big;
  if (kind === "arithmetic") {
    const sd = signedOf(d);
    const sv = rawCast(ctx, a, d, sd);
    const s = select(ctx, oob, ctx.scalar(d, w - 1), b, d);
    const neg = ctx.op("Less", [sv, ctx.scalar(sd, 0)]);
    // sra(v, s) = v >= 0 ? v >>> s : ~(~v >>> s)
    const t = select(ctx, neg, ctx.op("BitwiseNot", [sv]), sv, sd);
    const [tu, ud] = toShiftable(ctx, t, sd);
    const [su] = toShiftable(ctx, s, d);
    const r = fromShiftable(ctx, ctx.op("BitShift", [tu, su], { direction: "RIGHT" }), ud, sd);
    return rawCast(ctx, select(ctx, neg, ctx.op("BitwiseNot", [r]), r, sd), sd, d);
  }
  const s = select(ctx, oob, ctx.scalar(d, 0), b, d);
  const [au, ud] = toShiftable(ctx, a, d);
  const [su] = toShiftable(ctx, s, d);
  const r = fromShiftable(ctx, ctx.op("BitShift", [au, su], { direction: kind === "left" ? "LEFT" : "RIGHT" }), ud, d);
  return select(ctx, oob, ctx.scalar(d, 0), r, d);
}

/** Zero-extends an integer to uint32 (<= 32 bits) or uint64. */
function zext(ctx: LoweringContext, x: string, d: DType): [string, DType] {
  const u = unsignedOf(d);
  const xu = rawCast(ctx, x, d, u);
  if (u === "uint64" || u === "uint32") return [xu, u];
  return [rawCast(ctx, xu, u, "uint32"), "uint32"];
}

function popcountU(ctx: LoweringContext, v: string, ud: DType): string {
  const is64 = ud === "uint64";
  const c = (n: bigint) => ctx.scalar(ud, is64 ? n : Number(n & 0xffffffffn));
  const rep = (byte: bigint) => {
    let r = 0n;
    for (let i = 0; i < (is64 ? 8 : 4); i++) r = (r << 8n) | byte;
    return r;
  };
  const shr = (x: string, k: number) =>
    ctx.op("BitShift", [x, ctx.scalar(ud, is64 ? BigInt(k) : k)], { direction: "RIGHT" });
  const and = (x: string, m: bigint) => ctx.op("BitwiseAnd", [x, c(m)]);
  // SWAR: pairs, nibbles, bytes, then sum the bytes with a multiply
  let x = ctx.op("Sub", [v, and(shr(v, 1), rep(0x55n))]);
  x = ctx.op("Add", [and(x, rep(0x33n)), and(shr(x, 2), rep(0x33n))]);
  x = and(ctx.op("Add", [x, shr(x, 4)]), rep(0x0fn));
  return shr(ctx.op("Mul", [x, c(rep(0x01n))]), is64 ? 56 : 24);
}

export function populationCount(ctx: LoweringContext, x: string, d: DType): string {
  const [v, ud] = zext(ctx, x, d);
  return rawCast(ctx, popcountU(ctx, v, ud), ud, d);
}

/** Count of leading zeros: smear the highest set bit right, then width - popcount. */
export function clz(ctx: LoweringContext, x: string, d: DType): string {
  let [v, ud] = zext(ctx, x, d);
  const is64 = ud === "uint64";
  for (const k of [1, 2, 4, 8, 16, ...(is64 ? [32] : [])]) {
    v = ctx.op("BitwiseOr", [v, ctx.op("BitShift", [v, ctx.scalar(ud, is64 ? BigInt(k) : k)], { direction: "RIGHT" })]);
  }
  const r = ctx.op("Sub", [ctx.scalar(ud, is64 ? 64n : bitWidth(d)), popcountU(ctx, v, ud)]);
  return rawCast(ctx, r, ud, d);
}

/** Comparison ops (ne = not equal); bool and kernel-less dtypes compare through an order-preserving key. */
export function compare(
  ctx: LoweringContext,
  op: "Equal" | "NotEqual" | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual",
  a: string,
  b: string,
  d: DType,
): string {
  const key = op === "NotEqual" ? "Equal" : op;
  const [ka, kd] = orderKey(ctx, a, d, key);
  const [kb] = orderKey(ctx, b, d, key);
  void kd;
  const r = ctx.op(key, [ka, kb]);
  return op === "NotEqual" ? ctx.op("Not", [r]) : r;
}

/** Bitwise/logical and, or, xor, not. */
export function logical(ctx: LoweringContext, op: "And" | "Or" | "Xor" | "Not", xs: string[], d: DType): string {
  if (d === "bool") return ctx.op(op, xs);
  return opIn(ctx, `Bitwise${op}`, d, xs);
}

/** neg: Neg for signed and float types, 0 - x (wrapping) for unsigned. */
export function neg(ctx: LoweringContext, x: string, d: DType): string {
  if (isUnsigned(d)) return ctx.op("Sub", [ctx.scalar(d, 0), x]);
  const cd = computeDtype(ctx, "Neg", d);
  return rawCast(ctx, ctx.op("Neg", [rawCast(ctx, x, d, cd)]), cd, d);
}

/** sign for floats: NaN and signed zeros pass through (ORT's Sign maps -0 to 0 and, for float16, NaN to 0). */
export function floatSign(ctx: LoweringContext, x: string, d: DType): string {
  const keep = ctx.op("Or", [ctx.op("Equal", [x, ctx.scalar(d, 0)]), ctx.op("IsNaN", [x])]);
  return select(ctx, keep, x, opIn(ctx, "Sign", d, [x]), d);
}

/** Float ops with an ORT kernel at float32 but maybe not float64: the kernel where it exists, else the float64 composite. */
export function kernelOr(
  ctx: LoweringContext,
  op: string,
  x: string,
  d: DType,
  composite: (m: F, x: string) => string,
): string {
  if (ctx.repr(d) === "float64" && !ctx.supports(op, "float64")) return composite(new F(ctx, "float64"), x);
  return opIn(ctx, op, d, [x]);
}

export { ONNX_TYPE };
