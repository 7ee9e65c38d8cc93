/** @file shardMap and pmap: JAX's stated results (golden) and agreement with the single-device computation. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, grad, jit, lax, makeMesh, numpy as jnp, pmap, shardMap, sharding } from "../../src/index.js";
const { P } = sharding;

const golden = JSON.parse(readFileSync("../shared/golden/parallel.json", "utf8")) as { cases: { id: string; inputs?: Record<string, unknown>; expected: unknown; sub_cases?: { expected: number[] }[] }[] };
const byId = (id: string) => golden.cases.find((c) => c.id === id)!;
const arange = (n: number, shape: number[]) => jnp.reshape(jnp.arange(n, { dtype: "float32" }), shape);

test("shard_map_block_shapes (golden)", () => {
  const c = byId("shard_map_block_shapes");
  const exp = c.expected as Record<string, number[]>;
  const mesh = makeMesh([4, 2], ["i", "j"]);
  const x = arange(144, [12, 12]);
  let seen: number[] = [];
  shardMap((b: Array) => { seen = b.shape; return b; }, { mesh, inSpecs: P("i", null), outSpecs: P("i", null) })(x);
  assert.deepEqual(seen, exp["in P('i',None): block shape"]);
  const f = (axes: string | string[], out: sharding.PartitionSpec) => shardMap((b: Array) => lax.psum(b, axes), { mesh, inSpecs: P("i", "j"), outSpecs: out })(x);
  assert.deepEqual(f("j", P("i", null)).shape, exp["in P('i','j') -> psum 'j' -> out P('i',None): output shape"]);
  assert.deepEqual(f("i", P(null, "j")).shape, exp["in P('i','j') -> psum 'i' -> out P(None,'j'): output shape"]);
  assert.deepEqual(f(["i", "j"], P(null, null)).shape, exp["in P('i','j') -> psum ('i','j') -> out P(None,None): output shape"]);
  // psum over j of the (3,6) blocks, laid out by i: equals summing the two column halves
  const want = jnp.add(x.get(":", ":6"), x.get(":", "6:"));
  assert.deepEqual(f("j", P("i", null)).tolist(), want.tolist());
  // closed-over values are replicated: out P('i','j') tiles them
  const small = jnp.array([[3]], { dtype: "float32" });
  const tiled = shardMap(() => small, { mesh, inSpecs: [], outSpecs: P("i", "j") })();
  assert.deepEqual(tiled.tolist(), jnp.tile(small, [4, 2]).tolist());
  assert.deepEqual(shardMap(() => small, { mesh, inSpecs: [], outSpecs: P("i", null) })().tolist(), jnp.tile(small, [4, 1]).tolist());
  assert.deepEqual(shardMap(() => small, { mesh, inSpecs: [], outSpecs: P(null, null) })().tolist(), small.tolist());
});

test("shard_map_axis_index_axis_size (golden)", () => {
  const c = byId("shard_map_axis_index_axis_size");
  const exp = c.expected as Record<string, unknown>;
  const m8 = makeMesh([8], ["i"]);
  const idx = shardMap(() => jnp.reshape(lax.axisIndex("i"), [1]), { mesh: m8, inSpecs: [], outSpecs: P("i") })();
  assert.deepEqual(idx.tolist(), exp["axis_index('i')[None], mesh (8,)"]);
  const m42 = makeMesh([4, 2], ["i", "j"]);
  const idx2 = shardMap(() => jnp.reshape(lax.axisIndex(["i", "j"]), [1, 1]), { mesh: m42, inSpecs: [], outSpecs: P("i", "j") })();
  assert.deepEqual(idx2.tolist(), exp["axis_index(('i','j'))[None,None], mesh (4,2) ('i','j'), out P('i','j')"]);
  // lax.axisSize is a static number (JAX's Python int); shardMap returns it as an array, as JAX does
  const s1 = shardMap(() => lax.axisSize("i"), { mesh: m8, inSpecs: [], outSpecs: P() })() as unknown as Array;
  const s2 = shardMap(() => lax.axisSize(["i", "j"]), { mesh: m42, inSpecs: [], outSpecs: P() })() as unknown as Array;
  assert.deepEqual([s1.item(), s2.item()], exp["axis_size('i') on (8,) and axis_size(('i','j')) on (4,2)"]);
});

test("a data-parallel gradient under shardMap equals the single-device gradient", () => {
  const mesh = makeMesh([4], ["data"]);
  const x = arange(16, [8, 2]);
  const y = jnp.array([1, 2, 3, 4, 5, 6, 7, 8], { dtype: "float32" });
  const w = jnp.array([0.1, -0.2], { dtype: "float32" });
  const loss = (w_: Array, xb: Array, yb: Array) => jnp.sum(jnp.square(jnp.subtract(jnp.matmul(xb, w_), yb)));
  const full = grad(loss)(w, x, y);
  const sharded = jit(shardMap((w_: Array, xb: Array, yb: Array) => lax.psum(grad(loss)(w_, xb, yb), "data"), { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: P() }))(w, x, y);
  assert.deepEqual(sharded.shape, [2]);
  (sharded.tolist() as number[]).forEach((v, i) => assert.ok(Math.abs(v - (full.tolist() as number[])[i]) < 1e-3 * Math.abs(v)));
});

test("pmap golden cases: psum, pmean, all_gather, ppermute", () => {
  const c = byId("pmap_psum_arange4");
  const x = jnp.array([0, 1, 2, 3], { dtype: "float32" });
  assert.deepEqual(pmap((v: Array) => lax.psum(v, "i"), { axisName: "i" })(x).tolist(), c.expected);
  const sub = c.sub_cases!;
  assert.deepEqual(pmap((v: Array) => lax.pmean(v, "i"), { axisName: "i" })(x).tolist(), sub[2].expected);
  const ag = byId("pmap_all_gather");
  assert.deepEqual(pmap((v: Array) => lax.allGather(v, "i"), { axisName: "i" })(jnp.array([0, 1, 2, 3])).tolist(), (ag.expected as Record<string, unknown>)["1d"]);
  const pr = byId("pmap_ppermute_ring");
  const inp = pr.inputs as { x: number[][]; perm: [number, number][] };
  assert.deepEqual(pmap((v: Array) => lax.ppermute(v, "i", inp.perm), { axisName: "i" })(jnp.array(inp.x)).tolist(), pr.expected);
});

test("bad shardMap/pmap input fails with clear errors", () => {
  const mesh = makeMesh([4], ["d"]);
  assert.throws(() => shardMap((b: Array) => b, { mesh, inSpecs: P("d"), outSpecs: P("d") })(jnp.zeros([6])), /dimension 0 \(size 6\) is not divisible by 4/);
  assert.throws(() => shardMap((b: Array) => b, { mesh, inSpecs: P("d"), outSpecs: P() })(jnp.zeros([8])), /declared replicated over mesh axis "d".*varies/);
  assert.throws(() => pmap((v: Array) => v)(jnp.zeros([16])), /requires 16 logical devices, but only 8/);
});

test("tensor-parallel gradients through psum equal the single-device gradients (varying vs invariant cotangents)", () => {
  const mesh = makeMesh([2], ["model"]);
  const x = jnp.reshape(jnp.arange(12, { dtype: "float32" }), [3, 4]);
  const w1 = jnp.multiply(jnp.reshape(jnp.arange(24, { dtype: "float32" }), [4, 6]), 0.05);
  const w2 = jnp.multiply(jnp.reshape(jnp.arange(12, { dtype: "float32" }), [6, 2]), -0.1);
  const lossFull = (a: Array, b: Array) => jnp.sum(jnp.square(jnp.matmul(jnp.tanh(jnp.matmul(x, a)), b)));
  const [g1, g2] = grad(lossFull, { argnums: [0, 1] })(w1, w2) as unknown as [Array, Array];
  const lossShard = (a: Array, b: Array) => jnp.sum(jnp.square(lax.psum(jnp.matmul(jnp.tanh(jnp.matmul(x, a)), b), "model")));
  const tp = shardMap((a: Array, b: Array) => grad(lossShard, { argnums: [0, 1] })(a, b) as unknown as [Array, Array],
    { mesh, inSpecs: [P(null, "model"), P("model", null)], outSpecs: [P(null, "model"), P("model", null)] });
  const [t1, t2] = tp(w1, w2);
  const close = (u: Array, v: Array) => (u.tolist() as number[][]).flat().forEach((e, i) => assert.ok(Math.abs(e - (v.tolist() as number[][]).flat()[i]) < 1e-4 * (1 + Math.abs(e)), `${e} vs ${(v.tolist() as number[][]).flat()[i]}`));
  close(t1, g1);
  close(t2, g2);
});
