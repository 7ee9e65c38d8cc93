/**
 * @file The ZeRO stages 1-3 x pipeline (x tensor parallel) engine for the GPT on a pipe x data (x model) mesh: each
 * stage's (Megatron) blocks ZeRO-sharded over 'data', replicated block leaves over (model, data), outer leaves over all.
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import * as optim from "../optim/index.js";
import { jit, valueAndGrad } from "../transforms/api.js";
import { checkpoint } from "../transforms/checkpoint.js";
import { flatten, map as treeMap, unflatten, type TreeDef } from "../core/tree.js";
import type { Mesh } from "../parallel/mesh.js";
import { P, NamedSharding, type PartitionSpec, PartitionSpecImpl } from "../parallel/sharding.js";
import { devicePut } from "../parallel/device-put.js";
import { type SpecTree, shardMap } from "../parallel/shard-map.js";
import { withShardedUpdate } from "../optim/base.js";
import {
  type GptConfig,
  type GptLayer,
  type GptParams,
  type GptShardingSpec,
  type RematPolicy,
  REMAT_POLICIES,
  gptBlock,
  gptEmbed,
  gptLogits,
  gptMaskedXent,
  gptParamSpecs,
} from "../models/gpt.js";
import { makePipeline } from "../models/pipeline.js";
import { checkShardable, flatPad, packLocal, packRows, unflatPad, unpackLocal, unpackRows } from "../models/zero.js";
import {
  gatherZeroParams,
  mapOptSlots,
  optStateSlots,
  placeZeroOptState,
  placeZeroParams,
  zeroAxesContext,
} from "../models/zero-tensor.js";
import { type GptOuter, stageView } from "./engines.js";

/** The pipelined ZeRO options. */
export interface ZeroPipelineOptions {
  /**
   * 1: optimizer state sharded over 'data' within each stage; 2: + gradients reduce-scattered instead of summed;
   * 3: + parameters sharded too (gathered over 'data' before use).
   */
  stage: 1 | 2 | 3;
  microbatches: number;
  schedule?: "gpipe" | "1f1b";
  remat?: RematPolicy;
  /**
   * Stage 3 only: "layer" (default) all-gathers layer l's parameters inside the stage's layer scan just before layer l
   * runs and again in the backward pass (gather + layer rematerialized), its gradient reduce-scattered per layer, so a
   * device holds one gathered layer at a time; "stage" gathers all the stage's blocks once per step, before the schedule.
   */
  gather?: "layer" | "stage";
}

/** tree.map over one tree of arrays, keeping its type. */
export const mapLeaves = <T>(t: T, f: (x: Array) => Array): T => treeMap(f as (...xs: never[]) => unknown, t) as T;

/**
 * Where each leaf lives: a flat [S * T * n * k] vector split over ('pipe', 'model', 'data') (T = 1 and no 'model' in
 * the axes without tensor parallelism). Group 0 (a block leaf split over 'model' on tpDim): section s * T + m is stage
 * s's layers' model block m, split over 'data'; group 1 (a block leaf replicated over 'model'): section s is stage s's
 * layers, split over ('model', 'data'); group 2 (outer leaves): split over all S * T * n devices. Device (s, m, d)
 * always holds slice (s * T + m) * n + d. A block leaf's slice is per layer: [L/S, k / (L/S)], a 1/g part of each of
 * its stage's layers (g: the group's device count), so one layer gathers on its own.
 */
export interface ZeroPipelineTensorLayout {
  readonly stage: 1 | 2 | 3;
  readonly mesh: Mesh;
  readonly S: number;
  readonly T: number;
  readonly n: number;
  /** 'model' with tensor parallelism, else null (T = 1). */
  readonly tensorAxis: string | null;
  readonly paramDef: TreeDef;
  readonly shapes: readonly (readonly number[])[];
  /** Each leaf's block on one device before ZeRO: its stage's layers and model block (outer leaves: full). */
  readonly localShapes: readonly (readonly number[])[];
  readonly group: readonly (0 | 1 | 2)[];
  readonly tpDim: readonly (number | null)[];
  readonly shardLen: readonly number[];
  /** Stage 1-2: the blocks P('pipe', ...tensor spec), outer P(); stage 3: P(['pipe', ('model',) 'data']). */
  readonly paramSpecs: SpecTree;
  /** The copies the pipeline differentiates: [S, n, L/S, ...] over ('pipe', 'data', ...tensor spec). */
  readonly copySpecs: SpecTree;
  readonly optSpecs: SpecTree;
  readonly optSlots: readonly (number | null)[];
}

