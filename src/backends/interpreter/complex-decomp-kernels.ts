/** @file Complex (interleaved re, im float64) QR (LAPACK zgeqrf/zungqr), Hermitian eigh (complex Jacobi) and SVD (one-sided Jacobi). */

/*
 * Layout as complex-linalg-kernels.ts: `batch` row-major matrices of interleaved (re, im) pairs, float64, fresh outputs.
 * Eigenvectors and singular vectors are unique only up to a phase per column (and a unitary change of basis within a
 * repeated eigenvalue); these kernels do not normalize phases, like LAPACK's zheevd / zgesdd. Compare A V = V diag(w),
 * V^H V = I and reconstructions rather than the vectors.
 */

const EPS = 2 ** -52;
const MAX_SWEEPS = 100;

function checkLen(name: string, a: Float64Array, expected: number): void {
  if (a.length !== 2 * expected)
    throw new RangeError(`${name}: expected ${2 * expected} values (${expected} complex), got ${a.length}`);
}
const finite = (a: Float64Array, start: number, count: number): boolean => {
  for (let i = start; i < start + count; i++) if (!Number.isFinite(a[i])) return false;
  return true;
};
/** Indices sorted by key (ascending or descending), ties in index order. */
function order(keys: Float64Array, ascending: boolean): number[] {
  const idx = Array.from({ length: keys.length }, (_, i) => i);
  idx.sort((x, y) => (ascending ? keys[x] - keys[y] : keys[y] - keys[x]) || x - y);
  return idx;
}

/** Result of complexQr: q [batch, m, qCols] and r [batch, rRows, n], interleaved. */
export interface ComplexQrResult {
  q: Float64Array;
  r: Float64Array;
}

/**
 * a = q r by Householder reflectors with LAPACK's zlarfg convention: for alpha = a_jj and x below it,
 * beta = -sign(Re alpha) ||(alpha, x)|| (real, so R's diagonal is real as numpy.linalg.qr's), tau = (beta - alpha) / beta,
 * v = [1; x / (alpha - beta)], H_j = I - tau v v^H; R = H_k^H ... H_1^H a and Q = H_1 ... H_k (zungqr).
 */
