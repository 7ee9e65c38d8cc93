/** @file jax.lax.linalg: the linear-algebra primitives' wrappers. */
import type { Array } from "../core/array.js";
import { isFloat } from "../core/dtype.js";
import * as P from "../primitives/linalg.js";
export { cholesky, triangularSolve, lu, qr, eigh } from "../primitives/linalg.js";
import { eig as eigPrim } from "../primitives/eig.js";
export type { TriangularSolveOpts } from "../primitives/linalg.js";

/** Options of lax.linalg.svd (JAX's keyword-only full_matrices / compute_uv). */
export interface SvdOpts { fullMatrices?: boolean; computeUv?: boolean }
/**
 * lax.linalg.svd(x, { fullMatrices = true, computeUv = true }): [u, s, vh] as in JAX (u: [..., m, m] or [..., m, k],
 * vh: [..., n, n] or [..., k, n], k = min(m, n)); with computeUv false, s alone.
 */
export function svd(x: Array, opts?: SvdOpts & { computeUv?: true }): [Array, Array, Array];
export function svd(x: Array, opts: SvdOpts & { computeUv: false }): Array;
export function svd(x: Array, opts?: SvdOpts): [Array, Array, Array] | Array;
export function svd(x: Array, opts: SvdOpts = {}): [Array, Array, Array] | Array {
  if (opts === null || typeof opts !== "object" || globalThis.Array.isArray(opts)) {
    throw new TypeError(`lax.linalg.svd: expected an options object { fullMatrices, computeUv } after the operand, got ${String(opts)}`);
  }
  for (const k of Object.keys(opts)) if (k !== "fullMatrices" && k !== "computeUv") throw new TypeError(`lax.linalg.svd: unexpected option "${k}"; expected fullMatrices or computeUv`);
  if (x.ndim < 2 || !isFloat(x.dtype)) throw new TypeError(`lax.linalg.svd: the operand must be a float matrix (or a batch of them) of rank >= 2, got ${x.aval.str()}`);
  const computeUv = opts.computeUv ?? true;
  const outs = P.svd(x, opts.fullMatrices ?? true, computeUv);
  if (!computeUv) return outs[0];
  const [s, u, vh] = outs;
  return [u, s, vh];
}

/**
 * lax.linalg.eig(x, {computeLeftEigenvectors, computeRightEigenvectors}) for real square matrices: [w, vr] or [w]
 * (complex). Left eigenvectors are not implemented (computeLeftEigenvectors must be false, JAX's default is true).
 */
export function eig(x: Array, opts: { computeLeftEigenvectors?: boolean; computeRightEigenvectors?: boolean } = {}): Array[] {
  for (const k of Object.keys(opts)) if (k !== "computeLeftEigenvectors" && k !== "computeRightEigenvectors") throw new TypeError(`lax.linalg.eig: unknown option '${k}'; accepted: computeLeftEigenvectors, computeRightEigenvectors`);
  if (opts.computeLeftEigenvectors !== false) throw new TypeError("lax.linalg.eig: left eigenvectors are not implemented; pass {computeLeftEigenvectors: false}");
  return eigPrim(x, opts.computeRightEigenvectors ?? true);
}
