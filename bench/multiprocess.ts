/**
 * @file Multi-process benchmarks (`node dist/bench/multiprocess.js [--quick]`, also run by `npm run bench` when mpirun
 * exists): the data-parallel MLP step (784-512-10, global batch 256) on 2 processes x 1 device against 1 process x 1
 * device (one intra-op thread each), and a psum of 16 MiB float32 across 2 processes against a plain MPI_Allreduce
 * of the same buffer measured in the same job (the addon's probe). The 2-process jobs run twice per round, over the
 * same-host shared-memory transport (the default) and over MPI only (JAXTS_MPI_SHM=0), interleaved with the
 * single-process job. Without mpirun it prints why and exits 0.
 * Roles: no flag = the driver (spawns the jobs, prints the rows); --role=single / --role=mp = one job's process.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { jsThreadNs as jsNs } from "./schedstat.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { config } from "../src/core/config.js";
import { mlpProblem } from "./mlp-problem.js";

const quick = process.argv.includes("--quick");
const role = process.argv.find((a) => a.startsWith("--role="))?.slice(7) ?? "driver";
const R = (n: number) => (quick ? Math.max(3, Math.ceil(n / 4)) : n);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/** What one job's process prints, as JSON on a line of its own (every process prints one). */
interface JobResult {
  process: number;
  /** The data-parallel step (with the psum of the gradients), wall ms per call. */
  stepMs: number[];
  /** The same per-process program without the psum (no communication), interleaved with stepMs. */
  indMs?: number[];
  /** Per case ("step", "ind"): process CPU (every thread), JS thread CPU, the rank's device run, ms per call. */
  cpu: Record<string, number[]>;
  js: Record<string, number[]>;
  rank: Record<string, number[]>;
  /** The psum step's collectives on this process's rank (sum of start -> end of each), ms per call. */
  coll?: Record<string, number[]>;
  psumMs?: number[];
  probeMs?: number[];
  /** psum of the W1 gradient's size (784 x 512 float32) alone, ms per call. */
  psumW1Ms?: number[];
  /**
   * Per call of the psum step ("step") and of the W1-sized psum ("w1"): the shared-memory exchanges' time (us) copying
   * into the mailbox (put), folding (fold), taking the peers' bytes (take), waiting (wait), and waits that yielded or
   * slept on the futex (mpiShmInfo().profile deltas).
   */
  prof?: Record<string, Record<string, number[]>>;
  /** The transport the cross-process collectives used ("shm" or "mpi"). */
  transport?: string;
}

