/** @file jnp.linalg: norm, inv, solve, det, slogdet, cholesky, qr, svd, eigh, eigvalsh, pinv, matrixRank, lstsq, matrixPower, cond, multiDot, .... */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { type DType, finfo, isComplex, realDType } from "../core/dtype.js";
import { registerNode } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { customJvp } from "../transforms/custom-derivatives.js";
import * as P from "../primitives/linalg.js";
import { takeAlongDim } from "../primitives/sort.js";
import { matmul } from "./linear.js";
import {
  JSArray,
  arr,
  bcast,
  broadcastShape,
  normalizeAxis,
  numbersOf,
  parseArgs,
  promoteAll,
  promoteInexact,
  range,
  requireConcrete,
  shapeStr,
} from "./struct-util.js";

export { matmul, outer, tensordot, vecdot } from "./linear.js";
export { matrixTranspose } from "./shape-ops.js";

type AL = ArrayLike | NestedValue;

// ---------------------------------------------------------------- result types (iterable like JAX's namedtuples)
/** jnp.linalg.slogdet result: `{sign, logabsdet}`, also destructurable as `[sign, logabsdet]`. */
export class SlogdetResult {
  constructor(
    readonly sign: Array,
    readonly logabsdet: Array,
  ) {}
  *[Symbol.iterator](): Iterator<Array> {
    yield this.sign;
    yield this.logabsdet;
  }
}
/** jnp.linalg.qr result: `{Q, R}` / `[Q, R]`. */
export class QRResult {
  constructor(
    readonly Q: Array,
    readonly R: Array,
  ) {}
  *[Symbol.iterator](): Iterator<Array> {
    yield this.Q;
    yield this.R;
  }
}
/** jnp.linalg.svd result: `{U, S, Vh}` / `[U, S, Vh]`. */
export class SVDResult {
  constructor(
    readonly U: Array,
    readonly S: Array,
    readonly Vh: Array,
  ) {}
  *[Symbol.iterator](): Iterator<Array> {
    yield this.U;
    yield this.S;
    yield this.Vh;
  }
}
/** jnp.linalg.eigh result: `{eigenvalues, eigenvectors}` / `[eigenvalues, eigenvectors]`. */
export class EighResult {
  constructor(
    readonly eigenvalues: Array,
    readonly eigenvectors: Array,
  ) {}
  *[Symbol.iterator](): Iterator<Array> {
    yield this.eigenvalues;
    yield this.eigenvectors;
  }
}
registerNode(SlogdetResult, {
  flatten: (r) => [[r.sign, r.logabsdet], null],
  unflatten: (_a, c) => new SlogdetResult(c[0] as Array, c[1] as Array),
});
registerNode(QRResult, {
  flatten: (r) => [[r.Q, r.R], null],
  unflatten: (_a, c) => new QRResult(c[0] as Array, c[1] as Array),
});
registerNode(SVDResult, {
  flatten: (r) => [[r.U, r.S, r.Vh], null],
  unflatten: (_a, c) => new SVDResult(c[0] as Array, c[1] as Array, c[2] as Array),
});
registerNode(EighResult, {
  flatten: (r) => [[r.eigenvalues, r.eigenvectors], null],
  unflatten: (_a, c) => new EighResult(c[0] as Array, c[1] as Array),
});

// ---------------------------------------------------------------- helpers
/** Promotes to a common inexact dtype, keeping complex operands complex (promoteInexact maps them to float). */
function promoteKeepComplex(fn: string, xs: Array[]): Array[] {
  const ys = promoteAll(fn, xs);
  return ys.length && isComplex(ys[0].dtype) ? ys : promoteInexact(fn, ys);
}
/** An inexact (float32/float64/complex64/complex128) batch of matrices; names fn and the expected layout on error. */
function matrixArg(fn: string, a: AL, square: boolean): Array {
  let x = promoteKeepComplex(fn, [arr(fn, a)])[0];
  if (x.dtype === "float16" || x.dtype === "bfloat16") x = ops.convert(x, "float32");
  if (x.weakType) x = ops.convert(x, x.dtype);
  if (x.ndim < 2)
    throw new Error(
      `${fn}: expected a (batch of) ${square ? "square " : ""}matrix with at least 2 dimensions, got shape ${shapeStr(x.shape)}`,
    );
  if (square && x.shape[x.ndim - 1] !== x.shape[x.ndim - 2])
    throw new Error(
      `${fn}: expected a (batch of) square matrix (last two dimensions equal), got shape ${shapeStr(x.shape)}`,
    );
  return x;
}
/** (x + x^H) / 2: the symmetric (Hermitian, for complex x) part. */
const sym = (x: Array): Array => ops.mul(ops.add(x, P.mH(x)), ops.scalarLike(x, 0.5));
const lastAxisSlice = (x: Array, lo: number, hi: number): Array => ops.sliceInDim(x, lo, hi, 1, x.ndim - 1);
/** Row permutation of b [..., n, k] by perm [..., n]. */
function permuteRows(b: Array, perm: Array): Array {
  const nd = b.ndim;
  return takeAlongDim(b, ops.broadcastInDim(perm, b.shape, range(nd - 1)), nd - 2);
}
/** Solves a x = b for x with a = P L U from lax.linalg.lu; a, b share batch dims. */
function luSolve(lu: Array, perm: Array, b: Array): Array {
  const pb = permuteRows(b, perm);
  const y = P.triangularSolve(lu, pb, { leftSide: true, lower: true, unitDiagonal: true });
  return P.triangularSolve(lu, y, { leftSide: true, lower: false });
}
/** (-1)^(number of row swaps) from 0-based LU pivots [..., k]. */
function pivotSign(piv: Array, dtype: DType): Array {
  const swaps = ops.reduceSum(ops.convert(ops.ne(piv, ops.iota("int32", piv.shape, piv.ndim - 1)), "int32"), [
    piv.ndim - 1,
  ]);
  const odd = ops.rem(swaps, ops.full([], 2, "int32"));
  return ops.convert(ops.sub(ops.full([], 1, "int32"), ops.mul(odd, ops.full([], 2, "int32"))), dtype);
}