export interface ZeroPipelineTensorState {
  readonly params: GptParams;
  readonly optState: optim.OptState;
  readonly layout: ZeroPipelineTensorLayout;
}

type LayoutBase = Omit<ZeroPipelineTensorLayout, "optSpecs" | "optSlots">;

const isSpec = (x: unknown): boolean => x instanceof PartitionSpecImpl;
const size = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

/** Each group's mesh axes: 0 'data'; 1 (model, data); 2 (pipe, model, data) ('model' only when T > 1). */
function groupAxes(L: Pick<LayoutBase, "tensorAxis">): string[][] {
  const tp = L.tensorAxis === null ? [] : [L.tensorAxis];
  return [["data"], [...tp, "data"], ["pipe", ...tp, "data"]];
}
const groupSize = (L: Pick<LayoutBase, "S" | "T" | "n">): number[] => [L.n, L.T * L.n, L.S * L.T * L.n];

/** Leaf i's block on one device ([L/S, ...] or an outer leaf) as its group's [g * k] vector: device r's slice is r. */
function localFlat(L: LayoutBase, i: number, x: Array): Array {
  const g = groupSize(L)[L.group[i]],
    k = L.shardLen[i];
  if (L.group[i] === 2) return flatPad(x, g * k);
  // per layer: its g * kl padded elements, slice r of each layer to device r
  const per = L.localShapes[i][0],
    kl = k / per;
  const rows = jnp.reshape(x, [per, -1]);
  const m = rows.shape[1];
  const padded = m === g * kl ? rows : jnp.concatenate([rows, jnp.zeros([per, g * kl - m], { dtype: x.dtype })], 1);
  return jnp.reshape(jnp.transpose(jnp.reshape(padded, [per, g, kl]), [1, 0, 2]), [g * k]);
}
/** The inverse of localFlat. */
function localUnflat(L: LayoutBase, i: number, f: Array): Array {
  const sh = L.localShapes[i];
  if (L.group[i] === 2) return unflatPad(f, sh);
  const g = groupSize(L)[L.group[i]],
    per = sh[0],
    kl = L.shardLen[i] / per;
  const rows = jnp.reshape(jnp.transpose(jnp.reshape(f, [g, per, kl]), [1, 0, 2]), [per, g * kl]);
  const m = size(sh) / per;
  return jnp.reshape(m === g * kl ? rows : lax.sliceInDim(rows, 0, m, 1, 1), [...sh]);
}

/** Leaf i in its flat layout. */
function toFlat(L: LayoutBase, i: number, x: Array): Array {
  const { S, T } = L,
    g = L.group[i],
    d = L.tpDim[i];
  if (g === 2) return localFlat(L, i, x);
  const per = L.localShapes[i][0];
  const parts: Array[] = [];
  for (let s = 0; s < S; s++) {
    const st = lax.sliceInDim(x, s * per, (s + 1) * per, 1, 0);
    if (g === 1) parts.push(localFlat(L, i, st));
    else {
      const w = L.localShapes[i][d!];
      for (let m = 0; m < T; m++) parts.push(localFlat(L, i, lax.sliceInDim(st, m * w, (m + 1) * w, 1, d!)));
    }
  }
  return jnp.concatenate(parts, 0);
}

/** The inverse of toFlat: leaf i in its full shape. */
function fromFlat(L: LayoutBase, i: number, f: Array): Array {
  const { S, T } = L,
    g = L.group[i],
    d = L.tpDim[i];
  if (g === 2) return localUnflat(L, i, f);
  const rows = jnp.reshape(f, [g === 1 ? S : S * T, -1]);
  const row = (r: number) => localUnflat(L, i, jnp.squeeze(lax.sliceInDim(rows, r, r + 1, 1, 0), 0));
  const stages = [...globalThis.Array(S).keys()].map((s) =>
    g === 1
      ? row(s)
      : jnp.concatenate(
          [...globalThis.Array(T).keys()].map((m) => row(s * T + m)),
          d!,
        ),
  );
  return jnp.concatenate(stages, 0);
}

