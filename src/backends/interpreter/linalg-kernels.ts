/** @file Exact pure-TypeScript reference kernels for dense linear algebra (Cholesky, triangular solve, LU, QR, det, inv, solve) on batched row-major Float64Array data. */

/*
 * Conventions shared by every kernel in this file and in `linalg-kernels-eig.ts`:
 *
 * - Data layout: a batch of `batch` matrices stored contiguously, each row-major.
 *   An `[m, n]` operand therefore has `batch * m * n` elements; matrix `b` starts
 *   at offset `b * m * n`. Callers flatten any leading batch shape to a count and
 *   broadcast operands beforehand.
 * - Everything is computed in float64; a float32 caller rounds the results
 *   (e.g. `Float32Array.from(result)`).
 * - Every kernel returns freshly allocated arrays; inputs are never mutated.
 * - Semantics follow `jax.lax.linalg` (which wraps LAPACK on CPU):
 *   - `cholesky`: lower factor, strictly-upper part zero, whole matrix NaN when
 *     the input is not (numerically) positive definite.
 *   - `lu`: LAPACK getrf partial pivoting (first row of maximal |value|), 0-based
 *     `pivots` (row `j` was swapped with row `pivots[j]`), and `permutation` with
 *     `a[permutation[i], :] = (L @ U)[i, :]`.
 *   - `geqrf`/`householderProduct`/`qr`: LAPACK dgeqrf/dlarfg/dorgqr conventions,
 *     H_j = I - tau_j v_j v_j^T with v_j[j] = 1 and beta = -sign(alpha) * ||x||,
 *     so R's diagonal can be negative exactly as numpy.linalg.qr returns it.
 *   - Singular matrices do not throw: `det` gives 0 (or a rounding-level value),
 *     `slogdet` gives sign 0 / logabsdet -Infinity when a pivot is exactly 0, and
 *     `inv`/`solve` produce the Inf/NaN that the LU back-substitution yields.
 */

/** Options for {@link triangularSolve}; defaults match `jax.lax.linalg.triangular_solve`. */
export interface TriangularSolveOptions {
  /** true: solve `op(a) @ x = b` (a is [m, m]); false (default): solve `x @ op(a) = b` (a is [n, n]). */
  leftSide?: boolean;
  /** Which triangle of `a` is read (default false = upper); the other triangle is ignored. */
  lower?: boolean;
  /** op(a) = a^T when true (default false). */
  transposeA?: boolean;
  /** Treat the diagonal of `a` as all ones without reading it (default false). */
  unitDiagonal?: boolean;
}

/** Result of {@link lu}. */
export interface LuResult {
  /** `[batch, m, n]`: unit-lower L strictly below the diagonal, U on and above it. */
  lu: Float64Array;
  /** `[batch, min(m, n)]`, 0-based: at step j rows j and pivots[j] were swapped. */
  pivots: Int32Array;
  /** `[batch, m]`: `a[permutation[i], :] = (L @ U)[i, :]`. */
  permutation: Int32Array;
}

/** Result of {@link geqrf}: LAPACK compact QR representation. */
export interface GeqrfResult {
  /** `[batch, m, n]`: R on and above the diagonal, Householder vectors (implicit leading 1) below it. */
  a: Float64Array;
  /** `[batch, min(m, n)]` Householder scalars. */
  taus: Float64Array;
}

/** Result of {@link qr}. */
export interface QrResult {
  /** `[batch, m, m]` if fullMatrices else `[batch, m, min(m, n)]`; orthonormal columns. */
  q: Float64Array;
  /** `[batch, m, n]` if fullMatrices else `[batch, min(m, n), n]`; upper triangular. */
  r: Float64Array;
}

/** Result of {@link slogdet}. */
export interface SlogdetResult {
  /** `[batch]`: -1, 0 or 1. */
  sign: Float64Array;
  /** `[batch]`: log|det|, -Infinity for singular matrices. */
  logabsdet: Float64Array;
}

function checkLength(name: string, data: ArrayLike<number>, expected: number): void {
  if (data.length !== expected) {
    throw new RangeError(`${name}: expected ${expected} elements, got ${data.length}`);
  }
}

