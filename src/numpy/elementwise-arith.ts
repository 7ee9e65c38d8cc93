/** @file jnp arithmetic and unary math (ufuncs): add ... power, exp/log, trig, rounding, min/max, frexp/ldexp, gcd. */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import {
  type DType,
  defaultFloatDType,
  finfo,
  isBigInt,
  isBool,
  isComplex,
  isFloat,
  isInteger,
  isUnsigned,
} from "../core/dtype.js";
import { broadcastShapes } from "../core/shape.js";
import { describe } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { complexExtremum } from "./complex-order.js";
import { asArrayArg, promoteArgs, promoteArgsInexact, promoteBinary } from "./core.js";
import {
  type ArrayInput,
  type Args,
  c,
  concreteInt,
  isIntLike,
  isNumeric,
  parseArgs,
  promoteArgsNumeric,
  requireKind,
  sel,
  toInexact,
} from "./elementwise-util.js";

type Unary = (x: ArrayInput) => Array;
type Binary = (x: ArrayInput, y: ArrayInput) => Array;

/** A unary float function: ints/bools promote to the default float, as jnp does. */
const floatUnary =
  (name: string, f: (x: Array) => Array): Unary =>
  (x) =>
    f(toInexact(name, x));

// ---------------------------------------------------------------- arithmetic
export const add: Binary = (x, y) => {
  const [a, b] = promoteBinary("add", x, y);
  return isBool(a.dtype) ? ops.or(a, b) : ops.add(a, b);
};
export const subtract: Binary = (x, y) => {
  const [a, b] = promoteBinary("subtract", x, y);
  requireKind("subtract", "numeric (non-bool)", isNumeric, a);
  return ops.sub(a, b);
};
export const multiply: Binary = (x, y) => {
  const [a, b] = promoteBinary("multiply", x, y);
  return isBool(a.dtype) ? ops.and(a, b) : ops.mul(a, b);
};
/** True division: integer operands promote to the default float. */
export const divide: Binary = (x, y) => {
  const [a, b] = promoteBinary("divide", x, y, true);
  return ops.div(a, b);
};
export const trueDivide: Binary = (x, y) => {
  const [a, b] = promoteBinary("true_divide", x, y, true);
  return ops.div(a, b);
};

/** Python-style float divmod: the quotient is floored and the remainder takes the divisor's sign. */
function floatDivmod(a: Array, b: Array): [Array, Array] {
  let mod = ops.rem(a, b);
  const num = sel(ops.eq(b, c(b, 0)), a, ops.sub(a, mod));
  let div = ops.div(num, b);
  const fix = ops.and(ops.ne(mod, c(mod, 0)), ops.ne(ops.sign(b), ops.sign(mod)));
  mod = sel(fix, ops.add(mod, b), mod);
  div = sel(fix, ops.sub(div, c(div, 1)), div);
  return [ops.round(div), mod];
}
function intFloorDivide(a: Array, b: Array): Array {
  const q = ops.div(a, b);
  if (isUnsigned(a.dtype)) return q;
  // round toward -inf: subtract one when the signs differ and the division is inexact
  const adjust = ops.and(ops.ne(ops.sign(a), ops.sign(b)), ops.ne(ops.rem(a, b), c(a, 0)));
  return sel(adjust, ops.sub(q, c(q, 1)), q);
}
export const floorDivide: Binary = (x, y) => {
  const [a, b] = promoteArgsNumeric("floor_divide", x, y);
  return isInteger(a.dtype) ? intFloorDivide(a, b) : floatDivmod(a, b)[0];
};
/** Remainder with the sign of the divisor (Python's %); x % 0 is 0 for integers. */
function intRemainder(a: Array, bIn: Array): Array {
  const b = sel(ops.eq(bIn, c(bIn, 0)), c(bIn, 1), bIn);
  const t = ops.rem(a, b);
  if (isUnsigned(a.dtype)) return t;
  const plus = ops.and(ops.ne(ops.lt(t, c(t, 0)), ops.lt(b, c(b, 0))), ops.ne(t, c(t, 0)));
  return sel(plus, ops.add(t, b), t);
}
export const remainder: Binary = (x, y) => {
  const [a, b] = promoteArgsNumeric("remainder", x, y);
  return isInteger(a.dtype) ? intRemainder(a, b) : floatDivmod(a, b)[1];
};
export const mod: Binary = (x, y) => remainder(x, y);
/** C-style remainder (sign of the dividend). */
export const fmod: Binary = (x, y) => {
  const [a, b] = promoteArgsNumeric("fmod", x, y);
  if (isInteger(a.dtype)) return ops.rem(a, sel(ops.eq(b, c(b, 0)), c(b, 1), b));
  return ops.rem(a, b);
};
export function divmod(x: ArrayInput, y: ArrayInput): [Array, Array] {
  const [a, b] = promoteArgsNumeric("divmod", x, y);
  if (isInteger(a.dtype)) return [intFloorDivide(a, b), intRemainder(a, b)];
  return floatDivmod(a, b);
}

