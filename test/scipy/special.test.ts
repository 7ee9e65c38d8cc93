/** @file jax.scipy.special against 30-digit mpmath fixtures (test/fixtures/numpy-parity.json), gradients vs finite differences, jit vs eager. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as SP from "../../src/scipy/special.js";
import { grad, jit } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { loadFixture } from "../helpers/fixtures.js";
import { runParityCases, testFixtureCoverage } from "../numpy/parity-cases.js";

const fns = Object.fromEntries(Object.entries(SP).map(([k, v]) => [`special.${k}`, v]));
const cases = runParityCases(fns, Object.keys(fns));

// the incomplete gamma/beta, Bessel, zeta, factorial and poch functions are covered by test/fixtures/scipy-special.json
// (special-functions.test.ts)
const scipySpecial = loadFixture<{ cases: { fn: string }[] }>("scipy-special.json").cases.map((c) => `special.${c.fn}`);
testFixtureCoverage("special", fns, cases, ["special.logSoftmax", ...scipySpecial]);

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
test("special-function gradients agree with finite differences", () => {
  checkGrad("logit", (x) => sum(SP.logit(x)), [0.1, 0.4, 0.75]);
  checkGrad("expit", (x) => sum(SP.expit(x)), [-2, 0.3, 4]);
  checkGrad("logExpit", (x) => sum(SP.logExpit(x)), [-20, 0.3, 4]);
  checkGrad("gammaln", (x) => sum(SP.gammaln(x)), [0.7, 2.5, 6]);
  checkGrad("gamma", (x) => sum(SP.gamma(x)), [-1.5, 0.7, 2.5]);
  checkGrad("xlogy d/dy", (y) => sum(SP.xlogy(array([0.5, 2, 3], { dtype: "float64" }), y)), [0.3, 1, 4]);
  checkGrad("xlog1py d/dx", (x) => sum(SP.xlog1py(x, array([0.5, 2, 3], { dtype: "float64" }))), [0.3, 1, 4]);
  checkGrad("entr", (x) => sum(SP.entr(x)), [0.2, 1, 3]);
  checkGrad("betaln", (a) => sum(SP.betaln(a, ops.add(a, a))), [0.7, 2.5, 6]);
  checkGrad("multigammaln", (a) => sum(SP.multigammaln(a, 3)), [1.7, 2.5, 6]);
  checkGrad("klDiv d/dx", (x) => sum(SP.klDiv(x, array([0.5, 2, 3], { dtype: "float64" }))), [0.3, 1, 4]);
  checkGrad("relEntr d/dy", (y) => sum(SP.relEntr(array([0.5, 2, 3], { dtype: "float64" }), y)), [0.3, 1, 4]);
  checkGrad("ndtr", (x) => sum(SP.ndtr(x)), [-2, 0.1, 1.5]);
  checkGrad("logNdtr", (x) => sum(SP.logNdtr(x)), [-8, -2, 0.1, 3], { rtol: 1e-4 });
  checkGrad("ndtri", (p) => sum(SP.ndtri(p)), [0.05, 0.5, 0.9], { rtol: 1e-4 });
});

test("xlogy / xlog1py / entr use JAX's custom derivatives: d/dx at x == 0 is log(y), not 0", () => {
  const g = (f: (v: Array) => Array, at: number[]): number[] => {
    const df = grad((v: Array) => sum(f(v))) as (v: Array) => Array;
    return df(array(at, { dtype: "float32" })).tolist() as number[];
  };
  const f32 = (v: number[]) => array(v, { dtype: "float32" });
  // d/dy = x / y: 0 where x == 0 and y > 0; 0 / 0 = NaN at (0, 0), as JAX's rule gives
  const gy = g((y) => SP.xlogy(f32([0, 0, 2]), y), [0, 1, 4]);
  assert.ok(Number.isNaN(gy[0]), `d/dy xlogy(0, 0) = ${gy[0]}`);
  assert.deepEqual(gy.slice(1), [0, 0.5]);
  // d/dx = log(y), at x == 0 too (eager and under jit)
  const gx = g((x) => SP.xlogy(x, f32([2, 2, 0.5])), [0, 1, 0]);
  assert.deepEqual(gx, [Math.log(2), Math.log(2), Math.log(0.5)].map(Math.fround));
  const dj = jit(grad((x: Array) => sum(SP.xlogy(x, f32([2]))))) as (x: Array) => Array;
  const gj = dj(f32([0])).tolist() as number[];
  assert.deepEqual(gj, [Math.fround(Math.log(2))]);
  // xlog1py: d/dx = log1p(y), d/dy = x / (1 + y)
  assert.deepEqual(
    g((x) => SP.xlog1py(x, f32([1, 3])), [0, 2]),
    [Math.log1p(1), Math.log1p(3)].map(Math.fround),
  );
  assert.deepEqual(
    g((y) => SP.xlog1py(f32([0, 2]), y), [1, 3]),
    [0, 0.5],
  );
  // entr = -x log x: d/dx = -(log x + 1), +inf at 0 (JAX's _xlogx rule)
  assert.deepEqual(
    g((x) => SP.entr(x), [0, 1, Math.E]),
    [Infinity, -1, Math.fround(-(Math.log(Math.fround(Math.E)) + 1))],
  );
});

test("special functions under jit match eager", () => {
  const x = array([-6, -1, 0.5, 2], { dtype: "float32" });
  for (const [name, f] of [
    ["logNdtr", SP.logNdtr],
    ["ndtr", SP.ndtr],
    ["expit", SP.expit],
    ["logExpit", SP.logExpit],
    ["erf", SP.erf],
  ] as const) {
    const a = jit((v: Array) => f(v))(x).tolist() as number[],
      b = f(x).tolist() as number[];
    a.forEach((v, i) =>
      assert.ok(Math.abs(v - b[i]) <= 1e-5 * (1 + Math.abs(b[i])), `${name}[${i}]: jit ${v} vs eager ${b[i]}`),
    );
  }
  assert.throws(() => SP.polygamma(-1, 1), /polygamma: n must be a static non-negative integer, got -1/);
  assert.throws(() => SP.multigammaln(2, 0), /multigammaln: d must be a static positive integer, got 0/);
});