if (role === "driver") {
  const probe = spawnSync("mpirun", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    console.log(
      `multi-process benchmarks skipped: mpirun not found (${probe.error?.message ?? probe.stderr.trim()}); install openmpi-bin libopenmpi-dev`,
    );
    process.exit(0);
  }
  const self = fileURLToPath(import.meta.url);
  const q = quick ? ["--quick"] : [];
  // each process writes its result to a file of its own here (mpirun forwards the processes' stdout in chunks, so
  // long lines of two processes interleave); JAXTS_BENCH_OUT travels to the jobs with the other JAXTS_* variables
  const outDir = mkdtempSync(join(tmpdir(), "jaxts-bench-mp-"));
  process.env.JAXTS_BENCH_OUT = outDir;
  process.on("exit", () => rmSync(outDir, { recursive: true, force: true }));
  /** Every process's result, in process order. */
  const run = (cmd: string, args: string[]): JobResult[] => {
    for (const f of readdirSync(outDir)) rmSync(join(outDir, f));
    const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 300_000 });
    const files = readdirSync(outDir).filter((f) => /^result-\d+\.json$/.test(f));
    if (r.status !== 0 || !files.length)
      throw new Error(
        `bench/multiprocess: ${cmd} ${args.join(" ")} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? "").trim().split("\n").slice(-5).join(" | ")}`,
      );
    return files
      .map((f) => JSON.parse(readFileSync(join(outDir, f), "utf8")) as JobResult)
      .sort((a, b) => a.process - b.process);
  };
  // A/B switches travel to the job's processes: every JAXTS_* variable of the caller (but the transport's own)
  const passEnv = Object.keys(process.env)
    .filter((k) => k.startsWith("JAXTS_") && k !== "JAXTS_MPI_SHM")
    .flatMap((k) => ["-x", k]);
  const bind = process.argv.find((a) => a.startsWith("--bind="))?.slice(7);
  const transports = process.argv.includes("--shm-only") ? (["shm"] as const) : (["shm", "mpi"] as const);
  const mpArgs = (shm: boolean) => [
    "--allow-run-as-root",
    "--oversubscribe",
    ...(bind ? ["--bind-to", bind] : []),
    ...passEnv,
    "-x",
    `JAXTS_MPI_SHM=${shm ? "1" : "0"}`,
    "-np",
    "2",
    process.execPath,
    self,
    "--role=mp",
    ...q,
  ];
  const loadBefore = load();
  const t0 = Date.now();
  // alternate the jobs (single, mp over shared memory, mp over MPI, ...) so a load change on a shared host hits all alike
  const single: JobResult[] = [];
  const jobs = { shm: [] as JobResult[][], mpi: [] as JobResult[][] };
  for (let round = 0; round < 2; round++) {
    single.push(run(process.execPath, [self, "--role=single", ...q])[0]);
    for (const t of transports) {
      const m = run("mpirun", mpArgs(t === "shm"));
      if (m.length !== 2 || m.some((r) => r.transport !== t))
        throw new Error(`bench/multiprocess: the ${t} job printed ${m.length} results (${m.map((r) => r.transport)})`);
      jobs[t].push(m);
    }
  }
  /** The median over jobs of field f's case k on process p (p = -1: the single-process job). */
  const med = (rs: JobResult[], f: (r: JobResult) => number[] | undefined) => median(rs.flatMap((r) => f(r) ?? []));
  const procs = (t: "shm" | "mpi", p: number) => jobs[t].map((m) => m[p]);
  const t1 = med(single, (r) => r.stepMs),
    tm = median(transports.flatMap((t) => procs(t, 0).flatMap((r) => r.probeMs ?? [])));
  const cpu1 = med(single, (r) => r.cpu.step),
    js1 = med(single, (r) => r.js.step);
  const gbOf = (bytes: number, ms: number) => (bytes / 1e9 / (ms / 1e3)).toFixed(2);
  const gb = (ms: number) => gbOf(16 << 20, ms);
  const profRow = (t: "shm" | "mpi", k: string) =>
    [0, 1]
      .map((p) => {
        const f = (name: string) => med(procs(t, p), (r) => r.prof?.[k]?.[name]);
        return `p${p} ${f("putUs").toFixed(0)} + ${f("foldUs").toFixed(0)} + ${f("takeUs").toFixed(0)} us of work, ${f("waitUs").toFixed(0)} us waiting; ${f("yields")} yields, ${f("sleeps")} futex sleeps; ${f("streamed")} streamed`;
      })
      .join(" | ");
  const verdict = (ok: boolean, target: string) => `target ${target}: ${ok ? "met" : "NOT met"}`;
  // CPU per step of each process (and its JS thread, which also runs the rank in a multi-process launch: launchSync
  // runs rank 0 on the calling thread); on 2 free cores a step takes at least half the CPU of both processes, and
  // (mpirun binds each process to a core for -np 2) at least the CPU of the busier one: the bounds
  const cpuOf = (t: "shm" | "mpi", k: string) => {
    const c = [0, 1].map((p) => med(procs(t, p), (r) => r.cpu[k])),
      j = [0, 1].map((p) => med(procs(t, p), (r) => r.js[k]));
    const bound = (2 * cpu1) / (c[0] + c[1]),
      core = cpu1 / Math.max(...c);
    return `CPU per process ${c.map((v, i) => `${v.toFixed(2)} (JS ${j[i].toFixed(2)})`).join(" / ")} ms vs 1x1 ${cpu1.toFixed(2)} (JS ${js1.toFixed(2)}) ms; bound 2 x CPU(1x1) / CPU(both) ${bound.toFixed(2)}x, per bound core ${core.toFixed(2)}x`;
  };
  const rows = transports.flatMap((t) => {
    const [t2, tp] = [med(procs(t, 0), (r) => r.stepMs), med(procs(t, 0), (r) => r.psumMs)];
    const via = t === "shm" ? "shared memory" : "MPI only";
    const rank = med(procs(t, 0), (r) => r.rank.step),
      coll = med(procs(t, 0), (r) => r.coll?.step);
    return [
      [
        `MLP step 784-512-10, batch 256: 2 processes x 1 device (${via}) vs 1 process x 1 device (1 intra-op thread each)`,
        `${t2.toFixed(2)} ms vs ${t1.toFixed(2)} ms (${(t1 / t2).toFixed(2)}x)`,
        verdict(t1 / t2 >= 1.7, ">= 1.7x"),
      ],
      [
        `  its split (process 0): all-reduce of the 4 gradients, the rest of the device program, host (JS) between runs`,
        `${coll.toFixed(2)} + ${(rank - coll).toFixed(2)} + ${(t2 - rank).toFixed(2)} ms (process 1: step ${med(procs(t, 1), (r) => r.stepMs).toFixed(2)}, all-reduce ${med(procs(t, 1), (r) => r.coll?.step).toFixed(2)} ms; 1x1: device ${med(single, (r) => r.rank.step).toFixed(2)} + host ${(t1 - med(single, (r) => r.rank.step)).toFixed(2)} ms); ${cpuOf(t, "step")}`,
        "recorded",
      ],
      ...(t === "shm"
        ? [
            (() => {
              // a synchronous step waits for the slower process: the ceiling is the slower one's median
              const ind = [0, 1].map((p) => med(procs(t, p), (r) => r.indMs)),
                dev = [0, 1].map((p) => med(procs(t, p), (r) => r.rank.ind));
              const slow = Math.max(...ind);
              return [
                "  ceiling: 2 processes x half batch without the psum (no communication), the slower process, vs 1x1",
                `${slow.toFixed(2)} ms (p0 ${ind[0].toFixed(2)} / p1 ${ind[1].toFixed(2)} ms; device ${dev.map((v) => v.toFixed(2)).join(" / ")} ms) vs ${t1.toFixed(2)} ms (${(t1 / slow).toFixed(2)}x); ${cpuOf(t, "ind")}`,
                "recorded (what any 2-process step can reach here)",
              ];
            })(),
          ]
        : []),
      ...(t === "shm"
        ? [
            [
              "  the shared-memory exchanges per step (each process, us): work (put + fold + take), waiting; waits that yielded / slept",
              profRow(t, "step"),
              "recorded",
            ],
            [
              "psum of the W1 gradient's size alone (784 x 512 float32 = 1.6 MB) across 2 processes",
              `${med(procs(t, 0), (r) => r.psumW1Ms).toFixed(3)} ms (${gbOf(
                784 * 512 * 4,
                med(procs(t, 0), (r) => r.psumW1Ms),
              )} GB/s); ${profRow(t, "w1")}`,
              "recorded",
            ],
          ]
        : []),
      [
        `psum 16 MiB float32 across 2 processes (${via}) vs plain MPI_Allreduce (same jobs)`,
        `${tp.toFixed(2)} ms (${gb(tp)} GB/s) vs ${tm.toFixed(2)} ms (${gb(tm)} GB/s) (${(tm / tp).toFixed(2)}x)`,
        verdict(tm / tp >= 0.8, ">= 0.8x"),
      ],
    ];
  });
  console.log(
    `multi-process (mpirun -np 2${bind ? ` --bind-to ${bind}` : ""}, Open MPI; medians${quick ? ", quick" : ""}; ${new Date(t0).toISOString()}, ${((Date.now() - t0) / 1000).toFixed(0)} s; /proc/loadavg before ${loadBefore}, after ${load()})`,
  );
  for (const [a, b, c] of rows) console.log(`  ${a}\n    ${b}  [${c}]`);
  process.exit(0);
}

