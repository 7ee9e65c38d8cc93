/** @file Discrete samplers of jax.random: permutation/shuffle, choice, categorical, poisson, binomial and multinomial (rejection loops via lax.whileLoop). */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { fromNumbers } from "../core/convert.js";
import { type DType, defaultIntDType, isFloat, isInteger } from "../core/dtype.js";
import { broadcastShapes, normalizeAxis, prod, shapeStr, shapesEqual } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { sortMany, topK } from "../primitives/sort.js";
import { type KeyLike, checkKey, randomBits, splitList } from "./keys.js";
import { jadd, jdiv, jge, jlt, jmul, jsub, jwhere } from "./jnp-lite.js";
import { gumbelFrom, normalFrom, randint, uniformFrom } from "./samplers.js";
import {
  type Param,
  type ShapeArg,
  arange,
  asArr,
  bcast,
  canonicalShape,
  checkShape,
  constant,
  cst,
  floatDtype,
  index0,
  intDtype,
  parseArgs,
  take,
  toDtype,
} from "./util.js";
import { whileLoop } from "../transforms/scan.js";

type Shape = readonly number[];

/** A concrete integer from a JS number or a concrete 0-d integer Array (JAX's concrete_or_error(int, ...)). */
function concreteInt(fn: string, x: Param, what: string): number {
  if (typeof x === "number") {
    if (!Number.isInteger(x))
      throw new TypeError(`${fn}: ${what} must be an integer or at least 1-dimensional, got ${x}`);
    return x;
  }
  const a = asArr(fn, x);
  if (!isInteger(a.dtype))
    throw new TypeError(`${fn}: ${what} must be an integer or at least 1-dimensional, got dtype ${a.dtype}`);
  return Number(a.item());
}

// ---------------------------------------------------------------- permutation / shuffle
/** _shuffle: repeated stable sorts by fresh 32-bit keys (3 ln(size) / ln(2**32 - 1) rounds, rounded up). */
export function shuffleData(data: Array, x: Array, axis: number): Array {
  const exponent = 3;
  const rounds = Math.ceil((exponent * Math.log(Math.max(1, x.size))) / Math.log(4294967295));
  let key = data;
  let out = x;
  for (let r = 0; r < rounds; r++) {
    const [k, sub] = splitList(key, 2);
    key = k;
    const sortKeys = randomBits(sub, 32, out.shape);
    out = sortMany([sortKeys, out], axis, true, 1)[1];
  }
  return out;
}

export interface PermutationOptions {
  x?: Param;
  axis?: number;
  independent?: boolean;
}
/** random.permutation(key, x, axis = 0, independent = false): a shuffled arange(x) (integer x) or a shuffled copy of x. */
export function permutation(
  key: KeyLike,
  x?: Param | PermutationOptions,
  axis?: number | PermutationOptions,
  independent?: boolean | PermutationOptions,
  options?: PermutationOptions,
): Array {
  const fn = "permutation";
  const { data } = checkKey(fn, key);
  const p = parseArgs(fn, [x, axis, independent, options], ["x", "axis", "independent"], {
    x: undefined as Param | undefined,
    axis: 0,
    independent: false,
  });
  if (p.x === undefined) throw new TypeError(`${fn}: missing required argument x`);
  const xa = typeof p.x === "number" ? null : asArr(fn, p.x);
  if (xa === null || xa.ndim === 0) {
    const n = concreteInt(fn, p.x, "x");
    normalizeAxis(fn, p.axis, 1);
    return shuffleData(data, arange(n), 0);
  }
  const ax = normalizeAxis(fn, p.axis, xa.ndim);
  if (p.independent || xa.ndim === 1) return shuffleData(data, xa, ax);
  const ind = shuffleData(data, arange(xa.shape[ax]), 0);
  return take(xa, ind, ax);
}

/** random.shuffle(key, x, axis = 0): deprecated in JAX; same as permutation(key, x, axis, independent = true). */
export function shuffle(key: KeyLike, x: Array, axis = 0): Array {
  const { data } = checkKey("shuffle", key);
  const xa = asArr("shuffle", x);
  return shuffleData(data, xa, normalizeAxis("shuffle", axis, Math.max(1, xa.ndim)));
}

