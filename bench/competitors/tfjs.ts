/** @file Benchmark contenders: TensorFlow.js 4.22 with its wasm backend (tfjs-backend-wasm) and its pure-JS cpu backend. */
import { createRequire } from "node:module";
import path from "node:path";
import type { Case, CaseBody, Contender, WorkloadId } from "../harness.js";
import {
  ADD_N,
  LENET,
  MATMUL_SIZES,
  MLP,
  TANH_N,
  lenetData,
  mlpData,
  packageVersion,
  randomF32,
  workloadById,
} from "../harness.js";

/*
 * The slice of the tfjs API used here, typed locally and imported through a non-literal specifier: importing
 * "@tensorflow/tfjs" statically made every `tsc` run load, bind and relate tfjs's ~600 declaration files.
 */
interface TfTensor {
  dispose(): void;
}
interface TfOptimizer extends TfTensor {
  minimize(f: () => TfTensor, returnCost: boolean, varList: TfTensor[]): TfTensor | null;
}
interface TfApi {
  setBackend(name: string): Promise<boolean>;
  getBackend(): string;
  ready(): Promise<void>;
  memory(): { numTensors: number };
  env(): { getBool(flag: string): boolean; set(flag: string, value: boolean): void };
  variable(t: TfTensor): TfTensor;
  tensor1d(values: Float32Array): TfTensor;
  tensor2d(values: Float32Array, shape: [number, number]): TfTensor;
  tensor4d(values: Float32Array, shape: [number, number, number, number]): TfTensor;
  transpose(x: TfTensor, perm: number[]): TfTensor;
  reshape(x: TfTensor, shape: number[]): TfTensor;
  conv2d(x: TfTensor, filter: TfTensor, strides: number, pad: "valid" | "same"): TfTensor;
  maxPool(x: TfTensor, filterSize: number, strides: number, pad: "valid" | "same"): TfTensor;
  add(a: TfTensor, b: TfTensor | number): TfTensor;
  mul(a: TfTensor, b: TfTensor | number): TfTensor;
  matMul(a: TfTensor, b: TfTensor): TfTensor;
  relu(x: TfTensor): TfTensor;
  tanh(x: TfTensor): TfTensor;
  tidy(f: () => TfTensor): TfTensor;
  losses: { softmaxCrossEntropy(labels: TfTensor, logits: TfTensor): TfTensor };
  train: { sgd(learningRate: number): TfOptimizer };
}
interface TfWasmApi {
  getThreadsCount(): number;
  setWasmPaths(prefix: string): void;
}
const TFJS: string = "@tensorflow/tfjs";
const TFJS_WASM: string = "@tensorflow/tfjs-backend-wasm";
const tf = (await import(TFJS)) as TfApi;
const { getThreadsCount, setWasmPaths } = (await import(TFJS_WASM)) as TfWasmApi;

/*
 * Both tfjs backends used here execute every kernel synchronously inside the op call, so a timed
 * body needs no dataSync/readback to be honest; it only disposes what it created. tfjs has no jit:
 * the jit rows are left empty and tanh(2x+1) runs as three eager ops.
 */

type Backend = "wasm" | "cpu";
/** Something owning tfjs memory: a tensor, a variable, an optimizer. */
interface Disposable {
  dispose(): void;
}

let wasmPathsSet = false;

function wasmDistDir(): string {
  const req = createRequire(import.meta.url);
  return path.dirname(req.resolve("@tensorflow/tfjs-backend-wasm/package.json")) + path.sep + "dist" + path.sep;
}

