/** @file Array.view(dtype): NumPy's bit reinterpretation, including itemsize changes along the last axis. */
import type { Array } from "../core/array.js";
import { type DType, canonicalizeDType, checkDType, itemsize } from "../core/dtype.js";
import { shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { checkArity } from "../core/check-args.js";

/** The unsigned integer dtype of a byte width (bool counts as one byte). */
const uintOf = (bytes: number): DType =>
  bytes === 1 ? "uint8" : bytes === 2 ? "uint16" : bytes === 4 ? "uint32" : "uint64";
/** x's bits as the same-width unsigned integer (bool as uint8 0/1, NumPy's byte value of a bool). */
function toUint(x: Array): Array {
  if (x.dtype === "bool") return ops.convert(x, "uint8");
  const u = uintOf(itemsize(x.dtype));
  return x.dtype === u ? x : ops.bitcast(x, u);
}
/** Unsigned bits u reinterpreted as dtype d of the same width (bool: nonzero bytes are true). */
function fromUint(u: Array, d: DType): Array {
  if (d === "bool") return ops.ne(u, ops.full([], 0, "uint8"));
  return u.dtype === d ? u : ops.bitcast(u, d);
}

/**
 * x.view(dtype): the same bytes read as dtype (JAX's Array.view). Equal itemsizes reinterpret elementwise; otherwise the
 * last axis is regrouped in little-endian byte order, its size scaling by old/new itemsize as in NumPy (which needs
 * that axis's bytes to divide evenly, and a 0-d array to keep its itemsize).
 */
export function view(x: Array, dtype?: DType | null): Array {
  checkArity("Array.view", arguments, 2, "x.view(dtype)");
  if (dtype === undefined || dtype === null) return x;
  const d = canonicalizeDType(checkDType("Array.view", dtype));
  const a = itemsize(x.dtype),
    b = itemsize(d);
  if (a === b) return x.dtype === d ? x : fromUint(toUint(x), d);
  if (x.ndim === 0)
    throw new TypeError(
      `Array.view: changing the dtype of a 0-d array from ${x.dtype} to ${d} needs equal itemsizes (${a} vs ${b} bytes)`,
    );
  const n = x.shape[x.ndim - 1],
    lead = x.shape.slice(0, -1);
  const u = toUint(x);
  if (a > b) {
    // split each wide word into a/b narrow words, least significant first (little endian)
    const r = a / b,
      nu = uintOf(b),
      bits = 8 * b;
    const parts: Array[] = [];
    for (let k = 0; k < r; k++) {
      const shifted = k === 0 ? u : ops.shiftRightLogical(u, ops.full([], k * bits, u.dtype));
      // mask to the low `bits` first, so the narrowing convert never sees an out-of-range value
      const low = ops.and(shifted, ops.full([], 2 ** bits - 1, u.dtype));
      parts.push(ops.reshape(ops.convert(low, nu), [...x.shape, 1]));
    }
    const narrow = ops.reshape(ops.concatenate(parts, x.ndim), [...lead, n * r]);
    return fromUint(narrow, d);
  }
  // a < b: join b/a consecutive narrow words into one wide word
  const r = b / a;
  if (n % r !== 0)
    throw new TypeError(
      `Array.view: the last axis of an array of shape ${shapeStr(x.shape)} and dtype ${x.dtype} (${n * a} bytes) must divide into ${d} elements of ${b} bytes`,
    );
  const wu = uintOf(b),
    bits = 8 * a;
  const grouped = ops.reshape(ops.convert(u, wu), [...lead, n / r, r]);
  let acc: Array | null = null;
  for (let k = 0; k < r; k++) {
    const part = ops.reshape(ops.sliceInDim(grouped, k, k + 1, 1, x.ndim), [...lead, n / r]);
    const term = k === 0 ? part : ops.shiftLeft(part, ops.full([], k * bits, wu));
    acc = acc === null ? term : ops.or(acc, term);
  }
  return fromUint(acc!, d);
}