/** Integer power by binary exponentiation over every bit of the exponent (wrapping like NumPy). */
function powIntInt(a: Array, b: Array): Array {
  const bits = a.dtype.endsWith("8") ? 8 : a.dtype.endsWith("16") ? 16 : isBigInt(a.dtype) ? 64 : 32;
  let acc: Array = ops.fullLike(a, 1);
  let base = a,
    e = b;
  for (let i = 0; i < bits; i++) {
    const bit = ops.ne(ops.and(e, c(e, 1)), c(e, 0));
    acc = ops.select(bit, ops.mul(acc, base), acc);
    if (i + 1 < bits) {
      base = ops.mul(base, base);
      e = ops.shiftRightLogical(e, c(e, 1));
    }
  }
  return acc;
}
/**
 * x ** y. A concrete integer exponent (a JS integer or a concrete 0-d int array) uses integer_pow on x
 * alone (so x's dtype is kept, as in JAX); integer bases with integer exponents use integer arithmetic.
 */
export const power: Binary = (x, y) => {
  const concreteExp =
    typeof y === "number" && Number.isInteger(y)
      ? y
      : y instanceof ArrayImpl && y.ndim === 0 && isInteger(y.dtype)
        ? Number(y.item())
        : null;
  if (concreteExp !== null) {
    let a = asArrayArg("power", x);
    if (isBool(a.dtype)) a = ops.convert(a, "int32", false);
    if (isInteger(a.dtype) && concreteExp < 0)
      throw new TypeError(
        `power: integers cannot be raised to negative powers, got ${a.dtype} base and exponent ${concreteExp}`,
      );
    return ops.integerPow(a, concreteExp);
  }
  const [a, b] = promoteArgsNumeric("power", x, y);
  return isInteger(a.dtype) ? powIntInt(a, b) : ops.pow(a, b);
};
export const pow: Binary = (x, y) => power(x, y);
export const floatPower: Binary = (x, y) => {
  const [a, b] = promoteArgsInexact("float_power", x, y);
  return ops.pow(a, b);
};

export const negative: Unary = (x) => {
  const [a] = promoteArgs("negative", x);
  requireKind("negative", "numeric (non-bool)", isNumeric, a);
  return ops.neg(a);
};
export const positive: Unary = (x) => promoteArgs("positive", x)[0];
export const abs: Unary = (x) => {
  const [a] = promoteArgs("abs", x);
  return isBool(a.dtype) || isUnsigned(a.dtype) ? a : ops.abs(a);
};
export const absolute: Unary = (x) => abs(x);
export const fabs: Unary = floatUnary("fabs", ops.abs);
export const sign: Unary = (x) => {
  const [a] = promoteArgs("sign", x);
  requireKind("sign", "numeric (non-bool)", isNumeric, a);
  return ops.sign(a);
};
export const square: Unary = (x) => ops.integerPow(promoteArgsNumeric("square", x)[0], 2);
export const reciprocal: Unary = (x) => ops.integerPow(toInexact("reciprocal", x), -1);

