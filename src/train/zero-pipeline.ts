/**
 * @file ZeRO stages 1-3 x pipeline parallelism for the GPT on a pipe x data (x model of size 1) mesh: each stage's
 * optimizer state, gradients (2-3) and blocks (3) are sharded over 'data' within the stage; outer leaves over both axes.
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import * as optim from "../optim/index.js";
import { jit, valueAndGrad } from "../transforms/api.js";
import { checkpoint } from "../transforms/checkpoint.js";
import { type TreeDef, flatten, map as treeMap, unflatten } from "../core/tree.js";
import type { Mesh } from "../parallel/mesh.js";
import { P } from "../parallel/sharding.js";
import { type SpecTree, shardMap } from "../parallel/shard-map.js";
import { withShardedUpdate } from "../optim/base.js";
import {
  type GptConfig,
  type GptLayer,
  type GptParams,
  type RematPolicy,
  REMAT_POLICIES,
  gptBlock,
  gptEmbed,
  gptLogits,
  gptMaskedXent,
} from "../models/gpt.js";
import { makePipeline } from "../models/pipeline.js";
import { flatPad, packLocal, packRows, unflatPad, unpackLocal, unpackRows } from "../models/zero.js";
import {
  type ZeroTensorLayout,
  type ZeroTensorState,
  zeroTensorContext,
  zeroTensorShardState,
} from "../models/zero-tensor.js";
import type { GptOuter } from "./engines.js";

/** The pipelined ZeRO options. */
export interface ZeroPipelineOptions {
  /**
   * 1: optimizer state sharded over 'data' within each stage; 2: + gradients reduce-scattered instead of summed;
   * 3: + parameters sharded too (each stage's blocks all-gathered over 'data' before its schedule runs).
   */
  stage: 1 | 2 | 3;
  microbatches: number;
  schedule?: "gpipe" | "1f1b";
  remat?: RematPolicy;
}

/**
 * Lays out the GPT's parameters and optimizer state for ZeRO `stage` x pipeline on a mesh with axes 'pipe' and
 * 'data': the blocks (stacked [L, ...]) split over 'pipe' on dim 0, so each stage's devices hold only its layers;
 * every optimizer-state leaf a flat vector split over ('pipe', 'data') (a block leaf's section s is stage s's layers,
 * flattened and padded; an outer leaf is split over all S x n devices). The layout is zero-tensor.ts's with the pipe
 * axis as the "tensor" axis: its conversions (zeroTensorFullOptState, zeroTensorRestore) apply unchanged.
 */
export function zeroPipelineShardState(
  params: GptParams,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  stage: 1 | 2 | 3,
): ZeroTensorState<GptParams> {
  const fn = "zeroPipelineShardState";
  if (!mesh.axisNames.includes("pipe") || !mesh.axisNames.includes("data"))
    throw new Error(`${fn}: the mesh ${mesh.toString()} needs axes 'pipe' and 'data'`);
  if (stage !== 1 && stage !== 2 && stage !== 3)
    throw new RangeError(`${fn}: stage must be 1, 2 or 3, got ${String(stage)}`);
  const { blocks, ...outer } = params;
  const tensorSpecs = {
    ...Object.fromEntries(Object.keys(outer).map((k) => [k, P()])),
    blocks: Object.fromEntries(Object.keys(blocks).map((k) => [k, P("pipe")])),
  } as unknown as SpecTree;
  return zeroTensorShardState(params, opt, mesh, { stage, dataAxis: "data", tensorAxis: "pipe", tensorSpecs });
}

/** tree.map over one tree of arrays, keeping its type. */
export const mapLeaves = <T>(t: T, f: (x: Array) => Array): T => treeMap(f as (...xs: never[]) => unknown, t) as T;

/**
 * A ZeRO x pipeline training step (jitted): the pipelined loss is differentiated with respect to one copy of each
 * stage's blocks per data shard ([S, n, L/S, ...] over ('pipe', 'data')), so each device's block gradient comes back
 * unreduced; then one shardMap reduces it over 'data' (stage 1: all-reduce and keep this device's slice; stage 2:
 * reduce-scatter), updates this device's slice of every parameter (the outer parameters' gradients, computed outside
 * the pipeline, are sliced over both axes), and all-gathers the updated slices back: blocks over 'data' within the
 * stage, outer leaves over ('pipe', 'data'). Global norms in the optimizer psum over both axes (slices are disjoint).
 * Stage 3 keeps every parameter as its flat slice (the optimizer state's layout): a first shardMap all-gathers each
 * stage's blocks over 'data' into that stage's copies (and the outer leaves over both axes) just before the schedule,
 * which holds them until its backward pass; the block gradients are reduce-scattered as at stage 2, and the updated
 * slices stay where they are (no gather back).
 */
