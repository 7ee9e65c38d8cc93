/**
 * @file ZeRO stages 1-3 over a mesh's data axis combined with tensor (Megatron) parallelism over another axis: every
 * parameter's tensor-parallel block is what ZeRO shards over 'data'; leaves replicated over the tensor axis are
 * sharded over both axes. Also the conversions of ZeRO optimizer state to and from the parameters' shapes (checkpoints
 * that load at another stage or mesh).
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import * as optim from "../optim/index.js";
import { valueAndGrad } from "../transforms/api.js";
import { flatten, unflatten, type TreeDef } from "../core/tree.js";
import { type ShardedUpdate, withShardedUpdate } from "../optim/base.js";
import { Mesh } from "../parallel/mesh.js";
import { P, NamedSharding, type PartitionSpec, PartitionSpecImpl } from "../parallel/sharding.js";
import { devicePut } from "../parallel/device-put.js";
import { type SpecTree, shardMap } from "../parallel/shard-map.js";
import {
  type LayeredLoss,
  type ZeroState,
  checkShardable,
  flatPad,
  packLocal,
  packRows,
  shardedContext,
  unflatPad,
  unpackLocal,
  unpackRows,
  zeroLocalLoss,
} from "./zero.js";

/** ZeRO x tensor parallel options. */
export interface ZeroTensorOptions {
  /** 1: optimizer state sharded; 2: + gradients reduce-scattered; 3: + parameters sharded (gathered per layer). */
  stage: 1 | 2 | 3;
  /** The ZeRO (batch) axis (default "data"). */
  dataAxis?: string;
  /** The tensor-parallel axis (default "model"). */
  tensorAxis?: string;
  /** Per parameter leaf: its tensor-parallel PartitionSpec (names only the tensor axis, on at most one dimension). */
  tensorSpecs: SpecTree;
  /** Rematerialize each layer of a layered loss (default true: stage 3 then gathers again in the backward pass). */
  remat?: boolean;
}

/** Where each leaf lives: flat [t * n * k] vectors split over (tensor, data), block r = tensorIndex * n + dataIndex. */
export interface ZeroTensorLayout {
  readonly stage: 1 | 2 | 3;
  readonly dataAxis: string;
  readonly tensorAxis: string;
  readonly mesh: Mesh;
  /** Data-axis and tensor-axis sizes. */
  readonly n: number;
  readonly t: number;
  readonly paramDef: TreeDef;
  readonly shapes: readonly (readonly number[])[];
  /** Each leaf's shape on one tensor rank (its block along tpDim, or the full shape). */
  readonly localShapes: readonly (readonly number[])[];
  /** The dimension split over the tensor axis, or null (replicated over it: ZeRO then shards over both axes). */
  readonly tpDim: readonly (number | null)[];
  /** Elements per device of each leaf's flat vector. */
  readonly shardLen: readonly number[];
  /** Stage 1-2 parameters at rest (tensor specs); stage 3: P([tensor, data]) for every leaf. */
  readonly paramSpecs: SpecTree;
  readonly optSpecs: SpecTree;
  /** For each optimizer-state leaf (flatten order): the parameter leaf whose flat layout it has, or null. */
  readonly optSlots: readonly (number | null)[];
}

export interface ZeroTensorState<Params> {
  readonly params: Params;
  readonly optState: optim.OptState;
  readonly layout: ZeroTensorLayout;
}

const isSpec = (x: unknown): boolean => x instanceof PartitionSpecImpl;

/**
 * Which optimizer-state leaves hold per-parameter values: runs of consecutive leaves that have every parameter's
 * full shape in `full` (opt.init of the parameters) and its flat length in `flat` (opt.init of the flat vectors).
 */
export function optStateSlots(
  full: readonly Array[],
  flat: readonly Array[],
  shapes: readonly (readonly number[])[],
  flatLens: readonly number[],
): (number | null)[] {
  const slots: (number | null)[] = full.map(() => null);
  const np = shapes.length;
  for (let j = 0; j + np <= full.length;) {
    const run = shapes.every(
      (s, i) => full[j + i].shape.join() === s.join() && flat[j + i].ndim === 1 && flat[j + i].shape[0] === flatLens[i],
    );
    if (run) {
      for (let i = 0; i < np; i++) slots[j + i] = i;
      j += np;
    } else j++;
  }
  return slots;
}

