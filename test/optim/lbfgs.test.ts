/**
 * @file optim.lbfgs / scaleByLbfgs against NumPy (test/fixtures/optim-adafactor-sm3-more.json): 8 steps on the
 * quadratic sum(0.5 h p^2 - c p) over the fixture's three-leaf tree (gradients h p - c taken at the current params),
 * with a memory of 3 (wrapping around) and of 10 without initial scaling, eager and under jit; the iterates approach
 * the minimum c / h; without a linesearch argument the update needs the zoom linesearch's extra args.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/public.js";
import { jit } from "../../src/transforms/api.js";
import { KEYS, type Leaves, MORE, type P3, checkParams, dec3 } from "./more-fixture.js";

interface LbfgsCase {
  name: string;
  lr: number | null;
  memorySize: number;
  scaleInitPrecond: boolean;
  params: Leaves[];
}
const FIX = MORE as unknown as { quadratic: { h: Leaves; c: Leaves }; lbfgs: LbfgsCase[] };
const h = dec3(FIX.quadratic.h),
  c = dec3(FIX.quadratic.c);
const gradAt = (p: P3): P3 =>
  Object.fromEntries(KEYS.map((k) => [k, jnp.subtract(jnp.multiply(h[k], p[k]), c[k])])) as P3;

function run(opt: optim.GradientTransformation, steps: number, useJit: boolean): P3[] {
  const step = (p: P3, s: unknown): [P3, unknown] => {
    const [u, ns] = opt.update(gradAt(p), s, p);
    return [optim.applyUpdates(p, u), ns];
  };
  const f = useJit ? jit(step) : step;
  let p = dec3(MORE.params0),
    s = opt.init(p);
  const out: P3[] = [];
  for (let i = 0; i < steps; i++) {
    [p, s] = f(p, s);
    out.push(p);
  }
  return out;
}

for (const cs of FIX.lbfgs)
  test(`${cs.name}: params after ${cs.params.length} steps equal NumPy, eager and under jit`, () => {
    const mk = (): optim.GradientTransformation =>
      optim.lbfgs({
        learningRate: cs.lr,
        memorySize: cs.memorySize,
        scaleInitPrecond: cs.scaleInitPrecond,
        linesearch: null,
      });
    for (const useJit of [false, true]) {
      const got = run(mk(), cs.params.length, useJit);
      checkParams(
        { name: cs.name, fn: "lbfgs", args: [], params: cs.params },
        got,
        `${cs.name} jit=${useJit}`,
        1e-5,
        2e-6,
      );
    }
  });

test("lbfgs converges to the quadratic's minimum c / h (memory 10, 20 steps)", () => {
  const last = run(optim.lbfgs({ memorySize: 10, linesearch: null }), 20, true).at(-1)!;
  for (const k of KEYS) {
    const err = jnp.max(jnp.abs(jnp.subtract(last[k], jnp.divide(c[k], h[k])))).item() as number;
    assert.ok(err < 1e-4, `${k}: max |p - c/h| = ${err}`);
  }
});

test("scaleByLbfgs state layout; declarations; lbfgs defaults to the zoom linesearch", () => {
  const t = optim.scaleByLbfgs(4);
  const st = t.init(dec3(MORE.params0)) as optim.ScaleByLbfgsState;
  assert.deepEqual((st.diffParamsMemory as P3).k.shape, [4, 2, 3, 4]);
  assert.deepEqual(st.weightsMemory.shape, [4]);
  assert.equal(t.shards?.exact, false);
  assert.match((t.shards as { reason: string }).reason, /optim\.scaleByLbfgs: its memories are stacked/);
  const p0 = dec3(MORE.params0);
  const def = optim.lbfgs(0.1);
  assert.throws(
    () => def.update(p0, def.init(p0), p0),
    /optim\.scaleByZoomLinesearch: update needs the extra args \{ value, grad, valueFn \}/,
  );
  assert.throws(() => optim.scaleByLbfgs(0), /memorySize must be an integer >= 1, got 0/);
});
