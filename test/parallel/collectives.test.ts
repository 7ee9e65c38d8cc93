/**
 * @file Collectives over several axis names, axisIndexGroups, negative/non-leading axes and inner unnamed vmaps, against
 * member-by-member NumPy loops (test/fixtures/parallel-collectives.json) and JAX's published docstring values.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, grad, jit, lax, makeMesh, numpy as jnp, pmap, shardMap, sharding, vmap } from "../../src/index.js";
import { assertClose, decode, type FixArray, loadFixture } from "../helpers/fixtures.js";
const { P } = sharding;

const fx = loadFixture<{ cases: { id: string; x: FixArray; out: FixArray }[] }>("parallel-collectives.json");
const byId = (id: string) => {
  const c = fx.cases.find((k) => k.id === id);
  assert.ok(c, `fixture case ${id}`);
  return c;
};
const mesh = makeMesh([2, 4], ["i", "j"]);
const G8 = [
    [0, 5, 2, 7],
    [4, 1, 6, 3],
  ],
  G4 = [
    [0, 2],
    [3, 1],
  ];
/** Every member's result stacked in (i, j) order: shard_map(lambda b: f(b)[None], out_specs=P(('i','j'))). */
const perMember =
  (f: (b: Array) => Array, spec = P("i", "j")) =>
  (x: Array) =>
    shardMap((b: Array) => jnp.expandDims(f(b), 0), { mesh, inSpecs: spec, outSpecs: P(["i", "j"]) })(x);

const cases: [string, (b: Array) => Array, sharding.PartitionSpec?][] = [
  ["all_gather ij axis 0", (b) => lax.allGather(b, ["i", "j"])],
  ["all_gather ji axis 0", (b) => lax.allGather(b, ["j", "i"])],
  ["all_gather ij axis 1 tiled", (b) => lax.allGather(b, ["i", "j"], { axis: 1, tiled: true })],
  ["all_gather j axis -1", (b) => lax.allGather(b, "j", { axis: -1 })],
  ["all_gather j axis 1", (b) => lax.allGather(b, "j", { axis: 1 })],
  ["all_gather i axis -1 tiled", (b) => lax.allGather(b, "i", { axis: -1, tiled: true })],
  ["all_gather ij groups", (b) => lax.allGather(b, ["i", "j"], { axisIndexGroups: G8 })],
  ["all_gather j groups tiled axis 1", (b) => lax.allGather(b, "j", { axis: 1, tiled: true, axisIndexGroups: G4 })],
  ["psum_scatter ij dim 0 tiled", (b) => lax.psumScatter(b, ["i", "j"], { tiled: true })],
  ["psum_scatter ji dim -2", (b) => lax.psumScatter(b, ["j", "i"], { scatterDimension: -2 })],
  [
    "psum_scatter j dim -1 groups tiled",
    (b) => lax.psumScatter(b, "j", { scatterDimension: -1, tiled: true, axisIndexGroups: G4 }),
  ],
  ["psum_scatter j dim 1 groups", (b) => lax.psumScatter(b, "j", { scatterDimension: 1, axisIndexGroups: G4 })],
  ["psum_scatter ij dim 0 groups tiled", (b) => lax.psumScatter(b, ["i", "j"], { tiled: true, axisIndexGroups: G8 })],
  ["all_to_all ij 0 1", (b) => lax.allToAll(b, ["i", "j"], 0, 1)],
  ["all_to_all ij 0 -1 tiled", (b) => lax.allToAll(b, ["i", "j"], 0, -1, { tiled: true })],
  ["all_to_all j 0 1 groups tiled", (b) => lax.allToAll(b, "j", 0, 1, { tiled: true, axisIndexGroups: G4 })],
  [
    "all_to_all j -1 0 groups tiled",
    (b) =>
      lax.allToAll(b, "j", -1, 0, {
        tiled: true,
        axisIndexGroups: [
          [0, 3],
          [1, 2],
        ],
      }),
    P("i", null),
  ],
  [
    "ppermute ij shift 3",
    (b) =>
      lax.ppermute(
        b,
        ["i", "j"],
        [0, 1, 2, 3, 4, 5].map((k) => [k, (k + 3) % 8] as [number, number]),
      ),
  ],
  [
    "ppermute ji shift 3",
    (b) =>
      lax.ppermute(
        b,
        ["j", "i"],
        [0, 1, 2, 3, 4, 5].map((k) => [k, (k + 3) % 8] as [number, number]),
      ),
  ],
  ["psum bool ij", (b) => lax.psum(b, ["i", "j"])],
  [
    "psum ij uneven groups",
    (b) =>
      lax.psum(b, ["i", "j"], {
        axisIndexGroups: [
          [0, 1, 2],
          [3, 4, 5, 6, 7],
        ],
      }),
  ],
  [
    "pmax ij uneven groups",
    (b) =>
      lax.pmax(b, ["i", "j"], {
        axisIndexGroups: [
          [0, 1, 2],
          [3, 4, 5, 6, 7],
        ],
      }),
  ],
];
for (const [id, f, spec] of cases) {
  test(`shardMap on a (2, 4) mesh: ${id} (NumPy member loops)`, () => {
    const c = byId(id);
    assertClose(perMember(f, spec)(decode(c.x)), c.out);
  });
}

