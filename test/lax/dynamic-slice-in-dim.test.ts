/** @file lax wrappers added for parity: dynamicSliceInDim, dynamicUpdateSliceInDim (values, jit, grad, errors). */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as lax from "../../src/lax/index.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { grad, jit } from "../../src/transforms/api.js";

const x = ops.reshape(ops.iota("float32", [12]), [3, 4]);

test("dynamicSliceInDim slices one axis at a (possibly traced) start, clamped like dynamicSlice", () => {
  assert.deepEqual(lax.dynamicSliceInDim(x, 1, 2, 1).tolist(), [
    [1, 2],
    [5, 6],
    [9, 10],
  ]);
  assert.deepEqual(lax.dynamicSliceInDim(x, 1, 2).tolist(), [
    [4, 5, 6, 7],
    [8, 9, 10, 11],
  ]);
  assert.deepEqual(lax.dynamicSliceInDim(x, 3, 2, -1).tolist(), [
    [2, 3],
    [6, 7],
    [10, 11],
  ]);
  const f = jit((a: Array, s: Array) => lax.dynamicSliceInDim(a, s, 2, 1));
  assert.deepEqual(f(x, array(2)).tolist(), [
    [2, 3],
    [6, 7],
    [10, 11],
  ]);
  const g = (grad((a: Array) => ops.reduceSum(lax.dynamicSliceInDim(a, 1, 1, 0), [0, 1])) as (a: Array) => Array)(x);
  assert.deepEqual(g.tolist(), [
    [0, 0, 0, 0],
    [1, 1, 1, 1],
    [0, 0, 0, 0],
  ]);
  assert.throws(
    () => lax.dynamicSliceInDim(x, 0, 5, 1),
    /dynamicSliceInDim: sliceSize 5 must be an integer in \[0, 4\] for axis 1 of shape \[3,4\]/,
  );
  assert.throws(
    () => lax.dynamicSliceInDim(x, 0, 1, 2),
    /dynamicSliceInDim: axis 2 is out of bounds for an operand of shape \[3,4\]/,
  );
});

test("dynamicUpdateSliceInDim writes an update along one axis", () => {
  const u = ops.full([3, 1], -1, "float32");
  assert.deepEqual(lax.dynamicUpdateSliceInDim(x, u, 2, 1).tolist(), [
    [0, 1, -1, 3],
    [4, 5, -1, 7],
    [8, 9, -1, 11],
  ]);
  const f = jit((a: Array, s: Array) => lax.dynamicUpdateSliceInDim(a, ops.full([1, 4], 0, "float32"), s, 0));
  assert.deepEqual(f(x, array(1)).tolist(), [
    [0, 1, 2, 3],
    [0, 0, 0, 0],
    [8, 9, 10, 11],
  ]);
  assert.throws(
    () => lax.dynamicUpdateSliceInDim(x, ops.full([3], 0, "float32"), 0, 1),
    /dynamicUpdateSliceInDim: update of shape \[3\] must have the operand's rank 2/,
  );
});
