/**
 * @file Device runtime benchmarks (`node dist/bench/devices.js [--devices=8]`): psum bandwidth and latency inside a
 * device program, and a data-parallel MLP training step on 1, 2 (and 8) devices. Prints a table; nothing is written.
 */
import { availableParallelism } from "node:os";
import { GraphBuilder } from "../src/backends/onnx/graph-builder.js";
import { config } from "../src/core/config.js";

const maxDevices = Number(process.argv.find((a) => a.startsWith("--devices="))?.slice(10) ?? 8);
config.update("numCpuDevices", maxDevices);
const { grad, lax, makeMesh, nn, numpy: jnp, random, shardMap, sharding } = await import("../src/index.js");
const rt = await import("../src/runtime/index.js");
type Arr = import("../src/core/array.js").Array;
const { P } = sharding;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
function timeIt(f: () => void, reps: number): number {
  f(); f(); // warm: sessions, pages
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) { const t = performance.now(); f(); ts.push(performance.now() - t); }
  return median(ts);
}

/** A program over float32[len]: AllReduce (psum) or Identity, on n devices with one intra-op thread each. */
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

const rows: [string, string][] = [];
const why = rt.deviceRuntimeUnavailable();
if (why) {
  console.log(`device runtime unavailable: ${why}`);
  process.exit(0);
}

// psum of 16 MiB float32 across 2 devices: algorithm bandwidth = bytes / time (time net of an Identity program's launch)
const big = 4 << 20;
const tPsum = launchTime(2, big, true, 15), tId = launchTime(2, big, false, 15);
rows.push(["psum 16 MiB float32, 2 devices", `${tPsum.toFixed(2)} ms per launch (Identity program: ${tId.toFixed(2)} ms); algorithm bandwidth ${((16 / 1024) / (tPsum / 1000)).toFixed(2)} GiB/s`]);
// psum of a scalar: added latency over the same launch without the collective
const tS = launchTime(2, 1, true, 200), tS0 = launchTime(2, 1, false, 200);
rows.push(["psum of a scalar, 2 devices", `${(1000 * (tS - tS0)).toFixed(1)} us added to a ${(1000 * tS0).toFixed(1)} us launch (medians)`]);

// data-parallel MLP step (784-512-10, global batch 256): per-device gradients, psum, SGD update
config.update("spmdRuntime", "devices");
const [k1, k2, k3] = [1, 2, 3].map((s) => random.key(s));
const params = [jnp.multiply(random.normal(k1, [784, 512]), 0.03), jnp.zeros([512]), jnp.multiply(random.normal(k2, [512, 10]), 0.03), jnp.zeros([10])];
const xb = random.normal(k3, [256, 784]);
const yb = jnp.astype(jnp.mod(jnp.arange(256), 10), "int32");
const loss = (p: Arr[], x: Arr, y: Arr): Arr => {
  const h = nn.relu(jnp.add(jnp.matmul(x, p[0]), p[1]));
  const logits = jnp.add(jnp.matmul(h, p[2]), p[3]);
  const lp = nn.logSoftmax(logits);
  return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(lp, nn.oneHot(y, 10)), -1)));
};
function stepTime(n: number): number {
  const mesh = makeMesh([n], ["data"]);
  const step = shardMap((p: Arr[], x: Arr, y: Arr) => {
    const g = grad(loss)(p, x, y) as unknown as Arr[];
    return p.map((w, i) => jnp.subtract(w, jnp.multiply(lax.pmean(g[i], "data"), 0.1)));
  }, { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: P() });
  return timeIt(() => { step(params, xb, yb); }, 10);
}
const saved = config.deviceIntraOpThreads;
config.update("deviceIntraOpThreads", 1);
const t1 = stepTime(1), t2 = stepTime(2);
rows.push(["MLP step 784-512-10, batch 256: 2 devices x 1 thread vs 1 device x 1 thread", `${t2.toFixed(2)} ms vs ${t1.toFixed(2)} ms (${(t1 / t2).toFixed(2)}x)`]);
config.update("deviceIntraOpThreads", Math.min(2, availableParallelism()));
const t1b = stepTime(1);
rows.push(["  vs 1 device x 2 intra-op threads", `${t1b.toFixed(2)} ms (${(t1b / t2).toFixed(2)}x)`]);
config.update("deviceIntraOpThreads", saved);
if (maxDevices >= 8) {
  const t8 = stepTime(8);
  rows.push([`  8 devices on ${availableParallelism()} cores`, `${t8.toFixed(2)} ms per step (2 devices: ${t2.toFixed(2)} ms)`]);
}

const w = Math.max(...rows.map((r) => r[0].length));
console.log(`device runtime benchmarks (${availableParallelism()} cores; medians)`);
for (const [a, b] of rows) console.log(`${a.padEnd(w)}  ${b}`);
