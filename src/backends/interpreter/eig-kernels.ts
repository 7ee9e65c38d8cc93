/** @file Reference kernels for the general (non-symmetric) real or complex eigenproblem: Hessenberg reduction, shifted complex QR, inverse iteration. */

/** A complex n x n matrix as row-major re/im planes. */
interface CMat {
  re: Float64Array;
  im: Float64Array;
  n: number;
}

/**
 * Householder reduction of a row-major n x n matrix (re, im planes) to upper Hessenberg form (similar, so same
 * eigenvalues): for column k, x = h[k+1:, k], alpha = -e^{i arg x_0} ||x||, v = x - alpha e_1, H = I - 2 v v^H / v^H v.
 */
function hessenberg(a: Float64Array, n: number, aIm?: Float64Array): { hr: Float64Array; hi: Float64Array } {
  const hr = a.slice(),
    hi = aIm ? aIm.slice() : new Float64Array(n * n);
  const vr = new Float64Array(n),
    vi = new Float64Array(n);
  for (let k = 0; k < n - 2; k++) {
    let nrm = 0;
    for (let i = k + 1; i < n; i++) nrm = Math.hypot(nrm, hr[i * n + k], hi[i * n + k]);
    if (nrm === 0) continue;
    const x0r = hr[(k + 1) * n + k],
      x0i = hi[(k + 1) * n + k],
      m0 = Math.hypot(x0r, x0i);
    // alpha = -phase(x0) ||x|| (a real x0 > 0 gives -||x||, as the real reduction)
    const pr = m0 === 0 ? 1 : x0r / m0,
      pi = m0 === 0 ? 0 : x0i / m0;
    vr.fill(0);
    vi.fill(0);
    for (let i = k + 1; i < n; i++) {
      vr[i] = hr[i * n + k];
      vi[i] = hi[i * n + k];
    }
    vr[k + 1] += pr * nrm;
    vi[k + 1] += pi * nrm;
    let vv = 0;
    for (let i = k + 1; i < n; i++) vv += vr[i] * vr[i] + vi[i] * vi[i];
    if (vv === 0) continue;
    // H <- (I - 2 v v^H / vv) H: row combination s_j = v^H h_j
    for (let j = 0; j < n; j++) {
      let sr = 0,
        si = 0;
      for (let i = k + 1; i < n; i++) {
        sr += vr[i] * hr[i * n + j] + vi[i] * hi[i * n + j];
        si += vr[i] * hi[i * n + j] - vi[i] * hr[i * n + j];
      }
      sr = (2 * sr) / vv;
      si = (2 * si) / vv;
      for (let i = k + 1; i < n; i++) {
        hr[i * n + j] -= sr * vr[i] - si * vi[i];
        hi[i * n + j] -= sr * vi[i] + si * vr[i];
      }
    }
    // H <- H (I - 2 v v^H / vv): s_i = h_i v, h_i -= s_i v^H
    for (let i = 0; i < n; i++) {
      let sr = 0,
        si = 0;
      for (let j = k + 1; j < n; j++) {
        sr += hr[i * n + j] * vr[j] - hi[i * n + j] * vi[j];
        si += hr[i * n + j] * vi[j] + hi[i * n + j] * vr[j];
      }
      sr = (2 * sr) / vv;
      si = (2 * si) / vv;
      for (let j = k + 1; j < n; j++) {
        hr[i * n + j] -= sr * vr[j] + si * vi[j];
        hi[i * n + j] -= si * vr[j] - sr * vi[j];
      }
    }
  }
  return { hr, hi };
}

const csqrt = (x: number, y: number): [number, number] => {
  const r = Math.hypot(x, y);
  if (r === 0) return [0, 0];
  const t = Math.sqrt((r + Math.abs(x)) / 2);
  return x >= 0 ? [t, y / (2 * t)] : [Math.abs(y) / (2 * t), y < 0 ? -t : t];
};

/**
 * Eigenvalues of an n x n matrix (real, or complex with imaginary plane aIm): Hessenberg form, then complex
 * single-shift QR (Wilkinson shifts) with deflation.
 */
