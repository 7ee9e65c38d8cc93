/** @file pmap: static broadcasted arguments, positional axis names, in/out axes, shardings and JAX's errors (JAX's pmap_test.py cases). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, devices, lax, numpy as jnp, pmap } from "../../src/index.js";

interface Shard {
  device: { id: number };
  index: [number, number][];
  data: Array;
}

test("staticBroadcastedArgnums accepts any static JS value: a shape (the seed's init_pmapped), a string, a number", () => {
  // init_pmapped(jnp.arange(n), (3, 4)): member i builds a (3, 4) block filled with i
  const init = (i: Array, shape: number[]) => jnp.add(jnp.zeros(shape), i);
  const initPmapped = pmap(init, { staticBroadcastedArgnums: 1 });
  const out = initPmapped(jnp.arange(4, { dtype: "float32" }), [3, 4]);
  assert.deepEqual(out.shape, [4, 3, 4]);
  assert.deepEqual(
    out.tolist(),
    [0, 1, 2, 3].map((i) => globalThis.Array(3).fill(globalThis.Array(4).fill(i))),
  );
  assert.deepEqual(initPmapped(jnp.arange(2, { dtype: "float32" }), [1, 2]).tolist(), [[[0, 0]], [[1, 1]]]);
  const g = pmap((x: Array, mode: string, k: number) => (mode === "scale" ? jnp.multiply(x, k) : jnp.add(x, k)), {
    staticBroadcastedArgnums: [1, 2],
    axisName: "i",
  });
  const x = jnp.array([1, 2, 3], { dtype: "float32" });
  assert.deepEqual(g(x, "scale", 10).tolist(), [10, 20, 30]);
  assert.deepEqual(g(x, "shift", 10).tolist(), [11, 12, 13]);
  assert.deepEqual(g(x, "scale", 2).tolist(), [2, 4, 6]);
  // inAxes given for every positional argument, statics included (JAX keeps only the dynamic entries)
  const h = pmap((a: Array, n: number, b: Array) => jnp.add(jnp.multiply(a, n), b), {
    staticBroadcastedArgnums: 1,
    inAxes: [0, null, null],
  });
  assert.deepEqual(h(x, 3, jnp.array(100, { dtype: "float32" })).tolist(), [103, 106, 109]);
});

test("pmap(f, 'i') takes the axis name positionally; collectives see it", () => {
  const x = jnp.array([0, 1, 2, 3], { dtype: "float32" });
  assert.deepEqual(pmap((v: Array) => lax.psum(v, "i"), "i")(x).tolist(), [6, 6, 6, 6]);
  assert.deepEqual(
    pmap((v: Array) => jnp.subtract(v, lax.pmean(v, "i")), "i", { outAxes: 0 })(x).tolist(),
    [-1.5, -0.5, 0.5, 1.5],
  );
  assert.deepEqual(pmap((_v: Array) => lax.axisIndex("i"), "i")(x).tolist(), [0, 1, 2, 3]);
});

test("outAxes: null returns the first device's value (JAX test_pmap_replicated_copy, testArgAllReduce); other out axes", () => {
  const inp = jnp.arange(8, { dtype: "int32" });
  const r = pmap((v: Array) => v, { inAxes: 0, outAxes: null })(inp);
  assert.deepEqual(r.tolist(), 0);
  assert.equal(r.isFullyReplicated, true);
  const x = jnp.reshape(jnp.arange(8, { dtype: "float32" }), [2, 4]);
  // psum over the mapped axis 1 with outAxes null equals x.sum(axis=1)
  assert.deepEqual(
    pmap((v: Array) => lax.psum(v, "i"), { axisName: "i", inAxes: 1, outAxes: null })(x).tolist(),
    [6, 22],
  );
  assert.deepEqual(
    pmap((v: Array) => lax.pmax(v, "i"), { axisName: "i", inAxes: 0, outAxes: null })(x).tolist(),
    [4, 5, 6, 7],
  );
  // outAxes 1 (and -1) put the mapped axis last: the transpose
  const y = pmap((v: Array) => jnp.multiply(v, 2), { outAxes: 1 })(x);
  assert.deepEqual(y.tolist(), [
    [0, 8],
    [2, 10],
    [4, 12],
    [6, 14],
  ]);
  assert.deepEqual(pmap((v: Array) => jnp.multiply(v, 2), { outAxes: -1 })(x).tolist(), y.tolist());
  assert.equal(
    String(y.sharding),
    "NamedSharding(mesh=Mesh('_internal_pmap_axis_name': 2), spec=PartitionSpec(None, '_internal_pmap_axis_name'))",
  );
});

test("pmap outputs carry NamedSharding(mesh of the first n devices, P(axisName)); shard k is row k on device k", () => {
  const x = jnp.reshape(jnp.arange(12, { dtype: "float32" }), [4, 3]);
  const y = pmap((v: Array) => jnp.add(v, 1), "batch")(x);
  assert.equal(String(y.sharding), "NamedSharding(mesh=Mesh('batch': 4), spec=PartitionSpec('batch'))");
  const shards = y.addressableShards as Shard[];
  assert.deepEqual(
    shards.map((s) => s.device.id),
    [0, 1, 2, 3],
  );
  assert.deepEqual(shards[2].index, [
    [2, 3],
    [0, 3],
  ]);
  assert.deepEqual(shards[2].data.tolist(), [[7, 8, 9]]);
  // explicit devices: the mesh is those devices, in order
  const devs = devices();
  const z = pmap((v: Array) => v, { axisName: "i", devices: [devs[5], devs[6]] })(
    jnp.array([1, 2], { dtype: "float32" }),
  );
  assert.deepEqual(
    (z.addressableShards as Shard[]).map((s) => s.device.id),
    [5, 6],
  );
});

test("nested pmaps: the product of sizes must fit the devices (JAX testNestedPmaps / testBadAxisSizeErrorNested)", () => {
  // outer over 4, inner over 2: 8 devices; psum over 'j' doubles the ones (JAX: expected = x * 2)
  const foo = pmap((x: Array) => pmap((y: Array) => lax.psum(y, "j"), "j")(x), { axisName: "i", devices: devices() });
  assert.deepEqual(foo(jnp.ones([4, 2])).tolist(), globalThis.Array(4).fill([2, 2]));
  const both = pmap((x: Array) => pmap((y: Array) => lax.psum(y, ["i", "j"]), "j")(x), "i");
  assert.deepEqual(
    both(jnp.reshape(jnp.arange(8, { dtype: "float32" }), [4, 2])).tolist(),
    globalThis.Array(4).fill([28, 28]),
  );
  const f = pmap((x: Array) => pmap((y: Array) => lax.psum(y, ["i", "j"]), "j")(x), {
    axisName: "i",
    devices: [devices()[0]],
  });
  assert.throws(
    () => f(jnp.ones([1, 4])),
    /pmap: pmapped function requires 4 devices to run due to nested pmaps \(sizes 1 x 4\), but only 1 are available/,
  );
  assert.throws(
    () => pmap((x: Array) => pmap((y: Array) => y, "j")(x), "i")(jnp.ones([4, 4])),
    /requires 16 devices .* but only 8/,
  );
});

test("bad pmap arguments raise JAX's errors", () => {
  const x = jnp.ones([4]);
  // JAX: 'devices' argument to pmap must be non-empty, or None.
  assert.throws(() => pmap((v: Array) => v, { devices: [] }), /pmap: the 'devices' option must be a non-empty list/);
  assert.throws(
    () => pmap((v: Array) => v, { devices: [1, 2] as never }),
    /pmap: devices\[0\] is number 1; expected Device objects from devices\(\)/,
  );
  // JAX: Specified axis_size 3 doesn't match received axis_size 4.
  assert.throws(
    () => pmap((v: Array) => v, { axisSize: 3 })(x),
    /pmap: specified axisSize 3 doesn't match the received axis size 4/,
  );
  assert.equal(pmap((v: Array) => v, { axisSize: 4 })(x).shape[0], 4);
  assert.throws(() => pmap((v: Array) => v)(jnp.zeros([16])), /requires 16 logical devices, but only 8/);
  assert.throws(
    () => pmap((v: Array) => v, { devices: devices().slice(0, 2) })(x),
    /requires 4 logical devices, but only 2/,
  );
  assert.throws(
    () => pmap((a: Array, b: Array) => jnp.add(a, b))(x, jnp.ones([3])),
    /pmap: inconsistent sizes of the mapped axes/,
  );
  assert.throws(
    () => pmap((a: Array) => a, { inAxes: null })(x),
    /pmap: requires at least one argument with a mapped axis/,
  );
});
