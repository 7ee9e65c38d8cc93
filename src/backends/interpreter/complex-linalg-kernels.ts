/** @file Complex (interleaved re, im float64) LU with partial pivoting and triangular solves for the reference interpreter. */

/** Complex LU result: packed L\U (interleaved), 0-based pivots [batch, k], permutations [batch, m]. */
export interface ComplexLuResult {
  lu: Float64Array;
  pivots: Int32Array;
  permutation: Int32Array;
}

/** P A = L U per batch matrix (m x n); pivots pick the largest |re| + |im| in each column, as LAPACK's izamax. */
export function complexLu(a: Float64Array, batch: number, m: number, n: number): ComplexLuResult {
  if (a.length !== 2 * batch * m * n)
    throw new Error(`complexLu: expected ${2 * batch * m * n} values for ${batch} x ${m} x ${n}, got ${a.length}`);
  const k = Math.min(m, n);
  const w = a.slice();
  const pivots = new Int32Array(batch * k);
  const permutation = new Int32Array(batch * m);
  for (let bi = 0; bi < batch; bi++) {
    const o = 2 * bi * m * n;
    const perm = permutation.subarray(bi * m, (bi + 1) * m);
    for (let i = 0; i < m; i++) perm[i] = i;
    const at = (i: number, j: number): number => o + 2 * (i * n + j);
    for (let j = 0; j < k; j++) {
      let p = j,
        best = -1;
      for (let i = j; i < m; i++) {
        const v = Math.abs(w[at(i, j)]) + Math.abs(w[at(i, j) + 1]);
        if (v > best) {
          best = v;
          p = i;
        }
      }
      pivots[bi * k + j] = p;
      if (p !== j) {
        for (let c = 0; c < 2 * n; c++) {
          const t = w[at(j, 0) + c];
          w[at(j, 0) + c] = w[at(p, 0) + c];
          w[at(p, 0) + c] = t;
        }
        const t = perm[j];
        perm[j] = perm[p];
        perm[p] = t;
      }
      const dr = w[at(j, j)],
        di = w[at(j, j) + 1];
      const den = dr * dr + di * di;
      if (den === 0) continue; // singular column: leave it (the solve divides by zero, as LAPACK's getrs would)
      // l_ij = a_ij / u_jj, then a_ic -= l_ij u_jc for c > j
      for (let i = j + 1; i < m; i++) {
        const q = at(i, j);
        const xr = w[q],
          xi = w[q + 1];
        const lr = (xr * dr + xi * di) / den,
          li = (xi * dr - xr * di) / den;
        w[q] = lr;
        w[q + 1] = li;
        for (let c = j + 1; c < n; c++) {
          const u = at(j, c),
            t = at(i, c);
          const ur = w[u],
            ui = w[u + 1];
          w[t] -= lr * ur - li * ui;
          w[t + 1] -= lr * ui + li * ur;
        }
      }
    }
  }
  return { lu: w, pivots, permutation };
}

/** Options of complexTriangularSolve (lax.linalg.triangular_solve's). */
export interface ComplexTriangularSolveOptions {
  leftSide?: boolean;
  lower?: boolean;
  transposeA?: boolean;
  conjugateA?: boolean;
  unitDiagonal?: boolean;
}

