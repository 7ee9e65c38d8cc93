/** @file Pure-TypeScript reference kernels for the symmetric eigendecomposition (Householder tridiagonalisation + implicit QR) and SVD (one-sided Jacobi) on batched row-major Float64Array data. */

/*
 * Layout and conventions are those documented at the top of `linalg-kernels.ts`:
 * `batch` contiguous row-major matrices, float64 arithmetic, fresh outputs.
 *
 * Sign/basis conventions: eigenvectors and singular vectors are unique only up to
 * sign (and up to an orthogonal change of basis within a repeated eigenvalue /
 * singular value). These kernels do NOT normalise signs, so they will generally
 * differ from LAPACK/numpy by per-column signs. Compare reconstructions and
 * invariants instead (A V = V diag(w), V^T V = I, U diag(s) Vt = A, U^T U = I) and
 * compare eigenvalues / singular values directly. Both algorithms are
 * deterministic, so results are reproducible run to run.
 *
 * Non-finite input: a matrix containing NaN or +-Infinity yields all-NaN outputs.
 */

const EPS = 2 ** -52;
const MAX_SWEEPS = 100;

/** Options for {@link eigh}; defaults match `jax.lax.linalg.eigh`. */
export interface EighOptions {
  /** Read the lower (default) or upper triangle when `symmetrizeInput` is false. */
  lower?: boolean;
  /** Decompose (a + a^T) / 2 (default true); otherwise mirror the triangle chosen by `lower`. */
  symmetrizeInput?: boolean;
  /** Sort eigenvalues ascending (default true); otherwise the QR iteration's diagonal order is kept. */
  sortEigenvalues?: boolean;
}

/** Result of {@link eigh}. */
export interface EighResult {
  /** `[batch, n, n]`: column j (`v[:, j]`) is the unit eigenvector for `w[j]`. */
  v: Float64Array;
  /** `[batch, n]` eigenvalues, ascending when sorted. */
  w: Float64Array;
}

/** Options for {@link svd}; defaults match `jax.lax.linalg.svd` / numpy.linalg.svd. */
export interface SvdOptions {
  /** u `[m, m]`, vt `[n, n]` when true (default); u `[m, k]`, vt `[k, n]` (k = min(m, n)) otherwise. */
  fullMatrices?: boolean;
  /** Compute u and vt (default true); when false only s is returned. */
  computeUv?: boolean;
}

/** Result of {@link svd}. */
export interface SvdResult {
  /** `[batch, min(m, n)]` singular values, descending, non-negative. */
  s: Float64Array;
  /** Left singular vectors as columns (absent when computeUv is false). */
  u?: Float64Array;
  /** Right singular vectors as rows (absent when computeUv is false). */
  vt?: Float64Array;
}

function allFinite(a: Float64Array, start: number, count: number): boolean {
  for (let i = start; i < start + count; i++) if (!Number.isFinite(a[i])) return false;
  return true;
}

/** Indices 0..len-1 sorted by key (ascending or descending), ties kept in index order. */
function sortedOrder(keys: Float64Array, ascending: boolean): number[] {
  const idx = Array.from({ length: keys.length }, (_, i) => i);
  idx.sort((x, y) => (ascending ? keys[x] - keys[y] : keys[y] - keys[x]) || x - y);
  return idx;
}

/** Smallest positive normal float64: a subdiagonal entry below it is treated as zero. */
const TINY = 2 ** -1022;

/**
 * Householder reduction of the symmetric `A: [n, n]` (full storage, overwritten) to tridiagonal
 * T = Q^T A Q (Golub & Van Loan 8.3.1, unblocked): writes T's diagonal to d, its subdiagonal to e and
 * Q (row-major) to q. `v` and `p` are scratch of length n.
 */
