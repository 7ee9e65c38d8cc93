/** @file jax.nn.initializers: constant, random (normal, uniform, truncated normal), variance-scaling (glorot, he, lecun) and orthogonal initializers, bit-exact with JAX's definitions. */
import { Array } from "../core/array.js";
import { type DType, defaultFloatDType, isFloat } from "../core/dtype.js";
import { shapeStr } from "../core/shape.js";
import * as L from "../primitives/linalg.js";
import * as ops from "../primitives/ops.js";
import { type Args, parseArgs, userDType } from "../numpy/elementwise-util.js";
import { type KeyLike, PRNGKeyArray } from "../random/keys.js";
import * as random from "../random/samplers.js";

/** An initializer: (key, shape, dtype?) => Array, as in JAX (the key is ignored by the constant ones). */
export type Initializer = (key: unknown, shape: readonly number[], dtype?: DType) => Array;
/** One axis or several (JAX's `int | Sequence[int]`). */
export type Axes = number | readonly number[];
export type VarianceScalingMode = "fan_in" | "fan_out" | "fan_avg";
export type VarianceScalingDistribution = "truncated_normal" | "normal" | "uniform";
export interface FanOptions {
  inAxis?: Axes;
  outAxis?: Axes;
  batchAxis?: Axes;
  dtype?: DType;
}

const shapeOf = (fn: string, s: readonly number[]): number[] => {
  if (!globalThis.Array.isArray(s) || !s.every((d) => Number.isInteger(d) && d >= 0))
    throw new TypeError(`${fn}: shape must be a list of non-negative integers, got ${JSON.stringify(s)}`);
  return [...s];
};
export const zeros: Initializer = (_key, shape, dtype) =>
  ops.full(shapeOf("initializers.zeros", shape), 0, userDType("initializers.zeros", dtype) ?? defaultFloatDType());
export const ones: Initializer = (_key, shape, dtype) =>
  ops.full(shapeOf("initializers.ones", shape), 1, userDType("initializers.ones", dtype) ?? defaultFloatDType());
/** constant(value, dtype?) -> an initializer filling with value. */
export function constant(value: number, dtype?: DType): Initializer {
  return (_key, shape, d) =>
    ops.full(
      shapeOf("initializers.constant", shape),
      value,
      userDType("initializers.constant", d ?? dtype) ?? defaultFloatDType(),
    );
}

/** The floating dtype an initializer samples in: the call's dtype, else the builder's, else the default float. */
function floatOf(fn: string, d: unknown, dflt: DType | undefined): DType {
  const dt = userDType(fn, d ?? dflt) ?? defaultFloatDType();
  if (!isFloat(dt)) throw new TypeError(`${fn}: dtype must be a floating dtype, got ${dt}`);
  return dt;
}
/** The key argument, checked enough to name the initializer in the error (the sampler checks the rest). */
function keyOf(fn: string, key: unknown): KeyLike {
  if (key instanceof PRNGKeyArray || key instanceof Array) return key;
  throw new TypeError(
    `${fn}: key must be a PRNG key (random.key or random.PRNGKey), got ${key === null ? "null" : typeof key}`,
  );
}
/** jnp.array(v, dtype): a 0-d constant, rounded to dtype as JAX rounds a Python float. */
const scalar = (v: number, d: DType): Array => ops.full([], v, d);
/** A finite number argument (a Python float), checked. */
function num(fn: string, name: string, v: unknown): number {
  if (typeof v !== "number" || !Number.isFinite(v))
    throw new TypeError(`${fn}: ${name} must be a finite number, got ${JSON.stringify(v)}`);
  return v;
}

