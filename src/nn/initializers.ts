/** @file jax.nn.initializers basics: zeros, ones, constant (random initializers need jax.random and live elsewhere). */
import { Array } from "../core/array.js";
import { type DType, defaultFloatDType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { userDType } from "../numpy/elementwise-util.js";

/** An initializer: (key, shape, dtype?) => Array, as in JAX (the key is ignored by the constant ones). */
export type Initializer = (key: unknown, shape: readonly number[], dtype?: DType) => Array;

const shapeOf = (fn: string, s: readonly number[]): number[] => {
  if (!globalThis.Array.isArray(s) || !s.every((d) => Number.isInteger(d) && d >= 0)) throw new TypeError(`${fn}: shape must be a list of non-negative integers, got ${JSON.stringify(s)}`);
  return [...s];
};
export const zeros: Initializer = (_key, shape, dtype) => ops.full(shapeOf("initializers.zeros", shape), 0, userDType("initializers.zeros", dtype) ?? defaultFloatDType());
export const ones: Initializer = (_key, shape, dtype) => ops.full(shapeOf("initializers.ones", shape), 1, userDType("initializers.ones", dtype) ?? defaultFloatDType());
/** constant(value, dtype?) -> an initializer filling with value. */
export function constant(value: number, dtype?: DType): Initializer {
  return (_key, shape, d) => ops.full(shapeOf("initializers.constant", shape), value, userDType("initializers.constant", d ?? dtype) ?? defaultFloatDType());
}
