/** @file DTypes: names, storage, JAX's type-promotion lattice with weak types, and x64 canonicalization. */
import { config } from "./config.js";

export type DType =
  | "bool"
  | "int8"
  | "uint8"
  | "int16"
  | "uint16"
  | "int32"
  | "uint32"
  | "int64"
  | "uint64"
  | "float16"
  | "bfloat16"
  | "float32"
  | "float64"
  | "complex64"
  | "complex128";

export const DTYPES: readonly DType[] = [
  "bool",
  "int8",
  "uint8",
  "int16",
  "uint16",
  "int32",
  "uint32",
  "int64",
  "uint64",
  "float16",
  "bfloat16",
  "float32",
  "float64",
  "complex64",
  "complex128",
];

/** A complex scalar as JS sees it (what item() and tolist() return for complex arrays). */
export interface Complex {
  re: number;
  im: number;
}

export type TypedArray =
  | Uint8Array
  | Int8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | Float32Array
  | Float64Array;

const ITEMSIZE: Record<DType, number> = {
  bool: 1,
  int8: 1,
  uint8: 1,
  int16: 2,
  uint16: 2,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  float16: 2,
  bfloat16: 2,
  float32: 4,
  float64: 8,
  complex64: 8,
  complex128: 16,
};

const SHORT: Record<DType, string> = {
  bool: "bool",
  int8: "i8",
  uint8: "u8",
  int16: "i16",
  uint16: "u16",
  int32: "i32",
  uint32: "u32",
  int64: "i64",
  uint64: "u64",
  float16: "f16",
  bfloat16: "bf16",
  float32: "f32",
  float64: "f64",
  complex64: "c64",
  complex128: "c128",
};

export function isDType(x: unknown): x is DType {
  return typeof x === "string" && (DTYPES as readonly string[]).includes(x);
}
export function checkDType(fn: string, x: unknown): DType {
  if (!isDType(x))
    throw new TypeError(`${fn}: unknown dtype ${JSON.stringify(x)}; expected one of ${DTYPES.join(", ")}`);
  return x;
}
export const itemsize = (d: DType): number => ITEMSIZE[d];
export const shortName = (d: DType): string => SHORT[d];
export const isFloat = (d: DType): boolean => d === "float16" || d === "bfloat16" || d === "float32" || d === "float64";
/** complex64/complex128: stored as interleaved (re, im) pairs in a Float32Array/Float64Array of twice the size. */
export const isComplex = (d: DType): boolean => d === "complex64" || d === "complex128";
/** Floating or complex (JAX's "inexact"). */
export const isInexact = (d: DType): boolean => isFloat(d) || isComplex(d);
/** The real dtype of a complex dtype's parts (float32 for complex64); other dtypes map to themselves. */
export const realDType = (d: DType): DType => (d === "complex64" ? "float32" : d === "complex128" ? "float64" : d);
/** The complex dtype holding values of real dtype d (complex128 for float64, complex64 otherwise). */
export const complexDType = (d: DType): DType =>
  d === "float64" || d === "complex128" || d === "int64" || d === "uint64" ? "complex128" : "complex64";
/** Storage slots per element: 2 for complex dtypes (re, im), else 1. */
export const lanes = (d: DType): number => (isComplex(d) ? 2 : 1);
export const isUnsigned = (d: DType): boolean => d === "uint8" || d === "uint16" || d === "uint32" || d === "uint64";
export const isSignedInt = (d: DType): boolean => d === "int8" || d === "int16" || d === "int32" || d === "int64";
export const isInteger = (d: DType): boolean => isUnsigned(d) || isSignedInt(d);
export const isBool = (d: DType): boolean => d === "bool";
/** 64-bit integers are stored as BigInt64Array/BigUint64Array and computed with bigint. */
export const isBigInt = (d: DType): boolean => d === "int64" || d === "uint64";
/** Float types whose storage is not a native JS float array (converted by hand). */
export const isHalf = (d: DType): boolean => d === "float16" || d === "bfloat16";

