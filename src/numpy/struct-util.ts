/** @file Helpers shared by the structural jnp modules (shape ops, indexing, sorting, products, linalg). */
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import {
  type DType,
  canonicalizeDType,
  defaultFloatDType,
  defaultIntDType,
  isFloat,
  isInteger,
  promoteTypes,
} from "../core/dtype.js";
import { normalizeAxis, shapeStr } from "../core/shape.js";
import { ConcretizationTypeError, Tracer, describe } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { asArrayArg } from "./core.js";
import { checkOptions } from "../core/check-args.js";

export const JSArray = globalThis.Array;
export const range = (n: number): number[] => [...JSArray(Math.max(0, n)).keys()];
export { shapeStr, normalizeAxis };

/** The concrete value behind x (an ArrayImpl, or a tracer whose value is known, as under grad), else null. */
export function concreteOf(x: Array): ArrayImpl | null {
  if (x instanceof ArrayImpl) return x;
  if (x instanceof Tracer) {
    const c = x.concreteValue();
    return c instanceof ArrayImpl && c.shape.join() === x.shape.join() ? c : null;
  }
  return null;
}
/** The concrete value of x or a ConcretizationTypeError naming fn and explaining the static alternative. */
export function requireConcrete(fn: string, x: Array, what: string, hint = ""): ArrayImpl {
  const c = concreteOf(x);
  if (c) return c;
  throw new ConcretizationTypeError(
    `${fn}: ${what} must be concrete, but got an abstract traced value ${x.aval.str()} (inside jit/vmap the values are unknown).${hint ? " " + hint : ""}`,
  );
}
/** Flat JS numbers of a concrete array. */
export function numbersOf(x: ArrayImpl): number[] {
  const out: number[] = [];
  const rec = (v: unknown): void => {
    if (JSArray.isArray(v)) v.forEach(rec);
    else out.push(typeof v === "boolean" ? (v ? 1 : 0) : Number(v));
  };
  rec(x.tolist());
  return out;
}

/** The integer dtype jnp index results use (int32, or int64 with x64). */
export const indexDType = (): DType => defaultIntDType();
export const floatDType = (): DType => defaultFloatDType();

