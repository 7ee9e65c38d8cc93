/**
 * @file Gradient bucketing (combineCollectives): which collectives a hand-made graph's pass combines (kind, groups,
 * reduction, dtype, data dependence, threshold), and on 2, 3 and 4 devices the psum / psum_scatter / all_gather
 * programs' collective counts and values, bit-identical to the uncombined program.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import { type Array, grad, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import { GraphBuilder, type GraphNode } from "../../src/backends/onnx/graph-builder.js";
import { combineCollectives } from "../../src/compiler/combine-collectives.js";
import { compileOptions } from "../../src/compiler/compile.js";
import { nativeGemmKernel } from "../../src/backends/onnx/ort-runtime.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { values } from "../parallel/device-compare.js";
import { countsAndValues } from "../helpers/per-device-program.js";
const { P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;
const SUM = { groups: [0, 1], group_size: 2, label: "psum", axes: "mesh axis 'x'", reduce: 0 };
const DOMAIN = "jaxts.collectives";

/** A graph builder with shape and dtype maps the pass reads; `coll` adds a collective of x with output shape `out`. */
function graph() {
  const g = new GraphBuilder("g");
  const shapes = new Map<string, number[]>(),
    dtypes = new Map<string, string>();
  const input = (name: string, shape: number[], dtype = "float32") => {
    g.addInput(name, dtype as "float32", shape);
    shapes.set(name, shape);
    dtypes.set(name, dtype);
    return name;
  };
  const coll = (op: string, x: string, out: number[], attrs: Record<string, unknown> = SUM) => {
    const y = g.addNode(op, [x], 1, attrs as Record<string, number>, DOMAIN)[0];
    shapes.set(y, out);
    dtypes.set(y, dtypes.get(x)!);
    return y;
  };
  const tanh = (x: string) => {
    const y = g.op("Tanh", [x]);
    shapes.set(y, shapes.get(x)!);
    dtypes.set(y, dtypes.get(x)!);
    return y;
  };
  return { g, shapes, dtypes, input, coll, tanh };
}
const collectives = (g: GraphBuilder): GraphNode[] => g.nodeList.filter((n) => n.domain === DOMAIN);
/** Each node's inputs produced before it (the list is a topological order). */
function assertTopological(g: GraphBuilder): void {
  const made = new Set(g.inputNames);
  for (const n of g.nodeList) {
    for (const x of n.inputs) if (x && !x.startsWith("const")) assert.ok(made.has(x), `${n.opType} reads ${x} first`);
    n.outputs.forEach((o) => made.add(o));
  }
}

test("four independent all-reduces of mixed shapes become one on their concatenation, split back by name", () => {
  const { g, shapes, dtypes, input, coll, tanh } = graph();
  const ys = [
    coll("AllReduce", input("a", [3, 4]), [3, 4]),
    coll("AllReduce", input("b", [5]), [5]),
    coll("AllReduce", input("c", []), []),
    coll("AllReduce", input("d", [2, 1, 2]), [2, 1, 2]),
  ];
  for (const y of ys) g.addOutput(tanh(y), "float32");
  assert.equal(combineCollectives(g, shapes, dtypes, { thresholdBytes: 4 << 20 }), 3);
  const [c] = collectives(g);
  assert.equal(collectives(g).length, 1);
  const cat = g.nodeList.find((n) => n.outputs[0] === c.inputs[0])!;
  assert.equal(cat.opType, "Concat");
  assert.equal(cat.inputs.length, 4);
  const label = c.attrs.find(([k]) => k === "label")![1];
  assert.deepEqual(label, { kind: "string", value: "psum (4 combined)" });
  // each original output is a Reshape of a Slice of the combined result, at offsets 0, 12, 17, 18
  for (const [k, y] of ys.entries()) {
    const r = g.nodeList.find((n) => n.outputs[0] === y)!;
    assert.equal(r.opType, "Reshape");
    const s = g.nodeList.find((n) => n.outputs[0] === r.inputs[0])!;
    assert.equal(s.opType, "Slice");
    assert.equal(s.inputs[0], c.outputs[0]);
    assert.deepEqual(g.constantValue(s.inputs[1])!.data, [[0, 12, 17, 18][k]]);
  }
  assertTopological(g);
});

