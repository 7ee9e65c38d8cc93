/** @file Collectives under vmap with a named axis, checked against JAX's stated values (test/fixtures/golden/parallel.json) and loops. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFixtureJson } from "../helpers/repo-root.js";
import { type Array, grad, jit, vmap, lax } from "../../src/index.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";

interface Case {
  id: string;
  inputs?: Record<string, unknown>;
  expected: unknown;
  sub_cases?: { op: string; expected: number[] }[];
}
const golden = readFixtureJson<{ cases: Case[] }>("golden/parallel.json");
const byId = (id: string) => golden.cases.find((c) => c.id === id)!;
const near = (a: unknown, b: unknown) => {
  const fa = (a as number[]).flat(3) as number[],
    fb = (b as number[]).flat(3) as number[];
  assert.equal(fa.length, fb.length);
  fa.forEach((v, i) => assert.ok(Math.abs(v - fb[i]) < 1e-6, `${v} vs ${fb[i]}`));
};

test("vmap_axis_name_psum (golden)", () => {
  const c = byId("vmap_axis_name_psum");
  const xs = array((c.inputs as { xs: number[][] }).xs, { dtype: "float32" });
  near(vmap((x: Array) => lax.psum(x, "i"), { axisName: "i" })(xs).tolist(), c.expected);
  near(jit(vmap((x: Array) => lax.psum(x, "i"), { axisName: "i" }))(xs).tolist(), c.expected);
});

test("pmap_psum_arange4 and its sub-cases, as vmap over a named axis (golden)", () => {
  const c = byId("pmap_psum_arange4");
  const x = array([0, 1, 2, 3], { dtype: "float32" });
  const v = (f: (x: Array) => Array) => vmap(f, { axisName: "i" })(x).tolist();
  near(
    v((y) => lax.psum(y, "i")),
    c.expected,
  );
  const subs = c.sub_cases!;
  near(
    v((y) => ops.div(y, lax.psum(y, "i"))),
    subs[0].expected,
  );
  near(
    v((y) =>
      lax.psum(y, "i", {
        axisIndexGroups: [
          [0, 1],
          [2, 3],
        ],
      }),
    ),
    subs[1].expected,
  );
  near(
    v((y) => lax.pmean(y, "i")),
    subs[2].expected,
  );
  near(
    v((y) => ops.div(y, lax.pmean(y, "i"))),
    subs[3].expected,
  );
});

test("pmap_all_gather, with groups (golden)", () => {
  const c = byId("pmap_all_gather");
  const exp = c.expected as Record<string, unknown>;
  near(vmap((y: Array) => lax.allGather(y, "i"), { axisName: "i" })(array([0, 1, 2, 3])).tolist(), exp["1d"]);
  const x2 = array((c.inputs as { x_2d: number[][] }).x_2d);
  near(
    vmap(
      (y: Array) =>
        lax.allGather(y, "i", {
          axisIndexGroups: [
            [0, 2],
            [3, 1],
          ],
        }),
      { axisName: "i" },
    )(x2).tolist(),
    exp["2d_groups_[[0,2],[3,1]]"],
  );
});

test("pmap_ppermute_ring as vmap (golden) and ppermute's transpose is the inverse permutation", () => {
  const c = byId("pmap_ppermute_ring");
  const inp = c.inputs as { x: number[][]; perm: [number, number][] };
  const out = vmap((y: Array) => lax.ppermute(y, "i", inp.perm), { axisName: "i" })(array(inp.x, { dtype: "float32" }));
  near(out.tolist(), c.expected);
  const n = 4;
  const ring = [...globalThis.Array(n).keys()].map((i) => [i, (i + 1) % n] as [number, number]);
  const ar = array([0, 1, 2, 3], { dtype: "float32" });
  near(
    vmap((y: Array) => lax.pshuffle(y, "i", [3, 0, 1, 2]), { axisName: "i" })(ar).tolist(),
    c.sub_cases![0].expected,
  );
  near(
    vmap(
      (y: Array) =>
        lax.ppermute(y, "i", [
          [0, 1],
          [1, 2],
          [2, 3],
        ]),
      { axisName: "i" },
    )(ar).tolist(),
    c.sub_cases![1].expected,
  );
  const x = ar;
  // d/dx sum(w * ppermute(x)) = ppermute^-1(w)
  const w = array([1, 10, 100, 1000], { dtype: "float32" });
  const g = grad((xx: Array) =>
    ops.reduceSum(ops.mul(w, vmap((y: Array) => lax.ppermute(y, "i", ring), { axisName: "i" })(xx)), [0]),
  )(x);
  assert.deepEqual(g.tolist(), [10, 100, 1000, 1]);
});

test("axisIndex, axisSize, pmax/pmin, psumScatter and allToAll under vmap agree with loops", () => {
  const x = array(
    [
      [1, 2, 3, 4],
      [5, 6, 7, 8],
      [9, 10, 11, 12],
      [13, 14, 15, 16],
    ],
    { dtype: "float32" },
  );
  assert.deepEqual(vmap(() => lax.axisIndex("i"), { axisName: "i", axisSize: 3 })().tolist(), [0, 1, 2]);
  assert.deepEqual(
    vmap((y: Array) => ops.add(lax.axisSize("i"), ops.mul(y, 0)), { axisName: "i" })(array([1, 2])).tolist(),
    [2, 2],
  );
  assert.deepEqual(
    vmap((y: Array) => lax.pmax(y, "i"), { axisName: "i" })(x).tolist(),
    globalThis.Array(4).fill([13, 14, 15, 16]),
  );
  // psum_scatter: member i gets element i of the sum
  assert.deepEqual(vmap((y: Array) => lax.psumScatter(y, "i"), { axisName: "i" })(x).tolist(), [28, 32, 36, 40]);
  // all_to_all (split 0, concat 0, untiled): out_i[j] = x_j[i], i.e. a transpose across members
  assert.deepEqual(vmap((y: Array) => lax.allToAll(y, "i", 0, 0), { axisName: "i" })(x).tolist(), [
    [1, 5, 9, 13],
    [2, 6, 10, 14],
    [3, 7, 11, 15],
    [4, 8, 12, 16],
  ]);
});

test("a collective over an unbound axis name fails with a clear error", () => {
  assert.throws(() => lax.psum(array([1, 2]), "batch"), /psum.*unbound axis name "batch"/);
  assert.throws(
    () => vmap((y: Array) => lax.allGather(y, "j"), { axisName: "i" })(array([1, 2])),
    /allGather.*unbound axis name "j"/,
  );
});

test("a jitted function with a collective inside vmap, even on unbatched inputs", () => {
  const f = jit((y: Array) => lax.psum(y, "i"));
  // unbatched input: every member holds the same value, so psum multiplies by the axis size
  const out = vmap((_: Array) => f(array(2, { dtype: "float32" })), { axisName: "i" })(
    array([0, 0, 0], { dtype: "float32" }),
  );
  assert.deepEqual(out.tolist(), [6, 6, 6]);
  assert.deepEqual(vmap(f, { axisName: "i" })(array([1, 2, 3], { dtype: "float32" })).tolist(), [6, 6, 6]);
});
