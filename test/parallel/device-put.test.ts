/** @file devicePut, sharded-array accessors, makeArrayFromCallback and visualizeArraySharding (golden where JAX states values). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import {
  type Array,
  addressableData,
  debug,
  devicePut,
  devicePutReplicated,
  devicePutSharded,
  devices,
  jit,
  makeArrayFromCallback,
  makeMesh,
  numpy as jnp,
  sharding,
} from "../../src/index.js";
const { NamedSharding, P, SingleDeviceSharding } = sharding;

interface Shard {
  device: { id: number };
  index: [number, number][];
  replicaId: number;
  data: Array;
}

test("devicePut records a NamedSharding; shards are the indexed blocks", () => {
  const mesh = makeMesh([4, 2], ["x", "y"]);
  const x = jnp.reshape(jnp.arange(16, { dtype: "float32" }), [8, 2]);
  const y = devicePut(x, NamedSharding(mesh, P("x", "y")));
  assert.deepEqual(y.tolist(), x.tolist());
  assert.equal(String(y.sharding), "NamedSharding(mesh=Mesh('x': 4, 'y': 2), spec=PartitionSpec('x', 'y'))");
  const shards = y.addressableShards as Shard[];
  assert.equal(shards.length, 8);
  assert.deepEqual(shards[3].index, [
    [2, 4],
    [1, 2],
  ]);
  assert.deepEqual(shards[3].data.tolist(), [[5], [7]]);
  assert.equal(y.isFullyReplicated, false);
  assert.equal(devicePut(x, NamedSharding(mesh, P())).isFullyReplicated, true);
  assert.equal(String(x.sharding), "SingleDeviceSharding(device=CpuDevice(id=0))");
  assert.equal(String(devicePut(x, devices()[3]).sharding), "SingleDeviceSharding(device=CpuDevice(id=3))");
  // values flow through jit unchanged
  assert.deepEqual(jit((a: Array) => jnp.multiply(a, 2))(y).tolist(), jnp.multiply(x, 2).tolist());
  assert.throws(() => devicePut(jnp.zeros([6, 2]), NamedSharding(mesh, P("x"))), /size 6 is not divisible by 4/);
});

test("make_array_from_callback_2x4 (golden)", () => {
  const mesh = makeMesh([2, 4], ["x", "y"]);
  const data = jnp.reshape(jnp.arange(64, { dtype: "float32" }), [8, 8]);
  let calls = 0;
  const arr = makeArrayFromCallback([8, 8], NamedSharding(mesh, P("x", "y")), (idx) => {
    calls++;
    return data.get(`${idx[0][0]}:${idx[0][1]}`, `${idx[1][0]}:${idx[1][1]}`);
  });
  assert.deepEqual(addressableData(arr, 0).shape, [4, 2]);
  assert.equal(calls, 8);
  assert.deepEqual(arr.tolist(), data.tolist());
  let once = 0;
  makeArrayFromCallback([4], NamedSharding(mesh, P()), () => {
    once++;
    return [1, 2, 3, 4];
  });
  assert.equal(once, 1, "a fully replicated array calls the callback once");
});

test("makeArrayFromCallback copies each block's storage exactly: complex (re, im) pairs, int64 past 2^53, one dtype", () => {
  const mesh = makeMesh([2, 4], ["x", "y"]);
  const re = jnp.reshape(jnp.arange(32, { dtype: "float32" }), [4, 8]);
  const z = jnp.complex(re, jnp.negative(jnp.multiply(re, 0.25)));
  const block = (a: Array, idx: [number, number][]) => a.get(`${idx[0][0]}:${idx[0][1]}`, `${idx[1][0]}:${idx[1][1]}`);
  const zc = makeArrayFromCallback([4, 8], NamedSharding(mesh, P("x", "y")), (idx) => block(z, idx));
  assert.equal(zc.dtype, "complex64");
  assert.deepEqual(zc.tolist(), z.tolist());
  config.update("enableX64", true);
  try {
    // 2^53 + 1 and its neighbours are not float64 numbers: a copy through float64 would round them
    const big = jnp.add(jnp.reshape(jnp.arange(32, { dtype: "int64" }), [4, 8]), 2n ** 53n + 1n);
    const bc = makeArrayFromCallback([4, 8], NamedSharding(mesh, P("x", "y")), (idx) => block(big, idx));
    assert.equal(bc.dtype, "int64");
    assert.deepEqual(bc.tolist(), big.tolist());
    assert.equal((bc.tolist() as bigint[][])[0][0], 2n ** 53n + 1n);
  } finally {
    config.update("enableX64", false);
  }
  let k = 0;
  assert.throws(
    () =>
      makeArrayFromCallback([4, 8], NamedSharding(mesh, P("x", "y")), (idx) =>
        k++ === 0 ? block(re, idx) : jnp.astype(block(re, idx), "int32"),
      ),
    /makeArrayFromCallback: the callback returned int32 for index .* and float32 before/,
  );
});

test("visualizeArraySharding draws the block grid (golden 1-D case)", () => {
  const x = devicePut(jnp.zeros([5]), NamedSharding(makeMesh([1], ["x"]), P("x")));
  assert.equal(debug.visualizeArraySharding(x, { print: false }), "┌───────┐\n│ CPU 0 │\n└───────┘");
  const y = devicePut(jnp.zeros([8, 8]), NamedSharding(makeMesh([4, 2], ["x", "y"]), P(null, "y")));
  const text = debug.visualizeArraySharding(y, { print: false });
  assert.match(text, /CPU 0,2,4,6 │ CPU 1,3,5,7/);
  assert.throws(() => debug.visualizeArraySharding(jnp.zeros([2, 2, 2]), { print: false }), /only 1-D and 2-D/);
  void SingleDeviceSharding;
});

test("devicePutSharded stacks the shards along a new leading axis, shard i on devices[i] (JAX's docstring examples)", () => {
  const devs = devices().slice(0, 4);
  const xs = devs.map((_, i) => jnp.multiply(jnp.ones([5]), i));
  const y = devicePutSharded(xs, devs);
  assert.deepEqual(y.tolist(), jnp.stack(xs).tolist());
  assert.equal(
    String(y.sharding),
    "NamedSharding(mesh=Mesh('_device_put_sharded': 4), spec=PartitionSpec('_device_put_sharded'))",
  );
  const shards = y.addressableShards as Shard[];
  assert.deepEqual(
    shards.map((s) => s.device.id),
    [0, 1, 2, 3],
  );
  assert.deepEqual(shards[2].data.tolist(), [[2, 2, 2, 2, 2]]);
  // a list of identical pytrees stacks leaf by leaf
  const pairs = devs.map((_, i) => [i, jnp.arange(i, i + 4)] as [number, Array]);
  const [a, b] = devicePutSharded(pairs, devs) as unknown as [Array, Array];
  assert.deepEqual(a.tolist(), [0, 1, 2, 3]);
  assert.deepEqual(b.tolist(), [
    [0, 1, 2, 3],
    [1, 2, 3, 4],
    [2, 3, 4, 5],
    [3, 4, 5, 6],
  ]);
  assert.throws(
    () => devicePutSharded(xs.slice(0, 3), devs),
    /devicePutSharded: len\(shards\) = 3 must equal len\(devices\) = 4/,
  );
  assert.throws(
    () => devicePutSharded([jnp.ones([2]), jnp.ones([3])], devs.slice(0, 2)),
    /devicePutSharded: the shards must have consistent shape and dtype, but shard 0 is float32\[2\] and shard 1 is float32\[3\]/,
  );
  assert.throws(() => devicePutSharded([jnp.ones([2])], [7 as never]), /devicePutSharded: devices\[0\] is number 7/);
});

test("devicePutReplicated broadcasts along a new leading axis, one copy per device", () => {
  const devs = devices().slice(2, 5);
  const x = jnp.array([1, 2, 3], { dtype: "float32" });
  const y = devicePutReplicated(x, devs);
  assert.deepEqual(y.tolist(), [
    [1, 2, 3],
    [1, 2, 3],
    [1, 2, 3],
  ]);
  assert.deepEqual(
    (y.addressableShards as Shard[]).map((s) => s.device.id),
    [2, 3, 4],
  );
  assert.equal(
    String(y.sharding),
    "NamedSharding(mesh=Mesh('_device_put_replicated': 3), spec=PartitionSpec('_device_put_replicated'))",
  );
  assert.throws(() => devicePutReplicated(x, []), /devicePutReplicated: devices must be a non-empty list/);
});