test("not combined: a dependent collective, another dtype, reduction or group, one past the threshold", () => {
  const { g, shapes, dtypes, input, coll, tanh } = graph();
  const a = coll("AllReduce", input("a", [4]), [4]);
  const b = coll("AllReduce", tanh(a), [4]); // reads a's result
  const i = coll("AllReduce", input("i", [4], "int32"), [4]);
  const m = coll("AllReduce", input("m", [4]), [4], { ...SUM, reduce: 1 });
  const o = coll("AllReduce", input("o", [4]), [4], { ...SUM, groups: [0, 1, 2, 3], group_size: 4 });
  for (const y of [b, i, m, o]) g.addOutput(y, dtypes.get(y) as "float32");
  assert.equal(combineCollectives(g, shapes, dtypes, { thresholdBytes: 4 << 20 }), 0);
  assert.equal(collectives(g).length, 5);
  // the threshold: 16 + 16 bytes fit in 40, a third does not (it starts a bucket of its own with the fourth)
  const h = graph();
  const ys = ["p", "q", "r", "s"].map((x) => h.coll("AllReduce", h.input(x, [4]), [4]));
  for (const y of ys) h.g.addOutput(y, "float32");
  assert.equal(combineCollectives(h.g, h.shapes, h.dtypes, { thresholdBytes: 40 }), 2);
  assert.equal(collectives(h.g).length, 2);
  const h0 = graph();
  for (const y of ["p", "q"].map((x) => h0.coll("AllReduce", h0.input(x, [4]), [4]))) h0.g.addOutput(y, "float32");
  assert.equal(combineCollectives(h0.g, h0.shapes, h0.dtypes, { thresholdBytes: 0 }), 0, "0 disables");
});

test("a bucket waits for its last member: earlier members' readers move after it, no cycle across kinds", () => {
  const { g, shapes, dtypes, input, coll, tanh } = graph();
  const x = input("x", [2, 3]);
  const a = coll("AllReduce", x, [2, 3]);
  const ta = tanh(a); // a reader between the two members
  const rs = coll("ReduceScatter", ta, [3], { ...SUM, label: "psum_scatter" }); // depends on a
  const b = coll("AllReduce", tanh(x), [2, 3]);
  const c = coll("AllReduce", tanh(rs), [3]); // depends on the scatter, which depends on a's bucket
  for (const y of [b, c]) g.addOutput(y, "float32");
  assert.equal(combineCollectives(g, shapes, dtypes, { thresholdBytes: 4 << 20 }), 1);
  // a and b combined; c could not join (behind the scatter, which is behind the bucket)
  assert.deepEqual(
    collectives(g).map((n) => n.opType),
    ["AllReduce", "ReduceScatter", "AllReduce"],
  );
  assertTopological(g);
});

// ------------------------------------------------------------------ on devices

/** The per-device program's collective counts (jit(f).lower().compile().asText() header) and the outputs' values. */
function run(combine: number, f: (...a: Array[]) => Array[], args: Array[]) {
  const saved = config.collectiveCombineBytes;
  config.update("spmdRuntime", "devices");
  config.update("collectiveCombineBytes", combine);
  try {
    return countsAndValues(f, args);
  } finally {
    config.update("spmdRuntime", "emulation");
    config.update("collectiveCombineBytes", saved);
  }
}
/** Combined vs uncombined: the counts given, and every output bit for bit the same. */
function exact(what: string, f: (...a: Array[]) => Array[], args: Array[], on: object, off: object) {
  const c = run(4 << 20, f, args),
    u = run(0, f, args);
  for (const [k, v] of Object.entries(on)) assert.equal(c.counts[k] ?? 0, v, `${what} combined ${k}: ${c.line}`);
  for (const [k, v] of Object.entries(off)) assert.equal(u.counts[k] ?? 0, v, `${what} uncombined ${k}: ${u.line}`);
  assert.equal(c.vals.length, u.vals.length);
  c.vals.forEach((v, k) => {
    assert.equal(v.length, u.vals[k].length);
    for (let i = 0; i < v.length; i++)
      assert.ok(Object.is(v[i], u.vals[k][i]), `${what}: output ${k}[${i}] ${v[i]} vs uncombined ${u.vals[k][i]}`);
  });
  return c;
}

