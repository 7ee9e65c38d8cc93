/** @file jax.scipy.stats' discrete families (src/scipy/stats-{bernoulli,binom,geom,poisson,nbinom,betabinom,multinomial}.ts) against SciPy fixtures, eager and jit. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as S from "../../src/scipy/stats.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runStatsCases, testStatsCoverage } from "./stats-fixture-runner.js";

const FAMILIES = ["bernoulli", "binom", "geom", "poisson", "nbinom", "betabinom", "multinomial"];
testStatsCoverage(FAMILIES, runStatsCases(FAMILIES));

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
const f64 = (v: number[]): Array => array(v, { dtype: "float64" });
test("logpmf gradients in the continuous parameters agree with finite differences", () => {
  checkGrad("bernoulli d/dp", (p) => sum(S.bernoulli.logpmf(f64([0, 1, 1]), p)), [0.2, 0.5, 0.7]);
  checkGrad("binom d/dp", (p) => sum(S.binom.logpmf(f64([0, 3, 5]), 6, p)), [0.2, 0.5, 0.7]);
  checkGrad("geom d/dp", (p) => sum(S.geom.logpmf(f64([1, 3, 7]), p)), [0.1, 0.4, 0.8]);
  checkGrad("poisson d/dmu", (m) => sum(S.poisson.logpmf(f64([0, 2, 9]), m)), [0.5, 3, 12]);
  checkGrad("poisson.cdf d/dmu", (m) => sum(S.poisson.cdf(f64([0, 2, 9]), m)), [0.5, 3, 12]);
  checkGrad("nbinom d/dn", (n) => sum(S.nbinom.logpmf(f64([0, 2, 9]), n, 0.4)), [0.5, 3, 12]);
  checkGrad("betabinom d/da", (a) => sum(S.betabinom.logpmf(f64([0, 2, 5]), 6, a, 1.5)), [0.5, 2, 4]);
  checkGrad(
    "multinomial d/dp",
    (p) => S.multinomial.logpmf(array([2, 1, 3], { dtype: "int32" }), 6, p),
    [0.2, 0.3, 0.5],
  );
});

test("multinomial requires integer counts, as JAX does", () => {
  assert.throws(
    () => S.multinomial.logpmf([1.5, 1.5], 3, [0.5, 0.5]),
    /multinomial\.logpmf: x and n must be of integer type/,
  );
});

test("pmf sums to 1 over the support (binom, betabinom, poisson truncated far in the tail)", () => {
  const k = f64(globalThis.Array.from({ length: 41 }, (_, i) => i));
  const total = (x: Array): number => Number(sum(x).item());
  assert.ok(Math.abs(total(S.binom.pmf(k, 12, 0.3)) - 1) < 1e-5);
  assert.ok(Math.abs(total(S.betabinom.pmf(k, 12, 2, 3.5)) - 1) < 1e-5);
  assert.ok(Math.abs(total(S.poisson.pmf(k, 6.5)) - 1) < 1e-5);
});
