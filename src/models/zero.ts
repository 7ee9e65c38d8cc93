/**
 * @file ZeRO stages 0-3 over a mesh's data axis: a loss function (plain, or layered for per-layer FSDP gathering) plus
 * an optax-style optimizer becomes one shardMap training step; zeroShardState lays out parameters and optimizer state.
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import * as optim from "../optim/index.js";
import { checkpoint } from "../transforms/checkpoint.js";
import { valueAndGrad } from "../transforms/api.js";
import { flatten, unflatten, type TreeDef } from "../core/tree.js";
import { ShapeDtypeStruct } from "../transforms/api.js";
import { type ShardedUpdate, shardRefusal, withShardedUpdate } from "../optim/base.js";
import { Mesh } from "../parallel/mesh.js";
import { P, NamedSharding, type PartitionSpec } from "../parallel/sharding.js";
import { devicePut } from "../parallel/device-put.js";
import { type SpecTree, shardMap } from "../parallel/shard-map.js";
import { withCollectiveOverlap } from "../parallel/overlap-collectives.js";

/** 0: plain data parallel; 1: optimizer state sharded; 2: + gradients reduce-scattered; 3: + parameters sharded. */
export type ZeroStage = 0 | 1 | 2 | 3;

export interface ZeroOptions {
  /** The ZeRO stage (0-3). */
  stage: ZeroStage;
  /** The mesh axis the batch and the ZeRO shards are split over (default "data"). */
  dataAxis?: string;
  /** Rematerialize each layer of a layered loss in the backward pass (default true: stage 3 then re-gathers). */
  remat?: boolean;
  /**
   * Overlap communication with compute (default false): the step's collectives start early and are awaited late
   * (src/parallel/overlap-collectives.ts): stage 3 gathers layer i+1 while layer i computes and reduce-scatters a
   * layer's gradient while the next one's backward runs. Device runtime only; the values are the same either way.
   */
  overlap?: boolean;
  /**
   * The step consumes the state it is given (JAX's donate_argnums on a training step; default false): once the step
   * is dispatched, every array of the old state that is not also an output is disposed (reading it afterwards throws),
   * so its device buffers go back to the devices' pools as soon as the step has read them, and the next step's
   * outputs reuse them instead of fresh allocations that the garbage collector must reclaim. Values are unchanged.
   */
  donate?: boolean;
}

/**
 * A loss split into layers, so stage 3 can gather each layer's parameters just before the layer runs (inside its
 * rematerialized function: freed after, gathered again in the backward pass). Parameters are `{ outer, layers }`.
 */
export interface LayeredLoss<O, L, B extends unknown[]> {
  /** The first activation from the outer parameters (embeddings) and the local batch. */
  embed(outer: O, ...batch: B): Array;
  /** Layer `index` applied to the activation. */
  layer(p: L, h: Array, index: number): Array;
  /** The local mean loss (a scalar) from the last activation. */
  head(outer: O, h: Array, ...batch: B): Array;
}
export interface LayeredParams<O, L> {
  outer: O;
  layers: L[];
}

/** Where each parameter leaf lives under a stage (shapes, padded flat length per leaf); made by zeroShardState. */
export interface ZeroLayout {
  readonly stage: ZeroStage;
  readonly dataAxis: string;
  readonly mesh: Mesh;
  /** Data-axis size n. */
  readonly n: number;
  /** Each parameter leaf's shape, in flatten order. */
  readonly shapes: readonly (readonly number[])[];
  /** Each leaf's per-device shard length k = ceil(size / n) (the flat vector is zero-padded to n * k). */
  readonly shardLen: readonly number[];
  readonly paramDef: TreeDef;
  readonly optSpecs: SpecTree;
}

/** Parameters and optimizer state laid out for a stage, with the layout the step needs. */
export interface ZeroState<Params> {
  /** Stage 0-2: the parameters, replicated. Stage 3: each leaf a flat zero-padded [n * k] vector split over the data axis. */
  readonly params: Params;
  /** Stage 0: replicated. Stages 1-3: the optimizer state of the flat padded vectors, per-parameter leaves split. */
  readonly optState: optim.OptState;
  readonly layout: ZeroLayout;
}