export function complexQr(
  a: Float64Array,
  batch: number,
  m: number,
  n: number,
  fullMatrices: boolean,
): ComplexQrResult {
  checkLen("complexQr", a, batch * m * n);
  const k = Math.min(m, n),
    rRows = fullMatrices ? m : k,
    qCols = fullMatrices ? m : k;
  const q = new Float64Array(2 * batch * m * qCols),
    r = new Float64Array(2 * batch * rRows * n);
  const w = new Float64Array(2 * m * n);
  const tr = new Float64Array(k),
    ti = new Float64Array(k);
  for (let bi = 0; bi < batch; bi++) {
    w.set(a.subarray(2 * bi * m * n, 2 * (bi + 1) * m * n));
    const at = (i: number, j: number): number => 2 * (i * n + j);
    for (let j = 0; j < k; j++) {
      const ar = w[at(j, j)],
        ai = w[at(j, j) + 1];
      let xn = 0;
      for (let i = j + 1; i < m; i++) xn = Math.hypot(xn, w[at(i, j)], w[at(i, j) + 1]);
      tr[j] = ti[j] = 0;
      if (xn === 0 && ai === 0) continue; // H_j = I
      const beta = (ar < 0 || Object.is(ar, -0) ? 1 : -1) * Math.hypot(ar, ai, xn);
      tr[j] = (beta - ar) / beta;
      ti[j] = -ai / beta;
      // x *= 1 / (alpha - beta)
      const dr = ar - beta,
        di = ai,
        den = dr * dr + di * di;
      for (let i = j + 1; i < m; i++) {
        const xr = w[at(i, j)],
          xi = w[at(i, j) + 1];
        w[at(i, j)] = (xr * dr + xi * di) / den;
        w[at(i, j) + 1] = (xi * dr - xr * di) / den;
      }
      w[at(j, j)] = beta;
      w[at(j, j) + 1] = 0;
      // trailing columns: col -= conj(tau) v (v^H col)
      for (let c = j + 1; c < n; c++) {
        let sr = w[at(j, c)],
          si = w[at(j, c) + 1];
        for (let i = j + 1; i < m; i++) {
          const vr = w[at(i, j)],
            vi = w[at(i, j) + 1],
            yr = w[at(i, c)],
            yi = w[at(i, c) + 1];
          sr += vr * yr + vi * yi;
          si += vr * yi - vi * yr;
        }
        const fr = tr[j] * sr + ti[j] * si,
          fi = tr[j] * si - ti[j] * sr;
        w[at(j, c)] -= fr;
        w[at(j, c) + 1] -= fi;
        for (let i = j + 1; i < m; i++) {
          const vr = w[at(i, j)],
            vi = w[at(i, j) + 1];
          w[at(i, c)] -= fr * vr - fi * vi;
          w[at(i, c) + 1] -= fr * vi + fi * vr;
        }
      }
    }
    const ro = 2 * bi * rRows * n;
    for (let i = 0; i < rRows; i++)
      for (let c = i; c < n; c++) {
        r[ro + 2 * (i * n + c)] = i < m ? w[at(i, c)] : 0;
        r[ro + 2 * (i * n + c) + 1] = i < m ? w[at(i, c) + 1] : 0;
      }
    // Q = H_1 ... H_k applied to the first qCols columns of I, from the last reflector back
    const qo = 2 * bi * m * qCols;
    const qa = (i: number, c: number): number => qo + 2 * (i * qCols + c);
    for (let i = 0; i < qCols; i++) q[qa(i, i)] = 1;
    for (let j = k - 1; j >= 0; j--) {
      if (tr[j] === 0 && ti[j] === 0) continue;
      for (let c = 0; c < qCols; c++) {
        let sr = q[qa(j, c)],
          si = q[qa(j, c) + 1];
        for (let i = j + 1; i < m; i++) {
          const vr = w[at(i, j)],
            vi = w[at(i, j) + 1],
            yr = q[qa(i, c)],
            yi = q[qa(i, c) + 1];
          sr += vr * yr + vi * yi;
          si += vr * yi - vi * yr;
        }
        const fr = tr[j] * sr - ti[j] * si,
          fi = tr[j] * si + ti[j] * sr;
        q[qa(j, c)] -= fr;
        q[qa(j, c) + 1] -= fi;
        for (let i = j + 1; i < m; i++) {
          const vr = w[at(i, j)],
            vi = w[at(i, j) + 1];
          q[qa(i, c)] -= fr * vr - fi * vi;
          q[qa(i, c) + 1] -= fr * vi + fi * vr;
        }
      }
    }
  }
  return { q, r };
}

/** Result of complexEigh: v [batch, n, n] (interleaved, eigenvectors in columns) and real w [batch, n]. */
export interface ComplexEighResult {
  v: Float64Array;
  w: Float64Array;
}

/**
 * Applies G = [[c, s], [-s e^{-i phi}, c e^{-i phi}]] (a phase on column q, then a real rotation) to columns p, q of
 * the rows x cols interleaved matrix M: (col_p, col_q) <- (col_p, col_q) G.
 */
function rotateCols(
  M: Float64Array,
  rows: number,
  cols: number,
  p: number,
  q: number,
  c: number,
  s: number,
  er: number,
  ei: number,
): void {
  for (let i = 0; i < rows; i++) {
    const ip = 2 * (i * cols + p),
      iq = 2 * (i * cols + q);
    const xr = M[ip],
      xi = M[ip + 1];
    // y = e^{-i phi} col_q
    const yr = M[iq] * er + M[iq + 1] * ei,
      yi = M[iq + 1] * er - M[iq] * ei;
    M[ip] = c * xr - s * yr;
    M[ip + 1] = c * xi - s * yi;
    M[iq] = s * xr + c * yr;
    M[iq + 1] = s * xi + c * yi;
  }
}

/**
 * Hermitian eigendecomposition a = v diag(w) v^H by cyclic complex Jacobi: each step turns a_pq real by a phase on
 * column q (D^H A D with D_qq = e^{-i arg a_pq}), then annihilates it with the real symmetric Jacobi rotation.
 * Reads the lower (or upper) triangle, the diagonal's real part, as LAPACK's zheevd; w ascending when sorted.
 */
