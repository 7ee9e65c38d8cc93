/** @file The safetensors container: encode/decode of (8-byte LE header length, JSON header, raw little-endian tensor bytes) with validation. */
import { endianness } from "node:os";
import { type DType, type TypedArray, allocate, itemsize, realDType } from "../core/dtype.js";

/** safetensors dtype names for jaxts dtypes. */
export const ST_DTYPE: Readonly<Record<DType, string>> = {
  bool: "BOOL",
  uint8: "U8",
  int8: "I8",
  int16: "I16",
  uint16: "U16",
  int32: "I32",
  uint32: "U32",
  int64: "I64",
  uint64: "U64",
  float16: "F16",
  bfloat16: "BF16",
  float32: "F32",
  float64: "F64",
  // C64 is the spec's interleaved (re, im) float32 pair, the same layout as jaxts's complex64 storage; the spec has no complex128
  complex64: "C64",
  complex128: "C128",
};
const FROM_ST: Readonly<Record<string, DType>> = Object.fromEntries(
  Object.entries(ST_DTYPE)
    .filter(([k]) => k !== "complex128")
    .map(([k, v]) => [v, k as DType]),
);
/** Other dtypes the safetensors spec defines, which jaxts has no Array dtype for. */
const UNSUPPORTED_ST = ["F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2"];

/** The Rust reference implementation's limit on the JSON header size. */
export const MAX_HEADER_BYTES = 100_000_000;
const LITTLE = endianness() === "LE";

/** Deepest nesting of objects/lists a valid header needs is 3 ({name: {shape: [...]}}); deeper headers are refused before parsing. */
export const MAX_HEADER_DEPTH = 8;

/**
 * The offset at which the JSON text's nesting of objects and lists first exceeds `limit` levels, or -1.
 * A linear scan (brackets inside strings do not count), so hostile nesting is refused before anything recursive sees it.
 */
export function jsonDepthExceeded(text: string, limit: number): number {
  let depth = 0,
    inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return i;
    } // { [
    else if (c === 0x7d || c === 0x5d) depth--; // } ]
  }
  return -1;
}

/** One tensor: its dtype, shape and raw little-endian row-major bytes. */
export interface RawTensor {
  dtype: DType;
  shape: number[];
  bytes: Uint8Array;
}

const prod = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
const shapeStr = (s: readonly number[]): string => `(${s.join(", ")}${s.length === 1 ? "," : ""})`;

/** Swaps each item's bytes in place (only needed on big-endian hosts). */
function swapBytes(b: Uint8Array, size: number): void {
  if (size === 1) return;
  for (let i = 0; i < b.length; i += size) b.subarray(i, i + size).reverse();
}

/** Little-endian bytes of typed-array storage (a copy). */
export function storageBytes(t: TypedArray, dtype: DType): Uint8Array {
  const b = new Uint8Array(t.buffer, t.byteOffset, t.byteLength).slice();
  // complex parts are swapped one float at a time
  if (!LITTLE) swapBytes(b, itemsize(realDType(dtype)));
  return b;
}

/** Typed-array storage (jaxts layout: bool as 0/1 bytes, float16/bfloat16 as uint16 bits) from little-endian bytes. */
export function storageFromBytes(bytes: Uint8Array, dtype: DType, n: number): TypedArray {
  const t = allocate(dtype, n);
  const view = new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
  view.set(bytes);
  if (!LITTLE) swapBytes(view, itemsize(realDType(dtype)));
  if (dtype === "bool") for (let i = 0; i < n; i++) view[i] = view[i] !== 0 ? 1 : 0;
  return t;
}

/**
 * Encodes named tensors and string metadata. Tensors are laid out by item size (largest first), then
 * name, and the header is padded with spaces to a multiple of 8 bytes, as the reference writer does,
 * so every tensor starts at an offset aligned to its item size.
 */
