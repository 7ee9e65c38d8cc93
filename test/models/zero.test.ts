/**
 * @file ZeRO stages 1-3 on 2 and 4 devices equal the plain data-parallel step (losses and parameters over several
 * adam steps, rtol 1e-5), stage 0 equals the single-device step, and stage 3 holds about a quarter of the
 * parameter and optimizer bytes per device (Device.memoryStats) on 4 devices.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
import { type Array, makeMesh, nn, numpy as jnp, optim, random, tree, valueAndGrad } from "../../src/index.js";
import {
  deviceRuntimeUnavailable,
  type LaunchRecord,
  setLaunchObserver,
  synchronize,
} from "../../src/runtime/index.js";
import {
  type LayeredLoss,
  type LayeredParams,
  type ZeroStage,
  makeZeroTrainStep,
  zeroGatherParams,
  zeroMemoryReport,
  zeroShardState,
} from "../../src/models/zero.js";

const skip = deviceRuntimeUnavailable() ?? false;

interface Outer {
  win: Array;
  bout: Array;
  wout: Array;
}
interface Layer {
  w: Array;
  b: Array;
}
type Params = LayeredParams<Outer, Layer>;
const DIN = 5,
  H = 6,
  DOUT = 3,
  LAYERS = 3,
  BATCH = 8;

/** Leaf sizes 30, 3, 18 and per layer 36, 6: some divide 2 and 4, some need padding. */
function init(seed: number): Params {
  const ks = globalThis.Array.from({ length: 4 + 2 * LAYERS }, (_, i) => random.PRNGKey(seed * 1000 + i));
  const nrm = (k: Array, s: number[], sc: number) => jnp.multiply(random.normal(k, s), sc);
  return {
    outer: { win: nrm(ks[0], [DIN, H], 0.5), bout: nrm(ks[1], [DOUT], 0.1), wout: nrm(ks[2], [H, DOUT], 0.5) },
    layers: globalThis.Array.from({ length: LAYERS }, (_, i) => ({
      w: nrm(ks[4 + 2 * i], [H, H], 0.4),
      b: nrm(ks[5 + 2 * i], [H], 0.1),
    })),
  };
}
const model: LayeredLoss<Outer, Layer, [Array, Array]> = {
  embed: (o, x) => jnp.tanh(jnp.matmul(x, o.win)),
  layer: (p, h) => jnp.add(h, jnp.tanh(jnp.add(jnp.matmul(h, p.w), p.b))),
  head: (o, h, _x, y) => {
    const logp = nn.logSoftmax(jnp.add(jnp.matmul(h, o.wout), o.bout), -1);
    return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(logp, nn.oneHot(y, DOUT)), -1)));
  },
};
/** The same loss as one function of the whole parameters (the reference and the plain-loss form). */
const plainLoss = (p: Params, x: Array, y: Array): Array => {
  let h = model.embed(p.outer, x, y);
  p.layers.forEach((l, i) => (h = model.layer(l, h, i)));
  return model.head(p.outer, h, x, y);
};
function batch(step: number): [Array, Array] {
  const k = random.PRNGKey(100 + step);
  const x = random.normal(k, [BATCH, DIN]);
  const y = jnp.array(
    globalThis.Array.from({ length: BATCH }, (_, i) => (i * 7 + step) % DOUT),
    { dtype: "int32" },
  );
  return [x, y];
}
const STEPS = 3;
type OptFactory = () => optim.GradientTransformation;
const opt: OptFactory = () => optim.adam(0.05);

function relClose(what: string, a: Array, b: Array, rtol: number): void {
  const av = a.dataSync() as Float32Array,
    bv = b.dataSync() as Float32Array;
  assert.deepEqual(a.shape, b.shape, `${what}: shapes`);
  const scale = Math.max(...globalThis.Array.from(bv, Math.abs), 1e-6);
  for (let i = 0; i < av.length; i++)
    assert.ok(Math.abs(av[i] - bv[i]) <= rtol * scale, `${what}[${i}]: ${av[i]} vs ${bv[i]} (rtol ${rtol})`);
}