// ---------------------------------------------------------------- choice / categorical
export interface ChoiceOptions {
  a?: Param;
  shape?: ShapeArg;
  replace?: boolean;
  p?: Param | null;
  axis?: number;
  mode?: string | null;
}
/** random.choice(key, a, shape = [], replace = true, p = null, axis = 0, mode = null). */
export function choice(
  key: KeyLike,
  a?: Param | ChoiceOptions,
  shape?: ShapeArg | ChoiceOptions,
  replace?: boolean | ChoiceOptions,
  p?: Param | null | ChoiceOptions,
  axis?: number | ChoiceOptions,
  mode?: string | null | ChoiceOptions,
  options?: ChoiceOptions,
): Array {
  const fn = "choice";
  const { data } = checkKey(fn, key);
  const o = parseArgs(fn, [a, shape, replace, p, axis, mode, options], ["a", "shape", "replace", "p", "axis", "mode"], {
    a: undefined as Param | undefined,
    shape: [] as ShapeArg,
    replace: true,
    p: null as Param | null,
    axis: 0,
    mode: null as string | null,
  });
  if (o.a === undefined) throw new TypeError(`${fn}: missing required argument a`);
  const s = canonicalShape(fn, o.shape);
  const arr = asArr(fn, o.a);
  let nInputs: number,
    ax = 0;
  if (arr.ndim === 0) nInputs = concreteInt(fn, o.a, "a");
  else {
    ax = normalizeAxis(fn, o.axis, arr.ndim);
    nInputs = arr.shape[ax];
  }
  const nDraws = prod(s);
  if (nDraws === 0) return ops.full(s, 0, arr.dtype);
  if (nInputs <= 0) throw new Error(`${fn}: a must be greater than 0 unless no samples are taken`);
  if (!o.replace && nDraws > nInputs)
    throw new Error(
      `${fn}: Cannot take a larger sample (size ${nDraws}) than population (size ${nInputs}) when 'replace=False'`,
    );
  let result: Array;
  if (o.p === null) {
    if (o.replace) {
      const ind = randint(data, s, 0, nInputs);
      result = arr.ndim === 0 ? ind : take(arr, ind, ax);
    } else {
      const perm = arr.ndim === 0 ? shuffleData(data, arange(nInputs), 0) : permutation(data, arr, ax);
      result = ops.sliceInDim(perm, 0, nDraws, 1, arr.ndim === 0 ? 0 : ax);
    }
  } else {
    let pa = asArr(fn, o.p);
    if (!isFloat(pa.dtype)) pa = toDtype(pa, floatDtype(fn, null));
    else if (pa.weakType) pa = ops.convert(pa, pa.dtype, false);
    if (!shapesEqual(pa.shape, [nInputs]))
      throw new Error(
        `${fn}: p must be None or a 1D vector with the same size as a.shape[axis]. p has shape ${shapeStr(pa.shape)} and a.shape[axis] is ${nInputs}.`,
      );
    let ind: Array;
    if (o.replace) {
      const c = ops.cumulative("cumsum", pa, 0);
      const total = ops.reshape(ops.slice(c, [nInputs - 1], [nInputs]), []);
      const u = uniformFrom(fn, data, s, c.dtype, 0, 1);
      const r = ops.mul(total, ops.sub(cst(u, 1), u));
      ind = toDtype(searchsortedLeft(c, r), defaultIntDType());
    } else {
      const g = ops.add(gumbelFrom(data, [nInputs], pa.dtype, o.mode ?? "low"), ops.log(pa));
      ind = toDtype(topK(g, nDraws)[1], defaultIntDType());
    }
    result = arr.ndim === 0 ? ind : take(arr, ind, ax);
  }
  return ops.reshape(result, arr.ndim === 0 ? s : [...arr.shape.slice(0, ax), ...s, ...arr.shape.slice(ax + 1)]);
}

