/** @file Continuous and simple samplers of jax.random, bit-exact with JAX's algorithms: uniform, normal, truncatedNormal, randint, bernoulli, rademacher and the transformation samplers (exponential, gumbel, laplace, ...). */
import { config } from "../core/config.js";
import type { Array } from "../core/array.js";
import type { DType } from "../core/dtype.js";
import { defaultFloatDType, intRange, isComplex, isFloat, isInteger, realDType } from "../core/dtype.js";
import { broadcastShapes } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { stopGradient } from "../transforms/stop-gradient.js";
import { type KeyLike, checkKey, randomBits, splitList } from "./keys.js";
import { jadd, jdiv, jle, jlt, jmul, jpow, jsub, jwhere } from "./jnp-lite.js";
import {
  type Param,
  type ShapeArg,
  asArr,
  bcast,
  bcastOrScalar,
  broadcastShapeArg,
  canonicalShape,
  checkSafeCast,
  checkShape,
  constant,
  cst,
  floatDtype,
  floatInfo,
  index0,
  intDtype,
  parseArgs,
  toDtype,
  uintOf,
  userDtype,
} from "./util.js";

type Shape = readonly number[];
/** Options shared by samplers that take a shape and a float dtype. */
export interface ShapeDtypeOptions {
  shape?: ShapeArg;
  dtype?: DType;
}

/** IEEE bit pattern of 1.0 in a float dtype (as stored in the same-width unsigned dtype). */
function oneBits(d: DType): number | bigint {
  switch (d) {
    case "float16":
      return 0x3c00;
    case "bfloat16":
      return 0x3f80;
    case "float32":
      return 0x3f800000;
    default:
      return 0x3ff0000000000000n;
  }
}

// ---------------------------------------------------------------- uniform / normal
/** _uniform on scalar key data: floats in [minval, maxval) from the mantissa bits. */
export function uniformFrom(fn: string, data: Array, shape: Shape, dtype: DType, minval: Param, maxval: Param): Array {
  if (!isFloat(dtype)) throw new TypeError(`${fn}: uniform only accepts floating point dtypes, got ${dtype}`);
  const lo = bcastOrScalar(fn, toDtype(asArr(fn, minval), dtype), shape);
  const hi = bcastOrScalar(fn, toDtype(asArr(fn, maxval), dtype), shape);
  const { bits: nbits, nmant } = floatInfo(dtype);
  const rngBits = nmant < 8 ? 8 : nbits;
  const ud = uintOf(nbits);
  let b = randomBits(data, rngBits as 8 | 16 | 32 | 64, shape);
  if (rngBits !== nbits) b = toDtype(b, ud);
  // (bits >>> (nbits - nmant)) | bits(1.0) is a float in [1, 2); minus 1 gives [0, 1)
  const fb = ops.or(ops.shiftRightLogical(b, constant(ud, rngBits - nmant)), constant(ud, oneBits(dtype)));
  const floats = ops.sub(ops.bitcast(fb, dtype), constant(dtype, 1));
  const scaled = ops.add(ops.mul(floats, ops.sub(hi, lo)), lo);
  return ops.max(lo.ndim === scaled.ndim || lo.ndim === 0 ? lo : bcast(fn, lo, shape), scaled);
}

export interface UniformOptions extends ShapeDtypeOptions {
  minval?: Param;
  maxval?: Param;
}
/** random.uniform(key, shape = [], dtype = float, minval = 0, maxval = 1). */
export function uniform(
  key: KeyLike,
  shape?: ShapeArg | UniformOptions,
  dtype?: DType | null | UniformOptions,
  minval?: Param | UniformOptions,
  maxval?: Param | UniformOptions,
  options?: UniformOptions,
): Array {
  const { data } = checkKey("uniform", key);
  const p = parseArgs("uniform", [shape, dtype, minval, maxval, options], ["shape", "dtype", "minval", "maxval"], {
    shape: [] as ShapeArg,
    dtype: null as DType | null,
    minval: 0 as Param,
    maxval: 1 as Param,
  });
  return uniformFrom(
    "uniform",
    data,
    canonicalShape("uniform", p.shape),
    floatDtype("uniform", p.dtype),
    p.minval,
    p.maxval,
  );
}

/** _normal_real: sqrt(2) * erf_inv(uniform in [nextafter(-1, 0), 1)). */
export function normalFrom(data: Array, shape: Shape, dtype: DType): Array {
  const lo = -1 + floatInfo(dtype).epsneg; // np.nextafter(-1, 0) in dtype
  const u = uniformFrom("normal", data, shape, dtype, constant(dtype, lo), constant(dtype, 1));
  return ops.mul(constant(dtype, Math.SQRT2), ops.erfInv(u));
}

