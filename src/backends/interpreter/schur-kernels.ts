/** @file Reference kernels for the Hessenberg reduction with Q (LAPACK gehrd/orghr convention) and the real (Francis double-shift, standardized 2x2 blocks as LAPACK's dlanv2) and complex (single-shift) Schur decompositions with Schur vectors. */

/** A row-major complex n x n matrix as re/im planes (im all zero for real data). */
export interface CPlanes {
  re: Float64Array;
  im: Float64Array;
}

const EPS = 2.220446049250313e-16;

/**
 * Householder reduction A = Q H Q^H with LAPACK's reflector convention (zlarfg): for column k, x = A[k+1:, k],
 * beta = -sign(Re x0) ||x|| (real), tau = (beta - x0) / beta, v = [1, x[1:] / (x0 - beta)], H_k = I - tau v v^H;
 * A <- H_k^H A H_k, Q = H_1 H_2 ... (so the subdiagonal is real, as scipy's).
 */
export function hessenbergQ(a: CPlanes, n: number): { h: CPlanes; q: CPlanes } {
  const hr = a.re.slice(),
    hi = a.im.slice();
  const qr = new Float64Array(n * n),
    qi = new Float64Array(n * n);
  for (let i = 0; i < n; i++) qr[i * n + i] = 1;
  const vr = new Float64Array(n),
    vi = new Float64Array(n);
  // k = n - 2 too: a one-element complex x still gets a reflector making its subdiagonal entry real (as zgehrd)
  for (let k = 0; k < n - 1; k++) {
    const x0r = hr[(k + 1) * n + k],
      x0i = hi[(k + 1) * n + k];
    let xn = 0;
    for (let i = k + 2; i < n; i++) xn = Math.hypot(xn, hr[i * n + k], hi[i * n + k]);
    if (xn === 0 && x0i === 0) continue; // tau = 0: H_k = I
    const beta = -(x0r >= 0 ? 1 : -1) * Math.hypot(x0r, x0i, xn);
    const tr = (beta - x0r) / beta,
      ti = -x0i / beta;
    // 1 / (x0 - beta)
    const dr = x0r - beta,
      di = x0i,
      dd = dr * dr + di * di;
    const sr = dr / dd,
      si = -di / dd;
    vr.fill(0);
    vi.fill(0);
    vr[k + 1] = 1;
    for (let i = k + 2; i < n; i++) {
      const xr = hr[i * n + k],
        xi = hi[i * n + k];
      vr[i] = xr * sr - xi * si;
      vi[i] = xr * si + xi * sr;
    }
    // left: A <- (I - conj(tau) v v^H) A, s_j = v^H a_j
    for (let j = 0; j < n; j++) {
      let pr = 0,
        pi = 0;
      for (let i = k + 1; i < n; i++) {
        pr += vr[i] * hr[i * n + j] + vi[i] * hi[i * n + j];
        pi += vr[i] * hi[i * n + j] - vi[i] * hr[i * n + j];
      }
      const cr = tr * pr + ti * pi,
        ci = tr * pi - ti * pr; // conj(tau) * s
      for (let i = k + 1; i < n; i++) {
        hr[i * n + j] -= vr[i] * cr - vi[i] * ci;
        hi[i * n + j] -= vr[i] * ci + vi[i] * cr;
      }
    }
    // right on A and Q: M <- M (I - tau v v^H), s_i = m_i v
    for (const [mr, mi] of [
      [hr, hi],
      [qr, qi],
    ]) {
      for (let i = 0; i < n; i++) {
        let pr = 0,
          pi = 0;
        for (let j = k + 1; j < n; j++) {
          pr += mr[i * n + j] * vr[j] - mi[i * n + j] * vi[j];
          pi += mr[i * n + j] * vi[j] + mi[i * n + j] * vr[j];
        }
        const cr = pr * tr - pi * ti,
          ci = pr * ti + pi * tr; // s * tau
        for (let j = k + 1; j < n; j++) {
          // -= (s tau) conj(v_j)
          mr[i * n + j] -= cr * vr[j] + ci * vi[j];
          mi[i * n + j] -= ci * vr[j] - cr * vi[j];
        }
      }
    }
    hr[(k + 1) * n + k] = beta;
    hi[(k + 1) * n + k] = 0;
    for (let i = k + 2; i < n; i++) hr[i * n + k] = hi[i * n + k] = 0;
  }
  return { h: { re: hr, im: hi }, q: { re: qr, im: qi } };
}

