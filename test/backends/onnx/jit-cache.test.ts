/** @file Bounded compilation caches: jitCacheSize (per function, LRU), compiledCacheSize (loaded sessions), eagerCacheSize, deterministic release by clearCache/clearCaches, sharing of identical programs across fresh jit wrappers. */
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import * as jax from "../../../src/index.js";
import { type Array, config, numpy as jnp } from "../../../src/index.js";
import { onnxCacheStats } from "../../../src/backends/onnx/onnx-backend.js";
import { bufferPoolStats } from "../../../src/backends/onnx/buffer-pool.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

/** Runs `body` with config.<name> = value, restoring the previous value. */
function withConfig<K extends "jitCacheSize" | "compiledCacheSize" | "eagerCacheSize">(
  name: K,
  value: number,
  body: () => void,
): void {
  const old = config[name];
  config.update(name, value);
  try {
    body();
  } finally {
    config.update(name, old);
  }
}

// f(x) = sum(tanh(x @ x^T)) for an n x m input (not elementwise: runs through an ONNX Runtime session)
const gram = (x: Array): Array => jnp.sum(jnp.tanh(jnp.matmul(x, jnp.transpose(x))));
const gramRef = (n: number, m: number, v: number): number => n * n * Math.tanh(m * v * v);

test("config: cache sizes are positive integers", () => {
  assert.throws(() => config.update("jitCacheSize", 0), /jitCacheSize must be a positive integer/);
  assert.throws(() => config.update("eagerCacheSize", 1.5), /eagerCacheSize must be a positive integer/);
  assert.throws(() => config.update("compiledCacheSize", -3), /compiledCacheSize must be a positive integer/);
});

test("jitCacheSize bounds one function's cache (least recently used first) and releases what it drops", () => {
  withConfig("jitCacheSize", 3, () => {
    let traces = 0;
    const f = jax.jit((x: Array) => {
      traces++;
      return gram(x);
    });
    const x = (m: number) => jnp.full([2, m], 0.5);
    const alive0 = onnxCacheStats().loadedPrograms;
    for (const m of [1, 2, 3]) assert.ok(Math.abs((f(x(m)).item() as number) - gramRef(2, m, 0.5)) < 1e-5);
    assert.equal(f.cacheSize(), 3);
    assert.equal(onnxCacheStats().loadedPrograms - alive0, 3);
    f(x(1)); // 1 is now the most recently used: 2 is the least
    f(x(4));
    assert.equal(f.cacheSize(), 3, "bounded");
    assert.equal(
      onnxCacheStats().loadedPrograms - alive0,
      3,
      "the dropped signature's program released its session now",
    );
    assert.equal(traces, 4);
    f(x(1));
    f(x(3));
    f(x(4));
    assert.equal(traces, 4, "1, 3 and 4 are still cached");
    assert.ok(Math.abs((f(x(2)).item() as number) - gramRef(2, 2, 0.5)) < 1e-5);
    assert.equal(traces, 5, "2 was evicted: retraced");
    f.clearCache();
    assert.equal(f.cacheSize(), 0);
    assert.equal(onnxCacheStats().loadedPrograms, alive0, "clearCache released every session now");
  });
});

test("compiledCacheSize bounds loaded programs across functions; an unloaded program reloads when run again", () => {
  withConfig("compiledCacheSize", 2, () => {
    const fs = [1, 2, 3].map((k) => jax.jit((x: Array) => jnp.multiply(gram(x), k)));
    const x = jnp.full([3, 2], 0.25);
    const want = gramRef(3, 2, 0.25);
    fs.forEach((f, i) => assert.ok(Math.abs((f(x).item() as number) - want * (i + 1)) < 1e-5));
    assert.ok(onnxCacheStats().loadedPrograms <= 2);
    // the least recently run (fs[0]) lost its session: it recreates it
    const created = onnxCacheStats().sessionsCreated;
    assert.ok(Math.abs((fs[0](x).item() as number) - want) < 1e-5);
    assert.equal(onnxCacheStats().sessionsCreated, created + 1);
    assert.ok(onnxCacheStats().loadedPrograms <= 2);
  });
});

test("eagerCacheSize bounds the eager per-primitive cache (least recently used first)", () => {
  withConfig("eagerCacheSize", 8, () => {
    jax.clearCaches();
    // reshape is not shape-polymorphic: one eager entry and session per shape
    const a = jnp.arange(24);
    const hot = jnp.reshape(a, [4, 6]);
    for (let k = 0; k < 20; k++) {
      const shape = [
        [2, 12],
        [3, 8],
        [12, 2],
        [8, 3],
        [6, 4],
        [24, 1],
        [1, 24],
        [2, 3, 4],
        [4, 3, 2],
        [2, 2, 6],
      ][k % 10];
      assert.deepEqual(jnp.reshape(a, shape).shape, shape);
      assert.deepEqual(jnp.reshape(a, [4, 6]).tolist(), hot.tolist());
      assert.ok(onnxCacheStats().eagerEntries <= 8);
    }
    const created = onnxCacheStats().sessionsCreated;
    jnp.reshape(a, [4, 6]);
    assert.equal(onnxCacheStats().sessionsCreated, created, "the most used entry survived every eviction");
  });
});

