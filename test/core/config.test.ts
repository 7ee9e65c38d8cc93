/** @file Config from the environment: malformed integer settings raise naming the variable, valid ones are read. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";

const configUrl = new URL("../../src/core/config.js", import.meta.url).href;
function load(env: Record<string, string>): { out: string; err: string } {
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", `const { config } = await import(${JSON.stringify(configUrl)}); console.log(config.numCpuDevices, config.intraOpThreads);`], {
    env: { ...process.env, NODE_OPTIONS: "", ...env }, encoding: "utf8",
  });
  return { out: r.stdout.trim(), err: r.stderr };
}

test("integer environment settings are validated when the config loads", () => {
  assert.equal(load({ JAXTS_NUM_CPU_DEVICES: "4", JAXTS_INTRA_OP_THREADS: "0" }).out, "4 0");
  assert.equal(load({ JAXTS_NUM_CPU_DEVICES: "", JAXTS_INTRA_OP_THREADS: "2" }).out, "1 2");
  assert.match(load({ JAXTS_INTRA_OP_THREADS: "-3" }).err, /environment variable JAXTS_INTRA_OP_THREADS="-3" must be an integer >= 0/);
  assert.match(load({ JAXTS_NUM_CPU_DEVICES: "0" }).err, /JAXTS_NUM_CPU_DEVICES="0" must be an integer >= 1/);
  assert.match(load({ JAXTS_NUM_CPU_DEVICES: "two" }).err, /JAXTS_NUM_CPU_DEVICES="two" must be an integer >= 1/);
});