/** The active-window bottom `hi` found split at row l: |h[l][l-1]| negligible against its diagonal neighbours (zeroed). */
function splitRow(hr: Float64Array, hi: Float64Array, n: number, top: number, norm: number): number {
  for (let l = top; l > 0; l--) {
    const s = Math.hypot(hr[(l - 1) * n + l - 1], hi[(l - 1) * n + l - 1]) + Math.hypot(hr[l * n + l], hi[l * n + l]);
    if (Math.hypot(hr[l * n + l - 1], hi[l * n + l - 1]) <= EPS * (s === 0 ? norm : s)) {
      hr[l * n + l - 1] = hi[l * n + l - 1] = 0;
      return l;
    }
  }
  return 0;
}

const fro = (m: CPlanes): number => {
  let s = 0;
  for (let i = 0; i < m.re.length; i++) s = Math.hypot(s, m.re[i], m.im[i]);
  return s;
};

/**
 * Complex Schur A = Z T Z^H: Hessenberg reduction, then explicitly shifted QR steps (Wilkinson shift, Givens rotations
 * [c s; -conj(s) c]) on the active window, applied to all of T's rows/columns and accumulated into Z.
 */
export function complexSchur(a: CPlanes, n: number): { t: CPlanes; z: CPlanes } {
  const { h, q } = hessenbergQ(a, n);
  const tr = h.re,
    ti = h.im,
    zr = q.re,
    zi = q.im;
  const norm = fro(h);
  const cs = new Float64Array(n),
    snr = new Float64Array(n),
    sni = new Float64Array(n);
  let top = n - 1,
    iter = 0;
  while (top > 0) {
    const l = splitRow(tr, ti, n, top, norm);
    if (l === top) {
      top--;
      iter = 0;
      continue;
    }
    if (++iter > 100 * n) throw new Error(`schur: the QR iteration did not converge (n = ${n})`);
    // shift: the eigenvalue of the trailing 2x2 nearer t[top][top]; mu = d + (q - sqrt(q^2 + bc)) with q = (a-d)/2
    let mur: number, mui: number;
    const p = top - 1;
    if (iter % 10 === 0) {
      mur = tr[top * n + top] + Math.abs(tr[top * n + p]) + Math.abs(ti[top * n + p]);
      mui = ti[top * n + top];
    } else {
      const ar = tr[p * n + p],
        ai = ti[p * n + p],
        br = tr[p * n + top],
        bi = ti[p * n + top],
        cr = tr[top * n + p],
        ci = ti[top * n + p],
        dr = tr[top * n + top],
        di = ti[top * n + top];
      const hr2 = (ar - dr) / 2,
        hi2 = (ai - di) / 2;
      const rr = hr2 * hr2 - hi2 * hi2 + br * cr - bi * ci,
        ri = 2 * hr2 * hi2 + br * ci + bi * cr;
      let [sr, si] = csqrt(rr, ri);
      if (sr * hr2 + si * hi2 < 0) [sr, si] = [-sr, -si];
      mur = dr + hr2 - sr;
      mui = di + hi2 - si;
    }
    for (let i = l; i <= top; i++) {
      tr[i * n + i] -= mur;
      ti[i * n + i] -= mui;
    }
    // T - mu I = Q R on rows l..top (rotations also applied to the columns right of the window)
    for (let k = l; k < top; k++) {
      const xr = tr[k * n + k],
        xi = ti[k * n + k],
        yr = tr[(k + 1) * n + k],
        yi = ti[(k + 1) * n + k];
      const ax = Math.hypot(xr, xi),
        nr = Math.hypot(ax, yr, yi);
      let c: number, sr: number, si: number;
      if (nr === 0) [c, sr, si] = [1, 0, 0];
      else if (ax === 0) [c, sr, si] = [0, 1, 0];
      else {
        c = ax / nr;
        // s = (x / |x|) conj(y) / nr
        sr = ((xr / ax) * yr + (xi / ax) * yi) / nr;
        si = ((xi / ax) * yr - (xr / ax) * yi) / nr;
      }
      cs[k] = c;
      snr[k] = sr;
      sni[k] = si;
      for (let j = k; j < n; j++) {
        const ur = tr[k * n + j],
          ui = ti[k * n + j],
          wr = tr[(k + 1) * n + j],
          wi = ti[(k + 1) * n + j];
        tr[k * n + j] = c * ur + sr * wr - si * wi;
        ti[k * n + j] = c * ui + sr * wi + si * wr;
        tr[(k + 1) * n + j] = -(sr * ur + si * ui) + c * wr;
        ti[(k + 1) * n + j] = -(sr * ui - si * ur) + c * wi;
      }
    }
    // R Q^H: columns k, k+1 <- [c col_k + conj(s) col_{k+1}, -s col_k + c col_{k+1}] on rows 0..top, and on Z
    for (let k = l; k < top; k++) {
      const c = cs[k],
        sr = snr[k],
        si = sni[k];
      for (const [mr, mi, rows] of [
        [tr, ti, Math.min(k + 2, top) + 1],
        [zr, zi, n],
      ] as const) {
        for (let i = 0; i < rows; i++) {
          const ur = mr[i * n + k],
            ui = mi[i * n + k],
            wr = mr[i * n + k + 1],
            wi = mi[i * n + k + 1];
          mr[i * n + k] = c * ur + sr * wr + si * wi;
          mi[i * n + k] = c * ui + sr * wi - si * wr;
          mr[i * n + k + 1] = -(sr * ur - si * ui) + c * wr;
          mi[i * n + k + 1] = -(sr * ui + si * ur) + c * wi;
        }
      }
    }
    for (let i = l; i <= top; i++) {
      tr[i * n + i] += mur;
      ti[i * n + i] += mui;
    }
  }
  for (let i = 1; i < n; i++) for (let j = 0; j < i; j++) tr[i * n + j] = ti[i * n + j] = 0;
  return { t: { re: tr, im: ti }, z: { re: zr, im: zi } };
}