// ---------------------------------------------------------------- exp / log / roots
export const sqrt = floatUnary("sqrt", ops.sqrt);
export const cbrt = floatUnary("cbrt", ops.cbrt);
export const exp = floatUnary("exp", ops.exp);
export const exp2 = floatUnary("exp2", ops.exp2);
export const expm1 = floatUnary("expm1", ops.expm1);
export const log = floatUnary("log", ops.log);
export const log1p = floatUnary("log1p", ops.log1p);
export const log2 = floatUnary("log2", (x) => ops.div(ops.log(x), c(x, Math.LN2)));
export const log10 = floatUnary("log10", (x) => ops.div(ops.log(x), c(x, Math.LN10)));
/** log(exp(a) + exp(b)) = max + log1p(exp(-|a-b|)); equal infinities give a + b. */
export const logaddexp: Binary = (x, y) => {
  const [a, b] = promoteArgsInexact("logaddexp", x, y);
  const d = ops.sub(a, b);
  const r = ops.add(ops.max(a, b), ops.log1p(ops.exp(ops.neg(ops.abs(d)))));
  return sel(ops.ne(d, d), ops.add(a, b), r);
};
/** log2(2^a + 2^b) = max + log1p(2^-|a-b|) / ln 2. */
export const logaddexp2: Binary = (x, y) => {
  const [a, b] = promoteArgsInexact("logaddexp2", x, y);
  const d = ops.sub(a, b);
  const r = ops.add(ops.max(a, b), ops.div(ops.log1p(ops.exp2(ops.neg(ops.abs(d)))), c(a, Math.LN2)));
  return sel(ops.ne(d, d), ops.add(a, b), r);
};

// ---------------------------------------------------------------- trigonometric and hyperbolic
export const sin = floatUnary("sin", ops.sin);
export const cos = floatUnary("cos", ops.cos);
export const tan = floatUnary("tan", ops.tan);
export const arcsin = floatUnary("arcsin", ops.asin);
export const arccos = floatUnary("arccos", ops.acos);
export const arctan = floatUnary("arctan", ops.atan);
export const sinh = floatUnary("sinh", ops.sinh);
export const cosh = floatUnary("cosh", ops.cosh);
export const tanh = floatUnary("tanh", ops.tanh);
export const arcsinh = floatUnary("arcsinh", ops.asinh);
export const arccosh = floatUnary("arccosh", ops.acosh);
export const arctanh = floatUnary("arctanh", ops.atanh);
export const arctan2: Binary = (x, y) => {
  const [a, b] = promoteArgsInexact("arctan2", x, y);
  return ops.atan2(a, b);
};
export const asin = arcsin,
  acos = arccos,
  atan = arctan,
  asinh = arcsinh,
  acosh = arccosh,
  atanh = arctanh,
  atan2 = arctan2;
export const deg2rad = floatUnary("deg2rad", (x) => ops.mul(x, c(x, Math.PI / 180)));
export const rad2deg = floatUnary("rad2deg", (x) => ops.mul(x, c(x, 180 / Math.PI)));
export const radians: Unary = (x) => deg2rad(x);
export const degrees: Unary = (x) => rad2deg(x);
/** sqrt(a^2 + b^2) without overflow: hi * sqrt(1 + (lo/hi)^2); inf if either is infinite. */
export const hypot: Binary = (x, y) => {
  const [a0, b0] = promoteArgsInexact("hypot", x, y);
  const a = ops.abs(a0),
    b = ops.abs(b0);
  const inf = ops.or(ops.eq(a, c(a, Infinity)), ops.eq(b, c(b, Infinity)));
  const hi = ops.max(a, b),
    lo = ops.min(a, b);
  const isZero = ops.eq(hi, c(hi, 0));
  const safe = sel(isZero, c(hi, 1), hi);
  const q = ops.div(lo, safe);
  const r = sel(isZero, hi, ops.mul(hi, ops.sqrt(ops.add(c(q, 1), ops.mul(q, q)))));
  return sel(inf, c(r, Infinity), r);
};
/** Normalized sinc: sin(pi x) / (pi x), with sinc(0) = 1. */
export const sinc: Unary = (x) => {
  const a = toInexact("sinc", x);
  const zero = ops.eq(a, c(a, 0));
  const pix = ops.mul(sel(zero, c(a, 1), a), c(a, Math.PI));
  return sel(zero, c(a, 1), ops.div(ops.sin(pix), pix));
};

