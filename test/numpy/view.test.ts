/** @file Array.view(dtype): NumPy's bit reinterpretation (same itemsize, and itemsize changes along the last axis) against NumPy fixtures. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { DType } from "../../src/core/dtype.js";
import { jit, vmap } from "../../src/transforms/api.js";
import { array } from "../../src/numpy/core.js";
import { type FixArray, assertClose, decode, loadFixture } from "../helpers/fixtures.js";

interface ViewCase {
  name: string;
  x: FixArray;
  dtype: DType;
  expected: FixArray;
  bits: FixArray;
}
const { cases } = loadFixture<{ cases: ViewCase[] }>("array-view.json");
const uintOf = (d: DType): DType =>
  d === "bool"
    ? "uint8"
    : ({ 1: "uint8", 2: "uint16", 4: "uint32" } as Record<number, DType>)[
        { int8: 1, uint8: 1, bool: 1, int16: 2, uint16: 2, float16: 2, int32: 4, uint32: 4, float32: 4 }[d as string] ??
          4
      ];

for (const c of cases) {
  test(`Array.view ${c.name} matches NumPy`, () => {
    const y = decode(c.x).view(c.dtype);
    assert.equal(y.dtype, c.dtype);
    assert.deepEqual(y.shape, c.expected.shape);
    // the values (NumPy's reading of the same bytes); bit patterns below cover NaN payloads and -0
    assertClose(y, c.expected, { rtol: 0, atol: 0, msg: c.name });
    const raw = c.dtype === "bool" ? y.astype("uint8") : y.view(uintOf(c.dtype));
    assert.deepEqual([raw.tolist()].flat(5), c.bits.data, `${c.name} bits`);
  });
}

test("Array.view under jit and vmap equals the eager view", () => {
  const x = array(
    [
      [1.5, -2.25],
      [3, 4],
    ],
    { dtype: "float32" },
  );
  const eager = x.view("uint8");
  assert.deepEqual(jit((a: typeof x) => a.view("uint8"))(x).tolist(), eager.tolist());
  assert.deepEqual(vmap((a: typeof x) => a.view("uint16"))(x).tolist(), x.view("uint16").tolist());
  assert.deepEqual(jit((a: typeof x) => a.view("uint8").view("float32"))(x).tolist(), x.tolist());
});

test("Array.view errors name the shapes and dtypes", () => {
  assert.throws(
    () => array(2.5, { dtype: "float32" }).view("uint8"),
    /Array\.view: changing the dtype of a 0-d array from float32 to uint8 needs equal itemsizes/,
  );
  assert.throws(
    () => array([1, 2, 3], { dtype: "uint8" }).view("float32"),
    /Array\.view: the last axis of an array of shape \(3,\) and dtype uint8 \(3 bytes\) must divide into float32 elements of 4 bytes/,
  );
  assert.throws(
    () => array([1, 2], { dtype: "uint8" }).view("complex256" as DType),
    /Array\.view: unknown dtype "complex256"/,
  );
  const x = array([1, 2], { dtype: "int32" });
  assert.equal(x.view(), x);
});
