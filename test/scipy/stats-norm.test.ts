/** @file jax.scipy.stats.norm against 30-digit mpmath fixtures, gradients vs finite differences, jit vs eager. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as N from "../../src/scipy/stats-norm.js";
import { jit } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runParityCases } from "../numpy/parity-cases.js";

const fns = Object.fromEntries(Object.entries(N).map(([k, v]) => [`stats.norm.${k}`, v]));
const cases = runParityCases(fns, Object.keys(fns));

test("the fixture covers every norm function", () => {
  const covered = new Set(cases.map((c) => c.fn));
  assert.deepEqual(
    Object.keys(fns).filter((k) => !covered.has(k)),
    [],
  );
});

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
test("norm gradients agree with finite differences (in x, loc and scale)", () => {
  checkGrad("logpdf d/dx", (x) => sum(N.logpdf(x, 0.5, 2)), [-1, 0.3, 2]);
  checkGrad("cdf d/dx", (x) => sum(N.cdf(x, 0.5, 2)), [-1, 0.3, 2]);
  checkGrad("logcdf d/dloc", (l) => sum(N.logcdf(array([-3, 0, 2], { dtype: "float64" }), l, 1.5)), [0.5, -1, 2], {
    rtol: 1e-4,
  });
  checkGrad("pdf d/dscale", (s) => sum(N.pdf(array([-3, 0, 2], { dtype: "float64" }), 0.2, s)), [0.5, 1, 2]);
  checkGrad("ppf d/dq", (q) => sum(N.ppf(q, 1, 2)), [0.1, 0.5, 0.8], { rtol: 1e-4 });
});

test("norm under jit matches eager; the documented standard values", () => {
  const x = array([-2, 0, 1.5], { dtype: "float32" });
  const a = jit((v: Array) => N.cdf(v, 1, 2))(x).tolist() as number[],
    b = N.cdf(x, 1, 2).tolist() as number[];
  a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) < 1e-6));
  assert.ok(Math.abs(Number(N.pdf(0).item()) - 1 / Math.sqrt(2 * Math.PI)) < 1e-7);
  assert.ok(Math.abs(Number(N.ppf(0.5).item())) < 1e-6);
  assert.ok(Math.abs(Number(N.sf(0).item()) - 0.5) < 1e-7);
});
