/** @file One spec row per primitive: the rows the shared harness runs on each backend. */
import type { Array } from "../../src/core/array.js";
import "../../src/index.js";
import * as ops from "../../src/primitives/ops.js";
import * as lax from "../../src/lax/index.js";
import type { Spec } from "./harness.js";

const S = [2, 3];
const u = (name: string, f: (x: Array) => Array, lo = -2, hi = 2, extra: Partial<Spec> = {}): Spec => ({
  name,
  f,
  args: [{ shape: S, lo, hi }],
  ...extra,
});
const b = (name: string, f: (x: Array, y: Array) => Array, lo = -2, hi = 2, extra: Partial<Spec> = {}): Spec => ({
  name,
  f,
  args: [
    { shape: S, lo, hi },
    { shape: S, lo, hi },
  ],
  ...extra,
});
const piecewise = "piecewise constant: derivative is zero almost everywhere";

export const SPECS: Spec[] = [
  u("neg", ops.neg),
  u("sign", ops.sign, -2, 2, { noGrad: piecewise }),
  u("floor", ops.floor, -2, 2, { noGrad: piecewise }),
  u("ceil", ops.ceil, -2, 2, { noGrad: piecewise }),
  u("round", (x) => ops.round(x, 1), -2, 2, { noGrad: piecewise }),
  u("is_finite", ops.isFinite),
  u("exp", ops.exp),
  u("exp2", ops.exp2),
  u("log", ops.log, 0.2, 3),
  u("log1p", ops.log1p, -0.5, 2),
  u("expm1", ops.expm1),
  u("tanh", ops.tanh),
  u("logistic", ops.logistic),
  u("sin", ops.sin),
  u("cos", ops.cos),
  u("tan", ops.tan, -1, 1),
  u("asin", ops.asin, -0.8, 0.8),
  u("acos", ops.acos, -0.8, 0.8),
  u("atan", ops.atan),
  u("sinh", ops.sinh),
  u("cosh", ops.cosh),
  u("asinh", ops.asinh),
  u("acosh", ops.acosh, 1.2, 3),
  u("atanh", ops.atanh, -0.8, 0.8),
  u("sqrt", ops.sqrt, 0.2, 3),
  u("rsqrt", ops.rsqrt, 0.2, 3),
  u("cbrt", ops.cbrt, 0.2, 3),
  u("abs", ops.abs, 0.1, 2),
  u("erf", ops.erf),
  u("erfc", ops.erfc),
  u("erf_inv", ops.erfInv, -0.8, 0.8),
  u("lgamma", ops.lgamma, 0.5, 4),
  u("digamma", ops.digamma, 0.5, 4),
  u("polygamma(1)", (x) => ops.polygamma(1, x), 0.5, 4),
  u("polygamma(3)", (x) => ops.polygamma(3, x), 0.5, 4),
  u("bessel_i0e", ops.besselI0e, -3, 3),
  u("bessel_i1e", ops.besselI1e, -3, 3),
  b("igamma", ops.igamma, 0.5, 4),
  b("igammac", ops.igammac, 0.5, 4),
  b("igamma_grad_a", ops.igammaGradA, 0.5, 4, { noGrad: "JAX defines no derivative of igamma_grad_a" }),
  b("zeta", ops.zeta, 1.5, 4, { noGrad: "JAX defines no derivative of zeta" }),
  {
    name: "regularized_incomplete_beta",
    f: (a, b, x) => ops.betainc(a, b, x),
    args: [
      { shape: S, lo: 0.5, hi: 3 },
      { shape: S, lo: 0.5, hi: 3 },
      { shape: S, lo: 0.1, hi: 0.9 },
    ],
    diff: [2], // JAX differentiates betainc in x only
  },
  u("integer_pow", (x) => ops.integerPow(x, 3)),
  u("copy", ops.copy),
  { name: "not", f: (x) => ops.not(x), args: [{ shape: S, dtype: "int32", lo: -50, hi: 50 }] },
  { name: "population_count", f: (x) => ops.populationCount(x), args: [{ shape: S, dtype: "int32", lo: 0, hi: 1000 }] },
  { name: "clz", f: (x) => ops.clz(x), args: [{ shape: S, dtype: "int32", lo: 1, hi: 1000 }] },
  b("add", ops.add),
  b("sub", ops.sub),
  b("mul", ops.mul),
  b("div", ops.div, 0.5, 2),
  b("rem", ops.rem, 0.5, 3),
  b("pow", ops.pow, 0.5, 2),
  b("max", ops.max),
  b("min", ops.min),
  b("atan2", ops.atan2),
  b("nextafter", ops.nextafter, -2, 2, { noGrad: piecewise }),
  b("eq", ops.eq),
  b("ne", ops.ne),
  b("lt", ops.lt),
  b("le", ops.le),
  b("gt", ops.gt),
  b("ge", ops.ge),
  {
    name: "and",
    f: ops.and,
    args: [
      { shape: S, dtype: "int32", lo: 0, hi: 100 },
      { shape: S, dtype: "int32", lo: 0, hi: 100 },
    ],
  },
  {
    name: "or",
    f: ops.or,
    args: [
      { shape: S, dtype: "int32", lo: 0, hi: 100 },
      { shape: S, dtype: "int32", lo: 0, hi: 100 },
    ],
  },
  {
    name: "xor",
    f: ops.xor,
    args: [
      { shape: S, dtype: "int32", lo: 0, hi: 100 },
      { shape: S, dtype: "int32", lo: 0, hi: 100 },
    ],
  },
  {
    name: "shift_left",
    f: ops.shiftLeft,
    args: [
      { shape: S, dtype: "int32", lo: 0, hi: 100 },
      { shape: S, dtype: "int32", lo: 0, hi: 8 },
    ],
  },
  {
    name: "shift_right_logical",
    f: ops.shiftRightLogical,
    args: [
      { shape: S, dtype: "int32", lo: -100, hi: 100 },
      { shape: S, dtype: "int32", lo: 0, hi: 8 },
    ],
  },
  {
    name: "shift_right_arithmetic",
    f: ops.shiftRightArithmetic,
    args: [
      { shape: S, dtype: "int32", lo: -100, hi: 100 },
      { shape: S, dtype: "int32", lo: 0, hi: 8 },
    ],
  },
  { name: "broadcast_in_dim", f: (x) => ops.broadcastInDim(x, [4, 2, 3], [1, 2]), args: [{ shape: S }] },
  { name: "reshape", f: (x) => ops.reshape(x, [3, 2]), args: [{ shape: S }] },
  { name: "transpose", f: (x) => ops.transpose(x, [1, 0]), args: [{ shape: S }] },
  { name: "squeeze", f: (x) => ops.squeeze(x, [1]), args: [{ shape: [3, 1] }] },
  { name: "rev", f: (x) => ops.rev(x, [1]), args: [{ shape: S }] },
  {
    name: "pad",
    f: (x, v) =>
      ops.pad(x, v, [
        [1, 0, 1],
        [-1, 2, 0],
      ]),
    args: [{ shape: S }, { shape: [] }],
  },
  { name: "concatenate", f: (x, y) => ops.concatenate([x, y], 1), args: [{ shape: S }, { shape: [2, 2] }] },
  { name: "slice", f: (x) => ops.slice(x, [0, 1], [2, 3], [1, 1]), args: [{ shape: S }] },
  { name: "slice (strided)", f: (x) => ops.slice(x, [0, 0], [4, 5], [2, 2]), args: [{ shape: [4, 5] }] },
  {
    name: "convert_element_type",
    f: (x) => ops.convert(x, "float32"),
    args: [{ shape: S }],
    tol: 1e-4,
    noGrad: "float32 rounding dominates finite differences",
  },
  {
    name: "bitcast_convert_type",
    f: (x) => ops.bitcast(x, "uint32"),
    args: [{ shape: S, dtype: "int32", lo: -100, hi: 100 }],
  },
  {
    name: "select_n",
    f: (p, x, y) => ops.selectN(p, [x, y]),
    args: [{ shape: S, dtype: "bool" }, { shape: S }, { shape: S }],
    diff: [1, 2],
  },
  {
    name: "clamp",
    f: (lo, x, hi) => ops.clamp(lo, x, hi),
    args: [{ shape: [], lo: -1, hi: -0.5 }, { shape: S }, { shape: [], lo: 0.5, hi: 1 }],
    vmapAxes: [
      [null, 0, null],
      [0, 0, 0],
    ],
  },
  { name: "iota", f: (x) => ops.add(ops.convert(ops.iota("int32", [2, 3], 1), "float64"), x), args: [{ shape: S }] },
  { name: "reduce_sum", f: (x) => ops.reduceSum(x, [1]), args: [{ shape: S }] },
  { name: "reduce_max", f: (x) => ops.reduceMax(x, [0]), args: [{ shape: S }] },
  { name: "reduce_min", f: (x) => ops.reduceMin(x, [0, 1]), args: [{ shape: S }] },
  { name: "reduce_prod", f: (x) => ops.reduceProd(x, [1]), args: [{ shape: S }] },
  { name: "reduce_and", f: (x) => ops.reduceAnd(x, [1]), args: [{ shape: S, dtype: "bool" }] },
  { name: "reduce_or", f: (x) => ops.reduceOr(x, [1]), args: [{ shape: S, dtype: "bool" }] },
  { name: "reduce_xor", f: (x) => ops.reduceXor(x, [1]), args: [{ shape: S, dtype: "int32", lo: 0, hi: 64 }] },
  { name: "argmax", f: (x) => ops.argmax(x, 1, "int32"), args: [{ shape: S }] },
  { name: "argmin", f: (x) => ops.argmin(x, 0, "int32"), args: [{ shape: S }] },
  { name: "cumsum", f: (x) => ops.cumulative("cumsum", x, 1), args: [{ shape: S }] },
  { name: "cumsum (reverse)", f: (x) => ops.cumulative("cumsum", x, 0, true), args: [{ shape: S }] },
  { name: "cumprod", f: (x) => ops.cumulative("cumprod", x, 1), args: [{ shape: S }] },
  { name: "cummax", f: (x) => ops.cumulative("cummax", x, 1), args: [{ shape: S }] },
  { name: "cummin", f: (x) => ops.cumulative("cummin", x, 1, true), args: [{ shape: S }] },
  { name: "cumlogsumexp", f: (x) => ops.cumulative("cumlogsumexp", x, 1), args: [{ shape: S }] },
  {
    name: "dot_general (matmul)",
    f: (x, y) =>
      ops.dotGeneral(x, y, [
        [[1], [0]],
        [[], []],
      ]),
    args: [{ shape: S }, { shape: [3, 4] }],
  },
  {
    name: "dot_general (batched)",
    f: (x, y) =>
      ops.dotGeneral(x, y, [
        [[2], [1]],
        [[0], [0]],
      ]),
    args: [{ shape: [2, 2, 3] }, { shape: [2, 3, 2] }],
  },
  {
    name: "gather",
    f: (x, i) => ops.gather(x, i, [0]),
    args: [{ shape: [4, 3] }, { shape: [5, 1], dtype: "int32", lo: 0, hi: 4 }],
    diff: [0],
    vmapAxes: [
      [0, null],
      [null, 0],
      [0, 0],
    ],
  },
  {
    name: "scatter (add)",
    f: (x, i, u) => ops.scatter(x, i, u, [0], "add"),
    args: [{ shape: [4, 3] }, { shape: [5, 1], dtype: "int32", lo: 0, hi: 4 }, { shape: [5, 3] }],
    diff: [0, 2],
    vmapAxes: [
      [0, null, 0],
      [null, 0, 0],
      [0, 0, null],
    ],
  },
  {
    name: "dynamic_slice",
    f: (x, i) => ops.dynamicSlice(x, [i, ops.full([], 1, "int32")], [2, 2]),
    args: [{ shape: [4, 3] }, { shape: [], dtype: "int32", lo: 0, hi: 3 }],
    diff: [0],
    vmapAxes: [
      [0, null],
      [null, 0],
      [0, 0],
    ],
  },
  {
    name: "dynamic_update_slice",
    f: (x, u, i) => ops.dynamicUpdateSlice(x, u, [i, ops.full([], 0, "int32")]),
    args: [{ shape: [4, 3] }, { shape: [2, 3] }, { shape: [], dtype: "int32", lo: 0, hi: 3 }],
    diff: [0, 1],
    vmapAxes: [
      [0, 0, null],
      [null, 0, 0],
      [0, null, 0],
    ],
  },
  {
    name: "conv_general_dilated (1-D NCH VALID)",
    f: (x, w) => lax.conv(x, w, [1], "VALID"),
    args: [{ shape: [2, 3, 5] }, { shape: [4, 3, 3] }],
    vmapAxes: [
      [0, 0],
      [3, null],
      [null, 1],
      [1, 3],
    ],
  },
  {
    name: "conv_general_dilated (2-D NHWC SAME, strides, rhs dilation)",
    f: (x, w) =>
      lax.convGeneralDilated(x, w, [2, 1], "SAME", { rhsDilation: [1, 2], dimensionNumbers: ["NHWC", "HWIO", "NHWC"] }),
    args: [{ shape: [2, 5, 4, 2] }, { shape: [2, 2, 2, 3] }],
    vmapAxes: [
      [0, 0],
      [4, null],
      [null, 4],
      [2, 1],
    ],
  },
  {
    name: "conv_general_dilated (lhs dilation, negative pads)",
    f: (x, w) =>
      lax.convGeneralDilated(
        x,
        w,
        [1, 2],
        [
          [2, -1],
          [1, 1],
        ],
        { lhsDilation: [2, 1] },
      ),
    args: [{ shape: [1, 2, 3, 4] }, { shape: [2, 2, 2, 2] }],
  },
  {
    name: "conv_general_dilated (feature groups 2)",
    f: (x, w) => lax.convGeneralDilated(x, w, [1, 1], "VALID", { featureGroupCount: 2 }),
    args: [{ shape: [2, 4, 4, 3] }, { shape: [4, 2, 2, 2] }],
    vmapAxes: [
      [0, 0],
      [null, 0],
      [1, null],
      [4, 4],
    ],
  },
  {
    name: "conv_general_dilated (batch groups 2)",
    f: (x, w) =>
      lax.convGeneralDilated(x, w, [1, 1], "VALID", { batchGroupCount: 2, dimensionNumbers: ["NHWC", "OIHW", "NCHW"] }),
    args: [{ shape: [4, 3, 3, 2] }, { shape: [4, 2, 2, 2] }],
    vmapAxes: [
      [0, 0],
      [null, 0],
      [2, null],
      [4, 1],
    ],
  },
  {
    name: "reduce_window_sum (pads, strides, base dilation)",
    f: (x) =>
      lax.reduceWindowSum(
        x,
        [2, 3],
        [1, 2],
        [
          [1, 0],
          [1, 2],
        ],
        [2, 1],
      ),
    args: [{ shape: [3, 5] }],
  },
  {
    name: "reduce_window_max (2x2 pool, SAME)",
    f: (x) => lax.reduceWindowMax(x, [1, 2, 2], [1, 2, 2], "SAME"),
    args: [{ shape: [2, 5, 4] }],
  },
  {
    name: "reduce_window_max (tiling 2x2 windows: reshape/argmax jvp)",
    f: (x) => lax.reduceWindowMax(x, [1, 2, 2], [1, 2, 2], "VALID"),
    args: [{ shape: [2, 4, 6] }],
  },
  {
    name: "reduce_window_min (tiling windows, cropped edge)",
    f: (x) => lax.reduceWindowMin(x, [2, 3], [2, 3], "VALID"),
    args: [{ shape: [5, 7] }],
  },
  {
    name: "reduce_window_min (window dilation)",
    f: (x) =>
      lax.reduceWindowMin(
        x,
        [2, 2],
        [1, 1],
        [
          [0, 1],
          [1, 0],
        ],
        null,
        [1, 2],
      ),
    args: [{ shape: [4, 5] }],
  },
];