/** random.normal(key, shape = [], dtype = float): standard normal samples. */
export function normal(
  key: KeyLike,
  shape?: ShapeArg | ShapeDtypeOptions,
  dtype?: DType | null | ShapeDtypeOptions,
  options?: ShapeDtypeOptions,
): Array {
  const { data } = checkKey("normal", key);
  const p = parseArgs("normal", [shape, dtype, options], ["shape", "dtype"], {
    shape: [] as ShapeArg,
    dtype: null as DType | null,
  });
  const shp = canonicalShape("normal", p.shape);
  const d = userDtype("normal", p.dtype, defaultFloatDType());
  if (isComplex(d)) {
    // JAX's complex normal: (normal(k_re) + i normal(k_im)) / sqrt(2), so each part has variance 1/2
    const [kr, ki] = splitList(data, 2);
    const part = realDType(d),
      s2 = constant(part, Math.SQRT2);
    return ops.complexOf(ops.div(normalFrom(kr, shp, part), s2), ops.div(normalFrom(ki, shp, part), s2));
  }
  if (!isFloat(d)) throw new TypeError(`dtype argument to \`normal\` must be a float or complex dtype, got ${d}`);
  return normalFrom(data, shp, d);
}

export interface TruncatedNormalOptions extends ShapeDtypeOptions {
  lower?: Param;
  upper?: Param;
}
/** random.truncatedNormal(key, lower, upper, shape = broadcast(lower, upper), dtype = float): values in (lower, upper). */
export function truncatedNormal(
  key: KeyLike,
  lower?: Param | TruncatedNormalOptions,
  upper?: Param | TruncatedNormalOptions,
  shape?: ShapeArg | null | TruncatedNormalOptions,
  dtype?: DType | null | TruncatedNormalOptions,
  options?: TruncatedNormalOptions,
): Array {
  const fn = "truncatedNormal";
  const { data } = checkKey(fn, key);
  const p = parseArgs(fn, [lower, upper, shape, dtype, options], ["lower", "upper", "shape", "dtype"], {
    lower: undefined as Param | undefined,
    upper: undefined as Param | undefined,
    shape: null as ShapeArg | null,
    dtype: null as DType | null,
  });
  if (p.lower === undefined || p.upper === undefined)
    throw new TypeError(`${fn}: missing required arguments lower and upper`);
  const d = floatDtype(fn, p.dtype);
  const lo0 = asArr(fn, p.lower),
    hi0 = asArr(fn, p.upper);
  const s = broadcastShapeArg(fn, p.shape, lo0, hi0);
  const sqrt2 = constant(d, Math.SQRT2);
  const lo = toDtype(lo0, d),
    hi = toDtype(hi0, d);
  const a = ops.erf(ops.div(lo, sqrt2));
  const b = ops.erf(ops.div(hi, sqrt2));
  const u = uniformFrom(fn, data, s, d, a, b);
  const out = ops.mul(sqrt2, ops.erfInv(u));
  // clamp to the open interval (lower, upper): rounding (or u == a) could reach the ends
  const cl = bcastOrScalar(fn, ops.nextafter(stopGradient(lo), constant(d, Infinity)), s);
  const ch = bcastOrScalar(fn, ops.nextafter(stopGradient(hi), constant(d, -Infinity)), s);
  return ops.min(ops.max(out, cl), ch);
}

// ---------------------------------------------------------------- integers
function bigRange(d: DType): [bigint, bigint] {
  if (d === "int64") return [-(2n ** 63n), 2n ** 63n - 1n];
  if (d === "uint64") return [0n, 2n ** 64n - 1n];
  const [a, b] = intRange(d);
  return [BigInt(a), BigInt(b)];
}
/** _convert_and_clip_integer: converts an integer array to dtype, clipping to its range instead of wrapping. */
function convertAndClip(val: Array, dtype: DType): Array {
  const [dl, dh] = bigRange(dtype),
    [vl, vh] = bigRange(val.dtype);
  const lo = constant(val.dtype, dl > vl ? dl : vl),
    hi = constant(val.dtype, dh < vh ? dh : vh);
  const v = val.weakType ? ops.convert(val, val.dtype, false) : val;
  return toDtype(ops.min(ops.max(v, lo), hi), dtype);
}

function integerParam(fn: string, x: Param): Array {
  const a = asArr(fn, x);
  return isInteger(a.dtype) ? a : toDtype(a, intDtype(fn, null));
}

