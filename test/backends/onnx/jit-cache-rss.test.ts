/** @file clearCache() hands the memory of compiled programs (ONNX Runtime sessions) back to the system: RSS returns near its start (own file: it measures the process's RSS). */
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import * as jax from "../../../src/index.js";
import { type Array, numpy as jnp } from "../../../src/index.js";
import { onnxCacheStats } from "../../../src/backends/onnx/onnx-backend.js";
import { runnerKind } from "../../../src/backends/onnx/ort-runtime.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

/** RSS once garbage is collected and finalizers and the background sweeper have run (lowest of a few readings). */
async function settledRss(): Promise<number> {
  let best = Infinity;
  for (let k = 0; k < 4; k++) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
    best = Math.min(best, process.memoryUsage().rss);
  }
  return best;
}

test(
  "f.clearCache() after 200 distinct shapes releases the sessions and RSS retains under half of the growth",
  { skip: runnerKind().kind !== "native" && "needs the native runner (its trimMemory hands freed heap pages back)" },
  async () => {
    const f = jax.jit(function gram(x: Array) {
      return jnp.sum(jnp.tanh(jnp.matmul(x, jnp.transpose(x))));
    });
    const N = 200;
    const xs: Array[] = [];
    for (let i = 1; i <= N; i++) xs.push(jnp.full([(i % 7) + 1, i], 0.01));
    // warm-up round (other shapes): V8 optimizes the tracer and compiler code, ONNX Runtime loads its kernels'
    // code; that memory stays, whatever the caches hold
    for (let i = 1; i <= 60; i++) f(jnp.full([9, i], 0.5));
    f.clearCache();
    jax.clearCaches(); // the eager sessions that built the inputs
    const r0 = await settledRss();
    const s0 = onnxCacheStats().sessionsAlive;
    for (let i = 0; i < N; i++) {
      const n = ((i + 1) % 7) + 1,
        m = i + 1;
      const got = f(xs[i]).item() as number;
      assert.ok(Math.abs(got - n * n * Math.tanh(m * 1e-4)) < 1e-4 * n * n, `shape [${n}, ${m}]`);
    }
    assert.equal(f.cacheSize(), N);
    assert.equal(onnxCacheStats().sessionsAlive - s0, N, "one session per shape");
    const r1 = await settledRss();
    f.clearCache();
    assert.equal(onnxCacheStats().sessionsAlive, s0, "clearCache released the sessions at once");
    const r2 = await settledRss();
    const mib = (b: number) => (b / 2 ** 20).toFixed(1);
    assert.ok(r1 - r0 > 8 * 2 ** 20, `200 compiled programs should take memory (grew ${mib(r1 - r0)} MiB)`);
    // (the allocator keeps some freed pages: 10-40% of the growth in fresh-clone CI runs; a leak of the sessions
    // would keep all of it)
    assert.ok(
      r2 - r0 < 0.5 * (r1 - r0),
      `RSS ${mib(r0)} -> ${mib(r1)} -> ${mib(r2)} MiB after clearCache: retained ${(((r2 - r0) / (r1 - r0)) * 100).toFixed(0)}% of the growth`,
    );
  },
);