/** Maps the per-parameter leaves of an optimizer state (slots from optStateSlots); other leaves pass unchanged. */
export function mapOptSlots(
  state: optim.OptState,
  slots: readonly (number | null)[],
  f: (param: number, leaf: Array, at: number) => Array,
  other: (leaf: Array, at: number) => Array = (l) => l,
): optim.OptState {
  const [ls, def] = flatten(state);
  if (ls.length !== slots.length)
    throw new Error(`ZeRO optimizer state: ${ls.length} leaves, but the layout describes ${slots.length}`);
  return unflatten(
    def,
    ls.map((l, j) => (slots[j] === null ? other(l as Array, j) : f(slots[j]!, l as Array, j))),
  ) as optim.OptState;
}

function tensorDim(fn: string, spec: PartitionSpec, tensor: string, i: number, shape: readonly number[], t: number) {
  let dim: number | null = null;
  spec.entries.forEach((e, d) => {
    const names = e === null || e === undefined ? [] : typeof e === "string" ? [e] : [...e];
    for (const nm of names)
      if (nm !== tensor)
        throw new Error(
          `${fn}: tensorSpecs of parameter leaf ${i} names mesh axis ${JSON.stringify(nm)}; only the tensor axis ${JSON.stringify(tensor)} may be named (ZeRO lays out the data axis itself)`,
        );
    if (names.length) {
      if (dim !== null) throw new Error(`${fn}: tensorSpecs of parameter leaf ${i} splits two dimensions`);
      if (shape[d] % t !== 0)
        throw new Error(
          `${fn}: parameter leaf ${i} [${shape.join(",")}] dim ${d} (${shape[d]}) does not divide over ${t} tensor ranks`,
        );
      dim = d;
    }
  });
  return t === 1 ? null : dim;
}

/** Leaf `i` in its flat [t * n * k] layout (tensor rank r's block flattened and padded into section r). */
function toFlat(L: Omit<ZeroTensorLayout, "optSpecs" | "optSlots" | "paramSpecs">, i: number, x: Array): Array {
  const k = L.shardLen[i],
    d = L.tpDim[i];
  if (d === null) return flatPad(x, L.t * L.n * k);
  const w = L.localShapes[i][d];
  return jnp.concatenate(
    [...globalThis.Array(L.t).keys()].map((r) => flatPad(lax.sliceInDim(x, r * w, (r + 1) * w, 1, d), L.n * k)),
    0,
  );
}
/** The inverse of toFlat: leaf `i` in its full shape. */
function fromFlat(L: ZeroTensorLayout, i: number, f: Array): Array {
  const k = L.shardLen[i],
    d = L.tpDim[i];
  if (d === null) return unflatPad(f, L.shapes[i]);
  const rows = jnp.reshape(f, [L.t, L.n * k]);
  return jnp.concatenate(
    [...globalThis.Array(L.t).keys()].map((r) =>
      unflatPad(jnp.squeeze(lax.sliceInDim(rows, r, r + 1, 1, 0), 0), L.localShapes[i]),
    ),
    d,
  );
}

/** The optimizer's sharded-update context: slices are disjoint over (tensor, data), so partial sums psum over both. */
export function zeroTensorContext(
  L: Omit<ZeroTensorLayout, "optSpecs" | "optSlots" | "paramSpecs">,
  inStep: boolean,
): ShardedUpdate {
  return zeroAxesContext(L.stage, L.dataAxis, [L.tensorAxis, L.dataAxis], L.paramDef, L.shapes, inStep);
}

/** The sharded-update context of slices disjoint over mesh axes `axes` (ZeRO over `dataAxis`): partial sums psum. */
export function zeroAxesContext(
  stage: 1 | 2 | 3,
  dataAxis: string,
  axes: readonly string[],
  paramDef: TreeDef,
  shapes: readonly (readonly number[])[],
  inStep: boolean,
): ShardedUpdate {
  const base = shardedContext(stage, dataAxis, paramDef, shapes, inStep);
  return {
    where: `ZeRO stage ${stage} over mesh axes ${JSON.stringify(axes)}`,
    sum: (x: Array) => {
      base.sum(x); // raises outside the step (init must not sum over devices)
      return lax.psum(x, [...axes]);
    },
    fullShapes: base.fullShapes,
  };
}

