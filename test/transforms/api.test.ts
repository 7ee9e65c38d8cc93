/** @file Transformations compose: jvp, grad, vmap, jit, jacobians, against analytic values and loops of slices. */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  Array,
  grad,
  jacfwd,
  jacrev,
  jit,
  jvp,
  makeJaxpr,
  valueAndGrad,
  vjp,
  vmap,
  hessian,
  UnexpectedTracerError,
  linearize,
} from "../../src/index.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { assertClose } from "../helpers/fixtures.js";

const sinSq = (x: Array) => ops.reduceSum(ops.mul(ops.sin(x), ops.sin(x)), [0]);

test("jvp of sin is cos", () => {
  const x = array([0.1, 0.5, 1.0]);
  const [y, t] = jvp((v: Array) => ops.sin(v), [x], [array([1, 1, 1], { dtype: "float32" })]) as [Array, Array];
  assertClose(y, array([Math.sin(0.1), Math.sin(0.5), Math.sin(1)], { dtype: "float32" }));
  assertClose(t, array([Math.cos(0.1), Math.cos(0.5), Math.cos(1)], { dtype: "float32" }));
});

test("grad of sum(sin^2) is sin(2x)", () => {
  const x = array([0.1, 0.5, 1.0, -2.0]);
  const g = grad(sinSq)(x) as Array;
  assertClose(
    g,
    array(
      [0.1, 0.5, 1.0, -2.0].map((v) => Math.sin(2 * v)),
      { dtype: "float32" },
    ),
    { rtol: 1e-5 },
  );
});

test("valueAndGrad with argnums and hasAux", () => {
  const f = (a: Array, b: Array): [Array, Array] => [ops.reduceSum(ops.mul(a, b), [0]), ops.add(a, 1)];
  const [[v, aux], [ga, gb]] = valueAndGrad(f, { argnums: [0, 1], hasAux: true })(
    array([1, 2]).astype("float32"),
    array([3, 4]).astype("float32"),
  );
  assert.equal(v.item(), 11);
  assert.deepEqual(aux.tolist(), [2, 3]);
  assert.deepEqual(ga.tolist(), [3, 4]);
  assert.deepEqual(gb.tolist(), [1, 2]);
});

test("grad of grad gives the second derivative", () => {
  const f = (x: Array) => ops.mul(ops.mul(x, x), x); // x^3
  const d2 = grad(grad(f))(2.0) as Array;
  assert.ok(Math.abs((d2.item() as number) - 12) < 1e-5);
  const h = hessian((x: Array) => ops.reduceSum(ops.mul(ops.mul(x, x), x), [0]))(array([1.0, 2.0], "float32")) as Array;
  assertClose(
    h,
    array(
      [
        [6, 0],
        [0, 12],
      ],
      { dtype: "float32" },
    ),
    { atol: 1e-5 },
  );
});

test("vmap matches a loop over slices, with in/out axes", () => {
  const x = array(
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
    { dtype: "float32" },
  );
  const f = (r: Array) => ops.mul(ops.sin(r), ops.reduceSum(r, [0]));
  const batched = vmap(f, { inAxes: 1, outAxes: 1 })(x) as Array;
  assert.deepEqual(batched.shape, [2, 3]);
  for (let j = 0; j < 3; j++) {
    const col = ops.reshape(ops.slice(x, [0, j], [2, j + 1]), [2]);
    const want = f(col);
    assertClose(ops.reshape(ops.slice(batched, [0, j], [2, j + 1]), [2]), want);
  }
});

test("jit matches eager, caches per shape, runs side effects once", () => {
  let traces = 0;
  const f = jit((x: Array, y: Array) => {
    traces++;
    return ops.add(ops.mul(x, 2), y);
  });
  const a = array([1, 2, 3], { dtype: "float32" }),
    b = array([10, 20, 30], { dtype: "float32" });
  assert.deepEqual((f(a, b) as Array).tolist(), [12, 24, 36]);
  assert.deepEqual((f(b, a) as Array).tolist(), [21, 42, 63]);
  assert.equal(traces, 1);
  f(array([1, 2], { dtype: "float32" }), array([1, 2], { dtype: "float32" }));
  assert.equal(traces, 2);
  assert.equal(f.cacheSize(), 2);
});

test("static args select different traces", () => {
  const f = jit((x: Array, n: number) => ops.integerPow(x, n), { staticArgnums: 1 });
  assert.equal((f(array(2.0, "float32"), 3) as Array).item(), 8);
  assert.equal((f(array(2.0, "float32"), 2) as Array).item(), 4);
});