test("collectives under an inner unnamed vmap keep the batch dimension apart (NumPy loops)", () => {
  const outer = (f: (r: Array) => Array) => vmap(vmap(f, { inAxes: 0 }), { axisName: "i" });
  let c = byId("vmap psum_scatter tiled inner unnamed");
  assertClose(outer((r) => lax.psumScatter(r, "i", { tiled: true }))(decode(c.x)), c.out);
  // the same with the unnamed batch in the middle of the row (inAxes 1 of a transposed input)
  const xt = jnp.transpose(decode(c.x), [0, 2, 1]);
  assertClose(
    vmap(
      vmap((r: Array) => lax.psumScatter(r, "i", { tiled: true }), { inAxes: 1 }),
      { axisName: "i" },
    )(xt),
    c.out,
  );
  c = byId("vmap all_to_all inner unnamed");
  assertClose(outer((r) => lax.allToAll(r, "i", 0, 1))(decode(c.x)), c.out);
  c = byId("vmap all_gather axis 1 inner unnamed");
  assertClose(outer((r) => lax.allGather(r, "i", { axis: 1 }))(decode(c.x)), c.out);
  assertClose(jit(outer((r) => lax.allGather(r, "i", { axis: 1 })))(decode(c.x)), c.out);
});

test("psum_scatter's published examples (JAX docstring, 4 devices): plain, tiled and with groups", () => {
  const x = jnp.reshape(jnp.arange(16, { dtype: "float32" }), [4, 4]);
  const pm = (f: (v: Array) => Array) => pmap(f, { axisName: "i" })(x).tolist();
  assert.deepEqual(
    pm((v) => lax.psumScatter(v, "i")),
    [24, 28, 32, 36],
  );
  assert.deepEqual(
    pm((v) => lax.psumScatter(v, "i", { tiled: true })),
    [[24], [28], [32], [36]],
  );
  assert.deepEqual(
    pm((v) =>
      lax.psumScatter(v, "i", {
        axisIndexGroups: [
          [0, 2],
          [3, 1],
        ],
        tiled: true,
      }),
    ),
    [
      [8, 10],
      [20, 22],
      [12, 14],
      [16, 18],
    ],
  );
});

test("allGather over a mesh axis that is not the innermost: FSDP weights gathered over 'fsdp' inside a TP layer", () => {
  const m = makeMesh([2, 4], ["fsdp", "tp"]);
  const w = jnp.multiply(jnp.reshape(jnp.arange(64, { dtype: "float32" }), [8, 8]), 0.25);
  const x = jnp.reshape(jnp.arange(16, { dtype: "float32" }), [2, 8]);
  // each member holds a (4, 2) block of w; gathering 'fsdp' restores its (8, 2) column slab for the TP matmul
  const f = shardMap((xb: Array, wb: Array) => jnp.matmul(xb, lax.allGather(wb, "fsdp", { tiled: true })), {
    mesh: m,
    inSpecs: [P(), P("fsdp", "tp")],
    outSpecs: P(null, "tp"),
  });
  assertClose(f(x, w), jnp.matmul(x, w));
  const full = shardMap((wb: Array) => lax.allGather(wb, "fsdp", { tiled: true }), {
    mesh: m,
    inSpecs: P("fsdp", "tp"),
    outSpecs: P(null, "tp"),
  })(w);
  assertClose(full, w);
});