export function eigenvalues(a: Float64Array, n: number, aIm?: Float64Array): { re: Float64Array; im: Float64Array } {
  const { hr, hi } = hessenberg(a, n, aIm);
  const wr = new Float64Array(n),
    wi = new Float64Array(n);
  if (!hr.every(Number.isFinite) || !hi.every(Number.isFinite)) return { re: wr.fill(NaN), im: wi.fill(NaN) };
  const at = (i: number, j: number) => i * n + j;
  let top = n - 1,
    iter = 0;
  while (top >= 0) {
    if (top === 0) {
      wr[0] = hr[0];
      wi[0] = hi[0];
      break;
    }
    // find the active block [l, top]: the last negligible subdiagonal
    let l = top;
    while (l > 0) {
      const s = Math.hypot(hr[at(l - 1, l - 1)], hi[at(l - 1, l - 1)]) + Math.hypot(hr[at(l, l)], hi[at(l, l)]);
      if (Math.hypot(hr[at(l, l - 1)], hi[at(l, l - 1)]) <= 2.2e-16 * (s === 0 ? 1 : s)) {
        hr[at(l, l - 1)] = 0;
        hi[at(l, l - 1)] = 0;
        break;
      }
      l--;
    }
    if (l === top) {
      wr[top] = hr[at(top, top)];
      wi[top] = hi[at(top, top)];
      top--;
      iter = 0;
      continue;
    }
    if (++iter > 60 * n) {
      for (let k = 0; k <= top; k++) {
        wr[k] = NaN;
        wi[k] = NaN;
      }
      break;
    }
    // Wilkinson shift: the eigenvalue of the trailing 2x2 block nearer its last diagonal entry (exceptional shifts now and then)
    const p = at(top - 1, top - 1),
      q = at(top - 1, top),
      r = at(top, top - 1),
      s = at(top, top);
    const hr2 = (hr[p] - hr[s]) / 2,
      hi2 = (hi[p] - hi[s]) / 2;
    const bcR = hr[q] * hr[r] - hi[q] * hi[r],
      bcI = hr[q] * hi[r] + hi[q] * hr[r];
    const [dr, di] = csqrt(hr2 * hr2 - hi2 * hi2 + bcR, 2 * hr2 * hi2 + bcI);
    const mr0 = (hr[p] + hr[s]) / 2,
      mi0 = (hi[p] + hi[s]) / 2;
    let mr = mr0 + dr,
      mi = mi0 + di;
    if (Math.hypot(mr0 - dr - hr[s], mi0 - di - hi[s]) < Math.hypot(mr - hr[s], mi - hi[s])) {
      mr = mr0 - dr;
      mi = mi0 - di;
    }
    if (iter % 11 === 10) {
      mr += Math.abs(hr[r]) + Math.abs(hr[at(top - 1, Math.max(top - 2, 0))]);
      mi += 0.5 * Math.abs(hr[r]);
    }
    for (let k = l; k <= top; k++) {
      hr[at(k, k)] -= mr;
      hi[at(k, k)] -= mi;
    }
    // QR by Givens rotations G_k = [[c, s], [-conj(s), c]] on rows k, k+1, then RQ with their adjoints on columns
    const cs = new Float64Array(top - l),
      sr = new Float64Array(top - l),
      si = new Float64Array(top - l);
    for (let k = l; k < top; k++) {
      const ar = hr[at(k, k)],
        ai = hi[at(k, k)],
        br = hr[at(k + 1, k)],
        bi = hi[at(k + 1, k)];
      const na = Math.hypot(ar, ai),
        rr = Math.hypot(na, Math.hypot(br, bi));
      let c: number, xr: number, xi: number;
      if (rr === 0) {
        c = 1;
        xr = 0;
        xi = 0;
      } else if (na === 0) {
        c = 0;
        xr = 1;
        xi = 0;
      } else {
        c = na / rr;
        // s = (a / |a|) conj(b) / r
        const ur = ar / na,
          ui = ai / na;
        xr = (ur * br + ui * bi) / rr;
        xi = (ui * br - ur * bi) / rr;
      }
      cs[k - l] = c;
      sr[k - l] = xr;
      si[k - l] = xi;
      for (let j = k; j <= top; j++) {
        const yr = hr[at(k, j)],
          yi = hi[at(k, j)],
          zr = hr[at(k + 1, j)],
          zi = hi[at(k + 1, j)];
        hr[at(k, j)] = c * yr + (xr * zr - xi * zi);
        hi[at(k, j)] = c * yi + (xr * zi + xi * zr);
        hr[at(k + 1, j)] = -(xr * yr + xi * yi) + c * zr;
        hi[at(k + 1, j)] = -(xr * yi - xi * yr) + c * zi;
      }
    }
    for (let k = l; k < top; k++) {
      const c = cs[k - l],
        xr = sr[k - l],
        xi = si[k - l];
      for (let i = l; i <= Math.min(k + 1, top); i++) {
        const yr = hr[at(i, k)],
          yi = hi[at(i, k)],
          zr = hr[at(i, k + 1)],
          zi = hi[at(i, k + 1)];
        // [y, z] G^H: y' = c y + conj(s) z, z' = -s y + c z
        hr[at(i, k)] = c * yr + (xr * zr + xi * zi);
        hi[at(i, k)] = c * yi + (xr * zi - xi * zr);
        hr[at(i, k + 1)] = -(xr * yr - xi * yi) + c * zr;
        hi[at(i, k + 1)] = -(xr * yi + xi * yr) + c * zi;
      }
    }
    for (let k = l; k <= top; k++) {
      hr[at(k, k)] += mr;
      hi[at(k, k)] += mi;
    }
  }
  // a real matrix's eigenvalues are real or conjugate pairs: imaginary parts at rounding level are zero
  if (aIm) return { re: wr, im: wi };
  let norm = 0;
  for (let i = 0; i < n * n; i++) norm = Math.max(norm, Math.abs(a[i]));
  for (let k = 0; k < n; k++) if (Math.abs(wi[k]) <= 64 * 2.2e-16 * norm) wi[k] = 0;
  return { re: wr, im: wi };
}

