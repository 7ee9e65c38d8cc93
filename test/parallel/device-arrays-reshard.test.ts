/** @file Resharding through the native block copy (spmdRuntime "devices"): every same-process path on 2, 4 and 8 devices equals the JS path bit for bit, with the planned counters and memory, and without waiting for the source's launch. */
import { test } from "node:test";
import { onDevices, onDevicesAsync, writerOf } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, devicePut, devices, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import type { TypedArray } from "../../src/core/dtype.js";
import { Mesh } from "../../src/parallel/mesh.js";
import { type NamedShardingImpl, type Index } from "../../src/parallel/sharding.js";
import { shardedStorage } from "../../src/parallel/device-arrays.js";
import {
  copiesInFlight,
  delayNextLaunch,
  deviceRuntimeUnavailable,
  failNextLaunch,
  launchesInFlight,
  nativeBlockCopy,
  PendingCopy,
  runtimeDevice,
  setNativeBlockCopy,
  synchronize,
  transferStats,
  type TransferStats,
} from "../../src/runtime/index.js";
import { values } from "./device-compare.js";
import { countTurns } from "../helpers/event-loop.js";
const { NamedSharding, P } = sharding;

const skip = deviceRuntimeUnavailable() ?? (nativeBlockCopy() ? false : "the addon has no native block copy");

const bytesOf = (t: TypedArray) => new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
const delta = (a: TransferStats, b: TransferStats): TransferStats => ({
  blocksCopied: b.blocksCopied - a.blocksCopied,
  bytesCopied: b.bytesCopied - a.bytesCopied,
  blocksMoved: b.blocksMoved - a.blocksMoved,
  blocksReused: b.blocksReused - a.blocksReused,
  bytesMoved: b.bytesMoved - a.bytesMoved,
});
const inUse = (ids: readonly number[]) => ids.map((id) => runtimeDevice(id).memoryStats().bytesInUse);
const vol = (ix: Index) => ix.reduce((n, [s, e]) => n * (e - s), 1);
const sameIx = (a: Index, b: Index) => a.every(([s, e], d) => s === b[d][0] && e === b[d][1]);
const overlap = (a: Index, b: Index) =>
  a.reduce((n, [s, e], d) => n * Math.max(0, Math.min(e, b[d][1]) - Math.max(s, b[d][0])), 1);

/**
 * The plan a reshard must follow, from the two layouts alone: a device whose old block equals its new one keeps it;
 * every other block is copied whole, and the elements of it that the device did not hold before come from another
 * device (a block is a rectangle of one tiling, so it lies inside one old block or meets each old block in a piece).
 * from null: a host array (every block copied, nothing moved). Also the new bytes each device must account.
 */
function expectedPlan(shape: number[], isz: number, from: NamedShardingImpl | null, to: NamedShardingImpl) {
  const toIx = [...to.devicesIndicesMap(shape).values()];
  const fromIx = from ? from.devicesIndicesMap(shape) : null;
  const s: TransferStats = { blocksCopied: 0, bytesCopied: 0, blocksMoved: 0, blocksReused: 0, bytesMoved: 0 };
  const grow = new Map<number, number>();
  to.mesh.flatDevices.forEach((dev, k) => {
    const mine = fromIx ? [...fromIx.entries()].find(([d]) => d.id === dev.id)?.[1] : undefined;
    const ix = toIx[k];
    if (mine && sameIx(mine, ix)) {
      s.blocksReused++;
      return;
    }
    const bytes = vol(ix) * isz;
    s.blocksCopied++;
    s.bytesCopied += bytes;
    grow.set(dev.id, (grow.get(dev.id) ?? 0) + bytes);
    if (!fromIx) return;
    const moved = (vol(ix) - (mine ? overlap(mine, ix) : 0)) * isz;
    s.bytesMoved += moved;
    if (moved > 0) s.blocksMoved++;
  });
  return { stats: s, grow };
}