test("jax.clearCaches releases every session and retraces on the next call", () => {
  let traces = 0;
  const f = jax.jit((x: Array) => {
    traces++;
    return gram(x);
  });
  const x = jnp.full([2, 3], 0.5);
  f(x);
  jnp.reshape(jnp.arange(6), [3, 2]);
  // disposed outputs, one from the arena (512 KiB), one from V8 (16 KiB): both end up free in the pool
  const big = jax.jit((v: Array) => jnp.multiply(v, 3));
  big(jnp.ones([1 << 17])).dispose();
  big(jnp.ones([1 << 12])).dispose();
  assert.ok(bufferPoolStats().pooledBytes > 0);
  assert.ok(onnxCacheStats().sessionsAlive > 0);
  jax.clearCaches();
  const s = onnxCacheStats();
  assert.equal(s.sessionsAlive, 0);
  assert.equal(s.loadedPrograms, 0);
  assert.equal(s.eagerEntries, 0);
  assert.equal(f.cacheSize(), 0, "every jit cache is emptied");
  const pool = bufferPoolStats();
  // (the arena's free list is emptied too, but the collector may hand a block back at any moment: not asserted)
  assert.equal(pool.pooledBytes, 0, "the JS pool's free buffers are dropped");
  assert.ok(Math.abs((f(x).item() as number) - gramRef(2, 3, 0.5)) < 1e-5);
  assert.equal(traces, 2);
});

test("a fresh jit wrapper per step in a synchronous loop shares one program and retains no per-wrapper state", () => {
  const step = (w: Array, x: Array): Array =>
    jnp.subtract(w, jnp.multiply(0.01, jnp.matmul(jnp.transpose(x), jnp.tanh(jnp.matmul(x, w)))));
  let w = jnp.full([16, 16], 0.1);
  const x = jnp.full([8, 16], 0.2);
  w = jax.jit(step)(w, x);
  gc();
  const s0 = onnxCacheStats();
  const h0 = process.memoryUsage().heapUsed;
  for (let i = 0; i < 1000; i++) w = jax.jit(step)(w, x);
  // no await since the loop started: finalizers have not run, and a WeakRef would still hold its target
  gc();
  const h1 = process.memoryUsage().heapUsed;
  const s1 = onnxCacheStats();
  assert.equal(s1.sessionsAlive, s0.sessionsAlive, "no new sessions");
  assert.equal(s1.sharedPrograms, s0.sharedPrograms, "one executable serves every wrapper");
  assert.equal(s1.loadedPrograms, s0.loadedPrograms);
  // each dead wrapper may leave a registry cell (~100 bytes) until finalizers run; a retained trace cache,
  // jaxpr and compiled program would be tens of KiB each
  assert.ok(h1 - h0 < 4 * 2 ** 20, `the heap retained ${((h1 - h0) / 2 ** 20).toFixed(1)} MiB after 1,000 wrappers`);
  // w <- w - 0.01 x^T tanh(x w): every entry stays equal; iterate the scalar recurrence in float64
  let v = 0.1;
  v = v - 0.01 * 8 * 0.2 * Math.tanh(16 * 0.2 * v);
  for (let i = 0; i < 1000; i++) v = v - 0.01 * 8 * 0.2 * Math.tanh(16 * 0.2 * v);
  assert.ok(Math.abs((w.tolist() as number[][])[3][5] - v) < 1e-4);
});

test("identical graphs over different input dtypes (float32 / bfloat16) are not shared: each marshals its own inputs", () => {
  // bfloat16 values are float32 inside the graph, so where(x, 1, 0) lowers to the same model for both; the shared
  // executable used to take the bfloat16 input as float32 bytes ("not enough space: expected 12, got 6")
  const f = (x: Array): Array => jnp.where(x, 1, 0);
  for (const dtype of ["float32", "bfloat16", "float32"] as const) {
    const x = jnp.array([1, 0, -2.5], dtype);
    assert.deepEqual(jax.jit(f)(x).tolist(), [1, 0, 1], dtype);
    assert.deepEqual(
      jax
        .jit((y: Array) => jnp.greater(y, -1))(x)
        .tolist(),
      [true, true, false],
      dtype,
    );
  }
});
