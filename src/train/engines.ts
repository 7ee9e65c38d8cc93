/**
 * @file The training job's parallel engines on the GPT: ZeRO stages 1-3 (the GPT as a layered loss over
 * { outer, layers }), the GPipe pipeline of its blocks over a 'pipe' mesh axis, and sharded loading of its batches.
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import * as optim from "../optim/index.js";
import { checkpoint } from "../transforms/checkpoint.js";
import { valueAndGrad } from "../transforms/api.js";
import { flatten, unflatten } from "../core/tree.js";
import type { Mesh } from "../parallel/mesh.js";
import { P, type PartitionSpec, PartitionSpecImpl } from "../parallel/sharding.js";
import type { SpecTree } from "../parallel/shard-map.js";
import { devicePut } from "../parallel/device-put.js";
import {
  type GptConfig,
  type GptLayer,
  type GptParams,
  type GptShardingSpec,
  type GptStep,
  type RematPolicy,
  REMAT_POLICIES,
  REPLICATED_SPEC,
  gptBlock,
  gptParamSpecs,
  gptEmbed,
  gptLogits,
  gptMaskedXent,
} from "../models/gpt.js";
import type { LayeredLoss, LayeredParams } from "../models/zero.js";
import { makePipeline } from "../models/pipeline.js";
import { type ShardedBatches, makeShardedBatches } from "../models/data-loader.js";
import type { AdditionTask } from "./addition.js";

/** The GPT's parameters outside the layer stack. */
export type GptOuter = Pick<GptParams, "wte" | "wpe" | "lnfg" | "lnfb" | "head">;
/** The GPT's parameters as ZeRO's layered loss takes them: the outer ones and one tree per layer. */
export type LayeredGpt = LayeredParams<GptOuter, GptLayer>;
/** One batch of the job: tokens, targets [b, s] int32 and the loss mask [b, s] float32. */
export interface JobBatch extends Record<string, Array> {
  tokens: Array;
  targets: Array;
  mask: Array;
}

/** GptParams (layers stacked on dim 0) as { outer, layers } with one tree per layer. */
export function toLayered(p: GptParams): LayeredGpt {
  const { blocks, ...rest } = p;
  const outer: GptOuter = { wte: rest.wte, wpe: rest.wpe, lnfg: rest.lnfg, lnfb: rest.lnfb };
  if (rest.head) outer.head = rest.head;
  const L = blocks.ln1g.shape[0];
  const [ls, def] = flatten(blocks);
  const layers = [...globalThis.Array(L).keys()].map(
    (i) =>
      unflatten(
        def,
        (ls as Array[]).map((x) => jnp.squeeze(lax.sliceInDim(x, i, i + 1, 1, 0), 0)),
      ) as GptLayer,
  );
  return { outer, layers };
}

/** The inverse of toLayered: the layers stacked back on dim 0. */
export function fromLayered(l: LayeredGpt): GptParams {
  const flats = l.layers.map((x) => flatten(x));
  const def = flats[0][1];
  const blocks = unflatten(
    def,
    flats[0][0].map((_, j) => jnp.stack(flats.map(([ls]) => ls[j] as Array))),
  ) as GptParams["blocks"];
  const p: GptParams = { wte: l.outer.wte, wpe: l.outer.wpe, blocks, lnfg: l.outer.lnfg, lnfb: l.outer.lnfb };
  if (l.outer.head) p.head = l.outer.head;
  return p;
}

/** The stacked blocks ([L, ...] leaves) viewed per pipeline stage: [S, L/S, ...], stage s holding its L/S layers. */
export const stageView = (blocks: GptLayer, S: number): GptLayer => {
  const [ls, def] = flatten(blocks);
  return unflatten(
    def,
    (ls as Array[]).map((x) => jnp.reshape(x, [S, x.shape[0] / S, ...x.shape.slice(1)])),
  ) as GptLayer;
};

/**
 * The GPT loss as a LayeredLoss (ZeRO stage 3 gathers each layer's parameters just before the layer runs); with `tp`
 * the blocks are Megatron-sharded over that axis with gradients taken inside the body (ZeRO x tensor parallel).
 */
export function gptLayeredLoss(
  cfg: GptConfig,
  tp: string | null = null,
): LayeredLoss<GptOuter, GptLayer, [Array, Array, Array]> {
  return {
    embed: (outer, tokens) => gptEmbed(cfg, outer, tokens),
    layer: (p, h) => gptBlock(p, h, tp, tp !== null),
    head: (outer, h, _tokens, targets, mask) => gptMaskedXent(cfg, gptLogits(outer, h), targets, mask),
  };
}

/** Options of the pipelined GPT losses. */
export interface GptPipelineOptions {
  microbatches: number;
  remat?: RematPolicy;
  spec?: GptShardingSpec;
  schedule?: "gpipe" | "1f1b";
}

