/**
 * @file ZeRO stages 1-3 x pipeline parallelism for the GPT on a pipe x data mesh: zero-pipeline-tensor.ts's engine
 * without tensor parallelism (T = 1): each stage's blocks sharded over 'data' within the stage; outer leaves over both.
 */
import { type Array } from "../core/array.js";
import * as optim from "../optim/index.js";
import type { Mesh } from "../parallel/mesh.js";
import type { GptConfig, GptParams } from "../models/gpt.js";
import {
  type ZeroPipelineOptions,
  type ZeroPipelineTensorLayout,
  type ZeroPipelineTensorState,
  zeroPipelineLayoutState,
  zeroPipelineStep,
} from "./zero-pipeline-tensor.js";

export { type ZeroPipelineOptions, mapLeaves } from "./zero-pipeline-tensor.js";

/**
 * Lays out the GPT's parameters and optimizer state for ZeRO `stage` x pipeline on a mesh with axes 'pipe' and
 * 'data' (a 'model' axis, if any, must have size 1: it is not used): the blocks (stacked [L, ...]) split over 'pipe'
 * on dim 0, so each stage's devices hold only its layers; every optimizer-state leaf a flat vector split over
 * ('pipe', 'data') (a block leaf's section s is stage s's layers, each split over 'data'; an outer leaf is split over
 * all S x n devices). Its conversions are zero-pipeline-tensor.ts's (zeroPipelineTensorGatherParams, ...FullOptState,
 * ...Restore).
 */
export function zeroPipelineShardState(
  params: GptParams,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  stage: 1 | 2 | 3,
): ZeroPipelineTensorState {
  const fn = "zeroPipelineShardState";
  if (mesh.axisNames.includes("model") && mesh.axisSize("model") !== 1)
    throw new Error(
      `${fn}: the mesh ${mesh.toString()} has a 'model' axis of size ${mesh.axisSize("model")}; use zeroPipelineTensorShardState`,
    );
  return zeroPipelineLayoutState(fn, params, opt, mesh, null, stage);
}

/**
 * A ZeRO x pipeline training step (jitted): makeGptZeroPipelineTensorStep's with one tensor rank. The pipelined loss
 * is differentiated with respect to one copy of each stage's blocks per data shard, whose gradients are reduced over
 * 'data' (stage 1: all-reduced, own slice kept; 2: reduce-scattered) into the sharded update; stage 3 gathers each
 * layer's parameters inside the stage's layer scan (opts.gather "layer", the default) or the stage's blocks once per
 * step ("stage").
 */
export function makeGptZeroPipelineStep(
  cfg: GptConfig,
  opt: optim.GradientTransformation,
  L: ZeroPipelineTensorLayout,
  opts: ZeroPipelineOptions,
): (state: ZeroPipelineTensorState, tokens: Array, targets: Array, mask: Array) => [Array, ZeroPipelineTensorState] {
  const fn = "makeGptZeroPipelineStep";
  if (L.T !== 1)
    throw new Error(`${fn}: the layout is tensor-parallel (T = ${L.T}); use makeGptZeroPipelineTensorStep`);
  return zeroPipelineStep(fn, cfg, opt, L, opts);
}
