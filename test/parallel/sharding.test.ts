/** @file Mesh, PartitionSpec and NamedSharding against JAX's stated shard indices, shapes and replica ids (golden). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFixtureJson } from "../helpers/repo-root.js";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { devices, makeMesh, sharding } from "../../src/index.js";
const { Mesh, NamedSharding, P } = sharding;

const golden = readFixtureJson<{
  cases: {
    id: string;
    expected: Record<string, unknown>;
    expected_all_devices_derived?: Record<string, { device: number; index: number[][]; replica_id: number }[]>;
  }[];
}>("golden/parallel.json");
const byId = (id: string) => golden.cases.find((c) => c.id === id)!;

const specOf = (k: string) => {
  // "P('x','y')", "P(None,'y')", "P(('x','y'))", "P()"
  const body = k.slice(2, -1).trim();
  if (!body) return P();
  if (body.startsWith("("))
    return P(
      body
        .slice(1, -1)
        .split(",")
        .map((s) => s.trim().replace(/'/g, ""))
        .filter(Boolean),
    );
  return P(
    ...body
      .split(",")
      .map((s) => s.trim())
      .map((s) => (s === "None" ? null : s.replace(/'/g, ""))),
  );
};

test("named_sharding_indices_4x2_mesh_8x2_array (golden)", () => {
  assert.equal(devices().length, 8);
  const c = byId("named_sharding_indices_4x2_mesh_8x2_array");
  const mesh = makeMesh([4, 2], ["x", "y"]);
  for (const [k, exp] of Object.entries(c.expected) as [
    string,
    {
      shard0_index: number[][];
      shard1_index: number[][];
      shard_shape: number[];
      replica_ids: number[];
      is_fully_replicated: boolean;
    },
  ][]) {
    const s = NamedSharding(mesh, specOf(k));
    const idx = s.devicesIndicesMap([8, 2]);
    const devs = mesh.flatDevices;
    assert.deepEqual(idx.get(devs[0]), exp.shard0_index, `${k} shard 0`);
    assert.deepEqual(idx.get(devs[1]), exp.shard1_index, `${k} shard 1`);
    assert.deepEqual(s.shardShape([8, 2]), exp.shard_shape, `${k} shard shape`);
    assert.deepEqual(s.replicaIds(), exp.replica_ids, `${k} replica ids`);
    assert.equal(s.isFullyReplicated, exp.is_fully_replicated, `${k} fully replicated`);
    for (const row of c.expected_all_devices_derived?.[k] ?? []) {
      assert.deepEqual(idx.get(devs[row.device]), row.index, `${k} device ${row.device}`);
    }
  }
});

test("shard_map_block_shapes: block shapes from specs (golden)", () => {
  const c = byId("shard_map_block_shapes");
  const mesh = new Mesh(
    [
      [devices()[0], devices()[1]],
      [devices()[2], devices()[3]],
      [devices()[4], devices()[5]],
      [devices()[6], devices()[7]],
    ],
    ["i", "j"],
  );
  assert.deepEqual(NamedSharding(mesh, P("i", null)).shardShape([12, 12]), c.expected["in P('i',None): block shape"]);
  assert.deepEqual(NamedSharding(mesh, P("i", "j")).shardShape([12, 12]), [3, 6]);
  assert.throws(
    () => NamedSharding(mesh, P("i", "j")).shardShape([12, 5]),
    /dimension 1 of size 5 is not divisible by 2/,
  );
  assert.throws(
    () => NamedSharding(mesh, P("i", "j", null)).shardShape([12, 12]),
    /3 entries but the array has rank 2/,
  );
});

test("bad meshes and specs fail with clear errors", () => {
  const d = devices();
  assert.throws(() => new Mesh([d[0], d[1]], ["a", "b"]), /1 dimensions but 2 axis names/);
  assert.throws(() => new Mesh([d[0], d[0]], ["a"]), /appears twice/);
  assert.throws(() => P("x", "x"), /used more than once/);
  assert.throws(() => NamedSharding(makeMesh([2], ["x"]), P("z")), /axis "z" which is not in Mesh\('x': 2\)/);
  assert.throws(() => makeMesh([4, 4], ["a", "b"]), /needs 16 devices but only 8/);
  assert.equal(
    String(NamedSharding(makeMesh([4, 2], ["x", "y"]), P("x", null))),
    "NamedSharding(mesh=Mesh('x': 4, 'y': 2), spec=PartitionSpec('x', None))",
  );
});