// ---------------------------------------------------------------- rounding
/** floor/ceil/trunc/fix return integer inputs unchanged (as JAX does). */
const roundLike =
  (name: string, f: (x: Array) => Array): Unary =>
  (x) => {
    const a = asArrayArg(name, x);
    return isIntLike(a.dtype) ? a : f(a);
  };
export const floor = roundLike("floor", ops.floor);
export const ceil = roundLike("ceil", ops.ceil);
export const trunc = roundLike("trunc", (a) => sel(ops.lt(a, c(a, 0)), ops.ceil(a), ops.floor(a)));
export const fix = roundLike("fix", (a) => sel(ops.ge(a, c(a, 0)), ops.floor(a), ops.ceil(a)));
/** Round half to even; integer inputs convert to the default float (as JAX's rint does). */
export const rint: Unary = (x) => {
  const a = asArrayArg("rint", x);
  return isIntLike(a.dtype) ? ops.convert(a, defaultFloatDType(), a.weakType) : ops.round(a, 1);
};
/** Round to `decimals` places, half to even: round(x * 10^d) / 10^d (floats); ints round for d < 0. */
export function round(
  a: ArrayInput,
  ...args: Args<[decimals: number, out: null], { decimals?: number; out?: null }>
): Array {
  const o = parseArgs<{ decimals: number; out: null }>("round", args, ["decimals", "out"]);
  const d = concreteInt("round", "decimals", o.decimals ?? 0);
  const x = asArrayArg("round", a);
  if (isBool(x.dtype)) return x;
  if (isInteger(x.dtype)) {
    if (d >= 0) return x;
    // integers: round half to even at a power of ten, computed in the float domain
    const f = ops.convert(x, "float32");
    const s = 10 ** -d;
    return ops.convert(ops.mul(ops.round(ops.div(f, c(f, s)), 1), c(f, s)), x.dtype, x.weakType);
  }
  const work = x.dtype === "float16" || x.dtype === "bfloat16" ? ops.convert(x, "float32") : x;
  if (d === 0) return ops.convert(ops.round(work, 1), x.dtype, x.weakType);
  const s = c(work, 10 ** d);
  return ops.convert(ops.div(ops.round(ops.mul(work, s), 1), s), x.dtype, x.weakType);
}
export const around = round;

