/** @file jnp selection (where, select, piecewise), astype, interp, 1-D convolve/correlate, diff, gradient, trapezoid, cross. */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { isBool, isComplex, realDType } from "../core/dtype.js";
import { broadcastShapes, shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { convGeneralDilatedRaw } from "../primitives/conv.js";
import { asArrayArg, broadcastTo, isOptions, promoteArgs, promoteDtypes } from "./core.js";
import { sortMany } from "../primitives/sort.js";
import { remainder } from "./elementwise-arith.js";
import { searchsorted } from "./sorting.js";
import { nonzeroOf } from "./nonzero-util.js";
import { concreteOf } from "./struct-util.js";
import {
  type ArrayInput,
  type Args,
  axisOf,
  c,
  concreteInt,
  parseArgs,
  sel,
  toInexact,
  userDType,
  whereArr,
} from "./elementwise-util.js";
import type { DType } from "../core/dtype.js";

const JSArray = globalThis.Array;

/** Options of the one-argument form of jnp.where (as jnp.nonzero's). */
export interface WhereNonzeroOpts {
  size?: number;
  fillValue?: number | number[];
  /** Never set: keeps an Array (which has a `size`) from reading as this options object in the overloads. */
  shape?: never;
}
/**
 * where(condition, x, y): elementwise choice with broadcasting and dtype promotion. The one-argument form,
 * where(condition) or where(condition, { size, fillValue }) (also where(condition, undefined, undefined, opts)),
 * is jnp.nonzero(condition, { size, fillValue }) as in JAX: one index array per dimension; under jit it needs a
 * static size.
 */
export function where(condition: ArrayInput, x: ArrayInput, y: ArrayInput): Array;
export function where(condition: ArrayInput, opts?: WhereNonzeroOpts): Array[];
export function where(condition: ArrayInput, x: undefined, y: undefined, opts?: WhereNonzeroOpts): Array[];
export function where(
  condition: ArrayInput,
  x?: ArrayInput | WhereNonzeroOpts,
  y?: ArrayInput,
  opts?: WhereNonzeroOpts,
): Array | Array[] {
  checkArity(
    "where",
    arguments,
    4,
    "where(condition, x, y) or where(condition, { size, fillValue }) (the nonzero form)",
  );
  if (isOptions(x)) {
    if (y !== undefined || opts !== undefined)
      throw new TypeError("where: after an options object { size, fillValue } no more arguments are expected");
    [x, opts] = [undefined, x as WhereNonzeroOpts];
  }
  checkOptions("where", opts, ["size", "fillValue"], "where(condition, { size, fillValue })");
  if (x === undefined && y === undefined) return nonzeroOf("where", condition as ArrayLike | NestedValue, opts ?? {});
  if (x === undefined || y === undefined)
    throw new TypeError("where: either both or neither of x and y should be given");
  if (opts !== undefined && (opts.size !== undefined || opts.fillValue !== undefined))
    throw new TypeError("where: size and fillValue apply only to the one-argument form where(condition, { size })");
  return whereArr("where", condition, x as ArrayInput, y);
}

/** select(condlist, choicelist, default=0): the choice of the first true condition, else default. */
export function select(
  condlist: readonly ArrayInput[],
  choicelist: readonly ArrayInput[],
  ...args: Args<[dflt: ArrayInput], { default?: ArrayInput }>
): Array {
  const o = parseArgs<{ default: ArrayInput; dflt: ArrayInput }>("select", args, ["default"]);
  if (!JSArray.isArray(condlist) || !JSArray.isArray(choicelist))
    throw new TypeError("select: condlist and choicelist must be lists of arrays");
  if (condlist.length !== choicelist.length)
    throw new Error(
      `select: list of cases must be same length as list of conditions (got ${condlist.length} conditions and ${choicelist.length} choices)`,
    );
  if (condlist.length === 0) throw new Error("select: condlist must be non-empty");
  const choices = promoteDtypes("select", [o.default ?? 0, ...choicelist]);
  const conds = condlist.map((cd) => {
    const a = asArrayArg("select", cd);
    return isBool(a.dtype) ? a : ops.ne(a, c(a, 0));
  });
  const shape = broadcastShapes("select", ...conds.map((a) => a.shape), ...choices.map((a) => a.shape));
  let r = broadcastTo(choices[0], shape, "select");
  for (let i = conds.length - 1; i >= 0; i--)
    r = ops.select(broadcastTo(conds[i], shape, "select"), broadcastTo(choices[i + 1], shape, "select"), r);
  return r;
}

/** A piecewise function entry: a constant (a number or a 0-d / broadcastable Array), or an elementwise function of x and the extra arguments. */
export type PiecewiseFunc<A extends unknown[]> = number | Array | ((x: Array, ...args: A) => Array | number);
/**
 * piecewise(x, condlist, funclist, ...args): funclist holds constants or elementwise functions; a function is called
 * as f(x, ...args) on all of x (JAX's `*args`; keyword arguments go in as one more argument, e.g. an object) and
 * its values are used where its condition holds (later conditions win, as in NumPy). With one more function than
 * conditions, the extra one is the default.
 */
export function piecewise<A extends unknown[] = []>(
  x: ArrayInput,
  condlist: readonly ArrayInput[] | Array,
  funclist: readonly PiecewiseFunc<A>[],
  ...args: A
): Array {
  const xa = asArrayArg("piecewise", x);
  const conds: Array[] =
    condlist instanceof Array
      ? condlist.ndim === xa.ndim
        ? [condlist]
        : [...JSArray(condlist.shape[0]).keys()].map((i) =>
            ops.reshape(ops.sliceInDim(condlist, i, i + 1, 1, 0), condlist.shape.slice(1)),
          )
      : condlist.map((cd) => asArrayArg("piecewise", cd));
  const nc = conds.length,
    nf = funclist.length;
  if (nf !== nc && nf !== nc + 1)
    throw new Error(`piecewise: with ${nc} condition(s), either ${nc} or ${nc + 1} functions are expected; got ${nf}`);
  const val = (f: PiecewiseFunc<A>): Array => {
    const v = typeof f === "function" ? f(xa, ...args) : f;
    const a = v instanceof Array ? v : ops.convert(asArrayArg("piecewise", v), xa.dtype, false);
    return broadcastTo(ops.convert(a, xa.dtype, false), xa.shape, "piecewise");
  };
  let r = nf === nc + 1 ? val(funclist[nc]) : ops.fullLike(xa, 0, xa.dtype);
  for (let i = 0; i < nc; i++) {
    const cd = conds[i].dtype === "bool" ? conds[i] : ops.ne(conds[i], c(conds[i], 0));
    r = ops.select(broadcastTo(cd, xa.shape, "piecewise"), val(funclist[i]), r);
  }
  return r;
}

/** astype(x, dtype): converts to a (canonicalized) dtype; the result is strongly typed. */
export function astype(x: ArrayInput, dtype: DType, opts?: { copy?: boolean; device?: unknown }): Array {
  checkArity("astype", arguments, 3, "astype(x, dtype, { copy, device })");
  checkOptions("astype", opts, ["copy", "device"], "astype(x, dtype, { copy, device })");
  const d = userDType("astype", dtype);
  if (!d) throw new TypeError("astype: a dtype is required");
  return ops.convert(asArrayArg("astype", x), d, false);
}

/** Gathers 1-D `v` at an integer index array (any shape), returning the index's shape. */
const take1d = (v: Array, idx: Array): Array => ops.gather(v, ops.reshape(idx, [...idx.shape, 1]), [0], "clip");

interface InterpOpts {
  left: ArrayInput | "extrapolate" | null;
  right: ArrayInput | "extrapolate" | null;
  period: ArrayInput | null;
}
/**
 * interp(x, xp, fp, left, right, period): piecewise-linear interpolation on increasing xp; fp may be complex.
 * With `period` (NumPy's semantics, as JAX): x and xp are taken modulo |period|, xp is sorted (fp with it) and
 * extended by one point on each side from the other end, and left/right are ignored.
 */
export function interp(
  x: ArrayInput,
  xp: ArrayInput,
  fp: ArrayInput,
  ...args: Args<
    [left: ArrayInput | "extrapolate" | null, right: ArrayInput | "extrapolate" | null, period: ArrayInput | null],
    Partial<InterpOpts>
  >
): Array {
  const o = parseArgs<InterpOpts>("interp", args, ["left", "right", "period"]);
  const xpa0 = asArrayArg("interp", xp),
    fpa0 = asArrayArg("interp", fp);
  if (xpa0.ndim !== 1 || fpa0.ndim !== 1 || xpa0.shape[0] !== fpa0.shape[0]) {
    throw new Error(
      `interp: xp and fp must be one-dimensional arrays of equal size, got shapes ${shapeStr(xpa0.shape)} and ${shapeStr(fpa0.shape)}`,
    );
  }
  if (xpa0.shape[0] === 0) throw new Error("interp: xp and fp must not be empty");
  for (const [k, v] of [
    ["left", o.left],
    ["right", o.right],
  ] as const)
    if (typeof v === "string" && v !== "extrapolate")
      throw new Error(`interp: the only valid string value of ${k} is 'extrapolate', got ${JSON.stringify(v)}`);
  let [xa, xpa] = promoteDtypes("interp", [toInexact("interp", x), toInexact("interp", xpa0)]);
  if (isComplex(xa.dtype))
    throw new TypeError(`interp: complex x and xp are not supported, got ${xa.dtype} (fp may be complex)`);
  let fpa = toInexact("interp", fpa0);
  // the result's dtype: x, xp and fp promoted; positions and weights are computed in its real part's dtype
  const out = promoteDtypes("interp", [xa, fpa])[0];
  const rd = realDType(out.dtype);
  [xa, xpa] = [xa, xpa].map((v) => ops.convert(v, rd, out.weakType));
  fpa = ops.convert(fpa, out.dtype, out.weakType);
  const periodic = o.period !== undefined && o.period !== null;
  if (periodic) {
    const p0 = asArrayArg("interp", o.period as ArrayInput);
    if (p0.ndim !== 0) throw new Error(`interp: period must be a scalar, got shape ${shapeStr(p0.shape)}`);
    if (isComplex(p0.dtype)) throw new TypeError(`interp: period must be real, got ${p0.dtype}`);
    const pc = concreteOf(p0);
    if (pc && Number(pc.item()) === 0) throw new Error("interp: period must be a non-zero value");
    const p = ops.abs(ops.convert(p0, rd, false));
    [xa, xpa] = [remainder(xa, p), remainder(xpa, p)];
    const m = xpa.shape[0];
    const [sorted, order] = sortMany([xpa, ops.iota("int32", [m], 0)], 0);
    const f = take1d(fpa, order);
    const ends = (v: Array) => [ops.sliceInDim(v, m - 1, m, 1, 0), ops.sliceInDim(v, 0, 1, 1, 0)];
    const [xl, xf] = ends(sorted),
      [fl, ff] = ends(f);
    xpa = ops.concatenate([ops.sub(xl, p), sorted, ops.add(xf, p)], 0);
    fpa = ops.concatenate([fl, f, ff], 0);
  }
  const n = xpa.shape[0];
  // i = searchsorted(xp, x, side="right") clipped to [1, n-1] (a binary search past small sizes)
  const i = ops.clamp(1, searchsorted(xpa, xa, "right"), Math.max(n - 1, 1));
  const im1 = ops.sub(i, c(i, 1));
  const xpi = take1d(xpa, i),
    xpl = take1d(xpa, im1),
    fpi = take1d(fpa, i),
    fpl = take1d(fpa, im1);
  const dx = ops.sub(xpi, xpl);
  const dx0 = ops.le(ops.abs(dx), c(dx, 0));
  const t = ops.convert(ops.div(ops.sub(xa, xpl), sel(dx0, c(dx, 1), dx)), fpa.dtype, fpa.weakType);
  let f = sel(dx0, fpl, ops.add(fpl, ops.mul(t, ops.sub(fpi, fpl))));
  const first = (v: Array) => ops.reshape(ops.sliceInDim(v, 0, 1, 1, 0), []);
  const last = (v: Array) => ops.reshape(ops.sliceInDim(v, n - 1, n, 1, 0), []);
  if (!periodic && o.left !== "extrapolate") f = whereArr("interp", ops.lt(xa, first(xpa)), o.left ?? first(fpa), f);
  if (!periodic && o.right !== "extrapolate") f = whereArr("interp", ops.gt(xa, last(xpa)), o.right ?? last(fpa), f);
  return ops.convert(f, f.dtype, false);
}

type ConvMode = "full" | "same" | "valid";
/**
 * out[k] = sum_j xpad[k + j] * y[j]: one 1-D conv_general_dilated (as JAX's convolve), O(n + m) memory; complex
 * operands (the conv primitive is real) take the gather of a Toeplitz index and one dot, O(n m) memory.
 */
function slidingDot(x: Array, y: Array, lo: number, hi: number): Array {
  if (!isComplex(x.dtype)) {
    const n = x.shape[0],
      m = y.shape[0];
    const dims = { lhs_spec: [0, 1, 2], rhs_spec: [0, 1, 2], out_spec: [0, 1, 2] };
    const out = convGeneralDilatedRaw(ops.reshape(x, [1, 1, n]), ops.reshape(y, [1, 1, m]), {
      window_strides: [1],
      padding: [[lo, hi]],
      lhs_dilation: [1],
      rhs_dilation: [1],
      dimension_numbers: dims,
      feature_group_count: 1,
      batch_group_count: 1,
      preferred_element_type: null,
    });
    return ops.reshape(out, [n + lo + hi - m + 1]);
  }
  return toeplitzDot(x, y, lo, hi);
}
/** slidingDot as one gather of a constant Toeplitz index and one dot (complex operands). */
function toeplitzDot(x: Array, y: Array, lo: number, hi: number): Array {
  const n = x.shape[0],
    m = y.shape[0];
  const xp = lo || hi ? ops.pad(x, c(x, 0), [[lo, hi, 0]]) : x;
  const L = n + lo + hi - m + 1;
  const idx = new Int32Array(L * m);
  for (let k = 0; k < L; k++) for (let j = 0; j < m; j++) idx[k * m + j] = k + j;
  const windows = ops.gather(xp, ArrayImpl.of([L, m, 1], "int32", idx), [0], "clip");
  return ops.dotGeneral(windows, y, [
    [[1], [0]],
    [[], []],
  ]);
}
function conv(
  fn: "convolve" | "correlate",
  a: ArrayInput,
  v: ArrayInput,
  mode: unknown,
  preferred: DType | undefined,
): Array {
  const x0 = asArrayArg(fn, a),
    y0 = asArrayArg(fn, v);
  if (x0.ndim !== 1 || y0.ndim !== 1)
    throw new Error(
      `${fn}: only 1-dimensional inputs are supported, got shapes ${shapeStr(x0.shape)} and ${shapeStr(y0.shape)}`,
    );
  let [x, y] = preferred ? promoteDtypes(fn, [x0, y0]) : promoteDtypes(fn, [toInexact(fn, x0), toInexact(fn, y0)]);
  if (x.shape[0] === 0 || y.shape[0] === 0)
    throw new Error(`${fn}: inputs cannot be empty, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`);
  if (mode !== "full" && mode !== "same" && mode !== "valid")
    throw new Error(`${fn}: mode must be one of 'full', 'same', 'valid', got ${JSON.stringify(mode)}`);
  let reverseOut = false;
  if (x.shape[0] < y.shape[0]) {
    [x, y] = [y, x];
    reverseOut = fn === "correlate";
  }
  if (fn === "convolve") y = ops.rev(y, [0]);
  const m = y.shape[0];
  const [lo, hi] =
    mode === "valid" ? [0, 0] : mode === "same" ? [Math.floor(m / 2), m - Math.floor(m / 2) - 1] : [m - 1, m - 1];
  if (preferred) {
    x = ops.convert(x, preferred);
    y = ops.convert(y, preferred);
  }
  const r = slidingDot(ops.convert(x, x.dtype, false), ops.convert(y, y.dtype, false), lo, hi);
  return reverseOut ? ops.rev(r, [0]) : r;
}
interface ConvOpts {
  mode: ConvMode;
  precision: unknown;
  preferredElementType: DType;
}
/** 1-D discrete convolution; modes full (default), same, valid. Integer inputs promote to float unless preferredElementType. */
export function convolve(a: ArrayInput, v: ArrayInput, ...args: Args<[mode: ConvMode], Partial<ConvOpts>>): Array {
  const o = parseArgs<ConvOpts>("convolve", args, ["mode"], ["precision", "preferredElementType"]);
  return conv("convolve", a, v, o.mode ?? "full", userDType("convolve", o.preferredElementType));
}
/** 1-D cross-correlation c[k] = sum_n a[n + k] v[n]; modes valid (default), same, full. */
export function correlate(a: ArrayInput, v: ArrayInput, ...args: Args<[mode: ConvMode], Partial<ConvOpts>>): Array {
  const o = parseArgs<ConvOpts>("correlate", args, ["mode"], ["precision", "preferredElementType"]);
  return conv("correlate", a, v, o.mode ?? "valid", userDType("correlate", o.preferredElementType));
}

interface DiffOpts {
  n: number;
  axis: number;
  prepend: ArrayInput | null;
  append: ArrayInput | null;
}
/** n-th discrete difference along axis (not_equal for bools), with optional prepend/append values. */
export function diff(
  a: ArrayInput,
  ...args: Args<[n: number, axis: number, prepend: ArrayInput | null, append: ArrayInput | null], Partial<DiffOpts>>
): Array {
  const o = parseArgs<DiffOpts>("diff", args, ["n", "axis", "prepend", "append"]);
  let arr = asArrayArg("diff", a);
  const n = concreteInt("diff", "n", o.n ?? 1, 0);
  if (arr.ndim === 0)
    throw new Error(`diff: requires input that is at least one dimensional; got shape ${shapeStr(arr.shape)}`);
  const axis = axisOf("diff", o.axis ?? -1, arr.shape);
  const edge = (v: ArrayInput): Array => {
    const e = asArrayArg("diff", v);
    if (e.ndim) return e;
    const s = [...arr.shape];
    s[axis] = 1;
    return broadcastTo(e, s, "diff");
  };
  const parts = [...(o.prepend != null ? [edge(o.prepend)] : []), arr, ...(o.append != null ? [edge(o.append)] : [])];
  if (parts.length > 1) {
    const ps = promoteDtypes("diff", parts);
    for (const p of ps)
      if (p.ndim !== arr.ndim)
        throw new Error(
          `diff: prepend/append must have the same number of dimensions as the input ${shapeStr(arr.shape)}, got ${shapeStr(p.shape)}`,
        );
    arr = ops.concatenate(
      ps.map((p) => ops.convert(p, p.dtype, false)),
      axis,
    );
  }
  for (let i = 0; i < n && arr.shape[axis] > 0; i++) {
    const len = arr.shape[axis];
    const hiPart = ops.sliceInDim(arr, 1, len, 1, axis),
      loPart = ops.sliceInDim(arr, 0, len - 1, 1, axis);
    arr = isBool(arr.dtype) ? ops.ne(hiPart, loPart) : ops.sub(hiPart, loPart);
  }
  return arr;
}

/** ediff1d(ary, toEnd, toBegin): differences of the flattened array, with values prepended/appended. */
export function ediff1d(
  ary: ArrayInput,
  ...args: Args<
    [toEnd: ArrayInput | null, toBegin: ArrayInput | null],
    { toEnd?: ArrayInput | null; toBegin?: ArrayInput | null }
  >
): Array {
  const o = parseArgs<{ toEnd: ArrayInput | null; toBegin: ArrayInput | null }>("ediff1d", args, ["toEnd", "toBegin"]);
  const a = asArrayArg("ediff1d", ary);
  const flat = ops.reshape(a, [a.size]);
  let r = a.size > 0 ? ops.sub(ops.sliceInDim(flat, 1, a.size, 1, 0), ops.sliceInDim(flat, 0, a.size - 1, 1, 0)) : flat;
  const asFlat = (v: ArrayInput): Array => {
    const e = ops.convert(asArrayArg("ediff1d", v), a.dtype, false);
    return ops.reshape(e, [e.size]);
  };
  const parts = [
    ...(o.toBegin != null ? [asFlat(o.toBegin)] : []),
    ops.convert(r, r.dtype, false),
    ...(o.toEnd != null ? [asFlat(o.toEnd)] : []),
  ];
  r = ops.concatenate(parts, 0);
  return r;
}

interface GradientOpts {
  axis?: number | readonly number[] | null;
  edgeOrder?: number | null;
}
/** A spacing argument of jnp.gradient: a scalar distance, or the 1-D coordinates along one axis. */
export type GradientSpacing = ArrayInput;

/**
 * The derivative of `a` along `ax` from a 0-d spacing `h` or 1-D coordinates `xs` (already in a's dtype).
 * Interior: the second-order central difference, for unequal steps the three-point formula of NumPy's docs
 * (f'(x_i) ~ -(h2 / (h1 (h1 + h2))) f_{i-1} + ((h2 - h1) / (h1 h2)) f_i + (h1 / (h2 (h1 + h2))) f_{i+1});
 * edges: one-sided differences of first order, or of second order (three points) when edgeOrder is 2.
 */
function gradientAlong(a: Array, ax: number, h: Array, edgeOrder: number): Array {
  const n = a.shape[ax];
  const s = (lo: number, hi: number) => ops.sliceInDim(a, lo, hi, 1, ax);
  const parts: Array[] = [];
  if (h.ndim === 0) {
    const k = (v: number) => ops.div(c(a, v), h);
    const lin = (terms: [number, Array][]) => terms.map(([w, v]) => ops.mul(k(w), v)).reduce((p, q) => ops.add(p, q));
    parts.push(
      edgeOrder === 1
        ? ops.div(ops.sub(s(1, 2), s(0, 1)), h)
        : lin([
            [-1.5, s(0, 1)],
            [2, s(1, 2)],
            [-0.5, s(2, 3)],
          ]),
    );
    if (n > 2) parts.push(ops.div(ops.sub(s(2, n), s(0, n - 2)), ops.mul(c(h, 2), h)));
    parts.push(
      edgeOrder === 1
        ? ops.div(ops.sub(s(n - 1, n), s(n - 2, n - 1)), h)
        : lin([
            [0.5, s(n - 3, n - 2)],
            [-2, s(n - 2, n - 1)],
            [1.5, s(n - 1, n)],
          ]),
    );
    return ops.concatenate(parts, ax);
  }
  // coordinates: the steps dx[i] = x[i+1] - x[i], shaped to broadcast along ax
  const dxs = ops.sub(ops.sliceInDim(h, 1, n, 1, 0), ops.sliceInDim(h, 0, n - 1, 1, 0));
  const dx = (lo: number, hi: number, like: Array) =>
    broadcastTo(
      ops.reshape(
        ops.sliceInDim(dxs, lo, hi, 1, 0),
        a.shape.map((d, i) => (i === ax ? hi - lo : 1)),
      ),
      like.shape,
      "gradient",
    );
  // sum of coefficient * values, the coefficients built from the two steps h1, h2 around each point
  const three = (
    f0: Array,
    f1: Array,
    f2: Array,
    h1: Array,
    h2: Array,
    w: (h1: Array, h2: Array) => [Array, Array, Array],
  ): Array => {
    const [p, q, r] = w(h1, h2);
    return ops.add(ops.add(ops.mul(p, f0), ops.mul(q, f1)), ops.mul(r, f2));
  };
  const { add, sub, mul, div, neg } = ops;
  if (edgeOrder === 1) parts.push(div(sub(s(1, 2), s(0, 1)), dx(0, 1, s(0, 1))));
  else
    parts.push(
      three(s(0, 1), s(1, 2), s(2, 3), dx(0, 1, s(0, 1)), dx(1, 2, s(0, 1)), (h1, h2) => [
        neg(div(add(add(h1, h1), h2), mul(h1, add(h1, h2)))),
        div(add(h1, h2), mul(h1, h2)),
        neg(div(h1, mul(h2, add(h1, h2)))),
      ]),
    );
  if (n > 2)
    parts.push(
      three(s(0, n - 2), s(1, n - 1), s(2, n), dx(0, n - 2, s(1, n - 1)), dx(1, n - 1, s(1, n - 1)), (h1, h2) => [
        neg(div(h2, mul(h1, add(h1, h2)))),
        div(sub(h2, h1), mul(h1, h2)),
        div(h1, mul(h2, add(h1, h2))),
      ]),
    );
  if (edgeOrder === 1) parts.push(div(sub(s(n - 1, n), s(n - 2, n - 1)), dx(n - 2, n - 1, s(0, 1))));
  else
    parts.push(
      three(
        s(n - 3, n - 2),
        s(n - 2, n - 1),
        s(n - 1, n),
        dx(n - 3, n - 2, s(0, 1)),
        dx(n - 2, n - 1, s(0, 1)),
        (h1, h2) => [
          div(h2, mul(h1, add(h1, h2))),
          neg(div(add(h1, h2), mul(h1, h2))),
          div(add(add(h2, h2), h1), mul(h2, add(h1, h2))),
        ],
      ),
    );
  return ops.concatenate(parts, ax);
}

/**
 * gradient(f, ...spacings, { axis, edgeOrder }): second-order central differences inside, one-sided differences
 * of first (default) or second order at the edges, as NumPy (JAX itself has no edgeOrder). A spacing is a scalar
 * distance or the 1-D coordinates of the samples along that axis (unequal steps use the three-point formula);
 * give none (unit steps), one scalar for every axis, or one per axis. Returns an array per axis, or a single
 * array when one axis is asked for.
 */
export function gradient(f: ArrayInput, ...rest: (GradientSpacing | GradientOpts)[]): Array | Array[] {
  const hasOpts = rest.length > 0 && isOptions(rest[rest.length - 1]);
  const o = parseArgs<GradientOpts>("gradient", hasOpts ? [rest[rest.length - 1]] : [], [], ["axis", "edgeOrder"]);
  const spacings = (hasOpts ? rest.slice(0, -1) : rest).map((h) => toInexact("gradient", h as ArrayInput));
  const a0 = toInexact("gradient", f);
  const edgeOrder = o.edgeOrder ?? 1;
  if (edgeOrder !== 1 && edgeOrder !== 2)
    throw new Error(`gradient: edgeOrder must be 1 or 2, got ${JSON.stringify(o.edgeOrder)}`);
  const axes =
    o.axis === null || o.axis === undefined
      ? [...a0.shape.keys()]
      : (typeof o.axis === "number" ? [o.axis] : o.axis).map((ax) => axisOf("gradient", ax, a0.shape));
  if (new Set(axes).size !== axes.length)
    throw new Error(`gradient: repeated axis in ${JSON.stringify(o.axis)} for array of shape ${shapeStr(a0.shape)}`);
  let hs: Array[];
  if (spacings.length === 0) hs = axes.map(() => c(a0, 1));
  else if (spacings.length === 1 && spacings[0].ndim === 0) hs = axes.map(() => spacings[0]);
  else if (spacings.length === axes.length) hs = spacings;
  else
    throw new TypeError(
      `gradient: expected no spacing, one scalar or one spacing per axis (${axes.length}), got ${spacings.length} spacing(s) of shapes ${spacings.map((h) => shapeStr(h.shape)).join(", ")}`,
    );
  const all = promoteDtypes("gradient", [a0, ...hs]);
  const a = all[0];
  const outs = axes.map((ax, i) => {
    const h = all[i + 1];
    const n = a.shape[ax];
    if (h.ndim > 1 || (h.ndim === 1 && h.shape[0] !== n))
      throw new Error(
        `gradient: the spacing for axis ${ax} must be a scalar or 1-D coordinates of length ${n} (f has shape ${shapeStr(a.shape)}), got shape ${shapeStr(h.shape)}`,
      );
    if (n < edgeOrder + 1)
      throw new Error(
        `gradient: shape of the array along axis ${ax} must be at least edgeOrder + 1 = ${edgeOrder + 1}, got shape ${shapeStr(a.shape)}`,
      );
    return gradientAlong(a, ax, h, edgeOrder);
  });
  return outs.length === 1 ? outs[0] : outs;
}

interface TrapOpts {
  x: ArrayInput | null;
  dx: number;
  axis: number;
}
/** Trapezoidal rule along axis: sum(d * (y[1:] + y[:-1]) / 2) with d = diff(x) or the scalar dx. */
export function trapezoid(
  y: ArrayInput,
  ...args: Args<[x: ArrayInput | null, dx: number, axis: number], Partial<TrapOpts>>
): Array {
  const o = parseArgs<TrapOpts>("trapezoid", args, ["x", "dx", "axis"]);
  let ya = toInexact("trapezoid", y);
  const axis = axisOf("trapezoid", o.axis ?? -1, ya.shape);
  ya = ops.moveaxis(ya, axis, ya.ndim - 1);
  const n = ya.shape[ya.ndim - 1];
  const last = ya.ndim - 1;
  let d: Array;
  if (o.x !== undefined && o.x !== null) {
    let xa = toInexact("trapezoid", o.x);
    if (xa.ndim === 1) {
      if (xa.shape[0] !== n)
        throw new Error(`trapezoid: x of shape ${shapeStr(xa.shape)} does not match y's axis of length ${n}`);
    } else xa = ops.moveaxis(xa, axisOf("trapezoid", axis - ya.ndim, xa.shape), xa.ndim - 1);
    [d] = [diff(xa, 1, -1)];
  } else d = asArrayArg("trapezoid", o.dx ?? 1.0);
  if (n === 0) return ops.reduceSum(ops.convert(ya, ya.dtype, false), [last]);
  const avg = ops.div(ops.add(ops.sliceInDim(ya, 1, n, 1, last), ops.sliceInDim(ya, 0, n - 1, 1, last)), c(ya, 2));
  const [p, q] = promoteArgs("trapezoid", d, avg);
  const prod = ops.mul(p, q);
  return ops.reduceSum(ops.convert(prod, prod.dtype, false), [prod.ndim - 1]);
}

interface CrossOpts {
  axisa: number;
  axisb: number;
  axisc: number;
  axis: number | null;
}
/** Cross product of 2- or 3-vectors along axisa/axisb (or `axis` for all three), result vectors along axisc. */
export function cross(
  a: ArrayInput,
  b: ArrayInput,
  ...args: Args<[axisa: number, axisb: number, axisc: number, axis: number | null], Partial<CrossOpts>>
): Array {
  const o = parseArgs<CrossOpts>("cross", args, ["axisa", "axisb", "axisc", "axis"]);
  let [x, y] = promoteDtypes("cross", [a, b]);
  const axa = o.axis != null ? o.axis : (o.axisa ?? -1),
    axb = o.axis != null ? o.axis : (o.axisb ?? -1);
  x = ops.moveaxis(x, axisOf("cross", axa, x.shape), x.ndim - 1);
  y = ops.moveaxis(y, axisOf("cross", axb, y.shape), y.ndim - 1);
  const na = x.shape[x.ndim - 1],
    nb = y.shape[y.ndim - 1];
  if ((na !== 2 && na !== 3) || (nb !== 2 && nb !== 3))
    throw new Error(
      `cross: incompatible dimensions for cross product (dimension must be 2 or 3), got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  const rest = broadcastShapes("cross", x.shape.slice(0, -1), y.shape.slice(0, -1));
  const comp = (v: Array, i: number): Array => {
    const n = v.shape[v.ndim - 1];
    if (i >= n) return ops.full(rest, 0, v.dtype, v.weakType);
    return broadcastTo(ops.reshape(ops.sliceInDim(v, i, i + 1, 1, v.ndim - 1), v.shape.slice(0, -1)), rest, "cross");
  };
  const [a0, a1, a2] = [0, 1, 2].map((i) => comp(x, i));
  const [b0, b1, b2] = [0, 1, 2].map((i) => comp(y, i));
  const z = ops.sub(ops.mul(a0, b1), ops.mul(a1, b0));
  if (na === 2 && nb === 2) return z;
  const cx = ops.sub(ops.mul(a1, b2), ops.mul(a2, b1));
  const cy = ops.sub(ops.mul(a2, b0), ops.mul(a0, b2));
  const stacked = ops.concatenate(
    [cx, cy, z].map((v) => ops.reshape(v, [...rest, 1])),
    rest.length,
  );
  const axc = o.axis != null ? o.axis : (o.axisc ?? -1);
  return ops.moveaxis(stacked, rest.length, axisOf("cross", axc, stacked.shape));
}
