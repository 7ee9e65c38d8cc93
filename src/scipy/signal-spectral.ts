/** @file jax.scipy.signal spectral estimates: stft, csd, welch (windowed, detrended, overlapping segments through one FFT, as scipy's _spectral_helper). */
import type { Array, ArrayLike, NestedValue } from "../core/array.js";
import { type DType, complexDType, isComplex, isInexact, defaultFloatDType, realDType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { array, promoteDtypes } from "../numpy/core.js";
import * as fft from "../numpy/fft.js";
import { take } from "../numpy/indexing-funcs.js";
import { median } from "../numpy/reductions.js";
import { shapeStr } from "../numpy/struct-util.js";
import { detrend as detrendFn } from "./signal-detrend.js";

type AL = ArrayLike | NestedValue;
/** A window name (periodic, as scipy.signal.get_window with fftbins) or the window's samples. */
export type WindowSpec = "hann" | "hamming" | "blackman" | "boxcar" | AL;
export type Detrend = false | "constant" | "linear" | ((segment: Array) => Array);
export type Boundary = "zeros" | "even" | "odd" | "constant" | null;

/** The periodic window of length n (scipy's get_window(name, n, fftbins=True)). */
function namedWindow(fn: string, name: string, n: number): number[] {
  const c = (k: number, i: number): number => Math.cos((2 * Math.PI * k * i) / n);
  const f: Record<string, (i: number) => number> = {
    hann: (i) => 0.5 - 0.5 * c(1, i),
    hamming: (i) => 0.54 - 0.46 * c(1, i),
    blackman: (i) => 0.42 - 0.5 * c(1, i) + 0.08 * c(2, i),
    boxcar: () => 1,
  };
  if (!(name in f))
    throw new Error(
      `${fn}: unknown window ${JSON.stringify(name)} (expected "hann", "hamming", "blackman", "boxcar" or an array)`,
    );
  return globalThis.Array.from({ length: n }, (_, i) => f[name](i));
}

interface HelperOpts {
  fs: number;
  window: WindowSpec;
  nperseg: number | null;
  noverlap: number | null;
  nfft: number | null;
  detrend: Detrend;
  returnOnesided: boolean;
  scaling: "density" | "spectrum";
  axis: number;
  mode: "psd" | "stft";
  boundary: Boundary;
  padded: boolean;
}
const staticInt = (fn: string, name: string, v: unknown, min: number): number => {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min)
    throw new Error(`${fn}: ${name} must be a static integer >= ${min}, got ${JSON.stringify(v)}`);
  return v;
};
/** x with n points added at both ends of the last axis by the boundary rule. */
function extend(fn: string, x: Array, n: number, boundary: Exclude<Boundary, null>): Array {
  const L = x.shape[x.ndim - 1],
    ax = x.ndim - 1;
  const sl = (lo: number, hi: number): Array => ops.sliceInDim(x, lo, hi, 1, ax);
  if (n < 1) return x;
  if (boundary === "zeros")
    return ops.pad(x, ops.full([], 0, x.dtype), [
      ...x.shape.slice(0, -1).map((): [number, number, number] => [0, 0, 0]),
      [n, n, 0],
    ]);
  if (n > L - 1 && boundary !== "constant")
    throw new Error(
      `${fn}: the extension length ${n} is too big for a signal of length ${L} (boundary ${JSON.stringify(boundary)})`,
    );
  const reps = (v: Array): Array =>
    ops.broadcastInDim(
      ops.reshape(v, v.shape.slice(0, -1)),
      [...x.shape.slice(0, -1), n],
      [...x.shape.keys()].slice(0, -1),
    );
  if (boundary === "constant") return ops.concatenate([reps(sl(0, 1)), x, reps(sl(L - 1, L))], ax);
  const left = ops.rev(sl(1, n + 1), [ax]),
    right = ops.rev(sl(L - n - 1, L - 1), [ax]);
  if (boundary === "even") return ops.concatenate([left, x, right], ax);
  const two = (v: Array): Array =>
    ops.mul(
      ops.full([], 2, x.dtype),
      ops.broadcastInDim(
        ops.reshape(v, v.shape.slice(0, -1)),
        [...x.shape.slice(0, -1), n],
        [...x.shape.keys()].slice(0, -1),
      ),
    );
  return ops.concatenate([ops.sub(two(sl(0, 1)), left), x, ops.sub(two(sl(L - 1, L)), right)], ax);
}
/** Windowed, detrended FFTs of the overlapping segments of x's last axis: [..., nseg, nfreq]. */
function segmentFfts(
  x: Array,
  win: Array,
  detrend: (s: Array) => Array,
  nperseg: number,
  nstep: number,
  nfft: number,
  twosided: boolean,
): Array {
  const L = x.shape[x.ndim - 1];
  const nseg = Math.floor((L - nperseg) / nstep) + 1;
  // segment s is x[s * nstep : s * nstep + nperseg], gathered with a static index table
  const idx = new Int32Array(nseg * nperseg);
  for (let s = 0; s < nseg; s++) for (let j = 0; j < nperseg; j++) idx[s * nperseg + j] = s * nstep + j;
  const table = ops.reshape(array(globalThis.Array.from(idx), { dtype: "int32" }), [nseg, nperseg]);
  let seg = take(x, table, { axis: -1 });
  seg = detrend(seg);
  // a complex window or complex data makes the product complex (scipy promotes both)
  const dt = isComplex(win.dtype) ? win.dtype : seg.dtype;
  const ws = ops.broadcastInDim(ops.convert(win, isComplex(dt) ? dt : win.dtype), seg.shape, [seg.ndim - 1]);
  const segC = ops.convert(seg, isComplex(dt) ? dt : seg.dtype);
  const prod = ops.mul(ws, segC);
  return twosided ? fft.fft(prod, { n: nfft }) : fft.rfft(isComplex(prod.dtype) ? ops.real(prod) : prod, { n: nfft });
}

