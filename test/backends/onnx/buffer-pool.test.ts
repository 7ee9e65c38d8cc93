/** @file The buffer pool's native arena: outputs of a training loop that never yields and never donates reuse the memory of collected arrays, and the arena's free list holds at most twice the bytes in use. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as jax from "../../../src/index.js";
import { type Array, numpy as jnp } from "../../../src/index.js";
import { bufferPoolOptions, bufferPoolStats } from "../../../src/backends/onnx/buffer-pool.js";
import { nativeArena } from "../../../src/backends/onnx/ort-runtime.js";

test(
  "5,000 synchronous steps without donation: outputs reuse collected memory, the arena holds <= 2x the bytes in use",
  { skip: nativeArena() === null && "no native arena (addon not built)" },
  () => {
    // small arrays through the arena (its threshold lowered for the test): 64x64 float32 = 16 KiB
    const saved = { ...bufferPoolOptions };
    bufferPoolOptions.arenaMinBytes = 16 * 1024;
    // a collection every ~2 steps: the free list's floor (twice this) stays below twice the bytes in use
    bufferPoolOptions.arenaGcBytes = 32 * 1024;
    try {
      // w <- w - 0.1 * (w @ w - I) / 64 + b: one 16 KiB matrix and one vector out per step, plus a disposed auxiliary output
      const step = jax.jit((w: Array, b: Array): [Array, Array] => {
        const r = jnp.subtract(jnp.matmul(w, w), jnp.eye(64));
        const aux = jnp.multiply(r, r);
        return [jnp.add(jnp.subtract(w, jnp.multiply(r, 0.1 / 64)), b), aux];
      });
      let w = jnp.multiply(jnp.eye(64), 0.5);
      const b = jnp.zeros([64, 64]);
      [w] = step(w, b);
      const s0 = bufferPoolStats();
      let worst = 0,
        worstAt = -1,
        maxPooled = 0;
      for (let i = 0; i < 5000; i++) {
        const [next, aux] = step(w, b);
        aux.dispose(); // the JS pool takes it back at once
        w = next;
        const s = bufferPoolStats();
        // the arena's free list against the bytes of its blocks handed out and not yet collected
        const ratio = s.arenaFreeBytes / Math.max(s.arenaInUseBytes, 1);
        if (ratio > worst) {
          worst = ratio;
          worstAt = i;
        }
        // the JS pool holds what dispose() gave back: here the one auxiliary buffer, until the next step takes it
        maxPooled = Math.max(maxPooled, s.pooledBytes);
      }
      const s1 = bufferPoolStats();
      assert.ok(worst <= 2, `the arena held ${worst.toFixed(2)}x the bytes in use (step ${worstAt})`);
      assert.ok(maxPooled <= 64 * 64 * 4, `the JS pool held ${maxPooled} bytes`);
      // every step needs a fresh 16 KiB buffer for w: after the first few, they come from collected arrays
      const fresh = s1.arenaFresh - s0.arenaFresh,
        allocated = s1.arenaAllocated - s0.arenaAllocated;
      assert.ok(allocated >= 5000, `${allocated} outputs through the arena`);
      assert.ok(fresh < 100, `${fresh} of ${allocated} arena buffers were freshly mapped memory`);
      assert.ok(s1.gcRequested > s0.gcRequested, "the pool asked for young-generation collections");
      // the values: w converges to the fixed point of w = w - 0.1 (w^2 - I) / 64, i.e. w = I
      const wl = w.tolist() as number[][];
      assert.ok(
        Math.abs(wl[7][7] - 1) < 1e-3 && Math.abs(wl[7][8]) < 1e-6,
        `w[7][7] = ${wl[7][7]}, w[7][8] = ${wl[7][8]}`,
      );
    } finally {
      Object.assign(bufferPoolOptions, saved);
    }
  },
);

test(
  "arena storage is plain typed-array storage: values, slices and disposal behave as for V8's own buffers",
  { skip: nativeArena() === null && "no native arena (addon not built)" },
  () => {
    const f = jax.jit((x: Array) => jnp.add(jnp.multiply(x, 2), 1));
    const n = 1 << 17; // 512 KiB of float32: above the arena threshold
    const x = jnp.arange(n, undefined, undefined, "float32");
    const before = bufferPoolStats().arenaAllocated;
    const y = f(x);
    assert.equal(bufferPoolStats().arenaAllocated, before + 1);
    const d = y.dataSync();
    assert.equal(d.length, n);
    assert.equal(d[12345], 2 * 12345 + 1);
    assert.equal(d[n - 1], 2 * (n - 1) + 1);
    y.dispose();
    const z = f(x); // the disposed storage serves the next output through the JS pool
    assert.equal(bufferPoolStats().arenaAllocated, before + 1);
    assert.equal(z.dataSync()[7], 15);
  },
);
