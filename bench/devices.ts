/**
 * @file Device runtime benchmarks (`node dist/bench/devices.js [--devices=8] [--quick]`, also run by `npm run bench`):
 * psum bandwidth and latency inside a device program, a data-parallel MLP training step on 1, 2 and 8 devices, and
 * pmap dispatch against one raw ORT session run, and resharding (native block copy vs the JS copy); each row prints its ratio and whether the target is met.
 * Cases compared by a ratio run interleaved (each in turn, medians over the rounds; the training-step rows take turns
 * in blocks of JAXTS_BENCH_BLOCK steps, default 8, as a training loop runs one step back to back), so a load change on
 * a shared host hits both sides alike; each row also says where the time went, from the runtime's own stamps:
 * "device" = first rank start to last rank end, the rest is host work (marshalling, wake-ups, block copies).
 */
import { jsThreadNs as jsNs } from "./schedstat.js";
import { availableParallelism } from "node:os";
import * as ort from "onnxruntime-node";
import { GraphBuilder } from "../src/backends/onnx/graph-builder.js";
import { config } from "../src/core/config.js";
import { compileOptions } from "../src/compiler/compile.js";
import { mlpProblem } from "./mlp-problem.js";
import { ANCHORS } from "./harness.js";

const maxDevices = Number(process.argv.find((a) => a.startsWith("--devices="))?.slice(10) ?? 8);
const quick = process.argv.includes("--quick");
config.update("numCpuDevices", maxDevices);
const { devicePut, grad, jit, lax, makeMesh, numpy: jnp, pmap, shardMap, sharding } = await import("../src/index.js");
const { toOnnx } = await import("../src/io/index.js");
const rt = await import("../src/runtime/index.js");
const { setCallerRunsMode } = await import("../src/runtime/launch.js");
type Arr = import("../src/core/array.js").Array;
const { NamedSharding, P } = sharding;
const R = (n: number) => (quick ? Math.max(3, Math.ceil(n / 5)) : n);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
/**
 * Median ms of each of fs over reps calls each, after `warm` rounds: the cases take turns in blocks of `block` calls,
 * the order reversed every other round. Block 1 switches programs after every call; a training loop instead runs one
 * step function back to back, so the step rows use STEP_BLOCK: a step that follows five other programs starts with the
 * caches they left (their own parameter copies and activations), a cost (0.3-0.4 ms of a 1.4 ms 2x1 step here) that
 * no training loop pays. Either way every round runs every case, so a load change on a shared host hits them alike.
 */
function interleaved(fs: (() => void)[], reps: number, warm = 3, block = 1): number[] {
  for (let i = 0; i < warm; i++) for (const f of fs) f();
  const ts = fs.map(() => [] as number[]);
  for (let i = 0, round = 0; i < reps; i += block, round++) {
    const order = fs.map((_, k) => k);
    if (round % 2) order.reverse();
    for (const k of order)
      for (let j = 0; j < block && i + j < reps; j++) {
        const t = performance.now();
        fs[k]();
        ts[k].push(performance.now() - t);
      }
  }
  return ts.map(median);
}
/** Calls per block for the training-step rows (JAXTS_BENCH_BLOCK; 1 gives the call-by-call order of earlier runs). */
const STEP_BLOCK = Math.max(1, Number(process.env.JAXTS_BENCH_BLOCK ?? 8));
/** Microseconds from the first rank's start to the last rank's end of the latest launch. */
function deviceSpanUs(): number {
  const tl = rt.lastLaunchTimeline();
  return Math.max(...tl.map((t) => t.end)) - Math.min(...tl.map((t) => t.start));
}
/** Wraps f so that each call also records the device span of the launch it made. */
function withSpan(f: () => void, spans: number[]): () => void {
  return () => {
    f();
    spans.push(deviceSpanUs());
  };
}