/** Losses and final full parameters of STEPS steps of a stage. */
function run(
  stage: ZeroStage,
  n: number,
  layered: boolean,
  mk: OptFactory = opt,
): { losses: number[]; params: Params } {
  const mesh = makeMesh([n], ["data"]);
  const o = mk();
  let state = zeroShardState(init(0), o, mesh, { stage });
  const step = layered
    ? makeZeroTrainStep(model, o, mesh, { stage })
    : makeZeroTrainStep(plainLoss, o, mesh, { stage });
  const losses: number[] = [];
  for (let s = 0; s < STEPS; s++) {
    const [l, next] = step(state, ...batch(s));
    losses.push(l.item() as number);
    state = next;
  }
  return { losses, params: zeroGatherParams(state) };
}
function reference(mk: OptFactory = opt, onGrad?: (g: Params) => void): { losses: number[]; params: Params } {
  const o = mk();
  let p = init(0),
    s = o.init(p);
  const losses: number[] = [];
  for (let k = 0; k < STEPS; k++) {
    const [l, g] = valueAndGrad((q: Params) => plainLoss(q, ...batch(k)))(p) as [Array, Params];
    onGrad?.(g);
    const [u, next] = o.update(g, s, p);
    p = optim.applyUpdates(p, u) as Params;
    s = next;
    losses.push(l.item() as number);
  }
  return { losses, params: p };
}
function compare(what: string, got: { losses: number[]; params: Params }, want: typeof got, rtol: number): void {
  got.losses.forEach((l, i) =>
    assert.ok(
      Math.abs(l - want.losses[i]) <= rtol * Math.abs(want.losses[i]),
      `${what} loss ${i}: ${l} vs ${want.losses[i]}`,
    ),
  );
  const a = tree.leaves(got.params) as Array[],
    b = tree.leaves(want.params) as Array[];
  assert.equal(a.length, b.length);
  a.forEach((x, i) => relClose(`${what} leaf ${i}`, x, b[i], rtol));
}

test("stage 0 (plain data parallel) equals the single-device step", { skip }, () => {
  const want = reference();
  assert.ok(want.losses[STEPS - 1] < want.losses[0], `the reference trains: ${want.losses.join(", ")}`);
  for (const n of [2, 4]) compare(`stage 0 on ${n} devices`, run(0, n, true), want, 1e-5);
});

for (const n of [2, 4])
  test(`ZeRO stages 1-3 on ${n} devices equal stage 0 (losses and params over ${STEPS} adam steps)`, { skip }, () => {
    const base = run(0, n, true);
    for (const stage of [1, 2, 3] as const) compare(`stage ${stage} on ${n}`, run(stage, n, true), base, 1e-5);
  });

test("a plain (not layered) loss works for every stage", { skip }, () => {
  const base = run(0, 4, false);
  for (const stage of [1, 2, 3] as const) compare(`plain stage ${stage}`, run(stage, 4, false), base, 1e-5);
});

test(
  "stage 3 on 4 devices holds about a quarter of stage 0's parameter and optimizer bytes per device",
  { skip },
  () => {
    const mesh = makeMesh([4], ["data"]);
    const o = optim.adam(0.01);
    // bigger leaves so padding (at most 3 elements per leaf) is negligible
    const params = () => ({ a: jnp.ones([64, 33]), b: jnp.ones([101]), c: jnp.ones([7, 9, 5]) });
    const bytesOf = (stage: ZeroStage): number[] => {
      const before = zeroMemoryReport(mesh);
      const st = zeroShardState(params(), o, mesh, { stage });
      const after = zeroMemoryReport(mesh);
      const d = after.map((r, i) => r.bytesInUse - before[i].bytesInUse);
      // two steps later (each step's inputs disposed), the state at rest takes the same bytes: the outputs keep the layout
      type Q = ReturnType<typeof params>;
      const loss = (p: Q, x: Array): Array =>
        jnp.add(jnp.mean(jnp.matmul(x, p.a)), jnp.multiply(jnp.sum(p.b), jnp.mean(jnp.square(p.c))));
      const step = makeZeroTrainStep(loss, o, mesh, { stage });
      let cur = st;
      for (let k = 0; k < 2; k++) {
        const [l, next] = step(cur, jnp.ones([8, 64]));
        l.item();
        tree.leaves([cur.params, cur.optState, l]).forEach((x) => (x as Array).dispose());
        cur = next;
      }
      const rest = zeroMemoryReport(mesh).map((r, i) => r.bytesInUse - before[i].bytesInUse);
      assert.deepEqual(rest, d, `stage ${stage}: bytes per device at rest after 2 steps`);
      tree.leaves([cur.params, cur.optState]).forEach((x) => (x as Array).dispose());
      return d;
    };
    const full = bytesOf(0),
      z3 = bytesOf(3);
    const m = 64 * 33 + 101 + 7 * 9 * 5;
    // stage 0: params + adam's mu and nu (3m float32) + the int32 count; stage 3: a quarter of each padded leaf
    full.forEach((b) => assert.equal(b, 3 * m * 4 + 4, "stage 0 bytes per device"));
    const shard = [64 * 33, 101, 7 * 9 * 5].reduce((a, s) => a + Math.ceil(s / 4), 0);
    z3.forEach((b, i) => {
      assert.equal(b, 3 * shard * 4 + 4, `stage 3 bytes on device ${i}`);
      // exactly 1/4 but for <= 3 padding elements per leaf and the replicated 4-byte count: within 1% of a quarter
      assert.ok(Math.abs(b / full[i] - 0.25) < 0.01, `ratio ${b / full[i]}`);
    });
  },
);

