/** @file Child process of native-isa.test.ts: under the JAXTS_CPU it was started with, checks the native fused kernel bit for bit against the WebAssembly kernel and matrix products (jaxts.Gemm or ORT's Gemm) against float64 sums; prints one JSON line. */
import { GraphBuilder } from "../../../src/backends/onnx/graph-builder.js";
import { NativeFusedKernel } from "../../../src/backends/onnx/native-fused.js";
import { createSessionSync, fastRunner, nativeGemmKernel, runnerKind } from "../../../src/backends/onnx/ort-runtime.js";
import { WasmKernel } from "../../../src/backends/onnx/wasm-kernel.js";
import { FUSED_EDGE_VALUES, operationPrograms } from "./fused-kernel-programs.js";

let seed = 20261201;
const rand = (n: number, lo: number, hi: number): number[] =>
  Array.from({ length: n }, () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return lo + ((hi - lo) * seed) / 4294967296;
  });

const n = 70_001; // more than one 32K chunk, not a multiple of any block or vector width
const a = new Float32Array([...rand(n, -120, 120), ...FUSED_EDGE_VALUES]),
  b = new Float32Array([...rand(n, -3, 3), ...[...FUSED_EDGE_VALUES].reverse()]);
const len = a.length;
const progs = operationPrograms(a, b);

const mismatches: string[] = [];
let isa: string | null = null; // null: no native kernel (the runner fell back to onnxruntime-node)
for (const [label, sp, ins, scalars] of progs) {
  const nat = NativeFusedKernel.create(sp),
    wasm = WasmKernel.create(sp);
  if (!wasm) throw new Error(`${label}: no WebAssembly kernel`);
  if (!nat) break;
  isa = nat.isa;
  const want = sp.outputs.map(() => new Float32Array(len)),
    got = sp.outputs.map(() => new Float32Array(len));
  wasm.run(ins, scalars, want, len);
  nat.run(ins, scalars, got, len);
  for (let j = 0; j < got.length; j++) {
    const gb = new Uint32Array(got[j].buffer),
      wb = new Uint32Array(want[j].buffer);
    for (let i = 0; i < len && mismatches.length < 20; i++)
      // NaN payloads may differ; everything else is bit-identical
      if (gb[i] !== wb[i] && !(Number.isNaN(got[j][i]) && Number.isNaN(want[j][i])))
        mismatches.push(
          `${label} out ${j} at ${i}: x=${ins[0][i]} y=${ins[1]?.[i]}: native ${got[j][i]} vs wasm ${want[j][i]}`,
        );
  }
}

// Gemm nodes in the jaxts domain where the custom op is registered (else ORT's Gemm), against float64 sums
function gemm(M: number, N: number, K: number, transB: boolean): number {
  const g = new GraphBuilder("gemm");
  const gemmKernel = nativeGemmKernel();
  g.addInput("a", "float32", [M, K]);
  g.addInput("b", "float32", transB ? [N, K] : [K, N]);
  g.addInput("c", "float32", [N]);
  g.addNode(
    "Gemm",
    ["a", "b", "c"],
    ["y"],
    { transB: transB ? 1 : 0, alpha: 0.5, beta: -2 },
    gemmKernel ? "jaxts" : "",
  );
  g.addOutput("y", "float32", [M, N]);
  const s = createSessionSync(g.toModelBytes(), { intraOpNumThreads: 2 });
  const x = new Float32Array(rand(M * K, -1, 1)),
    w = new Float32Array(rand(K * N, -1, 1)),
    c = new Float32Array(rand(N, -1, 1));
  const r = fastRunner(
    s,
    ["a", "b", "c"].map((name) => ({ name, dtype: "float32" as const })),
    [{ name: "y", dtype: "float32" }],
  )!;
  const y = r.run([x, w, c], [[M, K], transB ? [N, K] : [K, N], [N]])[0] as Float32Array;
  s.dispose();
  let worst = 0;
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let acc = 0,
        mag = 0;
      for (let k = 0; k < K; k++) {
        const t = x[i * K + k] * (transB ? w[j * K + k] : w[k * N + j]);
        acc += t;
        mag += Math.abs(t);
      }
      // error relative to the sum of |terms| (float32 sums in any order stay within a few K ulps of it)
      worst = Math.max(
        worst,
        Math.abs(y[i * N + j] - (0.5 * acc - 2 * c[j])) / (0.5 * mag + 2 * Math.abs(c[j]) + 1e-30),
      );
    }
  return worst;
}
const gemmError = Math.max(gemm(61, 77, 300, false), gemm(130, 45, 530, true));

console.log(JSON.stringify({ runner: runnerKind().kind, isa, gemmKernel: nativeGemmKernel(), mismatches, gemmError }));