/** A program over float32[len]: AllReduce (psum) or Identity, on n devices. */
function program(n: number, len: number, collective: boolean): import("../src/runtime/index.js").DeviceProgram {
  const g = new GraphBuilder(collective ? "psum" : "identity");
  const x = g.addInput("x", "float32", [len]);
  const y = collective
    ? g.addNode(
        "AllReduce",
        [x],
        1,
        { groups: [...Array(n).keys()], group_size: n, reduce: 0, label: "psum", axes: "mesh axis 'x'" },
        "jaxts.collectives",
      )[0]
    : g.op("Identity", [x]);
  g.addOutput(y, "float32", [len]);
  return rt.deviceProgram(
    g.toModelBytes(),
    {
      name: g.outputNames[0],
      inputNames: ["x"],
      inputDTypes: ["float32"],
      outputNames: g.outputNames,
      outputDTypes: ["float32"],
      outputShapes: [[len]],
    },
    n,
  );
}

/** A launcher of program(n, len, collective) on ones (its outputs freed after each call). */
function launcher(n: number, len: number, collective: boolean): { run: () => void; free: () => void } {
  const p = program(n, len, collective);
  const ins = [...Array(n).keys()].map((r) => [rt.DeviceBuffer.alloc(rt.runtimeDevice(r), "float32", [len])]);
  for (const [b] of ins) (b.data as Float32Array).fill(1);
  const ids = [...Array(n).keys()];
  return {
    run: () => {
      for (const o of rt.launchSync(p, ids, ins).outputs.flat()) o.free();
    },
    free: () => ins.flat().forEach((b) => b.free()),
  };
}
const us = (ms: number) => `${(1000 * ms).toFixed(1)} us`;

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
{
  const ps = launcher(2, bytes / 4, true),
    id = launcher(2, bytes / 4, false);
  const span: number[] = [],
    met: number[] = [],
    kernel: number[] = [];
  // the launch's recorded collective: when the last peer arrived (from the first rank's start) and the reduction itself
  const prevObserver = rt.setLaunchObserver((r) => {
    const c = r.collectives.map((cs) => cs[0]).filter((x) => x !== undefined);
    if (c.length !== 2 || c.some((x) => x.kind !== "AllReduce")) return;
    const ready = Math.max(...c.map((x) => x.ready));
    met.push(ready - Math.min(...r.timeline.map((t) => t.start)));
    kernel.push(Math.max(...c.map((x) => x.end)) - ready);
  });
  const [tPsum, tId] = interleaved([withSpan(ps.run, span), id.run], R(15));
  rt.setLaunchObserver(prevObserver);
  const gbps = bytes / 1e9 / (tPsum / 1e3);
  const ms = (u: number[]) => (median(u) / 1000).toFixed(2);
  rows.push([
    "psum 16 MiB float32, 2 devices",
    `${tPsum.toFixed(2)} ms per launch (device ${ms(span)} ms: peers met after ${ms(met)}, reduction ${ms(kernel)} ms; Identity program ${tId.toFixed(2)} ms); ${gbps.toFixed(2)} GB/s = ${((100 * gbps) / ANCHORS.streamTriadGBps).toFixed(1)}% of the ${ANCHORS.streamTriadGBps} GB/s STREAM triad`,
    verdict(gbps >= 0.25 * ANCHORS.streamTriadGBps, ">= 25%"),
  ]);
  ps.free();
  id.free();
}
// psum of a scalar inside a program: added latency over the same program without the collective
{
  const ps = launcher(2, 1, true),
    id = launcher(2, 1, false);
  const [tS, tS0] = interleaved([ps.run, id.run], R(300), 20);
  const addedUs = 1000 * (tS - tS0);
  rows.push([
    "psum of a scalar in a program, 2 devices",
    `${addedUs.toFixed(1)} us added to a ${us(tS0)} launch`,
    verdict(addedUs <= 10, "<= 10 us"),
  ]);
  ps.free();
  id.free();
}

// data-parallel MLP step (784-512-10, global batch 256): per-device gradients, psum of grads, SGD update
config.update("spmdRuntime", "devices");
const { params, xb, yb, loss } = mlpProblem(await import("../src/index.js"));
/**
 * One step on n devices (its device programs get `threads` intra-op threads each); fails loudly off the device runtime.
 * `independent`: the same per-device program without the psum (each device updates its own copy of the parameters
 * from its own half batch; no communication at all): the ceiling of any data-parallel step on this host.
 * `chain`: each call runs that many steps and waits only for the last (a training loop that does not read every step).
 * `epilogues` false: the psum and the SGD update stay separate nodes (compileOptions.collectiveEpilogues).
 */
