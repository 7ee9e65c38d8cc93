/** @file jax.scipy.stats.multivariateNormal and dirichlet (src/scipy/stats-{multivariate-normal,dirichlet}.ts) against SciPy fixtures, eager and jit; gradients; shape errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as S from "../../src/scipy/stats.js";
import { vmap } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runStatsCases, testStatsCoverage } from "./stats-fixture-runner.js";

const FAMILIES = ["multivariateNormal", "dirichlet"];
testStatsCoverage(FAMILIES, runStatsCases(FAMILIES));

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
const f64 = (v: number[] | number[][]): Array => array(v, { dtype: "float64" });
const COV = [
  [2, 0.3, 0.1],
  [0.3, 1, -0.2],
  [0.1, -0.2, 1.5],
];
test("multivariateNormal gradients (in x, mean and cov) agree with finite differences", () => {
  const x = [
    [0.5, -1, 0.2],
    [1, 0.3, -0.4],
  ];
  checkGrad("d/dx", (v) => sum(S.multivariateNormal.logpdf(v, f64([0, 0.5, -0.1]), f64(COV))), x);
  checkGrad("d/dmean", (m) => sum(S.multivariateNormal.logpdf(f64(x), m, f64(COV))), [0, 0.5, -0.1]);
  checkGrad("d/dcov", (c) => sum(S.multivariateNormal.logpdf(f64(x), f64([0, 0.5, -0.1]), c)), COV, { rtol: 1e-4 });
});

test("multivariateNormal rejects a cov that does not match the mean, and allowSingular", () => {
  assert.throws(
    () =>
      S.multivariateNormal.logpdf(
        [0, 0, 0],
        [0, 0, 0],
        [
          [1, 0],
          [0, 1],
        ],
      ),
    /multivariateNormal\.logpdf: cov must be a scalar or \(\.\.\., 3, 3\)/,
  );
  const f = S.multivariateNormal.logpdf as unknown as (...a: unknown[]) => unknown;
  assert.throws(() => f([0], [0], [[1]], true), /allowSingular is not implemented/);
});

test("dirichlet gradients in x and alpha; shape errors name the function", () => {
  checkGrad("d/dalpha", (a) => S.dirichlet.logpdf(f64([0.2, 0.3, 0.5]), a), [1.5, 2, 3.5]);
  checkGrad("d/dx (K - 1 form)", (x) => S.dirichlet.logpdf(x, f64([1.5, 2, 3.5])), [0.2, 0.3]);
  assert.throws(() => S.dirichlet.logpdf([0.5, 0.5], [[1, 2]]), /dirichlet\.logpdf: alpha must be one-dimensional/);
  assert.throws(
    () => S.dirichlet.logpdf([0.1, 0.1, 0.1, 0.7], [1, 2]),
    /dirichlet\.logpdf: x must have 2 or 1 entries/,
  );
});

test("vmap of multivariateNormal.logpdf over a batch of covariances equals the batched call", () => {
  const x = [0.5, -1, 0.2];
  const covs = array([COV, COV.map((r, i) => r.map((v, j) => (i === j ? v + 1 : v)))], { dtype: "float32" });
  const batched = S.multivariateNormal.logpdf(x, [0, 0.5, -0.1], covs).tolist() as number[];
  const mapped = (vmap((c: Array) => S.multivariateNormal.logpdf(x, [0, 0.5, -0.1], c)) as (c: Array) => Array)(
    covs,
  ).tolist() as number[];
  assert.equal(batched.length, 2);
  batched.forEach((v, i) => assert.ok(Math.abs(v - mapped[i]) < 1e-5, `${v} vs ${mapped[i]}`));
  assert.ok(Math.abs(batched[0] - batched[1]) > 1e-3, "the two covariances give different densities");
});