/**
 * What every pipelined GPT loss runs per stage: its L/S blocks in a scan, each under the remat policy, Megatron-
 * sharded over 'model' when the mesh has one (tp); and the stacked blocks' specs [S, L/S, ...] (stage dim over
 * 'pipe', the rest as the blocks' specs, the layer dim unsplit).
 */
export function gptPipelineStage(
  cfg: GptConfig,
  mesh: Mesh,
  opts: GptPipelineOptions,
): { tp: "model" | null; stage: (p: GptLayer, h: Array) => Array; paramSpecs: SpecTree } {
  // pipeline x tensor parallelism: each stage's blocks are Megatron-sharded over 'model' (psum inside the block)
  const tp = mesh.axisNames.includes("model") && mesh.axisSize("model") > 1 ? "model" : null;
  const policy = REMAT_POLICIES[opts.remat ?? "none"];
  // 1F1B differentiates each stage inside its backward program: the tensor collectives need explicit gradients there
  const body = (h: Array, p: GptLayer): Array => gptBlock(p, h, tp, opts.schedule === "1f1b");
  const one = policy === null ? body : checkpoint(body, { policy });
  const stage = (p: GptLayer, h: Array): Array =>
    lax.scan((x: Array, q: GptLayer): [Array, null] => [one(x, q), null], h, p)[0];
  const blockSpecs = (gptParamSpecs(cfg, opts.spec ?? REPLICATED_SPEC) as { blocks: SpecTree }).blocks;
  const [bl, bdef] = flatten(blockSpecs, (x) => x instanceof PartitionSpecImpl);
  const paramSpecs = unflatten(
    bdef,
    (bl as PartitionSpec[]).map((ps) => P("pipe", ...ps.entries)),
  ) as SpecTree;
  return { tp, stage, paramSpecs };
}

/**
 * The GPT loss with its blocks run by the GPipe pipeline over the mesh's 'pipe' axis (the batch split over 'data',
 * each pipeline running its share in `microbatches` microbatches); embeddings and head run outside the pipeline.
 * Stage s holds layers s * L/S ... (s + 1) * L/S - 1 (the stacked blocks reshaped to [S, L/S, ...]).
 */
export function makeGptPipelineLoss(
  cfg: GptConfig,
  mesh: Mesh,
  opts: GptPipelineOptions,
): (params: GptParams, tokens: Array, targets: Array, mask: Array) => Array {
  const S = mesh.axisSize("pipe");
  const { tp, stage, paramSpecs } = gptPipelineStage(cfg, mesh, opts);
  const run = makePipeline(stage, mesh, {
    pipeAxis: "pipe",
    microbatches: opts.microbatches,
    dataAxis: "data",
    paramSpecs,
    checkVma: tp === null,
    schedule: opts.schedule ?? "gpipe",
  });
  return (params, tokens, targets, mask) => {
    const stacked = stageView(params.blocks, S);
    const h = run(stacked, gptEmbed(cfg, params, tokens));
    return gptMaskedXent(cfg, gptLogits(params, h), targets, mask);
  };
}

/** A pipelined training step (value and gradient of the pipelined loss, then the optimizer update); jit it. */
export function makeGptPipelineStep(
  cfg: GptConfig,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  opts: GptPipelineOptions,
): GptStep {
  const loss = makeGptPipelineLoss(cfg, mesh, opts);
  return (params, state, tokens, targets, mask) => {
    const [l, g] = valueAndGrad(loss)(params, tokens, targets, mask) as [Array, GptParams];
    const [updates, next] = opt.update(g, state, params);
    return [l, optim.applyUpdates(params, updates) as GptParams, next];
  };
}

/**
 * The job's batches, sharded over the mesh's 'data' axis: each block of rows is built only for the devices that hold
 * it (from the step's problems, a pure function of seed and step); next() returns step firstStep, firstStep + 1, ...
 */
export function makeJobBatches(
  task: AdditionTask,
  mesh: Mesh,
  batchSize: number,
  firstStep: number,
): ShardedBatches<JobBatch> {
  return makeShardedBatches<JobBatch>(
    (k, [a, b]) => task.batch(task.trainProblems(firstStep + k, batchSize).slice(a, b)),
    mesh,
    { globalBatch: batchSize, spec: P("data") },
  );
}

/**
 * The pipelined GPT's parameter specs: gptParamSpecs with each block leaf's layer dim split over 'pipe' (contiguous
 * chunks of L/S layers, so the pipeline's [S, L/S, ...] view of a block leaf is already where its stage runs).
 */