/**
 * Lays out parameters (full values) and optimizer state for ZeRO `stage` x tensor parallelism on `mesh`. Stage 1-2
 * parameters are placed with their tensor specs; stage 3 parameters and every per-parameter optimizer-state leaf are
 * flat vectors split over (tensor, data): each device holds 1 / (n * t) of every leaf (plus padding).
 */
export function zeroTensorShardState<Params>(
  params: Params,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  opts: ZeroTensorOptions,
): ZeroTensorState<Params> {
  const fn = "zeroTensorShardState";
  const base = checkTensorOpts(fn, mesh, opts, params);
  checkShardable(fn, opt, base.stage);
  const [leaves] = flatten(params);
  const flat = unflatten(
    base.paramDef,
    (leaves as Array[]).map((x, i) => toFlat(base, i, x)),
  ) as Params;
  const st = withShardedUpdate(zeroTensorContext(base, false), () => opt.init(flat));
  const [sl, sdef] = flatten(st);
  const flatLens = base.shardLen.map((k) => k * base.n * base.t);
  const optSlots = optStateSlots(flatten(opt.init(params))[0] as Array[], sl as Array[], base.shapes, flatLens);
  const split = P([base.tensorAxis, base.dataAxis]);
  const specs = optSlots.map((s) => (s === null ? P() : split));
  const optState = unflatten(
    sdef,
    sl.map((l, j) => devicePut(l as Array, NamedSharding(mesh, specs[j]))),
  ) as optim.OptState;
  const layout: ZeroTensorLayout = { ...base, optSpecs: unflatten(sdef, specs) as SpecTree, optSlots };
  return { params: placeParams(layout, params), optState, layout };
}

/** Full parameters onto the layout (stage 3: flat and split; else with their tensor specs). */
function placeParams<Params>(L: ZeroTensorLayout, params: Params): Params {
  return placeZeroParams(L, params, (i, x) => toFlat(L, i, x));
}

/** The parts of a flat ZeRO layout that placing and gathering need (zero-tensor.ts's, the ZeRO x pipeline engine's). */
export interface FlatZeroLayout {
  readonly stage: 1 | 2 | 3;
  readonly mesh: Mesh;
  readonly paramDef: TreeDef;
  readonly paramSpecs: SpecTree;
  readonly optSpecs: SpecTree;
  readonly optSlots: readonly (number | null)[];
}

/** Full parameters onto a flat layout: stage 3 each leaf `toFlat`, else as it is, placed with its spec. */
export function placeZeroParams<Params>(
  L: Omit<FlatZeroLayout, "optSpecs" | "optSlots">,
  params: Params,
  toFlat: (i: number, x: Array) => Array,
): Params {
  const [ls] = flatten(params);
  const [specs] = flatten(L.paramSpecs, isSpec);
  return unflatten(
    L.paramDef,
    (ls as Array[]).map((x, i) =>
      devicePut(L.stage === 3 ? toFlat(i, x) : x, NamedSharding(L.mesh, specs[i] as PartitionSpec)),
    ),
  ) as Params;
}

/** A full-shaped optimizer state onto a flat layout: per-parameter leaves `toFlat`, every leaf placed with its spec. */
export function placeZeroOptState(
  L: Pick<FlatZeroLayout, "mesh" | "optSpecs" | "optSlots">,
  full: optim.OptState,
  toFlat: (i: number, x: Array) => Array,
): optim.OptState {
  const [specs] = flatten(L.optSpecs, isSpec);
  const put = (x: Array, j: number) => devicePut(x, NamedSharding(L.mesh, specs[j] as PartitionSpec));
  return mapOptSlots(
    full,
    L.optSlots,
    (i, leaf, j) => put(toFlat(i, leaf), j),
    (leaf, j) => put(leaf, j),
  );
}

/** The full parameters of a flat layout's state (stage 3: each leaf `fromFlat`; else as they are). */
export function gatherZeroParams<Params>(
  L: Pick<FlatZeroLayout, "stage" | "paramDef">,
  params: Params,
  fromFlat: (i: number, f: Array) => Array,
): Params {
  if (L.stage !== 3) return params;
  const [ls] = flatten(params);
  return unflatten(
    L.paramDef,
    (ls as Array[]).map((f, i) => fromFlat(i, f)),
  ) as Params;
}

