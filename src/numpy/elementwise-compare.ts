/** @file jnp comparisons, float classification (isnan ...), closeness tests, logical and bitwise functions, real/imag. */
import { Array } from "../core/array.js";
import { isBool, isComplex, isFloat, isInteger, isUnsigned } from "../core/dtype.js";
import { broadcastShapes, shapesEqual } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { array, asArrayArg, promoteArgs, promoteArgsInexact, promoteBinary } from "./core.js";
import {
  type ArrayInput,
  type Args,
  c,
  isIntLike,
  parseArgs,
  promoteArgsNumeric,
  rejectWideIntLiterals,
  requireKind,
  sel,
} from "./elementwise-util.js";

type Unary = (x: ArrayInput) => Array;
type Binary = (x: ArrayInput, y: ArrayInput) => Array;

const compare =
  (name: string, f: (a: Array, b: Array) => Array): Binary =>
  (x, y) => {
    const [a, b] = promoteBinary(name, x, y);
    return f(a, b);
  };
export const equal = compare("equal", ops.eq);
export const notEqual = compare("not_equal", ops.ne);
export const less = compare("less", ops.lt);
export const lessEqual = compare("less_equal", ops.le);
export const greater = compare("greater", ops.gt);
export const greaterEqual = compare("greater_equal", ops.ge);

const allFull = (x: Array, v: boolean): Array => ops.fullLike(x, v, "bool");
export const isfinite: Unary = (x) => {
  const a = asArrayArg("isfinite", x);
  return isFloat(a.dtype) ? ops.isFinite(a) : allFull(a, true);
};
export const isinf: Unary = (x) => {
  const a = asArrayArg("isinf", x);
  return isFloat(a.dtype) ? ops.eq(ops.abs(a), c(a, Infinity)) : allFull(a, false);
};
export const isnan: Unary = (x) => {
  const a = asArrayArg("isnan", x);
  return isFloat(a.dtype) ? ops.ne(a, a) : allFull(a, false);
};
export const isposinf: Unary = (x) => {
  const a = asArrayArg("isposinf", x);
  return isFloat(a.dtype) ? ops.eq(a, c(a, Infinity)) : allFull(a, false);
};
export const isneginf: Unary = (x) => {
  const a = asArrayArg("isneginf", x);
  return isFloat(a.dtype) ? ops.eq(a, c(a, -Infinity)) : allFull(a, false);
};

interface NanToNumOpts {
  copy: boolean;
  nan: number;
  posinf: number | null;
  neginf: number | null;
}
/** Replaces NaN with `nan` (0), +inf with `posinf` (dtype max) and -inf with `neginf` (dtype min); non-floats pass through. */
export function nanToNum(
  x: ArrayInput,
  ...args: Args<[copy: boolean, nan: number, posinf: number | null, neginf: number | null], Partial<NanToNumOpts>>
): Array {
  const o = parseArgs<NanToNumOpts>("nan_to_num", args, ["copy", "nan", "posinf", "neginf"]);
  const a = asArrayArg("nan_to_num", x);
  if (!isFloat(a.dtype)) return a;
  const big =
    a.dtype === "float64"
      ? Number.MAX_VALUE
      : a.dtype === "float32"
        ? 3.4028234663852886e38
        : a.dtype === "float16"
          ? 65504
          : 3.3895313892515355e38;
  let r = sel(ops.ne(a, a), c(a, o.nan ?? 0), a);
  r = sel(ops.eq(r, c(r, Infinity)), c(r, o.posinf ?? big), r);
  return sel(ops.eq(r, c(r, -Infinity)), c(r, o.neginf ?? -big), r);
}

interface CloseOpts {
  rtol: number;
  atol: number;
  equalNan: boolean;
}
/** |a - b| <= atol + rtol |b| elementwise (operands promote to a float dtype); equal infinities are close. */
export function isclose(
  a: ArrayInput,
  b: ArrayInput,
  ...args: Args<[rtol: number, atol: number, equalNan: boolean], Partial<CloseOpts>>
): Array {
  const o = parseArgs<CloseOpts>("isclose", args, ["rtol", "atol", "equalNan"]);
  const [x, y] = promoteArgsInexact("isclose", a, b);
  const rtol = o.rtol ?? 1e-5,
    atol = o.atol ?? 1e-8;
  const inRange = ops.le(ops.abs(ops.sub(x, y)), ops.add(c(x, atol), ops.mul(c(x, rtol), ops.abs(y))));
  const out = ops.or(ops.eq(x, y), ops.and(ops.isFinite(y), inRange));
  return o.equalNan ? ops.or(out, ops.and(ops.ne(x, x), ops.ne(y, y))) : out;
}
const allOf = (b: Array): Array => ops.reduceAnd(b, [...b.shape.keys()]);
export function allclose(
  a: ArrayInput,
  b: ArrayInput,
  ...args: Args<[rtol: number, atol: number, equalNan: boolean], Partial<CloseOpts>>
): Array {
  return allOf(isclose(a, b, ...(args as [])));
}
/** True iff the arrays have the same shape and elements (NaNs equal when equalNan). */
export function arrayEqual(
  a1: ArrayInput,
  a2: ArrayInput,
  ...args: Args<[equalNan: boolean], { equalNan?: boolean }>
): Array {
  const o = parseArgs<{ equalNan: boolean }>("array_equal", args, ["equalNan"]);
  const x = asArrayArg("array_equal", a1),
    y = asArrayArg("array_equal", a2);
  if (!shapesEqual(x.shape, y.shape)) return array(false);
  const [p, q] = promoteArgs("array_equal", x, y);
  let eq = ops.eq(p, q);
  if (o.equalNan && isFloat(p.dtype)) eq = ops.or(eq, ops.and(ops.ne(p, p), ops.ne(q, q)));
  return allOf(eq);
}
/** True iff the arrays broadcast together and are equal elementwise. */
export function arrayEquiv(a1: ArrayInput, a2: ArrayInput): Array {
  const x = asArrayArg("array_equiv", a1),
    y = asArrayArg("array_equiv", a2);
  try {
    broadcastShapes("array_equiv", x.shape, y.shape);
  } catch {
    return array(false);
  }
  const [p, q] = promoteArgs("array_equiv", x, y);
  return allOf(ops.eq(p, q));
}

