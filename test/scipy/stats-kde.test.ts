/** @file jax.scipy.stats.gaussianKde (src/scipy/stats-kde.ts) against SciPy's gaussian_kde, eager and jit; gradients; argument errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as S from "../../src/scipy/stats.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runStatsCases, testStatsCoverage } from "./stats-fixture-runner.js";

testStatsCoverage(["gaussianKde"], runStatsCases(["gaussianKde"]), ["gaussianKde", "gaussianKde.invCov"]);

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
test("gaussianKde logpdf gradients in the points and in the data agree with finite differences", () => {
  const data = [
    [0.1, 1.2, -0.5, 2.2, 0.7],
    [1, 0.3, -1, 0.4, 2],
  ];
  checkGrad("d/dpoints", (p) => sum(S.gaussianKde(array(data, { dtype: "float64" })).logpdf(p)), [
    [0, 1.5],
    [0.5, -0.2],
  ]);
  checkGrad("d/ddata", (d) => sum(S.gaussianKde(d).logpdf(array([[0.3], [0.1]], { dtype: "float64" }))), data, {
    rtol: 1e-4,
  });
});

test("gaussianKde: the density integrates to 1 (1-D box over the whole line); options object form; errors", () => {
  const k = S.gaussianKde([0.1, 1.2, -0.5, 2.2], { bwMethod: "silverman", weights: [1, 2, 1, 0.5] });
  assert.ok(Math.abs(Number(k.integrateBox1d(-50, 50).item()) - 1) < 1e-6);
  assert.equal(k.d, 1);
  assert.equal(k.n, 4);
  assert.throws(() => S.gaussianKde([1]), /gaussianKde: the dataset should have multiple elements/);
  assert.throws(() => S.gaussianKde([1, 2, 3], null, [1, 2]), /gaussianKde: weights must have length n = 3/);
  assert.throws(() => S.gaussianKde([1, 2, 3], "bogus" as "scott"), /gaussianKde: bwMethod should be/);
  assert.throws(
    () => S.gaussianKde([1, 2, 3], { bandwidth: 1 } as never),
    /gaussianKde: unexpected option "bandwidth"/,
  );
  assert.throws(
    () =>
      S.gaussianKde([
        [1, 2, 3],
        [0, 1, 0],
      ]).integrateBox1d(0, 1),
    /integrateBox1d: only 1-D estimates/,
  );
  const k2 = S.gaussianKde([0.5, 1.5, 2.5], (kde) => ops.div(kde.neff, kde.neff));
  assert.ok(Math.abs(Number(k2.factor.item()) - 1) < 1e-7, "a callable bandwidth gets the estimate");
});

test("gaussianKde.resample: JAX's composition (split, choice by weight, multivariateNormal noise), eager and jit, and the estimate's moments", async () => {
  const { split, choice, multivariateNormal, key: makeKey } = await import("../../src/random/index.js");
  const { jit } = await import("../../src/transforms/api.js");
  const data = array(
    [
      [0.1, 1.2, -0.5, 2.2, 0.7],
      [1, 0.3, -1, 0.4, 2],
    ],
    { dtype: "float32" },
  );
  const w = array([1, 2, 1, 0.5, 1.5], { dtype: "float32" });
  const kde = S.gaussianKde(data, { weights: w });
  const key = makeKey(7);
  const got = kde.resample(key, [6]);
  assert.deepEqual(got.shape, [2, 6]);
  // the same draws spelled out as JAX's method does (each piece is bit-exact with JAX in test/random)
  const [k1, k2] = split(key) as unknown as Array[];
  const ind = choice(k1, 5, [6], true, kde.weights).tolist() as number[];
  const eps = multivariateNormal(
    k2,
    array([0, 0], { dtype: "float32" }),
    kde.covariance,
    [6],
    "float32",
  ).tolist() as number[][];
  const d = data.tolist() as number[][];
  const want = [0, 1].map((r) => ind.map((j, s) => Math.fround(d[r][j] + eps[s][r])));
  assert.deepEqual(got.tolist(), want);
  const viaJit = jit((k: Array) => kde.resample(k, [6]))(key as unknown as Array);
  const g = got.tolist() as number[][],
    j = viaJit.tolist() as number[][];
  for (let r = 0; r < 2; r++)
    for (let s = 0; s < 6; s++) assert.ok(Math.abs(g[r][s] - j[r][s]) <= 1e-5, `jit [${r}, ${s}]`);
  // a scalar shape gives one column per dimension: (d,) + () = (d,)
  assert.deepEqual(kde.resample(key).shape, [2]);
  assert.deepEqual(kde.resample(key, 3).shape, [2, 3]);
  // moments of many draws: the weighted data mean, and the weighted data covariance plus the kernel covariance
  const big = kde.resample(makeKey(1), [40000]).tolist() as number[][];
  const wn = (w.tolist() as number[]).map((v) => v / 6);
  const mean = [0, 1].map((r) => d[r].reduce((a, v, i) => a + wn[i] * v, 0));
  const sampleMean = [0, 1].map((r) => big[r].reduce((a, v) => a + v, 0) / 40000);
  const kc = kde.covariance.tolist() as number[][];
  const dataCov = [0, 1].map((a) =>
    [0, 1].map((b) => d[a].reduce((s, _, i) => s + wn[i] * (d[a][i] - mean[a]) * (d[b][i] - mean[b]), 0)),
  );
  for (let a = 0; a < 2; a++) {
    assert.ok(Math.abs(sampleMean[a] - mean[a]) < 0.03, `mean ${a}: ${sampleMean[a]} vs ${mean[a]}`);
    for (let b = 0; b < 2; b++) {
      const sc = big[a].reduce((s, v, i) => s + (v - sampleMean[a]) * (big[b][i] - sampleMean[b]), 0) / 40000;
      const expect = dataCov[a][b] + kc[a][b];
      assert.ok(Math.abs(sc - expect) < 0.05 * (Math.abs(expect) + 0.2), `cov ${a}${b}: ${sc} vs ${expect}`);
    }
  }
  assert.throws(() => kde.resample(key, [-1]), /gaussianKde.resample: shape must hold non-negative integers/);
});

test("gaussianKde is a pytree: its six arrays are the leaves, and an estimate passed to jit gives the eager values", async () => {
  const { jit } = await import("../../src/transforms/api.js");
  const { flatten, unflatten } = await import("../../src/core/tree.js");
  const kde = S.gaussianKde(array([0.1, 1.2, -0.5, 2.2, 0.7], { dtype: "float32" }), { bwMethod: "silverman" });
  const [leaves, def] = flatten(kde);
  assert.equal(leaves.length, 6);
  const back = unflatten(def, leaves) as S.GaussianKde;
  assert.ok(back instanceof S.GaussianKde);
  const pts = array([0, 0.5, 3], { dtype: "float32" });
  assert.deepEqual(back.pdf(pts).tolist(), kde.pdf(pts).tolist());
  const viaJit = jit((k: S.GaussianKde, x: Array) => k.logpdf(x))(kde, pts).tolist() as number[];
  const eager = kde.logpdf(pts).tolist() as number[];
  eager.forEach((v, i) =>
    assert.ok(Math.abs(v - viaJit[i]) <= 1e-5 * Math.max(1, Math.abs(v)), `${i}: ${v} vs ${viaJit[i]}`),
  );
});