test("static args are keyed by value, structure or identity: no stale program when they change", () => {
  let traces = 0;
  const f = jit(
    (x: Array, o: { act: (y: Array) => Array; k: number }) => {
      traces++;
      return ops.mul(o.act(x), o.k);
    },
    { staticArgnums: 1 },
  );
  const x = array([0.5, -2], { dtype: "float32" });
  const run = (act: (y: Array) => Array, k: number) => (f(x, { act, k }) as Array).tolist() as number[];
  assertClose(array(run(ops.tanh, 1), "float32"), array([Math.tanh(0.5), Math.tanh(-2)], "float32"));
  // the function (by identity) and the number inside the static object both select the trace
  assertClose(array(run(ops.sin, 1), "float32"), array([Math.sin(0.5), Math.sin(-2)], "float32"));
  assertClose(array(run(ops.sin, 3), "float32"), array([3 * Math.sin(0.5), 3 * Math.sin(-2)], "float32"));
  assert.equal(traces, 3);
  run(ops.tanh, 1);
  run(ops.sin, 3);
  assert.equal(traces, 3);
  // values JSON.stringify confuses: Infinity/-Infinity/NaN (all "null"), [1] vs ["1"]
  const g = jit(
    (x: Array, c: unknown) =>
      ops.add(
        x,
        typeof c === "number" ? c : (c as unknown[]).length * 10 + (typeof (c as unknown[])[0] === "string" ? 1 : 0),
      ),
    { staticArgnums: 1 },
  );
  const one = array(1, "float32");
  assert.deepEqual(
    [Infinity, -Infinity, NaN].map((c) => (g(one, c) as Array).item()),
    [Infinity, -Infinity, NaN],
  );
  assert.deepEqual(
    [[1], ["1"]].map((c) => (g(one, c) as Array).item()),
    [11, 12],
  );
  assert.equal(g.cacheSize(), 5);
  // -0 and +0 are different static values (1/x differs)
  const h = jit((x: Array, c: number) => ops.add(x, 1 / c), { staticArgnums: 1 });
  assert.deepEqual(
    [0, -0].map((c) => (h(one, c) as Array).item()),
    [Infinity, -Infinity],
  );
  // staticArgnames entries are keyed the same way
  const k = jit((x: Array, o: { act: (y: Array) => Array }) => o.act(x), { staticArgnames: "act" });
  assert.equal((k(array(0, "float32"), { act: ops.cos }) as Array).item(), 1);
  assert.equal((k(array(0, "float32"), { act: ops.exp }) as Array).item(), 1);
  assert.equal((k(array(0, "float32"), { act: ops.sin }) as Array).item(), 0);
});

test("compositions: jit(vmap(grad)) equals per-example grads", () => {
  const xs = array(
    [
      [0.1, 0.2],
      [0.3, -0.4],
      [1.0, 2.0],
    ],
    { dtype: "float32" },
  );
  const g = jit(vmap(grad(sinSq))) as (x: Array) => Array;
  const out = g(xs);
  const want = xs.tolist() as number[][];
  assertClose(
    out,
    array(
      want.map((r) => r.map((v) => Math.sin(2 * v))),
      { dtype: "float32" },
    ),
    { rtol: 1e-5 },
  );
});

test("jacfwd equals jacrev", () => {
  const f = (x: Array) => ops.mul(ops.sin(x), ops.reduceSum(ops.mul(x, x), [0]));
  const x = array([0.3, -0.7, 1.1], { dtype: "float32" });
  const jf = jacfwd(f)(x),
    jr = jacrev(f)(x);
  assert.deepEqual(jf.shape, [3, 3]);
  assertClose(jf, jr, { rtol: 1e-5, atol: 1e-6 });
});

test("vjp and linearize agree with jvp", () => {
  const f = (x: Array) => ops.exp(ops.mul(x, x));
  const x = array([0.5, -0.25], { dtype: "float32" });
  const t = array([1.0, 2.0], { dtype: "float32" });
  const ct = array([0.5, -1.5], { dtype: "float32" });
  const [, tout] = jvp(f, [x], [t]) as [Array, Array];
  const [, pull] = vjp(f, x);
  const [xct] = pull(ct) as [Array];
  // <ct, J t> == <J^T ct, t>
  const lhs = ops.reduceSum(ops.mul(ct, tout), [0]).item() as number;
  const rhs = ops.reduceSum(ops.mul(xct, t), [0]).item() as number;
  assert.ok(Math.abs(lhs - rhs) < 1e-5 * Math.abs(lhs));
  const [, fl] = linearize(f, x);
  assertClose(fl(t) as Array, tout);
});

test("makeJaxpr prints like JAX", () => {
  const j = makeJaxpr((x: Array) => ops.reduceSum(ops.sin(ops.mul(x, 2)), [0]))(array([1, 2, 3], { dtype: "float32" }));
  assert.equal(
    String(j),
    [
      "{ lambda ; a:f32[3]. let",
      "    b:f32[3] = mul a 2.0:f32[]",
      "    c:f32[3] = sin b",
      "    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c",
      "  in (d,) }",
    ].join("\n"),
  );
});