const csqrt = (x: number, y: number): [number, number] => {
  const r = Math.hypot(x, y);
  if (r === 0) return [0, 0];
  const t = Math.sqrt((r + Math.abs(x)) / 2);
  return x >= 0 ? [t, y / (2 * t)] : [Math.abs(y) / (2 * t), y < 0 ? -t : t];
};

/** Applies the Householder reflector I - 2 u u^T / u^T u (u of length m at row/column r) to rows of t (cols c0..) , columns of t (rows ..r1) and Z. */
function reflect(t: Float64Array, z: Float64Array, n: number, u: number[], r: number, c0: number, r1: number): void {
  const m = u.length;
  let uu = 0;
  for (const x of u) uu += x * x;
  if (uu === 0) return;
  for (let j = c0; j < n; j++) {
    let s = 0;
    for (let i = 0; i < m; i++) s += u[i] * t[(r + i) * n + j];
    s = (2 * s) / uu;
    for (let i = 0; i < m; i++) t[(r + i) * n + j] -= s * u[i];
  }
  for (const [mat, rows] of [
    [t, r1 + 1],
    [z, n],
  ] as const) {
    for (let i = 0; i < rows; i++) {
      let s = 0;
      for (let j = 0; j < m; j++) s += mat[i * n + r + j] * u[j];
      s = (2 * s) / uu;
      for (let j = 0; j < m; j++) mat[i * n + r + j] -= s * u[j];
    }
  }
}

/** Rotates rows/columns p, p+1 of t (all of them) and columns of z by G = [cs -sn; sn cs]: t <- G^T t G, z <- z G. */
function rotate(t: Float64Array, z: Float64Array, n: number, p: number, cs: number, sn: number): void {
  const q = p + 1;
  for (let j = 0; j < n; j++) {
    const u = t[p * n + j],
      w = t[q * n + j];
    t[p * n + j] = cs * u + sn * w;
    t[q * n + j] = -sn * u + cs * w;
  }
  for (const mat of [t, z]) {
    for (let i = 0; i < n; i++) {
      const u = mat[i * n + p],
        w = mat[i * n + q];
      mat[i * n + p] = cs * u + sn * w;
      mat[i * n + q] = -sn * u + cs * w;
    }
  }
}