/** scipy's _spectral_helper (y null for auto-spectra): [freqs, times, result with the frequency axis at `axis` and segments last]. */
function spectralHelper(fn: string, x0: AL, y0: AL | null, o: HelperOpts): [Array, Array, Array] {
  let [x, y] =
    y0 === null ? [promoteDtypes(fn, [x0])[0], null] : (promoteDtypes(fn, [x0, y0]) as [Array, Array | null]);
  const inexact = (v: Array): Array => ops.convert(v, isInexact(v.dtype) ? v.dtype : defaultFloatDType());
  x = inexact(x);
  if (y) y = inexact(y);
  if (x.ndim === 0) throw new Error(`${fn}: x must be at least 1-D, got a scalar`);
  if (y && y.ndim !== x.ndim)
    throw new Error(`${fn}: x and y must have the same rank, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`);
  const axis0 = staticInt(fn, "axis", o.axis < 0 ? o.axis + x.ndim : o.axis, 0);
  if (axis0 >= x.ndim) throw new Error(`${fn}: axis ${o.axis} is out of bounds for x of shape ${shapeStr(x.shape)}`);
  const resultDtype: DType = complexDType(x.dtype);
  const freqDtype: DType = realDType(resultDtype);
  x = ops.moveaxis(x, axis0, x.ndim - 1);
  if (y) y = ops.moveaxis(y, axis0, y.ndim - 1);
  if (y && x.shape[x.ndim - 1] !== y.shape[y.ndim - 1]) {
    const n = Math.max(x.shape[x.ndim - 1], y.shape[y.ndim - 1]);
    const padTo = (v: Array): Array =>
      ops.pad(v, ops.full([], 0, v.dtype), [
        ...v.shape.slice(0, -1).map((): [number, number, number] => [0, 0, 0]),
        [0, n - v.shape[v.ndim - 1], 0],
      ]);
    x = padTo(x);
    y = padTo(y);
  }
  if (y) {
    const bx = x.shape.slice(0, -1),
      by = y.shape.slice(0, -1);
    const common = bx.map((v, i) => {
      if (v !== by[i] && v !== 1 && by[i] !== 1)
        throw new Error(`${fn}: x and y cannot be broadcast together (${shapeStr(x!.shape)}, ${shapeStr(y!.shape)})`);
      return Math.max(v, by[i]);
    });
    const L = x.shape[x.ndim - 1];
    const to = (v: Array): Array => ops.broadcastInDim(v, [...common, L], [...v.shape.keys()]);
    x = to(x);
    y = to(y);
  }
  const inputLength = x.shape[x.ndim - 1];
  // the window fixes nperseg when it is an array; a named window gets nperseg (default 256, at most the input length)
  let win: Array;
  let nperseg: number;
  if (typeof o.window === "string") {
    nperseg = o.nperseg === null ? 256 : staticInt(fn, "nperseg", o.nperseg, 1);
    if (nperseg > inputLength) nperseg = inputLength;
    win = array(namedWindow(fn, o.window, nperseg), { dtype: freqDtype });
  } else {
    win = promoteDtypes(fn, [o.window])[0];
    win = ops.convert(win, isComplex(win.dtype) ? win.dtype : freqDtype);
    if (win.ndim !== 1) throw new Error(`${fn}: the window must be 1-D, got shape ${shapeStr(win.shape)}`);
    if (win.shape[0] > inputLength)
      throw new Error(`${fn}: the window is longer than the input signal (${win.shape[0]} > ${inputLength})`);
    if (o.nperseg !== null && o.nperseg !== win.shape[0])
      throw new Error(
        `${fn}: the value specified for nperseg (${o.nperseg}) differs from the window's length ${win.shape[0]}`,
      );
    nperseg = win.shape[0];
  }
  const noverlap = o.noverlap === null ? Math.floor(nperseg / 2) : staticInt(fn, "noverlap", o.noverlap, 0);
  const nfft = o.nfft === null ? nperseg : staticInt(fn, "nfft", o.nfft, 1);
  if (nfft < nperseg) throw new Error(`${fn}: nfft must be greater than or equal to nperseg (${nfft} < ${nperseg})`);
  if (noverlap >= nperseg) throw new Error(`${fn}: noverlap must be less than nperseg (${noverlap} >= ${nperseg})`);
  const nstep = nperseg - noverlap;
  if (o.boundary !== null) {
    if (!["zeros", "even", "odd", "constant"].includes(o.boundary))
      throw new Error(
        `${fn}: unknown boundary option ${JSON.stringify(o.boundary)} (expected "zeros", "even", "odd", "constant" or null)`,
      );
    x = extend(fn, x, Math.floor(nperseg / 2), o.boundary);
    if (y) y = extend(fn, y, Math.floor(nperseg / 2), o.boundary);
  }
  if (o.padded) {
    const L = x.shape[x.ndim - 1];
    const nadd = (((-(L - nperseg) % nstep) + nstep) % nstep) % nperseg;
    const padEnd = (v: Array): Array =>
      ops.pad(v, ops.full([], 0, v.dtype), [
        ...v.shape.slice(0, -1).map((): [number, number, number] => [0, 0, 0]),
        [0, nadd, 0],
      ]);
    x = padEnd(x);
    if (y) y = padEnd(y);
  }
  const dt = o.detrend;
  const detrendFunc: (s: Array) => Array =
    dt === false ? (s) => s : typeof dt === "function" ? dt : (s) => detrendFn(s, { axis: -1, type: dt });
  const wvals = win;
  const wsum = ops.reduceSum(wvals, [0]);
  let scale: Array;
  if (o.scaling === "density") {
    const ww = ops.reduceSum(ops.mul(wvals, wvals), [0]);
    scale = ops.div(ops.full([], 1, ww.dtype), ops.mul(ops.full([], o.fs, ww.dtype), ww));
  } else if (o.scaling === "spectrum") scale = ops.div(ops.full([], 1, wsum.dtype), ops.mul(wsum, wsum));
  else throw new Error(`${fn}: unknown scaling ${JSON.stringify(o.scaling)} (expected "density" or "spectrum")`);
  if (o.mode === "stft") scale = ops.sqrt(scale);
  const twosided = !o.returnOnesided || isComplex(x.dtype) || (y !== null && isComplex(y.dtype));
  const freqs = twosided ? fft.fftfreq(nfft, 1 / o.fs, freqDtype) : fft.rfftfreq(nfft, 1 / o.fs, freqDtype);
  let result = segmentFfts(x, win, detrendFunc, nperseg, nstep, nfft, twosided);
  if (y) result = ops.mul(ops.conj(result), segmentFfts(y, win, detrendFunc, nperseg, nstep, nfft, twosided));
  else if (o.mode === "psd") result = ops.mul(ops.conj(result), result);
  result = ops.mul(result, ops.broadcastInDim(ops.convert(scale, result.dtype), result.shape, []));
  if (!twosided && o.mode === "psd") {
    const nf = result.shape[result.ndim - 1];
    const end = nfft % 2 ? nf : nf - 1;
    const f = new Float64Array(nf).map((_, i) => (i >= 1 && i < end ? 2 : 1));
    const fac = ops.convert(array(globalThis.Array.from(f), { dtype: freqDtype }), result.dtype);
    result = ops.mul(result, ops.broadcastInDim(fac, result.shape, [result.ndim - 1]));
  }
  const Lx = x.shape[x.ndim - 1];
  const times: number[] = [];
  for (let t = nperseg / 2; t <= Lx - nperseg / 2; t += nstep)
    times.push((t - (o.boundary !== null ? nperseg / 2 : 0)) / o.fs);
  const time = array(times, { dtype: freqDtype });
  result = ops.convert(result, resultDtype);
  if (!y && o.mode !== "stft") result = ops.real(result);
  // [..., nseg, nfreq] -> the frequency axis back at `axis`, the segments last
  result = ops.moveaxis(result, result.ndim - 1, axis0);
  return [freqs, time, result];
}

