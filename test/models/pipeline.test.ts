/**
 * @file GPipe and 1F1B pipelines over 2 and 4 stages (scan over clock ticks, ppermute between stages, on the devices runtime)
 * give the unpipelined model's loss and gradients within 1e-4 and train identically for a few SGD steps; 1F1B hands
 * no per-tick activations from the forward program to the backward one (GPipe's grow with the microbatches).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
import { type Array, lax, makeJaxpr, makeMesh, nn, numpy as jnp, random, tree, valueAndGrad } from "../../src/index.js";
import { deviceRuntimeUnavailable, launchCount } from "../../src/runtime/index.js";
import { makePipeline, pipelineStash, stackStages } from "../../src/models/pipeline.js";

const skip = deviceRuntimeUnavailable() ?? false;
const DIN = 5,
  H = 8,
  DOUT = 3,
  LAYERS = 4,
  BATCH = 8;
interface Layer {
  w: Array;
  b: Array;
}
interface Params {
  win: Array;
  wout: Array;
  layers: Layer[];
}
const key = (i: number) => random.PRNGKey(7000 + i);
function init(): Params {
  return {
    win: jnp.multiply(random.normal(key(0), [DIN, H]), 0.5),
    wout: jnp.multiply(random.normal(key(1), [H, DOUT]), 0.5),
    layers: globalThis.Array.from({ length: LAYERS }, (_, i) => ({
      w: jnp.multiply(random.normal(key(2 + 2 * i), [H, H]), 0.4),
      b: jnp.multiply(random.normal(key(3 + 2 * i), [H]), 0.1),
    })),
  };
}
const layer = (p: Layer, h: Array): Array => jnp.add(h, jnp.tanh(jnp.add(jnp.matmul(h, p.w), p.b)));
/** One stage: its layers (leaves [L/S, ...]) applied in order with a scan. */
const stage = (p: Layer, h: Array): Array =>
  lax.scan((c: Array, lp: Layer): [Array, Array] => [layer(lp, c), c], h, p)[0];
const x = random.normal(key(100), [BATCH, DIN]);
const y = jnp.array(
  globalThis.Array.from({ length: BATCH }, (_, i) => (i * 5) % DOUT),
  { dtype: "int32" },
);
const head = (wout: Array, h: Array): Array => {
  const logp = nn.logSoftmax(jnp.matmul(h, wout), -1);
  return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(logp, nn.oneHot(y, DOUT)), -1)));
};
const plainLoss = (p: Params): Array => {
  let h = jnp.tanh(jnp.matmul(x, p.win));
  for (const l of p.layers) h = layer(l, h);
  return head(p.wout, h);
};

function maxRel(a: Array, b: Array): number {
  const av = a.dataSync() as Float32Array,
    bv = b.dataSync() as Float32Array;
  const scale = Math.max(...globalThis.Array.from(bv, Math.abs), 1e-6);
  return Math.max(...globalThis.Array.from(av, (v, i) => Math.abs(v - bv[i]) / scale));
}

for (const [S, schedule, M] of [
  [2, "gpipe", 4],
  [4, "gpipe", 4],
  [2, "1f1b", 8],
  [4, "1f1b", 8],
] as const)
  test(
    `a ${S}-stage ${schedule} pipeline (${M} microbatches) equals the unpipelined model (loss, grads, 3 SGD steps)`,
    { skip },
    () => {
      const mesh = makeMesh([S], ["pipe"]);
      const pipe = makePipeline(stage, mesh, { microbatches: M, schedule });
      interface PP {
        win: Array;
        wout: Array;
        stages: Layer;
      }
      const pipeLoss = (p: PP): Array => head(p.wout, pipe(p.stages, jnp.tanh(jnp.matmul(x, p.win))));
      let ref = init();
      let pp: PP = { win: ref.win, wout: ref.wout, stages: stackStages(ref.layers, S) };
      assert.deepEqual(pp.stages.w.shape, [S, LAYERS / S, H, H]);
      for (let k = 0; k < 3; k++) {
        const [l0, g0] = valueAndGrad(plainLoss)(ref) as [Array, Params];
        const before = launchCount();
        const [l1, g1] = valueAndGrad(pipeLoss)(pp) as [Array, PP];
        assert.ok(launchCount() > before, "the pipeline ran as device programs");
        const a = l0.item() as number,
          b = l1.item() as number;
        assert.ok(Math.abs(a - b) <= 1e-4 * Math.abs(a), `step ${k} loss ${b} vs unpipelined ${a}`);
        assert.ok(maxRel(g1.win, g0.win) < 1e-4, `step ${k} d/dwin`);
        assert.ok(maxRel(g1.wout, g0.wout) < 1e-4, `step ${k} d/dwout`);
        const gs = stackStages(g0.layers, S);
        assert.ok(maxRel(g1.stages.w, gs.w) < 1e-4, `step ${k} d/dw of the stage layers`);
        assert.ok(maxRel(g1.stages.b, gs.b) < 1e-4, `step ${k} d/db of the stage layers`);
        const sgd = <T>(p: T, g: T): T =>
          tree.map((u: Array, v: Array) => jnp.subtract(u, jnp.multiply(v, 0.5)), p, g) as T;
        ref = sgd(ref, g0);
        pp = sgd(pp, g1);
      }
    },
  );