export function complexEigh(a: Float64Array, batch: number, n: number, lower = true, sort = true): ComplexEighResult {
  checkLen("complexEigh", a, batch * n * n);
  const nn = n * n;
  const vOut = new Float64Array(2 * batch * nn),
    wOut = new Float64Array(batch * n);
  const A = new Float64Array(2 * nn),
    V = new Float64Array(2 * nn);
  for (let bi = 0; bi < batch; bi++) {
    const o = 2 * bi * nn;
    if (!finite(a, o, 2 * nn)) {
      vOut.fill(NaN, o, o + 2 * nn);
      wOut.fill(NaN, bi * n, bi * n + n);
      continue;
    }
    let frob = 0;
    V.fill(0);
    for (let i = 0; i < n; i++) {
      V[2 * (i * n + i)] = 1;
      for (let j = 0; j < n; j++) {
        const t = 2 * (i * n + j);
        if (i === j) {
          A[t] = a[o + t];
          A[t + 1] = 0;
        } else if (lower === i > j) {
          A[t] = a[o + t];
          A[t + 1] = a[o + t + 1];
        } else {
          A[t] = a[o + 2 * (j * n + i)];
          A[t + 1] = -a[o + 2 * (j * n + i) + 1];
        }
        frob += A[t] * A[t] + A[t + 1] * A[t + 1];
      }
    }
    const absTol = EPS * EPS * Math.sqrt(frob);
    for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
      let rotated = false;
      for (let p = 0; p < n - 1; p++) {
        for (let q = p + 1; q < n; q++) {
          const pq = 2 * (p * n + q),
            qp = 2 * (q * n + p);
          const r = Math.hypot(A[pq], A[pq + 1]);
          const app = A[2 * (p * n + p)],
            aqq = A[2 * (q * n + q)];
          if (r <= EPS * Math.sqrt(Math.abs(app * aqq)) || r <= absTol) {
            A[pq] = A[pq + 1] = A[qp] = A[qp + 1] = 0;
            continue;
          }
          rotated = true;
          const er = A[pq] / r,
            ei = A[pq + 1] / r;
          const theta = (aqq - app) / (2 * r);
          const t =
            Math.abs(theta) > 1e150
              ? 1 / (2 * theta)
              : (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
          const c = 1 / Math.sqrt(t * t + 1),
            s = t * c;
          // A <- G^H A G: columns, then rows (row_p' = c row_p - s e^{i phi} row_q, row_q' = s row_p + c e^{i phi} row_q)
          rotateCols(A, n, n, p, q, c, s, er, ei);
          for (let j = 0; j < n; j++) {
            const jp = 2 * (p * n + j),
              jq = 2 * (q * n + j);
            const xr = A[jp],
              xi = A[jp + 1];
            const yr = A[jq] * er - A[jq + 1] * ei,
              yi = A[jq + 1] * er + A[jq] * ei;
            A[jp] = c * xr - s * yr;
            A[jp + 1] = c * xi - s * yi;
            A[jq] = s * xr + c * yr;
            A[jq + 1] = s * xi + c * yi;
          }
          A[2 * (p * n + p)] = app - t * r;
          A[2 * (q * n + q)] = aqq + t * r;
          A[2 * (p * n + p) + 1] = A[2 * (q * n + q) + 1] = 0;
          A[pq] = A[pq + 1] = A[qp] = A[qp + 1] = 0;
          rotateCols(V, n, n, p, q, c, s, er, ei);
        }
      }
      if (!rotated) break;
    }
    const diag = new Float64Array(n);
    for (let i = 0; i < n; i++) diag[i] = A[2 * (i * n + i)];
    const ord = sort ? order(diag, true) : Array.from({ length: n }, (_, i) => i);
    for (let j = 0; j < n; j++) {
      wOut[bi * n + j] = diag[ord[j]];
      for (let i = 0; i < n; i++) {
        vOut[o + 2 * (i * n + j)] = V[2 * (i * n + ord[j])];
        vOut[o + 2 * (i * n + j) + 1] = V[2 * (i * n + ord[j]) + 1];
      }
    }
  }
  return { v: vOut, w: wOut };
}

