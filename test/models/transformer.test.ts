/** @file The small Transformer trains (loss falls) and a data-parallel step over a 2-device mesh equals the 1-device step. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import { type Array, jit, makeMesh, numpy as jnp, optim, shardMap, sharding, tree } from "../../src/index.js";
import {
  type TransformerConfig,
  initParams,
  loss,
  makeShardedTrainStep,
  makeTrainStep,
} from "../../src/models/transformer.js";
const { P } = sharding;

const cfg: TransformerConfig = { vocab: 16, dModel: 16, heads: 2, layers: 2, seq: 8, ff: 32 };
// a copy task: predict the token two positions back
function batch(n: number, offset: number): [Array, Array] {
  const toks = globalThis.Array.from({ length: n }, (_, b) =>
    globalThis.Array.from({ length: cfg.seq }, (_, i) => (b * 7 + i * 3 + offset) % cfg.vocab),
  );
  const tgt = toks.map((r) => r.map((_, i) => r[Math.max(0, i - 2)]));
  return [jnp.array(toks, { dtype: "int32" }), jnp.array(tgt, { dtype: "int32" })];
}

test("training reduces the loss", () => {
  const params0 = initParams(cfg, 0);
  const opt = optim.adamw(3e-3);
  const step = jit(makeTrainStep(cfg, opt, null));
  let params = params0,
    state = opt.init(params0);
  const [x, y] = batch(8, 0);
  const first = loss(cfg, params, x, y).item() as number;
  let l: Array = jnp.zeros([]);
  for (let i = 0; i < 30; i++) [l, params, state] = step(params, state, x, y);
  const last = l.item() as number;
  assert.ok(Math.abs(first - Math.log(cfg.vocab)) < 0.5, `initial loss ${first} should be near log(vocab)`);
  assert.ok(last < first * 0.8, `loss should fall: ${first} -> ${last}`);
});

test("a data-parallel step (shardMap over 2 devices, pmean of grads) matches the single-device step", () => {
  const params = initParams(cfg, 1);
  const opt = optim.sgd(0.1);
  const state = opt.init(params);
  const [x, y] = batch(4, 5);
  const [l1, p1] = makeTrainStep(cfg, opt, null)(params, state, x, y);
  const mesh = makeMesh([2], ["data"]);
  const dp = shardMap(makeTrainStep(cfg, opt, "data"), {
    mesh,
    inSpecs: [P(), P(), P("data"), P("data")],
    outSpecs: [P(), P(), P()],
  });
  const [l2, p2] = jit(dp)(params, state, x, y) as [Array, typeof params, unknown];
  assert.ok(Math.abs((l1.item() as number) - (l2.item() as number)) < 1e-5);
  const a = tree.leaves(p1) as Array[],
    b = tree.leaves(p2) as Array[];
  a.forEach((u, i) => {
    const d = jnp.max(jnp.abs(jnp.subtract(u, b[i]))).item() as number;
    assert.ok(d < 1e-5, `parameter leaf ${i} differs by ${d}`);
  });
});

test("a data x tensor parallel step on a (2, 2) mesh matches the single-device step", () => {
  const params = initParams(cfg, 2);
  const opt = optim.sgd(0.1);
  const state = opt.init(params);
  const [x, y] = batch(4, 3);
  const [l1, p1] = makeTrainStep(cfg, opt, null)(params, state, x, y);
  const mesh = makeMesh([2, 2], ["data", "model"]);
  const [l2, p2] = jit(makeShardedTrainStep(cfg, opt, mesh))(params, state, x, y);
  assert.ok(Math.abs((l1.item() as number) - (l2.item() as number)) < 1e-5, `${l1.item()} vs ${l2.item()}`);
  const a = tree.leaves(p1) as Array[],
    b = tree.leaves(p2) as Array[];
  a.forEach((u, i) => {
    const d = jnp.max(jnp.abs(jnp.subtract(u, b[i]))).item() as number;
    assert.ok(d < 1e-5, `parameter leaf ${i} differs by ${d}`);
  });
});