function checkTensorOpts<Params>(
  fn: string,
  mesh: Mesh,
  opts: ZeroTensorOptions,
  params: Params,
): Omit<ZeroTensorLayout, "optSpecs" | "optSlots"> {
  if (!(mesh instanceof Mesh)) throw new TypeError(`${fn}: expected a Mesh (from makeMesh), got ${String(mesh)}`);
  if (!opts || ![1, 2, 3].includes(opts.stage))
    throw new RangeError(
      `${fn}: stage must be 1, 2 or 3, got ${String(opts?.stage)} (stage 0 x tensor parallel is the plain sharded step)`,
    );
  const dataAxis = opts.dataAxis ?? "data",
    tensorAxis = opts.tensorAxis ?? "model";
  for (const [k, a] of [
    ["dataAxis", dataAxis],
    ["tensorAxis", tensorAxis],
  ] as const)
    if (!mesh.axisNames.includes(a))
      throw new Error(
        `${fn}: ${k} ${JSON.stringify(a)} is not an axis of ${mesh.toString()}; pass { ${k} } naming one of [${mesh.axisNames.join(", ")}]`,
      );
  if (dataAxis === tensorAxis) throw new Error(`${fn}: dataAxis and tensorAxis must differ, both are ${dataAxis}`);
  const n = mesh.axisSize(dataAxis),
    t = mesh.axisSize(tensorAxis);
  const [leaves, paramDef] = flatten(params);
  const [specs, specDef] = flatten(opts.tensorSpecs, isSpec);
  if (!specDef.equals(paramDef) && specs.length !== leaves.length)
    throw new Error(`${fn}: tensorSpecs has ${specs.length} specs for ${leaves.length} parameter leaves`);
  const shapes = (leaves as Array[]).map((a) => [...a.shape]);
  const tpDim = shapes.map((s, i) => tensorDim(fn, specs[i] as PartitionSpec, tensorAxis, i, s, t));
  const localShapes = shapes.map((s, i) => s.map((v, d) => (d === tpDim[i] ? v / t : v)));
  const size = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
  // a tensor-split leaf's block is split n ways; a replicated one n * t ways
  const shardLen = localShapes.map((s, i) => Math.ceil(size(s) / (tpDim[i] === null ? n * t : n)));
  const split = P([tensorAxis, dataAxis]);
  const paramSpecs = unflatten(
    paramDef,
    specs.map((s, i) => (opts.stage === 3 ? split : tpDim[i] === null ? P() : (s as PartitionSpec))),
  ) as SpecTree;
  return {
    stage: opts.stage,
    dataAxis,
    tensorAxis,
    mesh,
    n,
    t,
    paramDef,
    shapes,
    localShapes,
    tpDim,
    shardLen,
    paramSpecs,
  };
}

/** The full parameters (original shapes) of a ZeRO x tensor state. */
export function zeroTensorGatherParams<Params>(state: ZeroTensorState<Params>): Params {
  return gatherZeroParams(state.layout, state.params, (i, f) => fromFlat(state.layout, i, f));
}

/** The optimizer state with every per-parameter leaf in its parameter's full shape (the stage-0 layout). */
export function zeroTensorFullOptState(state: ZeroTensorState<unknown>): optim.OptState {
  const L = state.layout;
  return mapOptSlots(state.optState, L.optSlots, (i, leaf) => fromFlat(L, i, leaf));
}

/** A stage-0-layout optimizer state (per-parameter leaves in full shapes) placed onto a ZeRO x tensor layout. */
export function zeroTensorPlaceOptState(layout: ZeroTensorLayout, full: optim.OptState): optim.OptState {
  return placeZeroOptState(layout, full, (i, x) => toFlat(layout, i, x));
}

/** A ZeRO x tensor state from full parameters and a stage-0-layout optimizer state (a checkpoint): resharded. */
export function zeroTensorRestore<Params>(
  layout: ZeroTensorLayout,
  params: Params,
  fullOpt: optim.OptState,
): ZeroTensorState<Params> {
  return { params: placeParams(layout, params), optState: zeroTensorPlaceOptState(layout, fullOpt), layout };
}

