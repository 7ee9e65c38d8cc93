/**
 * @file All-reduces with a fused elementwise epilogue (fuseCollectiveEpilogues): which AllReduce + jaxts.Fused pairs
 * of a hand-made graph the pass fuses (the program's inputs renumbered), which it leaves alone, and on 1-4 devices
 * the fused programs' node counts and outputs, bit-identical to the unfused programs (SGD and momentum updates, a 2-D
 * mesh, non-matching programs: a sharded operand, scan, grad of shardMap).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import { type Array, grad, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import { GraphBuilder, type GraphNode } from "../../src/backends/onnx/graph-builder.js";
import { encodeFused } from "../../src/backends/onnx/native-fused.js";
import { fuseCollectiveEpilogues } from "../../src/compiler/collective-epilogues.js";
import { compileOptions } from "../../src/compiler/compile.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { clearTraceCaches } from "../../src/transforms/jit.js";
import { nativeGemmKernel } from "../../src/backends/onnx/ort-runtime.js";
import { values } from "../parallel/device-compare.js";
import { countsAndValues } from "../helpers/per-device-program.js";
const { P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;
/** Whether programs get jaxts.Fused nodes (a native GEMM kernel for this CPU): without them nothing is fused here. */
const fuses = nativeGemmKernel() !== null && compileOptions.fuseInGraph;
const DOMAIN = "jaxts.collectives";
const SUM = { groups: [0, 1], group_size: 2, label: "psum", axes: "mesh axis 'x'", reduce: 0 };

/** A graph with float32 inputs, an AllReduce of `x` and a Fused node `a - 0.5 * b` over two of its values. */
function graph(dtype = "float32") {
  const g = new GraphBuilder("g");
  const dtypes = new Map<string, string>();
  const input = (name: string) => {
    g.addInput(name, dtype as "float32", [4]);
    dtypes.set(name, dtype);
    return name;
  };
  const allReduce = (x: string) => {
    const y = g.addNode("AllReduce", [x], 1, SUM, DOMAIN)[0];
    dtypes.set(y, dtype);
    return y;
  };
  // values: in0, in1, 0.5, in1 * 0.5, in0 - that
  const program = encodeFused({
    values: [
      { kind: "input", index: 0 },
      { kind: "input", index: 1 },
      { kind: "const", value: 0.5 },
      { kind: "op", op: "mul", args: [1, 2] },
      { kind: "op", op: "sub", args: [0, 3] },
    ],
    outputs: [4],
    params: [],
    numInputs: 2,
    numScalars: 0,
    shape: [4],
  });
  const fused = (a: string, b: string) =>
    g.addNode("Fused", [a, b], 1, { program: [...program], num_inputs: 2, num_scalars: 0 }, "jaxts")[0];
  return { g, dtypes, input, allReduce, fused };
}
const nodes = (g: GraphBuilder, op: string): GraphNode[] => g.nodeList.filter((n) => n.opType === op);
const ints = (n: GraphNode, k: string): readonly number[] => {
  const a = n.attrs.find(([name]) => name === k)![1];
  assert.equal(a.kind, "ints");
  return a.value as readonly number[];
};

test("an AllReduce read only by a Fused update of replicated operands becomes one AllReduceEpilogue", () => {
  const { g, dtypes, input, allReduce, fused } = graph();
  const w = input("w");
  const y = allReduce(input("g"));
  const out = fused(w, y); // w - 0.5 * psum(g): the reduced value is the program's input 1
  g.addOutput(out, "float32");
  const asked: string[] = [];
  const made = fuseCollectiveEpilogues(g, dtypes, (nm, groups) => {
    asked.push(`${nm}:${JSON.stringify(groups)}`);
    return true;
  });
  assert.equal(made, 1);
  assert.deepEqual(asked, ["w:[[0,1]]"]);
  assert.equal(g.nodeList.length, 1);
  const [e] = g.nodeList;
  assert.equal(e.opType, "AllReduceEpilogue");
  assert.equal(e.domain, DOMAIN);
  assert.deepEqual(e.inputs, ["g", "w"]);
  assert.deepEqual(e.outputs, [out]);
  assert.deepEqual(ints(e, "groups"), [0, 1]);
  // the program's input values renumbered: the reduced value is input 0, w input 1 (tag 0 = input, then its index)
  const code = ints(e, "program");
  assert.deepEqual([code[2], code[3], code[7], code[8]], [0, 1, 0, 0]);
  const attr = (k: string) => e.attrs.find(([n]) => n === k)![1].value;
  assert.deepEqual([attr("num_inputs"), attr("num_scalars"), attr("reduce"), attr("label")], [2, 0, 0, "psum"]);
});