const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
/** devicePut over every leaf of a pytree (devicePut itself maps only arrays and lists). */
export function putTree<T>(t: T, s: NamedSharding): T {
  const [ls, def] = flatten(t);
  return unflatten(
    def,
    ls.map((l) => devicePut(l, s)),
  ) as T;
}
const STAGES: readonly number[] = [0, 1, 2, 3];

/**
 * makeZeroTrainStep's donation: disposes the arrays of the consumed state that the step did not return (a dispatched
 * launch holds its own reference to every input buffer, so they are pooled once it has read them, not before).
 */
function donateState(state: ZeroState<unknown>, params: unknown, optState: unknown): void {
  const kept = new Set<unknown>([...flatten(params)[0], ...flatten(optState)[0]]);
  for (const leaf of [...flatten(state.params)[0], ...flatten(state.optState)[0]])
    if (!kept.has(leaf) && leaf && typeof leaf === "object" && "dispose" in leaf) (leaf as Array).dispose();
}

function checkOpts(fn: string, mesh: Mesh, opts: ZeroOptions): { stage: ZeroStage; dataAxis: string } {
  if (!(mesh instanceof Mesh)) throw new TypeError(`${fn}: expected a Mesh (from makeMesh), got ${String(mesh)}`);
  if (!opts || !STAGES.includes(opts.stage))
    throw new RangeError(`${fn}: stage must be 0, 1, 2 or 3, got ${String(opts?.stage)}`);
  if (opts.overlap !== undefined && typeof opts.overlap !== "boolean")
    throw new TypeError(`${fn}: overlap must be true or false, got ${String(opts.overlap)}`);
  const dataAxis = opts.dataAxis ?? "data";
  if (!mesh.axisNames.includes(dataAxis))
    throw new Error(
      `${fn}: dataAxis ${JSON.stringify(dataAxis)} is not an axis of ${mesh.toString()}; pass { dataAxis } naming one of [${mesh.axisNames.join(", ")}]`,
    );
  return { stage: opts.stage, dataAxis };
}

/** Stage >= 1 hands the optimizer flat slices: refuse one that is not exact on them (GradientTransformation.shards). */
export function checkShardable(fn: string, opt: optim.GradientTransformation, stage: ZeroStage): void {
  if (stage === 0) return;
  const why = shardRefusal(opt);
  if (why !== null)
    throw new Error(
      `${fn}: ZeRO stage ${stage} updates flat 1/n slices of every parameter, and ${why}; use stage 0 (plain data parallel) for this optimizer`,
    );
}

/**
 * The optimizer's sharded-update context: partial sums are psum'd over the data axis; mask functions see
 * ShapeDtypeStructs of the full parameter shapes (for a tree shaped like the parameters).
 */
export function shardedContext(
  stage: ZeroStage,
  dataAxis: string,
  paramDef: TreeDef,
  shapes: readonly (readonly number[])[],
  inStep: boolean,
): ShardedUpdate {
  return {
    where: `ZeRO stage ${stage} over mesh axis ${JSON.stringify(dataAxis)}`,
    sum: (x: Array) => {
      if (!inStep) throw new Error(`ZeRO stage ${stage}: a transformation's init summed over devices; only update may`);
      return lax.psum(x, dataAxis);
    },
    fullShapes: (t: unknown, what: string) => {
      const [ls, def] = flatten(t);
      if (!def.equals(paramDef))
        throw new Error(
          `${what}: under ZeRO stage ${stage} it is given flat slices, and their full shapes are known only for a tree structured like the parameters (${paramDef.toString()}), not ${def.toString()}; pass the mask as a tree of booleans, or use stage 0`,
        );
      return unflatten(
        paramDef,
        ls.map((l, i) => new ShapeDtypeStruct([...shapes[i]], (l as Array).dtype)),
      );
    },
  };
}

/** x (any shape) as a flat vector zero-padded to length `len`. */
export function flatPad(x: Array, len: number): Array {
  const f = jnp.reshape(x, [x.size]);
  return len === x.size ? f : jnp.concatenate([f, jnp.zeros([len - x.size], { dtype: x.dtype })]);
}
/** The first `m` entries of a flat vector, reshaped. */
export function unflatPad(f: Array, shape: readonly number[]): Array {
  const m = size(shape);
  return jnp.reshape(m === f.shape[0] ? f : lax.sliceInDim(f, 0, m, 1, 0), [...shape]);
}