/** Fills the columns of U [rows, cols] with valid[c] false so that all are orthonormal (complex Gram-Schmidt, twice). */
function completeUnitary(U: Float64Array, rows: number, cols: number, valid: boolean[]): void {
  const x = new Float64Array(2 * rows);
  for (let j = 0; j < cols; j++) {
    if (valid[j]) continue;
    let best = 0,
      bestCover = Infinity;
    for (let i = 0; i < rows; i++) {
      let cover = 0;
      for (let c = 0; c < cols; c++) if (valid[c]) cover += U[2 * (i * cols + c)] ** 2 + U[2 * (i * cols + c) + 1] ** 2;
      if (cover < bestCover) {
        bestCover = cover;
        best = i;
      }
    }
    x.fill(0);
    x[2 * best] = 1;
    for (let pass = 0; pass < 2; pass++)
      for (let c = 0; c < cols; c++) {
        if (!valid[c]) continue;
        // d = u_c^H x; x -= d u_c
        let dr = 0,
          di = 0;
        for (let i = 0; i < rows; i++) {
          const ur = U[2 * (i * cols + c)],
            ui = U[2 * (i * cols + c) + 1];
          dr += ur * x[2 * i] + ui * x[2 * i + 1];
          di += ur * x[2 * i + 1] - ui * x[2 * i];
        }
        for (let i = 0; i < rows; i++) {
          const ur = U[2 * (i * cols + c)],
            ui = U[2 * (i * cols + c) + 1];
          x[2 * i] -= dr * ur - di * ui;
          x[2 * i + 1] -= dr * ui + di * ur;
        }
      }
    let nrm = 0;
    for (let i = 0; i < 2 * rows; i++) nrm += x[i] * x[i];
    nrm = Math.sqrt(nrm);
    for (let i = 0; i < rows; i++) {
      U[2 * (i * cols + j)] = x[2 * i] / nrm;
      U[2 * (i * cols + j) + 1] = x[2 * i + 1] / nrm;
    }
    valid[j] = true;
  }
}

/** Result of complexSvd: real s [batch, k]; u, vh interleaved (absent without computeUv). */
export interface ComplexSvdResult {
  s: Float64Array;
  u?: Float64Array;
  vh?: Float64Array;
}

/**
 * a = u diag(s) vh by one-sided (Hestenes) Jacobi on W = a (or a^H when m < n): for columns p, q with
 * gamma = w_p^H w_q, a phase e^{-i arg gamma} on w_q makes gamma real and the real rotation orthogonalizes the pair;
 * V accumulates the same unitary steps, so a V = W = U diag(s) and vh = V^H. s descending, non-negative.
 */