/** jnp.searchsorted(c, r, side="left") for sorted 1-d c: the number of elements of c strictly below r. */
function searchsortedLeft(c: Array, r: Array): Array {
  const n = c.shape[0];
  const cb = ops.broadcastInDim(c, [...r.shape, n], [r.ndim]);
  const rb = ops.broadcastInDim(r, [...r.shape, n], [...r.shape.keys()]);
  return ops.reduceSum(toDtype(ops.lt(cb, rb), "int32"), [r.ndim]);
}

export interface CategoricalOptions {
  logits?: Param;
  axis?: number;
  shape?: ShapeArg | null;
  replace?: boolean;
  mode?: string | null;
}
/** random.categorical(key, logits, axis = -1, shape = batch shape, replace = true, mode = null): Gumbel-max sampling. */
export function categorical(
  key: KeyLike,
  logits?: Param | CategoricalOptions,
  axis?: number | CategoricalOptions,
  shape?: ShapeArg | null | CategoricalOptions,
  replace?: boolean | CategoricalOptions,
  mode?: string | null | CategoricalOptions,
  options?: CategoricalOptions,
): Array {
  const fn = "categorical";
  const { data } = checkKey(fn, key);
  const o = parseArgs(
    fn,
    [logits, axis, shape, replace, mode, options],
    ["logits", "axis", "shape", "replace", "mode"],
    {
      logits: undefined as Param | undefined,
      axis: -1,
      shape: null as ShapeArg | null,
      replace: true,
      mode: null as string | null,
    },
  );
  if (o.logits === undefined) throw new TypeError(`${fn}: missing required argument logits`);
  const lg = asArr(fn, o.logits);
  const ndim = lg.ndim;
  const ax = normalizeAxis(fn, o.axis, ndim);
  const batchShape = lg.shape.filter((_, i) => i !== ax);
  let s: number[];
  if (o.shape === null) s = batchShape;
  else {
    s = canonicalShape(fn, o.shape);
    checkShape(fn, s, batchShape);
  }
  const prefix = s.slice(0, s.length - batchShape.length);
  const d = floatDtype(fn, lg.dtype);
  const m = o.mode ?? "low";
  if (o.replace) {
    const logitsShape = s.slice(s.length - batchShape.length);
    logitsShape.splice(ax, 0, lg.shape[ax]);
    const g = gumbelFrom(data, [...prefix, ...logitsShape], d, m);
    const lgx = ops.reshape(lg, [...prefix.map(() => 1), ...lg.shape]);
    const z = jadd(g, lgx);
    return ops.argmax(z, prefix.length + ax, defaultIntDType());
  }
  const x = jadd(lg, gumbelFrom(data, lg.shape, d, m));
  const k = prod(prefix);
  if (k > lg.shape[ax])
    throw new Error(
      `${fn}: Number of samples without replacement (${k}) cannot exceed number of categories (${lg.shape[ax]}).`,
    );
  const [, idx] = topK(ops.moveaxis(x, ax, ndim - 1), k);
  // (batch..., k) -> (k, batch...) -> shape
  const moved = ops.moveaxis(idx, idx.ndim - 1, 0);
  return toDtype(ops.reshape(moved, s), defaultIntDType());
}

// ---------------------------------------------------------------- poisson
const anyTrue = (b: Array): Array => ops.reduceOr(b, [...b.shape.keys()]);
/** A loop counter bound that stands in for JAX's (unreachable) max_iters. */
const ITER_LIMIT = 2147483647;

function poissonKnuth(key: Array, lam: Array, shape: Shape, dtype: DType): Array {
  const negLam = ops.neg(lam);
  const [, k] = whileLoop<Array[]>(
    ([i, , , lp]) => ops.and(anyTrue(ops.gt(lp, negLam)), ops.lt(i, constant("int32", ITER_LIMIT))),
    ([i, k, rng, lp]) => {
      const [r, sub] = splitList(rng, 2);
      const k2 = ops.select(ops.gt(lp, negLam), ops.add(k, cst(k, 1)), k);
      const u = uniformFrom("poisson", sub, shape, "float32", 0, 1);
      return [ops.add(i, constant("int32", 1)), k2, r, ops.add(lp, ops.log(u))];
    },
    [constant("int32", 0), ops.full(shape, 0, dtype), key, ops.full(shape, 0, "float32")],
  );
  return toDtype(ops.sub(k, cst(k, 1)), dtype);
}

