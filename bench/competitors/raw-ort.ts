/** @file Benchmark contender: hand-built ONNX graphs (jaxts GraphBuilder) run directly by onnxruntime-node: the floor jaxts's ORT backend can reach. */
import os from "node:os";
import * as ort from "onnxruntime-node";
import { GraphBuilder } from "../../src/backends/onnx/graph-builder.js";
import type { Case, CaseBody, Contender, WorkloadId } from "../harness.js";
import { ADD_N, MATMUL_SIZES, TANH_N, packageVersion, randomF32 } from "../harness.js";

/*
 * One InferenceSession per case, created in setup (not timed). Inputs are ORT tensors over ordinary
 * Float32Arrays; the output is a preallocated tensor passed as a fetch, so the timed `run` does no
 * allocation (first touch of fresh pages costs ~0.3 GB/s here). `run` executes synchronously on the
 * calling thread; the body awaits its promise. No MLP (no autodiff) and no eager/jit distinction:
 * the add row is one `run` of a one-node graph.
 */

const NAME = "raw-ort";
const THREADS = os.availableParallelism();

function sessionOptions(): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: ["cpu"],
    intraOpNumThreads: THREADS,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
  };
}

interface Built {
  model: Uint8Array;
  inputs: Record<string, { data: Float32Array; dims: number[] }>;
  output: { name: string; dims: number[] };
}

function rcase(workload: WorkloadId, note: string, build: () => Built): Case {
  let session: ort.InferenceSession | undefined;
  return {
    name: NAME,
    workload,
    note,
    async setup(): Promise<CaseBody> {
      const b = build();
      session = await ort.InferenceSession.create(b.model, sessionOptions());
      const s = session;
      const feeds: Record<string, ort.Tensor> = {};
      for (const [k, v] of Object.entries(b.inputs)) feeds[k] = new ort.Tensor("float32", v.data, v.dims);
      const outN = b.output.dims.reduce((p, q) => p * q, 1);
      const fetches: Record<string, ort.Tensor> = {
        [b.output.name]: new ort.Tensor("float32", new Float32Array(outN), b.output.dims),
      };
      return async () => {
        await s.run(feeds, fetches);
      };
    },
    async teardown() {
      await session?.release();
      session = undefined;
    },
  };
}

function matmulModel(n: number): Built {
  const g = new GraphBuilder(`matmul_${n}`);
  g.addInput("a", "float32", [n, n]);
  g.addInput("b", "float32", [n, n]);
  g.addNode("MatMul", ["a", "b"], ["c"]);
  g.addOutput("c", "float32", [n, n]);
  return {
    model: g.toModelBytes(),
    inputs: {
      a: { data: randomF32(n * n, 10 + n), dims: [n, n] },
      b: { data: randomF32(n * n, 20 + n), dims: [n, n] },
    },
    output: { name: "c", dims: [n, n] },
  };
}

function tanhModel(): Built {
  const g = new GraphBuilder("tanh_2x_plus_1");
  g.addInput("x", "float32", [TANH_N]);
  const two = g.scalar("float32", 2);
  const one = g.scalar("float32", 1);
  const m = g.op("Mul", ["x", two]);
  const a = g.op("Add", [m, one]);
  g.addNode("Tanh", [a], ["y"]);
  g.addOutput("y", "float32", [TANH_N]);
  return {
    model: g.toModelBytes(),
    inputs: { x: { data: randomF32(TANH_N, 30), dims: [TANH_N] } },
    output: { name: "y", dims: [TANH_N] },
  };
}

function addModel(): Built {
  const g = new GraphBuilder("add");
  g.addInput("a", "float32", [ADD_N]);
  g.addInput("b", "float32", [ADD_N]);
  g.addNode("Add", ["a", "b"], ["c"]);
  g.addOutput("c", "float32", [ADD_N]);
  return {
    model: g.toModelBytes(),
    inputs: { a: { data: randomF32(ADD_N, 40), dims: [ADD_N] }, b: { data: randomF32(ADD_N, 41), dims: [ADD_N] } },
    output: { name: "c", dims: [ADD_N] },
  };
}

function cases(): Case[] {
  return [
    ...MATMUL_SIZES.map((n) =>
      rcase(`matmul-${n}` as WorkloadId, "one-node MatMul graph, preallocated output", () => matmulModel(n)),
    ),
    rcase("tanh-1e7", "Mul, Add, Tanh graph (ORT's own fusion only), preallocated output", tanhModel),
    rcase(
      "add-jit-4096",
      "session.run of a one-node Add graph, preallocated output (floor for eager and jit calls)",
      addModel,
    ),
  ];
}

export const rawOrt: Contender = {
  name: NAME,
  version: `onnxruntime-node ${packageVersion("onnxruntime-node")}`,
  notes: [
    `CPU execution provider, intraOpNumThreads ${THREADS}, graphOptimizationLevel "all"; models built with jaxts GraphBuilder`,
  ],
  cases,
};