/**
 * Cholesky factorisation of symmetric positive-definite matrices `a: [batch, n, n]`.
 * Returns lower-triangular L with `a = L @ L^T` and zeros above the diagonal. With
 * `symmetrizeInput` (default true, as in jax.lax.linalg.cholesky) the factorised
 * matrix is `(a + a^T) / 2`; otherwise only the lower triangle of `a` is read.
 * A matrix whose factorisation breaks down (non-positive pivot or NaN) becomes all NaN.
 */
export function cholesky(
  a: Float64Array,
  batch: number,
  n: number,
  options: { symmetrizeInput?: boolean } = {},
): Float64Array {
  checkLength("cholesky", a, batch * n * n);
  const symmetrize = options.symmetrizeInput ?? true;
  const nn = n * n;
  const out = new Float64Array(batch * nn);
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * nn;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j <= i; j++) {
        out[o + i * n + j] = symmetrize ? 0.5 * (a[o + i * n + j] + a[o + j * n + i]) : a[o + i * n + j];
      }
    }
    let ok = true;
    for (let j = 0; j < n && ok; j++) {
      // L[j][j] = sqrt(A[j][j] - sum_{k<j} L[j][k]^2)
      let d = out[o + j * n + j];
      for (let k = 0; k < j; k++) d -= out[o + j * n + k] * out[o + j * n + k];
      if (!(d > 0)) {
        ok = false;
        break;
      }
      const ljj = Math.sqrt(d);
      out[o + j * n + j] = ljj;
      // L[i][j] = (A[i][j] - sum_{k<j} L[i][k] L[j][k]) / L[j][j]
      for (let i = j + 1; i < n; i++) {
        let s = out[o + i * n + j];
        for (let k = 0; k < j; k++) s -= out[o + i * n + k] * out[o + j * n + k];
        out[o + i * n + j] = s / ljj;
      }
    }
    if (!ok) out.fill(NaN, o, o + nn);
  }
  return out;
}

/**
 * Triangular solve with `jax.lax.linalg.triangular_solve` semantics. `b` is
 * `[batch, m, n]` and so is the result. With `leftSide` it solves `op(a) @ x = b`
 * for `a: [batch, m, m]`, otherwise `x @ op(a) = b` for `a: [batch, n, n]`, where
 * `op(a)` is `a` or `a^T`. Only the triangle selected by `lower` is read.
 */
export function triangularSolve(
  a: Float64Array,
  b: Float64Array,
  batch: number,
  m: number,
  n: number,
  options: TriangularSolveOptions = {},
): Float64Array {
  const leftSide = options.leftSide ?? false;
  const lower = options.lower ?? false;
  const trans = options.transposeA ?? false;
  const unit = options.unitDiagonal ?? false;
  const k = leftSide ? m : n;
  checkLength("triangularSolve(a)", a, batch * k * k);
  checkLength("triangularSolve(b)", b, batch * m * n);
  // op(a) is lower-triangular iff exactly one of (lower, transposeA) holds.
  const opLower = lower !== trans;
  const x = b.slice();
  for (let bi = 0; bi < batch; bi++) {
    const ao = bi * k * k;
    const xo = bi * m * n;
    const op = (i: number, j: number): number => (trans ? a[ao + j * k + i] : a[ao + i * k + j]);
    if (leftSide) {
      // Row-oriented substitution: x[i, :] = (b[i, :] - sum_{k != i in triangle} op[i][k] x[k, :]) / op[i][i].
      for (let step = 0; step < m; step++) {
        const i = opLower ? step : m - 1 - step;
        const lo = opLower ? 0 : i + 1;
        const hi = opLower ? i : m;
        for (let kk = lo; kk < hi; kk++) {
          const f = op(i, kk);
          for (let c = 0; c < n; c++) x[xo + i * n + c] -= f * x[xo + kk * n + c];
        }
        if (!unit) {
          const d = op(i, i);
          for (let c = 0; c < n; c++) x[xo + i * n + c] /= d;
        }
      }
    } else {
      // Each row r solves x_r @ op = b_r: x_r[j] = (b_r[j] - sum_{i != j in triangle} x_r[i] op[i][j]) / op[j][j].
      for (let r = 0; r < m; r++) {
        const row = xo + r * n;
        for (let step = 0; step < n; step++) {
          const j = opLower ? n - 1 - step : step;
          const lo = opLower ? j + 1 : 0;
          const hi = opLower ? n : j;
          let s = x[row + j];
          for (let i = lo; i < hi; i++) s -= x[row + i] * op(i, j);
          x[row + j] = unit ? s : s / op(j, j);
        }
      }
    }
  }
  return x;
}

