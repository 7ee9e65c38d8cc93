/** @file The jit call path on concrete arguments: the per-call fast path (no cache key, no retrace), its invalidation, donation, and flat memory over thousands of jitted training steps. */
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import * as jax from "../../../src/index.js";
import { type Array, config, nn, numpy as jnp } from "../../../src/index.js";
import { onnxCacheStats } from "../../../src/backends/onnx/onnx-backend.js";
import { bufferPoolStats } from "../../../src/backends/onnx/buffer-pool.js";
import { ArrayImpl } from "../../../src/core/array-impl.js";

test("repeated jit calls reuse the traced program; new structures, shapes, dtypes and weak types retrace", () => {
  let traces = 0;
  const f = jax.jit((p: { w: Array; b: Array }, x: Array) => {
    traces++;
    return jnp.add(jnp.matmul(x, p.w), p.b);
  });
  const p = { w: jnp.ones([3, 2]), b: jnp.array([1, 2]) };
  const x = jnp.ones([4, 3]);
  const y0 = f(p, x);
  for (let i = 0; i < 20; i++) f(p, x);
  assert.equal(traces, 1);
  assert.deepEqual(f(p, x).tolist(), y0.tolist());
  assert.deepEqual(y0.tolist(), [
    [4, 5],
    [4, 5],
    [4, 5],
    [4, 5],
  ]);
  f(p, jnp.ones([2, 3]));
  assert.equal(traces, 2, "new shape");
  f({ b: p.b, w: p.w }, x);
  assert.equal(traces, 2, "same keys in another order: same structure");
  f({ ...p, extra: null } as unknown as { w: Array; b: Array }, x);
  assert.equal(traces, 3, "new structure");
  f(p, jnp.ones([4, 3], "int32"));
  assert.equal(traces, 4, "new dtype");
  assert.equal(f.cacheSize(), 4);
  f.clearCache();
  f(p, x);
  assert.equal(traces, 5, "cleared");
  // JS numbers are weak scalars: correct results through the general path
  const g = jax.jit((a: Array, s: number) => jnp.multiply(a, s));
  assert.deepEqual(g(jnp.array([1, 2]), 3).tolist(), [3, 6]);
  assert.deepEqual(g(jnp.array([1, 2]), 4).tolist(), [4, 8]);
  // static arguments keep their own cache
  let st = 0;
  const h = jax.jit(
    (a: Array, k: number) => {
      st++;
      return jnp.multiply(a, k);
    },
    { staticArgnums: 1 },
  );
  assert.deepEqual(h(jnp.array([1, 2]), 2).tolist(), [2, 4]);
  assert.deepEqual(h(jnp.array([1, 2]), 2).tolist(), [2, 4]);
  assert.deepEqual(h(jnp.array([1, 2]), 5).tolist(), [5, 10]);
  assert.equal(st, 2);
});

test("a weak-typed argument and a strong one of the same shape are different signatures", () => {
  let traces = 0;
  const f = jax.jit((a: Array) => {
    traces++;
    return jnp.add(a, 1);
  });
  const strong = jnp.array(2.5, { dtype: "float32" }) as Array;
  const weak = ArrayImpl.of([], "float32", new Float32Array([2.5]), true);
  assert.equal(strong.weakType, false);
  assert.equal(weak.weakType, true);
  assert.equal(f(strong).weakType, false);
  f(strong);
  assert.equal(traces, 1);
  assert.equal(f(weak).weakType, true);
  assert.equal(traces, 2);
  f(weak);
  f(strong);
  assert.equal(traces, 2);
});

test("changing enableX64 retraces jitted functions", () => {
  let traces = 0;
  const f = jax.jit((a: Array) => {
    traces++;
    return jnp.add(a, 1);
  });
  const x = jnp.array([1, 2]);
  f(x);
  f(x);
  assert.equal(traces, 1);
  const prev = config.enableX64;
  try {
    config.update("enableX64", !prev);
    f(x);
    assert.equal(traces, 2);
  } finally {
    config.update("enableX64", prev);
  }
});

test("a donated argument is invalid after the call; a jit call under a transformation still works", () => {
  const f = jax.jit((a: Array, b: Array) => jnp.add(jnp.matmul(a, b), 1), { donateArgnums: 0 });
  const a = jnp.ones([3, 3]),
    b = jnp.ones([3, 3]);
  const y = f(a, b);
  assert.deepEqual(y.tolist(), [
    [4, 4, 4],
    [4, 4, 4],
    [4, 4, 4],
  ]);
  assert.throws(() => a.tolist(), /disposed|donated/);
  assert.deepEqual(
    b.tolist(),
    [
      [1, 1, 1],
      [1, 1, 1],
      [1, 1, 1],
    ],
    "not donated",
  );
  // inside grad the jitted call is traced, not executed: nothing is donated
  const g = jax.grad((x: Array) => jnp.sum(f(x, b)));
  const x = jnp.ones([3, 3]);
  assert.deepEqual(g(x).tolist(), [
    [3, 3, 3],
    [3, 3, 3],
    [3, 3, 3],
  ]);
  assert.deepEqual(x.tolist(), [
    [1, 1, 1],
    [1, 1, 1],
    [1, 1, 1],
  ]);
});