// ---------------------------------------------------------------- one job's process
config.update("numCpuDevices", 1);
config.update("deviceIntraOpThreads", 1);
config.update("spmdRuntime", "devices");
const {
  distributed,
  grad,
  lax,
  makeArrayFromProcessLocalData,
  makeMesh,
  numpy: jnp,
  processCount,
  processIndex,
  shardMap,
  sharding,
  devicePut,
} = await import("../src/index.js");
const rt = await import("../src/runtime/index.js");
type Arr = import("../src/core/array.js").Array;
const { NamedSharding, P } = sharding;
const why = rt.deviceRuntimeUnavailable();
if (why) throw new Error(`bench/multiprocess: the device runtime is unavailable: ${why}`);
if (role === "mp") distributed.initialize();
// A/B switch: JAXTS_BENCH_EPILOGUES=0 keeps the psum and the SGD update separate nodes (compileOptions.collectiveEpilogues)
if (process.env.JAXTS_BENCH_EPILOGUES === "0")
  (await import("../src/compiler/compile.js")).compileOptions.collectiveEpilogues = false;
const { transportInfo } = await import("../src/parallel/distributed.js");
const nproc = processCount(),
  me = processIndex();
const mesh = makeMesh([nproc], ["data"]);
/** A global array over the mesh from this process's part (in one process: devicePut). */
const place = (x: Arr, spec: ReturnType<typeof P>, local: Arr): Arr =>
  nproc > 1
    ? makeArrayFromProcessLocalData(new NamedSharding(mesh, spec), local, x.shape)
    : devicePut(x, new NamedSharding(mesh, spec));