/**
 * Converts 0-based LU pivots `[batch, k]` into permutations `[batch, permutationSize]`
 * (`jax.lax.linalg.lu_pivots_to_permutation`): start from the identity and apply the
 * row swaps (j, pivots[j]) in order.
 */
export function luPivotsToPermutation(
  pivots: Int32Array,
  batch: number,
  k: number,
  permutationSize: number,
): Int32Array {
  checkLength("luPivotsToPermutation", pivots, batch * k);
  const perm = new Int32Array(batch * permutationSize);
  for (let bi = 0; bi < batch; bi++) {
    const po = bi * permutationSize;
    for (let i = 0; i < permutationSize; i++) perm[po + i] = i;
    for (let j = 0; j < k; j++) {
      const p = pivots[bi * k + j];
      if (p < 0 || p >= permutationSize) throw new RangeError(`luPivotsToPermutation: pivot ${p} out of range`);
      const t = perm[po + j];
      perm[po + j] = perm[po + p];
      perm[po + p] = t;
    }
  }
  return perm;
}

/**
 * LU factorisation with partial pivoting of `a: [batch, m, n]` (LAPACK getrf,
 * `jax.lax.linalg.lu`). The pivot of column j is the first row i >= j maximising
 * |a[i, j]|; a zero pivot column is left unscaled (singular input is not an error).
 */
export function lu(a: Float64Array, batch: number, m: number, n: number): LuResult {
  checkLength("lu", a, batch * m * n);
  const k = Math.min(m, n);
  const w = a.slice();
  const pivots = new Int32Array(batch * k);
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * m * n;
    for (let j = 0; j < k; j++) {
      let p = j;
      let best = Math.abs(w[o + j * n + j]);
      for (let i = j + 1; i < m; i++) {
        const v = Math.abs(w[o + i * n + j]);
        if (v > best) {
          best = v;
          p = i;
        }
      }
      pivots[bi * k + j] = p;
      if (p !== j) {
        for (let c = 0; c < n; c++) {
          const t = w[o + j * n + c];
          w[o + j * n + c] = w[o + p * n + c];
          w[o + p * n + c] = t;
        }
      }
      const piv = w[o + j * n + j];
      if (piv !== 0) {
        for (let i = j + 1; i < m; i++) w[o + i * n + j] /= piv;
      }
      // Schur complement update: A[i][c] -= L[i][j] * U[j][c] for i, c > j.
      for (let i = j + 1; i < m; i++) {
        const l = w[o + i * n + j];
        for (let c = j + 1; c < n; c++) w[o + i * n + c] -= l * w[o + j * n + c];
      }
    }
  }
  return { lu: w, pivots, permutation: luPivotsToPermutation(pivots, batch, k, m) };
}

/** Number of row swaps in one matrix's pivots, mod 2 (0 or 1). */
function swapParity(pivots: Int32Array, offset: number, k: number): number {
  let parity = 0;
  for (let j = 0; j < k; j++) if (pivots[offset + j] !== j) parity ^= 1;
  return parity;
}

/** Determinants `[batch]` of `a: [batch, n, n]`: product of the LU diagonal times the pivot sign. */
export function det(a: Float64Array, batch: number, n: number): Float64Array {
  const { lu: f, pivots } = lu(a, batch, n, n);
  const out = new Float64Array(batch);
  for (let bi = 0; bi < batch; bi++) {
    let d = swapParity(pivots, bi * n, n) ? -1 : 1;
    for (let j = 0; j < n; j++) d *= f[bi * n * n + j * n + j];
    out[bi] = d;
  }
  return out;
}

/**
 * Sign and log|det| of `a: [batch, n, n]` via LU (overflow-free). An exactly zero
 * pivot gives sign 0 and logabsdet -Infinity, like numpy and jax.numpy.
 */
