/**
 * @file optim.injectHyperparams against NumPy (test/fixtures/optim-adafactor-sm3-more.json): adam whose learning
 * rate is a schedule and whose b2 the user changes in the state before the fourth step, eager and under jit; the
 * state's hyperparams after each step; static arguments (masks, booleans) passed through (lars against its own
 * fixture); a hand-written factory; declarations on ZeRO shards; bad inputs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/public.js";
import { MORE, checkParams, dec3, runSteps } from "./more-fixture.js";

const injectCase = MORE.optimizers.find((c) => c.fn === "injectAdam")!;
const lrSchedule = optim.linearSchedule(0.1, 0.02, 4);
const injectedAdam = (): optim.GradientTransformation =>
  optim.injectHyperparams(optim.adam)({ learningRate: lrSchedule, b1: 0.9, b2: 0.999 });

/** Sets hyperparams.b2 = 0.9 before step 3 (as the fixture's reference), as a JS number or an Array. */
const setB2 =
  (asArray: boolean) =>
  (i: number, s: unknown): unknown => {
    if (i !== 3) return s;
    const st = s as optim.InjectHyperparamsState;
    return { ...st, hyperparams: { ...st.hyperparams, b2: asArray ? jnp.array(0.9, { dtype: "float32" }) : 0.9 } };
  };

test("injectHyperparams(adam): a scheduled learning rate and b2 changed mid-run equal NumPy, eager and under jit", () => {
  for (const useJit of [false, true])
    for (const asArray of [false, true]) {
      const { params } = runSteps(injectedAdam(), useJit, setB2(asArray));
      checkParams(injectCase, params, `inject jit=${useJit} b2 as ${asArray ? "Array" : "number"}`);
    }
  // without the change the run differs (the change is what the fixture checks)
  const plain = runSteps(injectedAdam(), false).params;
  const last = plain[plain.length - 1].w.dataSync()[0] as number;
  const want = injectCase.params[injectCase.params.length - 1].w.data[0] as number;
  assert.ok(Math.abs(last - want) > 1e-4, `changing b2 matters: ${last} vs ${want}`);
});

test("the state holds each step's hyperparameters (schedules at the count before the step) and the count", () => {
  const { states } = runSteps(injectedAdam(), true, setB2(false));
  states.forEach((st, i) => {
    const s = st as optim.InjectHyperparamsState;
    assert.equal((s.count as Array).item(), i + 1, `count after step ${i}`);
    const lr = s.hyperparams.learningRate as Array;
    assert.equal(lr.dtype, "float32");
    assert.ok(Math.abs((lr.item() as number) - (0.1 - (0.08 * Math.min(i, 4)) / 4)) < 1e-7, `lr used at step ${i}`);
    assert.ok(Math.abs(((s.hyperparams.b2 as Array).item() as number) - (i < 3 ? 0.999 : 0.9)) < 1e-7, `b2 at ${i}`);
  });
  const opt = injectedAdam();
  const init = opt.init(dec3(MORE.params0)) as optim.InjectHyperparamsState;
  assert.deepEqual(Object.keys(init.hyperparams).sort(), ["b1", "b2", "learningRate"]);
  assert.ok(Math.abs(((init.hyperparams.learningRate as Array).item() as number) - 0.1) < 1e-7, "the schedule at 0");
});

test("setting a scheduled hyperparameter in the state has no effect (it is recomputed from the count)", () => {
  const overwrite = (i: number, s: unknown): unknown => {
    const st = setB2(false)(i, s) as optim.InjectHyperparamsState;
    return { ...st, hyperparams: { ...st.hyperparams, learningRate: 123 } };
  };
  checkParams(injectCase, runSteps(injectedAdam(), false, overwrite).params, "scheduled lr overwritten");
});

test("static arguments pass through: injectHyperparams(lars) with masks and nesterov equals lars", () => {
  const c = MORE.optimizers.find((x) => x.fn === "lars" && x.args.length > 1)!;
  const opt = optim.injectHyperparams(optim.lars)({ learningRate: 0.5, ...(c.args[1] as object) });
  const { params, states } = runSteps(opt, true);
  checkParams(c, params, "injected lars");
  const hp = (states[0] as optim.InjectHyperparamsState).hyperparams;
  assert.deepEqual(Object.keys(hp).sort(), ["eps", "learningRate", "momentum", "trustCoefficient", "weightDecay"]);
});

