/** @file Types of the differentiation API: which arguments argnums selects, and what grad/jacobians return for them. */
import type { Array } from "../core/array.js";
import type { Depth, Tangent } from "../core/pytree-types.js";

/** The arguments a differentiated function accepts: f's own, where any argument may also be a JS number (a weak float). */
export type DiffArgs<A extends readonly unknown[]> = { [K in keyof A]: A[K] | number };

/** Argnums as written by the caller: one index or a tuple/list of indices (negative indices count from the end). */
export type Argnums = number | readonly number[];

/** The type of f's argument at index N (any argument's type for a negative or non-literal index). */
export type ArgAt<A extends readonly unknown[], N extends number> = number extends N
  ? A[number]
  : `${N}` extends `-${string}`
    ? A[number]
    : A[N];

/** The gradient for argnums N: one argument's tangent for an index, a tuple of them for a tuple of indices. */
export type GradOf<A extends readonly unknown[], N extends Argnums> = N extends number
  ? Tangent<ArgAt<A, N>>
  : { -readonly [K in keyof N]: Tangent<ArgAt<A, N[K] & number>> };

/**
 * The Jacobian of an output of type O with respect to inputs whose gradient type is G: each output leaf (an Array or
 * scalar) is replaced by G (one Jacobian block per differentiated input leaf, shaped out.shape + in.shape).
 */
export type Jacobian<O, G, D extends number = 8> = [D] extends [never]
  ? unknown
  : O extends number | boolean | bigint | Array
    ? G
    : O extends null | undefined
      ? O
      : O extends readonly unknown[]
        ? { -readonly [K in keyof O]: Jacobian<O[K], G, Depth[D]> }
        : O extends object
          ? { -readonly [K in keyof O]: Jacobian<O[K], G, Depth[D]> }
          : unknown;

/** grad/valueAndGrad options without hasAux (or hasAux: false). */
export interface GradOptsNoAux<N extends Argnums> {
  argnums?: N;
  hasAux?: false;
  /** f is holomorphic (complex inputs and output): the gradient is df/dz. */
  holomorphic?: boolean;
}
/** grad/valueAndGrad options with hasAux: true (f returns [output, aux]). */
export interface GradOptsAux<N extends Argnums> {
  argnums?: N;
  hasAux: true;
  /** f is holomorphic (complex inputs and output): the gradient is df/dz. */
  holomorphic?: boolean;
}
