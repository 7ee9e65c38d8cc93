/**
 * @file A GPT-style decoder (token + position embeddings, pre-norm blocks with causal multi-head attention and a GELU
 * MLP, final norm, tied or untied head) with layer parameters stacked for lax.scan, remat per block, and a data x tensor
 * parallel training step (one shardMap: Megatron psum over the tensor axis, FSDP-style gathers of data-sharded params).
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as nn from "../nn/index.js";
import * as random from "../random/index.js";
import * as optim from "../optim/index.js";
import * as lax from "../lax/index.js";
import { checkpoint, checkpointPolicies } from "../transforms/checkpoint.js";
import { valueAndGrad } from "../transforms/api.js";
import { customVjp } from "../transforms/custom-derivatives.js";
import type { Mesh } from "../parallel/mesh.js";
import { P, type PartitionSpec, PartitionSpecImpl } from "../parallel/sharding.js";
import { type SpecTree, shardMap } from "../parallel/shard-map.js";
import { causalAttention } from "./transformer.js";

/** Model hyperparameters. */
export interface GptConfig {
  vocab: number;
  dModel: number;
  heads: number;
  layers: number;
  /** Context length (the position table's rows). */
  seq: number;
  /** MLP hidden width. */
  ff: number;
  /** Share the token embedding as the output head (logits = x @ wte^T). */
  tied: boolean;
}

/** Stacked per-layer parameters (leading dim = layers). */
export interface GptBlocks {
  ln1g: Array; // [L, d]
  ln1b: Array;
  wq: Array; // [L, d, heads, hd]
  wk: Array;
  wv: Array;
  wo: Array; // [L, heads, hd, d]
  ln2g: Array;
  ln2b: Array;
  w1: Array; // [L, d, ff]
  b1: Array; // [L, ff]
  w2: Array; // [L, ff, d]
  b2: Array; // [L, d]
}

export interface GptParams {
  wte: Array; // [vocab, d]
  wpe: Array; // [seq, d]
  blocks: GptBlocks;
  lnfg: Array;
  lnfb: Array;
  head?: Array; // [d, vocab] when untied
}

/** Mesh-axis name (or null) per dimension, JSON-like, as the config's sharding_spec lists. */
export type AxisList = readonly (string | readonly string[] | null)[];

/** The three per-group specs of the config (without the stacked layer dim). */
export interface GptShardingSpec {
  /** wte [vocab, d] (wpe [seq, d] takes (None, spec[1]); the untied head [d, vocab] takes it reversed). */
  embeddings: AxisList;
  /** wq/wk/wv [d, heads, head_dim]; wo [heads, head_dim, d] takes (spec[1], spec[2], spec[0]). */
  attention: AxisList;
  /** w1 [d, ff]; w2 [ff, d] takes it reversed; b1 [ff] takes spec[1]. */
  mlp: AxisList;
}

/** Names of the mesh axes the step uses. */
export interface GptAxes {
  data: string;
  model: string;
}

/** The rank of each group's reference array (what sharding_spec lists describe). */
export const SPEC_RANKS = { embeddings: 2, attention: 3, mlp: 2 } as const;

/** Replicated specs (no sharding of parameters). */
export const REPLICATED_SPEC: GptShardingSpec = { embeddings: [], attention: [], mlp: [] };

/** Megatron sharding: heads and MLP hidden units over `model`, everything else replicated. */
export const megatronSpec = (model = "model"): GptShardingSpec => ({
  embeddings: [null, null],
  attention: [null, model, null],
  mlp: [null, model],
});

/** Initializes parameters from one seed (the same values whatever the mesh). */
export function initGpt(cfg: GptConfig, seed: number): GptParams {
  const { vocab: v, dModel: d, heads: h, layers: L, seq: s, ff } = cfg;
  const hd = d / h;
  let key = random.PRNGKey(seed);
  const draw = (shape: number[], std: number): Array => {
    const [k1, k2] = random.split(key) as unknown as Array[];
    key = k1;
    return jnp.multiply(random.normal(k2, shape), std);
  };
  const out = 0.02 / Math.sqrt(2 * L); // GPT-2's scaled init of the residual projections
  const p: GptParams = {
    wte: draw([v, d], 0.02),
    wpe: draw([s, d], 0.02),
    blocks: {
      ln1g: jnp.ones([L, d]),
      ln1b: jnp.zeros([L, d]),
      wq: draw([L, d, h, hd], 0.02),
      wk: draw([L, d, h, hd], 0.02),
      wv: draw([L, d, h, hd], 0.02),
      wo: draw([L, h, hd, d], out),
      ln2g: jnp.ones([L, d]),
      ln2b: jnp.zeros([L, d]),
      w1: draw([L, d, ff], 0.02),
      b1: jnp.zeros([L, ff]),
      w2: draw([L, ff, d], out),
      b2: jnp.zeros([L, d]),
    },
    lnfg: jnp.ones([d]),
    lnfb: jnp.zeros([d]),
  };
  if (!cfg.tied) p.head = draw([d, v], 0.02);
  return p;
}

