/** @file jax.nn functions: activations, glu, softmax/logSoftmax, logsumexp/logmeanexp, oneHot, standardize. */
import { Array } from "../core/array.js";
import { type DType, defaultFloatDType, isBool } from "../core/dtype.js";
import { shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { stopGradient } from "../transforms/stop-gradient.js";
import { asArrayArg } from "../numpy/core.js";
import {
  type ArrayInput,
  type Args,
  type Axis,
  axesOf,
  axisOf,
  c,
  concreteInt,
  parseArgs,
  promoteArgsNumeric,
  sel,
  toInexact,
  userDType,
  whereArr,
} from "../numpy/elementwise-util.js";
import { logaddexp, tanh as jnpTanh } from "../numpy/elementwise-arith.js";
import { logsumexp, max, mean, sum } from "../numpy/reductions.js";

type Unary = (x: ArrayInput) => Array;
const f =
  (name: string, g: (x: Array) => Array): Unary =>
  (x) =>
    g(toInexact(name, x));

export const identity: Unary = (x) => asArrayArg("identity", x);
/** relu(x) = max(x, 0), with gradient 0 at 0 (as JAX's custom rule); NaN propagates. */
export const relu: Unary = (x) => {
  const [a] = promoteArgsNumeric("relu", x);
  return ops.select(ops.le(a, c(a, 0)), ops.fullLike(a, 0), a);
};
/** relu6(x) = min(max(x, 0), 6), gradient 0 at both kinks. */
export const relu6: Unary = (x) => {
  const [a] = promoteArgsNumeric("relu6", x);
  return ops.select(ops.le(a, c(a, 0)), ops.fullLike(a, 0), ops.select(ops.ge(a, c(a, 6)), ops.fullLike(a, 6), a));
};
export const sigmoid = f("sigmoid", ops.logistic);
/** softplus(x) = log(1 + exp(x)) = logaddexp(x, 0). */
export const softplus = f("softplus", (x) => logaddexp(x, 0));
export const softSign = f("soft_sign", (x) => ops.div(x, ops.add(ops.abs(x), c(x, 1))));
export const silu = f("silu", (x) => ops.mul(x, ops.logistic(x)));
export const swish = silu;
export const logSigmoid = f("log_sigmoid", (x) => ops.neg(logaddexp(ops.neg(x), 0)));
/** elu(x, alpha=1) = x for x > 0, alpha (exp(x) - 1) otherwise. */
export function elu(x: ArrayInput, ...args: Args<[alpha: number], { alpha?: number }>): Array {
  const o = parseArgs<{ alpha: number }>("elu", args, ["alpha"]);
  const a = toInexact("elu", x);
  const pos = ops.gt(a, c(a, 0));
  return sel(pos, a, ops.mul(c(a, o.alpha ?? 1.0), ops.expm1(sel(pos, c(a, 0), a))));
}
const SELU_ALPHA = 1.6732632423543772,
  SELU_SCALE = 1.0507009873554805;
export const selu = f("selu", (a) => ops.mul(c(a, SELU_SCALE), elu(a, SELU_ALPHA)));
/** celu(x, alpha=1) = max(x, 0) + alpha expm1(min(x, 0) / alpha). */
export function celu(x: ArrayInput, ...args: Args<[alpha: number], { alpha?: number }>): Array {
  const o = parseArgs<{ alpha: number }>("celu", args, ["alpha"]);
  const a = toInexact("celu", x);
  const al = c(a, o.alpha ?? 1.0);
  return ops.add(ops.max(a, c(a, 0)), ops.mul(al, ops.expm1(ops.div(ops.min(a, c(a, 0)), al))));
}
/** leakyRelu(x, negativeSlope=0.01) = x for x >= 0, slope * x otherwise. */
export function leakyRelu(x: ArrayInput, ...args: Args<[negativeSlope: number], { negativeSlope?: number }>): Array {
  const o = parseArgs<{ negativeSlope: number }>("leaky_relu", args, ["negativeSlope"]);
  const a = toInexact("leaky_relu", x);
  return sel(ops.ge(a, c(a, 0)), a, ops.mul(a, c(a, o.negativeSlope ?? 0.01)));
}
export const hardTanh = f("hard_tanh", (a) => sel(ops.gt(a, c(a, 1)), c(a, 1), sel(ops.lt(a, c(a, -1)), c(a, -1), a)));
export const hardSigmoid = f("hard_sigmoid", (a) => ops.div(relu6(ops.add(a, c(a, 3))), c(a, 6)));
export const hardSilu = f("hard_silu", (a) => ops.mul(a, hardSigmoid(a)));
export const hardSwish = hardSilu;
/** gelu(x, approximate=true): tanh approximation by default (JAX's default), else x * Phi(x) via erfc. */
export function gelu(x: ArrayInput, ...args: Args<[approximate: boolean], { approximate?: boolean }>): Array {
  const o = parseArgs<{ approximate: boolean }>("gelu", args, ["approximate"]);
  const a = toInexact("gelu", x);
  if (o.approximate ?? true) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    const inner = ops.mul(c(a, Math.sqrt(2 / Math.PI)), ops.add(a, ops.mul(c(a, 0.044715), ops.integerPow(a, 3))));
    return ops.mul(ops.mul(c(a, 0.5), a), ops.add(c(a, 1), ops.tanh(inner)));
  }
  return ops.mul(a, ops.div(ops.erfc(ops.mul(ops.neg(a), c(a, Math.SQRT1_2))), c(a, 2)));
}
/** glu(x, axis=-1): first half * sigmoid(second half) along axis (its size must be even). */
export function glu(x: ArrayInput, ...args: Args<[axis: number], { axis?: number }>): Array {
  const o = parseArgs<{ axis: number }>("glu", args, ["axis"]);
  const a = toInexact("glu", x);
  const ax = axisOf("glu", o.axis ?? -1, a.shape);
  const n = a.shape[ax];
  if (n % 2 !== 0) throw new Error(`glu: axis ${ax} of shape ${shapeStr(a.shape)} must have an even size, got ${n}`);
  return ops.mul(ops.sliceInDim(a, 0, n / 2, 1, ax), ops.logistic(ops.sliceInDim(a, n / 2, n, 1, ax)));
}
export const squareplus = (x: ArrayInput, ...args: Args<[b: number], { b?: number }>): Array => {
  const o = parseArgs<{ b: number }>("squareplus", args, ["b"]);
  const a = toInexact("squareplus", x);
  return ops.div(ops.add(a, ops.sqrt(ops.add(ops.mul(a, a), c(a, o.b ?? 4)))), c(a, 2));
};
export const mish = f("mish", (a) => ops.mul(a, jnpTanh(softplus(a))));
export const sparsePlus = f("sparse_plus", (a) => {
  const q = ops.div(ops.integerPow(ops.add(a, c(a, 1)), 2), c(a, 4));
  return sel(ops.le(a, c(a, -1)), c(a, 0), sel(ops.ge(a, c(a, 1)), a, q));
});
export const sparseSigmoid = f("sparse_sigmoid", (a) =>
  sel(ops.le(a, c(a, -1)), c(a, 0), sel(ops.ge(a, c(a, 1)), c(a, 1), ops.div(ops.add(a, c(a, 1)), c(a, 2)))),
);
/** log(1 - exp(-x)) for x > 0, switching formulas at log 2 for accuracy. */
export const log1mexp = f("log1mexp", (a) =>
  sel(ops.lt(a, c(a, Math.LN2)), ops.log(ops.neg(ops.expm1(ops.neg(a)))), ops.log1p(ops.neg(ops.exp(ops.neg(a))))),
);

