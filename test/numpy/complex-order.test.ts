/** @file Lexicographic ordering of complex values (sort, argsort, sortComplex, maximum/minimum, max/min, argmax/argmin) against NumPy fixtures: eager, under jit, and under vmap where the function maps over rows. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as np from "../../src/numpy/index.js";
import { jit, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { type CFix, assertCloseC, decodeC } from "../helpers/complex-fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Case {
  name: string;
  fn: string;
  args: CFix[];
  out: CFix;
  x64: boolean;
  kwargs?: Record<string, unknown>;
}
const fx = loadFixture<{ cases: Case[] }>("complex-order.json");
const camel = (s: string): string => s.replace(/_(.)/g, (_, c: string) => c.toUpperCase());
type Fn = (...a: unknown[]) => Array;
// rows are independent for these along the last axis: vmap over the leading axis gives the same result
const ROWWISE = new Set(["sort", "argsort", "sort_complex", "maximum", "minimum"]);

for (const c of fx.cases) {
  test(`complex order ${c.name}: eager, jit${ROWWISE.has(c.fn) && !c.kwargs ? " and vmap" : ""} match NumPy`, () =>
    withX64(c.x64, () => {
      const g = (np as unknown as Record<string, Fn>)[camel(c.fn)];
      assert.ok(g, `jnp.${camel(c.fn)} exists`);
      const f = (...a: Array[]): Array => (c.kwargs ? g(...a, c.kwargs) : g(...a));
      const args = c.args.map(decodeC);
      const tol = { rtol: 0, atol: 0 };
      assertCloseC(f(...args), c.out, { ...tol, msg: "eager" });
      assertCloseC(jit(f)(...args), c.out, { ...tol, msg: "jit" });
      if (ROWWISE.has(c.fn) && !c.kwargs && args.every((a) => a.ndim === 2 || c.fn === "maximum")) {
        const axes = args.map((a) => (a.ndim === 2 ? 0 : null));
        assertCloseC((vmap(f, { inAxes: axes }) as (...a: Array[]) => Array)(...args), c.out, { ...tol, msg: "vmap" });
      }
    }));
}

test("complex ordering: ties in both parts keep the first index; initial/where are refused for complex max", () => {
  const z = np.complex(np.array([1, 1, 0, 1], "float32"), np.array([2, 2, 5, -1], "float32"));
  assert.equal(Number(np.argmax(z)), 0);
  assert.equal(Number(np.argmin(z)), 2);
  assert.deepEqual(np.argsort(z).tolist(), [2, 3, 0, 1]);
  assert.throws(() => np.max(z, { initial: 0 } as never), /max: initial and where are not supported for complex/);
});
