/** @file exportOnnx: the written model runs in plain onnxruntime-node and agrees with jaxts (forward and training step). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import * as jax from "../../src/index.js";
import { ArrayImpl } from "../../src/core/array-impl.js";
import { Primitive } from "../../src/core/primitive.js";
import { bind } from "../../src/core/trace.js";
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
  for (let i = 0; i < a.length; i++)
    assert.ok(Math.abs(a[i] - b[i]) <= tol * (1 + Math.abs(b[i])), `element ${i}: ${a[i]} vs ${b[i]}`);
};

test("a forward function with a closed-over constant", async () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-export-"));
  const W = jnp.array(
    [
      [0.5, -1],
      [2, 0.25],
      [1, 1],
    ],
    { dtype: "float32" },
  );
  const f = (x: Array) => nn.relu(jnp.tanh(jnp.matmul(x, W)));
  const x = jnp.array(
    [
      [1, 2, 3],
      [-1, 0.5, 2],
    ],
    { dtype: "float32" },
  );
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
  const x = jnp.array(
    [
      [1, 2],
      [3, 4],
      [5, 6],
    ],
    { dtype: "float32" },
  );
  const y = jnp.array([[1], [2], [3]], { dtype: "float32" });
  exportOnnx(join(dir, "step.onnx"), step, w, x, y);
  const [l, w2] = await runPlain(join(dir, "step.onnx"), { arg0: w, arg1: x, arg2: y });
  const [lj, wj] = step(w, x, y) as Array[];
  close(l, lj.dataSync() as Float32Array);
  close(w2, wj.dataSync() as Float32Array);
});

test("a function that cannot be one ONNX graph is refused with the reason", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-export-"));
  const a = jnp.array(
    [
      [4, 1],
      [1, 3],
    ],
    { dtype: "float32" },
  );
  // a primitive with an interpreter impl only (defined here: every library primitive may gain a lowering)
  const hostOnly = new Primitive("test_export_host_only", {
    abstractEval: ([x]) => [x],
    impl: ([x]) => [new ArrayImpl(x.aval, Float32Array.from(x.dataSync() as Float32Array))],
    missing: { lower: "test primitive without a lowering" },
  });
  assert.throws(
    () => exportOnnx(join(dir, "c.onnx"), (m: Array) => bind(hostOnly as Primitive, [m])[0], a),
    /exportOnnx: .*test_export_host_only/,
  );
  assert.deepEqual(readdirSync(dir), []);
});

test("jnp.linalg.cholesky and solve export as one graph (lowered via lax loops) and run in plain ONNX Runtime", async () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-export-"));
  const a = jnp.array(
    [
      [4, 1, 0],
      [1, 3, 1],
      [0, 1, 2],
    ],
    { dtype: "float32" },
  );
  const b = jnp.array([[1], [2], [3]], { dtype: "float32" });
  const f = (m: Array, r: Array) => [jnp.linalg.cholesky(m), jnp.linalg.solve(m, r)];
  exportOnnx(join(dir, "c.onnx"), f, a, b);
  const [l, x] = await runPlain(join(dir, "c.onnx"), { arg0: a, arg1: b });
  const [lj, xj] = f(a, b);
  close(l, lj.dataSync() as Float32Array);
  close(x, xj.dataSync() as Float32Array);
  assert.ok(Math.abs(l[0] - 2) < 1e-6, "L[0, 0] = sqrt(4)");
});
