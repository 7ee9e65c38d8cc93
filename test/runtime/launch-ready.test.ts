/** @file Non-blocking waits on device launches: `await x.data()` / `await x.ready()` let the event loop run while devices work, reject with the launch's error, make one completion callback per launch and leak none. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, devicePut, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import {
  delayNextLaunch,
  deviceRuntimeUnavailable,
  failNextLaunch,
  launchesInFlight,
  liveCompletionCallbacks,
  runtimeDevice,
  synchronize,
} from "../../src/runtime/index.js";
import { onDevicesAsync, writerOf } from "../helpers/spmd-runtime.js";
import { values } from "../parallel/device-compare.js";
import { countTurns } from "../helpers/event-loop.js";
const { NamedSharding, P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;

/** Lets the event loop run until liveCompletionCallbacks() is back to `base` (the finalizers run on later turns); bounded. */
async function callbacksBackTo(base: number): Promise<number> {
  for (let i = 0; i < 1000 && liveCompletionCallbacks() !== base; i++) await new Promise((r) => setImmediate(r));
  return liveCompletionCallbacks();
}

test(
  "await x.data() on a pending shardMap output (a while loop of matmuls on 2 devices) lets the event loop run; values equal dataSync's",
  { skip },
  async () => {
    const mesh = makeMesh([2], ["x"]);
    // tens of ms of device work per call (200 matmuls of 128x128 per device): pending for many event-loop turns
    const f = shardMap((b: Array) => lax.foriLoop(0, 200, (_i: Array, m: Array) => jnp.tanh(jnp.matmul(m, m)), b), {
      mesh,
      inSpecs: P(null, "x"),
      outSpecs: P(null, "x"),
    });
    const x = jnp.multiply(values([128, 256], "float32"), 0.01);
    await onDevicesAsync(async () => {
      const xs = devicePut(x, NamedSharding(mesh, P(null, "x")));
      f(xs).dispose(); // compiled
      synchronize();
      const base = await callbacksBackTo(liveCompletionCallbacks());
      const z = f(xs);
      const stopSync = countTurns();
      const want = z.dataSync();
      assert.equal(stopSync(), 0, "dataSync blocks the thread: no turn runs");
      // a host descheduled for the whole run (a loaded machine) finds the launch finished: then no callback is made and
      // the await resolves at once; try again until one await found the devices still working
      let armed = 0;
      for (let attempt = 0; attempt < 5 && !armed; attempt++) {
        const y = f(xs);
        assert.ok(writerOf(y), "pending when returned");
        const stop = countTurns();
        const pending = y.data();
        if (liveCompletionCallbacks() > base) armed++;
        const got = await pending;
        const turns = stop();
        if (armed) assert.ok(turns > 0, `the event loop ran ${turns} turns while the devices worked`);
        assert.equal(writerOf(y), null, "settled once awaited");
        assert.deepEqual(got, want);
        y.dispose();
        await callbacksBackTo(base);
      }
      assert.equal(armed, 1, "an await found the launch pending and made a completion callback");
      for (const a of [xs, z]) a.dispose();
    });
  },
);

test(
  "await x.ready() / x.data() wait for a delayed launch on 2 and 8 devices, every shard too; arrays with nothing pending resolve without a turn",
  { skip },
  async () => {
    for (const n of [2, 8]) {
      const mesh = makeMesh([n], ["x"]);
      const f = shardMap((b: Array) => jnp.add(jnp.multiply(b, 2), lax.psum(jnp.sum(b), "x")), {
        mesh,
        inSpecs: P("x"),
        outSpecs: P("x"),
      });
      const x = values([2 * n, 3], "float32");
      await onDevicesAsync(async () => {
        const want = f(x).dataSync();
        synchronize();
        delayNextLaunch(100);
        const y = f(x);
        const stop = countTurns();
        assert.equal(await y.ready(), y, "ready() resolves to the array itself");
        assert.ok(stop() > 0, `${n} devices: turns ran while the launch slept`);
        assert.deepEqual(await y.data(), want);
        // every addressable shard of a pending array waits for its own device's buffer
        delayNextLaunch(50);
        const y2 = f(x);
        const shards = y2.addressableShards as { data: Array }[];
        const blocks = await Promise.all(shards.map((s) => s.data.data()));
        const wantShards = (y.addressableShards as { data: Array }[]).map((s) => s.data.dataSync());
        assert.deepEqual(blocks, wantShards);
        // nothing pending (a settled sharded array, a host array): microtasks only, no callback made
        const live = liveCompletionCallbacks();
        const h = jnp.arange(6);
        const stop0 = countTurns();
        assert.deepEqual(await y.data(), want);
        assert.deepEqual(await h.data(), Int32Array.from([0, 1, 2, 3, 4, 5]));
        assert.equal(await h.ready(), h);
        assert.equal(stop0(), 0, "resolved before any event-loop turn");
        assert.equal(liveCompletionCallbacks(), live, "no completion callback for settled work");
        for (const a of [y, y2]) a.dispose();
      });
    }
  },
);

