/**
 * @file jax.scipy.stats.gaussian_kde (gaussianKde / GaussianKde): a Gaussian kernel density estimate of d-dimensional
 * data with Scott's, Silverman's or a given bandwidth factor and optional weights; evaluate / pdf / logpdf and the
 * closed-form integrals (integrateBox1d, integrateGaussian, integrateKde), and resample (draws from the estimate).
 */
import type { Array } from "../core/array.js";
import { defaultFloatDType, isComplex, isInexact } from "../core/dtype.js";
import { shapeStr } from "../core/shape.js";
import { asArrayArg, promoteDtypes } from "../numpy/core.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import { inv } from "../numpy/linalg.js";
import { logsumexp } from "../numpy/reductions.js";
import { cov as jnpCov } from "../numpy/statistics.js";
import { cholesky } from "../lax/linalg.js";
import { take } from "../numpy/indexing-funcs.js";
import { split, type KeyLike } from "../random/keys.js";
import { choice } from "../random/discrete.js";
import { multivariateNormal } from "../random/linalg-samplers.js";
import * as P from "../primitives/linalg.js";
import { registerNode } from "../core/tree.js";
import { type ArrayInput, c, ops, promote } from "./stats-util.js";
import { ndtr } from "./special.js";

const FN = "scipy.stats.gaussianKde";
/** The bandwidth: "scott" (default), "silverman", a number, or a function of the estimate returning the factor. */
export type BwMethod = "scott" | "silverman" | number | ((kde: GaussianKde) => Array | number);
export interface GaussianKdeOptions {
  bwMethod: BwMethod | null;
  weights: ArrayInput | null;
}
const LOG2PI = Math.log(2 * Math.PI);
const sumLast = (x: Array): Array => ops.reduceSum(x, [x.ndim - 1]);
/** z = L^-1 v for the columns v of (d, k) with L lower triangular (d, d). */
const whiten = (L: Array, v: Array): Array => P.triangularSolve(L, v, { leftSide: true, lower: true });
/** Squared distances between the columns of a (d, m) and b (d, n): (m, n), by explicit differences (no cancellation). */
function sqDist(a: Array, b: Array): Array {
  const [d, m] = a.shape,
    n = b.shape[1];
  const at = ops.broadcastInDim(ops.transpose(a, [1, 0]), [m, n, d], [0, 2]);
  const bt = ops.broadcastInDim(ops.transpose(b, [1, 0]), [m, n, d], [1, 2]);
  const diff = ops.sub(at, bt);
  return sumLast(ops.mul(diff, diff));
}

/** The data and the weights promoted to one inexact dtype (the dataset's shape kept); the weights 1-D of length n, summing to 1. */
function normalizedWeights(data: Array, weights: ArrayInput, n: number): [Array, Array] {
  const w0 = asArrayArg(FN, weights);
  if (w0.ndim > 1) throw new Error(`${FN}: weights must be one-dimensional, got shape ${shapeStr(w0.shape)}`);
  if (w0.size !== n) throw new Error(`${FN}: weights must have length n = ${n}, got ${w0.size}`);
  const [x, w] = promoteDtypes(FN, [data, ops.reshape(w0, [n])]).map((a) =>
    isInexact(a.dtype) ? a : ops.convert(a, defaultFloatDType(), a.weakType),
  );
  return [x, ops.div(w, ops.reduceSum(w, [0]))];
}

/** A Gaussian kernel density estimate (construct with gaussianKde or new GaussianKde). */
export class GaussianKde {
  /** The data, (d, n), in an inexact dtype. */
  readonly dataset: Array;
  /** The normalized weights, (n,). */
  readonly weights: Array;
  /** The effective number of points, 1 / sum(weights^2). */
  readonly neff: Array;
  /** The bandwidth factor multiplying the data covariance's square root. */
  readonly factor: Array;
  /** The kernel covariance: the weighted data covariance times factor^2, (d, d). */
  readonly covariance: Array;
  /** Its inverse, (d, d). */
  readonly invCov: Array;

