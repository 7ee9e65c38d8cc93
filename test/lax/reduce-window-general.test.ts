/** @file lax.reduceWindow with any computation (mul/and/or/a user function, non-identity init values) against NumPy loop references, plus grads (finite differences) and vmap. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as lax from "../../src/lax/index.js";
import * as jnp from "../../src/numpy/index.js";
import { jit, vmap } from "../../src/transforms/api.js";
import { array } from "../../src/numpy/core.js";
import type { Padding } from "../../src/lax/conv.js";
import { type FixArray, assertClose, decode, loadFixture } from "../helpers/fixtures.js";
import { checkGrad } from "../helpers/finite-diff.js";

interface RwCase {
  name: string;
  x: FixArray;
  init: number | boolean | string;
  op: string;
  window: number[];
  strides: number[];
  padding: Padding;
  base: number[];
  wdil: number[];
  expected: FixArray;
}
const { cases } = loadFixture<{ cases: RwCase[] }>("lax-reduce-window-general.json");
const COMP: Record<string, (a: Array, b: Array) => Array> = {
  mul: lax.mul,
  add: lax.add,
  max: lax.max,
  min: lax.min,
  and: lax.and,
  or: lax.or,
  // a user computation (not one of lax's reducers): runs as folded window slices
  logaddexp: (a, b) => jnp.logaddexp(a, b),
};
const initOf = (c: RwCase): number | boolean => (c.init === "-inf" ? -Infinity : (c.init as number | boolean));
const rw =
  (c: RwCase) =>
  (x: Array): Array =>
    lax.reduceWindow(x, initOf(c), COMP[c.op], c.window, c.strides, c.padding, c.base, c.wdil);

for (const c of cases) {
  test(`reduceWindow ${c.name} matches the NumPy loop reference (eager and jit)`, () => {
    const x = decode(c.x);
    assertClose(rw(c)(x), c.expected, { rtol: 1e-6, atol: 1e-6, msg: c.name });
    assertClose(jit(rw(c))(x), c.expected, { rtol: 1e-6, atol: 1e-6, msg: `${c.name} (jit)` });
  });
}

test("reduceWindow with a traced 0-d init value", () => {
  const c = cases.find((k) => k.name === "mul init 2 explicit pads")!;
  const f = (x: Array, init: Array) => lax.reduceWindow(x, init, lax.mul, c.window, c.strides, c.padding);
  assertClose(jit(f)(decode(c.x), array(2, { dtype: "float32" })), c.expected, { rtol: 1e-6, atol: 1e-6 });
});

test("grad of a product-pooling and a user-computation reduceWindow matches finite differences (float64)", () => {
  const x = [
    [0.9, 1.2, 0.7, 1.1],
    [1.3, 0.8, 1.05, 0.95],
    [1.0, 1.4, 0.6, 1.2],
  ];
  checkGrad("mul pooling", (a: Array) => jnp.sum(lax.reduceWindow(a, 1, lax.mul, [2, 2], [1, 2], "SAME")), x);
  checkGrad(
    "logaddexp pooling",
    (a: Array) =>
      jnp.sum(
        lax.reduceWindow(
          a,
          -Infinity,
          (p: Array, q: Array) => jnp.logaddexp(p, q),
          [2, 3],
          [1, 1],
          [
            [1, 0],
            [0, 1],
          ],
          [1, 2],
          [1, 1],
        ),
      ),
    x,
  );
  checkGrad(
    "add pooling with init 1",
    (a: Array) => jnp.sum(jnp.sin(lax.reduceWindow(a, 1, lax.add, [2, 2], [1, 1], "SAME"))),
    x,
  );
});

test("vmap of reduceWindow with a user computation equals the per-example loop", () => {
  const xs = array(
    [
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      [
        [0.5, 1, 2],
        [2, 1, 0.5],
      ],
    ],
    { dtype: "float32" },
  );
  const f = (x: Array) => lax.reduceWindow(x, 1, lax.mul, [2, 2], [1, 1], "VALID");
  const batched = vmap(f)(xs);
  // 1*2*4*5 = 40, 2*3*5*6 = 180; 0.5*1*2*1 = 1, 1*2*1*0.5 = 1
  assert.deepEqual(batched.tolist(), [[[40, 180]], [[1, 1]]]);
  assert.deepEqual(batched.tolist(), jnp.stack([f(jnp.getitem(xs, 0)), f(jnp.getitem(xs, 1))]).tolist());
});