// ---------------------------------------------------------------- extrema and sign manipulation
// complex operands compare lexicographically (real parts, then imaginary parts), as NumPy and JAX
export const maximum: Binary = (x, y) => {
  const [a, b] = promoteBinary("maximum", x, y);
  return isComplex(a.dtype) ? complexExtremum("max", ...bcastPair(a, b)) : ops.max(a, b);
};
export const minimum: Binary = (x, y) => {
  const [a, b] = promoteBinary("minimum", x, y);
  return isComplex(a.dtype) ? complexExtremum("min", ...bcastPair(a, b)) : ops.min(a, b);
};
/** Two arrays broadcast to their common shape. */
function bcastPair(a: Array, b: Array): [Array, Array] {
  const s = broadcastShapes("maximum", a.shape, b.shape);
  const to = (v: Array) =>
    v.shape.join() === s.join()
      ? v
      : ops.broadcastInDim(
          v,
          s,
          v.shape.map((_, i) => i + s.length - v.ndim),
        );
  return [to(a), to(b)];
}
const isnanArr = (a: Array): Array => (isFloat(a.dtype) ? ops.ne(a, a) : ops.fullLike(a, false, "bool"));
/** fmax/fmin ignore NaN unless both are NaN. */
export const fmax: Binary = (x, y) => {
  const [a, b] = promoteArgs("fmax", x, y);
  return sel(isnanArr(b), a, sel(isnanArr(a), b, ops.max(a, b)));
};
export const fmin: Binary = (x, y) => {
  const [a, b] = promoteArgs("fmin", x, y);
  return sel(isnanArr(b), a, sel(isnanArr(a), b, ops.min(a, b)));
};
/** clip(arr, min, max) = minimum(maximum(arr, min), max); either bound may be null. */
export function clip(
  arr: ArrayInput,
  ...args: Args<[min: ArrayInput | null, max: ArrayInput | null], { min?: ArrayInput | null; max?: ArrayInput | null }>
): Array {
  const o = parseArgs<{ min: ArrayInput | null; max: ArrayInput | null }>("clip", args, ["min", "max"]);
  let r = asArrayArg("clip", arr);
  const bound = (name: string, v: unknown): Array => {
    try {
      return asArrayArg("clip", v as ArrayInput);
    } catch {
      throw new TypeError(`clip: ${name} must be an Array, a JS number, a nested list or null, got ${describe(v)}`);
    }
  };
  if (o.min !== undefined && o.min !== null) r = maximum(bound("min", o.min), r);
  if (o.max !== undefined && o.max !== null) r = minimum(bound("max", o.max), r);
  return r;
}
/** Sign bit of floats (true for -0.0 and negative NaN), x < 0 for ints, false for bools. */
export const signbit: Unary = (x) => {
  const [a] = promoteArgs("signbit", x);
  if (isBool(a.dtype)) return ops.fullLike(a, false, "bool");
  if (isInteger(a.dtype)) return ops.lt(a, c(a, 0));
  const it: DType = a.dtype === "float64" ? "int64" : a.dtype === "float32" ? "int32" : "int16";
  const bits = ops.bitcast(ops.convert(a, a.dtype, false), it);
  return ops.lt(bits, c(bits, 0));
};
export const copysign: Binary = (x, y) => {
  const [a, b] = promoteArgsInexact("copysign", x, y);
  const m = ops.abs(a);
  return sel(signbit(b), ops.neg(m), m);
};
export const nextafter: Binary = (x, y) => {
  const [a, b] = promoteArgsInexact("nextafter", x, y);
  return ops.nextafter(a, b);
};
/** heaviside(x1, x2): 0 for x1 < 0, 1 for x1 > 0, x2 where x1 == 0 (and where x1 is NaN, as in JAX). */
export const heaviside: Binary = (x, y) => {
  const [a, b] = promoteArgsInexact("heaviside", x, y);
  return sel(ops.lt(a, c(a, 0)), c(a, 0), sel(ops.gt(a, c(a, 0)), c(a, 1), b));
};