type Kind = "int32" | "float32" | "bool";
function globalValue(shape: number[], kind: Kind): Array {
  return kind === "bool" ? jnp.greater(values(shape, "int32"), 0) : values(shape, kind);
}
/** Paths between shardings on n devices for a rank-r array: [name, source (null: host), target]. */
function paths(n: number, r: number): [string, NamedShardingImpl | null, NamedShardingImpl][] {
  const ds = devices().slice(0, n);
  const m = new Mesh(ds, ["x"]);
  const rev = new Mesh([...ds].reverse(), ["x"]);
  const NS = (mesh: Mesh, ...spec: (string | string[] | null)[]) =>
    NamedSharding(mesh, P(...spec)) as NamedShardingImpl;
  const last = (mesh: Mesh, a: string | string[]) =>
    NS(mesh, ...globalThis.Array.from({ length: r - 1 }, () => null), a);
  const out: [string, NamedShardingImpl | null, NamedShardingImpl][] = [
    ["single-device -> P('x')", null, NS(m, "x")],
    ["P('x') -> replicated", NS(m, "x"), NS(m)],
    ["replicated -> P('x')", NS(m), NS(m, "x")],
    ["P('x') -> P('x') over the reversed devices", NS(m, "x"), NS(rev, "x")],
  ];
  if (r >= 2) {
    out.push(["P('x') -> P(..., 'x')", NS(m, "x"), last(m, "x")]);
    out.push(["replicated -> P(..., 'x')", NS(m), last(m, "x")]);
    out.push(["single-device -> P(..., 'x')", null, last(m, "x")]);
  }
  if (n >= 4) {
    const m2 = makeMesh([2, n / 2], ["a", "b"], { devices: ds });
    out.push(["P('a') -> P(['a', 'b']) on a 2-D mesh", NS(m2, "a"), NS(m2, ["a", "b"])]);
    out.push(["P(['a', 'b']) -> P('b') on a 2-D mesh", NS(m2, ["a", "b"]), NS(m2, "b")]);
    if (r >= 2) out.push(["P('a', 'b') -> P('b', 'a')", NS(m2, "a", "b"), NS(m2, "b", "a")]);
  }
  return out;
}
const SHAPES: Record<number, (n: number) => number[]> = {
  1: (n) => [6 * n],
  2: (n) => [2 * n, 3 * n],
  3: (n) => [n, 3 * n, 2 * n],
};

test(
  "every same-process reshard path on 2, 4 and 8 devices, int32/float32/bool, ranks 1-3: native equals the JS path bit for bit, with the planned counters and memory",
  { skip },
  () => {
    onDevices(() => {
      for (const n of [2, 4, 8])
        for (const r of [1, 2, 3])
          for (const kind of ["int32", "float32", "bool"] as Kind[]) {
            const shape = SHAPES[r](n);
            const g = globalValue(shape, kind);
            const want = g.tolist();
            const isz = kind === "bool" ? 1 : 4;
            for (const [name, from, to] of paths(n, r)) {
              const what = `${n} devices, ${kind}[${shape}], ${name}`;
              const x = from ? devicePut(g, from) : g;
              const ids = devices()
                .slice(0, 8)
                .map((d) => d.id);
              const plan = expectedPlan(shape, isz, from, to);
              const m0 = inUse(ids),
                t0 = transferStats();
              const y = devicePut(x, to);
              assert.deepEqual(delta(t0, transferStats()), plan.stats, `${what}: counters`);
              inUse(ids).forEach((b, i) =>
                assert.equal(b - m0[i], plan.grow.get(ids[i]) ?? 0, `${what}: new bytes on device ${ids[i]}`),
              );
              const prev = setNativeBlockCopy(false);
              let z: Array;
              try {
                z = devicePut(x, to);
              } finally {
                setNativeBlockCopy(prev);
              }
              const sy = shardedStorage(y)!,
                sz = shardedStorage(z)!;
              sy.buffers.forEach((b, k) => {
                assert.equal(b.device.id, to.mesh.deviceIds[k], `${what}: block ${k} on its device`);
                assert.deepEqual(bytesOf(b.ready().data), bytesOf(sz.buffers[k].ready().data), `${what}: block ${k}`);
              });
              assert.deepEqual(y.tolist(), want, `${what}: the global value`);
              const t1 = transferStats();
              assert.equal(devicePut(y, to), y, `${what}: to the same sharding is the same array`);
              assert.deepEqual(delta(t1, transferStats()).blocksCopied, 0, `${what}: and copies nothing`);
              if (from) x.dispose();
              y.dispose();
              z.dispose();
            }
          }
      assert.equal(copiesInFlight(), 0, "every copy settled");
    });
  },
);