test(
  "donate: the step consumes its state, values bit-identical to keeping it, donated buffers not leaked",
  { skip },
  () => {
    for (const [stage, n] of [
      [0, 2],
      [3, 4],
      [3, 2],
    ] as const) {
      const mesh = makeMesh([n], ["data"]);
      const o = opt();
      const bytes = () => zeroMemoryReport(mesh).map((r) => r.bytesInUse);
      const kept = run(stage, n, true);
      const before = bytes();
      let state = zeroShardState(init(0), o, mesh, { stage });
      const atRest = bytes().map((b, i) => b - before[i]);
      const step = makeZeroTrainStep(model, o, mesh, { stage, donate: true });
      const losses: number[] = [];
      for (let k = 0; k < STEPS; k++) {
        const old = tree.leaves([state.params, state.optState]) as Array[];
        const [l, next] = step(state, ...batch(k));
        losses.push(l.item() as number);
        l.dispose();
        // every array of the consumed state is disposed: reading it names the disposal
        old.forEach((x, i) => assert.throws(() => x.dataSync(), /dispos/, `stage ${stage} step ${k}: old leaf ${i}`));
        state = next;
      }
      synchronize();
      // the donated buffers went back to the devices: only the live state remains accounted
      assert.deepEqual(
        bytes().map((b, i) => b - before[i]),
        atRest,
        `stage ${stage} on ${n}: bytes per device after ${STEPS} donating steps`,
      );
      assert.deepEqual(losses, kept.losses, `stage ${stage} on ${n}: losses`);
      const a = tree.leaves(zeroGatherParams(state)) as Array[],
        b = tree.leaves(kept.params) as Array[];
      a.forEach((x, i) => assert.deepEqual(x.dataSync(), b[i].dataSync(), `stage ${stage} on ${n}: leaf ${i}`));
      tree.leaves([state.params, state.optState]).forEach((x) => (x as Array).dispose());
    }
  },
);

test("bad options are rejected with the function and the fix named", { skip }, () => {
  const mesh = makeMesh([2], ["data"]);
  assert.throws(
    () => zeroShardState(init(0), opt(), mesh, { stage: 4 as ZeroStage }),
    /zeroShardState: stage must be 0, 1, 2 or 3/,
  );
  assert.throws(
    () => makeZeroTrainStep(model, opt(), mesh, { stage: 1, dataAxis: "batch" }),
    /dataAxis "batch" is not an axis/,
  );
  const st = zeroShardState(init(0), opt(), mesh, { stage: 1 });
  assert.throws(
    () => makeZeroTrainStep(model, opt(), mesh, { stage: 3 })(st as never, ...batch(0)),
    /not laid out for stage 3/,
  );
});

