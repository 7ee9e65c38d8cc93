/** @file The 1F1B schedule's backward program (a scan over clock ticks), shared by makePipeline and makePipelineLoss. */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import { type TreeDef, unflatten } from "../core/tree.js";
import { vjp } from "../transforms/api.js";

/** Row i (a traced index) of xs, without the sliced dimension. */
export const idx = (xs: Array, i: Array): Array => jnp.squeeze(lax.dynamicSliceInDim(xs, i, 1, 0), 0);
export const clip = (i: Array, hi: number): Array => jnp.clip(i, 0, hi);

/** One stage's view of the pipeline inside the per-device body. */
export interface OneFOneBStage<SP> {
  stageFn: (p: SP, h: Array) => Array;
  /** this stage's parameters, their leaves and tree */
  p: SP;
  pl: Array[];
  pdef: TreeDef;
  pipe: string;
  /** stages, microbatches, stash rows (pipelineStash) */
  S: number;
  M: number;
  R: number;
  /** axisIndex(pipe) and whether this is stage 0 */
  me: Array;
  first: Array;
}

/** What differs between the pipelines: stage 0's input, seeding and using a microbatch's cotangents, their own carry X. */
export interface OneFOneBHooks<X> {
  /** Stage 0's input for microbatch m (an index already clipped to [0, M)). */
  input(m: Array): Array;
  /**
   * Backpropagates microbatch bm (valid where bValid; bin is the cotangent the next stage sent) through this stage:
   * `stageVjp()` recomputes the stage on its stashed input, giving its output and pullback. Returns the parameter and
   * input cotangents and `update`, applied to the variant's carry after the parameter gradients are accumulated.
   */
  backward(
    bm: Array,
    bValid: Array,
    bin: Array,
    stageVjp: () => [Array, (g: Array) => [Array[], Array]],
  ): { dq: Array[]; dh: Array; update: (x: X) => X };
  /** The initial stash, the variant's carry and the parameter gradients (built after the tick indices). */
  init(): { stash: Array; extra: X; grads: Array[] };
}

/**
 * 1F1B's backward scan: at tick t stage s recomputes microbatch t - s (stashing its input in row (t - s) mod R) and
 * backpropagates microbatch t - (2S - 2 - s); activations go forward and cotangents back with ppermute each tick.
 * `act` is the initial activation and cotangent in flight. Returns the summed parameter gradients and the final X.
 */
export function oneFOneBScan<SP, X>(st: OneFOneBStage<SP>, act: Array, hooks: OneFOneBHooks<X>): [Array[], X] {
  const { stageFn, p, pl, pdef, pipe, S, M, R, me, first } = st;
  const fwd = [...globalThis.Array(S - 1).keys()].map((i) => [i, i + 1] as [number, number]);
  const bwdPerm = fwd.map(([a, b]) => [b, a] as [number, number]);
  type Carry = [Array, Array, Array, X, Array[]];
  const ticks = jnp.arange(M + 2 * S - 2, { dtype: "int32" });
  const { stash, extra, grads } = hooks.init();
  const [, , , x, dp] = lax.scan(
    ([fin, bin, stashed, xs, dps]: Carry, t: Array): [Carry, null] => {
      // forward slot: microbatch t - s enters this stage (stage 0 reads it, the others received it)
      const fm = jnp.subtract(t, me);
      const fValid = jnp.logicalAnd(jnp.greaterEqual(fm, 0), jnp.less(fm, M));
      const h = jnp.where(first, hooks.input(clip(fm, M - 1)), fin);
      const y = stageFn(p, h);
      const slot = jnp.remainder(fm, R);
      const s = jnp.where(fValid, lax.dynamicUpdateSliceInDim(stashed, jnp.expandDims(h, 0), slot, 0), stashed);
      // backward slot: microbatch t - (2S - 2 - s) (the last stage: the one that just entered)
      const bm = jnp.subtract(t, jnp.subtract(2 * S - 2, me));
      const bValid = jnp.logicalAnd(jnp.greaterEqual(bm, 0), jnp.less(bm, M));
      const { dq, dh, update } = hooks.backward(bm, bValid, bin, () => {
        const hb = idx(s, jnp.remainder(bm, R));
        const [o, pull] = vjp((q: Array[], v: Array) => stageFn(unflatten(pdef, q) as SP, v), pl, hb);
        return [o, (g: Array) => pull(g) as [Array[], Array]];
      });
      const nextDp = dps.map((a, i) => jnp.where(bValid, jnp.add(a, dq[i]), a));
      const nextX = update(xs);
      const send = jnp.where(bValid, dh, jnp.zerosLike(dh));
      return [
        [S > 1 ? lax.ppermute(y, pipe, fwd) : y, S > 1 ? lax.ppermute(send, pipe, bwdPerm) : send, s, nextX, nextDp],
        null,
      ];
    },
    [act, act, stash, extra, grads] as Carry,
    ticks,
  )[0];
  return [dp, x];
}
