/**
 * @file saveSharded / loadSharded in one process: the round trip, loading onto another mesh and sharding, the commit
 * (a save that died before it leaves the previous checkpoint loadable, and the next save clears what it left). The
 * multi-process cases (save with 2 processes, load with 1 and 3) run under mpirun in test/parallel/distributed.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import { type Array, devicePut, loadSharded, makeMesh, numpy as jnp, saveSharded, sharding } from "../../src/index.js";
const { NamedSharding, P } = sharding;

const w = jnp.reshape(jnp.arange(32, { dtype: "float32" }), [8, 4]);
const b = jnp.array([1, 2, 3], { dtype: "int32" });

test("saveSharded / loadSharded: round trip, and onto another mesh and sharding", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-sharded-"));
  try {
    const mesh = makeMesh([4], ["i"]);
    saveSharded(dir, { w: devicePut(w, new NamedSharding(mesh, P("i"))), b });
    const flat = loadSharded(dir) as Array[];
    assert.deepEqual(
      flat.map((x) => x.tolist()),
      [b.tolist(), w.tolist()],
      "leaves in tree order (keys sorted)",
    );
    const m2 = makeMesh([2, 2], ["x", "y"]);
    const s2 = new NamedSharding(m2, P("y", "x"));
    const got = loadSharded(dir, { w: s2, b }) as { w: Array; b: Array };
    assert.deepEqual(got.w.tolist(), w.tolist());
    assert.deepEqual(got.b.tolist(), b.tolist());
    assert.equal(String(got.w.sharding), String(s2));
    assert.throws(() => loadSharded(dir, { w: s2 }), /loadSharded: like has 1 leaves; the checkpoint has 2/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("saveSharded: a save that died before its commit leaves the previous checkpoint; the next save clears it", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-sharded-"));
  try {
    saveSharded(dir, [w]);
    const first = readdirSync(dir).filter((n) => n.startsWith("step-"));
    assert.equal(first.length, 1);
    // what a save killed before the commit leaves: a temporary step with a partial file
    mkdirSync(join(dir, ".tmp-step-killed"));
    writeFileSync(join(dir, ".tmp-step-killed", "process-0.safetensors"), "partial");
    assert.deepEqual((loadSharded(dir) as Array[])[0].tolist(), w.tolist());
    saveSharded(dir, [jnp.multiply(w, 2)]);
    assert.deepEqual((loadSharded(dir) as Array[])[0].tolist(), jnp.multiply(w, 2).tolist());
    const left = readdirSync(dir).sort();
    assert.equal(left.length, 2, `LATEST and one step remain: ${left.join(", ")}`);
    assert.ok(left.includes("LATEST") && !left.includes(first[0]) && !left.includes(".tmp-step-killed"));
    assert.throws(
      () => loadSharded(join(dir, "nothing-here")),
      /loadSharded: ".*nothing-here" holds no committed checkpoint \(no LATEST file\)/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