/** normal(stddev = 1e-2, dtype): N(0, 1) samples * stddev. */
export function normal(...args: Args<[stddev: number, dtype: DType], { stddev?: number; dtype?: DType }>): Initializer {
  const fn = "initializers.normal";
  const o = parseArgs<{ stddev: number; dtype: DType }>(fn, args, ["stddev", "dtype"]);
  const stddev = num(fn, "stddev", o.stddev ?? 1e-2);
  return (key, shape, dtype) => {
    const d = floatOf(fn, dtype, o.dtype);
    return ops.mul(random.normal(keyOf(fn, key), shapeOf(fn, shape), d), scalar(stddev, d));
  };
}
/** uniform(scale = 1e-2, dtype): U[0, 1) samples * scale. */
export function uniform(...args: Args<[scale: number, dtype: DType], { scale?: number; dtype?: DType }>): Initializer {
  const fn = "initializers.uniform";
  const o = parseArgs<{ scale: number; dtype: DType }>(fn, args, ["scale", "dtype"]);
  const scale = num(fn, "scale", o.scale ?? 1e-2);
  return (key, shape, dtype) => {
    const d = floatOf(fn, dtype, o.dtype);
    return ops.mul(random.uniform(keyOf(fn, key), shapeOf(fn, shape), d), scalar(scale, d));
  };
}
interface TruncOpts {
  stddev: number;
  dtype: DType;
  lower: number;
  upper: number;
}
/** truncatedNormal(stddev = 1e-2, dtype, lower = -2, upper = 2): standard normal truncated to (lower, upper), then * stddev (no variance correction). */
export function truncatedNormal(
  ...args: Args<[stddev: number, dtype: DType, lower: number, upper: number], Partial<TruncOpts>>
): Initializer {
  const fn = "initializers.truncatedNormal";
  const o = parseArgs<TruncOpts>(fn, args, ["stddev", "dtype", "lower", "upper"]);
  const stddev = num(fn, "stddev", o.stddev ?? 1e-2),
    lower = num(fn, "lower", o.lower ?? -2),
    upper = num(fn, "upper", o.upper ?? 2);
  if (!(lower < upper)) throw new RangeError(`${fn}: lower (${lower}) must be less than upper (${upper})`);
  return (key, shape, dtype) => {
    const d = floatOf(fn, dtype, o.dtype);
    return ops.mul(random.truncatedNormal(keyOf(fn, key), lower, upper, shapeOf(fn, shape), d), scalar(stddev, d));
  };
}

/** Normalizes an axis (or axes) of a weights shape, with an error naming fn, the option and the shape. */
function axesIn(fn: string, name: string, a: Axes, shape: readonly number[]): number[] {
  const list = typeof a === "number" ? [a] : a;
  if (!globalThis.Array.isArray(list))
    throw new TypeError(`${fn}: ${name} must be an integer or a list of integers, got ${JSON.stringify(a)}`);
  return list.map((ax) => {
    if (!Number.isInteger(ax) || ax < -shape.length || ax >= shape.length)
      throw new RangeError(
        `${fn}: ${name} ${JSON.stringify(a)} is out of bounds for a weights shape ${shapeStr(shape)}`,
      );
    return ax < 0 ? ax + shape.length : ax;
  });
}
/**
 * JAX's _compute_fans: fan_in = in_size * receptive field, fan_out = out_size * receptive field, where the receptive
 * field size = prod(shape) / (in_size * out_size * batch_size), i.e. the product of the remaining (spatial) axes.
 */
export function computeFans(
  shape: readonly number[],
  opts: { inAxis?: Axes; outAxis?: Axes; batchAxis?: Axes } = {},
  fn = "initializers.computeFans",
): [number, number] {
  if (shape.length <= 1)
    throw new RangeError(
      `${fn}: can't compute input and output sizes of a ${shape.length}-dimensional weights shape ${shapeStr(shape)}; it must be at least 2-D`,
    );
  const size = (name: string, a: Axes) => axesIn(fn, name, a, shape).reduce((p, i) => p * shape[i], 1);
  const inSize = size("inAxis", opts.inAxis ?? -2),
    outSize = size("outAxis", opts.outAxis ?? -1),
    batchSize = size("batchAxis", opts.batchAxis ?? []);
  if (inSize * outSize * batchSize === 0)
    throw new RangeError(
      `${fn}: can't compute fans of a weights shape ${shapeStr(shape)} with a zero-size input, output or batch axis`,
    );
  const receptive = shape.reduce((p, d) => p * d, 1) / inSize / outSize / batchSize;
  return [inSize * receptive, outSize * receptive];
}

const MODES: readonly string[] = ["fan_in", "fan_out", "fan_avg"];
const DISTRIBUTIONS: readonly string[] = ["truncated_normal", "normal", "uniform"];
/** Standard deviation of a standard normal truncated to (-2, 2). */
const TRUNC_STD = 0.87962566103423978;
type FanArgs = Args<[inAxis: Axes, outAxis: Axes, batchAxis: Axes, dtype: DType], FanOptions>;

