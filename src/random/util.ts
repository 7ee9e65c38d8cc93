/** @file Shared helpers of the jax.random samplers: Python-style argument parsing, dtype/shape checks, constants and small array utilities built on lax ops. */
import { Array, type ArrayLike } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { fromBigInts, fromNumbers } from "../core/convert.js";
import {
  type DType,
  canonicalizeDType,
  defaultFloatDType,
  defaultIntDType,
  finfo,
  isBigInt,
  isDType,
  isFloat,
  isInteger,
  isUnsigned,
  promoteTypes,
} from "../core/dtype.js";
import { broadcastShapes, prod, shapeStr, shapesEqual } from "../core/shape.js";
import { describe } from "../core/trace.js";
import { asArrayArg, broadcastTo } from "../numpy/core.js";
import * as ops from "../primitives/ops.js";

export type Shape = readonly number[];
/** A shape argument: an integer (one dimension) or an array of integers. */
export type ShapeArg = number | readonly number[];
/** A parameter value: an Array or a JS scalar (weakly typed), or a nested JS list. */
export type Param = ArrayLike | number[] | number[][];

const JSArray = globalThis.Array;

/** A plain `{...}` object: the trailing options argument of a Python-style call. */
export function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (x === null || typeof x !== "object") return false;
  const p = Object.getPrototypeOf(x);
  return p === Object.prototype || p === null;
}

/**
 * Python-style arguments: `args` are the positionals after the key (in JAX's order, named by
 * `names`), optionally followed by one options object whose keys may name any parameter
 * (and the keyword-only ones in `kwOnly`). Trailing undefined positionals are ignored.
 */
export function parseArgs<T extends Record<string, unknown>>(
  fn: string,
  args: readonly unknown[],
  names: readonly string[],
  defaults: T,
  kwOnly: readonly string[] = [],
): T {
  const pos = [...args];
  while (pos.length && pos[pos.length - 1] === undefined) pos.pop();
  let opts: Record<string, unknown> = {};
  if (pos.length && isPlainObject(pos[pos.length - 1])) opts = pos.pop() as Record<string, unknown>;
  if (pos.length > names.length)
    throw new TypeError(
      `${fn}: takes at most ${names.length + 1} positional arguments (key, ${names.join(", ")}), got ${pos.length + 1}`,
    );
  const out: Record<string, unknown> = { ...defaults };
  pos.forEach((v, i) => {
    if (v !== undefined) out[names[i]] = v;
  });
  for (const [k, v] of Object.entries(opts)) {
    if (!names.includes(k) && !kwOnly.includes(k))
      throw new TypeError(
        `${fn}: got an unexpected option ${JSON.stringify(k)}; accepted: ${[...names, ...kwOnly].join(", ")}`,
      );
    const i = names.indexOf(k);
    if (i >= 0 && i < pos.length && pos[i] !== undefined)
      throw new TypeError(`${fn}: got multiple values for argument ${JSON.stringify(k)}`);
    if (v !== undefined) out[k] = v;
  }
  return out as T;
}

/** core.canonicalize_shape: an integer or an array of non-negative integers. */
export function canonicalShape(fn: string, shape: unknown): number[] {
  const s = typeof shape === "number" ? [shape] : shape;
  if (!JSArray.isArray(s) || !s.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new TypeError(`${fn}: shape must be a non-negative integer or an array of them, got ${describeShape(shape)}`);
  }
  return [...(s as number[])];
}
const describeShape = (s: unknown): string =>
  s instanceof Array ? `an Array ${s.aval.str()}` : (JSON.stringify(s) ?? String(s));

/** JAX's _check_shape: parameter shapes must broadcast to exactly `shape`. */
export function checkShape(fn: string, shape: Shape, ...paramShapes: Shape[]): void {
  if (!paramShapes.length) return;
  let b: number[] | null = null;
  try {
    b = broadcastShapes(fn, shape, ...paramShapes);
  } catch {
    b = null;
  }
  if (b === null || !shapesEqual(b, shape)) {
    const got =
      b === null ? `incompatible parameter shapes ${paramShapes.map(shapeStr).join(", ")}` : `result ${shapeStr(b)}`;
    throw new Error(
      `${fn} parameter shapes must be broadcast-compatible with shape argument, and the result of broadcasting the shapes must equal the shape argument, but got ${got} for shape argument ${shapeStr(shape)}.`,
    );
  }
}

/** JAX's _check_broadcast_shapes: the shape argument, or the broadcast of the parameters' shapes. */
export function broadcastShapeArg(fn: string, shape: unknown, ...params: Array[]): number[] {
  if (shape === null || shape === undefined) return broadcastShapes(fn, ...params.map((p) => p.shape));
  const s = canonicalShape(fn, shape);
  checkShape(fn, s, ...params.map((p) => p.shape));
  return s;
}

/** dtypes.check_and_canonicalize_user_dtype for a float sampler (default: the default float). */
export function floatDtype(fn: string, dtype: unknown): DType {
  const d = userDtype(fn, dtype, defaultFloatDType());
  if (!isFloat(d)) throw new TypeError(`dtype argument to \`${fn}\` must be a float dtype, got ${d}`);
  return d;
}
/** Same for integer samplers (default: the default int). */
export function intDtype(fn: string, dtype: unknown): DType {
  const d = userDtype(fn, dtype, defaultIntDType());
  if (!isInteger(d)) throw new TypeError(`dtype argument to \`${fn}\` must be an integer dtype, got ${d}`);
  return d;
}
export function userDtype(fn: string, dtype: unknown, dflt: DType): DType {
  if (dtype === null || dtype === undefined) return dflt;
  if (!isDType(dtype)) throw new TypeError(`${fn}: unknown dtype ${JSON.stringify(dtype)}`);
  return canonicalizeDType(dtype);
}