export function slogdet(a: Float64Array, batch: number, n: number): SlogdetResult {
  const { lu: f, pivots } = lu(a, batch, n, n);
  const sign = new Float64Array(batch);
  const logabsdet = new Float64Array(batch);
  for (let bi = 0; bi < batch; bi++) {
    let s = swapParity(pivots, bi * n, n) ? -1 : 1;
    let l = 0;
    let zero = false;
    for (let j = 0; j < n; j++) {
      const d = f[bi * n * n + j * n + j];
      if (d === 0) zero = true;
      if (d < 0) s = -s;
      else if (Number.isNaN(d)) s = NaN;
      l += Math.log(Math.abs(d));
    }
    sign[bi] = zero ? 0 : s;
    logabsdet[bi] = zero ? -Infinity : l;
  }
  return { sign, logabsdet };
}

/**
 * Solves `a @ x = b` for `a: [batch, n, n]`, `b: [batch, n, nrhs]` using LU with
 * partial pivoting; returns `x: [batch, n, nrhs]`. Singular `a` yields Inf/NaN entries.
 */
export function solve(a: Float64Array, b: Float64Array, batch: number, n: number, nrhs: number): Float64Array {
  checkLength("solve(b)", b, batch * n * nrhs);
  const { lu: f, permutation } = lu(a, batch, n, n);
  const x = new Float64Array(batch * n * nrhs);
  for (let bi = 0; bi < batch; bi++) {
    const fo = bi * n * n;
    const xo = bi * n * nrhs;
    // x = P b, then L y = x (unit lower), then U x = y.
    for (let i = 0; i < n; i++) {
      const src = bi * n * nrhs + permutation[bi * n + i] * nrhs;
      for (let c = 0; c < nrhs; c++) x[xo + i * nrhs + c] = b[src + c];
    }
    for (let i = 0; i < n; i++) {
      for (let kk = 0; kk < i; kk++) {
        const l = f[fo + i * n + kk];
        for (let c = 0; c < nrhs; c++) x[xo + i * nrhs + c] -= l * x[xo + kk * nrhs + c];
      }
    }
    for (let i = n - 1; i >= 0; i--) {
      for (let kk = i + 1; kk < n; kk++) {
        const u = f[fo + i * n + kk];
        for (let c = 0; c < nrhs; c++) x[xo + i * nrhs + c] -= u * x[xo + kk * nrhs + c];
      }
      const d = f[fo + i * n + i];
      for (let c = 0; c < nrhs; c++) x[xo + i * nrhs + c] /= d;
    }
  }
  return x;
}

/** Inverses `[batch, n, n]` of `a: [batch, n, n]` (LU solve against the identity). */
export function inv(a: Float64Array, batch: number, n: number): Float64Array {
  const eye = new Float64Array(batch * n * n);
  for (let bi = 0; bi < batch; bi++) for (let i = 0; i < n; i++) eye[bi * n * n + i * n + i] = 1;
  return solve(a, eye, batch, n, n);
}

/** Euclidean norm of w[start + t*stride], t < count, scaled to avoid overflow/underflow. */
function scaledNorm(w: Float64Array, start: number, stride: number, count: number): number {
  let scale = 0;
  for (let t = 0; t < count; t++) scale = Math.max(scale, Math.abs(w[start + t * stride]));
  if (scale === 0 || !Number.isFinite(scale)) return scale;
  let ss = 0;
  for (let t = 0; t < count; t++) {
    const v = w[start + t * stride] / scale;
    ss += v * v;
  }
  return scale * Math.sqrt(ss);
}

/**
 * Householder QR in LAPACK's compact form (dgeqrf / `jax.lax.linalg.geqrf`) of
 * `a: [batch, m, n]`. Reflector j follows dlarfg: for alpha = a[j, j] and
 * x = a[j+1:, j], tau = 0 if ||x|| = 0, else beta = -sign(alpha) * hypot(alpha, ||x||),
 * tau = (beta - alpha) / beta, v = [1; x / (alpha - beta)], and R[j, j] = beta.
 */