test("a donating jit traced into another program donates nothing when that program runs", () => {
  const inner = jax.jit((v: Array) => jnp.multiply(v, 2), { donateArgnums: 0 });
  const x = jnp.array([1, 2, 3]);
  // checkpoint evaluates its jaxpr equation by equation: the recorded inner call must leave x alone
  const y = jax.checkpoint((v: Array) => jnp.add(inner(v), v))(x) as Array;
  assert.deepEqual(y.tolist(), [3, 6, 9]);
  assert.deepEqual(x.tolist(), [1, 2, 3]);
  const z = jax.jit((v: Array) => jnp.add(inner(v), v))(x);
  assert.deepEqual(z.tolist(), [3, 6, 9]);
  assert.deepEqual(x.tolist(), [1, 2, 3]);
  // dispatched directly, the call donates its argument
  const w = jnp.array([1, 2, 3]);
  assert.deepEqual(inner(w).tolist(), [2, 4, 6]);
  assert.throws(() => w.tolist(), /disposed|donated/);
});

test("memory stays flat over 10,000 jitted MLP training steps (donated parameters, GC'd losses)", async () => {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  type P = { w1: Array; b1: Array; w2: Array; b2: Array };
  const loss = (p: P, x: Array, y: Array) => {
    const h = nn.relu(jnp.add(jnp.matmul(x, p.w1), p.b1));
    const logits = jnp.add(jnp.matmul(h, p.w2), p.b2);
    return jnp.multiply(jnp.sum(jnp.multiply(nn.logSoftmax(logits, -1), y)), -1 / 32);
  };
  const step = jax.jit(
    (p: P, x: Array, y: Array): [Array, P] => {
      const [l, g] = jax.valueAndGrad(loss)(p, x, y) as [Array, P];
      const upd = (w: Array, gw: Array) => jnp.subtract(w, jnp.multiply(gw, 0.05));
      return [l, { w1: upd(p.w1, g.w1), b1: upd(p.b1, g.b1), w2: upd(p.w2, g.w2), b2: upd(p.b2, g.b2) }];
    },
    { donateArgnums: 0 },
  );
  const r = (shape: number[], seed: number) =>
    jnp.reshape(
      jnp.array(
        Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i * 12.9898 + seed) * 0.2),
      ),
      shape,
    );
  let p: P = { w1: r([256, 64], 1), b1: jnp.zeros([64]), w2: r([64, 10], 2), b2: jnp.zeros([10]) };
  const x = r([32, 256], 3);
  const y = jnp.reshape(
    jnp.array(Float32Array.from({ length: 320 }, (_, i) => (i % 10 === (Math.floor(i / 10) * 3) % 10 ? 1 : 0))),
    [32, 10],
  );
  const run = (n: number): number => {
    let last = 0;
    for (let i = 0; i < n; i++) {
      const [l, q] = step(p, x, y);
      p = q;
      if (i === n - 1) last = l.item() as number;
    }
    return last;
  };
  // ArrayBuffer storage is freed by a background sweeper after a collection: settle, then take the lowest reading
  const settled = async () => {
    let best = { heap: Infinity, external: Infinity, rss: Infinity };
    for (let k = 0; k < 3; k++) {
      gc();
      await new Promise((res) => setTimeout(res, 20));
      const m = process.memoryUsage();
      best = {
        heap: Math.min(best.heap, m.heapUsed),
        external: Math.min(best.external, m.external),
        rss: Math.min(best.rss, m.rss),
      };
    }
    return best;
  };
  const first = run(200);
  const m0 = await settled();
  const s0 = onnxCacheStats().sessionsAlive;
  const l1 = run(9800);
  const m1 = await settled();
  assert.ok(l1 < first, `the loss decreases (${first} -> ${l1})`);
  assert.equal(onnxCacheStats().sessionsAlive, s0, "no new sessions");
  assert.equal(step.cacheSize(), 1);
  const mb = (b: number) => (b / 2 ** 20).toFixed(1);
  assert.ok(m1.heap - m0.heap < 2 * 2 ** 20, `the JS heap grew by ${mb(m1.heap - m0.heap)} MiB over 9,800 steps`);
  assert.ok(
    m1.external - m0.external < 16 * 2 ** 20,
    `external memory grew by ${mb(m1.external - m0.external)} MiB over 9,800 steps`,
  );
  assert.ok(m1.rss - m0.rss < 64 * 2 ** 20, `RSS grew by ${mb(m1.rss - m0.rss)} MiB over 9,800 steps`);
  assert.ok(bufferPoolStats().pooledBytes <= 256 * 2 ** 20);
});