test("a 2-stage pipeline x 2-way data parallel on a 2x2 mesh equals the unpipelined model", { skip }, () => {
  const mesh = makeMesh([2, 2], ["pipe", "data"]);
  const pipe = makePipeline(stage, mesh, { microbatches: 2, dataAxis: "data" });
  const ref = init();
  const stages = stackStages(ref.layers, 2);
  const pipeLoss = (p: { win: Array; wout: Array; stages: Layer }): Array =>
    head(p.wout, pipe(p.stages, jnp.tanh(jnp.matmul(x, p.win))));
  const [l0, g0] = valueAndGrad(plainLoss)(ref) as [Array, Params];
  const [l1, g1] = valueAndGrad(pipeLoss)({ win: ref.win, wout: ref.wout, stages }) as [
    Array,
    { stages: Layer; win: Array },
  ];
  const a = l0.item() as number;
  assert.ok(Math.abs((l1.item() as number) - a) <= 1e-4 * Math.abs(a), `${l1.item()} vs ${a}`);
  assert.ok(maxRel(g1.win, g0.win) < 1e-4, "d/dwin");
  assert.ok(maxRel(g1.stages.w, stackStages(g0.layers, 2).w) < 1e-4, "d/dw of the stage layers");
});

test("bad pipeline options are rejected naming the fix", { skip }, () => {
  const mesh = makeMesh([2], ["pipe"]);
  assert.throws(
    () => makePipeline(stage, mesh, { microbatches: 4, pipeAxis: "stage" }),
    /pipeAxis "stage" is not an axis/,
  );
  assert.throws(() => stackStages(init().layers.slice(0, 3), 2), /3 layers cannot be split evenly into 2 stages/);
  assert.throws(() => makePipeline(stage, mesh, { microbatches: 2, dataAxis: "pipe" }), /other than the pipe axis/);
  const pipe = makePipeline(stage, mesh, { microbatches: 3 });
  assert.throws(
    () => pipe(stackStages(init().layers, 2), jnp.ones([BATCH, H])),
    /batch 8 .* not divisible by 3 microbatches/,
  );
});

/** Bytes the backward device program takes from the forward one: outputs of a shard_map read by a later shard_map. */
function residualBytes(schedule: "gpipe" | "1f1b", M: number): number {
  const mesh = makeMesh([2], ["pipe"]);
  const pipe = makePipeline(stage, mesh, { microbatches: M, schedule });
  const stages = stackStages(init().layers, 2);
  const xs = random.normal(key(200), [16, H]);
  const j = makeJaxpr((s: Layer) => valueAndGrad((q: Layer) => jnp.sum(pipe(q, xs)))(s))(stages).jaxpr;
  const fromProgram = new Set<unknown>();
  let bytes = 0;
  for (const e of j.eqns) {
    if (e.primitive.name !== "shard_map") continue;
    for (const v of e.inputs)
      if (fromProgram.has(v))
        bytes += (v as unknown as { aval: { shape: readonly number[] } }).aval.shape.reduce((a, b) => a * b, 1) * 4;
    e.outVars.forEach((v) => fromProgram.add(v));
  }
  return bytes;
}

test(
  "1F1B keeps no per-tick activations between the forward and backward programs; GPipe's grow with M",
  { skip },
  () => {
    const g4 = residualBytes("gpipe", 4),
      g8 = residualBytes("gpipe", 8);
    // GPipe: the scan's residuals are stacked over its M + S - 1 ticks (here 5 vs 9 ticks of [16 / M, 8] activations)
    assert.ok(g4 > 0 && g8 > g4, `GPipe residual bytes ${g4} (M=4), ${g8} (M=8)`);
    // 1F1B: the backward program recomputes from x and the parameters, holding at most 2S - 1 stage inputs
    assert.equal(residualBytes("1f1b", 4), 0);
    assert.equal(residualBytes("1f1b", 8), 0);
    assert.equal(pipelineStash("1f1b", 2, 8), 3);
    assert.equal(pipelineStash("1f1b", 4, 64), 7);
    assert.equal(pipelineStash("gpipe", 4, 64), 67);
  },
);