function poissonRejection(key: Array, lam: Array, shape: Shape, dtype: DType): Array {
  const c = (v: number) => cst(lam, v);
  const logLam = ops.log(lam);
  const b = ops.add(c(0.931), ops.mul(c(2.53), ops.sqrt(lam)));
  const a = ops.add(c(-0.059), ops.mul(c(0.02483), b));
  const invAlpha = ops.add(c(1.1239), ops.div(c(1.1328), ops.sub(b, c(3.4))));
  const vR = ops.sub(c(0.9277), ops.div(c(3.6224), ops.sub(b, c(2))));
  const [, kOut] = whileLoop<Array[]>(
    ([i, , accepted]) => ops.and(anyTrue(ops.not(accepted)), ops.lt(i, constant("int32", ITER_LIMIT))),
    ([i, kOut, accepted, k0]) => {
      const [k, s0, s1] = splitList(k0, 3);
      const u = ops.sub(uniformFrom("poisson", s0, shape, lam.dtype, 0, 1), c(0.5));
      const v = uniformFrom("poisson", s1, shape, lam.dtype, 0, 1);
      const us = ops.sub(c(0.5), ops.abs(u));
      const kk = ops.floor(ops.add(ops.add(ops.mul(ops.add(ops.div(ops.mul(c(2), a), us), b), u), lam), c(0.43)));
      const s = ops.log(ops.div(ops.mul(v, invAlpha), ops.add(ops.div(a, ops.mul(us, us)), b)));
      const t = ops.sub(ops.add(ops.neg(lam), ops.mul(kk, logLam)), ops.lgamma(ops.add(kk, c(1))));
      const accept1 = ops.and(ops.ge(us, c(0.07)), ops.le(v, vR));
      const reject = ops.or(ops.lt(kk, c(0)), ops.and(ops.lt(us, c(0.013)), ops.gt(v, us)));
      const accept = ops.or(accept1, ops.and(ops.not(reject), ops.le(s, t)));
      return [ops.add(i, constant("int32", 1)), ops.select(accept, kk, kOut), ops.or(accepted, accept), k];
    },
    [constant("int32", 0), ops.full(shape, -1, lam.dtype), ops.full(shape, false, "bool"), key],
  );
  return toDtype(kOut, dtype);
}

// ---------------------------------------------------------------- poisson, method='approximate'
const POISSON_SPLIT = 7.0;
const POISSON_NUM_TERMS = 20;
const PEIZER_PRATT_EPS = 0.02;

