/** @file Loop fusion inside ONNX programs (jaxts.Fused): which nodes fuse, bit-identical results with and without it, masks and scalars, escaping values, graphs that would close a loop through two groups. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { GraphBuilder } from "../../src/backends/onnx/graph-builder.js";
import { loweringSummary, onnxBackend, onnxBackendOptions } from "../../src/backends/onnx/onnx-backend.js";
import { createSessionSync, fastRunner, nativeGemmKernel } from "../../src/backends/onnx/ort-runtime.js";
import { compileOptions } from "../../src/compiler/compile.js";
import { fuseGraphElementwise } from "../../src/compiler/fuse-graph.js";
import type { FusedSpec } from "../../src/compiler/fuse-elementwise.js";
import { encodeFused } from "../../src/backends/onnx/native-fused.js";
import type { ArrayImpl } from "../../src/core/array-impl.js";
import type { Array } from "../../src/core/array.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import * as ops from "../../src/primitives/ops.js";
import { arr, checkProgram } from "./harness.js";

const skip = nativeGemmKernel() === null ? "jaxts's native ORT ops are unavailable" : false;
// these are ONNX programs: keep pure elementwise jaxprs on ONNX Runtime (not the standalone fused kernel)
onnxBackendOptions.fuseElementwise = false;

const seq = (n: number, f: (i: number) => number): number[] => globalThis.Array.from({ length: n }, (_, i) => f(i));
const special = [0, -0, 1, -1, 0.5, -2.5, NaN, Infinity, -Infinity, 3e38, -1e-40, 7];

/** Runs f with and without in-graph fusion: same bits, both within tolerance of the interpreter; returns the fused summary. */
function both(f: (...xs: Array[]) => Array[], args: ArrayImpl[], label: string): string {
  const prev = compileOptions.fuseInGraph;
  const run = (fuse: boolean): { text: string; out: ArrayImpl[] } => {
    compileOptions.fuseInGraph = fuse;
    try {
      const j = checkProgram(f, args, `${label} (${fuse ? "fused" : "unfused"})`);
      const { jaxpr, consts } = traceToJaxpr(
        f,
        args.map((a) => a.aval),
        label,
      );
      return {
        text: loweringSummary(j, label),
        out: onnxBackend.executeJaxpr!(jaxpr, consts as ArrayImpl[], args, { name: label }),
      };
    } finally {
      compileOptions.fuseInGraph = prev;
    }
  };
  const fused = run(true),
    plain = run(false);
  assert.doesNotMatch(plain.text, /jaxts\.Fused/);
  fused.out.forEach((o, i) => {
    const a = new Uint32Array((o.buffer as Float32Array).slice().buffer),
      b = new Uint32Array((plain.out[i].buffer as Float32Array).slice().buffer);
    assert.deepEqual(a, b, `${label} out ${i}: fused and unfused programs agree bit for bit`);
  });
  return fused.text;
}
const count = (text: string, op: string): number => (text.match(new RegExp(`= ${op}[\\[(]`, "g")) ?? []).length;