test("left alone: a second reader, a graph output, an unreplicated operand, int32, a non-Fused reader", () => {
  const cases: [string, (h: ReturnType<typeof graph>) => void, boolean][] = [
    [
      "second reader",
      (h) => {
        const y = h.allReduce(h.input("g"));
        h.g.addOutput(h.fused(h.input("w"), y), "float32");
        h.g.addOutput(h.g.op("Tanh", [y]), "float32");
      },
      true,
    ],
    [
      "graph output",
      (h) => {
        const y = h.allReduce(h.input("g"));
        h.g.addOutput(h.fused(h.input("w"), y), "float32");
        h.g.addOutput(y, "float32");
      },
      true,
    ],
    [
      "operand varies over the group",
      (h) => h.g.addOutput(h.fused(h.input("w"), h.allReduce(h.input("g"))), "float32"),
      false,
    ],
    [
      "a plain Sub reads it",
      (h) => h.g.addOutput(h.g.op("Sub", [h.input("w"), h.allReduce(h.input("g"))]), "float32"),
      true,
    ],
  ];
  for (const [what, build, replicated] of cases) {
    const h = graph();
    build(h);
    assert.equal(
      fuseCollectiveEpilogues(h.g, h.dtypes, () => replicated),
      0,
      what,
    );
    assert.equal(nodes(h.g, "AllReduce").length, 1, what);
  }
  const i = graph("int32");
  i.g.addOutput(i.fused(i.input("w"), i.allReduce(i.input("g"))), "int32");
  assert.equal(
    fuseCollectiveEpilogues(i.g, i.dtypes, () => true),
    0,
    "int32",
  );
});

// ------------------------------------------------------------------ on devices

/** The per-device program's collective counts and the outputs' values, with the epilogue pass on or off. */
function run(on: boolean, f: (...a: Array[]) => Array[], args: Array[]) {
  const saved = compileOptions.collectiveEpilogues;
  config.update("spmdRuntime", "devices");
  compileOptions.collectiveEpilogues = on;
  clearTraceCaches(); // jit's traces hold the staged shard_map (compiled with the flag of its first call)
  try {
    return countsAndValues(f, args);
  } finally {
    config.update("spmdRuntime", "emulation");
    compileOptions.collectiveEpilogues = saved;
  }
}
/** Fused vs unfused: the counts given, and every output bit for bit the same. */
function exact(what: string, f: (...a: Array[]) => Array[], args: Array[], on: object, off: object): void {
  const c = run(true, f, args),
    u = run(false, f, args);
  for (const [k, v] of Object.entries(fuses ? on : off))
    assert.equal(c.counts[k] ?? 0, v, `${what} fused ${k}: ${c.line}`);
  for (const [k, v] of Object.entries(off)) assert.equal(u.counts[k] ?? 0, v, `${what} unfused ${k}: ${u.line}`);
  assert.equal(c.vals.length, u.vals.length);
  c.vals.forEach((v, k) => {
    assert.equal(v.length, u.vals[k].length);
    for (let i = 0; i < v.length; i++)
      assert.ok(Object.is(v[i], u.vals[k][i]), `${what}: output ${k}[${i}] ${v[i]} vs unfused ${u.vals[k][i]}`);
  });
}

const mlpLoss = (p: Array[], x: Array, y: Array): Array => {
  const h = jnp.tanh(jnp.add(jnp.matmul(x, p[0]), p[1]));
  return jnp.mean(jnp.square(jnp.subtract(jnp.add(jnp.matmul(h, p[2]), p[3]), y)));
};
/** Parameters (w1 301 x 256: several of the native op's tiles per rank), a batch of 12 per device. */
const mlpArgs = (n: number): Array[] => [
  jnp.multiply(values([301, 256], "float32"), 0.01),
  jnp.multiply(values([256], "float32"), 0.1),
  jnp.multiply(values([256, 5], "float32"), 0.01),
  jnp.multiply(values([5], "float32"), 0.1),
  jnp.multiply(values([12 * n, 301], "float32"), 0.1),
  jnp.multiply(values([12 * n, 5], "float32"), 0.1),
];

