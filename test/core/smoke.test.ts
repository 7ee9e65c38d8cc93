/** @file Smoke tests of the core: arrays, eager primitives on the interpreter, tracing to a jaxpr. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { ShapedArray } from "../../src/core/aval.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { typecheckJaxpr } from "../../src/core/jaxpr.js";

test("eager primitives compute real values", () => {
  const x = array(
    [
      [1, 2],
      [3, 4],
    ],
    { dtype: "float32" },
  );
  const y = ops.add(ops.mul(x, 2), 1);
  assert.deepEqual(y.tolist(), [
    [3, 5],
    [7, 9],
  ]);
  assert.deepEqual(ops.reduceSum(y, [1]).tolist(), [8, 16]);
  assert.deepEqual(ops.transpose(x, [1, 0]).tolist(), [
    [1, 3],
    [2, 4],
  ]);
  const d = ops.dotGeneral(x, x, [
    [[1], [0]],
    [[], []],
  ]);
  assert.deepEqual(d.tolist(), [
    [7, 10],
    [15, 22],
  ]);
  assert.equal(String(y), "Array([[3., 5.],\n       [7., 9.]], dtype=float32)");
});

test("tracing produces a typed, printable jaxpr", () => {
  const { jaxpr } = traceToJaxpr((x) => [ops.sin(ops.mul(x, 2))], [new ShapedArray([3], "float32")]);
  typecheckJaxpr(jaxpr);
  assert.equal(
    String(jaxpr),
    "{ lambda ; a:f32[3]. let\n    b:f32[3] = mul a 2.0:f32[]\n    c:f32[3] = sin b\n  in (c,) }",
  );
});
