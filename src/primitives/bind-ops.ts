/**
 * @file Internal lax-level wrappers that bind primitives (used by rules and by the library's lax/numpy). The primitive
 * definitions import this module for their rules, so it finds primitives by name on first use instead of importing them.
 */
import { Array, type ArrayLike } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { convertStorage, fromNumbers } from "../core/convert.js";
import { DTYPES, type DType, isDType, isFloat, isInexact } from "../core/dtype.js";
import { type Params, type Primitive, UndefinedPrimal, getPrimitive } from "../core/primitive.js";
import { shapeStr, shapesEqual } from "../core/shape.js";
import { bind, bind1, describe, scalarLiteral, scalarToArray } from "../core/trace.js";
import type { GatherMode, ScatterReduce } from "./indexing.js";

export const bindN = <P extends Params>(p: Primitive<P>, args: ArrayLike[], params: P = {} as P): Array[] =>
  bind(p, args, params);
export const isUndefined = (x: unknown): x is UndefinedPrimal => x instanceof UndefinedPrimal;

/** A concrete 0-d array of x's dtype holding v (weak iff x is weak). */
export function scalarLike(x: Array, v: number | boolean): ArrayImpl {
  return new ArrayImpl(
    new ShapedArray([], x.dtype, x.weakType),
    fromNumbers([typeof v === "boolean" ? (v ? 1 : 0) : v], x.dtype),
  );
}
export function full(shape: readonly number[], v: number | boolean, dtype: DType, weak = false): Array {
  const s = new ArrayImpl(
    new ShapedArray([], dtype, weak),
    fromNumbers([typeof v === "boolean" ? (v ? 1 : 0) : v], dtype),
  );
  return shape.length === 0 ? s : broadcastInDim(s, shape, []);
}
export const fullLike = (x: Array, v: number | boolean, dtype?: DType): Array =>
  full(x.shape, v, dtype ?? x.dtype, dtype ? false : x.weakType);
export const zerosLikeArray = (x: Array): Array => full(x.shape, 0, x.dtype, x.weakType);
export const zerosLikeAval = (a: ShapedArray): Array => full(a.shape, 0, a.dtype, a.weakType);

/** Makes two operands of a binary primitive agree: JS scalars take the other's dtype; 0-d arrays broadcast. */
function binArgs(name: string, x: ArrayLike, y: ArrayLike): [Array, Array] {
  let a = x instanceof Array ? x : null;
  let b = y instanceof Array ? y : null;
  if (!a && !b) {
    a = scalarToArray(x as number);
    b = scalarToArray(y as number);
  } else if (!a) a = scalarLike(b!, x as number);
  else if (!b) b = scalarLike(a, y as number);
  if (!shapesEqual(a!.shape, b!.shape) && a!.ndim !== 0 && b!.ndim !== 0) {
    throw new TypeError(
      `${name}: operand shapes ${shapeStr(a!.shape)} and ${shapeStr(b!.shape)} must be equal (lax does not broadcast; use jnp)`,
    );
  }
  return [a!, b!];
}
const integerPowP = prim("integer_pow");
const polygammaP = prim("polygamma");
const roundP = prim("round");
const dynamicSliceP = prim("dynamic_slice");
const dynamicUpdateSliceP = prim("dynamic_update_slice");
const gatherP = prim("gather");
const scatterP = prim("scatter");
const argmaxP = prim("argmax");
const argminP = prim("argmin");
const dotGeneralP = prim("dot_general");
const reduceAndP = prim("reduce_and");
const reduceMaxP = prim("reduce_max");
const reduceMinP = prim("reduce_min");
const reduceOrP = prim("reduce_or");
const reduceProdP = prim("reduce_prod");
const reduceSumP = prim("reduce_sum");
const reduceXorP = prim("reduce_xor");
const bitcastConvertTypeP = prim("bitcast_convert_type");
const broadcastInDimP = prim("broadcast_in_dim");
const clampP = prim("clamp");
const concatenateP = prim("concatenate");
const convertElementTypeP = prim("convert_element_type");
const iotaP = prim("iota");
const padP = prim("pad");
const reshapeP = prim("reshape");
const revP = prim("rev");
const selectNP = prim("select_n");
const sliceP = prim("slice");
const squeezeP = prim("squeeze");
const transposeP = prim("transpose");
/** The registered primitive `name`, looked up once on first use. */
function prim(name: string): () => Primitive {
  let p: Primitive | undefined;
  return () => (p ??= getPrimitive(name));
}
const bin = (name: string) => {
  const p = prim(name);
  return (x: ArrayLike, y: ArrayLike): Array => bind1(p(), binArgs(name, x, y));
};
const un = (name: string) => {
  const p = prim(name);
  return (x: Array, params: Params = {}): Array => bind1(p(), [x], params);
};