/** _randint on scalar key data for a 32- or 64-bit integer dtype (two draws of nbits each, reduced modulo the span). */
function randintFrom(fn: string, data: Array, shape: Shape, minval: Array, maxval: Array, dtype: DType): Array {
  checkShape(fn, shape, minval.shape, maxval.shape);
  const mn0 = integerParam(fn, minval),
    mx0 = integerParam(fn, maxval);
  const outOfRange = ops.gt(
    ops.convert(mx0, mx0.dtype, false),
    convertAndClip(constant(dtype, bigRange(dtype)[1]), mx0.dtype),
  );
  const mn = bcastOrScalar(fn, convertAndClip(mn0, dtype), shape);
  const mx = bcastOrScalar(fn, convertAndClip(mx0, dtype), shape);
  const oor = bcastOrScalar(fn, outOfRange, shape);
  const nbits = dtype.endsWith("64") ? 64 : 32;
  const ud = uintOf(nbits);
  const [k1, k2] = splitList(data, 2);
  const higher = randomBits(k1, nbits, shape),
    lower = randomBits(k2, nbits, shape);
  let span = toDtype(ops.sub(mx, mn), ud);
  const full = (v: number) => (span.ndim === 0 ? constant(ud, v) : ops.full(span.shape, v, ud));
  // span = 1 when maxval <= minval (minval is returned); one larger when maxval was clipped (0 = the full range)
  span = ops.select(ops.le(mx, mn), full(1), span);
  span = ops.select(ops.and(oor, ops.gt(mx, mn)), ops.add(span, constant(ud, 1)), span);
  // (hi * 2**nbits + lo) mod span, using (a*b) % N = ((a % N) * (b % N)) % N and multiplier = 2**nbits % span
  let mult = ops.rem(constant(ud, 2 ** (nbits / 2)), span);
  mult = ops.rem(ops.mul(mult, mult), span);
  const off = ops.rem(ops.add(ops.mul(ops.rem(higher, span), mult), ops.rem(lower, span)), span);
  return ops.add(mn, toDtype(off, dtype));
}

export interface RandintOptions {
  shape?: ShapeArg;
  minval?: Param;
  maxval?: Param;
  dtype?: DType;
}
/** random.randint(key, shape, minval, maxval, dtype = int): integers in [minval, maxval). */
export function randint(
  key: KeyLike,
  shape?: ShapeArg | RandintOptions,
  minval?: Param | RandintOptions,
  maxval?: Param | RandintOptions,
  dtype?: DType | null | RandintOptions,
  options?: RandintOptions,
): Array {
  const fn = "randint";
  const { data } = checkKey(fn, key);
  const p = parseArgs(fn, [shape, minval, maxval, dtype, options], ["shape", "minval", "maxval", "dtype"], {
    shape: undefined as ShapeArg | undefined,
    minval: undefined as Param | undefined,
    maxval: undefined as Param | undefined,
    dtype: null as DType | null,
  });
  if (p.shape === undefined || p.minval === undefined || p.maxval === undefined)
    throw new TypeError(`${fn}: missing required arguments (shape, minval, maxval)`);
  const d = intDtype(fn, p.dtype);
  const s = canonicalShape(fn, p.shape);
  let mn = asArr(fn, p.minval),
    mx = asArr(fn, p.maxval);
  const bits = d.endsWith("64") ? 64 : d.endsWith("32") ? 32 : d.endsWith("16") ? 16 : 8;
  if (bits < 32) {
    // 8/16-bit dtypes sample in int32 (less bias), with bounds clipped to the dtype's range
    const [lo, hi] = intRange(d);
    mn = ops.min(ops.max(toDtype(mn, "int32"), constant("int32", lo)), constant("int32", hi));
    mx = ops.min(ops.max(toDtype(mx, "int32"), constant("int32", lo)), constant("int32", hi + 1));
    return toDtype(randintFrom(fn, data, s, mn, mx, "int32"), d);
  }
  return randintFrom(fn, data, s, mn, mx, d);
}

// ---------------------------------------------------------------- bernoulli / rademacher
/** The dtype a probability parameter samples in: its own float dtype (JS numbers: the default float). */
function probDtype(fn: string, p: Array): DType {
  if (!isFloat(p.dtype)) throw new TypeError(`${fn} probability \`p\` must have a floating dtype, got ${p.dtype}.`);
  return p.dtype;
}

