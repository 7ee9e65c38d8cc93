/**
 * @file makeZeroTrainStep's `overlap` option: stage 3 (FSDP: per-layer gathers, rematerialized backward, gradient
 * reduce-scatters) and stage 0 (data parallel, one gradient bucket per layer) give exactly the losses and parameters
 * of the synchronous step over several adam steps on 2 and 4 devices, with every collective asynchronous, in both
 * modes of the native ops (one-sided mailboxes, the default; a communication thread per device).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { withEnv } from "../helpers/env.js";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
// the per-layer collectives and their schedule are the subject: no gradient bucketing, except where a test says so
config.update("collectiveCombineBytes", 0);
import { type Array, makeMesh, nn, numpy as jnp, optim, random, tree } from "../../src/index.js";
import {
  deviceRuntimeUnavailable,
  type CollectiveTiming,
  setLaunchObserver,
  synchronize,
} from "../../src/runtime/index.js";
import {
  type LayeredLoss,
  type LayeredParams,
  type ZeroStage,
  makeZeroTrainStep,
  zeroGatherParams,
  zeroShardState,
} from "../../src/models/zero.js";

const skip = deviceRuntimeUnavailable() ?? false;

type Layer = { w: Array; b: Array };
type Outer = { win: Array; wout: Array };
type Params = LayeredParams<Outer, Layer>;
const DIN = 5,
  H = 6,
  DOUT = 3,
  LAYERS = 3,
  BATCH = 12,
  STEPS = 3;

function init(): Params {
  const k = (i: number) => random.PRNGKey(7000 + i);
  return {
    outer: {
      win: jnp.multiply(random.normal(k(0), [DIN, H]), 0.5),
      wout: jnp.multiply(random.normal(k(1), [H, DOUT]), 0.5),
    },
    layers: globalThis.Array.from({ length: LAYERS }, (_, i) => ({
      w: jnp.multiply(random.normal(k(2 + 2 * i), [H, H]), 0.4),
      b: jnp.multiply(random.normal(k(3 + 2 * i), [H]), 0.1),
    })),
  };
}
const model: LayeredLoss<Outer, Layer, [Array, Array]> = {
  embed: (o, x) => jnp.tanh(jnp.matmul(x, o.win)),
  layer: (p, h) => jnp.add(h, jnp.tanh(jnp.add(jnp.matmul(h, p.w), p.b))),
  head: (o, h, _x, y) =>
    jnp.negative(jnp.mean(jnp.sum(jnp.multiply(nn.logSoftmax(jnp.matmul(h, o.wout), -1), nn.oneHot(y, DOUT)), -1))),
};
const batch = (s: number): [Array, Array] => [
  random.normal(random.PRNGKey(300 + s), [BATCH, DIN]),
  jnp.array(
    globalThis.Array.from({ length: BATCH }, (_, i) => (i * 5 + s) % DOUT),
    { dtype: "int32" },
  ),
];

/** run() with the communication thread per device instead of the default mailboxes (JAXTS_ASYNC_COLLECTIVES). */
function runThread(stage: ZeroStage, n: number) {
  return withEnv("JAXTS_ASYNC_COLLECTIVES", "thread", () => run(stage, n, true));
}

/** run() on the emulation (config.spmdRuntime "emulation": no device threads, no native collectives). */
function runEmulated(stage: ZeroStage, n: number) {
  config.update("spmdRuntime", "emulation");
  try {
    return run(stage, n, false);
  } finally {
    config.update("spmdRuntime", "devices");
  }
}

/** Losses, final parameters (flat values) and the last step's collectives on rank 0. */
function run(stage: ZeroStage, n: number, overlap: boolean) {
  const mesh = makeMesh([n], ["data"]);
  const o = optim.adam(0.05);
  let state = zeroShardState(init(), o, mesh, { stage });
  const step = makeZeroTrainStep(model, o, mesh, { stage, overlap });
  const losses: number[] = [];
  let colls: readonly CollectiveTiming[] = [];
  for (let s = 0; s < STEPS; s++) {
    const prev = s === STEPS - 1 ? setLaunchObserver((r) => (colls = r.collectives[0])) : null;
    try {
      const [l, next] = step(state, ...batch(0)); // one batch: the loss must fall
      losses.push(l.item() as number);
      state = next;
      synchronize();
    } finally {
      if (s === STEPS - 1) setLaunchObserver(prev);
    }
  }
  const params = (tree.leaves(zeroGatherParams(state)) as Array[]).map((a) =>
    globalThis.Array.from(a.dataSync() as Float32Array),
  );
  return { losses, params, colls };
}

