/** @file jax.nn functions against NumPy reference values (test/fixtures/numpy-math-nn.json), plus bad inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as R from "../../src/numpy/reductions.js";
import { grad, makeJaxpr } from "../../src/transforms/api.js";
import { multiply as jnpMul } from "../../src/numpy/elementwise-arith.js";
import * as nn from "../../src/nn/index.js";
import { type MathCase, assertThrowsWith, runFixture } from "../numpy/math-cases.js";
import { loadFixture } from "../helpers/fixtures.js";

const cases = runFixture("numpy-math-nn.json", nn as unknown as Record<string, unknown>);

test("fixture covers every exported nn function", () => {
  // dotProductAttention has its own fixture (test/fixtures/nn-attention.json, run by attention.test.ts)
  const covered = new Set(
    [...cases, ...loadFixture<{ cases: MathCase[] }>("nn-attention.json").cases].map((c) => c.fn),
  );
  const untested = Object.keys(nn).filter(
    (k) => typeof (nn as Record<string, unknown>)[k] === "function" && !covered.has(k),
  );
  assert.deepEqual(untested, []);
});

test("initializers: zeros, ones, constant", () => {
  assert.deepEqual(nn.initializers.zeros(null, [2]).tolist(), [0, 0]);
  assert.equal(nn.initializers.ones(null, [1, 2], "int32").dtype, "int32");
  const c = nn.initializers.constant(0.5)(null, [2, 1]);
  assert.equal(c.dtype, "float32");
  assert.deepEqual(c.tolist(), [[0.5], [0.5]]);
});

const BAD: [string, () => unknown, (string | RegExp)[]][] = [
  ["glu odd axis", () => nn.glu(array([[1, 2, 3]], { dtype: "float32" })), ["glu", "(1, 3)"]],
  ["softmax bad axis", () => nn.softmax(array([1, 2], { dtype: "float32" }), 1), ["softmax", "axis 1", "(2,)"]],
  ["oneHot bad numClasses", () => nn.oneHot(array([1]), -1), ["one_hot", "numClasses"]],
  ["oneHot bad axis", () => nn.oneHot(array([1]), 3, { axis: 2 }), ["one_hot", "axis 2"]],
  [
    "standardize bad algorithm",
    () => nn.standardize(array([1, 2], { dtype: "float32" }), { algorithm: "slow" as never }),
    ["standardize", "slow"],
  ],
  ["elu unknown option", () => nn.elu(array([1]), { beta: 1 } as never), ["elu", "beta"]],
];
for (const [name, f, pats] of BAD) test(`bad input: ${name}`, () => assertThrowsWith(f, ...pats));

test("relu and relu6 have gradient 0 at their kinks (JAX's convention); softmax rows sum to 1", () => {
  const x = array([-1, 0, 3, 6, 7], { dtype: "float32" });
  assert.deepEqual((grad((v: Array) => R.sum(nn.relu(v)))(x) as Array).tolist(), [0, 0, 1, 1, 1]);
  assert.deepEqual((grad((v: Array) => R.sum(nn.relu6(v)))(x) as Array).tolist(), [0, 0, 1, 0, 0]);
  const s = nn.softmax(
    array(
      [
        [1, 2, 3],
        [-1, 0, 100],
      ],
      { dtype: "float32" },
    ),
  );
  for (const v of R.sum(s, -1).tolist() as number[]) assert.ok(Math.abs(v - 1) < 1e-6);
});

test("softmax and logSoftmax treat the shifting max as a constant (stop_gradient, as JAX): no tie-splitting in the gradient", () => {
  const x = array(
    [
      [1, 3, 3],
      [2, -1, 0.5],
    ],
    { dtype: "float32" },
  );
  const y = array(
    [
      [1, 0, 0],
      [0, 1, 0],
    ],
    { dtype: "float32" },
  );
  for (const [name, f] of [
    ["logSoftmax", nn.logSoftmax],
    ["softmax", nn.softmax],
  ] as const) {
    const loss = (v: Array) => R.sum(jnpMul(f(v), y));
    // primitives the gradient's outputs depend on (the jaxpr also holds forward work nothing reads)
    const j = makeJaxpr(grad(loss))(x).jaxpr;
    const need = new Set<unknown>(j.outvars),
      used: string[] = [];
    for (let k = j.eqns.length - 1; k >= 0; k--) {
      const e = j.eqns[k];
      if (!e.outVars.some((v) => need.has(v))) continue;
      used.push(e.primitive.name);
      for (const a of e.inputs) need.add(a);
    }
    // the max's own JVP compares x with its max (eq) to split the derivative among tied maxima
    assert.ok(!used.includes("eq"), `${name}: the gradient reads a max-tie eq: ${used.join(" ")}`);
    // and the gradient is still right: row 0's tied maxima get the same derivative; log_softmax rows sum to 0 here
    const g = (grad(loss)(x) as Array).tolist() as number[][];
    assert.ok(Math.abs(g[0][1] - g[0][2]) < 1e-6, `${name}: ties`);
    if (name === "logSoftmax")
      for (const row of g)
        assert.ok(Math.abs(row.reduce((p, q) => p + q, 0)) < 1e-6, "log_softmax gradient rows sum to 0");
  }
});
