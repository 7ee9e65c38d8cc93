/** @file Lowerings for reductions, argmax/argmin, cumulative ops (CumSum/CumProd or a log-step scan) and dot_general (as MatMul). */
import type { ShapedArray } from "../core/aval.js";
import { type DType, isFloat } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { F } from "./lower-math.js";
import {
  ONNX_TYPE,
  cast,
  computeDtype,
  select,
  filled,
  fromOrderKey,
  mathDtype,
  minMax,
  orderKey,
  rawCast,
  reduceInit,
  reshape,
  roundTo,
  transpose,
} from "./lower-util.js";
import { slice } from "./lower-structural.js";
import { blockedCumsum, blockedOptions, blockedSum, divisorNear } from "./lower-blocked.js";

export type ReduceKind = "sum" | "prod" | "max" | "min" | "and" | "or" | "xor";

/** reduce_{sum,prod,max,min,and,or,xor} over `axes` (keepdims = false). */
export function reduce(
  ctx: LoweringContext,
  kind: ReduceKind,
  x: string,
  a: ShapedArray,
  axes: readonly number[],
  out: ShapedArray,
): string {
  const d = a.dtype;
  if (axes.length === 0) return x;
  if (axes.some((ax) => a.shape[ax] === 0)) return filled(ctx, d, out.shape, reduceInit(kind, d));
  const ax = ctx.ints(axes);
  const attrs = { keepdims: 0 };
  const keep = a.shape.map((_, i) => i).filter((i) => !axes.includes(i));
  const outer = keep.map((i) => a.shape[i]);
  const flat = (v: string, n: number) => reshape(ctx, transpose(ctx, v, [...keep, ...axes]), [...outer, n]);
  if (kind === "sum" && !isFloat(d)) {
    // ORT's integer ReduceSum accumulates in double and saturates; a MatMul with ones wraps exactly
    const n = axes.reduce((p, i) => p * a.shape[i], 1);
    const cd = computeDtype(ctx, "MatMul", d);
    const ones = ctx.op("Expand", [ctx.scalar(cd, 1), ctx.ints([n, 1])]);
    const y = ctx.op("MatMul", [rawCast(ctx, flat(x, n), d, cd), ones]);
    return rawCast(ctx, reshape(ctx, y, out.shape), cd, d);
  }
  if (kind === "sum" || (kind === "prod" && isFloat(d))) {
    const op = kind === "sum" ? "ReduceSum" : "ReduceProd";
    const n = axes.reduce((p, i) => p * a.shape[i], 1);
    const cd = d === "float16" ? "float32" : computeDtype(ctx, op, d);
    if (kind === "prod") {
      // every factor adds its rounding (no order helps): long float32 products run in float64
      const pd = cd === "float32" && n > blockedOptions.maxRun && ctx.supports(op, "float64") ? "float64" : cd;
      const xc = rawCast(ctx, x, d, cd);
      const y = ctx.op(op, [pd === cd ? xc : ctx.op("Cast", [xc], { to: ONNX_TYPE.float64 }), ax], attrs);
      return roundTo(ctx, rawCast(ctx, pd === cd ? y : ctx.op("Cast", [y], { to: ONNX_TYPE[cd] }), cd, d), d);
    }
    const xc = rawCast(ctx, x, d, cd);
    // long runs: a tree of short ORT reductions (ORT accumulates each output naively)
    const blocked = blockedSum(ctx, xc, a.shape, axes, cd);
    const y = blocked === undefined ? ctx.op(op, [xc, ax], attrs) : reshape(ctx, blocked, out.shape);
    return roundTo(ctx, rawCast(ctx, y, cd, d), d);
  }
  if (kind === "max" || kind === "min") {
    const op = kind === "max" ? "ReduceMax" : "ReduceMin";
    const [k, kd] = orderKey(ctx, x, d, op);
    let y = fromOrderKey(ctx, ctx.op(op, [k, ax], attrs), kd, d);
    if (isFloat(d)) {
      // ORT's ReduceMax/Min skip NaNs in some positions; JAX propagates them
      const anyNaN = ctx.op("ReduceMax", [ctx.op("IsNaN", [x]), ax], attrs);
      // (a direct Where: ORT only mangles a -0 taken from the first value operand, here a NaN constant)
      y =
        d === "float16"
          ? select(ctx, anyNaN, ctx.scalar(d, NaN), y, d)
          : ctx.op("Where", [anyNaN, ctx.scalar(d, NaN), y]);
    }
    return y;
  }
  if (d === "bool") {
    if (kind === "and") return ctx.op("ReduceMin", [x, ax], attrs);
    if (kind === "or") return ctx.op("ReduceMax", [x, ax], attrs);
    const s = ctx.op("ReduceSum", [rawCast(ctx, x, "bool", "int32"), ax], attrs);
    return ctx.op("Cast", [ctx.op("BitwiseAnd", [s, ctx.scalar("int32", 1)])], { to: ONNX_TYPE.bool });
  }
  // integer products and bitwise reductions: pairwise tree over the flattened reduced axes
  let n = axes.reduce((p, i) => p * a.shape[i], 1);
  const cd = kind === "prod" ? computeDtype(ctx, "Mul", d) : ctx.repr(d);
  let y = rawCast(ctx, flat(x, n), d, cd);
  const last = outer.length;
  const op = kind === "prod" ? "Mul" : kind === "and" ? "BitwiseAnd" : kind === "or" ? "BitwiseOr" : "BitwiseXor";
  while (n > 1) {
    if (n % 2 === 1) {
      y = ctx.op("Concat", [y, filled(ctx, cd, [...outer, 1], reduceInit(kind, d))], { axis: last });
      n += 1;
    }
    const h = n / 2;
    y = ctx.op(op, [slice(ctx, y, [0], [h], [last]), slice(ctx, y, [h], [n], [last])]);
    n = h;
  }
  return rawCast(ctx, reshape(ctx, y, out.shape), cd, d);
}