interface SoftmaxOpts {
  axis: Axis;
  where: ArrayInput | null;
}
type SoftmaxArgs = Args<[axis: Axis, where: ArrayInput | null], Partial<SoftmaxOpts>>;
/**
 * The arguments softmax and logSoftmax share: the inexact operand, its axis (default -1), the mask and the (masked)
 * max. The max is only a shift for stability, which both results are invariant to: as in JAX it is a
 * stop_gradient, so derivatives skip the max's own (zero-sum) tie-splitting JVP.
 */
function softmaxArgs(
  name: string,
  x: ArrayInput,
  args: SoftmaxArgs,
): { a: Array; axis: Axis; w: ArrayInput | undefined; xmax: Array } {
  const o = parseArgs<SoftmaxOpts>(name, args, ["axis", "where"]);
  const a = toInexact(name, x);
  const axis = o.axis === undefined ? -1 : o.axis;
  axesOf(name, axis, a.shape);
  const w = o.where ?? undefined;
  return { a, axis, w, xmax: stopGradient(max(a, { axis, keepdims: true, initial: -Infinity, where: w })) };
}
/** softmax(x, axis=-1, where): exp(x - max) / sum; masked-out entries are 0. */
export function softmax(x: ArrayInput, ...args: SoftmaxArgs): Array {
  const { a, axis, w, xmax } = softmaxArgs("softmax", x, args);
  const safe = w === undefined ? a : whereArr("softmax", w, a, -Infinity);
  const un = ops.exp(ops.sub(safe, broadcast(xmax, a.shape)));
  const r = ops.div(un, broadcast(sum(un, { axis, keepdims: true, where: w }), a.shape));
  return w === undefined ? r : whereArr("softmax", w, r, 0);
}
/** logSoftmax(x, axis=-1, where): x - max - log(sum(exp(x - max))); masked-out entries are -inf. */
export function logSoftmax(x: ArrayInput, ...args: SoftmaxArgs): Array {
  const { a, axis, w, xmax } = softmaxArgs("log_softmax", x, args);
  const shifted = ops.sub(a, broadcast(xmax, a.shape));
  const lse = ops.log(sum(ops.exp(shifted), { axis, keepdims: true, where: w }));
  const r = ops.sub(shifted, broadcast(lse, a.shape));
  return w === undefined ? r : whereArr("log_softmax", w, r, -Infinity);
}
const broadcast = (y: Array, shape: readonly number[]): Array =>
  ops.broadcastInDim(
    y,
    shape,
    y.shape.map((_, i) => i),
  );
