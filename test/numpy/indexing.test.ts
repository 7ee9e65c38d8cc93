/** @file jnp indexing (getitem, at[], take, nonzero, ...) against NumPy fixtures, plus errors and tracing rules. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as I from "../../src/numpy/indexing.js";
import * as S from "../../src/numpy/shape-ops.js";
import * as ops from "../../src/primitives/ops.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { fixtureCases, js, runCase } from "./struct-fixtures.js";
import { runParityCases } from "./parity-cases.js";

const fns = I as unknown as Record<string, unknown>;
for (const c of fixtureCases("numpy-struct-indexing.json")) test(`indexing fixture: ${c.name}`, () => runCase(fns, c));

const x = S.reshape(array([...globalThis.Array(12).keys()], { dtype: "float32" }), [3, 4]);
const BAD: [string, () => unknown, RegExp][] = [
  [
    "static int out of range",
    () => I.getitem(x, [3]),
    /getitem: index 3 is out of bounds for axis 0 with size 3 \(array shape \(3, 4\)\)/,
  ],
  [
    "negative int out of range",
    () => I.getitem(x, [0, -5]),
    /getitem: index -5 is out of bounds for axis 1 with size 4/,
  ],
  [
    "too many indices",
    () => I.getitem(x, [0, 1, 2]),
    /getitem: too many indices for array: array is 2-dimensional, but 3 were indexed/,
  ],
  ["two ellipses", () => I.getitem(x, ["...", "..."]), /getitem: an index can only have a single ellipsis/],
  [
    "bool mask wrong shape",
    () => I.getitem(x, [array([true, false])]),
    /getitem: boolean index of shape \(2,\) did not match the indexed array along axis 0: expected a mask of shape \(3,\)/,
  ],
  [
    "float index array",
    () => I.getitem(x, [array([0.5])]),
    /getitem: index arrays must have an integer or boolean dtype, got f32\[1\]/,
  ],
  ["float index", () => I.getitem(x, [1.5]), /getitem: only integers, slices/],
  ["bad slice string", () => I.getitem(x, ["1:a"]), /getitem: invalid slice "1:a"/],
  ["zero step", () => I.getitem(x, ["::0"]), /slice step cannot be zero/],
  [
    "non-broadcastable index arrays",
    () =>
      I.getitem(x, [
        [0, 1],
        [0, 1, 2],
      ]),
    /getitem: shapes \(2,\), \(3,\) cannot be broadcast together/,
  ],
  [
    "at set shape mismatch",
    () => I.at(x, [0]).set(array([1, 2])),
    /at\.set: cannot broadcast update values of shape \(2,\) to the indexed shape \(4,\)/,
  ],
  [
    "take empty axis",
    () => I.take(ops.full([0], 0, "float32"), [0]),
    /take: cannot do a non-empty take from an empty axis/,
  ],
  ["take raise mode", () => I.take(x, [0], { mode: "raise" }), /take: the 'raise' mode is not supported/],
  [
    "takeAlongAxis rank mismatch",
    () => I.takeAlongAxis(x, array([0]), 1),
    /takeAlongAxis: indices and arr must have the same number of dimensions; got indices of shape \(1,\) and arr of shape \(3, 4\)/,
  ],
  ["nonzero 0-d", () => I.nonzero(array(1)), /nonzero: calling nonzero on 0-d arrays is not allowed/],
  [
    "choose out of range",
    () => I.choose(array([0, 3]), [array([1, 2]), array([3, 4])]),
    /choose: invalid entry in choice array/,
  ],
  [
    "putAlongAxis inplace",
    () => I.putAlongAxis(x, array([[0]]), 1, 1),
    /putAlongAxis: JAX arrays are immutable; pass \{ inplace: false \}/,
  ],
  [
    "ravelMultiIndex raise",
    () => I.ravelMultiIndex([array([5])], [3]),
    /ravelMultiIndex: invalid entry in coordinates array \(dimension 0 has size 3\)/,
  ],
];
for (const [name, f, re] of BAD) test(`indexing bad input: ${name}`, () => assert.throws(f, re));

test("boolean masks must be concrete: NonConcreteBooleanIndexError under jit", () => {
  const f = jit((a: Array, m: Array) => I.getitem(a, [m]));
  assert.throws(
    () => f(x, ops.gt(x, ops.scalarLike(x, 3))),
    (e: Error) =>
      e instanceof I.NonConcreteBooleanIndexError &&
      /getitem: array boolean indices must be concrete; got a traced bool\[3,4\] mask/.test(e.message),
  );
  // the where-style update works under jit with a full-shape mask and a scalar
  const g = jit((a: Array) => I.at(a, [ops.gt(a, ops.scalarLike(a, 5))]).set(0));
  assert.deepEqual(
    js(g(x)),
    js(x).map((v) => (v > 5 ? 0 : v)),
  );
  // nonzero with a static size works under jit; without it the error names the size argument
  const nz = jit((a: Array) => I.nonzero(a, { size: 3, fillValue: -1 })[0]);
  assert.deepEqual(nz(array([0, 5, 0, 7])).tolist(), [1, 3, -1]);
  assert.throws(
    () => jit((a: Array) => I.nonzero(a)[0])(array([0, 1])),
    /nonzero: the size argument must be given statically/,
  );
});

test("traced integer indices: dynamic gathers clamp like JAX", () => {
  const f = jit((a: Array, i: Array) => I.getitem(a, [i, "1:3"]));
  assert.deepEqual(f(x, array(2)).tolist(), [9, 10]);
  assert.deepEqual(f(x, array(7)).tolist(), [9, 10]);
  assert.deepEqual(f(x, array(-1)).tolist(), [9, 10]);
});

test("getitem / at are differentiable and batchable", () => {
  const g = grad((a: Array) => ops.reduceSum(I.getitem(a, [[0, 0, 2], "::2"]), [0, 1])) as (a: Array) => Array;
  assert.deepEqual(g(x).tolist(), [
    [2, 0, 2, 0],
    [0, 0, 0, 0],
    [1, 0, 1, 0],
  ]);
  const h = grad((v: Array) => ops.reduceSum(ops.mul(I.at(x, [1]).set(v), x), [0, 1])) as (v: Array) => Array;
  assert.deepEqual(h(array([1, 1, 1, 1], { dtype: "float32" })).tolist(), [4, 5, 6, 7]);
  const vm = vmap((row: Array) => I.getitem(row, [[3, 0]]))(x);
  assert.deepEqual(vm.tolist(), [
    [3, 0],
    [7, 4],
    [11, 8],
  ]);
  const va = vmap((row: Array, i: Array) => I.at(row, [i]).add(100))(x, array([0, 1, 2]));
  assert.deepEqual(va.tolist(), [
    [100, 1, 2, 3],
    [4, 105, 6, 7],
    [8, 9, 110, 11],
  ]);
});

// takeAlongAxis(arr, indices) defaults to axis -1 (JAX's and NumPy 2's signature); axis null still flattens
runParityCases(fns, ["takeAlongAxis"]);
test("takeAlongAxis with an explicit null axis takes from the flattened array", () => {
  assert.deepEqual(
    I.takeAlongAxis(
      array([
        [3, 1],
        [2, 4],
      ]),
      array([3, 0]),
      null,
    ).tolist(),
    [4, 3],
  );
});
test("diagIndices rejects a negative n (JAX raises for n < 0)", () => {
  assert.throws(() => I.diagIndices(-1), /diagIndices: n argument must be a non-negative integer, got -1/);
  assert.deepEqual(
    I.diagIndices(0).map((a) => a.shape),
    [[0], [0]],
  );
  assert.deepEqual(
    I.diagIndices(2, 3).map((a) => a.tolist()),
    [
      [0, 1],
      [0, 1],
      [0, 1],
    ],
  );
});