/**
 * A ZeRO x tensor parallel training step: `step(state, ...batch)` -> [mean loss, next state]; batch arguments are
 * split over the data axis (dim 0) and replicated over the tensor axis. The loss (plain or layered) runs on one
 * tensor rank's parameter blocks and must make its tensor-axis collectives differentiable inside the body (Megatron's
 * conjugate f/g pair, e.g. gptBlock(p, h, tensorAxis, true)), so every tensor rank sees the same loss and the same
 * gradient of replicated parameters. Call eagerly (one shardMap, compiled once per layout).
 */
export function makeZeroTensorTrainStep<Params, B extends unknown[]>(
  lossFn: ((params: Params, ...batch: B) => Array) | LayeredLoss<unknown, unknown, B>,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  opts: Omit<ZeroTensorOptions, "tensorSpecs">,
): (state: ZeroTensorState<Params>, ...batch: B) => [Array, ZeroTensorState<Params>] {
  const fn = "makeZeroTensorTrainStep";
  checkShardable(fn, opt, opts.stage);
  const remat = opts.remat ?? true;
  type Compiled = (...a: unknown[]) => [Array, Params, optim.OptState];
  const compiled = new WeakMap<ZeroTensorLayout, Map<number, Compiled>>();

  function build(L: ZeroTensorLayout, nBatch: number): Compiled {
    const { n, t, stage, dataAxis, tensorAxis, shardLen, localShapes, paramDef } = L;
    // two groups: tensor-split leaves shard their block over data; replicated leaves shard over (tensor, data)
    const groupOf = (i: number) => (L.tpDim[i] === null ? 1 : 0);
    const gAxes = [dataAxis, [tensorAxis, dataAxis]] as const;
    const gSize = [n, n * t];
    const gIndex = (g: number): Array =>
      g === 0 ? lax.axisIndex(dataAxis) : jnp.add(jnp.multiply(lax.axisIndex(tensorAxis), n), lax.axisIndex(dataAxis));
    const byGroup = (at: readonly number[]): [number[], number[]] => [
      at.map((_, j) => j).filter((j) => groupOf(at[j]) === 0),
      at.map((_, j) => j).filter((j) => groupOf(at[j]) === 1),
    ];
    /** Applies f to each group's leaves (positions j into `at`), reassembling the results in order. */
    const perGroup = (at: readonly number[], f: (g: number, js: number[]) => Array[]): Array[] => {
      const out: Array[] = new globalThis.Array(at.length);
      byGroup(at).forEach((js, g) => {
        if (!js.length) return;
        f(g, js).forEach((x, q) => (out[js[q]] = x));
      });
      return out;
    };
    const gatherLeaves = (ls: Array[], at: readonly number[]): Array[] =>
      perGroup(at, (g, js) => {
        const ks = js.map((j) => shardLen[at[j]]);
        const all = unpackRows(
          lax.allGather(packLocal(js.map((j) => ls[j])), gAxes[g] as string | string[], { tiled: true }),
          ks,
          gSize[g],
        );
        return all.map((f, q) => unflatPad(f, localShapes[at[js[q]]]));
      });
    const positions = unflatten(
      paramDef,
      L.shapes.map((_, i) => i),
    ) as { outer?: unknown; layers?: unknown[] };
    const posOf = (x: unknown): number[] => flatten(x)[0] as number[];
    const all = posOf(positions);
    const localLoss = zeroLocalLoss<Params, B>(lossFn, paramDef, positions, stage === 3, remat, gatherLeaves);
    const body = (p: Params, s: optim.OptState, ...batch: unknown[]): [Array, Params, optim.OptState] => {
      const [l, g] = valueAndGrad((q: Params) => localLoss(q, batch as B))(p) as [Array, Params];
      const loss = jnp.divide(lax.psum(l, dataAxis), n);
      const gl = flatten(g)[0] as Array[],
        pl = flatten(p)[0] as Array[];
      let gs: Array[], ps: Array[];
      if (stage === 3) {
        // the gathers' transposes reduce-scattered the gradients over their groups: sums, so divide by the group
        // size (a replicated leaf's gradient is the same on every tensor rank, hence n * t)
        gs = gl.map((x, i) => jnp.divide(x, gSize[groupOf(i)]));
        ps = pl;
      } else {
        gs = perGroup(all, (gi, js) => {
          const ks = js.map((j) => shardLen[j]);
          const K = ks.reduce((a, b) => a + b, 0);
          const G = packRows(
            js.map((j) => flatPad(gl[j], shardLen[j] * gSize[gi])),
            ks,
            gSize[gi],
          );
          const axes = gAxes[gi] as string | string[];
          const local =
            stage === 1
              ? lax.dynamicSliceInDim(lax.psum(G, axes), jnp.multiply(gIndex(gi), K), K, 0)
              : lax.psumScatter(G, axes, { tiled: true });
          return unpackLocal(jnp.divide(local, gSize[gi]), ks);
        });
        ps = perGroup(all, (gi, js) => {
          const ks = js.map((j) => shardLen[j]);
          const K = ks.reduce((a, b) => a + b, 0);
          const pAll = packRows(
            js.map((j) => flatPad(pl[j], shardLen[j] * gSize[gi])),
            ks,
            gSize[gi],
          );
          return unpackLocal(lax.dynamicSliceInDim(pAll, jnp.multiply(gIndex(gi), K), K, 0), ks);
        });
      }
      const [u, next] = withShardedUpdate(zeroTensorContext(L, true), () =>
        opt.update(unflatten(paramDef, gs), s, unflatten(paramDef, ps)),
      );
      const np = flatten(optim.applyUpdates(unflatten(paramDef, ps), u))[0] as Array[];
      if (stage === 3) return [loss, unflatten(paramDef, np) as Params, next];
      // stages 1-2: the updated slices all-gathered back into each tensor rank's blocks
      return [loss, unflatten(paramDef, gatherLeaves(np, all)) as Params, next];
    };
    return shardMap(body, {
      mesh: L.mesh,
      inSpecs: [L.paramSpecs, L.optSpecs, ...globalThis.Array.from({ length: nBatch }, () => P(dataAxis))],
      outSpecs: [P(), L.paramSpecs, L.optSpecs],
      checkVma: false, // the loss and replicated leaves are equal over the tensor axis by construction
    }) as Compiled;
  }

  return (state, ...batch) => {
    const L = state?.layout;
    if (!L || L.stage !== opts.stage || L.mesh !== mesh)
      throw new Error(
        `${fn}: the state was not laid out for stage ${opts.stage} on ${mesh.toString()}; make it with zeroTensorShardState(params, opt, mesh, { stage, tensorSpecs })`,
      );
    let byArity = compiled.get(L);
    if (!byArity) compiled.set(L, (byArity = new Map()));
    let f = byArity.get(batch.length);
    if (!f) byArity.set(batch.length, (f = build(L, batch.length)));
    const [l, p, s] = f(state.params, state.optState, ...batch);
    return [l, { params: p, optState: s, layout: L }];
  };
}