test("a leaked tracer raises UnexpectedTracerError naming the transformation", () => {
  let leaked: Array | null = null;
  jit((x: Array) => {
    leaked = ops.mul(x, 2);
    return x;
  })(array([1, 2], { dtype: "float32" }));
  assert.throws(
    () => ops.add(leaked!, 1),
    (e: Error) => e instanceof UnexpectedTracerError && /jit/.test(e.message) && /f32\[2\]/.test(e.message),
  );
});

test("grad rejects integer inputs and non-scalar outputs with clear errors", () => {
  assert.throws(() => grad((x: Array) => x)(array([1, 2])), /real-valued inputs.*int32/);
  assert.throws(() => grad((x: Array) => x)(array([1.5, 2.0])), /scalar outputs.*\[2\]/);
});

test("item() works on concrete primals under grad (Python control flow)", () => {
  const f = (x: Array) => ((x.item() as number) > 0 ? ops.mul(x, x) : ops.neg(x));
  assert.equal((grad(f)(3.0) as Array).item(), 6);
  assert.equal((grad(f)(-3.0) as Array).item(), -1);
});

test("jacobians over pytrees and argnums lists", () => {
  const f = (p: { a: Array; b: Array }, x: Array) => ops.add(ops.mul(p.a, x), ops.reduceSum(ops.mul(p.b, p.b), [0]));
  const p = { a: array([1, 2], { dtype: "float32" }), b: array([3, 4, 5], { dtype: "float32" }) };
  const x = array([0.5, -1], { dtype: "float32" });
  const jf = jacfwd(f)(p, x),
    jr = jacrev(f)(p, x);
  assert.deepEqual(jf.a.shape, [2, 2]);
  assert.deepEqual(jf.b.shape, [2, 3]);
  assertClose(
    jf.a,
    array(
      [
        [0.5, 0],
        [0, -1],
      ],
      { dtype: "float32" },
    ),
  );
  assertClose(
    jf.b,
    array(
      [
        [6, 8, 10],
        [6, 8, 10],
      ],
      { dtype: "float32" },
    ),
  );
  assertClose(jr.a, jf.a);
  assertClose(jr.b, jf.b);
  const [ja, jx] = jacrev((a: Array, y: Array) => ops.mul(a, y), { argnums: [0, 1] })(p.a, x);
  assertClose(
    jx,
    array(
      [
        [1, 0],
        [0, 2],
      ],
      { dtype: "float32" },
    ),
  );
  assertClose(
    ja,
    array(
      [
        [0.5, 0],
        [0, -1],
      ],
      { dtype: "float32" },
    ),
  );
});

test("integer inputs get zero cotangents; closed-over values are constants; non-array leaves are rejected", () => {
  const [, pull] = vjp(
    (x: Array, n: Array) => ops.mul(x, ops.convert(n, "float32")),
    array([1.5, 2], { dtype: "float32" }),
    array([3, 4]),
  );
  const [cx, cn] = pull(array([1, 1], { dtype: "float32" })) as [Array, Array];
  assert.deepEqual(cx.tolist(), [3, 4]);
  assert.deepEqual(cn.tolist(), [0, 0]);
  const c = array([2, 5], { dtype: "float32" });
  assert.deepEqual(
    (grad((x: Array) => ops.reduceSum(ops.mul(x, c), [0]))(array([1, 1], { dtype: "float32" })) as Array).tolist(),
    [2, 5],
  );
  assert.throws(
    () => jit((x: unknown) => x as Array)("hello"),
    /jit\(.*\): argument leaf 0 is string hello, which is not a valid JAX type/,
  );
});