/** stft's options (scipy.signal.stft's keywords). */
export interface StftOptions {
  fs?: number;
  window?: WindowSpec;
  nperseg?: number;
  noverlap?: number | null;
  nfft?: number | null;
  detrend?: Detrend;
  returnOnesided?: boolean;
  boundary?: Boundary;
  padded?: boolean;
  axis?: number;
}
/** The options object (keyword arguments only: JAX's positional forms are not accepted), its keys checked. */
const pick = <T extends object>(fn: string, o: T | undefined, keys: string[], nargs = 0, maxArgs = 0): T => {
  if (nargs > maxArgs)
    throw new TypeError(`${fn}: takes at most ${maxArgs} arguments (the data, then one options object), got ${nargs}`);
  if (o !== undefined && (o === null || typeof o !== "object" || globalThis.Array.isArray(o)))
    throw new TypeError(`${fn}: expected an options object { ${keys.join(", ")} }, got ${JSON.stringify(o)}`);
  const v = o ?? ({} as T);
  for (const k of Object.keys(v))
    if (!keys.includes(k)) throw new TypeError(`${fn}: unexpected option "${k}"; expected one of ${keys.join(", ")}`);
  return v;
};
/** scipy.signal.stft(x, {fs, window="hann", nperseg=256, noverlap, nfft, detrend=false, returnOnesided, boundary="zeros", padded, axis}): `[f, t, Zxx]`. */
export function stft(x: AL, opts?: StftOptions): [Array, Array, Array] {
  const fn = "scipy.signal.stft";
  const o = pick(
    fn,
    opts,
    ["fs", "window", "nperseg", "noverlap", "nfft", "detrend", "returnOnesided", "boundary", "padded", "axis"],
    arguments.length,
    2,
  );
  return spectralHelper(fn, x, null, {
    fs: o.fs ?? 1,
    window: o.window ?? "hann",
    nperseg: o.nperseg ?? 256,
    noverlap: o.noverlap ?? null,
    nfft: o.nfft ?? null,
    detrend: o.detrend ?? false,
    returnOnesided: o.returnOnesided ?? true,
    scaling: "spectrum",
    axis: o.axis ?? -1,
    mode: "stft",
    boundary: o.boundary === undefined ? "zeros" : o.boundary,
    padded: o.padded ?? true,
  });
}
/** csd / welch options (scipy.signal.csd's keywords). */
export interface CsdOptions {
  fs?: number;
  window?: WindowSpec;
  nperseg?: number | null;
  noverlap?: number | null;
  nfft?: number | null;
  detrend?: Detrend;
  returnOnesided?: boolean;
  scaling?: "density" | "spectrum";
  axis?: number;
  average?: "mean" | "median";
}
const CSD_KEYS = [
  "fs",
  "window",
  "nperseg",
  "noverlap",
  "nfft",
  "detrend",
  "returnOnesided",
  "scaling",
  "axis",
  "average",
];
/** scipy's bias of the median of n chi-squared(2) periodogram values relative to their mean. */
function medianBias(n: number): number {
  let s = 1;
  for (let k = 1; k <= Math.floor((n - 1) / 2); k++) s += 1 / (2 * k + 1) - 1 / (2 * k);
  return s;
}
function csdImpl(
  fn: string,
  x: AL,
  y: AL | null,
  opts: CsdOptions | undefined,
  nargs: number,
  maxArgs: number,
): [Array, Array] {
  const o = pick(fn, opts, CSD_KEYS, nargs, maxArgs);
  const average = o.average ?? "mean";
  if (average !== "mean" && average !== "median")
    throw new Error(`${fn}: average must be "mean" or "median", got ${JSON.stringify(average)}`);
  const [f, , p0] = spectralHelper(fn, x, y, {
    fs: o.fs ?? 1,
    window: o.window ?? "hann",
    nperseg: o.nperseg ?? null,
    noverlap: o.noverlap ?? null,
    nfft: o.nfft ?? null,
    detrend: o.detrend ?? "constant",
    returnOnesided: o.returnOnesided ?? true,
    scaling: o.scaling ?? "density",
    axis: o.axis ?? -1,
    mode: "psd",
    boundary: null,
    padded: false,
  });
  let p = p0;
  const last = p.ndim - 1;
  if (p.ndim >= 2 && p.size > 0) {
    const nseg = p.shape[last];
    if (nseg > 1) {
      if (average === "median") {
        const bias = ops.full([], medianBias(nseg), realDType(p.dtype));
        const med = (v: Array): Array => ops.div(median(v, { axis: -1 }), bias);
        p = isComplex(p.dtype) ? ops.complexOf(med(ops.real(p)), med(ops.imag(p))) : med(p);
      } else p = ops.div(ops.reduceSum(p, [last]), ops.full([], nseg, p.dtype));
    } else p = ops.reshape(p, p.shape.slice(0, -1));
  }
  return [f, p];
}
/** scipy.signal.csd(x, y, {fs, window="hann", nperseg, noverlap, nfft, detrend="constant", returnOnesided, scaling="density", axis, average="mean"}): `[f, Pxy]`. */
export function csd(x: AL, y: AL | null, opts?: CsdOptions): [Array, Array] {
  return csdImpl("scipy.signal.csd", x, y, opts, arguments.length, 3);
}
/** scipy.signal.welch(x, {...csd's options}): `[f, Pxx]`, the real power spectral density by Welch's method. */
export function welch(x: AL, opts?: CsdOptions): [Array, Array] {
  const [f, p] = csdImpl("scipy.signal.welch", x, null, opts, arguments.length, 2);
  return [f, isComplex(p.dtype) ? ops.real(p) : p];
}