function makeStep(
  n: number,
  threads: number,
  spans: number[],
  shardUpdates = false,
  independent = false,
  chain = 1,
  epilogues = true,
): () => void {
  config.update("spmdShardUpdates", shardUpdates);
  compileOptions.collectiveEpilogues = epilogues;
  const mesh = makeMesh([n], ["data"]);
  // each device's loss is the mean over its block: the global mean's gradient is psum(g) / n
  const step = shardMap(
    (p: Arr[], x: Arr, y: Arr) => {
      const g = grad(loss)(p, x, y) as unknown as Arr[];
      return p.map((w, i) => jnp.subtract(w, jnp.multiply(independent ? g[i] : lax.psum(g[i], "data"), 0.1 / n)));
    },
    // independent: each device's parameters differ, so no replication check (the output is read from device 0)
    { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: P(), ...(independent ? { checkVma: false } : {}) },
  );
  // the program is compiled (and its sessions created with this thread count) at the first call
  config.update("deviceIntraOpThreads", threads);
  const before = rt.lastLaunchTimeline();
  // a training loop's state: parameters replicated and the batch split over "data", resident on the devices; each
  // step's new parameters replace the old ones there (dispatch is asynchronous: a step waits for its outputs)
  let p = params.map((w) => devicePut(w, new NamedSharding(mesh, P())));
  const x = devicePut(xb, new NamedSharding(mesh, P("data"))),
    y = devicePut(yb, new NamedSharding(mesh, P("data")));
  const run = (): void => {
    // the flag is part of the call signature: each case runs the program it was compiled with
    config.update("spmdShardUpdates", shardUpdates);
    compileOptions.collectiveEpilogues = epilogues;
    for (let k = 0; k < chain; k++) {
      const next = step(p, x, y) as Arr[];
      if (k === chain - 1) for (const o of next) o.blockUntilReady();
      for (const w of p) w.dispose();
      p = next;
    }
  };
  run();
  config.update("deviceIntraOpThreads", 1);
  config.update("spmdShardUpdates", false);
  compileOptions.collectiveEpilogues = true;
  if (rt.lastLaunchTimeline() === before || rt.lastLaunchTimeline().length !== n)
    throw new Error(`bench/devices: the ${n}-device MLP step did not run on the device runtime`);
  return withSpan(run, spans);
}
const two = Math.min(2, availableParallelism());
const spans = [[], [], [], [], []] as number[][];
const steps = [
  makeStep(1, 1, spans[0]),
  makeStep(2, 1, spans[1]),
  makeStep(1, two, spans[2]),
  makeStep(2, 1, spans[4], true),
];
if (maxDevices >= 8) steps.push(makeStep(8, 1, spans[3]));
const [t1, t2, t1b, t2ws, t8] = interleaved(steps, R(40), 3, STEP_BLOCK);
const dev = (k: number) => `device ${(median(spans[k]) / 1000).toFixed(2)} ms`;
rows.push([
  "MLP step 784-512-10, batch 256: 2 devices x 1 thread vs 1 device x 1 thread",
  `${t2.toFixed(2)} ms (${dev(1)}) vs ${t1.toFixed(2)} ms (${dev(0)}) (${(t1 / t2).toFixed(2)}x)`,
  verdict(t1 / t2 >= 1.8, ">= 1.8x"),
]);
rows.push([
  "  the same 2 devices with weight-update sharding (spmdShardUpdates)",
  `${t2ws.toFixed(2)} ms (${dev(4)}) (${(t1 / t2ws).toFixed(2)}x over 1x1; ${(t2 / t2ws).toFixed(2)}x the all-reduce step)`,
  "recorded",
]);
rows.push([
  `  vs 1 device x ${two} intra-op threads`,
  `${t1b.toFixed(2)} ms (${dev(2)}) (${(t1b / t2).toFixed(2)}x)`,
  verdict(t1b / t2 >= 1.0, ">= 1.0x"),
]);
if (maxDevices >= 8)
  rows.push([
    `  8 devices on ${availableParallelism()} cores`,
    `${t8.toFixed(2)} ms per step (${dev(3)}; 2 devices: ${t2.toFixed(2)} ms)`,
    "completes",
  ]);

