/**
 * @file A pipelined loss with its input layer on stage 0 and its head on the last stage (GPipe and 1F1B, 2 and 4
 * stages, and a 2x2 pipe x data mesh) gives the unpipelined loss and every gradient within 1e-4, with a tied weight
 * kept on both edge stages whose two gradients sum to the unpipelined one.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
import { type Array, lax, makeMesh, nn, numpy as jnp, random, valueAndGrad } from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { stackStages } from "../../src/models/pipeline.js";
import { makePipelineLoss } from "../../src/models/pipeline-loss.js";

const skip = deviceRuntimeUnavailable() ?? false;
const DIN = 5,
  H = 8,
  LAYERS = 4,
  BATCH = 8;
interface Layer {
  w: Array;
  b: Array;
}
interface Edge {
  win: Array; // [DIN, H]: the input layer, and the tied output layer (logits = h @ win^T)
  bout: Array; // [DIN]: the head's bias
}
const key = (i: number) => random.PRNGKey(8000 + i);
const win = jnp.multiply(random.normal(key(0), [DIN, H]), 0.5);
const bout = jnp.multiply(random.normal(key(1), [DIN]), 0.3);
const layers: Layer[] = globalThis.Array.from({ length: LAYERS }, (_, i) => ({
  w: jnp.multiply(random.normal(key(2 + 2 * i), [H, H]), 0.4),
  b: jnp.multiply(random.normal(key(3 + 2 * i), [H]), 0.1),
}));
const layer = (p: Layer, h: Array): Array => jnp.add(h, jnp.tanh(jnp.add(jnp.matmul(h, p.w), p.b)));
const stage = (p: Layer, h: Array): Array =>
  lax.scan((c: Array, lp: Layer): [Array, null] => [layer(lp, c), null], h, p)[0];
// the batch: DIN features, then the class label as a float
const labels = globalThis.Array.from({ length: BATCH }, (_, i) => (i * 3) % DIN);
const batch = jnp.concatenate(
  [random.normal(key(100), [BATCH, DIN]), jnp.array(labels, { dtype: "float32" }).reshape([BATCH, 1])],
  1,
);
const first = (e: Edge, b: Array): Array => jnp.tanh(jnp.matmul(lax.sliceInDim(b, 0, DIN, 1, 1), e.win));
/** Summed negative log-likelihood of a microbatch's labels under the tied head. */
const last = (e: Edge, h: Array, b: Array): Array => {
  const y = jnp.squeeze(lax.sliceInDim(b, DIN, DIN + 1, 1, 1), 1).astype("int32");
  const logp = nn.logSoftmax(jnp.add(jnp.matmul(h, jnp.transpose(e.win)), e.bout), -1);
  return jnp.negative(jnp.sum(jnp.multiply(logp, nn.oneHot(y, DIN))));
};
const plainLoss = (p: { edge: Edge; layers: Layer[] }): Array => {
  let h = first(p.edge, batch);
  for (const l of p.layers) h = layer(l, h);
  return last(p.edge, h, batch);
};
/** The edge rows: stage 0 and stage S-1 hold win (tied), the last stage the bias; middle rows are zero padding. */
function edges(S: number, e: Edge): Edge {
  const row = (x: Array, at: number[]) =>
    jnp.stack(globalThis.Array.from({ length: S }, (_, s) => (at.includes(s) ? x : jnp.zerosLike(x))));
  return { win: row(e.win, [0, S - 1]), bout: row(e.bout, [S - 1]) };
}
function maxRel(a: Array, b: Array): number {
  const av = a.dataSync() as Float32Array,
    bv = b.dataSync() as Float32Array;
  const scale = Math.max(...globalThis.Array.from(bv, Math.abs), 1e-6);
  return Math.max(...globalThis.Array.from(av, (v, i) => Math.abs(v - bv[i]) / scale));
}
const row = (x: Array, s: number): Array => jnp.squeeze(lax.sliceInDim(x, s, s + 1, 1, 0), 0);