type Entry = string | string[] | null;
const pad = (spec: AxisList, rank: number): Entry[] => {
  const s = spec.map((e) => (e === null || typeof e === "string" ? e : [...e]));
  while (s.length < rank) s.push(null);
  return s;
};

/** PartitionSpecs of every parameter (the layer dim of stacked params is never sharded). */
export function gptParamSpecs(cfg: GptConfig, spec: GptShardingSpec): SpecTree {
  const e = pad(spec.embeddings, 2),
    a = pad(spec.attention, 3),
    m = pad(spec.mlp, 2);
  const rep = P();
  const specs: Record<string, unknown> = {
    wte: P(...e),
    wpe: P(null, e[1]), // positions are never split (the context length is the task's, e.g. 11)
    blocks: {
      ln1g: rep,
      ln1b: rep,
      wq: P(null, ...a),
      wk: P(null, ...a),
      wv: P(null, ...a),
      wo: P(null, a[1], a[2], a[0]),
      ln2g: rep,
      ln2b: rep,
      w1: P(null, ...m),
      b1: P(null, m[1]),
      w2: P(null, m[1], m[0]),
      b2: rep,
    },
    lnfg: rep,
    lnfb: rep,
  };
  if (!cfg.tied) specs.head = P(e[1], e[0]);
  return specs as SpecTree;
}

/**
 * Inside the shardMap body: all-gathers every dimension of a parameter block that its spec shards over an axis
 * other than the tensor axis (FSDP-style storage; the gradient of the gather is a reduce-scatter).
 */
function gatherStorage(x: Array, spec: PartitionSpec, model: string): Array {
  spec.entries.forEach((entry, dim) => {
    const names = entry === null || entry === undefined ? [] : typeof entry === "string" ? [entry] : [...entry];
    const gather = names.filter((n) => n !== model);
    if (gather.length) x = lax.allGather(x, gather.length === 1 ? gather[0] : gather, { axis: dim, tiled: true });
  });
  return x;
}

const layerNorm = (x: Array, g: Array, b: Array): Array =>
  jnp.add(jnp.multiply(nn.standardize(x, -1, { epsilon: 1e-5 }), g), b);

/** Remat policies by config name. */
export const REMAT_POLICIES = {
  none: null,
  everything: checkpointPolicies.nothingSaveable,
  dots: checkpointPolicies.dotsSaveable,
  dots_no_batch: checkpointPolicies.dotsWithNoBatchDimsSaveable,
} as const;
export type RematPolicy = keyof typeof REMAT_POLICIES;

type Layer = GptLayer;

/** One layer's parameters (a slice of GptBlocks along the layer dim). */
export interface GptLayer {
  ln1g: Array;
  ln1b: Array;
  wq: Array;
  wk: Array;
  wv: Array;
  wo: Array;
  ln2g: Array;
  ln2b: Array;
  w1: Array;
  b1: Array;
  w2: Array;
  b2: Array;
}

/**
 * One pre-norm block on x [b, s, d]. With `tp`, wq/wk/wv/w1/b1 hold this rank's heads / hidden units and wo/w2 the
 * matching rows; the two row-parallel products are summed over `tp` (psum), so x stays replicated over `tp`.
 */