/** lax.special.ndtr: the standard normal CDF via erf / erfc. */
function ndtr(x: Array): Array {
  const c = (v: number) => cst(x, v);
  const halfSqrt2 = c(0.5 * Math.SQRT2);
  const w = ops.mul(x, halfSqrt2);
  const z = ops.abs(w);
  const y = ops.select(
    ops.lt(z, halfSqrt2),
    ops.add(c(1), ops.erf(w)),
    ops.select(ops.gt(w, c(0)), ops.sub(c(2), ops.erfc(z)), ops.erfc(z)),
  );
  return ops.mul(c(0.5), y);
}
/** Inverts the Poisson CDF truncated to POISSON_NUM_TERMS terms (counts of partial sums below u). */
function poissonCdfInversion(u: Array, lam: Array): Array {
  let pmf = ops.exp(ops.neg(lam));
  let cdf = pmf;
  let count = toDtype(jlt(cdf, u), u.dtype);
  for (let k = 1; k < POISSON_NUM_TERMS - 1; k++) {
    pmf = ops.mul(pmf, ops.div(lam, cst(lam, k)));
    cdf = ops.add(cdf, pmf);
    count = ops.add(count, toDtype(jlt(cdf, u), u.dtype));
  }
  return count;
}
function peizerPrattT(y: Array): Array {
  const c = (v: number) => cst(y, v);
  const d = ops.sub(y, c(1));
  const small = ops.lt(ops.abs(d), c(0.25));
  let series = ops.zerosLikeArray(d);
  for (let k = 9; k >= 1; k--) series = ops.mul(d, ops.add(c((2 * (-1) ** k) / ((k + 1) * (k + 2))), series));
  const ys = ops.select(small, ops.fullLike(y, 2), y),
    ds = ops.select(small, ops.fullLike(d, 1), d);
  const direct = ops.div(
    ops.add(ops.sub(c(1), ops.mul(ys, ys)), ops.mul(ops.mul(c(2), ys), ops.log(ys))),
    ops.mul(ds, ds),
  );
  return ops.select(small, series, direct);
}
function peizerPrattZ(x: Array, lam: Array): Array {
  const y = jdiv(jadd(x, 0.5), lam);
  const t = peizerPrattT(y);
  const lhs = jadd(jadd(jsub(x, lam), 2 / 3), jdiv(PEIZER_PRATT_EPS, jadd(x, 1)));
  return jmul(lhs, ops.sqrt(jdiv(jadd(1, t), lam)));
}
function poissonPeizerPratt(z: Array, lam: Array): Array {
  const s = ops.sqrt(lam);
  const z2 = ops.mul(z, z);
  const root = jadd(
    jadd(jsub(jadd(lam, jmul(s, z)), 2 / 3), ops.div(z2, cst(z2, 6))),
    jdiv(ops.mul(z, ops.sub(cst(z, 1), z2)), jmul(72, s)),
  );
  const x = jadd(root, 0.6);
  const c = ops.ceil(x);
  const zint = (cc: Array) => jwhere(ops.lt(cc, cst(cc, 0)), -Infinity, peizerPrattZ(ops.max(cc, cst(cc, 0)), lam));
  const rootGe = (cc: Array) => toDtype(jge(zint(cc), z), x.dtype);
  const out = ops.sub(ops.sub(ops.add(c, cst(c, 1)), rootGe(c)), rootGe(ops.sub(c, cst(c, 1))));
  return ops.max(out, cst(out, 0));
}
/** _poisson_approx: a normal draw mapped through an approximate inverse CDF (loop-free). */
function poissonApprox(data: Array, lam0: Array, shape: Shape, dtype: DType): Array {
  const cd: DType = (isFloat(lam0.dtype) && lam0.dtype === "float64") || dtype.endsWith("64") ? "float64" : "float32";
  const lam1 = toDtype(lam0, cd);
  const lam = ops.reshape(lam1, [...shape.slice(0, shape.length - lam1.ndim).map(() => 1), ...lam1.shape]);
  const z = normalFrom(data, shape, cd);
  const small = poissonCdfInversion(ndtr(z), lam);
  const large = poissonPeizerPratt(z, lam);
  return toDtype(jwhere(jlt(lam, POISSON_SPLIT), small, large), dtype);
}

export interface PoissonOptions {
  lam?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
  method?: "exact" | "approximate";
}
/** random.poisson(key, lam, shape = lam.shape, dtype = int): Knuth for lam < 10, Hörmann's transformed rejection otherwise. */
export function poisson(
  key: KeyLike,
  lam?: Param | PoissonOptions,
  shape?: ShapeArg | null | PoissonOptions,
  dtype?: DType | null | PoissonOptions,
  options?: PoissonOptions,
): Array {
  const fn = "poisson";
  const { data } = checkKey(fn, key);
  const o = parseArgs(
    fn,
    [lam, shape, dtype, options],
    ["lam", "shape", "dtype"],
    {
      lam: undefined as Param | undefined,
      shape: null as ShapeArg | null,
      dtype: null as DType | null,
      method: "exact",
    },
    ["method"],
  );
  if (o.lam === undefined) throw new TypeError(`${fn}: missing required argument lam`);
  if (o.method !== "exact" && o.method !== "approximate")
    throw new Error(
      `method argument to \`poisson\` must be one of {'exact', 'approximate'}, got ${JSON.stringify(o.method)}`,
    );
  const d = intDtype(fn, o.dtype);
  const la = asArr(fn, o.lam);
  const s = o.shape === null ? la.shape : canonicalShape(fn, o.shape);
  if (o.method === "approximate") {
    if (!shapesEqual(broadcastShapes(fn, la.shape, s), s))
      throw new Error(
        `${fn}: lam shape must be broadcastable to shape argument; got lam.shape ${shapeStr(la.shape)}, shape ${shapeStr(s)}`,
      );
    return poissonApprox(data, la, s, d);
  }
  // lam is broadcast and always sampled in float32 (even under x64)
  const l = toDtype(bcast(fn, la, s), "float32");
  const useKnuth = ops.or(ops.ne(l, l), ops.lt(l, cst(l, 10)));
  const lamKnuth = ops.select(useKnuth, l, ops.fullLike(l, 0));
  const lamRej = ops.select(useKnuth, ops.fullLike(l, 1e5), l);
  const result = ops.select(useKnuth, poissonKnuth(data, lamKnuth, s, d), poissonRejection(data, lamRej, s, d));
  return ops.select(ops.eq(l, cst(l, 0)), ops.fullLike(result, 0), result);
}

