/** @file jnp polynomials (polyadd ... polyfit, roots, vander) against NumPy fixtures, gradients vs finite differences, jit vs eager, bad inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as P from "../../src/numpy/polynomial.js";
import * as ops from "../../src/primitives/ops.js";
import { jit, vmap } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runParityCases, testFixtureCoverage } from "./parity-cases.js";

const NAMES = ["polyadd", "polysub", "polymul", "polyval", "polyder", "polyint", "polyfit", "roots", "vander"];
const cases = runParityCases(P as unknown as Record<string, unknown>, NAMES);

testFixtureCoverage("polynomial", P as unknown as Record<string, unknown>, cases);

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
test("polynomial gradients agree with finite differences", () => {
  const xs = (): Array => array([-1.5, 0.25, 2], { dtype: "float64" });
  checkGrad("polyval d/dp", (p) => sum(P.polyval(p, xs())), [2, -1, 0.5, 3]);
  checkGrad("polyval d/dx", (x) => sum(P.polyval(array([2, -1, 0.5, 3], { dtype: "float64" }), x)), [-1.5, 0.25, 2]);
  checkGrad("polymul", (p) => sum(ops.mul(P.polymul(p, p), P.polymul(p, p))), [1, -2, 0.5]);
  checkGrad("polyder / polyint", (p) => sum(ops.mul(P.polyder(P.polyint(p, 2), 1), P.polyint(p))), [1, -2, 0.5]);
  checkGrad(
    "polyadd / polysub",
    (p) => sum(ops.mul(P.polyadd(p, array([1, 2], { dtype: "float64" })), P.polysub(p, p))),
    [1, -2, 0.5],
  );
  checkGrad("vander", (x) => sum(ops.sin(P.vander(x, 4))), [0.5, -1, 1.5]);
  checkGrad(
    "polyfit d/dy",
    (y) =>
      sum(
        ops.mul(
          P.polyfit(array([0, 1, 2, 3, 4], { dtype: "float64" }), y, 2) as Array,
          array([1, -2, 3], { dtype: "float64" }),
        ),
      ),
    [1, 2.5, 2, 4, 7],
    { rtol: 1e-4 },
  );
});

test("polynomials under jit and vmap match eager", () => {
  const p = array([2, -1, 0.5, 3], { dtype: "float32" }),
    x = array(
      [
        [0.5, 1],
        [-2, 3],
      ],
      { dtype: "float32" },
    );
  assert.deepEqual(jit((a: Array, b: Array) => P.polyval(a, b))(p, x).tolist(), P.polyval(p, x).tolist());
  assert.deepEqual(
    jit((a: Array) => P.polyint(P.polyder(a), 1, 3))(p).tolist(),
    P.polyint(P.polyder(p), 1, 3).tolist(),
  );
  assert.deepEqual(jit((a: Array) => P.polymul(a, a))(p).tolist(), P.polymul(p, p).tolist());
  const ys = vmap((q: Array) => P.polyval(q, x))(ops.reshape(ops.concatenate([p, p], 0), [2, 4]));
  assert.deepEqual(ys.tolist(), [P.polyval(p, x).tolist(), P.polyval(p, x).tolist()]);
  const xf = array([0, 1, 2, 3, 4, 5], { dtype: "float32" }),
    yf = array([1, 3, 7, 13, 21, 31], { dtype: "float32" });
  const jf = jit((a: Array, b: Array) => P.polyfit(a, b, 2) as Array)(xf, yf).tolist() as number[];
  const ef = (P.polyfit(xf, yf, 2) as Array).tolist() as number[];
  // y = x^2 + x + 1 exactly
  jf.forEach((v, i) =>
    assert.ok(
      Math.abs(v - 1) < 1e-3 && Math.abs(v - ef[i]) < 1e-4,
      `jit polyfit coefficient ${i}: ${v} (eager ${ef[i]})`,
    ),
  );
});

test("polynomial bad inputs name the function and the problem", () => {
  assert.throws(
    () => jit((p: Array) => P.roots(p))(array([1, -3, 2], { dtype: "float32" })),
    /roots: the coefficients must be concrete/,
  );
  assert.throws(
    () => P.polyder(array([1, 2]), -1),
    /polyder: the order of the derivative m must be non-negative, got -1/,
  );
  assert.throws(
    () => P.polyint(array([1, 2]), 2, array([1, 2, 3])),
    /polyint: k must be a scalar or have length m = 2, got shape \(3,\)/,
  );
  assert.throws(() => P.polyadd(array([[1, 2]]), array([1])), /polyadd: a1 must be a 1-D array of coefficients/);
  assert.throws(() => P.vander(array([[1, 2]])), /vander: x must be a one-dimensional array, got shape \(1, 2\)/);
  assert.throws(
    () => P.polyfit(array([1, 2, 3]), array([1, 2]), 1),
    /polyfit: x and y must have the same length along axis 0, got shapes \(3,\) and \(2,\)/,
  );
  assert.throws(() => P.polyval(array([1, 2]), 1, 3, 4), /polyval: takes at most 1 optional positional argument/);
});

test("roots of repeated real roots stay real (multiplicity 2 to 4, float32 and float64)", () => {
  for (const dtype of ["float32", "float64"] as const) {
    for (const p of [
      [1, -2, 1],
      [1, -3, 3, -1],
      [1, -4, 6, -4, 1],
    ]) {
      const r = P.roots(array(p, { dtype })).tolist() as number[];
      assert.equal(r.length, p.length - 1);
      r.forEach((v) => assert.ok(Math.abs(v - 1) < 2e-3, `${dtype} roots of [${p}]: ${v}`));
    }
  }
});