/** Track the tensors one case keeps (freed at teardown); check once in setup that its body leaks none. */
function tcase(
  name: string,
  backend: Backend,
  workload: WorkloadId,
  note: string,
  setup: (keep: (t: Disposable) => void) => CaseBody,
): Case {
  const kept: Disposable[] = [];
  return {
    name,
    workload,
    note,
    async setup() {
      await tf.setBackend(backend);
      const body = setup((t) => kept.push(t));
      if (workloadById(workload).once) return body; // the first call is the measurement
      const before = tf.memory().numTensors;
      await body();
      const leaked = tf.memory().numTensors - before;
      if (leaked !== 0) console.warn(`[bench] ${name}/${workload}: ${leaked} tfjs tensors leaked per call`);
      return body;
    },
    // tfjs has one process-wide backend: the wasm and cpu contenders' samples interleave
    async activate() {
      if (tf.getBackend() !== backend) await tf.setBackend(backend);
    },
    teardown() {
      while (kept.length) kept.pop()!.dispose();
    },
  };
}

function mlpSetup(keep: (t: Disposable) => void): CaseBody {
  const d = mlpData();
  const variable = (t: TfTensor): TfTensor => {
    const v = tf.variable(t);
    t.dispose(); // the variable holds its own reference to the data
    return v;
  };
  const w1 = variable(tf.tensor2d(d.w1, [MLP.inDim, MLP.hidden]));
  const b1 = variable(tf.tensor1d(d.b1));
  const w2 = variable(tf.tensor2d(d.w2, [MLP.hidden, MLP.outDim]));
  const b2 = variable(tf.tensor1d(d.b2));
  const x = tf.tensor2d(d.x, [MLP.batch, MLP.inDim]);
  const y = tf.tensor2d(d.y, [MLP.batch, MLP.outDim]);
  const opt = tf.train.sgd(MLP.lr);
  for (const t of [w1, b1, w2, b2, x, y, opt]) keep(t);
  const vars = [w1, b1, w2, b2];
  const loss = (): TfTensor => {
    const h = tf.relu(tf.add(tf.matMul(x, w1), b1));
    const logits = tf.add(tf.matMul(h, w2), b2);
    return tf.losses.softmaxCrossEntropy(y, logits);
  };
  return () => {
    // minimize = variableGrads + applyGradients; returns the cost, which we free.
    const cost = opt.minimize(loss, true, vars);
    cost?.dispose();
  };
}

/** The LeNet step in tfjs's native NHWC / HWIO layout (kernels transposed from OIHW once, at setup). */
function lenetSetup(keep: (t: Disposable) => void): CaseBody {
  const { batch, size, c1, c2, k, flat, outDim } = LENET;
  const d = lenetData();
  const variable = (t: TfTensor): TfTensor => {
    const v = tf.variable(t);
    t.dispose();
    return v;
  };
  const hwio = (data: Float32Array, o: number, i: number) =>
    tf.tidy(() => tf.transpose(tf.tensor4d(data, [o, i, k, k]), [2, 3, 1, 0]));
  const k1 = variable(hwio(d.k1, c1, 1)),
    b1 = variable(tf.tensor1d(d.b1));
  const k2 = variable(hwio(d.k2, c2, c1)),
    b2 = variable(tf.tensor1d(d.b2));
  const w3 = variable(tf.tensor2d(d.w3, [flat, outDim])),
    b3 = variable(tf.tensor1d(d.b3));
  const x = tf.tidy(() => tf.transpose(tf.tensor4d(d.x, [batch, 1, size, size]), [0, 2, 3, 1]));
  const y = tf.tensor2d(d.y, [batch, outDim]);
  const opt = tf.train.sgd(LENET.lr);
  for (const t of [k1, b1, k2, b2, w3, b3, x, y, opt]) keep(t);
  const block = (h: TfTensor, kk: TfTensor, bb: TfTensor): TfTensor =>
    tf.maxPool(tf.relu(tf.add(tf.conv2d(h, kk, 1, "valid"), bb)), 2, 2, "valid");
  const loss = (): TfTensor => {
    const h = tf.reshape(block(block(x, k1, b1), k2, b2), [batch, flat]);
    return tf.losses.softmaxCrossEntropy(y, tf.add(tf.matMul(h, w3), b3));
  };
  return () => {
    const cost = opt.minimize(loss, true, [k1, b1, k2, b2, w3, b3]);
    cost?.dispose();
  };
}