export function bernoulliFrom(fn: string, data: Array, p: Array, shape: Shape | null, mode: string): Array {
  const s = shape === null ? p.shape : shape;
  if (shape !== null) checkShape(fn, s, p.shape);
  const d = p.dtype;
  const pp = ops.convert(p, d, false);
  if (mode === "high") {
    const u = uniformFrom(fn, data, [2, ...s], d, 0, 1);
    const u1 = index0(u, 0);
    const u2 = ops.mul(index0(u, 1), constant(d, 2 ** -floatInfo(d).nmant));
    return ops.lt(u2, ops.sub(bcastOrScalar(fn, pp, s), u1));
  }
  return ops.lt(uniformFrom(fn, data, s, d, 0, 1), bcastOrScalar(fn, pp, s));
}

export interface BernoulliOptions {
  p?: Param;
  shape?: ShapeArg | null;
  mode?: "low" | "high";
}
/** random.bernoulli(key, p = 0.5, shape = p.shape, mode = "low"): booleans that are true with probability p. */
export function bernoulli(
  key: KeyLike,
  p?: Param | BernoulliOptions,
  shape?: ShapeArg | null | BernoulliOptions,
  mode?: "low" | "high" | BernoulliOptions,
  options?: BernoulliOptions,
): Array {
  const fn = "bernoulli";
  const { data } = checkKey(fn, key);
  const a = parseArgs(fn, [p, shape, mode, options], ["p", "shape", "mode"], {
    p: 0.5 as Param,
    shape: null as ShapeArg | null,
    mode: "low" as string,
  });
  if (a.mode !== "high" && a.mode !== "low")
    throw new Error(`${fn}: got mode=${JSON.stringify(a.mode)}, expected 'high' or 'low'`);
  // a JS number is a Python float here: the default float dtype
  const pa = typeof a.p === "number" ? toDtype(asArr(fn, a.p), floatDtype(fn, null)) : asArr(fn, a.p);
  probDtype(fn, pa);
  return bernoulliFrom(fn, data, pa, a.shape === null ? null : canonicalShape(fn, a.shape), a.mode);
}

export function rademacherFrom(data: Array, shape: Shape, dtype: DType): Array {
  const b = toDtype(
    bernoulliFrom("rademacher", data, toDtype(asArr("rademacher", 0.5), floatDtype("rademacher", null)), shape, "low"),
    dtype,
  );
  return toDtype(ops.sub(ops.mul(constant(dtype, 2), b), constant(dtype, 1)), dtype);
}

export interface RademacherOptions {
  shape?: ShapeArg;
  dtype?: DType;
}
/** random.rademacher(key, shape = [], dtype = int): -1 or +1 with equal probability. */
export function rademacher(
  key: KeyLike,
  shape?: ShapeArg | RademacherOptions,
  dtype?: DType | null | RademacherOptions,
  options?: RademacherOptions,
): Array {
  const { data } = checkKey("rademacher", key);
  const p = parseArgs("rademacher", [shape, dtype, options], ["shape", "dtype"], {
    shape: [] as ShapeArg,
    dtype: null as DType | null,
  });
  const d = p.dtype === null ? intDtype("rademacher", null) : floatOrInt("rademacher", p.dtype);
  return rademacherFrom(data, canonicalShape("rademacher", p.shape), d);
}
function floatOrInt(fn: string, d: DType): DType {
  return isFloat(d) ? floatDtype(fn, d) : intDtype(fn, d);
}

// ---------------------------------------------------------------- transformation samplers
/** Parses (key, shape = [], dtype = float) of the parameter-free samplers. */
function shapeDtype(fn: string, key: KeyLike, args: unknown[]): { data: Array; shape: number[]; dtype: DType } {
  const { data } = checkKey(fn, key);
  const p = parseArgs(fn, args, ["shape", "dtype"], { shape: [] as ShapeArg, dtype: null as DType | null });
  return { data, shape: canonicalShape(fn, p.shape), dtype: floatDtype(fn, p.dtype) };
}

export function exponentialFrom(data: Array, shape: Shape, dtype: DType): Array {
  // -log1p(-u): 1 - u moves the domain of log to (0, 1]
  return ops.neg(ops.log1p(ops.neg(uniformFrom("exponential", data, shape, dtype, 0, 1))));
}
/** random.exponential(key, shape = [], dtype = float). */
export function exponential(
  key: KeyLike,
  shape?: ShapeArg | ShapeDtypeOptions,
  dtype?: DType | null | ShapeDtypeOptions,
  options?: ShapeDtypeOptions,
): Array {
  const a = shapeDtype("exponential", key, [shape, dtype, options]);
  return exponentialFrom(a.data, a.shape, a.dtype);
}