export { logsumexp };
/** logmeanexp(x, axis, where, keepdims) = logsumexp(x) - log(n). */
export function logmeanexp(
  x: ArrayInput,
  ...args: Args<
    [axis: Axis, where: ArrayInput | null, keepdims: boolean],
    { axis?: Axis; where?: ArrayInput | null; keepdims?: boolean }
  >
): Array {
  const o = parseArgs<{ axis: Axis; where: ArrayInput | null; keepdims: boolean }>("logmeanexp", args, [
    "axis",
    "where",
    "keepdims",
  ]);
  const a = toInexact("logmeanexp", x);
  const lse = logsumexp(a, { axis: o.axis, where: o.where, keepdims: o.keepdims }) as Array;
  const ones = ops.fullLike(a, 1);
  const n = sum(ones, { axis: o.axis, where: o.where, keepdims: o.keepdims });
  return ops.sub(lse, ops.log(n));
}

interface OneHotOpts {
  dtype: DType | null;
  axis: number;
}
/** oneHot(x, numClasses, { dtype = float32, axis = -1 }): x == iota along a new axis. */
export function oneHot(x: ArrayInput, numClasses: number, opts: Partial<OneHotOpts> = {}): Array {
  const o = parseArgs<OneHotOpts>("one_hot", [opts], [], ["dtype", "axis"]);
  const a = asArrayArg("one_hot", x);
  const n = concreteInt("one_hot", "numClasses", numClasses, 0);
  const outShape = [...a.shape, 0];
  const ax = axisOf("one_hot", o.axis ?? -1, outShape);
  outShape.splice(outShape.length - 1, 1);
  outShape.splice(ax, 0, n);
  const xd = isBool(a.dtype) ? ops.convert(a, "int32") : a;
  const lhs = ops.broadcastInDim(
    xd,
    outShape,
    a.shape.map((_, i) => (i < ax ? i : i + 1)),
  );
  const rhs = ops.iota(xd.dtype, outShape, ax);
  return ops.convert(ops.eq(lhs, rhs), userDType("one_hot", o.dtype) ?? defaultFloatDType());
}

interface StdOpts {
  axis: Axis;
  mean: ArrayInput | null;
  variance: ArrayInput | null;
  epsilon: number;
  where: ArrayInput | null;
  algorithm: "fast" | "stable";
}
/** standardize(x, axis=-1, mean, variance, epsilon=1e-5, where, {algorithm="fast"}): (x - mean) / sqrt(var + eps). */
export function standardize(
  x: ArrayInput,
  ...args: Args<
    [axis: Axis, mean: ArrayInput | null, variance: ArrayInput | null, epsilon: number, where: ArrayInput | null],
    Partial<StdOpts>
  >
): Array {
  const o = parseArgs<StdOpts>("standardize", args, ["axis", "mean", "variance", "epsilon", "where"], ["algorithm"]);
  const a = toInexact("standardize", x);
  const axis = o.axis === undefined ? -1 : o.axis;
  const w = o.where ?? undefined;
  const m = o.mean != null ? toInexact("standardize", o.mean) : mean(a, { axis, keepdims: true, where: w });
  const centered = ops.sub(a, broadcastTo2(m, a.shape));
  let v: Array;
  if (o.variance != null) v = toInexact("standardize", o.variance);
  else if ((o.algorithm ?? "fast") === "stable")
    v = mean(ops.mul(centered, centered), { axis, keepdims: true, where: w });
  else if (o.algorithm === undefined || o.algorithm === "fast") {
    v = ops.sub(mean(ops.mul(a, a), { axis, keepdims: true, where: w }), ops.mul(m, m));
    v = ops.max(v, c(v, 0));
  } else throw new Error(`standardize: unknown algorithm ${JSON.stringify(o.algorithm)}; expected "fast" or "stable"`);
  return ops.mul(centered, broadcastTo2(ops.rsqrt(ops.add(v, c(v, o.epsilon ?? 1e-5))), a.shape));
}
/** Old name of standardize. */
export const normalize = standardize;
const broadcastTo2 = (y: Array, shape: readonly number[]): Array => {
  if (y.shape.join() === shape.join()) return y;
  const nd = shape.length;
  return ops.broadcastInDim(
    y,
    shape,
    y.shape.map((_, i) => nd - y.ndim + i),
  );
};
export { jnpTanh as tanh };