// ---------------------------------------------------------------- binomial / multinomial
const STIRLING_TAIL = [
  0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
  0.0138761288230707, 0.0118967099458917, 0.010411265261972, 0.00925546218271273, 0.00833056343336287,
];
/** _stirling_approx_tail: tabulated for k <= 9, else 1/12 - (1/360 - 1/1260/(k+1)^2)/(k+1)^2 over (k+1). */
function stirlingTail(k: Array): Array {
  const table = new ArrayImpl(new ShapedArray([10], k.dtype, false), fromNumbers(STIRLING_TAIL, k.dtype));
  const useTable = ops.le(k, cst(k, 9));
  const kc = ops.min(ops.max(k, cst(k, 0)), cst(k, 9)); // lax.clamp(0, k, 9)
  const kp1 = ops.add(kc, cst(k, 1));
  const kp1sq = ops.mul(kp1, kp1);
  const approx = ops.div(
    ops.sub(cst(k, 1 / 12), ops.div(ops.sub(cst(k, 1 / 360), ops.div(cst(k, 1 / 1260), kp1sq)), kp1sq)),
    kp1,
  );
  const idx = ops.reshape(toDtype(ops.floor(kc), "int32"), [...k.shape, 1]);
  return ops.select(useTable, ops.gather(table, idx, [0], "clip"), approx);
}

function binomialInversion(key: Array, count: Array, prob: Array, shape: Shape, dtype: DType): Array {
  const log1mp = ops.log1p(ops.neg(prob));
  const [, k] = whileLoop<Array[]>(
    ([i, , gs]) => ops.and(anyTrue(ops.le(gs, count)), ops.lt(i, constant("int32", ITER_LIMIT))),
    ([i, ng, gs, k0]) => {
      const [sub, k] = splitList(k0, 2); // note: the subkey is the first half here, as in JAX
      const ng2 = ops.select(ops.le(gs, count), ops.add(ng, cst(ng, 1)), ng);
      const u = uniformFrom("binomial", sub, shape, prob.dtype, 0, 1);
      const geom = ops.ceil(ops.div(ops.log(u), log1mp));
      return [ops.add(i, constant("int32", 1)), ng2, ops.add(gs, geom), k];
    },
    [constant("int32", 0), ops.full(shape, 0, prob.dtype), ops.full(shape, 0, prob.dtype), key],
  );
  return toDtype(ops.sub(k, cst(k, 1)), dtype);
}

