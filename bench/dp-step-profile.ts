/**
 * @file ORT's per-node profile of the data-parallel MLP step's per-device program (`node dist/bench/dp-step-profile.js`):
 * the gradient + SGD update of bench/mlp-problem.ts without the psum, compiled as the device runtime compiles it
 * (jaxts.Gemm where it applies), run single-threaded at batch 128 (a rank of the 2x1 step) and 256 (the 1x1 step),
 * interleaved; prints each node's median time at both sizes and its ratio (which work does not halve).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileJaxpr, type OnnxStep } from "../src/compiler/compile.js";
import { createSessionSync, fastRunner } from "../src/backends/onnx/ort-runtime.js";
import type { DType } from "../src/backends/onnx/graph-builder.js";
import { nativeGemmOptions } from "../src/compiler/optimize-graph.js";
import { mlpProblem } from "./mlp-problem.js";

const jx = await import("../src/index.js");
const { grad, makeJaxpr, numpy: jnp } = jx;
type Arr = import("../src/core/array.js").Array;
const { params, xb, yb, loss } = mlpProblem(jx);
const reps = Number(process.argv.find((a) => a.startsWith("--reps="))?.slice(7) ?? 200);
const step = (p: Arr[], x: Arr, y: Arr): Arr[] => {
  const g = grad(loss)(p, x, y) as unknown as Arr[];
  return p.map((w, i) => jnp.subtract(w, jnp.multiply(g[i], 0.05)));
};

/** One compiled per-device program at this batch, with its session (profiling on) and feeds. */
function build(batch: number, dir: string, label: string, gemm: Partial<typeof nativeGemmOptions>) {
  const saved = { ...nativeGemmOptions };
  Object.assign(nativeGemmOptions, gemm);
  const xs = batch === 256 ? xb : (jnp.split(xb, 2)[0] as Arr);
  const ys = batch === 256 ? yb : (jnp.split(yb, 2)[0] as Arr);
  const cj = makeJaxpr(step)(params, xs, ys);
  const prog = compileJaxpr(cj.jaxpr, { name: `dp${batch}` });
  Object.assign(nativeGemmOptions, saved);
  if (prog.steps.length !== 1 || prog.steps[0].kind !== "onnx") throw new Error("expected one ONNX step");
  const s = prog.steps[0] as OnnxStep;
  const values = [...cj.consts, ...params, xs, ys] as Arr[];
  const feeds = s.inputs.map((slot) => values[prog.inSlots.indexOf(slot)]);
  const session = createSessionSync(s.model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: "all",
    profileFilePrefix: join(dir, label),
    configEntries: { "session.intra_op.allow_spinning": "0" },
  });
  const run = fastRunner(
    session,
    s.inputNames.map((name, k) => ({ name, dtype: s.inputDTypes[k] as DType })),
    s.outputNames.map((name, k) => ({ name, dtype: s.outAvals[k].dtype as DType })),
  )!;
  const data = feeds.map((a) => a.dataSync() as Float32Array);
  const shapes = feeds.map((a) => a.shape);
  return { session, go: () => run.run(data, shapes) };
}

const dir = mkdtempSync(join(tmpdir(), "dp-prof-"));
// variants of where jaxts.Gemm replaces ORT's (MLAS) Gemm: --gemm=default|all|none
const gemmArg = process.argv.find((a) => a.startsWith("--gemm="))?.slice(7) ?? "default";
const gemm = gemmArg === "all" ? { minM: 1, minN: 1, minK: 1 } : gemmArg === "none" ? { minM: 1e9 } : {};
const sizes = [128, 256];
const built = sizes.map((b) => build(b, dir, `b${b}`, gemm));
// the process's CPU time (us, getrusage) per run: the runs are synchronous on the main thread with one intra-op thread
const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const cpu = built.map(() => [] as number[]);
for (let i = 0; i < reps; i++)
  built.forEach((b, k) => {
    const t = cpuUs();
    b.go();
    cpu[k].push(cpuUs() - t);
  });
for (const b of built) b.session.dispose();

interface Ev {
  cat: string;
  name: string;
  dur: number;
  args?: { op_name?: string };
}
/** Per node (name [op]): the 10th-percentile kernel time in microseconds (wall clock: the low end is what an uncontended run takes on a shared host), skipping the first 10 runs. */
function perNode(prefix: string): Map<string, number> {
  const f = readdirSync(dir).find((n) => n.startsWith(prefix));
  if (!f) throw new Error(`no profile written for ${prefix}`);
  const evs = JSON.parse(readFileSync(join(dir, f), "utf8")) as Ev[];
  const by = new Map<string, number[]>();
  for (const e of evs) {
    if (e.cat !== "Node" || !e.name.endsWith("_kernel_time")) continue;
    const k = `${e.name.slice(0, -12)} [${e.args?.op_name ?? "?"}]`;
    (by.get(k) ?? by.set(k, []).get(k)!).push(e.dur);
  }
  const med = (xs: number[]) => [...xs.slice(10)].sort((a, b) => a - b)[Math.floor((xs.length - 10) / 10)];
  return new Map([...by].map(([k, xs]) => [k, med(xs)]));
}
const [p128, p256] = sizes.map((b) => perNode(`b${b}`));
rmSync(dir, { recursive: true, force: true });
const keys = [...new Set([...p256.keys(), ...p128.keys()])].sort((a, b) => (p256.get(b) ?? 0) - (p256.get(a) ?? 0));
let s128 = 0,
  s256 = 0;
const medianOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `whole run, process CPU (median): b=128 ${medianOf(cpu[0]).toFixed(0)} us, b=256 ${medianOf(cpu[1]).toFixed(0)} us, ratio ${(medianOf(cpu[0]) / medianOf(cpu[1])).toFixed(2)}`,
);
console.log(`per-node p10 kernel time, 1 intra-op thread, ${reps} runs each, interleaved, jaxts.Gemm: ${gemmArg}`);
console.log(`${"node [op]".padEnd(60)} ${"b=128 us".padStart(9)} ${"b=256 us".padStart(9)}  ratio`);
for (const k of keys) {
  const a = p128.get(k) ?? 0,
    b = p256.get(k) ?? 0;
  s128 += a;
  s256 += b;
  if (Math.max(a, b) < 5) continue;
  console.log(
    `${k.slice(0, 60).padEnd(60)} ${a.toFixed(0).padStart(9)} ${b.toFixed(0).padStart(9)}  ${b ? (a / b).toFixed(2) : "-"}`,
  );
}
console.log(
  `${"sum of nodes".padEnd(60)} ${s128.toFixed(0).padStart(9)} ${s256.toFixed(0).padStart(9)}  ${(s128 / s256).toFixed(2)}`,
);