test("injectHyperparams(adafactor): minDimSizeToFactor stays a JS number (static), the rest are state; jit", () => {
  const c = MORE.optimizers.find((x) => x.name.startsWith("adafactor factored"))!;
  const opt = optim.injectHyperparams(optim.adafactor)({ learningRate: 0.05, minDimSizeToFactor: 3 });
  const { params, states } = runSteps(opt, true);
  checkParams(c, params, "injected adafactor");
  assert.deepEqual(Object.keys((states[0] as optim.InjectHyperparamsState).hyperparams), ["learningRate"]);
  // every numeric option as a traced Array: decay rate, momentum, weight decay (clipping off: null stays static)
  const c3 = MORE.optimizers.find((x) => x.name.startsWith("adafactor momentum"))!;
  const all = optim.injectHyperparams(optim.adafactor)({ learningRate: 0.05, ...(c3.args[1] as object) });
  const run3 = runSteps(all, true);
  checkParams(c3, run3.params, "injected adafactor with momentum");
  assert.deepEqual(Object.keys((run3.states[0] as optim.InjectHyperparamsState).hyperparams).sort(), [
    "decayRate",
    "learningRate",
    "momentum",
    "weightDecayRate",
  ]);
});

test("a hand-written factory gets one object; positional and staticArgs options", () => {
  const c = MORE.optimizers.find((x) => x.fn === "adamax" && x.args.length === 1)!;
  const mine = optim.injectHyperparams((h: { lr: Array; b1: Array }) =>
    optim.chain(optim.scaleByAdamax({ b1: h.b1 }), optim.scale(jnp.negative(h.lr))),
  )({ lr: 0.05, b1: 0.9 });
  checkParams(c, runSteps(mine, false).params, "hand-written factory");
  const pos = optim.injectHyperparams((lr: Array, o: { b1: Array }) => optim.adamax(lr, o), {
    positional: ["lr"],
  })({ lr: 0.05, b1: 0.9 });
  checkParams(c, runSteps(pos, true).params, "positional lr");
  // a function passed through as it is (not a schedule)
  let seen: unknown = null;
  const fnArg = (x: number): number => x;
  optim
    .injectHyperparams(
      (h: { f: unknown; lr: Array }) => {
        seen = h.f;
        return optim.sgd(h.lr);
      },
      { staticArgs: "f" },
    )({ f: fnArg, lr: 0.1 })
    .init(dec3(MORE.params0));
  assert.equal(seen, fnArg);
});

test("hyperparamDtype sets the dtype of the state's hyperparameters", () => {
  const opt = optim.injectHyperparams(optim.sgd, { hyperparamDtype: "float16" })({ learningRate: 0.1 });
  const s = opt.init(dec3(MORE.params0)) as optim.InjectHyperparamsState;
  assert.equal((s.hyperparams.learningRate as Array).dtype, "float16");
});

test("declarations on shards follow the inner optimizer", () => {
  assert.deepEqual(optim.injectHyperparams(optim.adam)({ learningRate: 0.1 }).shards, { exact: true });
  const r = optim.injectHyperparams(optim.sm3)({ learningRate: 0.1 }).shards!;
  assert.equal(r.exact, false);
  assert.match((r as { reason: string }).reason, /optim\.sm3: its accumulators/);
});

test("bad inputs name optim.injectHyperparams and what was expected", () => {
  assert.throws(() => optim.injectHyperparams(3 as never), /optim\.injectHyperparams: factory must be a function/);
  assert.throws(
    () => optim.injectHyperparams(() => ({}) as never)({ learningRate: 0.1 }),
    /optim\.injectHyperparams: the factory did not return a GradientTransformation/,
  );
  // a schedule that returns a string past count 0 (a JS number) passes the construction, then fails at init
  const opt = optim.injectHyperparams(optim.sgd)({ learningRate: (c: unknown) => (c === 0 ? 0.1 : ("fast" as never)) });
  assert.throws(() => opt.init(dec3(MORE.params0)), /hyperparameter "learningRate" must be a number or an Array/);
  const ok = optim.injectHyperparams(optim.sgd)({ learningRate: 0.1 });
  const p = dec3(MORE.params0);
  assert.throws(() => ok.update(p, { count: 0 }, p), /expected the state from its init/);
});
