/** @file jnp shape ops against NumPy fixtures, plus bad-input errors and traced behaviour. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { array } from "../../src/numpy/core.js";
import * as S from "../../src/numpy/shape-ops.js";
import * as SP from "../../src/numpy/shape-pad.js";
import { jit, grad, vmap } from "../../src/transforms/api.js";
import type { Array } from "../../src/core/array.js";
import * as ops from "../../src/primitives/ops.js";
import { fixtureCases, js, runCase } from "./struct-fixtures.js";
import { runParityCases } from "./parity-cases.js";

const fns = {
  ...S,
  pad: SP.pad,
  resize: SP.resize,
  append: SP.append,
  insert: SP.insert,
  delete: SP.deleteItems,
  trimZeros: SP.trimZeros,
} as unknown as Record<string, unknown>;
for (const c of fixtureCases("numpy-struct-shape.json")) test(`shape fixture: ${c.name}`, () => runCase(fns, c));

const x23 = array(
  [
    [1, 2, 3],
    [4, 5, 6],
  ],
  { dtype: "float32" },
);
const BAD: [string, () => unknown, RegExp][] = [
  [
    "reshape size mismatch",
    () => S.reshape(x23, [4, 2]),
    /reshape: cannot reshape array of shape \(2, 3\) \(size 6\) into shape \(4, 2\)/,
  ],
  ["reshape two -1", () => S.reshape(x23, [-1, -1]), /reshape: can only specify one unknown dimension/],
  ["transpose bad axes", () => S.transpose(x23, [0]), /transpose: axes \(0,\) don't match array of shape \(2, 3\)/],
  ["swapaxes out of range", () => S.swapaxes(x23, 0, 2), /swapaxes: axis 2 is out of bounds for array of dimension 2/],
  [
    "squeeze non-unit",
    () => S.squeeze(x23, 0),
    /squeeze: cannot select an axis to squeeze out which has size not equal to one \(axis 0 of an array of shape \(2, 3\)\)/,
  ],
  ["expandDims bad axis", () => S.expandDims(x23, 4), /expandDims: axis 4 is out of bounds for array of dimension 3/],
  [
    "concatenate shape mismatch",
    () => S.concatenate([x23, array([[1, 2]], { dtype: "float32" })]),
    /concatenate: .*along dimension 1, the array at index 0 has size 3 and the array at index 1 has size 2 \(shapes \(2, 3\), \(1, 2\); axis 0\)/,
  ],
  [
    "concatenate rank mismatch",
    () => S.concatenate([x23, array([1, 2, 3])]),
    /concatenate: all the input arrays must have the same number of dimensions.*index 1 has 1 dimension/,
  ],
  [
    "concatenate 0-d",
    () => S.concatenate([array(1), array(2)]),
    /concatenate: zero-dimensional arrays cannot be concatenated/,
  ],
  ["concatenate empty list", () => S.concatenate([]), /concatenate: need at least one array/],
  [
    "concatenate bad axis",
    () => S.concatenate([x23, x23], 2),
    /concatenate: axis 2 is out of bounds for array of dimension 2/,
  ],
  [
    "stack shape mismatch",
    () => S.stack([array([1, 2]), array([1, 2, 3])]),
    /stack: all input arrays must have the same shape, got \(2,\), \(3,\)/,
  ],
  [
    "split unequal",
    () => S.split(array([1, 2, 3]), 2),
    /split: array split does not result in an equal division: axis 0 of size 3 into 2 sections/,
  ],
  [
    "broadcastTo incompatible",
    () => S.broadcastTo(x23, [3, 3]),
    /broadcastTo: cannot broadcast an array of shape \(2, 3\) to shape \(3, 3\)/,
  ],
  [
    "broadcastArrays incompatible",
    () => S.broadcastArrays(x23, array([1, 2])),
    /broadcastArrays: shapes \(2, 3\), \(2,\) cannot be broadcast together/,
  ],
  [
    "repeat length mismatch",
    () => S.repeat(x23, [1, 2], 1),
    /repeat: repeats has 2 entries but axis 1 of the array \(shape \(2, 3\)\) has size 3/,
  ],
  ["rot90 same axes", () => S.rot90(x23, 1, [0, 0]), /rot90: axes must be different/],
  ["pad negative", () => SP.pad(x23, -1), /pad: padWidth must hold non-negative integers/],
  [
    "pad bad width shape",
    () =>
      SP.pad(x23, [
        [1, 2],
        [1, 2],
        [1, 2],
      ]),
    /pad: padWidth of shape \(3, 2\) cannot be broadcast to \(2, 2\)/,
  ],
  ["pad bad mode", () => SP.pad(x23, 1, "circular"), /pad: unimplemented mode "circular"/],
  ["pad empty axis reflect", () => SP.pad(ops.full([0], 0, "float32"), 1, "reflect"), /pad: can't extend empty axis 0/],
  ["fliplr 1-d", () => S.fliplr(array([1, 2])), /fliplr: input must be at least 2-d, got shape \(2,\)/],
  [
    "moveaxis length mismatch",
    () => S.moveaxis(x23, [0, 1], [0]),
    /moveaxis: source \[0,1\] and destination \[0\] must have the same number of elements/,
  ],
  [
    "matrixTranspose 1-d",
    () => S.matrixTranspose(array([1, 2])),
    /matrixTranspose: input array must be at least 2-dimensional, got shape \(2,\)/,
  ],
  [
    "insert out of bounds",
    () => SP.insert(array([1, 2]), 5, 0),
    /insert: index 5 is out of bounds for axis 0 with size 2/,
  ],
  [
    "delete out of bounds",
    () => SP.deleteItems(array([1, 2]), [3]),
    /delete: index 3 is out of bounds for axis 0 with size 2/,
  ],
];
for (const [name, f, re] of BAD) test(`shape ops bad input: ${name}`, () => assert.throws(f, re));

test("method-style forms: shapes as varargs arrays and options", () => {
  assert.deepEqual(S.reshape(x23, { shape: [3, 2] }).shape, [3, 2]);
  assert.deepEqual(S.expandDims(x23, { axis: [0, -1] }).shape, [1, 2, 3, 1]);
  assert.deepEqual(S.concatenate([x23, x23], { axis: 1 }).shape, [2, 6]);
  assert.deepEqual(S.atleast1d(array(1)).shape, [1]);
});

test("repeat with traced repeats needs totalRepeatLength and works under jit", () => {
  const f = jit((x: Array, r: Array) => S.repeat(x, r, { axis: 0, totalRepeatLength: 5 }));
  const y = f(array([1, 2, 3], { dtype: "float32" }), array([2, 0, 3]));
  assert.deepEqual(y.tolist(), [1, 1, 3, 3, 3]);
  assert.throws(
    () => jit((x: Array, r: Array) => S.repeat(x, r))(array([1, 2]), array([1, 1])),
    /repeat: with traced \(non-concrete\) repeats, the totalRepeatLength argument must be given/,
  );
});

test("roll with a traced shift matches the static roll", () => {
  const x = array([1, 2, 3, 4, 5], { dtype: "float32" });
  const f = jit((s: Array) => S.roll(x, s));
  for (const s of [0, 2, -1, 7]) assert.deepEqual(f(array(s)).tolist(), S.roll(x, s).tolist());
});

test("shape ops are differentiable and batchable", () => {
  const x = array(
    [
      [1, 2],
      [3, 4],
    ],
    { dtype: "float32" },
  );
  const f = (a: Array) => SP.pad(S.tile(a, [1, 2]), 1, "reflect");
  const g = grad((a: Array) => ops.reduceSum(ops.mul(f(a), f(a)), [0, 1])) as (a: Array) => Array;
  // every output element copies one input element: d sum(y^2)/da = 2 a * (number of copies)
  const count = js((grad((a: Array) => ops.reduceSum(f(a), [0, 1])) as (a: Array) => Array)(x));
  assert.deepEqual(count, [6, 6, 6, 6]);
  assert.deepEqual(
    js(g(x)),
    js(x).map((v, i) => 2 * v * count[i]),
  );
  const vm = vmap((a: Array) => S.concatenate([S.flip(a), S.roll(a, 1)]))(x);
  assert.deepEqual(vm.tolist(), [
    [2, 1, 2, 1],
    [4, 3, 4, 3],
  ]);
});

// JAX splits a 1-D array along axis 0 (its docstring: jnp.vsplit(jnp.array([1, 2, 3, 4, 5, 6]), 2) -> [1 2 3] [4 5 6])
runParityCases(fns, ["vsplit"]);
test("vsplit of a 0-d array names the requirement", () => {
  assert.throws(() => S.vsplit(array(3), 1), /vsplit: only works on arrays of 1 or more dimensions, got shape \(\)/);
});
