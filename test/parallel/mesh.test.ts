/** @file CPU devices: the count is fixed once the devices exist (JAX raises after backend initialization); config validation of the count. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
import { devices, makeMesh } from "../../src/parallel/mesh.js";

test("numCpuDevices can be set before first use, then only to the same value", () => {
  config.update("numCpuDevices", 3);
  config.update("numCpuDevices", 2);
  assert.equal(devices().length, 2);
  config.update("numCpuDevices", 2);
  assert.throws(
    () => config.update("numCpuDevices", 4),
    (e: Error) =>
      e.message.includes("numCpuDevices cannot change to 4 after the 2 CPU device(s) were created") &&
      e.message.includes("before the backend is initialized"),
  );
  assert.equal(config.numCpuDevices, 2);
  assert.equal(devices().length, 2);
  assert.equal((makeMesh([2], ["x"]).devices as unknown[]).length, 2);
});

test("numCpuDevices and intraOpThreads are validated with the key, the value and what is accepted", () => {
  assert.throws(
    () => config.update("numCpuDevices", 0),
    /config\.update: numCpuDevices must be a positive integer \(the number of CPU devices\), got 0/,
  );
  assert.throws(() => config.update("numCpuDevices", 2.5), /numCpuDevices must be a positive integer.*got 2\.5/);
  assert.throws(
    () => config.update("intraOpThreads", -3),
    /config\.update: intraOpThreads must be a non-negative integer \(0 = all cores\), got -3/,
  );
  assert.throws(() => config.update("intraOpThreads", 1.5), /intraOpThreads must be a non-negative integer.*got 1\.5/);
  assert.throws(() => config.update("intraOpThreads", NaN), /intraOpThreads.*got NaN/);
  assert.equal(config.intraOpThreads >= 0, true);
  const prev = config.intraOpThreads;
  config.update("intraOpThreads", 2);
  assert.equal(config.intraOpThreads, 2);
  config.update("intraOpThreads", prev);
});