for (const stage of [3, 0] as const)
  for (const n of [2, 3, 4])
    test(
      `ZeRO stage ${stage} on ${n} devices: overlap on (mailbox or communication thread) gives exactly the losses and parameters of overlap off`,
      { skip },
      () => {
        const off = run(stage, n, false),
          on = run(stage, n, true),
          thread = runThread(stage, n),
          emulated = runEmulated(stage, n);
        assert.ok(off.losses[STEPS - 1] < off.losses[0], `it trains: ${off.losses.join(", ")}`);
        assert.deepEqual(on.losses, off.losses);
        assert.deepEqual(on.params, off.params);
        // the emulation computes each device's matmuls inside one batched kernel, whose float32 rounding may differ
        // in the last bit from the per-device kernels: within 1e-6 relative
        const near = (a: number[], b: number[], what: string) =>
          a.forEach((x, i) =>
            assert.ok(Math.abs(x - b[i]) <= 1e-6 * Math.max(1, Math.abs(b[i])), `${what} ${i}: ${x} vs ${b[i]}`),
          );
        near(on.losses, emulated.losses, "emulation: loss");
        on.params.forEach((p, k) => near(p, emulated.params[k], `emulation: parameter ${k}`));
        assert.deepEqual(thread.losses, off.losses, "communication thread");
        assert.deepEqual(thread.params, off.params, "communication thread");
        assert.ok(thread.colls.length > 0 && thread.colls.every((c) => c.wait >= 0), "thread: asynchronous");
        assert.ok(off.colls.length > 0 && off.colls.every((c) => c.wait === -1), "off: synchronous collectives");
        assert.ok(on.colls.length > 0 && on.colls.every((c) => c.wait >= 0), "on: asynchronous collectives");
        const count = (cs: readonly CollectiveTiming[], k: string) => cs.filter((c) => c.kind === k).length;
        if (stage === 3) {
          // the same collectives: outer + each layer gathered (twice: forward and rematerialized backward)
          for (const k of ["AllGather", "ReduceScatter", "AllReduce"])
            assert.equal(count(on.colls, k), count(off.colls, k), k);
          assert.equal(count(on.colls, "AllGather"), 1 + 2 * LAYERS);
          // mailbox mode, the wide schedule: every gather reads a parameter shard (a program input), so all of them
          // (forward and rematerialized backward) are posted before the first one is awaited; the communication
          // thread's schedule prefetches one gather ahead, so its later gathers start after earlier ones ended
          const gathers = (cs: readonly CollectiveTiming[]) => cs.filter((c) => c.kind === "AllGather");
          const firstEnd = (cs: readonly CollectiveTiming[]) => Math.min(...gathers(cs).map((c) => c.end));
          for (const c of gathers(on.colls))
            assert.ok(c.start <= firstEnd(on.colls), `mailbox: ${c.name} started after the first gather ended`);
          assert.ok(
            gathers(thread.colls).some((c) => c.start > firstEnd(thread.colls)),
            "thread: one gather prefetched at a time",
          );
        } else {
          // data parallel, overlap on or off: the loss, one bucket per layer and one for the rest
          assert.equal(count(off.colls, "AllReduce"), 2 + LAYERS);
          assert.equal(count(on.colls, "AllReduce"), 2 + LAYERS);
        }
      },
    );

test("a non-boolean overlap option is refused naming the function", { skip }, () => {
  const mesh = makeMesh([2], ["data"]);
  assert.throws(
    () => makeZeroTrainStep(model, optim.adam(0.1), mesh, { stage: 3, overlap: "yes" as unknown as boolean }),
    /makeZeroTrainStep: overlap must be true or false, got yes/,
  );
});

test(
  "gradient bucketing under overlap: stage 0's all-reduces become one bucket, the same bits on and off",
  { skip },
  () => {
    const plain = run(0, 2, false);
    config.update("collectiveCombineBytes", 4 << 20);
    try {
      const off = run(0, 2, false),
        on = run(0, 2, true);
      const reduces = (cs: readonly CollectiveTiming[]) => cs.filter((c) => c.kind === "AllReduce").length;
      // the loss and the LAYERS + 1 buckets: one combined all-reduce (one Start/Done with overlap)
      assert.equal(reduces(off.colls), 1);
      assert.equal(reduces(on.colls), 1);
      assert.ok(
        on.colls.every((c) => c.wait >= 0),
        "on: asynchronous",
      );
      assert.deepEqual(off.losses, plain.losses);
      assert.deepEqual(off.params, plain.params);
      assert.deepEqual(on.losses, plain.losses);
      assert.deepEqual(on.params, plain.params);
    } finally {
      config.update("collectiveCombineBytes", 0);
    }
  },
);

/** run() with overlap and JAXTS_ASYNC_UPDATE = `lag` ("late", or how many reduce-scatters after its own an update runs). */
function runUpdateLag(stage: ZeroStage, n: number, lag: string) {
  return withEnv("JAXTS_ASYNC_UPDATE", lag, () => run(stage, n, true));
}

test(
  "ZeRO stage 3 on 4 devices: each layer's update runs k reduce-scatters after its own (k = 2 by default, 1, or late at the end), the same bits as overlap off",
  { skip },
  () => {
    const off = run(3, 4, false),
      lag2 = run(3, 4, true),
      lag1 = runUpdateLag(3, 4, "1"),
      late = runUpdateLag(3, 4, "late");
    for (const [r, what] of [
      [lag2, "lag 2"],
      [lag1, "lag 1"],
      [late, "late"],
    ] as const) {
      assert.deepEqual(r.losses, off.losses, what);
      assert.deepEqual(r.params, off.params, what);
    }
    // rank 0's reduce-scatters of the last step, in the order they started: one per layer, one for the outer leaves
    const scatters = (cs: readonly CollectiveTiming[]) =>
      cs.filter((c) => c.kind === "ReduceScatter").sort((a, b) => a.start - b.start);
    const [e2, e1, l] = [scatters(lag2.colls), scatters(lag1.colls), scatters(late.colls)];
    for (const r of [e2, e1, l]) assert.equal(r.length, LAYERS + 1);
    // lag k: reduce-scatter i is awaited (its Done returned) after Start i + k and before Start i + k + 1, i.e. while
    // the backward still runs; late: every Done after the last Start
    const awaitedBetween = (r: typeof l, k: number) =>
      r.slice(0, r.length - k - 1).every((c, i) => c.end > r[i + k].start && c.end < r[i + k + 1].start);
    assert.ok(awaitedBetween(e1, 1), `lag 1: ${e1.map((c) => `${c.start}-${c.end}`).join(", ")}`);
    assert.ok(awaitedBetween(e2, 2), `lag 2: ${e2.map((c) => `${c.start}-${c.end}`).join(", ")}`);
    assert.ok(
      l.every((c) => c.end > l[LAYERS].start),
      "late: every reduce-scatter awaited after the last one started",
    );
  },
);
