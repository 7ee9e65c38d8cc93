/** @file Config from the environment: malformed integer settings raise naming the variable, valid ones are read. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";

const configUrl = new URL("../../src/core/config.js", import.meta.url).href;
function load(env: Record<string, string>): { out: string; err: string } {
  const r = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { config } = await import(${JSON.stringify(configUrl)}); console.log(config.numCpuDevices, config.intraOpThreads);`,
    ],
    {
      env: { ...process.env, NODE_OPTIONS: "", ...env },
      encoding: "utf8",
    },
  );
  return { out: r.stdout.trim(), err: r.stderr };
}

test("integer environment settings are validated when the config loads", () => {
  assert.equal(load({ JAXTS_NUM_CPU_DEVICES: "4", JAXTS_INTRA_OP_THREADS: "0" }).out, "4 0");
  assert.equal(load({ JAXTS_NUM_CPU_DEVICES: "", JAXTS_INTRA_OP_THREADS: "2" }).out, "1 2");
  assert.match(
    load({ JAXTS_INTRA_OP_THREADS: "-3" }).err,
    /environment variable JAXTS_INTRA_OP_THREADS="-3" must be an integer >= 0/,
  );
  assert.match(load({ JAXTS_NUM_CPU_DEVICES: "0" }).err, /JAXTS_NUM_CPU_DEVICES="0" must be an integer >= 1/);
  assert.match(load({ JAXTS_NUM_CPU_DEVICES: "two" }).err, /JAXTS_NUM_CPU_DEVICES="two" must be an integer >= 1/);
});

test("config.backend accepts the registered backends only, and an unknown name lists them", async () => {
  await import("../../src/index.js");
  const { config, registeredBackendNames } = await import("../../src/core/config.js");
  const { getBackend, registerBackend } = await import("../../src/core/trace.js");
  assert.deepEqual(
    registeredBackendNames().filter((n) => n === "onnx" || n === "interpreter"),
    ["interpreter", "onnx"],
  );
  assert.throws(
    () => config.update("backend", "tpu"),
    /config\.update: backend "tpu" is not a registered backend; registered: .*"interpreter", "onnx"/,
  );
  // a backend registered later is discovered: config.backend accepts it and getBackend() selects it
  const prev = config.backend;
  registerBackend({
    name: "test-echo",
    execute: (prim, args, params) => getBackend("interpreter").execute(prim, args, params),
  });
  try {
    assert.ok(registeredBackendNames().includes("test-echo"));
    config.update("backend", "test-echo");
    assert.equal(getBackend().name, "test-echo");
  } finally {
    config.update("backend", prev);
  }
  assert.equal(getBackend().name, prev);
});
