/** @file The jax.lax namespace: thin, checked wrappers over primitives (JAX names in camelCase). */
import { Array } from "../core/array.js";
import { checkDType } from "../core/dtype.js";
import { describe } from "../core/trace.js";
import { type ArrayLike } from "../core/array.js";
import { checkArity, checkOptions, fixedArity } from "../core/check-args.js";
import * as ops from "../primitives/ops.js";
import { randomGammaGrad as randomGammaGradPrim } from "../primitives/random.js";

/** Public lax wrappers over the primitives: a call with more arguments than JAX's signature raises instead of dropping them. */
export const neg = fixedArity<[x: Array], Array>("lax.neg", 1, ops.neg, "lax.neg(x)");
export const sign = fixedArity<[x: Array], Array>("lax.sign", 1, ops.sign, "lax.sign(x)");
export const floor = fixedArity<[x: Array], Array>("lax.floor", 1, ops.floor, "lax.floor(x)");
export const ceil = fixedArity<[x: Array], Array>("lax.ceil", 1, ops.ceil, "lax.ceil(x)");
export const isFinite = fixedArity<[x: Array], Array>("lax.isFinite", 1, ops.isFinite, "lax.isFinite(x)");
export const exp = fixedArity<[x: Array], Array>("lax.exp", 1, ops.exp, "lax.exp(x)");
export const exp2 = fixedArity<[x: Array], Array>("lax.exp2", 1, ops.exp2, "lax.exp2(x)");
export const log = fixedArity<[x: Array], Array>("lax.log", 1, ops.log, "lax.log(x)");
export const log1p = fixedArity<[x: Array], Array>("lax.log1p", 1, ops.log1p, "lax.log1p(x)");
export const expm1 = fixedArity<[x: Array], Array>("lax.expm1", 1, ops.expm1, "lax.expm1(x)");
export const tanh = fixedArity<[x: Array], Array>("lax.tanh", 1, ops.tanh, "lax.tanh(x)");
export const logistic = fixedArity<[x: Array], Array>("lax.logistic", 1, ops.logistic, "lax.logistic(x)");
export const sin = fixedArity<[x: Array], Array>("lax.sin", 1, ops.sin, "lax.sin(x)");
export const cos = fixedArity<[x: Array], Array>("lax.cos", 1, ops.cos, "lax.cos(x)");
export const tan = fixedArity<[x: Array], Array>("lax.tan", 1, ops.tan, "lax.tan(x)");
export const asin = fixedArity<[x: Array], Array>("lax.asin", 1, ops.asin, "lax.asin(x)");
export const acos = fixedArity<[x: Array], Array>("lax.acos", 1, ops.acos, "lax.acos(x)");
export const atan = fixedArity<[x: Array], Array>("lax.atan", 1, ops.atan, "lax.atan(x)");
export const sinh = fixedArity<[x: Array], Array>("lax.sinh", 1, ops.sinh, "lax.sinh(x)");
export const cosh = fixedArity<[x: Array], Array>("lax.cosh", 1, ops.cosh, "lax.cosh(x)");
export const asinh = fixedArity<[x: Array], Array>("lax.asinh", 1, ops.asinh, "lax.asinh(x)");
export const acosh = fixedArity<[x: Array], Array>("lax.acosh", 1, ops.acosh, "lax.acosh(x)");
export const atanh = fixedArity<[x: Array], Array>("lax.atanh", 1, ops.atanh, "lax.atanh(x)");
export const sqrt = fixedArity<[x: Array], Array>("lax.sqrt", 1, ops.sqrt, "lax.sqrt(x)");
export const rsqrt = fixedArity<[x: Array], Array>("lax.rsqrt", 1, ops.rsqrt, "lax.rsqrt(x)");
export const cbrt = fixedArity<[x: Array], Array>("lax.cbrt", 1, ops.cbrt, "lax.cbrt(x)");
export const abs = fixedArity<[x: Array], Array>("lax.abs", 1, ops.abs, "lax.abs(x)");
export const erf = fixedArity<[x: Array], Array>("lax.erf", 1, ops.erf, "lax.erf(x)");
export const erfc = fixedArity<[x: Array], Array>("lax.erfc", 1, ops.erfc, "lax.erfc(x)");
export const erfInv = fixedArity<[x: Array], Array>("lax.erfInv", 1, ops.erfInv, "lax.erfInv(x)");
export const lgamma = fixedArity<[x: Array], Array>("lax.lgamma", 1, ops.lgamma, "lax.lgamma(x)");
export const digamma = fixedArity<[x: Array], Array>("lax.digamma", 1, ops.digamma, "lax.digamma(x)");
export const not = fixedArity<[x: Array], Array>("lax.not", 1, ops.not, "lax.not(x)");
export const populationCount = fixedArity<[x: Array], Array>(
  "lax.populationCount",
  1,
  ops.populationCount,
  "lax.populationCount(x)",
);
export const clz = fixedArity<[x: Array], Array>("lax.clz", 1, ops.clz, "lax.clz(x)");
export const square = fixedArity<[x: Array], Array>("lax.square", 1, ops.square, "lax.square(x)");
export const add = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.add", 2, ops.add, "lax.add(x, y)");
export const sub = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.sub", 2, ops.sub, "lax.sub(x, y)");
export const mul = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.mul", 2, ops.mul, "lax.mul(x, y)");
export const div = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.div", 2, ops.div, "lax.div(x, y)");
export const rem = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.rem", 2, ops.rem, "lax.rem(x, y)");
export const pow = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.pow", 2, ops.pow, "lax.pow(x, y)");
export const max = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.max", 2, ops.max, "lax.max(x, y)");
export const min = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.min", 2, ops.min, "lax.min(x, y)");
export const atan2 = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.atan2", 2, ops.atan2, "lax.atan2(x, y)");
export const nextafter = fixedArity<[x: ArrayLike, y: ArrayLike], Array>(
  "lax.nextafter",
  2,
  ops.nextafter,
  "lax.nextafter(x, y)",
);
export const eq = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.eq", 2, ops.eq, "lax.eq(x, y)");
export const ne = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.ne", 2, ops.ne, "lax.ne(x, y)");
export const lt = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.lt", 2, ops.lt, "lax.lt(x, y)");
export const le = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.le", 2, ops.le, "lax.le(x, y)");
export const gt = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.gt", 2, ops.gt, "lax.gt(x, y)");
export const ge = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.ge", 2, ops.ge, "lax.ge(x, y)");
export const and = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.and", 2, ops.and, "lax.and(x, y)");
export const or = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.or", 2, ops.or, "lax.or(x, y)");
export const xor = fixedArity<[x: ArrayLike, y: ArrayLike], Array>("lax.xor", 2, ops.xor, "lax.xor(x, y)");
export const shiftLeft = fixedArity<[x: ArrayLike, y: ArrayLike], Array>(
  "lax.shiftLeft",
  2,
  ops.shiftLeft,
  "lax.shiftLeft(x, y)",
);
export const shiftRightLogical = fixedArity<[x: ArrayLike, y: ArrayLike], Array>(
  "lax.shiftRightLogical",
  2,
  ops.shiftRightLogical,
  "lax.shiftRightLogical(x, y)",
);
export const shiftRightArithmetic = fixedArity<[x: ArrayLike, y: ArrayLike], Array>(
  "lax.shiftRightArithmetic",
  2,
  ops.shiftRightArithmetic,
  "lax.shiftRightArithmetic(x, y)",
);
export const round: typeof ops.round = fixedArity("lax.round", 2, ops.round, "lax.round(x, roundingMethod?)");
export const polygamma: typeof ops.polygamma = fixedArity("lax.polygamma", 2, ops.polygamma, "lax.polygamma(m, x)");
/** lax.igamma(a, x): regularized lower incomplete gamma P(a, x); igammac is Q = 1 - P; igammaGradA is dP/da. */
export const igamma = fixedArity<[a: Array, x: Array], Array>("lax.igamma", 2, ops.igamma, "lax.igamma(a, x)");
export const igammac = fixedArity<[a: Array, x: Array], Array>("lax.igammac", 2, ops.igammac, "lax.igammac(a, x)");
export const igammaGradA = fixedArity<[a: Array, x: Array], Array>(
  "lax.igammaGradA",
  2,
  ops.igammaGradA,
  "lax.igammaGradA(a, x)",
);
/** lax.random_gamma_grad(a, x): d sample / d a of Gamma(a, 1) samples x. */
export const randomGammaGrad = fixedArity<[a: Array, x: Array], Array>(
  "lax.randomGammaGrad",
  2,
  randomGammaGradPrim,
  "lax.randomGammaGrad(a, x)",
);
/** lax.betainc(a, b, x): the regularized incomplete beta function I_x(a, b) (primitive regularized_incomplete_beta). */
export const betainc = fixedArity<[a: Array, b: Array, x: Array], Array>(
  "lax.betainc",
  3,
  ops.betainc,
  "lax.betainc(a, b, x)",
);
export const besselI0e = fixedArity<[x: Array], Array>("lax.besselI0e", 1, ops.besselI0e, "lax.besselI0e(x)");
export const besselI1e = fixedArity<[x: Array], Array>("lax.besselI1e", 1, ops.besselI1e, "lax.besselI1e(x)");
/** lax.zeta(x, q): the Hurwitz zeta function. */
export const zeta = fixedArity<[x: Array, q: Array], Array>("lax.zeta", 2, ops.zeta, "lax.zeta(x, q)");
export const integerPow: typeof ops.integerPow = fixedArity(
  "lax.integerPow",
  2,
  ops.integerPow,
  "lax.integerPow(x, y)",
);
export const broadcastInDim: typeof ops.broadcastInDim = fixedArity(
  "lax.broadcastInDim",
  3,
  ops.broadcastInDim,
  "lax.broadcastInDim(x, shape, broadcastDimensions)",
);
export const reshape: typeof ops.reshape = fixedArity("lax.reshape", 2, ops.reshape, "lax.reshape(x, newSizes)");
export const transpose: typeof ops.transpose = fixedArity(
  "lax.transpose",
  2,
  ops.transpose,
  "lax.transpose(x, permutation)",
);
export const squeeze: typeof ops.squeeze = fixedArity("lax.squeeze", 2, ops.squeeze, "lax.squeeze(x, dimensions)");
export const expandDims: typeof ops.expandDims = fixedArity(
  "lax.expandDims",
  2,
  ops.expandDims,
  "lax.expandDims(x, dimensions)",
);
export const rev: typeof ops.rev = fixedArity("lax.rev", 2, ops.rev, "lax.rev(x, dimensions)");
export const pad: typeof ops.pad = fixedArity("lax.pad", 3, ops.pad, "lax.pad(x, paddingValue, paddingConfig)");
export const concatenate: typeof ops.concatenate = fixedArity(
  "lax.concatenate",
  2,
  ops.concatenate,
  "lax.concatenate(operands, dimension)",
);
export const slice: typeof ops.slice = fixedArity(
  "lax.slice",
  4,
  ops.slice,
  "lax.slice(x, startIndices, limitIndices, strides?)",
);
export const sliceInDim: typeof ops.sliceInDim = fixedArity(
  "lax.sliceInDim",
  5,
  ops.sliceInDim,
  "lax.sliceInDim(x, startIndex, limitIndex, stride, axis)",
);
export const select: typeof ops.select = fixedArity("lax.select", 3, ops.select, "lax.select(pred, onTrue, onFalse)");
export const selectN: typeof ops.selectN = fixedArity("lax.selectN", 2, ops.selectN, "lax.selectN(which, cases)");
export const clamp: typeof ops.clamp = fixedArity("lax.clamp", 3, ops.clamp, "lax.clamp(min, x, max)");
export const iota: typeof ops.iota = fixedArity("lax.iota", 3, ops.iota, "lax.iota(dtype, shape, dimension?)");
export const reduceSum: typeof ops.reduceSum = fixedArity("lax.reduceSum", 2, ops.reduceSum, "lax.reduceSum(x, axes)");
export const reduceMax: typeof ops.reduceMax = fixedArity("lax.reduceMax", 2, ops.reduceMax, "lax.reduceMax(x, axes)");
export const reduceMin: typeof ops.reduceMin = fixedArity("lax.reduceMin", 2, ops.reduceMin, "lax.reduceMin(x, axes)");
export const reduceProd: typeof ops.reduceProd = fixedArity(
  "lax.reduceProd",
  2,
  ops.reduceProd,
  "lax.reduceProd(x, axes)",
);
export const reduceAnd: typeof ops.reduceAnd = fixedArity("lax.reduceAnd", 2, ops.reduceAnd, "lax.reduceAnd(x, axes)");
export const reduceOr: typeof ops.reduceOr = fixedArity("lax.reduceOr", 2, ops.reduceOr, "lax.reduceOr(x, axes)");
export const reduceXor: typeof ops.reduceXor = fixedArity("lax.reduceXor", 2, ops.reduceXor, "lax.reduceXor(x, axes)");
export const argmax: typeof ops.argmax = fixedArity("lax.argmax", 3, ops.argmax, "lax.argmax(x, axis, indexDtype)");
export const argmin: typeof ops.argmin = fixedArity("lax.argmin", 3, ops.argmin, "lax.argmin(x, axis, indexDtype)");
export const dotGeneral: typeof ops.dotGeneral = fixedArity(
  "lax.dotGeneral",
  4,
  ops.dotGeneral,
  "lax.dotGeneral(lhs, rhs, dimensionNumbers, preferredElementType?)",
);
export const dynamicSlice: typeof ops.dynamicSlice = fixedArity(
  "lax.dynamicSlice",
  3,
  ops.dynamicSlice,
  "lax.dynamicSlice(x, startIndices, sliceSizes)",
);
export const dynamicUpdateSlice: typeof ops.dynamicUpdateSlice = fixedArity(
  "lax.dynamicUpdateSlice",
  3,
  ops.dynamicUpdateSlice,
  "lax.dynamicUpdateSlice(x, update, startIndices)",
);
export const gather: typeof ops.gather = fixedArity(
  "lax.gather",
  5,
  ops.gather,
  "lax.gather(x, indices, axes, mode?, fillValue?)",
);
export const scatter: typeof ops.scatter = fixedArity(
  "lax.scatter",
  6,
  ops.scatter,
  "lax.scatter(x, indices, updates, axes, reduce, mode?)",
);
export const bitcastConvertType: typeof ops.bitcast = fixedArity(
  "lax.bitcastConvertType",
  2,
  ops.bitcast,
  "lax.bitcastConvertType(x, newDtype)",
);
export type { DotDims } from "../primitives/ops.js";
export type { FftType } from "../primitives/ops.js";
export const real: typeof ops.real = fixedArity("lax.real", 1, ops.real, "lax.real(x)");
export const imag: typeof ops.imag = fixedArity("lax.imag", 1, ops.imag, "lax.imag(x)");
export const conj: typeof ops.conj = fixedArity("lax.conj", 1, ops.conj, "lax.conj(x)");
export const complex: typeof ops.complexOf = fixedArity("lax.complex", 2, ops.complexOf, "lax.complex(re, im)");
export const fft: typeof ops.fft = fixedArity("lax.fft", 3, ops.fft, "lax.fft(x, fftType, fftLengths)");

