/** @file Sorting primitives: sort (several operands, num_keys, is_stable) and top_k, with jvp/vmap rules. */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { allocate, isBigInt } from "../core/dtype.js";
import { type BDim, type MaybeZero, Primitive, Zero } from "../core/primitive.js";
import { prod } from "../core/shape.js";
import { bind } from "../core/trace.js";
import { nums } from "./ref-util.js";
import * as ops from "./ops.js";
import * as LSort from "../compiler/lower-sort.js";

export interface SortParams {
  dimension: number;
  is_stable: boolean;
  num_keys: number;
  [k: string]: unknown;
}
export interface TopKParams {
  k: number;
  [k: string]: unknown;
}

/** Sort keys of one operand: numbers (NaN sorts last, -0 == 0, as lax.sort canonicalizes) or bigints. */
type Keys = Float64Array | BigInt64Array | BigUint64Array;
function keysOf(a: ArrayImpl): Keys {
  return isBigInt(a.dtype) ? (a.buffer as BigInt64Array) : nums(a);
}
/** Total order used by lax.sort: NaNs after everything (and equal to each other). */
function cmpNum(a: number, b: number): number {
  if (a !== a) return b !== b ? 0 : 1;
  if (b !== b) return -1;
  return a < b ? -1 : a > b ? 1 : 0;
}
function cmpAt(k: Keys, i: number, j: number): number {
  const a = k[i],
    b = k[j];
  if (typeof a === "bigint") return a < (b as bigint) ? -1 : a > (b as bigint) ? 1 : 0;
  return cmpNum(a, b as number);
}

/** Permutes raw storage along `dim` of `shape`: out[.., k, ..] = src[.., perm[k], ..] for each (outer, inner) line. */
function permuteLines(
  src: ArrayImpl,
  shape: readonly number[],
  dim: number,
  perms: Int32Array,
  out: ShapedArray,
  k: number,
): ArrayImpl {
  const n = shape[dim],
    inner = prod(shape.slice(dim + 1)),
    outer = prod(shape.slice(0, dim));
  const o = allocate(out.dtype, out.size) as Float64Array;
  const s = src.buffer as Float64Array;
  for (let a = 0; a < outer; a++)
    for (let i = 0; i < inner; i++) {
      const line = a * inner + i;
      for (let q = 0; q < k; q++) o[a * k * inner + q * inner + i] = s[a * n * inner + perms[line * k + q] * inner + i];
    }
  return new ArrayImpl(out, o);
}

/** out[..., k, ...] = t[..., idx[..., k, ...], ...] along `dim` (a gather over every axis; idx has t's shape except at dim). */
export function takeAlongDim(t: Array, idx: Array, dim: number): Array {
  const shape = idx.shape;
  const comps = shape.map((_, j) =>
    ops.reshape(j === dim ? ops.convert(idx, "int32") : ops.iota("int32", shape, j), [...shape, 1]),
  );
  return ops.gather(t, ops.concatenate(comps, shape.length), [...t.shape.keys()], "clip");
}

// ---------------------------------------------------------------- sort
export const sortP: Primitive<SortParams> = new Primitive<SortParams>(
  "sort",
  {
    abstractEval(avals, { dimension, num_keys }) {
      if (avals.length === 0) throw new TypeError("sort: needs at least one operand");
      const s0 = avals[0];
      if (s0.ndim === 0) throw new TypeError(`sort: operands must have at least one dimension, got ${s0.str()}`);
      if (!Number.isInteger(dimension) || dimension < 0 || dimension >= s0.ndim)
        throw new TypeError(`sort: dimension ${dimension} out of range for ${s0.str()}`);
      if (!Number.isInteger(num_keys) || num_keys < 1 || num_keys > avals.length)
        throw new TypeError(
          `sort: num_keys ${num_keys} must be between 1 and the number of operands (${avals.length})`,
        );
      for (const a of avals)
        if (a.shape.join() !== s0.shape.join())
          throw new TypeError(
            `sort: all operands must have the same shape, got ${avals.map((v) => v.str()).join(", ")}`,
          );
      return avals.map((a) => a);
    },
    impl(args, { dimension, num_keys }, outs) {
      const shape = args[0].shape,
        n = shape[dimension];
      const inner = prod(shape.slice(dimension + 1)),
        outer = prod(shape.slice(0, dimension));
      const keys = args.slice(0, num_keys).map(keysOf);
      const perms = new Int32Array(outer * inner * n);
      const idx = new globalThis.Array<number>(n);
      for (let a = 0; a < outer; a++)
        for (let i = 0; i < inner; i++) {
          const base = a * n * inner + i;
          for (let q = 0; q < n; q++) idx[q] = q;
          // Array.prototype.sort is stable, so ties keep index order (is_stable holds either way)
          idx.sort((x, y) => {
            for (const k of keys) {
              const c = cmpAt(k, base + x * inner, base + y * inner);
              if (c !== 0) return c;
            }
            return 0;
          });
          perms.set(idx, (a * inner + i) * n);
        }
      return args.map((x, j) => permuteLines(x, shape, dimension, perms, outs[j], n));
    },
    jvp(primals, tangents, p) {
      // sort an iota alongside to learn the permutation, then gather each tangent with it
      const iota = ops.iota("int32", primals[0].shape, p.dimension);
      const outs = bind(sortP, [...primals, iota], p);
      const perm = outs.pop()!;
      const touts: MaybeZero[] = tangents.map((t, i) =>
        t instanceof Zero ? new Zero(outs[i].aval) : takeAlongDim(t, perm, p.dimension),
      );
      return [outs, touts];
    },
    vmap(axis, args, dims, p) {
      const xs = args.map((a, i) =>
        dims[i] === null ? ops.broadcastBatch(a, axis.size, 0) : ops.moveaxis(a, dims[i]!, 0),
      );
      const outs = bind(sortP, xs, { ...p, dimension: p.dimension + 1 });
      return [outs, outs.map((): BDim => 0)];
    },
    lower: (ctx, xs, p, avals) => LSort.sort(ctx, xs, avals, p.dimension, p.num_keys),
    missing: { transpose: "sort is not linear" },
  },
  { multipleResults: true },
);