  constructor(
    dataset: ArrayInput,
    ...args: Args<[bwMethod: BwMethod | null, weights: ArrayInput | null], Partial<GaussianKdeOptions>>
  ) {
    const o = parseArgs<GaussianKdeOptions>(FN, args, ["bwMethod", "weights"]);
    let data = asArrayArg(FN, dataset);
    if (isComplex(data.dtype)) throw new Error(`${FN}: complex data is not supported, got ${data.dtype}`);
    if (data.size <= 1)
      throw new Error(`${FN}: the dataset should have multiple elements, got shape ${shapeStr(data.shape)}`);
    if (data.ndim > 2) throw new Error(`${FN}: the dataset must be 1-D or (d, n), got shape ${shapeStr(data.shape)}`);
    if (data.ndim < 2) data = ops.reshape(data, [1, data.size]);
    const [d, n] = data.shape;
    let w: Array;
    if (o.weights !== undefined && o.weights !== null) [data, w] = normalizedWeights(data, o.weights, n);
    else {
      [data] = promote("gaussianKde", data);
      w = ops.full([n], 1 / n, data.dtype);
    }
    this.dataset = data;
    this.weights = w;
    this.neff = ops.div(c(w, 1), ops.reduceSum(ops.mul(w, w), [0]));
    const bw = o.bwMethod ?? "scott";
    let factor: Array;
    if (bw === "scott") factor = ops.pow(this.neff, c(this.neff, -1 / (d + 4)));
    else if (bw === "silverman")
      factor = ops.pow(ops.mul(this.neff, c(this.neff, (d + 2) / 4)), c(this.neff, -1 / (d + 4)));
    else if (typeof bw === "number") factor = ops.full([], bw, data.dtype);
    else if (typeof bw === "function") {
      const r = bw(this);
      factor = typeof r === "number" ? ops.full([], r, data.dtype) : ops.convert(r, data.dtype);
    } else throw new Error(`${FN}: bwMethod should be 'scott', 'silverman', a number or a function, got ${String(bw)}`);
    this.factor = factor;
    const dataCov = ops.reshape(jnpCov(data, { rowvar: true, bias: false, aweights: w }), [d, d]);
    const f2 = ops.mul(factor, factor);
    this.covariance = ops.mul(dataCov, f2);
    this.invCov = ops.div(inv(dataCov), f2);
  }
  /** The dimension d. */
  get d(): number {
    return this.dataset.shape[0];
  }
  /** The number of points n. */
  get n(): number {
    return this.dataset.shape[1];
  }
  /** Points as (d, m): 1-D points are m scalars when d = 1, or one d-vector. */
  private points(x: ArrayInput, fn: string): Array {
    let p = promote(`gaussianKde.${fn}`, x, ops.full([], 0, this.dataset.dtype))[0];
    if (isComplex(p.dtype)) throw new Error(`${FN}.${fn}: complex points are not supported`);
    if (p.ndim === 0) p = ops.reshape(p, [1, 1]);
    else if (p.ndim === 1) p = ops.reshape(p, this.d === 1 ? [1, p.size] : [p.size, 1]);
    if (p.shape[0] !== this.d)
      throw new Error(`${FN}.${fn}: points have dimension ${p.shape[0]}, the dataset has dimension ${this.d}`);
    return ops.convert(p, this.dataset.dtype);
  }
  /** log of the estimate at points: logsumexp_j(log w_j - |L^T (x - x_j)|^2 / 2) + log det(L) - d log(2 pi)/2, L L^T = invCov. */
  logpdf(x: ArrayInput): Array {
    return this.logDensity(this.points(x, "logpdf"));
  }
  private logDensity(p: Array): Array {
    const L = cholesky(this.invCov);
    const Lt = ops.transpose(L, [1, 0]);
    const q = sqDist(
      ops.dotGeneral(Lt, p, [
        [[1], [0]],
        [[], []],
      ]),
      ops.dotGeneral(Lt, this.dataset, [
        [[1], [0]],
        [[], []],
      ]),
    );
    const lw = ops.broadcastInDim(ops.log(this.weights), q.shape, [1]);
    const logNorm = ops.sub(ops.reduceSum(ops.log(P.diagPart(L)), [0]), c(q, (this.d / 2) * LOG2PI));
    return ops.add(logsumexp(ops.add(ops.mul(q, c(q, -0.5)), lw), 1) as Array, logNorm);
  }
  /** The estimated density at points: shape (m,). */
  evaluate(x: ArrayInput): Array {
    return ops.exp(this.logDensity(this.points(x, "evaluate")));
  }
  /** The estimated density at points (evaluate). */
  pdf(x: ArrayInput): Array {
    return ops.exp(this.logDensity(this.points(x, "pdf")));
  }
  /** The mass on [low, high] of a 1-D estimate: sum_j w_j (ndtr((high - x_j)/s) - ndtr((low - x_j)/s)). */
  integrateBox1d(low: ArrayInput, high: ArrayInput): Array {
    if (this.d !== 1) throw new Error(`${FN}.integrateBox1d: only 1-D estimates, this one has d = ${this.d}`);
    const [lo, hi] = promote("gaussianKde.integrateBox1d", low, high);
    if (lo.ndim !== 0)
      throw new Error(`${FN}.integrateBox1d: the limits must be scalars, got shape ${shapeStr(lo.shape)}`);
    const s = ops.sqrt(ops.reshape(this.covariance, []));
    const x = ops.reshape(this.dataset, [this.n]);
    const z = (v: Array): Array => ndtr(ops.div(ops.sub(ops.convert(v, x.dtype), x), s));
    return ops.reduceSum(ops.mul(this.weights, ops.sub(z(hi), z(lo))), [0]);
  }
  /** The integral of the estimate times the normal density N(mean, cov). */
  integrateGaussian(mean: ArrayInput, cov: ArrayInput): Array {
    const d = this.d;
    const m0 = asArrayArg(FN, mean);
    const m = ops.reshape(ops.convert(m0, this.dataset.dtype), [m0.size]);
    const cv = ops.convert(asArrayArg(FN, cov), this.dataset.dtype);
    if (m.size !== d) throw new Error(`${FN}.integrateGaussian: mean does not have dimension ${d}`);
    if (cv.size !== d * d) throw new Error(`${FN}.integrateGaussian: cov does not have dimension (${d}, ${d})`);
    return this.convolve(
      ops.add(this.covariance, ops.reshape(cv, [d, d])),
      ops.reshape(m, [d, 1]),
      ops.full([1], 1, m.dtype),
      this,
    );
  }
  /** The integral of the product of two estimates of the same dimension. */
  integrateKde(other: GaussianKde): Array {
    if (other.d !== this.d)
      throw new Error(`${FN}.integrateKde: the estimates have dimensions ${this.d} and ${other.d}`);
    return this.convolve(ops.add(this.covariance, other.covariance), other.dataset, other.weights, this);
  }
  /**
   * resample(key, shape = []): draws from the estimate, (d, ...shape) for a shape of length <= 1, as JAX: the key is
   * split in two; column indices are chosen by weight (random.choice with p = weights), the kernel noise is
   * multivariateNormal(0, covariance) of shape (...shape, d), transposed (all axes reversed, as JAX's `.T`), added to
   * the chosen columns. Like JAX, a shape of two or more axes adds the noise with its batch axes reversed.
   */
  resample(key: KeyLike, shape: number | readonly number[] = []): Array {
    const fn = `${FN}.resample`;
    const sh = typeof shape === "number" ? [shape] : [...shape];
    for (const s of sh)
      if (!Number.isInteger(s) || s < 0)
        throw new Error(`${fn}: shape must hold non-negative integers, got [${sh.join(", ")}]`);
    const [indKey, epsKey] = split(key) as unknown as Array[];
    const ind = choice(indKey, this.n, sh, true, this.weights);
    const eps = multivariateNormal(
      epsKey,
      ops.full([this.d], 0, this.covariance.dtype),
      this.covariance,
      sh,
      this.dataset.dtype,
    );
    const epsT = ops.transpose(
      eps,
      eps.shape.map((_, i) => eps.ndim - 1 - i),
    );
    return ops.add(take(this.dataset, ind, { axis: 1 }), epsT);
  }
  /** sum_ij wa_i wb_j N(a_i - b_j; 0, C) for the columns of a (self's data) and b. */
  private convolve(C: Array, b: Array, wb: Array, a: GaussianKde): Array {
    const L = cholesky(C);
    const q = sqDist(whiten(L, a.dataset), whiten(L, b));
    const logNorm = ops.neg(ops.add(ops.reduceSum(ops.log(P.diagPart(L)), [0]), c(q, (this.d / 2) * LOG2PI)));
    const w = ops.mul(ops.broadcastInDim(a.weights, q.shape, [0]), ops.broadcastInDim(wb, q.shape, [1]));
    return ops.reduceSum(ops.mul(w, ops.exp(ops.add(ops.mul(q, c(q, -0.5)), logNorm))), [0, 1]);
  }
}

// a pytree, as JAX's: its arrays are the leaves, so an estimate passes through jit / vmap / grad as an argument
registerNode(GaussianKde as unknown as abstract new () => GaussianKde, {
  flatten: (k) => [[k.neff, k.dataset, k.weights, k.factor, k.covariance, k.invCov], null],
  unflatten: (_aux, children) => {
    const [neff, dataset, weights, factor, covariance, invCov] = children as Array[];
    return Object.assign(Object.create(GaussianKde.prototype) as GaussianKde, {
      neff,
      dataset,
      weights,
      factor,
      covariance,
      invCov,
    });
  },
});

/** gaussian_kde(dataset, bwMethod="scott", weights=null), also as a trailing options object { bwMethod, weights }. */
export function gaussianKde(
  dataset: ArrayInput,
  ...args: Args<[bwMethod: BwMethod | null, weights: ArrayInput | null], Partial<GaussianKdeOptions>>
): GaussianKde {
  return new GaussianKde(dataset, ...args);
}
