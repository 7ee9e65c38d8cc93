/**
 * @file makeArrayFromProcessLocalData / makeArrayFromSingleDeviceArrays in one process (every device addressable: the
 * local data is the global array, placed as devicePut places it) and their argument errors. The multi-process
 * behaviour (process-local shards, global shapes, reads refused) is tested under mpirun in distributed.test.ts.
 */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import {
  type Array,
  makeArrayFromProcessLocalData,
  makeArrayFromSingleDeviceArrays,
  makeMesh,
  numpy as jnp,
  sharding,
} from "../../src/index.js";
const { NamedSharding, P } = sharding;

interface Shard {
  device: { id: number };
  index: [number, number][];
  data: Array;
}
const shardsOf = (x: Array) =>
  (x.addressableShards as Shard[]).map((s) => [s.device.id, s.index, s.data.tolist()] as const);

for (const runtime of ["emulation", "devices"] as const) {
  test(`makeArrayFromProcessLocalData in one process (${runtime}): the global array, sharded as asked`, () => {
    config.update("spmdRuntime", runtime);
    try {
      const mesh = makeMesh([2, 2], ["a", "b"]);
      const s = new NamedSharding(mesh, P("a", "b"));
      const v = jnp.reshape(jnp.arange(16, { dtype: "float32" }), [4, 4]);
      const x = makeArrayFromProcessLocalData(s, v);
      assert.deepEqual(x.shape, [4, 4]);
      assert.deepEqual(x.tolist(), v.tolist());
      assert.equal(String(x.sharding), String(s));
      const sh = shardsOf(x);
      assert.deepEqual(sh[3], [
        3,
        [
          [2, 4],
          [2, 4],
        ],
        [
          [10, 11],
          [14, 15],
        ],
      ]);
      // the same global array from one block per device (mesh order)
      const blocks = sh.map(([, , b]) => jnp.array(b as number[][], { dtype: "float32" }));
      const y = makeArrayFromSingleDeviceArrays([4, 4], s, blocks);
      assert.deepEqual(y.tolist(), v.tolist());
      assert.deepEqual(shardsOf(y), sh);
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  });
}

test("makeArrayFromProcessLocalData / makeArrayFromSingleDeviceArrays: clear errors", () => {
  const mesh = makeMesh([4], ["i"]);
  const s = new NamedSharding(mesh, P("i"));
  const v = jnp.ones([8, 3]);
  assert.throws(
    () => makeArrayFromProcessLocalData(P("i") as never, v),
    /makeArrayFromProcessLocalData: sharding must be a NamedSharding/,
  );
  assert.throws(
    () => makeArrayFromProcessLocalData(s, v, [8]),
    /makeArrayFromProcessLocalData: globalShape \(8\) has rank 1 but localData has shape \(8, 3\)/,
  );
  assert.throws(
    () => makeArrayFromProcessLocalData(s, jnp.ones([6, 3]), [6, 3]),
    /NamedSharding\.shardShape: dimension 0 of size 6 is not divisible by 4/,
  );
  assert.throws(
    () => makeArrayFromProcessLocalData(s, jnp.ones([4, 3]), [8, 3]),
    /makeArrayFromProcessLocalData: this process's devices hold the region 0:8, 0:3 of the global shape \(8, 3\), of shape \(8, 3\); localData has shape \(4, 3\)/,
  );
  assert.throws(
    () => makeArrayFromSingleDeviceArrays([8, 3], s, [jnp.ones([2, 3])]),
    /makeArrayFromSingleDeviceArrays: 1 arrays given; this process has 4 devices in Mesh\('i': 4\) \(ids \[0, 1, 2, 3\]\), one block each/,
  );
  assert.throws(
    () =>
      makeArrayFromSingleDeviceArrays([8, 3], s, [
        jnp.ones([2, 3]),
        jnp.ones([2, 3]),
        jnp.ones([3, 3]),
        jnp.ones([2, 3]),
      ]),
    /makeArrayFromSingleDeviceArrays: arrays\[2\] is float32\[3,3\]; every block must be float32\[2,3\]/,
  );
});
