/** @file lax convolutions (convGeneralDilated, conv, convWithGeneralPadding, convTranspose) and windowed reductions (reduceWindow and its sum/max/min forms), with JAX's argument forms. */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import type { DType } from "../core/dtype.js";
import { dilateDim, convGeneralDilatedRaw } from "../primitives/conv.js";
import { reduceWindow as bindWindow, type WindowKind, windowInit } from "../primitives/windowed.js";
import * as ops from "../primitives/ops.js";
import { checkArity, unwrap } from "../core/check-args.js";

/** JAX's ConvDimensionNumbers: lhs (batch, feature, spatial...), rhs (out feature, in feature, spatial...), out (batch, feature, spatial...) as dim indices. */
export interface ConvDimensionNumbers {
  lhsSpec: number[];
  rhsSpec: number[];
  outSpec: number[];
}
/** Dimension numbers: a ConvDimensionNumbers, the string form like ["NHWC", "HWIO", "NHWC"], or null (NC.../OI.../NC...). */
export type ConvDimSpec = ConvDimensionNumbers | readonly [string, string, string] | null;
/** "SAME" / "SAME_LOWER" / "VALID", or explicit (low, high) pairs per spatial dimension. */
export type Padding = "SAME" | "SAME_LOWER" | "VALID" | readonly (readonly [number, number])[];
export type Precision = string | null;

function checkOpts(fn: string, opts: object, allowed: readonly string[]): void {
  for (const k of Object.keys(opts))
    if (!allowed.includes(k))
      throw new TypeError(`${fn}: unknown option "${k}"; accepted options: ${allowed.join(", ")}`);
}
function checkArray(fn: string, name: string, x: unknown): Array {
  if (!(x instanceof Array))
    throw new TypeError(
      `${fn}: ${name} must be an Array, got ${typeof x === "object" ? JSON.stringify(x) : String(x)}`,
    );
  return x;
}
function ints(fn: string, name: string, v: readonly number[] | null | undefined, n: number, dflt: number): number[] {
  if (v === null || v === undefined) return new globalThis.Array<number>(n).fill(dflt);
  if (!globalThis.Array.isArray(v) || v.length !== n || v.some((e) => !Number.isInteger(e)))
    throw new TypeError(
      `${fn}: ${name} must be a list of ${n} integers (one per spatial dimension), got ${JSON.stringify(v)}`,
    );
  return [...v];
}

/** lax.conv_dimension_numbers: the index form of dimension numbers for operands of these shapes. */
export function convDimensionNumbers(
  lhsShape: readonly number[],
  rhsShape: readonly number[],
  dimensionNumbers: ConvDimSpec = null,
): ConvDimensionNumbers {
  const nd = lhsShape.length;
  if (nd !== rhsShape.length || nd < 2)
    throw new TypeError(
      `convDimensionNumbers: lhs ${JSON.stringify(lhsShape)} and rhs ${JSON.stringify(rhsShape)} must have the same rank, at least 2`,
    );
  if (dimensionNumbers === null || dimensionNumbers === undefined) {
    const id = [...globalThis.Array(nd).keys()];
    return { lhsSpec: id, rhsSpec: [...id], outSpec: [...id] };
  }
  if (!globalThis.Array.isArray(dimensionNumbers)) {
    const d = dimensionNumbers as ConvDimensionNumbers;
    for (const k of ["lhsSpec", "rhsSpec", "outSpec"] as const)
      if (!globalThis.Array.isArray(d[k]) || d[k].length !== nd)
        throw new TypeError(
          `convDimensionNumbers: ${k} must list ${nd} dimension indices, got ${JSON.stringify(d[k])}`,
        );
    return { lhsSpec: [...d.lhsSpec], rhsSpec: [...d.rhsSpec], outSpec: [...d.outSpec] };
  }
  const [ls, rs, os] = dimensionNumbers as readonly string[];
  const pairs: [string, string, string, string][] = [
    [ls, "N", "C", "lhs"],
    [rs, "O", "I", "rhs"],
    [os, "N", "C", "out"],
  ];
  for (const [s, a, b, which] of pairs) {
    if (typeof s !== "string" || s.length !== nd)
      throw new TypeError(
        `convDimensionNumbers: ${which} spec ${JSON.stringify(s)} must be a string of ${nd} letters for operands of rank ${nd}`,
      );
    if (s.split(a).length !== 2 || s.split(b).length !== 2 || new Set(s).size !== s.length)
      throw new TypeError(
        `convDimensionNumbers: ${which} spec "${s}" must contain "${a}" and "${b}" exactly once and no repeated letters`,
      );
  }
  const spatial = (s: string, a: string, b: string) =>
    [...s]
      .filter((c) => c !== a && c !== b)
      .sort()
      .join("");
  if (spatial(ls, "N", "C") !== spatial(rs, "O", "I") || spatial(os, "N", "C") !== spatial(rs, "O", "I"))
    throw new TypeError(
      `convDimensionNumbers: the spatial letters of ${JSON.stringify(dimensionNumbers)} must agree across lhs, rhs and out`,
    );
  // spatial dims are ordered as they appear in the rhs spec
  const perm = (s: string, a: string, b: string) => {
    let sp = [...s].map((_, i) => i).filter((i) => s[i] !== a && s[i] !== b);
    if (s !== rs) sp = sp.sort((i, j) => rs.indexOf(s[i]) - rs.indexOf(s[j]));
    return [s.indexOf(a), s.indexOf(b), ...sp];
  };
  return { lhsSpec: perm(ls, "N", "C"), rhsSpec: perm(rs, "O", "I"), outSpec: perm(os, "N", "C") };
}

