/**
 * @file ZeRO stages 1-3 x pipeline x tensor parallelism for the GPT on a pipe x data x model mesh: each stage's
 * Megatron blocks ZeRO-sharded over 'data', its blocks replicated over 'model' over (model, data), outer leaves over all.
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import * as optim from "../optim/index.js";
import { checkpoint } from "../transforms/checkpoint.js";
import { flatten, unflatten, type TreeDef } from "../core/tree.js";
import type { Mesh } from "../parallel/mesh.js";
import { P, NamedSharding, type PartitionSpec, PartitionSpecImpl } from "../parallel/sharding.js";
import { devicePut } from "../parallel/device-put.js";
import { type SpecTree, shardMap } from "../parallel/shard-map.js";
import { type ShardedUpdate, withShardedUpdate } from "../optim/base.js";
import {
  type GptConfig,
  type GptLayer,
  type GptParams,
  type GptShardingSpec,
  REMAT_POLICIES,
  gptBlock,
  gptEmbed,
  gptLogits,
  gptMaskedXent,
  gptParamSpecs,
} from "../models/gpt.js";
import { makePipeline } from "../models/pipeline.js";
import {
  checkShardable,
  flatPad,
  packLocal,
  packRows,
  shardedContext,
  unflatPad,
  unpackLocal,
  unpackRows,
} from "../models/zero.js";
import { mapOptSlots, optStateSlots } from "../models/zero-tensor.js";
import type { GptOuter } from "./engines.js";
import { type ZeroPipelineOptions, mapLeaves, zeroPipelineJitStep } from "./zero-pipeline.js";

/**
 * Where each leaf lives: a flat [S * T * n * k] vector split over ('pipe', 'model', 'data'). Group 0 (a block leaf
 * split over 'model' on tpDim): section s * T + m is stage s's layers' model block m, split over 'data'; group 1 (a
 * block leaf replicated over 'model'): section s is stage s's layers, split over ('model', 'data'); group 2 (outer
 * leaves): split over all S * T * n devices. Device (s, m, d) always holds slice (s * T + m) * n + d.
 */
