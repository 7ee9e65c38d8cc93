/** @file Benchmark entry point (`npm run bench`): runs every workload for every available contender in one process, prints the table, writes bench/RESULTS.md. */
import { spawnSync } from "node:child_process";
import path from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { jaxJs } from "./competitors/jax-js.js";
import { rawOrt } from "./competitors/raw-ort.js";
import { tfjsCpu, tfjsWasm } from "./competitors/tfjs.js";
import {
  type Case,
  type CaseBody,
  type CaseResult,
  type Contender,
  DEFAULT_TIMING,
  QUICK_TIMING,
  WORKLOADS,
  formatTables,
  formatTargets,
  measureInterleaved,
  measureOnce,
  packageVersion,
  renderReport,
  repoRoot,
  rootPackageVersion,
  writeFileAtomic,
} from "./harness.js";
import { jaxtsCases, jaxtsInit, jaxtsNotes } from "./jaxts-cases.js";
import { formatFirstSteps, measureFirstStepsInChild } from "./first-steps.js";

/*
 * Usage: node dist/bench/run.js [--quick] [--baseline=NAME] [--only=a,b] [--workloads=id,id] [--no-write]
 *   --quick       short timings (smoke test; numbers are rough)
 *   --baseline    contender the ratios are relative to (default jaxts)
 *   --only        run only these contenders
 *   --workloads   run only these workload ids (mlp-first-steps: only jaxts's first-steps line)
 *   --no-write    do not write bench/RESULTS.md
 *   --no-devices  skip the device runtime rows (bench/devices.ts, run in a child process: it needs 8 CPU devices)
 *   --no-training skip the training-parallelism rows (bench/training.ts, a child process with 4 CPU devices)
 *   --no-multiprocess skip the 2-process rows (bench/multiprocess.ts under mpirun)
 *   --no-linalg   skip the jnp.linalg rows (bench/linalg.ts: Loop lowerings vs native linalg ops, child processes)
 *   --no-fft      skip the jnp.fft rows (bench/fft.ts: native jaxts.Fft vs ORT's DFT vs NumPy, a child process)
 * With --workloads the device rows run only when the list names "devices" (the training rows: "training",
 * autoShard's rows: "auto-shard", the linalg rows: "linalg", the fft rows: "fft").
 */

function arg(name: string): string | undefined {
  const p = `--${name}=`;
  return process.argv.find((a) => a.startsWith(p))?.slice(p.length);
}
const flag = (name: string) => process.argv.includes(`--${name}`);

const log = (s: string) => process.stderr.write(s + "\n");

