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
