/** @file ONNX lowerings (jaxts programs, installed from src/lowerings/index.ts) of cholesky, triangular_solve and lu: the reference kernels' algorithms as loops of one-hot masked row/column updates, computed in float64 (standard ONNX: used where the native runner's custom ops of linalg-native.ts are not). */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import { type TriangularSolveParams, mT, triPart } from "../primitives/linalg.js";
import { foriLoop } from "../transforms/scan.js";
import { F64, lead, range, zeros } from "./util.js";

// Every lowering converts to float64, runs the reference kernel's algorithm step for step (same pivots, same
// failure tests, same elements read) and rounds back, so float32 results agree with the interpreter's
// float64-then-rounded results. Dynamic row/column access uses one-hot masks (iota == i) with select, never
// multiplication by a mask, so an Inf/NaN elsewhere in the matrix cannot leak in as 0 * Inf.

/** int32 index grid along `axis` of `shape`. */
const idx = (shape: readonly number[], axis: number): Array => ops.iota("int32", shape, axis);
/** A 0-d int32 value broadcast to `shape`. */
const bc = (i: Array, shape: readonly number[]): Array => ops.broadcastInDim(i, shape, []);
/** x [...B, c] broadcast along a new axis `at` of `shape` (at = nd-2: repeated over rows; nd-1: over columns). */
const bcAt = (x: Array, shape: readonly number[], at: number): Array =>
  ops.broadcastInDim(
    x,
    shape,
    range(shape.length).filter((d) => d !== at),
  );
const i32 = (v: number): Array => ops.full([], v, "int32");
/** Zero-element operands need no loop (ONNX Loop shape inference rejects zero-size carries). */
const isEmpty = (x: Array): boolean => x.shape.includes(0);

/** Row i (0-d int32) of x [...B, r, c] -> [...B, c]: sum over rows of select(row == i, x, 0). */
function rowAt(x: Array, i: Array): Array {
  const nd = x.ndim;
  return ops.reduceSum(ops.select(ops.eq(idx(x.shape, nd - 2), bc(i, x.shape)), x, zeros(x)), [nd - 2]);
}
/** Column j (0-d int32) of x [...B, r, c] -> [...B, r]. */
function colAt(x: Array, j: Array): Array {
  const nd = x.ndim;
  return ops.reduceSum(ops.select(ops.eq(idx(x.shape, nd - 1), bc(j, x.shape)), x, zeros(x)), [nd - 1]);
}
/** Element i (0-d int32) of the last axis of v [...B, k] -> [...B]. */
function elemAt(v: Array, i: Array): Array {
  const nd = v.ndim;
  return ops.reduceSum(ops.select(ops.eq(idx(v.shape, nd - 1), bc(i, v.shape)), v, zeros(v)), [nd - 1]);
}
/** Matrix-vector product over the last axes: a [...B, r, c] @ v [...B, c] -> [...B, r]. */
function matvec(a: Array, v: Array): Array {
  const nd = a.ndim,
    bd = range(nd - 2);
  return ops.dotGeneral(a, v, [
    [[nd - 1], [nd - 2]],
    [bd, bd],
  ]);
}

// ---------------------------------------------------------------- cholesky
/**
 * Column-by-column Cholesky on the lower triangle (no symmetrization), as K.cholesky: at step j,
 * s = A[:, j] - L[:, :j] L[j, :j]^T, L[j, j] = sqrt(s_j), L[i, j] = s_i / L[j, j] for i > j. A matrix whose
 * pivot s_j is not > 0 (or NaN) at any step becomes all NaN.
 */