/**
 * varianceScaling(scale, mode, distribution, inAxis = -2, outAxis = -1, batchAxis = [], dtype): samples with variance
 * scale / n, n = fan_in, fan_out or their mean. truncated_normal: truncatedNormal(-2, 2) * sqrt(var) / 0.8796...;
 * normal: normal * sqrt(var); uniform: U[-1, 1) * sqrt(3 var). The constants are rounded to dtype and combined in it, as JAX does.
 */
export function varianceScaling(
  scale: number,
  mode: VarianceScalingMode,
  distribution: VarianceScalingDistribution,
  ...args: FanArgs
): Initializer {
  return scaled("initializers.varianceScaling", scale, mode, distribution, args);
}
function scaled(fn: string, scale: number, mode: string, distribution: string, args: FanArgs): Initializer {
  const o = parseArgs<FanOptions>(fn, args, ["inAxis", "outAxis", "batchAxis", "dtype"]);
  num(fn, "scale", scale);
  if (!MODES.includes(mode))
    throw new RangeError(
      `${fn}: invalid mode ${JSON.stringify(mode)}; expected one of ${MODES.map((m) => JSON.stringify(m)).join(", ")}`,
    );
  if (!DISTRIBUTIONS.includes(distribution))
    throw new RangeError(
      `${fn}: invalid distribution ${JSON.stringify(distribution)}; expected one of ${DISTRIBUTIONS.map((m) => JSON.stringify(m)).join(", ")}`,
    );
  return (key, shape, dtype) => {
    const d = floatOf(fn, dtype, o.dtype);
    const s = shapeOf(fn, shape);
    const k = keyOf(fn, key);
    const [fanIn, fanOut] = computeFans(s, o, fn);
    const denominator = mode === "fan_in" ? fanIn : mode === "fan_out" ? fanOut : (fanIn + fanOut) / 2;
    const variance = scalar(scale / denominator, d);
    if (distribution === "truncated_normal") {
      const stddev = ops.div(ops.sqrt(variance), scalar(TRUNC_STD, d));
      return ops.mul(random.truncatedNormal(k, -2, 2, s, d), stddev);
    }
    if (distribution === "normal") return ops.mul(random.normal(k, s, d), ops.sqrt(variance));
    return ops.mul(random.uniform(k, s, d, -1), ops.sqrt(ops.mul(scalar(3, d), variance)));
  };
}
/** glorotUniform (xavierUniform): varianceScaling(1, "fan_avg", "uniform"). */
export const glorotUniform = (...args: FanArgs): Initializer =>
  scaled("initializers.glorotUniform", 1, "fan_avg", "uniform", args);
/** glorotNormal (xavierNormal): varianceScaling(1, "fan_avg", "truncated_normal"). */
export const glorotNormal = (...args: FanArgs): Initializer =>
  scaled("initializers.glorotNormal", 1, "fan_avg", "truncated_normal", args);
/** lecunUniform: varianceScaling(1, "fan_in", "uniform"). */
export const lecunUniform = (...args: FanArgs): Initializer =>
  scaled("initializers.lecunUniform", 1, "fan_in", "uniform", args);
/** lecunNormal: varianceScaling(1, "fan_in", "truncated_normal"). */
export const lecunNormal = (...args: FanArgs): Initializer =>
  scaled("initializers.lecunNormal", 1, "fan_in", "truncated_normal", args);
/** heUniform (kaimingUniform): varianceScaling(2, "fan_in", "uniform"). */
export const heUniform = (...args: FanArgs): Initializer =>
  scaled("initializers.heUniform", 2, "fan_in", "uniform", args);
/** heNormal (kaimingNormal): varianceScaling(2, "fan_in", "truncated_normal"). */
export const heNormal = (...args: FanArgs): Initializer =>
  scaled("initializers.heNormal", 2, "fan_in", "truncated_normal", args);
export const xavierUniform = glorotUniform;
export const xavierNormal = glorotNormal;
export const kaimingUniform = heUniform;
export const kaimingNormal = heNormal;

interface OrthoOpts {
  scale: number;
  columnAxis: number;
  dtype: DType;
}
type OrthoArgs = Args<[scale: number, columnAxis: number, dtype: DType], Partial<OrthoOpts>>;