export function gptPipelineParamSpecs(cfg: GptConfig, spec: GptShardingSpec): SpecTree {
  const all = gptParamSpecs(cfg, spec) as Record<string, unknown> & { blocks: Record<string, PartitionSpec> };
  const blocks = Object.fromEntries(
    Object.entries(all.blocks).map(([k, ps]) => [k, P("pipe", ...ps.entries.slice(1))]),
  );
  return { ...all, blocks } as unknown as SpecTree;
}

/**
 * `after` (a step's outputs, same structure as `before`) with every leaf given the sharding of `before`'s leaf: a
 * jitted step whose body is manual SPMD code (a shardMap) returns unplaced arrays, which would otherwise leave the
 * parameters and the optimizer state on one device from the first step on.
 */
export function keepShardings<T>(before: T, after: T): T {
  const [bl] = flatten(before);
  const [al, def] = flatten(after);
  if (bl.length !== al.length)
    throw new Error(`keepShardings: ${al.length} leaves after the step, ${bl.length} before`);
  return unflatten(
    def,
    (al as Array[]).map((a, i) => {
      const s = (bl[i] as Array).sharding;
      return (a.sharding as { toString(): string }).toString() === String(s) ? a : devicePut(a, s as never);
    }),
  ) as T;
}

/** The layered GPT's tensor-parallel specs: the GPT's specs with each layer's leading (layer) dim dropped. */
export function layeredSpecs(cfg: GptConfig, spec: GptShardingSpec): SpecTree {
  const all = gptParamSpecs(cfg, spec) as Record<string, unknown> & { blocks: Record<string, PartitionSpec> };
  const { blocks, ...outer } = all;
  const layer = Object.fromEntries(Object.entries(blocks).map(([k, ps]) => [k, P(...ps.entries.slice(1))]));
  return { outer, layers: [...globalThis.Array(cfg.layers).keys()].map(() => layer) } as unknown as SpecTree;
}

/** Positions of per-parameter runs in an optimizer state's leaves: runs of consecutive leaves with every shape. */
function shapeRuns(leaves: readonly Array[], shapes: readonly (readonly number[])[]): number[] {
  const starts: number[] = [];
  for (let j = 0; j + shapes.length <= leaves.length;) {
    if (shapes.every((s, i) => leaves[j + i].shape.join() === s.join())) {
      starts.push(j);
      j += shapes.length;
    } else j++;
  }
  return starts;
}

/**
 * An optimizer state over one parameter structure re-expressed over another (`template`: opt.init of the other
 * structure): every per-parameter subtree converted with `convert`, the other leaves (counts) kept in order.
 */
export function convertOptState<A, B>(
  state: optim.OptState,
  from: A,
  template: optim.OptState,
  to: B,
  convert: (a: A) => B,
): optim.OptState {
  const [sl] = flatten(state);
  const [tl, tdef] = flatten(template);
  const [fl, fdef] = flatten(from);
  const [toL] = flatten(to);
  const fs = (fl as Array[]).map((x) => [...x.shape]),
    ts = (toL as Array[]).map((x) => [...x.shape]);
  const src = shapeRuns(sl as Array[], fs),
    dst = shapeRuns(tl as Array[], ts);
  if (src.length !== dst.length)
    throw new Error(`train: optimizer states with ${src.length} and ${dst.length} per-parameter trees do not convert`);
  const out = [...(tl as Array[])];
  const inRun = (starts: number[], n: number) => (j: number) => starts.some((s) => j >= s && j < s + n);
  const srcOther = (sl as Array[]).filter((_, j) => !inRun(src, fs.length)(j));
  const dstOther = out.map((_, j) => j).filter((j) => !inRun(dst, ts.length)(j));
  if (srcOther.length !== dstOther.length) throw new Error(`train: optimizer states with different counters`);
  dstOther.forEach((j, q) => (out[j] = srcOther[q]));
  src.forEach((s, r) => {
    const conv = flatten(convert(unflatten(fdef, (sl as Array[]).slice(s, s + fs.length)) as A))[0] as Array[];
    conv.forEach((x, i) => (out[dst[r] + i] = x));
  });
  return unflatten(tdef, out) as optim.OptState;
}

/** A (full-shaped) optimizer state over the layered GPT as one over the stacked GPT (the checkpoint's layout). */
export function optStateToStacked(
  opt: optim.GradientTransformation,
  state: optim.OptState,
  layered: LayeredGpt,
): optim.OptState {
  const stacked = fromLayered(layered);
  return convertOptState(state, layered, opt.init(stacked), stacked, fromLayered);
}

/** The inverse of optStateToStacked. */
export function optStateToLayered(
  opt: optim.GradientTransformation,
  state: optim.OptState,
  stacked: GptParams,
): optim.OptState {
  const layered = toLayered(stacked);
  return convertOptState(state, stacked, opt.init(layered), layered, toLayered);
}
