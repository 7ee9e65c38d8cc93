/** @file jax.lax.linalg: the linear-algebra primitives' wrappers. */
import type { Array } from "../core/array.js";
import { isComplex, isFloat } from "../core/dtype.js";
import * as P from "../primitives/linalg.js";
import { eig as eigPrim } from "../primitives/eig.js";
import { schur as schurPrim } from "../primitives/schur.js";
import { checkArity, checkOptions } from "../core/check-args.js";
import { add, conj, mul, full, transpose } from "../primitives/ops.js";
export type { TriangularSolveOpts } from "../primitives/linalg.js";

const swapLast = (x: Array): Array =>
  transpose(
    x,
    [...x.shape.keys()].map((i) => (i === x.ndim - 2 ? x.ndim - 1 : i === x.ndim - 1 ? x.ndim - 2 : i)),
  );
/** (x + x^H) / 2 over the last two axes (x^T for real x): JAX's symmetrize_input. */
const symmetrize = (x: Array): Array =>
  mul(add(x, isComplex(x.dtype) ? conj(swapLast(x)) : swapLast(x)), full([], 0.5, x.dtype));
/** Checks a keyword-only options object (JAX's `*` parameters) after the operands. */
function kwOnly(fn: string, args: IArguments, nPos: number, opts: unknown, keys: readonly string[]): void {
  const forms = `${fn}(${nPos === 1 ? "x" : "a, b"}${keys.length ? `, { ${keys.join(", ")} }` : ""})`;
  checkArity(fn, args, nPos + (keys.length ? 1 : 0), forms);
  checkOptions(fn, opts, keys, forms);
}

/** lax.linalg.cholesky(x, { symmetrizeInput = true }): the lower Cholesky factor. */
export function cholesky(x: Array, opts: { symmetrizeInput?: boolean } = {}): Array {
  kwOnly("lax.linalg.cholesky", arguments, 1, opts, ["symmetrizeInput"]);
  return P.cholesky(opts.symmetrizeInput === false ? x : symmetrize(x));
}
/** lax.linalg.triangular_solve(a, b, { leftSide, lower, transposeA, conjugateA, unitDiagonal }). */
export function triangularSolve(a: Array, b: Array, opts: P.TriangularSolveOpts = {}): Array {
  kwOnly("lax.linalg.triangularSolve", arguments, 2, opts, [
    "leftSide",
    "lower",
    "transposeA",
    "conjugateA",
    "unitDiagonal",
  ]);
  return P.triangularSolve(a, b, opts);
}
/** lax.linalg.lu(x): [lu, pivots, permutation]. */
export function lu(x: Array): [Array, Array, Array] {
  kwOnly("lax.linalg.lu", arguments, 1, undefined, []);
  return P.lu(x);
}
/** lax.linalg.qr(x, { fullMatrices = true, pivoting = false }): [q, r] (JAX's default is full matrices). */
export function qr(x: Array, opts: { fullMatrices?: boolean; pivoting?: boolean } = {}): [Array, Array] {
  kwOnly("lax.linalg.qr", arguments, 1, opts, ["fullMatrices", "pivoting"]);
  if (opts.pivoting) throw new Error("lax.linalg.qr: pivoting=true (column-pivoted QR) is not supported");
  return P.qr(x, opts.fullMatrices ?? true);
}
/** lax.linalg.eigh(x, { lower = true, symmetrizeInput = true, sortEigenvalues = true }): [v, w] (eigenvectors in columns, eigenvalues). */
export function eigh(
  x: Array,
  opts: { lower?: boolean; symmetrizeInput?: boolean; sortEigenvalues?: boolean; subsetByIndex?: null } = {},
): [Array, Array] {
  kwOnly("lax.linalg.eigh", arguments, 1, opts, ["lower", "symmetrizeInput", "sortEigenvalues", "subsetByIndex"]);
  if (opts.subsetByIndex !== undefined && opts.subsetByIndex !== null)
    throw new Error("lax.linalg.eigh: subsetByIndex is not supported (pass null)");
  return P.eigh(opts.symmetrizeInput === false ? x : symmetrize(x), opts.lower ?? true, opts.sortEigenvalues ?? true);
}

/** Options of lax.linalg.svd (JAX's keyword-only full_matrices / compute_uv). */
export interface SvdOpts {
  fullMatrices?: boolean;
  computeUv?: boolean;
}
/**
 * lax.linalg.svd(x, { fullMatrices = true, computeUv = true }): [u, s, vh] as in JAX (u: [..., m, m] or [..., m, k],
 * vh: [..., n, n] or [..., k, n], k = min(m, n)); with computeUv false, s alone.
 */
export function svd(x: Array, opts?: SvdOpts & { computeUv?: true }): [Array, Array, Array];
export function svd(x: Array, opts: SvdOpts & { computeUv: false }): Array;
export function svd(x: Array, opts?: SvdOpts): [Array, Array, Array] | Array;
export function svd(x: Array, opts: SvdOpts = {}): [Array, Array, Array] | Array {
  kwOnly("lax.linalg.svd", arguments, 1, opts, ["fullMatrices", "computeUv"]);
  if (x.ndim < 2 || !(isFloat(x.dtype) || isComplex(x.dtype)))
    throw new TypeError(
      `lax.linalg.svd: the operand must be a float or complex matrix (or a batch of them) of rank >= 2, got ${x.aval.str()}`,
    );
  const computeUv = opts.computeUv ?? true;
  const outs = P.svd(x, opts.fullMatrices ?? true, computeUv);
  if (!computeUv) return outs[0];
  const [s, u, vh] = outs;
  return [u, s, vh];
}

/**
 * lax.linalg.eig(x, {computeLeftEigenvectors, computeRightEigenvectors}) for real or complex square matrices: [w, vr] or [w]
 * (complex). Left eigenvectors are not implemented (computeLeftEigenvectors must be false, JAX's default is true).
 */
export function eig(
  x: Array,
  opts: { computeLeftEigenvectors?: boolean; computeRightEigenvectors?: boolean } = {},
): Array[] {
  kwOnly("lax.linalg.eig", arguments, 1, opts, ["computeLeftEigenvectors", "computeRightEigenvectors"]);
  if (opts.computeLeftEigenvectors !== false)
    throw new TypeError("lax.linalg.eig: left eigenvectors are not implemented; pass {computeLeftEigenvectors: false}");
  return eigPrim(x, opts.computeRightEigenvectors ?? true);
}

/** lax.linalg.schur(x, { computeSchurVectors = true }): `[T, Z]` with x = Z T Z^H (real Schur form for real x), or `[T]`. */
export function schur(x: Array, opts: { computeSchurVectors?: boolean } = {}): Array[] {
  kwOnly("lax.linalg.schur", arguments, 1, opts, ["computeSchurVectors"]);
  return schurPrim(x, opts.computeSchurVectors ?? true);
}