for (const n of [1, 2, 3, 4]) {
  test(`the MLP SGD step on ${n} device(s): 4 AllReduceEpilogues instead of 4 AllReduces, same bits`, { skip }, () => {
    const mesh = makeMesh([n], ["data"]);
    const step = shardMap(
      (p: Array[], x: Array, y: Array) => {
        const g = grad(mlpLoss)(p, x, y) as unknown as Array[];
        return p.map((w, i) => jnp.subtract(w, jnp.multiply(lax.psum(g[i], "data"), 0.05)));
      },
      { mesh, inSpecs: [[P(), P(), P(), P()], P("data"), P("data")], outSpecs: [P(), P(), P(), P()] },
    ) as unknown as (p: Array[], x: Array, y: Array) => Array[];
    const f = (w1: Array, b1: Array, w2: Array, b2: Array, x: Array, y: Array) => step([w1, b1, w2, b2], x, y);
    exact(`n=${n}`, f, mlpArgs(n), { AllReduceEpilogue: 4, AllReduce: 0 }, { AllReduce: 4, AllReduceEpilogue: 0 });
  });
}

test(
  "a momentum update (two outputs, two replicated operands) on 3 devices; a sharded operand is left alone",
  { skip },
  () => {
    const mesh = makeMesh([3], ["data"]);
    const f = shardMap(
      (w: Array, m: Array, g: Array, s: Array) => {
        const v = jnp.add(jnp.multiply(m, 0.9), lax.psum(g, "data"));
        // s is sharded over "data": its update reads a value that differs per rank, so its psum stays an AllReduce
        return [jnp.subtract(w, jnp.multiply(v, 0.01)), v, jnp.multiply(lax.psum(jnp.tanh(g), "data"), s)];
      },
      { mesh, inSpecs: [P(), P(), P("data"), P("data")], outSpecs: [P(), P(), P("data")] },
    ) as unknown as (...a: Array[]) => Array[];
    const args = [values([40, 33], "float32"), values([40, 33], "float32"), values([120, 33], "float32")];
    exact(
      "momentum",
      f,
      [...args, jnp.multiply(values([120, 33], "float32"), 0.5)],
      { AllReduceEpilogue: 1, AllReduce: 1 },
      {
        AllReduce: 2,
      },
    );
  },
);

test(
  "a 2-D mesh: replicated over the psum's axis 'x' but sharded over 'y' fuses; sharded over 'x' does not",
  { skip },
  () => {
    const mesh = makeMesh([2, 2], ["x", "y"]);
    const f = shardMap(
      (w: Array, u: Array, g: Array) => [
        jnp.subtract(w, jnp.multiply(lax.psum(g, "x"), 0.1)), // w varies over "y" only: the same within each 'x' group
        jnp.subtract(u, jnp.multiply(lax.psum(jnp.sin(g), "x"), 0.1)), // u varies over "x": per-rank operands
      ],
      { mesh, inSpecs: [P("y"), P("x"), P("x", "y")], outSpecs: [P("y"), P("x", "y")] },
    ) as unknown as (...a: Array[]) => Array[];
    const args = [values([10, 6], "float32"), values([10, 6], "float32"), values([10, 12], "float32")];
    exact("2-D", f, args, { AllReduceEpilogue: 1, AllReduce: 1 }, { AllReduce: 2 });
  },
);

test("not matching: a psum inside scan, and grad of a shardMap, run the same bits with the pass on", { skip }, () => {
  const mesh = makeMesh([2], ["data"]);
  const body = shardMap(
    (w: Array, g: Array) =>
      lax.scan(
        (c: Array, gi: Array) => [jnp.subtract(c, jnp.multiply(lax.psum(gi, "data"), 0.1)), jnp.sum(c)],
        w,
        g,
      )[0],
    // scan's carry is conservatively varying: no replication check (the value is device 0's, the same on both)
    { mesh, inSpecs: [P(), P(null, "data")], outSpecs: P(), checkVma: false },
  ) as unknown as (w: Array, g: Array) => Array;
  exact(
    "scan",
    (w, g) => [body(w, g)],
    [values([8], "float32"), values([3, 16], "float32")],
    { AllReduceEpilogue: 0 },
    {
      AllReduceEpilogue: 0,
    },
  );
  const sm = shardMap((w: Array, x: Array) => lax.psum(jnp.tanh(jnp.multiply(x, w)), "data"), {
    mesh,
    inSpecs: [P(), P("data")],
    outSpecs: P(),
  }) as unknown as (w: Array, x: Array) => Array;
  const dw = (w: Array, x: Array) => [grad((v: Array) => jnp.sum(sm(v, x)))(w) as Array];
  exact("grad of shardMap", dw, [values([6], "float32"), values([12], "float32")], {}, {});
});