/** lax.padtype_to_pads: explicit (low, high) pads for "SAME" (extra at the end), "SAME_LOWER" (extra at the start) or "VALID". */
export function padtypeToPads(
  inShape: readonly number[],
  windowShape: readonly number[],
  windowStrides: readonly number[],
  padding: string,
): [number, number][] {
  const p = typeof padding === "string" ? padding.toUpperCase() : padding;
  if (p === "VALID") return inShape.map(() => [0, 0]);
  if (p !== "SAME" && p !== "SAME_LOWER")
    throw new TypeError(
      `padtypeToPads: unknown padding ${JSON.stringify(padding)}; expected "SAME", "SAME_LOWER", "VALID" or (low, high) pairs`,
    );
  return inShape.map((n, i) => {
    // out = ceil(n / stride); total pad = max(0, (out - 1) * stride + window - n)
    const out = Math.ceil(n / windowStrides[i]);
    const size = Math.max(0, (out - 1) * windowStrides[i] + windowShape[i] - n);
    const small = Math.floor(size / 2);
    return p === "SAME" ? [small, size - small] : [size - small, small];
  });
}
function explicitPads(
  fn: string,
  padding: Padding,
  n: number,
  resolve: (s: string) => [number, number][],
): [number, number][] {
  if (typeof padding === "string") return resolve(padding);
  if (
    !globalThis.Array.isArray(padding) ||
    padding.length !== n ||
    padding.some((q) => !globalThis.Array.isArray(q) || q.length !== 2 || !q.every(Number.isInteger))
  ) {
    throw new TypeError(
      `${fn}: padding must be "SAME", "SAME_LOWER", "VALID" or ${n} (low, high) integer pairs, got ${JSON.stringify(padding)}`,
    );
  }
  return padding.map(([l, h]): [number, number] => [l, h]);
}

export interface ConvGeneralDilatedOptions {
  lhsDilation?: readonly number[] | null;
  rhsDilation?: readonly number[] | null;
  dimensionNumbers?: ConvDimSpec;
  featureGroupCount?: number;
  batchGroupCount?: number;
  precision?: Precision;
  preferredElementType?: DType | null;
}
const CGD_OPTS = [
  "lhsDilation",
  "rhsDilation",
  "dimensionNumbers",
  "featureGroupCount",
  "batchGroupCount",
  "precision",
  "preferredElementType",
];