test(
  "the collectives each stage runs: a bucket per layer or one, stage 3 one gather per layer (again in the backward)",
  { skip },
  () => {
    const mesh = makeMesh([4], ["data"]);
    const kinds = (stage: ZeroStage, combine = 0): string[] => {
      const saved = config.collectiveCombineBytes;
      config.update("collectiveCombineBytes", combine); // 0: each collective the step emits, uncombined
      try {
        return kindsNow(stage);
      } finally {
        config.update("collectiveCombineBytes", saved);
      }
    };
    const kindsNow = (stage: ZeroStage): string[] => {
      const o = opt();
      const st = zeroShardState(init(0), o, mesh, { stage });
      const step = makeZeroTrainStep(model, o, mesh, { stage });
      step(st, ...batch(0))[0].item(); // compiled
      const recs: LaunchRecord[] = [];
      const prev = setLaunchObserver((r) => recs.push(r));
      try {
        step(st, ...batch(0))[0].item();
        synchronize();
      } finally {
        setLaunchObserver(prev);
      }
      assert.equal(recs.length, 1, `stage ${stage} is one launch`);
      return recs[0].collectives[0].map((c) => c.kind);
    };
    const count = (ks: string[], k: string) => ks.filter((x) => x === k).length;
    // stage 0: the loss, one bucket of packed gradients per layer and one for the rest, each one all-reduce; gradient
    // bucketing (a 4 MiB threshold) combines them into one
    assert.deepEqual(
      kinds(0),
      globalThis.Array.from({ length: LAYERS + 2 }, () => "AllReduce"),
    );
    assert.deepEqual(kinds(0, 4 << 20), ["AllReduce"]);
    // stage 1: packed gradients all-reduced, the updated slices all-gathered (plus the loss)
    assert.deepEqual(kinds(1).sort(), ["AllGather", "AllReduce", "AllReduce"]);
    // stage 2: the gradients reduce-scattered instead
    assert.deepEqual(kinds(2).sort(), ["AllGather", "AllReduce", "ReduceScatter"]);
    // stage 3: outer + each layer gathered in the forward, each layer again in the rematerialized backward; one
    // reduce-scatter per gather group (all_gather's transpose); the loss
    const k3 = kinds(3);
    assert.equal(count(k3, "AllGather"), 1 + 2 * LAYERS, k3.join(" "));
    assert.equal(count(k3, "ReduceScatter"), 1 + LAYERS, k3.join(" "));
    assert.equal(count(k3, "AllReduce"), 1, k3.join(" "));
  },
);

// ---------------------------------------------------------------- optimizers that read across leaves

const MAX_NORM = 0.05;
/** Weight decay on matrices only: a function of the full-shape parameters (on flat slices every leaf has ndim 1). */
const noBiases = (p: unknown): unknown => tree.map((x) => (x as { ndim: number }).ndim > 1, p);
const clippedAdamw: OptFactory = () =>
  optim.chain(optim.clipByGlobalNorm(MAX_NORM), optim.adamw(0.05, { weightDecay: 0.5, mask: noBiases }));
const lamb: OptFactory = () => optim.lamb(0.05, { weightDecay: 0.3, mask: noBiases });

test(
  "global-norm clipping and a mask function: stage 0 equals the single-device step, and the clip triggers",
  {
    skip,
  },
  () => {
    const norms: number[] = [];
    const want = reference(clippedAdamw, (g) => norms.push(optim.globalNorm(g).item() as number));
    norms.forEach((v, i) => assert.ok(v > 4 * MAX_NORM, `step ${i}: gradient norm ${v} must exceed maxNorm`));
    compare("clipped adamw stage 0 on 4", run(0, 4, true, clippedAdamw), want, 1e-5);
    // the mask matters: decaying the biases too gives other parameters
    const all = reference(() => optim.chain(optim.clipByGlobalNorm(MAX_NORM), optim.adamw(0.05, { weightDecay: 0.5 })));
    const b = (r: typeof want) => r.params.outer.bout.dataSync() as Float32Array;
    assert.ok(Math.abs(b(all)[0] - b(want)[0]) > 1e-3, "the bias mask changes the result");
  },
);

for (const n of [2, 4])
  test(
    `stages 1-3 on ${n} devices equal stage 0 with clipByGlobalNorm + masked adamw, and with masked lamb`,
    {
      skip,
    },
    () => {
      for (const [name, mk] of [
        ["clip+adamw", clippedAdamw],
        ["lamb", lamb],
      ] as const) {
        const base = run(0, n, true, mk);
        for (const stage of [1, 2, 3] as const)
          compare(`${name} stage ${stage} on ${n}`, run(stage, n, stage !== 2, mk), base, 1e-5);
      }
    },
  );

// ---------------------------------------------------------------- sign momentum (lion) and adabelief

const lion: OptFactory = () => optim.lion(0.02, { weightDecay: 0.1, mask: noBiases });
const adabelief: OptFactory = () => optim.adabelief(0.05, { eps: 1e-8 });

