/**
 * @file Pipeline parallelism over a mesh axis: layers stacked per stage (each device holds its stage's layers), a GPipe
 * schedule as a scan over clock ticks inside shardMap, activations moved to the next stage with ppermute each tick.
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import { flatten, unflatten } from "../core/tree.js";
import { Mesh } from "../parallel/mesh.js";
import { P } from "../parallel/sharding.js";
import { type SpecTree, shardMap } from "../parallel/shard-map.js";
import { customVjp } from "../transforms/custom-derivatives.js";
import { clip, idx, oneFOneBScan } from "./pipeline-schedule.js";

export interface PipelineOptions {
  /** The mesh axis whose members are the stages (default "pipe"). */
  pipeAxis?: string;
  /** Microbatches per call: the batch (first dimension of x, per data shard) is split into this many equal parts. */
  microbatches: number;
  /** A mesh axis the batch is also split over (pipeline x data parallel); default none (x replicated). */
  dataAxis?: string;
  /**
   * PartitionSpecs of the stacked leaves (default P(pipeAxis) for every leaf): dim 0 must be split over the pipe axis;
   * other dims may name e.g. a tensor axis (pipeline x tensor parallelism: stageFn then psums over it).
   */
  paramSpecs?: SpecTree;
  /** shardMap's replication check (default true; pass false when stageFn psums over another axis). */
  checkVma?: boolean;
  /**
   * "gpipe" (default): autodiff of the forward schedule, which keeps every tick's activations for the backward pass
   * (M + S - 1 microbatches per stage). "1f1b": the forward keeps only the stage inputs' microbatches; the backward
   * pass runs one-forward-one-backward: stage s recomputes microbatch m at tick m + s and runs its backward at tick
   * m + 2S - 2 - s, so it holds at most 2S - 1 stashed microbatch inputs whatever M (pipelineStash).
   */
  schedule?: "gpipe" | "1f1b";
  /**
   * The stacked leaves carry one copy per data shard: [S, n, L/S, ...] split over (pipeAxis, dataAxis) (needs
   * dataAxis). Their gradient then comes back per data shard, unreduced (each copy's share of the gradient), so a
   * ZeRO step can reduce-scatter it over the data axis instead of the pipeline all-reducing it. Default false.
   */
  perDataParams?: boolean;
}

/** Microbatch activations a stage holds for its backward pass under a schedule (S stages, M microbatches). */
export function pipelineStash(schedule: "gpipe" | "1f1b", stages: number, microbatches: number): number {
  return schedule === "1f1b" ? Math.min(2 * stages - 1, microbatches) : microbatches + stages - 1;
}

/**
 * Stacks `layers` (a list of same-structured parameter trees) for `stages` stages: each leaf becomes
 * [stages, layers / stages, ...leaf], stage s holding layers s * (L / S) ... (s + 1) * (L / S) - 1.
 */
export function stackStages<L>(layers: readonly L[], stages: number): L {
  const fn = "stackStages";
  if (!Number.isInteger(stages) || stages < 1)
    throw new RangeError(`${fn}: stages must be a positive integer, got ${stages}`);
  if (layers.length === 0 || layers.length % stages !== 0)
    throw new Error(
      `${fn}: ${layers.length} layers cannot be split evenly into ${stages} stages; use a layer count divisible by ${stages}`,
    );
  const flats = layers.map((l) => flatten(l));
  const def = flats[0][1];
  const per = layers.length / stages;
  const leaves = flats[0][0].map((_, j) => {
    const col = flats.map(([ls], i) => {
      if (ls.length !== flats[0][0].length)
        throw new Error(`${fn}: layer ${i} has ${ls.length} leaves, layer 0 has ${flats[0][0].length}`);
      return ls[j] as Array;
    });
    const st = jnp.stack(col, 0);
    return jnp.reshape(st, [stages, per, ...st.shape.slice(1)]);
  });
  return unflatten(def, leaves) as L;
}