/** lax.conv_general_dilated: the general n-d convolution (cross-correlation) with dimension numbers, padding, strides, dilations and groups. */
export function convGeneralDilated(
  lhs: Array,
  rhs: Array,
  windowStrides: readonly number[],
  padding: Padding,
  opts: ConvGeneralDilatedOptions = {},
): Array {
  const fn = "convGeneralDilated";
  checkArray(fn, "lhs", lhs);
  checkArray(fn, "rhs", rhs);
  if (opts === null || typeof opts !== "object" || globalThis.Array.isArray(opts) || opts instanceof Array)
    throw new TypeError(`${fn}: the fifth argument must be an options object { ${CGD_OPTS.join(", ")} }`);
  checkOpts(fn, opts, CGD_OPTS);
  const dn = convDimensionNumbers(lhs.shape, rhs.shape, opts.dimensionNumbers ?? null);
  const nsp = lhs.ndim - 2;
  const strides = ints(fn, "windowStrides", windowStrides, nsp, 1);
  const lhsDil = ints(fn, "lhsDilation", opts.lhsDilation, nsp, 1),
    rhsDil = ints(fn, "rhsDilation", opts.rhsDilation, nsp, 1);
  const pads = explicitPads(fn, padding, nsp, (s) => {
    const win = dn.rhsSpec.slice(2).map((d, i) => dilateDim(rhs.shape[d], rhsDil[i]));
    return padtypeToPads(
      dn.lhsSpec.slice(2).map((d) => lhs.shape[d]),
      win,
      strides,
      s,
    );
  });
  const fgc = opts.featureGroupCount ?? 1,
    bgc = opts.batchGroupCount ?? 1;
  return convGeneralDilatedRaw(lhs, rhs, {
    window_strides: strides,
    padding: pads,
    lhs_dilation: lhsDil,
    rhs_dilation: rhsDil,
    dimension_numbers: { lhs_spec: dn.lhsSpec, rhs_spec: dn.rhsSpec, out_spec: dn.outSpec },
    feature_group_count: fgc,
    batch_group_count: bgc,
    preferred_element_type: opts.preferredElementType ?? null,
  });
}

/** lax.conv: NC.../OI... convolution with strides and padding. */
export function conv(
  lhs: Array,
  rhs: Array,
  windowStrides: readonly number[],
  padding: Padding,
  opts: { precision?: Precision; preferredElementType?: DType | null } = {},
): Array {
  checkOpts("conv", opts, ["precision", "preferredElementType"]);
  return convGeneralDilated(lhs, rhs, windowStrides, padding, opts);
}

/** lax.conv_with_general_padding: NC.../OI... convolution with lhs and rhs dilation. */
export function convWithGeneralPadding(
  lhs: Array,
  rhs: Array,
  windowStrides: readonly number[],
  padding: Padding,
  lhsDilation: readonly number[] | null = null,
  rhsDilation: readonly number[] | null = null,
  opts: { precision?: Precision; preferredElementType?: DType | null } = {},
): Array {
  checkOpts("convWithGeneralPadding", opts, ["precision", "preferredElementType"]);
  return convGeneralDilated(lhs, rhs, windowStrides, padding, { ...opts, lhsDilation, rhsDilation });
}

/** JAX's _conv_transpose_padding: the padding that makes a stride-s conv_transpose the gradient of a "SAME"/"VALID" conv. */
function convTransposePadding(k: number, s: number, padding: string): [number, number] {
  let len: number, a: number;
  if (padding === "SAME") {
    len = k + s - 2;
    a = s > k - 1 ? k - 1 : Math.ceil(len / 2);
  } else if (padding === "VALID") {
    len = k + s - 2 + Math.max(k - s, 0);
    a = k - 1;
  } else
    throw new TypeError(
      `convTranspose: padding must be "SAME", "VALID" or (low, high) pairs, got ${JSON.stringify(padding)}`,
    );
  return [a, len - a];
}