export const convertElementType = (x: Array, dtype: Parameters<typeof ops.convert>[1], ...extra: never[]): Array => {
  checkArity("lax.convertElementType", [x, dtype, ...extra], 2, "lax.convertElementType(operand, newDtype)");
  const d = checkDType("lax.convertElementType", dtype);
  if (!(x instanceof Array))
    throw new TypeError(`lax.convertElementType: operand must be an Array, got ${describe(x)}`);
  return ops.convert(x, d);
};
/** lax.cumsum & co (operand, axis = 0, reverse = false); the axis and reverse may also come as a trailing options object. */
function cumulative(kind: "cumsum" | "cumprod" | "cummax" | "cummin" | "cumlogsumexp") {
  const fn = `lax.${kind}`;
  const forms = `${fn}(operand, axis?, reverse?) or ${fn}(operand, { axis, reverse })`;
  return (
    x: Array,
    ...rest: [axis?: number, reverse?: boolean] | [opts: { axis?: number; reverse?: boolean }]
  ): Array => {
    let axis: unknown = rest[0],
      reverse: unknown = rest[1];
    if (rest.length === 1 && rest[0] !== null && typeof rest[0] === "object") {
      checkOptions(fn, rest[0], ["axis", "reverse"], forms);
      ({ axis, reverse } = rest[0] as { axis?: number; reverse?: boolean });
    } else checkArity(fn, [x, ...rest], 3, forms);
    if (!(x instanceof Array)) throw new TypeError(`${fn}: operand must be an Array, got ${describe(x)}`);
    const ax = axis ?? 0;
    if (typeof ax !== "number" || !Number.isInteger(ax) || ax < -x.ndim || ax >= x.ndim)
      throw new RangeError(
        `${fn}: axis must be an integer in [${-x.ndim}, ${x.ndim}) for an operand of shape [${x.shape}], got ${describe(ax)}; accepted forms: ${forms}`,
      );
    if (reverse !== undefined && typeof reverse !== "boolean")
      throw new TypeError(`${fn}: reverse must be a boolean, got ${describe(reverse)}`);
    return ops.cumulative(kind, x, ax < 0 ? ax + x.ndim : ax, reverse ?? false);
  };
}
export const cumsum = cumulative("cumsum");
export const cumprod = cumulative("cumprod");
export const cummax = cumulative("cummax");
export const cummin = cumulative("cummin");
export const cumlogsumexp = cumulative("cumlogsumexp");
/** lax.dynamic_slice_in_dim(x, start, sliceSize, axis = 0): dynamicSlice along one axis (start may be traced, clamped into range). */
export function dynamicSliceInDim(x: Array, start: Array | number, sliceSize: number, axis = 0): Array {
  checkArity("lax.dynamicSliceInDim", arguments, 4, "lax.dynamicSliceInDim(operand, startIndex, sliceSize, axis = 0)");
  const ax = inDimAxis("dynamicSliceInDim", x, axis);
  if (!Number.isInteger(sliceSize) || sliceSize < 0 || sliceSize > x.shape[ax]) {
    throw new RangeError(
      `dynamicSliceInDim: sliceSize ${sliceSize} must be an integer in [0, ${x.shape[ax]}] for axis ${axis} of shape [${x.shape}]`,
    );
  }
  const st = startIndex(start);
  const starts = x.shape.map((_, i) => (i === ax ? st : ops.full([], 0, st.dtype)));
  return ops.dynamicSlice(
    x,
    starts,
    x.shape.map((d, i) => (i === ax ? sliceSize : d)),
  );
}
/** lax.dynamic_update_slice_in_dim(x, update, start, axis): dynamicUpdateSlice with the start given along one axis only. */
export function dynamicUpdateSliceInDim(x: Array, update: Array, start: Array | number, axis: number): Array {
  checkArity(
    "lax.dynamicUpdateSliceInDim",
    arguments,
    4,
    "lax.dynamicUpdateSliceInDim(operand, update, startIndex, axis)",
  );
  const ax = inDimAxis("dynamicUpdateSliceInDim", x, axis);
  if (update.ndim !== x.ndim)
    throw new TypeError(
      `dynamicUpdateSliceInDim: update of shape [${update.shape}] must have the operand's rank ${x.ndim} (shape [${x.shape}])`,
    );
  const st = startIndex(start);
  return ops.dynamicUpdateSlice(
    x,
    update,
    x.shape.map((_, i) => (i === ax ? st : ops.full([], 0, st.dtype))),
  );
}
function inDimAxis(fn: string, x: Array, axis: number): number {
  if (!Number.isInteger(axis) || axis < -x.ndim || axis >= x.ndim)
    throw new RangeError(`${fn}: axis ${axis} is out of bounds for an operand of shape [${x.shape}]`);
  return axis < 0 ? axis + x.ndim : axis;
}
const startIndex = (s: Array | number): Array => (typeof s === "number" ? ops.full([], s, "int32") : s);
/** lax.stop_gradient: the value with a zero derivative. */
import { stopGradient as stopGradientRaw } from "../transforms/stop-gradient.js";
export const stopGradient: typeof stopGradientRaw = fixedArity(
  "lax.stopGradient",
  1,
  stopGradientRaw,
  "lax.stopGradient(x)",
);
export { cond, switch_ as switch } from "../transforms/control-flow.js";
import {
  whileLoop as whileLoopRaw,
  foriLoop as foriLoopRaw,
  scan as scanRaw,
  map as mapRaw,
} from "../transforms/scan.js";
export const whileLoop: typeof whileLoopRaw = fixedArity(
  "lax.whileLoop",
  3,
  whileLoopRaw,
  "lax.whileLoop(condFun, bodyFun, initVal)",
);
export const foriLoop: typeof foriLoopRaw = fixedArity(
  "lax.foriLoop",
  4,
  foriLoopRaw,
  "lax.foriLoop(lower, upper, bodyFun, initVal)",
);
export const map: typeof mapRaw = fixedArity("lax.map", 2, mapRaw, "lax.map(f, xs)");
const SCAN_FORMS = "lax.scan(f, init, xs?, { length, reverse, unroll })";
/** lax.scan(f, init, xs = null, { length, reverse, unroll }): the options are checked. */
export const scan: typeof scanRaw = function scan(this: unknown, ...args: Parameters<typeof scanRaw>) {
  checkArity("lax.scan", args, 4, SCAN_FORMS);
  checkOptions("lax.scan", args[3], ["length", "reverse", "unroll"], SCAN_FORMS);
  return scanRaw(...args);
} as typeof scanRaw;
export {
  psum,
  pmean,
  pmax,
  pmin,
  axisIndex,
  axisSize,
  allGather,
  ppermute,
  pshuffle,
  psumScatter,
  allToAll,
  pswapaxes,
} from "../parallel/collectives.js";
export * as linalg from "./linalg.js";
import type { Array as Arr } from "../core/array.js";
import { sortMany, topKAlong } from "../primitives/sort.js";
type SortOpts = { dimension?: number; isStable?: boolean; numKeys?: number };
const SORT_FORMS =
  "lax.sort(operand | operands, dimension = -1, isStable = true, numKeys = 1) or lax.sort(operand | operands, { dimension, isStable, numKeys })";