/** _safe_int_to_float: a (hi, lo) uint32 pair as a 64-bit fixed-point fraction, converted to float32 without double rounding. */
function safeIntToFloat(hi: Array, lo: Array): Array {
  const u = (v: number) => constant("uint32", v);
  const hc = ops.clz(hi),
    lc = ops.clz(lo);
  const hcIs32 = ops.eq(hc, u(32));
  const mant0 = ops.or(
    ops.shiftLeft(hi, hc),
    ops.select(hcIs32, ops.shiftLeft(lo, lc), ops.shiftRightLogical(lo, ops.sub(u(32), hc))),
  );
  const mant = ops.and(ops.shiftRightLogical(mant0, u(8)), u(0x7fffff));
  const lz = ops.select(hcIs32, ops.add(u(32), lc), hc);
  const e = ops.and(ops.shiftLeft(ops.sub(u(126), lz), u(23)), u((1 << 30) - (1 << 22)));
  return ops.bitcast(ops.or(e, mant), "float32");
}

export function gumbelFrom(data: Array, shape: Shape, dtype: DType, mode: string): Array {
  const info = floatInfo(dtype);
  if (dtype === "float32" && mode === "highest") {
    const b = randomBits(data, 32, [2, ...shape]);
    const b0 = index0(b, 0),
      b1 = index0(b, 1);
    const n1 = ops.not(b1);
    // 1 - bits in 64-bit fixed point: low word + 1, carry into the high word
    const n0 = ops.add(ops.not(b0), toDtype(ops.eq(n1, constant("uint32", 0xffffffff)), "uint32"));
    const n1p = ops.add(n1, constant("uint32", 1));
    const flip = ops.lt(b0, constant("uint32", 2 ** 31));
    const x = safeIntToFloat(ops.select(flip, b0, n0), ops.select(flip, b1, n1p));
    return ops.select(flip, ops.neg(ops.log(ops.neg(ops.log1p(ops.neg(x))))), ops.neg(ops.log(ops.neg(ops.log(x)))));
  }
  if (mode === "high" || mode === "highest") {
    const u = uniformFrom("gumbel", data, [2, ...shape], dtype, 0, 1);
    const high = index0(u, 0),
      low = index0(u, 1);
    const x = ops.select(
      ops.ge(high, constant(dtype, 0.5)),
      high,
      ops.add(
        ops.add(high, ops.mul(constant(dtype, 2 ** -info.nmant), low)),
        constant(dtype, Math.max(2 ** -(2 * info.nmant + 1), info.tiny)),
      ),
    );
    return ops.neg(ops.log(ops.neg(ops.log1p(ops.neg(x)))));
  }
  return ops.neg(ops.log(ops.neg(ops.log(uniformFrom("gumbel", data, shape, dtype, constant(dtype, info.tiny), 1)))));
}

export interface GumbelOptions extends ShapeDtypeOptions {
  mode?: "low" | "high" | "highest" | null;
}
/** random.gumbel(key, shape = [], dtype = float, mode = "low"). */
export function gumbel(
  key: KeyLike,
  shape?: ShapeArg | GumbelOptions,
  dtype?: DType | null | GumbelOptions,
  mode?: string | null | GumbelOptions,
  options?: GumbelOptions,
): Array {
  const fn = "gumbel";
  const { data } = checkKey(fn, key);
  const p = parseArgs(fn, [shape, dtype, mode, options], ["shape", "dtype", "mode"], {
    shape: [] as ShapeArg,
    dtype: null as DType | null,
    mode: null as string | null,
  });
  const m = p.mode ?? (config.highDynamicRangeGumbel ? "high" : "low"); // JAX: mode None follows jax_high_dynamic_range_gumbel
  if (!["highest", "high", "low"].includes(m)) throw new Error(`${fn}: Must provide valid mode for gumbel got: ${m}`);
  return gumbelFrom(data, canonicalShape(fn, p.shape), floatDtype(fn, p.dtype), m);
}

/** random.laplace(key, shape = [], dtype = float). */
export function laplace(
  key: KeyLike,
  shape?: ShapeArg | ShapeDtypeOptions,
  dtype?: DType | null | ShapeDtypeOptions,
  options?: ShapeDtypeOptions,
): Array {
  const a = shapeDtype("laplace", key, [shape, dtype, options]);
  const u = uniformFrom("laplace", a.data, a.shape, a.dtype, constant(a.dtype, -1 + floatInfo(a.dtype).epsneg), 1);
  return ops.mul(ops.sign(u), ops.log1p(ops.neg(ops.abs(u))));
}