export interface ZeroPipelineTensorLayout {
  readonly stage: 1 | 2 | 3;
  readonly mesh: Mesh;
  readonly S: number;
  readonly T: number;
  readonly n: number;
  readonly paramDef: TreeDef;
  readonly shapes: readonly (readonly number[])[];
  /** Each leaf's block on one device before ZeRO: its stage's layers and model block (outer leaves: full). */
  readonly localShapes: readonly (readonly number[])[];
  readonly group: readonly (0 | 1 | 2)[];
  readonly tpDim: readonly (number | null)[];
  readonly shardLen: readonly number[];
  /** Stage 1-2: the blocks P('pipe', ...tensor spec), outer P(); stage 3: P(['pipe', 'model', 'data']). */
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

const AXES = ["pipe", "model", "data"];
const isSpec = (x: unknown): boolean => x instanceof PartitionSpecImpl;
const size = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

/** Leaf i in its flat layout. */
function toFlat(L: ZeroPipelineTensorLayout, i: number, x: Array): Array {
  const { S, T, n } = L,
    k = L.shardLen[i],
    g = L.group[i],
    d = L.tpDim[i];
  if (g === 2) return flatPad(x, S * T * n * k);
  const per = L.localShapes[i][0];
  const parts: Array[] = [];
  for (let s = 0; s < S; s++) {
    const st = lax.sliceInDim(x, s * per, (s + 1) * per, 1, 0);
    if (g === 1) parts.push(flatPad(st, T * n * k));
    else {
      const w = L.localShapes[i][d!];
      for (let m = 0; m < T; m++) parts.push(flatPad(lax.sliceInDim(st, m * w, (m + 1) * w, 1, d!), n * k));
    }
  }
  return jnp.concatenate(parts, 0);
}

/** The inverse of toFlat: leaf i in its full shape. */
function fromFlat(L: ZeroPipelineTensorLayout, i: number, f: Array): Array {
  const { S, T } = L,
    g = L.group[i],
    d = L.tpDim[i];
  if (g === 2) return unflatPad(f, L.shapes[i]);
  const rows = jnp.reshape(f, [g === 1 ? S : S * T, -1]);
  const row = (r: number) => unflatPad(jnp.squeeze(lax.sliceInDim(rows, r, r + 1, 1, 0), 0), L.localShapes[i]);
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

/** Optimizer context: slices are disjoint over all three axes, so partial sums psum over them. */
function context(L: Pick<ZeroPipelineTensorLayout, "stage" | "paramDef" | "shapes">, inStep: boolean): ShardedUpdate {
  const base = shardedContext(L.stage, "data", L.paramDef, L.shapes, inStep);
  return {
    where: `ZeRO stage ${L.stage} over mesh axes ${JSON.stringify(AXES)}`,
    sum: (x: Array) => {
      base.sum(x);
      return lax.psum(x, AXES);
    },
    fullShapes: base.fullShapes,
  };
}

/** Full parameters onto the layout. */
function placeParams(L: ZeroPipelineTensorLayout, params: GptParams): GptParams {
  const [ls] = flatten(params);
  const [specs] = flatten(L.paramSpecs, isSpec);
  return unflatten(
    L.paramDef,
    (ls as Array[]).map((x, i) =>
      devicePut(L.stage === 3 ? toFlat(L, i, x) : x, NamedSharding(L.mesh, specs[i] as PartitionSpec)),
    ),
  ) as GptParams;
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
  const fn = "zeroPipelineTensorShardState";
  for (const a of AXES)
    if (!mesh.axisNames.includes(a))
      throw new Error(`${fn}: the mesh ${mesh.toString()} needs axes 'pipe', 'data' and 'model'`);
  if (stage !== 1 && stage !== 2 && stage !== 3)
    throw new RangeError(`${fn}: stage must be 1, 2 or 3, got ${String(stage)}`);
  checkShardable(fn, opt, stage);
  const S = mesh.axisSize("pipe"),
    T = mesh.axisSize("model"),
    n = mesh.axisSize("data");
  const all = gptParamSpecs(cfg, spec) as Record<string, unknown> & { blocks: Record<string, PartitionSpec> };
  const blockKeys = new Set(Object.keys(params.blocks));
  // tensor specs per leaf, in the parameters' flatten order (blocks: the stacked [L, ...] specs; outer: replicated)
  const tensorSpecs = {
    ...Object.fromEntries(
      Object.keys(params)
        .filter((k) => k !== "blocks")
        .map((k) => [k, P()]),
    ),
    blocks: Object.fromEntries([...blockKeys].map((k) => [k, all.blocks[k] ?? P()])),
  } as unknown as SpecTree;
  const [leaves, paramDef] = flatten(params);
  const [tspecs] = flatten(tensorSpecs, isSpec);
  const [isBlock] = flatten({
    ...Object.fromEntries(
      Object.keys(params)
        .filter((k) => k !== "blocks")
        .map((k) => [k, false]),
    ),
    blocks: Object.fromEntries([...blockKeys].map((k) => [k, true])),
  });
  const shapes = (leaves as Array[]).map((a) => [...a.shape]);
  const tpDim = shapes.map((sh, i) => {
    if (!isBlock[i] || T === 1) return null;
    const ents = (tspecs[i] as PartitionSpec).entries;
    let dim: number | null = null;
    ents.forEach((e, d) => {
      const names = e === null || e === undefined ? [] : typeof e === "string" ? [e] : [...e];
      for (const nm of names)
        if (nm !== "model")
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
  const shardLen = localShapes.map((sh, i) => Math.ceil(size(sh) / [n, T * n, S * T * n][group[i]]));
  const split = P(AXES);
  const paramSpecs = unflatten(
    paramDef,
    shapes.map((_, i) =>
      stage === 3 ? split : group[i] === 2 ? P() : P("pipe", ...(tspecs[i] as PartitionSpec).entries.slice(1)),
    ),
  ) as SpecTree;
  const copySpecs = Object.fromEntries(
    Object.keys(params.blocks).map((k) => [k, P("pipe", "data", ...(all.blocks[k] ?? P()).entries)]),
  ) as unknown as SpecTree;
  const base = { stage, mesh, S, T, n, paramDef, shapes, localShapes, group, tpDim, shardLen, paramSpecs, copySpecs };
  const partial = { ...base, optSpecs: P(), optSlots: [] } as ZeroPipelineTensorLayout;
  const flat = unflatten(
    paramDef,
    (leaves as Array[]).map((x, i) => toFlat(partial, i, x)),
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

/** The full parameters of a state. */
export function zeroPipelineTensorGatherParams(state: ZeroPipelineTensorState): GptParams {
  const L = state.layout;
  if (L.stage !== 3) return state.params;
  const [ls] = flatten(state.params);
  return unflatten(
    L.paramDef,
    (ls as Array[]).map((f, i) => fromFlat(L, i, f)),
  ) as GptParams;
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
  const [specs] = flatten(L.optSpecs, isSpec);
  const put = (x: Array, j: number) => devicePut(x, NamedSharding(L.mesh, specs[j] as PartitionSpec));
  const optState = mapOptSlots(
    full,
    L.optSlots,
    (i, leaf, j) => put(toFlat(L, i, leaf), j),
    (leaf, j) => put(leaf, j),
  );
  return { params: placeParams(L, params), optState, layout: L };
}

/**
 * A ZeRO x pipeline x tensor training step (jitted), zero-pipeline.ts's with a third group: the pipelined loss is
 * differentiated with respect to one copy of each stage's (Megatron-sharded) blocks per data shard, so each device's
 * block gradient comes back unreduced over 'data'; group 0 is reduce-scattered over 'data', group 1 (equal on every
 * model rank) over ('model', 'data') and divided by T, group 2 (outer, computed whole) sliced; after the update the
 * slices are all-gathered back (stage 3: kept, and gathered into the copies before the schedule instead).
 */
export function makeGptZeroPipelineTensorStep(
  cfg: GptConfig,
  opt: optim.GradientTransformation,
  L: ZeroPipelineTensorLayout,
  opts: ZeroPipelineOptions,
): (state: ZeroPipelineTensorState, tokens: Array, targets: Array, mask: Array) => [Array, ZeroPipelineTensorState] {
  const fn = "makeGptZeroPipelineTensorStep";
  const { mesh, S, T, n, stage, shardLen, localShapes, paramDef } = L;
  if (stage !== opts.stage) throw new Error(`${fn}: the layout is for stage ${stage}, the options ask ${opts.stage}`);
  const schedule = opts.schedule ?? "gpipe";
  const policy = REMAT_POLICIES[opts.remat ?? "none"];
  // 1F1B differentiates each stage inside its backward program: the tensor collectives need explicit gradients there
  const body = (h: Array, p: GptLayer): Array => gptBlock(p, h, T > 1 ? "model" : null, schedule === "1f1b");
  const one = policy === null ? body : checkpoint(body, { policy });
  const stageFn = (p: GptLayer, h: Array): Array =>
    lax.scan((x: Array, q: GptLayer): [Array, null] => [one(x, q), null], h, p)[0];
  const run = makePipeline(stageFn, mesh, {
    pipeAxis: "pipe",
    dataAxis: "data",
    microbatches: opts.microbatches,
    schedule,
    perDataParams: true,
    paramSpecs: L.copySpecs,
    checkVma: false,
  });
  const loss = (outer: GptOuter, copies: GptLayer, tokens: Array, targets: Array, mask: Array): Array =>
    gptMaskedXent(cfg, gptLogits(outer, run(copies, gptEmbed(cfg, outer, tokens))), targets, mask);

  const gAxes: (string | string[])[] = ["data", ["model", "data"], AXES];
  const gSize = [n, T * n, S * T * n];
  const ax = (a: string) => lax.axisIndex(a);
  const gIndex = (g: number): Array =>
    g === 0
      ? ax("data")
      : g === 1
        ? jnp.add(jnp.multiply(ax("model"), n), ax("data"))
        : jnp.add(jnp.multiply(jnp.add(jnp.multiply(ax("pipe"), T), ax("model")), n), ax("data"));
  const groups = [0, 1, 2].map((g) => L.group.map((_, i) => i).filter((i) => L.group[i] === g));
  const slices = (xs: Array[], grads: boolean): Array[] => {
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
  const outerSpecs = Object.fromEntries(
    Object.keys(L.paramSpecs as object)
      .filter((k) => k !== "blocks")
      .map((k) => [k, P()]),
  ) as unknown as SpecTree;
  const update = shardMap(
    (p: GptParams, s: optim.OptState, gb: GptLayer, go: GptOuter): [GptParams, optim.OptState] => {
      const g = { ...go, blocks: mapLeaves(gb, (x) => jnp.squeeze(x, [0, 1])) } as GptParams;
      const [gl, gdef] = flatten(g);
      if (!gdef.equals(paramDef)) throw new Error(`${fn}: gradient tree ${gdef.toString()} is not the parameters'`);
      const gs = slices(gl as Array[], true);
      const ps = stage === 3 ? (flatten(p)[0] as Array[]) : slices(flatten(p)[0] as Array[], false);
      const [u, next] = withShardedUpdate(context(L, true), () =>
        opt.update(unflatten(paramDef, gs), s, unflatten(paramDef, ps)),
      );
      const np = flatten(optim.applyUpdates(unflatten(paramDef, ps), u))[0] as Array[];
      return [unflatten(paramDef, stage === 3 ? np : gatherBack(np)) as GptParams, next];
    },
    {
      mesh,
      inSpecs: [L.paramSpecs, L.optSpecs, L.copySpecs, outerSpecs],
      outSpecs: [L.paramSpecs, L.optSpecs],
      checkVma: false,
    },
  );
  return zeroPipelineJitStep<ZeroPipelineTensorState>({
    fn,
    mesh,
    layout: L,
    paramSpecs: L.paramSpecs,
    copySpecs: L.copySpecs,
    outerSpecs,
    paramDef,
    gatherBack,
    stage,
    S,
    n,
    loss,
    update,
  });
}