test("FSDP gradients: allGather's transpose is psumScatter, so each member gets its block of the summed gradient", () => {
  const m = makeMesh([4], ["d"]);
  const w = jnp.array([0.5, -1, 2, 0.25, 1.5, -0.75, 1, 3], { dtype: "float32" });
  const data = jnp.reshape(jnp.arange(32, { dtype: "float32" }), [4, 8]);
  // member d: loss_d = sum(data_d * w^2) with the full w gathered from the shards; total loss = sum_d loss_d
  const local = (xb: Array, wf: Array) => jnp.sum(jnp.multiply(xb, jnp.square(wf)));
  const total = (wf: Array) => jnp.sum(jnp.multiply(jnp.sum(data, 0), jnp.square(wf)));
  const want = grad(total)(w); // 2 w sum_d data_d
  const fsdp = shardMap(
    (xb: Array, wb: Array) => grad((v: Array) => local(xb, lax.allGather(v, "d", { tiled: true })))(wb),
    { mesh: m, inSpecs: [P("d"), P("d")], outSpecs: P("d") },
  );
  assertClose(fsdp(data, w), want);
  assertClose(jit(fsdp)(data, w), want);
});

test("psumScatter's transpose is allGather and allToAll's is the inverse allToAll (gradients by hand)", () => {
  const x = jnp.reshape(jnp.arange(32, { dtype: "float32" }), [4, 8]);
  const w = jnp.reshape(jnp.array([1, 2, 3, 4, 5, 6, 7, 8], { dtype: "float32" }), [4, 2]);
  // member m keeps y_m = (sum_k x_k)[2m:2m+2]; L = sum_m w_m . y_m, so dL/dx_k = concat_m w_m for every k
  const ps = (xx: Array) =>
    jnp.sum(jnp.multiply(w, vmap((r: Array) => lax.psumScatter(r, "i", { tiled: true }), { axisName: "i" })(xx)));
  assert.deepEqual(grad(ps)(x).tolist(), globalThis.Array(4).fill([1, 2, 3, 4, 5, 6, 7, 8]));
  // all_to_all (split 0, concat 0, untiled) transposes members with rows: L = sum(W * out) gives dL/dx = W^T
  const wt = jnp.reshape(jnp.arange(16, { dtype: "float32" }), [4, 4]);
  const a2a = (xx: Array) =>
    jnp.sum(jnp.multiply(wt, vmap((r: Array) => lax.allToAll(r, "i", 0, 0), { axisName: "i" })(xx)));
  assert.deepEqual(grad(a2a)(x.get(":", ":4")).tolist(), jnp.transpose(wt).tolist());
  // tiled with split 1 / concat 0: y_m = stack_k x_k[:, 2m:2m+2]; the gradient routes each block back
  const x3 = jnp.reshape(jnp.arange(64, { dtype: "float32" }), [4, 2, 8]);
  const w3 = jnp.reshape(jnp.arange(64, { dtype: "float32" }), [4, 8, 2]);
  const f3 = (xx: Array) =>
    jnp.sum(jnp.multiply(w3, vmap((r: Array) => lax.allToAll(r, "i", 1, 0, { tiled: true }), { axisName: "i" })(xx)));
  const g3 = grad(f3)(x3);
  // d/dx_k[:, 2m:2m+2] = w3_m[2k:2k+2, :]
  const want = [0, 1, 2, 3].map((k) =>
    [0, 1].map((r) => [0, 1, 2, 3].flatMap((m) => [0, 1].map((c) => (w3.tolist() as number[][][])[m][2 * k + r][c]))),
  );
  assert.deepEqual(g3.tolist(), want);
});

test("pswapaxes is allToAll with split and concat at the same axis; axisSize is a static number", () => {
  const x = jnp.reshape(jnp.arange(16, { dtype: "float32" }), [4, 4]);
  const f = (v: Array) => lax.pswapaxes(v, "i", 0);
  // swapping the mapped axis with axis 0 of (4,) rows transposes the (4, 4) input
  assert.deepEqual(vmap(f, { axisName: "i" })(x).tolist(), jnp.transpose(x).tolist());
  assert.deepEqual(
    vmap((v: Array) => lax.pswapaxes(v, "i", -1), { axisName: "i" })(x).tolist(),
    jnp.transpose(x).tolist(),
  );
  let seen: unknown = null;
  jit(
    vmap(
      (v: Array) => {
        seen = lax.axisSize("i");
        return v;
      },
      { axisName: "i" },
    ),
  )(x);
  assert.equal(seen, 4);
  const sizes = shardMap(
    () => {
      seen = [lax.axisSize("i"), lax.axisSize("j"), lax.axisSize(["i", "j"])];
      return jnp.zeros([]);
    },
    { mesh, inSpecs: [], outSpecs: P() },
  );
  sizes();
  assert.deepEqual(seen, [2, 4, 8]);
});