/** random.logistic(key, shape = [], dtype = float). */
export function logistic(
  key: KeyLike,
  shape?: ShapeArg | ShapeDtypeOptions,
  dtype?: DType | null | ShapeDtypeOptions,
  options?: ShapeDtypeOptions,
): Array {
  const a = shapeDtype("logistic", key, [shape, dtype, options]);
  const x = uniformFrom("logistic", a.data, a.shape, a.dtype, constant(a.dtype, floatInfo(a.dtype).tiny), 1);
  return ops.sub(ops.log(x), ops.log1p(ops.neg(x)));
}

/** random.cauchy(key, shape = [], dtype = float). */
export function cauchy(
  key: KeyLike,
  shape?: ShapeArg | ShapeDtypeOptions,
  dtype?: DType | null | ShapeDtypeOptions,
  options?: ShapeDtypeOptions,
): Array {
  const a = shapeDtype("cauchy", key, [shape, dtype, options]);
  const u = uniformFrom("cauchy", a.data, a.shape, a.dtype, constant(a.dtype, floatInfo(a.dtype).eps), 1);
  return ops.tan(ops.mul(cst(u, Math.PI), ops.sub(u, cst(u, 0.5))));
}

/** Parses (key, param, shape = param.shape, dtype = float) of one-parameter samplers. */
function oneParam(
  fn: string,
  key: KeyLike,
  pname: string,
  args: unknown[],
  dflt?: Param,
): { data: Array; x: Array; shape: number[]; dtype: DType } {
  const { data } = checkKey(fn, key);
  const p = parseArgs(fn, args, [pname, "shape", "dtype"], {
    [pname]: dflt,
    shape: null as ShapeArg | null,
    dtype: null as DType | null,
  } as Record<string, unknown>);
  if (p[pname] === undefined) throw new TypeError(`${fn}: missing required argument ${pname}`);
  const dtype = floatDtype(fn, p.dtype);
  const x = asArr(fn, p[pname]);
  checkSafeCast(fn, dtype, x);
  return { data, x, shape: broadcastShapeArg(fn, p.shape, x), dtype };
}
export interface ParamShapeDtypeOptions {
  shape?: ShapeArg | null;
  dtype?: DType;
}

/** random.pareto(key, b, shape = b.shape, dtype = float): exp(exponential / b). */
export function pareto(
  key: KeyLike,
  b?: Param | (ParamShapeDtypeOptions & { b?: Param }),
  shape?: ShapeArg | null | ParamShapeDtypeOptions,
  dtype?: DType | null | ParamShapeDtypeOptions,
  options?: ParamShapeDtypeOptions & { b?: Param },
): Array {
  const a = oneParam("pareto", key, "b", [b, shape, dtype, options]);
  const e = exponentialFrom(a.data, a.shape, a.dtype);
  return ops.exp(jdiv(e, toDtype(a.x, a.dtype)));
}

/** random.rayleigh(key, scale, shape = scale.shape, dtype = float): scale * sqrt(-2 log u). */
export function rayleigh(
  key: KeyLike,
  scale?: Param | (ParamShapeDtypeOptions & { scale?: Param }),
  shape?: ShapeArg | null | ParamShapeDtypeOptions,
  dtype?: DType | null | ParamShapeDtypeOptions,
  options?: ParamShapeDtypeOptions & { scale?: Param },
): Array {
  const a = oneParam("rayleigh", key, "scale", [scale, shape, dtype, options]);
  const u = uniformFrom("rayleigh", a.data, a.shape, a.dtype, 0, 1);
  const sc = bcast("rayleigh", toDtype(a.x, a.dtype), a.shape);
  return ops.mul(sc, ops.sqrt(ops.mul(ops.log(u), cst(sc, -2))));
}

/** random.lognormal(key, sigma = 1, shape = sigma.shape, dtype = float): exp(normal * sigma). */
export function lognormal(
  key: KeyLike,
  sigma?: Param | (ParamShapeDtypeOptions & { sigma?: Param }),
  shape?: ShapeArg | null | ParamShapeDtypeOptions,
  dtype?: DType | null | ParamShapeDtypeOptions,
  options?: ParamShapeDtypeOptions & { sigma?: Param },
): Array {
  const a = oneParam("lognormal", key, "sigma", [sigma, shape, dtype, options], 1);
  return ops.exp(jmul(normalFrom(a.data, a.shape, a.dtype), toDtype(a.x, a.dtype)));
}