export function encode(tensors: ReadonlyMap<string, RawTensor>, metadata: Record<string, string> | null): Uint8Array {
  const names = [...tensors.keys()].sort((a, b) => {
    const d = itemsize(tensors.get(b)!.dtype) - itemsize(tensors.get(a)!.dtype);
    return d !== 0 ? d : a < b ? -1 : a > b ? 1 : 0;
  });
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let off = 0;
  for (const n of names) {
    if (n === "__metadata__") throw new Error('safetensors: "__metadata__" is reserved and cannot name a tensor');
    const t = tensors.get(n)!;
    if (t.dtype === "complex128")
      throw new Error(
        `safetensors: tensor "${n}" is complex128, which the safetensors format has no dtype for (it has C64 only); cast it to complex64 or save its real and imaginary parts`,
      );
    const need = prod(t.shape) * itemsize(t.dtype);
    if (t.bytes.length !== need)
      throw new Error(
        `safetensors: tensor "${n}" has ${t.bytes.length} bytes but shape ${shapeStr(t.shape)} of ${ST_DTYPE[t.dtype]} needs ${need}`,
      );
    header[n] = { dtype: ST_DTYPE[t.dtype], shape: t.shape, data_offsets: [off, off + need] };
    off += need;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded !== json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let pos = 8 + json.length;
  for (const n of names) {
    const b = tensors.get(n)!.bytes;
    out.set(b, pos);
    pos += b.length;
  }
  return out;
}

/** A decoded file: tensors in header order (views into the input bytes) and the metadata, if any. */
export interface Decoded {
  tensors: Map<string, RawTensor>;
  metadata: Record<string, string> | null;
}

const isNonNegInt = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;

/** Decodes and validates a safetensors buffer; `what` names the source in error messages. */
export function decode(buf: Uint8Array, what: string): Decoded {
  const bad = (msg: string): Error => new Error(`load: ${what} is not a valid safetensors file: ${msg}`);
  if (buf.length < 8)
    throw bad(`it has only ${buf.length} bytes; the 8-byte header length is missing (truncated file?)`);
  const n64 = new DataView(buf.buffer, buf.byteOffset, 8).getBigUint64(0, true);
  if (n64 > BigInt(MAX_HEADER_BYTES))
    throw bad(`the header length ${n64} exceeds the ${MAX_HEADER_BYTES}-byte limit (corrupt length prefix?)`);
  const n = Number(n64);
  if (8 + n > buf.length)
    throw bad(
      `the header length is ${n} bytes but only ${buf.length - 8} bytes follow the length prefix (truncated file?)`,
    );
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(buf.subarray(8, 8 + n));
  } catch {
    throw bad("the header is not valid UTF-8");
  }
  if (!text.startsWith("{")) throw bad(`the JSON header must start with "{", got ${JSON.stringify(text.slice(0, 16))}`);
  const deep = jsonDepthExceeded(text, MAX_HEADER_DEPTH);
  if (deep >= 0)
    throw bad(
      `the JSON header nests objects/lists deeper than ${MAX_HEADER_DEPTH} levels (at byte ${deep}); a valid header needs 3`,
    );
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (e) {
    throw bad(`the header is not valid JSON (${(e as Error).message})`);
  }
  if (header === null || typeof header !== "object" || Array.isArray(header))
    throw bad("the header must be a JSON object");
  const data = buf.subarray(8 + n);
  let metadata: Record<string, string> | null = null;
  const spans: [string, number, number][] = [];
  const tensors = new Map<string, RawTensor>();
  for (const [name, e] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (
        e === null ||
        typeof e !== "object" ||
        Array.isArray(e) ||
        Object.values(e).some((v) => typeof v !== "string")
      ) {
        throw bad('"__metadata__" must be an object mapping strings to strings');
      }
      metadata = e as Record<string, string>;
      continue;
    }
    if (e === null || typeof e !== "object" || Array.isArray(e))
      throw bad(`the entry for tensor "${name}" must be an object with dtype, shape and data_offsets`);
    const { dtype, shape, data_offsets: offs } = e as Record<string, unknown>;
    if (typeof dtype !== "string") throw bad(`tensor "${name}" has no dtype string`);
    const dt = FROM_ST[dtype];
    if (!dt) {
      throw UNSUPPORTED_ST.includes(dtype)
        ? new Error(`load: tensor "${name}" in ${what} has dtype ${dtype}, which jaxts does not support`)
        : bad(
            `tensor "${name}" has unknown dtype ${JSON.stringify(dtype)}; expected one of ${Object.keys(FROM_ST).join(", ")}`,
          );
    }
    if (!Array.isArray(shape) || !shape.every(isNonNegInt))
      throw bad(
        `tensor "${name}" has an invalid shape ${JSON.stringify(shape)}; expected a list of non-negative integers`,
      );
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every(isNonNegInt) || offs[0] > offs[1]) {
      throw bad(
        `tensor "${name}" has invalid data_offsets ${JSON.stringify(offs)}; expected [begin, end] with 0 <= begin <= end`,
      );
    }
    const [b, en] = offs as [number, number];
    const need = prod(shape) * itemsize(dt);
    if (en - b !== need)
      throw bad(
        `tensor "${name}" has data_offsets [${b}, ${en}] spanning ${en - b} bytes, but shape ${shapeStr(shape)} of ${dtype} needs ${need}`,
      );
    if (en > data.length)
      throw bad(
        `tensor "${name}" has data_offsets [${b}, ${en}] out of range: the data section has ${data.length} bytes (truncated file?)`,
      );
    spans.push([name, b, en]);
    tensors.set(name, { dtype: dt, shape: shape as number[], bytes: data.subarray(b, en) });
  }
  // the spec requires the tensors to cover the data section exactly: no overlaps, holes or trailing bytes
  spans.sort((x, y) => x[1] - y[1] || x[2] - y[2]);
  let end = 0;
  for (const [name, b, en] of spans) {
    if (b < end)
      throw bad(`tensor "${name}" (bytes ${b}..${en}) overlaps the previous tensor, which ends at byte ${end}`);
    if (b > end) throw bad(`the data section has a hole at bytes ${end}..${b} before tensor "${name}"`);
    end = en;
  }
  if (end !== data.length)
    throw bad(`the tensors cover ${end} bytes but the data section has ${data.length} (trailing bytes)`);
  return { tensors, metadata };
}