function tridiagonalize(
  A: Float64Array,
  n: number,
  d: Float64Array,
  e: Float64Array,
  q: Float64Array,
  v: Float64Array,
  p: Float64Array,
): void {
  q.fill(0);
  for (let i = 0; i < n; i++) q[i * n + i] = 1;
  for (let k = 0; k < n - 2; k++) {
    const m = n - k - 1;
    const x0 = A[(k + 1) * n + k];
    let sigma = 0;
    for (let i = k + 2; i < n; i++) sigma += A[i * n + k] * A[i * n + k];
    if (sigma === 0) continue;
    // H = I - tau v v^T maps x = A[k+1:, k] to alpha e_1, alpha = -sign(x0) ||x|| (no cancellation in v0)
    const norm = Math.sqrt(x0 * x0 + sigma);
    const alpha = x0 >= 0 ? -norm : norm;
    v[0] = x0 - alpha;
    for (let i = 1; i < m; i++) v[i] = A[(k + 1 + i) * n + k];
    const tau = 2 / (v[0] * v[0] + sigma);
    // H B H = B - v w^T - w v^T with p = tau B v, w = p - (tau / 2)(v^T p) v (B = A[k+1:, k+1:])
    let vp = 0;
    for (let i = 0; i < m; i++) {
      const row = (k + 1 + i) * n + k + 1;
      let s = 0;
      for (let j = 0; j < m; j++) s += A[row + j] * v[j];
      p[i] = tau * s;
      vp += v[i] * p[i];
    }
    const half = 0.5 * tau * vp;
    for (let i = 0; i < m; i++) p[i] -= half * v[i];
    for (let i = 0; i < m; i++) {
      const row = (k + 1 + i) * n + k + 1;
      const vi = v[i];
      const wi = p[i];
      for (let j = 0; j < m; j++) A[row + j] -= vi * p[j] + wi * v[j];
    }
    A[(k + 1) * n + k] = alpha;
    // Q <- Q H: Q[:, k+1:] -= tau (Q[:, k+1:] v) v^T
    for (let r = 1; r < n; r++) {
      const row = r * n + k + 1;
      let s = 0;
      for (let j = 0; j < m; j++) s += q[row + j] * v[j];
      s *= tau;
      for (let j = 0; j < m; j++) q[row + j] -= s * v[j];
    }
  }
  for (let i = 0; i < n; i++) d[i] = A[i * n + i];
  for (let i = 0; i + 1 < n; i++) e[i] = A[(i + 1) * n + i];
}

/**
 * Implicit symmetric QR with Wilkinson shifts on the tridiagonal (d, e) (Golub & Van Loan 8.3.3), applying
 * each rotation to the rows of zt (= Z^T, so Z's columns become the eigenvectors). An entry of e deflates
 * once |e_i| <= eps (|d_i| + |d_{i+1}|) or below TINY. Returns false if 30 n shifted steps do not converge.
 */
function tridiagonalQr(d: Float64Array, e: Float64Array, n: number, zt: Float64Array): boolean {
  const maxSteps = 30 * n;
  let steps = 0;
  let hi = n - 1;
  while (hi > 0) {
    let lo = hi;
    while (lo > 0) {
      const x = Math.abs(e[lo - 1]);
      if (x <= EPS * (Math.abs(d[lo - 1]) + Math.abs(d[lo])) || x <= TINY) {
        e[lo - 1] = 0;
        break;
      }
      lo--;
    }
    if (lo === hi) {
      hi--;
      continue;
    }
    if (steps++ >= maxSteps) return false;
    // Wilkinson shift: the eigenvalue of the trailing 2x2 of [lo, hi] nearer d[hi]
    const dd = 0.5 * (d[hi - 1] - d[hi]);
    const ee = e[hi - 1];
    const rr = Math.sqrt(dd * dd + ee * ee);
    const mu = d[hi] - (ee * ee) / (dd >= 0 ? dd + rr : dd - rr);
    let x = d[lo] - mu;
    let z = e[lo];
    for (let k = lo; k < hi; k++) {
      // G = [c s; -s c] with G^T [x; z] = [r; 0]; T <- G^T T G on rows/columns k, k+1 chases the bulge down
      const r = Math.sqrt(x * x + z * z);
      const c = r === 0 ? 1 : x / r;
      const s = r === 0 ? 0 : -z / r;
      if (k > lo) e[k - 1] = r;
      const a = d[k];
      const b = e[k];
      const f = d[k + 1];
      const cs = c * s;
      const c2 = c * c;
      const s2 = s * s;
      d[k] = c2 * a - 2 * cs * b + s2 * f;
      d[k + 1] = s2 * a + 2 * cs * b + c2 * f;
      e[k] = cs * (a - f) + (c2 - s2) * b;
      if (k + 1 < hi) {
        z = -s * e[k + 1];
        e[k + 1] = c * e[k + 1];
        x = e[k];
      }
      const ok = k * n;
      const ok1 = ok + n;
      for (let i = 0; i < n; i++) {
        const zk = zt[ok + i];
        const zk1 = zt[ok1 + i];
        zt[ok + i] = c * zk - s * zk1;
        zt[ok1 + i] = s * zk + c * zk1;
      }
    }
  }
  return true;
}

