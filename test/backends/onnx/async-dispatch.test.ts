/** @file Async dispatch of single-device jit: pending outputs, overlap proven from the runtime's clocks, host reads, non-blocking awaits, errors at the wait, buffer-pool safety and flat memory over chained calls. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as jax from "../../../src/index.js";
import { type Array, numpy as jnp } from "../../../src/index.js";
import {
  AsyncRun,
  asyncRunStats,
  delayNextAsyncRun,
  failNextAsyncRun,
  settleAsyncRuns,
} from "../../../src/backends/onnx/async-run.js";
import { onnxBackendOptions } from "../../../src/backends/onnx/backend-options.js";
import { bufferPoolStats } from "../../../src/backends/onnx/buffer-pool.js";
import { deviceAddon } from "../../../src/backends/onnx/ort-addon.js";
import { ArrayImpl } from "../../../src/core/array-impl.js";
import { OutOfMemoryError } from "../../../src/core/errors.js";
import { Primitive } from "../../../src/core/primitive.js";
import * as ops from "../../../src/primitives/ops.js";
import { countTurns } from "../../helpers/event-loop.js";
import { withX64 } from "../../helpers/x64.js";

const skip = deviceAddon().api ? false : "the native addon (device executors) is not built";

/** The asynchronous run writing `a`, asserting there is one (the call was dispatched, not run inline). */
function runOf(a: Array): AsyncRun {
  const w = (a as ArrayImpl).pendingWrite;
  assert.ok(w instanceof AsyncRun, "expected the call to be dispatched asynchronously");
  return w;
}

/** `f` with async dispatch switched off (the synchronous reference path). */
function syncly<T>(f: () => T): T {
  const saved = onnxBackendOptions.asyncDispatch;
  onnxBackendOptions.asyncDispatch = false;
  try {
    return f();
  } finally {
    onnxBackendOptions.asyncDispatch = saved;
  }
}

/** Every program counts as expensive: dispatched from its third call on, whatever its size. */
function alwaysAsync<T>(f: () => T): T {
  const saved = onnxBackendOptions.asyncMinRunUs;
  onnxBackendOptions.asyncMinRunUs = 0;
  try {
    return f();
  } finally {
    onnxBackendOptions.asyncMinRunUs = saved;
  }
}

/** Three inline calls: the fastest of the timed ones (the 2nd, 3rd) decides whether the next calls are dispatched. */
function warm(f: () => Array): void {
  for (let i = 0; i < 3; i++) f().blockUntilReady();
}

/** Row-major n x n float64 tanh(a @ b), the host reference of one chain step. */
function tanhMatmul64(a: ArrayLike<number>, b: ArrayLike<number>, n: number): Float64Array {
  const out = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let k = 0; k < n; k++) {
      const x = a[i * n + k];
      for (let j = 0; j < n; j++) out[i * n + j] += x * b[k * n + j];
    }
  for (let i = 0; i < out.length; i++) out[i] = Math.tanh(out[i]);
  return out;
}

const N = 256;
const x0 = jax.random.normal(jax.random.key(0), [N, N]);
const w0 = jnp.multiply(jax.random.normal(jax.random.key(1), [N, N]), 1 / Math.sqrt(N));