/**
 * Standardizes the 2x2 block at (p, p+1) (the convention of LAPACK's dlanv2, idea credited): real eigenvalues give an
 * upper-triangular block; a complex pair gives equal diagonals and off-diagonals of opposite sign.
 */
function standardize(t: Float64Array, z: Float64Array, n: number, p: number): void {
  const q = p + 1;
  for (let pass = 0; pass < 3; pass++) {
    const a = t[p * n + p],
      b = t[p * n + q],
      c = t[q * n + p],
      d = t[q * n + q];
    if (c === 0) return;
    if (b === 0) {
      rotate(t, z, n, p, 0, 1);
      t[q * n + p] = 0;
      return;
    }
    const h = 0.5 * (a - d);
    if (h === 0 && Math.sign(b) !== Math.sign(c)) return;
    const bcmax = Math.max(Math.abs(b), Math.abs(c)),
      bcmis = Math.min(Math.abs(b), Math.abs(c)) * Math.sign(b) * Math.sign(c);
    const scale = Math.max(Math.abs(h), bcmax);
    const disc = (h / scale) * h + (bcmax / scale) * bcmis; // ((a-d)/2)^2 + bc, scaled
    if (disc >= 4 * EPS) {
      // real pair: the first column of G is the eigenvector (z, c) of the eigenvalue d + z, z = h + sign(h) sqrt(h^2+bc)
      const zz = h + (h >= 0 ? 1 : -1) * Math.sqrt(scale) * Math.sqrt(disc);
      const tau = Math.hypot(c, zz);
      rotate(t, z, n, p, zz / tau, c / tau);
      t[q * n + p] = 0;
      return;
    }
    // complex (or nearly equal real) pair: the rotation that equalizes the diagonal
    const sigma = b + c;
    const tau = Math.hypot(sigma, a - d);
    const cs = Math.sqrt(0.5 * (1 + Math.abs(sigma) / tau));
    const sn = -(h / (tau * cs)) * (sigma >= 0 ? 1 : -1);
    rotate(t, z, n, p, cs, sn);
    const mid = 0.5 * (t[p * n + p] + t[q * n + q]);
    t[p * n + p] = t[q * n + q] = mid;
    if (t[p * n + q] === 0 || t[q * n + p] === 0 || Math.sign(t[p * n + q]) !== Math.sign(t[q * n + p])) return;
    // same-sign off-diagonals: real eigenvalues, one more pass triangularizes
  }
}

/**
 * Real Schur A = Z T Z^T: Hessenberg reduction, then Francis double-shift QR steps (Golub & Van Loan alg. 7.5.1; 3-element
 * Householder bulge chase) with exceptional shifts every 10 iterations, applied to all of T and accumulated into Z;
 * converged 2x2 blocks are standardized.
 */