test(
  "chains of exact float32 elementwise ops fuse into one node; comparisons, masks and selects stay inside it",
  { skip },
  () => {
    // every pair of special values (signed zeros, NaN, infinities, huge, subnormal) meets in each binary op
    const k = special.length;
    const x = arr(
      "float32",
      [k, k],
      seq(k * k, (i) => special[Math.floor(i / k)]),
    );
    const y = arr(
      "float32",
      [k, k],
      seq(k * k, (i) => special[i % k]),
    );
    const t1 = both((a, b) => [ops.sub(ops.mul(ops.add(a, b), ops.scalarLike(a, 0.5)), ops.abs(b))], [x, y], "arith");
    assert.equal(count(t1, "jaxts.Fused"), 1, t1);
    assert.equal(count(t1, "Add") + count(t1, "Mul") + count(t1, "Sub") + count(t1, "Abs"), 0, t1);
    // relu and its gradient mask: le, select and max. (Not a tie of -0 with +0 in min/max: ORT's own Min/Max return
    // either zero there, depending on operand order and vector or scalar path, where lax says -0 < +0.)
    const g0 = arr(
      "float32",
      [k, k],
      seq(k * k, (i) => (special[i % k] === 0 ? 2 : special[i % k])),
    );
    const t2 = both(
      (a, g) => {
        const z = ops.full(a.shape, 0, "float32");
        return [ops.select(ops.le(a, z), g, z), ops.max(a, z), ops.min(g, a)];
      },
      [x, g0],
      "relu-like",
    );
    assert.ok(count(t2, "jaxts.Fused") >= 1, t2);
    assert.equal(count(t2, "Where"), 0, t2);
    // logic on masks, division, sqrt/floor/ceil, a rank-0 input broadcast as a scalar
    both(
      (a, b, k) => [
        ops.select(ops.and(ops.gt(a, b), ops.not(ops.ne(a, a))), ops.div(a, k), ops.sqrt(ops.abs(b))),
        ops.floor(ops.mul(a, k)),
        ops.ceil(b),
      ],
      [x, y, arr("float32", [], [2.5])],
      "masks-and-scalars",
    );
  },
);

test(
  "values read outside a group are its outputs; bool results and non-float inputs keep nodes unfused",
  { skip },
  () => {
    const x = arr(
        "float32",
        [8],
        seq(8, (i) => i - 3.5),
      ),
      y = arr(
        "float32",
        [8],
        seq(8, (i) => (i % 3) - 1),
      );
    // s is read by the fused chain and by a reduction: the fused node returns it too
    const t = both(
      (a, b) => {
        const s = ops.add(a, b);
        return [ops.mul(s, s), ops.reduceSum(s, [0])];
      },
      [x, y],
      "escaping",
    );
    assert.equal(count(t, "jaxts.Fused"), 1, t);
    assert.match(t, /, \w+ = jaxts\.Fused|\w+, \w+ = jaxts\.Fused/, "two outputs");
    // a bool result leaves the graph: its comparison is not fused
    const tb = both((a, b) => [ops.lt(a, b), ops.add(a, b)], [x, y], "bool-out");
    assert.equal(count(tb, "Less"), 1, tb);
    // float64 stays with ONNX Runtime
    const td = both(
      (a, b) => [ops.mul(ops.add(a, b), a)],
      [
        arr(
          "float64",
          [8],
          seq(8, (i) => i),
        ),
        arr(
          "float64",
          [8],
          seq(8, (i) => -i),
        ),
      ],
      "float64",
    );
    assert.equal(count(td, "jaxts.Fused"), 0, td);
  },
);

test("a group never absorbs a node whose inputs depend on the group through another group (no cycle)", { skip }, () => {
  // G ([4]): g1 = neg(x), g2 = add(x, reshape(h1)); H ([2,2]): h1 = abs(reshape(g1)), h2 = mul(h1, reshape(g2)).
  // Fusing g2 into G and h2 into H would make each fused node read the other's result.
  const g = new GraphBuilder("cross");
  g.addInput("x", "float32", [4]);
  const shapes = new Map<string, readonly number[]>([["x", [4]]]),
    dtypes = new Map<string, string>([["x", "float32"]]);
  const node = (op: string, ins: string[], shape: number[]): string => {
    const o = g.op(op, ins);
    shapes.set(o, shape);
    dtypes.set(o, "float32");
    return o;
  };
  const g1 = node("Neg", ["x"], [4]);
  const r1 = node("Reshape", [g1, g.int64s([2, 2])], [2, 2]);
  const h1 = node("Abs", [r1], [2, 2]);
  const r2 = node("Reshape", [h1, g.int64s([4])], [4]);
  const g2 = node("Add", ["x", r2], [4]);
  const r3 = node("Reshape", [g2, g.int64s([2, 2])], [2, 2]);
  const h2 = node("Mul", [h1, r3], [2, 2]);
  g.addOutput(h2, "float32", [2, 2]);
  g.addOutput(g2, "float32", [4]);
  const before = g.toModelBytes();
  fuseGraphElementwise(g, shapes, dtypes);
  const after = g.toModelBytes();
  const x = new Float32Array([1.5, -2, 0, 4]);
  const run = (bytes: Uint8Array) => {
    const s = createSessionSync(bytes, { intraOpNumThreads: 1 });
    const r = fastRunner(
      s,
      [{ name: "x", dtype: "float32" }],
      [
        { name: h2, dtype: "float32" },
        { name: g2, dtype: "float32" },
      ],
    )!;
    const out = r.run([x], [[4]]).map((o) => globalThis.Array.from(o as Float32Array));
    s.dispose();
    return out;
  };
  // the rewritten graph loads (ORT rejects cycles) and computes the same values
  assert.deepEqual(run(after), run(before));
  // h1 = |x| = [1.5, 2, 0, 4], g2 = x + h1 = [3, 0, 0, 8], h2 = h1 * g2
  assert.deepEqual(run(before), [
    [4.5, 0, 0, 32],
    [3, 0, 0, 8],
  ]);
});

