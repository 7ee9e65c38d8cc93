/** @file The fft primitive (lax.fft): FFT / IFFT / RFFT / IRFFT over the trailing axes, with its linear jvp, transpose and vmap rules. */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { fromNumbers } from "../core/convert.js";
import { ShapedArray } from "../core/aval.js";
import { complexDType, isComplex, realDType } from "../core/dtype.js";
import { Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { dftAxis } from "../backends/interpreter/fft-kernels.js";
import * as ops from "./bind-ops.js";
import { conj, fromParts, partsOf, real } from "./complex.js";

export type FftType = "FFT" | "IFFT" | "RFFT" | "IRFFT";
export interface FftParams {
  fft_type: FftType;
  fft_lengths: number[];
  [k: string]: unknown;
}
const TYPES: readonly FftType[] = ["FFT", "IFFT", "RFFT", "IRFFT"];

export const fftP: Primitive<FftParams> = new Primitive<FftParams>("fft", {
  abstractEval([x], { fft_type: t, fft_lengths: L }) {
    const bad = (m: string) => new TypeError(`fft: ${m}; operand ${x.str()}, fft_type ${t}, fft_lengths [${L}]`);
    if (!TYPES.includes(t)) throw bad(`fft_type must be one of ${TYPES.join(", ")}`);
    if (
      !globalThis.Array.isArray(L) ||
      L.length === 0 ||
      L.length > x.ndim ||
      L.some((n) => !Number.isInteger(n) || n < 0)
    )
      throw bad("fft_lengths must be 1 to ndim non-negative integers");
    const lead = x.shape.slice(0, x.ndim - L.length),
      tail = x.shape.slice(x.ndim - L.length);
    const last = L[L.length - 1];
    if (t === "RFFT") {
      if (x.dtype !== "float32" && x.dtype !== "float64") throw bad("RFFT requires a float32 or float64 operand");
      if (tail.some((s, i) => s !== L[i])) throw bad("the trailing dimensions must equal fft_lengths");
      return [
        new ShapedArray([...lead, ...L.slice(0, -1), Math.floor(last / 2) + 1], complexDType(x.dtype), x.weakType),
      ];
    }
    if (!isComplex(x.dtype)) throw bad(`${t} requires a complex operand`);
    if (t === "IRFFT") {
      if (tail.some((s, i) => s !== (i === L.length - 1 ? Math.floor(last / 2) + 1 : L[i])))
        throw bad("IRFFT needs trailing dimensions fft_lengths[:-1] and fft_lengths[-1] // 2 + 1");
      return [new ShapedArray([...lead, ...L], realDType(x.dtype), x.weakType)];
    }
    if (tail.some((s, i) => s !== L[i])) throw bad("the trailing dimensions must equal fft_lengths");
    return [x];
  },
  impl([x], { fft_type: t, fft_lengths: L }, [o]) {
    const k = L.length,
      nd = x.ndim,
      total = L.reduce((a, b) => a * b, 1);
    const [re, im] = partsOf(x);
    if (t === "FFT" || t === "IFFT" || t === "RFFT") {
      const sign = t === "IFFT" ? 1 : -1;
      for (let a = nd - k; a < nd; a++) dftAxis(re, im, x.shape, a, sign);
      if (t === "IFFT")
        for (let i = 0; i < re.length; i++) {
          re[i] /= total;
          im[i] /= total;
        }
      if (t !== "RFFT") return [fromParts(o, re, im)];
      // keep the non-negative frequencies of the last axis
      const n = x.shape[nd - 1],
        h = o.shape[nd - 1],
        rows = re.length / (n || 1);
      const r2 = new Float64Array(rows * h),
        i2 = new Float64Array(rows * h);
      for (let r = 0; r < rows; r++)
        for (let j = 0; j < h; j++) {
          r2[r * h + j] = re[r * n + j];
          i2[r * h + j] = im[r * n + j];
        }
      return [fromParts(o, r2, i2)];
    }
    // IRFFT: inverse transforms over the leading fft axes, then a Hermitian-extended inverse along the last one
    for (let a = nd - k; a < nd - 1; a++) dftAxis(re, im, x.shape, a, 1);
    const h = x.shape[nd - 1],
      n = L[k - 1],
      rows = re.length / (h || 1);
    const outR = new Float64Array(rows * n),
      lr = new Float64Array(n),
      li = new Float64Array(n);
    for (let r = 0; r < rows; r++) {
      lr.fill(0);
      li.fill(0);
      for (let j = 0; j < Math.min(h, n); j++) {
        lr[j] = re[r * h + j];
        li[j] = im[r * h + j];
      }
      // X[n-j] = conj(X[j]) fills the negative frequencies
      for (let j = 1; j < n - Math.floor(n / 2) && j < h; j++) {
        lr[n - j] = re[r * h + j];
        li[n - j] = -im[r * h + j];
      }
      dftAxis(lr, li, [n], 0, 1);
      for (let j = 0; j < n; j++) outR[r * n + j] = lr[j] / total;
    }
    return [new ArrayImpl(o, fromNumbers(outR, o.dtype))];
  },
  jvp([x], [t], p) {
    const y = fft(x, p.fft_type, p.fft_lengths);
    return [[y], [t instanceof Zero ? new Zero(y.aval) : fft(t, p.fft_type, p.fft_lengths)]];
  },
  transpose([ct], [x], { fft_type: t, fft_lengths: L }) {
    const aval = (x as UndefinedPrimal).aval;
    if (ct instanceof Zero) return [new Zero(aval)];
    if (t === "FFT" || t === "IFFT") return [fft(ct, t, L)]; // the DFT matrices are symmetric
    if (t === "RFFT") {
      // rfft = (fft of x + 0i)[..., :n//2+1]; transpose: zero-pad the cotangent to n, FFT, real part
      const nd = ct.ndim,
        n = L[L.length - 1],
        h = ct.shape[nd - 1];
      const padded = ops.pad(
        ct,
        ops.scalarLike(ct, 0),
        ct.shape.map((_, d): [number, number, number] => [0, d === nd - 1 ? n - h : 0, 0]),
      );
      return [real(fft(padded, "FFT", L))];
    }
    // irfft = (1/N) Re(sum over the Hermitian extension); its transpose weights each kept frequency by its multiplicity
    const x2 = fft(ct, "RFFT", L);
    const nd = x2.ndim,
      h = x2.shape[nd - 1],
      odd = L[L.length - 1] % 2;
    const total = L.reduce((a, b) => a * b, 1);
    const w = new Float64Array(h).fill(2 / total);
    w[0] = 1 / total;
    if (!odd && h > 1) w[h - 1] = 1 / total;
    const wc = ops.convert(new ArrayImpl(new ShapedArray([h], ct.dtype), fromNumbers(w, ct.dtype)), x2.dtype);
    return [conj(ops.mul(x2, ops.broadcastInDim(wc, x2.shape, [nd - 1])))];
  },
});
fftP.rules.vmap = (_axis, [x], [d], p) => [[fft(ops.moveaxis(x, d!, 0), p.fft_type, p.fft_lengths)], [0]];
fftP.rules.missing = { lower: "complex values run on the reference interpreter (notes/complex.md)" };

/** lax.fft(x, fft_type, fft_lengths). */
export function fft(x: Array, fftType: FftType, fftLengths: readonly number[]): Array {
  return ops.bindN(fftP, [x], { fft_type: fftType, fft_lengths: [...fftLengths] })[0];
}