/** Optimizer context: slices are disjoint over every mesh axis, so partial sums psum over all of them. */
const context = (L: LayoutBase, inStep: boolean) =>
  zeroAxesContext(L.stage, "data", groupAxes(L)[2], L.paramDef, L.shapes, inStep);

/** Full parameters onto the layout. */
const placeParams = (L: ZeroPipelineTensorLayout, params: GptParams): GptParams =>
  placeZeroParams(L, params, (i, x) => toFlat(L, i, x));

/**
 * The layout and optimizer state on a mesh with axes 'pipe' and 'data' (and `tensorAxis`, with the blocks' tensor
 * specs `blockSpecs` naming only it; null: no tensor parallelism, T = 1).
 */
export function zeroPipelineLayoutState(
  fn: string,
  params: GptParams,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  blockSpecs: Record<string, PartitionSpec> | null,
  stage: 1 | 2 | 3,
): ZeroPipelineTensorState {
  const tensorAxis = blockSpecs === null ? null : "model";
  for (const a of ["pipe", "data", ...(tensorAxis === null ? [] : [tensorAxis])])
    if (!mesh.axisNames.includes(a))
      throw new Error(
        `${fn}: the mesh ${mesh.toString()} needs axes 'pipe' and 'data'${tensorAxis === null ? "" : " and 'model'"}`,
      );
  if (stage !== 1 && stage !== 2 && stage !== 3)
    throw new RangeError(`${fn}: stage must be 1, 2 or 3, got ${String(stage)}`);
  checkShardable(fn, opt, stage);
  const S = mesh.axisSize("pipe"),
    T = tensorAxis === null ? 1 : mesh.axisSize(tensorAxis),
    n = mesh.axisSize("data");
  const blockKeys = Object.keys(params.blocks);
  const outerKeys = Object.keys(params).filter((k) => k !== "blocks");
  const byKey = <V>(outer: V, block: (k: string) => V) => ({
    ...Object.fromEntries(outerKeys.map((k) => [k, outer])),
    blocks: Object.fromEntries(blockKeys.map((k) => [k, block(k)])),
  });
  // tensor specs per leaf, in the parameters' flatten order (blocks: the stacked [L, ...] specs; outer: replicated)
  const blockSpec = (k: string): PartitionSpec => blockSpecs?.[k] ?? P();
  const [leaves, paramDef] = flatten(params);
  const [tspecs] = flatten(byKey<PartitionSpec>(P(), blockSpec) as unknown as SpecTree, isSpec);
  const [isBlock] = flatten(byKey(false, () => true));
  const shapes = (leaves as Array[]).map((a) => [...a.shape]);
  const tpDim = shapes.map((sh, i) => {
    if (!isBlock[i] || T === 1) return null;
    let dim: number | null = null;
    (tspecs[i] as PartitionSpec).entries.forEach((e, d) => {
      const names = e === null || e === undefined ? [] : typeof e === "string" ? [e] : [...e];
      for (const nm of names)
        if (nm !== tensorAxis)
          throw new Error(
            `${fn}: a block leaf's spec names mesh axis ${JSON.stringify(nm)}; only 'model' may be named`,
          );
      if (names.length) {
        if (d === 0) throw new Error(`${fn}: a block leaf's layer dimension cannot be split over 'model'`);
        if (sh[d] % T !== 0) throw new Error(`${fn}: block leaf [${sh.join(",")}] dim ${d} does not divide over ${T}`);
        dim = d;
      }
    });
    return dim;
  });
  const group = shapes.map((_, i) => (!isBlock[i] ? 2 : tpDim[i] === null ? 1 : 0)) as (0 | 1 | 2)[];
  for (const [i, sh] of shapes.entries())
    if (isBlock[i] && sh[0] % S !== 0)
      throw new Error(`${fn}: ${sh[0]} layers do not split over ${S} pipeline stages (block leaf ${i})`);
  const localShapes = shapes.map((sh, i) =>
    group[i] === 2 ? sh : sh.map((v, d) => (d === 0 ? v / S : d === tpDim[i] ? v / T : v)),
  );
  const gSize = groupSize({ S, T, n });
  // block leaves: ceil(layer / g) elements of each of the stage's L/S layers; outer leaves: ceil(leaf / g)
  const shardLen = localShapes.map((sh, i) =>
    group[i] === 2 ? Math.ceil(size(sh) / gSize[2]) : sh[0] * Math.ceil(size(sh) / sh[0] / gSize[group[i]]),
  );
  const split = P(groupAxes({ tensorAxis })[2]);
  const paramSpecs = unflatten(
    paramDef,
    shapes.map((_, i) =>
      stage === 3 ? split : group[i] === 2 ? P() : P("pipe", ...(tspecs[i] as PartitionSpec).entries.slice(1)),
    ),
  ) as SpecTree;
  const copySpecs = Object.fromEntries(
    blockKeys.map((k) => [k, P("pipe", "data", ...(T > 1 ? blockSpec(k).entries : []))]),
  ) as unknown as SpecTree;
  const base: LayoutBase = {
    stage,
    mesh,
    S,
    T,
    n,
    tensorAxis: T > 1 ? tensorAxis : null,
    paramDef,
    shapes,
    localShapes,
    group,
    tpDim,
    shardLen,
    paramSpecs,
    copySpecs,
  };
  const flat = unflatten(
    paramDef,
    (leaves as Array[]).map((x, i) => toFlat(base, i, x)),
  );
  const st = withShardedUpdate(context(base, false), () => opt.init(flat));
  const [sl, sdef] = flatten(st);
  const flatLens = shardLen.map((k) => k * S * T * n);
  const optSlots = optStateSlots(flatten(opt.init(params))[0] as Array[], sl as Array[], shapes, flatLens);
  const specs = optSlots.map((s) => (s === null ? P() : split));
  const optState = unflatten(
    sdef,
    sl.map((l, j) => devicePut(l as Array, NamedSharding(mesh, specs[j]))),
  ) as optim.OptState;
  const layout: ZeroPipelineTensorLayout = { ...base, optSpecs: unflatten(sdef, specs) as SpecTree, optSlots };
  return { params: placeParams(layout, params), optState, layout };
}

