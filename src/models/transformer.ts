/**
 * @file A small decoder-only Transformer LM built from jaxts's public pieces: init, forward (with per-block remat),
 * cross-entropy loss and a data-parallel training step over a mesh axis (shardMap + psum of gradients, optim.adamw).
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as nn from "../nn/index.js";
import * as random from "../random/index.js";
import * as optim from "../optim/index.js";
import * as lax from "../lax/index.js";
import { checkpoint, checkpointPolicies } from "../transforms/checkpoint.js";
import { valueAndGrad } from "../transforms/api.js";
import { map as treeMap } from "../core/tree.js";
import type { Mesh } from "../parallel/mesh.js";
import { P } from "../parallel/sharding.js";
import { type SpecTree, shardMap } from "../parallel/shard-map.js";

export interface TransformerConfig {
  vocab: number;
  dModel: number;
  heads: number;
  layers: number;
  seq: number;
  ff: number;
}
export interface Block {
  wq: Array;
  wk: Array;
  wv: Array;
  wo: Array;
  w1: Array;
  w2: Array;
  ln1: Array;
  ln2: Array;
}
export interface Params {
  embed: Array;
  pos: Array;
  blocks: Block[];
  lnf: Array;
}

/** Initializes parameters with scaled normal draws from one key (deterministic for a seed). */
export function initParams(cfg: TransformerConfig, seed: number): Params {
  let key = random.PRNGKey(seed);
  const draw = (shape: number[], scale: number): Array => {
    const [k1, k2] = random.split(key) as unknown as Array[];
    key = k1;
    return jnp.multiply(random.normal(k2, shape), scale);
  };
  const d = cfg.dModel;
  return {
    embed: draw([cfg.vocab, d], 0.02),
    pos: draw([cfg.seq, d], 0.02),
    blocks: globalThis.Array.from({ length: cfg.layers }, () => ({
      wq: draw([d, d], d ** -0.5),
      wk: draw([d, d], d ** -0.5),
      wv: draw([d, d], d ** -0.5),
      wo: draw([d, d], d ** -0.5),
      w1: draw([d, cfg.ff], d ** -0.5),
      w2: draw([cfg.ff, d], cfg.ff ** -0.5),
      ln1: jnp.ones([d]),
      ln2: jnp.ones([d]),
    })),
    lnf: jnp.ones([d]),
  };
}

const layerNorm = (x: Array, g: Array): Array => jnp.multiply(nn.standardize(x, -1, { epsilon: 1e-5 }), g);

/** Causal softmax attention of q, k, v [b, h, s, hd] (masked scores -1e9), heads merged back: [b, s, h * hd]. */
export function causalAttention(q: Array, k: Array, v: Array): Array {
  const [b, h, s, hd] = q.shape;
  const scores = jnp.multiply(jnp.matmul(q, jnp.swapaxes(k, -1, -2)), 1 / Math.sqrt(hd));
  const causal = jnp.tril(jnp.ones([s, s], { dtype: "bool" }));
  const att = nn.softmax(jnp.where(causal, scores, -1e9), -1);
  return jnp.reshape(jnp.transpose(jnp.matmul(att, v), [0, 2, 1, 3]), [b, s, h * hd]);
}

/**
 * One pre-norm block: causal multi-head attention then an MLP, both residual. x: [batch, seq, d].
 * With `tp` (a mesh axis), the weights are Megatron-style shards: wq/wk/wv/w1 split by columns (this shard's heads
 * and hidden units), wo/w2 by rows; the two row-parallel products are summed over `tp` with psum.
 */