/** Parses args = [...positional, opts?] into named values in JAX's parameter order. */
export function parseArgs<O extends object>(
  fn: string,
  args: readonly unknown[],
  names: readonly string[],
  kwOnly: readonly string[] = [],
): Partial<O> {
  let pos = [...args];
  let opts: Record<string, unknown> = {};
  const last = pos[pos.length - 1];
  if (pos.length && isPlainOptions(last)) {
    opts = { ...(last as Record<string, unknown>) };
    pos = pos.slice(0, -1);
  }
  checkOptions(fn, opts, [...names, ...kwOnly]);
  if (pos.length > names.length)
    throw new TypeError(
      `${fn}: takes at most ${names.length} positional arguments after the array (${names.join(", ")}), got ${pos.length}`,
    );
  pos.forEach((v, i) => {
    if (v === undefined) return;
    if (names[i] in opts && opts[names[i]] !== undefined)
      throw new TypeError(`${fn}: got multiple values for argument '${names[i]}'`);
    opts[names[i]] = v;
  });
  return opts as Partial<O>;
}
/** A trailing options object: a plain object (not an Array, JS array, typed array or slice-like). */
export function isPlainOptions(x: unknown): boolean {
  if (x === null || typeof x !== "object" || x instanceof Array || JSArray.isArray(x) || ArrayBuffer.isView(x))
    return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/** Converts x to an Array (JS scalars become weak 0-d arrays, nested lists become arrays). */
export const arr = (fn: string, x: ArrayLike | NestedValue): Array => asArrayArg(fn, x);

/** Promotes to a common dtype (JAX's lattice) without broadcasting, keeping weak types as JAX does. */
export function promoteAll(_fn: string, xs: Array[]): Array[] {
  if (xs.length === 0) return xs;
  const { dtype, weakType } = promoteTypes(...xs.map((a) => ({ dtype: a.dtype, weakType: a.weakType })));
  return xs.map((a) => ops.convert(a, dtype, weakType));
}
/** Like promoteAll but ints/bools become the default float (linalg and norms). */
export function promoteInexact(fn: string, xs: Array[]): Array[] {
  const ys = promoteAll(fn, xs);
  if (ys.length && !isFloat(ys[0].dtype)) return ys.map((y) => ops.convert(y, defaultFloatDType(), y.weakType));
  return ys;
}
/** Casts to dtype (canonicalized for x64) if given. */
export function castTo(x: Array, dtype: DType | undefined | null): Array {
  if (dtype === undefined || dtype === null) return x;
  return ops.convert(x, canonicalizeDType(dtype));
}

/** Normalizes an axis argument that may be a number or list of numbers; null/undefined means all axes. */
export function axisList(fn: string, axis: number | readonly number[] | null | undefined, ndim: number): number[] {
  if (axis === null || axis === undefined) return range(ndim);
  const list = typeof axis === "number" ? [axis] : [...axis];
  const out = list.map((a) => normalizeAxis(fn, a, ndim));
  if (new Set(out).size !== out.length) throw new Error(`${fn}: repeated axis in ${JSON.stringify(list)}`);
  return out;
}

/** An integer-valued Array (indices) from an Array, JS number, or nested list of numbers; names fn on bad dtype. */
export function intArrayArg(fn: string, x: ArrayLike | NestedValue, what = "indices"): Array {
  const a = JSArray.isArray(x) && x.length === 0 ? ops.full([0], 0, indexDType()) : arr(fn, x);
  if (!isInteger(a.dtype)) throw new TypeError(`${fn}: ${what} must be integers, got ${a.aval.str()}`);
  return a;
}
/** Static integer (JS number or concrete 0-d integer Array). */
export function staticInt(fn: string, x: unknown, what: string): number {
  if (typeof x === "number" && Number.isInteger(x)) return x;
  if (typeof x === "bigint") return Number(x);
  if (x instanceof Array && x.ndim === 0 && isInteger(x.dtype)) return Number(requireConcrete(fn, x, what).item());
  throw new TypeError(`${fn}: ${what} must be a static integer, got ${describe(x)}`);
}
/** Static integer list from a number, number[] or concrete 1-d int Array. */
export function staticInts(fn: string, x: unknown, what: string): number[] {
  if (typeof x === "number") return [staticInt(fn, x, what)];
  if (JSArray.isArray(x)) return x.map((v) => staticInt(fn, v, what));
  if (x instanceof Array) return numbersOf(requireConcrete(fn, x, what));
  throw new TypeError(`${fn}: ${what} must be an integer or a list of integers, got ${describe(x)}`);
}

/** Index values of an integer array normalized from [-n, n) to [0, n) (unsigned indices pass through). */
export function normalizeIndex(idx: Array, n: number): Array {
  if (!isInteger(idx.dtype) || idx.dtype.startsWith("u")) return idx;
  // constant indices are normalized here rather than in the traced program
  if (idx instanceof ArrayImpl && idx.size <= 4096 && idx.dtype !== "int64") {
    const v = numbersOf(idx);
    return v.every((i) => i >= 0)
      ? idx
      : ops.convert(
          constInts(
            v.map((i) => (i < 0 ? i + n : i)),
            idx.shape,
          ),
          idx.dtype,
        );
  }
  return ops.select(ops.lt(idx, ops.scalarLike(idx, 0)), ops.add(idx, ops.scalarLike(idx, n)), idx);
}
/** Broadcasts a 0-d or matching array to shape (NumPy rules, naming fn). */
export function bcast(x: Array, shape: readonly number[]): Array {
  if (x.shape.join() === shape.join()) return x;
  return ops.broadcastInDim(
    x,
    shape,
    x.shape.map((_, i) => shape.length - x.ndim + i),
  );
}
/** select(pred, a, b) with NumPy broadcasting of all three. */
export function where3(pred: Array, a: Array, b: Array): Array {
  const shape = broadcastShape([pred.shape, a.shape, b.shape]);
  return ops.select(bcast(pred, shape), bcast(a, shape), bcast(b, shape));
}
export function broadcastShape(shapes: readonly (readonly number[])[], fn = "broadcast"): number[] {
  const nd = Math.max(0, ...shapes.map((s) => s.length));
  const out = new JSArray<number>(nd).fill(1);
  for (const s of shapes)
    s.forEach((d, i) => {
      const o = nd - s.length + i;
      if (out[o] === 1) out[o] = d;
      else if (d !== 1 && d !== out[o])
        throw new Error(
          `${fn}: shapes ${shapes.map(shapeStr).join(", ")} cannot be broadcast together (dimension ${o}: ${out[o]} vs ${d})`,
        );
    });
  return out;
}
/** A concrete int32 (or `dtype`) index array built from JS numbers. */
export function constInts(
  values: readonly number[],
  shape: readonly number[] = [values.length],
  dtype: DType = "int32",
): Array {
  const a = new ArrayImpl(new ShapedArray(shape, "int32"), new Int32Array(values));
  return dtype === "int32" ? a : ops.convert(a, dtype);
}

/** Gathers x along axis at the given static (in-bounds) positions. */
export function takeStatic(x: Array, idx: readonly number[], axis: number): Array {
  const g = ops.gather(x, constInts(idx, [idx.length, 1]), [axis], "clip");
  return ops.moveaxis(g, 0, axis);
}