/**
 * Lays out the GPT for ZeRO `stage` x pipeline x tensor parallelism on a mesh with axes 'pipe', 'data' and 'model':
 * the blocks' tensor specs come from `spec` (gptParamSpecs; only 'model' may be named), the outer leaves are replicated
 * over 'model' whatever their spec. Every optimizer-state leaf (and at stage 3 every parameter) is its flat layout.
 */
export function zeroPipelineTensorShardState(
  params: GptParams,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  cfg: GptConfig,
  spec: GptShardingSpec,
  stage: 1 | 2 | 3,
): ZeroPipelineTensorState {
  const all = gptParamSpecs(cfg, spec) as unknown as { blocks: Record<string, PartitionSpec> };
  return zeroPipelineLayoutState("zeroPipelineTensorShardState", params, opt, mesh, all.blocks, stage);
}

/** The full parameters of a state. */
export function zeroPipelineTensorGatherParams(state: ZeroPipelineTensorState): GptParams {
  return gatherZeroParams(state.layout, state.params, (i, f) => fromFlat(state.layout, i, f));
}

/** The optimizer state in the parameters' full shapes (the checkpoint's layout). */
export function zeroPipelineTensorFullOptState(state: ZeroPipelineTensorState): optim.OptState {
  const L = state.layout;
  return mapOptSlots(state.optState, L.optSlots, (i, leaf) => fromFlat(L, i, leaf));
}