export const add = bin("add"),
  sub = bin("sub"),
  mul = bin("mul"),
  div = bin("div"),
  rem = bin("rem"),
  pow = bin("pow");
export const max = bin("max"),
  min = bin("min"),
  atan2 = bin("atan2"),
  nextafter = bin("nextafter");
export const and = bin("and"),
  or = bin("or"),
  xor = bin("xor");
export const shiftLeft = bin("shift_left"),
  shiftRightLogical = bin("shift_right_logical"),
  shiftRightArithmetic = bin("shift_right_arithmetic");
export const eq = bin("eq"),
  ne = bin("ne"),
  lt = bin("lt"),
  le = bin("le"),
  gt = bin("gt"),
  ge = bin("ge");
export const neg = un("neg"),
  sign = un("sign"),
  floor = un("floor"),
  ceil = un("ceil"),
  isFinite = un("is_finite");
export const round = (x: Array, method: 0 | 1 = 0): Array => bind1(roundP(), [x], { rounding_method: method });
export const exp = un("exp"),
  exp2 = un("exp2"),
  log = un("log"),
  log1p = un("log1p"),
  expm1 = un("expm1");
export const tanh = un("tanh"),
  logistic = un("logistic"),
  sin = un("sin"),
  cos = un("cos"),
  tan = un("tan");
export const asin = un("asin"),
  acos = un("acos"),
  atan = un("atan"),
  sinh = un("sinh"),
  cosh = un("cosh");
export const asinh = un("asinh"),
  acosh = un("acosh"),
  atanh = un("atanh"),
  sqrt = un("sqrt"),
  rsqrt = un("rsqrt"),
  cbrt = un("cbrt");
export const abs = un("abs"),
  erf = un("erf"),
  erfc = un("erfc"),
  erfInv = un("erf_inv"),
  lgamma = un("lgamma"),
  digamma = un("digamma");
export const not = un("not"),
  populationCount = un("population_count"),
  clz = un("clz"),
  copy = un("copy");
export const integerPow = (x: Array, y: number): Array => bind1(integerPowP(), [x], { y });
export const polygamma = (m: number, x: Array): Array => bind1(polygammaP(), [x], { m });
export const square = (x: Array): Array => integerPow(x, 2);
/** Quotient rounded toward zero, for floats (used by rem's jvp). */
export const truncDiv = (a: Array, b: Array): Array => {
  const q = div(a, b);
  return isFloat(q.dtype) ? select(lt(q, scalarLike(q, 0)), ceil(q), floor(q)) : q;
};