test("a chain of jitted calls returns before the device finishes, with the synchronous path's values", { skip }, () => {
  const chainStep = jax.jit((a: Array, b: Array) => jnp.tanh(jnp.matmul(a, b)));
  const K = 6;
  const ref: Float32Array[] = [];
  syncly(() => {
    let y = x0;
    for (let i = 0; i < K; i++) ref.push((y = chainStep(y, w0)).dataSync() as Float32Array);
  });
  warm(() => chainStep(x0, w0));
  const before = asyncRunStats().dispatched;
  let y = x0;
  const runs: AsyncRun[] = [];
  const ys: Array[] = [];
  // the first run sleeps on the device first: on a loaded host the JS thread may otherwise lose the cores to the
  // device's own intra-op threads between two calls (the order below would still hold, the margin would not)
  delayNextAsyncRun(50);
  for (let i = 0; i < K; i++) {
    y = alwaysAsync(() => chainStep(y, w0));
    runs.push(runOf(y));
    ys.push(y);
  }
  assert.equal(asyncRunStats().dispatched - before, K);
  assert.deepEqual(ys[K - 1].dataSync(), ref[K - 1]);
  // the device's FIFO order: call k + 1 was dispatched (returned to the caller) before call k ended on the device
  for (let k = 0; k + 1 < K; k++) {
    assert.ok(runs[k].settled && runs[k].end > 0);
    assert.ok(runs[k + 1].dispatchedAt < runs[k].end, `call ${k + 1} returned after call ${k} ended on the device`);
    assert.ok(runs[k + 1].start >= runs[k].end, "the device ran the calls in order");
  }
  for (let k = 0; k < K; k++) assert.deepEqual(ys[k].dataSync(), ref[k]);
  // real values: the first step against a float64 host computation
  const first = tanhMatmul64(x0.dataSync() as Float32Array, w0.dataSync() as Float32Array, N);
  const got = ys[0].dataSync() as Float32Array;
  for (let i = 0; i < first.length; i += 97) assert.ok(Math.abs(got[i] - first[i]) < 1e-5, `element ${i}`);
});

test("a host read in the middle of a chain waits for its value only; the chain goes on", { skip }, () => {
  const midStep = jax.jit((a: Array, b: Array) => jnp.tanh(jnp.matmul(a, b)));
  const ref = syncly(() => {
    let y = x0;
    const mids: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      y = midStep(y, w0);
      if (i === 2) mids.push(y.tolist(), jnp.sum(y).item());
    }
    return { mids, last: y.dataSync(), printed: String(y) };
  });
  alwaysAsync(() => {
    warm(() => midStep(x0, w0));
    let y = x0;
    for (let i = 0; i < 5; i++) {
      y = midStep(y, w0);
      runOf(y);
      if (i === 2) {
        assert.deepEqual(y.tolist(), ref.mids[0]);
        assert.equal(jnp.sum(y).item(), ref.mids[1]);
        assert.equal((y as ArrayImpl).pendingWrite, null, "read: no longer pending");
      }
    }
    runOf(y);
    assert.equal(String(y), ref.printed, "printing waits");
    assert.deepEqual(y.dataSync(), ref.last);
  });
});

test("await x.data() and x.ready() do not block the event loop", { skip }, async () => {
  const awaitStep = jax.jit((a: Array, b: Array) => jnp.tanh(jnp.matmul(a, b)));
  const want = syncly(() => awaitStep(x0, w0).dataSync());
  warm(() => awaitStep(x0, w0));
  delayNextAsyncRun(40);
  const y = alwaysAsync(() => awaitStep(x0, w0));
  runOf(y);
  const stop = countTurns();
  const d = await y.data();
  const turns = stop();
  assert.ok(turns > 0, "the event loop ran while the device worked");
  assert.deepEqual(d, want);
  delayNextAsyncRun(40);
  const z = alwaysAsync(() => awaitStep(x0, w0));
  runOf(z);
  const stop2 = countTurns();
  await z.ready();
  assert.ok(stop2() > 0);
  assert.deepEqual(z.dataSync(), want);
});

test(
  "a failed asynchronous run raises at the wait, naming the program; its consumers fail; the next call works",
  { skip },
  () => {
    const failingStep = jax.jit(function failingStep(a: Array, b: Array) {
      return jnp.tanh(jnp.matmul(a, b));
    });
    const want = syncly(() => failingStep(x0, w0).dataSync());
    alwaysAsync(() => {
      warm(() => failingStep(x0, w0));
      failNextAsyncRun();
      const bad = failingStep(x0, w0);
      runOf(bad);
      const after = failingStep(bad, w0); // queued behind it, reading its (unwritten) output
      runOf(after);
      // mapped as a synchronous run's failure is (run-errors.ts): the program, its inputs, the device's message
      const named =
        /^Error: jit\(failingStep\): ONNX Runtime failed running the compiled program on inputs f32\[256,256\], f32\[256,256\]: test hook/;
      assert.throws(() => bad.dataSync(), named);
      assert.throws(() => bad.tolist(), named, "raised at every wait");
      assert.throws(
        () => after.blockUntilReady(),
        /consumed an output of a failed asynchronous run: jit\(failingStep\)/,
      );
      // the next call works
      const ok = failingStep(x0, w0);
      runOf(ok);
      assert.deepEqual(ok.dataSync(), want);
      bad.dispose();
      after.dispose();
    });
  },
);