/** lax.sort(operand | operands, dimension?, isStable?, numKeys?) (or an options object): sorts along a dimension; several operands sort by the first numKeys. */
export function sort(
  operand: Arr | Arr[],
  ...rest: [dimension?: number, isStable?: boolean, numKeys?: number] | [opts: SortOpts]
): Arr | Arr[] {
  let o: SortOpts;
  if (rest.length === 1 && rest[0] !== null && typeof rest[0] === "object") {
    checkOptions("lax.sort", rest[0], ["dimension", "isStable", "numKeys"], SORT_FORMS);
    o = rest[0];
  } else {
    checkArity("lax.sort", [operand, ...rest], 4, SORT_FORMS);
    o = {
      dimension: rest[0] as number | undefined,
      isStable: rest[1] as boolean | undefined,
      numKeys: rest[2] as number | undefined,
    };
  }
  const ops1 = globalThis.Array.isArray(operand) ? operand : [operand];
  const d = o.dimension ?? -1;
  if (typeof d !== "number" || !Number.isInteger(d))
    throw new TypeError(`lax.sort: dimension must be an integer, got ${describe(d)}; accepted forms: ${SORT_FORMS}`);
  const r = sortMany(ops1, d < 0 ? d + ops1[0].ndim : d, o.isStable ?? true, o.numKeys ?? 1);
  return globalThis.Array.isArray(operand) ? r : r[0];
}
/** lax.top_k(operand, k, { axis = -1 }): the k largest entries along axis (ties by lower index) and their int32 indices. */
export function topK(operand: Arr, k: number, opts: { axis?: number } = {}): [Arr, Arr] {
  const forms = "lax.topK(operand, k) or lax.topK(operand, k, { axis })";
  checkArity("lax.topK", arguments, 3, forms);
  checkOptions("lax.topK", opts, ["axis"], forms);
  const axis = opts.axis ?? -1;
  if (!(operand instanceof Array)) throw new TypeError(`lax.topK: operand must be an Array, got ${describe(operand)}`);
  if (typeof axis !== "number" || !Number.isInteger(axis) || axis < -operand.ndim || axis >= operand.ndim)
    throw new RangeError(`lax.topK: axis ${describe(axis)} is out of range for an operand of shape [${operand.shape}]`);
  const ax = axis < 0 ? axis + operand.ndim : axis;
  return topKAlong(operand, k, ax);
}
import { withShardingConstraint as wscRaw } from "../parallel/sharding-constraint.js";
export const withShardingConstraint: typeof wscRaw = fixedArity(
  "lax.withShardingConstraint",
  2,
  wscRaw,
  "lax.withShardingConstraint(x, shardings)",
);
import * as C from "./conv.js";
export { convGeneralDilated, conv, convWithGeneralPadding, convTranspose, reduceWindow } from "./conv.js";
export const convDimensionNumbers: typeof C.convDimensionNumbers = fixedArity(
  "lax.convDimensionNumbers",
  3,
  C.convDimensionNumbers,
  "lax.convDimensionNumbers(lhsShape, rhsShape, dimensionNumbers)",
);
export const padtypeToPads: typeof C.padtypeToPads = fixedArity(
  "lax.padtypeToPads",
  4,
  C.padtypeToPads,
  "lax.padtypeToPads(inShape, windowShape, windowStrides, padding)",
);
const RW = "(operand, windowDimensions, windowStrides?, padding?, baseDilation?, windowDilation?)";
export const reduceWindowSum: typeof C.reduceWindowSum = fixedArity(
  "lax.reduceWindowSum",
  6,
  C.reduceWindowSum,
  `lax.reduceWindowSum${RW}`,
);
export const reduceWindowMax: typeof C.reduceWindowMax = fixedArity(
  "lax.reduceWindowMax",
  6,
  C.reduceWindowMax,
  `lax.reduceWindowMax${RW}`,
);
export const reduceWindowMin: typeof C.reduceWindowMin = fixedArity(
  "lax.reduceWindowMin",
  6,
  C.reduceWindowMin,
  `lax.reduceWindowMin${RW}`,
);
export type { ConvDimensionNumbers, ConvDimSpec, ConvGeneralDilatedOptions, Padding } from "./conv.js";
