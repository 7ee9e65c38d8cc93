/** @file jnp cov, corrcoef, unwrap, windows and isin against NumPy fixtures, gradients vs finite differences, jit vs eager, bad inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as S from "../../src/numpy/statistics.js";
import * as ops from "../../src/primitives/ops.js";
import { jit, vmap } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runParityCases, testFixtureCoverage } from "./parity-cases.js";

const NAMES = ["bartlett", "blackman", "hamming", "hanning", "kaiser", "cov", "corrcoef", "unwrap", "isin"];
const cases = runParityCases(S as unknown as Record<string, unknown>, NAMES);

testFixtureCoverage("statistics", S as unknown as Record<string, unknown>, cases);

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
const M = [
  [0.5, -1, 2, 0.25],
  [1.5, 0.5, -0.5, 3],
  [2, 1, 0, -1],
];
test("cov / corrcoef / unwrap gradients agree with finite differences", () => {
  // constants are built inside f, which checkGrad calls under x64 (float64 outside x64 canonicalizes to float32)
  const w = (): Array =>
    array(
      [
        [1, -2, 0.5],
        [0.3, 2, -1],
        [1.5, 0.7, 1],
      ],
      { dtype: "float64" },
    );
  checkGrad("cov", (m) => sum(ops.mul(S.cov(m), w())), M);
  checkGrad(
    "cov aweights",
    (m) => sum(ops.mul(S.cov(m, { aweights: array([1, 2, 0.5, 1], { dtype: "float64" }) }), w())),
    M,
  );
  checkGrad("corrcoef", (m) => sum(ops.mul(S.corrcoef(m), w())), M, { rtol: 1e-4 });
  checkGrad(
    "unwrap",
    (p) => sum(ops.mul(S.unwrap(p), array([1, 2, 3, 4, 5], { dtype: "float64" }))),
    [0, 3, 6.5, 0.1, -3],
  );
});

test("cov / corrcoef / unwrap / isin under jit and vmap match eager", () => {
  const m = array(M, { dtype: "float32" });
  const close = (a: Array, b: Array, what: string): void => {
    const x = a.dataSync(),
      y = b.dataSync();
    assert.deepEqual(a.shape, b.shape, what);
    x.forEach((v, i) =>
      assert.ok(
        Math.abs(Number(v) - Number(y[i])) <= 1e-5 * (1 + Math.abs(Number(y[i]))),
        `${what}[${i}]: ${v} vs ${y[i]}`,
      ),
    );
  };
  close(jit((a: Array) => S.cov(a))(m), S.cov(m), "jit cov");
  close(jit((a: Array) => S.corrcoef(a))(m), S.corrcoef(m), "jit corrcoef");
  const p = array([0, 3, 6.5, 0.1, -3], { dtype: "float32" });
  close(jit((a: Array) => S.unwrap(a))(p), S.unwrap(p), "jit unwrap");
  assert.deepEqual(jit((a: Array, b: Array) => S.isin(a, b))(array([1, 2, 3]), array([3, 1])).tolist(), [
    true,
    false,
    true,
  ]);
  const batched = vmap((a: Array) => S.cov(a))(ops.reshape(ops.concatenate([m, ops.neg(m)], 0), [2, 3, 4]));
  close(batched, ops.reshape(ops.concatenate([S.cov(m), S.cov(m)], 0), [2, 3, 3]), "vmap cov");
});

test("statistics bad inputs name the function and the problem", () => {
  assert.throws(
    () => S.cov(ops.full([2, 2, 2], 1, "float32")),
    /cov: m has more than 2 dimensions, got shape \(2, 2, 2\)/,
  );
  assert.throws(
    () => S.cov(array([[1, 2, 3]]), array([1, 2])),
    /cov: m and y must have the same number of observations, got 3 and 2/,
  );
  assert.throws(() => S.cov(array([1, 2, 3]), { fweights: array([1.5, 1, 1]) }), /cov: fweights must be integers/);
  assert.throws(
    () => S.cov(array([1, 2, 3]), { aweights: array([1, 1]) }),
    /cov: aweights must be 1-D with one weight per observation \(3\), got shape \(2,\)/,
  );
  assert.throws(() => S.cov(array([1, 2, 3]), { bogus: 1 }), /cov: unexpected option "bogus"/);
  assert.throws(() => S.unwrap(array(1.5)), /unwrap: p must be at least 1-dimensional/);
  assert.throws(() => S.hamming(2.5), /hamming: M \(the window length\) must be a static integer/);
  assert.throws(() => S.kaiser(4, Number.NaN), /kaiser: beta must be a number/);
});

test("isin: the sort + binary-search method (auto past small sizes) equals compare_all and a JS membership test", () => {
  const ev = [3, -1, NaN, 7, 2, 2, 0, -5, 11, NaN, 4];
  const tv = [2, NaN, 7, 0, 0, 9, -1];
  const e = array(ev, { dtype: "float32" }),
    t = array(tv, { dtype: "float32" });
  // NaN is never equal to anything, itself included
  const want = ev.map((x) => tv.some((y) => y === x));
  for (const method of ["auto", "compare_all", "binary_search", "sort"]) {
    assert.deepEqual(S.isin(e, t, { method }).tolist(), want, method);
    assert.deepEqual(
      S.isin(e, t, { method, invert: true }).tolist(),
      want.map((w) => !w),
      `${method} invert`,
    );
    assert.deepEqual(jit((x: Array, y: Array) => S.isin(x, y, { method }))(e, t).tolist(), want, `jit ${method}`);
  }
  // large enough for "auto" to sort: 50,000 ints against the 300 odd numbers below 600
  const big = array(Int32Array.from({ length: 50000 }, (_, i) => (i * 7919) % 1000));
  const odd = array(Int32Array.from({ length: 300 }, (_, i) => 2 * i + 1));
  const got = S.isin(big, odd).tolist() as boolean[];
  got.forEach((g, i) => {
    const v = (i * 7919) % 1000;
    assert.equal(g, v % 2 === 1 && v < 600, `element ${v}`);
  });
  assert.throws(() => S.isin(e, t, { method: "hash" }), /isin: method must be one of "auto", "compare_all"/);
});
