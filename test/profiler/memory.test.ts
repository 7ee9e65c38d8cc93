/** @file profiler.deviceMemoryProfile (live arrays by device, shape, dtype, sharding, site) and per-device bytesLimit out-of-memory errors. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import {
  type Array,
  OutOfMemoryError,
  devicePut,
  lax,
  makeMesh,
  numpy as jnp,
  profiler,
  shardMap,
  sharding,
} from "../../src/index.js";
import {
  DeviceBuffer,
  DeviceOutOfMemoryError,
  deviceRuntimeUnavailable,
  runtimeDevice,
} from "../../src/runtime/index.js";
const { P, NamedSharding } = sharding;

test("deviceMemoryProfile lists live arrays by device with shape, dtype, sharding and the creating line; disposed ones leave", () => {
  config.update("memoryProfile", true);
  try {
    const a = jnp.ones([100, 10]); // MARK-A
    const mesh = makeMesh([4], ["x"]);
    const b = devicePut(jnp.zeros([8, 4], { dtype: "int32" }), NamedSharding(mesh, P("x"))); // MARK-B
    const prof = profiler.deviceMemoryProfile();
    assert.equal(prof.tracking, true);
    const d0 = prof.devices.find((d) => d.device === 0)!;
    const ra = d0.arrays.find((r) => r.dtype === "float32" && r.shape.join() === "100,10");
    assert.ok(ra, prof.toString());
    assert.equal(ra!.bytes, 4000);
    assert.match(ra!.site!, /memory\.test\.js:\d+/);
    // b: one [2, 4] int32 shard (32 bytes) on each of the 4 devices, with its sharding and global shape
    for (let id = 0; id < 4; id++) {
      const d = prof.devices.find((x) => x.device === id)!;
      const rb = d.arrays.find((r) => r.sharding !== undefined && r.dtype === "int32");
      assert.ok(rb, `device ${id}: ${prof.toString()}`);
      assert.deepEqual([rb!.shape, rb!.globalShape, rb!.bytes], [[2, 4], [8, 4], 32]);
      assert.match(rb!.sharding!, /x/);
    }
    // the table names the largest array first on device 0 and its site
    const text = prof.toString();
    assert.match(text, /Device 0: .*\n\s+4000 B {2}float32\[100,10\] {2}at .*memory\.test\.js/);
    a.dispose();
    const again = profiler.deviceMemoryProfile().devices.find((d) => d.device === 0)!;
    assert.ok(
      !again.arrays.some((r) => r.shape.join() === "100,10" && r.dtype === "float32"),
      "a disposed array is not live",
    );
    assert.ok(b.shape.length === 2);
  } finally {
    config.update("memoryProfile", false);
  }
  assert.equal(profiler.deviceMemoryProfile().tracking, false);
});

test("bytesLimit: an allocation past it raises naming the device, the request and the largest buffers; nothing is lost; free and retry", () => {
  const dev = runtimeDevice(3);
  const before = dev.memoryStats().bytesInUse;
  dev.setBytesLimit(before + 4096);
  config.update("memoryProfile", true);
  try {
    assert.equal(dev.memoryStats().bytesLimit, before + 4096);
    const big = DeviceBuffer.copyOf(
      dev,
      "float32",
      [512],
      Float32Array.from({ length: 512 }, (_, i) => i),
    ); // 2048 B
    const small = DeviceBuffer.alloc(dev, "int32", [256]); // 1024 B
    let err: unknown;
    try {
      DeviceBuffer.alloc(dev, "float64", [256]);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof DeviceOutOfMemoryError && err instanceof OutOfMemoryError, String(err));
    const e = err as DeviceOutOfMemoryError;
    assert.equal(e.device, 3);
    assert.equal(e.bytes, 2048);
    assert.equal(e.bytesInUse, before + 3072);
    assert.deepEqual(
      e.largest.slice(0, 2).map((b) => `${b.dtype}[${b.shape}] ${b.bytes}`),
      ["float32[512] 2048", "int32[256] 1024"],
    );
    assert.match(
      e.message,
      /device 3: out of memory: allocating 2048 bytes .*float64\[256\] on device 3, which holds \d+ of its bytesLimit \d+ bytes; largest live buffers on device 3: float32\[512\] 2048 B \(created at .*memory\.test\.js:\d+/,
    );
    // nothing was allocated by the failed request, and what was computed is intact
    assert.equal(dev.memoryStats().bytesInUse, before + 3072);
    assert.equal(big.data[511], 511);
    big.free();
    const retry = DeviceBuffer.alloc(dev, "float64", [256]);
    assert.equal(dev.memoryStats().bytesInUse, before + 3072);
    retry.free();
    small.free();
    assert.throws(
      () => dev.setBytesLimit(-1),
      /setBytesLimit: expected a positive integer number of bytes or null, got -1/,
    );
  } finally {
    dev.setBytesLimit(null);
    config.update("memoryProfile", false);
  }
  assert.equal(dev.memoryStats().bytesLimit, undefined);
});

test(
  "a shardMap launch past config deviceBytesLimit fails before running, frees its staged blocks, and succeeds after raising the limit",
  { skip: deviceRuntimeUnavailable() ?? false },
  () => {
    const mesh = makeMesh([2], ["x"]);
    const x = jnp.reshape(jnp.arange(4096, { dtype: "float32" }), [2048, 2]); // blocks of 1024 x 2 float32 = 8 KiB
    const f = shardMap((b: Array) => lax.psum(jnp.multiply(b, 2), "x"), { mesh, inSpecs: P("x"), outSpecs: P() });
    const devs = [runtimeDevice(0), runtimeDevice(1)];
    const before = devs.map((d) => d.memoryStats().bytesInUse);
    config.update("spmdRuntime", "devices");
    try {
      // the input block fits, the output block does not
      config.update("deviceBytesLimit", Math.max(...before) + 12000);
      assert.throws(
        () => f(x),
        (e: unknown) =>
          e instanceof DeviceOutOfMemoryError &&
          /out of memory: allocating 8192 bytes/.test(e.message) &&
          /largest live buffers on device \d: float32\[1024,2\] 8192 B/.test(e.message),
      );
      devs.forEach((d, i) =>
        assert.equal(d.memoryStats().bytesInUse, before[i], `device ${d.id}: the staged input blocks were freed`),
      );
      config.update("deviceBytesLimit", 0);
      const y = f(x);
      const xs = x.tolist() as number[][];
      assert.deepEqual((y.tolist() as number[][])[5], [2 * (xs[5][0] + xs[1029][0]), 2 * (xs[5][1] + xs[1029][1])]);
    } finally {
      config.update("deviceBytesLimit", 0);
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);
