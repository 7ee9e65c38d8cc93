/**
 * @file The GPT model: causality, the scan applies the stacked layers in order, remat leaves values
 * unchanged, gradients match central finite differences (float64), and the data x tensor sharded loss and gradients
 * (Megatron and FSDP-style specs, emulation and device runtime) equal the single-device ones.
 */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import { type Array, grad, jit, makeMesh, numpy as jnp, tree, valueAndGrad } from "../../src/index.js";
import {
  type GptConfig,
  type GptParams,
  gptForward,
  gptLoss,
  initGpt,
  makeGptShardedLoss,
  megatronSpec,
} from "../../src/models/gpt.js";

const cfg: GptConfig = { vocab: 16, dModel: 16, heads: 4, layers: 2, seq: 6, ff: 32, tied: false };
const toks = jnp.array(
  [0, 1, 2, 3].map((b) => [0, 1, 2, 3, 4, 5].map((i) => (b * 5 + i * 3) % 16)),
  { dtype: "int32" },
);
const tgts = jnp.array(
  [0, 1, 2, 3].map((b) => [0, 1, 2, 3, 4, 5].map((i) => (b * 7 + i) % 16)),
  { dtype: "int32" },
);
const mask = jnp.array(
  [0, 1, 2, 3].map(() => [0, 0, 1, 1, 1, 1]),
  { dtype: "float32" },
);
const maxRel = (a: Array, b: Array) => {
  const x = a.dataSync() as Float32Array,
    y = b.dataSync() as Float32Array;
  let m = 0,
    scale = 0;
  for (let i = 0; i < x.length; i++) scale = Math.max(scale, Math.abs(y[i]));
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i] - y[i]) / scale);
  return m;
};

test("the logits at a position do not depend on later tokens (causal attention)", () => {
  const p = initGpt(cfg, 1);
  const a = gptForward(cfg, p, toks).tolist() as number[][][];
  const changed = jnp.array(
    (toks.tolist() as number[][]).map((r) => [...r.slice(0, 3), 15, 14, 13]),
    { dtype: "int32" },
  );
  const b = gptForward(cfg, p, changed).tolist() as number[][][];
  for (let r = 0; r < 4; r++)
    for (let i = 0; i < 3; i++) for (let v = 0; v < 16; v++) assert.ok(Math.abs(a[r][i][v] - b[r][i][v]) < 1e-5);
  assert.ok(Math.abs(a[0][4][0] - b[0][4][0]) > 1e-6, "later positions do change");
});

test("the scan applies the stacked layers in order; remat does not change the loss or the gradients", () => {
  const p = initGpt(cfg, 2);
  const full = gptForward(cfg, p, toks);
  // the scan applies the stacked layers in order: reversing the stack changes the logits, reversing it back does not
  const swapped: GptParams = { ...p, blocks: tree.map((x: Array) => jnp.flip(x, 0), p.blocks) as GptParams["blocks"] };
  const back: GptParams = {
    ...swapped,
    blocks: tree.map((x: Array) => jnp.flip(x, 0), swapped.blocks) as GptParams["blocks"],
  };
  assert.ok(maxRel(gptForward(cfg, back, toks), full) < 1e-6);
  assert.ok(maxRel(gptForward(cfg, swapped, toks), full) > 1e-4, "layer order matters");
  for (const remat of ["everything", "dots", "dots_no_batch"] as const) {
    const [l0, g0] = valueAndGrad((q: GptParams) => gptLoss(cfg, q, toks, tgts, mask))(p) as [Array, GptParams];
    const [l1, g1] = valueAndGrad((q: GptParams) => gptLoss(cfg, q, toks, tgts, mask, { remat }))(p) as [
      Array,
      GptParams,
    ];
    assert.ok(Math.abs((l0.item() as number) - (l1.item() as number)) < 1e-6, remat);
    assert.ok(maxRel(g1.blocks.w1, g0.blocks.w1) < 1e-5, remat);
  }
});

test("gradients match central finite differences (float64)", () => {
  config.update("enableX64", true);
  try {
    const p = tree.map((x: Array) => x.astype("float64"), initGpt(cfg, 3)) as GptParams;
    const m64 = mask.astype("float64");
    const f = (q: GptParams) => gptLoss(cfg, q, toks, tgts, m64);
    const g = grad(f)(p) as GptParams;
    const h = 1e-6;
    const probe = (name: "wq" | "w1" | "wo", flat: number) => {
      const x = p.blocks[name];
      const v = x.dataSync() as Float64Array;
      const bump = (d: number) => {
        const w = Float64Array.from(v);
        w[flat] += d;
        return f({ ...p, blocks: { ...p.blocks, [name]: jnp.array(w, { dtype: "float64" }).reshape(x.shape) } });
      };
      const fd = ((bump(h).item() as number) - (bump(-h).item() as number)) / (2 * h);
      const an = (g.blocks[name].dataSync() as Float64Array)[flat];
      assert.ok(Math.abs(fd - an) < 1e-6 + 1e-5 * Math.abs(fd), `${name}[${flat}]: fd ${fd} vs grad ${an}`);
    };
    probe("wq", 5);
    probe("w1", 100);
    probe("wo", 300);
    const fdWte = (() => {
      const v = Float64Array.from(p.wte.dataSync() as Float64Array);
      const at = 3 * 16 + 2;
      v[at] += h;
      const up = f({ ...p, wte: jnp.array(v, { dtype: "float64" }).reshape([16, 16]) }).item() as number;
      v[at] -= 2 * h;
      const down = f({ ...p, wte: jnp.array(v, { dtype: "float64" }).reshape([16, 16]) }).item() as number;
      return [(up - down) / (2 * h), (g.wte.dataSync() as Float64Array)[at]];
    })();
    assert.ok(Math.abs(fdWte[0] - fdWte[1]) < 1e-6 + 1e-5 * Math.abs(fdWte[0]), `wte: ${fdWte}`);
  } finally {
    config.update("enableX64", false);
  }
});

const FSDP = { embeddings: ["data", null], attention: ["data", "model", null], mlp: [null, "model"] };
for (const runtime of ["emulation", "devices"] as const) {
  for (const [name, spec] of [
    ["Megatron", megatronSpec()],
    ["FSDP + Megatron", FSDP],
  ] as const) {
    test(`the 2x2 sharded loss and gradients equal the single-device ones (${name}, ${runtime})`, () => {
      config.update("spmdRuntime", runtime);
      try {
        const p = initGpt(cfg, 4);
        const mesh = makeMesh([2, 2], ["data", "model"]);
        const sharded = jit(valueAndGrad(makeGptShardedLoss(cfg, mesh, spec)));
        const [l, g] = sharded(p, toks, tgts, mask) as [Array, GptParams];
        const [l0, g0] = valueAndGrad((q: GptParams) => gptLoss(cfg, q, toks, tgts, mask))(p) as [Array, GptParams];
        assert.ok(Math.abs((l.item() as number) - (l0.item() as number)) < 1e-5 * Math.abs(l0.item() as number));
        const leaves = tree.leaves(g) as Array[],
          leaves0 = tree.leaves(g0) as Array[];
        assert.equal(leaves.length, leaves0.length);
        leaves.forEach((x, i) => assert.ok(maxRel(x, leaves0[i]) < 1e-4, `leaf ${i}: ${maxRel(x, leaves0[i])}`));
      } finally {
        config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
      }
    });
  }
}