/** The orthogonal initializer's sample, shared by orthogonal and deltaOrthogonal. */
function orthoSample(
  fn: string,
  scale: number,
  columnAxis: number,
  key: KeyLike,
  s: readonly number[],
  d: DType,
): Array {
  if (s.length < 2) throw new RangeError(`${fn}: requires at least a 2-D shape, got ${shapeStr(s)}`);
  if (!Number.isInteger(columnAxis) || columnAxis < -s.length || columnAxis >= s.length)
    throw new RangeError(`${fn}: columnAxis ${columnAxis} is out of bounds for shape ${shapeStr(s)}`);
  const ca = columnAxis < 0 ? columnAxis + s.length : columnAxis;
  const nCols = s[ca],
    total = s.reduce((p, x) => p * x, 1);
  if (total === 0) throw new RangeError(`${fn}: shape ${shapeStr(s)} has no elements`);
  const nRows = total / nCols;
  // QR of a tall N(0, 1) matrix; Q * sign(diag R) is Haar-distributed (orthonormal columns), transposed when wide
  const a = random.normal(key, nRows < nCols ? [nCols, nRows] : [nRows, nCols], d);
  const [q0, r] = L.qr(a, false);
  let q = ops.mul(q0, ops.broadcastInDim(ops.sign(L.diagPart(r)), q0.shape, [1]));
  if (nRows < nCols) q = L.mT(q);
  q = ops.reshape(q, [...s.filter((_, i) => i !== ca), nCols]);
  return ops.mul(scalar(scale, d), ops.moveaxis(q, q.ndim - 1, ca));
}
/**
 * orthogonal(scale = 1, columnAxis = -1, dtype): the shape viewed as a (prod(others), shape[columnAxis]) matrix with
 * orthonormal columns (rows if it is wide), times scale.
 */
export function orthogonal(...args: OrthoArgs): Initializer {
  const fn = "initializers.orthogonal";
  const o = parseArgs<OrthoOpts>(fn, args, ["scale", "columnAxis", "dtype"]);
  const scale = num(fn, "scale", o.scale ?? 1),
    columnAxis = o.columnAxis ?? -1;
  return (key, shape, dtype) =>
    orthoSample(fn, scale, columnAxis, keyOf(fn, key), shapeOf(fn, shape), floatOf(fn, dtype, o.dtype));
}
/**
 * deltaOrthogonal(scale = 1, columnAxis = -1, dtype): a 3-D/4-D/5-D convolution kernel that is zero except at the
 * spatial centre ((k - 1) // 2 along each spatial axis), which holds an orthogonal (in, out) matrix.
 */
export function deltaOrthogonal(...args: OrthoArgs): Initializer {
  const fn = "initializers.deltaOrthogonal";
  const o = parseArgs<OrthoOpts>(fn, args, ["scale", "columnAxis", "dtype"]);
  const scale = num(fn, "scale", o.scale ?? 1),
    columnAxis = o.columnAxis ?? -1;
  return (key, shape, dtype) => {
    const s = shapeOf(fn, shape),
      d = floatOf(fn, dtype, o.dtype);
    if (s.length < 3 || s.length > 5)
      throw new RangeError(`${fn}: requires a 3-D, 4-D or 5-D shape, got ${shapeStr(s)}`);
    const [fin, fout] = s.slice(-2);
    if (fout < fin)
      throw new RangeError(
        `${fn}: fan_in (${fin}, shape[-2]) must be less than or equal to fan_out (${fout}, shape[-1]) in shape ${shapeStr(s)}`,
      );
    const m = orthoSample(fn, scale, columnAxis, keyOf(fn, key), [fin, fout], d);
    const spatial = s.slice(0, -2);
    if (spatial.includes(0)) return ops.full(s, 0, d);
    const centre = ops.reshape(m, [...spatial.map(() => 1), fin, fout]);
    const cfg = [
      ...spatial.map((k): [number, number, number] => [Math.floor((k - 1) / 2), k - 1 - Math.floor((k - 1) / 2), 0]),
      [0, 0, 0] as [number, number, number],
      [0, 0, 0] as [number, number, number],
    ];
    return ops.pad(centre, scalar(0, d), cfg);
  };
}