// the ceiling: two independent half-batch programs (no psum) on 2 devices at once vs the 1x1 step and the psum step.
// Per step: wall time; "device" = first rank start to last rank end; "rank" = the longest single rank run; CPU =
// the process's CPU time (getrusage, every thread) and the JS thread's (its schedstat). CPU does not grow with the
// host's load the way wall time does: on 2 free cores a step takes at least CPU / 2, so 2 x CPU(1x1) / CPU(case) is
// the speed-up bound that the work itself sets.
{
  const sp = [[], [], [], [], [], []] as number[][],
    rk = [[], [], [], [], [], []] as number[][],
    cpu = [[], [], [], [], [], []] as number[][],
    js = [[], [], [], [], [], []] as number[][],
    callerRan = [0, 0, 0, 0, 0, 0];
  const measured = (f: () => void, k: number) => () => {
    const c0 = process.cpuUsage(),
      j0 = jsNs();
    f();
    const c1 = process.cpuUsage(c0);
    js[k].push((jsNs() - j0) / 1e6);
    cpu[k].push((c1.user + c1.system) / 1e3);
    rk[k].push(Math.max(...rt.lastLaunchTimeline().map((t) => t.end - t.start)) / 1e3);
    if (rt.lastLaunchStamps()?.callerRank === 0) callerRan[k]++;
  };
  /** f with every rank on the executors (the dispatch rule before callerRuns "auto"; A/B of it in the same rounds). */
  const executorsOnly = (f: () => void) => () => {
    const m = setCallerRunsMode("never");
    try {
      f();
    } finally {
      setCallerRunsMode(m);
    }
  };
  const fs = [
    measured(makeStep(1, 1, sp[0]), 0),
    measured(makeStep(2, 1, sp[1], false, true), 1),
    measured(makeStep(2, 1, sp[2]), 2),
    // the same 1x1 and psum steps with the update a separate pass after each all-reduce (the programs before the
    // all-reduce epilogues)
    measured(makeStep(1, 1, sp[3], false, false, 1, false), 3),
    measured(makeStep(2, 1, sp[4], false, false, 1, false), 4),
    measured(executorsOnly(makeStep(2, 1, sp[5], false, true)), 5),
  ];
  const [c1, cInd, c2, c1u, c2u, cIndX] = interleaved(fs, R(40), 3, STEP_BLOCK);
  const rounds = sp[0].length;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const cpu1 = median(cpu[0]);
  const d = (k: number) =>
    `device ${(median(sp[k]) / 1000).toFixed(2)}, rank ${median(rk[k]).toFixed(2)}, CPU ${median(cpu[k]).toFixed(2)} (JS ${mean(js[k]).toFixed(2)}) ms, bound ${((2 * cpu1) / median(cpu[k])).toFixed(2)}x`;
  rows.push([
    "  ceiling: 2 independent half-batch programs (no psum) vs 1x1",
    `${cInd.toFixed(2)} ms (${d(1)}) vs ${c1.toFixed(2)} ms (${d(0)}): ${(c1 / cInd).toFixed(2)}x`,
    "recorded (the best a 2x1 data-parallel step can do here)",
  ]);
  rows.push([
    "    the same, every rank on an executor (callerRuns never) vs rank 0 on the caller",
    `${cIndX.toFixed(2)} ms (${d(5)}): ${(c1 / cIndX).toFixed(2)}x; the caller ran rank 0 in ${callerRan[1]} of ${rounds} ceiling steps, ${callerRan[2]} of ${rounds} psum steps (JS includes that rank)`,
    "recorded",
  ]);
  rows.push([
    "  the psum step measured the same way",
    `${c2.toFixed(2)} ms (${d(2)}): ${(c1 / c2).toFixed(2)}x`,
    "recorded",
  ]);
  rows.push([
    "  without all-reduce epilogues: 1x1, psum step",
    `${c1u.toFixed(2)} ms (${d(3)}); ${c2u.toFixed(2)} ms (${d(4)}): ${(c1u / c2u).toFixed(2)}x; fused psum step ${(c2u / c2).toFixed(2)}x of this`,
    "recorded",
  ]);
  // a loop that dispatches step k+1 while the devices run step k (both sides alike): 8 steps per call, one wait
  const chain = 8;
  const [p1, p2] = interleaved(
    [makeStep(1, 1, [], false, false, chain), makeStep(2, 1, [], false, false, chain)],
    R(8),
  );
  rows.push([
    `  pipelined loop (${chain} steps per wait), 2x1 vs 1x1`,
    `${(p2 / chain).toFixed(2)} ms vs ${(p1 / chain).toFixed(2)} ms per step (${(p1 / p2).toFixed(2)}x)`,
    "recorded",
  ]);
}

