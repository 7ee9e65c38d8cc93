/**
 * @file Ordering of complex values, lexicographic as in NumPy and JAX (real parts first, then imaginary parts):
 * maximum/minimum, max/min reductions, argmax/argmin and the sort keys of sort/argsort/sortComplex.
 */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";

/** a > b lexicographically: Re a > Re b, or equal real parts and Im a > Im b. */
export function lexGreater(a: Array, b: Array): Array {
  const [ar, ai, br, bi] = [ops.real(a), ops.imag(a), ops.real(b), ops.imag(b)];
  return ops.or(ops.gt(ar, br), ops.and(ops.eq(ar, br), ops.gt(ai, bi)));
}

/** Elementwise lexicographic maximum (which "max") or minimum of two complex arrays of one shape and dtype. */
export function complexExtremum(which: "max" | "min", a: Array, b: Array): Array {
  const keepA = which === "max" ? ops.not(lexGreater(b, a)) : ops.not(lexGreater(a, b));
  return ops.select(keepA, a, b);
}

/** Index (int32) of the first lexicographic maximum or minimum of complex `x` along `axis` (the axis removed). */
export function complexArgExtremum(which: "max" | "min", x: Array, axis: number): Array {
  const re = ops.real(x),
    im = ops.imag(x);
  const best = (v: Array) => (which === "max" ? ops.reduceMax(v, [axis]) : ops.reduceMin(v, [axis]));
  const back = (v: Array) =>
    ops.broadcastInDim(
      v,
      x.shape,
      x.shape.map((_, i) => i).filter((i) => i !== axis),
    );
  // candidates share the best real part; among them the best imaginary part wins, the first one on a tie
  const cand = ops.eq(re, back(best(re)));
  const far = ops.fullLike(im, which === "max" ? -Infinity : Infinity);
  const imBest = back(best(ops.select(cand, im, far)));
  const hit = ops.and(cand, ops.eq(im, imBest));
  return ops.argmax(ops.convert(hit, "int32"), axis, "int32");
}

/** The lexicographic max/min of complex `x` over `axes` (keepdims applied by the caller). */
export function complexReduceExtremum(which: "max" | "min", x: Array, axes: readonly number[]): Array {
  const kept = x.shape.map((_, i) => i).filter((i) => !axes.includes(i));
  // move the reduced axes last and flatten them into one
  const t = ops.transpose(x, [...kept, ...axes]);
  const keptShape = kept.map((i) => x.shape[i]);
  const n = axes.reduce((p, i) => p * x.shape[i], 1);
  const flat = ops.reshape(t, [...keptShape, n]);
  const last = keptShape.length;
  const idx = complexArgExtremum(which, flat, last);
  const pick = ops.eq(
    ops.iota("int32", flat.shape, last),
    ops.broadcastInDim(
      idx,
      flat.shape,
      kept.map((_, i) => i),
    ),
  );
  return ops.reduceSum(ops.select(pick, flat, ops.zerosLikeArray(flat)), [last]);
}