// ---------------------------------------------------------------- factorizations
/** jnp.linalg.cholesky(a, {upper=false, symmetrizeInput=true}): lower L with a = L L^T (or upper U = L^T). NaN for non-PD input. */
export function cholesky(a: AL, opts: { upper?: boolean; symmetrizeInput?: boolean } = {}): Array {
  checkArity("linalg.cholesky", arguments, 2, "linalg.cholesky(a, { upper, symmetrizeInput })");
  checkOptions("linalg.cholesky", opts, ["upper", "symmetrizeInput"], "linalg.cholesky(a, { upper, symmetrizeInput })");
  let x = matrixArg("linalg.cholesky", a, true);
  const c = isComplex(x.dtype);
  // complex: Hermitian part (x + x^H) / 2, and upper U = L^H
  if (opts.symmetrizeInput ?? true) x = sym(x);
  const L = P.cholesky(x);
  return opts.upper ? (c ? ops.conj(P.mT(L)) : P.mT(L)) : L;
}
/** jnp.linalg.qr(a, mode="reduced"): QRResult {Q, R}; mode "complete" gives square Q; mode "r" returns R alone. */
export function qr(a: AL, ...args: unknown[]): QRResult | Array {
  const { mode } = parseArgs<{ mode: "reduced" | "complete" | "r" | "raw" }>("linalg.qr", args, ["mode"]);
  const x = matrixArg("linalg.qr", a, false);
  const m = mode ?? "reduced";
  if (m !== "reduced" && m !== "complete" && m !== "r")
    throw new Error(`linalg.qr: unsupported mode ${JSON.stringify(m)}; expected "reduced", "complete" or "r"`);
  const [q, r] = P.qr(x, m === "complete");
  return m === "r" ? r : new QRResult(q, r);
}
/** jnp.linalg.svd(a, fullMatrices=true, computeUv=true, hermitian=false): SVDResult {U, S, Vh}, or S alone without computeUv. */
export function svd(a: AL, ...args: unknown[]): SVDResult | Array {
  const o = parseArgs<{ fullMatrices: boolean; computeUv: boolean; hermitian: boolean; subsetByIndex: null }>(
    "linalg.svd",
    args,
    ["fullMatrices", "computeUv", "hermitian"],
    ["subsetByIndex"],
  );
  if (o.subsetByIndex !== undefined && o.subsetByIndex !== null)
    throw new Error("linalg.svd: subsetByIndex is not supported");
  const x = matrixArg("linalg.svd", a, false);
  const computeUv = o.computeUv ?? true;
  const outs = P.svd(x, o.fullMatrices ?? true, computeUv);
  return computeUv ? new SVDResult(outs[1], outs[0], outs[2]) : outs[0];
}
/** jnp.linalg.svdvals(x): singular values, descending. */
export const svdvals = (x: AL): Array => P.svd(matrixArg("linalg.svdvals", x, false), false, false)[0];
/** jnp.linalg.eigh(a, UPLO="L", {symmetrizeInput=true}): EighResult {eigenvalues (ascending), eigenvectors (columns)}. */
export function eigh(a: AL, ...args: unknown[]): EighResult {
  const o = parseArgs<{ UPLO: "L" | "U" | null; symmetrizeInput: boolean }>("linalg.eigh", args, [
    "UPLO",
    "symmetrizeInput",
  ]);
  let x = matrixArg("linalg.eigh", a, true);
  const uplo = o.UPLO ?? "L";
  if (uplo !== "L" && uplo !== "U")
    throw new Error(`linalg.eigh: UPLO must be "L" or "U", got ${JSON.stringify(uplo)}`);
  if (o.symmetrizeInput ?? true) x = sym(x);
  const [v, w] = P.eigh(x, uplo === "L");
  return new EighResult(w, v);
}
/** jnp.linalg.eig result: `{eigenvalues, eigenvectors}` / `[eigenvalues, eigenvectors]` (complex, eigenvectors as columns). */
export class EigResult {
  constructor(
    readonly eigenvalues: Array,
    readonly eigenvectors: Array,
  ) {}
  *[Symbol.iterator](): Iterator<Array> {
    yield this.eigenvalues;
    yield this.eigenvectors;
  }
}
registerNode(EigResult, {
  flatten: (r) => [[r.eigenvalues, r.eigenvectors], null],
  unflatten: (_a, c) => new EigResult(c[0] as Array, c[1] as Array),
});
/**
 * jnp.linalg.eig(a): eigenvalues and right eigenvectors of a general (real or complex) square matrix (complex results, in no
 * particular order; each eigenvector has unit norm and its largest component real, like LAPACK's geev). Only the
 * eigenvalues are differentiable, as in JAX.
 */
