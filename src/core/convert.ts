/** @file Conversions between JS values and typed storage for every dtype (casting like XLA's convert). */
import { type DType, type TypedArray, allocate, isBigInt, isComplex, isFloat, intRange } from "./dtype.js";
import { fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from "./float16.js";

/** Converts a JS number to the value stored for dtype d (float->int truncates and saturates, NaN -> 0; bool: x != 0, so NaN -> true). */
export function castNumber(x: number, d: DType): number {
  switch (d) {
    case "bool":
      // x != 0 as XLA's convert to pred and NumPy's astype(bool): NaN is nonzero, so true
      return x !== 0 ? 1 : 0;
    case "float32":
      return Math.fround(x);
    case "float64":
    case "complex128":
      return x;
    case "complex64":
      return Math.fround(x);
    case "float16":
      return fromFloat16Bits(toFloat16Bits(x));
    case "bfloat16":
      return fromBFloat16Bits(toBFloat16Bits(x));
    default: {
      if (Number.isNaN(x)) return 0;
      const t = Math.trunc(x);
      const [lo, hi] = intRange(d);
      return t < lo ? lo : t > hi ? hi : t;
    }
  }
}

/** Wraps an integer-valued number into dtype d's range (two's complement), as integer arithmetic does. */
export function wrapInt(x: number, d: DType): number {
  switch (d) {
    case "int8":
      return (x << 24) >> 24;
    case "uint8":
      return x & 0xff;
    case "int16":
      return (x << 16) >> 16;
    case "uint16":
      return x & 0xffff;
    case "int32":
      return x | 0;
    case "uint32":
      return x >>> 0;
    case "bool":
      return x ? 1 : 0;
    default:
      return x;
  }
}

export function bigOf(x: number | bigint | boolean, d: DType): bigint {
  if (typeof x === "bigint") return d === "int64" ? BigInt.asIntN(64, x) : BigInt.asUintN(64, x);
  const n = typeof x === "boolean" ? (x ? 1 : 0) : x;
  if (Number.isNaN(n)) return 0n;
  if (!Number.isFinite(n)) return d === "int64" ? (n > 0 ? 2n ** 63n - 1n : -(2n ** 63n)) : n > 0 ? 2n ** 64n - 1n : 0n;
  const t = BigInt(Math.trunc(n));
  const lo = d === "int64" ? -(2n ** 63n) : 0n;
  const hi = d === "int64" ? 2n ** 63n - 1n : 2n ** 64n - 1n;
  return t < lo ? lo : t > hi ? hi : t;
}

/** Reads element i of storage as a JS number (64-bit ints lose precision past 2^53). */
export function readNumber(data: TypedArray, d: DType, i: number): number {
  const v = data[i];
  if (typeof v === "bigint") return Number(v);
  if (d === "float16") return fromFloat16Bits(v);
  if (d === "bfloat16") return fromBFloat16Bits(v);
  return v;
}

/** All elements as float64 numbers (the interpreter's working format for non-bigint math). */
export function toFloat64(data: TypedArray, d: DType): Float64Array {
  const n = data.length;
  const out = new Float64Array(n);
  if (d === "float16") for (let i = 0; i < n; i++) out[i] = fromFloat16Bits(data[i] as number);
  else if (d === "bfloat16") for (let i = 0; i < n; i++) out[i] = fromBFloat16Bits(data[i] as number);
  else if (isBigInt(d)) for (let i = 0; i < n; i++) out[i] = Number(data[i]);
  else for (let i = 0; i < n; i++) out[i] = data[i] as number;
  return out;
}

/** Stores numbers into fresh storage of dtype d, casting each like convert_element_type. */
export function fromNumbers(values: ArrayLike<number>, d: DType): TypedArray {
  const n = values.length;
  const out = allocate(d, n);
  // a real value v is the complex v + 0j
  if (isComplex(d)) {
    for (let i = 0; i < n; i++) (out as Float64Array)[2 * i] = values[i];
    return out;
  }
  if (d === "float16") for (let i = 0; i < n; i++) (out as Uint16Array)[i] = toFloat16Bits(values[i]);
  else if (d === "bfloat16") for (let i = 0; i < n; i++) (out as Uint16Array)[i] = toBFloat16Bits(values[i]);
  else if (isBigInt(d)) for (let i = 0; i < n; i++) (out as BigInt64Array)[i] = bigOf(values[i], d);
  else if (isFloat(d)) for (let i = 0; i < n; i++) (out as Float32Array)[i] = values[i];
  else for (let i = 0; i < n; i++) (out as Int32Array)[i] = castNumber(values[i], d);
  return out;
}

/** Stores bigints (wrapping) into storage of dtype d. */
export function fromBigInts(values: ArrayLike<bigint>, d: DType): TypedArray {
  const n = values.length;
  if (isBigInt(d)) {
    const out = allocate(d, n) as BigInt64Array;
    for (let i = 0; i < n; i++) out[i] = d === "int64" ? BigInt.asIntN(64, values[i]) : BigInt.asUintN(64, values[i]);
    return out;
  }
  if (isFloat(d))
    return fromNumbers(
      Array.from(values, (v) => Number(v)),
      d,
    );
  const out = allocate(d, n);
  for (let i = 0; i < n; i++) (out as Int32Array)[i] = wrapInt(Number(BigInt.asIntN(32, values[i])), d);
  return out;
}

/** Splits interleaved complex storage into real and imaginary planes of the part dtype (float32/float64). */
export function splitComplex(data: TypedArray, d: DType): [TypedArray, TypedArray] {
  const n = data.length / 2;
  if (d === "complex64") {
    const src = data as Float32Array,
      re = new Float32Array(n),
      im = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      re[i] = src[2 * i];
      im[i] = src[2 * i + 1];
    }
    return [re, im];
  }
  const src = data as Float64Array,
    re = new Float64Array(n),
    im = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    re[i] = src[2 * i];
    im[i] = src[2 * i + 1];
  }
  return [re, im];
}
/** Interleaves real and imaginary parts (any numeric arrays) into complex storage of dtype d. */
export function joinComplex(re: ArrayLike<number>, im: ArrayLike<number>, d: DType): TypedArray {
  const out = allocate(d, re.length) as Float64Array;
  for (let i = 0; i < re.length; i++) {
    out[2 * i] = re[i];
    out[2 * i + 1] = im[i];
  }
  return out;
}

