/** @file jax.scipy.signal: n-D convolve / correlate (direct via lax.convGeneralDilated, or FFT), convolve2d, correlate2d, fftconvolve; detrend and the spectral estimates (stft, istft, csd, welch) live in signal-detrend.ts / signal-spectral.ts. */
import type { Array, ArrayLike, NestedValue } from "../core/array.js";
import { defaultFloatDType, isComplex, isInexact } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { convGeneralDilated } from "../lax/conv.js";
import { promoteDtypes } from "../numpy/core.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import * as fft from "../numpy/fft.js";
import { shapeStr } from "../numpy/struct-util.js";

export { detrend } from "./signal-detrend.js";
export {
  stft,
  istft,
  type IstftOptions,
  csd,
  welch,
  type StftOptions,
  type CsdOptions,
  type WindowSpec,
  type Detrend,
  type Boundary,
} from "./signal-spectral.js";

type AL = ArrayLike | NestedValue;
export type ConvMode = "full" | "same" | "valid";
export type ConvMethod = "auto" | "direct" | "fft";

/** Operands promoted to one dtype without broadcasting (ints and bools to the default float when inexact). */
function promoteNoBroadcast(fn: string, inexactOnly: boolean, ...xs: AL[]): Array[] {
  const ys = promoteDtypes(fn, xs);
  return inexactOnly && ys.length && !isInexact(ys[0].dtype)
    ? ys.map((y) => ops.convert(y, defaultFloatDType(), y.weakType))
    : ys;
}
/** Two operands of equal rank, promoted to a common inexact dtype (concrete, not weak). */
function operands(fn: string, a: AL, b: AL): [Array, Array] {
  let [x, y] = promoteNoBroadcast(fn, true, a, b);
  const dt = x.dtype === "float16" || x.dtype === "bfloat16" ? "float32" : x.dtype;
  x = ops.convert(x, dt);
  y = ops.convert(y, dt);
  if (x.ndim === 0 || y.ndim === 0)
    throw new Error(
      `${fn}: convolve/correlate of zero-dimensional arrays is not supported, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  if (x.ndim !== y.ndim)
    throw new Error(
      `${fn}: in1 and in2 must have the same number of dimensions, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  if (x.size === 0 || y.size === 0)
    throw new Error(`${fn}: in1 and in2 must be non-empty, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`);
  return [x, y];
}
function checkMode(fn: string, mode: unknown): ConvMode {
  if (mode !== "full" && mode !== "same" && mode !== "valid")
    throw new Error(`${fn}: mode must be one of "full", "same", "valid", got ${JSON.stringify(mode)}`);
  return mode;
}
/** In "valid" mode one input must be at least as large as the other in every dimension; true when in2 is the larger. */
function validSwap(fn: string, x: Array, y: Array): boolean {
  const ge = x.shape.every((s, i) => s >= y.shape[i]),
    le = x.shape.every((s, i) => s <= y.shape[i]);
  if (!ge && !le)
    throw new Error(
      `${fn}: for "valid" mode, one must be at least as large as the other in every dimension, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  return !ge;
}
const conj = (x: Array): Array => (isComplex(x.dtype) ? ops.conj(x) : x);
const revAll = (x: Array): Array => ops.rev(x, [...x.shape.keys()]);

/** Real n-D cross-correlation z[k] = sum_n x[n + k] y[n] with per-dimension padding (lo, hi), as one lax convolution. */
function xcorrReal(x: Array, y: Array, pads: [number, number][]): Array {
  const lhs = ops.reshape(x, [1, 1, ...x.shape]),
    rhs = ops.reshape(y, [1, 1, ...y.shape]);
  const r = convGeneralDilated(
    lhs,
    rhs,
    x.shape.map(() => 1),
    pads,
  );
  return ops.reshape(r, r.shape.slice(2));
}
/** xcorrReal for complex operands by the four real products. */
function xcorr(x: Array, y: Array, pads: [number, number][]): Array {
  if (!isComplex(x.dtype)) return xcorrReal(x, y, pads);
  const [xr, xi, yr, yi] = [ops.real(x), ops.imag(x), ops.real(y), ops.imag(y)];
  const re = ops.sub(xcorrReal(xr, yr, pads), xcorrReal(xi, yi, pads));
  const im = ops.add(xcorrReal(xr, yi, pads), xcorrReal(xi, yr, pads));
  return ops.complexOf(re, im);
}
/** Padding giving the full / same (centered on x, as scipy's _centered) / valid output of a length-k window. */
function padsFor(mode: ConvMode, x: Array, y: Array): [number, number][] {
  return y.shape.map((k) => {
    if (mode === "full") return [k - 1, k - 1];
    if (mode === "valid") return [0, 0];
    const start = Math.floor((k - 1) / 2);
    return [k - 1 - start, start];
  });
}
/** Direct n-D convolution: the cross-correlation with the flipped kernel. */
function convolveDirect(fn: string, x: Array, y: Array, mode: ConvMode): Array {
  if (mode === "valid" && validSwap(fn, x, y)) [x, y] = [y, x];
  return xcorr(x, revAll(y), padsFor(mode, x, y));
}
/** Direct n-D correlation (scipy's definition; in "valid" mode with the larger in2, the reversed conjugate of correlate(in2, in1)). */
function correlateDirect(fn: string, x: Array, y: Array, mode: ConvMode): Array {
  if (mode === "valid" && validSwap(fn, x, y))
    return revAll(conj(xcorr(y, conj(x), [...x.shape.map((): [number, number] => [0, 0])])));
  return xcorr(x, conj(y), padsFor(mode, x, y));
}

interface ConvOpts {
  mode: ConvMode;
  method: ConvMethod;
  precision: unknown;
}
/** convolve / correlate's shared arguments: mode and method checked, the operands promoted. */
function convArgs(
  fn: string,
  in1: AL,
  in2: AL,
  args: unknown[],
): { mode: ConvMode; method: ConvMethod; x: Array; y: Array } {
  const o = parseArgs<ConvOpts>(fn, args, ["mode", "method", "precision"]);
  const mode = checkMode(fn, o.mode ?? "full");
  const method = o.method ?? "auto";
  if (method !== "auto" && method !== "direct" && method !== "fft")
    throw new Error(`${fn}: method must be "auto", "direct" or "fft", got ${JSON.stringify(method)}`);
  const [x, y] = operands(fn, in1, in2);
  return { mode, method, x, y };
}
/** scipy.signal.convolve(in1, in2, mode="full", method="auto"): n-D convolution; "auto" and "direct" convolve directly (as JAX), "fft" uses fftconvolve. */
export function convolve(
  in1: AL,
  in2: AL,
  ...args: Args<[mode: ConvMode, method: ConvMethod, precision: unknown], Partial<ConvOpts>>
): Array {
  const fn = "scipy.signal.convolve";
  const { mode, method, x, y } = convArgs(fn, in1, in2, args);
  if (method === "fft") return fftconvolve(x, y, { mode });
  return convolveDirect(fn, x, y, mode);
}
/** scipy.signal.correlate(in1, in2, mode="full", method="auto"): n-D cross-correlation z[k] = sum_n in1[n + k] conj(in2[n]). */
export function correlate(
  in1: AL,
  in2: AL,
  ...args: Args<[mode: ConvMode, method: ConvMethod, precision: unknown], Partial<ConvOpts>>
): Array {
  const fn = "scipy.signal.correlate";
  const { mode, method, x, y } = convArgs(fn, in1, in2, args);
  if (method === "fft") {
    if (mode === "valid" && validSwap(fn, x, y)) return revAll(conj(fftconvolve(y, revAll(conj(x)), { mode })));
    return fftconvolve(x, revAll(conj(y)), { mode });
  }
  return correlateDirect(fn, x, y, mode);
}
interface Conv2dOpts {
  mode: ConvMode;
  boundary: string;
  fillvalue: number;
  precision: unknown;
}
function conv2dArgs(fn: string, in1: AL, in2: AL, args: readonly unknown[]): [Array, Array, ConvMode] {
  const o = parseArgs<Conv2dOpts>(fn, args, ["mode", "boundary", "fillvalue", "precision"]);
  if ((o.boundary ?? "fill") !== "fill" || (o.fillvalue ?? 0) !== 0)
    throw new Error(`${fn}: only boundary="fill" with fillvalue=0 is supported (as JAX)`);
  const mode = checkMode(fn, o.mode ?? "full");
  const [x, y] = operands(fn, in1, in2);
  if (x.ndim !== 2)
    throw new Error(`${fn}: inputs must be 2-D, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`);
  return [x, y, mode];
}
/** scipy.signal.convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0): 2-D convolution. */
export function convolve2d(
  in1: AL,
  in2: AL,
  ...args: Args<[mode: ConvMode, boundary: string, fillvalue: number, precision: unknown], Partial<Conv2dOpts>>
): Array {
  const fn = "scipy.signal.convolve2d";
  const [x, y, mode] = conv2dArgs(fn, in1, in2, args);
  return convolveDirect(fn, x, y, mode);
}
/** scipy.signal.correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0): 2-D cross-correlation. */
export function correlate2d(
  in1: AL,
  in2: AL,
  ...args: Args<[mode: ConvMode, boundary: string, fillvalue: number, precision: unknown], Partial<Conv2dOpts>>
): Array {
  const fn = "scipy.signal.correlate2d";
  const [x, y, mode] = conv2dArgs(fn, in1, in2, args);
  // scipy's correlate2d centers "same" (and orients a swapped "valid") unlike correlate: it is the flipped
  // convolution of the flipped in1 with conj(in2) (JAX's formulation)
  if (mode === "full") return correlateDirect(fn, x, y, mode);
  if (mode === "valid" && validSwap(fn, x, y)) return convolveDirect(fn, revAll(y), conj(x), mode);
  return revAll(convolveDirect(fn, revAll(x), conj(y), mode));
}

/** x[..] sliced to `shape` about its center along `axes` (scipy's _centered). */
function centered(x: Array, shape: number[], axes: number[]): Array {
  let r = x;
  for (const ax of axes) {
    const cur = r.shape[ax],
      want = shape[ax];
    const start = Math.floor((cur - want) / 2);
    r = ops.sliceInDim(r, start, start + want, 1, ax);
  }
  return r;
}
/**
 * scipy.signal.fftconvolve(in1, in2, mode="full", axes=null): convolution by FFT over `axes` (all by default); the
 * other dimensions must match or be 1 and broadcast. Real inputs use rfftn / irfftn.
 */
export function fftconvolve(
  in1: AL,
  in2: AL,
  ...args: Args<[mode: ConvMode, axes: number[] | number | null], { mode?: ConvMode; axes?: number[] | number | null }>
): Array {
  const fn = "scipy.signal.fftconvolve";
  const o = parseArgs<{ mode: ConvMode; axes: number[] | number | null }>(fn, args, ["mode", "axes"]);
  const mode = checkMode(fn, o.mode ?? "full");
  let [x, y] = operands(fn, in1, in2);
  const nd = x.ndim;
  const axes0 =
    o.axes === undefined || o.axes === null ? [...x.shape.keys()] : typeof o.axes === "number" ? [o.axes] : o.axes;
  const axes = axes0.map((a) => {
    if (!Number.isInteger(a) || a < -nd || a >= nd)
      throw new Error(`${fn}: axis ${a} is out of bounds for ${nd}-D inputs`);
    return a < 0 ? a + nd : a;
  });
  if (new Set(axes).size !== axes.length) throw new Error(`${fn}: axes must be unique, got ${JSON.stringify(axes0)}`);
  const other = [...x.shape.keys()].filter((d) => !axes.includes(d));
  for (const d of other)
    if (x.shape[d] !== y.shape[d] && x.shape[d] !== 1 && y.shape[d] !== 1)
      throw new Error(
        `${fn}: in1 ${shapeStr(x.shape)} and in2 ${shapeStr(y.shape)} must match or be 1 in the non-transformed dimension ${d}`,
      );
  if (mode === "valid") {
    const ge = axes.every((d) => x.shape[d] >= y.shape[d]),
      le = axes.every((d) => x.shape[d] <= y.shape[d]);
    if (!ge && !le)
      throw new Error(
        `${fn}: for "valid" mode, one must be at least as large as the other in every transformed dimension, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
      );
    if (!ge) [x, y] = [y, x];
  }
  const s = axes.map((d) => x.shape[d] + y.shape[d] - 1);
  const cplx = isComplex(x.dtype);
  const fx = cplx ? fft.fftn(x, { s, axes }) : fft.rfftn(x, { s, axes });
  const fy = cplx ? fft.fftn(y, { s, axes }) : fft.rfftn(y, { s, axes });
  // the non-transformed dimensions broadcast (one of them may be 1)
  const common = fx.shape.map((v, d) => Math.max(v, fy.shape[d]));
  const bc = (v: Array): Array =>
    v.shape.every((n, d) => n === common[d]) ? v : ops.broadcastInDim(v, common, [...v.shape.keys()]);
  const prod = ops.mul(bc(fx), bc(fy));
  let r = cplx ? fft.ifftn(prod, { s, axes }) : fft.irfftn(prod, { s, axes });
  if (!cplx && r.dtype !== x.dtype) r = ops.convert(r, x.dtype);
  if (mode === "full") return r;
  const want = [...r.shape];
  for (const d of axes) want[d] = mode === "same" ? x.shape[d] : x.shape[d] - y.shape[d] + 1;
  return centered(r, want, axes);
}
