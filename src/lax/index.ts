/** @file The jax.lax namespace: thin, checked wrappers over primitives (JAX names in camelCase). */
import { Array } from "../core/array.js";
import { checkDType } from "../core/dtype.js";
import { describe } from "../core/trace.js";
import * as ops from "../primitives/ops.js";

export {
  add, sub, mul, div, rem, pow, max, min, atan2, nextafter, neg, sign, floor, ceil, round, isFinite, exp, exp2, log, log1p, expm1,
  tanh, logistic, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, sqrt, rsqrt, cbrt, abs, erf, erfc, erfInv,
  lgamma, digamma, polygamma, not, populationCount, clz, integerPow, square, eq, ne, lt, le, gt, ge, and, or, xor,
  shiftLeft, shiftRightLogical, shiftRightArithmetic, broadcastInDim, reshape, transpose, squeeze, expandDims, rev, pad,
  concatenate, slice, sliceInDim, select, selectN, clamp, iota, reduceSum, reduceMax, reduceMin, reduceProd, reduceAnd, reduceOr,
  reduceXor, argmax, argmin, dotGeneral, dynamicSlice, dynamicUpdateSlice, gather, scatter, bitcast as bitcastConvertType,
} from "../primitives/ops.js";
export type { DotDims } from "../primitives/ops.js";
export { real, imag, conj, complexOf as complex, fft, type FftType } from "../primitives/ops.js";

export const convertElementType = (x: Array, dtype: Parameters<typeof ops.convert>[1]): Array => {
  const d = checkDType("lax.convertElementType", dtype);
  if (!(x instanceof Array)) throw new TypeError(`lax.convertElementType: operand must be an Array, got ${describe(x)}`);
  return ops.convert(x, d);
};
export const cumsum = (x: Array, axis = 0, reverse = false): Array => ops.cumulative("cumsum", x, axis < 0 ? axis + x.ndim : axis, reverse);
export const cumprod = (x: Array, axis = 0, reverse = false): Array => ops.cumulative("cumprod", x, axis < 0 ? axis + x.ndim : axis, reverse);
export const cummax = (x: Array, axis = 0, reverse = false): Array => ops.cumulative("cummax", x, axis < 0 ? axis + x.ndim : axis, reverse);
export const cummin = (x: Array, axis = 0, reverse = false): Array => ops.cumulative("cummin", x, axis < 0 ? axis + x.ndim : axis, reverse);
export const cumlogsumexp = (x: Array, axis = 0, reverse = false): Array => ops.cumulative("cumlogsumexp", x, axis < 0 ? axis + x.ndim : axis, reverse);
/** lax.dynamic_slice_in_dim(x, start, sliceSize, axis = 0): dynamicSlice along one axis (start may be traced, clamped into range). */
export function dynamicSliceInDim(x: Array, start: Array | number, sliceSize: number, axis = 0): Array {
  const ax = inDimAxis("dynamicSliceInDim", x, axis);
  if (!Number.isInteger(sliceSize) || sliceSize < 0 || sliceSize > x.shape[ax]) {
    throw new RangeError(`dynamicSliceInDim: sliceSize ${sliceSize} must be an integer in [0, ${x.shape[ax]}] for axis ${axis} of shape [${x.shape}]`);
  }
  const st = startIndex(start);
  const starts = x.shape.map((_, i) => (i === ax ? st : ops.full([], 0, st.dtype)));
  return ops.dynamicSlice(x, starts, x.shape.map((d, i) => (i === ax ? sliceSize : d)));
}
/** lax.dynamic_update_slice_in_dim(x, update, start, axis): dynamicUpdateSlice with the start given along one axis only. */
export function dynamicUpdateSliceInDim(x: Array, update: Array, start: Array | number, axis: number): Array {
  const ax = inDimAxis("dynamicUpdateSliceInDim", x, axis);
  if (update.ndim !== x.ndim) throw new TypeError(`dynamicUpdateSliceInDim: update of shape [${update.shape}] must have the operand's rank ${x.ndim} (shape [${x.shape}])`);
  const st = startIndex(start);
  return ops.dynamicUpdateSlice(x, update, x.shape.map((_, i) => (i === ax ? st : ops.full([], 0, st.dtype))));
}
function inDimAxis(fn: string, x: Array, axis: number): number {
  if (!Number.isInteger(axis) || axis < -x.ndim || axis >= x.ndim) throw new RangeError(`${fn}: axis ${axis} is out of bounds for an operand of shape [${x.shape}]`);
  return axis < 0 ? axis + x.ndim : axis;
}
const startIndex = (s: Array | number): Array => (typeof s === "number" ? ops.full([], s, "int32") : s);
/** lax.stop_gradient: the value with a zero derivative. */
export { stopGradient } from "../transforms/stop-gradient.js";
export { cond, switch_ as switch } from "../transforms/control-flow.js";
export { whileLoop, foriLoop, scan, map } from "../transforms/scan.js";
export { psum, pmean, pmax, pmin, axisIndex, axisSize, allGather, ppermute, pshuffle, psumScatter, allToAll, pswapaxes } from "../parallel/collectives.js";
export * as linalg from "./linalg.js";
import type { Array as Arr } from "../core/array.js";
import { sortMany, topK as topKPrim } from "../primitives/sort.js";
/** lax.sort(operand | operands, { dimension, isStable, numKeys }): sorts along a dimension; several operands sort by the first numKeys. */
export function sort(operand: Arr | Arr[], opts: { dimension?: number; isStable?: boolean; numKeys?: number } = {}): Arr | Arr[] {
  const ops1 = globalThis.Array.isArray(operand) ? operand : [operand];
  const d = opts.dimension ?? -1;
  const r = sortMany(ops1, d < 0 ? d + ops1[0].ndim : d, opts.isStable ?? true, opts.numKeys ?? 1);
  return globalThis.Array.isArray(operand) ? r : r[0];
}
export { topKPrim as topK };
export { withShardingConstraint } from "../parallel/device-put.js";
export {
  convGeneralDilated, conv, convWithGeneralPadding, convTranspose, convDimensionNumbers, padtypeToPads,
  reduceWindow, reduceWindowSum, reduceWindowMax, reduceWindowMin,
} from "./conv.js";
export type { ConvDimensionNumbers, ConvDimSpec, ConvGeneralDilatedOptions, Padding } from "./conv.js";