export function eig(a: AL): EigResult {
  const [w, v] = ops.eig(matrixArg("linalg.eig", a, true), true);
  return new EigResult(w, v);
}
/** jnp.linalg.eigvals(a): the eigenvalues of a general (real or complex) square matrix (complex; differentiable). */
export const eigvals = (a: AL): Array => ops.eig(matrixArg("linalg.eigvals", a, true), false)[0];
/** jnp.linalg.eigvalsh(a, UPLO="L"): eigenvalues of a symmetric (Hermitian) matrix, ascending (real). */
export function eigvalsh(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ UPLO: "L" | "U" | null; symmetrizeInput: boolean }>("linalg.eigvalsh", args, [
    "UPLO",
    "symmetrizeInput",
  ]);
  return eigh(a, o.UPLO ?? "L", { symmetrizeInput: o.symmetrizeInput ?? true }).eigenvalues;
}

// ---------------------------------------------------------------- solves and determinants
/** jnp.linalg.solve(a, b): x with a @ x = b; b is a vector [n] when 1-D, else a (batch of) matrix [..., n, k]. */
export function solve(a: AL, b: AL): Array {
  const x = matrixArg("linalg.solve", a, true);
  let y = promoteKeepComplex("linalg.solve", [arr("linalg.solve", b)])[0];
  const [xx, yy] = promoteKeepComplex("linalg.solve", [x, y]);
  y = ops.convert(yy, xx.dtype);
  const n = xx.shape[xx.ndim - 1];
  const vec = y.ndim === 1;
  if (y.ndim === 0)
    throw new Error(`linalg.solve: b must be at least 1-dimensional, got a scalar (a has shape ${shapeStr(xx.shape)})`);
  const bm = vec ? ops.reshape(y, [n === y.shape[0] ? n : y.shape[0], 1]) : y;
  if (bm.shape[bm.ndim - 2] !== n)
    throw new Error(
      `linalg.solve: a has shape ${shapeStr(xx.shape)} but b has shape ${shapeStr(y.shape)}; expected b.shape[${vec ? "0" : "-2"}] to equal ${n}`,
    );
  const batch = broadcastShape([xx.shape.slice(0, -2), bm.shape.slice(0, -2)], "linalg.solve");
  const ab = bcast(xx, [...batch, n, n]),
    bb = bcast(bm, [...batch, n, bm.shape[bm.ndim - 1]]);
  const [lu, , perm] = P.lu(ab);
  const r = luSolve(lu, perm, bb);
  return vec ? ops.reshape(r, [...batch, n]) : r;
}
/** Product over the last axis; complex operands (reduce_prod has no complex rule) multiply the slices in turn. */
function prodLast(d: Array): Array {
  const last = d.ndim - 1;
  if (!isComplex(d.dtype)) return ops.reduceProd(d, [last]);
  let r = ops.squeeze(ops.sliceInDim(d, 0, 1, 1, last), [last]);
  for (let j = 1; j < d.shape[last]; j++) r = ops.mul(r, ops.squeeze(ops.sliceInDim(d, j, j + 1, 1, last), [last]));
  return r;
}
/** jnp.linalg.inv(a). */
export function inv(a: AL): Array {
  const x = matrixArg("linalg.inv", a, true);
  return solve(x, bcast(P.eyeLike(x.shape, x.dtype), x.shape));
}
/** jnp.linalg.det(a); its derivative is JAX's (the adjugate from cofactorSolve), finite at singular matrices. */
export function det(a: AL): Array {
  const x = matrixArg("linalg.det", a, true);
  if (x.shape[x.ndim - 1] === 0) return ops.full(x.shape.slice(0, -2), 1, x.dtype);
  return detWithAdjugateJvp(x);
}
function detOfLu(lu: Array, piv: Array, dtype: DType): Array {
  return ops.mul(pivotSign(piv, dtype), prodLast(P.diagPart(lu)));
}
// d det(a) = trace(adj(a) da): through cofactorSolve rather than the LU's own derivative, which divides by the pivots
const detWithAdjugateJvp = customJvp((x: Array): Array => {
  const [lu, piv] = P.lu(x);
  return detOfLu(lu, piv, x.dtype);
});
detWithAdjugateJvp.defjvp(([x], [t]) => {
  const [d, y] = cofactorSolve(x, t);
  const nd = y.ndim;
  return [d, ops.reduceSum(P.diagPart(y), [nd - 2])];
});
/**
 * [det(a), adj(a) @ b] from one LU, defined for singular a too (the idea of JAX's _cofactor_solve). With a[perm] = L U,
 * adj(a) b = det(a) U^-1 x for x = L^-1 b[perm]. Splitting U = [[U11, u], [0, u_nn]], the last row of that is
 * s x_n with s = sign * prod(diag U11) (no division by u_nn), and the rest U11^-1 (det x_top - u s x_n): one solve
 * with U whose u_nn is replaced by 1, against [det x_top; s x_n]. A zero last pivot (rank n - 1) so gives the
 * adjugate; where the solve still meets a zero pivot (lower rank) the result is not finite and becomes 0, as JAX's.
 */
