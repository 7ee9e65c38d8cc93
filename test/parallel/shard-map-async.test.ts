/** @file shardMap with async dispatch (spmdRuntime "devices"): results as the emulation, errors at block time, overlap of host and devices, no leak over 2,000 steps. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME, onDevices, writerOf } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, devicePut, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import {
  deviceRuntimeUnavailable,
  failNextLaunch,
  launchesInFlight,
  runtimeDevice,
  synchronize,
} from "../../src/runtime/index.js";
import { sameOnDevices, values } from "./device-compare.js";
const { NamedSharding, P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;

test(
  "async shardMap: calls return pending arrays at once; chained results equal the emulation on 1, 2, 4 and 8 devices",
  { skip },
  () => {
    for (const n of [1, 2, 4, 8]) {
      const mesh = makeMesh([n], ["x"]);
      const f = shardMap((b: Array) => jnp.add(jnp.multiply(b, 2), lax.psum(jnp.sum(b), "x")), {
        mesh,
        inSpecs: P("x"),
        outSpecs: P("x"),
      });
      const x = values([2 * n, 3], "float32");
      sameOnDevices(`three chained calls on ${n} device(s)`, mesh.deviceIds, () => f(f(f(x))));
      onDevices(() => {
        synchronize();
        const y = f(f(x));
        assert.ok(writerOf(y), "pending when returned");
        assert.equal(launchesInFlight(), 2, "both launches were dispatched without a wait");
        y.blockUntilReady();
        assert.equal(writerOf(y), null, "settled by blockUntilReady");
      });
    }
  },
);

test(
  "async shardMap: a device error surfaces at the first wait (blockUntilReady, tolist, await data()), names device and program; the next call works",
  { skip },
  async () => {
    const mesh = makeMesh([4], ["x"]);
    const f = shardMap((b: Array) => jnp.multiply(b, 3), { mesh, inSpecs: P("x"), outSpecs: P("x") });
    const x = values([8, 2], "float32");
    config.update("spmdRuntime", "devices");
    try {
      f(x).blockUntilReady();
      failNextLaunch(2);
      const bad = f(x); // no error yet: the launch is only enqueued
      const dependent = f(bad);
      assert.throws(
        () => bad.blockUntilReady(),
        /program shard_map failed on devices \[0, 1, 2, 3\]: device 2 \(rank 2\): test hook/,
      );
      assert.throws(() => bad.tolist(), /device 2 \(rank 2\)/);
      await assert.rejects(bad.data(), /device 2 \(rank 2\)/);
      assert.throws(() => dependent.dataSync(), /consumed an output of a failed launch: .*device 2/);
      const good = f(x);
      assert.deepEqual(await good.data(), Float32Array.from(jnp.multiply(x, 3).dataSync() as Float32Array));
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);

test(
  "async shardMap: the host returns from call k+1's dispatch before call k's device run ends (the runtime's timestamps)",
  { skip },
  () => {
    const mesh = makeMesh([2], ["x"]);
    // enough device work per call (a chain of 256x256 matmuls, tens of ms) that dispatch (well under 1 ms of host
    // work once warm) ends first
    const f = shardMap((b: Array) => lax.foriLoop(0, 40, (_i: Array, m: Array) => jnp.tanh(jnp.matmul(m, m)), b), {
      mesh,
      inSpecs: P(null, "x"),
      outSpecs: P(null, "x"),
    });
    const x = jnp.multiply(values([256, 512], "float32"), 0.01);
    onDevices(() => {
      const xs = devicePut(x, NamedSharding(mesh, P(null, "x")));
      for (let i = 0; i < 3; i++) f(xs).dispose(); // compiled, and the host path warm
      synchronize();
      const y1 = f(xs),
        y2 = f(xs);
      const w1 = writerOf(y1)!,
        w2 = writerOf(y2)!;
      assert.ok(w1 && w2, "both pending");
      synchronize();
      const end1 = Math.max(...w1.timeline.map((t) => t.end));
      assert.ok(
        w2.dispatchedAt < end1,
        `call 2 was dispatched (${w2.dispatchedAt.toFixed(0)} us) before call 1 finished on the devices (${end1.toFixed(0)} us)`,
      );
      // and the devices ran call 2 after call 1 (each device's stream is FIFO)
      w1.timeline.forEach((t, r) =>
        assert.ok(w2.timeline[r].start >= t.end, `device ${t.device}: call 2 starts after call 1 ends`),
      );
      for (const a of [xs, y1, y2]) a.dispose();
    });
  },
);

test(
  "async shardMap: disposing arrays whose launch is in flight frees their memory only once it settled; 2,000 chained steps keep bytesInUse flat",
  { skip },
  () => {
    const mesh = makeMesh([2], ["x"]);
    const ids = mesh.deviceIds;
    const inUse = () => ids.map((id) => runtimeDevice(id).memoryStats().bytesInUse);
    const step = shardMap((w: Array) => jnp.subtract(w, jnp.multiply(0.01, jnp.subtract(w, lax.pmean(w, "x")))), {
      mesh,
      inSpecs: P("x"),
      outSpecs: P("x"),
    });
    onDevices(() => {
      synchronize();
      const base = inUse();
      const w0 = devicePut(values([64, 16], "float32"), NamedSharding(mesh, P("x")));
      const y = step(w0);
      w0.dispose();
      y.dispose();
      assert.equal(launchesInFlight(), 1);
      inUse().forEach((b, i) =>
        assert.equal(b - base[i], 2 * 32 * 16 * 4, `device ${ids[i]}: still held by the launch in flight`),
      );
      synchronize();
      assert.deepEqual(inUse(), base, "released when it settled");
      let w = devicePut(values([64, 16], "float32"), NamedSharding(mesh, P("x")));
      const run = (k: number) => {
        for (let i = 0; i < k; i++) {
          const next = step(w);
          w.dispose();
          w = next;
        }
      };
      run(20);
      synchronize();
      const mid = inUse();
      run(2000);
      synchronize();
      assert.deepEqual(inUse(), mid, "flat over 2,000 steps");
      assert.equal(w.shape.join(), "64,16");
      assert.ok(Number.isFinite(w.dataSync()[0] as number));
      w.dispose();
      assert.deepEqual(inUse(), base);
    });
  },
);
