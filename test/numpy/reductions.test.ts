/** @file jnp reductions against NumPy fixtures (test/fixtures/numpy-math-reductions.json), plus bad inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import type { Array } from "../../src/core/array.js";
import { ShapedArray } from "../../src/core/aval.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { typecheckJaxpr } from "../../src/core/jaxpr.js";
import { grad } from "../../src/transforms/api.js";
import { array } from "../../src/numpy/core.js";
import * as R from "../../src/numpy/reductions.js";
import { assertThrowsWith, runFixture } from "./math-cases.js";

const NS: Record<string, unknown> = { ...R };
const cases = runFixture("numpy-math-reductions.json", NS);

test("fixture covers every exported reduction", () => {
  const covered = new Set(cases.map((c) => c.fn));
  const untested = Object.keys(R).filter((k) => typeof NS[k] === "function" && !covered.has(k));
  assert.deepEqual(untested, []);
});

test("quantile / median sort with NaN last and stay fast on long axes (lax.sort, not pairwise ranking)", () => {
  const x = array(
    [
      [3, NaN, -1, 2, -1],
      [0, 0, 5, -7, NaN],
    ],
    { dtype: "float32" },
  );
  // nanmedian skips the NaN: sorted non-NaN rows [-1, -1, 2, 3] and [-7, 0, 0, 5]
  assert.deepEqual(R.nanmedian(x, 1).tolist(), [0.5, 0]);
  assert.deepEqual(R.nanquantile(x, 0, 1).tolist(), [-1, -7]);
  assert.deepEqual(R.nanquantile(x, 1, 1).tolist(), [3, 5]);
  // 200,001 values 0..200000 in a scrambled order (7919 is coprime to n): the median is 100000, exactly
  const n = 200001;
  const v = new Float32Array(n).map((_, i) => (i * 7919) % n);
  assert.equal(R.median(array(v)).item(), 100000);
  assert.equal(R.quantile(array(v), 0.25).item(), 50000);
});

test("method-style trailing undefineds and option objects parse like positional args", () => {
  const x = array(
    [
      [1, 2],
      [3, 4],
    ],
    { dtype: "float32" },
  );
  assert.deepEqual((R.sum as (...a: unknown[]) => typeof x)(x, undefined, undefined).tolist(), 10);
  assert.deepEqual((R.sum as (...a: unknown[]) => typeof x)(x, { axis: 1 }, undefined).tolist(), [3, 7]);
  assert.deepEqual((R.sum as (...a: unknown[]) => typeof x)(x, 0, { keepdims: true }).tolist(), [[4, 6]]);
});

const x234 = () =>
  array(
    [
      [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9, 10, 11, 12],
      ],
      [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9, 10, 11, 12],
      ],
    ],
    { dtype: "float32" },
  );
const BAD: [string, () => unknown, (string | RegExp)[]][] = [
  ["sum bad axis", () => R.sum(x234(), 3), ["sum", "axis 3", "(2, 3, 4)"]],
  ["mean bad negative axis", () => R.mean(x234(), -4), ["mean", "axis -4", "(2, 3, 4)"]],
  ["max repeated axis", () => R.max(x234(), [0, -3]), ["max", "repeated"]],
  ["sum bad dtype", () => R.sum(x234(), { dtype: "int128" as never }), ["sum", "int128"]],
  ["sum where not bool", () => R.sum(x234(), { where: array([1, 0, 1, 0]) }), ["sum", "where", "int32"]],
  ["sum where shape", () => R.sum(x234(), { where: array([true, false]) }), ["sum", "(2,)", "(2, 3, 4)"]],
  ["max of empty", () => R.max(array([], { dtype: "float32" })), ["max", "zero-size", "(0,)"]],
  ["min where without initial", () => R.min(x234(), { where: array(true) }), ["min", "initial"]],
  ["argmax of empty", () => R.argmax(array([], { dtype: "float32" })), ["argmax", "empty", "(0,)"]],
  ["argmin bad axis", () => R.argmin(x234(), 5), ["argmin", "axis 5", "(2, 3, 4)"]],
  ["var ddof and correction", () => R.var(x234(), { ddof: 1, correction: 1 }), ["var", "ddof", "correction"]],
  ["cumsum bad axis", () => R.cumsum(x234(), -5), ["cumsum", "axis -5", "(2, 3, 4)"]],
  ["cumulativeSum needs axis for n-d", () => R.cumulativeSum(x234()), ["cumulative_sum", "axis", "(2, 3, 4)"]],
  ["quantile 2-d q", () => R.quantile(x234(), array([[0.5]])), ["quantile", "(1, 1)"]],
  ["quantile bad method", () => R.quantile(x234(), 0.5, { method: "cubic" as never }), ["quantile", "cubic"]],
  ["average weights shape", () => R.average(x234(), 1, array([1, 2])), ["average", "(2,)", "(2, 3, 4)"]],
  ["average weights without axis", () => R.average(x234(), null, array([1, 2, 3, 4])), ["average", "axis", "(4,)"]],
  ["sum unknown option", () => R.sum(x234(), { axes: 0 } as never), ["sum", "axes"]],
];
for (const [name, f, pats] of BAD) test(`bad input: ${name}`, () => assertThrowsWith(f, ...pats));

test("statistics trace abstractly and differentiate", () => {
  const f32 = (...s: number[]) => new ShapedArray(s, "float32");
  for (const f of [
    (x: Array) => R.quantile(x, 0.3, 1),
    (x: Array) => R.median(x),
    (x: Array) => R.var(x, 0),
    (x: Array) => R.logsumexp(x, 1) as Array,
    (x: Array) => R.nanargmax(x, 1),
    (x: Array) => R.cumsum(x, 1),
  ]) {
    const { jaxpr } = traceToJaxpr((x) => [f(x)], [f32(2, 5)]);
    typecheckJaxpr(jaxpr);
  }
  const x = array([0, 1.5, -2, 3], { dtype: "float32" });
  // d median / dx: the two middle elements share the gradient
  assert.deepEqual((grad((v: Array) => R.median(v))(x) as Array).tolist(), [0.5, 0.5, 0, 0]);
  // d var / dx = 2 (x - mean) / n
  assert.deepEqual((grad((v: Array) => R.var(v))(x) as Array).tolist(), [-0.3125, 0.4375, -1.3125, 1.1875]);
});