/** Converts a parameter to an Array (JS scalars stay weakly typed). */
export function asArr(fn: string, x: unknown): Array {
  if (
    x instanceof Array ||
    typeof x === "number" ||
    typeof x === "boolean" ||
    typeof x === "bigint" ||
    JSArray.isArray(x)
  ) {
    return asArrayArg(fn, x as ArrayLike);
  }
  throw new TypeError(`${fn}: expected an Array or a JS number, got ${describe(x)}`);
}

/** JAX's _check_all_safe_to_cast: a parameter must be castable to the sampler's float dtype without loss of kind. */
export function checkSafeCast(fn: string, dtype: DType, ...xs: Array[]): void {
  for (const x of xs) {
    if (x.weakType) continue;
    const ok =
      x.dtype === "bool" ||
      isInteger(x.dtype) ||
      promoteTypes({ dtype: x.dtype, weakType: false }, { dtype, weakType: false }).dtype === dtype;
    if (!ok) throw new TypeError(`In arguments to ${fn}, cannot safely cast argument of type ${x.dtype} to ${dtype}`);
  }
}

/** A strongly typed 0-d constant of `dtype` (bigint-exact for 64-bit integers). */
export function constant(dtype: DType, v: number | bigint | boolean): ArrayImpl {
  const data = isBigInt(dtype)
    ? fromBigInts([typeof v === "bigint" ? v : BigInt(typeof v === "boolean" ? (v ? 1 : 0) : v)], dtype)
    : fromNumbers([typeof v === "bigint" ? Number(v) : typeof v === "boolean" ? (v ? 1 : 0) : v], dtype);
  return new ArrayImpl(new ShapedArray([], dtype, false), data);
}
/** A 0-d constant of x's dtype (what a Python scalar in `x * 2.53` becomes). */
export const cst = (x: Array, v: number | bigint | boolean): ArrayImpl => constant(x.dtype, v);

/** lax.convert_element_type to a strong dtype. */
export const toDtype = (x: Array, dtype: DType): Array => ops.convert(x, dtype, false);

/** jnp.broadcast_to with the sampler's name in errors. */
export const bcast = (fn: string, x: Array, shape: Shape): Array => broadcastTo(x, shape, fn);
/** Broadcasts x to `shape` unless it is 0-d (lax binary ops broadcast 0-d operands themselves). */
export const bcastOrScalar = (fn: string, x: Array, shape: Shape): Array =>
  x.ndim === 0 ? x : broadcastTo(x, shape, fn);

/** Stacks equal-shaped arrays along a new axis. */
export function stack(xs: readonly Array[], axis: number): Array {
  const s = xs[0].shape;
  const shape = [...s.slice(0, axis), 1, ...s.slice(axis)];
  return ops.concatenate(
    xs.map((x) => ops.reshape(x, shape)),
    axis,
  );
}

/** x[i] along axis 0 (a static integer index), dropping the axis. */
export function index0(x: Array, i: number): Array {
  const start = x.shape.map((_, k) => (k === 0 ? i : 0));
  const limit = x.shape.map((d, k) => (k === 0 ? i + 1 : d));
  return ops.reshape(ops.slice(x, start, limit), x.shape.slice(1));
}

/** jnp.take(x, ind, axis): result shape x.shape[:axis] + ind.shape + x.shape[axis+1:] (indices are in range). */
export function take(x: Array, ind: Array, axis: number): Array {
  const idx = ops.reshape(toDtype(ind, "int32"), [...ind.shape, 1]);
  const g = ops.gather(x, idx, [axis], "clip");
  // gather yields ind.shape + (x.shape without axis); move the index dims to position `axis`
  const ni = ind.ndim;
  const perm: number[] = [];
  for (let k = 0; k < axis; k++) perm.push(ni + k);
  for (let k = 0; k < ni; k++) perm.push(k);
  for (let k = axis; k < x.ndim - 1; k++) perm.push(ni + k);
  return ops.transpose(g, perm);
}

/** jnp.arange(n) in the default int dtype. */
export const arange = (n: number, dtype: DType = defaultIntDType()): Array =>
  n === 0 ? ops.full([0], 0, dtype) : ops.iota(dtype, [n], 0);

/** Float limits of a dtype, with JAX's epsneg and minexp. */
export function floatInfo(d: DType): ReturnType<typeof finfo> & { epsneg: number; minexp: number } {
  const f = finfo(d);
  return { ...f, epsneg: 2 ** -(f.nmant + 1), minexp: d === "float16" ? -14 : d === "float64" ? -1022 : -126 };
}

/** Unsigned dtype of a bit width. */
export function uintOf(bits: number): DType {
  switch (bits) {
    case 8:
      return "uint8";
    case 16:
      return "uint16";
    case 32:
      return "uint32";
    case 64:
      return "uint64";
    default:
      throw new TypeError(`no unsigned dtype of ${bits} bits`);
  }
}
export const bitWidth = (d: DType): number =>
  d === "bool" ? 8 : d.endsWith("64") ? 64 : d.endsWith("32") ? 32 : d.endsWith("16") ? 16 : 8;
export { isUnsigned, prod };

/** Product of the elements of a shape, with a check that the result is a safe JS integer. */
export function sizeOf(fn: string, shape: Shape): number {
  const n = prod(shape);
  if (!Number.isSafeInteger(n)) throw new RangeError(`${fn}: shape ${shapeStr(shape)} is too large`);
  return n;
}