export function choleskyImpl([a]: Array[]): Array[] {
  const x = ops.convert(a, F64);
  const sh = x.shape,
    nd = x.ndim,
    n = sh[nd - 1],
    B = sh.slice(0, nd - 2);
  if (isEmpty(a)) return [a];
  const rows = idx(sh, nd - 2),
    cols = idx(sh, nd - 1);
  const l0 = ops.select(ops.ge(rows, cols), x, zeros(x));
  const [l, ok] = foriLoop(
    0,
    n,
    (j: Array, [w, good]: [Array, Array]): [Array, Array] => {
      const jb = bc(j, sh);
      const before = ops.lt(cols, jb);
      // s = w[:, j] - w[:, :j] @ w[j, :j]  (only columns < j of the already-factored rows are read)
      const lj = rowAt(ops.select(before, w, zeros(w)), j);
      const s = ops.sub(colAt(w, j), matvec(ops.select(before, w, zeros(w)), lj));
      const d = elemAt(s, j);
      const good2 = ops.and(good, ops.gt(d, ops.full(d.shape, 0, F64)));
      const ljj = ops.sqrt(d);
      const sb = bcAt(s, sh, nd - 1),
        db = lead(ljj, sh);
      const atCol = ops.eq(cols, jb);
      const below = ops.and(atCol, ops.gt(rows, jb)),
        diag = ops.and(atCol, ops.eq(rows, jb));
      const w2 = ops.select(below, ops.div(sb, db), ops.select(diag, db, w));
      return [w2, good2];
    },
    [l0, ops.full(B, true, "bool")] as [Array, Array],
  );
  const out = ops.select(lead(ok, sh), l, ops.full(sh, NaN, F64));
  return [ops.convert(out, a.dtype)];
}

// ---------------------------------------------------------------- triangular_solve
/**
 * Left-side substitution op(A) X = B for triangular T = op(A) [...B, m, m] (only its triangle is nonzero):
 * row i of X (in forward order when T is lower, backward when upper) is (B_i - T[i, others] X[others]) / T[i, i],
 * where "others" are the already-solved rows; with unitDiagonal there is no division.
 */
function substitute(t: Array, b: Array, tLower: boolean, unit: boolean): Array {
  const nd = b.ndim,
    m = b.shape[nd - 2];
  const tCols = idx(t.shape, nd - 1),
    bRows = idx(b.shape, nd - 2);
  return foriLoop(
    0,
    m,
    (step: Array, x: Array): Array => {
      const i = tLower ? step : ops.sub(i32(m - 1), step);
      // solved rows: k < i (forward) or k > i (backward)
      const tSide = tLower ? ops.lt(tCols, bc(i, t.shape)) : ops.gt(tCols, bc(i, t.shape));
      const xSide = tLower ? ops.lt(bRows, bc(i, b.shape)) : ops.gt(bRows, bc(i, b.shape));
      const ti = rowAt(ops.select(tSide, t, zeros(t)), i);
      const xs = ops.select(xSide, x, zeros(x));
      // r = T[i, solved] @ X[solved, :]
      const r = ops.dotGeneral(ti, xs, [
        [[nd - 2], [nd - 2]],
        [range(nd - 2), range(nd - 2)],
      ]);
      let xi = ops.sub(rowAt(x, i), r);
      if (!unit) xi = ops.div(xi, lead(elemAt(rowAt(t, i), i), xi.shape));
      return ops.select(ops.eq(bRows, bc(i, b.shape)), bcAt(xi, b.shape, nd - 2), x);
    },
    b,
  );
}

/**
 * triangular_solve reduced to a left-side substitution: op(A) X = B directly, and X op(A) = B as
 * op(A)^T X^T = B^T. conjugate_a is a no-op for real dtypes (as in the reference).
 */
export function triangularSolveImpl([a, b]: Array[], p: TriangularSolveParams): Array[] {
  if (isEmpty(a) || isEmpty(b)) return [b];
  const A = ops.convert(a, F64),
    Bm = ops.convert(b, F64);
  const transposeOp = p.left_side ? p.transpose_a : !p.transpose_a;
  let t = triPart(A, p.lower, 0);
  if (transposeOp) t = mT(t);
  const tLower = p.lower !== transposeOp;
  const x = p.left_side
    ? substitute(t, Bm, tLower, p.unit_diagonal)
    : mT(substitute(t, mT(Bm), tLower, p.unit_diagonal));
  return [ops.convert(x, b.dtype)];
}