/** random.wald(key, mean, shape = mean.shape, dtype = float): inverse Gaussian samples. */
export function wald(
  key: KeyLike,
  mean?: Param | (ParamShapeDtypeOptions & { mean?: Param }),
  shape?: ShapeArg | null | ParamShapeDtypeOptions,
  dtype?: DType | null | ParamShapeDtypeOptions,
  options?: ParamShapeDtypeOptions & { mean?: Param },
): Array {
  const a = oneParam("wald", key, "mean", [mean, shape, dtype, options]);
  const [k1, k2] = splitList(a.data, 2);
  const mu = bcast("wald", toDtype(a.x, a.dtype), a.shape);
  const v = normalFrom(k1, a.shape, a.dtype);
  const z = uniformFrom("wald", k2, a.shape, a.dtype, 0, 1);
  const y = ops.integerPow(v, 2),
    ySq = ops.integerPow(y, 2),
    muSq = ops.integerPow(mu, 2);
  const sqrtTerm = ops.sqrt(ops.add(ops.mul(ops.mul(cst(mu, 4), mu), y), ops.mul(muSq, ySq)));
  const x = ops.sub(ops.add(mu, ops.div(ops.mul(muSq, y), cst(mu, 2))), ops.mul(ops.div(mu, cst(mu, 2)), sqrtTerm));
  return ops.select(ops.le(z, ops.div(mu, ops.add(mu, x))), x, ops.div(muSq, x));
}

export interface GeometricOptions {
  p?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
}
/** random.geometric(key, p, shape = p.shape, dtype = int): number of trials to the first success. */
export function geometric(
  key: KeyLike,
  p?: Param | GeometricOptions,
  shape?: ShapeArg | null | GeometricOptions,
  dtype?: DType | null | GeometricOptions,
  options?: GeometricOptions,
): Array {
  const fn = "geometric";
  const { data } = checkKey(fn, key);
  const a = parseArgs(fn, [p, shape, dtype, options], ["p", "shape", "dtype"], {
    p: undefined as Param | undefined,
    shape: null as ShapeArg | null,
    dtype: null as DType | null,
  });
  if (a.p === undefined) throw new TypeError(`${fn}: missing required argument p`);
  const d = intDtype(fn, a.dtype);
  let pa = asArr(fn, a.p);
  if (!isFloat(pa.dtype)) pa = toDtype(pa, floatDtype(fn, null));
  const s = broadcastShapeArg(fn, a.shape, pa);
  const pd = pa.dtype;
  let u = uniformFrom(fn, data, s, pd, 0, 1);
  // u == 0 maps to 1 so that log(u) stays finite (keeps JAX's samples for every key)
  u = ops.select(ops.eq(u, cst(u, 0)), ops.fullLike(u, 1), u);
  const l1p = bcast(fn, ops.log1p(ops.neg(ops.convert(pa, pd, false))), s);
  return toDtype(ops.add(ops.floor(ops.div(ops.log(u), l1p)), cst(u, 1)), d);
}

export interface TriangularOptions {
  left?: Param;
  mode?: Param;
  right?: Param;
  shape?: ShapeArg | null;
  dtype?: DType;
}
/** random.triangular(key, left, mode, right, shape = broadcast, dtype = float). */
export function triangular(
  key: KeyLike,
  left?: Param | TriangularOptions,
  mode?: Param | TriangularOptions,
  right?: Param | TriangularOptions,
  shape?: ShapeArg | null | TriangularOptions,
  dtype?: DType | null | TriangularOptions,
  options?: TriangularOptions,
): Array {
  const fn = "triangular";
  const { data } = checkKey(fn, key);
  const a = parseArgs(fn, [left, mode, right, shape, dtype, options], ["left", "mode", "right", "shape", "dtype"], {
    left: undefined as Param | undefined,
    mode: undefined as Param | undefined,
    right: undefined as Param | undefined,
    shape: null as ShapeArg | null,
    dtype: null as DType | null,
  });
  if (a.left === undefined || a.mode === undefined || a.right === undefined)
    throw new TypeError(`${fn}: missing required arguments left, mode, right`);
  const d = floatDtype(fn, a.dtype);
  const [l0, m0, r0] = [a.left, a.mode, a.right].map((v) => asArr(fn, v));
  checkSafeCast(fn, d, l0, m0, r0);
  const s = broadcastShapeArg(fn, a.shape, l0, m0, r0);
  const [l, m, r] = [l0, m0, r0].map((v) => bcast(fn, toDtype(v, d), s));
  const fc = ops.div(ops.sub(m, l), ops.sub(r, l));
  const u = uniformFrom(fn, data, s, d, 0, 1);
  const out1 = ops.add(l, ops.sqrt(ops.mul(ops.mul(u, ops.sub(r, l)), ops.sub(m, l))));
  const out2 = ops.sub(r, ops.sqrt(ops.mul(ops.mul(ops.sub(cst(u, 1), u), ops.sub(r, l)), ops.sub(r, m))));
  return ops.select(ops.lt(u, fc), out1, out2);
}

