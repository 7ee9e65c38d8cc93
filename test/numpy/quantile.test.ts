/** @file jnp quantile's method "inverted_cdf" and weights against NumPy (test/fixtures/numpy-gaps.json), eager and jit, with gradients and errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as Q from "../../src/numpy/quantile.js";
import * as R from "../../src/numpy/reductions.js";
import * as ops from "../../src/primitives/ops.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runGapCases } from "./gaps-cases.js";
import { assertThrowsWith } from "./math-cases.js";

const cases = runGapCases(Q as unknown as Record<string, unknown>, ["quantile", "nanquantile", "percentile"]);

test("the gaps fixture has weighted cases for quantile, nanquantile and percentile", () => {
  for (const fn of ["quantile", "nanquantile", "percentile"])
    assert.ok(
      cases.some((c) => c.fn === fn && c.kwargs.weights !== undefined),
      fn,
    );
});

test("reductions.ts re-exports the quantile family unchanged", () => {
  for (const k of ["quantile", "nanquantile", "percentile", "nanpercentile", "median", "nanmedian"] as const)
    assert.equal(R[k], Q[k], k);
});

test("grad of a weighted inverted_cdf quantile is one at the chosen values (finite differences)", () => {
  const w = array([1, 3, 0.5, 2, 1, 1.5], { dtype: "float64" });
  checkGrad(
    "inverted_cdf",
    (x: Array) =>
      R.sum(
        ops.mul(
          Q.quantile(x, array([0.3, 0.8], { dtype: "float64" }), { method: "inverted_cdf", weights: w }),
          array([1, 2], { dtype: "float64" }),
        ),
      ),
    [0.5, -1.2, 3.1, 2.2, -0.4, 1.7],
  );
});

const x5 = () => array([1, 2, 3, 4, 5], { dtype: "float32" });
const BAD: [string, () => unknown, string[]][] = [
  [
    "weights with another method",
    () => Q.quantile(x5(), 0.5, { weights: x5() }),
    ["quantile", 'only method "inverted_cdf" supports weights', "linear"],
  ],
  [
    "weights of another shape",
    () => Q.quantile(x5(), 0.5, { method: "inverted_cdf", weights: array([1, 2]) }),
    ["quantile", "weights of shape (2,)", "(5,)"],
  ],
  [
    "weights over the wrong axis",
    () =>
      Q.quantile(ops.reshape(array([1, 2, 3, 4, 5, 6]), [2, 3]), 0.5, {
        axis: 0,
        method: "inverted_cdf",
        weights: array([1, 2, 3]),
      }),
    ["quantile", "weights of shape (3,)", "(2, 3)", "reduced axes' (2,)"],
  ],
  ["unknown method", () => Q.quantile(x5(), 0.5, { method: "hazen" as never }), ["quantile", "inverted_cdf", "hazen"]],
];
for (const [name, f, pats] of BAD) test(`bad input: ${name}`, () => assertThrowsWith(f, ...pats));
