/** @file The gamma family of jax.random: the random_gamma primitive (Marsaglia–Tsang rejection, implicit-reparameterization jvp), gamma, loggamma, beta, dirichlet, chisquare, t, f, generalizedNormal and ball. */
import type { Array } from "../core/array.js";
import type { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { type DType, isFloat } from "../core/dtype.js";
import { type BDim, Primitive, Zero } from "../core/primitive.js";
import { prod, shapeStr } from "../core/shape.js";
import { bind, evalTrace, withTrace } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { randomGammaGrad } from "../primitives/random.js";
import { lowerFun } from "../transforms/lower-fun.js";
import { stopGradient } from "../transforms/stop-gradient.js";
import { vmapFlat } from "../transforms/vmap.js";
import { type KeyLike, checkKey, splitData, splitList } from "./keys.js";
import { jadd, jdiv, jmul, jpow } from "./jnp-lite.js";
import { exponentialFrom, normalFrom, rademacherFrom, uniformFrom } from "./samplers.js";
import {
  type Param,
  type ShapeArg,
  asArr,
  bcast,
  broadcastShapeArg,
  canonicalShape,
  checkSafeCast,
  checkShape,
  constant,
  cst,
  floatDtype,
  floatInfo,
  parseArgs,
  toDtype,
} from "./util.js";
import { whileLoop } from "../transforms/scan.js";

type Shape = readonly number[];

// ---------------------------------------------------------------- one draw (Marsaglia & Tsang)
/** _gamma_one: one Gamma(alpha) (or log-Gamma) draw from scalar key data and a scalar alpha. */
function gammaOne(key: Array, alpha0: Array, logSpace: boolean): Array {
  const dtype = alpha0.dtype;
  const k = (v: number) => constant(dtype, v);
  const zero = k(0),
    one = k(1),
    two = k(2),
    minusOne = k(-1),
    half = k(0.5),
    third = k(1 / 3),
    squeeze = k(0.0331);
  // alpha < 1 is boosted to alpha + 1; the draw is then scaled by U^(1/alpha)
  const boost = ops.ge(alpha0, one);
  const alpha = ops.select(boost, alpha0, ops.add(alpha0, one));
  const d = ops.sub(alpha, third);
  const c = ops.div(third, ops.sqrt(d));
  const [key1, subkey] = splitList(key, 2);
  const [, , V] = whileLoop<Array[]>(
    ([, X, V, U]) =>
      ops.and(
        ops.ge(U, ops.sub(one, ops.mul(squeeze, ops.mul(X, X)))),
        ops.ge(ops.log(U), ops.add(ops.mul(X, half), ops.mul(d, ops.add(ops.sub(one, V), ops.log(V))))),
      ),
    ([kk]) => {
      const [knext, xKey, uKey] = splitList(kk, 3);
      const [, x, v] = whileLoop<Array[]>(
        ([, , v]) => ops.le(v, zero),
        ([k2]) => {
          const [k3, sub] = splitList(k2, 2);
          const x = normalFrom(sub, [], dtype);
          return [k3, x, ops.add(one, ops.mul(x, c))];
        },
        [xKey, zero, minusOne],
      );
      const X = ops.mul(x, x);
      const V2 = ops.mul(ops.mul(v, v), v);
      const U = uniformFrom("gamma", uKey, [], dtype, 0, 1);
      return [knext, X, V2, U];
    },
    [key1, zero, one, two],
  );
  if (logSpace) {
    const logSamples = ops.neg(exponentialFrom(subkey, [], dtype));
    const logBoost = ops.select(
      ops.or(boost, ops.eq(logSamples, zero)),
      zero,
      ops.mul(logSamples, ops.div(one, alpha0)),
    );
    return ops.add(ops.add(ops.log(d), ops.log(V)), logBoost);
  }
  const samples = ops.sub(one, uniformFrom("gamma", subkey, [], dtype, 0, 1));
  const b = ops.select(boost, one, ops.pow(samples, ops.div(one, alpha0)));
  return ops.mul(ops.mul(d, V), b);
}

/**
 * _gamma_impl: key data (*kb, 2) and alphas (*kb, *rest); each key is split into prod(rest) keys
 * (row-major) and each element is drawn by a vmapped _gamma_one (its loops are batched: finished
 * elements keep their state while others run).
 */
export function gammaImpl(keys: Array, a: Array, logSpace: boolean): Array {
  const keyNdim = keys.ndim - 1;
  const splitCount = prod(a.shape.slice(keyNdim));
  const nKeys = prod(keys.shape.slice(0, -1));
  const n = a.size;
  if (n === 0) return ops.full(a.shape, 0, a.dtype);
  const flatKeys = ops.reshape(keys, [nKeys, 2]);
  const [split] = vmapFlat((k) => [splitData(k, [splitCount])], [flatKeys], [0], [0], { size: nKeys, name: null });
  const allKeys = ops.reshape(split, [n, 2]);
  const alphas = ops.reshape(a, [n]);
  const [samples] = vmapFlat((k, al) => [gammaOne(k, al, logSpace)], [allKeys, alphas], [0, 0], [0], {
    size: n,
    name: null,
  });
  return ops.reshape(samples, a.shape);
}

/** _gamma_grad: d sample / d alpha (through exp for log-space samples, with 0 replaced by tiny). */
function gammaGrad(sample: Array, a: Array, logSpace: boolean): Array {
  if (!logSpace) return randomGammaGrad(a, sample);
  let s = ops.exp(sample);
  s = ops.select(ops.eq(s, cst(s, 0)), ops.fullLike(s, floatInfo(s.dtype).tiny), s);
  return ops.div(randomGammaGrad(a, s), s);
}

interface GammaParams {
  log_space: boolean;
  [k: string]: unknown;
}
/** random_gamma(key_data, a; log_space): JAX's random_gamma_p with key data in place of typed keys. */
export const randomGammaP: Primitive<GammaParams> = new Primitive<GammaParams>("random_gamma", {
  abstractEval([k, a]) {
    if (k.dtype !== "uint32" || k.ndim < 1 || k.shape[k.ndim - 1] !== 2)
      throw new TypeError(`random_gamma: key data must be uint32 of shape (..., 2), got ${k.str()}`);
    if (!isFloat(a.dtype)) throw new TypeError(`random_gamma: a must be floating, got ${a.str()}`);
    const kb = k.shape.slice(0, -1);
    if (kb.some((d, i) => a.shape[i] !== d))
      throw new TypeError(
        `random_gamma: key batch shape ${shapeStr(kb)} must be a prefix of a's shape ${shapeStr(a.shape)}`,
      );
    return [new ShapedArray(a.shape, a.dtype, false)];
  },
  impl([k, a], { log_space }) {
    return [withTrace(evalTrace, () => gammaImpl(k, a, log_space)) as ArrayImpl];
  },
  jvp([k, a], [, ta], params) {
    const [sample] = bind(randomGammaP, [k, a], params);
    if (ta instanceof Zero) return [[sample], [new Zero(sample.aval)]];
    return [[sample], [ops.mul(ta, gammaGrad(sample, a, params.log_space))]];
  },
  vmap(axis, [k, a], [dk, da], params) {
    const kk = dk === null ? ops.broadcastBatch(k, axis.size, 0) : ops.moveaxis(k, dk, 0);
    const aa = da === null ? ops.broadcastBatch(a, axis.size, 0) : ops.moveaxis(a, da, 0);
    return [bind(randomGammaP, [kk, aa], params), [0 as BDim]];
  },
  // lowered by inlining gammaImpl, as JAX lowers random_gamma_p with mlir.lower_fun(_gamma_impl) (its loops are traced while loops)
  lower: lowerFun<GammaParams>("random_gamma", ([k, a], { log_space }) => [gammaImpl(k, a, log_space)]),
  missing: { transpose: "random_gamma is not linear" },
});

function gammaFrom(fn: string, data: Array, a: Array, shape: Shape | null, dtype: DType, logSpace: boolean): Array {
  const s = shape === null ? a.shape : shape;
  if (shape !== null) checkShape(fn, s, a.shape);
  const aa = bcast(fn, toDtype(a, dtype), s);
  return bind(randomGammaP, [data, aa], { log_space: logSpace })[0];
}

// ---------------------------------------------------------------- method='approximate'
const CHI2_QUANTILE_COEF: readonly (readonly [number, number, number])[] = [
  [1.0, -0.2237368, -0.01513904],
  [0.4713941, 0.02607083, -0.008986007],
  [0.0001348028, 0.01128186, 0.02277679],
  [-0.008553069, -0.01153761, -0.01323293],
  [0.00312558, 0.005169654, -0.006950356],
  [-0.0008426812, 0.00253001, 0.001060438],
  [0.00009780499, -0.001450117, 0.001565326],
];
const NUM_BOOSTS = 4;

/** _loggamma_chisquare: log Gamma(a) from a degree-6 polynomial in a normal draw (the chi-square quantile series). */
function loggammaChisquare(key: Array, a: Array): Array {
  const nu = ops.mul(cst(a, 2), a);
  const x = normalFrom(key, a.shape, a.dtype);
  const u = ops.div(cst(a, 1), nu);
  const t = ops.mul(x, ops.rsqrt(nu));
  const row = (c: readonly [number, number, number]) =>
    ops.add(cst(a, c[0]), ops.mul(u, ops.add(cst(a, c[1]), ops.mul(u, cst(a, c[2])))));
  let poly = row(CHI2_QUANTILE_COEF[CHI2_QUANTILE_COEF.length - 1]);
  for (let i = CHI2_QUANTILE_COEF.length - 2; i >= 0; i--) poly = ops.add(ops.mul(poly, t), row(CHI2_QUANTILE_COEF[i]));
  poly = ops.max(poly, cst(poly, floatInfo(poly.dtype).tiny));
  return ops.add(ops.log(a), ops.mul(cst(a, 3), ops.log(poly)));
}

/** _gamma_approx: loop-free log-gamma draws (chi-square series at a + 4, Stuart boosting back to a). */
function gammaApprox(
  fn: string,
  data: Array,
  a0: Array,
  shape: ShapeArg | null,
  dtype: DType,
  logSpace: boolean,
): Array {
  const cd: DType = floatInfo(dtype).bits < 32 ? "float32" : dtype;
  const s = broadcastShapeArg(fn, shape, a0);
  const a = bcast(fn, toDtype(a0, cd), s);
  const [kBase, kBoost] = splitList(data, 2);
  const logBase = loggammaChisquare(kBase, ops.add(a, cst(a, NUM_BOOSTS)));
  const k = ops.reshape(ops.iota(cd, [NUM_BOOSTS], 0), [NUM_BOOSTS, ...s.map(() => 1)]);
  const logU = ops.neg(exponentialFrom(kBoost, [NUM_BOOSTS, ...s], cd));
  const den = jadd(ops.reshape(a, [1, ...s]), k);
  const logSample = ops.add(logBase, ops.reduceSum(ops.div(logU, den), [0]));
  return toDtype(logSpace ? logSample : ops.exp(logSample), dtype);
}

// ---------------------------------------------------------------- public gamma family
export interface GammaOptions {
  a?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
  method?: "exact" | "approximate";
}
function gammaPublic(fn: string, logSpace: boolean, key: KeyLike, args: unknown[]): Array {
  const { data } = checkKey(fn, key);
  const o = parseArgs(
    fn,
    args,
    ["a", "shape", "dtype"],
    {
      a: undefined as Param | undefined,
      shape: null as ShapeArg | null,
      dtype: null as DType | null,
      method: "exact" as string,
    },
    ["method"],
  );
  if (o.a === undefined) throw new TypeError(`${fn}: missing required argument a`);
  if (o.method !== "exact" && o.method !== "approximate")
    throw new Error(
      `method argument to \`${fn}\` must be one of {'exact', 'approximate'}, got ${JSON.stringify(o.method)}`,
    );
  const d = floatDtype(fn, o.dtype);
  const a = asArr(fn, o.a);
  if (o.method === "approximate") return gammaApprox(fn, data, a, o.shape, d, logSpace);
  return gammaFrom(fn, data, a, o.shape === null ? null : canonicalShape(fn, o.shape), d, logSpace);
}

/** random.gamma(key, a, shape = a.shape, dtype = float, { method }): Gamma(a, 1) samples; differentiable in a (implicit reparameterization). */
export function gamma(
  key: KeyLike,
  a?: Param | GammaOptions,
  shape?: ShapeArg | null | GammaOptions,
  dtype?: DType | null | GammaOptions,
  options?: GammaOptions,
): Array {
  return gammaPublic("gamma", false, key, [a, shape, dtype, options]);
}
/** random.loggamma(key, a, shape = a.shape, dtype = float, { method }): log of Gamma(a, 1) samples, accurate for small a. */
export function loggamma(
  key: KeyLike,
  a?: Param | GammaOptions,
  shape?: ShapeArg | null | GammaOptions,
  dtype?: DType | null | GammaOptions,
  options?: GammaOptions,
): Array {
  return gammaPublic("loggamma", true, key, [a, shape, dtype, options]);
}

/** loggamma on key data with the exact or approximate method. */
function loggammaFrom(fn: string, data: Array, a: Array, shape: Shape, dtype: DType, method: string): Array {
  return method === "approximate"
    ? gammaApprox(fn, data, a, shape, dtype, true)
    : gammaFrom(fn, data, a, shape, dtype, true);
}

export interface BetaOptions {
  a?: Param;
  b?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
  method?: "exact" | "approximate";
}
/** random.beta(key, a, b, shape = broadcast(a, b), dtype = float): ga / (ga + gb) from two log-gamma draws. */
export function beta(
  key: KeyLike,
  a?: Param | BetaOptions,
  b?: Param | BetaOptions,
  shape?: ShapeArg | null | BetaOptions,
  dtype?: DType | null | BetaOptions,
  options?: BetaOptions,
): Array {
  const fn = "beta";
  const { data } = checkKey(fn, key);
  const o = parseArgs(
    fn,
    [a, b, shape, dtype, options],
    ["a", "b", "shape", "dtype"],
    {
      a: undefined as Param | undefined,
      b: undefined as Param | undefined,
      shape: null as ShapeArg | null,
      dtype: null as DType | null,
      method: "exact" as string,
    },
    ["method"],
  );
  if (o.a === undefined || o.b === undefined) throw new TypeError(`${fn}: missing required arguments a, b`);
  if (o.method !== "exact" && o.method !== "approximate")
    throw new Error(
      `method argument to \`beta\` must be one of {'exact', 'approximate'}, got ${JSON.stringify(o.method)}`,
    );
  const d = floatDtype(fn, o.dtype);
  const aa = asArr(fn, o.a),
    ba = asArr(fn, o.b);
  checkSafeCast(fn, d, aa, ba);
  const s = broadcastShapeArg(fn, o.shape, aa, ba);
  const [ka, kb] = splitList(data, 2);
  const la = loggammaFrom(fn, ka, bcast(fn, toDtype(aa, d), s), s, d, o.method);
  const lb = loggammaFrom(fn, kb, bcast(fn, toDtype(ba, d), s), s, d, o.method);
  const m = ops.max(la, lb);
  const ga = ops.exp(ops.sub(la, m)),
    gb = ops.exp(ops.sub(lb, m));
  return ops.div(ga, ops.add(ga, gb));
}

/** nn.softmax along the last axis: exp(x - stop_gradient(max)) / sum. */
function softmaxLast(x: Array): Array {
  const ax = x.ndim - 1;
  const keep = [...x.shape.keys()].filter((i) => i !== ax);
  const m = ops.broadcastInDim(stopGradient(ops.reduceMax(x, [ax])), x.shape, keep);
  const e = ops.exp(ops.sub(x, m));
  return ops.div(e, ops.broadcastInDim(ops.reduceSum(e, [ax]), x.shape, keep));
}

export interface DirichletOptions {
  alpha?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
}
/** random.dirichlet(key, alpha, shape = alpha.shape[:-1], dtype = float): softmax of log-gamma draws. */
export function dirichlet(
  key: KeyLike,
  alpha?: Param | DirichletOptions,
  shape?: ShapeArg | null | DirichletOptions,
  dtype?: DType | null | DirichletOptions,
  options?: DirichletOptions,
): Array {
  const fn = "dirichlet";
  const { data } = checkKey(fn, key);
  const o = parseArgs(fn, [alpha, shape, dtype, options], ["alpha", "shape", "dtype"], {
    alpha: undefined as Param | undefined,
    shape: null as ShapeArg | null,
    dtype: null as DType | null,
  });
  if (o.alpha === undefined) throw new TypeError(`${fn}: missing required argument alpha`);
  const d = floatDtype(fn, o.dtype);
  const al = asArr(fn, o.alpha);
  if (al.ndim < 1) throw new Error(`${fn} requires alpha.ndim >= 1, got alpha.ndim == ${al.ndim}`);
  const batch = al.shape.slice(0, -1);
  const s = o.shape === null ? batch : canonicalShape(fn, o.shape);
  if (o.shape !== null) checkShape(fn, s, batch);
  const full = [...s, al.shape[al.ndim - 1]];
  return softmaxLast(gammaFrom(fn, data, toDtype(al, d), full, d, true));
}

function dfParam(
  fn: string,
  key: KeyLike,
  names: string[],
  args: unknown[],
  kwOnly: string[] = [],
): { data: Array; xs: Array[]; shape: number[]; dtype: DType; method: string } {
  const { data } = checkKey(fn, key);
  const dflt: Record<string, unknown> = { shape: null, dtype: null, method: "exact" };
  const o = parseArgs(fn, args, [...names, "shape", "dtype"], dflt, kwOnly);
  for (const n of names) if (o[n] === undefined) throw new TypeError(`${fn}: missing required argument ${n}`);
  const d = floatDtype(fn, o.dtype);
  const xs = names.map((n) => asArr(fn, o[n]));
  checkSafeCast(fn, d, ...xs);
  return { data, xs, shape: broadcastShapeArg(fn, o.shape, ...xs), dtype: d, method: String(o.method) };
}

function chisquareFrom(fn: string, data: Array, df: Array, shape: Shape, dtype: DType, method: string): Array {
  const dff = toDtype(df, dtype);
  const halfDf = ops.div(dff, cst(dff, 2));
  return ops.mul(ops.exp(loggammaFrom(fn, data, halfDf, shape, dtype, method)), constant(dtype, 2));
}

export interface ChisquareOptions {
  df?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
  method?: "exact" | "approximate";
}
/** random.chisquare(key, df, shape = df.shape, dtype = float): 2 exp(loggamma(df / 2)). */
export function chisquare(
  key: KeyLike,
  df?: Param | ChisquareOptions,
  shape?: ShapeArg | null | ChisquareOptions,
  dtype?: DType | null | ChisquareOptions,
  options?: ChisquareOptions,
): Array {
  const p = dfParam("chisquare", key, ["df"], [df, shape, dtype, options], ["method"]);
  return chisquareFrom("chisquare", p.data, p.xs[0], p.shape, p.dtype, p.method);
}

export interface TOptions {
  df?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
}
/** random.t(key, df, shape = df.shape, dtype = float): normal * sqrt((df / 2) / gamma(df / 2)). */
export function t(
  key: KeyLike,
  df?: Param | TOptions,
  shape?: ShapeArg | null | TOptions,
  dtype?: DType | null | TOptions,
  options?: TOptions,
): Array {
  const p = dfParam("t", key, ["df"], [df, shape, dtype, options]);
  const dff = toDtype(p.xs[0], p.dtype);
  const [kn, kg] = splitList(p.data, 2);
  const n = normalFrom(kn, p.shape, p.dtype);
  const halfDf = ops.div(dff, cst(dff, 2));
  const g = gammaFrom("t", kg, halfDf, p.shape, p.dtype, false);
  return jmul(n, ops.sqrt(jdiv(halfDf, g)));
}

export interface FOptions {
  dfnum?: Param;
  dfden?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
}
/** random.f(key, dfnum, dfden, shape = broadcast, dtype = float): (chi2(dfnum)/dfnum) / (chi2(dfden)/dfden). */
export function f(
  key: KeyLike,
  dfnum?: Param | FOptions,
  dfden?: Param | FOptions,
  shape?: ShapeArg | null | FOptions,
  dtype?: DType | null | FOptions,
  options?: FOptions,
): Array {
  const p = dfParam("f", key, ["dfnum", "dfden"], [dfnum, dfden, shape, dtype, options]);
  const num = toDtype(p.xs[0], p.dtype),
    den = toDtype(p.xs[1], p.dtype);
  const [kd, kn] = splitList(p.data, 2);
  const chiN = chisquareFrom("f", kn, num, p.shape, p.dtype, "exact");
  const chiD = chisquareFrom("f", kd, den, p.shape, p.dtype, "exact");
  return jdiv(jdiv(chiN, num), jdiv(chiD, den));
}

/** 1 / p for a JS number (a Python float: double precision) or an Array. */
const recip = (p: Param): Param => (typeof p === "number" ? 1 / p : jdiv(1, p));
/** x ** p as JAX's `**`: integer_pow for a JS integer exponent, pow otherwise. */
const powOp = (x: Array, p: Param): Array =>
  typeof p === "number" && Number.isInteger(p) ? ops.integerPow(x, p) : jpow(x, p);

function generalizedNormalFrom(data: Array, p: Param, shape: Shape, dtype: DType): Array {
  const [k0, k1] = splitList(data, 2);
  const g = gammaFrom("generalizedNormal", k0, asArr("generalizedNormal", recip(p)), shape, dtype, false);
  const r = rademacherFrom(k1, shape, dtype);
  return jmul(r, jpow(g, recip(p)));
}

export interface GeneralizedNormalOptions {
  p?: Param;
  shape?: ShapeArg;
  dtype?: DType;
}
/** random.generalizedNormal(key, p, shape = [], dtype = float): density proportional to exp(-|x|^p). */
export function generalizedNormal(
  key: KeyLike,
  p?: Param | GeneralizedNormalOptions,
  shape?: ShapeArg | GeneralizedNormalOptions,
  dtype?: DType | null | GeneralizedNormalOptions,
  options?: GeneralizedNormalOptions,
): Array {
  const fn = "generalizedNormal";
  const { data } = checkKey(fn, key);
  const o = parseArgs(fn, [p, shape, dtype, options], ["p", "shape", "dtype"], {
    p: undefined as Param | undefined,
    shape: [] as ShapeArg,
    dtype: null as DType | null,
  });
  if (o.p === undefined) throw new TypeError(`${fn}: missing required argument p`);
  return generalizedNormalFrom(data, o.p, canonicalShape(fn, o.shape), floatDtype(fn, o.dtype));
}

export interface BallOptions {
  d?: number;
  p?: Param;
  shape?: ShapeArg;
  dtype?: DType;
}
/** random.ball(key, d, p = 2, shape = [], dtype = float): uniform samples from the unit p-ball in d dimensions. */
export function ball(
  key: KeyLike,
  d?: number | BallOptions,
  p?: Param | BallOptions,
  shape?: ShapeArg | BallOptions,
  dtype?: DType | null | BallOptions,
  options?: BallOptions,
): Array {
  const fn = "ball";
  const { data } = checkKey(fn, key);
  const o = parseArgs(fn, [d, p, shape, dtype, options], ["d", "p", "shape", "dtype"], {
    d: undefined as number | undefined,
    p: 2 as Param,
    shape: [] as ShapeArg,
    dtype: null as DType | null,
  });
  if (o.d === undefined || !Number.isInteger(o.d) || o.d < 0)
    throw new TypeError(`${fn}: d must be a non-negative integer, got ${String(o.d)}`);
  const s = canonicalShape(fn, o.shape);
  const dt = floatDtype(fn, o.dtype);
  const [k1, k2] = splitList(data, 2);
  const g = generalizedNormalFrom(k1, o.p, [...s, o.d], dt);
  const e = exponentialFrom(k2, s, dt);
  const norm = jpow(jadd(ops.reduceSum(powOp(ops.abs(g), o.p), [s.length]), e), recip(o.p));
  return jdiv(g, ops.reshape(norm, [...norm.shape, 1]));
}
