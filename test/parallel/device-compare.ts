/** @file Helpers of the device-runtime tests: deterministic inputs and the emulation-vs-devices comparison. */
import assert from "node:assert/strict";
import { onDevices } from "../helpers/spmd-runtime.js";
import { config } from "../../src/core/config.js";
import { type Array, numpy as jnp } from "../../src/index.js";
import { lastLaunchTimeline } from "../../src/runtime/index.js";
const JSArray = globalThis.Array;

/** Deterministic values with distinct magnitudes (float sums then differ only by rounding). */
export function values(shape: number[], dtype: "float32" | "int32"): Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = JSArray.from({ length: n }, (_, i) =>
    dtype === "int32" ? ((i * 7919) % 201) - 100 : Math.sin(i * 1.37) * 10 + i * 0.01,
  );
  return jnp.reshape(jnp.array(v, { dtype }), shape);
}

export function flat(x: unknown): number[] {
  return (JSArray.isArray(x) ? (x as unknown[]).flat(Infinity) : [x]) as number[];
}

/**
 * Runs g on the emulation and on the devices: the same shape and dtype, equal values (exactly for integers, within
 * float32 rounding otherwise: `rtol`, looser for gradients, whose sums associate differently), and the device path really launched on `deviceIds` in rank order (with `launches`
 * false: no launch at all). Returns the device result.
 */
export function sameOnDevices(
  what: string,
  deviceIds: readonly number[],
  g: () => Array,
  launches = true,
  rtol = 1e-5,
): Array {
  config.update("spmdRuntime", "emulation");
  const want = g();
  const before = lastLaunchTimeline();
  const got = onDevices(g);
  const tl = lastLaunchTimeline();
  if (launches) {
    assert.notEqual(tl, before, `${what}: the device runtime did not run (fell back to the emulation)`);
    assert.deepEqual(
      tl.map((t) => t.device),
      [...deviceIds],
      `${what}: ran on devices [${deviceIds.join(", ")}] in rank order`,
    );
  } else {
    assert.equal(tl, before, `${what}: a body without computation needs no launch`);
  }
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  assert.equal(got.dtype, want.dtype, `${what}: dtype`);
  // complex elements ({re, im}) compare as their two parts
  const parts = (v: unknown): unknown[] =>
    flat(v).flatMap((e) =>
      typeof e === "object" && e !== null ? [(e as { re: number }).re, (e as { im: number }).im] : [e],
    );
  const a = parts(got.tolist()) as number[],
    b = parts(want.tolist()) as number[];
  if (want.dtype === "float32" || want.dtype === "complex64")
    a.forEach((v, i) =>
      assert.ok(Math.abs(v - b[i]) <= rtol * Math.max(1, Math.abs(b[i])), `${what}[${i}]: ${v} vs ${b[i]}`),
    );
  else assert.deepEqual(a, b, what);
  return got;
}