export function geqrf(a: Float64Array, batch: number, m: number, n: number): GeqrfResult {
  checkLength("geqrf", a, batch * m * n);
  const k = Math.min(m, n);
  const w = a.slice();
  const taus = new Float64Array(batch * k);
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * m * n;
    for (let j = 0; j < k; j++) {
      const alpha = w[o + j * n + j];
      const xnorm = scaledNorm(w, o + (j + 1) * n + j, n, m - j - 1);
      if (xnorm === 0) continue; // H_j = I, tau = 0, R[j, j] = alpha.
      const negAlpha = alpha < 0 || Object.is(alpha, -0);
      const beta = (negAlpha ? 1 : -1) * Math.hypot(alpha, xnorm);
      const tau = (beta - alpha) / beta;
      const inv = 1 / (alpha - beta);
      for (let i = j + 1; i < m; i++) w[o + i * n + j] *= inv;
      w[o + j * n + j] = beta;
      taus[bi * k + j] = tau;
      // Apply H_j = I - tau v v^T to the trailing columns: col -= tau (v . col) v.
      for (let c = j + 1; c < n; c++) {
        let s = w[o + j * n + c];
        for (let i = j + 1; i < m; i++) s += w[o + i * n + j] * w[o + i * n + c];
        s *= tau;
        if (s === 0) continue;
        w[o + j * n + c] -= s;
        for (let i = j + 1; i < m; i++) w[o + i * n + c] -= s * w[o + i * n + j];
      }
    }
  }
  return { a: w, taus };
}

/**
 * First n columns of H_0 H_1 ... H_{k-1} (LAPACK dorgqr / `jax.lax.linalg.householder_product`)
 * from compact reflectors `a: [batch, m, n]` (vectors below the diagonal, implicit
 * unit leading entry) and `taus: [batch, k]`, with k <= n <= m. Returns `[batch, m, n]`.
 */
export function householderProduct(
  a: Float64Array,
  taus: Float64Array,
  batch: number,
  m: number,
  n: number,
  k: number,
): Float64Array {
  if (!(k <= n && n <= m)) throw new RangeError(`householderProduct: need k <= n <= m, got k=${k} n=${n} m=${m}`);
  checkLength("householderProduct(a)", a, batch * m * n);
  checkLength("householderProduct(taus)", taus, batch * k);
  const q = new Float64Array(batch * m * n);
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * m * n;
    for (let i = 0; i < n; i++) q[o + i * n + i] = 1;
    // Q = H_j Q for j = k-1 .. 0; columns c < j of Q are still e_c, untouched by H_j.
    for (let j = k - 1; j >= 0; j--) {
      const tau = taus[bi * k + j];
      if (tau === 0) continue;
      for (let c = j; c < n; c++) {
        let s = q[o + j * n + c];
        for (let i = j + 1; i < m; i++) s += a[o + i * n + j] * q[o + i * n + c];
        s *= tau;
        if (s === 0) continue;
        q[o + j * n + c] -= s;
        for (let i = j + 1; i < m; i++) q[o + i * n + c] -= s * a[o + i * n + j];
      }
    }
  }
  return q;
}

/**
 * QR decomposition `a = q @ r` of `a: [batch, m, n]` via Householder reflections with
 * LAPACK sign conventions (identical to numpy.linalg.qr / jax.lax.linalg.qr up to rounding).
 * fullMatrices: q `[m, m]`, r `[m, n]`; otherwise q `[m, k]`, r `[k, n]` with k = min(m, n).
 */
export function qr(a: Float64Array, batch: number, m: number, n: number, fullMatrices: boolean): QrResult {
  const k = Math.min(m, n);
  const { a: f, taus } = geqrf(a, batch, m, n);
  const rRows = fullMatrices ? m : k;
  const qCols = fullMatrices ? m : k;
  const r = new Float64Array(batch * rRows * n);
  // Reflector storage padded/truncated to [m, qCols] (columns >= n are unused since k <= n).
  const v = new Float64Array(batch * m * qCols);
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * m * n;
    for (let i = 0; i < rRows; i++) {
      for (let c = i; c < n; c++) r[bi * rRows * n + i * n + c] = f[o + i * n + c];
    }
    for (let i = 0; i < m; i++) {
      for (let c = 0; c < Math.min(i, k); c++) v[bi * m * qCols + i * qCols + c] = f[o + i * n + c];
    }
  }
  const q = householderProduct(v, taus, batch, m, qCols, k);
  return { q, r };
}

export { eigh, svd } from "./linalg-kernels-eig.js";
export type { EighOptions, EighResult, SvdOptions, SvdResult } from "./linalg-kernels-eig.js";
