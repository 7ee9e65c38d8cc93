/** @file Samplers built on linear algebra: multivariateNormal (cholesky / eigh / svd factor of the covariance) and orthogonal (QR of a normal matrix, Haar measure). */
import type { Array } from "../core/array.js";
import { type DType, defaultFloatDType, isComplex, isFloat, promoteTypes } from "../core/dtype.js";
import { broadcastShapes, shapeStr } from "../core/shape.js";
import { promoteDtypes } from "../numpy/core.js";
import * as L from "../primitives/linalg.js";
import * as ops from "../primitives/ops.js";
import { type KeyLike, checkKey } from "./keys.js";
import { jadd } from "./jnp-lite.js";
import { normal, normalFrom } from "./samplers.js";
import {
  type Param,
  type ShapeArg,
  bcast,
  canonicalShape,
  checkShape,
  floatDtype,
  parseArgs,
  toDtype,
  userDtype,
} from "./util.js";

/** (x + x^T) / 2 over the last two axes (JAX symmetrizes cholesky/eigh inputs). */
const symmetrize = (x: Array): Array => ops.div(ops.add(x, L.mT(x)), ops.scalarLike(x, 2));

export interface MultivariateNormalOptions {
  mean?: Param;
  cov?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
  method?: "cholesky" | "eigh" | "svd";
}
/**
 * random.multivariateNormal(key, mean, cov, shape = broadcast batch, dtype = mean's dtype, method = "cholesky"):
 * mean + factor @ z with z standard normal of shape (*shape, n).
 */
export function multivariateNormal(
  key: KeyLike,
  mean?: Param | MultivariateNormalOptions,
  cov?: Param | MultivariateNormalOptions,
  shape?: ShapeArg | null | MultivariateNormalOptions,
  dtype?: DType | null | MultivariateNormalOptions,
  method?: string | MultivariateNormalOptions,
  options?: MultivariateNormalOptions,
): Array {
  const fn = "multivariateNormal";
  const { data } = checkKey(fn, key);
  const o = parseArgs(fn, [mean, cov, shape, dtype, method, options], ["mean", "cov", "shape", "dtype", "method"], {
    mean: undefined as Param | undefined,
    cov: undefined as Param | undefined,
    shape: null as ShapeArg | null,
    dtype: null as DType | null,
    method: "cholesky" as string,
  });
  if (o.mean === undefined || o.cov === undefined) throw new TypeError(`${fn}: missing required arguments mean, cov`);
  let [mu, sigma] = promoteDtypes(fn, [o.mean as never, o.cov as never]);
  if (!isFloat(mu.dtype)) {
    mu = toDtype(mu, defaultFloatDType());
    sigma = toDtype(sigma, defaultFloatDType());
  }
  if (mu.weakType) {
    mu = ops.convert(mu, mu.dtype, false);
    sigma = ops.convert(sigma, sigma.dtype, false);
  }
  if (!["svd", "eigh", "cholesky"].includes(o.method))
    throw new Error(`${fn}: method must be one of {'svd', 'eigh', 'cholesky'}, got ${JSON.stringify(o.method)}`);
  const d = o.dtype === null ? mu.dtype : floatDtype(fn, o.dtype);
  if (mu.ndim < 1) throw new Error(`multivariate_normal requires mean.ndim >= 1, got mean.ndim == ${mu.ndim}`);
  if (sigma.ndim < 2) throw new Error(`multivariate_normal requires cov.ndim >= 2, got cov.ndim == ${sigma.ndim}`);
  const n = mu.shape[mu.ndim - 1];
  if (sigma.shape[sigma.ndim - 1] !== n || sigma.shape[sigma.ndim - 2] !== n) {
    throw new Error(
      `multivariate_normal requires cov.shape == (..., n, n) for n=${n}, but got cov.shape == ${shapeStr(sigma.shape)}.`,
    );
  }
  const mb = mu.shape.slice(0, -1),
    cb = sigma.shape.slice(0, -2);
  let s: number[];
  if (o.shape === null) s = broadcastShapes(fn, mb, cb);
  else {
    s = canonicalShape(fn, o.shape);
    checkShape("normal", s, mb, cb);
  }
  let factor: Array;
  if (o.method === "svd") {
    const [sv, u] = L.svd(sigma, true, true);
    factor = ops.mul(u, ops.broadcastInDim(ops.sqrt(sv), u.shape, [...cb.keys(), u.ndim - 1]));
  } else if (o.method === "eigh") {
    const [v, w] = L.eigh(symmetrize(sigma), true, true);
    factor = ops.mul(v, ops.broadcastInDim(ops.sqrt(w), v.shape, [...cb.keys(), v.ndim - 1]));
  } else {
    factor = L.cholesky(symmetrize(sigma));
  }
  const z = normalFrom(data, [...s, n], d);
  // einsum('...ij,...j->...i', factor, z) as a batched dot over the sample's batch shape
  const rd = promoteTypes({ dtype: factor.dtype, weakType: false }, { dtype: z.dtype, weakType: false }).dtype;
  const fb = bcast(fn, toDtype(factor, rd), [...s, n, n]);
  const nb = s.length;
  const batch = [...globalThis.Array(nb).keys()];
  const prodz = ops.dotGeneral(fb, toDtype(z, rd), [
    [[nb + 1], [nb]],
    [batch, batch],
  ]);
  return jadd(mu, prodz);
}

export interface OrthogonalOptions {
  n?: number;
  shape?: ShapeArg;
  dtype?: DType;
  m?: number | null;
}
/** random.orthogonal(key, n, shape = [], dtype = float, m = n): Haar-random (semi-)orthogonal matrices of shape (*shape, n, m). */
export function orthogonal(
  key: KeyLike,
  n?: number | OrthogonalOptions,
  shape?: ShapeArg | OrthogonalOptions,
  dtype?: DType | null | OrthogonalOptions,
  m?: number | null | OrthogonalOptions,
  options?: OrthogonalOptions,
): Array {
  const fn = "orthogonal";
  const { data } = checkKey(fn, key);
  const o = parseArgs(fn, [n, shape, dtype, m, options], ["n", "shape", "dtype", "m"], {
    n: undefined as number | undefined,
    shape: [] as ShapeArg,
    dtype: null as DType | null,
    m: null as number | null,
  });
  if (o.n === undefined || !Number.isInteger(o.n) || o.n < 0)
    throw new TypeError(`${fn}: n must be a non-negative integer, got ${String(o.n)}`);
  const mm = o.m ?? o.n;
  if (!Number.isInteger(mm) || mm < 0)
    throw new TypeError(`${fn}: m must be a non-negative integer, got ${String(o.m)}`);
  const s = canonicalShape(fn, o.shape);
  const d = userDtype(fn, o.dtype, defaultFloatDType());
  if (!isFloat(d) && !isComplex(d))
    throw new TypeError(`dtype argument to \`${fn}\` must be a float or complex dtype, got ${d}`);
  const zShape = [...s, Math.max(o.n, mm), Math.min(o.n, mm)];
  // complex: JAX's complex normal (independent real and imaginary parts of variance 1/2), then a unitary Q
  const z = isComplex(d) ? normal(key, zShape, d) : normalFrom(data, zShape, d);
  const [q, r] = L.qr(z, false);
  // sign(d) = d / |d|: makes R's diagonal positive (a phase for complex), so Q is Haar-distributed
  const sgn = ops.sign(L.diagPart(r));
  const x = ops.mul(q, ops.broadcastInDim(sgn, q.shape, [...s.keys(), q.ndim - 1]));
  return o.n < mm ? L.mT(x) : x;
}
