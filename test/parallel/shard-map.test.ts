/** @file shardMap and pmap: JAX's stated results (golden) and agreement with the single-device computation. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFixtureJson } from "../helpers/repo-root.js";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import {
  type Array,
  grad,
  jit,
  lax,
  makeMesh,
  numpy as jnp,
  pmap,
  setMesh,
  shardMap,
  sharding,
} from "../../src/index.js";
const { P } = sharding;

const golden = readFixtureJson<{
  cases: { id: string; inputs?: Record<string, unknown>; expected: unknown; sub_cases?: { expected: number[] }[] }[];
}>("golden/parallel.json");
const byId = (id: string) => golden.cases.find((c) => c.id === id)!;
const arange = (n: number, shape: number[]) => jnp.reshape(jnp.arange(n, { dtype: "float32" }), shape);

test("shard_map_block_shapes (golden)", () => {
  const c = byId("shard_map_block_shapes");
  const exp = c.expected as Record<string, number[]>;
  const mesh = makeMesh([4, 2], ["i", "j"]);
  const x = arange(144, [12, 12]);
  let seen: number[] = [];
  shardMap(
    (b: Array) => {
      seen = b.shape;
      return b;
    },
    { mesh, inSpecs: P("i", null), outSpecs: P("i", null) },
  )(x);
  assert.deepEqual(seen, exp["in P('i',None): block shape"]);
  const f = (axes: string | string[], out: sharding.PartitionSpec) =>
    shardMap((b: Array) => lax.psum(b, axes), { mesh, inSpecs: P("i", "j"), outSpecs: out })(x);
  assert.deepEqual(f("j", P("i", null)).shape, exp["in P('i','j') -> psum 'j' -> out P('i',None): output shape"]);
  assert.deepEqual(f("i", P(null, "j")).shape, exp["in P('i','j') -> psum 'i' -> out P(None,'j'): output shape"]);
  assert.deepEqual(
    f(["i", "j"], P(null, null)).shape,
    exp["in P('i','j') -> psum ('i','j') -> out P(None,None): output shape"],
  );
  // psum over j of the (3,6) blocks, laid out by i: equals summing the two column halves
  const want = jnp.add(x.get(":", ":6"), x.get(":", "6:"));
  assert.deepEqual(f("j", P("i", null)).tolist(), want.tolist());
  // closed-over values are replicated: out P('i','j') tiles them
  const small = jnp.array([[3]], { dtype: "float32" });
  const tiled = shardMap(() => small, { mesh, inSpecs: [], outSpecs: P("i", "j") })();
  assert.deepEqual(tiled.tolist(), jnp.tile(small, [4, 2]).tolist());
  assert.deepEqual(
    shardMap(() => small, { mesh, inSpecs: [], outSpecs: P("i", null) })().tolist(),
    jnp.tile(small, [4, 1]).tolist(),
  );
  assert.deepEqual(shardMap(() => small, { mesh, inSpecs: [], outSpecs: P(null, null) })().tolist(), small.tolist());
});

test("shard_map_axis_index_axis_size (golden)", () => {
  const c = byId("shard_map_axis_index_axis_size");
  const exp = c.expected as Record<string, unknown>;
  const m8 = makeMesh([8], ["i"]);
  const idx = shardMap(() => jnp.reshape(lax.axisIndex("i"), [1]), { mesh: m8, inSpecs: [], outSpecs: P("i") })();
  assert.deepEqual(idx.tolist(), exp["axis_index('i')[None], mesh (8,)"]);
  const m42 = makeMesh([4, 2], ["i", "j"]);
  const idx2 = shardMap(() => jnp.reshape(lax.axisIndex(["i", "j"]), [1, 1]), {
    mesh: m42,
    inSpecs: [],
    outSpecs: P("i", "j"),
  })();
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
  const sharded = jit(
    shardMap((w_: Array, xb: Array, yb: Array) => lax.psum(grad(loss)(w_, xb, yb), "data"), {
      mesh,
      inSpecs: [P(), P("data"), P("data")],
      outSpecs: P(),
    }),
  )(w, x, y);
  assert.deepEqual(sharded.shape, [2]);
  (sharded.tolist() as number[]).forEach((v, i) =>
    assert.ok(Math.abs(v - (full.tolist() as number[])[i]) < 1e-3 * Math.abs(v)),
  );
});

test("pmap golden cases: psum, pmean, all_gather, ppermute", () => {
  const c = byId("pmap_psum_arange4");
  const x = jnp.array([0, 1, 2, 3], { dtype: "float32" });
  assert.deepEqual(pmap((v: Array) => lax.psum(v, "i"), { axisName: "i" })(x).tolist(), c.expected);
  const sub = c.sub_cases!;
  assert.deepEqual(pmap((v: Array) => lax.pmean(v, "i"), { axisName: "i" })(x).tolist(), sub[2].expected);
  const ag = byId("pmap_all_gather");
  assert.deepEqual(
    pmap((v: Array) => lax.allGather(v, "i"), { axisName: "i" })(jnp.array([0, 1, 2, 3])).tolist(),
    (ag.expected as Record<string, unknown>)["1d"],
  );
  const pr = byId("pmap_ppermute_ring");
  const inp = pr.inputs as { x: number[][]; perm: [number, number][] };
  assert.deepEqual(
    pmap((v: Array) => lax.ppermute(v, "i", inp.perm), { axisName: "i" })(jnp.array(inp.x)).tolist(),
    pr.expected,
  );
});

test("bad shardMap/pmap input fails with clear errors", () => {
  const mesh = makeMesh([4], ["d"]);
  assert.throws(
    () => shardMap((b: Array) => b, { mesh, inSpecs: P("d"), outSpecs: P("d") })(jnp.zeros([6])),
    /dimension 0 \(size 6\) is not divisible by 4/,
  );
  assert.throws(
    () => shardMap((b: Array) => b, { mesh, inSpecs: P("d"), outSpecs: P() })(jnp.zeros([8])),
    /declared replicated over mesh axis "d".*varies/,
  );
  assert.throws(() => pmap((v: Array) => v)(jnp.zeros([16])), /requires 16 logical devices, but only 8/);
});

test("tensor-parallel gradients through psum equal the single-device gradients (varying vs invariant cotangents)", () => {
  const mesh = makeMesh([2], ["model"]);
  const x = jnp.reshape(jnp.arange(12, { dtype: "float32" }), [3, 4]);
  const w1 = jnp.multiply(jnp.reshape(jnp.arange(24, { dtype: "float32" }), [4, 6]), 0.05);
  const w2 = jnp.multiply(jnp.reshape(jnp.arange(12, { dtype: "float32" }), [6, 2]), -0.1);
  const lossFull = (a: Array, b: Array) => jnp.sum(jnp.square(jnp.matmul(jnp.tanh(jnp.matmul(x, a)), b)));
  const [g1, g2] = grad(lossFull, { argnums: [0, 1] })(w1, w2) as unknown as [Array, Array];
  const lossShard = (a: Array, b: Array) =>
    jnp.sum(jnp.square(lax.psum(jnp.matmul(jnp.tanh(jnp.matmul(x, a)), b), "model")));
  const tp = shardMap((a: Array, b: Array) => grad(lossShard, { argnums: [0, 1] })(a, b) as unknown as [Array, Array], {
    mesh,
    inSpecs: [P(null, "model"), P("model", null)],
    outSpecs: [P(null, "model"), P("model", null)],
  });
  const [t1, t2] = tp(w1, w2);
  const close = (u: Array, v: Array) =>
    (u.tolist() as number[][])
      .flat()
      .forEach((e, i) =>
        assert.ok(
          Math.abs(e - (v.tolist() as number[][]).flat()[i]) < 1e-4 * (1 + Math.abs(e)),
          `${e} vs ${(v.tolist() as number[][]).flat()[i]}`,
        ),
      );
  close(t1, g1);
  close(t2, g2);
});

test("checkVma: false skips the replication check; an output unsharded over an axis is the first device's value", () => {
  const m4 = makeMesh([4], ["i"]);
  const x = jnp.arange(8, { dtype: "float32" });
  assert.deepEqual(
    shardMap((b: Array) => b, { mesh: m4, inSpecs: P("i"), outSpecs: P(), checkVma: false })(x).tolist(),
    [0, 1],
  );
  const m = makeMesh([2, 4], ["i", "j"]);
  const x2 = arange(64, [8, 8]);
  // varying over j but declared P('i', None): the blocks of j = 0, laid out along i
  const out = shardMap((b: Array) => b, { mesh: m, inSpecs: P("i", "j"), outSpecs: P("i", null), checkVma: false })(x2);
  assert.deepEqual(out.tolist(), jnp.concatenate([x2.get("0:4", "0:2"), x2.get("4:8", "0:2")], 0).tolist());
  // with the check on (the default) the same program is an error naming the axis
  assert.throws(
    () => shardMap((b: Array) => b, { mesh: m, inSpecs: P("i", "j"), outSpecs: P("i", null) })(x2),
    /shardMap: an output is declared replicated over mesh axis "j"/,
  );
  // checkRep is the older name
  assert.deepEqual(
    shardMap((b: Array) => b, { mesh: m4, inSpecs: P("i"), outSpecs: P(), checkRep: false })(x).tolist(),
    [0, 1],
  );
});

test("axisNames: only those mesh axes are manual; f sees whole data along the others", () => {
  const m = makeMesh([2, 4], ["i", "j"]);
  const x = arange(64, [8, 8]);
  let seen: number[] = [];
  const f = shardMap(
    (b: Array) => {
      seen = b.shape;
      return lax.psum(b, "i");
    },
    { mesh: m, inSpecs: P("i"), outSpecs: P(), axisNames: ["i"] },
  );
  assert.deepEqual(f(x).tolist(), jnp.add(x.get("0:4"), x.get("4:8")).tolist());
  assert.deepEqual(seen, [4, 8]);
  assert.throws(
    () => shardMap((b: Array) => lax.psum(b, "j"), { mesh: m, inSpecs: P("i"), outSpecs: P(), axisNames: ["i"] })(x),
    /unbound axis name "j"/,
  );
  assert.throws(
    () => shardMap((b: Array) => b, { mesh: m, inSpecs: P("i", "j"), outSpecs: P("i"), axisNames: ["i"] })(x),
    /shardMap: in_specs\[0\] PartitionSpec\('i', 'j'\) refers to axis "j", which is not a manual axis \(axisNames: i\)/,
  );
  assert.throws(
    () => shardMap((b: Array) => b, { mesh: m, inSpecs: P("i"), outSpecs: P("i"), axisNames: ["k"] })(x),
    /shardMap: axisNames \[k\] must be a subset of the mesh axis names \[i, j\]/,
  );
});

test("null in_specs pass non-array arguments through unchanged; spec prefixes cover pytrees", () => {
  const m = makeMesh([4], ["d"]);
  const x = jnp.arange(8, { dtype: "float32" });
  const cfg = { scale: 3, act: "relu", fn: (a: Array) => jnp.add(a, 1) };
  const f = shardMap((b: Array, c: typeof cfg) => c.fn(jnp.multiply(b, c.scale)), {
    mesh: m,
    inSpecs: [P("d"), null],
    outSpecs: P("d"),
  });
  assert.deepEqual(f(x, cfg).tolist(), [1, 4, 7, 10, 13, 16, 19, 22]);
  // one spec for a whole tuple argument, and a dict of specs
  const g = shardMap((t: [Array, Array], d: { w: Array }) => jnp.add(jnp.add(t[0], t[1]), d.w), {
    mesh: m,
    inSpecs: [P("d"), { w: P() }],
    outSpecs: P("d"),
  });
  assert.deepEqual(
    g([x, x], { w: jnp.array(100, { dtype: "float32" }) }).tolist(),
    [100, 102, 104, 106, 108, 110, 112, 114],
  );
  // a bare spec is a prefix of the whole argument tuple
  assert.deepEqual(
    shardMap((a: Array, b: Array) => jnp.subtract(a, b), { mesh: m, inSpecs: P("d"), outSpecs: P("d") })(x, x).tolist(),
    globalThis.Array(8).fill(0),
  );
});

test("lax.switch with unused varying operands keeps a replicated output replicated", () => {
  const m = makeMesh([4], ["i"]);
  const x = jnp.arange(8, { dtype: "float32" });
  const f = shardMap(
    (a: Array, b: Array) =>
      lax.switch(
        jnp.array(0),
        [(u: Array, _v: Array) => jnp.add(u, 1), (u: Array, _v: Array) => jnp.multiply(u, 2)],
        a,
        b,
      ),
    { mesh: m, inSpecs: [P(), P("i")], outSpecs: P() },
  );
  assert.deepEqual((f(x, x) as Array).tolist(), [1, 2, 3, 4, 5, 6, 7, 8]);
  // a branch that does use the varying operand makes the output varying, which P() rejects
  const g = shardMap(
    (a: Array, b: Array) =>
      lax.switch(jnp.array(0), [(u: Array, v: Array) => jnp.add(u, v), (u: Array, _v: Array) => u], a, b),
    { mesh: m, inSpecs: [P(), P("i")], outSpecs: P() },
  );
  assert.throws(() => g(jnp.zeros([2]), x), /declared replicated over mesh axis "i"/);
});

test("shardMap outputs carry NamedSharding(mesh, out_spec); a context mesh from setMesh; clear errors without a mesh or with unknown axes", () => {
  const m = makeMesh([2, 4], ["i", "j"]);
  const x = arange(64, [8, 8]);
  const y = shardMap((b: Array) => lax.psum(b, "j"), { mesh: m, inSpecs: P("i", "j"), outSpecs: P("i", null) })(x);
  assert.equal(String(y.sharding), "NamedSharding(mesh=Mesh('i': 2, 'j': 4), spec=PartitionSpec('i', None))");
  assert.deepEqual((y.addressableShards as { data: Array }[])[5].data.shape, [4, 2]);
  assert.throws(
    () => shardMap((b: Array) => b, { inSpecs: P(), outSpecs: P() } as never)(x),
    /shardMap: a Mesh is required: pass \{ mesh \} .* or set one with setMesh\(mesh\); got no mesh/,
  );
  assert.throws(
    () => shardMap((b: Array) => b, { mesh: {} as never, inSpecs: P(), outSpecs: P() })(x),
    /shardMap: a Mesh is required/,
  );
  setMesh(m);
  try {
    assert.deepEqual(
      shardMap((b: Array) => lax.psum(b, "i"), { inSpecs: P("i"), outSpecs: P() } as never)(x).shape,
      [4, 8],
    );
  } finally {
    setMesh(null);
  }
  assert.throws(
    () => shardMap((b: Array) => b, { mesh: m, inSpecs: P("i"), outSpecs: P("k") })(x),
    /shardMap: out_specs\[0\] PartitionSpec\('k'\) refers to axis "k", which is not an axis of Mesh\('i': 2, 'j': 4\)/,
  );
  assert.throws(
    () => shardMap((b: Array) => b, { mesh: m, inSpecs: P("k"), outSpecs: P() })(x),
    /shardMap: in_specs\[0\] PartitionSpec\('k'\) refers to axis "k"/,
  );
});
