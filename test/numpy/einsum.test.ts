/** @file jnp.einsum's contraction order over several operands: values against NumPy (test/fixtures/numpy-gaps.json), eager and jit, and the chosen order. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { ShapedArray } from "../../src/core/aval.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { einsum } from "../../src/numpy/einsum.js";
import { runGapCases } from "./gaps-cases.js";

const cases = runGapCases({ einsum }, ["einsum"]);

test("the gaps fixture has einsum cases with three and four operands", () => {
  assert.ok(cases.filter((c) => (c.args[0] as string).split(",").length >= 3).length >= 4);
});

/** The multiplications of each traced dot_general (batch x free x free x contracted sizes). */
function dotWork(spec: string, shapes: number[][], opts: object = {}): number[] {
  const { jaxpr } = traceToJaxpr(
    (...xs: Array[]) => [einsum(spec, ...xs, opts)],
    shapes.map((s) => new ShapedArray(s, "float32")),
  );
  return jaxpr.eqns
    .filter((e) => e.primitive.name === "dot_general")
    .map((e) => {
      const [a, b] = e.inputs.map((v) => [...v.aval.shape]);
      const [[ca], [ba]] = e.params.dimension_numbers as [[number[], number[]], [number[], number[]]];
      const prodOf = (xs: number[]) => xs.reduce((p, q) => p * q, 1);
      const contracted = prodOf(ca.map((i) => a[i]));
      return prodOf(a) * (prodOf(b) / contracted / prodOf(ba.map((i) => a[i])));
    });
}

test("einsum contracts the cheapest pair first: 840 multiplications for a 4-chain instead of 7440 left to right", () => {
  const shapes = [
    [20, 3],
    [3, 40],
    [40, 6],
    [6, 2],
  ];
  const sum = (xs: number[]) => xs.reduce((p, q) => p + q, 0);
  assert.equal(sum(dotWork("ab,bc,cd,de->ae", shapes)), 840);
  assert.equal(sum(dotWork("ab,bc,cd,de->ae", shapes, { optimize: false })), 7440);
  assert.equal(sum(dotWork("ab,bc,cd,de->ae", shapes, { optimize: "none" })), 7440);
});

test("einsum avoids an outer product when a shared-label pair exists (ij,kl,jk: the first two share nothing)", () => {
  const shapes = [
    [30, 20],
    [20, 30],
    [20, 20],
  ];
  // greedy: (ij,jk) then (ik,kl), two matrix products; left to right first forms the (i, j, k, l) outer product
  assert.deepEqual(dotWork("ij,kl,jk->il", shapes), [30 * 20 * 20, 30 * 20 * 30]);
  assert.equal(dotWork("ij,kl,jk->il", shapes, { optimize: false })[0], 30 * 20 * 20 * 30);
});