for (const [S, D, schedule, M] of [
  [2, 1, "gpipe", 4],
  [4, 1, "gpipe", 2],
  [2, 1, "1f1b", 4],
  [4, 1, "1f1b", 4],
  [2, 2, "gpipe", 2],
  [2, 2, "1f1b", 2],
] as const)
  test(
    `edge stages in a ${S}-stage${D > 1 ? ` x ${D}-way data` : ""} ${schedule} pipeline: the unpipelined loss and gradients over 3 SGD steps`,
    { skip },
    () => {
      const mesh = D > 1 ? makeMesh([S, D], ["pipe", "data"]) : makeMesh([S], ["pipe"]);
      const run = makePipelineLoss(stage, first, last, mesh, {
        microbatches: M,
        schedule,
        dataAxis: D > 1 ? "data" : undefined,
      });
      interface PP {
        stages: Layer;
        edges: Edge;
      }
      let ref = { edge: { win, bout }, layers };
      let pp: PP = { stages: stackStages(layers, S), edges: edges(S, { win, bout }) };
      for (let k = 0; k < 3; k++) {
        const [l0, g0] = valueAndGrad(plainLoss)(ref) as [Array, typeof ref];
        const [l1, g1] = valueAndGrad((p: PP) => run(p.stages, p.edges, batch))(pp) as [Array, PP];
        const a = l0.item() as number,
          b = l1.item() as number;
        assert.ok(Math.abs(a - b) <= 1e-4 * Math.abs(a), `step ${k} loss ${b} vs unpipelined ${a}`);
        const gs = stackStages(g0.layers, S);
        assert.ok(maxRel(g1.stages.w, gs.w) < 1e-4, `step ${k} d/dw`);
        assert.ok(maxRel(g1.stages.b, gs.b) < 1e-4, `step ${k} d/db`);
        // the tied weight's two copies: their gradients sum to the unpipelined one; padding rows get none
        const gw = jnp.add(row(g1.edges.win, 0), row(g1.edges.win, S - 1));
        assert.ok(maxRel(gw, g0.edge.win) < 1e-4, `step ${k} d/dwin (both copies summed)`);
        assert.ok(maxRel(row(g1.edges.bout, S - 1), g0.edge.bout) < 1e-4, `step ${k} d/dbout`);
        for (let s = 1; s < S - 1; s++) assert.equal(jnp.max(jnp.abs(row(g1.edges.win, s))).item(), 0, `row ${s}`);
        assert.ok((jnp.max(jnp.abs(row(g1.edges.win, S - 1))).item() as number) > 0, "the head copy has a gradient");
        const lr = 0.05;
        ref = {
          edge: {
            win: jnp.subtract(ref.edge.win, jnp.multiply(g0.edge.win, lr)),
            bout: jnp.subtract(ref.edge.bout, jnp.multiply(g0.edge.bout, lr)),
          },
          layers: ref.layers.map((l, i) => ({
            w: jnp.subtract(l.w, jnp.multiply(g0.layers[i].w, lr)),
            b: jnp.subtract(l.b, jnp.multiply(g0.layers[i].b, lr)),
          })),
        };
        // Megatron's tied update: both copies take the summed gradient, so they stay equal
        const gwin = jnp.stack(
          globalThis.Array.from({ length: S }, (_, s) => (s === 0 || s === S - 1 ? gw : jnp.zerosLike(gw))),
        );
        pp = {
          stages: {
            w: jnp.subtract(pp.stages.w, jnp.multiply(g1.stages.w, lr)),
            b: jnp.subtract(pp.stages.b, jnp.multiply(g1.stages.b, lr)),
          },
          edges: {
            win: jnp.subtract(pp.edges.win, jnp.multiply(gwin, lr)),
            bout: jnp.subtract(pp.edges.bout, jnp.multiply(g1.edges.bout, lr)),
          },
        };
      }
    },
  );

test("makePipelineLoss rejects bad options naming the fix", { skip }, () => {
  const mesh = makeMesh([2], ["pipe"]);
  assert.throws(
    () => makePipelineLoss(stage, first, last, mesh, { microbatches: 2, pipeAxis: "stage" }),
    /pipeAxis "stage" is not an axis/,
  );
  assert.throws(
    () => makePipelineLoss(stage, first, last, mesh, { microbatches: 0 }),
    /microbatches must be a positive integer/,
  );
  const run = makePipelineLoss(stage, first, last, mesh, { microbatches: 3 });
  assert.throws(
    () => run(stackStages(layers, 2), edges(2, { win, bout }), batch),
    /batch 8 .* not divisible by 3 microbatches/,
  );
});