const BAD: [string, () => unknown, string[]][] = [
  ["jit of a non-function", () => jit(123 as never), ["jit: expected a function to compile, got number 123"]],
  [
    "jit staticArgnums beyond the arity",
    () =>
      jit(
        function f(x: Array) {
          return x;
        },
        { staticArgnums: 3 },
      )(array(1)),
    [
      "jit(f): staticArgnums=[3]",
      "refers to argument(s) 3, but the function was called with only 1 positional argument(s)",
    ],
  ],
  [
    "jit negative staticArgnums beyond the arity",
    () => jit((x: Array, _n: number) => x, { staticArgnums: -3 })(array(1), 2),
    ["staticArgnums=[-3]", "argument(s) -3", "only 2 positional"],
  ],
  [
    "jit non-integer staticArgnums",
    () => jit((x: Array) => x, { staticArgnums: [0.5] }),
    ["staticArgnums must be an integer or a list of integers"],
  ],
  [
    "jit static Array argument",
    () => jit((x: Array, n: Array) => ops.add(x, n), { staticArgnums: 1 })(array(1), array([2, 3])),
    ["non-hashable static arguments are not supported: static argument 1 is a jaxts Array i32[2]"],
  ],
  [
    "jit static typed array argument",
    () => jit((x: Array, _t: Float32Array) => x, { staticArgnums: 1 })(array(1), new Float32Array(2)),
    ["static argument 1 is a Float32Array"],
  ],
  [
    "jit static Map inside an object",
    () => jit((x: Array, _o: object) => x, { staticArgnums: 1 })(array(1), { cfg: new Map() }),
    ["static argument 1 (at cfg) is a Map"],
  ],
  [
    "jit staticArgnames Array value",
    () => jit((x: Array, _o: { w: Array }) => x, { staticArgnames: "w" })(array(1), { w: array([1]) }),
    ['static argument "w" is a jaxts Array'],
  ],
  [
    "vmap outAxes beyond the output rank",
    () =>
      vmap((x: Array) => x, { outAxes: 5 })(
        array([
          [1, 2],
          [3, 4],
        ]),
      ),
    ["vmap: outAxes=5 is out of range for a mapped output of rank 2 (per-example shape [2])", "[-2, 1]"],
  ],
  [
    "vmap negative outAxes beyond the output rank",
    () => vmap((x: Array) => x, { outAxes: -3 })(array([1, 2])),
    ["vmap: outAxes=-3 is out of range for a mapped output of rank 1"],
  ],
  [
    "vmap outAxes on an unbatched output",
    () => vmap((_x: Array) => array([1, 2]), { outAxes: 2 })(array([1, 2, 3])),
    ["outAxes=2 is out of range for a mapped output of rank 2 (per-example shape [2])"],
  ],
];
for (const [name, f, frags] of BAD) {
  test(`bad input: ${name}`, () =>
    assert.throws(f, (e: Error) => {
      for (const fr of frags)
        assert.ok(e.message.includes(fr), `${JSON.stringify(e.message)} should include ${JSON.stringify(fr)}`);
      return true;
    }));
}

test("vmap outAxes in range, negative ones included, place the mapped axis", () => {
  const x = array([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  assert.deepEqual((vmap((r: Array) => r, { outAxes: -1 })(x) as Array).tolist(), [
    [1, 4],
    [2, 5],
    [3, 6],
  ]);
  assert.deepEqual((vmap((r: Array) => r, { outAxes: 1 })(x) as Array).shape, [3, 2]);
  assert.deepEqual((vmap((_r: Array) => array([7, 8]), { outAxes: 1 })(x) as Array).tolist(), [
    [7, 7],
    [8, 8],
  ]);
});

test("vjp(f, ...primals, { hasAux: true }) returns [out, vjpFn, aux] (JAX's has_aux)", () => {
  const x = array([0.5, 1.5], { dtype: "float32" });
  const r = vjp((v: Array) => [ops.reduceSum(ops.sin(v), [0]), { c: ops.cos(v), n: 3 }] as [Array, unknown], x, {
    hasAux: true,
  });
  assert.equal(r.length, 3);
  const [out, f, aux] = r as [Array, (ct: Array) => Array[], { c: Array; n: Array }];
  assert.ok(Math.abs(Number(out.item()) - (Math.sin(0.5) + Math.sin(1.5))) < 1e-6);
  assertClose(
    f(array(2, { dtype: "float32" }))[0],
    array([2 * Math.cos(0.5), 2 * Math.cos(1.5)], { dtype: "float32" }),
  );
  assertClose(aux.c, array([Math.cos(0.5), Math.cos(1.5)], { dtype: "float32" }));
  // several primals, and hasAux false keeps the two-element form
  const [o2, f2, a2] = vjp((a: Array, b: Array) => [ops.mul(a, b), ops.add(a, b)] as [Array, Array], 2, 3, {
    hasAux: true,
  });
  assert.deepEqual([o2.item(), a2.item()], [6, 5]);
  assert.deepEqual(
    (f2(array(1, { dtype: "float32" })) as Array[]).map((g) => g.item()),
    [3, 2],
  );
  assert.equal(vjp((v: Array) => ops.sin(v), x, { hasAux: false }).length, 2);
  assert.throws(
    () => vjp((v: Array) => ops.sin(v) as never, x, { hasAux: true }),
    /vjp: with hasAux the function must return a pair \[output, aux\]/,
  );
});

test("the function linearize returns takes JS numbers as float tangents, as jvp and vjp do", () => {
  const [y, f] = linearize((v: Array) => ops.mul(ops.sin(v), 3), 1);
  assert.ok(Math.abs(Number((y as Array).item()) - 3 * Math.sin(1)) < 1e-6);
  assert.ok(Math.abs(Number((f(2) as Array).item()) - 6 * Math.cos(1)) < 1e-6);
});
