/**
 * @file Memory stays flat over 5,000 sharded training steps on 2 devices (a tiny data-parallel step: shardMap with
 * grad and pmean inside, jitted), and over repeated grads of a shardMap (the jvp and transpose shard_maps).
 */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, grad, jit, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import {
  deviceRuntimeUnavailable,
  lastLaunchTimeline,
  openRendezvous,
  runtimeDevice,
  type MemoryStats,
} from "../../src/runtime/index.js";
const { P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;

/** Runs `steps` steps; returns each device's stats after `warm` steps and at the end, and the per-step allocations. */
function flatOver(
  ids: readonly number[],
  steps: number,
  warm: number,
  step: () => void,
): { mid: MemoryStats[]; end: MemoryStats[]; perStep: number[] } {
  const stats = () => ids.map((id) => runtimeDevice(id).memoryStats());
  for (let i = 0; i < warm; i++) step();
  const mid = stats();
  for (let i = 0; i < 100; i++) step();
  const after100 = stats();
  for (let i = warm + 100; i < steps; i++) step();
  const end = stats();
  return { mid, end, perStep: after100.map((s, k) => (s.numAllocs - mid[k].numAllocs) / 100) };
}

function assertFlat(
  what: string,
  ids: readonly number[],
  r: ReturnType<typeof flatOver>,
  steps: number,
  warm: number,
): void {
  ids.forEach((id, k) => {
    assert.equal(
      r.end[k].bytesInUse,
      r.mid[k].bytesInUse,
      `${what}: device ${id} bytes in use after ${warm} and ${steps} steps`,
    );
    assert.equal(r.end[k].peakBytesInUse, r.mid[k].peakBytesInUse, `${what}: device ${id} peak bytes do not grow`);
    assert.ok(
      Number.isInteger(r.perStep[k]) && r.perStep[k] > 0,
      `${what}: device ${id} allocates the same buffers each step (${r.perStep[k]})`,
    );
    assert.equal(
      r.end[k].numAllocs - r.mid[k].numAllocs,
      r.perStep[k] * (steps - warm),
      `${what}: device ${id} allocations per step stay constant`,
    );
  });
  assert.equal(openRendezvous(), 0, `${what}: no rendezvous left open`);
}

test(
  "memory stays flat over 5,000 data-parallel training steps on 2 devices (shardMap + grad + pmean, jitted)",
  { skip },
  () => {
    const mesh = makeMesh([2], ["x"]);
    const xs = jnp.multiply(jnp.reshape(jnp.arange(8, { dtype: "float32" }), [4, 2]), 0.1),
      ys = jnp.array([1, 0, 1, 0], { dtype: "float32" });
    const lossB = (w: Array, xb: Array, yb: Array) => jnp.mean(jnp.square(jnp.subtract(jnp.matmul(xb, w), yb)));
    const update = shardMap(
      (w: Array, xb: Array, yb: Array) => jnp.subtract(w, jnp.multiply(lax.pmean(grad(lossB)(w, xb, yb), "x"), 0.1)),
      { mesh, inSpecs: [P(), P("x"), P("x")], outSpecs: P() },
    );
    const step = jit((w: Array) => update(w, xs, ys));
    config.update("spmdRuntime", "devices");
    try {
      let w = jnp.zeros([2]);
      // each step waits for its result and frees the previous weights (dispatch is asynchronous; arrays are freed by dispose)
      const r = flatOver(mesh.deviceIds, 5000, 50, () => {
        const prev = w;
        w = step(w).blockUntilReady();
        prev.dispose();
      });
      assert.deepEqual(
        lastLaunchTimeline().map((t) => t.device),
        [...mesh.deviceIds],
        "the steps ran on the devices",
      );
      assertFlat("5,000 steps", mesh.deviceIds, r, 5000, 50);
      // the same 5,000 gradient steps in float64: w <- w - 0.1 * (2 / 4) X^T (X w - y) (pmean of the blocks' mean grads)
      const X = xs.tolist() as number[][],
        y = ys.tolist() as number[];
      let ref = [0, 0];
      for (let i = 0; i < 5000; i++) {
        const r = X.map(([p, q], k) => p * ref[0] + q * ref[1] - y[k]);
        ref = ref.map((wj, j) => wj - 0.1 * 0.5 * X.reduce((s, row, k) => s + row[j] * r[k], 0));
      }
      (w.tolist() as number[]).forEach((got, i) =>
        assert.ok(Math.abs(got - ref[i]) < 1e-3 * Math.max(1, Math.abs(ref[i])), `w[${i}] ${got} vs ${ref[i]}`),
      );
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);

test(
  "memory stays flat over repeated grads of a shardMap (the known, tangent and transposed shard_maps)",
  { skip },
  () => {
    const mesh = makeMesh([2], ["x"]);
    const xs = jnp.reshape(jnp.arange(8, { dtype: "float32" }), [4, 2]);
    const loss = shardMap((w: Array, xb: Array) => lax.pmean(jnp.sum(jnp.tanh(jnp.matmul(xb, w))), "x"), {
      mesh,
      inSpecs: [P(), P("x")],
      outSpecs: P(),
    });
    const g = jit(grad((w: Array) => loss(w, xs)));
    config.update("spmdRuntime", "devices");
    try {
      const w = jnp.array([0.1, -0.2], { dtype: "float32" });
      assertFlat(
        "grads",
        mesh.deviceIds,
        flatOver(mesh.deviceIds, 250, 20, () => {
          (g(w) as Array).blockUntilReady().dispose();
        }),
        250,
        20,
      );
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);