/** The checks every pipeline builder shares (the mesh, its pipe and data axes, microbatches, schedule), naming `fn`. */
export function pipelineSetup(
  fn: string,
  mesh: Mesh,
  opts: PipelineOptions,
): { pipe: string; dataAxis: string | null; M: number; schedule: "gpipe" | "1f1b" } {
  if (!(mesh instanceof Mesh)) throw new TypeError(`${fn}: expected a Mesh (from makeMesh), got ${String(mesh)}`);
  const pipe = opts?.pipeAxis ?? "pipe";
  if (!mesh.axisNames.includes(pipe))
    throw new Error(
      `${fn}: pipeAxis ${JSON.stringify(pipe)} is not an axis of ${mesh.toString()}; pass { pipeAxis } naming one of [${mesh.axisNames.join(", ")}]`,
    );
  const dataAxis = opts.dataAxis ?? null;
  if (dataAxis !== null && (dataAxis === pipe || !mesh.axisNames.includes(dataAxis)))
    throw new Error(
      `${fn}: dataAxis ${JSON.stringify(dataAxis)} must be an axis of ${mesh.toString()} other than the pipe axis ${JSON.stringify(pipe)}`,
    );
  const M = opts.microbatches;
  if (!Number.isInteger(M) || M < 1) throw new RangeError(`${fn}: microbatches must be a positive integer, got ${M}`);
  const schedule = opts.schedule ?? "gpipe";
  if (schedule !== "gpipe" && schedule !== "1f1b")
    throw new RangeError(`${fn}: schedule must be "gpipe" or "1f1b", got ${JSON.stringify(schedule)}`);
  return { pipe, dataAxis, M, schedule };
}

/**
 * A pipelined application of `stageFn` over the `pipeAxis` of `mesh`: `run(stacked, x)` equals applying every
 * stage's layers in order to x ([batch, ...]); `stacked` is stackStages' output (leaves [S, L/S, ...], split over
 * the pipe axis so each device holds its stage's layers). `stageFn(p, h)` applies one stage (p: leaves [L/S, ...])
 * to a microbatch h and must keep h's shape. GPipe schedule: M microbatches take M + S - 1 ticks; at tick t stage s
 * works on microbatch t - s (the first and last S - 1 ticks are the bubble). The result (held by the last stage) is
 * summed over the pipe axis with the other stages' zeros, so it comes back replicated over it. With `dataAxis`, x and
 * the result are split over that axis too (each pipeline runs its share of the batch). Differentiable end to end.
 */
