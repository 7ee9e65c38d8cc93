/** @file xmap: named axes against the equivalent positional computation. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type Array, lax, makeMesh, numpy as jnp, xmap, setMesh, config } from "../../src/index.js";

test("xmap maps named dimensions and places them with outAxes", () => {
  const x = jnp.reshape(jnp.arange(24, { dtype: "float32" }), [2, 3, 4]);
  // name dim 0 "batch" and dim 2 "model": f sees a vector of length 3
  const f = xmap((v: Array) => jnp.multiply(v, 2), {
    inAxes: ["batch", null, "model"],
    outAxes: ["model", "batch", "..."],
  });
  const y = f(x);
  assert.deepEqual(y.shape, [4, 2, 3]);
  assert.deepEqual(y.tolist(), jnp.transpose(jnp.multiply(x, 2), [2, 0, 1]).tolist());
});

test("collectives over named axes; dict-form axes; unnamed outputs broadcast", () => {
  const x = jnp.reshape(jnp.arange(12, { dtype: "float32" }), [3, 4]);
  const rowSums = xmap((v: Array) => lax.psum(v, "cols"), { inAxes: { 1: "cols" }, outAxes: {} })(x);
  assert.deepEqual(rowSums.tolist(), jnp.sum(x, 1).tolist());
  const normalized = xmap((v: Array) => jnp.divide(v, lax.psum(v, "cols")), {
    inAxes: [null, "cols"],
    outAxes: [null, "cols"],
  })(x);
  assert.deepEqual(normalized.shape, [3, 4]);
  assert.ok(Math.abs((normalized.tolist() as number[][])[1][2] - 6 / 22) < 1e-6);
  assert.throws(
    () => xmap((v: Array) => v, { inAxes: ["b", "..."], outAxes: ["..."] })(x),
    /varies over named axis "b"/,
  );
});

test("axisResources are checked against the mesh", () => {
  config.update("numCpuDevices", 4);
  const mesh = makeMesh([2], ["dp"]);
  const x = jnp.ones([2, 3]);
  assert.throws(
    () => xmap((v: Array) => v, { inAxes: ["b", "..."], outAxes: ["b", "..."], axisResources: { b: "tp" } })(x),
    /no mesh is set/,
  );
  setMesh(mesh);
  assert.throws(
    () => xmap((v: Array) => v, { inAxes: ["b", "..."], outAxes: ["b", "..."], axisResources: { b: "tp" } })(x),
    /"tp" for "b" is not an axis of Mesh\('dp': 2\)/,
  );
  assert.deepEqual(
    xmap((v: Array) => v, { inAxes: ["b", "..."], outAxes: ["b", "..."], axisResources: { b: "dp" } })(x).shape,
    [2, 3],
  );
  setMesh(null);
});
