/** @file jax.scipy.stats' univariate continuous families (src/scipy/stats-{expon,...,truncnorm}.ts) against SciPy fixtures, eager and jit; gradients vs finite differences. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as S from "../../src/scipy/stats.js";
import { grad } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runStatsCases, testStatsCoverage } from "./stats-fixture-runner.js";

const FAMILIES = [
  "expon",
  "laplace",
  "logistic",
  "cauchy",
  "uniform",
  "pareto",
  "t",
  "beta",
  "gamma",
  "chi2",
  "gennorm",
  "vonmises",
  "wrapcauchy",
  "gumbelR",
  "gumbelL",
  "truncnorm",
];
testStatsCoverage(FAMILIES, runStatsCases(FAMILIES));

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
const f64 = (v: number[]): Array => array(v, { dtype: "float64" });
test("logpdf gradients agree with finite differences (in x and in the parameters)", () => {
  const x = [0.3, 1.2, 2.5];
  checkGrad("expon d/dscale", (s) => sum(S.expon.logpdf(f64(x), 0.1, s)), [0.5, 1, 2]);
  checkGrad("laplace d/dx", (v) => sum(S.laplace.logpdf(v, 0.2, 1.5)), [-1, 0.7, 2]);
  checkGrad("logistic d/dloc", (l) => sum(S.logistic.logpdf(f64(x), l, 2)), [-1, 0.5, 3]);
  checkGrad("cauchy d/dx", (v) => sum(S.cauchy.logpdf(v, 0.5, 2)), [-3, 0.2, 4]);
  checkGrad("pareto d/db", (b) => sum(S.pareto.logpdf(f64([1.5, 2, 4]), b)), [0.5, 2, 3]);
  checkGrad("t d/ddf", (d) => sum(S.t.logpdf(f64([-1, 0.5, 3]), d, 0.2, 1.3)), [1.5, 4, 20]);
  checkGrad("beta d/da", (a) => sum(S.beta.logpdf(f64([0.1, 0.5, 0.8]), a, 2.5)), [0.7, 1.5, 4]);
  checkGrad("gamma d/da", (a) => sum(S.gamma.logpdf(f64(x), a, 0, 1.5)), [0.7, 2, 5]);
  checkGrad("chi2 d/dx", (v) => sum(S.chi2.logpdf(v, 3)), [0.5, 2, 7]);
  checkGrad("gennorm d/dbeta", (b) => sum(S.gennorm.logpdf(f64([-1.5, 0.3, 2]), b)), [0.8, 1.5, 3]);
  checkGrad("vonmises d/dx", (v) => sum(S.vonmises.logpdf(v, 2)), [-2, 0.3, 1.5]);
  checkGrad("wrapcauchy d/dc", (c) => sum(S.wrapcauchy.logpdf(f64([0.5, 2, 4]), c)), [0.1, 0.4, 0.8]);
  checkGrad("gumbelR d/dscale", (s) => sum(S.gumbelR.logpdf(f64([-1, 0.5, 3]), 0.3, s)), [0.5, 1, 2.5]);
  checkGrad("gumbelL.logcdf d/dx", (v) => sum(S.gumbelL.logcdf(v, 0.3, 1.2)), [-2, 0.5, 1.5]);
  checkGrad("truncnorm d/dx", (v) => sum(S.truncnorm.logpdf(v, -1, 2, 0.2, 1.5)), [-1, 0.5, 2]);
  checkGrad("truncnorm.logcdf d/dx", (v) => sum(S.truncnorm.logcdf(v, -1, 2)), [-0.5, 0.5, 1.8], { rtol: 1e-4 });
  checkGrad("truncnorm d/da", (a) => sum(S.truncnorm.logpdf(f64([0.5, 1, 1.5]), a, 2)), [-1, -0.5, 0.2]);
});

test("cdf / sf gradients (lax.igamma, igammac, betainc jvps) agree with finite differences", () => {
  checkGrad("gamma.cdf d/dx", (v) => sum(S.gamma.cdf(v, 2.5, 0.1, 1.5)), [0.5, 2, 6]);
  checkGrad("gamma.sf d/da", (a) => sum(S.gamma.sf(f64([0.5, 2, 6]), a)), [0.7, 2, 5], { rtol: 1e-4 });
  checkGrad("chi2.logcdf d/dx", (v) => sum(S.chi2.logcdf(v, 3)), [0.5, 2, 7]);
  checkGrad("chi2.logsf d/ddf", (d) => sum(S.chi2.logsf(f64([0.5, 2, 7]), d)), [1.5, 4, 9], { rtol: 1e-4 });
  checkGrad("beta.cdf d/dx", (v) => sum(S.beta.cdf(v, 2.5, 1.5)), [0.1, 0.5, 0.8]);
  checkGrad("beta.logsf d/dx", (v) => sum(S.beta.logsf(v, 2.5, 1.5, -1, 3)), [-0.5, 0.5, 1.5]);
  checkGrad("gennorm.cdf d/dx", (v) => sum(S.gennorm.cdf(v, 1.5)), [-1.5, 0.3, 2]);
});

// 1e-6, not tighter: in float64, lax.igamma's x-derivative and lgamma here agree with SciPy to ~5e-8 only (float32-level).
test("cdf + sf = 1 and d/dx cdf = pdf (gamma, chi2, beta)", () => {
  const xs = f64([0.05, 0.4, 0.9]);
  for (const [name, cdf, sf, pdf] of [
    [
      "gamma",
      (v: Array) => S.gamma.cdf(v, 2.5, 0, 0.5),
      (v: Array) => S.gamma.sf(v, 2.5, 0, 0.5),
      (v: Array) => S.gamma.pdf(v, 2.5, 0, 0.5),
    ],
    ["chi2", (v: Array) => S.chi2.cdf(v, 3), (v: Array) => S.chi2.sf(v, 3), (v: Array) => S.chi2.pdf(v, 3)],
    [
      "beta",
      (v: Array) => S.beta.cdf(v, 2.5, 1.5),
      (v: Array) => S.beta.sf(v, 2.5, 1.5),
      (v: Array) => S.beta.pdf(v, 2.5, 1.5),
    ],
  ] as const) {
    const total = ops.add(cdf(xs), sf(xs)).tolist() as number[];
    for (const t of total) assert.ok(Math.abs(t - 1) < 1e-10, `${name}: cdf + sf = ${t}`);
    const g = (grad((v: Array) => sum(cdf(v))) as (v: Array) => Array)(xs).tolist() as number[];
    const p = pdf(xs).tolist() as number[];
    g.forEach((gi, i) =>
      assert.ok(Math.abs(gi - p[i]!) < 1e-6 * Math.max(1, p[i]!), `${name}: d/dx cdf ${gi} vs pdf ${p[i]}`),
    );
  }
});

test("outside the support: -inf logpdf, and pdf gradients that are 0 (not NaN), as in JAX", () => {
  for (const [name, lp] of [
    ["gamma", (v: Array) => S.gamma.logpdf(v, 2.5)],
    ["chi2", (v: Array) => S.chi2.logpdf(v, 3)],
    ["beta", (v: Array) => S.beta.logpdf(v, 2.5, 1.5)],
    ["expon", (v: Array) => S.expon.logpdf(v)],
    ["pareto", (v: Array) => S.pareto.logpdf(v, 2)],
    ["truncnorm", (v: Array) => S.truncnorm.logpdf(v, 0, 1)],
  ] as const) {
    const x = f64([-1, 0.5]);
    const v = lp(x).tolist() as number[];
    assert.equal(v[0], -Infinity, `${name}.logpdf below the support`);
    if (name !== "pareto") assert.ok(Number.isFinite(v[1]), `${name}.logpdf inside`);
    const g = (grad((y: Array) => sum(ops.exp(lp(y)))) as (y: Array) => Array)(x).tolist() as number[];
    assert.ok(g[0] === 0, `${name}: d pdf/dx below the support is ${g[0]}`);
    assert.ok(Number.isFinite(g[1]), `${name}: d pdf/dx inside is finite (${g[1]})`);
  }
});

test("the scalar-parameter calls broadcast like arrays; integer inputs promote to float32", () => {
  const a = S.expon.logpdf([1, 2, 3], [0, 0.5, 1], 2);
  const b = S.expon.logpdf(array([1, 2, 3], { dtype: "int32" }), array([0, 0.5, 1]), array([2, 2, 2]));
  assert.equal(a.dtype, "float32");
  assert.equal(b.dtype, "float32");
  assert.deepEqual(a.tolist(), b.tolist());
  assert.deepEqual(S.gamma.pdf(array([[1], [2]]), array([1, 2, 3])).shape, [2, 3]);
});

test("extra arguments raise (strict arity), naming the function", () => {
  const f = S.expon.logpdf as unknown as (...a: unknown[]) => unknown;
  assert.throws(() => f(1, 0, 1, 5), /scipy\.stats\.expon\.logpdf/);
});