test(
  "a reshard right after a launch returns while the launch is pending, reads the right values, and survives disposing its source",
  { skip },
  () => {
    onDevices(() => {
      const mesh = makeMesh([4], ["x"]);
      // a few [128, 128] matmuls per device: long enough that the copies really wait on the device streams
      const f = shardMap(
        (b: Array) => {
          let y = b;
          for (let i = 0; i < 6; i++) y = jnp.tanh(jnp.matmul(y, b));
          return y;
        },
        { mesh, inSpecs: P(null, "x"), outSpecs: P(null, "x") },
      );
      const x = devicePut(jnp.multiply(values([128, 512], "float32"), 0.01), NamedSharding(mesh, P(null, "x")));
      const want = f(x).tolist();
      synchronize();
      const base = inUse(mesh.deviceIds);
      for (const [name, spec] of [
        ["P(None, 'x') -> P('x')", P("x")],
        ["-> replicated", P()],
      ] as const) {
        synchronize();
        const y = f(x);
        const w = writerOf(y);
        assert.ok(w, `${name}: the launch is pending`);
        const z = devicePut(y, NamedSharding(mesh, spec));
        assert.equal(w.settled, false, `${name}: devicePut returned without waiting for the launch`);
        assert.ok(shardedStorage(z)!.buffers[0].writer, `${name}: the resharded array is pending too`);
        y.dispose(); // safe: the copies hold their sources
        assert.deepEqual(z.tolist(), want, `${name}: the values`);
        z.dispose();
      }
      // disposed before anything waited: synchronize settles the launch and the copies, and every byte comes back
      const y = f(x);
      const z = devicePut(y, NamedSharding(mesh, P()));
      y.dispose();
      z.dispose();
      assert.equal(launchesInFlight(), 1, "nothing waited for the launch");
      assert.ok(
        inUse(mesh.deviceIds).some((b, i) => b > base[i]),
        "the pending work still holds its buffers",
      );
      synchronize();
      assert.equal(copiesInFlight(), 0, "synchronize settles the copies");
      assert.deepEqual(inUse(mesh.deviceIds), base, "the memory of both arrays is given back");
      // a copy of a failed launch's output fails with that cause when read
      failNextLaunch(1);
      const bad = f(x);
      const zb = devicePut(bad, NamedSharding(mesh, P("x")));
      assert.throws(() => zb.tolist(), /block copy read an output of a failed launch: .*device 1 \(rank 1\)/);
      for (const a of [bad, zb, x]) a.dispose();
    });
  },
);

test(
  "await ready()/data() on a resharded pending array lets the event loop run until its copies finish; values equal the sync read; a failed source rejects with its cause",
  { skip },
  async () => {
    const mesh = makeMesh([2], ["x"]);
    const f = shardMap((b: Array) => jnp.tanh(jnp.matmul(b, jnp.transpose(b))), {
      mesh,
      inSpecs: P("x"),
      outSpecs: P("x"),
    });
    const x = jnp.multiply(values([64, 32], "float32"), 0.01);
    await onDevicesAsync(async () => {
      const want = devicePut(f(x), NamedSharding(mesh, P(null, "x"))).dataSync();
      synchronize();
      delayNextLaunch(100); // the source's launch sleeps, so the copies after it stay pending for many turns
      const z = devicePut(f(x), NamedSharding(mesh, P(null, "x")));
      const copy = shardedStorage(z)!.buffers[0].writer as PendingCopy | null;
      assert.ok(copy instanceof PendingCopy, "the resharded block is written by a pending copy");
      const stop = countTurns();
      assert.equal(await z.ready(), z, "ready() resolves to the array");
      assert.ok(stop() > 0, "event-loop turns ran while the copies waited for their source");
      assert.ok(copy.settled, "and the copy settled");
      assert.deepEqual(await z.data(), want);
      z.dispose();
      // the copy of a failed launch's output rejects with that cause, and the sync read throws the same text
      delayNextLaunch(20);
      failNextLaunch(1);
      const bad = devicePut(f(x), NamedSharding(mesh, P(null, "x")));
      await assert.rejects(bad.data(), /block copy read an output of a failed launch: .*device 1 \(rank 1\)/);
      assert.throws(() => bad.dataSync(), /block copy read an output of a failed launch/);
      bad.dispose();
      assert.equal(copiesInFlight(), 0, "every copy settled");
    });
  },
);
