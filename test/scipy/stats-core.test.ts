/** @file jax.scipy.stats.rankdata, mode and sem (src/scipy/stats-core.ts) against SciPy fixtures, eager and jit; argument errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { array } from "../../src/numpy/core.js";
import * as S from "../../src/scipy/stats.js";
import { runStatsCases, testStatsCoverage } from "./stats-fixture-runner.js";

const FAMILIES = ["rankdata", "mode", "sem"];
testStatsCoverage(FAMILIES, runStatsCases(FAMILIES));

test("mode returns {mode, count}, iterable as [mode, count]", () => {
  const r = S.mode(array([4, 1, 4, 2], { dtype: "int32" }));
  const [m, c] = r;
  assert.equal(Number(r.mode.item()), 4);
  assert.equal(Number(r.count.item()), 2);
  assert.equal(m, r.mode);
  assert.equal(c, r.count);
});

test("rankdata / mode / sem reject unknown methods and unsupported nan policies by name", () => {
  assert.throws(() => S.rankdata([1, 2], "bogus" as "min"), /scipy\.stats\.rankdata: unknown method "bogus"/);
  assert.throws(
    () => S.rankdata([1, 2], "min", { nanPolicy: "omit" }),
    /rankdata: nanPolicy 'omit' is not implemented/,
  );
  assert.throws(() => S.mode([1, 2], 0, "raise"), /mode: nanPolicy 'raise' is not supported/);
  assert.throws(() => S.sem([1, 2], 0, 1, "raise"), /sem: nanPolicy "raise" is not supported/);
  assert.throws(() => S.mode([1, 2], 3), /mode: axis 3 is out of bounds for an array of rank 1/);
});