/** lax.sort on several operands: sorts all of them by the first num_keys (lexicographically) along `dimension`. */
export function sortMany(operands: readonly Array[], dimension: number, isStable = true, numKeys = 1): Array[] {
  return bind(sortP, [...operands], { dimension, is_stable: isStable, num_keys: numKeys });
}

// ---------------------------------------------------------------- top_k
export const topKP: Primitive<TopKParams> = new Primitive<TopKParams>(
  "top_k",
  {
    abstractEval([x], { k }) {
      if (x.ndim === 0) throw new TypeError(`top_k: operand must have at least one dimension, got ${x.str()}`);
      const n = x.shape[x.ndim - 1];
      if (!Number.isInteger(k) || k < 0 || k > n)
        throw new TypeError(`top_k: k must be an integer in [0, ${n}] (the last dimension of ${x.str()}), got ${k}`);
      if (x.dtype === "bool") throw new TypeError(`top_k: bool operands are not supported (${x.str()})`);
      const shape = [...x.shape.slice(0, -1), k];
      return [new ShapedArray(shape, x.dtype, x.weakType), new ShapedArray(shape, "int32")];
    },
    impl([x], { k }, [vo, io]) {
      const shape = x.shape,
        d = shape.length - 1,
        n = shape[d];
      const lines = prod(shape.slice(0, d));
      const keys = keysOf(x);
      const perms = new Int32Array(lines * k);
      const idx = new globalThis.Array<number>(n);
      for (let l = 0; l < lines; l++) {
        for (let q = 0; q < n; q++) idx[q] = q;
        // descending, NaN first (largest), ties by lower index
        idx.sort((a, b) => cmpAt(keys, l * n + b, l * n + a));
        for (let q = 0; q < k; q++) perms[l * k + q] = idx[q];
      }
      const vals = permuteLines(x, shape, d, perms, vo, k);
      const ind = new ArrayImpl(io, perms.slice());
      return [vals, ind];
    },
    jvp([x], [t], p) {
      const [v, i] = bind(topKP, [x], p);
      return [
        [v, i],
        [t instanceof Zero ? new Zero(v.aval) : takeAlongDim(t, i, x.ndim - 1), new Zero(i.aval)],
      ];
    },
    vmap(_axis, [x], [d], p) {
      const outs = bind(topKP, [ops.moveaxis(x, d!, 0)], p);
      return [outs, [0, 0]];
    },
    lower: (ctx, [x], p, [a]) => LSort.topK(ctx, x, a, p.k),
    missing: { transpose: "top_k is not linear" },
  },
  { multipleResults: true },
);

/** lax.top_k: the k largest entries along the last axis and their int32 indices. */
export function topK(operand: Array, k: number): [Array, Array] {
  const [v, i] = bind(topKP, [operand], { k });
  return [v, i];
}

/** top_k along any axis: moves the axis last, takes top_k there and moves it back. */
export function topKAlong(operand: Array, k: number, axis: number): [Array, Array] {
  if (axis === operand.ndim - 1) return topK(operand, k);
  const perm = [...operand.shape.keys()].filter((i) => i !== axis).concat([axis]);
  const inv = perm.map((_, i) => perm.indexOf(i));
  const [v, i] = topK(ops.transpose(operand, perm), k);
  return [ops.transpose(v, inv), ops.transpose(i, inv)];
}