/** The optimizer trains, stage 0 on 2 devices equals the single-device step and stages 1-3 equal stage 0 (rtol 1e-5). */
function stagesEqualOnTwo(name: string, mk: OptFactory): void {
  const want = reference(mk);
  assert.ok(want.losses[STEPS - 1] < want.losses[0], `${name} trains: ${want.losses.join(", ")}`);
  const base = run(0, 2, true, mk);
  compare(`${name} stage 0 on 2`, base, want, 1e-5);
  for (const stage of [1, 2, 3] as const)
    compare(`${name} stage ${stage} on 2`, run(stage, 2, stage !== 2, mk), base, 1e-5);
}

test(
  "lion (masked weight decay) and adabelief: stages 1-3 on 2 devices equal stage 0, which equals the single-device step",
  { skip },
  () => {
    for (const [name, mk] of [
      ["lion", lion],
      ["adabelief", adabelief],
    ] as const) {
      stagesEqualOnTwo(name, mk);
    }
  },
);

// ---------------------------------------------------------------- yogi, radam and the MultiSteps / applyIfFinite wrappers

// yogi with its moments starting at 0 (the default 1e-6 would move the zero padding: refused below)
const yogi0: OptFactory = () =>
  optim.chain(optim.scaleByYogi({ initialAccumulatorValue: 0, eps: 1e-3 }), optim.scaleByLearningRate(0.05));
const radam: OptFactory = () => optim.radam(0.05);
// two mini-steps per update: the 3 steps are accumulate, emit, accumulate (skipNotFinite's count summed over slices)
const multiSteps: OptFactory = () =>
  new optim.MultiSteps(optim.adam(0.05), 2, { shouldSkipUpdateFn: optim.skipNotFinite });
// the finiteness test and the clipping norm both sum over the devices' slices
const ifFinite: OptFactory = () =>
  optim.applyIfFinite(optim.chain(optim.clipByGlobalNorm(MAX_NORM), optim.adam(0.05)), 2);

test(
  "yogi, radam, MultiSteps and applyIfFinite: stages 1-3 on 2 devices equal stage 0, which equals the single-device step",
  { skip },
  () => {
    for (const [name, mk] of [
      ["yogi", yogi0],
      ["radam", radam],
      ["MultiSteps", multiSteps],
      ["applyIfFinite", ifFinite],
    ] as const) {
      stagesEqualOnTwo(name, mk);
    }
    const mesh = makeMesh([2], ["data"]);
    assert.throws(
      () => zeroShardState(init(0), optim.yogi(0.05), mesh, { stage: 1 }),
      /optim\.yogi: its moments start at initialAccumulatorValue/,
    );
  },
);

test(
  "an optimizer not known to be exact on slices is refused for stages 1-3 (naming the stage and the fix)",
  {
    skip,
  },
  () => {
    const mesh = makeMesh([2], ["data"]);
    // hand-written: rescales each leaf by its own maximum (not elementwise), and declares nothing
    const custom: optim.GradientTransformation = {
      init: () => ({}),
      update: <U>(u: U, s: unknown): [U, unknown] => [
        tree.map((x) => jnp.divide(x as Array, jnp.max(jnp.abs(x as Array))), u) as U,
        s,
      ],
    };
    for (const stage of [1, 2, 3] as const) {
      const re = new RegExp(`ZeRO stage ${stage} updates flat 1/n slices.*does not declare.*use stage 0`);
      assert.throws(() => zeroShardState(init(0), custom, mesh, { stage }), re);
      assert.throws(() => makeZeroTrainStep(model, optim.chain(custom, optim.sgd(0.1)), mesh, { stage }), re);
    }
    // stage 0 runs it on full parameters
    const st = zeroShardState(init(0), custom, mesh, { stage: 0 });
    assert.ok(Number.isFinite(makeZeroTrainStep(model, custom, mesh, { stage: 0 })(st, ...batch(0))[0].item()));
    // declared elementwise, it is accepted
    const decl = { ...custom, shards: { exact: true } as const };
    zeroShardState(init(0), decl, mesh, { stage: 1 });
  },
);

test("a mask function on a subtree not shaped like the parameters is refused under stages 1-3", { skip }, () => {
  const mesh = makeMesh([2], ["data"]);
  const inner = optim.masked(optim.addDecayedWeights(0.1), noBiases);
  const o = optim.masked(inner, (p: unknown) => tree.map(() => true, p));
  const o2 = optim.masked(inner, { outer: true, layers: false });
  assert.ok(zeroShardState(init(0), o, mesh, { stage: 1 }));
  assert.throws(
    () => zeroShardState(init(0), o2, mesh, { stage: 1 }),
    /optim.masked's mask function: under ZeRO stage 1 .*structured like the parameters/,
  );
});
