/**
 * @file Gradients at the points where JAX's rules pick a value (kinks, ties, removable singularities), eager and
 * under jit: the values a JAX user gets (rules read from JAX's lax / jnp definitions).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type Array, grad, jit, nn, numpy as jnp, vmap } from "../../src/index.js";

const f32 = (v: number | number[]) => jnp.array(v, "float32");
/** grad(f)(x) eagerly and under jit, as plain values. */
function both(f: (x: Array) => Array, x: Array): unknown[] {
  return [grad(f)(x).tolist(), jit(grad(f))(x).tolist()];
}

test("abs: d|x| is 1 at 0 and -0 (JAX's select(x >= 0, t, -t)), -1 below", () => {
  for (const [x, want] of [
    [0, 1],
    [-0, 1],
    [-2, -1],
    [3, 1],
  ])
    assert.deepEqual(both(jnp.abs, f32(x)), [want, want], `x = ${Object.is(x, -0) ? "-0" : x}`);
  assert.deepEqual((vmap(grad(jnp.abs))(f32([-1, 0, 1])) as Array).tolist(), [-1, 1, 1]);
});

test("hypot(x, 0) at 0: 0.5, from abs' 1 and the maximum tie's half (JAX's hypot is built from them)", () => {
  assert.deepEqual(
    both((x) => jnp.hypot(x, 0), f32(0)),
    [0.5, 0.5],
  );
});

test("ties: maximum/minimum split the cotangent in half, max/min share it among equal elements", () => {
  assert.deepEqual(
    both((x) => jnp.maximum(x, 0), f32(0)),
    [0.5, 0.5],
  );
  assert.deepEqual(
    both((x) => jnp.minimum(x, 0), f32(0)),
    [0.5, 0.5],
  );
  assert.deepEqual(
    both((x) => jnp.max(x), f32([1, 1, 0])),
    [
      [0.5, 0.5, 0],
      [0.5, 0.5, 0],
    ],
  );
  assert.deepEqual(
    both((x) => jnp.min(x), f32([2, 0, 0, 0])),
    [[0, 1 / 3, 1 / 3, 1 / 3].map(Math.fround), [0, 1 / 3, 1 / 3, 1 / 3].map(Math.fround)],
  );
});

test("relu at 0 is 0; sinc at 0 is 0; x ** 0.0 at 0 is 0", () => {
  assert.deepEqual(both(nn.relu, f32(0)), [0, 0]);
  assert.deepEqual(both(jnp.sinc, f32(0)), [0, 0]);
  assert.deepEqual(
    both((x) => jnp.power(x, 0.0), f32(0)),
    [0, 0],
  );
});

test("where does not stop a NaN from the branch it drops (JAX's documented gotcha): grad of where(x > 0, sqrt(x), 0) at 0 is NaN", () => {
  const [e, j] = both((x) => jnp.where(jnp.greater(x, 0), jnp.sqrt(x), 0), f32(0)) as number[];
  assert.ok(Number.isNaN(e) && Number.isNaN(j), `${e}, ${j}`);
});