function binomialBtrs(key: Array, count: Array, prob: Array, shape: Shape, dtype: DType): Array {
  const c = (v: number) => cst(prob, v);
  const stddev = ops.sqrt(ops.mul(ops.mul(count, prob), ops.sub(c(1), prob)));
  const b = ops.add(c(1.15), ops.mul(c(2.53), stddev));
  const a = ops.add(ops.add(c(-0.0873), ops.mul(c(0.0248), b)), ops.mul(c(0.01), prob));
  const cc = ops.add(ops.mul(count, prob), c(0.5));
  const vR = ops.sub(c(0.92), ops.div(c(4.2), b));
  const r = ops.div(prob, ops.sub(c(1), prob));
  const alpha = ops.mul(ops.add(c(2.83), ops.div(c(5.1), b)), stddev);
  const m = ops.floor(ops.mul(ops.add(count, c(1)), prob));
  const [, kOut] = whileLoop<Array[]>(
    ([i, , accepted]) => ops.and(anyTrue(ops.not(accepted)), ops.lt(i, constant("int32", ITER_LIMIT))),
    ([i, kOut, accepted, k0]) => {
      const [k, s0, s1] = splitList(k0, 3);
      const u0 = uniformFrom("binomial", s0, shape, prob.dtype, 0, 1);
      let v = uniformFrom("binomial", s1, shape, prob.dtype, 0, 1);
      const u = ops.sub(u0, c(0.5));
      const us = ops.sub(c(0.5), ops.abs(u));
      const accept1 = ops.and(ops.ge(us, c(0.07)), ops.le(v, vR));
      const kk = ops.floor(ops.add(ops.mul(ops.add(ops.div(ops.mul(c(2), a), us), b), u), cc));
      const reject = ops.or(ops.lt(kk, c(0)), ops.gt(kk, count));
      v = ops.log(ops.div(ops.mul(v, alpha), ops.add(ops.div(a, ops.mul(us, us)), b)));
      const cm1 = ops.add(ops.sub(count, m), c(1)),
        ck1 = ops.add(ops.sub(count, kk), c(1));
      const ub = ops.sub(
        ops.sub(
          ops.add(
            ops.add(
              ops.add(
                ops.add(
                  ops.mul(ops.add(m, c(0.5)), ops.log(ops.div(ops.add(m, c(1)), ops.mul(r, cm1)))),
                  ops.mul(ops.add(count, c(1)), ops.log(ops.div(cm1, ck1))),
                ),
                ops.mul(ops.add(kk, c(0.5)), ops.log(ops.div(ops.mul(r, ck1), ops.add(kk, c(1))))),
              ),
              stirlingTail(m),
            ),
            stirlingTail(ops.sub(count, m)),
          ),
          stirlingTail(kk),
        ),
        stirlingTail(ops.sub(count, kk)),
      );
      const accept = ops.or(accept1, ops.and(ops.not(reject), ops.le(v, ub)));
      return [ops.add(i, constant("int32", 1)), ops.select(accept, kk, kOut), ops.or(accepted, accept), k];
    },
    [constant("int32", 0), ops.full(shape, -1, prob.dtype), ops.full(shape, false, "bool"), key],
  );
  return toDtype(kOut, dtype);
}

function binomialFrom(fn: string, data: Array, n: Array, p: Array, shape: Shape | null, dtype: DType): Array {
  const s = shape === null ? broadcastShapes(fn, n.shape, p.shape) : shape;
  if (shape !== null) checkShape(fn, s, n.shape, p.shape);
  let prob = isFloat(p.dtype) ? ops.convert(p, p.dtype, false) : toDtype(p, floatDtype(fn, null));
  let count = bcast(fn, toDtype(n, prob.dtype), s);
  prob = bcast(fn, prob, s);
  const c = (v: number) => cst(prob, v);
  const pLtHalf = ops.lt(prob, c(0.5));
  let q = ops.select(pLtHalf, prob, ops.sub(c(1), prob));
  const countNanOrNeg = ops.or(ops.ne(count, count), ops.lt(count, c(0)));
  const countInf = ops.eq(ops.abs(count), c(Infinity));
  const qIsNan = ops.ne(q, q),
    qL0 = ops.lt(q, c(0));
  q = ops.select(ops.or(qIsNan, qL0), ops.fullLike(q, 0.01), q);
  const useInversion = ops.or(countNanOrNeg, ops.le(ops.mul(count, q), c(10)));
  count = ops.floor(count);
  const countInv = ops.select(useInversion, count, ops.fullLike(count, 0));
  const countBtrs = ops.select(useInversion, ops.fullLike(count, 1e4), count);
  const qBtrs = ops.select(useInversion, ops.fullLike(q, 0.5), q);
  let samples = ops.select(
    useInversion,
    binomialInversion(data, countInv, q, s, dtype),
    binomialBtrs(data, countBtrs, qBtrs, s, dtype),
  );
  const invalid = ops.or(ops.or(qL0, qIsNan), countNanOrNeg);
  samples = ops.select(invalid, ops.fullLike(samples, NaN), samples);
  samples = ops.select(ops.and(countInf, ops.not(invalid)), ops.fullLike(samples, Infinity), samples);
  const keep = ops.or(ops.or(ops.or(pLtHalf, countNanOrNeg), qIsNan), countInf);
  return ops.select(keep, samples, ops.sub(toDtype(count, dtype), samples));
}

