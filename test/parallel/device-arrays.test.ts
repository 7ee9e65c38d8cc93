/** @file Arrays resident on devices (spmdRuntime "devices"): real shards, memoryStats, counted resharding, shardMap chains without host copies. */
import { test } from "node:test";
import { onDevices } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import {
  type Array,
  devicePut,
  devicePutReplicated,
  devicePutSharded,
  devices,
  lax,
  makeArrayFromCallback,
  makeMesh,
  numpy as jnp,
  pmap,
  shardMap,
  sharding,
} from "../../src/index.js";
import { ArrayImpl } from "../../src/core/array-impl.js";
import { Mesh } from "../../src/parallel/mesh.js";
import { sameSharding, shardedStorage } from "../../src/parallel/device-arrays.js";
import {
  deviceRuntimeUnavailable,
  runtimeDevice,
  synchronize,
  transferStats,
  type TransferStats,
} from "../../src/runtime/index.js";
import { loadFixture } from "../helpers/fixtures.js";
import { values } from "./device-compare.js";
const { NamedSharding, P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;
interface Shard {
  device: { id: number };
  index: [number, number][];
  replicaId: number;
  data: Array;
}
interface Case {
  dims: number[];
  names: string[];
  spec: string[][];
  shape: number[];
  global: unknown;
  blocks: { index: [number, number][]; data: unknown }[];
}

const inUse = (ids: readonly number[]) => ids.map((id) => runtimeDevice(id).memoryStats().bytesInUse);
const delta = (a: TransferStats, b: TransferStats) => ({
  blocksCopied: b.blocksCopied - a.blocksCopied,
  bytesCopied: b.bytesCopied - a.bytesCopied,
  blocksMoved: b.blocksMoved - a.blocksMoved,
  blocksReused: b.blocksReused - a.blocksReused,
});
const specOf = (c: Case) => P(...c.spec.map((e) => (e.length === 0 ? null : e.length === 1 ? e[0] : e)));

test(
  "devicePut holds real shards: each device's block equals NumPy's slice of the global value (1 to 8 devices)",
  { skip },
  () => {
    onDevices(() => {
      for (const c of loadFixture<Case[]>("device-arrays.json")) {
        const what = `mesh ${c.dims} ${specOf(c)} of (${c.shape})`;
        const mesh = makeMesh(c.dims, c.names);
        const g = jnp.array(c.global as number[], { dtype: "float32" });
        const x = devicePut(g, NamedSharding(mesh, specOf(c)));
        const st = shardedStorage(x);
        assert.ok(st, `${what}: resident`);
        const shards = x.addressableShards as Shard[];
        assert.equal(shards.length, c.blocks.length);
        shards.forEach((s, k) => {
          assert.deepEqual(s.index, c.blocks[k].index, `${what}: index of shard ${k}`);
          assert.deepEqual(s.data.tolist(), c.blocks[k].data, `${what}: data of shard ${k}`);
          assert.equal(s.device.id, mesh.deviceIds[k]);
          assert.equal(
            (s.data as ArrayImpl).device.id,
            mesh.deviceIds[k],
            `${what}: the shard array lives on its device`,
          );
          // the shard array reads that device's buffer itself, not a slice made on read
          assert.equal((s.data as ArrayImpl).buffer, st!.buffers[k].data, `${what}: shard ${k} is the device buffer`);
          assert.equal(st!.buffers[k].device.id, mesh.deviceIds[k]);
        });
        assert.deepEqual(x.tolist(), c.global, `${what}: the assembled global value`);
        assert.equal(String(x), String(g), `${what}: printing assembles the global value`);
        assert.equal(x.blockUntilReady(), x);
        x.dispose();
        assert.throws(() => x.tolist(), /disposed/);
        assert.throws(() => shards[0].data.tolist(), /disposed/, "a shard of a disposed array");
      }
      const s = devicePut(jnp.array([2.5], { dtype: "float32" }), NamedSharding(makeMesh([2], ["x"]), P()));
      assert.equal(s.item(), 2.5, "item() of a replicated resident array");
      s.dispose();
    });
  },
);

test(
  "memoryStats: a 64 MiB float32 array sharded 4 ways adds 16 MiB per device, replicated 64 MiB per device; dispose gives it back",
  { skip },
  () => {
    onDevices(() => {
      const mesh = makeMesh([4], ["x"]);
      const ids = mesh.deviceIds;
      const g = jnp.zeros([4096, 4096], { dtype: "float32" }); // 64 MiB
      const MiB = 1 << 20;
      const base = inUse(ids);
      const t0 = transferStats();
      const sh = devicePut(g, NamedSharding(mesh, P("x")));
      inUse(ids).forEach((b, i) => assert.equal(b - base[i], 16 * MiB, `device ${ids[i]}: one 16 MiB block`));
      assert.deepEqual(delta(t0, transferStats()), {
        blocksCopied: 4,
        bytesCopied: 64 * MiB,
        blocksMoved: 0,
        blocksReused: 0,
      });
      const rep = devicePut(g, NamedSharding(mesh, P()));
      inUse(ids).forEach((b, i) => assert.equal(b - base[i], 80 * MiB, `device ${ids[i]}: plus a whole 64 MiB copy`));
      const peak = ids.map((id) => runtimeDevice(id).memoryStats().peakBytesInUse);
      peak.forEach((p, i) => assert.ok(p >= base[i] + 80 * MiB));
      sh.dispose();
      inUse(ids).forEach((b, i) =>
        assert.equal(b - base[i], 64 * MiB, `device ${ids[i]}: the sharded blocks are freed`),
      );
      rep.dispose();
      assert.deepEqual(inUse(ids), base, "everything given back");
      for (const id of ids) runtimeDevice(id).trimPool();
    });
  },
);

test(
  "devicePut to the sharding an array has is free; resharding copies only the blocks that are not on their device (counted)",
  { skip },
  () => {
    onDevices(() => {
      const ds = devices();
      const mesh = new Mesh([ds[0], ds[1], ds[2], ds[3]], ["x"]);
      const x = devicePut(values([8, 4], "float32"), NamedSharding(mesh, P("x")));
      const want = x.tolist();
      let t = transferStats();
      assert.equal(devicePut(x, NamedSharding(mesh, P("x"))), x, "same sharding: the same array");
      assert.equal(devicePut(x, NamedSharding(mesh, P("x", null))), x, "a trailing null names the same sharding");
      assert.deepEqual(delta(t, transferStats()), { blocksCopied: 0, bytesCopied: 0, blocksMoved: 0, blocksReused: 0 });
      // devices 2 and 3 swap blocks: blocks 0 and 1 stay, 2 and 3 move
      t = transferStats();
      const swapped = devicePut(x, NamedSharding(new Mesh([ds[0], ds[1], ds[3], ds[2]], ["x"]), P("x")));
      assert.deepEqual(delta(t, transferStats()), {
        blocksCopied: 2,
        bytesCopied: 2 * 2 * 4 * 4,
        blocksMoved: 2,
        blocksReused: 2,
      });
      assert.deepEqual(swapped.tolist(), want);
      const sx = shardedStorage(x)!,
        ss = shardedStorage(swapped)!;
      assert.equal(ss.buffers[0], sx.buffers[0], "block 0 is shared, not copied");
      // the shared blocks outlive the array they came from
      x.dispose();
      assert.deepEqual(swapped.tolist(), want);
      // replicated -> sharded: each device slices its block out of its own copy (no move between devices)
      const r = devicePut(values([8, 4], "float32"), NamedSharding(mesh, P()));
      t = transferStats();
      const s2 = devicePut(r, NamedSharding(mesh, P(null, "x")));
      assert.deepEqual(delta(t, transferStats()), {
        blocksCopied: 4,
        bytesCopied: 8 * 4 * 4,
        blocksMoved: 0,
        blocksReused: 0,
      });
      assert.deepEqual(s2.tolist(), want);
      // sharded over a 2x2 mesh's x -> over x and y: each new block lies in the old block of the same device
      const m22 = makeMesh([2, 2], ["x", "y"]);
      const a = devicePut(values([8, 4], "float32"), NamedSharding(m22, P("x")));
      t = transferStats();
      const b = devicePut(a, NamedSharding(m22, P("x", "y")));
      assert.deepEqual(delta(t, transferStats()), {
        blocksCopied: 4,
        bytesCopied: 4 * (4 * 2 * 4),
        blocksMoved: 0,
        blocksReused: 0,
      });
      assert.deepEqual(b.tolist(), want);
      for (const y of [swapped, r, s2, a, b]) y.dispose();
    });
  },
);

test("devicePutSharded, devicePutReplicated and makeArrayFromCallback produce resident shards", { skip }, () => {
  onDevices(() => {
    const ds = devices().slice(0, 4);
    const parts = ds.map((_, i) => jnp.full([2, 3], i, { dtype: "float32" }));
    const base = inUse(ds.map((d) => d.id));
    const s = devicePutSharded(parts, ds);
    assert.ok(shardedStorage(s));
    inUse(ds.map((d) => d.id)).forEach((b, i) =>
      assert.equal(b - base[i], 24, "one [1, 2, 3] float32 block per device"),
    );
    (s.addressableShards as Shard[]).forEach((sh, i) => assert.deepEqual(sh.data.tolist(), [parts[i].tolist()]));
    const r = devicePutReplicated(jnp.arange(3, { dtype: "int32" }), ds);
    assert.ok(shardedStorage(r));
    assert.deepEqual(r.tolist(), [
      [0, 1, 2],
      [0, 1, 2],
      [0, 1, 2],
      [0, 1, 2],
    ]);
    const mesh = makeMesh([2, 4], ["x", "y"]);
    const data = jnp.reshape(jnp.arange(64, { dtype: "float32" }), [8, 8]);
    const m = makeArrayFromCallback([8, 8], NamedSharding(mesh, P("x", "y")), (idx) =>
      data.get(`${idx[0][0]}:${idx[0][1]}`, `${idx[1][0]}:${idx[1][1]}`),
    );
    assert.ok(shardedStorage(m));
    assert.deepEqual(m.tolist(), data.tolist());
    assert.deepEqual((m.addressableShards as Shard[])[5].data.tolist(), data.get("4:8", "2:4").tolist());
    for (const y of [s, r, m]) y.dispose();
    assert.deepEqual(inUse(ds.map((d) => d.id)), base);
  });
});

for (const n of [1, 2, 4, 8]) {
  test(
    `shardMap on ${n} device(s) consumes resident shards without copies and leaves its outputs on the devices; a chain equals the emulation`,
    { skip },
    () => {
      const mesh = makeMesh([n], ["x"]);
      // a data-parallel step: w (replicated) moves against the psum of per-device gradients of a sharded batch
      const step = shardMap(
        (w: Array, xb: Array) => {
          const g = lax.pmean(jnp.mean(jnp.multiply(xb, jnp.tanh(jnp.matmul(xb, w))), 0), "x");
          return [jnp.subtract(w, jnp.multiply(0.1, jnp.reshape(g, [4, 1]))), jnp.multiply(xb, 0.5)];
        },
        { mesh, inSpecs: [P(), P("x")], outSpecs: [P(), P("x")] },
      );
      const w0 = values([4, 1], "float32"),
        x0 = values([4 * n, 4], "float32");
      const chain = (w: Array, xb: Array): Array[] => {
        for (let i = 0; i < 5; i++) [w, xb] = step(w, xb) as Array[];
        return [w, xb];
      };
      const want = chain(w0, x0).map((a) => a.tolist());
      onDevices(() => {
        const w = devicePut(w0, NamedSharding(mesh, P()));
        const xb = devicePut(x0, NamedSharding(mesh, P("x")));
        const [w1, x1] = step(w, xb) as Array[];
        assert.equal(
          String(x1.sharding),
          String(NamedSharding(mesh, P("x"))),
          "the output carries NamedSharding(mesh, out_spec)",
        );
        assert.ok(shardedStorage(w1) && shardedStorage(x1), "outputs stay on the devices");
        const t = transferStats();
        chain(w1, x1);
        assert.equal(
          delta(t, transferStats()).blocksCopied,
          0,
          "a chain of shardMaps over resident shards copies nothing",
        );
      });
      onDevices(() => {
        const [w, xb] = chain(devicePut(w0, NamedSharding(mesh, P())), devicePut(x0, NamedSharding(mesh, P("x"))));
        const got = [w.tolist(), xb.tolist()] as number[][][];
        (want as number[][][]).forEach((arr, k) =>
          arr
            .flat()
            .forEach((v, i) =>
              assert.ok(
                Math.abs(got[k].flat()[i] - v) <= 1e-5 * Math.max(1, Math.abs(v)),
                `output ${k}[${i}]: ${got[k].flat()[i]} vs ${v}`,
              ),
            ),
        );
        synchronize();
      });
    },
  );
}

test(
  "pmap (jit of shardMap) inherits resident outputs: a chain of pmaps copies nothing and equals the emulation",
  { skip },
  () => {
    const f = pmap((x: Array) => jnp.add(x, lax.psum(x, "i")), { axisName: "i" });
    const x = jnp.reshape(jnp.arange(8, { dtype: "float32" }), [4, 2]);
    const want = f(f(f(x))).tolist();
    assert.deepEqual(want, [
      [372, 497],
      [374, 499],
      [376, 501],
      [378, 503],
    ]); // psum by hand: rows + [12, 16], + [60, 80], + [300, 400]
    onDevices(() => {
      const y = f(x);
      assert.ok(shardedStorage(y), "resident on the devices");
      const t = transferStats();
      const z = f(f(y));
      assert.equal(delta(t, transferStats()).blocksCopied, 0);
      assert.deepEqual(z.tolist(), want);
    });
  },
);

test(
  "Device.memoryStats() (jax.Device.memory_stats) reads each public device's runtime counters: a sharded array's blocks, then their release",
  { skip },
  () => {
    const devs = devices().slice(0, 4);
    const mesh = new Mesh(devs, ["x"]);
    const before = devs.map((d) => d.memoryStats());
    // the same counters as the runtime's device (HOST_DEVICE is device 0)
    devs.forEach((d) => assert.deepEqual(d.memoryStats(), runtimeDevice(d.id).memoryStats()));
    const x = onDevices(() => devicePut(jnp.zeros([64, 256], { dtype: "float32" }), new NamedSharding(mesh, P("x"))));
    const after = devs.map((d) => d.memoryStats());
    // 64 KiB of float32 split 4 ways: 16 KiB more on each device, one allocation each
    after.forEach((s, k) => {
      assert.equal(s.bytesInUse - before[k].bytesInUse, 16 * 256 * 4, `device ${devs[k].id} bytes in use`);
      assert.equal(s.numAllocs - before[k].numAllocs, 1, `device ${devs[k].id} allocations`);
      assert.ok(s.peakBytesInUse >= s.bytesInUse);
    });
    x.dispose();
    devs.forEach((d, k) =>
      assert.equal(d.memoryStats().bytesInUse, before[k].bytesInUse, `device ${d.id} after dispose`),
    );
  },
);

test("memoized sharding comparisons and mesh keys (the per-call host path's caches) still tell layouts apart", () => {
  const ds = devices();
  const m01 = makeMesh([2], ["x"], { devices: [ds[0], ds[1]] }),
    m10 = makeMesh([2], ["x"], { devices: [ds[1], ds[0]] }),
    my = makeMesh([2], ["y"], { devices: [ds[0], ds[1]] });
  // same text, other device order or axis name: other keys (each asked twice: the memo must not conflate them)
  for (let k = 0; k < 2; k++) {
    assert.equal(String(m01), String(m10));
    assert.notEqual(m01.cacheKey, m10.cacheKey);
    assert.notEqual(m01.cacheKey, my.cacheKey);
    assert.equal(m01.cacheKey, makeMesh([2], ["x"], { devices: [ds[0], ds[1]] }).cacheKey);
  }
  const S = (m: Mesh, ...e: (string | null)[]) => new NamedSharding(m, P(...e)) as sharding.NamedSharding;
  const px = P("x");
  type NS = Parameters<typeof sameSharding>[0];
  const same = (a: unknown, b: unknown, rank: number) => sameSharding(a as NS, b as NS, rank);
  for (let k = 0; k < 2; k++) {
    // one spec object compared at ranks 1 and 2 (memoized per rank), trailing nulls equal, moved axes not
    assert.equal(same(new NamedSharding(m01, px), new NamedSharding(m01, px), 1), true);
    assert.equal(same(new NamedSharding(m01, px), S(m01, "x", null), 2), true);
    assert.equal(same(new NamedSharding(m01, px), S(m01, null, "x"), 2), false);
    assert.equal(same(new NamedSharding(m01, px), new NamedSharding(m10, px), 1), false);
    assert.equal(same(new NamedSharding(m01, px), S(my, "y"), 1), false);
    assert.equal(same(S(m01, "x"), S(makeMesh([2], ["x"], { devices: [ds[0], ds[1]] }), "x"), 1), true);
  }
});

test(
  "an array made from a shard (devicePut to one device) keeps its values after the sharded parent is disposed and its memory reused",
  { skip },
  () => {
    onDevices(() => {
      const mesh = makeMesh([2], ["x"]);
      const sh = NamedSharding(mesh, P("x"));
      const x = devicePut(values([8, 4], "float32"), sh);
      const shard = (x.addressableShards as Shard[])[0].data;
      const made: [string, Array][] = [["devicePut to one device", devicePut(shard, devices()[0])]];
      const want = made.map(([, a]) => a.dataSync());
      x.dispose();
      // the freed blocks go back to the devices' pools: new arrays of the same size take them over
      const others = [0, 1, 2].map((i) => devicePut(jnp.full([8, 4], 1000 + i, { dtype: "float32" }), sh));
      for (const o of others) o.blockUntilReady();
      made.forEach(([what, a], i) => assert.deepEqual(a.dataSync(), want[i], `${what}: its values survive the parent`));
      for (const a of [...others, ...made.map(([, a]) => a)]) a.dispose();
    });
  },
);