export function convert(x: Array, dtype: DType, weakType = false): Array {
  if (x.dtype === dtype && x.weakType === weakType) return x;
  if (!isDType(dtype))
    throw new TypeError(
      `convert_element_type: cannot convert ${x.aval.str()} to unknown dtype ${JSON.stringify(dtype)}; expected one of ${DTYPES.join(", ")}`,
    );
  // a concrete scalar (a JS literal) converts on the host, so it stays a literal in traced jaxprs, as in JAX
  if (x instanceof ArrayImpl && x.ndim === 0 && !x.isDisposed) {
    // a JS number converts from its own double (one rounding), not from the float32 it was held in
    const lit = isInexact(dtype) ? scalarLiteral(x) : undefined;
    return new ArrayImpl(
      new ShapedArray([], dtype, weakType),
      lit === undefined ? convertStorage(x.buffer, x.dtype, dtype) : fromNumbers([lit], dtype),
    );
  }
  return bind1(convertElementTypeP(), [x], { new_dtype: dtype, weak_type: weakType, sharding: null });
}
export const bitcast = (x: Array, dtype: DType): Array => bind1(bitcastConvertTypeP(), [x], { new_dtype: dtype });
export function broadcastInDim(x: Array, shape: readonly number[], dims: readonly number[]): Array {
  if (shapesEqual(x.shape, shape) && dims.every((d, i) => d === i)) return x;
  return bind1(broadcastInDimP(), [x], { shape: [...shape], broadcast_dimensions: [...dims], sharding: null });
}
/** Adds a new axis of size n at position `at` by broadcasting (for unbatched operands under vmap). */
export function broadcastBatch(x: Array, n: number, at = 0): Array {
  const shape = [...x.shape];
  shape.splice(at, 0, n);
  return broadcastInDim(
    x,
    shape,
    x.shape.map((_, i) => (i < at ? i : i + 1)),
  );
}
export function reshape(x: Array, shape: readonly number[]): Array {
  if (shapesEqual(x.shape, shape)) return x;
  return bind1(reshapeP(), [x], { new_sizes: [...shape], dimensions: null });
}
export function transpose(x: Array, perm: readonly number[]): Array {
  if (perm.every((p, i) => p === i)) return x;
  return bind1(transposeP(), [x], { permutation: [...perm] });
}
export function moveaxis(x: Array, from: number, to: number): Array {
  if (from === to) return x;
  const perm = [...globalThis.Array(x.ndim).keys()].filter((i) => i !== from);
  perm.splice(to, 0, from);
  return transpose(x, perm);
}
export const squeeze = (x: Array, dims: readonly number[]): Array =>
  dims.length ? bind1(squeezeP(), [x], { dimensions: [...dims] }) : x;
export const expandDims = (x: Array, dims: readonly number[]): Array => {
  const shape = [...x.shape];
  for (const d of [...dims].sort((a, b) => a - b)) shape.splice(d, 0, 1);
  return reshape(x, shape);
};
export const rev = (x: Array, dims: readonly number[]): Array =>
  dims.length ? bind1(revP(), [x], { dimensions: [...dims] }) : x;
export const pad = (x: Array, v: Array, cfg: readonly [number, number, number][]): Array =>
  bind1(padP(), [x, v], { padding_config: cfg.map((c): [number, number, number] => [c[0], c[1], c[2]]) });
export const concatenate = (xs: readonly Array[], dim: number): Array =>
  xs.length === 1 ? xs[0] : bind1(concatenateP(), [...xs], { dimension: dim });
export function slice(
  x: Array,
  start: readonly number[],
  limit: readonly number[],
  strides: readonly number[] | null = null,
): Array {
  const st = strides && strides.every((s) => s === 1) ? null : strides;
  if (st === null && start.every((s) => s === 0) && shapesEqual(limit, x.shape)) return x;
  return bind1(sliceP(), [x], { start_indices: [...start], limit_indices: [...limit], strides: st ? [...st] : null });
}
export function sliceInDim(x: Array, start: number, limit: number, stride: number, axis: number): Array {
  const s = x.shape.map(() => 0),
    l = [...x.shape],
    st = x.shape.map(() => 1);
  s[axis] = start;
  l[axis] = limit;
  st[axis] = stride;
  return slice(x, s, l, st);
}
export const selectN = (pred: Array, cases: readonly Array[]): Array => bind1(selectNP(), [pred, ...cases]);
/** select(pred, onTrue, onFalse) (note select_n's order is [false, true]). */
export const select = (pred: Array, onTrue: Array, onFalse: Array): Array => selectN(pred, [onFalse, onTrue]);
export const clamp = (lo: ArrayLike, x: Array, hi: ArrayLike): Array => {
  const ok = (v: unknown) =>
    v instanceof Array || typeof v === "number" || typeof v === "boolean" || typeof v === "bigint";
  if (!(x instanceof Array) || !ok(lo) || !ok(hi))
    throw new TypeError(
      `clamp: expected clamp(min, x, max) with x an Array and min/max Arrays or JS numbers, got ${[lo, x, hi].map(describe).join(", ")}`,
    );
  const l = lo instanceof Array ? lo : scalarLike(x, lo as number);
  const h = hi instanceof Array ? hi : scalarLike(x, hi as number);
  return bind1(clampP(), [l, x, h]);
};
export const iota = (dtype: DType, shape: readonly number[], dimension = 0): Array =>
  bind1(iotaP(), [], { dtype, shape: [...shape], dimension, sharding: null });

