/** @file The sort and top_k primitives through the shared harness (jvp vs finite differences, vjp, vmap, jit), plus direct rule checks. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import { config } from "../../src/core/config.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { sortMany, topK } from "../../src/primitives/sort.js";
import { type Spec, checkSpec } from "./harness.js";

const SPECS: Spec[] = [
  { name: "sort (one operand, last axis)", f: (x) => sortMany([x], 1), args: [{ shape: [3, 4] }] },
  { name: "sort (axis 0)", f: (x) => sortMany([x], 0), args: [{ shape: [4, 3] }] },
  {
    name: "sort (key + payload)",
    f: (k, v) => sortMany([k, v], 1, true, 1),
    args: [{ shape: [2, 5] }, { shape: [2, 5] }],
  },
  {
    name: "sort (two int keys + payload)",
    f: (k1, k2, v) => sortMany([k1, k2, v], 0, true, 2),
    args: [{ shape: [6], dtype: "int32", lo: 0, hi: 2 }, { shape: [6], dtype: "int32", lo: 0, hi: 3 }, { shape: [6] }],
    diff: [2],
  },
  { name: "top_k", f: (x) => topK(x, 2), args: [{ shape: [3, 5] }] },
  { name: "top_k (k = n)", f: (x) => topK(x, 4), args: [{ shape: [4] }] },
];
for (const s of SPECS) test(`sort primitives harness: ${s.name}`, () => checkSpec(s));

test("sort orders NaN last, keeps ties stable, and sorts by several keys lexicographically", () => {
  config.update("enableX64", false);
  const x = array([3, NaN, -1, 3, 0], { dtype: "float32" });
  const [v, i] = sortMany([x, ops.iota("int32", [5], 0)], 0);
  assert.deepEqual((v.tolist() as number[]).map(String), ["-1", "0", "3", "3", "NaN"]);
  assert.deepEqual(i.tolist(), [2, 4, 0, 3, 1]);
  const [a, b, p] = sortMany([array([1, 0, 1, 0]), array([2, 5, 1, 5]), ops.iota("int32", [4], 0)], 0, true, 2);
  assert.deepEqual(
    [a.tolist(), b.tolist(), p.tolist()],
    [
      [0, 0, 1, 1],
      [5, 5, 1, 2],
      [1, 3, 2, 0],
    ],
  );
  const [tv, ti] = topK(array([1, 5, NaN, 5]), 3);
  assert.deepEqual(
    [(tv.tolist() as number[]).map(String), ti.tolist()],
    [
      ["NaN", "5", "5"],
      [2, 1, 3],
    ],
  );
});

test("sort and top_k shape errors name the primitive and operands", () => {
  config.update("enableX64", false);
  assert.throws(
    () => sortMany([array([1, 2]), array([1, 2, 3])], 0),
    /sort: all operands must have the same shape, got i32\[2\], i32\[3\]/,
  );
  assert.throws(() => sortMany([array([1, 2])], 1), /sort: dimension 1 out of range for i32\[2\]/);
  assert.throws(() => topK(array([1, 2]), 3), /top_k: k must be an integer in \[0, 2\]/);
});