test("bad collective arguments raise errors naming the function, axis and shapes", () => {
  const x = jnp.ones([4, 4, 3]);
  const v = (f: (r: Array) => Array) => () => vmap(f, { axisName: "i" })(x);
  // JAX: tiled reduce_scatter operand scatter dimension size 3 must be divisible by shard_count 4
  assert.throws(
    v((r) => lax.psumScatter(r, "i", { scatterDimension: 1, tiled: true })),
    /psumScatter: dimension 1 \(size 3\) of float32\[4,3\] must be divisible by the size 4 of axis "i"/,
  );
  assert.throws(
    v((r) => lax.psumScatter(r, "i", { scatterDimension: 1 })),
    /psumScatter: dimension 1 \(size 3\) .* must equal the size 4/,
  );
  assert.throws(
    v((r) => lax.psumScatter(r, "i", { scatterDimension: 2 })),
    /psumScatter: scatterDimension 2 is out of range for an operand float32\[4,3\]/,
  );
  assert.throws(
    v((r) => lax.allToAll(r, "i", 1, 0)),
    /allToAll: splitAxis 1 \(size 3\) of float32\[4,3\] must equal the size 4 of axis "i"/,
  );
  assert.throws(
    v((r) => lax.allGather(r, "i", { axis: 3 })),
    /allGather: axis 3 is out of range for an operand float32\[4,3\] \(expected an integer in \[-3, 3\)\)/,
  );
  // JAX: ppermute sources and destinations must be unique
  assert.throws(
    v((r) =>
      lax.ppermute(r, "i", [
        [0, 1],
        [1, 1],
      ]),
    ),
    /ppermute: sources and destinations must be unique, got perm \[\[0,1\],\[1,1\]\] over axis "i"/,
  );
  assert.throws(
    v((r) =>
      lax.ppermute(r, "i", [
        [0, 1],
        [0, 2],
      ]),
    ),
    /sources and destinations must be unique/,
  );
  assert.throws(
    v((r) => lax.ppermute(r, "i", [[0, 4]])),
    /ppermute: perm entry \[0,4\] is out of range for axis "i" of size 4/,
  );
  // JAX: `perm` does not represent a permutation
  assert.throws(
    v((r) => lax.pshuffle(r, "i", [0, 0, 1, 2])),
    /pshuffle: perm \[0,0,1,2\] does not represent a permutation/,
  );
  assert.throws(
    v((r) =>
      lax.psum(r, "i", {
        axisIndexGroups: [
          [0, 1],
          [1, 2],
        ],
      }),
    ),
    /psum: axisIndexGroups \[\[0,1\],\[1,2\]\] must cover every index of axis "i" \(size 4\) exactly once/,
  );
  assert.throws(
    v((r) => lax.allGather(r, "i", { axisIndexGroups: [[0], [1, 2, 3]] })),
    /allGather: axisIndexGroups .* must all have the same size/,
  );
  assert.throws(() => lax.axisSize("nope"), /axis_size: unbound axis name "nope"/);
});

test("collectives map over the leaves of a pytree, as in JAX (numbers become arrays)", () => {
  const x = jnp.array([1, 2, 3, 4], { dtype: "float32" });
  const out = vmap((v: Array) => lax.psum({ a: v, b: [jnp.multiply(v, 10), 1] }, "i"), { axisName: "i" })(
    x,
  ) as unknown as { a: Array; b: [Array, Array] };
  assert.deepEqual(out.a.tolist(), [10, 10, 10, 10]);
  assert.deepEqual(out.b[0].tolist(), [100, 100, 100, 100]);
  // psum(1, 'i') is the axis size
  assert.deepEqual(out.b[1].tolist(), [4, 4, 4, 4]);
  const [g, h] = vmap((v: Array) => lax.allGather([v, jnp.negative(v)], "i"), { axisName: "i" })(x) as unknown as [
    Array,
    Array,
  ];
  assert.deepEqual((g.tolist() as number[][])[0], [1, 2, 3, 4]);
  assert.deepEqual((h.tolist() as number[][])[3], [-1, -2, -3, -4]);
  const pm = vmap((v: Array) => lax.pmean({ m: v }, "i"), { axisName: "i" })(x) as unknown as { m: Array };
  assert.deepEqual(pm.m.tolist(), [2.5, 2.5, 2.5, 2.5]);
});
