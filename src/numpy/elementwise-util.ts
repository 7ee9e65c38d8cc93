/** @file Shared helpers for jnp math: Python-style argument parsing, axis/dtype checks, broadcasting where/select. */
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import {
  type DType,
  canonicalizeDType,
  checkDType,
  defaultFloatDType,
  defaultIntDType,
  isBool,
  isFloat,
  isInexact,
  isInteger,
  numberLiteralDType,
} from "../core/dtype.js";
import { broadcastShapes, shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { asArrayArg, broadcastTo, isOptions, promoteArgs, promoteDtypes } from "./core.js";

/** Anything a jnp function accepts as an array operand. */
export type ArrayInput = ArrayLike | NestedValue;
/** An axis argument: one axis, several, or null/undefined for all. */
export type Axis = number | readonly number[] | null;

type Undef<T extends unknown[]> = { [K in keyof T]: T[K] | undefined };
type Prefixes<P extends unknown[]> = P extends [...infer H, unknown] ? Undef<P> | Prefixes<H> : [];
/**
 * Python-style trailing arguments: any prefix of the positional parameters P (each may be undefined),
 * optionally followed by one options object O naming parameters by camelCase name.
 */
export type Args<P extends unknown[], O> =
  Prefixes<P> extends infer X ? (X extends unknown[] ? X | [...X, O] : never) : never;

/**
 * Parses positional arguments (named `names`, in JAX's order) plus an optional trailing options object.
 * `optionOnly` lists keyword-only parameters. Throws TypeErrors naming fn for unknown or repeated names.
 */
export function parseArgs<T extends object>(
  fn: string,
  args: readonly unknown[],
  names: readonly string[],
  optionOnly: readonly string[] = [],
): Partial<T> {
  let n = args.length;
  while (n > 0 && args[n - 1] === undefined) n--;
  let opts: Record<string, unknown> = {};
  if (n > 0 && isOptions(args[n - 1])) {
    opts = args[n - 1] as Record<string, unknown>;
    n--;
  }
  if (n > names.length) {
    throw new TypeError(
      `${fn}: takes at most ${names.length} optional positional argument(s) (${names.join(", ")}), got ${n}`,
    );
  }
  const out: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) if (args[i] !== undefined) out[names[i]] = args[i];
  for (const [k, v] of Object.entries(opts)) {
    if (!names.includes(k) && !optionOnly.includes(k)) {
      throw new TypeError(
        `${fn}: unexpected option "${k}"; expected one of ${[...names, ...optionOnly].join(", ") || "(none)"}`,
      );
    }
    if (v === undefined) continue;
    if (k in out) throw new TypeError(`${fn}: got multiple values for argument "${k}"`);
    out[k] = v;
  }
  return out as Partial<T>;
}

/** Checks and canonicalizes a user dtype (64-bit types map to 32-bit ones without x64, as in JAX). */
export function userDType(fn: string, d: unknown): DType | undefined {
  if (d === undefined || d === null) return undefined;
  return canonicalizeDType(checkDType(fn, d));
}

/** Normalizes one axis against shape, with an error naming fn and the shape. */
export function axisOf(fn: string, axis: unknown, shape: readonly number[]): number {
  const nd = shape.length;
  if (typeof axis !== "number" || !Number.isInteger(axis))
    throw new TypeError(`${fn}: axis must be an integer, got ${JSON.stringify(axis)}`);
  if (axis < -nd || axis >= nd)
    throw new RangeError(`${fn}: axis ${axis} is out of bounds for array of shape ${shapeStr(shape)} (ndim ${nd})`);
  return axis < 0 ? axis + nd : axis;
}
/** Normalizes an axis argument (number, list, null/undefined = all) to sorted distinct axes. */
export function axesOf(fn: string, axis: unknown, shape: readonly number[]): number[] {
  if (axis === null || axis === undefined) return [...shape.keys()];
  const list = typeof axis === "number" ? [axis] : globalThis.Array.isArray(axis) ? axis : null;
  if (!list)
    throw new TypeError(`${fn}: axis must be an integer, a list of integers or null, got ${JSON.stringify(axis)}`);
  const out = list.map((a) => axisOf(fn, a, shape));
  if (new Set(out).size !== out.length)
    throw new Error(`${fn}: repeated axis in ${JSON.stringify(list)} for array of shape ${shapeStr(shape)}`);
  return out.sort((a, b) => a - b);
}