export interface WeibullOptions {
  scale?: Param;
  concentration?: Param;
  shape?: ShapeArg;
  dtype?: DType;
}
/** random.weibullMin(key, scale, concentration, shape = [], dtype = float). */
export function weibullMin(
  key: KeyLike,
  scale?: Param | WeibullOptions,
  concentration?: Param | WeibullOptions,
  shape?: ShapeArg | WeibullOptions,
  dtype?: DType | null | WeibullOptions,
  options?: WeibullOptions,
): Array {
  const fn = "weibullMin";
  const { data } = checkKey(fn, key);
  const a = parseArgs(fn, [scale, concentration, shape, dtype, options], ["scale", "concentration", "shape", "dtype"], {
    scale: undefined as Param | undefined,
    concentration: undefined as Param | undefined,
    shape: [] as ShapeArg,
    dtype: null as DType | null,
  });
  if (a.scale === undefined || a.concentration === undefined)
    throw new TypeError(`${fn}: missing required arguments scale, concentration`);
  const d = floatDtype(fn, a.dtype);
  const u = uniformFrom(fn, data, canonicalShape(fn, a.shape), d, 0, 1);
  // 1.0 / concentration: a JS number is divided in double precision (a Python float), an Array in its dtype
  const inv = typeof a.concentration === "number" ? 1 / a.concentration : jdiv(1, asArr(fn, a.concentration));
  return jmul(jpow(ops.neg(ops.log1p(ops.neg(u))), inv), a.scale);
}

export function maxwellFrom(data: Array, shape: Shape, dtype: DType): Array {
  const z = normalFrom(data, [...shape, 3], dtype);
  return ops.sqrt(ops.reduceSum(ops.mul(z, z), [shape.length]));
}
/** random.maxwell(key, shape = [], dtype = float): the norm of a 3-d standard normal. */
export function maxwell(
  key: KeyLike,
  shape?: ShapeArg | ShapeDtypeOptions,
  dtype?: DType | null | ShapeDtypeOptions,
  options?: ShapeDtypeOptions,
): Array {
  const a = shapeDtype("maxwell", key, [shape, dtype, options]);
  return maxwellFrom(a.data, a.shape, a.dtype);
}

export interface DoubleSidedMaxwellOptions {
  loc?: Param;
  scale?: Param;
  shape?: ShapeArg;
  dtype?: DType;
}
/** random.doubleSidedMaxwell(key, loc, scale, shape = [], dtype = float). */
export function doubleSidedMaxwell(
  key: KeyLike,
  loc?: Param | DoubleSidedMaxwellOptions,
  scale?: Param | DoubleSidedMaxwellOptions,
  shape?: ShapeArg | DoubleSidedMaxwellOptions,
  dtype?: DType | null | DoubleSidedMaxwellOptions,
  options?: DoubleSidedMaxwellOptions,
): Array {
  const fn = "doubleSidedMaxwell";
  const { data } = checkKey(fn, key);
  const a = parseArgs(fn, [loc, scale, shape, dtype, options], ["loc", "scale", "shape", "dtype"], {
    loc: undefined as Param | undefined,
    scale: undefined as Param | undefined,
    shape: [] as ShapeArg,
    dtype: null as DType | null,
  });
  if (a.loc === undefined || a.scale === undefined) throw new TypeError(`${fn}: missing required arguments loc, scale`);
  const d = floatDtype(fn, a.dtype);
  const lo = asArr(fn, a.loc),
    sc = asArr(fn, a.scale);
  const params = broadcastShapes(fn, lo.shape, sc.shape);
  let s = canonicalShape(fn, a.shape);
  if (!s.length) s = params;
  s = [...s, ...params];
  const [km, kr] = splitList(data, 2);
  const m = maxwellFrom(km, s, d);
  const sign = rademacherFrom(kr, s, d);
  return jadd(jmul(ops.mul(sign, m), sc), lo);
}

// Internal helpers used by other sampler modules.
export { jle, jlt, jsub, jwhere };