// the same step written with plain jit + NamedSharding (GSPMD partitions it) vs the hand-written shardMap step, and a
// 2x2 data x tensor parallel step (w1 split by columns, w2 by rows over "model") beside it
type Spec = import("../src/parallel/sharding.js").PartitionSpec;
function makeJitStep(shape: number[], names: string[], pSpecs: Spec[], spans: number[]): () => void {
  const mesh = makeMesh(shape, names);
  const S = (s: Spec) => new NamedSharding(mesh, s);
  const pS = pSpecs.map(S);
  const step = jit(
    (p: Arr[], x: Arr, y: Arr) => {
      const g = grad(loss)(p, x, y) as unknown as Arr[];
      return p.map((w, i) => jnp.subtract(w, jnp.multiply(g[i], 0.1)));
    },
    { inShardings: [pS, S(P("data")), S(P("data"))], outShardings: pS },
  );
  let p = params.map((w, i) => devicePut(w, pS[i]));
  const x = devicePut(xb, S(P("data"))),
    y = devicePut(yb, S(P("data")));
  const run = (): void => {
    const next = step(p, x, y) as Arr[];
    for (const o of next) o.blockUntilReady();
    for (const w of p) w.dispose();
    p = next;
  };
  run();
  if (rt.lastLaunchTimeline().length !== mesh.size)
    throw new Error(`bench/devices: the jit + NamedSharding step did not run on the ${mesh.size} devices`);
  return withSpan(run, spans);
}
{
  const sp = [[], [], []] as number[][];
  const fs = [
    makeStep(2, 1, sp[0]),
    makeJitStep([2], ["data"], [P(), P(), P(), P()], sp[1]),
    ...(maxDevices >= 4
      ? [makeJitStep([2, 2], ["data", "model"], [P(null, "model"), P("model"), P("model", null), P()], sp[2])]
      : []),
  ];
  const [tSm, tJit, t22] = interleaved(fs, R(40), 3, STEP_BLOCK);
  const d = (k: number) => `device ${(median(sp[k]) / 1000).toFixed(2)} ms`;
  rows.push([
    "MLP step, 2 devices: jit + NamedSharding vs hand-written shardMap",
    `${tJit.toFixed(2)} ms (${d(1)}) vs ${tSm.toFixed(2)} ms (${d(0)}) (${(tJit / tSm).toFixed(2)}x time)`,
    verdict(tJit <= 1.05 * tSm, "within 5%"),
  ]);
  if (t22 !== undefined)
    rows.push(["  2x2 data x tensor parallel, jit + NamedSharding", `${t22.toFixed(2)} ms (${d(2)})`, "recorded"]);
}

// pmap of a tiny function on 2 devices vs one raw ORT session run (one thread) of the same per-device program
const tiny = (v: Arr): Arr => jnp.add(jnp.multiply(jnp.sin(v), 2), 1);
const xs = jnp.reshape(jnp.arange(32, undefined, undefined, { dtype: "float32" }), [2, 16]);
const pf = pmap(tiny, "i");
const before = rt.lastLaunchTimeline();
pf(xs).blockUntilReady();
const onDevices = rt.lastLaunchTimeline() !== before && rt.lastLaunchTimeline().length === 2;
const m = toOnnx(tiny, jnp.zeros([16]));
const session = await ort.InferenceSession.create(m.bytes, {
  executionProviders: ["cpu"],
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: "sequential",
  graphOptimizationLevel: "all",
});
const feeds = { [m.inputNames[0]]: new ort.Tensor("float32", new Float32Array(16), [16]) };
// interleaved: one pmap call, then one raw run, per round; the pmap call's launch is broken down by its stamps
const tp: number[] = [],
  to: number[] = [],
  tpBlock: number[] = [],
  beforeUs: number[] = [],
  launchUs: number[] = [],
  spanUs: number[] = [];