/** Overlap-add of frames [..., N, T] placed nstep apart: [..., nstep (N - 1) + T]. */
function overlapAdd(frames: Array, nstep: number): Array {
  const nd = frames.ndim;
  const N = frames.shape[nd - 2],
    T = frames.shape[nd - 1];
  const S = Math.ceil(T / nstep);
  const batch = frames.shape.slice(0, -2);
  const zeroPads = batch.map((): [number, number, number] => [0, 0, 0]);
  const padded = ops.pad(frames, ops.full([], 0, frames.dtype), [...zeroPads, [0, 0, 0], [0, S * nstep - T, 0]]);
  const total = (N - 1 + S) * nstep;
  let out: Array | null = null;
  // chunk s of every frame (samples s*nstep .. (s+1)*nstep) forms one contiguous run starting at s*nstep
  for (let s = 0; s < S; s++) {
    const chunk = ops.reshape(ops.sliceInDim(padded, s * nstep, (s + 1) * nstep, 1, nd - 1), [...batch, N * nstep]);
    const placed = ops.pad(chunk, ops.full([], 0, frames.dtype), [
      ...zeroPads,
      [s * nstep, total - s * nstep - N * nstep, 0],
    ]);
    out = out === null ? placed : ops.add(out, placed);
  }
  return ops.sliceInDim(out!, 0, nstep * (N - 1) + T, 1, nd - 2);
}
/** istft options (scipy.signal.istft's keywords). */
export interface IstftOptions {
  fs?: number;
  window?: WindowSpec;
  nperseg?: number | null;
  noverlap?: number | null;
  nfft?: number | null;
  inputOnesided?: boolean;
  boundary?: boolean;
  timeAxis?: number;
  freqAxis?: number;
}
/**
 * scipy.signal.istft(Zxx, {fs, window="hann", nperseg, noverlap, nfft, inputOnesided=true, boundary=true, timeAxis=-1,
 * freqAxis=-2}): `[t, x]`, the inverse of stft by windowed overlap-add normalized by the summed squared window.
 */
