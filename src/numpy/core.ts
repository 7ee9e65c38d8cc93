/** @file jnp foundations: asarray from JS values, dtype promotion and broadcasting of operands, option parsing. */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { fromBigInts, fromNumbers } from "../core/convert.js";
import {
  type DType,
  type TypedArray,
  canonicalizeDType,
  checkDType,
  defaultFloatDType,
  fitsBigInt,
  fitsInt,
  intRange,
  isFloat,
  isInexact,
  isInteger,
  numberLiteralDType,
  promoteTypes,
} from "../core/dtype.js";
import { broadcastShapes, shapesEqual } from "../core/shape.js";
import { describe, scalarToArray } from "../core/trace.js";
import * as ops from "../primitives/ops.js";

const JSArray = globalThis.Array;

function typedDType(t: TypedArray): DType {
  if (t instanceof Float32Array) return "float32";
  if (t instanceof Float64Array) return "float64";
  if (t instanceof Int32Array) return "int32";
  if (t instanceof Uint32Array) return "uint32";
  if (t instanceof Int16Array) return "int16";
  if (t instanceof Uint16Array) return "uint16";
  if (t instanceof Int8Array) return "int8";
  if (t instanceof Uint8Array) return "uint8";
  if (t instanceof BigInt64Array) return "int64";
  return "uint64";
}

/** jnp.array / jnp.asarray: nested JS arrays, scalars, typed arrays or Arrays to an Array. */
/**
 * Raises when a JS number or bigint has no value in the integer dtype d: an integer outside its range, NaN or an
 * infinity (NumPy and JAX raise OverflowError / ValueError there, where storing it would wrap, saturate or give 0
 * silently). Other non-integers truncate toward zero first, as np.array(1.7, int32) gives 1. `asked` is the dtype
 * before canonicalization (int64 is int32 unless x64 is on).
 */
export function checkIntLiteral(x: unknown, d: DType, asked: DType, fn = "array"): void {
  if (!isInteger(d)) return;
  const shown = x;
  if (typeof x === "number" && !Number.isInteger(x)) {
    if (!Number.isFinite(x)) throw new RangeError(`${fn}: cannot convert ${x} to ${d} (it has no integer value)`);
    x = Math.trunc(x) || 0;
  }
  const bad =
    typeof x === "bigint" ? !fitsBigInt(x, d) : typeof x === "number" && Number.isInteger(x) && !fitsInt(x, d);
  if (!bad) return;
  const [lo, hi] =
    d === "int64" || d === "uint64"
      ? [d === "int64" ? -(2n ** 63n) : 0n, (d === "int64" ? 2n ** 63n : 2n ** 64n) - 1n]
      : intRange(d);
  throw new RangeError(
    `${fn}: ${shown === x ? x : `${shown} (truncated to ${x})`} is out of range for ${d} [${lo}, ${hi}]` +
      (asked !== d ? ` (${asked} is ${d} unless config.update("enableX64", true) is on)` : ""),
  );
}

export function array(value: NestedValue, opts: { dtype?: DType } | DType = {}): Array {
  checkArity("array", arguments, 2, "array(value, dtype?) or array(value, { dtype, copy, order })");
  if (typeof opts !== "string")
    checkOptions(
      "array",
      opts,
      ["dtype", "copy", "order"],
      "array(value, dtype?) or array(value, { dtype, copy, order })",
    );
  const o = typeof opts === "string" ? { dtype: opts } : opts;
  const asked = o.dtype === undefined ? undefined : checkDType("array", o.dtype);
  const dtype = asked === undefined ? undefined : canonicalizeDType(asked);
  // JAX: the result is weakly typed exactly when no dtype is given and the input itself is weak
  // (a JS number, or a weak Array); jnp.array(5).weak_type is True, jnp.array([5]) is strong
  if (value instanceof Array)
    return dtype && (dtype !== value.dtype || value.weakType) ? ops.convert(value, dtype, false) : value;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    // a JS number becomes a float dtype in one rounding (not through float32 first)
    if (typeof value === "number" && dtype && isFloat(dtype))
      return new ArrayImpl(new ShapedArray([], dtype, false), fromNumbers([value], dtype));
    if (dtype && asked) checkIntLiteral(value, dtype, asked);
    // an integer dtype takes the value itself (the literal's own dtype could round it: 0xfffffffe is a float literal)
    if (dtype && isInteger(dtype) && typeof value !== "boolean")
      return new ArrayImpl(
        new ShapedArray([], dtype, false),
        typeof value === "bigint" ? fromBigInts([value], dtype) : fromNumbers([value], dtype),
      );
    const s = scalarToArray(value);
    return dtype ? ops.convert(s, dtype, false) : s;
  }
  if (ArrayBuffer.isView(value)) {
    const t = value as TypedArray;
    const d0 = typedDType(t);
    const a = ArrayImpl.of([t.length], d0, t.slice());
    return dtype && dtype !== d0
      ? ops.convert(a, dtype)
      : canonicalizeDType(d0) !== d0
        ? ops.convert(a, canonicalizeDType(d0))
        : a;
  }
  if (!JSArray.isArray(value)) throw new TypeError(`array: cannot convert ${describe(value)} to an Array`);
  // nested list: find the shape and flatten
  const shape: number[] = [];
  for (let v: unknown = value; JSArray.isArray(v); v = v[0]) {
    shape.push(v.length);
    if (v.length === 0) break;
  }
  const flat: unknown[] = [];
  const rec = (v: unknown, d: number): void => {
    if (d === shape.length) {
      if (JSArray.isArray(v))
        throw new TypeError(`array: ragged nested sequence (expected scalars at depth ${d}, shape so far [${shape}])`);
      flat.push(v instanceof Array ? v.item() : v);
      return;
    }
    if (!JSArray.isArray(v) || v.length !== shape[d])
      throw new TypeError(
        `array: ragged nested sequence at depth ${d}: expected a list of length ${shape[d]} (shape [${shape}])`,
      );
    for (const x of v) rec(x, d + 1);
  };
  rec(value, 0);
  for (const x of flat)
    if (typeof x !== "number" && typeof x !== "boolean" && typeof x !== "bigint")
      throw new TypeError(`array: unsupported element ${describe(x)}`);
  let d = dtype;
  if (!d) {
    if (flat.length > 0 && flat.every((x) => typeof x === "boolean")) d = "bool";
    else {
      // JAX's rule for a list of Python scalars: ints give the default int dtype, any float the default float one
      // (a number is a float literal when it is not an int literal: numberLiteralDType)
      const ints = flat.every((x) => typeof x !== "number" || numberLiteralDType(x) !== defaultFloatDType());
      d = ints ? numberLiteralDType(0) : defaultFloatDType();
    }
    if (flat.length === 0) d = defaultFloatDType();
  }
  for (const x of flat) checkIntLiteral(x, d, asked ?? d);
  const data =
    flat.some((x) => typeof x === "bigint") && (d === "int64" || d === "uint64")
      ? fromBigInts(
          flat.map((x) => BigInt(x as number | bigint)),
          d,
        )
      : fromNumbers(
          flat.map((x) => (typeof x === "boolean" ? (x ? 1 : 0) : Number(x))),
          d,
        );
  return new ArrayImpl(new ShapedArray(shape, d, false), data);
}
export const asarray = array;

