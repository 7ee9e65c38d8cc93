/** @file Failures at run time raise (an OutOfMemoryError naming the program, its inputs and the bytes requested) instead of switching to equation-by-equation execution; a program ORT rejects at creation falls back and says so once. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as jax from "../../../src/index.js";
import { type Array, OutOfMemoryError, numpy as jnp } from "../../../src/index.js";
import { compiledFor, onnxBackendOptions } from "../../../src/backends/onnx/onnx-backend.js";
import { Primitive } from "../../../src/core/primitive.js";
import { traceToJaxpr } from "../../../src/core/jaxpr-trace.js";
import { ArrayImpl } from "../../../src/core/array-impl.js";
import * as ops from "../../../src/primitives/ops.js";

// 2^20 x 2^20 float32 = 2^42 bytes (4 TiB): no allocation of it can succeed, and none is attempted lazily
const HUGE = [2 ** 20, 2 ** 20];
const HUGE_BYTES = 2 ** 42;

test("a jitted program whose output cannot be allocated raises OutOfMemoryError, every time, without falling back", () => {
  const big = jax.jit(function hugeOutput(v: Array) {
    return jnp.broadcastTo(v, HUGE);
  });
  const x = jnp.array([1.5]);
  for (let attempt = 0; attempt < 2; attempt++) {
    assert.throws(
      () => big(x),
      (e: unknown) => {
        assert.ok(e instanceof OutOfMemoryError, String(e));
        assert.equal(e.program, "jit(hugeOutput)");
        assert.deepEqual(e.inputs, ["f32[1]"]);
        assert.equal(e.bytes, HUGE_BYTES);
        assert.match(
          e.message,
          /^jit\(hugeOutput\): out of memory: allocating 4398046511104 bytes .*output 0 \(f32\[1048576,1048576\]\).*inputs: f32\[1\]/,
        );
        return true;
      },
    );
  }
  // still one compiled program, not an equation-by-equation fallback
  const exe = compiledFor(big.lower(x).jaxpr.jaxpr);
  assert.ok(exe.program.steps.every((s) => s.kind === "onnx") || exe.isFused);
  assert.deepEqual(jnp.broadcastTo(jnp.array([2]), [2, 2]).tolist(), [
    [2, 2],
    [2, 2],
  ]);
});

test("ONNX Runtime's own failed allocation inside a program raises OutOfMemoryError with the bytes it requested", () => {
  const f = jax.jit(function hugeIntermediate(v: Array) {
    return jnp.sum(jnp.broadcastTo(v, HUGE));
  });
  assert.throws(
    () => f(jnp.array([0.5])),
    (e: unknown) => {
      assert.ok(e instanceof OutOfMemoryError, String(e));
      assert.equal(e.program, "jit(hugeIntermediate)");
      assert.deepEqual(e.inputs, ["f32[1]"]);
      assert.equal(e.bytes, HUGE_BYTES, e.message);
      assert.match(e.message, /ONNX Runtime: .*Failed to allocate memory/);
      return true;
    },
  );
  // a feasible shape of the same function still runs compiled
  const g = jax.jit(function smallIntermediate(v: Array) {
    return jnp.sum(jnp.broadcastTo(v, [64, 64]));
  });
  assert.equal(g(jnp.array([0.5])).item(), 2048);
});

test("an eager primitive whose output cannot be allocated raises OutOfMemoryError naming the primitive", () => {
  assert.throws(
    () => jnp.broadcastTo(jnp.array([1, 2]), [2 ** 20, 2 ** 19, 2]),
    (e: unknown) => {
      assert.ok(e instanceof OutOfMemoryError, String(e));
      assert.equal(e.program, "broadcast_in_dim");
      assert.equal(e.bytes, HUGE_BYTES);
      return true;
    },
  );
});

test("a program ONNX Runtime rejects at session creation falls back to the interpreter and warns once", async () => {
  // a lowering that emits an operator ONNX does not have: the model is rejected when the session is created
  const bogus = new Primitive("test_bogus_op", {
    abstractEval: ([x]) => [x],
    impl: ([x]) => [x],
    lower: (ctx, ins) => [ctx.op("NoSuchOperator", ins)],
  });
  const warnings: string[] = [];
  const onWarning = (w: Error & { code?: string }) => {
    if (w.code === "JAXTS_FALLBACK") warnings.push(w.message);
  };
  process.on("warning", onWarning);
  const strict = onnxBackendOptions.strict;
  onnxBackendOptions.strict = false;
  try {
    const input = jnp.array([1, 2, 3], "float32") as unknown as ArrayImpl;
    const fn = (v: Array) => [ops.exp(ops.bindN(bogus as Primitive, [ops.add(v, 1)])[0])];
    for (let k = 0; k < 2; k++) {
      const { jaxpr } = traceToJaxpr(fn, [input.aval], "bogus");
      const exe = compiledFor(jaxpr, "bogus");
      assert.ok(
        exe.program.steps.every((s) => s.kind === "host"),
        "runs equation by equation",
      );
      const [y] = exe.run([input]);
      assert.deepEqual(y.tolist(), [Math.exp(2), Math.exp(3), Math.exp(4)].map(Math.fround));
    }
    await new Promise((r) => setImmediate(r));
    // one for the jitted program, one for the equation that then fails on its own eager model (each once)
    assert.equal(warnings.length, 2, warnings.join("\n"));
    assert.match(
      warnings[0],
      /^jit\(bogus\): session creation failed: .*NoSuchOperator.*; running its 3 equations one by one instead$/s,
    );
    assert.match(
      warnings[1],
      /^test_bogus_op on f32\[3\]: building its ONNX model failed \(.*NoSuchOperator.*\); it runs on its reference implementation instead$/s,
    );
  } finally {
    onnxBackendOptions.strict = strict;
    process.off("warning", onWarning);
  }
});
