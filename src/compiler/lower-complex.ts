/**
 * @file Complex values in ONNX graphs: a complex array is its interleaved storage as a float tensor [..., 2]
 * (complex64 -> float32, complex128 -> float64); these helpers split it into its real and imaginary lanes and join
 * lanes back, remembering both directions so that chains of complex equations pass lanes without round trips.
 */
import type { LoweringContext } from "../core/lowering-types.js";

/** Per context: value name -> its [re, im] lane names, for complex values split or joined in this graph. */
const laneCache = new WeakMap<LoweringContext, Map<string, readonly [string, string]>>();
function cacheOf(ctx: LoweringContext): Map<string, readonly [string, string]> {
  let m = laneCache.get(ctx);
  if (!m) {
    m = new Map();
    laneCache.set(ctx, m);
  }
  return m;
}

/** The real and imaginary lanes of complex value `z` (shape [..., 2]) as tensors of the array's shape. */
export function lanes(ctx: LoweringContext, z: string): readonly [string, string] {
  const m = cacheOf(ctx);
  const hit = m.get(z);
  if (hit) return hit;
  const take = (k: number) => ctx.op("Gather", [z, ctx.constant("int64", [], [BigInt(k)])], { axis: -1 });
  const r = [take(0), take(1)] as const;
  m.set(z, r);
  return r;
}

/** The complex value [..., 2] with lanes `re` and `im` (of one shape and float dtype). */
export function joinLanes(ctx: LoweringContext, re: string, im: string): string {
  const ax = ctx.ints([-1]);
  const z = ctx.op("Concat", [ctx.op("Unsqueeze", [re, ax]), ctx.op("Unsqueeze", [im, ax])], { axis: -1 });
  cacheOf(ctx).set(z, [re, im]);
  return z;
}