/** lax.conv_transpose: a transposed (fractionally strided) convolution, as lhs dilation by `strides`; defaults to N...C / ...IO / N...C layouts. */
export function convTranspose(
  lhs: Array,
  rhs: Array,
  strides: readonly number[],
  padding: Padding,
  opts: {
    rhsDilation?: readonly number[] | null;
    dimensionNumbers?: ConvDimSpec;
    transposeKernel?: boolean;
    precision?: Precision;
    preferredElementType?: DType | null;
  } = {},
): Array {
  const fn = "convTranspose";
  checkArray(fn, "lhs", lhs);
  checkArray(fn, "rhs", rhs);
  checkOpts(fn, opts, ["rhsDilation", "dimensionNumbers", "transposeKernel", "precision", "preferredElementType"]);
  const nd = lhs.ndim;
  if (nd !== rhs.ndim || nd < 2)
    throw new TypeError(
      `${fn}: lhs ${JSON.stringify(lhs.shape)} and rhs ${JSON.stringify(rhs.shape)} must have the same rank, at least 2`,
    );
  const DEFAULTS: Record<number, [string, string, string]> = {
    2: ["NC", "IO", "NC"],
    3: ["NHC", "HIO", "NHC"],
    4: ["NHWC", "HWIO", "NHWC"],
    5: ["NHWDC", "HWDIO", "NHWDC"],
  };
  const spec = opts.dimensionNumbers ?? DEFAULTS[nd];
  if (!spec) throw new TypeError(`${fn}: no default dimensionNumbers for rank ${nd}; pass dimensionNumbers`);
  const dn = convDimensionNumbers(lhs.shape, rhs.shape, spec);
  const nsp = nd - 2;
  const st = ints(fn, "strides", strides, nsp, 1);
  const rhsDil = ints(fn, "rhsDilation", opts.rhsDilation, nsp, 1);
  const ksp = dn.rhsSpec.slice(2).map((d) => rhs.shape[d]);
  const pads =
    typeof padding === "string"
      ? ksp.map((k, i) => convTransposePadding(dilateDim(k, rhsDil[i]), st[i], padding))
      : explicitPads(fn, padding, nsp, () => []);
  let w = rhs;
  if (opts.transposeKernel) {
    // flip the spatial dims and swap the input / output feature dims
    w = ops.rev(w, dn.rhsSpec.slice(2));
    const perm = [...globalThis.Array(nd).keys()];
    perm[dn.rhsSpec[0]] = dn.rhsSpec[1];
    perm[dn.rhsSpec[1]] = dn.rhsSpec[0];
    w = ops.transpose(w, perm);
  }
  return convGeneralDilated(
    lhs,
    w,
    st.map(() => 1),
    pads,
    {
      lhsDilation: st,
      rhsDilation: rhsDil,
      dimensionNumbers: dn,
      precision: opts.precision,
      preferredElementType: opts.preferredElementType,
    },
  );
}

// ---------------------------------------------------------------- windowed reductions
function windowCall(
  fn: string,
  kind: WindowKind,
  operand: Array,
  windowDimensions: readonly number[],
  windowStrides: readonly number[] | null | undefined,
  padding: Padding,
  baseDilation: readonly number[] | null | undefined,
  windowDilation: readonly number[] | null | undefined,
): Array {
  checkArray(fn, "operand", operand);
  const n = operand.ndim;
  const win = ints(fn, "windowDimensions", windowDimensions, n, 1);
  const strides = ints(fn, "windowStrides", windowStrides, n, 1);
  const pads = explicitPads(fn, padding, n, (s) => padtypeToPads(operand.shape, win, strides, s));
  return bindWindow(kind, operand, {
    window_dimensions: win,
    window_strides: strides,
    padding: pads,
    base_dilation: ints(fn, "baseDilation", baseDilation, n, 1),
    window_dilation: ints(fn, "windowDilation", windowDilation, n, 1),
  });
}
/** A lax.reduce_window_<kind> entry point: defaults and argument checks shared by the sum, max and min flavours. */
const windowReducer =
  (fn: string, kind: WindowKind) =>
  (
    operand: Array,
    windowDimensions: readonly number[],
    windowStrides: readonly number[] | null = null,
    padding: Padding = "VALID",
    baseDilation: readonly number[] | null = null,
    windowDilation: readonly number[] | null = null,
  ): Array =>
    windowCall(fn, kind, operand, windowDimensions, windowStrides, padding, baseDilation, windowDilation);
/** JAX's reduce_window_sum: sums over each window (sum pooling). */
export const reduceWindowSum = windowReducer("reduceWindowSum", "sum");
/** JAX's reduce_window_max: the maximum over each window (max pooling); padding holds -inf. */
export const reduceWindowMax = windowReducer("reduceWindowMax", "max");
/** JAX's reduce_window_min: the minimum over each window; padding holds +inf. */
export const reduceWindowMin = windowReducer("reduceWindowMin", "min");

/** XLA's reduce_window for any binary computation: pad with the init value (base dilation as interior padding), then fold the strided window slices into init. */
function reduceWindowGeneric(
  fn: string,
  operand: Array,
  init: Array,
  computation: (x: Array, y: Array) => Array,
  win: number[],
  strides: number[],
  pads: [number, number][],
  baseDil: number[],
  winDil: number[],
): Array {
  const xp = ops.pad(
    operand,
    init,
    pads.map(([lo, hi], i): [number, number, number] => [lo, hi, baseDil[i] - 1]),
  );
  const span = win.map((w, i) => (w - 1) * winDil[i] + 1);
  const out = xp.shape.map((s, i) => Math.max(0, Math.floor((s - span[i]) / strides[i]) + 1));
  let acc = ops.broadcastInDim(init, out, []);
  const total = win.reduce((a, b) => a * b, 1);
  for (let flat = 0; flat < total; flat++) {
    // the window offset k (row-major over win) picks every stride-th element starting at k * windowDilation
    const k: number[] = [];
    let r = flat;
    for (let i = win.length - 1; i >= 0; i--) {
      k[i] = r % win[i];
      r = Math.floor(r / win[i]);
    }
    const start = k.map((ki, i) => ki * winDil[i]);
    const limit = start.map((st, i) => (out[i] === 0 ? st : st + (out[i] - 1) * strides[i] + 1));
    const y = computation(acc, ops.slice(xp, start, limit, strides));
    if (!(y instanceof Array) || y.dtype !== acc.dtype || y.shape.join() !== acc.shape.join()) {
      throw new TypeError(
        `${fn}: computation must map two ${acc.aval.str()} arrays to one of the same shape and dtype, got ${y instanceof Array ? y.aval.str() : String(y)}`,
      );
    }
    acc = y;
  }
  return acc;
}

