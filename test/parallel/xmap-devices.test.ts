/** @file xmap on the device runtime: names with mesh axes as axisResources run as a shardMap over the mesh and equal the emulation. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, lax, makeMesh, numpy as jnp, xmap } from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { sameOnDevices, values } from "./device-compare.js";

const skip = deviceRuntimeUnavailable() ?? false;

for (const n of [1, 2, 4, 8]) {
  test(
    `xmap with axisResources on ${n} device(s): collectives over the mapped name run across the devices`,
    { skip },
    () => {
      const mesh = makeMesh([n], ["dp"]);
      const ids = mesh.deviceIds;
      const x = values([n, 3], "float32"),
        xi = values([3, n], "int32");
      const opts = { mesh, axisResources: { batch: "dp" } };
      sameOnDevices("psum over the mapped name", ids, () =>
        xmap((v: Array) => jnp.subtract(v, lax.pmean(v, "batch")), {
          ...opts,
          inAxes: ["batch", "..."],
          outAxes: ["batch", "..."],
        })(x),
      );
      sameOnDevices("named dim last, output moved first (int32)", ids, () =>
        xmap((v: Array) => jnp.multiply(v, lax.axisIndex("batch")), {
          ...opts,
          inAxes: { 1: "batch" },
          outAxes: ["batch", "..."],
        })(xi),
      );
      sameOnDevices("replicated result (outAxes without the name)", ids, () =>
        xmap((v: Array) => lax.psum(v, "batch"), { ...opts, inAxes: [null, "batch"], outAxes: {} })(xi),
      );
      sameOnDevices("allGather over the name", ids, () =>
        xmap((v: Array) => lax.allGather(v, "batch"), { ...opts, inAxes: ["batch", "..."], outAxes: {} })(x),
      );
    },
  );
}

test("xmap on a 2-D mesh: two names mapped to mesh axes, a third a vmap inside each device", { skip }, () => {
  const mesh = makeMesh([2, 4], ["dp", "tp"]);
  const x = values([2, 3, 4], "float32"); // names b (2, on dp), k (3, a vmap), m (4, on tp)
  const f = xmap((v: Array) => jnp.add(lax.psum(v, "m"), lax.pmax(v, ["b", "k"])), {
    mesh,
    inAxes: ["b", "k", "m"],
    outAxes: ["m", "b", "k"],
    axisResources: { b: "dp", m: "tp" },
  });
  const y = sameOnDevices("psum over m, pmax over (b, k)", mesh.deviceIds, () => f(x));
  assert.deepEqual(y.shape, [4, 2, 3]);
  // an output that varies over a mapped name without placing it says so in xmap's words
  config.update("spmdRuntime", "devices");
  try {
    assert.throws(
      () =>
        xmap((v: Array) => v, {
          mesh,
          inAxes: ["b", "k", "m"],
          outAxes: ["b", "k"],
          axisResources: { b: "dp", m: "tp" },
        })(x),
      /xmap: an output varies over named axis "m"/,
    );
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
});

test("xmap: a name larger than its mesh axis runs on the devices too (a block per device)", { skip }, () => {
  const mesh = makeMesh([2], ["dp"]);
  const x = values([4, 3], "float32");
  sameOnDevices("name of size 4 on a mesh axis of 2", mesh.deviceIds, () =>
    xmap((v: Array) => lax.psum(v, "batch"), {
      mesh,
      inAxes: ["batch", "..."],
      outAxes: {},
      axisResources: { batch: "dp" },
    })(x),
  );
});