/** Allocates zeroed storage for n elements of dtype d. */
export function allocate(d: DType, n: number): TypedArray {
  switch (d) {
    case "bool":
    case "uint8":
      return new Uint8Array(n);
    case "int8":
      return new Int8Array(n);
    case "int16":
      return new Int16Array(n);
    case "uint16":
    case "float16":
    case "bfloat16":
      return new Uint16Array(n);
    case "int32":
      return new Int32Array(n);
    case "uint32":
      return new Uint32Array(n);
    case "int64":
      return new BigInt64Array(n);
    case "uint64":
      return new BigUint64Array(n);
    case "float32":
      return new Float32Array(n);
    case "float64":
      return new Float64Array(n);
    case "complex64":
      return new Float32Array(2 * n);
    case "complex128":
      return new Float64Array(2 * n);
  }
}

/** Range of an integer dtype as [min, max]. */
export function intRange(d: DType): [number, number] {
  switch (d) {
    case "bool":
      return [0, 1];
    case "int8":
      return [-128, 127];
    case "uint8":
      return [0, 255];
    case "int16":
      return [-32768, 32767];
    case "uint16":
      return [0, 65535];
    case "int32":
      return [-2147483648, 2147483647];
    case "uint32":
      return [0, 4294967295];
    case "int64":
      return [-(2 ** 63), 2 ** 63]; // 2^63 - 1 has no double: it rounds to 2^63
    case "uint64":
      return [0, 2 ** 64]; // 2^64 - 1 rounds to 2^64 in a double
    default:
      throw new TypeError(`intRange: ${d} is not an integer dtype`);
  }
}

/** Whether the integer-valued number x is a value of integer dtype d (64-bit bounds compared exactly: 2^63 is not an int64). */
export function fitsInt(x: number, d: DType): boolean {
  if (d === "int64") return x >= -(2 ** 63) && x < 2 ** 63;
  if (d === "uint64") return x >= 0 && x < 2 ** 64;
  const [lo, hi] = intRange(d);
  return x >= lo && x <= hi;
}

/** Whether the bigint x is a value of integer dtype d. */
export function fitsBigInt(x: bigint, d: DType): boolean {
  if (d === "int64") return x >= -(2n ** 63n) && x < 2n ** 63n;
  if (d === "uint64") return x >= 0n && x < 2n ** 64n;
  const [lo, hi] = intRange(d);
  return x >= BigInt(lo) && x <= BigInt(hi);
}

/**
 * The dtype of a JS number literal (JAX's rule for Python scalars, read for JS's one number type): an integer-valued
 * number that fits the default int dtype is an int literal; any other number, -0 and integer-valued numbers past the
 * int range included, is a float literal, since JS writes 3e9 and 3000000000 alike (JAX would raise OverflowError for
 * such a Python int; storing it in an int32 wrapped it to garbage).
 */
export function numberLiteralDType(x: number): DType {
  const d = defaultIntDType();
  return Number.isInteger(x) && !Object.is(x, -0) && fitsInt(x, d) ? d : defaultFloatDType();
}

/** The dtype of a bigint literal: the default int dtype; one outside its range raises, as JAX's OverflowError for Python ints. */
export function bigintLiteralDType(x: bigint, fn: string): DType {
  const d = defaultIntDType();
  if (!fitsBigInt(x, d))
    throw new RangeError(
      `${fn}: the bigint ${x} is out of range for ${d}${d === "int32" ? ' (64-bit integers need config.update("enableX64", true))' : ""}`,
    );
  return d;
}

/** Machine limits like jnp.finfo. */
export function finfo(d: DType): { eps: number; max: number; min: number; tiny: number; bits: number; nmant: number } {
  switch (d) {
    case "float16":
      return { eps: 2 ** -10, max: 65504, min: -65504, tiny: 2 ** -14, bits: 16, nmant: 10 };
    case "bfloat16":
      return {
        eps: 2 ** -7,
        max: 3.3895313892515355e38,
        min: -3.3895313892515355e38,
        tiny: 2 ** -126,
        bits: 16,
        nmant: 7,
      };
    case "float32":
      return {
        eps: 2 ** -23,
        max: 3.4028234663852886e38,
        min: -3.4028234663852886e38,
        tiny: 2 ** -126,
        bits: 32,
        nmant: 23,
      };
    case "float64":
      return { eps: 2 ** -52, max: Number.MAX_VALUE, min: -Number.MAX_VALUE, tiny: 2 ** -1022, bits: 64, nmant: 52 };
    // like NumPy, a complex dtype's limits are those of its parts
    case "complex64":
    case "complex128":
      return finfo(realDType(d));
    default:
      throw new TypeError(`finfo: ${d} is not a floating dtype`);
  }
}

