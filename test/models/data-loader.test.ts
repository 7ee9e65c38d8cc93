/**
 * @file Sharded batches: each distinct device block is asked from the generator once, for its own rows only, the
 * global batch equals the unsharded one, the blocks are resident with the requested sharding, and prefetch builds the
 * next step's batch ahead (next() then asks nothing more).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
import { type Array, makeMesh, numpy as jnp, sharding } from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { makeShardedBatches } from "../../src/models/data-loader.js";
import type { Shard } from "../../src/parallel/device-put.js";
const { P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;
const SEQ = 5;
/** A deterministic batch: row r of step s holds tokens (7 s + 3 r + i) mod 11, its target the next token. */
function rows(step: number, [a, b]: readonly [number, number]): { tokens: Array; targets: Array } {
  const t = (d: number) =>
    jnp.array(
      globalThis.Array.from({ length: b - a }, (_, r) =>
        globalThis.Array.from({ length: SEQ }, (_, i) => (7 * step + 3 * (a + r) + i + d) % 11),
      ),
      { dtype: "int32" },
    );
  return { tokens: t(0), targets: t(1) };
}

for (const [shape, names] of [
  [[4], ["data"]],
  [
    [2, 2],
    ["data", "model"],
  ],
] as const)
  test(`each device block is generated once and only its rows (mesh ${names.join("x")})`, { skip }, () => {
    const mesh = makeMesh([...shape], [...names]);
    const calls: string[] = [];
    const gen = (step: number, r: readonly [number, number]) => {
      calls.push(`${step}:${r[0]}-${r[1]}`);
      return rows(step, r);
    };
    const loader = makeShardedBatches(gen, mesh, { globalBatch: 8 });
    const b0 = loader.next();
    const d = shape[0];
    const want = globalThis.Array.from({ length: d }, (_, k) => `0:${(k * 8) / d}-${((k + 1) * 8) / d}`);
    assert.deepEqual(calls, want, "one call per distinct block of rows");
    const full = rows(0, [0, 8]);
    assert.deepEqual(b0.tokens.tolist(), full.tokens.tolist());
    assert.deepEqual(b0.targets.tolist(), full.targets.tolist());
    assert.equal(b0.tokens.dtype, "int32");
    // resident: each device's shard holds its rows
    const shards = b0.tokens.addressableShards as Shard[];
    assert.equal(shards.length, mesh.size);
    for (const s of shards) {
      const [r0, r1] = s.index[0];
      assert.deepEqual(s.data.tolist(), rows(0, [r0, r1]).tokens.tolist(), `device ${s.device.id} rows ${r0}-${r1}`);
    }
    const sh = String(b0.tokens.sharding);
    assert.ok(sh.includes("data"), sh);
    // prefetch builds step 1 now; next() returns it without asking again
    calls.length = 0;
    loader.prefetch();
    assert.equal(calls.length, d);
    assert.ok(calls.every((c) => c.startsWith("1:")));
    const b1 = loader.next();
    assert.equal(calls.length, d, "next() after prefetch generates nothing");
    assert.deepEqual(b1.tokens.tolist(), rows(1, [0, 8]).tokens.tolist());
    assert.equal(loader.step, 2);
  });

test("bad loader options are rejected naming the fix", { skip }, () => {
  const mesh = makeMesh([4], ["data"]);
  assert.throws(
    () => makeShardedBatches(rows, mesh, { globalBatch: 6 }),
    /globalBatch 6 is not divisible by the 4 shards/,
  );
  assert.throws(
    () => makeShardedBatches(rows, mesh, { globalBatch: 8, spec: P(null, "data") }),
    /splits dimension 1; only the batch dimension/,
  );
  const bad = makeShardedBatches((s, r) => rows(s, [r[0], r[1] + 1]), mesh, { globalBatch: 8 });
  assert.throws(() => bad.next(), /field "tokens" has 3 rows .* expected 2/);
});