/** argmax/argmin: first index of the extremum; a NaN wins at its first occurrence. */
export function argReduce(
  ctx: LoweringContext,
  which: "ArgMax" | "ArgMin",
  x: string,
  a: ShapedArray,
  axis: number,
  indexDtype: DType,
): string {
  const [k] = orderKey(ctx, x, a.dtype, which);
  let r = ctx.op(which, [k], { axis, keepdims: 0, select_last_index: 0 });
  if (isFloat(a.dtype)) {
    const nan = ctx.op("IsNaN", [x]);
    const firstNaN = ctx.op("ArgMax", [ctx.op("Cast", [nan], { to: ONNX_TYPE.uint8 })], {
      axis,
      keepdims: 0,
      select_last_index: 0,
    });
    const anyNaN = ctx.op("ReduceMax", [nan, ctx.ints([axis])], { keepdims: 0 });
    r = ctx.op("Where", [anyNaN, firstNaN, r]);
  }
  return cast(ctx, r, "int64", indexDtype);
}

export type CumKind = "cumsum" | "cumprod" | "cummax" | "cummin" | "cumlogsumexp";

/** Cumulative reductions along `axis` (optionally from the end). */
export function cumulative(
  ctx: LoweringContext,
  kind: CumKind,
  x: string,
  a: ShapedArray,
  axis: number,
  reverse: boolean,
): string {
  const d = a.dtype,
    n = a.shape[axis];
  if (n <= 1 || a.size === 0) return x;
  if (kind === "cumsum" || kind === "cumprod") {
    const op = kind === "cumsum" ? "CumSum" : "CumProd";
    const cd = d === "float16" ? "float32" : computeDtype(ctx, op, d);
    const long = isFloat(cd) && n > blockedOptions.maxRun;
    const scan = (v: string) => ctx.op(op, [v, ctx.scalar("int64", axis)], { exclusive: 0, reverse: reverse ? 1 : 0 });
    let xc = rawCast(ctx, x, d, cd);
    if (long && kind === "cumprod" && cd === "float32" && ctx.supports(op, "float64")) {
      // every factor adds its rounding (no order helps): long float32 products run in float64
      xc = ctx.op("Cast", [scan(ctx.op("Cast", [xc], { to: ONNX_TYPE.float64 }))], { to: ONNX_TYPE.float32 });
      return roundTo(ctx, rawCast(ctx, xc, cd, d), d);
    }
    // long float sums: scan within blocks plus a scan of the block totals (integers stay exact as they are)
    const y =
      long && kind === "cumsum" ? reshape(ctx, blockedCumsum(ctx, xc, a.shape, axis, reverse, cd)!, a.shape) : scan(xc);
    return roundTo(ctx, rawCast(ctx, y, cd, d), d);
  }
  // Hillis-Steele scan: y_i = combine(y_i, y_{i-k}) for k = 1, 2, 4, ...
  const cd = kind === "cumlogsumexp" ? mathDtype(d) : ctx.repr(d);
  const init = kind === "cummin" ? reduceInit("min", d) : kind === "cumlogsumexp" ? -Infinity : reduceInit("max", d);
  const m = new F(ctx, cd);
  const combine = (p: string, q: string): string => {
    if (kind === "cummax") return minMax(ctx, "Max", p, q, d);
    if (kind === "cummin") return minMax(ctx, "Min", p, q, d);
    // logaddexp(p, q) = mx + log(exp(p - mx) + exp(q - mx)), -inf when both are -inf
    const mx = m.max(p, q);
    const s = m.add(mx, m.log(m.add(m.exp(m.sub(p, mx)), m.exp(m.sub(q, mx)))));
    return m.where(m.eq(mx, -Infinity), -Infinity, s);
  };
  let y = rawCast(ctx, x, d, cd);
  for (let k = 1; k < n; k *= 2) {
    const fillShape = a.shape.map((s, i) => (i === axis ? k : s));
    const fill = filled(ctx, kind === "cumlogsumexp" ? cd : d, fillShape, init);
    const shifted = reverse
      ? ctx.op("Concat", [slice(ctx, y, [k], [n], [axis]), fill], { axis })
      : ctx.op("Concat", [fill, slice(ctx, y, [0], [n - k], [axis])], { axis });
    y = combine(y, shifted);
  }
  return kind === "cumlogsumexp" ? roundTo(ctx, rawCast(ctx, y, cd, d), d) : y;
}

