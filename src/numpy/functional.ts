/** @file jnp functional helpers and type queries: applyAlongAxis, applyOverAxes, isscalar, resultType. */
import { Array } from "../core/array.js";
import {
  type DType,
  canonicalizeDType,
  checkDType,
  bigintLiteralDType,
  numberLiteralDType,
  promoteTypes,
} from "../core/dtype.js";
import { describe } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { vmap } from "../transforms/api.js";
import { asArrayArg } from "./core.js";
import { axisOf } from "./elementwise-util.js";
import { shapeStr } from "./struct-util.js";

type Fn1 = (x: Array, ...rest: never[]) => Array;

/**
 * jnp.applyAlongAxis(func1d, axis, arr, ...args): func1d applied to every 1-D slice along axis, by vmap as in JAX;
 * the axes func1d returns take axis's place.
 */
export function applyAlongAxis(
  func1d: (x: Array, ...args: unknown[]) => Array,
  axis: number,
  arr: Array | number[],
  ...args: unknown[]
): Array {
  if (typeof func1d !== "function")
    throw new TypeError(`applyAlongAxis: func1d must be a function, got ${describe(func1d)}`);
  const a = asArrayArg("applyAlongAxis", arr);
  const nd = a.ndim;
  if (nd === 0) throw new Error("applyAlongAxis: arr must be at least 1-dimensional, got a 0-d array");
  const ax = axisOf("applyAlongAxis", axis, a.shape);
  let f: Fn1 = ((x: Array) => func1d(x, ...args)) as Fn1;
  // axes after `axis` are mapped innermost with their outputs moved to the end, the ones before outermost at 0
  for (let i = 1; i < nd - ax; i++) f = vmap(f, { inAxes: i, outAxes: -1 }) as Fn1;
  for (let i = 0; i < ax; i++) f = vmap(f, { inAxes: 0, outAxes: 0 }) as Fn1;
  return f(a);
}

/** jnp.applyOverAxes(func, a, axes): a = func(a, axis) for each axis in turn, re-inserting a reduced axis (result keeps a's rank). */
export function applyOverAxes(
  func: (a: Array, axis: number) => Array,
  a: Array | number[],
  axes: number | readonly number[],
): Array {
  let x = asArrayArg("applyOverAxes", a);
  for (const axis of typeof axes === "number" ? [axes] : axes) {
    const b = func(x, axis);
    if (!(b instanceof Array)) throw new TypeError(`applyOverAxes: func must return an Array, got ${describe(b)}`);
    const ax = axisOf("applyOverAxes", axis, x.shape);
    if (b.ndim === x.ndim) x = b;
    else if (b.ndim === x.ndim - 1) x = ops.expandDims(b, [ax]);
    else
      throw new Error(
        `applyOverAxes: func(a, ${axis}) must keep a's rank ${x.ndim} or reduce it by one, got shape ${shapeStr(b.shape)} from ${shapeStr(x.shape)}`,
      );
  }
  return x;
}

/** jnp.isscalar(x): true for JS numbers, booleans, bigints and strings and for 0-d Arrays (JAX counts those as scalars, unlike NumPy). */
export function isscalar(element: unknown): boolean {
  if (element instanceof Array) return element.ndim === 0;
  return (
    typeof element === "number" ||
    typeof element === "boolean" ||
    typeof element === "bigint" ||
    typeof element === "string"
  );
}

/** jnp.resultType(...args): the dtype JAX's promotion gives args (Arrays, JS scalars as weak types, dtype names as strong types). */
export function resultType(...args: (Array | number | boolean | bigint | DType)[]): DType {
  if (args.length === 0) throw new TypeError("resultType: at least one array or dtype is required");
  const items = args.map((a, i) => {
    if (a instanceof Array) return { dtype: a.dtype, weakType: a.weakType };
    if (typeof a === "number") return { dtype: numberLiteralDType(a), weakType: true };
    if (typeof a === "bigint") return { dtype: bigintLiteralDType(a, "resultType"), weakType: true };
    if (typeof a === "boolean") return { dtype: "bool" as DType, weakType: false };
    if (typeof a === "string") return { dtype: checkDType("resultType", a), weakType: false };
    throw new TypeError(`resultType: argument ${i} is ${describe(a)}; expected an Array, a JS scalar or a dtype name`);
  });
  return canonicalizeDType(promoteTypes(...items).dtype);
}