/**
 * Symmetric eigendecomposition of `a: [batch, n, n]`, `a = v @ diag(w) @ v^T` with orthonormal v, the
 * LAPACK way (dsytrd + dsteqr): the matrix is scaled by a power of two (exact) so its largest entry lies
 * in [1, 2), reduced to tridiagonal form by Householder reflections, and diagonalised by implicit
 * Wilkinson-shift QR with the rotations accumulated onto the Householder basis.
 */
export function eigh(a: Float64Array, batch: number, n: number, options: EighOptions = {}): EighResult {
  if (a.length !== batch * n * n) throw new RangeError(`eigh: expected ${batch * n * n} elements, got ${a.length}`);
  const lower = options.lower ?? true;
  const symmetrize = options.symmetrizeInput ?? true;
  const sort = options.sortEigenvalues ?? true;
  const nn = n * n;
  const vOut = new Float64Array(batch * nn);
  const wOut = new Float64Array(batch * n);
  const A = new Float64Array(nn);
  const Q = new Float64Array(nn);
  const ZT = new Float64Array(nn);
  const d = new Float64Array(n);
  const e = new Float64Array(n);
  const v = new Float64Array(n);
  const p = new Float64Array(n);
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * nn;
    if (!allFinite(a, o, nn)) {
      vOut.fill(NaN, o, o + nn);
      wOut.fill(NaN, bi * n, bi * n + n);
      continue;
    }
    let maxAbs = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        let x: number;
        if (symmetrize) x = 0.5 * (a[o + i * n + j] + a[o + j * n + i]);
        else if (lower === i >= j) x = a[o + i * n + j];
        else x = a[o + j * n + i];
        A[i * n + j] = x;
        maxAbs = Math.max(maxAbs, Math.abs(x));
      }
    }
    let scale = 1;
    if (maxAbs > 0) {
      while (maxAbs * scale >= 2) scale *= 0.5;
      while (maxAbs * scale < 1 && scale < 2 ** 1000) scale *= 2;
      for (let i = 0; i < nn; i++) A[i] *= scale;
    }
    tridiagonalize(A, n, d, e, Q, v, p);
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) ZT[j * n + i] = Q[i * n + j];
    if (!tridiagonalQr(d, e, n, ZT)) {
      vOut.fill(NaN, o, o + nn);
      wOut.fill(NaN, bi * n, bi * n + n);
      continue;
    }
    const diag = new Float64Array(n);
    for (let i = 0; i < n; i++) diag[i] = d[i] / scale;
    const order = sort ? sortedOrder(diag, true) : Array.from({ length: n }, (_, i) => i);
    for (let j = 0; j < n; j++) {
      const src = order[j];
      wOut[bi * n + j] = diag[src];
      for (let r = 0; r < n; r++) vOut[o + r * n + j] = ZT[src * n + r];
    }
  }
  return { v: vOut, w: wOut };
}