/** dot_general as [batch, M, K] x [batch, K, N] MatMul (inputs transposed and flattened as needed). */
export function dotGeneral(
  ctx: LoweringContext,
  lhs: string,
  rhs: string,
  a: ShapedArray,
  b: ShapedArray,
  dn: [[number[], number[]], [number[], number[]]],
  out: ShapedArray,
): string {
  const [[lc, rc], [lb, rb]] = dn;
  const lf = a.shape.map((_, i) => i).filter((i) => !lc.includes(i) && !lb.includes(i));
  const rf = b.shape.map((_, i) => i).filter((i) => !rc.includes(i) && !rb.includes(i));
  const size = (s: readonly number[], dims: number[]) => dims.reduce((p, i) => p * s[i], 1);
  const B = size(a.shape, lb),
    M = size(a.shape, lf),
    K = size(a.shape, lc),
    N = size(b.shape, rf);
  const od = out.dtype,
    id = a.dtype;
  // compute dtype: the preferred (output) dtype when it is of the same kind, else the input dtype; ints widen for MatMul
  let cd: DType = isFloat(od) === isFloat(id) && od !== "bool" ? od : id;
  if (cd === "bool") cd = "int32";
  if (cd === "float16" || cd === "bfloat16") cd = "float32";
  if (!ctx.supports("MatMul", cd)) cd = computeDtype(ctx, "MatMul", cd);
  const splitK = isFloat(cd) && K > blockedOptions.maxK;
  if (
    !splitK &&
    a.ndim === 2 &&
    b.ndim === 2 &&
    lb.length === 0 &&
    lc.length === 1 &&
    (cd === "float32" || cd === "float64") &&
    isFloat(od)
  ) {
    // a plain matrix product: Gemm reads transposed operands in place (no Transpose nodes)
    const y = ctx.op("Gemm", [rawCast(ctx, lhs, a.dtype, cd), rawCast(ctx, rhs, b.dtype, cd)], {
      transA: lc[0] === 0 ? 1 : 0,
      transB: rc[0] === 1 ? 1 : 0,
    });
    return roundTo(ctx, rawCast(ctx, y, cd, od), od);
  }
  const prep = (x: string, s: ShapedArray, batch: number[], first: number[], second: number[], shape: number[]) => {
    const t = transpose(ctx, x, [...batch, ...first, ...second]);
    const c = rawCast(ctx, t, s.dtype, cd);
    const cur = [...batch, ...first, ...second].map((i) => s.shape[i]);
    return cur.length === shape.length && cur.every((v, i) => v === shape[i]) ? c : reshape(ctx, c, shape);
  };
  const L = prep(lhs, a, lb, lf, lc, B === 1 && lb.length === 0 ? [M, K] : [B, M, K]);
  const R = prep(rhs, b, rb, rc, rf, B === 1 && lb.length === 0 ? [K, N] : [B, K, N]);
  let y = splitK ? splitMatMul(ctx, L, R, B, M, K, N, cd) : ctx.op("MatMul", [L, R]);
  if (!(out.shape.length === 2 && out.shape[0] === M && out.shape[1] === N && lb.length === 0))
    y = reshape(ctx, y, out.shape);
  if (od === "bool") return ctx.op("Cast", [y], { to: ONNX_TYPE.bool });
  if (isFloat(cd) !== isFloat(od)) return cast(ctx, y, cd, od);
  return roundTo(ctx, rawCast(ctx, y, cd, od), od);
}

