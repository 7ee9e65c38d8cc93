/** @file The README's tour, run as a test so the README stays true. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as jax from "../../src/index.js";
import { numpy as jnp, random, lax, type Array } from "../../src/index.js";

test("README tour", () => {
  const x = jnp.array(
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
    { dtype: "float32" },
  );
  const f = (w: Array) => jnp.sum(jnp.tanh(jnp.multiply(w, w)));
  assert.match(jax.makeJaxpr(f)(x).toString(), /^\{ lambda ; a:f32\[2,3\]\. let\n {4}b:f32\[2,3\] = mul a a/);
  const g = jax.grad(f)(x);
  assert.ok(Math.abs((g.tolist() as number[][])[0][0] - 2 * (1 - Math.tanh(1) ** 2)) < 1e-6);
  // JAX prints this gradient as (NumPy's repr of float32, tanh(9) and beyond round to 1 so the rest are 0)
  assert.equal(
    g.toString(),
    "Array([[0.83994865, 0.00536442, 0.        ],\n       [0.        , 0.        , 0.        ]], dtype=float32)",
  );
  const perExample = jax.jit(jax.vmap(jax.grad((r: Array) => jnp.sum(jnp.sin(r)))));
  assert.ok(Math.abs((perExample(x).tolist() as number[][])[1][2] - Math.cos(6)) < 1e-6);
  const [y, vjpFn] = jax.vjp(jnp.sin, x);
  assert.ok(
    Math.abs(((vjpFn(jnp.onesLike(y as Array))[0] as Array).tolist() as number[][])[0][0] - Math.cos(1)) < 1e-6,
  );
  const [c, ys] = lax.scan((h: Array, xi: Array) => [h.add(xi), h] as [Array, Array], jnp.zeros([3]), x);
  assert.deepEqual(c.tolist(), [5, 7, 9]);
  assert.deepEqual(ys.tolist(), [
    [0, 0, 0],
    [1, 2, 3],
  ]);
  const z = random.normal(random.PRNGKey(0), [3]);
  assert.deepEqual(
    globalThis.Array.from(z.dataSync() as Float32Array),
    globalThis.Array.from(new Float32Array([1.6226422, 2.0252647, -0.43359444])),
  );
  assert.deepEqual(x.at(0, 1).set(10).tolist(), [
    [1, 10, 3],
    [4, 5, 6],
  ]);
  assert.deepEqual(x.get(":", "1:").tolist(), [
    [2, 3],
    [5, 6],
  ]);
});