/** Element conversion between storages (convert_element_type). */
export function convertStorage(data: TypedArray, from: DType, to: DType): TypedArray {
  if (from === to) return data.slice();
  if (isComplex(from) && isComplex(to))
    return to === "complex64" ? Float32Array.from(data as Float64Array) : Float64Array.from(data as Float32Array);
  // complex -> real keeps the real part (NumPy's ComplexWarning case; JAX does the same)
  if (isComplex(from)) {
    const re = new Float64Array(data.length / 2);
    for (let i = 0; i < re.length; i++) re[i] = (data as Float64Array)[2 * i];
    return convertStorage(re, "float64", to);
  }
  if (isComplex(to)) return fromNumbers(toFloat64(data, from), to);
  if (isBigInt(from) && (isBigInt(to) || !isFloat(to))) {
    if (to === "bool") {
      const o = allocate(to, data.length);
      for (let i = 0; i < data.length; i++) o[i] = data[i] !== 0n ? 1 : 0;
      return o;
    }
    return fromBigInts(data as BigInt64Array, to);
  }
  if (!isFloat(from) && isBigInt(to)) {
    const o = allocate(to, data.length) as BigInt64Array;
    for (let i = 0; i < data.length; i++)
      o[i] =
        to === "int64" ? BigInt.asIntN(64, BigInt(data[i] as number)) : BigInt.asUintN(64, BigInt(data[i] as number));
    return o;
  }
  if (!isFloat(from) && !isFloat(to) && to !== "bool") {
    const o = allocate(to, data.length);
    for (let i = 0; i < data.length; i++) (o as Int32Array)[i] = wrapInt(data[i] as number, to);
    return o;
  }
  return fromNumbers(toFloat64(data, from), to);
}