/**
 * [B, M, K] x [B, K, N] (B = 1 may be absent) with a long contraction K, as a tree. ORT's MatMul accumulates each
 * output along K in long sequential runs (error O(K) ulp). A vector operand (M = 1 or N = 1): elementwise products
 * and a blocked ReduceSum. Otherwise: products of K-blocks of about max(kBlock, min(M, N)) terms (a batched MatMul;
 * the partial products then take no more memory than an operand), then a blocked sum over the blocks.
 */
function splitMatMul(
  ctx: LoweringContext,
  L: string,
  R: string,
  B: number,
  M: number,
  K: number,
  N: number,
  cd: DType,
): string {
  const outShape = B === 1 ? [M, N] : [B, M, N];
  if (M === 1 || N === 1) {
    // [B, M, K] * [B, 1, K] summed over K (contiguous), or [B, K, 1] * [B, K, N] summed over K (strided)
    const p =
      N === 1
        ? ctx.op("Mul", [reshape(ctx, L, [B, M, K]), reshape(ctx, R, [B, 1, K])])
        : ctx.op("Mul", [reshape(ctx, L, [B, K, 1]), reshape(ctx, R, [B, K, N])]);
    return reshape(ctx, blockedSum(ctx, p, N === 1 ? [B, M, K] : [B, K, N], [N === 1 ? 2 : 1], cd, true)!, outShape);
  }
  const want = Math.max(blockedOptions.kBlock, Math.min(M, N));
  let kb = divisorNear(K, want),
    l = reshape(ctx, L, [B, M, K]),
    r = reshape(ctx, R, [B, K, N]);
  if (kb === 0) {
    // zero-pad K to a multiple of the block (the extra products are 0 * 0)
    kb = want;
    const k2 = Math.ceil(K / kb) * kb;
    l = ctx.op("Pad", [l, ctx.ints([0, 0, 0, 0, 0, k2 - K]), ctx.scalar(cd, 0)], { mode: "constant" });
    r = ctx.op("Pad", [r, ctx.ints([0, 0, 0, 0, k2 - K, 0]), ctx.scalar(cd, 0)], { mode: "constant" });
    K = k2;
  }
  const nb = K / kb;
  // lhs blocks [B, nb, M, kb] (a transpose); rhs blocks [B, nb, kb, N] are a plain reshape
  const lb = transpose(ctx, reshape(ctx, l, [B, M, nb, kb]), [0, 2, 1, 3]);
  const parts = ctx.op("MatMul", [lb, reshape(ctx, r, [B, nb, kb, N])]);
  return reshape(ctx, blockedSum(ctx, parts, [B, nb, M, N], [1], cd, true)!, outShape);
}