test("the buffer pool never hands out storage a pending run still reads or writes", { skip }, () => {
  const poolStep = jax.jit((a: Array, b: Array) => jnp.tanh(jnp.matmul(a, b)));
  const fill = jax.jit((a: Array, v: Array) => jnp.add(jnp.multiply(a, 0), v)); // a fused kernel: pooled outputs
  const base = syncly(() => poolStep(x0, w0));
  const baseVals = base.dataSync() as Float32Array;
  const want = syncly(() => poolStep(base, w0).dataSync());
  alwaysAsync(() => {
    warm(() => poolStep(x0, w0));
    // input side: base (pooled storage) is disposed while the run that reads it waits on the device
    assert.ok((base as ArrayImpl).ownsPooledStorage);
    delayNextAsyncRun(30);
    const y = poolStep(base, w0);
    runOf(y);
    base.dispose();
    const fills = [1, 2, 3, 4].map((v) => fill(x0, jnp.array(v, { dtype: "float32" })));
    assert.equal(asyncRunStats().deferredReleases, 1, "the disposed input waits for its run");
    assert.deepEqual(y.dataSync(), want);
    // output side: a pending output disposed at once is not handed to new arrays before its run wrote it
    delayNextAsyncRun(30);
    const gone = poolStep(x0, w0);
    runOf(gone);
    gone.dispose();
    const fresh = [5, 6, 7, 8].map((v) => fill(x0, jnp.array(v, { dtype: "float32" })));
    settleAsyncRuns();
    for (const [i, f] of [...fills, ...fresh].entries()) {
      const d = f.dataSync() as Float32Array;
      assert.ok(
        d.every((e) => e === i + 1),
        `array filled with ${i + 1} kept its value`,
      );
    }
    assert.equal(asyncRunStats().deferredReleases, 0);
    assert.ok(baseVals.length === N * N);
  });
});

test("memory stays flat over 2,000 chained asynchronous calls with donation", { skip }, () => {
  const M = 128; // 64 KiB float32 outputs: recycled through the pool's buckets
  const flatStep = jax.jit((a: Array, b: Array) => jnp.tanh(jnp.matmul(a, b)), { donateArgnums: 0 });
  const w = jnp.multiply(jax.random.normal(jax.random.key(2), [M, M]), 1 / Math.sqrt(M));
  const start = jax.random.normal(jax.random.key(3), [M, M]);
  const want = syncly(() => {
    let y = jnp.add(start, 0);
    for (let i = 0; i < 20; i++) y = flatStep(y, w);
    return y.dataSync();
  });
  alwaysAsync(() => {
    const d0 = asyncRunStats().dispatched;
    let y = jnp.add(start, 0);
    let fresh500 = 0;
    for (let i = 0; i < 2000; i++) {
      y = flatStep(y, w);
      if (i === 19) assert.deepEqual(y.dataSync(), want);
      if (i === 499) {
        const s = bufferPoolStats();
        fresh500 = s.acquired - s.reused;
      }
    }
    y.blockUntilReady();
    const s = bufferPoolStats();
    assert.ok(asyncRunStats().dispatched - d0 >= 1990, "the loop was dispatched asynchronously");
    assert.ok(s.acquired - s.reused - fresh500 <= 16, `fresh buffers grew by ${s.acquired - s.reused - fresh500}`);
    assert.equal(asyncRunStats().deferredReleases, 0);
    assert.equal(asyncRunStats().inFlight, 0);
  });
});

