/** @file devicePut, sharded-array accessors, makeArrayFromCallback and visualizeArraySharding (golden where JAX states values). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, addressableData, debug, devicePut, devices, jit, makeArrayFromCallback, makeMesh, numpy as jnp, sharding } from "../../src/index.js";
const { NamedSharding, P, SingleDeviceSharding } = sharding;

interface Shard { device: { id: number }; index: [number, number][]; replicaId: number; data: Array }

test("devicePut records a NamedSharding; shards are the indexed blocks", () => {
  const mesh = makeMesh([4, 2], ["x", "y"]);
  const x = jnp.reshape(jnp.arange(16, { dtype: "float32" }), [8, 2]);
  const y = devicePut(x, NamedSharding(mesh, P("x", "y")));
  assert.deepEqual(y.tolist(), x.tolist());
  assert.equal(String(y.sharding), "NamedSharding(mesh=Mesh('x': 4, 'y': 2), spec=PartitionSpec('x', 'y'))");
  const shards = y.addressableShards as Shard[];
  assert.equal(shards.length, 8);
  assert.deepEqual(shards[3].index, [[2, 4], [1, 2]]);
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
  const arr = makeArrayFromCallback([8, 8], NamedSharding(mesh, P("x", "y")), (idx) => { calls++; return data.get(`${idx[0][0]}:${idx[0][1]}`, `${idx[1][0]}:${idx[1][1]}`); });
  assert.deepEqual(addressableData(arr, 0).shape, [4, 2]);
  assert.equal(calls, 8);
  assert.deepEqual(arr.tolist(), data.tolist());
  let once = 0;
  makeArrayFromCallback([4], NamedSharding(mesh, P()), () => { once++; return [1, 2, 3, 4]; });
  assert.equal(once, 1, "a fully replicated array calls the callback once");
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
