/** @file jnp.pad's median mode and reflectType "odd" against NumPy (test/fixtures/numpy-gaps.json), eager and jit, with gradients. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as R from "../../src/numpy/reductions.js";
import * as SP from "../../src/numpy/shape-pad.js";
import * as ops from "../../src/primitives/ops.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runGapCases } from "./gaps-cases.js";
import { assertThrowsWith } from "./math-cases.js";

const cases = runGapCases({ pad: SP.pad }, ["pad"]);

test("the gaps fixture has median and odd-reflection pad cases", () => {
  const kinds = new Set(cases.map((c) => `${String(c.args[2])}/${String(c.kwargs.reflectType ?? "")}`));
  for (const k of ["median/", "reflect/odd", "symmetric/odd"]) assert.ok(kinds.has(k), k);
});

/** A fixed weighting so that the scalar loss depends on every padded entry differently. */
const weighted = (y: Array): Array => {
  const w = ops.reshape(
    array(
      globalThis.Array.from({ length: y.size }, (_, i) => 1 + 0.1 * i),
      { dtype: y.dtype },
    ),
    y.shape,
  );
  return R.sum(ops.mul(y, w));
};

test("grad of pad with reflectType odd (reflect and symmetric, long pads) matches finite differences", () => {
  for (const mode of ["reflect", "symmetric"] as const)
    checkGrad(`pad ${mode} odd`, (x) => weighted(SP.pad(x, [6, 4], mode, { reflectType: "odd" })), [1, 2.5, -1, 4]);
});

test("grad of pad median matches finite differences (distinct values)", () => {
  checkGrad("pad median", (x) => weighted(SP.pad(x, [2, 3], "median", { statLength: 3 })), [1, 4.5, -2, 3, 0.25]);
});

test("bad input: pad reflectType names the accepted values", () => {
  assertThrowsWith(
    () => SP.pad(array([1, 2, 3]), 1, "reflect", { reflectType: "odds" as never }),
    "pad: reflectType must be",
    "odds",
  );
});