test(
  "a failing launch rejects await data()/ready() with the sync path's device- and program-naming error; dependents too; the next call works",
  { skip },
  async () => {
    const mesh = makeMesh([2], ["x"]);
    const f = shardMap((b: Array) => jnp.multiply(b, 3), { mesh, inSpecs: P("x"), outSpecs: P("x") });
    const x = values([4, 2], "float32");
    await onDevicesAsync(async () => {
      f(x).blockUntilReady();
      delayNextLaunch(50);
      failNextLaunch(1);
      const bad = f(x);
      const dependent = f(bad);
      const stop = countTurns();
      const err = await bad.data().then(
        () => null,
        (e: unknown) => e as Error,
      );
      assert.ok(stop() > 0, "the rejection came after event-loop turns");
      assert.ok(err, "rejected");
      assert.match(err.message, /program shard_map failed on devices \[0, 1\]: device 1 \(rank 1\): test hook/);
      assert.throws(
        () => bad.blockUntilReady(),
        (e: unknown) => e === err,
        "the sync path throws the same error",
      );
      await assert.rejects(bad.ready(), (e: unknown) => e === err);
      await assert.rejects(dependent.data(), /consumed an output of a failed launch: .*device 1 \(rank 1\)/);
      const good = f(x);
      assert.deepEqual(await good.data(), jnp.multiply(x, 3).dataSync());
      for (const a of [bad, dependent, good]) a.dispose();
    });
  },
);

test(
  "many concurrent awaits on an array and on the arrays of the same launch share one completion callback and each resolve once",
  { skip },
  async () => {
    for (const n of [2, 8]) {
      const mesh = makeMesh([n], ["x"]);
      const f = shardMap((b: Array) => [jnp.add(b, 1), jnp.multiply(b, 2)], {
        mesh,
        inSpecs: P("x"),
        outSpecs: [P("x"), P("x")],
      });
      const x = values([n, 4], "float32");
      await onDevicesAsync(async () => {
        const [wa, wb] = (f(x) as Array[]).map((a) => a.dataSync());
        synchronize();
        const base = await callbacksBackTo(liveCompletionCallbacks());
        delayNextLaunch(100);
        const [a, b] = f(x) as Array[];
        assert.equal(writerOf(a), writerOf(b), "one launch writes both");
        let resolved = 0;
        const waits: Promise<unknown>[] = [];
        for (let i = 0; i < 10; i++)
          for (const p of [a.data(), b.data(), a.ready(), b.ready()])
            waits.push(
              p.then((v) => {
                resolved++;
                return v;
              }),
            );
        assert.equal(liveCompletionCallbacks(), base + 1, `${n} devices: one callback for 40 awaits of one launch`);
        const got = await Promise.all(waits);
        assert.equal(resolved, 40, "each await resolved exactly once");
        for (let i = 0; i < 10; i++) {
          assert.deepEqual(got[4 * i], wa);
          assert.deepEqual(got[4 * i + 1], wb);
          assert.equal(got[4 * i + 2], a);
          assert.equal(got[4 * i + 3], b);
        }
        assert.equal(await callbacksBackTo(base), base, "the callback was released");
        assert.throws(
          () => delayNextLaunch(-1),
          /delayNextLaunch: expected an integer number of milliseconds in \[0, 60000\], got -1/,
        );
        a.dispose();
        b.dispose();
      });
    }
  },
);

test(
  "2,000 awaited launches leak nothing: completion callbacks back to baseline, no launch in flight, bytesInUse flat",
  { skip },
  async () => {
    const mesh = makeMesh([2], ["x"]);
    const ids = mesh.deviceIds;
    const inUse = () => ids.map((id) => runtimeDevice(id).memoryStats().bytesInUse);
    const step = shardMap((w: Array) => jnp.subtract(w, jnp.multiply(0.01, jnp.subtract(w, lax.pmean(w, "x")))), {
      mesh,
      inSpecs: P("x"),
      outSpecs: P("x"),
    });
    await onDevicesAsync(async () => {
      synchronize();
      const base = await callbacksBackTo(liveCompletionCallbacks());
      const bytes0 = inUse();
      const x0 = values([16, 8], "float32");
      const w0 = devicePut(x0, NamedSharding(mesh, P("x")));
      let w = step(w0);
      w0.dispose();
      // each step shrinks the deviation from the two blocks' elementwise mean by 0.99 and keeps the mean
      const h = x0.dataSync() as Float32Array;
      const want = Float64Array.from(h, (v, i) => {
        const m = (h[i % 64] + h[64 + (i % 64)]) / 2;
        return m + 0.99 ** 2001 * (v - m);
      });
      let armed = 0;
      for (let i = 0; i < 2000; i++) {
        delayNextLaunch(1); // pending when awaited: the callback path, not the already-finished one
        const next = step(w);
        w.dispose();
        w = next;
        const r = w.ready();
        if (liveCompletionCallbacks() > base) armed++;
        await r;
      }
      assert.ok(armed > 100, `most awaits made a completion callback (${armed} of 2000)`);
      const got = (await w.data()) as Float32Array;
      want.forEach((v, i) =>
        assert.ok(Math.abs(got[i] - v) < 1e-4 * (1 + Math.abs(v)), `element ${i}: ${got[i]} vs ${v}`),
      );
      assert.equal(launchesInFlight(), 0);
      assert.equal(await callbacksBackTo(base), base, "every completion callback was released");
      w.dispose();
      // nothing of the 2,000 steps is left: usage is at most what it was before them (an earlier test's array still
      // alive then may have been collected meanwhile, so equality would be a race with the garbage collector)
      const after = inUse();
      after.forEach((b, i) =>
        assert.ok(b <= bytes0[i], `every buffer went back: device ${ids[i]} holds ${b} bytes, ${bytes0[i]} before`),
      );
    });
  },
);