test("a jitted MLP training step fuses its relu gradient and matches the unfused step bit for bit", { skip }, () => {
  const x = arr(
      "float32",
      [16, 12],
      seq(192, (i) => Math.sin(i)),
    ),
    w = arr(
      "float32",
      [12, 8],
      seq(96, (i) => Math.cos(i) / 3),
    );
  const g = arr(
    "float32",
    [16, 8],
    seq(128, (i) => Math.sin(i * 0.3)),
  );
  const text = both(
    (xv, wv, gv) => {
      const pre = ops.dotGeneral(xv, wv, [
        [[1], [0]],
        [[], []],
      ]);
      const z = ops.full(pre.shape, 0, "float32");
      const masked = ops.select(ops.le(pre, z), gv, z);
      return [
        ops.max(pre, z),
        ops.sub(
          wv,
          ops.mul(
            ops.dotGeneral(xv, masked, [
              [[0], [0]],
              [[], []],
            ]),
            ops.scalarLike(wv, 0.1),
          ),
        ),
      ];
    },
    [x, w, g],
    "mlp-relu",
  );
  assert.equal(count(text, "Where") + count(text, "LessOrEqual"), 0, text);
  assert.ok(count(text, "jaxts.Fused") >= 1, text);
});

test("jaxts.Fused with operands of different sizes is an error naming the op and the sizes", { skip }, () => {
  const spec: FusedSpec = {
    values: [
      { kind: "input", index: 0 },
      { kind: "input", index: 1 },
      { kind: "op", op: "add", args: [0, 1] },
    ],
    outputs: [2],
    params: [],
    numInputs: 2,
    numScalars: 0,
    shape: [4],
  };
  const g = new GraphBuilder("bad_fused");
  g.addInput("a", "float32", [null]);
  g.addInput("b", "float32", [null]);
  g.addNode(
    "Fused",
    ["a", "b"],
    ["y"],
    { program: globalThis.Array.from(encodeFused(spec)), num_inputs: 2, num_scalars: 0 },
    "jaxts",
  );
  g.addOutput("y", "float32", [null]);
  const s = createSessionSync(g.toModelBytes(), { intraOpNumThreads: 1 });
  const r = fastRunner(
    s,
    [
      { name: "a", dtype: "float32" },
      { name: "b", dtype: "float32" },
    ],
    [{ name: "y", dtype: "float32" }],
  )!;
  assert.deepEqual(
    globalThis.Array.from(
      r.run([new Float32Array([1, 2, 3, 4]), new Float32Array([1, 1, 1, 1])], [[4], [4]])[0] as Float32Array,
    ),
    [2, 3, 4, 5],
  );
  assert.throws(
    () => r.run([new Float32Array(4), new Float32Array(3)], [[4], [3]]),
    (e: Error) =>
      /jaxts\.Fused: input 1 has 3 elements, input 0 has 4/.test(e.message) && !/jaxts\.Gemm/.test(e.message),
  );
  s.dispose();
});
