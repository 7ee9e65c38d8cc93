/** @file jnp reductions: sum/prod/max/min/all/any, mean/var/std, arg-extrema, cumulative and NaN-aware forms, logsumexp; quantiles re-exported from quantile.ts. */
import { Array } from "../core/array.js";
import {
  type DType,
  defaultIntDType,
  defaultUIntDType,
  isBool,
  isComplex,
  isFloat,
  isInteger,
  isUnsigned,
  intRange,
} from "../core/dtype.js";
import { broadcastShapes, prod as shapeProd, shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { complexArgExtremum, complexReduceExtremum } from "./complex-order.js";
import { asArrayArg, broadcastTo, promoteDtypes } from "./core.js";
import {
  type ArrayInput,
  type Args,
  type Axis,
  axesOf,
  axisOf,
  c,
  inexactDType,
  keepDims,
  parseArgs,
  sel,
  toInexact,
  userDType,
} from "./elementwise-util.js";

type Kind = "sum" | "prod" | "max" | "min" | "all" | "any";
interface ReduceOpts {
  axis: Axis;
  dtype: DType | null;
  out: null;
  keepdims: boolean;
  initial: number | boolean | null;
  where: ArrayInput | null;
  promoteIntegers: boolean;
}
type SumArgs = Args<
  [axis: Axis, dtype: DType | null, out: null, keepdims: boolean, initial: number | null, where: ArrayInput | null],
  Partial<ReduceOpts>
>;
type MaxArgs = Args<
  [axis: Axis, out: null, keepdims: boolean, initial: number | null, where: ArrayInput | null],
  Partial<ReduceOpts>
>;
type AllArgs = Args<
  [axis: Axis, out: null, keepdims: boolean],
  { axis?: Axis; out?: null; keepdims?: boolean; where?: ArrayInput | null }
>;

/** JAX's promote_integers: small ints widen to the default (u)int; bools become the default int. */
function promoteIntegerDType(d: DType): DType {
  if (isBool(d)) return defaultIntDType();
  const bits = (t: DType) => (t.endsWith("8") ? 8 : t.endsWith("16") ? 16 : t.endsWith("32") ? 32 : 64);
  if (isUnsigned(d)) return bits(d) < bits(defaultUIntDType()) ? defaultUIntDType() : d;
  if (isInteger(d)) return bits(d) < bits(defaultIntDType()) ? defaultIntDType() : d;
  return d;
}
const upcastF16 = (d: DType): DType => (d === "float16" || d === "bfloat16" ? "float32" : d);

/** The where mask as a bool array broadcast to shape, or null. */
function whereMask(fn: string, where: ArrayInput | null | undefined, shape: readonly number[]): Array | null {
  if (where === undefined || where === null) return null;
  const w = asArrayArg(fn, where);
  if (w.dtype !== "bool") throw new TypeError(`${fn}: where must be None or a boolean array; got dtype ${w.dtype}`);
  return broadcastTo(w, shape, fn);
}
function identity(kind: Kind, d: DType): number | boolean {
  switch (kind) {
    case "sum":
    case "any":
      return 0;
    case "prod":
    case "all":
      return 1;
    case "max":
      return isFloat(d) ? -Infinity : isBool(d) ? 0 : intRange(d)[0];
    case "min":
      return isFloat(d) ? Infinity : isBool(d) ? 1 : intRange(d)[1];
  }
}
function lowered(kind: Kind, x: Array, axes: number[]): Array {
  const b = isBool(x.dtype);
  switch (kind) {
    case "sum":
      return b ? ops.reduceOr(x, axes) : ops.reduceSum(x, axes);
    case "prod":
      return b ? ops.reduceAnd(x, axes) : ops.reduceProd(x, axes);
    case "max":
      return b ? ops.reduceOr(x, axes) : ops.reduceMax(x, axes);
    case "min":
      return b ? ops.reduceAnd(x, axes) : ops.reduceMin(x, axes);
    case "all":
      return ops.reduceAnd(x, axes);
    case "any":
      return ops.reduceOr(x, axes);
  }
}
function combine(kind: Kind, a: Array, b: Array): Array {
  const bl = isBool(a.dtype);
  switch (kind) {
    case "sum":
      return bl ? ops.or(a, b) : ops.add(a, b);
    case "prod":
    case "all":
      return bl ? ops.and(a, b) : ops.mul(a, b);
    case "max":
      return bl ? ops.or(a, b) : ops.max(a, b);
    case "min":
      return bl ? ops.and(a, b) : ops.min(a, b);
    case "any":
      return ops.or(a, b);
  }
}

/** The shared reduction driver (JAX's _reduction): dtype rules, where mask, initial, keepdims. */
function reduce(fn: string, kind: Kind, a: ArrayInput, o: Partial<ReduceOpts>): Array {
  let x = asArrayArg(fn, a);
  if (o.out !== undefined && o.out !== null) throw new Error(`${fn}: the 'out' argument is not supported`);
  const axes = axesOf(fn, o.axis, x.shape);
  const mask = whereMask(fn, o.where, x.shape);
  const hasIdentity = kind !== "max" && kind !== "min";
  const initial = o.initial ?? null;
  if (!hasIdentity && initial === null) {
    if (mask)
      throw new Error(
        `${fn}: reduction operation ${fn} does not have an identity, so to use a where mask one has to specify 'initial'`,
      );
    if (axes.some((ax) => x.shape[ax] === 0))
      throw new Error(
        `${fn}: zero-size array to reduction operation ${fn} which has no identity (shape ${shapeStr(x.shape)}, axis ${JSON.stringify(o.axis ?? null)})`,
      );
  }
  if ((kind === "max" || kind === "min") && isComplex(x.dtype)) {
    // lexicographic, as NumPy and JAX
    if (mask || initial !== null) throw new Error(`${fn}: initial and where are not supported for complex operands`);
    const r = complexReduceExtremum(kind, x, axes);
    return o.keepdims ? keepDims(r, x.shape, axes) : r;
  }
  if (kind === "sum" || kind === "prod") {
    if (isBool(x.dtype)) x = ops.convert(x, defaultIntDType(), false);
  }
  if (kind === "all" || kind === "any") x = isBool(x.dtype) ? x : ops.ne(x, c(x, 0));
  const userD = userDType(fn, o.dtype);
  let resultD = userD ?? x.dtype;
  if (!userD && (kind === "sum" || kind === "prod") && o.promoteIntegers !== false)
    resultD = promoteIntegerDType(resultD);
  const compD = (kind === "sum" || kind === "prod") && !userD ? upcastF16(resultD) : resultD;
  x = ops.convert(x, compD, false);
  const init = identity(kind, compD);
  if (mask) x = ops.select(mask, x, ops.full(x.shape, init, compD));
  let r = lowered(kind, x, axes);
  if (initial !== null) r = combine(kind, ops.full(r.shape, initial, compD), r);
  if (o.keepdims) r = keepDims(r, x.shape, axes);
  return ops.convert(r, resultD, false);
}
const SUM_NAMES = ["axis", "dtype", "out", "keepdims", "initial", "where"] as const;
const MAX_NAMES = ["axis", "out", "keepdims", "initial", "where"] as const;

/** sum(a, axis, dtype, out, keepdims, initial, where, {promoteIntegers}): bools and small ints sum in the default int. */
export function sum(a: ArrayInput, ...args: SumArgs): Array {
  return reduce("sum", "sum", a, parseArgs<ReduceOpts>("sum", args, SUM_NAMES, ["promoteIntegers"]));
}
export function prod(a: ArrayInput, ...args: SumArgs): Array {
  return reduce("prod", "prod", a, parseArgs<ReduceOpts>("prod", args, SUM_NAMES, ["promoteIntegers"]));
}
export function max(a: ArrayInput, ...args: MaxArgs): Array {
  return reduce("max", "max", a, parseArgs<ReduceOpts>("max", args, MAX_NAMES));
}
export function min(a: ArrayInput, ...args: MaxArgs): Array {
  return reduce("min", "min", a, parseArgs<ReduceOpts>("min", args, MAX_NAMES));
}
export const amax = max,
  amin = min;
export function all(a: ArrayInput, ...args: AllArgs): Array {
  return reduce("all", "all", a, parseArgs<ReduceOpts>("all", args, ["axis", "out", "keepdims"], ["where"]));
}
export function any(a: ArrayInput, ...args: AllArgs): Array {
  return reduce("any", "any", a, parseArgs<ReduceOpts>("any", args, ["axis", "out", "keepdims"], ["where"]));
}

/** Number of elements reduced (respecting a where mask), as dtype d. */
function countOf(x: Array, axes: number[], keepdims: boolean, mask: Array | null, d: DType): Array {
  if (mask) {
    const m = ops.reduceSum(ops.convert(mask, d), axes);
    return keepdims ? keepDims(m, x.shape, axes) : m;
  }
  return ops.full([], shapeProd(axes.map((ax) => x.shape[ax])), d);
}

interface MeanOpts {
  axis: Axis;
  dtype: DType | null;
  out: null;
  keepdims: boolean;
  where: ArrayInput | null;
}
/** mean: integer inputs give the default float; float16 accumulates in float32. */
export function mean(
  a: ArrayInput,
  ...args: Args<[axis: Axis, dtype: DType | null, out: null, keepdims: boolean], Partial<MeanOpts>>
): Array {
  const o = parseArgs<MeanOpts>("mean", args, ["axis", "dtype", "out", "keepdims"], ["where"]);
  return meanImpl("mean", asArrayArg("mean", a), o);
}
function meanImpl(fn: string, x: Array, o: Partial<MeanOpts>): Array {
  const resultD = userDType(fn, o.dtype) ?? inexactDType(x.dtype);
  const compD = upcastF16(resultD);
  const axes = axesOf(fn, o.axis, x.shape);
  const mask = whereMask(fn, o.where, x.shape);
  const s = reduce(fn, "sum", x, { axis: o.axis, dtype: compD, keepdims: o.keepdims, where: o.where });
  return ops.convert(ops.div(s, countOf(x, axes, !!o.keepdims, mask, compD)), resultD, false);
}

interface VarOpts {
  axis: Axis;
  dtype: DType | null;
  out: null;
  ddof: number;
  keepdims: boolean;
  where: ArrayInput | null;
  mean: ArrayInput | null;
  correction: number | null;
}
type VarArgs = Args<[axis: Axis, dtype: DType | null, out: null, ddof: number, keepdims: boolean], Partial<VarOpts>>;
const VAR_NAMES = ["axis", "dtype", "out", "ddof", "keepdims"] as const;
function varImpl(fn: string, a: ArrayInput, o: Partial<VarOpts>, nan: boolean): Array {
  const x0 = asArrayArg(fn, a);
  const userD = userDType(fn, o.dtype);
  const resultD = userD ?? inexactDType(x0.dtype);
  const compD = upcastF16(userD ?? inexactDType(x0.dtype));
  let correction = o.ddof ?? 0;
  if (o.correction !== undefined && o.correction !== null) {
    if (o.ddof !== undefined && o.ddof !== 0)
      throw new Error(`${fn}: ddof and correction can't be provided simultaneously`);
    correction = o.correction;
  }
  const x = ops.convert(x0, compD, false);
  const axes = axesOf(fn, o.axis, x.shape);
  const mask = whereMask(fn, o.where, x.shape);
  const isnanX = isFloat(compD) ? ops.ne(x, x) : null;
  const m =
    o.mean !== undefined && o.mean !== null
      ? ops.convert(asArrayArg(fn, o.mean), compD, false)
      : nan
        ? nanmeanImpl(fn, x, { axis: o.axis, dtype: compD, keepdims: true, where: o.where })
        : meanImpl(fn, x, { axis: o.axis, dtype: compD, keepdims: true, where: o.where });
  let centered = ops.sub(x, broadcastTo(m, x.shape, fn));
  if (nan && isnanX) centered = ops.select(isnanX, ops.fullLike(centered, 0), centered);
  centered = ops.mul(centered, centered);
  let count: Array;
  if (nan && isnanX) {
    const valid = mask ? ops.and(ops.not(isnanX), mask) : ops.not(isnanX);
    count = ops.reduceSum(ops.convert(valid, compD), axes);
    if (o.keepdims) count = keepDims(count, x.shape, axes);
  } else count = countOf(x, axes, !!o.keepdims, mask, compD);
  const norm = ops.sub(count, c(count, correction));
  const total = reduce(fn, "sum", centered, { axis: o.axis, dtype: compD, keepdims: o.keepdims, where: o.where });
  const pos = ops.gt(norm, c(norm, 0));
  const r = sel(pos, ops.div(total, sel(pos, norm, c(norm, 1))), c(total, NaN));
  return ops.convert(r, resultD, false);
}
/** var(a, axis, dtype, out, ddof, keepdims, {where, mean, correction}): NaN when ddof >= the count. */
function variance(a: ArrayInput, ...args: VarArgs): Array {
  return varImpl("var", a, parseArgs<VarOpts>("var", args, VAR_NAMES, ["where", "mean", "correction"]), false);
}
export { variance as var };
export function std(a: ArrayInput, ...args: VarArgs): Array {
  return ops.sqrt(
    varImpl("std", a, parseArgs<VarOpts>("std", args, VAR_NAMES, ["where", "mean", "correction"]), false),
  );
}
export function nanvar(a: ArrayInput, ...args: VarArgs): Array {
  return varImpl("nanvar", a, parseArgs<VarOpts>("nanvar", args, VAR_NAMES, ["where", "mean"]), true);
}
export function nanstd(a: ArrayInput, ...args: VarArgs): Array {
  return ops.sqrt(varImpl("nanstd", a, parseArgs<VarOpts>("nanstd", args, VAR_NAMES, ["where", "mean"]), true));
}

/** Peak to peak: max - min. */
export function ptp(
  a: ArrayInput,
  ...args: Args<[axis: Axis, out: null, keepdims: boolean], { axis?: Axis; out?: null; keepdims?: boolean }>
): Array {
  const o = parseArgs<ReduceOpts>("ptp", args, ["axis", "out", "keepdims"]);
  const hi = reduce("ptp", "max", a, o),
    lo = reduce("ptp", "min", a, o);
  return isBool(hi.dtype) ? ops.xor(hi, lo) : ops.sub(hi, lo);
}
export function countNonzero(
  a: ArrayInput,
  ...args: Args<[axis: Axis, keepdims: boolean], { axis?: Axis; keepdims?: boolean }>
): Array {
  const o = parseArgs<ReduceOpts>("count_nonzero", args, ["axis", "keepdims"]);
  const x = asArrayArg("count_nonzero", a);
  return reduce("count_nonzero", "sum", isBool(x.dtype) ? x : ops.ne(x, c(x, 0)), {
    axis: o.axis,
    keepdims: o.keepdims,
    dtype: defaultIntDType(),
  });
}

// ---------------------------------------------------------------- argmax / argmin
interface ArgOpts {
  axis: number | null;
  out: null;
  keepdims: boolean | null;
}
type ArgArgs = Args<[axis: number | null, out: null, keepdims: boolean | null], Partial<ArgOpts>>;
function argImpl(fn: string, which: "max" | "min", a: ArrayInput, o: Partial<ArgOpts>, nanAware: boolean): Array {
  let x = asArrayArg(fn, a);
  const shape = x.shape;
  let axis: number;
  if (o.axis === undefined || o.axis === null) {
    x = ops.reshape(x, [x.size]);
    axis = 0;
  } else axis = axisOf(fn, o.axis, x.shape);
  if (x.shape[axis] === 0)
    throw new Error(`${fn}: attempt to get ${fn} of an empty sequence (shape ${shapeStr(shape)})`);
  let allNan: Array | null = null;
  if (nanAware && isFloat(x.dtype)) {
    const nanM = ops.ne(x, x);
    allNan = ops.reduceAnd(nanM, [axis]);
    x = ops.select(nanM, ops.fullLike(x, which === "max" ? -Infinity : Infinity), x);
  }
  if (isBool(x.dtype)) x = ops.convert(x, "int32");
  let r = isComplex(x.dtype)
    ? ops.convert(complexArgExtremum(which, x, axis), defaultIntDType())
    : which === "max"
      ? ops.argmax(x, axis, defaultIntDType())
      : ops.argmin(x, axis, defaultIntDType());
  if (allNan) r = ops.select(allNan, ops.fullLike(r, -1), r);
  if (o.keepdims)
    r =
      o.axis === undefined || o.axis === null
        ? ops.reshape(
            r,
            shape.map(() => 1),
          )
        : keepDims(r, shape, [axis]);
  return r;
}
/** Index of the first maximum (NaN counts as the maximum, as in NumPy); axis null flattens. */
export function argmax(a: ArrayInput, ...args: ArgArgs): Array {
  return argImpl("argmax", "max", a, parseArgs<ArgOpts>("argmax", args, ["axis", "out", "keepdims"]), false);
}
export function argmin(a: ArrayInput, ...args: ArgArgs): Array {
  return argImpl("argmin", "min", a, parseArgs<ArgOpts>("argmin", args, ["axis", "out", "keepdims"]), false);
}
/** Ignores NaNs; an all-NaN slice gives -1 (JAX's behaviour; NumPy raises). */
export function nanargmax(a: ArrayInput, ...args: ArgArgs): Array {
  return argImpl("nanargmax", "max", a, parseArgs<ArgOpts>("nanargmax", args, ["axis", "out", "keepdims"]), true);
}
export function nanargmin(a: ArrayInput, ...args: ArgArgs): Array {
  return argImpl("nanargmin", "min", a, parseArgs<ArgOpts>("nanargmin", args, ["axis", "out", "keepdims"]), true);
}

// ---------------------------------------------------------------- cumulative reductions
interface CumOpts {
  axis: number | null;
  dtype: DType | null;
  out: null;
  includeInitial: boolean;
}
type CumArgs = Args<[axis: number | null, dtype: DType | null, out: null], Partial<CumOpts>>;
function cumImpl(
  fn: string,
  kind: "cumsum" | "cumprod",
  a: ArrayInput,
  o: Partial<CumOpts>,
  opts: { fillNan?: number; promote?: boolean } = {},
): Array {
  let x = asArrayArg(fn, a);
  if (o.axis === undefined || o.axis === null || x.ndim === 0) x = ops.reshape(x, [x.size]);
  const axis = axisOf(fn, o.axis ?? 0, x.shape);
  if (opts.fillNan !== undefined && isFloat(x.dtype)) x = ops.select(ops.ne(x, x), ops.fullLike(x, opts.fillNan), x);
  const userD = userDType(fn, o.dtype);
  let resultD: DType, compD: DType;
  if (!userD) {
    resultD = opts.promote || isBool(x.dtype) ? promoteIntegerDType(x.dtype) : x.dtype;
    compD = resultD;
  } else if (userD === "bool") {
    resultD = "bool";
    if (!isBool(x.dtype)) x = ops.ne(x, c(x, 0));
    compD = promoteIntegerDType("bool");
  } else {
    resultD = userD;
    compD = userD;
  }
  x = ops.convert(x, compD, false);
  const r = x.shape[axis] === 0 ? x : ops.cumulative(kind, x, axis);
  return ops.convert(r, resultD, false);
}
export function cumsum(a: ArrayInput, ...args: CumArgs): Array {
  return cumImpl("cumsum", "cumsum", a, parseArgs<CumOpts>("cumsum", args, ["axis", "dtype", "out"]));
}
export function cumprod(a: ArrayInput, ...args: CumArgs): Array {
  return cumImpl("cumprod", "cumprod", a, parseArgs<CumOpts>("cumprod", args, ["axis", "dtype", "out"]));
}
export function nancumsum(a: ArrayInput, ...args: CumArgs): Array {
  return cumImpl("nancumsum", "cumsum", a, parseArgs<CumOpts>("nancumsum", args, ["axis", "dtype", "out"]), {
    fillNan: 0,
  });
}
export function nancumprod(a: ArrayInput, ...args: CumArgs): Array {
  return cumImpl("nancumprod", "cumprod", a, parseArgs<CumOpts>("nancumprod", args, ["axis", "dtype", "out"]), {
    fillNan: 1,
  });
}
/** Array-API cumulative_sum/prod: keyword-only axis (required beyond 1-D), integer promotion, includeInitial. */
function cumulative(
  fn: string,
  kind: "cumsum" | "cumprod",
  x0: ArrayInput,
  opts: { axis?: number | null; dtype?: DType | null; includeInitial?: boolean } = {},
): Array {
  const o = parseArgs<CumOpts>(fn, [opts], [], ["axis", "dtype", "includeInitial"]);
  const x = asArrayArg(fn, x0);
  if (x.ndim === 0) throw new Error(`${fn}: the input must be non-scalar, got a scalar of shape ()`);
  if ((o.axis === undefined || o.axis === null) && x.ndim > 1)
    throw new Error(
      `${fn}: the input array has rank ${x.ndim} (shape ${shapeStr(x.shape)}), however axis was not set; it is only optional for 1-D arrays`,
    );
  const axis = axisOf(fn, o.axis ?? 0, x.shape);
  let r = cumImpl(fn, kind, x, { axis, dtype: o.dtype }, { promote: true });
  if (o.includeInitial) {
    const s = [...r.shape];
    s[axis] = 1;
    r = ops.concatenate([ops.full(s, kind === "cumsum" ? 0 : 1, r.dtype), r], axis);
  }
  return r;
}
export function cumulativeSum(
  x: ArrayInput,
  opts?: { axis?: number | null; dtype?: DType | null; includeInitial?: boolean },
): Array {
  return cumulative("cumulative_sum", "cumsum", x, opts);
}
export function cumulativeProd(
  x: ArrayInput,
  opts?: { axis?: number | null; dtype?: DType | null; includeInitial?: boolean },
): Array {
  return cumulative("cumulative_prod", "cumprod", x, opts);
}

// ---------------------------------------------------------------- NaN-aware reductions
function nanReduce(
  fn: string,
  kind: Kind,
  fill: number,
  a: ArrayInput,
  o: Partial<ReduceOpts>,
  nanIfAllNan: boolean,
): Array {
  const x = asArrayArg(fn, a);
  if (!isFloat(x.dtype)) return reduce(fn, kind, x, o);
  const nanM = ops.ne(x, x);
  const r = reduce(fn, kind, ops.select(nanM, ops.fullLike(x, fill), x), o);
  if (!nanIfAllNan) return r;
  const allNan = reduce(fn, "all", nanM, { axis: o.axis, keepdims: o.keepdims });
  return ops.select(allNan, ops.fullLike(r, NaN), r);
}
export function nansum(a: ArrayInput, ...args: SumArgs): Array {
  return nanReduce("nansum", "sum", 0, a, parseArgs<ReduceOpts>("nansum", args, SUM_NAMES), false);
}
export function nanprod(a: ArrayInput, ...args: SumArgs): Array {
  return nanReduce("nanprod", "prod", 1, a, parseArgs<ReduceOpts>("nanprod", args, SUM_NAMES), false);
}
export function nanmax(a: ArrayInput, ...args: MaxArgs): Array {
  const o = parseArgs<ReduceOpts>("nanmax", args, MAX_NAMES);
  return nanReduce("nanmax", "max", -Infinity, a, o, o.initial === undefined || o.initial === null);
}
export function nanmin(a: ArrayInput, ...args: MaxArgs): Array {
  const o = parseArgs<ReduceOpts>("nanmin", args, MAX_NAMES);
  return nanReduce("nanmin", "min", Infinity, a, o, o.initial === undefined || o.initial === null);
}
function nanmeanImpl(fn: string, x: Array, o: Partial<MeanOpts>): Array {
  if (!isFloat(x.dtype)) return meanImpl(fn, x, o);
  const d = userDType(fn, o.dtype) ?? x.dtype;
  const valid = ops.not(ops.ne(x, x));
  const n = reduce(fn, "sum", valid, { axis: o.axis, dtype: d, keepdims: o.keepdims, where: o.where });
  const s = nanReduce(fn, "sum", 0, x, { axis: o.axis, dtype: d, keepdims: o.keepdims, where: o.where }, false);
  return ops.div(s, n);
}
export function nanmean(
  a: ArrayInput,
  ...args: Args<
    [axis: Axis, dtype: DType | null, out: null, keepdims: boolean, where: ArrayInput | null],
    Partial<MeanOpts>
  >
): Array {
  return nanmeanImpl(
    "nanmean",
    asArrayArg("nanmean", a),
    parseArgs<MeanOpts>("nanmean", args, ["axis", "dtype", "out", "keepdims", "where"]),
  );
}

// ---------------------------------------------------------------- averages, quantiles
interface AvgOpts {
  axis: Axis;
  weights: ArrayInput | null;
  returned: boolean;
  keepdims: boolean;
}
/** Weighted average; with returned, also the sum of weights. 1-D weights apply along a single axis. */
export function average(
  a: ArrayInput,
  ...args: Args<[axis: Axis, weights: ArrayInput | null, returned: boolean, keepdims: boolean], Partial<AvgOpts>>
): Array | [Array, Array] {
  const o = parseArgs<AvgOpts>("average", args, ["axis", "weights", "returned", "keepdims"]);
  const x0 = asArrayArg("average", a);
  const axes = axesOf("average", o.axis, x0.shape);
  let avg: Array, wsum: Array;
  if (o.weights === undefined || o.weights === null) {
    const x = toInexact("average", x0);
    avg = meanImpl("average", x, { axis: o.axis, keepdims: o.keepdims });
    wsum = ops.full([], shapeProd(axes.map((ax) => x.shape[ax])), avg.dtype);
  } else {
    let [x, w] = promoteDtypes("average", [toInexact("average", x0), toInexact("average", o.weights)]);
    if (x.shape.join() !== w.shape.join()) {
      if (o.axis === undefined || o.axis === null)
        throw new Error(
          `average: axis must be specified when shapes of a ${shapeStr(x.shape)} and weights ${shapeStr(w.shape)} differ`,
        );
      if (w.shape.join() !== axes.map((ax) => x.shape[ax]).join())
        throw new Error(
          `average: shape of weights ${shapeStr(w.shape)} must be consistent with shape of a ${shapeStr(x.shape)} along axis ${JSON.stringify(o.axis)}`,
        );
      w = ops.broadcastInDim(w, x.shape, axes);
    }
    wsum = reduce("average", "sum", w, { axis: o.axis, keepdims: o.keepdims });
    avg = ops.div(reduce("average", "sum", ops.mul(x, w), { axis: o.axis, keepdims: o.keepdims }), wsum);
  }
  return o.returned ? [avg, broadcastTo(wsum, avg.shape, "average")] : avg;
}

// quantile, nanquantile, percentile, nanpercentile, median, nanmedian live in quantile.ts (re-exported here)
export { median, nanmedian, nanpercentile, nanquantile, percentile, quantile } from "./quantile.js";

// ---------------------------------------------------------------- logsumexp
interface LseOpts {
  axis: Axis;
  b: ArrayInput | null;
  keepdims: boolean;
  returnSign: boolean;
  where: ArrayInput | null;
}
/**
 * logsumexp(a, axis, b, keepdims, returnSign, where) = log(sum(b * exp(a))), stabilized by the max
 * (jax.scipy.special / jax.nn form). With returnSign, returns [log|s|, sign(s)].
 */
export function logsumexp(
  a: ArrayInput,
  ...args: Args<
    [axis: Axis, b: ArrayInput | null, keepdims: boolean, returnSign: boolean, where: ArrayInput | null],
    Partial<LseOpts>
  >
): Array | [Array, Array] {
  const o = parseArgs<LseOpts>("logsumexp", args, ["axis", "b", "keepdims", "returnSign", "where"]);
  let x = toInexact("logsumexp", a);
  let bArr: Array | null = null;
  if (o.b !== undefined && o.b !== null) {
    [x, bArr] = promoteDtypes("logsumexp", [x, toInexact("logsumexp", o.b)]);
    const shape = broadcastShapes("logsumexp", x.shape, bArr.shape);
    x = broadcastTo(x, shape, "logsumexp");
    bArr = broadcastTo(bArr, shape, "logsumexp");
  }
  x = ops.convert(x, x.dtype, false);
  const axes = axesOf("logsumexp", o.axis, x.shape);
  const mask = whereMask("logsumexp", o.where, x.shape);
  let amax = reduce("logsumexp", "max", x, { axis: o.axis, keepdims: true, where: o.where, initial: -Infinity });
  amax = ops.select(ops.isFinite(amax), amax, ops.fullLike(amax, 0));
  let e = ops.exp(ops.sub(x, broadcastTo(amax, x.shape, "logsumexp")));
  if (bArr) e = ops.mul(e, bArr);
  if (mask) e = ops.select(mask, e, ops.fullLike(e, 0));
  let s = ops.reduceSum(e, axes);
  const am = ops.reshape(amax, s.shape);
  const sign = ops.sign(s);
  if (o.returnSign || bArr) s = ops.abs(s);
  let r = ops.add(ops.log(s), am);
  if (bArr && !o.returnSign) r = ops.select(ops.lt(sign, c(sign, 0)), ops.fullLike(r, NaN), r);
  if (o.keepdims) r = keepDims(r, x.shape, axes);
  if (!o.returnSign) return r;
  return [r, o.keepdims ? keepDims(sign, x.shape, axes) : sign];
}