/** Promotes bools to the default int (JAX's promote_args_numeric). */
export function promoteArgsNumeric(fn: string, ...xs: ArrayInput[]): Array[] {
  const ys = promoteArgs(fn, ...xs);
  if (ys.length && isBool(ys[0].dtype)) return ys.map((y) => ops.convert(y, defaultIntDType(), false));
  return ys;
}
/** Promotes a single operand to an inexact dtype (ints/bools -> default float); keeps weak type. */
export function toInexact(fn: string, x: ArrayInput): Array {
  const a = asArrayArg(fn, x);
  return isInexact(a.dtype) ? a : ops.convert(a, defaultFloatDType(), a.weakType);
}
/** The inexact dtype a reduction like mean/var computes in. */
export const inexactDType = (d: DType): DType => (isInexact(d) ? d : defaultFloatDType());

/** Throws a TypeError naming fn unless every operand's dtype satisfies ok. */
export function requireKind(fn: string, what: string, ok: (d: DType) => boolean, ...xs: Array[]): void {
  for (const x of xs)
    if (!ok(x.dtype))
      throw new TypeError(
        `${fn}: requires ${what} inputs, got ${x.dtype}${x.ndim ? ` array of shape ${shapeStr(x.shape)}` : ""}`,
      );
}
/**
 * Raises for a JS integer past the default int's range given to an integer-only op: such a number is a float literal
 * (numberLiteralDType), so the op would only report a float input; this names the number and the fix.
 */
export function rejectWideIntLiterals(fn: string, ...xs: unknown[]): void {
  for (const x of xs)
    if (typeof x === "number" && Number.isInteger(x) && !Object.is(x, -0) && isFloat(numberLiteralDType(x)))
      throw new TypeError(
        `${fn}: the JS number ${x} is past ${defaultIntDType()}'s range, so it is a float literal and ${fn} requires integers; ` +
          (x >= 0 && x <= 0xffffffff
            ? `pass it as an integer array, e.g. jnp.array(${x}, "uint32")`
            : `pass it as an int64 array (config.update("enableX64", true), then jnp.array(${x}n, "int64"))`),
      );
}
export const isNumeric = (d: DType): boolean => !isBool(d);
export const isIntLike = (d: DType): boolean => isInteger(d) || isBool(d);

/** A 0-d constant of x's dtype (weak iff x is weak), for use with lax binary ops. */
export const c = (x: Array, v: number | boolean): Array => ops.scalarLike(x, v);

/** Broadcasting, promoting elementwise select: where(cond, x, y). */
export function whereArr(fn: string, cond: ArrayInput, x: ArrayInput, y: ArrayInput): Array {
  let p = asArrayArg(fn, cond);
  if (p.dtype !== "bool") p = ops.ne(p, c(p, 0));
  const [a, b] = promoteDtypes(fn, [x, y]);
  const shape = broadcastShapes(fn, p.shape, a.shape, b.shape);
  return ops.select(broadcastTo(p, shape, fn), broadcastTo(a, shape, fn), broadcastTo(b, shape, fn));
}
/** select on arrays already of equal dtype (broadcasting shapes only). */
export function sel(pred: Array, t: Array, f: Array): Array {
  const shape = broadcastShapes("where", pred.shape, t.shape, f.shape);
  return ops.select(broadcastTo(pred, shape), broadcastTo(t, shape), broadcastTo(f, shape));
}

/** Converts a JS number or array to an Array of dtype d (strong). */
export function asDType(fn: string, x: ArrayInput, d: DType): Array {
  const a = asArrayArg(fn, x);
  return ops.convert(a, d, false);
}

/** Reads a concrete JS integer argument (num, n, k ...), with an error naming fn. */
export function concreteInt(fn: string, name: string, v: unknown, min = -Infinity): number {
  const n = v instanceof Array ? Number(v.item()) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < min) {
    throw new TypeError(
      `${fn}: ${name} must be ${min === 0 ? "a non-negative" : "an"} integer, got ${v instanceof Array ? `Array ${v.aval.str()}` : JSON.stringify(v)}`,
    );
  }
  return n;
}
/** Reads a concrete JS number (a Python float/int argument), e.g. decimals or a scalar bound. */
export function concreteNumber(fn: string, name: string, v: unknown): number {
  const n = v instanceof Array ? Number(v.item()) : v;
  if (typeof n !== "number") throw new TypeError(`${fn}: ${name} must be a number, got ${JSON.stringify(v)}`);
  return n;
}

/** Moves `axis` of x to the last position. */
export const toLast = (x: Array, axis: number): Array => ops.moveaxis(x, axis, x.ndim - 1);
/** Restores dims removed by a reduction over `axes` as size-1 dims (keepdims). */
export function keepDims(y: Array, shape: readonly number[], axes: readonly number[]): Array {
  return ops.reshape(
    y,
    shape.map((d, i) => (axes.includes(i) ? 1 : d)),
  );
}
