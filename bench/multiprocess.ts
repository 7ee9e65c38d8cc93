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
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { config } from "../src/core/config.js";
import { mlpProblem } from "./mlp-problem.js";

const quick = process.argv.includes("--quick");
const role = process.argv.find((a) => a.startsWith("--role="))?.slice(7) ?? "driver";
const R = (n: number) => (quick ? Math.max(3, Math.ceil(n / 4)) : n);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/** What one job prints (process 0 only), as JSON on its last line. */
interface JobResult {
  stepMs: number[];
  psumMs?: number[];
  probeMs?: number[];
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
  const run = (cmd: string, args: string[]): JobResult => {
    const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 300_000 });
    const line = (r.stdout ?? "").trim().split("\n").pop() ?? "";
    if (r.status !== 0 || !line.startsWith("{"))
      throw new Error(
        `bench/multiprocess: ${cmd} ${args.join(" ")} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? "").trim().split("\n").slice(-5).join(" | ")}`,
      );
    return JSON.parse(line) as JobResult;
  };
  const mpArgs = (shm: boolean) => [
    "--allow-run-as-root",
    "--oversubscribe",
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
  const single: number[] = [];
  const mp = { shm: [] as number[], mpi: [] as number[] },
    psum = { shm: [] as number[], mpi: [] as number[] },
    probeMs: number[] = [];
  for (let round = 0; round < 2; round++) {
    single.push(...run(process.execPath, [self, "--role=single", ...q]).stepMs);
    for (const t of ["shm", "mpi"] as const) {
      const m = run("mpirun", mpArgs(t === "shm"));
      if (m.transport !== t) throw new Error(`bench/multiprocess: the ${t} job used ${m.transport}`);
      mp[t].push(...m.stepMs);
      psum[t].push(...(m.psumMs ?? []));
      probeMs.push(...(m.probeMs ?? []));
    }
  }
  const t1 = median(single),
    tm = median(probeMs);
  const gb = (ms: number) => ((16 << 20) / 1e9 / (ms / 1e3)).toFixed(2);
  const verdict = (ok: boolean, target: string) => `target ${target}: ${ok ? "met" : "NOT met"}`;
  const rows = (["shm", "mpi"] as const).flatMap((t) => {
    const [t2, tp] = [median(mp[t]), median(psum[t])];
    const via = t === "shm" ? "shared memory" : "MPI only";
    return [
      [
        `MLP step 784-512-10, batch 256: 2 processes x 1 device (${via}) vs 1 process x 1 device (1 intra-op thread each)`,
        `${t2.toFixed(2)} ms vs ${t1.toFixed(2)} ms (${(t1 / t2).toFixed(2)}x)`,
        verdict(t1 / t2 >= 1.7, ">= 1.7x"),
      ],
      [
        `psum 16 MiB float32 across 2 processes (${via}) vs plain MPI_Allreduce (same jobs)`,
        `${tp.toFixed(2)} ms (${gb(tp)} GB/s) vs ${tm.toFixed(2)} ms (${gb(tm)} GB/s) (${(tm / tp).toFixed(2)}x)`,
        verdict(tm / tp >= 0.8, ">= 0.8x"),
      ],
    ];
  });
  console.log(
    `multi-process (mpirun -np 2, Open MPI; medians${quick ? ", quick" : ""}; ${new Date(t0).toISOString()}, ${((Date.now() - t0) / 1000).toFixed(0)} s; /proc/loadavg before ${loadBefore}, after ${load()})`,
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
const timed = (f: () => void): number => {
  const t = performance.now();
  f();
  return performance.now() - t;
};
const result: JobResult = { stepMs: [], transport: transportInfo().transport };
for (let i = 0; i < 3; i++) runStep();
if (rt.lastLaunchTimeline().length !== 1) throw new Error("bench/multiprocess: the MLP step did not run on one device");
for (let i = 0; i < R(20); i++) result.stepMs.push(timed(runStep));

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
  result.psumMs = [];
  result.probeMs = [];
  for (let i = 0; i < R(20); i++) {
    result.psumMs.push(timed(() => runPsum().dispose()));
    result.probeMs.push(1000 * api.mpiProbeAllreduce(n, 1)[0]);
  }
}
if (me === 0) console.log(JSON.stringify(result));
if (role === "mp") distributed.shutdown();
