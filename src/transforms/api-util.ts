/** @file Helpers for the public transformation API: pytree flattening of arguments and argnums handling. */
import { Array } from "../core/array.js";
import { flatten, unflatten, type TreeDef } from "../core/tree.js";
import { describe, scalarToArray } from "../core/trace.js";
import { type DType, defaultFloatDType, isComplex, isFloat, isInexact } from "../core/dtype.js";

/** Flattens a pytree of arguments to Array leaves; JS scalars become weak 0-d arrays. */
export function flattenArrays(
  fn: string,
  tree: unknown,
  what = "argument",
  numbersAsFloat = false,
): [Array[], TreeDef] {
  const [leaves, def] = flatten(tree);
  const arrs = leaves.map((l, i) => {
    if (l instanceof Array) return l;
    // JS cannot tell 2 from 2.0: differentiated JS numbers are taken as (weak) floats
    if (typeof l === "number" && numbersAsFloat) return scalarToArray(l, defaultFloatDType(), true);
    if (typeof l === "number" || typeof l === "boolean" || typeof l === "bigint") return scalarToArray(l);
    throw new TypeError(
      `${fn}: ${what} leaf ${i} is ${describe(l)}, which is not a valid JAX type (expected an Array or a JS number/boolean); mark it static or pass arrays`,
    );
  });
  return [arrs, def];
}

export function normalizeArgnums(fn: string, argnums: number | number[] | undefined, nargs: number): number[] {
  const list = argnums === undefined ? [0] : typeof argnums === "number" ? [argnums] : argnums;
  return list.map((a) => {
    const n = a < 0 ? a + nargs : a;
    if (!Number.isInteger(n) || n < 0 || n >= nargs)
      throw new RangeError(
        `${fn}: argnums ${a} is out of range for a function called with ${nargs} positional arguments`,
      );
    return n;
  });
}

/** Raises when an argnum option (static/nondiff) names a positional argument the call did not pass. */
export function checkArgnumsPassed(fn: string, option: string, nums: readonly number[], nargs: number): void {
  const bad = nums.filter((i) => !Number.isInteger(i) || i < 0 || i >= nargs);
  if (bad.length)
    throw new RangeError(
      `${fn}: ${option}=[${nums.join(", ")}] refers to argument(s) ${bad.join(", ")}, but the function was called with ${nargs} positional argument(s)`,
    );
}

/** Flattens a traced function's output to arrays, recording its structure in `store.def`. */
export function flatOut(fn: string, out: unknown, store: { def?: TreeDef }): Array[] {
  const [leaves, def] = flattenArrays(fn, out, "output");
  store.def = def;
  return leaves;
}

export { flatten, unflatten };
export type { TreeDef };

/**
 * JAX's dtype checks of a differentiated input (`what` "inputs") or output ("outputs"): holomorphic differentiation
 * needs complex ones; otherwise inputs are float (or, for grad/jacrev, complex) and outputs real.
 */
export function checkDiffDType(
  fn: string,
  what: "inputs" | "outputs",
  dtype: DType,
  holomorphic: boolean | undefined,
  allowComplex: boolean,
): void {
  if (holomorphic) {
    if (!isComplex(dtype))
      throw new TypeError(`${fn} with holomorphic=true requires ${what} with complex dtype, but got ${dtype}.`);
    return;
  }
  if (what === "outputs") {
    if (!isFloat(dtype))
      throw new TypeError(
        `${fn} requires real-valued outputs (floating dtype), got ${dtype}.${isComplex(dtype) ? " For holomorphic differentiation, pass { holomorphic: true }; for non-holomorphic functions with complex outputs use vjp." : ""}`,
      );
    return;
  }
  if (allowComplex ? !isInexact(dtype) : !isFloat(dtype))
    throw new TypeError(
      `${fn} requires real-valued inputs (floating${allowComplex ? " or complex" : ""} dtypes), but got ${dtype}.${isComplex(dtype) ? " For holomorphic differentiation, pass { holomorphic: true }." : " For integer inputs use jax.vjp or argnums to select float arguments."}`,
    );
}