/** Conversions for a zero.ts state (data axis only): the optimizer state's per-parameter leaves to full shapes. */
export function zeroFullOptState<Params>(
  state: ZeroState<Params>,
  opt: optim.GradientTransformation,
  fullParams: Params,
): { full: optim.OptState; slots: (number | null)[] } {
  const L = state.layout;
  const [sl] = flatten(state.optState);
  if (L.stage === 0) return { full: state.optState, slots: sl.map(() => null) };
  const flatLens = L.shardLen.map((k) => k * L.n);
  const slots = optStateSlots(flatten(opt.init(fullParams))[0] as Array[], sl as Array[], L.shapes, flatLens);
  return { full: mapOptSlots(state.optState, slots, (i, leaf) => unflatPad(leaf, L.shapes[i])), slots };
}

/** The inverse of zeroFullOptState: a full-shaped optimizer state onto a zero.ts layout (slots from that call). */
export function zeroPlaceOptState(
  layout: ZeroState<unknown>["layout"],
  full: optim.OptState,
  slots: readonly (number | null)[],
): optim.OptState {
  const [specs] = flatten(layout.optSpecs, isSpec);
  const spec = (j: number) => (layout.stage === 0 ? P() : (specs[j] as PartitionSpec));
  const put = (x: Array, j: number) => devicePut(x, NamedSharding(layout.mesh, spec(j)));
  return mapOptSlots(
    full,
    slots,
    (i, leaf, j) => put(flatPad(leaf, layout.shardLen[i] * layout.n), j),
    (leaf, j) => put(leaf, j),
  );
}