export function makeGptZeroPipelineStep(
  cfg: GptConfig,
  opt: optim.GradientTransformation,
  L: ZeroTensorLayout,
  opts: ZeroPipelineOptions,
): (
  state: ZeroTensorState<GptParams>,
  tokens: Array,
  targets: Array,
  mask: Array,
) => [Array, ZeroTensorState<GptParams>] {
  const fn = "makeGptZeroPipelineStep";
  const { mesh, n, t: S, stage, shardLen, shapes, localShapes, paramDef } = L;
  if (L.tensorAxis !== "pipe" || L.dataAxis !== "data" || stage !== opts.stage)
    throw new Error(`${fn}: the layout is not zeroPipelineShardState's for stage ${opts.stage}`);
  const policy = REMAT_POLICIES[opts.remat ?? "none"];
  const body = (h: Array, p: GptLayer): Array => gptBlock(p, h);
  const one = policy === null ? body : checkpoint(body, { policy });
  const stageFn = (p: GptLayer, h: Array): Array =>
    lax.scan((x: Array, q: GptLayer): [Array, null] => [one(x, q), null], h, p)[0];
  const run = makePipeline(stageFn, mesh, {
    pipeAxis: "pipe",
    dataAxis: "data",
    microbatches: opts.microbatches,
    schedule: opts.schedule ?? "gpipe",
    perDataParams: true,
  });
  const loss = (outer: GptOuter, copies: GptLayer, tokens: Array, targets: Array, mask: Array): Array =>
    gptMaskedXent(cfg, gptLogits(outer, run(copies, gptEmbed(cfg, outer, tokens))), targets, mask);

  // group 0: block leaves (split over 'pipe' on dim 0; ZeRO over 'data'); group 1: outer leaves (over both axes)
  const groupOf = (i: number) => (L.tpDim[i] === null ? 1 : 0);
  const gAxes: (string | string[])[] = ["data", ["pipe", "data"]];
  const gSize = [n, S * n];
  const gIndex = (g: number): Array =>
    g === 0 ? lax.axisIndex("data") : jnp.add(jnp.multiply(lax.axisIndex("pipe"), n), lax.axisIndex("data"));
  const groups = [0, 1].map((g) => shapes.map((_, i) => i).filter((i) => groupOf(i) === g));
  /** Each group's leaves (flatten positions) as this device's slices: `reduce` the packed vector, or slice it. */
  const slices = (xs: Array[], reduceBlocks: boolean): Array[] => {
    const out: Array[] = new globalThis.Array<Array>(xs.length);
    groups.forEach((at, g) => {
      if (!at.length) return;
      const ks = at.map((i) => shardLen[i]);
      const K = ks.reduce((a, b) => a + b, 0);
      const G = packRows(
        at.map((i) => flatPad(xs[i], shardLen[i] * gSize[g])),
        ks,
        gSize[g],
      );
      const local =
        g === 0 && reduceBlocks && stage >= 2
          ? lax.psumScatter(G, "data", { tiled: true })
          : lax.dynamicSliceInDim(g === 0 && reduceBlocks ? lax.psum(G, "data") : G, jnp.multiply(gIndex(g), K), K, 0);
      unpackLocal(local, ks).forEach((x, q) => (out[at[q]] = x));
    });
    return out;
  };
  const gatherBack = (xs: Array[]): Array[] => {
    const out: Array[] = new globalThis.Array<Array>(xs.length);
    groups.forEach((at, g) => {
      if (!at.length) return;
      const ks = at.map((i) => shardLen[i]);
      const all = unpackRows(lax.allGather(packLocal(at.map((i) => xs[i])), gAxes[g], { tiled: true }), ks, gSize[g]);
      all.forEach((f, q) => (out[at[q]] = unflatPad(f, localShapes[at[q]])));
    });
    return out;
  };
  const all = L.paramSpecs as unknown as Record<string, unknown> & { blocks: Record<string, unknown> };
  const copySpecs = Object.fromEntries(Object.keys(all.blocks).map((k) => [k, P("pipe", "data")]));
  const outerSpecs = Object.fromEntries(
    Object.keys(all)
      .filter((k) => k !== "blocks")
      .map((k) => [k, P()]),
  );
  const update = shardMap(
    (p: GptParams, s: optim.OptState, gb: GptLayer, go: GptOuter): [GptParams, optim.OptState] => {
      // this device's share of its stage's block gradient ([1, 1, L/S, ...]) and the full outer gradients
      const g = { ...go, blocks: mapLeaves(gb, (x) => jnp.squeeze(x, [0, 1])) } as GptParams;
      const [gl, gdef] = flatten(g);
      if (!gdef.equals(paramDef)) throw new Error(`${fn}: gradient tree ${gdef.toString()} is not the parameters'`);
      const gs = slices(gl as Array[], true);
      // stage 3: the parameters already are this device's slices
      const ps = stage === 3 ? (flatten(p)[0] as Array[]) : slices(flatten(p)[0] as Array[], false);
      const [u, next] = withShardedUpdate(zeroTensorContext(L, true), () =>
        opt.update(unflatten(paramDef, gs), s, unflatten(paramDef, ps)),
      );
      const np = flatten(optim.applyUpdates(unflatten(paramDef, ps), u))[0] as Array[];
      return [unflatten(paramDef, stage === 3 ? np : gatherBack(np)) as GptParams, next];
    },
    {
      mesh,
      inSpecs: [L.paramSpecs, L.optSpecs, copySpecs as SpecTree, outerSpecs as SpecTree],
      outSpecs: [L.paramSpecs, L.optSpecs],
      checkVma: false, // the outer parameters are equal over both axes by construction
    },
  );
  return zeroPipelineJitStep<ZeroTensorState<GptParams>>({
    fn,
    mesh,
    layout: L,
    paramSpecs: L.paramSpecs as SpecTree,
    copySpecs: copySpecs as SpecTree,
    outerSpecs: outerSpecs as SpecTree,
    paramDef,
    gatherBack,
    stage,
    S,
    n,
    loss,
    update,
  });
}

