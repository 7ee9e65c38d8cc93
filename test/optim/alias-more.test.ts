/**
 * @file optim.adafactor / scaleByFactoredRms, lars, sm3 / scaleBySm3, adamax / adamaxw / scaleByAdamax, amsgrad /
 * scaleByAmsgrad, adadelta / scaleByAdadelta, novograd / scaleByNovograd, optimisticGradientDescent, signSgd and
 * signum, adan / scaleByAdan, fromage, rprop, optimisticAdam(V2), contrib.ademamix and contrib.adopt against NumPy references (test/fixtures/optim-adafactor-sm3-more.json): the parameters after each of 6
 * steps on a tree with a matrix, a vector and a rank-3 leaf (adafactor factors the matrix and the rank-3 leaf with
 * minDimSizeToFactor 3), eager and under jit; positional masks; bad inputs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import type { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/public.js";
import { type MoreCase, MORE, checkParams, dec3, runSteps } from "./more-fixture.js";

type Factory = (...a: unknown[]) => optim.GradientTransformation;
/** optim's function at a dotted path (e.g. "contrib.ademamix") called with args. */
const call = (name: string, args: unknown[]): optim.GradientTransformation =>
  (name.split(".").reduce((o: unknown, k) => (o as Record<string, unknown>)[k], optim) as Factory)(...args);

function build(c: MoreCase): optim.GradientTransformation | null {
  if (c.fn === "injectAdam") return null; // inject-hyperparams.test.ts
  if (c.fn === "fromageSchedule") return optim.fromage(optim.linearSchedule(0.2, 0.05, 4));
  // a scale-by transformation alone: chained with -lr as the fixture's reference
  if (c.lr !== undefined) return optim.chain(call(c.fn, c.args), optim.scale(-c.lr));
  return call(c.fn, c.args);
}

for (const c of MORE.optimizers) {
  const opt = build(c);
  if (opt === null) continue;
  test(`${c.name}: params after ${c.params.length} steps equal NumPy, eager and under jit`, () => {
    for (const useJit of [false, true]) {
      const { params } = runSteps(build(c)!, useJit);
      // atol 2e-6: parameters near 0 after float32 divisions by small second moments (amsgrad's default eps 1e-8)
      checkParams(c, params, `${c.name} jit=${useJit}`, 1e-5, 2e-6);
    }
  });
}

test("the fixture's optimizers move every leaf and differ from one another (a test that cannot pass by accident)", () => {
  const p0 = dec3(MORE.params0);
  const finals = MORE.optimizers.map((c) => c.params[c.params.length - 1]);
  for (const [i, f] of finals.entries())
    for (const k of ["w", "b", "k"] as const) {
      const moved = f[k].data.some((v, j) => Math.abs(Number(v) - (p0[k].dataSync()[j] as number)) > 1e-4);
      assert.ok(moved, `${MORE.optimizers[i].name} moves ${k}`);
    }
  const sigs = new Set(finals.map((f) => f.w.data.slice(0, 3).join(",")));
  assert.equal(sigs.size, finals.length, "every case ends somewhere else");
});

test("lars and adamaxw take a mask positionally (a plain object in the mask's position)", () => {
  const c = MORE.optimizers.find((x) => x.fn === "lars" && x.args.length > 1)!;
  const o = c.args[1] as Record<string, unknown>;
  const positional = optim.lars(
    0.5,
    o.weightDecay as number,
    o.weightDecayMask,
    o.trustCoefficient as number,
    o.eps as number,
    o.trustRatioMask,
    o.momentum as number,
    o.nesterov as boolean,
  );
  checkParams(c, runSteps(positional, false).params, "lars positional");
  const mask = { w: true, b: false, k: true };
  const a = MORE.optimizers.find((x) => x.fn === "adamaxw")!;
  checkParams(a, runSteps(optim.adamaxw(0.05, 0.8, undefined, undefined, 0.05, mask), false).params, "adamaxw mask");
});

test("declarations on ZeRO shards: elementwise and summed-norm ones are exact; factored and SM3 ones refuse", () => {
  for (const o of [
    optim.lars(0.1, { weightDecay: 1e-4 }),
    optim.adamax(0.1),
    optim.adamaxw(0.1),
    optim.amsgrad(0.1),
    optim.adadelta(),
    optim.novograd(0.1),
    optim.optimisticGradientDescent(0.1),
    optim.signSgd(0.1),
    optim.signum(0.1),
    optim.adan(0.1, { weightDecay: 0.01 }),
    optim.fromage(0.1),
    optim.rprop(0.01),
    optim.optimisticAdamV2(0.01),
    optim.optimisticAdam(0.01),
    optim.contrib.ademamix(0.01, { weightDecay: 0.01 }),
    optim.contrib.adopt(0.01),
    optim.fromage(optim.linearSchedule(0.1, 0.01, 5)),
    optim.adafactor({ factored: false }),
    optim.chain(optim.clipByBlockRms(1), optim.scaleByParamBlockRms(), optim.scaleByParamBlockNorm()),
  ])
    assert.deepEqual(o.shards, { exact: true });
  assert.match(
    String((optim.adafactor() as { shards: { reason?: string } }).shards.reason),
    /optim\.adafactor: .*row and column.*factored: false/,
  );
  assert.match(String((optim.sm3(0.1) as { shards: { reason?: string } }).shards.reason), /optim\.sm3.*per-dim maxima/);
});

test("rprop emits the current step (torch's Rprop), not the previous one (optax 2edbcbe, PR #1725)", () => {
  const t = optim.scaleByRprop(0.1);
  let s = t.init(jnp.zeros([1]));
  const got: number[] = [];
  for (const g of [1, 1, 1, -1, 1]) {
    const [u, ns] = t.update(jnp.array([g]), s);
    got.push((u as Array).dataSync()[0] as number);
    s = ns;
  }
  [0.1, 0.12, 0.144, 0, 0.072].forEach((w, i) =>
    assert.ok(Math.abs(got[i] - w) < 1e-6, `step ${i}: ${got[i]} vs ${w}`),
  );
});

test("contrib.ademamix: b3 and alpha as schedules (of the slow EMA's count) equal the constants", () => {
  const c = MORE.optimizers.find((x) => x.name.startsWith("contrib.ademamix b3"))!;
  const opt = optim.contrib.ademamix(0.01, {
    b3: optim.constantSchedule(0.99),
    alpha: optim.linearSchedule(2, 2, 5),
    weightDecay: 0.05,
    mask: { w: true, b: false, k: true },
  });
  checkParams(c, runSteps(opt, true).params, "ademamix with schedules", 1e-5, 2e-6);
});

test("bad inputs name the function and what was expected", () => {
  assert.throws(() => optim.lars(undefined as unknown as number), /optim\.lars: learningRate is required/);
  assert.throws(
    () => optim.sm3((() => 0.1) as unknown as number),
    /optim\.sm3: learningRate must be a number or an Array/,
  );
  assert.throws(() => optim.adamax(0.1, { b3: 1 } as never), /optim\.adamax: unexpected option "b3"/);
  assert.throws(
    () => optim.adafactor({ minDimSizeToFactor: 1.5 }),
    /optim\.adafactor: minDimSizeToFactor must be a non-negative integer/,
  );
  assert.throws(() => optim.scaleByAmsgrad({ biasCorrectionMu: 1 as never }), /biasCorrectionMu must be a boolean/);
  const f = optim.scaleByFactoredRms();
  const p = dec3(MORE.params0);
  assert.throws(() => f.update(p, f.init(p)), /optim\.scaleByFactoredRms: .*`params` was not passed/);
});