// ---------------------------------------------------------------- lu
/**
 * LU with partial pivoting as K.lu (LAPACK getrf): for each column j < min(m, n), the pivot is the first row
 * p >= j of maximal |a[p, j]| (NaN entries below the diagonal never win; a NaN diagonal keeps p = j), rows j and p
 * swap (in the permutation too), the column below the diagonal is divided by a nonzero pivot, and the trailing
 * block gets the rank-1 update a[i, c] -= a[i, j] a[j, c].
 */
export function luImpl([a]: Array[]): Array[] {
  const x = ops.convert(a, F64);
  const sh = x.shape,
    nd = x.ndim,
    m = sh[nd - 2],
    n = sh[nd - 1],
    k = Math.min(m, n),
    B = sh.slice(0, nd - 2);
  const rows = idx(sh, nd - 2),
    cols = idx(sh, nd - 1);
  const vShape = [...B, m],
    vRows = idx(vShape, nd - 2);
  const pivShape = [...B, k],
    pivIdx = idx(pivShape, nd - 2);
  const perm0 = vRows;
  if (isEmpty(a)) return [a, ops.full(pivShape, 0, "int32"), perm0];
  const piv0 = ops.full(pivShape, 0, "int32");
  const [w, piv, perm] = foriLoop(
    0,
    k,
    (j: Array, [w, piv, perm]: [Array, Array, Array]): [Array, Array, Array] => {
      const jv = bc(j, vShape);
      const col = ops.abs(colAt(w, j));
      // candidates: rows >= j whose |value| is not NaN; others score -1 (|value| >= 0 always wins over them)
      const cand = ops.and(ops.ge(vRows, jv), ops.eq(col, col));
      const score = ops.select(cand, col, ops.full(vShape, -1, F64));
      const best = ops.reduceMax(score, [nd - 2]);
      const first = ops.reduceMin(ops.select(ops.eq(score, lead(best, vShape)), vRows, ops.full(vShape, m, "int32")), [
        nd - 2,
      ]);
      const diagNan = ops.ne(elemAt(col, j), elemAt(col, j));
      const pv = ops.select(diagNan, bc(j, B), first);
      // swap rows j and p of w and entries j and p of perm
      const rj = rowAt(w, j);
      const pb = lead(pv, sh),
        jb = bc(j, sh);
      const wRowJ = bcAt(rj, sh, nd - 2);
      const isJ = ops.eq(rows, jb),
        isP = ops.eq(rows, pb);
      const wRowP = bcAt(ops.reduceSum(ops.select(isP, w, zeros(w)), [nd - 2]), sh, nd - 2);
      const ws = ops.select(isJ, wRowP, ops.select(isP, wRowJ, w));
      const pvv = lead(pv, vShape);
      const permJ = lead(elemAt(perm, j), vShape);
      const permP = lead(
        ops.reduceSum(ops.select(ops.eq(vRows, pvv), perm, ops.zerosLikeArray(perm)), [nd - 2]),
        vShape,
      );
      const perm2 = ops.select(ops.eq(vRows, jv), permP, ops.select(ops.eq(vRows, pvv), permJ, perm));
      const piv2 = ops.select(ops.eq(pivIdx, bc(j, pivShape)), lead(pv, pivShape), piv);
      // scale the column below the diagonal by a nonzero pivot
      const uRow = rowAt(ws, j);
      const pivot = elemAt(uRow, j);
      const pivB = lead(pivot, sh);
      const below = ops.gt(rows, jb),
        atCol = ops.eq(cols, jb),
        right = ops.gt(cols, jb);
      const scale = ops.and(ops.and(below, atCol), lead(ops.ne(pivot, ops.full(pivot.shape, 0, F64)), sh));
      const ws2 = ops.select(scale, ops.div(ws, pivB), ws);
      // Schur complement: w[i, c] -= w[i, j] w[j, c] for i > j, c > j
      const l = bcAt(colAt(ws2, j), sh, nd - 1),
        u = bcAt(uRow, sh, nd - 2);
      const ws3 = ops.select(ops.and(below, right), ops.sub(ws2, ops.mul(l, u)), ws2);
      return [ws3, piv2, perm2];
    },
    [x, piv0, perm0] as [Array, Array, Array],
  );
  return [ops.convert(w, a.dtype), piv, perm];
}