/**
 * Fills the columns of `U: [rows, cols]` (row-major) with `valid[c] === false` so
 * that all columns are orthonormal: each new column is the standard basis vector
 * least covered by the current basis, Gram-Schmidt-orthogonalised twice, normalised.
 * Assumes the valid columns are orthonormal and rows >= cols.
 */
function completeOrthonormal(U: Float64Array, rows: number, cols: number, valid: boolean[]): void {
  const r = new Float64Array(rows);
  for (let j = 0; j < cols; j++) {
    if (valid[j]) continue;
    // Pick e_i minimising sum_c U[i][c]^2 over valid columns (the largest residual).
    let best = 0;
    let bestCover = Infinity;
    for (let i = 0; i < rows; i++) {
      let cover = 0;
      for (let c = 0; c < cols; c++) if (valid[c]) cover += U[i * cols + c] * U[i * cols + c];
      if (cover < bestCover) {
        bestCover = cover;
        best = i;
      }
    }
    r.fill(0);
    r[best] = 1;
    for (let pass = 0; pass < 2; pass++) {
      for (let c = 0; c < cols; c++) {
        if (!valid[c]) continue;
        let d = 0;
        for (let i = 0; i < rows; i++) d += U[i * cols + c] * r[i];
        for (let i = 0; i < rows; i++) r[i] -= d * U[i * cols + c];
      }
    }
    let norm = 0;
    for (let i = 0; i < rows; i++) norm += r[i] * r[i];
    norm = Math.sqrt(norm);
    for (let i = 0; i < rows; i++) U[i * cols + j] = r[i] / norm;
    valid[j] = true;
  }
}

/**
 * Singular value decomposition `a = u @ diag(s) @ vt` of `a: [batch, m, n]` by
 * one-sided (Hestenes) Jacobi, which is accurate to high relative precision (no
 * A^T A is formed). With R x C (R >= C) the working matrix W (a or a^T), column
 * pairs are rotated until |w_p . w_q| <= R * eps * ||w_p|| ||w_q|| for all p < q;
 * then s_j = ||w_j||, u_j = w_j / s_j and V accumulates the rotations. Zero singular
 * values and the extra columns of full u/vt get an orthonormal completion.
 */
