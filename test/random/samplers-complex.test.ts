/** @file random.normal with a complex dtype: JAX's construction (normal(k_re) + i normal(k_im)) / sqrt(2) from split keys, and its moments (each part variance 1/2). */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import * as np from "../../src/numpy/index.js";
import * as random from "../../src/random/index.js";
import { jit } from "../../src/transforms/api.js";
import { partsOfArray } from "../helpers/complex-fixtures.js";

const mean = (v: number[]): number => v.reduce((a, b) => a + b, 0) / v.length;

for (const [dt, part] of [
  ["complex64", "float32"],
  ["complex128", "float64"],
] as const) {
  test(`random.normal(key, shape, ${dt}): parts are normal(split keys) / sqrt(2), variance 1/2 each`, () => {
    const saved = config.enableX64;
    config.update("enableX64", dt === "complex128");
    try {
      const key = random.key(7);
      const n = 20000;
      const z = random.normal(key, [n], dt);
      assert.equal(z.dtype, dt);
      assert.deepEqual(z.shape, [n]);
      // JAX: split the key, one standard normal per part, divided by sqrt(2) in the part dtype
      const [kr, ki] = [random.split(key).get(0), random.split(key).get(1)] as unknown as [Array, Array];
      const s2 = np.sqrt(np.array(2, part));
      const [re, im] = partsOfArray(z);
      assert.deepEqual(re, partsOfArray(np.divide(random.normal(kr, [n], part), s2))[0]);
      assert.deepEqual(im, partsOfArray(np.divide(random.normal(ki, [n], part), s2))[0]);
      // moments: E re = E im = 0, Var re = Var im = 1/2, E|z|^2 = 1, re and im uncorrelated (4-sigma bounds)
      const sd = Math.sqrt(0.5 / n);
      assert.ok(Math.abs(mean(re)) < 4 * sd && Math.abs(mean(im)) < 4 * sd, "means");
      const vr = mean(re.map((v) => v * v)),
        vi = mean(im.map((v) => v * v));
      assert.ok(Math.abs(vr - 0.5) < 0.03 && Math.abs(vi - 0.5) < 0.03, `variances ${vr}, ${vi}`);
      assert.ok(Math.abs(mean(re.map((v, i) => v * im[i]))) < 4 * 0.5 * Math.sqrt(1 / n), "correlation");
      // the same values under jit
      assert.deepEqual(partsOfArray(jit((k: Array) => random.normal(k, [n], dt))(key as unknown as Array)), [re, im]);
    } finally {
      config.update("enableX64", saved);
    }
  });
}

test("random.normal refuses integer dtypes, naming float and complex", () => {
  assert.throws(
    () => random.normal(random.key(0), [2], "int32"),
    /normal.*must be a float or complex dtype, got int32/,
  );
});

test("random.orthogonal with a complex dtype: JAX's construction (qr of a complex normal, R's diagonal phases removed) gives unitary matrices", () => {
  const saved = config.enableX64;
  config.update("enableX64", true);
  try {
    const key = random.key(3);
    for (const [n, m] of [
      [3, 3],
      [4, 2],
      [2, 4],
    ]) {
      const q = random.orthogonal(key, n, [2], "complex128", m);
      assert.equal(q.dtype, "complex128");
      assert.deepEqual(q.shape, [2, n, m]);
      // JAX: z = normal(key, (*shape, max, min), dtype); q, r = qr(z); q * sign(diag(r)) (transposed when n < m)
      const z = random.normal(key, [2, Math.max(n, m), Math.min(n, m)], "complex128");
      const { Q, R } = np.linalg.qr(z) as np.linalg.QRResult;
      const d = np.diagonal(R, 0, -2, -1);
      let want = np.multiply(Q, np.expandDims(np.divide(d, np.astype(np.abs(d), "complex128")), -2));
      if (n < m) want = np.swapaxes(want, -1, -2);
      const [qr, qi] = partsOfArray(q),
        [wr, wi] = partsOfArray(want);
      qr.forEach((v, i) => assert.ok(Math.abs(v - wr[i]) < 1e-12 && Math.abs(qi[i] - wi[i]) < 1e-12, `entry ${i}`));
      // unitary: columns (n >= m) or rows (n < m) orthonormal under the Hermitian product
      const g = n >= m ? np.matmul(np.conj(np.swapaxes(q, -1, -2)), q) : np.matmul(q, np.conj(np.swapaxes(q, -1, -2)));
      const k = Math.min(n, m);
      const [gr, gi] = partsOfArray(g);
      gr.forEach((v, i) => {
        const jj = i % (k * k);
        const eye = Math.floor(jj / k) === jj % k ? 1 : 0;
        assert.ok(Math.abs(v - eye) < 1e-12 && Math.abs(gi[i]) < 1e-12, `gram ${n}x${m}[${i}] = ${v}, ${gi[i]}`);
      });
    }
    assert.throws(() => random.orthogonal(key, 2, [], "int32"), /orthogonal.*must be a float or complex dtype/);
  } finally {
    config.update("enableX64", saved);
  }
});