/** Solves M x = b in place (complex, Gaussian elimination with partial pivoting); M is destroyed. */
function csolve(m: CMat, br: Float64Array, bi: Float64Array): void {
  const { re, im, n } = m;
  for (let k = 0; k < n; k++) {
    let p = k,
      best = -1;
    for (let i = k; i < n; i++) {
      const v = Math.hypot(re[i * n + k], im[i * n + k]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    if (p !== k) {
      for (let j = 0; j < n; j++) {
        let t = re[k * n + j];
        re[k * n + j] = re[p * n + j];
        re[p * n + j] = t;
        t = im[k * n + j];
        im[k * n + j] = im[p * n + j];
        im[p * n + j] = t;
      }
      let t = br[k];
      br[k] = br[p];
      br[p] = t;
      t = bi[k];
      bi[k] = bi[p];
      bi[p] = t;
    }
    let dr = re[k * n + k];
    const di = im[k * n + k];
    // an exactly singular pivot (an exact eigenvalue shift) is nudged to a tiny value, as inverse iteration wants
    if (dr === 0 && di === 0) {
      dr = 1e-300;
      re[k * n + k] = dr;
    }
    const den = dr * dr + di * di;
    for (let i = k + 1; i < n; i++) {
      const fr = (re[i * n + k] * dr + im[i * n + k] * di) / den,
        fi = (im[i * n + k] * dr - re[i * n + k] * di) / den;
      if (fr === 0 && fi === 0) continue;
      for (let j = k; j < n; j++) {
        re[i * n + j] -= fr * re[k * n + j] - fi * im[k * n + j];
        im[i * n + j] -= fr * im[k * n + j] + fi * re[k * n + j];
      }
      br[i] -= fr * br[k] - fi * bi[k];
      bi[i] -= fr * bi[k] + fi * br[k];
    }
  }
  for (let k = n - 1; k >= 0; k--) {
    let sr = br[k],
      si = bi[k];
    for (let j = k + 1; j < n; j++) {
      sr -= re[k * n + j] * br[j] - im[k * n + j] * bi[j];
      si -= re[k * n + j] * bi[j] + im[k * n + j] * br[j];
    }
    const dr = re[k * n + k],
      di = im[k * n + k],
      den = dr * dr + di * di;
    br[k] = (sr * dr + si * di) / den;
    bi[k] = (si * dr - sr * di) / den;
  }
}

/**
 * Right eigenvectors (columns, row-major n x n) for the given eigenvalues by inverse iteration on A - lambda I, each
 * normalized like LAPACK's geev: unit 2-norm, largest-magnitude component real.
 */
export function eigenvectors(
  a: Float64Array,
  n: number,
  wr: Float64Array,
  wi: Float64Array,
  aIm?: Float64Array,
): { re: Float64Array; im: Float64Array } {
  const vr = new Float64Array(n * n),
    vi = new Float64Array(n * n);
  let norm = 0;
  for (let i = 0; i < n * n; i++) norm = Math.max(norm, Math.abs(a[i]), aIm ? Math.abs(aIm[i]) : 0);
  for (let k = 0; k < n; k++) {
    const xr = new Float64Array(n).fill(1),
      xi = new Float64Array(n);
    for (let it = 0; it < 3; it++) {
      const m: CMat = { re: a.slice(), im: aIm ? aIm.slice() : new Float64Array(n * n), n };
      const shift = 1e-10 * (norm || 1);
      for (let i = 0; i < n; i++) {
        m.re[i * n + i] -= wr[k] + shift;
        m.im[i * n + i] -= wi[k];
      }
      csolve(m, xr, xi);
      let s = 0;
      for (let i = 0; i < n; i++) s += xr[i] * xr[i] + xi[i] * xi[i];
      s = Math.sqrt(s) || 1;
      for (let i = 0; i < n; i++) {
        xr[i] /= s;
        xi[i] /= s;
      }
    }
    let p = 0;
    for (let i = 1; i < n; i++) if (Math.hypot(xr[i], xi[i]) > Math.hypot(xr[p], xi[p]) + 1e-12) p = i;
    const mag = Math.hypot(xr[p], xi[p]) || 1,
      ur = xr[p] / mag,
      ui = -xi[p] / mag;
    for (let i = 0; i < n; i++) {
      vr[i * n + k] = xr[i] * ur - xi[i] * ui;
      vi[i * n + k] = xr[i] * ui + xi[i] * ur;
    }
    vi[p * n + k] = 0;
  }
  return { re: vr, im: vi };
}

/** Inverse of a complex n x n matrix (row-major planes) by solving for each unit vector. */
export function cinverse(re: Float64Array, im: Float64Array, n: number): { re: Float64Array; im: Float64Array } {
  const or = new Float64Array(n * n),
    oi = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    const br = new Float64Array(n),
      bi = new Float64Array(n);
    br[j] = 1;
    csolve({ re: re.slice(), im: im.slice(), n }, br, bi);
    for (let i = 0; i < n; i++) {
      or[i * n + j] = br[i];
      oi[i * n + j] = bi[i];
    }
  }
  return { re: or, im: oi };
}