function makeCases(name: string, backend: Backend): Case[] {
  const out: Case[] = [];
  out.push(
    tcase(
      name,
      backend,
      "mlp-compile",
      "first optimizer.minimize step on fresh variables (tfjs has no compile; kernel warmup only)",
      mlpSetup,
    ),
  );
  for (const n of MATMUL_SIZES) {
    // The cpu backend manages ~1 GFLOP/s: N=2048 would take ~20 s per call.
    if (backend === "cpu" && n > 1024) continue;
    out.push(
      tcase(name, backend, `matmul-${n}` as WorkloadId, "tf.matMul, eager (no jit)", (keep) => {
        const a = tf.tensor2d(randomF32(n * n, 10 + n), [n, n]);
        const b = tf.tensor2d(randomF32(n * n, 20 + n), [n, n]);
        keep(a);
        keep(b);
        return () => tf.matMul(a, b).dispose();
      }),
    );
  }
  out.push(
    tcase(
      name,
      backend,
      "mlp-step",
      "tf.train.sgd().minimize (variableGrads + applyGradients), cost disposed",
      mlpSetup,
    ),
  );
  // tfjs-backend-wasm has no Conv2DBackpropFilter kernel: the LeNet step runs on the cpu backend only
  if (backend !== "wasm")
    out.push(
      tcase(
        name,
        backend,
        "lenet-step",
        "tf.conv2d / tf.maxPool (NHWC) under tf.train.sgd().minimize, cost disposed",
        lenetSetup,
      ),
    );
  out.push(
    tcase(name, backend, "tanh-1e7", "three eager ops inside tf.tidy (no fusion)", (keep) => {
      const x = tf.tensor1d(randomF32(TANH_N, 30));
      keep(x);
      return () => tf.tidy(() => tf.tanh(tf.add(tf.mul(x, 2), 1))).dispose();
    }),
  );
  out.push(
    tcase(name, backend, "add-eager-4096", "tf.add + dispose; executes synchronously, no readback", (keep) => {
      const a = tf.tensor1d(randomF32(ADD_N, 40));
      const b = tf.tensor1d(randomF32(ADD_N, 41));
      keep(a);
      keep(b);
      return () => tf.add(a, b).dispose();
    }),
  );
  return out;
}

export const tfjsWasm: Contender = {
  name: "tfjs-wasm",
  version: `@tensorflow/tfjs ${packageVersion("@tensorflow/tfjs")}, tfjs-backend-wasm ${packageVersion("@tensorflow/tfjs-backend-wasm")}`,
  get notes(): string[] {
    return [
      `backend "wasm", SIMD ${tf.env().getBool("WASM_HAS_SIMD_SUPPORT") ? "on" : "off"}, ` +
        `multithread ${tf.env().getBool("WASM_HAS_MULTITHREAD_SUPPORT") ? `on (${getThreadsCount()} threads)` : "off"}`,
      "tf.env PROD=true; ops run eagerly and synchronously (no jit): jit rows empty",
    ];
  },
  async init() {
    if (!wasmPathsSet) {
      setWasmPaths(wasmDistDir());
      wasmPathsSet = true;
    }
    tf.env().set("PROD", true); // production mode: no debug checks, no "install tfjs-node" banner
    if (!(await tf.setBackend("wasm"))) throw new Error("tf.setBackend('wasm') failed");
    await tf.ready();
  },
  cases: () => makeCases("tfjs-wasm", "wasm"),
};

export const tfjsCpu: Contender = {
  name: "tfjs-cpu",
  version: `@tensorflow/tfjs ${packageVersion("@tensorflow/tfjs")}`,
  notes: ['backend "cpu" (plain JS kernels), tf.env PROD=true; matmul N=2048 skipped (~20 s per call)'],
  async init() {
    tf.env().set("PROD", true);
    if (!(await tf.setBackend("cpu"))) throw new Error("tf.setBackend('cpu') failed");
    await tf.ready();
  },
  cases: () => makeCases("tfjs-cpu", "cpu"),
};