/**
 * lax.reduce_window(operand, initValue, computation, windowDimensions, windowStrides, padding, baseDilation?, windowDilation?).
 * computation is any binary function of two arrays (lax.add/mul/max/min/and/or or a user function of jnp/lax ops); as in XLA
 * the padding holds initValue and each window folds into initValue. lax.add with the identity and lax.max/min run as one
 * reduce_window primitive (ONNX pooling); the rest as strided slices folded by computation (differentiable and vmappable alike).
 */
export function reduceWindow(
  operand: Array,
  initValue: number | boolean | Array,
  computation: (x: Array, y: Array) => Array,
  windowDimensions: readonly number[],
  windowStrides: readonly number[],
  padding: Padding,
  baseDilation: readonly number[] | null = null,
  windowDilation: readonly number[] | null = null,
): Array {
  const fn = "reduceWindow";
  checkArity(
    fn,
    arguments,
    8,
    "lax.reduceWindow(operand, initValue, computation, windowDimensions, windowStrides, padding, baseDilation?, windowDilation?)",
  );
  if (globalThis.Array.isArray(operand))
    throw new TypeError(`${fn}: several operands (a variadic reduce_window) are not supported; pass one Array`);
  checkArray(fn, "operand", operand);
  if (typeof computation !== "function")
    throw new TypeError(
      `${fn}: computation must be a function (x, y) => Array such as lax.add, lax.max, lax.min, lax.mul, lax.and, lax.or, got ${String(computation)}`,
    );
  const c = unwrap(computation) as unknown;
  const kind: WindowKind | null = c === ops.add ? "sum" : c === ops.max ? "max" : c === ops.min ? "min" : null;
  let init: number | null = null;
  if (typeof initValue === "number" || typeof initValue === "boolean") init = Number(initValue);
  else if (initValue instanceof ArrayImpl && initValue.ndim === 0) init = Number(initValue.item());
  else if (!(initValue instanceof Array) || initValue.ndim !== 0)
    throw new TypeError(
      `${fn}: initValue must be a JS number or a 0-d Array, got ${initValue instanceof Array ? initValue.aval.str() : String(initValue)}`,
    );
  if (kind !== null && init !== null && operand.dtype !== "bool") {
    const identity =
      init === windowInit(kind, operand.dtype) ||
      (kind === "max" && init === -Infinity) ||
      (kind === "min" && init === Infinity);
    if (identity)
      return windowCall(fn, kind, operand, windowDimensions, windowStrides, padding, baseDilation, windowDilation);
    // max/min are idempotent: the init value joins each window once or many times alike
    if (kind !== "sum") {
      const y = windowCall(fn, kind, operand, windowDimensions, windowStrides, padding, baseDilation, windowDilation);
      return kind === "max" ? ops.max(y, init) : ops.min(y, init);
    }
  }
  const n = operand.ndim;
  const win = ints(fn, "windowDimensions", windowDimensions, n, 1);
  const strides = ints(fn, "windowStrides", windowStrides, n, 1);
  const pads = explicitPads(fn, padding, n, (s) => padtypeToPads(operand.shape, win, strides, s)) as [number, number][];
  const iv =
    initValue instanceof Array
      ? initValue.dtype === operand.dtype
        ? initValue
        : ops.convert(initValue, operand.dtype)
      : ops.full([], initValue, operand.dtype);
  return reduceWindowGeneric(
    fn,
    operand,
    iv,
    computation,
    win,
    strides,
    pads,
    ints(fn, "baseDilation", baseDilation, n, 1),
    ints(fn, "windowDilation", windowDilation, n, 1),
  );
}