/** A state from full parameters and a full-shaped optimizer state (a checkpoint), resharded onto the layout. */
export function zeroPipelineTensorRestore(
  L: ZeroPipelineTensorLayout,
  params: GptParams,
  full: optim.OptState,
): ZeroPipelineTensorState {
  const optState = placeZeroOptState(L, full, (i, x) => toFlat(L, i, x));
  return { params: placeParams(L, params), optState, layout: L };
}

/**
 * A ZeRO x pipeline (x tensor) training step (jitted). Stages 1-2: the pipelined loss is differentiated with respect
 * to one copy of each stage's (Megatron-sharded) blocks per data shard, so each device's block gradient comes back
 * unreduced over 'data'; group 0 is reduce-scattered over 'data' (stage 1: all-reduced, own slice kept), group 1
 * (equal on every model rank) over ('model', 'data') and divided by T, group 2 (outer, computed whole) sliced; after
 * the update the slices are all-gathered back. Stage 3 keeps every parameter as its slice: the outer leaves are
 * gathered once per step; the blocks per layer inside the stage's scan (opts.gather "layer": the gather's transpose
 * reduce-scatters each layer's gradient) or all at once into the copies before the schedule ("stage").
 */
export function makeGptZeroPipelineTensorStep(
  cfg: GptConfig,
  opt: optim.GradientTransformation,
  L: ZeroPipelineTensorLayout,
  opts: ZeroPipelineOptions,
): (state: ZeroPipelineTensorState, tokens: Array, targets: Array, mask: Array) => [Array, ZeroPipelineTensorState] {
  return zeroPipelineStep("makeGptZeroPipelineTensorStep", cfg, opt, L, opts);
}

