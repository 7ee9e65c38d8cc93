/**
 * @file The new optimizers under ZeRO (src/models/zero.ts) on 2 CPU devices: those declared exact on flat slices
 * (novograd and lars, whose per-leaf norms sum over the slices; adafactor with factored: false; clipByBlockRms and
 * scaleByParamBlockRms; fromage's trust ratio; amsgrad, adamax, adadelta, adan, rprop, schedule-free adamw; partition with a label function; injectHyperparams(adam) with a schedule) give at stages 1 and 3
 * the parameters of stage 0 after 3 steps; factored adafactor, sm3, lbfgs and lookahead are refused naming the
 * reason.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 2);
config.update("spmdRuntime", "devices");
import { type Array, makeMesh, nn, numpy as jnp, optim, random, tree } from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { type ZeroStage, makeZeroTrainStep, zeroGatherParams, zeroShardState } from "../../src/models/zero.js";

const skip = deviceRuntimeUnavailable() ?? false;

type Params = { w1: Array; b1: Array; w2: Array };
/** Leaf sizes 28, 7 and 21: odd, so every leaf's slices carry zero padding on 2 devices. */
function init(): Params {
  const k = (i: number): Array => random.PRNGKey(7 + i);
  return {
    w1: jnp.multiply(random.normal(k(0), [4, 7]), 0.5),
    b1: jnp.multiply(random.normal(k(1), [7]), 0.1),
    w2: jnp.multiply(random.normal(k(2), [7, 3]), 0.5),
  };
}
const loss = (p: Params, x: Array, y: Array): Array => {
  const h = jnp.tanh(jnp.add(jnp.matmul(x, p.w1), p.b1));
  const logp = nn.logSoftmax(jnp.matmul(h, p.w2), -1);
  return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(logp, nn.oneHot(y, 3)), -1)));
};
function batch(step: number): [Array, Array] {
  const x = random.normal(random.PRNGKey(100 + step), [8, 4]);
  const y = jnp.array(
    globalThis.Array.from({ length: 8 }, (_, i) => (i * 5 + step) % 3),
    { dtype: "int32" },
  );
  return [x, y];
}

function run(stage: ZeroStage, mk: () => optim.GradientTransformation): Params {
  const mesh = makeMesh([2], ["data"]);
  const o = mk();
  let state = zeroShardState(init(), o, mesh, { stage });
  const step = makeZeroTrainStep(loss, o, mesh, { stage });
  for (let s = 0; s < 3; s++) state = step(state, ...batch(s))[1];
  return zeroGatherParams(state) as Params;
}

const EXACT: [string, () => optim.GradientTransformation][] = [
  ["novograd", () => optim.novograd(0.05, { weightDecay: 0.01 })],
  ["lars", () => optim.lars(0.5, { weightDecay: 0.01, trustCoefficient: 0.01 })],
  ["adafactor (factored: false)", () => optim.adafactor(0.05, { factored: false })],
  ["amsgrad", () => optim.amsgrad(0.05)],
  ["adamax", () => optim.adamax(0.05)],
  ["adadelta", () => optim.adadelta(1.0)],
  ["adan", () => optim.adan(0.05, { weightDecay: 0.01 })],
  ["fromage", () => optim.fromage(0.05)],
  ["rprop", () => optim.rprop(0.01)],
  ["contrib.scheduleFreeAdamw", () => optim.contrib.scheduleFreeAdamw({ learningRate: 0.05, weightDecay: 0.01 })],
  [
    "partition by rank (a label function: it sees full shapes)",
    () =>
      optim.partition({ m: optim.adam(0.05), v: optim.novograd(0.05) }, (p: unknown) =>
        tree.map((x) => ((x as { ndim: number }).ndim === 2 ? "m" : "v"), p),
      ),
  ],
  [
    "injectHyperparams(adam)",
    () => optim.injectHyperparams(optim.adam)({ learningRate: optim.linearSchedule(0.05, 0.01, 3), b1: 0.8 }),
  ],
];

test("exact optimizers: ZeRO stages 1 and 3 on 2 devices equal stage 0", { skip }, () => {
  for (const [name, mk] of EXACT) {
    const want = run(0, mk);
    const p0 = init();
    for (const stage of [1, 3] as const) {
      const got = run(stage, mk);
      for (const k of ["w1", "b1", "w2"] as const) {
        const a = got[k].dataSync() as Float32Array,
          b = want[k].dataSync() as Float32Array;
        a.forEach((v, i) =>
          assert.ok(Math.abs(v - b[i]) <= 1e-5 * (1 + Math.abs(b[i])), `${name} stage ${stage} ${k}[${i}]`),
        );
      }
    }
    // the optimizer did move the parameters
    const moved = tree.leaves(want).some((l, i) => {
      const a = (l as Array).dataSync() as Float32Array,
        b = (tree.leaves(p0)[i] as Array).dataSync() as Float32Array;
      return a.some((v, j) => Math.abs(v - b[j]) > 1e-4);
    });
    assert.ok(moved, `${name} moves the parameters`);
  }
});

test("factored adafactor, sm3, lbfgs and lookahead are refused for stages 1-3, naming why", { skip }, () => {
  const mesh = makeMesh([2], ["data"]);
  for (const stage of [1, 2, 3] as const) {
    assert.throws(() => zeroShardState(init(), optim.adafactor(0.05), mesh, { stage }), /row and column statistics/);
    assert.throws(() => zeroShardState(init(), optim.sm3(0.05), mesh, { stage }), /optim\.sm3: its accumulators/);
    assert.throws(
      () => zeroShardState(init(), optim.lbfgs({ linesearch: null }), mesh, { stage }),
      /optim\.lbfgs: its memories are stacked/,
    );
    assert.throws(
      () => makeZeroTrainStep(loss, optim.lookahead(optim.sgd(0.1), 2, 0.5), mesh, { stage }),
      /optim\.lookahead: its gradients/,
    );
  }
  // stage 0 runs factored adafactor on full parameters
  const p = run(0, () => optim.adafactor(0.05, { minDimSizeToFactor: 3 }));
  assert.ok(Number.isFinite(p.w1.dataSync()[0] as number));
});
