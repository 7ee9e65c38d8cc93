/** @file The buffer pool's native arena: outputs of a training loop that never yields and never donates reuse the memory of collected arrays, the arena's free list holds at most twice the bytes in use, and a jitted program's compiling call readies blocks for its next outputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as jax from "../../../src/index.js";
import { type Array, numpy as jnp } from "../../../src/index.js";
import {
  acquire,
  bufferPoolOptions,
  bufferPoolStats,
  clearBufferPool,
  reserveOutputs,
} from "../../../src/backends/onnx/buffer-pool.js";
import { nativeArena } from "../../../src/backends/onnx/ort-runtime.js";
import { onnxBackendOptions } from "../../../src/backends/onnx/backend-options.js";

test(
  "5,000 synchronous steps without donation: outputs reuse collected memory, the arena holds <= 2x the bytes in use",
  { skip: nativeArena() === null && "no native arena (addon not built)" },
  () => {
    // small arrays through the arena (its threshold lowered for the test): 64x64 float32 = 16 KiB
    const saved = { ...bufferPoolOptions };
    // synchronous steps: async dispatch holds each pending run's storage until it settles (test/backends/onnx/async-dispatch.test.ts)
    onnxBackendOptions.asyncDispatch = false;
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
      onnxBackendOptions.asyncDispatch = true;
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

const noArena = nativeArena() === null && "no native arena (addon not built)";

test(
  "reserveOutputs tops the arena's free list up to ceil(budget / bytes per call) + 2 blocks per output",
  { skip: noArena },
  () => {
    const saved = { ...bufferPoolOptions };
    // a collection every 64 MiB: the budget is that (the bytes in use here are far below twice it)
    bufferPoolOptions.arenaGcBytes = 64 * 1024 * 1024;
    try {
      // 67 pages (above the arena's 256 KiB threshold, a block size no other test uses): 64 MiB / 274,432 B is far
      // above reserveSets, so sets = reserveSets
      const n = 67 * 1024;
      bufferPoolOptions.reserveSets = 3;
      const out = acquire(Float32Array, n);
      const s0 = bufferPoolStats();
      assert.equal(reserveOutputs([out]), 3);
      const s1 = bufferPoolStats();
      assert.equal(s1.reservedBlocks - s0.reservedBlocks, 3);
      assert.equal(s1.arenaFresh - s0.arenaFresh, 3, "three fresh mappings");
      assert.equal(s1.gcRequested - s0.gcRequested, 1, "one young-generation collection");
      assert.ok(s1.arenaFreeBytes >= 3 * 67 * 4096, `free list ${s1.arenaFreeBytes} B`);
      // already there: a second reservation maps nothing
      assert.equal(reserveOutputs([out]), 0);
      // two outputs of the same size: the bucket is topped up to 2 x 3 blocks
      const out2 = acquire(Float32Array, n);
      assert.equal(reserveOutputs([out, out2]), 4); // out2 took one of the three
      // the next outputs of that size come from the reserved blocks, not from fresh memory
      const s2 = bufferPoolStats();
      const held = [];
      for (let i = 0; i < 6; i++) held.push(acquire(Float32Array, n));
      const s3 = bufferPoolStats();
      assert.equal(s3.arenaFresh - s2.arenaFresh, 0);
      assert.equal(s3.arenaReused - s2.arenaReused, 6);
      assert.equal(held.length, 6);
      // below the arena's threshold, or 0 sets: nothing
      assert.equal(reserveOutputs([acquire(Float32Array, 1024)]), 0);
      bufferPoolOptions.reserveSets = 0;
      assert.equal(reserveOutputs([acquire(Float32Array, n)]), 0);
    } finally {
      Object.assign(bufferPoolOptions, saved);
    }
  },
);

/**
 * 40 steps of w <- w - 0.01 x^T (x w - y) / 64 without donation after the compiling call, w 256 x `cols` float32
 * (~300 KiB: through the arena), from an empty free list as a script starts: the fresh arena mappings in those steps.
 */