/** The one ZeRO x pipeline engine (makeGptZeroPipelineTensorStep's; zero-pipeline.ts's is its T = 1 case). */
export function zeroPipelineStep(
  fn: string,
  cfg: GptConfig,
  opt: optim.GradientTransformation,
  L: ZeroPipelineTensorLayout,
  opts: ZeroPipelineOptions,
): (state: ZeroPipelineTensorState, tokens: Array, targets: Array, mask: Array) => [Array, ZeroPipelineTensorState] {
  const { mesh, S, T, n, stage, shardLen, localShapes, paramDef } = L;
  if (stage !== opts.stage) throw new Error(`${fn}: the layout is for stage ${stage}, the options ask ${opts.stage}`);
  const gatherMode = opts.gather ?? "layer";
  if (gatherMode !== "layer" && gatherMode !== "stage")
    throw new RangeError(`${fn}: gather must be "layer" or "stage", got ${JSON.stringify(gatherMode)}`);
  const perLayer = stage === 3 && gatherMode === "layer";
  const schedule = opts.schedule ?? "gpipe";
  const policy = REMAT_POLICIES[opts.remat ?? "none"];
  const gAxes = groupAxes(L);
  const gSize = groupSize(L);
  const groups = [0, 1, 2].map((g) => L.group.map((_, i) => i).filter((i) => L.group[i] === g));
  const positions = unflatten(
    paramDef,
    L.shapes.map((_, i) => i),
  ) as unknown as { blocks: Record<string, number> };
  const blockKeys = Object.keys(positions.blocks);

  /** Stage 3 per layer: layer l's slices ([kl] per block leaf) all-gathered into its (model block's) leaves. */
  const gatherLayer = (q: GptLayer): GptLayer => {
    const out: Record<string, Array> = {};
    for (const g of [0, 1]) {
      const keys = blockKeys.filter((k) => L.group[positions.blocks[k]] === g);
      if (!keys.length) continue;
      const at = keys.map((k) => positions.blocks[k]);
      const ks = at.map((i) => shardLen[i] / localShapes[i][0]);
      const rec = q as unknown as Record<string, Array>;
      const all = unpackRows(
        lax.allGather(packLocal(keys.map((k) => rec[k])), gAxes[g], { tiled: true }),
        ks,
        gSize[g],
      );
      all.forEach((f, j) => (out[keys[j]] = unflatPad(f, localShapes[at[j]].slice(1))));
    }
    return out as unknown as GptLayer;
  };
  // 1F1B differentiates each stage inside its backward program: the tensor collectives need explicit gradients there
  const body = (h: Array, p: GptLayer): Array => gptBlock(p, h, L.tensorAxis, schedule === "1f1b");
  // per layer: the gather is rematerialized with the layer, so the backward pass gathers again instead of keeping it
  const one = perLayer
    ? checkpoint((h: Array, q: GptLayer) => body(h, gatherLayer(q)), policy === null ? {} : { policy })
    : policy === null
      ? body
      : checkpoint(body, { policy });
  const stageFn = (p: GptLayer, h: Array): Array =>
    lax.scan((x: Array, q: GptLayer): [Array, null] => [one(x, q), null], h, p)[0];
  // per layer, the pipeline's stage parameters are the slices: [S, n, L/S, T * kl] over ('pipe', 'data', -, 'model')
  const sliceSpecs = Object.fromEntries(
    blockKeys.map((k) => [k, P("pipe", "data", null, ...(T > 1 ? ["model"] : []))]),
  ) as unknown as SpecTree;
  const stageSpecs = perLayer ? sliceSpecs : L.copySpecs;
  const run = makePipeline(stageFn, mesh, {
    pipeAxis: "pipe",
    dataAxis: "data",
    microbatches: opts.microbatches,
    schedule,
    perDataParams: true,
    paramSpecs: stageSpecs,
    checkVma: false,
  });
  const loss = (outer: GptOuter, copies: GptLayer, tokens: Array, targets: Array, mask: Array): Array =>
    gptMaskedXent(cfg, gptLogits(outer, run(copies, gptEmbed(cfg, outer, tokens))), targets, mask);

  const gIndex = (g: number): Array =>
    gAxes[g].reduce<Array | null>(
      (acc, a) => (acc === null ? lax.axisIndex(a) : jnp.add(jnp.multiply(acc, mesh.axisSize(a)), lax.axisIndex(a))),
      null,
    )!;
  /** Each group's leaves as this device's slices: the gradients reduced over the group (`grads`), or sliced. */
  const slices = (xs: Array[], grads: boolean, only: (i: number) => boolean = () => true): Array[] => {
    const out: Array[] = new globalThis.Array<Array>(xs.length);
    groups.forEach((all, g) => {
      const at = all.filter(only);
      if (!at.length) return;
      const ks = at.map((i) => shardLen[i]);
      const K = ks.reduce((a, b) => a + b, 0);
      const G = packRows(
        at.map((i) => localFlat(L, i, xs[i])),
        ks,
        gSize[g],
      );
      let local: Array;
      if (!grads || g === 2) local = lax.dynamicSliceInDim(G, jnp.multiply(gIndex(g), K), K, 0);
      else {
        local =
          stage >= 2
            ? lax.psumScatter(G, gAxes[g], { tiled: true })
            : lax.dynamicSliceInDim(lax.psum(G, gAxes[g]), jnp.multiply(gIndex(g), K), K, 0);
        // group 1's gradient is the same on every model rank: the sum over 'model' counted it T times
        if (g === 1 && T > 1) local = jnp.divide(local, T);
      }
      unpackLocal(local, ks).forEach((x, q) => (out[at[q]] = x));
    });
    return out;
  };
  /** This device's slices -> its blocks ([L/S, ...], its model block) and the full outer leaves. */
  const gatherBack = (xs: Array[], only: (i: number) => boolean = () => true): Array[] => {
    const out: Array[] = new globalThis.Array<Array>(xs.length);
    groups.forEach((all, g) => {
      const at = all.filter(only);
      if (!at.length) return;
      const ks = at.map((i) => shardLen[i]);
      const got = unpackRows(lax.allGather(packLocal(at.map((i) => xs[i])), gAxes[g], { tiled: true }), ks, gSize[g]);
      got.forEach((f, q) => (out[at[q]] = localUnflat(L, at[q], f)));
    });
    return out;
  };
  const outerSpecs = Object.fromEntries(
    Object.keys(L.paramSpecs as object)
      .filter((k) => k !== "blocks")
      .map((k) => [k, P()]),
  ) as unknown as SpecTree;
  const isOuter = (i: number) => L.group[i] === 2;
  const update = shardMap(
    (p: GptParams, s: optim.OptState, gb: GptLayer, go: GptOuter): [GptParams, optim.OptState] => {
      // per layer: gb is already this device's reduce-scattered slice ([1, 1, L/S, kl]); else its copy's gradient
      const g = { ...go, blocks: mapLeaves(gb, (x) => jnp.squeeze(x, [0, 1])) } as GptParams;
      const [gl, gdef] = flatten(g);
      if (!gdef.equals(paramDef)) throw new Error(`${fn}: gradient tree ${gdef.toString()} is not the parameters'`);
      const gs = slices(gl as Array[], true, perLayer ? isOuter : undefined);
      if (perLayer)
        for (let i = 0; i < gs.length; i++)
          if (!isOuter(i)) {
            // the gather's transpose summed the slice's cotangents over its group; a leaf replicated over 'model' got
            // the whole gradient on every model rank under 1F1B (its vjp runs in the body, Megatron's explicit f/g),
            // but a 1/T share per rank under GPipe (the shardMap differentiated from outside: the ranks' cotangents
            // of a value equal over 'model' sum to its gradient), so only 1F1B's sum counted it T times
            const f = jnp.reshape(gl[i] as Array, [shardLen[i]]);
            gs[i] = L.group[i] === 1 && T > 1 && schedule === "1f1b" ? jnp.divide(f, T) : f;
          }
      const ps = stage === 3 ? (flatten(p)[0] as Array[]) : slices(flatten(p)[0] as Array[], false);
      const [u, next] = withShardedUpdate(context(L, true), () =>
        opt.update(unflatten(paramDef, gs), s, unflatten(paramDef, ps)),
      );
      const np = flatten(optim.applyUpdates(unflatten(paramDef, ps), u))[0] as Array[];
      return [unflatten(paramDef, stage === 3 ? np : gatherBack(np)) as GptParams, next];
    },
    {
      mesh,
      inSpecs: [L.paramSpecs, L.optSpecs, stageSpecs, outerSpecs],
      outSpecs: [L.paramSpecs, L.optSpecs],
      checkVma: false, // the outer parameters are equal over the pipe and model axes by construction
    },
  );
  // stage 3: this device's slices -> its stage's blocks as its copy [1, 1, L/S, ...] (gather "stage") or its block
  // slices as [1, 1, L/S, kl] (gather "layer"), and the full outer leaves
  const gather = shardMap(
    (p: GptParams): [GptLayer, GptOuter] => {
      const pl = flatten(p)[0] as Array[];
      const full = unflatten(paramDef, gatherBack(pl, perLayer ? isOuter : undefined)) as GptParams;
      const { blocks, ...outer } = full;
      const mine = perLayer
        ? (Object.fromEntries(
            blockKeys.map((k) => {
              const i = positions.blocks[k];
              return [k, jnp.reshape(pl[i], [1, 1, localShapes[i][0], shardLen[i] / localShapes[i][0]])];
            }),
          ) as unknown as GptLayer)
        : mapLeaves(blocks as unknown as GptLayer, (x) => jnp.expandDims(x, [0, 1]));
      return [mine, outer];
    },
    { mesh, inSpecs: [L.paramSpecs], outSpecs: [stageSpecs, outerSpecs], checkVma: false },
  );
  const step = jit((params: GptParams, s: optim.OptState, tokens: Array, targets: Array, mask: Array) => {
    const { blocks, ...rest } = params;
    // stages 1-2: the blocks broadcast per data shard, so each copy's gradient is that shard's, unreduced
    const [copies, outer] =
      stage === 3
        ? (gather(params) as [GptLayer, GptOuter])
        : [
            mapLeaves(stageView(blocks as unknown as GptLayer, S), (x) =>
              jnp.broadcastTo(jnp.expandDims(x, 1), [S, n, ...x.shape.slice(1)]),
            ),
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
    if (state.layout !== L) throw new Error(`${fn}: the state was laid out for another layout; use this step's`);
    const [l, p, s] = step(state.params, state.optState, tokens, targets, mask);
    return [l, { ...state, params: p, optState: s }];
  };
}
