/**
 * @file optim.partition / multiTransform: adam on the matrix and sgd with momentum on the other leaves of the
 * fixture tree equal each optimizer run on its own subtree (6 steps, eager and under jit), with labels given as a
 * tree, as a prefix, or as a function of the params; ZeRO declarations; unknown labels are refused.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import * as tree from "../../src/core/tree.js";
import * as optim from "../../src/optim/public.js";
import { assertClose } from "../helpers/fixtures.js";
import { MORE, type P3, dec3, runSteps } from "./more-fixture.js";

/** `opt` run alone on the leaves `keys` of the fixture tree: their params after each step. */
function alone(opt: optim.GradientTransformation, keys: readonly (keyof P3)[]): Record<string, Array>[] {
  const pick = (t: P3): Record<string, Array> => Object.fromEntries(keys.map((k) => [k, t[k]]));
  let p = pick(dec3(MORE.params0)),
    s = opt.init(p);
  return MORE.grads.map((g) => {
    const [u, ns] = opt.update(pick(dec3(g)), s, p);
    p = optim.applyUpdates(p, u);
    s = ns;
    return p;
  });
}

const adam = (): optim.GradientTransformation => optim.adam(0.05);
const sgd = (): optim.GradientTransformation => optim.sgd(0.1, 0.9);

test("partition: each label's optimizer acts on its leaves only (label tree, prefix, function), eager and jit", () => {
  const wantW = alone(adam(), ["w"]);
  const wantRest = alone(sgd(), ["b", "k"]);
  const labelSets: [string, optim.ParamLabels][] = [
    ["tree", { w: "w", b: "rest", k: "rest" }],
    ["function of the params (by rank)", (p: unknown) => tree.map((x) => ((x as Array).ndim === 2 ? "w" : "rest"), p)],
  ];
  for (const [how, labels] of labelSets)
    for (const useJit of [false, true]) {
      const { params, states } = runSteps(optim.partition({ w: adam(), rest: sgd() }, labels), useJit);
      params.forEach((p, i) => {
        assertClose(p.w, wantW[i].w, { rtol: 1e-6, atol: 1e-7, msg: `${how} jit=${useJit} step ${i} w` });
        for (const k of ["b", "k"] as const)
          assertClose(p[k], wantRest[i][k], { rtol: 1e-6, atol: 1e-7, msg: `${how} jit=${useJit} step ${i} ${k}` });
      });
      assert.deepEqual(Object.keys((states[0] as optim.PartitionState).innerStates).sort(), ["rest", "w"]);
    }
  // a prefix: one label for a whole list subtree
  const opt = optim.multiTransform({ a: adam(), s: sgd() }, { w: "a", rest: "s" });
  const p0 = dec3(MORE.params0);
  const params = { w: p0.w, rest: [p0.b, p0.k] };
  const g0 = dec3(MORE.grads[0]);
  const [u] = opt.update({ w: g0.w, rest: [g0.b, g0.k] }, opt.init(params), params) as [typeof params, unknown];
  assertClose(optim.applyUpdates(p0.w, u.w), wantW[0].w, { rtol: 1e-6, atol: 1e-7, msg: "prefix w" });
  assertClose(optim.applyUpdates(p0.b, u.rest[0]), wantRest[0].b, { rtol: 1e-6, atol: 1e-7, msg: "prefix b" });
  assertClose(optim.applyUpdates(p0.k, u.rest[1]), wantRest[0].k, { rtol: 1e-6, atol: 1e-7, msg: "prefix k" });
});

test("partition declares what its transformations declare on ZeRO shards", () => {
  assert.deepEqual(optim.partition({ a: adam(), b: optim.lars(0.1) }, { w: "a", b: "b", k: "b" }).shards, {
    exact: true,
  });
  const r = optim.partition({ a: adam(), b: optim.sm3(0.1) }, { w: "a", b: "b", k: "b" }).shards!;
  assert.equal(r.exact, false);
  assert.match((r as { reason: string }).reason, /optim\.sm3: its accumulators/);
});

test("bad inputs name optim.partition: a label without a transformation, a non-transformation", () => {
  assert.throws(
    () => optim.partition({ a: adam() }, { w: "a", b: "x", k: "a" }),
    /optim\.partition: some parameters have no transformation: label "x" is not one of the transforms' keys \[a\]/,
  );
  const byFn = optim.partition({ a: adam() }, () => ({ w: "a", b: "a", k: "zz" }));
  assert.throws(() => byFn.init(dec3(MORE.params0)), /label "zz"/);
  assert.throws(
    () => optim.partition({ a: 3 as never }, { w: "a" }),
    /transforms\["a"\] is not a GradientTransformation/,
  );
});

test("flatten(adam) equals adam (elementwise); its state is one vector; flatten(lars) uses the norm of everything", () => {
  const { params: want } = runSteps(adam(), false);
  for (const useJit of [false, true]) {
    const { params, states } = runSteps(optim.flatten(adam()), useJit);
    params.forEach((p, i) => {
      for (const k of ["w", "b", "k"] as const)
        assertClose(p[k], want[i][k], { rtol: 1e-6, atol: 1e-7, msg: `flatten(adam) jit=${useJit} step ${i} ${k}` });
    });
    const mu = (((states[0] as unknown[])[0] as { mu: Array }).mu as Array).shape;
    assert.deepEqual(mu, [12 + 4 + 24]);
  }
  // the trust ratio of the whole vector: ||p|| / ||g|| over all leaves, times tc, on every leaf alike
  const p0 = dec3(MORE.params0),
    g0 = dec3(MORE.grads[0]);
  const t = optim.flatten(optim.scaleByTrustRatio({ trustCoefficient: 1 }));
  const [u] = t.update(g0, t.init(p0), p0) as [P3, unknown];
  const ratio = (optim.globalNorm(p0).item() as number) / (optim.globalNorm(g0).item() as number);
  assertClose(u.b, jnp.multiply(g0.b, ratio), { rtol: 1e-5, msg: "one ratio for the whole vector" });
  assert.equal(optim.flatten(adam()).shards?.exact, false);
});