// Between cases: collect the previous case's garbage and let background sweeping and finalizers finish,
// so one contender's heap (tfjs-cpu allocates heavily) does not burden the next one's measurement.
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
async function settle(): Promise<void> {
  gc();
  await new Promise((r) => setTimeout(r, 50));
  gc();
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const timing = flag("quick") ? QUICK_TIMING : DEFAULT_TIMING;
  const baseline = arg("baseline") ?? "jaxts";
  const only = arg("only")?.split(",");
  const onlyWorkloads = arg("workloads")?.split(",");

  const jaxts: Contender = {
    name: "jaxts",
    version: `jaxts ${rootPackageVersion()}, onnxruntime-node ${packageVersion("onnxruntime-node")}`,
    notes: jaxtsNotes,
    init: jaxtsInit,
    cases: () => jaxtsCases,
  };
  const all: Contender[] = [jaxts, jaxJs, tfjsWasm, tfjsCpu, rawOrt].filter((c) => !only || only.includes(c.name));

  // Initialise contenders; one that fails (or has no cases) is reported, not fatal.
  const ready: Contender[] = [];
  const status = new Map<string, string | undefined>();
  for (const c of all) {
    try {
      await c.init?.();
      if (c.cases().length === 0) {
        status.set(c.name, "no cases");
      } else {
        status.set(c.name, undefined);
        ready.push(c);
      }
    } catch (e) {
      status.set(c.name, e instanceof Error ? e.message : String(e));
    }
    const s = status.get(c.name);
    log(`[bench] ${c.name}: ${s === undefined ? "ready" : `unavailable (${s})`}`);
  }
  const casesOf = new Map(ready.map((c) => [c.name, c.cases()]));

  // First-call workloads run first (every contender's caches still cold). Every other case is then set up and
  // warmed up, and the samples of all of them are interleaved over the whole run (measureInterleaved): each round
  // visits every workload and contender, so a slow phase of the shared machine hits every row and column alike.
  const results: CaseResult[] = [];
  const live: { r: CaseResult; body: CaseBody; k: Case }[] = [];
  for (const w of WORKLOADS) {
    if (onlyWorkloads && !onlyWorkloads.includes(w.id)) continue;
    for (const c of ready) {
      for (const k of casesOf.get(c.name)!.filter((x) => x.workload === w.id)) {
        const r: CaseResult = { contender: c.name, workload: w.id, note: k.note };
        results.push(r);
        await settle();
        try {
          const body = await k.setup();
          if (w.once) {
            try {
              r.measurement = await measureOnce(body);
            } finally {
              await k.teardown?.();
            }
          } else live.push({ r, body, k });
        } catch (e) {
          r.error = e instanceof Error ? e.message.split("\n")[0] : String(e);
        }
      }
    }
  }
  // jaxts's first training steps against its steady state, in a fresh process (cold pool, small heap)
  let firstSteps: string | undefined;
  if (ready.some((c) => c.name === "jaxts") && (!onlyWorkloads || onlyWorkloads.includes("mlp-first-steps"))) {
    await settle();
    try {
      firstSteps = formatFirstSteps(measureFirstStepsInChild());
    } catch (e) {
      firstSteps = `ERROR ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`;
    }
    log(`[bench] ${firstSteps}`);
  }
  try {
    const ms = await measureInterleaved(
      live.map((l) => ({ body: l.body, activate: l.k.activate?.bind(l.k) })),
      timing,
      settle,
    );
    live.forEach((l, i) => {
      const m = ms[i]!;
      if (m instanceof Error) l.r.error = m.message.split("\n")[0];
      else l.r.measurement = m;
    });
  } finally {
    for (const l of live) await l.k.teardown?.();
  }
  for (const r of results) {
    const m = r.measurement;
    log(
      `[bench] ${r.workload.padEnd(15)} ${r.contender.padEnd(10)} ` +
        (m ? `${(m.median * 1e3).toPrecision(4)} ms/call (${m.samples}x${m.callsPerSample})` : `ERROR ${r.error}`),
    );
  }

  const names = ready.map((c) => c.name);
  console.log("\n" + formatTables(results, names, baseline) + "\n");
  if (baseline === "jaxts") {
    const t = formatTargets(results);
    if (t) console.log(t + "\n");
  }
  if (firstSteps) console.log(firstSteps + "\n");
  for (const [n, s] of status) if (s !== undefined) console.log(`${n}: unavailable (${s})`);
  const devices =
    !flag("no-devices") && (!onlyWorkloads || onlyWorkloads.includes("devices"))
      ? deviceRows(flag("quick"))
      : undefined;
  // autoShard's choice against the alternative plan, on the device runtime (bench/auto-shard.ts)
  const autoShard =
    !flag("no-devices") && (!onlyWorkloads || onlyWorkloads.includes("auto-shard"))
      ? deviceRows(flag("quick"), "auto-shard.js")
      : undefined;
  if (autoShard) console.log(autoShard + "\n");
  if (devices) console.log(devices + "\n");
  const training =
    !flag("no-training") && (!onlyWorkloads || onlyWorkloads.includes("training"))
      ? deviceRows(flag("quick"), "training.js")
      : undefined;
  if (training) console.log(training + "\n");
  // 2 processes under mpirun (bench/multiprocess.ts; it prints why when mpirun is missing)
  const multiprocess =
    !flag("no-multiprocess") && (!onlyWorkloads || onlyWorkloads.includes("multiprocess"))
      ? deviceRows(flag("quick"), "multiprocess.js")
      : undefined;
  if (multiprocess) console.log(multiprocess + "\n");
  // jnp.linalg before (Loop lowerings) vs after (native linalg custom ops), two child processes (bench/linalg.ts)
  const linalg =
    !flag("no-linalg") && (!onlyWorkloads || onlyWorkloads.includes("linalg"))
      ? deviceRows(flag("quick"), "linalg.js")
      : undefined;
  if (linalg) console.log(linalg + "\n");
  // jnp.fft: the native jaxts.Fft op vs ORT's DFT vs NumPy (bench/fft.ts, a child process)
  const fftRows =
    !flag("no-fft") && (!onlyWorkloads || onlyWorkloads.includes("fft"))
      ? deviceRows(flag("quick"), "fft.js")
      : undefined;
  if (fftRows) console.log(fftRows + "\n");

  const elapsedS = (performance.now() - t0) / 1e3;
  if (!flag("no-write")) {
    const file = path.join(repoRoot(), "bench", "RESULTS.md");
    const packages: Record<string, string> = {};
    for (const p of [
      "onnxruntime-node",
      "@jax-js/jax",
      "@tensorflow/tfjs",
      "@tensorflow/tfjs-backend-wasm",
      "typescript",
    ]) {
      packages[p] = packageVersion(p);
    }
    writeFileAtomic(
      file,
      renderReport({
        results,
        contenders: all.map((c) => ({
          name: c.name,
          version: c.version,
          notes: c.notes,
          unavailable: status.get(c.name),
        })),
        baseline,
        packages,
        timing,
        elapsedS,
        firstSteps,
        devices:
          [devices, autoShard, training, multiprocess, linalg, fftRows].filter(Boolean).join("\n\n") || undefined,
      }),
    );
    log(`[bench] wrote ${file}`);
  }
  log(`[bench] total ${elapsedS.toFixed(1)} s`);
}

/** The device runtime rows (bench/devices.ts, or `file`) from a fresh process: numCpuDevices is fixed once devices exist. */
function deviceRows(quick: boolean, file = "devices.js"): string {
  const script = path.join(repoRoot(), "dist", "bench", file);
  const r = spawnSync(process.execPath, [script, ...(quick ? ["--quick"] : [])], {
    encoding: "utf8",
    timeout: 600_000,
  });
  if (r.status !== 0)
    return `device runtime: ERROR (${r.error?.message ?? `exit ${r.status}`}) ${(r.stderr ?? "").trim().split("\n").slice(-3).join(" | ")}`;
  return r.stdout.trim();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
