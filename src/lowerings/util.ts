/** @file Small array helpers shared by the traced lowerings in src/lowerings/ (float64 work, masks, broadcasts). */
import type { Array } from "../core/array.js";
import type { DType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";

/** [0, 1, ..., n - 1] */
export const range = (n: number): number[] => [...globalThis.Array(n).keys()];
/** The lowerings compute in float64, as the reference kernels do. */
export const F64: DType = "float64";
export const f64 = (x: Array): Array => ops.convert(x, F64);
export const zeros = (x: Array): Array => ops.zerosLikeArray(x);
/** x [...B] broadcast to `shape` [...B, ...] along its leading axes. */
export const lead = (x: Array, shape: readonly number[]): Array => ops.broadcastInDim(x, shape, range(x.ndim));
/** True where x is NaN. */
export const isNan = (x: Array): Array => ops.ne(x, x);
/** True when any element of a boolean array is true (a 0-d bool). */
export const anyTrue = (b: Array): Array => ops.reduceOr(b, range(b.ndim));
