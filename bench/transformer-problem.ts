/**
 * @file The training benchmarks' problem (bench/training.ts, bench/overlap-step-profile.ts): a small Transformer
 * (d64, 4 layers, seq 32, batch 16, adamw), its fixed token batch, and the same model as a layered loss (outer =
 * embeddings and final norm, layers = blocks) for the ZeRO steps. Import it after setting the config the caller needs.
 */
import type { Array as Arr } from "../src/core/array.js";
import { nn, numpy as jnp, optim } from "../src/index.js";
import * as tr from "../src/models/transformer.js";
import type { LayeredLoss } from "../src/models/zero.js";

export const cfg = { vocab: 32, dModel: 64, heads: 4, layers: 4, seq: 32, ff: 256 };
export const BATCH = 16;
export const opt = optim.adamw(1e-3);
/** Token b, i of the batch and its target (the next token of the same pattern). */
const tokenAt = (b: number, i: number, shift: number) => (b * 7 + i * 3 + shift) % cfg.vocab;
export const tokens = jnp.array(
  Array.from({ length: BATCH }, (_, b) => Array.from({ length: cfg.seq }, (_, i) => tokenAt(b, i, 0))),
  { dtype: "int32" },
);
export const targets = jnp.array(
  Array.from({ length: BATCH }, (_, b) => Array.from({ length: cfg.seq }, (_, i) => tokenAt(b, i, 5))),
  { dtype: "int32" },
);

export interface Outer {
  embed: Arr;
  pos: Arr;
  lnf: Arr;
}
export const layered: LayeredLoss<Outer, tr.Block, [Arr, Arr]> = {
  embed: (o, x) => jnp.add(jnp.take(o.embed, x, 0), o.pos),
  layer: (p, h) => tr.block(cfg, p, h),
  head: (o, h, _x, y) => {
    const n = jnp.multiply(nn.standardize(h, -1, { epsilon: 1e-5 }), o.lnf);
    const logp = nn.logSoftmax(jnp.matmul(n, jnp.transpose(o.embed)), -1);
    return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(logp, nn.oneHot(y, cfg.vocab)), -1)));
  },
};
export const p0 = tr.initParams(cfg, 0);
export const asLayered = (p: tr.Params) => ({ outer: { embed: p.embed, pos: p.pos, lnf: p.lnf }, layers: p.blocks });