export function block(cfg: TransformerConfig, p: Block, x: Array, tp: string | null = null): Array {
  const [b, s, d] = x.shape;
  const hd = d / cfg.heads,
    h = p.wq.shape[1] / hd;
  const reduce = (t: Array) => (tp ? lax.psum(t, tp) : t);
  const a = layerNorm(x, p.ln1);
  const split = (t: Array) => jnp.transpose(jnp.reshape(t, [b, s, h, hd]), [0, 2, 1, 3]); // [b, h, s, hd]
  const q = split(jnp.matmul(a, p.wq)),
    k = split(jnp.matmul(a, p.wk)),
    v = split(jnp.matmul(a, p.wv));
  const ctx = causalAttention(q, k, v);
  const x1 = jnp.add(x, reduce(jnp.matmul(ctx, p.wo)));
  const m = nn.gelu(jnp.matmul(layerNorm(x1, p.ln2), p.w1));
  return jnp.add(x1, reduce(jnp.matmul(m, p.w2)));
}

/** Logits [batch, seq, vocab] for int32 tokens [batch, seq]; each block is rematerialized in the backward pass. */
export function forward(cfg: TransformerConfig, params: Params, tokens: Array, tp: string | null = null): Array {
  let x = jnp.add(jnp.take(params.embed, tokens, 0), params.pos);
  const remat = checkpoint((p: Block, h: Array) => block(cfg, p, h, tp), {
    policy: checkpointPolicies.dotsWithNoBatchDimsSaveable,
  });
  for (const p of params.blocks) x = remat(p, x);
  return jnp.matmul(layerNorm(x, params.lnf), jnp.transpose(params.embed));
}

/** Mean next-token cross-entropy. */
export function loss(
  cfg: TransformerConfig,
  params: Params,
  tokens: Array,
  targets: Array,
  tp: string | null = null,
): Array {
  const logp = nn.logSoftmax(forward(cfg, params, tokens, tp), -1);
  return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(logp, nn.oneHot(targets, cfg.vocab)), -1)));
}

/**
 * A data-parallel training step body for shardMap: per-shard gradients averaged over `axis` with pmean, then an
 * optax-style update. Returns [loss, params, optState].
 */
export function makeTrainStep(cfg: TransformerConfig, opt: optim.GradientTransformation, axis: string | null) {
  return (params: Params, state: optim.OptState, tokens: Array, targets: Array): [Array, Params, optim.OptState] => {
    let [l, g] = valueAndGrad((p: Params) => loss(cfg, p, tokens, targets))(params) as [Array, Params];
    if (axis) {
      l = lax.pmean(l, axis);
      g = treeMap((x: Array) => lax.pmean(x, axis), g) as Params;
    }
    const [updates, next] = opt.update(g, state, params);
    return [l, optim.applyUpdates(params, updates) as Params, next];
  };
}

/** PartitionSpecs of the parameters for Megatron-style tensor parallelism over mesh axis `tp`. */
export function paramSpecs(cfg: TransformerConfig, tp: string): SpecTree {
  const col = P(null, tp),
    row = P(tp, null),
    rep = P();
  return {
    embed: rep,
    pos: rep,
    lnf: rep,
    blocks: globalThis.Array.from({ length: cfg.layers }, () => ({
      wq: col,
      wk: col,
      wv: col,
      wo: row,
      w1: col,
      w2: row,
      ln1: rep,
      ln2: rep,
    })),
  };
}

/**
 * A data x tensor parallel training step: the loss is a shardMap over the mesh (batch split over `data`, weights
 * over `model`, activations summed with psum over `model`, the loss averaged with pmean over `data`), and the
 * gradient is taken of that whole program, so replicated and sharded parameters both get exact gradients.
 */
export function makeShardedTrainStep(
  cfg: TransformerConfig,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  axes = { data: "data", model: "model" },
) {
  const shardedLoss = shardMap(
    (p: Params, x: Array, y: Array) => lax.pmean(loss(cfg, p, x, y, axes.model), axes.data),
    { mesh, inSpecs: [paramSpecs(cfg, axes.model), P(axes.data), P(axes.data)], outSpecs: P() },
  );
  return (params: Params, state: optim.OptState, tokens: Array, targets: Array): [Array, Params, optim.OptState] => {
    const [l, g] = valueAndGrad(shardedLoss)(params, tokens, targets) as [Array, Params];
    const [updates, next] = opt.update(g, state, params);
    return [l, optim.applyUpdates(params, updates) as Params, next];
  };
}
