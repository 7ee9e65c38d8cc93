/** @file Type-level pytrees: PyTree<T>, and Tangent<T>, the type a transformation gives back for a value of type T. */
import type { Array } from "./array.js";

/**
 * A pytree whose leaves have type T: a leaf, null/undefined (empty nodes), or JS arrays/tuples and plain objects of
 * pytrees. Classes registered with tree.registerNode are pytrees at run time too; they are not expressible here.
 */
export type PyTree<T = Array> = T | null | undefined | readonly PyTree<T>[] | { readonly [key: string]: PyTree<T> };

/** Nesting levels Tangent and Jacobian follow before giving up with `unknown` (recursive types such as NestedValue). */
export type Depth = [never, 0, 1, 2, 3, 4, 5, 6, 7];

/**
 * The type of the tangent/cotangent/gradient (or output) tree matching a value of type T: JS number, boolean and
 * bigint leaves (and typed arrays, taken as arrays) come back as Arrays, Arrays and empty nodes stay, arrays, tuples
 * and plain objects are mapped leaf by leaf (8 levels deep at most). `unknown` stays `unknown`.
 */
export type Tangent<T, D extends number = 8> = [D] extends [never]
  ? unknown
  : T extends number | boolean | bigint | ArrayBufferView
    ? Array
    : T extends Array | null | undefined | string | ((...args: never[]) => unknown)
      ? T
      : T extends readonly unknown[]
        ? { -readonly [K in keyof T]: Tangent<T[K], Depth[D]> }
        : T extends object
          ? { -readonly [K in keyof T]: Tangent<T[K], Depth[D]> }
          : T;