// data-parallel MLP step (784-512-10, global batch 256): per-device gradients, psum of grads, SGD update
const { params: params0, xb, yb, loss } = mlpProblem(await import("../src/index.js"));
const step = shardMap(
  (p: Arr[], x: Arr, y: Arr) => {
    const g = grad(loss)(p, x, y) as unknown as Arr[];
    return p.map((w, i) => jnp.subtract(w, jnp.multiply(lax.psum(g[i], "data"), 0.1 / nproc)));
  },
  { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: P() },
);
const rows = 256 / nproc;
const lo = me * rows;
let p = params0.map((w) => place(w, P(), w));
const x = place(xb, P("data"), jnp.asarray((xb.tolist() as number[][]).slice(lo, lo + rows))),
  y = place(yb, P("data"), jnp.asarray((yb.tolist() as number[]).slice(lo, lo + rows), "int32"));
const runStep = (): void => {
  const next = step(p, x, y) as Arr[];
  for (const o of next) o.blockUntilReady();
  for (const w of p) w.dispose();
  p = next;
};
const round3Ms = (f: () => void): number => Math.round(timed(f) * 1000) / 1000;
const timed = (f: () => void): number => {
  const t = performance.now();
  f();
  return performance.now() - t;
};
const result: JobResult = { process: me, stepMs: [], transport: transportInfo().transport, cpu: {}, js: {}, rank: {} };
// the ceiling case: the same per-process program without the psum (each process updates its own copy of the
// parameters from its own half batch; no communication at all), interleaved with the psum step
const independent = shardMap(
  (q: Arr[], xx: Arr, yy: Arr) => {
    const g = grad(loss)(q, xx, yy) as unknown as Arr[];
    return q.map((w, i) => jnp.subtract(w, jnp.multiply(g[i], 0.1 / nproc)));
  },
  { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: P(), checkVma: false },
);
let pInd = params0.map((w) => place(w, P(), w));
const runInd = (): void => {
  const next = independent(pInd, x, y) as Arr[];
  for (const o of next) o.blockUntilReady();
  for (const w of pInd) w.dispose();
  pInd = next;
};
// per call: CPU of the whole process (getrusage, every thread), of the JS thread (its schedstat), the rank's run
// (first device start to end) and, for the psum step, its collectives (this rank's recorded start -> end)
const round3 = (v: number) => Math.round(v * 1000) / 1000;
const push = (m: Record<string, number[]>, k: string, v: number) => (m[k] ??= []).push(round3(v));
let collUs = 0;
const shmApi = nproc > 1 ? rt.mpiAddon().api : null;
type Prof = NonNullable<ReturnType<NonNullable<typeof shmApi>["mpiShmInfo"]>["profile"]>;
/** Runs f and records the shared-memory profile's deltas under result.prof[k]. */
const profiled = <T>(k: string, f: () => T): T => {
  const a = shmApi?.mpiShmInfo().profile;
  const out = f();
  const b = shmApi?.mpiShmInfo().profile;
  if (a && b) for (const n of Object.keys(b) as (keyof Prof)[]) push(((result.prof ??= {})[k] ??= {}), n, b[n] - a[n]);
  return out;
};
rt.setLaunchObserver((r) => {
  collUs = 0;
  for (const cs of r.collectives) for (const c of cs) collUs += c.end - c.start;
});
const measured = (f: () => void, k: string) => (): number => {
  const c0 = process.cpuUsage(),
    j0 = jsNs(),
    t = performance.now();
  f();
  const wall = performance.now() - t,
    c1 = process.cpuUsage(c0);
  push(result.cpu, k, (c1.user + c1.system) / 1e3);
  push(result.js, k, (jsNs() - j0) / 1e6);
  const tl = rt.lastLaunchTimeline();
  push(result.rank, k, (Math.max(...tl.map((u) => u.end)) - Math.min(...tl.map((u) => u.start))) / 1e3);
  if (k === "step") push((result.coll ??= {}), k, collUs / 1e3);
  return wall;
};
const cases: [string, () => number][] = [
  ["step", measured(() => profiled("step", runStep), "step")],
  ["ind", measured(runInd, "ind")],
];
for (let i = 0; i < 3; i++) {
  runStep();
  runInd();
}
if (rt.lastLaunchTimeline().length !== 1) throw new Error("bench/multiprocess: the MLP step did not run on one device");
result.indMs = [];
// the two cases alternate in blocks of JAXTS_BENCH_BLOCK calls (default 4; 1: every call, the order before): the
// no-communication case lets the processes drift apart (nothing synchronizes them), and the first psum step after it
// waits for that drift; in blocks only the first step of each block pays it, as in a training loop of steps
const block = Math.max(1, Number(process.env.JAXTS_BENCH_BLOCK ?? 4));
for (let i = 0; i < R(20); i += block)
  for (const [k, f] of (i / block) % 2 ? [...cases].reverse() : cases)
    for (let j = 0; j < block && i + j < R(20); j++) (k === "step" ? result.stepMs : result.indMs).push(round3(f()));