export interface BinomialOptions {
  n?: Param;
  p?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
}
/** random.binomial(key, n, p, shape = broadcast(n, p), dtype = float): inversion for n*q <= 10, BTRS otherwise. */
export function binomial(
  key: KeyLike,
  n?: Param | BinomialOptions,
  p?: Param | BinomialOptions,
  shape?: ShapeArg | null | BinomialOptions,
  dtype?: DType | null | BinomialOptions,
  options?: BinomialOptions,
): Array {
  const fn = "binomial";
  const { data } = checkKey(fn, key);
  const o = parseArgs(fn, [n, p, shape, dtype, options], ["n", "p", "shape", "dtype"], {
    n: undefined as Param | undefined,
    p: undefined as Param | undefined,
    shape: null as ShapeArg | null,
    dtype: null as DType | null,
  });
  if (o.n === undefined || o.p === undefined) throw new TypeError(`${fn}: missing required arguments n, p`);
  const d = floatDtype(fn, o.dtype);
  return binomialFrom(
    fn,
    data,
    asArr(fn, o.n),
    asArr(fn, o.p),
    o.shape === null ? null : canonicalShape(fn, o.shape),
    d,
  );
}

export interface MultinomialOptions {
  n?: Param;
  p?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
  unroll?: number | boolean;
}
/** random.multinomial(key, n, p, shape = p.shape, dtype = float): counts over the last axis of p (a scan of binomials). */
export function multinomial(
  key: KeyLike,
  n?: Param | MultinomialOptions,
  p?: Param | MultinomialOptions,
  options?: MultinomialOptions,
): Array {
  const fn = "multinomial";
  const { data } = checkKey(fn, key);
  const o = parseArgs(
    fn,
    [n, p, options],
    ["n", "p"],
    {
      n: undefined as Param | undefined,
      p: undefined as Param | undefined,
      shape: null as ShapeArg | null,
      dtype: null as DType | null,
      unroll: 1 as number | boolean,
    },
    ["shape", "dtype", "unroll"],
  );
  if (o.n === undefined || o.p === undefined) throw new TypeError(`${fn}: missing required arguments n, p`);
  const d = floatDtype(fn, o.dtype);
  let na = asArr(fn, o.n),
    pa = asArr(fn, o.p);
  const fd =
    isFloat(pa.dtype) || isFloat(na.dtype)
      ? pa.weakType && !na.weakType && isFloat(na.dtype)
        ? na.dtype
        : isFloat(pa.dtype)
          ? pa.dtype
          : na.dtype
      : floatDtype(fn, null);
  na = toDtype(na, fd);
  pa = toDtype(pa, fd);
  const s = o.shape === null ? pa.shape : canonicalShape(fn, o.shape);
  na = bcast(fn, na, s.slice(0, -1));
  pa = bcast(fn, pa, s);
  const pm = ops.moveaxis(pa, pa.ndim - 1, 0);
  const remaining = ops.cumulative("cumsum", pm, 0, true);
  const ratios = jdiv(pm, ops.select(ops.eq(remaining, cst(remaining, 0)), ops.fullLike(remaining, 1), remaining));
  const k = ratios.shape[0];
  const keys = splitList(data, k);
  let remainder = na;
  const counts: Array[] = [];
  for (let i = 0; i < k; i++) {
    const ratio = index0(ratios, i);
    const clipped = ops.min(ops.max(ratio, cst(ratio, 0)), cst(ratio, 1));
    const count = binomialFrom(fn, keys[i], remainder, clipped, null, remainder.dtype);
    remainder = ops.sub(remainder, count);
    counts.push(count);
  }
  const stacked = ops.concatenate(
    counts.map((c) => ops.reshape(c, [1, ...c.shape])),
    0,
  );
  return toDtype(ops.moveaxis(stacked, 0, stacked.ndim - 1), d);
}