function cofactorSolve(a: Array, b: Array): [Array, Array] {
  const n = a.shape[a.ndim - 1],
    nd = a.ndim;
  const [lu, piv, perm] = P.lu(a);
  const d = P.diagPart(lu);
  const sign = pivotSign(piv, a.dtype);
  const head = ops.sliceInDim(d, 0, n - 1, 1, nd - 2);
  const s = ops.mul(sign, prodLast(head));
  const det = ops.mul(s, ops.squeeze(ops.sliceInDim(d, n - 1, n, 1, nd - 2), [nd - 2]));
  const corner = ops.and(
    ops.eq(ops.iota("int32", lu.shape, nd - 2), ops.full(lu.shape, n - 1, "int32")),
    ops.eq(ops.iota("int32", lu.shape, nd - 1), ops.full(lu.shape, n - 1, "int32")),
  );
  const u1 = ops.select(corner, ops.full(lu.shape, 1, lu.dtype), lu);
  // a zero pivot before the last (rank < n - 1, or a rank n - 1 matrix pivoted that way) gives 0. The test solves
  // against ones, not b, so it does not depend on b (det's tangent); b is zeroed before the solves too, so that in
  // reverse mode the 0 / 0 of the solves' transposes is zeroed last
  const probe = P.triangularSolve(u1, ops.full([...a.shape.slice(0, -1), 1], 1, a.dtype), {
    leftSide: true,
    lower: false,
  });
  const fin = (v: Array) =>
    isComplex(v.dtype) ? ops.and(ops.isFinite(ops.real(v)), ops.isFinite(ops.imag(v))) : ops.isFinite(v);
  const all = ops.reduceAnd(fin(probe), [nd - 2, nd - 1]);
  const keep = (v: Array) =>
    ops.select(ops.broadcastInDim(all, v.shape, range(nd - 2)), v, ops.full(v.shape, 0, v.dtype));
  const x = P.triangularSolve(lu, keep(permuteRows(b, perm)), { leftSide: true, lower: true, unitDiagonal: true });
  // [..., n, k]: rows < n - 1 scaled by det, the last by s
  const batch = (v: Array) => ops.broadcastInDim(v, x.shape, range(nd - 2));
  const lastRow = ops.eq(ops.iota("int32", x.shape, nd - 2), ops.full(x.shape, n - 1, "int32"));
  const xs = ops.mul(x, ops.select(lastRow, batch(s), batch(det)));
  const y = P.triangularSolve(u1, xs, { leftSide: true, lower: false });
  return [det, keep(y)];
}
/** jnp.linalg.slogdet(a): SlogdetResult {sign, logabsdet} (also iterable as [sign, logabsdet]). */
export function slogdet(a: AL, ...args: unknown[]): SlogdetResult {
  const { method } = parseArgs<{ method: string | null }>("linalg.slogdet", args, ["method"]);
  if (method !== undefined && method !== null && method !== "lu")
    throw new Error(`linalg.slogdet: unsupported method ${JSON.stringify(method)} (only "lu")`);
  const x = matrixArg("linalg.slogdet", a, true);
  const B = x.shape.slice(0, -2);
  if (x.shape[x.ndim - 1] === 0) return new SlogdetResult(ops.full(B, 1, x.dtype), ops.full(B, 0, realDType(x.dtype)));
  const [lu, piv] = P.lu(x);
  const d = P.diagPart(lu);
  const last = d.ndim - 1;
  const sign = ops.mul(pivotSign(piv, x.dtype), prodLast(ops.sign(d)));
  const logabsdet = ops.reduceSum(ops.log(ops.abs(d)), [last]);
  return new SlogdetResult(sign, logabsdet);
}
/**
 * jnp.linalg.tensorinv(a, ind=2): the inverse of a as a linear map from its trailing axes to its leading `ind` axes,
 * i.e. inv(a reshaped to [prod(a.shape[:ind]), prod(a.shape[ind:])]) reshaped to a.shape[ind:] + a.shape[:ind].
 */
export function tensorinv(a: AL, ...args: unknown[]): Array {
  const { ind } = parseArgs<{ ind: number }>("linalg.tensorinv", args, ["ind"]);
  const x = arr("linalg.tensorinv", a);
  const k = ind ?? 2;
  if (!Number.isInteger(k) || k <= 0 || k > x.ndim)
    throw new RangeError(`linalg.tensorinv: ind must be a positive integer at most a.ndim = ${x.ndim}, got ${k}`);
  const out = x.shape.slice(0, k),
    rest = x.shape.slice(k);
  const m = out.reduce((p, v) => p * v, 1),
    n = rest.reduce((p, v) => p * v, 1);
  if (m !== n)
    throw new Error(
      `linalg.tensorinv: a of shape ${shapeStr(x.shape)} with ind=${k} is not square: prod(a.shape[:${k}]) = ${m} but prod(a.shape[${k}:]) = ${n}`,
    );
  return ops.reshape(inv(ops.reshape(x, [m, n])), [...rest, ...out]);
}
/**
 * jnp.linalg.tensorsolve(a, b, axes=null): x with tensordot(a, x, x.ndim) = b. `axes` (of a) move to the end first;
 * then a.shape = b.shape + x.shape and the system is solve(a reshaped square, b flattened).
 */
