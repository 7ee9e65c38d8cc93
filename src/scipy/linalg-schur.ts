/** @file jax.scipy.linalg's Schur family: schur, hessenberg, rsf2csf, sqrtm (Björck-Hammarling) and funm (Parlett). */
import type { Array, ArrayLike, NestedValue } from "../core/array.js";
import { complexDType, finfo, isComplex, realDType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { mH } from "../primitives/linalg.js";
import {
  hessenberg as hessPrim,
  rsf2csf as rsf2csfPrim,
  schur as schurPrim,
  triuFunction,
} from "../primitives/schur.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import { shapeStr } from "../numpy/struct-util.js";
import * as jnp from "../numpy/index.js";
import { squareArg } from "./linalg-matrix.js";

type AL = ArrayLike | NestedValue;

const toComplex = (x: Array): Array => (isComplex(x.dtype) ? x : ops.convert(x, complexDType(x.dtype)));
interface SchurOpts {
  output: "real" | "complex";
}
/**
 * scipy.linalg.schur(a, output="real"): `[T, Z]` with a = Z T Z^H. "real" gives the real Schur form of real a
 * (standardized 2x2 blocks for complex pairs); "complex" (or complex a) an upper-triangular complex T.
 */
export function schur(a: AL, ...args: Args<[output: string], Partial<SchurOpts>>): [Array, Array] {
  const fn = "scipy.linalg.schur";
  const o = parseArgs<SchurOpts>(fn, args, ["output"]);
  const output = o.output ?? "real";
  if (output !== "real" && output !== "complex")
    throw new Error(`${fn}: output must be "real" or "complex", got ${JSON.stringify(output)}`);
  const x = squareArg(fn, a);
  const [t, z] = schurPrim(output === "complex" ? toComplex(x) : x, true);
  return [t, z];
}
interface HessOpts {
  calcQ: boolean;
  overwriteA: boolean;
  checkFinite: boolean;
}
/** scipy.linalg.hessenberg(a, calc_q=false): H (upper Hessenberg, a = Q H Q^H) or `[H, Q]` with calcQ. */
export function hessenberg(a: AL, ...args: Args<[calcQ: boolean], Partial<HessOpts>>): Array | [Array, Array] {
  const fn = "scipy.linalg.hessenberg";
  const o = parseArgs<HessOpts>(fn, args, ["calcQ"], ["overwriteA", "checkFinite"]);
  const [h, q] = hessPrim(squareArg(fn, a));
  return o.calcQ ? [h, q] : h;
}

/**
 * scipy.linalg.rsf2csf(T, Z): the complex Schur pair from a real one (T real quasi-triangular, Z orthogonal): each 2x2
 * block is triangularized by a unitary rotation. Batched too; T and Z must share shape.
 */
export function rsf2csf(
  T: AL,
  Z: AL,
  ...args: Args<[checkFinite: boolean], { checkFinite?: boolean }>
): [Array, Array] {
  const fn = "scipy.linalg.rsf2csf";
  parseArgs(fn, args, ["checkFinite"]);
  const t = squareArg(fn, T),
    z = squareArg(fn, Z);
  if (isComplex(t.dtype) || isComplex(z.dtype))
    throw new Error(`${fn}: T and Z must be real (a real Schur pair), got ${t.dtype} and ${z.dtype}`);
  if (t.shape.join() !== z.shape.join())
    throw new Error(`${fn}: T and Z must have the same shape, got ${shapeStr(t.shape)} and ${shapeStr(z.shape)}`);
  const dt = t.dtype === "float64" || z.dtype === "float64" ? "float64" : "float32";
  const [tc, zc] = rsf2csfPrim(ops.convert(t, dt), ops.convert(z, dt));
  return [tc, zc];
}

/** T's diagonal [..., n]. */
const diagOf = (t: Array): Array => jnp.diagonal(t, 0, -2, -1);
/** Z F Z^H. */
const back = (z: Array, f: Array): Array => jnp.matmul(jnp.matmul(z, f), mH(z));

/**
 * scipy.linalg.sqrtm(A, blocksize=1) as JAX's: complex Schur A = Z T Z^H, the upper-triangular root R of T by the
 * Björck-Hammarling recurrence, then Z R Z^H. The result is complex (as JAX), also for real A; principal branch.
 */
export function sqrtm(A: AL, ...args: Args<[blocksize: number], { blocksize?: number }>): Array {
  const fn = "scipy.linalg.sqrtm";
  const o = parseArgs<{ blocksize: number }>(fn, args, ["blocksize"]);
  if ((o.blocksize ?? 1) !== 1) throw new Error(`${fn}: only blocksize=1 is supported (as JAX), got ${o.blocksize}`);
  const x = squareArg(fn, A);
  const [t, z] = schurPrim(toComplex(x), true);
  const [r] = triuFunction(t, jnp.sqrt(diagOf(t)), "sqrt");
  return back(z, r);
}

/**
 * scipy.linalg.funm(A, func, disp=true) as JAX's: complex Schur, func on T's diagonal, Parlett's recurrence (Golub &
 * Van Loan alg. 11.1.1), Z F Z^H (complex). With disp=false also returns the error estimate
 * min(1, max(tol, tol / minden * ||triu(T, 1)||_1)) (inf when F has an infinity).
 */
export function funm(
  A: AL,
  func: (x: Array) => Array,
  ...args: Args<[disp: boolean], { disp?: boolean }>
): Array | [Array, Array] {
  const fn = "scipy.linalg.funm";
  const o = parseArgs<{ disp: boolean }>(fn, args, ["disp"]);
  if (typeof func !== "function") throw new Error(`${fn}: func must be a function of one array, got ${typeof func}`);
  const x = squareArg(fn, A, false);
  const [t, z] = schurPrim(toComplex(x), true);
  const fd = ops.convert(jnp.asarray(func(diagOf(t))), t.dtype);
  if (fd.shape.join() !== [x.shape[0]].join())
    throw new Error(
      `${fn}: func must map the eigenvalues [${x.shape[0]}] elementwise, returned shape ${shapeStr(fd.shape)}`,
    );
  const [f, minden] = triuFunction(t, fd, "parlett");
  const F = back(z, f);
  if (o.disp ?? true) return F;
  const rdt = realDType(t.dtype);
  const tol = jnp.asarray(finfo(rdt).eps, rdt);
  const md = jnp.where(jnp.equal(minden, 0), tol, minden);
  const upper = jnp.linalg.norm(jnp.triu(t, 1), 1);
  const est = jnp.minimum(jnp.asarray(1, rdt), jnp.maximum(tol, jnp.multiply(jnp.divide(tol, md), upper)));
  const err = jnp.where(jnp.any(jnp.isinf(F)), jnp.asarray(Infinity, rdt), est);
  return [F, err];
}
