/**
 * @file optim.lion / scaleByLion, optim.adabelief / scaleByBelief and the piecewise-interpolate and one-cycle
 * schedules against NumPy references (test/fixtures/optim-lion-adabelief.json from scripts/fixtures/gen-optim-lion-adabelief.py):
 * parameters after each of a few steps on a small tree, eager and under jit; schedule values at chosen steps for
 * int32 Array counts, JS numbers and under jit; state layouts and bad-input errors.
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
interface Fixture {
  params0: Leaves;
  grads: Leaves[];
  optimizers: { name: string; fn: "lion" | "adabelief"; args: unknown[]; params: Leaves[] }[];
  schedules: {
    name: string;
    fn: "linearOnecycleSchedule" | "cosineOnecycleSchedule" | "piecewiseInterpolateSchedule";
    args: unknown[];
    counts: number[];
    values: number[];
  }[];
}
const FIX = loadFixture<Fixture>("optim-lion-adabelief.json");
type P = { w: Array; b: Array };
const dec = (l: Leaves): P => ({ w: decode(l.w), b: decode(l.b) });

function build(fn: Fixture["optimizers"][number]["fn"], args: unknown[]): optim.GradientTransformation {
  const f = optim[fn] as (...a: unknown[]) => optim.GradientTransformation;
  return f(...args);
}

for (const c of FIX.optimizers)
  test(`${c.name}: params after ${c.params.length} steps equal NumPy, eager and under jit`, () => {
    for (const useJit of [false, true]) {
      const got = runOptimizerSteps(build(c.fn, c.args), dec(FIX.params0), FIX.grads.map(dec), useJit).params;
      got.forEach((p, i) => {
        for (const k of ["w", "b"] as const)
          assertClose(p[k], c.params[i][k], { rtol: 1e-5, atol: 1e-6, msg: `${c.name} jit=${useJit} step ${i} ${k}` });
      });
    }
  });

test("scaleByLion returns the sign direction and keeps mu (muDtype bfloat16); scaleByBelief equals adabelief at lr -1", () => {
  const g = dec(FIX.grads[0]),
    p = dec(FIX.params0);
  const t = optim.scaleByLion({ b1: 0.5, muDtype: "bfloat16" });
  const s0 = t.init(p) as { count: Array; mu: P };
  assert.equal(s0.count.dtype, "int32");
  assert.equal(s0.mu.w.dtype, "bfloat16");
  const [u, s1] = t.update(g, s0) as [P, { count: Array; mu: P }];
  // step 1 (mu = 0): sign((1 - b1) g) = sign(g); mu = (1 - b2) g
  assertClose(u.w, jnp.sign(g.w), { rtol: 0, atol: 0 });
  assert.equal(s1.count.item(), 1);
  assert.equal(s1.mu.b.dtype, "bfloat16");
  assertClose(jnp.astype(s1.mu.b, "float32"), jnp.multiply(0.01, g.b), { rtol: 1e-2, atol: 1e-3, checkDtype: false });

  const b = optim.scaleByBelief(0.8, 0.9, 1e-6, 1e-8);
  const a = optim.adabelief(-1, { b1: 0.8, b2: 0.9, eps: 1e-6, epsRoot: 1e-8 });
  let sb = b.init(p),
    sa = a.init(p);
  for (const gl of FIX.grads) {
    const gi = dec(gl);
    const [ub, nb] = b.update(gi, sb, p) as [P, unknown];
    const [ua, na] = a.update(gi, sa, p) as [P, unknown];
    assertClose(ub.w, ua.w, { rtol: 1e-6 });
    sb = nb;
    sa = na;
  }
  const st = sb as { count: Array; mu: P; nu: P };
  assert.equal(st.count.item(), FIX.grads.length);
  assert.deepEqual(st.nu.w.shape, [2, 3]);
});

test("lion and adabelief declare themselves exact on shards (ZeRO stages 1-3 accept them)", () => {
  for (const t of [
    optim.lion(0.1),
    optim.lion(0.1, { mask: (q: unknown) => q }),
    optim.adabelief(0.1),
    optim.scaleByLion(),
    optim.scaleByBelief(),
  ])
    assert.deepEqual(t.shards, { exact: true });
});

for (const c of FIX.schedules)
  test(`${c.name}: values at ${c.counts.length} steps equal NumPy (Array, number and jit counts)`, () => {
    const f = (optim[c.fn] as (...a: unknown[]) => optim.Schedule)(...c.args);
    checkScheduleValues(c.name, f, c.counts, c.values, 1e-7);
  });

test("a one-cycle schedule drives adabelief's learning rate through its step count", () => {
  const sched = optim.cosineOnecycleSchedule(4, 0.1);
  const p0 = dec(FIX.params0);
  const opt = optim.adabelief(sched);
  let p = p0,
    s = opt.init(p);
  // the reference: one adabelief state, each step's update scaled by the schedule at that step's count
  const dir = optim.scaleByBelief();
  let q = p0,
    ds = dir.init(q);
  FIX.grads.forEach((gl, k) => {
    const g = dec(gl);
    const [u, ns] = opt.update(g, s, p) as [P, unknown];
    p = optim.applyUpdates(p, u);
    s = ns;
    const [d, nds] = dir.update(g, ds) as [P, unknown];
    const lr = sched(k) as Array;
    q = optim.applyUpdates(q, { w: jnp.multiply(jnp.negative(lr), d.w), b: jnp.multiply(jnp.negative(lr), d.b) });
    ds = nds;
  });
  // the rate changes over the steps (0.004 at 0, the peak 0.1 at trunc(0.3 * 4) = 1)
  assert.ok(((sched(1) as Array).item() as number) > 10 * ((sched(0) as Array).item() as number));
  assertClose(p.w, q.w, { rtol: 1e-6 });
  assertClose(p.b, q.b, { rtol: 1e-6 });
});

test("errors name the function and the problem", () => {
  const throwsMsg = (f: () => unknown, re: RegExp) => assert.throws(f, re);
  throwsMsg(() => optim.lion(0.1, { b3: 1 } as never), /optim\.lion: unexpected option "b3"/);
  throwsMsg(() => optim.lion(0.1, { b1: "x" } as never), /optim\.lion: b1 must be a number or an Array, got string/);
  throwsMsg(() => optim.lion(0.1, { muDtype: "float7" } as never), /optim\.lion/);
  throwsMsg(() => optim.lion(0.1, { weightDecay: "big" } as never), /optim\.addDecayedWeights: weightDecay must be/);
  throwsMsg(() => optim.scaleByLion(0.9, 0.99, null, 1 as never), /optim\.scaleByLion: takes at most 3/);
  throwsMsg(() => optim.adabelief(0.1, { nesterov: 1 } as never), /optim\.adabelief: nesterov must be a boolean/);
  throwsMsg(
    () => optim.adabelief(0.1, { eps: "tiny" } as never),
    /optim\.adabelief: eps must be a number or an Array, got string/,
  );
  throwsMsg(
    () => optim.adabelief(0.1, { weightDecay: 0.1 } as never),
    /optim\.adabelief: unexpected option "weightDecay"/,
  );
  throwsMsg(() => optim.scaleByBelief({ bogus: 1 } as never), /optim\.scaleByBelief: unexpected option "bogus"/);
  throwsMsg(() => optim.adabelief("fast" as never), /optim\.scaleByLearningRate: learningRate must be/);

  throwsMsg(
    () => optim.piecewiseInterpolateSchedule("cos" as never, 1),
    /optim\.piecewiseInterpolateSchedule: interpolateType must be "linear" or "cosine", got "cos"/,
  );
  throwsMsg(
    () => optim.piecewiseInterpolateSchedule("linear", 1, { 5: -1 }),
    /optim\.piecewiseInterpolateSchedule: expects non-negative scale factors, got -1 at boundary 5/,
  );
  throwsMsg(
    () => optim.piecewiseInterpolateSchedule("linear", 1, [[-3, 2]]),
    /optim\.piecewiseInterpolateSchedule: boundaries must be >= 0/,
  );
  throwsMsg(
    () => (optim.piecewiseInterpolateSchedule as unknown as (...a: unknown[]) => unknown)("linear", 1, { 5: 2 }, 4),
    /piecewiseInterpolateSchedule/,
  );
  throwsMsg(
    () => optim.linearOnecycleSchedule(0, 1),
    /optim\.linearOnecycleSchedule: requires a positive transitionSteps, got 0/,
  );
  throwsMsg(
    () => optim.cosineOnecycleSchedule(-5, 1),
    /optim\.cosineOnecycleSchedule: requires a positive transitionSteps, got -5/,
  );
  throwsMsg(
    () => optim.cosineOnecycleSchedule(10, 1, { pctFinal: 0.8 } as never),
    /optim\.cosineOnecycleSchedule: unexpected option "pctFinal"/,
  );
  throwsMsg(
    () => optim.linearOnecycleSchedule(10, Number.NaN),
    /optim\.linearOnecycleSchedule: peakValue must be a finite number, got NaN/,
  );
});
