/** @file JAX dtype promotion through jnp math: hand-written expected dtypes/weak types (numpy-math-promotion.json). */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { array } from "../../src/numpy/core.js";
import * as E from "../../src/numpy/elementwise.js";
import * as R from "../../src/numpy/reductions.js";
import * as C from "../../src/numpy/creation.js";
import { runFixture } from "./math-cases.js";

// JAX canonicalizes the lattice result (int64 -> int32 with x64 off), e.g. int32 + uint32 -> int32
runFixture("numpy-math-promotion.json", { ...E, ...R, ...C } as unknown as Record<string, unknown>);

test("bfloat16 + float16 -> float32 (no NumPy bfloat16, so checked here)", () => {
  const r = E.add(array([1, 2], { dtype: "bfloat16" }), array([0.5, 0.25], { dtype: "float16" }));
  assert.equal(r.dtype, "float32");
  assert.deepEqual(r.tolist(), [1.5, 2.25]);
});
test("float16 sum accumulates in float32 and returns float16", () => {
  const r = R.sum(array([2048, 1, 1], { dtype: "float16" }));
  assert.equal(r.dtype, "float16");
  assert.equal(r.item(), 2050);
});