export function realSchur(a: Float64Array, n: number): { t: Float64Array; z: Float64Array } {
  const { h, q } = hessenbergQ({ re: a, im: new Float64Array(n * n) }, n);
  const t = h.re,
    z = q.re;
  const zeroIm = new Float64Array(n * n);
  const norm = fro({ re: t, im: zeroIm });
  let top = n - 1,
    iter = 0;
  while (top > 0) {
    const l = splitRow(t, zeroIm, n, top, norm);
    if (l === top) {
      top--;
      iter = 0;
      continue;
    }
    if (l === top - 1) {
      standardize(t, z, n, l);
      top -= 2;
      iter = 0;
      continue;
    }
    if (++iter > 100 * n) throw new Error(`schur: the QR iteration did not converge (n = ${n})`);
    const m = top - 1;
    let s: number, det: number;
    if (iter % 10 === 0) {
      // exceptional shift (as LAPACK's dlahqr): breaks cycles
      const w = Math.abs(t[top * n + m]) + Math.abs(t[m * n + m - 1]);
      const h11 = 0.75 * w + t[top * n + top];
      s = 2 * h11;
      det = h11 * h11 + 0.4375 * w * w;
    } else {
      s = t[m * n + m] + t[top * n + top];
      det = t[m * n + m] * t[top * n + top] - t[m * n + top] * t[top * n + m];
    }
    // first column of (H - s1 I)(H - s2 I) = H^2 - s H + det I
    let x = t[l * n + l] * t[l * n + l] + t[l * n + l + 1] * t[(l + 1) * n + l] - s * t[l * n + l] + det;
    let y = t[(l + 1) * n + l] * (t[l * n + l] + t[(l + 1) * n + l + 1] - s);
    let w = t[(l + 1) * n + l] * t[(l + 2) * n + l + 1];
    for (let k = l; k <= top - 2; k++) {
      const nx = Math.hypot(x, y, w);
      const u = [x + (x >= 0 ? nx : -nx), y, w];
      reflect(t, z, n, u, k, Math.max(k - 1, l), Math.min(k + 3, top));
      if (k > l) t[(k + 1) * n + k - 1] = t[(k + 2) * n + k - 1] = 0;
      x = t[(k + 1) * n + k];
      y = t[(k + 2) * n + k];
      if (k < top - 2) w = t[(k + 3) * n + k];
    }
    const nx = Math.hypot(x, y);
    reflect(t, z, n, [x + (x >= 0 ? nx : -nx), y], top - 1, top - 2, top);
    t[top * n + top - 2] = 0;
  }
  for (let i = 2; i < n; i++) for (let j = 0; j < i - 1; j++) t[i * n + j] = 0;
  return { t, z };
}

/**
 * A function of an upper-triangular complex T given f on its diagonal (fd), column by column from the diagonal up:
 * "sqrt" is the Björck-Hammarling recurrence R_ij = (T_ij - sum_{i<k<j} R_ik R_kj) / (R_ii + R_jj); "parlett" is
 * Parlett's F_ij = (T_ij (F_jj - F_ii) + sum_{i<k<j} (T_ik F_kj - F_ik T_kj)) / (T_jj - T_ii) (Golub & Van Loan
 * alg. 11.1.1; a zero denominator leaves the numerator, as JAX). Returns F and the smallest |denominator| (minden).
 */
export function triuFunction(
  t: CPlanes,
  fd: CPlanes,
  n: number,
  kind: "sqrt" | "parlett",
): { f: CPlanes; minden: number } {
  const fr = new Float64Array(n * n),
    fi = new Float64Array(n * n);
  const { re: tr, im: ti } = t;
  for (let i = 0; i < n; i++) {
    fr[i * n + i] = fd.re[i];
    fi[i * n + i] = fd.im[i];
  }
  let minden = n > 0 ? Math.hypot(tr[0], ti[0]) : 0;
  for (let j = 1; j < n; j++) {
    for (let i = j - 1; i >= 0; i--) {
      let sr: number, si: number, dr: number, di: number;
      if (kind === "sqrt") {
        sr = tr[i * n + j];
        si = ti[i * n + j];
        for (let k = i + 1; k < j; k++) {
          sr -= fr[i * n + k] * fr[k * n + j] - fi[i * n + k] * fi[k * n + j];
          si -= fr[i * n + k] * fi[k * n + j] + fi[i * n + k] * fr[k * n + j];
        }
        dr = fr[i * n + i] + fr[j * n + j];
        di = fi[i * n + i] + fi[j * n + j];
      } else {
        const er = fr[j * n + j] - fr[i * n + i],
          ei = fi[j * n + j] - fi[i * n + i];
        sr = tr[i * n + j] * er - ti[i * n + j] * ei;
        si = tr[i * n + j] * ei + ti[i * n + j] * er;
        for (let k = i + 1; k < j; k++) {
          sr += tr[i * n + k] * fr[k * n + j] - ti[i * n + k] * fi[k * n + j];
          si += tr[i * n + k] * fi[k * n + j] + ti[i * n + k] * fr[k * n + j];
          sr -= fr[i * n + k] * tr[k * n + j] - fi[i * n + k] * ti[k * n + j];
          si -= fr[i * n + k] * ti[k * n + j] + fi[i * n + k] * tr[k * n + j];
        }
        dr = tr[j * n + j] - tr[i * n + i];
        di = ti[j * n + j] - ti[i * n + i];
      }
      const dd = dr * dr + di * di;
      minden = Math.min(minden, Math.sqrt(dd));
      if (dd === 0 && (kind === "parlett" || (sr === 0 && si === 0))) {
        fr[i * n + j] = sr;
        fi[i * n + j] = si;
      } else {
        // sqrt with R_ii + R_jj = 0 and a nonzero numerator (a singular T without a square root) gives inf / nan
        fr[i * n + j] = (sr * dr + si * di) / dd;
        fi[i * n + j] = (si * dr - sr * di) / dd;
      }
    }
  }
  return { f: { re: fr, im: fi }, minden };
}

