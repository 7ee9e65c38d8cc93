/** @file jnp.fft: fft, ifft, rfft, irfft, hfft, ihfft and their 2-D / n-D forms, fftfreq, rfftfreq, fftshift, ifftshift. */
import { checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import {
  type DType,
  checkDType,
  complexDType,
  defaultFloatDType,
  isComplex,
  isFloat,
  realDType,
} from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import type { FftType } from "../primitives/fft.js";
import { roll } from "./shape-ops.js";
import { arr, normalizeAxis, parseArgs, range } from "./struct-util.js";

type AL = ArrayLike | NestedValue;
export type FftNorm = "backward" | "ortho" | "forward";
type Opts1 = { n: number | null; axis: number; norm: FftNorm | null };
type OptsN = { s: number[] | null; axes: number[] | null; norm: FftNorm | null };

function opts<O extends object>(fn: string, args: readonly unknown[], names: readonly string[]): Partial<O> {
  const o = parseArgs<O>(fn, args, names) as Record<string, unknown>;
  checkOptions(fn, o, names);
  const norm = o.norm;
  if (norm !== undefined && norm !== null && norm !== "backward" && norm !== "ortho" && norm !== "forward") {
    throw new TypeError(`${fn}: norm must be "backward", "ortho" or "forward", got ${JSON.stringify(norm)}`);
  }
  return o as Partial<O>;
}

/** The operand as complex (ints and floats promote to the default complex dtype of their precision). */
function asComplex(fn: string, a: AL): Array {
  const x = arr(fn, a);
  if (isComplex(x.dtype)) return x;
  const f = isFloat(x.dtype) ? x : ops.convert(x, defaultFloatDType());
  return ops.convert(f, complexDType(f.dtype === "float64" ? "float64" : "float32"));
}
function asReal(fn: string, a: AL): Array {
  const x = arr(fn, a);
  if (isComplex(x.dtype)) throw new TypeError(`${fn}: requires a real operand, got ${x.dtype}`);
  const f = isFloat(x.dtype) ? x : ops.convert(x, defaultFloatDType());
  return f.dtype === "float16" || f.dtype === "bfloat16" ? ops.convert(f, "float32") : f;
}

/** Pads with zeros or truncates axis `ax` to length n (numpy's `n` / `s` arguments). */
function fitAxis(x: Array, ax: number, n: number, fn: string): Array {
  if (!Number.isInteger(n) || n < 1)
    throw new TypeError(`${fn}: invalid number of data points ${n}; must be a positive integer`);
  const m = x.shape[ax];
  if (m === n) return x;
  if (m > n) return ops.sliceInDim(x, 0, n, 1, ax);
  return ops.pad(
    x,
    ops.scalarLike(x, 0),
    x.shape.map((_, d): [number, number, number] => [0, d === ax ? n - m : 0, 0]),
  );
}

/** Scale for a transform of total length N: forward transforms scale by 1/N under "forward", inverse ones under "backward". */
function scale(x: Array, norm: FftNorm | null | undefined, total: number, inverse: boolean): Array {
  const nm = norm ?? "backward";
  // the inverse primitives already divide by N (the "backward" convention)
  const f =
    nm === "ortho"
      ? inverse
        ? Math.sqrt(total)
        : 1 / Math.sqrt(total)
      : nm === "forward"
        ? inverse
          ? total
          : 1 / total
        : 1;
  if (f === 1) return x;
  return ops.mul(x, ops.convert(ops.full([], f, realDType(x.dtype)), x.dtype));
}

/** Runs `type` over `axes` (already fitted) by moving them last, in order. */
function overAxes(x: Array, axes: number[], type: FftType, lengths: number[]): Array {
  const nd = x.ndim,
    rest = range(nd).filter((d) => !axes.includes(d));
  const perm = [...rest, ...axes];
  const moved = perm.every((p, i) => p === i) ? x : ops.transpose(x, perm);
  const y = ops.fft(moved, type, lengths);
  const inv = perm.map((_, i) => perm.indexOf(i));
  return perm.every((p, i) => p === i) ? y : ops.transpose(y, inv);
}

function normAxes(
  fn: string,
  x: Array,
  s: number[] | null | undefined,
  axes: number[] | null | undefined,
  lastOnlyDefault = 0,
): { axes: number[]; s: number[] } {
  let ax: number[];
  if (axes !== undefined && axes !== null) ax = axes.map((a) => normalizeAxis(fn, a, x.ndim));
  else if (s !== undefined && s !== null) ax = range(s.length).map((i) => x.ndim - s.length + i);
  else ax = lastOnlyDefault ? range(lastOnlyDefault).map((i) => x.ndim - lastOnlyDefault + i) : range(x.ndim);
  if (new Set(ax).size !== ax.length) throw new TypeError(`${fn}: repeated axes [${axes}] are not supported`);
  if (s !== undefined && s !== null && s.length !== ax.length)
    throw new TypeError(`${fn}: s has ${s.length} entries but axes has ${ax.length}`);
  if (ax.length === 0)
    throw new TypeError(`${fn}: needs at least one axis, got an empty axes list for an operand of shape [${x.shape}]`);
  return { axes: ax, s: s ?? ax.map((a) => x.shape[a]) };
}

function complexN(fn: string, inverse: boolean, a: AL, o: Partial<OptsN>, dflt = 0): Array {
  let x = asComplex(fn, a);
  const { axes, s } = normAxes(fn, x, o.s, o.axes, dflt);
  axes.forEach((ax, i) => {
    x = fitAxis(x, ax, s[i], fn);
  });
  const y = overAxes(x, axes, inverse ? "IFFT" : "FFT", s);
  return scale(
    y,
    o.norm,
    s.reduce((p, q) => p * q, 1),
    inverse,
  );
}
function rfftN(fn: string, a: AL, o: Partial<OptsN>, dflt = 0): Array {
  let x = asReal(fn, a);
  const { axes, s } = normAxes(fn, x, o.s, o.axes, dflt);
  axes.forEach((ax, i) => {
    x = fitAxis(x, ax, s[i], fn);
  });
  return scale(
    overAxes(x, axes, "RFFT", s),
    o.norm,
    s.reduce((p, q) => p * q, 1),
    false,
  );
}
function irfftN(fn: string, a: AL, o: Partial<OptsN>, dflt = 0): Array {
  let x = asComplex(fn, a);
  const { axes } = normAxes(fn, x, o.s, o.axes, dflt);
  // the output length of the last axis defaults to 2 (m - 1)
  const s = o.s ?? axes.map((ax, i) => (i === axes.length - 1 ? 2 * (x.shape[ax] - 1) : x.shape[ax]));
  axes.forEach((ax, i) => {
    x = fitAxis(x, ax, i === axes.length - 1 ? Math.floor(s[i] / 2) + 1 : s[i], fn);
  });
  return scale(
    overAxes(x, axes, "IRFFT", s),
    o.norm,
    s.reduce((p, q) => p * q, 1),
    true,
  );
}
const one = (o: Partial<Opts1>, fn: string, x: Array): Partial<OptsN> => {
  if (o.axis !== undefined && typeof o.axis !== "number")
    throw new TypeError(`${fn}: axis must be an integer, got ${JSON.stringify(o.axis)}`);
  const ax = normalizeAxis(fn, o.axis ?? -1, x.ndim);
  return { axes: [ax], s: o.n === undefined || o.n === null ? null : [o.n], norm: o.norm };
};
const swap = (n: FftNorm | null | undefined): FftNorm =>
  n === "forward" ? "backward" : n === "ortho" ? "ortho" : "forward";
const N1 = ["n", "axis", "norm"],
  NN = ["s", "axes", "norm"];

/** jnp.fft.fft(a, n?, axis=-1, norm?): the 1-D discrete Fourier transform. */
export function fft(a: AL, ...args: unknown[]): Array {
  const x = arr("fft.fft", a);
  return complexN("fft.fft", false, x, one(opts<Opts1>("fft.fft", args, N1), "fft.fft", x));
}
/** jnp.fft.ifft(a, n?, axis=-1, norm?): the 1-D inverse transform. */
export function ifft(a: AL, ...args: unknown[]): Array {
  const x = arr("fft.ifft", a);
  return complexN("fft.ifft", true, x, one(opts<Opts1>("fft.ifft", args, N1), "fft.ifft", x));
}
/** jnp.fft.rfft(a, n?, axis=-1, norm?): the transform of a real signal (non-negative frequencies). */
export function rfft(a: AL, ...args: unknown[]): Array {
  const x = arr("fft.rfft", a);
  return rfftN("fft.rfft", x, one(opts<Opts1>("fft.rfft", args, N1), "fft.rfft", x));
}
/** jnp.fft.irfft(a, n?, axis=-1, norm?): the inverse of rfft (real output of length n, default 2(m-1)). */
export function irfft(a: AL, ...args: unknown[]): Array {
  const x = arr("fft.irfft", a);
  return irfftN("fft.irfft", x, one(opts<Opts1>("fft.irfft", args, N1), "fft.irfft", x));
}
/** jnp.fft.hfft(a, n?, axis=-1, norm?): the transform of a Hermitian-symmetric signal given by its first half (real output). */
export function hfft(a: AL, ...args: unknown[]): Array {
  const x = asComplex("fft.hfft", a),
    o = one(opts<Opts1>("fft.hfft", args, N1), "fft.hfft", x);
  return irfftN("fft.hfft", ops.conj(x), { ...o, norm: swap(o.norm) });
}
/** jnp.fft.ihfft(a, n?, axis=-1, norm?): the inverse of hfft. */
export function ihfft(a: AL, ...args: unknown[]): Array {
  const x = asReal("fft.ihfft", a),
    o = one(opts<Opts1>("fft.ihfft", args, N1), "fft.ihfft", x);
  return ops.conj(rfftN("fft.ihfft", x, { ...o, norm: swap(o.norm) }));
}
/** jnp.fft.fftn(a, s?, axes?, norm?): the n-D transform (all axes by default). */
export function fftn(a: AL, ...args: unknown[]): Array {
  return complexN("fft.fftn", false, a, opts<OptsN>("fft.fftn", args, NN));
}
export function ifftn(a: AL, ...args: unknown[]): Array {
  return complexN("fft.ifftn", true, a, opts<OptsN>("fft.ifftn", args, NN));
}
export function rfftn(a: AL, ...args: unknown[]): Array {
  return rfftN("fft.rfftn", a, opts<OptsN>("fft.rfftn", args, NN));
}
export function irfftn(a: AL, ...args: unknown[]): Array {
  return irfftN("fft.irfftn", a, opts<OptsN>("fft.irfftn", args, NN));
}
/** The 2-D forms: axes default to the last two. */
export function fft2(a: AL, ...args: unknown[]): Array {
  return complexN("fft.fft2", false, a, opts<OptsN>("fft.fft2", args, NN), 2);
}
export function ifft2(a: AL, ...args: unknown[]): Array {
  return complexN("fft.ifft2", true, a, opts<OptsN>("fft.ifft2", args, NN), 2);
}
export function rfft2(a: AL, ...args: unknown[]): Array {
  return rfftN("fft.rfft2", a, opts<OptsN>("fft.rfft2", args, NN), 2);
}
export function irfft2(a: AL, ...args: unknown[]): Array {
  return irfftN("fft.irfft2", a, opts<OptsN>("fft.irfft2", args, NN), 2);
}

/** jnp.fft.fftfreq(n, d=1.0, dtype?): sample frequencies [0, 1, ..., n/2-1, -n/2, ..., -1] / (d n). */
export function fftfreq(n: number, d = 1.0, dtype?: DType): Array {
  if (typeof d !== "number")
    throw new TypeError(
      `fft.fftfreq: d (the sample spacing) must be a number, got ${JSON.stringify(d)}; accepted form: jnp.fft.fftfreq(n, d?, dtype?)`,
    );
  if (!Number.isInteger(n) || n < 1) throw new TypeError(`fft.fftfreq: n must be a positive integer, got ${n}`);
  const v = range(n).map((i) => (i < Math.ceil(n / 2) ? i : i - n) / (d * n));
  return ops.convert(arrOf(v), dtype ? checkDType("fft.fftfreq", dtype) : defaultFloatDType());
}
/** jnp.fft.rfftfreq(n, d=1.0, dtype?): the non-negative frequencies [0, 1, ..., n/2] / (d n). */
export function rfftfreq(n: number, d = 1.0, dtype?: DType): Array {
  if (typeof d !== "number")
    throw new TypeError(
      `fft.rfftfreq: d (the sample spacing) must be a number, got ${JSON.stringify(d)}; accepted form: jnp.fft.rfftfreq(n, d?, dtype?)`,
    );
  if (!Number.isInteger(n) || n < 1) throw new TypeError(`fft.rfftfreq: n must be a positive integer, got ${n}`);
  return ops.convert(
    arrOf(range(Math.floor(n / 2) + 1).map((i) => i / (d * n))),
    dtype ? checkDType("fft.rfftfreq", dtype) : defaultFloatDType(),
  );
}
const arrOf = (v: number[]): Array => arr("fft", v);

/** The axes argument of fftshift/ifftshift: all axes (null), one axis, or a list of axes. */
function shiftAxes(fn: string, axes: unknown, ndim: number): number[] {
  if (axes === undefined || axes === null) return range(ndim);
  if (typeof axes === "number") return [axes];
  if (globalThis.Array.isArray(axes) && axes.every((i) => typeof i === "number")) return axes as number[];
  throw new TypeError(
    `${fn}: axes must be null, an axis or a list of axes, got ${JSON.stringify(axes)}; accepted form: ${fn}(x, axes?)`,
  );
}
/** jnp.fft.fftshift(x, axes?): rolls the zero frequency to the centre (by floor(n/2) along each axis). */
export function fftshift(x: AL, axes?: number | number[] | null): Array {
  const a = arr("fft.fftshift", x);
  const ax = shiftAxes("fft.fftshift", axes, a.ndim);
  return roll(
    a,
    ax.map((i) => Math.floor(a.shape[normalizeAxis("fft.fftshift", i, a.ndim)] / 2)),
    ax,
  );
}
/** jnp.fft.ifftshift(x, axes?): the inverse of fftshift (rolls by -floor(n/2)). */
export function ifftshift(x: AL, axes?: number | number[] | null): Array {
  const a = arr("fft.ifftshift", x);
  const ax = shiftAxes("fft.ifftshift", axes, a.ndim);
  return roll(
    a,
    ax.map((i) => -Math.floor(a.shape[normalizeAxis("fft.ifftshift", i, a.ndim)] / 2)),
    ax,
  );
}