rt.setLaunchObserver(null);

if (nproc > 1) {
  // psum of 16 MiB float32 (4 Mi elements per process) and the plain MPI_Allreduce, interleaved
  const n = (16 << 20) / 4;
  const mine = jnp.add(jnp.zeros([n]), me + 1);
  const g = makeArrayFromProcessLocalData(new NamedSharding(mesh, P("data")), mine, [n * nproc]);
  const ps = shardMap((b: Arr) => lax.psum(b, "data"), { mesh, inSpecs: P("data"), outSpecs: P() });
  const runPsum = (): Arr => {
    const o = ps(g) as Arr;
    o.blockUntilReady();
    return o;
  };
  const check = runPsum();
  const got = (check.addressableShards as { data: Arr }[])[0].data.tolist() as number[];
  const want = (nproc * (nproc + 1)) / 2;
  if (got[0] !== want || got[n - 1] !== want)
    throw new Error(`bench/multiprocess: psum gave ${got[0]}, expected ${want}`);
  check.dispose();
  const api = rt.mpiAddon().api!;
  api.mpiProbeAllreduce(n, 2);
  // the W1 gradient's size alone (what dominates the step's all-reduces)
  const n1 = 784 * 512;
  const g1 = makeArrayFromProcessLocalData(new NamedSharding(mesh, P("data")), jnp.add(jnp.zeros([n1]), me + 1), [
    n1 * nproc,
  ]);
  for (let i = 0; i < 3; i++) (ps(g1) as Arr).dispose();
  result.psumW1Ms = [];
  for (let i = 0; i < R(60); i++)
    result.psumW1Ms.push(
      round3Ms(() =>
        profiled("w1", () => {
          const o = ps(g1) as Arr;
          o.blockUntilReady();
          o.dispose();
        }),
      ),
    );
  result.psumMs = [];
  result.probeMs = [];
  for (let i = 0; i < R(20); i++) {
    result.psumMs.push(timed(() => runPsum().dispose()));
    result.probeMs.push(1000 * api.mpiProbeAllreduce(n, 1)[0]);
  }
}
// every process writes its result (the driver keeps process 0's times and every process's CPU); the profile as its
// medians only
if (result.prof) for (const m of Object.values(result.prof)) for (const n of Object.keys(m)) m[n] = [median(m[n])];
const outDir = process.env.JAXTS_BENCH_OUT;
if (outDir) {
  // written whole, then renamed: the driver never reads half a file
  const file = join(outDir, `result-${result.process}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(result));
  renameSync(`${file}.tmp`, file);
} else console.log(JSON.stringify(result));
if (role === "mp") distributed.shutdown();