export const reduceSum = (x: Array, axes: readonly number[]): Array =>
  axes.length ? bind1(reduceSumP(), [x], { axes: [...axes], out_sharding: null }) : x;
export const reduceMax = (x: Array, axes: readonly number[]): Array =>
  axes.length ? bind1(reduceMaxP(), [x], { axes: [...axes], out_sharding: null }) : x;
export const reduceMin = (x: Array, axes: readonly number[]): Array =>
  axes.length ? bind1(reduceMinP(), [x], { axes: [...axes], out_sharding: null }) : x;
export const reduceProd = (x: Array, axes: readonly number[]): Array =>
  axes.length ? bind1(reduceProdP(), [x], { axes: [...axes], out_sharding: null }) : x;
export const reduceAnd = (x: Array, axes: readonly number[]): Array =>
  axes.length ? bind1(reduceAndP(), [x], { axes: [...axes], out_sharding: null }) : x;
export const reduceOr = (x: Array, axes: readonly number[]): Array =>
  axes.length ? bind1(reduceOrP(), [x], { axes: [...axes], out_sharding: null }) : x;
export const reduceXor = (x: Array, axes: readonly number[]): Array =>
  axes.length ? bind1(reduceXorP(), [x], { axes: [...axes], out_sharding: null }) : x;
export const argmax = (x: Array, axis: number, indexDtype: DType): Array =>
  bind1(argmaxP(), [x], { axes: [axis], index_dtype: indexDtype });
export const argmin = (x: Array, axis: number, indexDtype: DType): Array =>
  bind1(argminP(), [x], { axes: [axis], index_dtype: indexDtype });
export const cumulative = (
  kind: "cumsum" | "cumprod" | "cummax" | "cummin" | "cumlogsumexp",
  x: Array,
  axis: number,
  reverse = false,
): Array => bind1(getPrimitive(kind), [x], { axis, reverse });
export type DotDims = [[number[], number[]], [number[], number[]]];
export const dotGeneral = (a: Array, b: Array, dims: DotDims, preferred: DType | null = null): Array =>
  bind1(dotGeneralP(), [a, b], {
    dimension_numbers: dims,
    precision: null,
    preferred_element_type: preferred,
    out_sharding: null,
  });

export const gather = (
  x: Array,
  idx: Array,
  axes: readonly number[],
  mode: GatherMode = "clip",
  fillValue: number | null = null,
): Array => bind1(gatherP(), [x, idx], { axes: [...axes], mode, fill_value: fillValue });
export const scatter = (
  x: Array,
  idx: Array,
  upd: Array,
  axes: readonly number[],
  reduce: ScatterReduce,
  mode: GatherMode = "drop",
): Array => bind1(scatterP(), [x, idx, upd], { axes: [...axes], reduce, mode });
export const dynamicSlice = (x: Array, starts: readonly Array[], sizes: readonly number[]): Array =>
  bind1(dynamicSliceP(), [x, ...starts], { slice_sizes: [...sizes] });
export const dynamicUpdateSlice = (x: Array, upd: Array, starts: readonly Array[]): Array =>
  bind1(dynamicUpdateSliceP(), [x, upd, ...starts]);