// ---------------------------------------------------------------- logical
const toBool = (a: Array): Array => (isBool(a.dtype) ? a : ops.ne(a, c(a, 0)));
const logical =
  (name: string, f: (a: Array, b: Array) => Array): Binary =>
  (x, y) => {
    const [a, b] = promoteArgs(name, x, y);
    return f(toBool(a), toBool(b));
  };
export const logicalAnd = logical("logical_and", ops.and);
export const logicalOr = logical("logical_or", ops.or);
export const logicalXor = logical("logical_xor", ops.xor);
export const logicalNot: Unary = (x) => ops.not(toBool(asArrayArg("logical_not", x)));

// ---------------------------------------------------------------- bitwise
const bitwise =
  (name: string, f: (a: Array, b: Array) => Array): Binary =>
  (x, y) => {
    rejectWideIntLiterals(name, x, y);
    const [a, b] = promoteArgs(name, x, y);
    requireKind(name, "integer or bool", isIntLike, a);
    return f(a, b);
  };
export const bitwiseAnd = bitwise("bitwise_and", ops.and);
export const bitwiseOr = bitwise("bitwise_or", ops.or);
export const bitwiseXor = bitwise("bitwise_xor", ops.xor);
const notFn =
  (name: string): Unary =>
  (x) => {
    const [a] = promoteArgs(name, x);
    requireKind(name, "integer or bool", isIntLike, a);
    return ops.not(a);
  };
export const bitwiseNot = notFn("bitwise_not");
export const invert = notFn("invert");
export const bitwiseInvert = notFn("bitwise_invert");
export const leftShift: Binary = (x, y) => {
  rejectWideIntLiterals("left_shift", x, y);
  const [a, b] = promoteArgsNumeric("left_shift", x, y);
  requireKind("left_shift", "integer", isInteger, a);
  return ops.shiftLeft(a, b);
};
/** Arithmetic shift for signed integers, logical for unsigned ones. */
export const rightShift: Binary = (x, y) => {
  rejectWideIntLiterals("right_shift", x, y);
  const [a, b] = promoteArgsNumeric("right_shift", x, y);
  requireKind("right_shift", "integer", isInteger, a);
  return isUnsigned(a.dtype) ? ops.shiftRightLogical(a, b) : ops.shiftRightArithmetic(a, b);
};
export const bitwiseLeftShift: Binary = (x, y) => leftShift(x, y);
export const bitwiseRightShift: Binary = (x, y) => rightShift(x, y);
/** Number of 1 bits in |x|, as uint8. */
export const bitwiseCount: Unary = (x) => {
  const [a] = promoteArgsNumeric("bitwise_count", x);
  requireKind("bitwise_count", "integer", isInteger, a);
  return ops.convert(ops.populationCount(isUnsigned(a.dtype) ? a : ops.abs(a)), "uint8");
};

// ---------------------------------------------------------------- complex-number helpers
/** Real part (a real array is its own real part). */
export const real: Unary = (x) => {
  const a = asArrayArg("real", x);
  return isComplex(a.dtype) ? ops.real(a) : a;
};
/** Imaginary part (zeros for a real array). */
export const imag: Unary = (x) => {
  const a = asArrayArg("imag", x);
  return isComplex(a.dtype) ? ops.imag(a) : ops.fullLike(a, 0);
};
export const conj: Unary = (x) => {
  const a = asArrayArg("conj", x);
  return isComplex(a.dtype) ? ops.conj(a) : a;
};
export const conjugate: Unary = (x) => conj(x);
export const iscomplex: Unary = (x) => {
  const a = asArrayArg("iscomplex", x);
  return isComplex(a.dtype) ? ops.ne(ops.imag(a), ops.fullLike(ops.imag(a), 0)) : allFull(a, false);
};
export const isreal: Unary = (x) => {
  const a = asArrayArg("isreal", x);
  return isComplex(a.dtype) ? ops.eq(ops.imag(a), ops.fullLike(ops.imag(a), 0)) : allFull(a, true);
};
/** Whether the array's dtype is complex (whatever its values). */
export const iscomplexobj = (x: ArrayInput): boolean => isComplex(asArrayArg("iscomplexobj", x).dtype);
export const isrealobj = (x: ArrayInput): boolean => !isComplex(asArrayArg("isrealobj", x).dtype);