/** Converts a jnp operand: Arrays pass through, JS scalars become weak 0-d arrays, lists become arrays. */
export function asArrayArg(fn: string, x: ArrayLike | NestedValue): Array {
  if (x instanceof Array) return x;
  if (typeof x === "number" || typeof x === "boolean" || typeof x === "bigint") return scalarToArray(x);
  if (JSArray.isArray(x) || ArrayBuffer.isView(x)) return array(x as NestedValue);
  throw new TypeError(`${fn}: expected an Array, JS number or nested list, got ${describe(x)}`);
}

/** Promotes operands to a common dtype (JAX's lattice), without broadcasting. */
export function promoteDtypes(fn: string, xs: (ArrayLike | NestedValue)[]): Array[] {
  const arrs = xs.map((x) => asArrayArg(fn, x));
  const { dtype, weakType } = promoteTypes(...arrs.map((a) => ({ dtype: a.dtype, weakType: a.weakType })));
  return arrs.map((a) => ops.convert(a, dtype, weakType && a.weakType ? true : weakType));
}

/** Broadcasts arrays to a common shape (NumPy rules), naming fn in errors. */
export function broadcastArrays(fn: string, xs: Array[]): Array[] {
  const shape = broadcastShapes(fn, ...xs.map((x) => x.shape));
  return xs.map((x) => broadcastTo(x, shape));
}
export function broadcastTo(x: Array, shape: readonly number[], fn = "broadcast_to"): Array {
  if (shapesEqual(x.shape, shape)) return x;
  const nd = shape.length;
  if (x.ndim > nd) throw new Error(`${fn}: cannot broadcast array of shape (${x.shape}) to shape (${shape})`);
  broadcastShapes(fn, x.shape, shape);
  const full = broadcastShapes(fn, x.shape, shape);
  if (!shapesEqual(full, shape))
    throw new Error(`${fn}: cannot broadcast array of shape (${x.shape}) to shape (${shape})`);
  // drop size-1 dims that need expanding is handled by broadcast_in_dim
  return ops.broadcastInDim(
    x,
    shape,
    x.shape.map((_, i) => nd - x.ndim + i),
  );
}
/** Promote dtypes then broadcast shapes: what every jnp binary op does first. */
export function promoteArgs(fn: string, ...xs: (ArrayLike | NestedValue)[]): Array[] {
  return broadcastArrays(fn, promoteDtypes(fn, xs));
}
/**
 * For binary lax ops, which broadcast rank-0 operands themselves: promote dtypes, but leave a scalar operand
 * unbroadcast so it stays a literal in jaxprs (`mul a 2.0:f32[]`, as JAX prints).
 */
export function promoteBinary(
  fn: string,
  x: ArrayLike | NestedValue,
  y: ArrayLike | NestedValue,
  inexact = false,
): [Array, Array] {
  let [a, b] = promoteDtypes(fn, [x, y]);
  if (inexact && !isInexact(a.dtype)) {
    a = ops.convert(a, defaultFloatDType(), a.weakType);
    b = ops.convert(b, defaultFloatDType(), b.weakType);
  }
  if (a.ndim === 0 || b.ndim === 0) return [a, b];
  const [p, q] = broadcastArrays(fn, [a, b]);
  return [p, q];
}
/** Like promoteArgs, but ints/bools are promoted to the default float (for sin, log, divide ...). */
export function promoteArgsInexact(fn: string, ...xs: (ArrayLike | NestedValue)[]): Array[] {
  const ys = promoteArgs(fn, ...xs);
  if (ys.length && !isInexact(ys[0].dtype)) return ys.map((y) => ops.convert(y, defaultFloatDType(), y.weakType));
  return ys;
}

/** Parses Python-style arguments: positional values, then an optional trailing options object. */
export function isOptions(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === "object" && !(x instanceof Array) && !JSArray.isArray(x) && !ArrayBuffer.isView(x);
}
export function splitOpts<O extends object>(args: unknown[]): [unknown[], Partial<O>] {
  if (args.length && isOptions(args[args.length - 1])) return [args.slice(0, -1), args[args.length - 1] as Partial<O>];
  return [args, {}];
}