for (const n of [2, 3, 4]) {
  test(
    `psum, psum_scatter and all_gather on ${n} devices: one collective per kind and dtype, same bits`,
    { skip },
    () => {
      const mesh = makeMesh([n], ["x"]);
      const f = shardMap(
        (a: Array, b: Array, c: Array, k: Array) => {
          const s = [lax.psum(a, "x"), lax.psum(jnp.tanh(b), "x"), lax.psum(jnp.sum(c), "x")];
          // psum_scatter: a 2-D one along dimension 0 and one along dimension 1 (the lowering brings the chunks to a
          // leading axis; the combined op splits the same blocks)
          const r = [
            lax.psumScatter(jnp.tile(a, [n, 1]), "x", { scatterDimension: 0, tiled: true }),
            lax.psumScatter(jnp.tile(b, [1, n]), "x", { scatterDimension: 1, tiled: true }),
          ];
          const gth = [
            lax.allGather(a, "x", { axis: 0, tiled: true }),
            lax.allGather(b, "x", { axis: 1, tiled: true }),
          ];
          return [...s, ...r, ...gth, lax.psum(k, "x")]; // the int32 psum stays its own
        },
        { mesh, inSpecs: [P("x"), P("x"), P("x"), P("x")], outSpecs: [P(), P(), P(), P("x"), P("x"), P(), P(), P()] },
      ) as unknown as (...a: Array[]) => Array[];
      const args = [
        values([2 * n, 3], "float32"),
        values([3 * n, 2], "float32"),
        values([n, 5], "float32"),
        values([n, 4], "int32"),
      ];
      exact(
        `n=${n}`,
        f,
        args,
        { AllReduce: 2, ReduceScatter: 1, AllGather: 1 },
        {
          AllReduce: 4,
          ReduceScatter: 2,
          AllGather: 2,
        },
      );
    },
  );
}

test(
  "16-bit collectives combine by their element size: two float16 and two int16 psums become one per dtype, same bits",
  { skip },
  () => {
    const mesh = makeMesh([2], ["x"]);
    const f = shardMap((a: Array, b: Array, c: Array, d: Array) => [a, b, c, d].map((v) => lax.psum(v, "x")), {
      mesh,
      inSpecs: [P("x"), P("x"), P("x"), P("x")],
      outSpecs: [P(), P(), P(), P()],
    }) as unknown as (...a: Array[]) => Array[];
    const args = [
      values([4, 3], "float32").astype("float16"),
      values([2, 5], "float32").astype("float16"),
      values([4, 2], "int32").astype("int16"),
      values([2, 3], "int32").astype("int16"),
    ];
    exact("float16/int16", f, args, { AllReduce: 2 }, { AllReduce: 4 });
  },
);

test("the MLP grad step's 4 psums become 1 below the threshold, 2 at a threshold between", { skip }, () => {
  const mesh = makeMesh([2], ["data"]);
  const loss = (p: Array[], x: Array, y: Array): Array => {
    const h = jnp.tanh(jnp.add(jnp.matmul(x, p[0]), p[1]));
    return jnp.mean(jnp.square(jnp.subtract(jnp.add(jnp.matmul(h, p[2]), p[3]), y)));
  };
  const step = shardMap(
    (p: Array[], x: Array, y: Array) => {
      const g = grad(loss)(p, x, y) as unknown as Array[];
      return p.map((w, i) => jnp.subtract(w, jnp.multiply(lax.psum(g[i], "data"), 0.05)));
    },
    { mesh, inSpecs: [[P(), P(), P(), P()], P("data"), P("data")], outSpecs: [P(), P(), P(), P()] },
  ) as unknown as (p: Array[], x: Array, y: Array) => Array[];
  const f = (w1: Array, b1: Array, w2: Array, b2: Array, x: Array, y: Array) => step([w1, b1, w2, b2], x, y);
  // w1 301 x 256 float32 = 308,224 bytes; b1 1 KiB, w2 5 KiB, b2 20 bytes
  const args = [
    jnp.multiply(values([301, 256], "float32"), 0.01),
    jnp.multiply(values([256], "float32"), 0.1),
    jnp.multiply(values([256, 5], "float32"), 0.01),
    jnp.multiply(values([5], "float32"), 0.1),
    jnp.multiply(values([12, 301], "float32"), 0.1),
    jnp.multiply(values([12, 5], "float32"), 0.1),
  ];
  // unbucketed, each psum and its update become one AllReduceEpilogue (compiler/collective-epilogues.ts)
  // (where programs get jaxts.Fused nodes: a native GEMM kernel for this CPU)
  const fused = nativeGemmKernel() !== null && compileOptions.fuseInGraph;
  exact(
    "mlp",
    f,
    args,
    { AllReduce: 1, AllReduceEpilogue: 0 },
    { AllReduce: fused ? 0 : 4, AllReduceEpilogue: fused ? 4 : 0 },
  );
  // 310,000 bytes: w1 + b1 (309,248) fit, w2 does not: it starts the next bucket, with b2
  const mid = run(310_000, f, args);
  assert.equal(mid.counts.AllReduce, 2, mid.line);
});
