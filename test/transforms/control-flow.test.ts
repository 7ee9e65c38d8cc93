/** @file Control flow: cond/switch/while/fori/scan/map against loops, with grad, vmap (batched predicate) and jit. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type Array, grad, jit, vmap, lax } from "../../src/index.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as jnp from "../../src/numpy/index.js";
import { assertClose } from "../helpers/fixtures.js";

const f32 = (v: number[] | number) => array(v, { dtype: "float32" });

test("scan computes running sums and stacked outputs", () => {
  const [c, ys] = lax.scan(
    (carry: Array, x: Array) => {
      const n = ops.add(carry, x);
      return [n, ops.mul(n, 2)];
    },
    f32(0),
    f32([1, 2, 3, 4]),
  );
  assert.equal(c.item(), 10);
  assert.deepEqual(ys.tolist(), [2, 6, 12, 20]);
  const [, rev] = lax.scan(
    (carry: Array, x: Array) => [ops.add(carry, x), ops.add(carry, x)] as [Array, Array],
    f32(0),
    f32([1, 2, 3, 4]),
    { reverse: true },
  );
  assert.deepEqual(rev.tolist(), [10, 9, 7, 4]);
});

test("grad through scan matches the analytic derivative", () => {
  // f(w) = sum_t tanh(w * x_t + h_{t-1}) chain; compare with finite differences in float32
  const xs = f32([0.5, -0.3, 0.8]);
  const f = (w: Array) =>
    lax.scan(
      (h: Array, x: Array) => {
        const n = ops.tanh(ops.add(ops.mul(w, x), h));
        return [n, n];
      },
      f32(0.1),
      xs,
    )[0];
  const g = (grad(f)(f32(0.7)) as Array).item() as number;
  const e = 1e-3;
  const fd = ((f(f32(0.7 + e)).item() as number) - (f(f32(0.7 - e)).item() as number)) / (2 * e);
  assert.ok(Math.abs(g - fd) < 2e-3, `grad ${g} vs finite difference ${fd}`);
  const gj = (jit(grad(f))(f32(0.7)) as Array).item() as number;
  assert.ok(Math.abs(gj - g) < 1e-6);
});

test("cond and switch pick branches; grad through cond", () => {
  const f = (x: Array) =>
    lax.cond(
      ops.gt(x, 0),
      (y: Array) => ops.mul(y, y),
      (y: Array) => ops.neg(y),
      x,
    ) as Array;
  assert.equal(f(f32(3)).item(), 9);
  assert.equal(f(f32(-3)).item(), 3);
  assert.equal((grad(f)(f32(3)) as Array).item(), 6);
  assert.equal((jit(grad(f))(f32(-3)) as Array).item(), -1);
  const s = (i: number, x: Array) =>
    lax.switch(i, [(y: Array) => ops.add(y, 1), (y: Array) => ops.mul(y, 10), (y: Array) => ops.neg(y)], x) as Array;
  assert.equal(s(1, f32(2)).item(), 20);
  assert.equal(s(7, f32(2)).item(), -2);
  const vb = vmap((x: Array) => f(x))(f32([-1, 2, -3])) as Array;
  assert.deepEqual(vb.tolist(), [1, 4, 3]);
});

test("whileLoop and foriLoop; vmap of while with a batched predicate", () => {
  const collatzSteps = (n: Array) =>
    lax.whileLoop(
      ([v]: [Array, Array]) => ops.gt(v, 1),
      ([v, k]: [Array, Array]) =>
        [ops.select(ops.eq(ops.rem(v, 2), 0), ops.div(v, 2), ops.add(ops.mul(v, 3), 1)), ops.add(k, 1)] as [
          Array,
          Array,
        ],
      [n, array(0)] as [Array, Array],
    )[1];
  assert.equal(collatzSteps(array(6)).item(), 8);
  const batched = vmap(collatzSteps)(array([1, 6, 7, 27])) as Array;
  assert.deepEqual(batched.tolist(), [0, 8, 16, 111]);
  assert.deepEqual((jit(vmap(collatzSteps))(array([1, 6, 7, 27])) as Array).tolist(), [0, 8, 16, 111]);
  const fact = (n: number) =>
    lax.foriLoop(1, n + 1, (i: Array, acc: Array) => ops.mul(acc, ops.convert(i, "float32")), f32(1));
  assert.equal(fact(5).item(), 120);
  // fori with static bounds is a scan, so it is differentiable: d/dx x^4 = 4x^3
  const p4 = (x: Array) => lax.foriLoop(0, 4, (_i: Array, acc: Array) => ops.mul(acc, x), f32(1));
  assertClose(grad(p4)(f32(1.5)) as Array, f32(4 * 1.5 ** 3), { rtol: 1e-5 });
});

test("lax.map applies a function to each slice", () => {
  const r = lax.map((x: Array) => ops.reduceSum(ops.mul(x, x), [0]), f32([1, 2, 3, 4]).reshape(2, 2)) as Array;
  assert.deepEqual(r.tolist(), [5, 25]);
});

test("grad of a scan over a weight used every step (closed-over const)", () => {
  const xs = f32([1, 2, 3]);
  const loss = (w: Array) =>
    lax.scan((c: Array, x: Array) => [ops.add(c, ops.mul(ops.mul(w, w), x)), null] as [Array, null], f32(0), xs)[0];
  // loss = w^2 * 6 -> dloss/dw = 12 w
  assert.ok(Math.abs(((grad(loss)(f32(0.5)) as Array).item() as number) - 6) < 1e-5);
});

test("loop carries: weak-typed initial values are promoted to the body's type (as JAX), weak-only differences are accepted", () => {
  // JS number carries are weak: the body's float32 result promotes them instead of truncating to int32
  const [c] = lax.scan(
    (s: Array, x: Array) => [jnp.add(s, x), null] as [Array, null],
    0 as unknown as Array,
    f32([0.5, 1.25]),
  );
  assert.equal(c.dtype, "float32");
  assert.equal(c.item(), 1.75);
  const w = lax.whileLoop(
    (v: Array) => jnp.less(v, 3),
    (v: Array) => jnp.add(v, 1.5),
    0 as unknown as Array,
  );
  assert.equal(w.dtype, "float32");
  assert.equal(w.item(), 3);
  const s = lax.foriLoop(0, 3, (_i, v: Array) => jnp.add(v, 0.5), 1 as unknown as Array);
  assert.equal(s.item(), 2.5);
  const d = lax.foriLoop(0, array(3), (_i, v: Array) => jnp.add(v, 0.25), 1 as unknown as Array);
  assert.equal(d.item(), 1.75);
  // an int carry stays int: the body's weak Python-style constants do not change it
  assert.equal(lax.foriLoop(0, 4, (i, v: Array) => jnp.add(v, i), 0 as unknown as Array).item(), 6);
  // the body sees the initial carry's weak type, as in JAX: weak int + int8 is int8, so the carry is promoted to int8
  const one8 = array(1, { dtype: "int8" });
  for (const r of [
    lax.foriLoop(0, 3, (_i, v: Array) => jnp.add(v, one8), 0 as unknown as Array),
    lax.foriLoop(0, array(3), (_i, v: Array) => jnp.add(v, one8), 0 as unknown as Array),
    lax.whileLoop(
      (v: Array) => jnp.less(v, 3),
      (v: Array) => jnp.add(v, one8),
      0 as unknown as Array,
    ),
  ]) {
    assert.equal(r.dtype, "int8");
    assert.equal(r.item(), 3);
  }
  // the result has the body output's weak type, as JAX: a JS-number carry kept weak stays weak (so it then adopts int8)
  for (const r of [
    lax.foriLoop(0, 3, (_i, v: Array) => jnp.add(v, 1), 0 as unknown as Array),
    lax.foriLoop(0, array(3), (_i, v: Array) => jnp.add(v, 1), 0 as unknown as Array),
    lax.whileLoop(
      (v: Array) => jnp.less(v, 3),
      (v: Array) => jnp.add(v, 1),
      0 as unknown as Array,
    ),
  ]) {
    assert.deepEqual([r.dtype, r.weakType, r.item()], ["int32", true, 3]);
    assert.equal(jnp.add(r, one8).dtype, "int8");
  }
  const strong = lax.scan(
    (v: Array, x: Array) => [jnp.add(v, x), null] as [Array, null],
    0 as unknown as Array,
    array([1, 2]),
  )[0];
  assert.deepEqual([strong.dtype, strong.weakType, strong.item()], ["int32", false, 3]);
  // a strong float32 carry may come back weak (only the weak type differs)
  assert.equal(
    lax
      .scan(
        (_c: Array, x: Array) => [jnp.add(ops.convert(x, "float32"), 0.5), null] as [Array, null],
        f32(0),
        array([1, 2]),
      )[0]
      .item(),
    2.5,
  );
});

const CARRY_BAD: [string, () => unknown, string[]][] = [
  [
    "scan carry dtype change",
    () => lax.scan((c: Array, x: Array) => [ops.convert(c, "int32"), x] as [Array, Array], f32(1.5), array([1, 2, 3])),
    [
      "lax.scan: scan body function carry input and carry output must have equal types",
      "The input carry has type float32[] but the corresponding output carry component has type int32[], so the dtypes do not match.",
    ],
  ],
  [
    "scan carry shape and dtype in a pytree",
    () =>
      lax.scan(
        (c: { a: Array; b: Array[] }) => [
          { a: ops.convert(c.a, "int32"), b: [c.b[0], ops.full([2], 0, "float32")] },
          null,
        ],
        { a: f32(1.5), b: [f32(1), ops.full([3], 0, "float32")] },
        null,
        { length: 2 },
      ),
    [
      "  * the input carry component carry.a has type float32[] but the corresponding output carry component has type int32[], so the dtypes do not match;",
      "  * the input carry component carry.b[1] has type float32[3] but the corresponding output carry component has type float32[2], so the shapes do not match.",
    ],
  ],
  [
    "scan strong carry is not promoted",
    () => lax.scan((c: Array) => [jnp.add(c, f32(0.5)), null], array(0, { dtype: "int32" }), null, { length: 2 }),
    ["has type int32[]", "output carry component has type float32[]"],
  ],
  [
    "scan carry structure",
    () => lax.scan(((c: Array) => [[c, c], null]) as never, f32(1), null, { length: 2 }),
    [
      "lax.scan: scan body function carry input and carry output must have the same pytree structure",
      "structure * but the carry output has structure [*, *]",
    ],
  ],
  [
    "scan body returns a non-pair",
    () => lax.scan(((c: Array) => c) as never, f32(1), null, { length: 2 }),
    ["lax.scan: scan body output must be a pair [carry, y], got Array f32[]"],
  ],
  [
    "whileLoop carry dtype",
    () =>
      lax.whileLoop(
        (c: Array) => jnp.less(c, 3),
        (c: Array) => jnp.add(c, 1.5),
        array(0, { dtype: "int32" }),
      ),
    [
      "lax.whileLoop: while_loop body function carry input and carry output must have equal types",
      "int32[]",
      "float32[]",
    ],
  ],
  [
    "foriLoop static carry dtype",
    () => lax.foriLoop(0, 3, (_i, c: Array) => ops.convert(c, "float32"), array(1, { dtype: "int32" })),
    [
      "lax.foriLoop: fori_loop body function",
      "The input carry has type int32[] but the corresponding output carry component has type float32[]",
    ],
  ],
  [
    "foriLoop dynamic carry dtype",
    () =>
      lax.foriLoop(0, array(3), (_i, c: { w: Array }) => ({ w: ops.convert(c.w, "float32") }), {
        w: array(1, { dtype: "int32" }),
      }),
    ["lax.foriLoop: fori_loop body function", "carry.w has type int32[]", "float32[]"],
  ],
  [
    "lax.map over a 0-d array",
    () => lax.map((x: Array) => x, array(3)),
    ["lax.map: xs leaf 0 is a 0-d array i32[]", "leading axis"],
  ],
  [
    "lax.switch with no branches",
    () => lax.switch(0, []),
    ["lax.switch: branches must be a non-empty list of functions, got an empty list"],
  ],
  [
    "lax.switch non-function branch",
    () => lax.switch(0, [5 as never]),
    ["lax.switch: branch 0 is number 5, expected a function"],
  ],
];
for (const [name, f, frags] of CARRY_BAD) {
  test(`bad input: ${name}`, () =>
    assert.throws(f, (e: Error) => {
      assert.ok(e instanceof TypeError, String(e));
      for (const fr of frags)
        assert.ok(e.message.includes(fr), `${JSON.stringify(e.message)} should include ${JSON.stringify(fr)}`);
      return true;
    }));
}

test("cond and switch: a captured array used by a later branch only (earlier branches capture nothing)", () => {
  const w = f32([1, 2, 3]);
  const x = f32([1, 1, 1]);
  // true_fun (branch 1) captures w; false_fun (branch 0) captures nothing: each branch gets its own consts.
  const f = (p: boolean | Array, v: Array) =>
    lax.cond(
      p,
      (u: Array) => ops.add(u, w),
      (u: Array) => ops.mul(u, 2),
      v,
    ) as Array;
  assert.deepEqual(f(true, x).tolist(), [2, 3, 4]);
  assert.deepEqual(f(false, x).tolist(), [2, 2, 2]);
  const jf = jit((p: Array, v: Array) => f(p, v));
  assert.deepEqual(jf(array(true), x).tolist(), [2, 3, 4]);
  assert.deepEqual(jf(array(false), x).tolist(), [2, 2, 2]);
  // grad flows to the captured array through the branch that uses it only.
  assert.deepEqual(
    grad((ww: Array) =>
      jnp.sum(
        lax.cond(
          true,
          (u: Array) => ops.mul(u, ww),
          (u: Array) => u,
          x,
        ) as Array,
      ),
    )(w).tolist(),
    [1, 1, 1],
  );
  const w2 = f32([10, 20, 30]);
  const s = (i: number) =>
    lax.switch(i, [(u: Array) => u, (u: Array) => ops.add(u, w), (u: Array) => ops.sub(u, w2)], x) as Array;
  assert.deepEqual(s(0).tolist(), [1, 1, 1]);
  assert.deepEqual(s(1).tolist(), [2, 3, 4]);
  assert.deepEqual(s(2).tolist(), [-9, -19, -29]);
});
