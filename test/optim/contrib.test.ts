/**
 * @file optim.contrib.scheduleFreeAdamw / scheduleFreeSgd against NumPy (test/fixtures/optim-adafactor-sm3-more.json):
 * the params y and the evaluation params x (scheduleFreeEvalParams) after each of 6 steps, eager and under jit; the
 * state's counters; ZeRO declarations; bad inputs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import * as optim from "../../src/optim/public.js";
import { assertClose } from "../helpers/fixtures.js";
import { KEYS, type Leaves, MORE, type P3, dec3, runSteps } from "./more-fixture.js";

interface SfCase {
  name: string;
  fn: "scheduleFreeAdamw" | "scheduleFreeSgd";
  opts: optim.contrib.ScheduleFreeAdamwOpts & optim.contrib.ScheduleFreeSgdOpts;
  steps: { y: Leaves; x: Leaves }[];
}
const FIX = MORE as unknown as { scheduleFree: SfCase[] };

for (const cs of FIX.scheduleFree)
  test(`${cs.name}: params y and eval params x after ${cs.steps.length} steps equal NumPy, eager and under jit`, () => {
    for (const useJit of [false, true]) {
      const opt = optim.contrib[cs.fn](cs.opts);
      const { params, states } = runSteps(opt, useJit);
      params.forEach((p, i) => {
        const x = optim.contrib.scheduleFreeEvalParams(states[i], p) as P3;
        for (const k of KEYS) {
          const msg = `${cs.name} jit=${useJit} step ${i} ${k}`;
          assertClose(p[k], cs.steps[i].y[k], { rtol: 1e-5, atol: 2e-6, msg: `${msg} (y)` });
          assertClose(x[k], cs.steps[i].x[k], { rtol: 1e-5, atol: 2e-6, msg: `${msg} (x)` });
        }
        const st = states[i] as optim.contrib.ScheduleFreeState;
        assert.equal(st.stepCount.item(), i + 2, "the step count starts at 1");
      });
    }
  });

test("scheduleFree declarations on ZeRO shards follow the base optimizer; bad inputs", () => {
  assert.deepEqual(optim.contrib.scheduleFreeAdamw().shards, { exact: true });
  const r = optim.contrib.scheduleFree(optim.sm3(0.1), 0.1).shards!;
  assert.match((r as { reason: string }).reason, /optim\.sm3: its accumulators/);
  assert.throws(
    () => optim.contrib.scheduleFree(optim.sgd(0.1), 0.1, { b1: 0 }),
    /scheduleFree: b1 must be > 0, got 0/,
  );
  assert.throws(() => optim.contrib.scheduleFreeSgd({ lr: 0.1 } as never), /scheduleFreeSgd: unexpected option "lr"/);
  const t = optim.contrib.scheduleFreeSgd();
  const p = dec3(MORE.params0);
  assert.throws(() => t.update(p, t.init(p)), /the params \(y\) must be passed to update/);
  assert.throws(() => optim.contrib.scheduleFreeEvalParams({}, p), /must be a scheduleFree state/);
});