// ---------------------------------------------------------------- floating-point decomposition
interface FloatLayout {
  int: DType;
  nmant: number;
  nexp: number;
}
const LAYOUT: Record<string, FloatLayout> = {
  float16: { int: "int16", nmant: 10, nexp: 5 },
  bfloat16: { int: "int16", nmant: 7, nexp: 8 },
  float32: { int: "int32", nmant: 23, nexp: 8 },
  float64: { int: "int64", nmant: 52, nexp: 11 },
};
/** frexp(x) -> [mantissa in [0.5, 1), exponent (int32)] with x = m * 2^e; 0/inf/nan give [x, 0]. */
export function frexp(x: ArrayInput): [Array, Array] {
  const a0 = toInexact("frexp", x);
  const a = ops.convert(a0, a0.dtype, false);
  const L = LAYOUT[a.dtype];
  const info = finfo(a.dtype);
  const bias = 2 ** (L.nexp - 1) - 1;
  // subnormals: scale into the normal range first
  const sub = ops.lt(ops.abs(a), c(a, info.tiny));
  const scaled = sel(sub, ops.mul(a, c(a, 2 ** L.nmant)), a);
  let bits = ops.bitcast(scaled, L.int);
  const expMask = 2 ** L.nexp - 1;
  const rawExp = ops.and(ops.shiftRightLogical(bits, c(bits, L.nmant)), c(bits, expMask));
  let e = ops.sub(rawExp, c(rawExp, bias - 1));
  e = sel(sub, ops.sub(e, c(e, L.nmant)), e);
  // keep sign and mantissa, set the exponent field to bias-1 (values in [0.5, 1))
  const keep = isBigInt(L.int)
    ? ops.not(ops.shiftLeft(c(bits, expMask), c(bits, L.nmant)))
    : c(bits, ~(expMask * 2 ** L.nmant) | 0);
  bits = ops.or(ops.and(bits, keep), ops.shiftLeft(c(bits, bias - 1), c(bits, L.nmant)));
  const m = ops.bitcast(bits, a.dtype);
  const special = ops.or(ops.or(ops.ne(a, a), ops.eq(ops.abs(a), c(a, Infinity))), ops.eq(a, c(a, 0)));
  const e32 = ops.convert(e, "int32");
  return [sel(special, a, m), sel(special, ops.fullLike(e32, 0), e32)];
}
/** ldexp(x1, x2) = x1 * 2^x2 for integer x2, applied in two halves so intermediate powers stay finite. */
export const ldexp: Binary = (x, y) => {
  const e0 = asArrayArg("ldexp", y);
  if (isFloat(e0.dtype)) throw new TypeError(`ldexp: the exponent must be an integer array, got ${e0.dtype}`);
  const m = toInexact("ldexp", x);
  const [a, e] = promoteArgs("ldexp", m, ops.convert(e0, m.dtype, e0.weakType));
  const h1 = ops.floor(ops.div(e, c(e, 2)));
  const h2 = ops.sub(e, h1);
  return ops.mul(ops.mul(a, ops.exp2(h1)), ops.exp2(h2));
};
/** modf(x) -> [fractional part, integral part], both with x's sign. */
export function modf(x: ArrayInput): [Array, Array] {
  const a = toInexact("modf", x);
  const whole = fix(a);
  return [ops.sub(a, whole), whole];
}

// ---------------------------------------------------------------- integer number theory
/** Euclid's algorithm unrolled: enough steps for the dtype's range (stops early on concrete inputs). */
export const gcd: Binary = (x, y) => {
  const [a0, b0] = promoteArgsNumeric("gcd", x, y);
  requireKind("gcd", "integer", isInteger, a0);
  let a = abs(a0),
    b = abs(b0);
  const steps = a.dtype.endsWith("8") ? 14 : a.dtype.endsWith("16") ? 26 : isBigInt(a.dtype) ? 95 : 48;
  for (let i = 0; i < steps; i++) {
    if (b instanceof ArrayImpl && b.size > 0 && !ops.reduceOr(ops.ne(b, c(b, 0)), [...b.shape.keys()]).item()) break;
    if (b instanceof ArrayImpl && b.size === 0) break;
    const z = ops.eq(b, c(b, 0));
    const r = ops.rem(a, sel(z, c(b, 1), b));
    [a, b] = [sel(z, a, b), sel(z, b, r)];
  }
  return a;
};
export const lcm: Binary = (x, y) => {
  const [a, b] = promoteArgsNumeric("lcm", x, y);
  requireKind("lcm", "integer", isInteger, a);
  const d = gcd(a, b);
  const z = ops.eq(d, c(d, 0));
  return sel(z, c(d, 0), abs(ops.mul(a, ops.div(b, sel(z, c(d, 1), d)))));
};