// ---- JAX's promotion lattice (jax/_src/dtypes.py describes it; this is our own encoding) ----
// Nodes: dtypes plus the weak categories "i*" (Python int), "f*" (Python float) and "c*" (Python complex).
type Node = DType | "i*" | "f*" | "c*";
const EDGES: Record<Node, Node[]> = {
  bool: ["i*"],
  "i*": ["uint8", "int8", "f*"],
  uint8: ["int16", "uint16"],
  uint16: ["int32", "uint32"],
  uint32: ["int64", "uint64"],
  uint64: ["f*"],
  int8: ["int16"],
  int16: ["int32"],
  int32: ["int64"],
  int64: ["f*"],
  "f*": ["float16", "bfloat16", "c*"],
  float16: ["float32"],
  bfloat16: ["float32"],
  float32: ["float64", "complex64"],
  float64: ["complex128"],
  "c*": ["complex64"],
  complex64: ["complex128"],
  complex128: [],
};
const UPPER = new Map<Node, Set<Node>>();
for (const n of Object.keys(EDGES) as Node[]) {
  const seen = new Set<Node>([n]);
  const stack: Node[] = [n];
  while (stack.length)
    for (const m of EDGES[stack.pop()!])
      if (!seen.has(m)) {
        seen.add(m);
        stack.push(m);
      }
  UPPER.set(n, seen);
}
function join(a: Node, b: Node): Node {
  const ua = UPPER.get(a)!,
    ub = UPPER.get(b)!;
  const common = [...ua].filter((n) => ub.has(n));
  // least upper bound: the common upper bound that every other common bound lies above
  for (const c of common) if (common.every((o) => UPPER.get(c)!.has(o))) return c;
  throw new Error(`promotion lattice has no least upper bound for ${a}, ${b}`);
}

export const defaultIntDType = (): DType => (config.enableX64 ? "int64" : "int32");
export const defaultUIntDType = (): DType => (config.enableX64 ? "uint64" : "uint32");
export const defaultFloatDType = (): DType => (config.enableX64 ? "float64" : "float32");
export const defaultComplexDType = (): DType => (config.enableX64 ? "complex128" : "complex64");

/** Maps 64-bit dtypes to 32-bit ones when x64 is disabled, as JAX does. */
export function canonicalizeDType(d: DType): DType {
  if (config.enableX64) return d;
  if (d === "int64") return "int32";
  if (d === "uint64") return "uint32";
  if (d === "float64") return "float32";
  if (d === "complex128") return "complex64";
  return d;
}

function toNode(d: DType, weak: boolean): Node {
  if (!weak || d === "bool") return d;
  return isComplex(d) ? "c*" : isFloat(d) ? "f*" : "i*";
}

/** Result dtype and weakness of combining the given (dtype, weak) pairs under JAX's rules. */
export function promoteTypes(...items: { dtype: DType; weakType: boolean }[]): { dtype: DType; weakType: boolean } {
  if (items.length === 0) throw new TypeError("promoteTypes: needs at least one dtype");
  let node = toNode(items[0].dtype, items[0].weakType);
  for (let i = 1; i < items.length; i++) node = join(node, toNode(items[i].dtype, items[i].weakType));
  if (node === "i*") {
    // a weak result keeps the widest weak input's dtype (all weak ints share the default width)
    return { dtype: defaultIntDType(), weakType: true };
  }
  if (node === "f*") return { dtype: defaultFloatDType(), weakType: true };
  if (node === "c*") return { dtype: defaultComplexDType(), weakType: true };
  return { dtype: canonicalizeDType(node), weakType: false };
}

/** jnp.result_type for plain dtypes (all strong). */
export function resultType(...ds: DType[]): DType {
  return promoteTypes(...ds.map((dtype) => ({ dtype, weakType: false }))).dtype;
}
