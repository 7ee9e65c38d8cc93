/** @file jnp sorting and searching against NumPy fixtures, plus errors and traced behaviour. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as So from "../../src/numpy/sorting.js";
import * as ops from "../../src/primitives/ops.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { fixtureCases, js, runCase } from "./struct-fixtures.js";
import { runParityCases } from "./parity-cases.js";

const fns = So as unknown as Record<string, unknown>;
for (const c of fixtureCases("numpy-struct-sorting.json")) test(`sorting fixture: ${c.name}`, () => runCase(fns, c));

const BAD: [string, () => unknown, RegExp][] = [
  ["sort bad axis", () => So.sort(array([[1, 2]]), 2), /sort: axis 2 is out of bounds for array of dimension 2/],
  ["sort 0-d", () => So.sort(array(1)), /sort: cannot sort a 0-d array/],
  ["sort order", () => So.sort(array([1]), { order: "x" as never }), /sort: the 'order' argument is not supported/],
  [
    "lexsort shape mismatch",
    () => So.lexsort([array([1, 2]), array([1, 2, 3])]),
    /lexsort: all keys need to be the same shape, got \(2,\), \(3,\)/,
  ],
  [
    "searchsorted 2-d a",
    () => So.searchsorted(array([[1, 2]]), 1),
    /searchsorted: a should be 1-dimensional, got shape \(1, 2\)/,
  ],
  [
    "searchsorted side",
    () => So.searchsorted(array([1, 2]), 1, "middle" as never),
    /searchsorted: side must be "left" or "right", got "middle"/,
  ],
  ["bincount float", () => So.bincount(array([1.5])), /bincount: x must have an integer type, got f32\[1\]/],
  [
    "bincount weights shape",
    () => So.bincount(array([1, 2]), array([1, 2, 3])),
    /bincount: weights of shape \(3,\) must match x of shape \(2,\)/,
  ],
  [
    "topK k too large",
    () => So.topK(array([1, 2]), 3),
    /topK: k must be an integer in \[0, 2\] \(dimension 0 of shape \(2,\)\), got 3/,
  ],
  ["partition kth", () => So.partition(array([1, 2]), 5), /partition: kth 5 is out of bounds for an axis of size 2/],
  [
    "digitize 2-d bins",
    () => So.digitize(array([1]), array([[1, 2]])),
    /digitize: bins must be a 1-dimensional array, got shape \(1, 2\)/,
  ],
];
for (const [name, f, re] of BAD) test(`sorting bad input: ${name}`, () => assert.throws(f, re));

test("unique and bincount need static sizes under jit", () => {
  assert.throws(
    () => jit((a: Array) => So.unique(a) as Array)(array([1, 1])),
    /unique: the input must be concrete.*Pass a static size/,
  );
  const u = jit((a: Array) => So.unique(a, { size: 4, fillValue: 0 }) as Array);
  assert.deepEqual(u(array([3, 1, 3, 2, 1])).tolist(), [1, 2, 3, 0]);
  assert.throws(
    () => jit((a: Array) => So.bincount(a))(array([1, 2])),
    /bincount: x is traced, so the output length is unknown; pass a static length/,
  );
  assert.deepEqual(jit((a: Array) => So.bincount(a, { length: 4 }))(array([1, 1, 3, 9])).tolist(), [0, 2, 0, 1]);
});

test("sort / argsort / topK are differentiable and batchable", () => {
  const x = array([3, 1, 2], { dtype: "float32" });
  const g = grad((a: Array) => ops.reduceSum(ops.mul(So.sort(a), array([1, 10, 100], { dtype: "float32" })), [0])) as (
    a: Array,
  ) => Array;
  assert.deepEqual(g(x).tolist(), [100, 1, 10]);
  const gt = grad((a: Array) => ops.reduceSum(So.topK(a, 2)[0], [0])) as (a: Array) => Array;
  assert.deepEqual(gt(x).tolist(), [1, 0, 1]);
  const m = array(
    [
      [3, 1, 2],
      [0, 5, 4],
    ],
    { dtype: "float32" },
  );
  assert.deepEqual(vmap((r: Array) => So.argsort(r))(m).tolist(), [
    [1, 2, 0],
    [0, 2, 1],
  ]);
  assert.deepEqual(vmap((r: Array) => So.sort(r), { inAxes: 1 })(m).tolist(), [
    [0, 3],
    [1, 5],
    [2, 4],
  ]);
  assert.deepEqual(vmap((r: Array) => So.searchsorted(array([1, 2, 3], { dtype: "float32" }), r))(m).tolist(), [
    [2, 0, 1],
    [0, 3, 3],
  ]);
  const [v, i] = vmap((r: Array) => So.topK(r, 1))(m) as unknown as Array[];
  assert.deepEqual(
    [js(v), js(i)],
    [
      [3, 5],
      [0, 1],
    ],
  );
});

// histogram / bincount / digitize / searchsorted checked against NumPy 2 (numpy-parity.json)
runParityCases(fns, ["histogram", "bincount", "digitize", "searchsorted"]);

test("searchsorted: the binary search (scan, the default past small sizes) equals compare_all and a JS count", () => {
  // sorted a with duplicates and trailing NaNs; queries with NaN, duplicates, values outside a's range, 2-D
  const av = [-3, -1, -1, 0, 2, 2, 2, 5, 7, NaN, NaN];
  const a = array(av, { dtype: "float32" });
  const vv = [
    [-4, -1, 0.5, 2, 8, NaN],
    [7, 5, -3, 2.5, -1, 10],
  ];
  const v = array(vv, { dtype: "float32" });
  // NumPy's rule with NaN sorted last: left counts a_i < v, right counts a_i <= v (NaN above every number)
  const before = (x: number, y: number) => (Number.isNaN(y) ? !Number.isNaN(x) : x < y);
  const count = (q: number, side: string) => av.filter((x) => (side === "left" ? before(x, q) : !before(q, x))).length;
  for (const side of ["left", "right"] as const) {
    const want = vv.map((row) => row.map((q) => count(q, side)));
    for (const method of ["scan", "scan_unrolled", "sort", "compare_all"]) {
      assert.deepEqual(So.searchsorted(a, v, { side, method }).tolist(), want, `${side} ${method}`);
      assert.deepEqual(
        jit((x: Array, y: Array) => So.searchsorted(x, y, { side, method }))(a, v).tolist(),
        want,
        `jit ${side} ${method}`,
      );
    }
    assert.equal(So.searchsorted(a, 2, { side, method: "scan" }).item(), count(2, side), `scalar ${side}`);
  }
  // a long sorted array and many queries (a compare_all matrix here would hold 4e8 elements): every answer checked
  const n = 20000;
  const long = array(Float32Array.from({ length: n }, (_, i) => i * 2));
  const qs = Float32Array.from({ length: n }, (_, i) => (i * 7919) % (2 * n + 3));
  const got = So.searchsorted(long, array(qs), "right").tolist() as number[];
  got.forEach((g, i) => assert.equal(g, Math.min(n, Math.floor(qs[i] / 2) + 1), `query ${qs[i]}`));
  assert.throws(() => So.searchsorted(a, v, { method: "bisect" }), /searchsorted: method must be one of "scan"/);
});