export function makePipeline<SP>(
  stageFn: (p: SP, h: Array) => Array,
  mesh: Mesh,
  opts: PipelineOptions,
): (stacked: SP, x: Array) => Array {
  const fn = "makePipeline";
  const { pipe, dataAxis, M, schedule } = pipelineSetup(fn, mesh, opts);
  const S = mesh.axisSize(pipe);
  const fwd = [...globalThis.Array(S - 1).keys()].map((i) => [i, i + 1] as [number, number]);

  const perData = opts.perDataParams ?? false;
  if (perData && dataAxis === null)
    throw new Error(`${fn}: perDataParams needs a dataAxis (the copies of the stacked leaves are split over it)`);
  /** This device's stage parameters from the stacked leaves' block ([1, L/S, ...], or [1, 1, L/S, ...] per data). */
  const localStage = (l: Array): Array => (perData ? jnp.squeeze(l, [0, 1]) : jnp.squeeze(l, 0));

  /** 1F1B's backward: recompute and backpropagate each microbatch with at most 2S - 1 stage inputs stashed. */
  const oneFOneB = (p: SP, xs: Array, ct: Array): [SP, Array] => {
    const [, mb, ...rest] = xs.shape;
    const R = pipelineStash("1f1b", S, M);
    const me = lax.axisIndex(pipe);
    const first = jnp.equal(me, 0),
      last = jnp.equal(me, S - 1);
    const [pl, pdef] = flatten(p);
    const zero = (a: Array) => jnp.zeros(a.shape, { dtype: a.dtype });
    const act = jnp.zeros([mb, ...rest], { dtype: xs.dtype });
    const stage = { stageFn, p, pl: pl as Array[], pdef, pipe, S, M, R, me, first };
    const [dp, dx] = oneFOneBScan<SP, Array>(stage, act, {
      input: (m) => idx(xs, m),
      backward(bm, bValid, bin, stageVjp) {
        // the last stage seeds microbatch bm's cotangent from ct; stage 0 keeps its input cotangent as dx
        const g = jnp.where(last, idx(ct, clip(bm, M - 1)), bin);
        const [, pull] = stageVjp();
        const [dq, dh] = pull(g);
        const update = (dxs: Array) =>
          jnp.where(
            jnp.logicalAnd(first, bValid),
            lax.dynamicUpdateSliceInDim(dxs, jnp.expandDims(dh, 0), clip(bm, M - 1), 0),
            dxs,
          );
        return { dq, dh, update };
      },
      init: () => ({
        stash: jnp.zeros([R, mb, ...rest], { dtype: xs.dtype }),
        extra: zero(xs),
        grads: (pl as Array[]).map(zero),
      }),
    });
    return [unflatten(pdef, dp) as SP, dx];
  };
  const body = (stacked: SP, x: Array): Array => {
    const [ls, def] = flatten(stacked);
    const p = unflatten(def, (ls as Array[]).map(localStage)) as SP;
    const [B, ...rest] = x.shape;
    if (B % M !== 0)
      throw new Error(`${fn}: batch ${B} (x ${x.dtype}[${x.shape.join(",")}]) is not divisible by ${M} microbatches`);
    const mb = B / M;
    const xs = jnp.reshape(x, [M, mb, ...rest]);
    // inputs for every tick: the microbatches, then zeros while the last ones drain through the stages
    const feed = S > 1 ? jnp.concatenate([xs, jnp.zeros([S - 1, mb, ...rest], { dtype: x.dtype })], 0) : xs;
    const me = lax.axisIndex(pipe);
    const first = jnp.equal(me, 0),
      last = jnp.equal(me, S - 1);
    const [, ys] = lax.scan(
      (carry: Array, xt: Array): [Array, Array] => {
        const y = stageFn(p, jnp.where(first, xt, carry));
        if (y.shape.join() !== carry.shape.join() || y.dtype !== carry.dtype)
          throw new Error(
            `${fn}: stageFn must keep the microbatch's shape and dtype (${carry.dtype}[${carry.shape.join(",")}]), returned ${y.dtype}[${y.shape.join(",")}]`,
          );
        // each stage hands its result to the next one for the next tick
        return [S > 1 ? lax.ppermute(y, pipe, fwd) : y, y];
      },
      jnp.zeros([mb, ...rest], { dtype: x.dtype }),
      feed,
    );
    // the last stage finished microbatch m at tick m + S - 1
    const out = S > 1 ? lax.sliceInDim(ys, S - 1, S - 1 + M, 1, 0) : ys;
    const mine = jnp.where(last, out, jnp.zeros(out.shape, { dtype: out.dtype }));
    return jnp.reshape(S > 1 ? lax.psum(mine, pipe) : mine, [B, ...rest]);
  };
  const xSpec = dataAxis === null ? P() : P(dataAxis);
  const pSpec = opts.paramSpecs ?? (perData ? P(pipe, dataAxis) : P(pipe));
  const checkVma = opts.checkVma ?? true;
  const gpipe = shardMap(body, { mesh, inSpecs: [pSpec, xSpec], outSpecs: xSpec, checkVma });
  if (schedule === "gpipe") return gpipe;
  // 1F1B: the forward is GPipe's without its residuals; the backward is its own device program (a custom VJP of the
  // whole shardMap, so nothing inside the per-device bodies is differentiated from outside)
  const backward = shardMap(
    (stacked: SP, x: Array, ct: Array): [SP, Array] => {
      const [ls, def] = flatten(stacked);
      const p = unflatten(def, (ls as Array[]).map(localStage)) as SP;
      const [B, ...rest] = x.shape;
      const mb = B / M;
      const [dp, dxs] = oneFOneB(p, jnp.reshape(x, [M, mb, ...rest]), jnp.reshape(ct, [M, mb, ...rest]));
      // only stage 0 produced dx; each data shard's parameter gradient is its share of the batch's (summed over the
      // data axis, or kept per copy with perDataParams)
      const dx = jnp.reshape(S > 1 ? lax.psum(dxs, pipe) : dxs, [B, ...rest]);
      const [dl] = flatten(dp);
      const dStacked = unflatten(
        def,
        (dl as Array[]).map((g) =>
          perData ? jnp.expandDims(g, [0, 1]) : jnp.expandDims(dataAxis === null ? g : lax.psum(g, dataAxis), 0),
        ),
      ) as SP;
      return [dStacked, dx];
    },
    { mesh, inSpecs: [pSpec, xSpec, xSpec], outSpecs: [pSpec, xSpec], checkVma },
  );
  const run = customVjp((stacked: SP, x: Array): Array => gpipe(stacked, x));
  run.defvjp(
    (stacked: SP, x: Array): [Array, [SP, Array]] => [gpipe(stacked, x), [stacked, x]],
    ([stacked, x]: [SP, Array], ct: Array) => backward(stacked, x, ct) as never,
  );
  return (stacked, x) => run(stacked, x);
}