export function tensorsolve(a: AL, b: AL, ...args: unknown[]): Array {
  const { axes } = parseArgs<{ axes: number[] | null }>("linalg.tensorsolve", args, ["axes"]);
  let x = arr("linalg.tensorsolve", a);
  const y = arr("linalg.tensorsolve", b);
  if (axes !== undefined && axes !== null) {
    const moved = axes.map((ax) => normalizeAxis("linalg.tensorsolve", ax, x.ndim));
    const keep = range(x.ndim).filter((d) => !moved.includes(d));
    x = ops.transpose(x, [...keep, ...moved]);
  }
  const lead = x.shape.slice(0, y.ndim),
    solShape = x.shape.slice(y.ndim);
  const n = solShape.reduce((p, v) => p * v, 1);
  if (y.ndim > x.ndim || lead.some((v, i) => v !== y.shape[i]) || y.size !== n)
    throw new Error(
      `linalg.tensorsolve: a of shape ${shapeStr(x.shape)}${axes ? " (after moving axes)" : ""} must be b.shape + x.shape with prod(x.shape) = b.size; b has shape ${shapeStr(y.shape)}`,
    );
  return ops.reshape(solve(ops.reshape(x, [y.size, n]), ops.reshape(y, [y.size])), solShape);
}
/** jnp.linalg.matrixPower(a, n): repeated squaring; negative n inverts first. */
export function matrixPower(a: AL, n: number): Array {
  const x0 = arr("linalg.matrixPower", a);
  if (!Number.isInteger(n)) throw new TypeError(`linalg.matrixPower: exponent must be an integer, got ${n}`);
  if (x0.ndim < 2 || x0.shape[x0.ndim - 1] !== x0.shape[x0.ndim - 2])
    throw new Error(`linalg.matrixPower: expected a (batch of) square matrix, got shape ${shapeStr(x0.shape)}`);
  if (n === 0) return bcast(P.eyeLike(x0.shape, x0.dtype), x0.shape);
  let x = n < 0 ? inv(x0) : x0;
  let k = Math.abs(n);
  let result: Array | null = null;
  while (k > 0) {
    if (k & 1) result = result === null ? x : matmul(result, x);
    k >>= 1;
    if (k) x = matmul(x, x);
  }
  return result!;
}
/** jnp.linalg.triangularSolve (lax.linalg.triangular_solve): solves op(a) x = b (leftSide) or x op(a) = b. */
export function triangularSolve(a: AL, b: AL, opts: P.TriangularSolveOpts = {}): Array {
  const tsForms = "linalg.triangularSolve(a, b, { leftSide, lower, transposeA, conjugateA, unitDiagonal })";
  checkArity("triangularSolve", arguments, 3, tsForms);
  checkOptions("triangularSolve", opts, ["leftSide", "lower", "transposeA", "conjugateA", "unitDiagonal"], tsForms);
  const [x, y] = promoteKeepComplex("triangularSolve", [
    matrixArg("triangularSolve", a, true),
    arr("triangularSolve", b),
  ]);
  const batch = broadcastShape([x.shape.slice(0, -2), y.shape.slice(0, -2)], "triangularSolve");
  if (y.ndim < 2) throw new Error(`triangularSolve: b must be a (batch of) matrix, got shape ${shapeStr(y.shape)}`);
  const k = x.shape[x.ndim - 1];
  const need = opts.leftSide ? y.shape[y.ndim - 2] : y.shape[y.ndim - 1];
  if (need !== k)
    throw new Error(
      `triangularSolve: a has shape ${shapeStr(x.shape)} but b has shape ${shapeStr(y.shape)}; expected b.shape[${opts.leftSide ? "-2" : "-1"}] to equal ${k} (leftSide=${opts.leftSide ?? false})`,
    );
  return P.triangularSolve(bcast(x, [...batch, k, k]), bcast(y, [...batch, ...y.shape.slice(-2)]), opts);
}

