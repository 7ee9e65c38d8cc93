/** @file config logCompiles: every jit trace and compilation is logged with its cause (first call, changed argument, static value, eviction). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Array, clearCaches, config, jit, numpy as jnp, setCompileLogSink } from "../../src/index.js";

/** Runs f with logCompiles on and a sink capturing the lines; restores the flags afterwards. */
function capture(f: () => void, backend: "onnx" | "interpreter" = "onnx"): string[] {
  const lines: string[] = [];
  const prev = { logCompiles: config.logCompiles, backend: config.backend, jitCacheSize: config.jitCacheSize };
  const prevSink = setCompileLogSink((l) => lines.push(l));
  config.update("logCompiles", true);
  config.update("backend", backend);
  try {
    f();
  } finally {
    setCompileLogSink(prevSink);
    config.update("logCompiles", prev.logCompiles);
    config.update("backend", prev.backend);
    config.update("jitCacheSize", prev.jitCacheSize);
  }
  return lines;
}

test("logCompiles: first call, cache hit (silent), changed argument shape and dtype, each compile", () => {
  const lines = capture(() => {
    const f = jit(function addMul(x: Array, y: Array) {
      return jnp.multiply(jnp.add(x, y), 2);
    });
    f(jnp.ones([3]), jnp.ones([3]));
    f(jnp.ones([3]), jnp.ones([3]));
    f(jnp.ones([3]), jnp.ones([1]));
    f(jnp.ones([3], "int32"), jnp.ones([1]));
  });
  const traces = lines.filter((l) => l.includes("tracing"));
  assert.deepEqual(traces, [
    "jit(addMul): tracing for (f32[3], f32[3]) because it is the first call",
    "jit(addMul): tracing for (f32[3], f32[1]) because argument 1 changed from f32[3] to f32[1]",
    "jit(addMul): tracing for (i32[3], f32[1]) because argument 0 changed from f32[3] to i32[3]",
  ]);
  const compiles = lines.filter((l) => l.includes("compil"));
  assert.equal(compiles.length, 3, lines.join("\n"));
  assert.match(compiles[0], /^jit\(addMul\): compiling \(f32\[3\], f32\[3\]\) to \d+ step\(s\) from 2 equation\(s\)$/);
});

test("logCompiles: static arguments, pytree structure and leaves are named", () => {
  const lines = capture(() => {
    const f = jit(
      function affine(p: { w: Array; b: Array }, n: number) {
        return jnp.add(jnp.multiply(p.w, n), p.b);
      },
      { staticArgnums: [1] },
    );
    const p = { w: jnp.ones([2]), b: jnp.ones([2]) };
    f(p, 2);
    f(p, 3);
    f({ w: jnp.ones([2]), b: jnp.ones([1]) }, 3);
    assert.throws(() => f([jnp.ones([2])] as unknown as { w: Array; b: Array }, 3));
  }, "interpreter");
  assert.deepEqual(lines.slice(0, 3), [
    "jit(affine): tracing for (f32[2], f32[2]) because it is the first call",
    "jit(affine): tracing for (f32[2], f32[2]) because static argument 1 changed from 2 to 3",
    // argument 0's leaves in key order: b first
    "jit(affine): tracing for (f32[1], f32[2]) because argument 0 leaf 0 changed from f32[2] to f32[1]",
  ]);
  // the fourth call fails inside affine (p.w of an array is undefined) after its trace was logged
  assert.equal(lines.length, 4);
  assert.match(lines[3], /because the argument structure changed from \[\{"b":\*,"w":\*\}\] to \[\[\*\]\]$/);
});

test("logCompiles: a signature evicted from the jit cache, or cleared, says so when it traces again", () => {
  const lines = capture(() => {
    config.update("jitCacheSize", 1);
    const f = jit(function sq(x: Array) {
      return jnp.multiply(x, x);
    });
    f(jnp.ones([1]));
    f(jnp.ones([2]));
    f(jnp.ones([1]));
    clearCaches();
    f(jnp.ones([1]));
  }, "interpreter");
  assert.deepEqual(lines, [
    "jit(sq): tracing for (f32[1]) because it is the first call",
    "jit(sq): tracing for (f32[2]) because argument 0 changed from f32[1] to f32[2]",
    "jit(sq): tracing for (f32[1]) because its signature was evicted from the jit cache (jitCacheSize=1)",
    "jit(sq): tracing for (f32[1]) because caches were cleared (clearCaches, or a flag that changes tracing flipped)",
  ]);
});

test("logCompiles off: nothing is logged", () => {
  const lines: string[] = [];
  const prev = setCompileLogSink((l) => lines.push(l));
  try {
    assert.equal(config.logCompiles, false);
    jit((x: Array) => jnp.add(x, 1))(jnp.ones([7]));
  } finally {
    setCompileLogSink(prev);
  }
  assert.deepEqual(lines, []);
});
