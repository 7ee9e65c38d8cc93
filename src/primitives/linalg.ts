/**
 * @file Linear-algebra primitives (cholesky, triangular_solve, lu, qr, eigh, svd): shape rules, reference impls on the
 * float64 kernels (float32 rounds the f64 result), JAX's jvp rules, triangular_solve's transpose, and batching.
 */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { type BDim, type MaybeZero, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { prod, shapeStr } from "../core/shape.js";
import { bind } from "../core/trace.js";
import * as K from "../backends/interpreter/linalg-kernels.js";
import { complexCholesky, complexLu, complexTriangularSolve } from "../backends/interpreter/complex-linalg-kernels.js";
import { complexEigh, complexQr, complexSvd } from "../backends/interpreter/complex-decomp-kernels.js";
import { isComplex, realDType } from "../core/dtype.js";
import { fromNums, nums } from "./ref-util.js";
import * as ops from "./ops.js";
import { takeAlongDim } from "./sort.js";

// ---------------------------------------------------------------- matrix helpers on traced values
const range = (n: number): number[] => [...globalThis.Array(n).keys()];
/** Batched matmul of [...B, m, k] and [...B, k, n] (equal batch shapes). */
export function mm(a: Array, b: Array): Array {
  const nd = a.ndim,
    bd = range(nd - 2);
  return ops.dotGeneral(a, b, [
    [[nd - 1], [nd - 2]],
    [bd, bd],
  ]);
}
/** Swaps the last two axes. */
export function mT(x: Array): Array {
  const p = range(x.ndim);
  p[x.ndim - 2] = x.ndim - 1;
  p[x.ndim - 1] = x.ndim - 2;
  return ops.transpose(x, p);
}
/** Conjugate transpose of the last two axes (the transpose for real dtypes). */
export function mH(x: Array): Array {
  return isComplex(x.dtype) ? ops.conj(mT(x)) : mT(x);
}
/** Keeps the lower (j - i <= k) or upper (j - i >= k) band of the last two axes, zeroing the rest. */
export function triPart(x: Array, lower: boolean, k = 0): Array {
  const nd = x.ndim;
  const rows = ops.iota("int32", x.shape, nd - 2),
    cols = ops.iota("int32", x.shape, nd - 1);
  const diff = ops.sub(cols, rows);
  const keep = lower ? ops.le(diff, ops.full([], k, "int32")) : ops.ge(diff, ops.full([], k, "int32"));
  return ops.select(keep, x, ops.zerosLikeArray(x));
}
/** Identity matrices of shape [...B, n, n] (B from `shape`) in x's dtype. */
export function eyeLike(shape: readonly number[], dtype: ShapedArray["dtype"]): Array {
  const nd = shape.length;
  return ops.convert(ops.eq(ops.iota("int32", shape, nd - 2), ops.iota("int32", shape, nd - 1)), dtype);
}
/** The main diagonal of the last two axes: [...B, m, n] -> [...B, min(m, n)]. */
export function diagPart(x: Array): Array {
  const nd = x.ndim,
    k = Math.min(x.shape[nd - 2], x.shape[nd - 1]);
  const d = ops.iota("int32", [k, 1], 0);
  const r = ops.gather(x, ops.concatenate([d, d], 1), [nd - 2, nd - 1], "clip");
  return ops.moveaxis(r, 0, r.ndim - 1);
}
/** Places v [...B, k] on the diagonal of [...B, k, k]. */
export function diagEmbed(v: Array): Array {
  const k = v.shape[v.ndim - 1];
  const shape = [...v.shape, k];
  return ops.mul(ops.broadcastInDim(v, shape, [...range(v.ndim - 1), v.ndim]), eyeLike(shape, v.dtype));
}
const scal = (x: Array, v: number): Array => ops.scalarLike(x, v);
const addZ = (a: Array | null, b: Array): Array => (a === null ? b : ops.add(a, b));

// ---------------------------------------------------------------- shape checks and kernel plumbing
function checkFloatMatrix(name: string, a: ShapedArray, square: boolean, complexOk = false): void {
  if (a.dtype !== "float32" && a.dtype !== "float64" && !(complexOk && isComplex(a.dtype)))
    throw new TypeError(
      `${name}: only float32 and float64 operands are supported, got ${a.str()} (convert first${complexOk ? "; complex64 and complex128 are accepted too" : ""})`,
    );
  if (a.ndim < 2)
    throw new TypeError(`${name}: operand must have at least 2 dimensions (a batch of matrices), got ${a.str()}`);
  if (square && a.shape[a.ndim - 1] !== a.shape[a.ndim - 2])
    throw new TypeError(`${name}: operand must be a batch of square matrices, got ${a.str()}`);
}
function mats(a: ShapedArray): { batch: number; m: number; n: number } {
  const nd = a.ndim;
  return { batch: prod(a.shape.slice(0, nd - 2)), m: a.shape[nd - 2], n: a.shape[nd - 1] };
}
const withShape = (a: ShapedArray, shape: readonly number[], dtype = a.dtype): ShapedArray =>
  new ShapedArray(shape, dtype, false);
const i32 = (aval: ShapedArray, v: Int32Array): ArrayImpl => new ArrayImpl(aval, v.slice());
/** Complex result from interleaved float64 (re, im) pairs (complex64 rounds them). */
const fromInterleaved = (aval: ShapedArray, v: Float64Array): ArrayImpl =>
  new ArrayImpl(aval, aval.dtype === "complex64" ? Float32Array.from(v) : v);
/** Batching for one-operand linalg primitives: they batch over leading dims, so the vmapped axis moves to 0. */
function vmapUnary<P extends Record<string, unknown>>(p: () => Primitive<P>) {
  return (_a: unknown, [x]: Array[], [d]: BDim[], params: P): [Array[], BDim[]] => {
    const outs = bind(p(), [ops.moveaxis(x, d!, 0)], params);
    return [outs, outs.map((): BDim => 0)];
  };
}

// ---------------------------------------------------------------- cholesky (reads the lower triangle)
export const choleskyP: Primitive = new Primitive("cholesky", {
  abstractEval([a]) {
    checkFloatMatrix("cholesky", a, true, true);
    return [a.strongly()];
  },
  impl([a], _p, [out]) {
    const { batch, n } = mats(a.aval);
    if (isComplex(a.dtype)) return [fromInterleaved(out, complexCholesky(nums(a), batch, n))];
    return [fromNums(out, K.cholesky(nums(a), batch, n, { symmetrizeInput: false }))];
  },
  jvp([a], [t]) {
    const L = cholesky(a);
    if (t instanceof Zero) return [[L], [new Zero(L.aval)]];
    // sigma = herm(dA); tmp = L^-1 sigma L^-H; dL = L phi(tmp) with phi = lower triangle, diagonal halved
    const c = isComplex(t.dtype);
    const sigma = ops.mul(ops.add(t, c ? ops.conj(mT(t)) : mT(t)), scal(t, 0.5));
    const right = triangularSolve(L, sigma, { leftSide: false, lower: true, transposeA: true, conjugateA: c });
    const tmp = triangularSolve(L, right, { leftSide: true, lower: true });
    const phi = ops.sub(triPart(tmp, true, 0), ops.mul(ops.mul(tmp, eyeLike(tmp.shape, tmp.dtype)), scal(tmp, 0.5)));
    return [[L], [mm(L, phi)]];
  },
  vmap: vmapUnary(() => choleskyP),
  missing: {
    transpose: "cholesky is not linear",
    lower:
      "ONNX has no matrix-decomposition operators; runs on the reference interpreter (jit splits the program around it)",
  },
});
/** lax.linalg.cholesky on the lower triangle (no symmetrization). */
export const cholesky = (a: Array): Array => bind(choleskyP, [a])[0];

// ---------------------------------------------------------------- triangular_solve(a, b)
export interface TriangularSolveParams {
  left_side: boolean;
  lower: boolean;
  transpose_a: boolean;
  conjugate_a: boolean;
  unit_diagonal: boolean;
  [k: string]: unknown;
}
export interface TriangularSolveOpts {
  leftSide?: boolean;
  lower?: boolean;
  transposeA?: boolean;
  conjugateA?: boolean;
  unitDiagonal?: boolean;
}
const tsParams = (o: TriangularSolveOpts): TriangularSolveParams => ({
  left_side: o.leftSide ?? false,
  lower: o.lower ?? false,
  transpose_a: o.transposeA ?? false,
  conjugate_a: o.conjugateA ?? false,
  unit_diagonal: o.unitDiagonal ?? false,
});
export const triangularSolveP: Primitive<TriangularSolveParams> = new Primitive<TriangularSolveParams>(
  "triangular_solve",
  {
    abstractEval([a, b], { left_side }) {
      checkFloatMatrix("triangular_solve", a, true, true);
      if (b.ndim !== a.ndim || b.dtype !== a.dtype)
        throw new TypeError(`triangular_solve: a ${a.str()} and b ${b.str()} must have the same rank and dtype`);
      const nd = a.ndim,
        k = a.shape[nd - 1];
      if (a.shape.slice(0, nd - 2).join() !== b.shape.slice(0, nd - 2).join())
        throw new TypeError(`triangular_solve: batch dimensions of a ${a.str()} and b ${b.str()} must be equal`);
      const need = left_side ? b.shape[nd - 2] : b.shape[nd - 1];
      if (need !== k)
        throw new TypeError(
          `triangular_solve: a ${a.str()} is ${k}x${k} but b ${b.str()} has ${need} ${left_side ? "rows (left_side=true)" : "columns (left_side=false)"}`,
        );
      return [b.strongly()];
    },
    impl([a, b], p, [out]) {
      const { batch, m, n } = mats(b.aval);
      if (isComplex(a.dtype)) {
        const opts = {
          leftSide: p.left_side,
          lower: p.lower,
          transposeA: p.transpose_a,
          conjugateA: p.conjugate_a,
          unitDiagonal: p.unit_diagonal,
        };
        return [fromInterleaved(out, complexTriangularSolve(nums(a), nums(b), batch, m, n, opts))];
      }
      const x = K.triangularSolve(nums(a), nums(b), batch, m, n, {
        leftSide: p.left_side,
        lower: p.lower,
        transposeA: p.transpose_a,
        unitDiagonal: p.unit_diagonal,
      });
      return [fromNums(out, x)];
    },
    jvp([a, b], [ta, tb], p) {
      const x = bind(triangularSolveP, [a, b], p)[0];
      if (ta instanceof Zero && tb instanceof Zero) return [[x], [new Zero(x.aval)]];
      // op(A) X = B  =>  dX = op(A)^-1 (dB - op(dA) X)   (left);   X op(A) = B  =>  dX = (dB - X op(dA)) op(A)^-1
      let rhs: Array | null = tb instanceof Zero ? null : tb;
      if (!(ta instanceof Zero)) {
        const band = p.unit_diagonal ? (p.lower ? -1 : 1) : 0;
        let da = triPart(ta, p.lower, band);
        if (p.transpose_a) da = mT(da);
        if (p.conjugate_a && isComplex(da.dtype)) da = ops.conj(da);
        rhs = addZ(rhs, ops.neg(p.left_side ? mm(da, x) : mm(x, da)));
      }
      return [[x], [bind(triangularSolveP, [a, rhs!], p)[0]]];
    },
    transpose([ct], [a, b], p) {
      if (a instanceof UndefinedPrimal)
        throw new Error("triangular_solve transpose: the matrix a must not be linear (only b is)");
      const bAval = (b as UndefinedPrimal).aval;
      if (ct instanceof Zero) return [null, new Zero(bAval)];
      return [null, bind(triangularSolveP, [a as Array, ct], { ...p, transpose_a: !p.transpose_a })[0]];
    },
    vmap(axis, [a, b], [da, db], p) {
      const A = da === null ? ops.broadcastBatch(a, axis.size, 0) : ops.moveaxis(a, da, 0);
      const B = db === null ? ops.broadcastBatch(b, axis.size, 0) : ops.moveaxis(b, db, 0);
      return [bind(triangularSolveP, [A, B], p), [0]];
    },
    missing: {
      lower:
        "ONNX has no matrix-decomposition operators; runs on the reference interpreter (jit splits the program around it)",
    },
  },
);
/** lax.linalg.triangular_solve(a, b, {leftSide, lower, transposeA, conjugateA, unitDiagonal}). */
export function triangularSolve(a: Array, b: Array, o: TriangularSolveOpts = {}): Array {
  return bind(triangularSolveP, [a, b], tsParams(o))[0];
}

// ---------------------------------------------------------------- lu(a) -> (lu, pivots, permutation)
export const luP: Primitive = new Primitive(
  "lu",
  {
    abstractEval([a]) {
      checkFloatMatrix("lu", a, false, true);
      const nd = a.ndim,
        m = a.shape[nd - 2],
        n = a.shape[nd - 1],
        B = a.shape.slice(0, nd - 2);
      return [a.strongly(), withShape(a, [...B, Math.min(m, n)], "int32"), withShape(a, [...B, m], "int32")];
    },
    impl([a], _p, [o0, o1, o2]) {
      const { batch, m, n } = mats(a.aval);
      if (isComplex(a.dtype)) {
        const c = complexLu(nums(a), batch, m, n);
        return [fromInterleaved(o0, c.lu), i32(o1, c.pivots), i32(o2, c.permutation)];
      }
      const r = K.lu(nums(a), batch, m, n);
      return [fromNums(o0, r.lu), i32(o1, r.pivots), i32(o2, r.permutation)];
    },
    jvp([a], [t]) {
      const [lu, piv, perm] = bind(luP, [a]);
      const zs: MaybeZero[] = [new Zero(piv.aval), new Zero(perm.aval)];
      if (t instanceof Zero)
        return [
          [lu, piv, perm],
          [new Zero(lu.aval), ...zs],
        ];
      const nd = a.ndim,
        m = a.shape[nd - 2],
        n = a.shape[nd - 1],
        k = Math.min(m, n),
        B = a.shape.slice(0, nd - 2);
      const zero = scal(lu, 0),
        noPad = B.map((): [number, number, number] => [0, 0, 0]);
      // P dA, then L^-1 (P dA) U^-1 split into strictly-lower and upper parts (L padded to m x m, U to n x n)
      const x = takeAlongDim(t, ops.broadcastInDim(perm, a.shape, range(nd - 1)), nd - 2);
      const lCols = ops.slice(lu, [...B.map(() => 0), 0, 0], [...B, m, k]);
      const L = ops.add(
        ops.pad(triPart(lCols, true, -1), zero, [...noPad, [0, 0, 0], [0, m - k, 0]]),
        eyeLike([...B, m, m], lu.dtype),
      );
      const uRows = ops.slice(lu, [...B.map(() => 0), 0, 0], [...B, k, n]);
      let U = ops.pad(triPart(uRows, false, 0), zero, [...noPad, [0, n - k, 0], [0, 0, 0]]);
      if (n > k)
        U = ops.add(U, ops.pad(eyeLike([...B, n - k, n - k], lu.dtype), zero, [...noPad, [k, 0, 0], [k, 0, 0]]));
      const la = triangularSolve(L, x, { leftSide: true, lower: true, unitDiagonal: true });
      const lau = triangularSolve(U, la, { leftSide: false, lower: false });
      const dlu = ops.add(mm(L, triPart(lau, true, -1)), mm(triPart(lau, false, 0), U));
      return [
        [lu, piv, perm],
        [dlu, ...zs],
      ];
    },
    vmap: vmapUnary(() => luP),
    missing: {
      transpose: "lu is not linear",
      lower:
        "ONNX has no matrix-decomposition operators; runs on the reference interpreter (jit splits the program around it)",
    },
  },
  { multipleResults: true },
);
/** lax.linalg.lu: [lu, pivots, permutation] (pivots/permutation int32, 0-based). */
export function lu(a: Array): [Array, Array, Array] {
  const [x, p, q] = bind(luP, [a]);
  return [x, p, q];
}

// ---------------------------------------------------------------- qr(a) -> (q, r)
export const qrP: Primitive<{ full_matrices: boolean }> = new Primitive<{ full_matrices: boolean }>(
  "qr",
  {
    abstractEval([a], { full_matrices }) {
      checkFloatMatrix("qr", a, false, true);
      const nd = a.ndim,
        m = a.shape[nd - 2],
        n = a.shape[nd - 1],
        k = Math.min(m, n),
        B = a.shape.slice(0, nd - 2);
      const c = full_matrices ? m : k;
      return [withShape(a, [...B, m, c]), withShape(a, [...B, c, n])];
    },
    impl([a], { full_matrices }, [oq, or]) {
      const { batch, m, n } = mats(a.aval);
      if (isComplex(a.dtype)) {
        const c = complexQr(nums(a), batch, m, n, full_matrices);
        return [fromInterleaved(oq, c.q), fromInterleaved(or, c.r)];
      }
      const r = K.qr(nums(a), batch, m, n, full_matrices);
      return [fromNums(oq, r.q), fromNums(or, r.r)];
    },
    jvp([a], [t], p) {
      const [q, r] = bind(qrP, [a], p);
      if (t instanceof Zero)
        return [
          [q, r],
          [new Zero(q.aval), new Zero(r.aval)],
        ];
      const m = a.shape[a.ndim - 2],
        n = a.shape[a.ndim - 1];
      if (m < n || (p.full_matrices && m !== n)) {
        throw new Error(
          `qr jvp: unimplemented case of the QR derivative for a ${shapeStr(a.shape)} operand (needs m >= n, and m == n when full_matrices=true)`,
        );
      }
      // dX R^-1, Q^H dX R^-1, its skew-Hermitian part do (plus i Im of the diagonal for complex, as JAX);
      // dQ = Q (do - QhdXRinv) + dXRinv, dR = (QhdXRinv - do) R
      const dxRinv = triangularSolve(r, t, { leftSide: false, lower: false });
      const qtDxRinv = mm(mH(q), dxRinv);
      const low = triPart(qtDxRinv, true, -1);
      let dOm = ops.sub(low, mH(low));
      if (isComplex(a.dtype)) {
        const imDiag = ops.sub(qtDxRinv, ops.convert(ops.real(qtDxRinv), a.dtype));
        dOm = ops.add(dOm, ops.mul(imDiag, eyeLike(imDiag.shape, a.dtype)));
      }
      const dq = ops.add(mm(q, ops.sub(dOm, qtDxRinv)), dxRinv);
      const dr = mm(ops.sub(qtDxRinv, dOm), r);
      return [
        [q, r],
        [dq, dr],
      ];
    },
    vmap: vmapUnary(() => qrP),
    missing: {
      transpose: "qr is not linear",
      lower:
        "ONNX has no matrix-decomposition operators; runs on the reference interpreter (jit splits the program around it)",
    },
  },
  { multipleResults: true },
);
/** lax.linalg.qr: [q, r] (reduced unless fullMatrices). */
export function qr(a: Array, fullMatrices = false): [Array, Array] {
  const [q, r] = bind(qrP, [a], { full_matrices: fullMatrices });
  return [q, r];
}

// ---------------------------------------------------------------- eigh(a) -> (v, w)
export interface EighParams {
  lower: boolean;
  sort_eigenvalues: boolean;
  [k: string]: unknown;
}
export const eighP: Primitive<EighParams> = new Primitive<EighParams>(
  "eigh",
  {
    abstractEval([a]) {
      checkFloatMatrix("eigh", a, true, true);
      return [a.strongly(), withShape(a, a.shape.slice(0, -1), realDType(a.dtype))];
    },
    impl([a], { lower, sort_eigenvalues }, [ov, ow]) {
      const { batch, n } = mats(a.aval);
      if (isComplex(a.dtype)) {
        const c = complexEigh(nums(a), batch, n, lower, sort_eigenvalues);
        return [fromInterleaved(ov, c.v), fromNums(ow, c.w)];
      }
      const r = K.eigh(nums(a), batch, n, { lower, symmetrizeInput: false, sortEigenvalues: sort_eigenvalues });
      return [fromNums(ov, r.v), fromNums(ow, r.w)];
    },
    jvp([a], [t], p) {
      const [v, w] = bind(eighP, [a], p);
      if (t instanceof Zero)
        return [
          [v, w],
          [new Zero(v.aval), new Zero(w.aval)],
        ];
      const nd = a.ndim,
        sh = a.shape;
      // F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it; dV = V (F * V^H dA V), dw = Re diag(V^H dA V)
      const wc = ops.convert(w, a.dtype);
      const eye = eyeLike(sh, a.dtype);
      const wj = ops.broadcastInDim(wc, sh, [...range(nd - 2), nd - 1]),
        wi = ops.broadcastInDim(wc, sh, range(nd - 1));
      const F = ops.sub(ops.div(scal(eye, 1), ops.add(eye, ops.sub(wj, wi))), eye);
      const vtav = mm(mm(mH(v), t), v);
      const dw = diagPart(vtav);
      return [
        [v, w],
        [mm(v, ops.mul(F, vtav)), isComplex(a.dtype) ? ops.real(dw) : dw],
      ];
    },
    vmap: vmapUnary(() => eighP),
    missing: {
      transpose: "eigh is not linear",
      lower:
        "ONNX has no matrix-decomposition operators; runs on the reference interpreter (jit splits the program around it)",
    },
  },
  { multipleResults: true },
);
/** lax.linalg.eigh: [v, w] with eigenvectors in the columns of v (reads the `lower` triangle). */
export function eigh(a: Array, lower = true, sortEigenvalues = true): [Array, Array] {
  const [v, w] = bind(eighP, [a], { lower, sort_eigenvalues: sortEigenvalues });
  return [v, w];
}

// ---------------------------------------------------------------- svd(a) -> (s, u, vt) | (s)
export interface SvdParams {
  full_matrices: boolean;
  compute_uv: boolean;
  [k: string]: unknown;
}
export const svdP: Primitive<SvdParams> = new Primitive<SvdParams>(
  "svd",
  {
    abstractEval([a], { full_matrices, compute_uv }) {
      checkFloatMatrix("svd", a, false, true);
      const nd = a.ndim,
        m = a.shape[nd - 2],
        n = a.shape[nd - 1],
        k = Math.min(m, n),
        B = a.shape.slice(0, nd - 2);
      const s = withShape(a, [...B, k], realDType(a.dtype));
      if (!compute_uv) return [s];
      return [s, withShape(a, [...B, m, full_matrices ? m : k]), withShape(a, [...B, full_matrices ? n : k, n])];
    },
    impl([a], { full_matrices, compute_uv }, outs) {
      const { batch, m, n } = mats(a.aval);
      if (isComplex(a.dtype)) {
        const c = complexSvd(nums(a), batch, m, n, full_matrices, compute_uv);
        const cres = [fromNums(outs[0], c.s)];
        if (compute_uv) cres.push(fromInterleaved(outs[1], c.u!), fromInterleaved(outs[2], c.vh!));
        return cres;
      }
      const r = K.svd(nums(a), batch, m, n, { fullMatrices: full_matrices, computeUv: compute_uv });
      const res = [fromNums(outs[0], r.s)];
      if (compute_uv) res.push(fromNums(outs[1], r.u!), fromNums(outs[2], r.vt!));
      return res;
    },
    jvp([a], [t], p) {
      const outs = bind(svdP, [a], p);
      if (t instanceof Zero) return [outs, outs.map((o) => new Zero(o.aval))];
      if (p.compute_uv && p.full_matrices) {
        throw new Error(
          "svd jvp: the derivative of the singular vectors is not implemented for full_matrices=true (use fullMatrices: false)",
        );
      }
      const [s, U, Vt] = p.compute_uv ? outs : bind(svdP, [a], { full_matrices: false, compute_uv: true });
      const nd = a.ndim,
        m = a.shape[nd - 2],
        n = a.shape[nd - 1],
        k = s.shape[s.ndim - 1];
      // complex: conjugate transposes, ds = Re diag(U^H dA V), s cast to a's dtype (JAX's svd_jvp_rule)
      const V = mH(Vt);
      const dS = mm(mm(mH(U), t), V);
      const ds0 = diagPart(dS);
      const ds = isComplex(a.dtype) ? ops.real(ds0) : ds0;
      if (!p.compute_uv) return [[s], [ds]];
      const sc = ops.convert(s, a.dtype);
      const kk = [...s.shape, k];
      const sRow = ops.broadcastInDim(sc, kk, [...range(nd - 2), nd - 1]),
        sCol = ops.broadcastInDim(sc, kk, range(nd - 1));
      // F_ij = 1 / (s_j^2 - s_i^2) off the diagonal; zeros handled like JAX (eye added then subtracted)
      const eye = eyeLike(kk, a.dtype);
      const sDiffs = ops.mul(ops.add(sRow, sCol), ops.sub(sRow, sCol));
      const F = ops.sub(ops.div(scal(eye, 1), ops.add(sDiffs, eye)), eye);
      const dSS = ops.mul(sRow, dS),
        SdS = ops.mul(sCol, dS);
      const sZero = ops.convert(ops.eq(s, scal(s, 0)), s.dtype);
      const sInv = ops.convert(ops.sub(ops.div(scal(s, 1), ops.add(s, sZero)), sZero), a.dtype);
      const dUdVdiag = ops.mul(ops.mul(ops.sub(dS, mH(dS)), scal(dS, 0.5)), diagEmbed(sInv));
      let dU = mm(U, ops.add(ops.mul(F, ops.add(dSS, mH(dSS))), dUdVdiag));
      let dV = mm(V, ops.mul(F, ops.add(SdS, mH(SdS))));
      const sDiv = (x: Array) => ops.div(x, ops.broadcastInDim(sc, x.shape, [...range(nd - 2), nd - 1]));
      if (m > n) {
        const dAV = mm(t, V);
        dU = ops.add(dU, sDiv(ops.sub(dAV, mm(U, mm(mH(U), dAV)))));
      }
      if (n > m) {
        const dAhU = mm(mH(t), U);
        dV = ops.add(dV, sDiv(ops.sub(dAhU, mm(V, mm(Vt, dAhU)))));
      }
      return [
        [s, U, Vt],
        [ds, dU, mH(dV)],
      ];
    },
    vmap: vmapUnary(() => svdP),
    missing: {
      transpose: "svd is not linear",
      lower:
        "ONNX has no matrix-decomposition operators; runs on the reference interpreter (jit splits the program around it)",
    },
  },
  { multipleResults: true },
);
/** lax.linalg.svd: [s, u, vt] when computeUv (default), else [s]. */
export function svd(a: Array, fullMatrices = true, computeUv = true): Array[] {
  return bind(svdP, [a], { full_matrices: fullMatrices, compute_uv: computeUv });
}