/**
 * Several leaves' [n * k_i] padded flat vectors as one [n * K] vector (K = sum k_i) whose block r (of K) holds block r
 * of every leaf: one collective then moves all of them (a tiled split or gather of it is each leaf's split or gather).
 */
export function packRows(flats: readonly Array[], ks: readonly number[], n: number): Array {
  if (flats.length === 1) return flats[0];
  const K = ks.reduce((a, b) => a + b, 0);
  return jnp.reshape(
    jnp.concatenate(
      flats.map((f, j) => jnp.reshape(f, [n, ks[j]])),
      1,
    ),
    [n * K],
  );
}
/** The inverse of packRows: each leaf's [n * k_i] vector. */
export function unpackRows(f: Array, ks: readonly number[], n: number): Array[] {
  if (ks.length === 1) return [f];
  const K = ks.reduce((a, b) => a + b, 0);
  const m = jnp.reshape(f, [n, K]);
  let off = 0;
  return ks.map((k) => {
    off += k;
    return jnp.reshape(lax.sliceInDim(m, off - k, off, 1, 1), [n * k]);
  });
}
/** A device's [K] block split back into its leaves' [k_i] blocks. */
export function unpackLocal(f: Array, ks: readonly number[]): Array[] {
  if (ks.length === 1) return [f];
  let off = 0;
  return ks.map((k) => {
    off += k;
    return lax.sliceInDim(f, off - k, off, 1, 0);
  });
}
export const packLocal = (xs: readonly Array[]): Array => (xs.length === 1 ? xs[0] : jnp.concatenate([...xs], 0));

/**
 * Lays out initial parameters and the optimizer state for `stage` over `dataAxis` of `mesh` (device-resident under
 * the devices runtime). A leaf of size m becomes a flat vector padded with zeros to n * ceil(m / n) for the sharded
 * stages (the padding's gradient and update are zero, so it stays zero). Optimizer state leaves of that flat length
 * are split over the data axis; others (step counts) are replicated.
 */
export function zeroShardState<Params>(
  params: Params,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  opts: ZeroOptions,
): ZeroState<Params> {
  const fn = "zeroShardState";
  const { stage, dataAxis } = checkOpts(fn, mesh, opts);
  checkShardable(fn, opt, stage);
  const n = mesh.axisSize(dataAxis);
  const [leaves, paramDef] = flatten(params);
  const arrs = leaves.map((l, i) => {
    const a = l as Array;
    if (!a || typeof a !== "object" || !("shape" in a))
      throw new TypeError(`${fn}: parameter leaf ${i} is not an array (got ${typeof l})`);
    if (!a.dtype.startsWith("float"))
      throw new TypeError(`${fn}: parameter leaf ${i} has dtype ${a.dtype}; expected a floating dtype`);
    return a;
  });
  const shapes = arrs.map((a) => [...a.shape]);
  const shardLen = arrs.map((a) => Math.ceil(a.size / n));
  const rep = NamedSharding(mesh, P());
  const split = NamedSharding(mesh, P(dataAxis));
  const flatLens = new Set(shardLen.map((k) => k * n));
  if (stage === 0) {
    const p = putTree(params, rep);
    const optState = putTree(opt.init(params), rep);
    const layout: ZeroLayout = { stage, dataAxis, mesh, n, shapes, shardLen, paramDef, optSpecs: P() };
    return { params: p, optState, layout };
  }
  const flat = unflatten(
    paramDef,
    arrs.map((a, i) => flatPad(a, shardLen[i] * n)),
  ) as Params;
  const st = withShardedUpdate(shardedContext(stage, dataAxis, paramDef, shapes, false), () => opt.init(flat));
  const [sl, sdef] = flatten(st);
  const specs = sl.map((l) => {
    const a = l as Array;
    return a.ndim === 1 && flatLens.has(a.shape[0]) ? P(dataAxis) : P();
  });
  const optState = unflatten(
    sdef,
    sl.map((l, i) => devicePut(l as Array, specs[i].length ? split : rep)),
  );
  const optSpecs = unflatten(sdef, specs) as SpecTree;
  const p = stage === 3 ? putTree(flat, split) : putTree(params, rep);
  return { params: p, optState, layout: { stage, dataAxis, mesh, n, shapes, shardLen, paramDef, optSpecs } };
}

