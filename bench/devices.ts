/**
 * @file Device runtime benchmarks (`node dist/bench/devices.js [--devices=8] [--quick]`, also run by `npm run bench`):
 * psum bandwidth and latency inside a device program, a data-parallel MLP training step on 1, 2 and 8 devices, and
 * pmap dispatch against one raw ORT session run; each row prints its ratio and whether the target is met.
 */
import { availableParallelism } from "node:os";
import * as ort from "onnxruntime-node";
import { GraphBuilder } from "../src/backends/onnx/graph-builder.js";
import { config } from "../src/core/config.js";
import { ANCHORS } from "./harness.js";

const maxDevices = Number(process.argv.find((a) => a.startsWith("--devices="))?.slice(10) ?? 8);
const quick = process.argv.includes("--quick");
config.update("numCpuDevices", maxDevices);
const { grad, lax, makeMesh, nn, numpy: jnp, pmap, random, shardMap, sharding } = await import("../src/index.js");
const { toOnnx } = await import("../src/io/index.js");
const rt = await import("../src/runtime/index.js");
type Arr = import("../src/core/array.js").Array;
const { P } = sharding;
const R = (n: number) => (quick ? Math.max(3, Math.ceil(n / 5)) : n);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
/** Median ms of f over reps calls, after two warm-up calls (sessions, pages). */
function timeIt(f: () => void, reps: number): number {
  f(); f();
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) { const t = performance.now(); f(); ts.push(performance.now() - t); }
  return median(ts);
}
async function timeItAsync(f: () => Promise<unknown>, reps: number): Promise<number> {
  await f(); await f();
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) { const t = performance.now(); await f(); ts.push(performance.now() - t); }
  return median(ts);
}

/** A program over float32[len]: AllReduce (psum) or Identity, on n devices. */
function program(n: number, len: number, collective: boolean): import("../src/runtime/index.js").DeviceProgram {
  const g = new GraphBuilder(collective ? "psum" : "identity");
  const x = g.addInput("x", "float32", [len]);
  const y = collective
    ? g.addNode("AllReduce", [x], 1, { groups: [...Array(n).keys()], group_size: n, reduce: 0, label: "psum", axes: "mesh axis 'x'" }, "jaxts.collectives")[0]
    : g.op("Identity", [x]);
  g.addOutput(y, "float32", [len]);
  return rt.deviceProgram(g.toModelBytes(), { name: g.outputNames[0], inputNames: ["x"], inputDTypes: ["float32"], outputNames: g.outputNames, outputDTypes: ["float32"], outputShapes: [[len]] }, n);
}

function launchTime(n: number, len: number, collective: boolean, reps: number): number {
  const p = program(n, len, collective);
  const ins = [...Array(n).keys()].map((r) => [rt.DeviceBuffer.alloc(rt.runtimeDevice(r), "float32", [len])]);
  for (const [b] of ins) (b.data as Float32Array).fill(1);
  const t = timeIt(() => { for (const o of rt.launchSync(p, [...Array(n).keys()], ins).outputs.flat()) o.free(); }, reps);
  ins.flat().forEach((b) => b.free());
  return t;
}

const rows: [string, string, string][] = [];
const verdict = (ok: boolean, target: string) => `target ${target}: ${ok ? "met" : "NOT met"}`;
const why = rt.deviceRuntimeUnavailable();
if (why) {
  console.log(`device runtime unavailable: ${why}`);
  process.exit(0);
}
const saved = config.deviceIntraOpThreads;
config.update("deviceIntraOpThreads", 1);

// psum of 16 MiB float32 across 2 devices: algorithm bandwidth = bytes / time of the whole launch
const bytes = 16 << 20;
const tPsum = launchTime(2, bytes / 4, true, R(15)), tId = launchTime(2, bytes / 4, false, R(15));
const gbps = bytes / 1e9 / (tPsum / 1e3);
rows.push(["psum 16 MiB float32, 2 devices", `${tPsum.toFixed(2)} ms per launch (Identity program ${tId.toFixed(2)} ms); ${gbps.toFixed(2)} GB/s = ${(100 * gbps / ANCHORS.streamTriadGBps).toFixed(1)}% of the ${ANCHORS.streamTriadGBps} GB/s STREAM triad`, verdict(gbps >= 0.25 * ANCHORS.streamTriadGBps, ">= 25%")]);
// psum of a scalar inside a program: added latency over the same program without the collective
const tS = launchTime(2, 1, true, R(300)), tS0 = launchTime(2, 1, false, R(300));
const addedUs = 1000 * (tS - tS0);
rows.push(["psum of a scalar in a program, 2 devices", `${addedUs.toFixed(1)} us added to a ${(1000 * tS0).toFixed(1)} us launch`, verdict(addedUs <= 10, "<= 10 us")]);