function block(p: Layer, x: Array, tp: string | null, gradInBody = false): Array {
  const [b, s, d] = x.shape;
  const [, h, hd] = p.wq.shape;
  const ops = tp && gradInBody ? megatronOps(tp) : null;
  const reduce = (t: Array) => (ops ? ops.exit(t) : tp ? lax.psum(t, tp) : t);
  const enter = (t: Array) => (ops ? ops.enter(t) : t);
  const a = enter(layerNorm(x, p.ln1g, p.ln1b));
  const proj = (w: Array) =>
    jnp.transpose(jnp.reshape(jnp.matmul(a, jnp.reshape(w, [d, h * hd])), [b, s, h, hd]), [0, 2, 1, 3]);
  const q = proj(p.wq),
    k = proj(p.wk),
    v = proj(p.wv);
  const ctx = causalAttention(q, k, v);
  const x1 = jnp.add(x, reduce(jnp.matmul(ctx, jnp.reshape(p.wo, [h * hd, d]))));
  const m = nn.gelu(jnp.add(jnp.matmul(enter(layerNorm(x1, p.ln2g, p.ln2b)), p.w1), p.b1));
  return jnp.add(jnp.add(x1, reduce(jnp.matmul(m, p.w2))), p.b2);
}

/**
 * One block outside the layer scan (ZeRO's layered loss, pipeline stages): x [b, s, d] -> [b, s, d]. `gradInBody`:
 * the gradient is taken inside the shardMap body (ZeRO x tensor parallel), so the tensor-axis collectives are
 * Megatron's conjugate pair with explicit gradients instead of psum (whose transpose there needs varying-axis types).
 */
export const gptBlock = (p: GptLayer, x: Array, tp: string | null = null, gradInBody = false): Array =>
  block(p, x, tp, gradInBody);

/** Megatron's f (enter: identity, gradient psum'd) and g (exit: psum, gradient passed through) over an axis. */
interface MegatronOps {
  enter(x: Array): Array;
  exit(x: Array): Array;
}
const megatronCache = new Map<string, MegatronOps>();
function megatronOps(tp: string): MegatronOps {
  let m = megatronCache.get(tp);
  if (m) return m;
  // before a column-parallel product: every rank's partial input cotangent is summed over the tensor axis
  const enter = customVjp((x: Array): Array => x);
  enter.defvjp(
    (x: Array): [Array, Array[]] => [x, []],
    (_r: Array[], ct: Array) => [lax.psum(ct, tp)],
  );
  // after a row-parallel product: the sum is replicated, so its cotangent (replicated) goes to every rank unchanged
  const exit = customVjp((x: Array): Array => lax.psum(x, tp));
  exit.defvjp(
    (x: Array): [Array, Array[]] => [lax.psum(x, tp), []],
    (_r: Array[], ct: Array) => [ct],
  );
  m = { enter: (x) => enter(x), exit: (x) => exit(x) };
  megatronCache.set(tp, m);
  return m;
}

/** The first activation: token plus position embeddings of int32 tokens [b, s]. */
export function gptEmbed(cfg: GptConfig, params: Pick<GptParams, "wte" | "wpe">, tokens: Array): Array {
  const s = tokens.shape[1];
  const wpe = s === cfg.seq ? params.wpe : lax.slice(params.wpe, [0, 0], [s, cfg.dModel]);
  return jnp.add(jnp.take(params.wte, tokens, 0), wpe);
}

/** Logits from the last activation: the final norm, then the untied head or the tied embedding. */
export function gptLogits(params: Pick<GptParams, "wte" | "lnfg" | "lnfb" | "head">, x: Array): Array {
  const y = layerNorm(x, params.lnfg, params.lnfb);
  return jnp.matmul(y, params.head ?? jnp.transpose(params.wte));
}

/** Masked mean cross-entropy of logits [b, s, vocab] against targets [b, s] (mask 1 where scored). */
export function gptMaskedXent(cfg: GptConfig, logits: Array, targets: Array, mask: Array): Array {
  const logp = nn.logSoftmax(logits, -1);
  const nll = jnp.negative(jnp.sum(jnp.multiply(logp, nn.oneHot(targets, cfg.vocab)), -1));
  return jnp.divide(jnp.sum(jnp.multiply(nll, mask)), jnp.sum(mask));
}

/** Logits [b, s, vocab] for int32 tokens [b, s] (s <= cfg.seq); `tp` names the tensor axis inside a shardMap. */
export function gptForward(
  cfg: GptConfig,
  params: GptParams,
  tokens: Array,
  opts: { tp?: string | null; remat?: RematPolicy } = {},
): Array {
  const tp = opts.tp ?? null,
    s = tokens.shape[1];
  const wpe = s === cfg.seq ? params.wpe : lax.slice(params.wpe, [0, 0], [s, cfg.dModel]);
  const x0 = jnp.add(jnp.take(params.wte, tokens, 0), wpe);
  const policy = REMAT_POLICIES[opts.remat ?? "none"];
  const body = (h: Array, p: Layer) => block(p, h, tp);
  const step = policy === null ? body : checkpoint(body, { policy });
  const [x] = lax.scan((h: Array, p: Layer): [Array, null] => [step(h, p), null], x0, params.blocks as Layer);
  const y = layerNorm(x, params.lnfg, params.lnfb);
  return jnp.matmul(y, params.head ?? jnp.transpose(params.wte));
}