/** Solves op(a) x = b (leftSide) or x op(a) = b with op(a) = a, a^T, conj(a) or a^H; b is [batch, m, n] interleaved. */
export function complexTriangularSolve(
  a: Float64Array,
  b: Float64Array,
  batch: number,
  m: number,
  n: number,
  o: ComplexTriangularSolveOptions = {},
): Float64Array {
  const leftSide = o.leftSide ?? false,
    lower = o.lower ?? false,
    trans = o.transposeA ?? false,
    conjSign = o.conjugateA ? -1 : 1,
    unit = o.unitDiagonal ?? false;
  const k = leftSide ? m : n;
  if (a.length !== 2 * batch * k * k || b.length !== 2 * batch * m * n)
    throw new Error(
      `complexTriangularSolve: a has ${a.length / 2} and b ${b.length / 2} elements, expected ${batch * k * k} and ${batch * m * n}`,
    );
  const opLower = lower !== trans;
  const x = b.slice();
  // x[t] -= f * x[s] and x[t] /= f on interleaved slots
  const fms = (t: number, fr: number, fi: number, s: number): void => {
    const sr = x[s],
      si = x[s + 1];
    x[t] -= fr * sr - fi * si;
    x[t + 1] -= fr * si + fi * sr;
  };
  const dv = (t: number, fr: number, fi: number): void => {
    const den = fr * fr + fi * fi,
      xr = x[t],
      xi = x[t + 1];
    x[t] = (xr * fr + xi * fi) / den;
    x[t + 1] = (xi * fr - xr * fi) / den;
  };
  for (let bi = 0; bi < batch; bi++) {
    const ao = 2 * bi * k * k,
      xo = 2 * bi * m * n;
    const opIdx = (i: number, j: number): number => ao + 2 * (trans ? j * k + i : i * k + j);
    if (leftSide) {
      for (let step = 0; step < m; step++) {
        const i = opLower ? step : m - 1 - step;
        const lo = opLower ? 0 : i + 1,
          hi = opLower ? i : m;
        for (let kk = lo; kk < hi; kk++) {
          const q = opIdx(i, kk);
          for (let c = 0; c < n; c++) fms(xo + 2 * (i * n + c), a[q], conjSign * a[q + 1], xo + 2 * (kk * n + c));
        }
        if (!unit) {
          const q = opIdx(i, i);
          for (let c = 0; c < n; c++) dv(xo + 2 * (i * n + c), a[q], conjSign * a[q + 1]);
        }
      }
    } else {
      for (let r = 0; r < m; r++) {
        const row = xo + 2 * r * n;
        for (let step = 0; step < n; step++) {
          const j = opLower ? n - 1 - step : step;
          const lo = opLower ? j + 1 : 0,
            hi = opLower ? n : j;
          for (let i = lo; i < hi; i++) {
            const q = opIdx(i, j);
            fms(row + 2 * j, a[q], conjSign * a[q + 1], row + 2 * i);
          }
          if (!unit) {
            const q = opIdx(j, j);
            dv(row + 2 * j, a[q], conjSign * a[q + 1]);
          }
        }
      }
    }
  }
  return x;
}

/** Lower L with A = L L^H from A's lower triangle (Hermitian positive definite); a failing matrix becomes NaN. */
export function complexCholesky(a: Float64Array, batch: number, n: number): Float64Array {
  if (a.length !== 2 * batch * n * n)
    throw new Error(
      `complexCholesky: expected ${2 * batch * n * n} values for ${batch} x ${n} x ${n}, got ${a.length}`,
    );
  const out = new Float64Array(a.length);
  const nn = 2 * n * n;
  for (let bi = 0; bi < batch; bi++) {
    const o = bi * nn;
    const at = (i: number, j: number): number => o + 2 * (i * n + j);
    let ok = true;
    for (let j = 0; j < n && ok; j++) {
      // L_jj = sqrt(Re A_jj - sum_k |L_jk|^2)  (real)
      let d = a[at(j, j)];
      for (let k = 0; k < j; k++) d -= out[at(j, k)] ** 2 + out[at(j, k) + 1] ** 2;
      if (!(d > 0)) {
        ok = false;
        break;
      }
      const ljj = Math.sqrt(d);
      out[at(j, j)] = ljj;
      // L_ij = (A_ij - sum_k L_ik conj(L_jk)) / L_jj
      for (let i = j + 1; i < n; i++) {
        let sr = a[at(i, j)],
          si = a[at(i, j) + 1];
        for (let k = 0; k < j; k++) {
          const pr = out[at(i, k)],
            pi = out[at(i, k) + 1],
            qr = out[at(j, k)],
            qi = out[at(j, k) + 1];
          sr -= pr * qr + pi * qi;
          si -= pi * qr - pr * qi;
        }
        out[at(i, j)] = sr / ljj;
        out[at(i, j) + 1] = si / ljj;
      }
    }
    if (!ok) out.fill(NaN, o, o + nn);
  }
  return out;
}
