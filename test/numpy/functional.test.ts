/** @file jnp applyAlongAxis, applyOverAxes, isscalar and resultType against NumPy / JAX's documented results. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as F from "../../src/numpy/functional.js";
import * as R from "../../src/numpy/reductions.js";
import * as ops from "../../src/primitives/ops.js";
import { grad, jit } from "../../src/transforms/api.js";

const ar = (...shape: number[]): Array => ops.reshape(ops.iota("float32", [shape.reduce((a, b) => a * b, 1)]), shape);

test("applyAlongAxis maps func1d over the other axes (NumPy's results)", () => {
  const x = ar(2, 3, 4);
  // np.apply_along_axis(np.sum, 1, np.arange(24).reshape(2, 3, 4))
  assert.deepEqual(F.applyAlongAxis((v) => R.sum(v), 1, x).tolist(), [
    [12, 15, 18, 21],
    [48, 51, 54, 57],
  ]);
  // a function returning a vector puts its axis where `axis` was: np.apply_along_axis(lambda v: v[::-1] * 2, 0, arange(6).reshape(2, 3))
  assert.deepEqual(
    F.applyAlongAxis((v) => ops.mul(ops.rev(v, [0]), ops.full([2], 2, "float32")), 0, ar(2, 3)).tolist(),
    [
      [6, 8, 10],
      [0, 2, 4],
    ],
  );
  // extra arguments are passed through; axis -1
  assert.deepEqual(
    F.applyAlongAxis((v, k) => ops.mul(R.max(v), ops.full([], k as number, "float32")), -1, ar(2, 3), 10).tolist(),
    [20, 50],
  );
  // a 2-D result per slice: np.apply_along_axis(np.diag, -1, arange(6).reshape(2, 3)).shape == (2, 3, 3)
  assert.deepEqual(
    F.applyAlongAxis(
      (v) =>
        ops.mul(
          ops.broadcastInDim(v, [3, 3], [1]),
          ops.convert(ops.eq(ops.iota("int32", [3, 3], 0), ops.iota("int32", [3, 3], 1)), "float32"),
        ),
      -1,
      ar(2, 3),
    ).shape,
    [2, 3, 3],
  );
  const g = (grad((x: Array) => R.sum(F.applyAlongAxis((v) => ops.mul(v, v), 1, x))) as (x: Array) => Array)(ar(2, 2));
  assert.deepEqual(g.tolist(), [
    [0, 2],
    [4, 6],
  ]);
  assert.deepEqual(jit((x: Array) => F.applyAlongAxis((v) => R.sum(v), 0, x))(ar(2, 3)).tolist(), [3, 5, 7]);
  assert.throws(
    () => F.applyAlongAxis((v) => v, 2, ar(2, 3)),
    /applyAlongAxis: axis 2 is out of bounds for array of shape \(2, 3\)/,
  );
});

test("applyOverAxes keeps the rank (np.apply_over_axes(np.sum, arange(24).reshape(2, 3, 4), [0, 2]))", () => {
  const r = F.applyOverAxes((a, ax) => R.sum(a, ax), ar(2, 3, 4), [0, 2]);
  assert.deepEqual(r.shape, [1, 3, 1]);
  assert.deepEqual(r.tolist(), [[[60], [92], [124]]]);
  // a func that keeps dims is used as is
  assert.deepEqual(F.applyOverAxes((a, ax) => R.sum(a, { axis: ax, keepdims: true }), ar(2, 2), 1).tolist(), [
    [1],
    [5],
  ]);
  assert.throws(
    () => F.applyOverAxes(() => ops.full([], 0, "float32"), ar(2, 3, 4), [0]),
    /applyOverAxes: func\(a, 0\) must keep a's rank 3 or reduce it by one, got shape \(\)/,
  );
});

test("isscalar follows JAX (0-d arrays are scalars)", () => {
  assert.equal(F.isscalar(1), true);
  assert.equal(F.isscalar(1.5), true);
  assert.equal(F.isscalar(true), true);
  assert.equal(F.isscalar("x"), true);
  assert.equal(F.isscalar(array(1)), true);
  assert.equal(F.isscalar(array([1])), false);
  assert.equal(F.isscalar([1]), false);
  assert.equal(F.isscalar(null), false);
  assert.equal(jit((x: Array) => ops.full([], F.isscalar(x) ? 1 : 0, "int32"))(array(2)).item(), 1);
});

test("resultType follows JAX's promotion lattice (jnp.result_type)", () => {
  assert.equal(F.resultType(array([1], { dtype: "int8" }), 1), "int8");
  assert.equal(F.resultType(array([1], { dtype: "int8" }), 1.5), "float32");
  assert.equal(F.resultType(array([1], { dtype: "float16" }), 1.5), "float16");
  assert.equal(F.resultType("int8", "uint8"), "int16");
  assert.equal(F.resultType("int32", "float16"), "float16");
  assert.equal(F.resultType("bfloat16", "float16"), "float32");
  assert.equal(F.resultType(1, 1.5), "float32");
  assert.equal(F.resultType(true, 2), "int32");
  assert.equal(F.resultType("float64", 1), "float32");
  assert.throws(() => F.resultType(), /resultType: at least one array or dtype is required/);
  assert.throws(() => F.resultType("float128" as never), /resultType: unknown dtype "float128"/);
});