// data-parallel MLP step (784-512-10, global batch 256): per-device gradients, psum of grads, SGD update
config.update("spmdRuntime", "devices");
const [k1, k2, k3] = [1, 2, 3].map((s) => random.key(s));
const params = [jnp.multiply(random.normal(k1, [784, 512]), 0.03), jnp.zeros([512]), jnp.multiply(random.normal(k2, [512, 10]), 0.03), jnp.zeros([10])];
const xb = random.normal(k3, [256, 784]);
const yb = jnp.astype(jnp.mod(jnp.arange(256), 10), "int32");
const loss = (p: Arr[], x: Arr, y: Arr): Arr => {
  const h = nn.relu(jnp.add(jnp.matmul(x, p[0]), p[1]));
  const lp = nn.logSoftmax(jnp.add(jnp.matmul(h, p[2]), p[3]));
  return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(lp, nn.oneHot(y, 10)), -1)));
};
/** Median ms of one step on n devices; fails loudly if the step did not run on the device runtime. */
function stepTime(n: number): number {
  const mesh = makeMesh([n], ["data"]);
  // each device's loss is the mean over its block: the global mean's gradient is psum(g) / n
  const step = shardMap((p: Arr[], x: Arr, y: Arr) => {
    const g = grad(loss)(p, x, y) as unknown as Arr[];
    return p.map((w, i) => jnp.subtract(w, jnp.multiply(lax.psum(g[i], "data"), 0.1 / n)));
  }, { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: P() });
  const before = rt.lastLaunchTimeline();
  // dispatch is asynchronous: each timed step waits for its outputs (and frees them)
  const t = timeIt(() => { for (const o of step(params, xb, yb) as Arr[]) { o.blockUntilReady(); o.dispose(); } }, R(10));
  if (rt.lastLaunchTimeline() === before || rt.lastLaunchTimeline().length !== n) throw new Error(`bench/devices: the ${n}-device MLP step did not run on the device runtime`);
  return t;
}
const t1 = stepTime(1), t2 = stepTime(2);
rows.push(["MLP step 784-512-10, batch 256: 2 devices x 1 thread vs 1 device x 1 thread", `${t2.toFixed(2)} ms vs ${t1.toFixed(2)} ms (${(t1 / t2).toFixed(2)}x)`, verdict(t1 / t2 >= 1.8, ">= 1.8x")]);
config.update("deviceIntraOpThreads", Math.min(2, availableParallelism()));
const t1b = stepTime(1);
rows.push([`  vs 1 device x ${Math.min(2, availableParallelism())} intra-op threads`, `${t1b.toFixed(2)} ms (${(t1b / t2).toFixed(2)}x)`, verdict(t1b / t2 >= 1.0, ">= 1.0x")]);
config.update("deviceIntraOpThreads", 1);
if (maxDevices >= 8) {
  const t8 = stepTime(8);
  rows.push([`  8 devices on ${availableParallelism()} cores`, `${t8.toFixed(2)} ms per step (2 devices: ${t2.toFixed(2)} ms)`, "completes"]);
}

// pmap of a tiny function on 2 devices vs one raw ORT session run (one thread) of the same per-device program
const tiny = (v: Arr): Arr => jnp.add(jnp.multiply(jnp.sin(v), 2), 1);
const xs = jnp.reshape(jnp.arange(32, undefined, undefined, { dtype: "float32" }), [2, 16]);
const pf = pmap(tiny, "i");
const before = rt.lastLaunchTimeline();
const tPmap = timeIt(() => { pf(xs).blockUntilReady(); }, R(300));
const onDevices = rt.lastLaunchTimeline() !== before && rt.lastLaunchTimeline().length === 2;
const m = toOnnx(tiny, jnp.zeros([16]));
const session = await ort.InferenceSession.create(m.bytes, { executionProviders: ["cpu"], intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: "sequential", graphOptimizationLevel: "all" });
const feeds = { [m.inputNames[0]]: new ort.Tensor("float32", new Float32Array(16), [16]) };
const tOrt = await timeItAsync(() => session.run(feeds), R(300));
await session.release();
rows.push(["pmap of a tiny function (2x16 float32), 2 devices vs 1 raw ORT run", `${(1000 * tPmap).toFixed(1)} us vs ${(1000 * tOrt).toFixed(1)} us (${(tPmap / tOrt).toFixed(2)}x)${onDevices ? "" : " [ran on the emulation!]"}`, verdict(onDevices && tPmap / tOrt <= 3, "<= 3x")]);
config.update("deviceIntraOpThreads", saved);
config.update("spmdRuntime", "emulation");

const w = Math.max(...rows.map((r) => r[0].length)), w2 = Math.max(...rows.map((r) => r[1].length));
console.log(`device runtime (${availableParallelism()} cores, 1 intra-op thread per device unless said; medians${quick ? ", quick" : ""})`);
for (const [a, b, c] of rows) console.log(`${a.padEnd(w)}  ${b.padEnd(w2)}  ${c}`);