/** The full parameters (their original shapes) of a ZeRO state, whatever the stage (stage 3 drops the padding). */
export function zeroGatherParams<Params>(state: ZeroState<Params>): Params {
  const { layout } = state;
  if (layout.stage !== 3) return state.params;
  const [leaves] = flatten(state.params);
  return unflatten(
    layout.paramDef,
    leaves.map((l, i) => unflatPad(l as Array, layout.shapes[i])),
  ) as Params;
}

/** Per device of the mesh (flat order): bytesInUse and peakBytesInUse from Device.memoryStats(). */
export function zeroMemoryReport(mesh: Mesh): { device: number; bytesInUse: number; peakBytesInUse: number }[] {
  return mesh.flatDevices.map((d) => {
    const s = d.memoryStats();
    return { device: d.id, bytesInUse: s.bytesInUse, peakBytesInUse: s.peakBytesInUse };
  });
}

type PlainLoss<Params, B extends unknown[]> = (params: Params, ...batch: B) => Array;

/**
 * The per-device loss of a ZeRO step. When `gathering` (stage 3), `gather` rebuilds full leaves from their shards just
 * before use: the whole tree for a plain loss; for a LayeredLoss the outer leaves once and each layer's inside its
 * (rematerialized, when `remat`) layer function, so gathered parameters are freed after the layer instead of kept as
 * residuals. `positions` mirrors the parameter tree with each leaf's flat index.
 */
export function zeroLocalLoss<Params, B extends unknown[]>(
  lossFn: PlainLoss<Params, B> | LayeredLoss<unknown, unknown, B>,
  paramDef: TreeDef,
  positions: { outer?: unknown; layers?: unknown[] },
  gathering: boolean,
  remat: boolean,
  gather: (leaves: Array[], at: readonly number[]) => Array[],
): (p: Params, batch: B) => Array {
  const posOf = (x: unknown): number[] => flatten(x)[0] as number[];
  return (p, batch) => {
    if (!isLayered(lossFn)) {
      if (!gathering) return (lossFn as PlainLoss<Params, B>)(p, ...batch);
      const [ls] = flatten(p);
      return (lossFn as PlainLoss<Params, B>)(
        unflatten(paramDef, gather(ls as Array[], posOf(positions))) as Params,
        ...batch,
      );
    }
    const lp = p as unknown as LayeredParams<unknown, unknown>;
    const [ol, odef] = flatten(lp.outer);
    const outer = gathering ? unflatten(odef, gather(ol as Array[], posOf(positions.outer))) : lp.outer;
    let h = lossFn.embed(outer, ...batch);
    lp.layers.forEach((layerP, idx) => {
      const ldef = flatten(layerP)[1];
      const at = posOf(positions.layers?.[idx]);
      const run = (q: unknown, x: Array): Array =>
        lossFn.layer(gathering ? unflatten(ldef, gather(flatten(q)[0] as Array[], at)) : q, x, idx);
      h = remat ? checkpoint(run)(layerP, h) : run(layerP, h);
    });
    return lossFn.head(outer, h, ...batch);
  };
}
export const isLayered = (f: unknown): f is LayeredLoss<unknown, unknown, unknown[]> =>
  typeof f === "object" && f !== null && "embed" in f && "layer" in f && "head" in f;

/**
 * A ZeRO training step over `dataAxis`: `step(state, ...batch)` returns [mean loss, next state]. Every batch
 * argument is split over the data axis along its first dimension. The loss is a plain `(params, ...batch) => scalar`
 * (stage 3 then gathers all parameters at the start) or a LayeredLoss over `{ outer, layers }` params (stage 3 gathers
 * each layer's parameters inside its rematerialized layer function). Stage 0 is the plain data-parallel step (pmean
 * of gradients). Stages 1-3 update flat slices: the optimizer must declare itself exact on them
 * (GradientTransformation.shards; every optim transformation does: global and per-parameter norms psum their partial
 * sums over the data axis, mask functions see the full shapes), else both functions refuse it.
 * The step runs one shardMap (compiled once per layout); call it eagerly, not under jit (the layout is not an array).
 */
