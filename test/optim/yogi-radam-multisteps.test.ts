/**
 * @file optim.yogi / scaleByYogi, optim.radam / scaleByRadam, optim.MultiSteps, optim.applyIfFinite and
 * optim.sgdrSchedule against NumPy references (test/fixtures/optim-yogi-radam-multisteps.json from
 * scripts/fixtures/gen-optim-yogi-radam-multisteps.py): parameters after each of 8 steps on a small tree, eager and
 * under jit; the wrappers' counters; schedule values for int32 Array counts, JS numbers and under jit; bad inputs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/public.js";
import { type FixArray, assertClose, decode, loadFixture } from "../helpers/fixtures.js";
import { checkScheduleValues, runOptimizerSteps } from "./fixture-checks.js";

type Leaves = { w: FixArray; b: FixArray };
interface Counters {
  notfiniteCount: number;
  lastFinite: boolean;
  totalNotfinite: number;
}
interface OptCase {
  name: string;
  fn:
    | "yogi"
    | "radam"
    | "scaleByYogi"
    | "scaleByRadam"
    | "MultiSteps"
    | "MultiStepsSchedule"
    | "MultiStepsSkipNotFinite"
    | "MultiStepsSkipLarge"
    | "applyIfFinite";
  args: unknown[];
  lr?: number;
  every?: number;
  maxErrors?: number;
  badGrads?: boolean;
  params: Leaves[];
  counters?: Counters[];
}
interface Fixture {
  params0: Leaves;
  grads: Leaves[];
  badGrads: Leaves[];
  optimizers: OptCase[];
  schedules: { name: string; cycles: optim.SgdrCycle[]; counts: number[]; values: number[] }[];
}
const FIX = loadFixture<Fixture>("optim-yogi-radam-multisteps.json");
type P = { w: Array; b: Array };
const dec = (l: Leaves): P => ({ w: decode(l.w), b: decode(l.b) });

function build(c: OptCase): optim.GradientTransformation {
  switch (c.fn) {
    case "yogi":
    case "radam":
      return (optim[c.fn] as (...a: unknown[]) => optim.GradientTransformation)(...c.args);
    case "scaleByYogi":
    case "scaleByRadam":
      return optim.chain(
        (optim[c.fn] as (...a: unknown[]) => optim.GradientTransformation)(...c.args),
        optim.scale(-c.lr!),
      );
    case "MultiSteps":
      return new optim.MultiSteps(optim.adam(0.05), c.every!, ...(c.args as [optim.MultiStepsOpts]));
    case "MultiStepsSchedule":
      return new optim.MultiSteps(optim.sgd(0.1, 0.9), (gs: Array) => jnp.add(gs, 1));
    case "MultiStepsSkipNotFinite":
      return new optim.MultiSteps(optim.adam(0.05), 2, { shouldSkipUpdateFn: optim.skipNotFinite });
    case "MultiStepsSkipLarge":
      return new optim.MultiSteps(optim.sgd(0.1, 0.9), 2, {
        shouldSkipUpdateFn: (u, s, p) => optim.skipLargeUpdates(u, s, p, 2.2),
      });
    case "applyIfFinite":
      return optim.applyIfFinite(optim.sgd(0.1, 0.9), c.maxErrors!);
  }
}

for (const c of FIX.optimizers)
  test(`${c.name}: params after ${c.params.length} steps equal NumPy, eager and under jit`, () => {
    for (const useJit of [false, true]) {
      const { params: got, states } = runOptimizerSteps(
        build(c),
        dec(FIX.params0),
        (c.badGrads ? FIX.badGrads : FIX.grads).map(dec),
        useJit,
      );
      got.forEach((p, i) => {
        for (const k of ["w", "b"] as const)
          assertClose(p[k], c.params[i][k], { rtol: 1e-5, atol: 1e-6, msg: `${c.name} jit=${useJit} step ${i} ${k}` });
      });
      c.counters?.forEach((want, i) => {
        const s = states[i] as optim.ApplyIfFiniteState;
        const got = {
          notfiniteCount: s.notfiniteCount.item(),
          lastFinite: s.lastFinite.item(),
          totalNotfinite: s.totalNotfinite.item(),
        };
        assert.deepEqual(got, want, `${c.name} jit=${useJit} counters after step ${i}`);
      });
    }
  });

test("MultiSteps: zero updates between emits, hasUpdated, counters, and the inner state frozen until the k-th step", () => {
  const p = dec(FIX.params0);
  const ms = new optim.MultiSteps(optim.adam(0.05), 3);
  const plain = optim.adam(0.05);
  let s = ms.init(p);
  let ps = plain.init(p);
  const seen: boolean[] = [];
  FIX.grads.slice(0, 6).forEach((gl, i) => {
    const g = dec(gl);
    const [u, ns] = ms.update(g, s, p) as [P, optim.MultiStepsState];
    s = ns;
    seen.push(ms.hasUpdated(s).item() as boolean);
    assert.equal(ns.miniStep.item(), (i + 1) % 3, `miniStep after step ${i}`);
    assert.equal(ns.gradientStep.item(), Math.floor((i + 1) / 3), `gradientStep after step ${i}`);
    if ((i + 1) % 3 !== 0) {
      assert.equal(jnp.add(jnp.sum(jnp.abs(u.w)), jnp.sum(jnp.abs(u.b))).item(), 0, `update at mini-step ${i}`);
    } else {
      // the emitted update is adam's on the mean of the three gradients
      const mean = (k: "w" | "b") =>
        jnp.divide(jnp.add(jnp.add(dec(FIX.grads[i - 2])[k], dec(FIX.grads[i - 1])[k]), dec(FIX.grads[i])[k]), 3);
      const [want, nps] = plain.update({ w: mean("w"), b: mean("b") }, ps, p) as [P, unknown];
      ps = nps;
      assertClose(u.w, want.w, { rtol: 1e-5, atol: 1e-7 });
      assertClose(u.b, want.b, { rtol: 1e-5, atol: 1e-7 });
    }
  });
  assert.deepEqual(seen, [false, false, true, false, false, true]);
  // the plain-transformation view shares the state layout and the declaration
  const gt = ms.gradientTransformation();
  const [u2] = gt.update(dec(FIX.grads[0]), gt.init(p), p) as [P, unknown];
  assert.equal(jnp.sum(jnp.abs(u2.w)).item(), 0);
  assert.deepEqual(gt.shards, { exact: true });
  // inside a chain (init/update detached from the instance)
  const ch = optim.chain(optim.clipByGlobalNorm(10), ms);
  const [u3] = ch.update(dec(FIX.grads[0]), ch.init(p), p) as [P, unknown];
  assert.equal(jnp.sum(jnp.abs(u3.b)).item(), 0);
});

test("applyIfFinite keeps the parameters and the inner state on a skipped step, and MultiSteps can wrap it", () => {
  const p = dec(FIX.params0);
  const opt = optim.applyIfFinite(optim.sgd(0.1, 0.9), 3);
  const s0 = opt.init(p) as optim.ApplyIfFiniteState;
  const [u1, s1] = opt.update(dec(FIX.grads[0]), s0, p) as [P, optim.ApplyIfFiniteState];
  const [u2, s2] = opt.update(dec(FIX.badGrads[1]), s1, p) as [P, optim.ApplyIfFiniteState];
  assert.equal(jnp.sum(jnp.abs(u2.w)).item(), 0);
  assert.equal(s2.lastFinite.item(), false);
  // the momentum trace is the one from step 0
  const tr = (s: optim.ApplyIfFiniteState) => (s.innerState as [{ trace: P }, unknown])[0].trace;
  assertClose(tr(s2).w, tr(s1).w, { rtol: 0, atol: 0 });
  assertClose(u1.w, jnp.multiply(-0.1, dec(FIX.grads[0]).w), { rtol: 1e-6 });
  // a non-finite mini-step inside MultiSteps(applyIfFinite(...)): skipped once its mean reaches the inner optimizer
  const wrapped = new optim.MultiSteps(optim.applyIfFinite(optim.sgd(0.1), 0), 2);
  let ws = wrapped.init(p);
  [, ws] = wrapped.update(dec(FIX.badGrads[1]), ws, p);
  const [wu] = wrapped.update(dec(FIX.grads[2]), ws, p) as [P, unknown];
  // maxConsecutiveErrors 0: the first non-finite step already goes through, NaN included
  assert.equal(jnp.any(jnp.isnan(wu.w)).item(), true);
});

test("MultiSteps' skipState: skipNotFinite / skipLargeUpdates report why, and a skipped mini-step changes nothing else", () => {
  const p = dec(FIX.params0);
  const ms = new optim.MultiSteps(optim.adam(0.05), 2, { shouldSkipUpdateFn: optim.skipNotFinite });
  const s0 = ms.init(p) as optim.MultiStepsState;
  assert.deepEqual(Object.keys(s0.skipState as object).sort(), ["numNotFinite", "shouldSkip"]);
  const [, s1] = ms.update(dec(FIX.grads[0]), s0, p) as [P, optim.MultiStepsState];
  const [u2, s2] = ms.update(dec(FIX.badGrads[1]), s1, p) as [P, optim.MultiStepsState];
  const sk = s2.skipState as { shouldSkip: Array; numNotFinite: Array };
  assert.equal(sk.shouldSkip.item(), true);
  assert.equal(sk.numNotFinite.item(), 1);
  assert.equal(jnp.sum(jnp.abs(u2.w)).item(), 0);
  assert.equal(s2.miniStep.item(), 1);
  assertClose((s2.accGrads as P).w, (s1.accGrads as P).w, { rtol: 0, atol: 0 });
  const [, l] = optim.skipLargeUpdates(dec(FIX.grads[2]), s0.gradientStep, p, 2.2) as [Array, { normSquared: Array }];
  const g = dec(FIX.grads[2]);
  const want = jnp.add(jnp.sum(jnp.square(g.w)), jnp.sum(jnp.square(g.b)));
  assertClose(l.normSquared, want, { rtol: 1e-6 });
});

test("declarations on shards: yogi (initialAccumulatorValue 0), radam and the wrappers of exact optimizers are exact", () => {
  for (const t of [
    optim.radam(0.1),
    optim.scaleByRadam({ nesterov: true }),
    optim.chain(optim.scaleByYogi({ initialAccumulatorValue: 0 }), optim.scaleByLearningRate(0.1)),
    optim.scaleByYogi({ initialAccumulatorValue: 0 }),
    new optim.MultiSteps(optim.adam(0.1), 4),
    optim.applyIfFinite(optim.lion(0.1), 2),
  ])
    assert.deepEqual(t.shards, { exact: true });
  // yogi's moments start at 1e-6 by default: zero padding would move, so sharded steps must refuse it
  const y = optim.yogi(0.1).shards!;
  assert.equal(y.exact, false);
  assert.match(
    (y as { reason: string }).reason,
    /optim\.yogi: its moments start at initialAccumulatorValue \(0\.000001\)/,
  );
  const custom: optim.GradientTransformation = { init: () => ({}), update: (u, s) => [u, s] };
  const ms = new optim.MultiSteps(custom, 2).shards;
  assert.equal(ms.exact, false);
  assert.match((ms as { reason: string }).reason, /optim\.MultiSteps's inner optimizer does not declare/);
  assert.deepEqual(new optim.MultiSteps(optim.adam(0.1), 2, { shouldSkipUpdateFn: optim.skipNotFinite }).shards, {
    exact: true,
  });
  const big = new optim.MultiSteps(optim.adam(0.1), 2, {
    shouldSkipUpdateFn: (u, s, p) => optim.skipLargeUpdates(u, s, p, 1),
  }).shards;
  assert.match(
    (big as { reason: string }).reason,
    /optim\.MultiSteps: its shouldSkipUpdateFn would see flat 1\/n slices/,
  );
  const af = optim.applyIfFinite(optim.yogi(0.1), 1).shards!;
  assert.match((af as { reason: string }).reason, /optim\.yogi: its moments start/);
});

for (const c of FIX.schedules)
  test(`${c.name}: values at ${c.counts.length} steps equal NumPy (Array, number and jit counts)`, () => {
    checkScheduleValues(c.name, optim.sgdrSchedule(c.cycles), c.counts, c.values, 1e-6);
  });

test("errors name the function and the problem", () => {
  const throwsMsg = (f: () => unknown, re: RegExp) => assert.throws(f, re);
  throwsMsg(() => optim.yogi(0.1, { epsRoot: 1 } as never), /optim\.yogi: unexpected option "epsRoot"/);
  throwsMsg(() => optim.yogi(0.1, { b1: "x" } as never), /optim\.yogi: b1 must be a number or an Array, got string/);
  throwsMsg(() => optim.scaleByYogi({ bogus: 1 } as never), /optim\.scaleByYogi: unexpected option "bogus"/);
  throwsMsg(() => optim.scaleByYogi(0.9, 0.99, 1e-3, 0, 1e-6, 7 as never), /optim\.scaleByYogi: takes at most 5/);
  throwsMsg(() => optim.radam(0.1, { threshold: "5" } as never), /optim\.radam: threshold must be a number, got 5/);
  throwsMsg(() => optim.radam(0.1, { nesterov: 1 } as never), /optim\.radam: nesterov must be a boolean/);
  throwsMsg(() => optim.radam(0.1, { weightDecay: 0.1 } as never), /optim\.radam: unexpected option "weightDecay"/);
  throwsMsg(
    () => optim.scaleByRadam({ eps: "x" } as never),
    /optim\.scaleByRadam: eps must be a number or an Array, got string/,
  );
  throwsMsg(() => optim.radam("fast" as never), /optim\.scaleByLearningRate: learningRate must be/);

  const sgd = optim.sgd(0.1);
  throwsMsg(
    () => new optim.MultiSteps(sgd, 0),
    /optim\.MultiSteps: everyKSchedule must be a positive integer or a schedule, got 0/,
  );
  throwsMsg(() => new optim.MultiSteps(sgd, 2.5), /optim\.MultiSteps: everyKSchedule must be a positive integer/);
  throwsMsg(() => new optim.MultiSteps(sgd, "3" as never), /optim\.MultiSteps: everyKSchedule must be .*got string/);
  throwsMsg(() => new optim.MultiSteps({} as never, 2), /optim\.MultiSteps: opt must be a GradientTransformation/);
  throwsMsg(
    () => new optim.MultiSteps(sgd, 2, { useGradMeans: false } as never),
    /optim\.MultiSteps: unexpected option "useGradMeans"/,
  );
  throwsMsg(
    () => new optim.MultiSteps(sgd, 2, { useGradMean: 1 } as never),
    /optim\.MultiSteps: useGradMean must be a boolean/,
  );
  throwsMsg(
    () => new optim.MultiSteps(sgd, 2, { shouldSkipUpdateFn: 3 } as never),
    /optim\.MultiSteps: shouldSkipUpdateFn must be a function or null, got number/,
  );
  throwsMsg(
    () => optim.skipLargeUpdates({ a: jnp.ones([2]) }, jnp.zeros([], "int32"), null, "1" as never),
    /optim\.skipLargeUpdates: maxSquaredNorm must be a number, got 1/,
  );
  throwsMsg(
    () => new optim.MultiSteps(sgd, 2).update({ a: jnp.ones([2]) }, {}),
    /optim\.MultiSteps\.update: expected the state/,
  );

  throwsMsg(
    () => optim.applyIfFinite(sgd, -1),
    /optim\.applyIfFinite: maxConsecutiveErrors must be a non-negative integer, got -1/,
  );
  throwsMsg(
    () => optim.applyIfFinite(null as never, 1),
    /optim\.applyIfFinite: inner must be a GradientTransformation/,
  );
  throwsMsg(() => (optim.applyIfFinite as (...a: unknown[]) => unknown)(sgd, 1, { x: 1 }), /optim\.applyIfFinite/);
  throwsMsg(
    () => optim.applyIfFinite(sgd, 1).update({ a: jnp.ones([2]) }, null),
    /optim\.applyIfFinite: expected the state/,
  );

  const cyc = { initValue: 0, peakValue: 1, warmupSteps: 2, decaySteps: 10 };
  throwsMsg(() => optim.sgdrSchedule([]), /optim\.sgdrSchedule: cosineKwargs must be a non-empty list/);
  throwsMsg(
    () => optim.sgdrSchedule([cyc, { ...cyc, warmup_steps: 3 } as never]),
    /optim\.sgdrSchedule: cycle 1 has unexpected key "warmup_steps"/,
  );
  throwsMsg(
    () => optim.sgdrSchedule([{ initValue: 0, peakValue: 1, warmupSteps: 2 } as never]),
    /optim\.sgdrSchedule: cycle 0 is missing decaySteps/,
  );
  throwsMsg(
    () => optim.sgdrSchedule([{ ...cyc, decaySteps: 2 }]),
    /optim\.sgdrSchedule: cycle 0 needs decaySteps > warmupSteps, got decaySteps 2, warmupSteps 2/,
  );
  throwsMsg(
    () => optim.sgdrSchedule([{ ...cyc, warmupSteps: Number.NaN }]),
    /optim\.sgdrSchedule \(cycle 0\): warmupSteps must be a finite number, got NaN/,
  );
  throwsMsg(() => (optim.sgdrSchedule as (...a: unknown[]) => unknown)([cyc], {}), /optim\.sgdrSchedule/);
});
