/** @file Array's JS conversions (valueOf / Symbol.toPrimitive, like Python's float(x)) and the diagonal method. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import { jit } from "../../src/transforms/api.js";

test("a 0-d Array converts to a JS number: +x, Number(x), arithmetic and comparisons", () => {
  const x = array(2.5, { dtype: "float32" });
  assert.equal(+x, 2.5);
  assert.equal(Number(x), 2.5);
  assert.equal((x as unknown as number) * 2, 5);
  assert.equal((x as unknown as number) ** 2, 6.25);
  assert.equal((x as unknown as number) > 2, true);
  assert.equal(Number(array(true)), 1);
  assert.equal(Number(array(7, { dtype: "int32" })), 7);
  // string contexts still give the repr
  assert.equal(`${array([1, 2])}`, "Array([1, 2], dtype=int32)");
  assert.equal(String(x), "Array(2.5, dtype=float32)");
});

test("a non-scalar Array converted to a number throws a clear error (no silent NaN)", () => {
  assert.throws(
    () => +array([1, 2]),
    /Array: only a 0-d array converts to a JS number \(\+x, Number\(x\), arithmetic operators\), got shape \[2\] \(i32\[2\]\)/,
  );
  assert.throws(
    () => (array([[1.5]]) as unknown as number) ** 2,
    /only a 0-d array converts to a JS number.*got shape \[1,1\]/,
  );
  assert.throws(
    () =>
      jit((v: Array) => {
        void +v;
        return v;
      })(array(1.5)),
    /ConcretizationTypeError|concrete|abstract/i,
  );
});

test("x.diagonal(offset, axis1, axis2) is jnp.diagonal", () => {
  const m = array([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  assert.deepEqual(m.diagonal().tolist(), [1, 5]);
  assert.deepEqual(m.diagonal(1).tolist(), [2, 6]);
  assert.deepEqual(m.diagonal(-1).tolist(), [4]);
  const t = array([
    [
      [0, 1],
      [2, 3],
    ],
    [
      [4, 5],
      [6, 7],
    ],
  ]);
  assert.deepEqual(t.diagonal(0, 1, 2).tolist(), [
    [0, 3],
    [4, 7],
  ]);
});
