/**
 * @file The GPT pipelined with its embeddings in stage 0 and its head and loss in the last stage (GPipe and 1F1B, 2
 * and 4 stages, a 2x2 pipe x data mesh, tied and untied) gives the unpipelined loss and gradients within 1e-4 over 3
 * SGD steps, and each edge row lives on its own stage's devices.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { prepareDevices } from "../../src/train/job.js";
prepareDevices(4);
import { type Array, jit, lax, numpy as jnp, optim, valueAndGrad } from "../../src/index.js";
import { makeMesh } from "../../src/parallel/mesh.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { type GptConfig, type GptParams, gptLoss, initGpt } from "../../src/models/gpt.js";
import {
  type GptPipeParams,
  gptEdgeLayout,
  gptFromPipe,
  gptToPipe,
  makeGptPipeEdgeLoss,
  makeGptPipeEdgeStep,
} from "../../src/train/pipeline-edges.js";

const skip = deviceRuntimeUnavailable() ?? false;
const cfg = (tied: boolean): GptConfig => ({ vocab: 16, dModel: 8, heads: 2, layers: 4, seq: 6, ff: 16, tied });
const B = 8;
const tokens = jnp
  .array(
    globalThis.Array.from({ length: B * 6 }, (_, i) => (i * 7 + 3) % 16),
    { dtype: "int32" },
  )
  .reshape([B, 6]);
const targets = jnp
  .array(
    globalThis.Array.from({ length: B * 6 }, (_, i) => (i * 5 + 1) % 16),
    { dtype: "int32" },
  )
  .reshape([B, 6]);
const mask = jnp
  .array(
    globalThis.Array.from({ length: B * 6 }, (_, i) => (i % 6 >= 3 ? 1 : 0)),
    { dtype: "float32" },
  )
  .reshape([B, 6]);

function maxRel(a: Array, b: Array): number {
  const av = a.dataSync() as Float32Array,
    bv = b.dataSync() as Float32Array;
  assert.equal(av.length, bv.length);
  const scale = Math.max(...globalThis.Array.from(bv, Math.abs), 1e-6);
  return Math.max(...globalThis.Array.from(av, (v, i) => Math.abs(v - bv[i]) / scale));
}
function assertTreeClose(got: GptParams, want: GptParams, what: string): void {
  for (const k of ["wte", "wpe", "lnfg", "lnfb", "head"] as const)
    if (want[k]) assert.ok(maxRel(got[k]!, want[k]!) < 1e-4, `${what} ${k}: ${maxRel(got[k]!, want[k]!)}`);
  for (const [k, v] of Object.entries(want.blocks))
    assert.ok(maxRel(got.blocks[k as "wq"], v as Array) < 1e-4, `${what} blocks.${k}`);
}

for (const [S, D, schedule, tied] of [
  [2, 1, "gpipe", true],
  [4, 1, "gpipe", false],
  [2, 1, "1f1b", false],
  [4, 1, "1f1b", true],
  [2, 2, "gpipe", true],
  [2, 2, "1f1b", true],
] as const)
  test(
    `the GPT with edge stages, ${S} stages x ${D} data, ${schedule}, ${tied ? "tied" : "untied"}: unpipelined loss and gradients over 3 steps`,
    { skip },
    () => {
      const c = cfg(tied);
      const mesh = makeMesh([S, D], ["pipe", "data"]);
      const layout = gptEdgeLayout(c, S);
      const opt = optim.sgd(0.5);
      const opts = { microbatches: 2, schedule };
      const loss = makeGptPipeEdgeLoss(c, mesh, opts);
      const step = jit(makeGptPipeEdgeStep(c, opt, mesh, opts));
      let ref = initGpt(c, 3);
      let refState = opt.init(ref) as optim.OptState;
      let pp = gptToPipe(layout, ref);
      let state = opt.init(pp) as optim.OptState;
      for (let k = 0; k < 3; k++) {
        const [l0, g0] = valueAndGrad((p: GptParams) => gptLoss(c, p, tokens, targets, mask))(ref) as [
          Array,
          GptParams,
        ];
        const [l1, g1] = valueAndGrad((p: GptPipeParams) => loss(p, tokens, targets, mask))(pp) as [
          Array,
          GptPipeParams,
        ];
        const a = l0.item() as number;
        assert.ok(Math.abs((l1.item() as number) - a) <= 1e-4 * Math.abs(a), `step ${k} loss ${l1.item()} vs ${a}`);
        // the gradient in the GPT's layout: a tied wte's two copies summed
        const gp = gptFromPipe(layout, g1);
        if (tied) {
          // the last row holds [lnfg, lnfb, wte]: its wte copy starts after the two norm vectors
          const d = c.dModel,
            n = c.vocab * d;
          const copy = jnp.reshape(
            lax.slice(jnp.reshape(g1.edges, [-1]), [(S - 1) * layout.k + 2 * d], [(S - 1) * layout.k + 2 * d + n]),
            [c.vocab, d],
          );
          gp.wte = jnp.add(gp.wte, copy);
        }
        assertTreeClose(gp, g0, `step ${k} gradient`);
        let l2: Array;
        [l2, pp, state] = step(pp, state, tokens, targets, mask);
        assert.ok(Math.abs((l2.item() as number) - a) <= 1e-4 * Math.abs(a), `step ${k} step loss`);
        const [u, next] = opt.update(g0, refState, ref);
        ref = optim.applyUpdates(ref, u) as GptParams;
        refState = next;
        assertTreeClose(gptFromPipe(layout, pp), ref, `step ${k} parameters`);
      }
    },
  );
