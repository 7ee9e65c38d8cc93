/** @file Integer semantics on both backends: 64-bit exactness, wraparound in scatter and dot, popcount/clz, gathers with no indexed axes. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import { config } from "../../src/core/config.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";

for (const backend of ["onnx", "interpreter"] as const) {
  test(`[${backend}] 64-bit integers stay exact past 2^53`, () => {
    const prev = [config.backend, config.enableX64] as const;
    config.update("backend", backend);
    config.update("enableX64", true);
    try {
      const big = array([2n ** 40n + 3n, 1n], { dtype: "int64" });
      assert.deepEqual(ops.populationCount(big).tolist(), [3n, 1n]);
      assert.deepEqual(ops.clz(big).tolist(), [23n, 63n]);
      const x = array([2n ** 60n, 2n ** 60n + 1n, 7n], { dtype: "int64" });
      assert.deepEqual(ops.cumulative("cumsum", x, 0).tolist(), [2n ** 60n, 2n ** 61n + 1n, 2n ** 61n + 8n]);
      const d = ops.dotGeneral(array([2n ** 40n, 3n], { dtype: "int64" }), array([3n, 2n ** 50n], { dtype: "int64" }), [
        [[0], [0]],
        [[], []],
      ]);
      assert.equal(d.item(), 3n * 2n ** 40n + 3n * 2n ** 50n);
    } finally {
      config.update("backend", prev[0]);
      config.update("enableX64", prev[1]);
    }
  });

  test(`[${backend}] narrow integers wrap in scatter-add and dot`, () => {
    const prev = config.backend;
    config.update("backend", backend);
    try {
      const s = ops.scatter(
        array([100, 5], { dtype: "int8" }),
        array([[0], [0]]),
        array([100, 100], { dtype: "int8" }),
        [0],
        "add",
      );
      assert.deepEqual(s.tolist(), [44, 5]); // 300 mod 256 = 44
      const a = array([65536, 65536, 3], { dtype: "int32" });
      const d = ops.dotGeneral(a, a, [
        [[0], [0]],
        [[], []],
      ]);
      assert.equal(d.item(), 9); // 2 * 2^32 wraps to 0, plus 9
    } finally {
      config.update("backend", prev);
    }
  });

  test(`[${backend}] gather with no indexed axes copies the operand per index tuple`, () => {
    const prev = config.backend;
    config.update("backend", backend);
    try {
      const x = array(
        [
          [1, 2],
          [3, 4],
        ],
        { dtype: "float32" },
      );
      const g = ops.gather(x, ops.reshape(array([], { dtype: "int32" }), [3, 0]), []);
      assert.deepEqual(g.tolist(), [
        [
          [1, 2],
          [3, 4],
        ],
        [
          [1, 2],
          [3, 4],
        ],
        [
          [1, 2],
          [3, 4],
        ],
      ]);
    } finally {
      config.update("backend", prev);
    }
  });
}