function freshInLoop(cols: number): { fresh: number; reserved: number; first: number; last: number } {
  const step = jax.jit((w: Array, x: Array, y: Array): [Array, Array] => {
    const r = jnp.subtract(jnp.matmul(x, w), y);
    const loss = jnp.mean(jnp.multiply(r, r));
    return [loss, jnp.subtract(w, jnp.multiply(jnp.matmul(jnp.transpose(x), r), 0.01 / 64))];
  });
  const x = jnp.divide(jnp.reshape(jnp.arange(64 * 256, undefined, undefined, "float32"), [64, 256]), 64 * 256);
  const y = jnp.ones([64, cols]);
  let w = jnp.zeros([256, cols]);
  clearBufferPool(); // the earlier tests' free blocks would take the room the free list's bounds allow
  // synchronous steps (async dispatch keeps up to 8 pending runs' outputs alive on top of what the reservation covers)
  const savedAsync = onnxBackendOptions.asyncDispatch;
  onnxBackendOptions.asyncDispatch = false;
  const s0 = bufferPoolStats();
  let loss: Array;
  [loss, w] = step(w, x, y); // trace, compile, first run
  const s1 = bufferPoolStats();
  const first = loss.item() as number;
  for (let i = 0; i < 40; i++) {
    const [l, next] = step(w, x, y);
    l.dispose();
    w = next;
  }
  const s2 = bufferPoolStats();
  const last = step(w, x, y)[0].item() as number;
  onnxBackendOptions.asyncDispatch = savedAsync;
  return { fresh: s2.arenaFresh - s1.arenaFresh, reserved: s1.reservedBlocks - s0.reservedBlocks, first, last };
}

test(
  "a jitted loop without donation: blocks readied by the compiling call serve the next steps' outputs",
  { skip: noArena },
  () => {
    const saved = bufferPoolOptions.reserveSets;
    let off: ReturnType<typeof freshInLoop>;
    try {
      bufferPoolOptions.reserveSets = 0;
      off = freshInLoop(301);
    } finally {
      bufferPoolOptions.reserveSets = saved;
    }
    const on = freshInLoop(300);
    // ceil(max(4 MiB, half the arena bytes in use) / 300 KiB) + 2 >= 16 blocks; without them every output until the first requested collection
    // (~13 steps) is fresh memory; with them at most a few (the collector's sweeper returns blocks on its own thread)
    assert.equal(off.reserved, 0);
    assert.ok(on.reserved >= 16 && on.reserved <= 32, `${on.reserved} blocks reserved`);
    assert.ok(off.fresh >= 10, `without reservation ${off.fresh} fresh mappings in 40 steps`);
    // (a loaded host delays the collector's sweeper, so a few more may be fresh; still well under the unreserved loop:
    // at load 10-17 a run read 7 against 12)
    assert.ok(
      on.fresh <= 8 && 3 * on.fresh <= 2 * off.fresh,
      `with reservation ${on.fresh} fresh mappings in 40 steps (without: ${off.fresh})`,
    );
    // the values: mean(y^2) = 1 at w = 0, then the least-squares loss decreases
    for (const r of [off, on]) {
      assert.equal(r.first, 1);
      assert.ok(r.last < r.first, `loss ${r.first} -> ${r.last}`);
    }
  },
);

test(
  "a jitted call with donated arguments reserves nothing (its outputs reuse the donated storage)",
  { skip: noArena },
  () => {
    const f = jax.jit((w: Array) => jnp.add(jnp.matmul(w, w), 1), { donateArgnums: 0 });
    const s0 = bufferPoolStats();
    const out = f(jnp.ones([300, 300]));
    assert.equal(bufferPoolStats().reservedBlocks, s0.reservedBlocks);
    assert.equal((out.tolist() as number[][])[3][5], 301);
  },
);