/** Mean cross-entropy of `targets` [b, s] weighted by `mask` [b, s] (1 where a position is scored). */
export function gptLoss(
  cfg: GptConfig,
  params: GptParams,
  tokens: Array,
  targets: Array,
  mask: Array,
  opts: { tp?: string | null; remat?: RematPolicy } = {},
): Array {
  const logp = nn.logSoftmax(gptForward(cfg, params, tokens, opts), -1);
  const nll = jnp.negative(jnp.sum(jnp.multiply(logp, nn.oneHot(targets, cfg.vocab)), -1));
  return jnp.divide(jnp.sum(jnp.multiply(nll, mask)), jnp.sum(mask));
}

/** One training step: (params, optState, tokens, targets, mask) -> [loss, params, optState]. */
export type GptStep = (
  params: GptParams,
  state: optim.OptState,
  tokens: Array,
  targets: Array,
  mask: Array,
) => [Array, GptParams, optim.OptState];

/**
 * The data x tensor parallel loss as one shardMap over `mesh` (batch over `axes.data`, parameters laid out by `spec`,
 * psum over `axes.model` inside each block, the per-shard losses averaged with pmean over `axes.data`); its gradient,
 * taken of the whole shardMap, is exact for replicated and sharded parameters alike (the transpose psums the
 * cotangents of replicated inputs, i.e. the gradient pmean over data, and reduce-scatters through the gathers).
 * Each shard must score the same number of positions (fixed-format tasks do) for the pmean to be the global mean.
 */
export function makeGptShardedLoss(
  cfg: GptConfig,
  mesh: Mesh,
  spec: GptShardingSpec,
  opts: { axes?: GptAxes; remat?: RematPolicy } = {},
): (params: GptParams, tokens: Array, targets: Array, mask: Array) => Array {
  const axes = opts.axes ?? { data: "data", model: "model" };
  const pspecs = gptParamSpecs(cfg, spec);
  const hasModel = mesh.axisNames.includes(axes.model);
  const body = (p: GptParams, x: Array, y: Array, m: Array): Array => {
    const local = mapSpecs(p, pspecs, (leaf, ps) => gatherStorage(leaf, ps, axes.model)) as GptParams;
    const l = gptLoss(cfg, local, x, y, m, { tp: hasModel ? axes.model : null, remat: opts.remat });
    return lax.pmean(l, axes.data);
  };
  const batch = P(axes.data);
  return shardMap(body, { mesh, inSpecs: [pspecs, batch, batch, batch], outSpecs: P(), checkVma: false });
}

/** Applies f to each parameter leaf with its PartitionSpec (the two trees share their structure). */
function mapSpecs(p: GptParams, specs: SpecTree, f: (x: Array, s: PartitionSpec) => Array): unknown {
  const rec = (x: unknown, s: unknown): unknown =>
    s instanceof PartitionSpecImpl
      ? f(x as Array, s)
      : Object.fromEntries(Object.entries(x as object).map(([k, v]) => [k, rec(v, (s as Record<string, unknown>)[k])]));
  return rec(p, specs);
}

/**
 * A training step: value and gradient of the sharded loss, then the optimizer update (one jit around it runs
 * the whole step; the shardMap runs on the mesh's devices under spmdRuntime "devices").
 */
export function makeGptTrainStep(
  cfg: GptConfig,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  spec: GptShardingSpec,
  opts: { axes?: GptAxes; remat?: RematPolicy } = {},
): GptStep {
  const shardedLoss = makeGptShardedLoss(cfg, mesh, spec, opts);
  return (params, state, tokens, targets, mask) => {
    const [l, g] = valueAndGrad(shardedLoss)(params, tokens, targets, mask) as [Array, GptParams];
    const [updates, next] = opt.update(g, state, params);
    return [l, optim.applyUpdates(params, updates) as GptParams, next];
  };
}
