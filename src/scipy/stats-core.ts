/** @file jax.scipy.stats' free functions: rankdata, mode and sem (sort-based, so they trace under jit with static shapes). */
import type { Array } from "../core/array.js";
import { defaultFloatDType } from "../core/dtype.js";
import { asArrayArg } from "../numpy/core.js";
import { std, nanstd } from "../numpy/reductions.js";
import { promoteArgsInexact } from "../numpy/core.js";
import { sortMany, takeAlongDim } from "../primitives/sort.js";
import { c, ops, sel } from "./stats-util.js";
import type { ArrayInput } from "./stats-util.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";

const FN = "scipy.stats";
const normAxis = (fn: string, axis: number, nd: number): number => {
  if (!Number.isInteger(axis) || axis < -nd || axis >= nd)
    throw new RangeError(`${FN}.${fn}: axis ${String(axis)} is out of bounds for an array of rank ${nd}`);
  return axis < 0 ? axis + nd : axis;
};
function checkNanPolicy(fn: string, p: string, allowOmit = false): void {
  if (!["propagate", "omit", "raise"].includes(p))
    throw new Error(`${FN}.${fn}: illegal nanPolicy ${JSON.stringify(p)}; expected 'propagate', 'omit' or 'raise'`);
  if (p === "raise")
    throw new Error(`${FN}.${fn}: nanPolicy 'raise' is not supported (as in JAX: the check cannot run under jit)`);
  if (p === "omit" && !allowOmit) throw new Error(`${FN}.${fn}: nanPolicy 'omit' is not implemented (as in JAX)`);
}

/**
 * Ties along the last axis of a sorted array: for each position, the first and last index of its run of equal
 * values, and the run number (1-based, the dense rank). Runs are found from neighbour inequality, then spread with
 * cummax / reverse cummin of the run boundaries.
 */
function runs(s: Array): { first: Array; last: Array; dense: Array } {
  const ax = s.ndim - 1,
    n = s.shape[ax];
  const j = ops.iota("int32", s.shape, ax);
  const t = ops.full([...s.shape.slice(0, ax), 1], true, "bool");
  const neq = n > 1 ? ops.ne(ops.sliceInDim(s, 1, n, 1, ax), ops.sliceInDim(s, 0, n - 1, 1, ax)) : null;
  const starts = neq ? ops.concatenate([t, neq], ax) : t;
  const ends = neq ? ops.concatenate([neq, t], ax) : t;
  const first = ops.cumulative("cummax", sel(starts, j, c(j, 0)), ax, false);
  const last = ops.cumulative("cummin", sel(ends, j, c(j, n - 1)), ax, true);
  const dense = ops.cumulative("cumsum", ops.convert(starts, "int32"), ax, false);
  return { first, last, dense };
}

export type RankMethod = "average" | "min" | "max" | "dense" | "ordinal";
/**
 * rankdata(a, method="average", {method, axis=null, nanPolicy="propagate"}): ranks from 1, ties resolved by method (average,
 * min, max, dense, ordinal); the flattened array when axis is null, else each 1-D slice along axis. A slice holding
 * a NaN ranks as all NaN (nanPolicy 'propagate'). The result has the default float dtype.
 */
interface RankOpts {
  method: RankMethod;
  axis: number | null;
  nanPolicy: string;
}
export function rankdata(a: ArrayInput, ...args: Args<[method: RankMethod], Partial<RankOpts>>): Array {
  const opts = parseArgs<RankOpts>(`${FN}.rankdata`, args, ["method"], ["axis", "nanPolicy"]);
  const method = opts.method ?? "average";
  checkNanPolicy("rankdata", opts.nanPolicy ?? "propagate");
  if (!["average", "min", "max", "dense", "ordinal"].includes(method))
    throw new Error(
      `${FN}.rankdata: unknown method ${JSON.stringify(method)}; expected average, min, max, dense or ordinal`,
    );
  let x = asArrayArg(`${FN}.rankdata`, a);
  const axis = opts.axis ?? null;
  const ax = axis === null ? 0 : normAxis("rankdata", axis, x.ndim);
  if (axis === null) x = ops.reshape(x, [x.size]);
  x = ops.moveaxis(x, ax, x.ndim - 1);
  const last = x.ndim - 1;
  const out = defaultFloatDType();
  const iota = ops.iota("int32", x.shape, last);
  const [s, order] = sortMany([x, iota], last, true, 1);
  const inv = sortMany([order, iota], last, true, 1)[1];
  const r = runs(s);
  const f = (v: Array): Array => ops.convert(v, out);
  const one = ops.full([], 1, out);
  let ranked: Array;
  if (method === "ordinal") ranked = ops.add(f(iota), one);
  else if (method === "dense") ranked = f(r.dense);
  else if (method === "min") ranked = ops.add(f(r.first), one);
  else if (method === "max") ranked = ops.add(f(r.last), one);
  else ranked = ops.add(ops.mul(ops.add(f(r.first), f(r.last)), ops.full([], 0.5, out)), one);
  let res = takeAlongDim(ranked, inv, last);
  if (x.dtype.startsWith("float") || x.dtype === "bfloat16") {
    const anyNan = ops.reduceOr(ops.ne(x, x), [last]);
    res = sel(ops.reshape(anyNan, [...anyNan.shape, 1]), ops.full([], NaN, out), res);
  }
  res = ops.moveaxis(res, last, ax);
  return res;
}

