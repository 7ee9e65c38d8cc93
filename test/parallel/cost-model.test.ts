/**
 * @file Per-primitive cost facts (PrimitiveFacts.cost, declared with each primitive) as both cost models read them:
 * costAnalysis's FLOPs of a per-device program and autoShard's FLOP weights.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { ShapedArray } from "../../src/core/aval.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { getPrimitive } from "../../src/core/primitive.js";
import { lax, numpy as jnp, type Array } from "../../src/index.js";
import { costOfJaxpr } from "../../src/parallel/cost-model.js";
import { eqnFlops } from "../../src/parallel/auto-shard-cost.js";

test("cost facts live on the primitives: views, data movement and transcendental functions", () => {
  for (const n of ["reshape", "broadcast_in_dim", "squeeze", "copy", "stop_gradient"])
    assert.equal(getPrimitive(n).opts.cost, "view", n);
  for (const n of ["transpose", "slice", "concatenate", "pad", "gather", "rev", "all_gather", "convert_element_type"])
    assert.equal(getPrimitive(n).opts.cost, "move", n);
  for (const n of ["exp", "log", "tanh", "logistic", "sin", "sqrt", "pow", "erf"])
    assert.equal(getPrimitive(n).opts.cost, "transcendental", n);
  for (const n of ["add", "mul", "max", "neg"]) assert.equal(getPrimitive(n).opts.cost, undefined, n);
});

test("costAnalysis and autoShard count FLOPs from the facts", () => {
  // [4, 8] float32: exp (32), transpose (data movement: 0), add (32), reshape (view: 0), a [2,16]x[16,1] dot (2*2*16)
  const f = (x: Array, w: Array): Array[] => [
    jnp.matmul(jnp.reshape(jnp.add(lax.transpose(jnp.exp(x), [1, 0]), 1), [2, 16]), w),
  ];
  const { jaxpr } = traceToJaxpr(f as never, [new ShapedArray([4, 8], "float32"), new ShapedArray([16, 1], "float32")]);
  assert.deepEqual(
    jaxpr.eqns.map((e) => e.primitive.name),
    ["exp", "transpose", "add", "reshape", "dot_general"],
  );
  assert.equal(costOfJaxpr(jaxpr).flops, 32 + 0 + 32 + 0 + 2 * 2 * 16);
  // autoShard weighs a transcendental element as 4 FLOPs, data movement and views as none
  const shapes = (e: (typeof jaxpr.eqns)[number]) =>
    [e.inputs.map((a) => a.aval.shape), e.outVars.map((v) => v.aval.shape)] as const;
  assert.deepEqual(
    jaxpr.eqns.map((e) => eqnFlops(e, ...shapes(e))),
    [4 * 32, 0, 32, 0, 2 * 2 * 16],
  );
});