test("float64 (x64) and int32 programs dispatch asynchronously with the synchronous path's values", { skip }, () => {
  withX64(() => {
    const f64 = jax.jit((a: Array, b: Array) => jnp.sin(jnp.matmul(a, b)));
    const a = jnp.reshape(jnp.arange(64 * 64, { dtype: "float64" }), [64, 64]);
    const b = jnp.multiply(a, 1e-6);
    const want = syncly(() => f64(a, b).dataSync());
    alwaysAsync(() => {
      warm(() => f64(a, b));
      const y = f64(a, b);
      runOf(y);
      assert.equal(y.dtype, "float64");
      assert.deepEqual(y.dataSync(), want);
    });
  });
  const i32 = jax.jit((a: Array) => jnp.add(jnp.multiply(a, a), jnp.flip(a, 0)));
  const a = jnp.reshape(jnp.arange(64 * 64, { dtype: "int32" }), [64, 64]);
  const want = syncly(() => i32(a).dataSync());
  alwaysAsync(() => {
    warm(() => i32(a));
    const y = i32(a);
    runOf(y);
    assert.deepEqual(y.dataSync(), want);
  });
});

/**
 * sum(expand(v, s)): the intermediate's shape is the int32 vector s, a value, so one compiled program runs for some
 * values of s and fails for others inside ONNX Runtime (an allocation it cannot make, or shapes Expand rejects).
 */
const expandSum = new Primitive("test_expand_sum", {
  abstractEval: ([v]) => [v.update({ shape: [] })],
  lower: (ctx, [v, s]) => [
    ctx.op("ReduceSum", [ctx.op("Expand", [v, ctx.op("Cast", [s], { to: 7 })])], { keepdims: 0 }),
  ],
});

/** The error `f` throws (asserting it throws). */
function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  assert.fail("expected a throw");
}

test(
  "an asynchronous run's ONNX Runtime failure raises what the synchronous run of the same program raises",
  { skip },
  () => {
    const expandStep = jax.jit(function expandStep(v: Array, s: Array) {
      return ops.bindN(expandSum as Primitive, [v, s])[0] as Array;
    });
    const v = jnp.array([1.5, 2.5], "float32");
    const ok = jnp.array([3, 1, 2], "int32"); // [3,1,2]: sum = 3 * (1.5 + 2.5)
    // 2^20 x 2^19 x 2 float32 = 2^42 bytes: ONNX Runtime's allocation fails
    const huge = jnp.array([2 ** 20, 2 ** 19, 2], "int32");
    const clash = jnp.array([1, 1, 3], "int32"); // [2] does not broadcast to [1,1,3]
    assert.equal(
      syncly(() => expandStep(v, ok).item()),
      12,
    );
    const syncOom = thrown(() => syncly(() => expandStep(v, huge)));
    const syncClash = thrown(() => syncly(() => expandStep(v, clash)));
    assert.ok(syncOom instanceof OutOfMemoryError, String(syncOom));
    assert.equal(syncOom.bytes, 2 ** 42, syncOom.message);
    assert.ok(!(syncClash instanceof OutOfMemoryError), String(syncClash));
    assert.match(
      syncClash.message,
      /^jit\(expandStep\): ONNX Runtime failed running the compiled program on inputs f32\[2\], i32\[3\]: /,
    );
    alwaysAsync(() => {
      warm(() => expandStep(v, ok));
      for (const [bad, want] of [
        [huge, syncOom],
        [clash, syncClash],
      ] as const) {
        const y = expandStep(v, bad);
        runOf(y);
        const got = thrown(() => y.blockUntilReady());
        assert.equal(got.constructor, want.constructor, got.message);
        assert.equal(got.message, want.message);
        if (want instanceof OutOfMemoryError) {
          const oom = got as OutOfMemoryError;
          assert.deepEqual([oom.program, oom.inputs, oom.bytes], [want.program, want.inputs, want.bytes]);
        }
        assert.equal(
          thrown(() => y.item()),
          got,
          "the same error at every read",
        );
        y.dispose();
      }
      // the program still runs, asynchronously
      const y = expandStep(v, ok);
      runOf(y);
      assert.equal(y.item(), 12);
    });
  },
);