// ---------------------------------------------------------------- pseudo-inverse, rank, least squares, condition number
/** jnp.linalg.pinv(a, rtol=null, hermitian=false): singular values <= rtol * s_max are treated as zero. */
export function pinv(a: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ rtol: number | null; hermitian: boolean; rcond: number }>(
    "linalg.pinv",
    args,
    ["rtol", "hermitian"],
    ["rcond"],
  );
  const x = matrixArg("linalg.pinv", a, false);
  const m = x.shape[x.ndim - 2],
    n = x.shape[x.ndim - 1];
  if (m === 0 || n === 0) return ops.full([...x.shape.slice(0, -2), n, m], 0, x.dtype);
  const rtol = o.rtol ?? o.rcond ?? 10 * Math.max(m, n) * finfo(x.dtype).eps;
  const [s, u, vt] = P.svd(x, false, true);
  const cutoff = ops.mul(lastAxisSlice(s, 0, 1), ops.scalarLike(s, rtol));
  const sInv = ops.select(ops.gt(s, bcast(cutoff, s.shape)), s, ops.fullLike(s, Infinity));
  // pinv = V diag(1/s) U^H (conjugate transposes for complex)
  const uT = P.mH(u);
  const scaled = ops.div(uT, ops.broadcastInDim(ops.convert(sInv, x.dtype), uT.shape, range(uT.ndim - 1)));
  return P.mm(P.mH(vt), scaled);
}
/** jnp.linalg.matrixRank(M, rtol=null, {tol}). */
export function matrixRank(M: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ rtol: number | null; tol: number | null }>("linalg.matrixRank", args, ["rtol"], ["tol"]);
  const x0 = promoteKeepComplex("linalg.matrixRank", [arr("linalg.matrixRank", M)])[0];
  if (x0.ndim < 2) return ops.convert(ops.reduceOr(ops.ne(x0, ops.scalarLike(x0, 0)), range(x0.ndim)), "int32");
  const x = matrixArg("linalg.matrixRank", x0, false);
  const s = P.svd(x, false, false)[0];
  const last = s.ndim - 1;
  const m = x.shape[x.ndim - 2],
    n = x.shape[x.ndim - 1];
  let tol: Array;
  if (o.tol !== undefined && o.tol !== null) tol = ops.full(s.shape.slice(0, -1), o.tol, s.dtype);
  else {
    const smax = s.shape[last] ? ops.reduceMax(s, [last]) : ops.full(s.shape.slice(0, -1), 0, s.dtype);
    tol = ops.mul(smax, ops.scalarLike(smax, o.rtol ?? Math.max(m, n) * finfo(s.dtype).eps));
  }
  return ops.reduceSum(ops.convert(ops.gt(s, ops.broadcastInDim(tol, s.shape, range(last))), "int32"), [last]);
}
/** jnp.linalg.lstsq(a, b, rcond=null, {numpyResid=false}) -> [x, residuals, rank, s]. */
export function lstsq(a: AL, b: AL, ...args: unknown[]): [Array, Array, Array, Array] {
  const o = parseArgs<{ rcond: number | null; numpyResid: boolean }>("linalg.lstsq", args, ["rcond"], ["numpyResid"]);
  const [x, y0] = promoteKeepComplex("linalg.lstsq", [matrixArg("linalg.lstsq", a, false), arr("linalg.lstsq", b)]);
  let y = ops.convert(y0, x.dtype);
  if (x.ndim !== 2) throw new Error(`linalg.lstsq: a must be 2-dimensional, got shape ${shapeStr(x.shape)}`);
  const vec = y.ndim === 1;
  if (vec) y = ops.reshape(y, [y.shape[0], 1]);
  if (y.ndim !== 2 || y.shape[0] !== x.shape[0])
    throw new Error(
      `linalg.lstsq: incompatible shapes a ${shapeStr(x.shape)} and b ${shapeStr(y.shape)}; expected b.shape[0] == ${x.shape[0]}`,
    );
  const m = x.shape[0],
    n = x.shape[1];
  const eps = finfo(realDType(x.dtype)).eps;
  const rcond = o.rcond === undefined || o.rcond === null ? eps * Math.max(m, n) : o.rcond < 0 ? eps : o.rcond;
  const [s, u, vt] = P.svd(x, false, true);
  const k = s.shape[0];
  const mask = k
    ? ops.ge(s, bcast(ops.mul(lastAxisSlice(s, 0, 1), ops.scalarLike(s, rcond)), [k]))
    : ops.full([0], false, "bool");
  const rank = ops.reduceSum(ops.convert(mask, "int32"), [0]);
  const safe = ops.select(mask, s, ops.fullLike(s, 1));
  const sInv = ops.select(mask, ops.div(ops.scalarLike(safe, 1), safe), ops.fullLike(s, 0));
  // x = V diag(1/s) U^H b (conjugate transposes for complex)
  const uTb = P.mm(P.mH(u), y);
  const sol = P.mm(P.mH(vt), ops.mul(ops.broadcastInDim(ops.convert(sInv, x.dtype), uTb.shape, [0]), uTb));
  let resid: Array;
  const rk = o.numpyResid ? numbersOf(requireConcrete("linalg.lstsq", rank, "the rank (numpyResid)"))[0] : 0;
  if (o.numpyResid && (rk < n || m <= n)) resid = ops.full([0], 0, s.dtype);
  else resid = ops.reduceSum(absSquare(ops.sub(y, P.mm(x, sol))), [0]);
  return [vec ? ops.reshape(sol, [n]) : sol, vec && resid.shape[0] === 1 ? resid : resid, rank, s];
}
/** jnp.linalg.cond(x, p=null): condition number (2-norm by default). */
export function cond(x: AL, ...args: unknown[]): Array {
  const { p } = parseArgs<{ p: NormOrd }>("linalg.cond", args, ["p"]);
  const a = matrixArg("linalg.cond", x, false);
  let r: Array;
  if (p === undefined || p === null || p === 2 || p === -2) {
    const s = P.svd(a, false, false)[0];
    const k = s.shape[s.ndim - 1],
      last = s.ndim - 1;
    const first = ops.squeeze(lastAxisSlice(s, 0, 1), [last]),
      lastS = ops.squeeze(lastAxisSlice(s, k - 1, k), [last]);
    r = p === -2 ? ops.div(lastS, first) : ops.div(first, lastS);
  } else {
    if (a.shape[a.ndim - 1] !== a.shape[a.ndim - 2])
      throw new Error(`linalg.cond: p=${JSON.stringify(p)} needs square matrices, got shape ${shapeStr(a.shape)}`);
    r = ops.mul(norm(a, p, [-2, -1]), norm(inv(a), p, [-2, -1]));
  }
  // NaN from 0/0 (singular input) becomes inf unless the input itself has NaNs
  const inputNan = ops.reduceOr(ops.ne(a, a), [a.ndim - 2, a.ndim - 1]);
  return ops.select(ops.and(ops.ne(r, r), ops.not(inputNan)), ops.fullLike(r, Infinity), r);
}