export function svd(a: Float64Array, batch: number, m: number, n: number, options: SvdOptions = {}): SvdResult {
  if (a.length !== batch * m * n) throw new RangeError(`svd: expected ${batch * m * n} elements, got ${a.length}`);
  const full = options.fullMatrices ?? true;
  const computeUv = options.computeUv ?? true;
  const k = Math.min(m, n);
  const transposed = m < n;
  const R = transposed ? n : m; // working rows (>= C)
  const C = transposed ? m : n; // working columns (= k)
  const uRows = m;
  const uCols = full ? m : k;
  const vtRows = full ? n : k;
  const sOut = new Float64Array(batch * k);
  const uOut = computeUv ? new Float64Array(batch * uRows * uCols) : undefined;
  const vtOut = computeUv ? new Float64Array(batch * vtRows * n) : undefined;
  const W = new Float64Array(R * C);
  const V = new Float64Array(C * C);
  const tol = Math.max(R, 1) * EPS;
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * m * n;
    if (!allFinite(a, o, m * n)) {
      sOut.fill(NaN, bi * k, bi * k + k);
      uOut?.fill(NaN, bi * uRows * uCols, (bi + 1) * uRows * uCols);
      vtOut?.fill(NaN, bi * vtRows * n, (bi + 1) * vtRows * n);
      continue;
    }
    // W = a (or a^T) scaled by a power of two (exact) so that sums of squares cannot overflow.
    let maxAbs = 0;
    for (let i = 0; i < m * n; i++) maxAbs = Math.max(maxAbs, Math.abs(a[o + i]));
    const scale = maxAbs > 0 ? 2 ** Math.floor(Math.log2(maxAbs)) : 1;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        const x = a[o + i * n + j] / scale;
        if (transposed) W[j * C + i] = x;
        else W[i * C + j] = x;
      }
    }
    V.fill(0);
    for (let i = 0; i < C; i++) V[i * C + i] = 1;
    for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
      let rotated = false;
      for (let p = 0; p < C - 1; p++) {
        for (let q = p + 1; q < C; q++) {
          let alpha = 0;
          let beta = 0;
          let gamma = 0;
          for (let i = 0; i < R; i++) {
            const wp = W[i * C + p];
            const wq = W[i * C + q];
            alpha += wp * wp;
            beta += wq * wq;
            gamma += wp * wq;
          }
          if (gamma === 0 || Math.abs(gamma) <= tol * Math.sqrt(alpha) * Math.sqrt(beta)) continue;
          rotated = true;
          // Rotation zeroing w_p . w_q: zeta = (beta - alpha) / (2 gamma), t = tan(phi) (smaller root).
          const zeta = (beta - alpha) / (2 * gamma);
          const t =
            Math.abs(zeta) > 1e150
              ? 1 / (2 * zeta)
              : (zeta >= 0 ? 1 : -1) / (Math.abs(zeta) + Math.sqrt(1 + zeta * zeta));
          const c = 1 / Math.sqrt(1 + t * t);
          const s = c * t;
          for (let i = 0; i < R; i++) {
            const wp = W[i * C + p];
            const wq = W[i * C + q];
            W[i * C + p] = c * wp - s * wq;
            W[i * C + q] = s * wp + c * wq;
          }
          if (computeUv) {
            for (let i = 0; i < C; i++) {
              const vp = V[i * C + p];
              const vq = V[i * C + q];
              V[i * C + p] = c * vp - s * vq;
              V[i * C + q] = s * vp + c * vq;
            }
          }
        }
      }
      if (!rotated) break;
    }
    const norms = new Float64Array(C);
    for (let j = 0; j < C; j++) {
      let ss = 0;
      for (let i = 0; i < R; i++) ss += W[i * C + j] * W[i * C + j];
      norms[j] = Math.sqrt(ss);
    }
    const order = sortedOrder(norms, false);
    for (let j = 0; j < C; j++) sOut[bi * k + j] = norms[order[j]] * scale;
    if (!uOut || !vtOut) continue;
    // Left factor of W (R x ucW) and right factor (C x C), in sorted order.
    const ucW = full ? R : C;
    const Uw = new Float64Array(R * ucW);
    const valid: boolean[] = new Array<boolean>(ucW).fill(false);
    for (let j = 0; j < C; j++) {
      const src = order[j];
      const sj = norms[src];
      if (sj > 0) {
        for (let i = 0; i < R; i++) Uw[i * ucW + j] = W[i * C + src] / sj;
        valid[j] = true;
      }
    }
    completeOrthonormal(Uw, R, ucW, valid);
    const Vs = new Float64Array(C * C);
    for (let j = 0; j < C; j++) for (let i = 0; i < C; i++) Vs[i * C + j] = V[i * C + order[j]];
    const uo = bi * uRows * uCols;
    const vto = bi * vtRows * n;
    if (!transposed) {
      // a = Uw diag(s) Vs^T: u = Uw [m, uCols], vt = Vs^T [n, n] (C = n = k, so full and reduced agree).
      uOut.set(Uw, uo);
      for (let i = 0; i < C; i++) for (let j = 0; j < C; j++) vtOut[vto + i * n + j] = Vs[j * C + i];
    } else {
      // a^T = Uw diag(s) Vs^T, so a = Vs diag(s) Uw^T: u = Vs [m, m], vt = Uw^T [vtRows, n].
      uOut.set(Vs, uo);
      for (let i = 0; i < vtRows; i++) for (let j = 0; j < n; j++) vtOut[vto + i * n + j] = Uw[j * ucW + i];
    }
  }
  return computeUv ? { s: sOut, u: uOut, vt: vtOut } : { s: sOut };
}