export function makeZeroTrainStep<O, L, B extends unknown[]>(
  lossFn: LayeredLoss<O, L, B>,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  opts: ZeroOptions,
): (state: ZeroState<LayeredParams<O, L>>, ...batch: B) => [Array, ZeroState<LayeredParams<O, L>>];
export function makeZeroTrainStep<Params, B extends unknown[]>(
  lossFn: PlainLoss<Params, B>,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  opts: ZeroOptions,
): (state: ZeroState<Params>, ...batch: B) => [Array, ZeroState<Params>];
export function makeZeroTrainStep<Params, B extends unknown[]>(
  lossFn: PlainLoss<Params, B> | LayeredLoss<unknown, unknown, B>,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  opts: ZeroOptions,
): (state: ZeroState<Params>, ...batch: B) => [Array, ZeroState<Params>] {
  const fn = "makeZeroTrainStep";
  const { stage, dataAxis } = checkOpts(fn, mesh, opts);
  checkShardable(fn, opt, stage);
  const remat = opts.remat ?? true;
  if (typeof lossFn !== "function" && !isLayered(lossFn))
    throw new TypeError(`${fn}: expected a loss function or a { embed, layer, head } layered loss`);
  type Compiled = (...a: unknown[]) => [Array, Params, optim.OptState];
  const compiled = new WeakMap<ZeroLayout, Map<number, Compiled>>();

  function build(layout: ZeroLayout, nBatch: number): Compiled {
    const n = layout.n;
    const { shapes, shardLen, paramDef } = layout;
    // stage 3's gather of leaves (at flatten positions `at`): the tiled all-gather of each shard, padding dropped
    // (one all-gather of the leaves packed together: its transpose is one reduce-scatter of their gradients)
    const gatherLeaves = (ls: Array[], at: readonly number[]): Array[] => {
      if (ls.length === 0) return [];
      const ks = at.map((i) => shardLen[i]);
      const all = unpackRows(lax.allGather(packLocal(ls), dataAxis, { tiled: true }), ks, n);
      return all.map((f, j) => unflatPad(f, shapes[at[j]]));
    };
    // each leaf's flatten position, as a tree like the parameters (flatten orders object keys, so not outer first)
    const positions = unflatten(
      paramDef,
      shapes.map((_, i) => i),
    ) as { outer?: unknown; layers?: unknown[] };
    const posOf = (t: unknown): number[] => flatten(t)[0] as number[];
    if (isLayered(lossFn) && !globalThis.Array.isArray(positions.layers))
      throw new TypeError(
        `${fn}: a layered loss needs parameters { outer, layers: [...] }; these have no layers array`,
      );
    /** The local loss of params as the body holds them (stage 3: shards). */
    const localLoss = zeroLocalLoss<Params, B>(lossFn, paramDef, positions, stage === 3, remat, gatherLeaves);
    // stage 0's gradient all-reduces: a layered loss's one per layer, last layer first (the backward produces it
    // first, so with overlap its all-reduce runs while earlier layers' backward does), then the rest; else one of
    // every leaf. The same with overlap on and off (the programs differ only in where communication waits); the
    // device runtime's bucketing (config collectiveCombineBytes) then combines them up to its threshold
    const bucketsOf = (pos: typeof positions): number[][] => {
      const all = posOf(pos);
      if (!isLayered(lossFn)) return [all];
      const layers = (pos.layers ?? []).map((l) => posOf(l)).reverse();
      const inLayers = new Set(layers.flat());
      return [...layers, all.filter((i) => !inLayers.has(i))].filter((b) => b.length > 0);
    };
    const body = (p: Params, s: optim.OptState, ...batch: unknown[]): [Array, Params, optim.OptState] => {
      const [l, g] = valueAndGrad((q: Params) => localLoss(q, batch as B))(p) as [Array, Params];
      // means over the data axis as psum / n (pmean would also psum a vector of ones to count the members)
      const loss = jnp.divide(lax.psum(l, dataAxis), n);
      if (stage === 0) {
        // an all-reduce per bucket of gradients packed into one vector, then split back
        const [gl0] = flatten(g);
        const gm = unflatten(paramDef, allReduceBuckets(gl0 as Array[], bucketsOf(positions), dataAxis, n)) as Params;
        const [u, next] = opt.update(gm, s, p);
        return [loss, optim.applyUpdates(p as unknown, u) as Params, next];
      }
      const [gl] = flatten(g);
      let gs: Array[], ps: Array[];
      if (stage === 3) {
        // all_gather's transpose already reduce-scattered the gradient: sum over devices, so divide by n
        gs = (gl as Array[]).map((x) => jnp.divide(x, n));
        ps = flatten(p)[0] as Array[];
      } else {
        const me = lax.axisIndex(dataAxis); // int32 index along the data axis
        const K = shardLen.reduce((a, b) => a + b, 0);
        const mine = (f: Array) => lax.dynamicSliceInDim(f, jnp.multiply(me, K), K, 0);
        // every leaf's gradient packed into one vector: stage 1 all-reduces it and keeps its slice, stage 2
        // reduce-scatters it
        const G = packRows(
          (gl as Array[]).map((x, i) => flatPad(x, shardLen[i] * n)),
          shardLen,
          n,
        );
        const gLocal = stage === 1 ? mine(lax.psum(G, dataAxis)) : lax.psumScatter(G, dataAxis, { tiled: true });
        gs = unpackLocal(jnp.divide(gLocal, n), shardLen);
        const pAll = packRows(
          (flatten(p)[0] as Array[]).map((x, i) => flatPad(x, shardLen[i] * n)),
          shardLen,
          n,
        );
        ps = unpackLocal(mine(pAll), shardLen);
      }
      const gt = unflatten(paramDef, gs) as Params,
        pt = unflatten(paramDef, ps) as Params;
      // norms and mask functions inside the optimizer see the full parameters through the sharded-update context
      const [u, next] = withShardedUpdate(shardedContext(stage, dataAxis, paramDef, shapes, true), () =>
        opt.update(gt, s, pt),
      );
      const np = flatten(optim.applyUpdates(pt as unknown, u))[0] as Array[];
      if (stage === 3) return [loss, unflatten(paramDef, np) as Params, next];
      // stages 1-2: every device all-gathers the updated slices into the replicated parameters
      const fulls = unpackRows(lax.allGather(packLocal(np), dataAxis, { tiled: true }), shardLen, n);
      const full = fulls.map((f, i) => unflatPad(f, shapes[i]));
      return [loss, unflatten(paramDef, full) as Params, next];
    };
    const pSpec: PartitionSpec = stage === 3 ? P(dataAxis) : P();
    return shardMap(body, {
      mesh: layout.mesh,
      inSpecs: [pSpec, layout.optSpecs, ...globalThis.Array.from({ length: nBatch }, () => P(dataAxis))],
      outSpecs: [P(), pSpec, layout.optSpecs],
    }) as Compiled;
  }

  return (state: ZeroState<Params>, ...batch: B): [Array, ZeroState<Params>] => {
    const layout = state?.layout;
    if (!layout || layout.stage !== stage || layout.dataAxis !== dataAxis || layout.mesh !== mesh)
      throw new Error(
        `${fn}: the state was not laid out for stage ${stage} over ${JSON.stringify(dataAxis)} of ${mesh.toString()}` +
          (layout
            ? ` (it has stage ${layout.stage} over ${JSON.stringify(layout.dataAxis)} of ${layout.mesh.toString()})`
            : "") +
          "; make it with zeroShardState(params, opt, mesh, { stage, dataAxis })",
      );
    let byArity = compiled.get(layout);
    if (!byArity) compiled.set(layout, (byArity = new Map()));
    let f = byArity.get(batch.length);
    if (!f) byArity.set(batch.length, (f = build(layout, batch.length)));
    const step = f;
    const [l, p, s] = withCollectiveOverlap(opts.overlap ?? false, () => step(state.params, state.optState, ...batch));
    if (opts.donate) donateState(state, p, s);
    return [l, { params: p, optState: s, layout }];
  };
}

/** The mean over the data axis of every gradient leaf, one all-reduce per bucket (leaves by flatten position). */
function allReduceBuckets(gl: readonly Array[], buckets: readonly number[][], dataAxis: string, n: number): Array[] {
  const out: Array[] = new globalThis.Array<Array>(gl.length);
  for (const b of buckets) {
    const sum = lax.psum(packLocal(b.map((i) => jnp.reshape(gl[i], [gl[i].size]))), dataAxis);
    const parts = unpackLocal(
      jnp.divide(sum, n),
      b.map((i) => gl[i].size),
    );
    b.forEach((i, j) => (out[i] = jnp.reshape(parts[j], [...gl[i].shape])));
  }
  return out;
}