// ---------------------------------------------------------------- norms
export type NormOrd = number | "fro" | "f" | "nuc" | null;
function keep(x: Array, axes: number[], ndim: number, keepdims: boolean): Array {
  if (!keepdims) return x;
  const s: number[] = [];
  let k = 0;
  for (let i = 0; i < ndim; i++) s.push(axes.includes(i) ? 1 : x.shape[k++]);
  return ops.reshape(x, s);
}
/** |x|^2 elementwise, real (x conj(x)'s real part for complex x). */
const absSquare = (x: Array): Array => (isComplex(x.dtype) ? ops.real(ops.mul(x, ops.conj(x))) : ops.mul(x, x));
function vectorNormImpl(x: Array, axes: number[], ord: NormOrd): Array {
  const ax = (y: Array) => ops.abs(y);
  if (ord === null || ord === 2) return ops.sqrt(ops.reduceSum(absSquare(x), axes));
  if (typeof ord === "string") throw new Error(`linalg.norm: invalid order ${JSON.stringify(ord)} for a vector norm`);
  if (ord === Infinity) return ops.reduceMax(ax(x), axes);
  if (ord === -Infinity) return ops.reduceMin(ax(x), axes);
  if (ord === 0) return ops.reduceSum(ops.convert(ops.ne(x, ops.scalarLike(x, 0)), realDType(x.dtype)), axes);
  if (ord === 1) return ops.reduceSum(ax(x), axes);
  // (sum |x|^p)^(1/p)
  const xa = ax(x);
  const s = ops.reduceSum(ops.pow(xa, ops.scalarLike(xa, ord)), axes);
  return ops.pow(s, ops.scalarLike(s, 1 / ord));
}
function matrixNormImpl(fn: string, x: Array, r: number, c: number, ord: NormOrd): Array {
  if (ord === null || ord === "fro" || ord === "f") return ops.sqrt(ops.reduceSum(absSquare(x), [r, c]));
  const absx = ops.abs(x);
  const sv = () => {
    const m = ops.transpose(x, [...range(x.ndim).filter((i) => i !== r && i !== c), r, c]);
    return P.svd(m, false, false)[0];
  };
  const lastOf = (s: Array) => s.ndim - 1;
  switch (ord) {
    case "nuc": {
      const s = sv();
      return ops.reduceSum(s, [lastOf(s)]);
    }
    case 2: {
      const s = sv();
      return ops.reduceMax(s, [lastOf(s)]);
    }
    case -2: {
      const s = sv();
      return ops.reduceMin(s, [lastOf(s)]);
    }
    case 1:
    case -1: {
      const colSums = ops.reduceSum(absx, [r]);
      const cc = c > r ? c - 1 : c;
      return ord === 1 ? ops.reduceMax(colSums, [cc]) : ops.reduceMin(colSums, [cc]);
    }
    case Infinity:
    case -Infinity: {
      const rowSums = ops.reduceSum(absx, [c]);
      const rr = r > c ? r - 1 : r;
      return ord === Infinity ? ops.reduceMax(rowSums, [rr]) : ops.reduceMin(rowSums, [rr]);
    }
    default:
      throw new Error(
        `${fn}: invalid order ${JSON.stringify(ord)} for a matrix norm; expected null, "fro" (or "f"), "nuc", 1, -1, 2, -2, Infinity or -Infinity`,
      );
  }
}
/** jnp.linalg.norm(x, ord=null, axis=null, keepdims=false): vector norms (ord 1/2/inf/-inf/0/p) and matrix norms ("fro"/"nuc"/1/-1/2/-2/inf/-inf). */
export function norm(x: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ ord: NormOrd; axis: number | number[] | null; keepdims: boolean }>("linalg.norm", args, [
    "ord",
    "axis",
    "keepdims",
  ]);
  const a = promoteKeepComplex("linalg.norm", [arr("linalg.norm", x)])[0];
  const ord = o.ord ?? null,
    keepdims = o.keepdims ?? false;
  let axes: number[];
  if (o.axis === undefined || o.axis === null) {
    if (ord === null) return keep(vectorNormImpl(a, range(a.ndim), null), range(a.ndim), a.ndim, keepdims);
    if (a.ndim !== 1 && a.ndim !== 2)
      throw new Error(
        `linalg.norm: improper number of dimensions to norm: ord=${JSON.stringify(ord)} with axis=null needs a 1-D or 2-D array, got shape ${shapeStr(a.shape)}`,
      );
    axes = range(a.ndim);
  } else axes = (typeof o.axis === "number" ? [o.axis] : o.axis).map((i) => normalizeAxis("linalg.norm", i, a.ndim));
  if (axes.length === 1) return keep(vectorNormImpl(a, axes, ord), axes, a.ndim, keepdims);
  if (axes.length === 2) {
    if (axes[0] === axes[1]) throw new Error(`linalg.norm: duplicate axes given: ${JSON.stringify(o.axis)}`);
    return keep(matrixNormImpl("linalg.norm", a, axes[0], axes[1], ord), axes, a.ndim, keepdims);
  }
  throw new Error(
    `linalg.norm: improper number of axes: expected 1 (vector norm) or 2 (matrix norm), got ${JSON.stringify(o.axis)}`,
  );
}
/** jnp.linalg.vectorNorm(x, axis=null, keepdims=false, ord=2): axis=null flattens. */
export function vectorNorm(x: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ axis: number | number[] | null; keepdims: boolean; ord: NormOrd }>("linalg.vectorNorm", args, [
    "axis",
    "keepdims",
    "ord",
  ]);
  const a = promoteKeepComplex("linalg.vectorNorm", [arr("linalg.vectorNorm", x)])[0];
  const axes =
    o.axis === undefined || o.axis === null
      ? range(a.ndim)
      : (typeof o.axis === "number" ? [o.axis] : o.axis).map((i) => normalizeAxis("linalg.vectorNorm", i, a.ndim));
  return keep(vectorNormImpl(a, axes, o.ord ?? 2), axes, a.ndim, o.keepdims ?? false);
}
/** jnp.linalg.matrixNorm(x, keepdims=false, ord="fro"): over the last two axes. */
export function matrixNorm(x: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ keepdims: boolean; ord: NormOrd }>("linalg.matrixNorm", args, ["keepdims", "ord"]);
  const a = matrixArg("linalg.matrixNorm", x, false);
  return norm(a, o.ord ?? "fro", [-2, -1], o.keepdims ?? false);
}

// ---------------------------------------------------------------- misc
/**
 * The cheapest parenthesization of a chain of matrices with dims[i] x dims[i + 1] (the textbook matrix-chain
 * dynamic program, as NumPy's multi_dot and JAX's einsum-based one choose an order by cost): split[i][j] is where
 * the product of matrices i..j splits.
 */