export function istft(Zxx: AL, opts?: IstftOptions): [Array, Array] {
  const fn = "scipy.signal.istft";
  const o = pick(
    fn,
    opts,
    ["fs", "window", "nperseg", "noverlap", "nfft", "inputOnesided", "boundary", "timeAxis", "freqAxis"],
    arguments.length,
    2,
  );
  let z = promoteDtypes(fn, [Zxx])[0];
  if (z.ndim < 2) throw new Error(`${fn}: the input stft must be at least 2-D, got shape ${shapeStr(z.shape)}`);
  const canon = (name: string, a: number): number => {
    if (!Number.isInteger(a) || a < -z.ndim || a >= z.ndim)
      throw new Error(`${fn}: ${name} ${a} is out of bounds for Zxx of shape ${shapeStr(z.shape)}`);
    return a < 0 ? a + z.ndim : a;
  };
  const fAx = canon("freqAxis", o.freqAxis ?? -2),
    tAx = canon("timeAxis", o.timeAxis ?? -1);
  if (fAx === tAx) throw new Error(`${fn}: timeAxis and freqAxis must differ, both are ${tAx}`);
  z = ops.convert(z, isComplex(z.dtype) ? z.dtype : complexDType(isInexact(z.dtype) ? z.dtype : defaultFloatDType()));
  const onesided = o.inputOnesided ?? true;
  const nDefault = onesided ? 2 * (z.shape[fAx] - 1) : z.shape[fAx];
  const nperseg = staticInt(fn, "nperseg", o.nperseg || nDefault, 1);
  let nfft: number;
  if (o.nfft === undefined || o.nfft === null) nfft = onesided && nperseg === nDefault + 1 ? nDefault + 1 : nDefault;
  else nfft = staticInt(fn, "nfft", o.nfft, 1);
  if (nfft < nperseg) throw new Error(`${fn}: the FFT length (${nfft}) must be at least nperseg (${nperseg})`);
  const noverlap = staticInt(fn, "noverlap", o.noverlap || Math.floor(nperseg / 2), 0);
  if (noverlap >= nperseg) throw new Error(`${fn}: noverlap must be less than nperseg (${noverlap} >= ${nperseg})`);
  const nstep = nperseg - noverlap;
  const outer = [...z.shape.keys()].filter((d) => d !== fAx && d !== tAx);
  z = ops.transpose(z, [...outer, tAx, fAx]); // [..., N frames, nfreq]
  const rdt = realDType(z.dtype);
  const full = onesided ? fft.irfft(z, { n: nfft, axis: -1 }) : fft.ifft(z, { n: nfft, axis: -1 });
  const frames = ops.sliceInDim(full, 0, nperseg, 1, full.ndim - 1); // [..., N, nperseg]
  let win: Array;
  if (typeof o.window === "string" || o.window === undefined)
    win = array(namedWindow(fn, o.window ?? "hann", nperseg), { dtype: rdt });
  else {
    win = promoteDtypes(fn, [o.window])[0];
    if (win.ndim !== 1 || win.shape[0] !== nperseg)
      throw new Error(`${fn}: the window must be 1-D of length ${nperseg}, got shape ${shapeStr(win.shape)}`);
  }
  win = ops.convert(win, rdt);
  const wsum = ops.reduceSum(win, [0]);
  const wb = ops.broadcastInDim(win, frames.shape, [frames.ndim - 1]);
  const wf = ops.convert(ops.mul(wb, ops.broadcastInDim(wsum, frames.shape, [])), frames.dtype);
  let x = overlapAdd(ops.mul(frames, wf), nstep);
  let norm = overlapAdd(ops.mul(wb, wb), nstep);
  if (o.boundary ?? true) {
    const h = Math.floor(nperseg / 2),
      L = x.shape[x.ndim - 1];
    x = ops.sliceInDim(x, h, L - h, 1, x.ndim - 1);
    norm = ops.sliceInDim(norm, h, L - h, 1, norm.ndim - 1);
  }
  const tiny = ops.gt(norm, ops.full(norm.shape, 1e-10, norm.dtype));
  x = ops.div(x, ops.convert(ops.select(tiny, norm, ops.full(norm.shape, 1, norm.dtype)), x.dtype));
  if (x.ndim > 1 && tAx !== z.ndim - 1) x = ops.moveaxis(x, x.ndim - 1, fAx < tAx ? tAx - 1 : tAx);
  // as scipy (and JAX): the times count x's first dimension
  const time = ops.div(ops.iota(rdt, [x.shape[0]], 0), ops.full([x.shape[0]], o.fs ?? 1, rdt));
  return [time, x];
}