/**
 * Real to complex Schur form (scipy's rsf2csf): from the bottom up, each nonzero subdiagonal T[m][m-1] is removed by the
 * unitary rotation G = [conj(c) s; -conj(s) c] built from mu = lambda - T[m][m] (lambda the block's eigenvalue with
 * Im >= 0): T <- G T G^H on rows/columns m-1, m, Z <- Z G^H.
 */
export function realToComplexSchur(t: CPlanes, z: CPlanes, n: number): { t: CPlanes; z: CPlanes } {
  const tr = t.re.slice(),
    ti = t.im.slice(),
    zr = z.re.slice(),
    zi = z.im.slice();
  for (let m = n - 1; m > 0; m--) {
    const p = m - 1;
    const sr0 = tr[m * n + p],
      si0 = ti[m * n + p];
    const scale = Math.hypot(tr[p * n + p], ti[p * n + p]) + Math.hypot(tr[m * n + m], ti[m * n + m]);
    if (Math.hypot(sr0, si0) <= EPS * scale) continue;
    // mu = (a - d)/2 + sqrt(((a - d)/2)^2 + b c), the branch with Im >= 0 (LAPACK lists that eigenvalue first)
    const hr2 = (tr[p * n + p] - tr[m * n + m]) / 2,
      hi2 = (ti[p * n + p] - ti[m * n + m]) / 2;
    const br = tr[p * n + m],
      bi = ti[p * n + m];
    let [qr, qi] = csqrt(hr2 * hr2 - hi2 * hi2 + br * sr0 - bi * si0, 2 * hr2 * hi2 + br * si0 + bi * sr0);
    if (qi < 0) [qr, qi] = [-qr, -qi];
    const mr = hr2 + qr,
      mi = hi2 + qi;
    const r = Math.hypot(mr, mi, sr0, si0);
    const cr = mr / r,
      ci = mi / r,
      sr = sr0 / r,
      si = si0 / r;
    // rows: [u; w] <- [conj(c) u + s w; -conj(s) u + c w] for columns p..n-1
    for (let j = p; j < n; j++) {
      const ur = tr[p * n + j],
        ui = ti[p * n + j],
        wr = tr[m * n + j],
        wi = ti[m * n + j];
      tr[p * n + j] = cr * ur + ci * ui + sr * wr - si * wi;
      ti[p * n + j] = cr * ui - ci * ur + sr * wi + si * wr;
      tr[m * n + j] = -(sr * ur + si * ui) + cr * wr - ci * wi;
      ti[m * n + j] = -(sr * ui - si * ur) + cr * wi + ci * wr;
    }
    // columns: M <- M G^H, [u w] <- [u c + w conj(s), -u s + w conj(c)]
    for (const [mr2, mi2, rows] of [
      [tr, ti, m + 1],
      [zr, zi, n],
    ] as const) {
      for (let i = 0; i < rows; i++) {
        const ur = mr2[i * n + p],
          ui = mi2[i * n + p],
          wr = mr2[i * n + m],
          wi = mi2[i * n + m];
        mr2[i * n + p] = ur * cr - ui * ci + wr * sr + wi * si;
        mi2[i * n + p] = ur * ci + ui * cr + wi * sr - wr * si;
        mr2[i * n + m] = -(ur * sr + ui * si) + wr * cr + wi * ci;
        mi2[i * n + m] = -(ui * sr + ur * si) + wi * cr - wr * ci;
      }
    }
    tr[m * n + p] = ti[m * n + p] = 0;
  }
  return { t: { re: tr, im: ti }, z: { re: zr, im: zi } };
}
