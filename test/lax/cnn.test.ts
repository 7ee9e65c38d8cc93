/** @file A small CNN (conv-relu-maxpool-dense) trained under jit: the loss decreases, its gradient equals the interpreter's, and the compiled step runs ORT Conv / MaxPool with no equation on the host. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import { makeJaxpr } from "../../src/transforms/api.js";
import { grad, jit, valueAndGrad } from "../../src/transforms/api.js";
import { compileJaxpr } from "../../src/compiler/compile.js";
import { summarizeOnnx } from "../../src/compiler/summary.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as lax from "../../src/lax/index.js";
import * as nn from "../../src/nn/index.js";
import { assertClose } from "../helpers/fixtures.js";

/** Deterministic pseudo-random float32 values (no dependence on jax.random). */
function det(shape: number[], seed: number, scale = 1): Array {
  const n = shape.reduce((a, b) => a * b, 1);
  return ops.reshape(
    array(
      globalThis.Array.from({ length: n }, (_, i) => Math.sin(seed * 12.9898 + i * 78.233) * scale),
      { dtype: "float32" },
    ),
    shape,
  );
}
type Params = { w1: Array; b1: Array; w2: Array; b2: Array };

/** NHWC [8, 8, 8, 1] -> conv 3x3 (4 ch, SAME) -> relu -> max pool 2x2/2 -> dense 64 -> 3 -> softmax cross-entropy. */
function loss(p: Params, x: Array, labels: Array): Array {
  let h = lax.convGeneralDilated(x, p.w1, [1, 1], "SAME", { dimensionNumbers: ["NHWC", "HWIO", "NHWC"] });
  h = nn.relu(ops.add(h, ops.broadcastInDim(p.b1, h.shape, [3])));
  h = lax.reduceWindowMax(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID");
  h = ops.reshape(h, [h.shape[0], 64]);
  const logits = ops.add(
    ops.dotGeneral(h, p.w2, [
      [[1], [0]],
      [[], []],
    ]),
    ops.broadcastInDim(p.b2, [h.shape[0], 3], [1]),
  );
  const lp = nn.logSoftmax(logits, -1);
  return ops.div(ops.neg(ops.reduceSum(ops.mul(lp, labels), [0, 1])), h.shape[0]);
}
const x = det([8, 8, 8, 1], 1);
const labels = ops.convert(
  ops.eq(
    ops.broadcastInDim(ops.iota("int32", [3]), [8, 3], [1]),
    ops.broadcastInDim(ops.rem(ops.iota("int32", [8]), 3), [8, 3], [0]),
  ),
  "float32",
);
const init: Params = {
  w1: det([3, 3, 1, 4], 2, 0.5),
  b1: det([4], 3, 0.1),
  w2: det([64, 3], 4, 0.3),
  b2: det([3], 5, 0.1),
};

test("a jitted SGD step of a conv-relu-maxpool-dense CNN decreases the loss", () => {
  const step = jit((p: Params, xs: Array, ys: Array) => {
    const [l, g] = valueAndGrad(loss as never)(p, xs, ys) as [Array, Params];
    const upd = (k: keyof Params) => ops.sub(p[k], ops.mul(g[k], 0.2));
    return [l, { w1: upd("w1"), b1: upd("b1"), w2: upd("w2"), b2: upd("b2") }];
  }) as unknown as (p: Params, xs: Array, ys: Array) => [Array, Params];
  let p = init;
  const losses: number[] = [];
  for (let i = 0; i < 8; i++) {
    const [l, np] = step(p, x, labels);
    losses.push(Number(l.item()));
    p = np;
  }
  assert.ok(losses.every(Number.isFinite), `losses ${losses}`);
  assert.ok(losses[7] < losses[0] * 0.8, `loss should decrease: ${losses.map((v) => v.toFixed(4)).join(", ")}`);
  for (let i = 1; i < 8; i++)
    assert.ok(losses[i] < losses[i - 1] + 1e-6, `loss rose at step ${i}: ${losses.join(", ")}`);
});

test("the jitted gradient (ONNX Runtime) equals the interpreter backend's", () => {
  const g = grad(loss as never) as unknown as (p: Params, xs: Array, ys: Array) => Params;
  const got = (jit(g) as typeof g)(init, x, labels);
  const prev = config.backend;
  config.update("backend", "interpreter");
  let want: Params;
  try {
    want = g(init, x, labels);
  } finally {
    config.update("backend", prev);
  }
  for (const k of ["w1", "b1", "w2", "b2"] as const)
    assertClose(got[k], want[k], { rtol: 1e-4, atol: 1e-5, msg: `d loss / d ${k}` });
});

test("the training step compiles to ORT Conv and MaxPool with no equation on the interpreter", () => {
  const g = (w1: Array, xs: Array) => grad(loss as never)({ ...init, w1 }, xs, labels) as unknown as Params;
  const { jaxpr } = makeJaxpr((w1: Array, xs: Array) => {
    const r = g(w1, xs);
    return [r.w1, r.w2];
  })(init.w1, x);
  const program = compileJaxpr(jaxpr, { strict: true });
  assert.deepEqual(program.notes, [], program.notes.join("\n"));
  const text = summarizeOnnx(program);
  assert.match(text, /Conv/);
  assert.match(text, /MaxPool/);
});
