/** @file Helpers the reference implementations share: numeric views of storage and result construction. */
import { ArrayImpl } from "../core/array-impl.js";
import type { ShapedArray } from "../core/aval.js";
import { fromBigInts, fromNumbers, toFloat64 } from "../core/convert.js";
import { type TypedArray, isBigInt } from "../core/dtype.js";
import { stridesOf } from "../core/shape.js";

export const nums = (a: ArrayImpl): Float64Array => toFloat64(a.buffer, a.dtype);
export const bigs = (a: ArrayImpl): BigInt64Array | BigUint64Array => {
  if (isBigInt(a.dtype)) return a.buffer as BigInt64Array;
  const f = toFloat64(a.buffer, a.dtype);
  return BigInt64Array.from(f, (v) => BigInt(Math.trunc(v)));
};
export function fromNums(aval: ShapedArray, vals: ArrayLike<number>): ArrayImpl {
  return new ArrayImpl(aval, fromNumbers(vals, aval.dtype));
}
export function fromBigs(aval: ShapedArray, vals: ArrayLike<bigint>): ArrayImpl {
  return new ArrayImpl(aval, fromBigInts(vals, aval.dtype));
}

/** Iterates the flat source index of each output element for an output of `outShape`
 * where out index i maps to source index sum(idx[d] * srcStrides[d]) + offset. */
export function stridedGather(
  src: TypedArray,
  outShape: readonly number[],
  srcStrides: readonly number[],
  offset: number,
  out: TypedArray,
): void {
  const nd = outShape.length;
  const n = out.length;
  if (n === 0) return;
  const idx = new Array<number>(nd).fill(0);
  let s = offset;
  for (let k = 0; k < n; k++) {
    (out as Float64Array)[k] = (src as Float64Array)[s];
    for (let d = nd - 1; d >= 0; d--) {
      idx[d]++;
      s += srcStrides[d];
      if (idx[d] < outShape[d]) break;
      s -= srcStrides[d] * outShape[d];
      idx[d] = 0;
    }
  }
}

export { stridesOf };