function chainOrder(dims: readonly number[]): number[][] {
  const n = dims.length - 1;
  const cost = range(n).map(() => new JSArray<number>(n).fill(0));
  const split = range(n).map(() => new JSArray<number>(n).fill(0));
  for (let len = 1; len < n; len++)
    for (let i = 0; i + len < n; i++) {
      const j = i + len;
      cost[i][j] = Infinity;
      for (let k = i; k < j; k++) {
        const c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1];
        if (c < cost[i][j]) [cost[i][j], split[i][j]] = [c, k];
      }
    }
  return split;
}
/**
 * jnp.linalg.multiDot(arrays): chained matmul in the order of fewest multiplications (ties: left to right); a 1-D
 * first (last) operand is a row (column) vector.
 */
export function multiDot(arrays: AL[]): Array {
  if (arrays.length < 2) throw new Error(`linalg.multiDot: expecting at least two arrays, got ${arrays.length}`);
  const xs = arrays.map((v) => arr("linalg.multiDot", v));
  xs.forEach((x, i) => {
    const ok = i === 0 || i === xs.length - 1 ? x.ndim === 1 || x.ndim === 2 : x.ndim === 2;
    if (!ok)
      throw new Error(
        `linalg.multiDot: array ${i} has shape ${shapeStr(x.shape)}; the first and last arrays must be 1-D or 2-D and the others 2-D`,
      );
  });
  if (xs.length === 2) return matmul(xs[0], xs[1]);
  // a 1-D first operand is (1, n), a 1-D last one (n, 1)
  const m = xs.length;
  const cols = xs.map((x, i) => (x.ndim === 2 ? x.shape[1] : i === 0 ? x.shape[0] : 1));
  const dims = [xs[0].ndim === 2 ? xs[0].shape[0] : 1, ...cols];
  const split = chainOrder(dims);
  const product = (i: number, j: number): Array =>
    i === j ? xs[i] : matmul(product(i, split[i][j]), product(split[i][j] + 1, j));
  return product(0, m - 1);
}
/** jnp.linalg.diagonal(x, offset=0): the diagonal of the last two axes. */
export function diagonal(x: AL, ...args: unknown[]): Array {
  const { offset } = parseArgs<{ offset: number }>("linalg.diagonal", args, ["offset"]);
  const a = arr("linalg.diagonal", x);
  if (a.ndim < 2) throw new Error(`linalg.diagonal: x must be at least 2-dimensional, got shape ${shapeStr(a.shape)}`);
  const k = offset ?? 0,
    m = a.shape[a.ndim - 2],
    n = a.shape[a.ndim - 1];
  const len = Math.max(0, k >= 0 ? Math.min(m, n - k) : Math.min(m + k, n));
  const i = ops.iota("int32", [len, 1], 0);
  const rows = k >= 0 ? i : ops.add(i, ops.full([], -k, "int32")),
    cols = k >= 0 ? ops.add(i, ops.full([], k, "int32")) : i;
  const g = ops.gather(a, ops.concatenate([rows, cols], 1), [a.ndim - 2, a.ndim - 1], "clip");
  return ops.moveaxis(g, 0, g.ndim - 1);
}
/** jnp.linalg.trace(x, offset=0, dtype=null): sum of the diagonal of the last two axes. */
export function trace(x: AL, ...args: unknown[]): Array {
  const o = parseArgs<{ offset: number; dtype: DType }>("linalg.trace", args, ["offset", "dtype"]);
  let d = diagonal(x, o.offset ?? 0);
  if (o.dtype) d = ops.convert(d, o.dtype);
  return ops.reduceSum(d, [d.ndim - 1]);
}

/** jnp.linalg.cross(x1, x2, axis=-1): cross product of 3-vectors along axis (broadcasting the rest). */
export function cross(x1: AL, x2: AL, ...args: unknown[]): Array {
  const { axis } = parseArgs<{ axis: number }>("linalg.cross", args, ["axis"]);
  let [x, y] = promoteAll("linalg.cross", [arr("linalg.cross", x1), arr("linalg.cross", x2)]);
  if (x.ndim === 0 || y.ndim === 0)
    throw new Error(
      `linalg.cross: operands must be at least 1-dimensional, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  const ax = axis ?? -1;
  x = ops.moveaxis(x, normalizeAxis("linalg.cross", ax, x.ndim), x.ndim - 1);
  y = ops.moveaxis(y, normalizeAxis("linalg.cross", ax, y.ndim), y.ndim - 1);
  if (x.shape[x.ndim - 1] !== 3 || y.shape[y.ndim - 1] !== 3)
    throw new Error(
      `linalg.cross: both inputs must have size 3 along axis ${ax}, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  const batch = broadcastShape([x.shape.slice(0, -1), y.shape.slice(0, -1)], "linalg.cross");
  const c = (v: Array, i: number) =>
    bcast(ops.reshape(ops.sliceInDim(v, i, i + 1, 1, v.ndim - 1), v.shape.slice(0, -1)), batch);
  const [a0, a1, a2, b0, b1, b2] = [c(x, 0), c(x, 1), c(x, 2), c(y, 0), c(y, 1), c(y, 2)];
  const comps = [
    ops.sub(ops.mul(a1, b2), ops.mul(a2, b1)),
    ops.sub(ops.mul(a2, b0), ops.mul(a0, b2)),
    ops.sub(ops.mul(a0, b1), ops.mul(a1, b0)),
  ];
  const st = ops.concatenate(
    comps.map((v) => ops.reshape(v, [...batch, 1])),
    batch.length,
  );
  return ops.moveaxis(st, batch.length, normalizeAxis("linalg.cross", ax, batch.length + 1));
}
