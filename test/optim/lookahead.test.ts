/**
 * @file optim.lookahead against NumPy (test/fixtures/optim-adafactor-sm3-more.json): lookahead(sgd(0.1, 0.9), 3,
 * 0.5) with and without resetState, the fast and slow parameters after each of 6 steps, eager and under jit; fast
 * equals slow right after each sync; bad inputs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as optim from "../../src/optim/public.js";
import { jit } from "../../src/transforms/api.js";
import { assertClose } from "../helpers/fixtures.js";
import { KEYS, MORE, type P3, dec3 } from "./more-fixture.js";

type LP = optim.LookaheadParams<P3>;

function run(resetState: boolean, useJit: boolean): LP[] {
  const opt = optim.lookahead(optim.sgd(0.1, 0.9), 3, 0.5, resetState);
  const step = (p: LP, s: unknown, g: P3): [LP, unknown] => {
    const [u, ns] = opt.update(g as never, s, p as never);
    return [optim.applyUpdates(p, u as never), ns];
  };
  const f = useJit ? jit(step) : step;
  let p = optim.LookaheadParams.initSynced(dec3(MORE.params0)),
    s = opt.init(p);
  const out: LP[] = [];
  for (const g of MORE.grads) {
    [p, s] = f(p, s, dec3(g));
    out.push(p);
  }
  return out;
}

for (const c of MORE.lookahead)
  test(`${c.name}: fast and slow params after ${c.steps.length} steps equal NumPy, eager and under jit`, () => {
    for (const useJit of [false, true]) {
      const got = run(c.resetState, useJit);
      got.forEach((p, i) => {
        for (const side of ["fast", "slow"] as const)
          for (const k of KEYS)
            assertClose(p[side][k], c.steps[i][side][k], {
              rtol: 1e-5,
              atol: 1e-6,
              msg: `${c.name} jit=${useJit} step ${i} ${side}.${k}`,
            });
        // right after a sync (steps 3 and 6) the fast parameters are the slow ones (up to rounding); otherwise not
        const gap = Math.max(
          ...(p.fast.w.dataSync() as Float32Array).map((v, j) => Math.abs(v - (p.slow.w.dataSync()[j] as number))),
        );
        if ((i + 1) % 3 === 0) assert.ok(gap < 1e-6, `fast == slow after step ${i}: gap ${gap}`);
        else assert.ok(gap > 1e-3, `fast != slow after step ${i}: gap ${gap}`);
      });
    }
  });

test("resetState makes a difference once the fast optimizer has momentum", () => {
  const [a, b] = MORE.lookahead.map((c) => c.steps[c.steps.length - 1].fast.w.data[0] as number);
  assert.ok(Math.abs(a - b) > 1e-4, `${a} vs ${b}`);
});

test("state and declarations: stepsSinceSync cycles; lookahead refuses ZeRO shards", () => {
  const opt = optim.lookahead(optim.adam(0.1), 2, 0.5);
  const p = optim.LookaheadParams.initSynced(dec3(MORE.params0));
  let s = opt.init(p);
  const seen: number[] = [];
  for (let i = 0; i < 3; i++) {
    [, s] = opt.update(dec3(MORE.grads[i]) as never, s, p as never);
    seen.push(((s as optim.LookaheadState).stepsSinceSync as Array).item() as number);
  }
  assert.deepEqual(seen, [1, 0, 1]);
  assert.equal(opt.shards?.exact, false);
  assert.match((opt.shards as { reason: string }).reason, /optim\.lookahead: its gradients .* different structures/);
});

test("bad inputs name optim.lookahead and what was expected", () => {
  assert.throws(
    () => optim.lookahead({} as never, 2, 0.5),
    /optim\.lookahead: fastOptimizer must be a GradientTransformation/,
  );
  assert.throws(() => optim.lookahead(optim.sgd(0.1), 0, 0.5), /syncPeriod must be a positive integer, got 0/);
  const opt = optim.lookahead(optim.sgd(0.1), 2, 0.5);
  const p = dec3(MORE.params0);
  assert.throws(() => opt.init(p), /params must be LookaheadParams/);
  assert.throws(() => opt.update(p, opt.init(optim.LookaheadParams.initSynced(p))), /`params` was not passed/);
});