/** What zeroPipelineJitStep needs from a ZeRO x pipeline engine (zero-pipeline.ts, zero-pipeline-tensor.ts). */
export interface ZeroPipelineStepParts<St extends { layout: unknown }> {
  fn: string;
  mesh: Mesh;
  layout: St["layout"];
  paramSpecs: SpecTree;
  /** Specs of the per-data-shard copies of the stage blocks ([S, n, L/S, ...]). */
  copySpecs: SpecTree;
  outerSpecs: SpecTree;
  paramDef: TreeDef;
  /** This device's updated flat slices -> the full leaves (stages 1-2) or the gathered blocks (stage 3). */
  gatherBack: (xs: Array[]) => Array[];
  stage: number;
  S: number;
  n: number;
  loss: (outer: GptOuter, copies: GptLayer, tokens: Array, targets: Array, mask: Array) => Array;
  update: (p: GptParams, s: optim.OptState, gb: GptLayer, go: GptOuter) => [GptParams, optim.OptState];
}

/**
 * The jitted step both ZeRO x pipeline engines share: the copies of each stage's blocks (stage 3: all-gathered from the
 * flat slices; else the blocks broadcast per data shard, so each copy's gradient is that shard's, unreduced), the
 * gradient of the pipelined loss, and the engine's sharded update.
 */
export function zeroPipelineJitStep<St extends { params: GptParams; optState: optim.OptState; layout: unknown }>(
  o: ZeroPipelineStepParts<St>,
): (state: St, tokens: Array, targets: Array, mask: Array) => [Array, St] {
  const { fn, mesh, layout, paramDef, gatherBack, stage, S, n, loss, update } = o;
  // stage 3: this device's flat slices -> its stage's blocks as its copy [1, 1, L/S, ...] and the full outer leaves
  const gather = shardMap(
    (p: GptParams): [GptLayer, GptOuter] => {
      const { blocks, ...outer } = unflatten(paramDef, gatherBack(flatten(p)[0] as Array[])) as GptParams;
      return [mapLeaves(blocks as unknown as GptLayer, (x) => jnp.expandDims(x, [0, 1])), outer];
    },
    { mesh, inSpecs: [o.paramSpecs], outSpecs: [o.copySpecs, o.outerSpecs], checkVma: false },
  );
  const step = jit((params: GptParams, s: optim.OptState, tokens: Array, targets: Array, mask: Array) => {
    const { blocks, ...rest } = params;
    const [copies, outer] =
      stage === 3
        ? (gather(params) as [GptLayer, GptOuter])
        : [
            mapLeaves(blocks as unknown as GptLayer, (x) => {
              const st = [S, x.shape[0] / S, ...x.shape.slice(1)];
              return jnp.broadcastTo(jnp.expandDims(jnp.reshape(x, st), 1), [S, n, ...st.slice(1)]);
            }),
            rest as GptOuter,
          ];
    const [l, [go, gb]] = valueAndGrad(loss, { argnums: [0, 1] })(outer, copies, tokens, targets, mask) as [
      Array,
      [GptOuter, GptLayer],
    ];
    const [np, ns] = update(params, s, gb, go);
    return [l, np, ns] as [Array, GptParams, optim.OptState];
  });
  return (state, tokens, targets, mask) => {
    if (state.layout !== layout) throw new Error(`${fn}: the state was laid out for another layout; use this step's`);
    const [l, p, s] = step(state.params, state.optState, tokens, targets, mask);
    return [l, { ...state, params: p, optState: s }];
  };
}