/** scipy.stats.mode's result: the most common value and its count (iterable as [mode, count]). */
export interface ModeResult {
  mode: Array;
  count: Array;
  [Symbol.iterator](): Iterator<Array>;
}
/**
 * mode(a, axis=0, nanPolicy="propagate", keepdims=false, {axis, nanPolicy, keepdims}): the most common value along axis (the smallest on ties)
 * and how often it occurs; axis null flattens. Sort-based, O(n log n).
 */
interface ModeOpts {
  axis: number | null;
  nanPolicy: string;
  keepdims: boolean;
}
export function mode(
  a: ArrayInput,
  ...args: Args<[axis: number | null, nanPolicy: string, keepdims: boolean], Partial<ModeOpts>>
): ModeResult {
  const o = parseArgs<ModeOpts>(`${FN}.mode`, args, ["axis", "nanPolicy", "keepdims"]);
  const axis = o.axis === undefined ? 0 : o.axis;
  const keepdims = o.keepdims ?? false;
  checkNanPolicy("mode", o.nanPolicy ?? "propagate");
  let x = asArrayArg(`${FN}.mode`, a);
  if (x.ndim === 0) x = ops.reshape(x, [1]);
  const inShape = x.shape;
  let ax: number;
  if (axis === null) {
    x = ops.reshape(x, [x.size]);
    ax = 0;
  } else ax = normAxis("mode", axis, x.ndim);
  const outShape =
    axis === null
      ? keepdims
        ? inShape.map(() => 1)
        : []
      : keepdims
        ? inShape.map((d, i) => (i === ax ? 1 : d))
        : inShape.filter((_, i) => i !== ax);
  x = ops.moveaxis(x, ax, x.ndim - 1);
  const last = x.ndim - 1;
  if (x.shape[last] === 0) {
    const nan = ops.full(outShape, NaN, defaultFloatDType());
    return result(nan, ops.full(outShape, 0, defaultFloatDType()));
  }
  const s = sortMany([x], last, true, 1)[0];
  const r = runs(s);
  const counts = ops.add(ops.sub(r.last, r.first), c(r.last, 1));
  const at = ops.argmax(counts, last, "int32");
  const m = takeAlongDim(s, ops.reshape(at, [...at.shape, 1]), last);
  const cnt = ops.reduceMax(counts, [last]);
  return result(ops.reshape(m, outShape), ops.reshape(cnt, outShape));
}
function result(m: Array, count: Array): ModeResult {
  return {
    mode: m,
    count,
    *[Symbol.iterator]() {
      yield m;
      yield count;
    },
  };
}

/**
 * sem(a, axis=0, ddof=1, nanPolicy="propagate", {axis, ddof, nanPolicy, keepdims=false}): the standard error of the mean, std(a, ddof) /
 * sqrt(n) along axis (axis null: all elements); nanPolicy 'omit' uses nanstd and counts only the non-NaN values.
 */
interface SemOpts {
  axis: number | null;
  ddof: number;
  nanPolicy: string;
  keepdims: boolean;
}
export function sem(
  a: ArrayInput,
  ...args: Args<[axis: number | null, ddof: number, nanPolicy: string], Partial<SemOpts>>
): Array {
  const opts = parseArgs<SemOpts>(`${FN}.sem`, args, ["axis", "ddof", "nanPolicy"], ["keepdims"]);
  const axis = opts.axis === undefined ? 0 : opts.axis;
  const ddof = opts.ddof ?? 1;
  const nanPolicy = opts.nanPolicy ?? "propagate";
  if (nanPolicy !== "propagate" && nanPolicy !== "omit")
    throw new Error(
      `${FN}.sem: nanPolicy ${JSON.stringify(nanPolicy)} is not supported; expected 'propagate' or 'omit'`,
    );
  const [b] = promoteArgsInexact(`${FN}.sem`, a);
  const keepdims = opts.keepdims ?? false;
  const axes = axis === null ? [...b.shape.keys()] : [normAxis("sem", axis, b.ndim)];
  if (nanPolicy === "propagate") {
    const size = axes.reduce((p, i) => p * b.shape[i], 1);
    return ops.div(std(b, { axis, ddof, keepdims }), c(b, Math.sqrt(size)));
  }
  let count = ops.reduceSum(ops.convert(ops.eq(b, b), b.dtype), axes);
  if (keepdims)
    count = ops.reshape(
      count,
      b.shape.map((d, i) => (axes.includes(i) ? 1 : d)),
    );
  return ops.div(nanstd(b, { axis, ddof, keepdims }), ops.sqrt(count));
}