export function complexSvd(
  a: Float64Array,
  batch: number,
  m: number,
  n: number,
  fullMatrices: boolean,
  computeUv: boolean,
): ComplexSvdResult {
  checkLen("complexSvd", a, batch * m * n);
  const k = Math.min(m, n),
    transposed = m < n,
    R = transposed ? n : m,
    C = transposed ? m : n;
  const uCols = fullMatrices ? m : k,
    vhRows = fullMatrices ? n : k;
  const sOut = new Float64Array(batch * k);
  const uOut = computeUv ? new Float64Array(2 * batch * m * uCols) : undefined,
    vhOut = computeUv ? new Float64Array(2 * batch * vhRows * n) : undefined;
  const W = new Float64Array(2 * R * C),
    V = new Float64Array(2 * C * C);
  const tol = Math.max(R, 1) * EPS;
  for (let bi = 0; bi < batch; bi++) {
    const o = 2 * bi * m * n;
    if (!finite(a, o, 2 * m * n)) {
      sOut.fill(NaN, bi * k, bi * k + k);
      uOut?.fill(NaN, 2 * bi * m * uCols, 2 * (bi + 1) * m * uCols);
      vhOut?.fill(NaN, 2 * bi * vhRows * n, 2 * (bi + 1) * vhRows * n);
      continue;
    }
    let maxAbs = 0;
    for (let i = 0; i < 2 * m * n; i++) maxAbs = Math.max(maxAbs, Math.abs(a[o + i]));
    const scale = maxAbs > 0 ? 2 ** Math.floor(Math.log2(maxAbs)) : 1;
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        const t = transposed ? 2 * (j * C + i) : 2 * (i * C + j);
        W[t] = a[o + 2 * (i * n + j)] / scale;
        W[t + 1] = ((transposed ? -1 : 1) * a[o + 2 * (i * n + j) + 1]) / scale;
      }
    V.fill(0);
    for (let i = 0; i < C; i++) V[2 * (i * C + i)] = 1;
    for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
      let rotated = false;
      for (let p = 0; p < C - 1; p++) {
        for (let q = p + 1; q < C; q++) {
          let alpha = 0,
            beta = 0,
            gr = 0,
            gi = 0;
          for (let i = 0; i < R; i++) {
            const pr = W[2 * (i * C + p)],
              pi = W[2 * (i * C + p) + 1],
              qr = W[2 * (i * C + q)],
              qi = W[2 * (i * C + q) + 1];
            alpha += pr * pr + pi * pi;
            beta += qr * qr + qi * qi;
            gr += pr * qr + pi * qi;
            gi += pr * qi - pi * qr;
          }
          const g = Math.hypot(gr, gi);
          if (g === 0 || g <= tol * Math.sqrt(alpha) * Math.sqrt(beta)) continue;
          rotated = true;
          const zeta = (beta - alpha) / (2 * g);
          const t =
            Math.abs(zeta) > 1e150
              ? 1 / (2 * zeta)
              : (zeta >= 0 ? 1 : -1) / (Math.abs(zeta) + Math.sqrt(1 + zeta * zeta));
          const c = 1 / Math.sqrt(1 + t * t),
            s = c * t;
          rotateCols(W, R, C, p, q, c, s, gr / g, gi / g);
          if (computeUv) rotateCols(V, C, C, p, q, c, s, gr / g, gi / g);
        }
      }
      if (!rotated) break;
    }
    const norms = new Float64Array(C);
    for (let j = 0; j < C; j++) {
      let ss = 0;
      for (let i = 0; i < R; i++) ss += W[2 * (i * C + j)] ** 2 + W[2 * (i * C + j) + 1] ** 2;
      norms[j] = Math.sqrt(ss);
    }
    const ord = order(norms, false);
    for (let j = 0; j < C; j++) sOut[bi * k + j] = norms[ord[j]] * scale;
    if (!uOut || !vhOut) continue;
    const ucW = fullMatrices ? R : C;
    const Uw = new Float64Array(2 * R * ucW);
    const valid = new Array<boolean>(ucW).fill(false);
    for (let j = 0; j < C; j++) {
      const src = ord[j],
        sj = norms[src];
      if (sj > 0) {
        for (let i = 0; i < R; i++) {
          Uw[2 * (i * ucW + j)] = W[2 * (i * C + src)] / sj;
          Uw[2 * (i * ucW + j) + 1] = W[2 * (i * C + src) + 1] / sj;
        }
        valid[j] = true;
      }
    }
    completeUnitary(Uw, R, ucW, valid);
    const uo = 2 * bi * m * uCols,
      vo = 2 * bi * vhRows * n;
    if (!transposed) {
      // a = Uw diag(s) Vs^H: u = Uw, vh = Vs^H (C = n = k)
      uOut.set(Uw, uo);
      for (let i = 0; i < C; i++)
        for (let j = 0; j < C; j++) {
          vhOut[vo + 2 * (i * n + j)] = V[2 * (j * C + ord[i])];
          vhOut[vo + 2 * (i * n + j) + 1] = -V[2 * (j * C + ord[i]) + 1];
        }
    } else {
      // a^H = Uw diag(s) Vs^H, so a = Vs diag(s) Uw^H: u = Vs [m, m], vh = Uw^H
      for (let i = 0; i < C; i++)
        for (let j = 0; j < C; j++) {
          uOut[uo + 2 * (i * uCols + j)] = V[2 * (i * C + ord[j])];
          uOut[uo + 2 * (i * uCols + j) + 1] = V[2 * (i * C + ord[j]) + 1];
        }
      for (let i = 0; i < vhRows; i++)
        for (let j = 0; j < n; j++) {
          vhOut[vo + 2 * (i * n + j)] = Uw[2 * (j * ucW + i)];
          vhOut[vo + 2 * (i * n + j) + 1] = -Uw[2 * (j * ucW + i) + 1];
        }
    }
  }
  return computeUv ? { s: sOut, u: uOut, vh: vhOut } : { s: sOut };
}