let inline = 0;
for (let i = 0; i < 20; i++) {
  pf(xs).blockUntilReady();
  await session.run(feeds);
}
for (let i = 0; i < R(300); i++) {
  const t0 = rt.nowUs();
  let t = performance.now();
  pf(xs).blockUntilReady();
  tp.push(performance.now() - t);
  const st = rt.lastLaunchStamps();
  if (st) {
    // host work before the native launch; the native launch itself (marshalling, hand-offs, rank 0 when inline)
    beforeUs.push(st.enter - t0);
    launchUs.push(st.submitted - st.enter);
    if (st.callerRank === 0) inline++;
    spanUs.push(deviceSpanUs());
  }
  t = performance.now();
  await session.run(feeds);
  to.push(performance.now() - t);
  // the same call with idle executors blocking at once (no polling), for the polling's effect side by side
  const spin = rt.setExecutorSpinUs(0);
  pf(xs).blockUntilReady();
  t = performance.now();
  pf(xs).blockUntilReady();
  tpBlock.push(performance.now() - t);
  rt.setExecutorSpinUs(spin);
  pf(xs).blockUntilReady();
}
await session.release();
const tPmap = median(tp),
  tOrt = median(to);
const inside = launchUs.length
  ? `; host before the launch ${median(beforeUs).toFixed(1)} us, devLaunch ${median(launchUs).toFixed(1)} us (rank 0 inline in ${inline} of ${launchUs.length}), device ${median(spanUs).toFixed(1)} us`
  : "";
rows.push([
  "pmap of a tiny function (2x16 float32), 2 devices vs 1 raw ORT run",
  `${us(tPmap)}${inside} vs ${us(tOrt)} (${(tPmap / tOrt).toFixed(2)}x)${onDevices ? "" : " [ran on the emulation!]"}`,
  verdict(onDevices && tPmap / tOrt <= 3, "<= 3x"),
]);
rows.push([
  "  the same pmap calls with idle executors blocking at once (setExecutorSpinUs(0))",
  `${us(median(tpBlock))} (${(median(tpBlock) / tOrt).toFixed(2)}x; polling saves ${us(median(tpBlock) - tPmap)})`,
  "recorded",
]);

// resharding a 64 MiB float32 array from P('x'): the native block copy (on the destination devices' executors) vs the
// JS copy on the host thread (setNativeBlockCopy(false), as JAXTS_RESHARD_COPY=js starts), interleaved; GB/s of the
// bytes the reshard copies (transferStats), reshard issued and waited for
if (rt.nativeBlockCopy()) {
  const big = jnp.zeros([4096, 4096], { dtype: "float32" });
  for (const n of [2, 4].filter((k) => k <= maxDevices)) {
    const mesh = makeMesh([n], ["x"]);
    const x = devicePut(big, new NamedSharding(mesh, P("x")));
    for (const [name, spec] of [
      ["P(None, 'x')", P(null, "x")],
      ["replicated", P()],
    ] as const) {
      const to = new NamedSharding(mesh, spec);
      const t0 = rt.transferStats();
      const once = () => devicePut(x, to).blockUntilReady().dispose();
      once();
      const bytes = rt.transferStats().bytesCopied - t0.bytesCopied;
      const [tn, tj] = interleaved(
        [
          once,
          () => {
            const prev = rt.setNativeBlockCopy(false);
            try {
              once();
            } finally {
              rt.setNativeBlockCopy(prev);
            }
          },
        ],
        R(10),
        1,
      );
      const gbs = (ms: number) => (bytes / ms / 1e6).toFixed(2);
      rows.push([
        `reshard 64 MiB float32 P('x') -> ${name}, ${n} devices: native vs JS copy`,
        `${tn.toFixed(1)} ms (${gbs(tn)} GB/s) vs ${tj.toFixed(1)} ms (${gbs(tj)} GB/s) (${(tj / tn).toFixed(2)}x)`,
        "recorded",
      ]);
    }
    x.dispose();
  }
}
config.update("deviceIntraOpThreads", saved);
config.update("spmdRuntime", "emulation");

const w = Math.max(...rows.map((r) => r[0].length)),
  w2 = Math.max(...rows.map((r) => r[1].length));
console.log(
  `device runtime (${availableParallelism()} cores, 1 intra-op thread per device unless said; medians${quick ? ", quick" : ""})`,
);
for (const [a, b, c] of rows) console.log(`${a.padEnd(w)}  ${b.padEnd(w2)}  ${c}`);
