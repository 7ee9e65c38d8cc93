/** @file exportOnnx: the written model runs in plain onnxruntime-node and agrees with jaxts (forward and training step). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import * as jax from "../../src/index.js";
import { type Array, numpy as jnp, nn, exportOnnx } from "../../src/index.js";

async function runPlain(path: string, feeds: Record<string, Array>): Promise<Float32Array[]> {
  const sess = await ort.InferenceSession.create(readFileSync(path));
  const t: Record<string, ort.Tensor> = {};
  for (const [k, v] of Object.entries(feeds)) t[k] = new ort.Tensor("float32", v.dataSync() as Float32Array, v.shape);
  const out = await sess.run(t);
  return sess.outputNames.map((n) => out[n].data as Float32Array);
}
const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol = 1e-5) => {
  assert.equal(a.length, b.length);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol * (1 + Math.abs(b[i])), `element ${i}: ${a[i]} vs ${b[i]}`);
};

test("a forward function with a closed-over constant", async () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-export-"));
  const W = jnp.array([[0.5, -1], [2, 0.25], [1, 1]], { dtype: "float32" });
  const f = (x: Array) => nn.relu(jnp.tanh(jnp.matmul(x, W)));
  const x = jnp.array([[1, 2, 3], [-1, 0.5, 2]], { dtype: "float32" });
  const m = exportOnnx(join(dir, "f.onnx"), f, x);
  assert.deepEqual(m.inputNames, ["arg0"]);
  assert.deepEqual(readdirSync(dir), ["f.onnx"], "no temporary file is left behind");
  const [y] = await runPlain(join(dir, "f.onnx"), { arg0: x });
  close(y, f(x).dataSync() as Float32Array);
});

test("a training step (valueAndGrad + SGD) exports and matches", async () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-export-"));
  const loss = (w: Array, x: Array, y: Array) => jnp.mean(jnp.square(jnp.subtract(jnp.matmul(x, w), y)));
  const step = (w: Array, x: Array, y: Array) => {
    const [l, g] = jax.valueAndGrad(loss)(w, x, y) as [Array, Array];
    return [l, jnp.subtract(w, jnp.multiply(g, 0.1))];
  };
  const w = jnp.array([[0.1], [-0.2]], { dtype: "float32" });
  const x = jnp.array([[1, 2], [3, 4], [5, 6]], { dtype: "float32" });
  const y = jnp.array([[1], [2], [3]], { dtype: "float32" });
  exportOnnx(join(dir, "step.onnx"), step, w, x, y);
  const [l, w2] = await runPlain(join(dir, "step.onnx"), { arg0: w, arg1: x, arg2: y });
  const [lj, wj] = step(w, x, y) as Array[];
  close(l, lj.dataSync() as Float32Array);
  close(w2, wj.dataSync() as Float32Array);
});

test("a function that cannot be one ONNX graph is refused with the reason", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-export-"));
  const a = jnp.array([[4, 1], [1, 3]], { dtype: "float32" });
  assert.throws(() => exportOnnx(join(dir, "c.onnx"), (m: Array) => jnp.linalg.cholesky(m), a), /exportOnnx: .*cholesky/);
  assert.deepEqual(readdirSync(dir), []);
});
