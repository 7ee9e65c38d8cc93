/** @file Reference FFT kernels in float64: iterative radix-2 for powers of two, Bluestein's chirp-z for other lengths. */

/** In-place radix-2 DFT of re/im (length a power of two); sign -1 forward, +1 inverse (unscaled). */
function radix2(re: Float64Array, im: Float64Array, sign: number): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      let t = re[i];
      re[i] = re[j];
      re[j] = t;
      t = im[i];
      im[i] = im[j];
      im[j] = t;
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const half = len >> 1,
      ang = (sign * 2 * Math.PI) / len;
    for (let k = 0; k < half; k++) {
      // twiddles computed directly (not by recurrence) to keep the error O(log n) ulp
      const wr = Math.cos(ang * k),
        wi = Math.sin(ang * k);
      for (let s = 0; s < n; s += len) {
        const a = s + k,
          b = a + half;
        const xr = re[b] * wr - im[b] * wi,
          xi = re[b] * wi + im[b] * wr;
        re[b] = re[a] - xr;
        im[b] = im[a] - xi;
        re[a] += xr;
        im[a] += xi;
      }
    }
  }
}

const isPow2 = (n: number): boolean => (n & (n - 1)) === 0;

/**
 * Unscaled DFT of one line: X_k = sum_j x_j exp(sign 2 pi i jk / n). Bluestein: jk = (j^2 + k^2 - (k-j)^2) / 2 turns the
 * DFT into a convolution with the chirp exp(sign pi i m^2 / n), done with power-of-two FFTs of length >= 2n - 1.
 */
export function dft1(re: Float64Array, im: Float64Array, sign: number): void {
  const n = re.length;
  if (n <= 1) return;
  if (isPow2(n)) {
    radix2(re, im, sign);
    return;
  }
  let m = 1;
  while (m < 2 * n - 1) m <<= 1;
  const cr = new Float64Array(n),
    ci = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    // j^2 mod 2n keeps the angle small and exact for large j
    const a = (sign * Math.PI * ((j * j) % (2 * n))) / n;
    cr[j] = Math.cos(a);
    ci[j] = Math.sin(a);
  }
  const ar = new Float64Array(m),
    ai = new Float64Array(m),
    br = new Float64Array(m),
    bi = new Float64Array(m);
  for (let j = 0; j < n; j++) {
    ar[j] = re[j] * cr[j] - im[j] * ci[j];
    ai[j] = re[j] * ci[j] + im[j] * cr[j];
  }
  br[0] = cr[0];
  bi[0] = -ci[0];
  for (let j = 1; j < n; j++) {
    br[j] = br[m - j] = cr[j];
    bi[j] = bi[m - j] = -ci[j];
  }
  radix2(ar, ai, -1);
  radix2(br, bi, -1);
  for (let k = 0; k < m; k++) {
    const r = ar[k] * br[k] - ai[k] * bi[k],
      i = ar[k] * bi[k] + ai[k] * br[k];
    ar[k] = r;
    ai[k] = i;
  }
  radix2(ar, ai, 1);
  for (let k = 0; k < n; k++) {
    const r = ar[k] / m,
      i = ai[k] / m;
    re[k] = r * cr[k] - i * ci[k];
    im[k] = r * ci[k] + i * cr[k];
  }
}

/** Unscaled DFT along `axis` of a row-major array of `shape` held as re/im planes (in place). */
export function dftAxis(
  re: Float64Array,
  im: Float64Array,
  shape: readonly number[],
  axis: number,
  sign: number,
): void {
  const n = shape[axis];
  let inner = 1;
  for (let d = axis + 1; d < shape.length; d++) inner *= shape[d];
  const outer = re.length / (n * inner || 1);
  const lr = new Float64Array(n),
    li = new Float64Array(n);
  for (let o = 0; o < outer; o++) {
    for (let q = 0; q < inner; q++) {
      const base = o * n * inner + q;
      for (let j = 0; j < n; j++) {
        lr[j] = re[base + j * inner];
        li[j] = im[base + j * inner];
      }
      dft1(lr, li, sign);
      for (let j = 0; j < n; j++) {
        re[base + j * inner] = lr[j];
        im[base + j * inner] = li[j];
      }
    }
  }
}
