/** @file Benchmark harness: workloads, the Case contract, adaptive timing (median/IQR), table printing and RESULTS.md writing. */
import { existsSync, readFileSync, renameSync, writeFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

// ---------------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------------

/** Identifier of one benchmark workload (a row of the results table). */
export type WorkloadId =
  | "matmul-256"
  | "matmul-1024"
  | "matmul-2048"
  | "mlp-compile"
  | "mlp-step"
  | "lenet-step"
  | "tanh-1e7"
  | "add-eager-4096"
  | "add-jit-4096";

/** Unit in which a workload's result is reported. */
export type Unit = "GFLOP/s" | "GB/s" | "ms/step" | "µs/call" | "ms";

/** Static description of a workload. */
export interface Workload {
  readonly id: WorkloadId;
  readonly title: string;
  readonly unit: Unit;
  /** For throughput units: floating point operations (GFLOP/s) or bytes moved (GB/s) per call. */
  readonly work?: number;
  /** Higher is better for throughput units, lower for times. */
  readonly higherIsBetter: boolean;
  /** Time exactly one call, no warmup (first-call/compile latency). */
  readonly once?: boolean;
}

/** Matrix sizes of the matmul workloads. */
/**
 * Reference numbers of the machine the targets are stated against (copied from the project's shared ANCHORS.md,
 * which the bench must not read: it lives outside the repository): STREAM triad bandwidth in GB/s.
 */
export const ANCHORS = { streamTriadGBps: 65 } as const;

export const MATMUL_SIZES = [256, 1024, 2048] as const;
/** MLP shape: 784 -> 512 (relu) -> 10, softmax cross-entropy, batch 128, plain SGD. */
export const MLP = { inDim: 784, hidden: 512, outDim: 10, batch: 128, lr: 0.01 } as const;
/**
 * LeNet-style CNN: 1x28x28 -> conv 5x5 (6, VALID) -> relu -> max pool 2x2/2 -> conv 5x5 (16) -> relu -> max pool 2x2/2
 * -> dense 256 -> 10, softmax cross-entropy, batch 64, plain SGD. Kernels are stored OIHW (tfjs transposes them to HWIO).
 */
export const LENET = { batch: 64, size: 28, c1: 6, c2: 16, k: 5, flat: 16 * 4 * 4, outDim: 10, lr: 0.01 } as const;
/** Element count of the elementwise `tanh(2x+1)` workload. */
export const TANH_N = 10_000_000;
/** Element count of the call-overhead `add` workloads. */
export const ADD_N = 4096;

/** All workloads, in the order they are run and printed (compile first: it wants a cold process). */
export const WORKLOADS: readonly Workload[] = [
  { id: "mlp-compile", title: "MLP step, first call (trace+compile)", unit: "ms", higherIsBetter: false, once: true },
  ...MATMUL_SIZES.map((n): Workload => ({
    id: `matmul-${n}` as WorkloadId,
    title: `f32 matmul ${n}x${n}`,
    unit: "GFLOP/s",
    work: 2 * n * n * n,
    higherIsBetter: true,
  })),
  { id: "mlp-step", title: "MLP 784-512-10 b128 train step", unit: "ms/step", higherIsBetter: false },
  { id: "lenet-step", title: "LeNet CNN b64 28x28 train step", unit: "ms/step", higherIsBetter: false },
  // Read 4 B + write 4 B per element.
  { id: "tanh-1e7", title: "tanh(2x+1), 1e7 f32", unit: "GB/s", work: 8 * TANH_N, higherIsBetter: true },
  { id: "add-eager-4096", title: "eager add, 4096 f32", unit: "µs/call", higherIsBetter: false },
  { id: "add-jit-4096", title: "jit add call, 4096 f32", unit: "µs/call", higherIsBetter: false },
];

export function workloadById(id: WorkloadId): Workload {
  const w = WORKLOADS.find((x) => x.id === id);
  if (!w) throw new Error(`unknown workload ${id}`);
  return w;
}

// ---------------------------------------------------------------------------------------------
// The Case contract
// ---------------------------------------------------------------------------------------------

/** The timed body of a case. It must force completion of all work it starts (block/readback). */
export type CaseBody = () => void | Promise<void>;

/**
 * One contender's implementation of one workload.
 *
 * `setup()` allocates inputs (and, except for `once` workloads, may compile/trace); it resolves to
 * the body that is timed. The body must leave no live arrays behind (dispose its outputs) and must
 * force completion. `teardown()` frees what `setup()` allocated.
 */
export interface Case {
  /** Contender name, a column of the table: "jaxts", "jax-js", "tfjs-wasm", "tfjs-cpu", "raw-ort". */
  readonly name: string;
  /** Which workload this case implements (a row of the table). */
  readonly workload: WorkloadId;
  /** Prepare inputs; resolve to the timed body. */
  setup(): Promise<CaseBody>;
  /** Free everything `setup()` allocated. */
  teardown?(): void | Promise<void>;
  /**
   * Called (untimed) before the warmup and before every sample, since samples of different contenders
   * interleave: e.g. selects the library's process-wide backend again.
   */
  activate?(): void | Promise<void>;
  /** Short remark shown in RESULTS.md, e.g. what the body includes. */
  readonly note?: string;
}

/** A contender: a named group of cases plus an optional one-time initialisation. */
export interface Contender {
  readonly name: string;
  /** One-time setup (backend init). A rejection marks the contender unavailable. */
  init?(): Promise<void>;
  /** Cases; built after `init()` resolved. */
  cases(): Case[];
  /** Library version shown in RESULTS.md. */
  readonly version?: string;
  /** Remarks about the contender (backend, threads). */
  readonly notes?: string[];
}

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

/** Timing parameters. */
export interface TimingOptions {
  /** Time spent calling the body before measuring. */
  warmupMs: number;
  /** Target measuring time per case. */
  targetMs: number;
  /** Minimum and maximum number of samples. */
  minSamples: number;
  maxSamples: number;
  /** Each sample batches enough calls to last at least this long (timer noise, small bodies). */
  minSampleMs: number;
  /** Rounds the samples of one workload are spread over, each contender taking its share per round. */
  rounds: number;
  /** Untimed calls (about this long) before each share of samples. */
  reWarmMs: number;
}

export const DEFAULT_TIMING: TimingOptions = {
  warmupMs: 250,
  targetMs: 2500,
  minSamples: 5,
  maxSamples: 80,
  minSampleMs: 5,
  rounds: 8,
  reWarmMs: 20,
};

export const QUICK_TIMING: TimingOptions = {
  warmupMs: 50,
  targetMs: 200,
  minSamples: 3,
  maxSamples: 10,
  minSampleMs: 2,
  rounds: 2,
  reWarmMs: 5,
};

/** Summary of one measured case, times in seconds per call. */
export interface Measurement {
  median: number;
  q1: number;
  q3: number;
  samples: number;
  callsPerSample: number;
}

function isThenable(x: unknown): x is PromiseLike<void> {
  return typeof x === "object" && x !== null && typeof (x as { then?: unknown }).then === "function";
}

/** Quantile with linear interpolation of a sorted array. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** Call `body` `k` times; return elapsed milliseconds. Awaits only if the body is asynchronous. */
async function timeCalls(body: CaseBody, k: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < k; i++) {
    const r = body();
    if (isThenable(r)) await r;
  }
  return performance.now() - t0;
}

/** How one case will be sampled: calls per sample and number of samples (from its warmup). */
export interface SamplePlan {
  perSample: number;
  nSamples: number;
  /** Estimated milliseconds per call (from the warmup). */
  estMs: number;
}

/** Time a single call with no warmup (first-call workloads). */
export async function measureOnce(body: CaseBody): Promise<Measurement> {
  const s = (await timeCalls(body, 1)) / 1e3;
  return { median: s, q1: s, q3: s, samples: 1, callsPerSample: 1 };
}

/**
 * Warm `body` up for `warmupMs` (also estimating the cost of one call), then pick a batch size so one sample
 * lasts `minSampleMs` and a sample count that spends about `targetMs` (within [minSamples, maxSamples]).
 */
export async function warmUp(body: CaseBody, opts: TimingOptions): Promise<SamplePlan> {
  let calls = 0;
  let spent = 0;
  let est = Number.POSITIVE_INFINITY;
  while (calls < 1 || (spent < opts.warmupMs && calls < 10_000)) {
    const k = calls < 2 ? 1 : Math.max(1, Math.min(calls, Math.floor((opts.warmupMs - spent) / Math.max(est, 1e-3))));
    const ms = await timeCalls(body, k);
    spent += ms;
    calls += k;
    est = Math.min(est, ms / k);
  }
  const perSample = Math.max(1, Math.ceil(opts.minSampleMs / Math.max(est, 1e-4)));
  // A body slower than the whole target gets at most 3 samples (keeps slow contenders bounded).
  const minSamples = est > opts.targetMs ? Math.min(3, opts.minSamples) : opts.minSamples;
  const nSamples = Math.max(minSamples, Math.min(opts.maxSamples, Math.floor(opts.targetMs / (est * perSample))));
  return { perSample, nSamples, estMs: est };
}

/** One sample: seconds per call over a batch of `perSample` calls. */
export async function takeSample(body: CaseBody, perSample: number): Promise<number> {
  return (await timeCalls(body, perSample)) / perSample / 1e3;
}

/** Median and quartiles of a case's samples. */
export function summarize(samples: readonly number[], perSample: number): Measurement {
  const times = [...samples].sort((a, b) => a - b);
  return {
    median: quantile(times, 0.5),
    q1: quantile(times, 0.25),
    q3: quantile(times, 0.75),
    samples: times.length,
    callsPerSample: perSample,
  };
}

/**
 * Measure many cases side by side (every contender's case of every workload): each is warmed up and planned alone,
 * then their samples are taken in `rounds` rounds, every case taking its share of samples in each round (after
 * `settle`: a garbage collection and a pause, so the previous case's thread pools have gone idle). The shared
 * machine's slow and fast phases then fall on every case alike instead of on whichever ran at the time.
 */
export async function measureInterleaved(
  cases: readonly { body: CaseBody; activate?: () => void | Promise<void> }[],
  opts: TimingOptions,
  settle: () => Promise<void>,
): Promise<(Measurement | Error)[]> {
  const toError = (e: unknown) => (e instanceof Error ? e : new Error(String(e)));
  // a case that throws drops out with its error; the others go on
  const plans: (SamplePlan | Error)[] = [];
  for (const c of cases) {
    await settle();
    plans.push(
      await (async () => {
        await c.activate?.();
        return warmUp(c.body, opts);
      })().catch(toError),
    );
  }
  const samples: number[][] = cases.map(() => []);
  for (let r = 0; r < opts.rounds; r++) {
    for (let i = 0; i < cases.length; i++) {
      const p = plans[i]!;
      if (p instanceof Error) continue;
      const upTo = Math.round(((r + 1) * p.nSamples) / opts.rounds);
      if (samples[i]!.length >= upTo) continue;
      await settle();
      try {
        await cases[i]!.activate?.();
        // re-warm after the other cases ran (caches, thread pools, JIT state): ~20 ms of untimed calls, skipped for
        // bodies slower than that (their samples dwarf the transition)
        if (p.estMs <= opts.reWarmMs)
          await timeCalls(cases[i]!.body, Math.max(1, Math.floor(opts.reWarmMs / Math.max(p.estMs, 1e-3))));
        while (samples[i]!.length < upTo) samples[i]!.push(await takeSample(cases[i]!.body, p.perSample));
      } catch (e) {
        plans[i] = toError(e);
      }
    }
  }
  return plans.map((p, i) => (p instanceof Error ? p : summarize(samples[i]!, p.perSample)));
}

/** Convert seconds per call into the workload's unit. */
export function toUnit(w: Workload, seconds: number): number {
  switch (w.unit) {
    case "GFLOP/s":
    case "GB/s":
      return (w.work ?? 0) / seconds / 1e9;
    case "ms/step":
    case "ms":
      return seconds * 1e3;
    case "µs/call":
      return seconds * 1e6;
  }
}

// ---------------------------------------------------------------------------------------------
// Results, tables, RESULTS.md
// ---------------------------------------------------------------------------------------------

/** Outcome of one case. */
export interface CaseResult {
  contender: string;
  workload: WorkloadId;
  measurement?: Measurement;
  error?: string;
  note?: string;
}

function fmtNum(x: number): string {
  if (!Number.isFinite(x)) return "—";
  const a = Math.abs(x);
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(2);
}

function cell(w: Workload, r: CaseResult | undefined): string {
  if (!r) return "";
  if (r.error) return "error";
  const m = r.measurement!;
  const med = fmtNum(toUnit(w, m.median));
  if (m.samples <= 1) return med;
  const iqrPct = ((m.q3 - m.q1) / m.median) * 100;
  return `${med} ±${iqrPct < 10 ? iqrPct.toFixed(1) : iqrPct.toFixed(0)}%`;
}

function mdTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(3, ...all.map((r) => [...(r[i] ?? "")].length)));
  const line = (r: string[]) => "| " + r.map((c, i) => c.padEnd(widths[i]!)).join(" | ") + " |";
  return [line(header), "| " + widths.map((w) => "-".repeat(w)).join(" | ") + " |", ...rows.map(line)].join("\n");
}

/**
 * Two markdown tables: medians per workload and contender (± is the interquartile range as a
 * percentage of the median), and the baseline's speed-up over every other contender
 * (contender time / baseline time: > 1 means the baseline is faster).
 */
export function formatTables(results: readonly CaseResult[], contenders: readonly string[], baseline: string): string {
  const byKey = new Map(results.map((r) => [`${r.contender}\u0000${r.workload}`, r]));
  const get = (c: string, w: WorkloadId) => byKey.get(`${c}\u0000${w}`);
  const used = WORKLOADS.filter((w) => contenders.some((c) => get(c, w.id)));
  const medRows = used.map((w) => [
    w.title,
    w.unit + (w.higherIsBetter ? " ↑" : " ↓"),
    ...contenders.map((c) => cell(w, get(c, w.id))),
  ]);
  let out = mdTable(["workload", "unit", ...contenders], medRows);
  const others = contenders.filter((c) => c !== baseline);
  if (contenders.includes(baseline) && others.length > 0) {
    const ratioRows = used.map((w) => {
      const b = get(baseline, w.id)?.measurement;
      return [
        w.title,
        ...others.map((c) => {
          const m = get(c, w.id)?.measurement;
          return b && m ? `${fmtNum(m.median / b.median)}×` : "";
        }),
      ];
    });
    out +=
      `\n\nSpeed-up of ${baseline} (time of contender / time of ${baseline}; > 1: ${baseline} is faster)\n\n` +
      mdTable(["workload", ...others.map((c) => `${c} / ${baseline}`)], ratioRows);
  } else {
    out += `\n\n(no ${baseline} results: ratios against ${baseline} omitted)`;
  }
  return out;
}

/** The speed targets of issue #4 [engine]: jaxts's speed-up over `contender` on `workload` must reach `min`. */
export const TARGETS: readonly { workload: WorkloadId; contender: string; min: number; what: string }[] = [
  ...MATMUL_SIZES.flatMap((n) => [
    {
      workload: `matmul-${n}` as WorkloadId,
      contender: "raw-ort",
      min: 0.9,
      what: `f32 matmul N=${n} under jit: >= 0.9x raw ORT throughput`,
    },
    {
      workload: `matmul-${n}` as WorkloadId,
      contender: "jax-js",
      min: 6,
      what: `f32 matmul N=${n} under jit: >= 6x jax-js`,
    },
  ]),
  {
    workload: "mlp-step",
    contender: "jax-js",
    min: 8,
    what: "MLP 784-512-10 b128 train step: >= 8x faster than jax-js",
  },
  {
    workload: "mlp-step",
    contender: "tfjs-wasm",
    min: 40,
    what: "MLP train step: >= 40x faster than TensorFlow.js wasm",
  },
  { workload: "tanh-1e7", contender: "jax-js", min: 10, what: "jit(x => tanh(2x+1)) on 1e7 float32: >= 10x jax-js" },
  {
    workload: "add-eager-4096",
    contender: "jax-js",
    min: 1,
    what: "eager add of two 4096-element arrays: no slower than jax-js",
  },
  { workload: "add-jit-4096", contender: "jax-js", min: 1, what: "jit call of the same add: no slower than jax-js" },
  {
    workload: "mlp-compile",
    contender: "jax-js",
    min: 1,
    what: "compile time of the MLP step (first call): no slower than jax-js",
  },
];

/** A table of the targets this run measured: the speed-up reached and whether it meets the target (jaxts baseline only). */
export function formatTargets(results: readonly CaseResult[]): string {
  const get = (c: string, w: WorkloadId) => results.find((r) => r.contender === c && r.workload === w)?.measurement;
  const rows = TARGETS.flatMap((t) => {
    const b = get("jaxts", t.workload),
      m = get(t.contender, t.workload);
    if (!b || !m) return [];
    const r = m.median / b.median;
    return [[t.what, `${fmtNum(r)}×`, r >= t.min ? "met" : "MISSED"]];
  });
  if (rows.length === 0) return "";
  const missed = rows.filter((r) => r[2] !== "met").length;
  return (
    mdTable(["target", "this run", ""], rows) +
    `\n\n${missed === 0 ? "Every target measured in this run is met." : `${missed} of ${rows.length} targets missed in this run.`}`
  );
}

/** Directory holding the repository's package.json (named "jaxts"), else the working directory. */
export function repoRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const start of [here, process.cwd()]) {
    let dir = start;
    for (;;) {
      const pj = path.join(dir, "package.json");
      if (existsSync(pj)) {
        try {
          if ((JSON.parse(readFileSync(pj, "utf8")) as { name?: string }).name === "jaxts") return dir;
        } catch {
          /* keep looking */
        }
      }
      const up = path.dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  return process.cwd();
}

/** Version of an installed package, read from node_modules (works for packages whose exports hide package.json). */
export function packageVersion(name: string): string {
  const starts = [path.dirname(fileURLToPath(import.meta.url)), process.cwd(), repoRoot()];
  for (const start of starts) {
    let dir = start;
    for (;;) {
      const pj = path.join(dir, "node_modules", name, "package.json");
      if (existsSync(pj)) {
        try {
          return (JSON.parse(readFileSync(pj, "utf8")) as { version?: string }).version ?? "?";
        } catch {
          return "?";
        }
      }
      const up = path.dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  return "not installed";
}

/** Version in the repository's own package.json. */
export function rootPackageVersion(): string {
  try {
    return (
      (JSON.parse(readFileSync(path.join(repoRoot(), "package.json"), "utf8")) as { version?: string }).version ?? "?"
    );
  } catch {
    return "?";
  }
}

/** Machine description for the report. */
export function machineInfo(): string[] {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() ?? "unknown CPU";
  return [
    `CPU: ${model}, ${cpus.length} logical CPUs (availableParallelism ${os.availableParallelism()})`,
    `Memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `OS: ${os.type()} ${os.release()} ${os.arch()}`,
    `Node: ${process.version} (V8 ${process.versions.v8})`,
    `Load average (1/5/15 min) when the report was written: ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" / ")}`,
  ];
}

/** Write `text` to `file` atomically: temp file in the same directory, then rename. */
export function writeFileAtomic(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

/** Inputs of the RESULTS.md report. */
export interface Report {
  results: readonly CaseResult[];
  contenders: readonly { name: string; version?: string; notes?: readonly string[]; unavailable?: string }[];
  baseline: string;
  packages: Readonly<Record<string, string>>;
  timing: TimingOptions;
  elapsedS: number;
  /** jaxts's first-steps-vs-steady-state line (bench/first-steps.ts), when measured. */
  firstSteps?: string;
  /** The device runtime rows (bench/devices.ts, run in a child process), when measured. */
  devices?: string;
}

/** Render RESULTS.md. */
export function renderReport(rep: Report): string {
  const names = rep.contenders.filter((c) => !c.unavailable).map((c) => c.name);
  const lines: string[] = [];
  lines.push("# jaxts benchmark results", "");
  lines.push(`Generated ${new Date().toISOString()} by \`npm run bench\` in ${rep.elapsedS.toFixed(0)} s.`, "");
  lines.push("## Machine", "");
  for (const l of machineInfo()) lines.push(`- ${l}`);
  lines.push("", "## Packages", "");
  for (const [k, v] of Object.entries(rep.packages)) lines.push(`- ${k} ${v}`);
  lines.push("", "## Results", "");
  lines.push(
    "Medians of adaptive repetitions in one process, samples interleaved across contenders; ± is the interquartile range as % of the median. " +
      "Throughput rows (↑) are better high, time rows (↓) better low. The first-call row is a single " +
      "measurement. Shared, noisy machine: compare ratios within one run, not absolute times across runs.",
    "",
  );
  lines.push(formatTables(rep.results, names, rep.baseline), "");
  const targets = rep.baseline === "jaxts" ? formatTargets(rep.results) : "";
  if (targets) lines.push("## Targets (issue #4 [engine])", "", targets, "");
  if (rep.firstSteps) lines.push("## First steps (issue [reliability])", "", rep.firstSteps, "");
  if (rep.devices)
    lines.push(
      "## Device runtime (issue [devices]; bench/devices.ts in a child process)",
      "",
      "```",
      rep.devices,
      "```",
      "",
    );
  lines.push("## Contenders", "");
  for (const c of rep.contenders) {
    lines.push(
      `- **${c.name}**${c.version ? ` (${c.version})` : ""}${c.unavailable ? `: unavailable: ${c.unavailable}` : ""}`,
    );
    for (const n of c.notes ?? []) lines.push(`  - ${n}`);
  }
  const notes = rep.results.filter((r) => r.note || r.error);
  if (notes.length > 0) {
    lines.push("", "## Case notes", "");
    for (const r of notes) {
      lines.push(`- ${r.contender} / ${r.workload}: ${r.error ? `ERROR ${r.error}` : r.note}`);
    }
  }
  lines.push("", "## Method", "");
  lines.push(
    `- Warmup ${rep.timing.warmupMs} ms, then samples (each batching calls to last ≥ ${rep.timing.minSampleMs} ms) ` +
      `for ~${rep.timing.targetMs} ms per case, between ${rep.timing.minSamples} and ${rep.timing.maxSamples} samples; \`performance.now()\`.`,
    "- Every timed body forces completion (blockUntilReady / synchronous execution) and frees its outputs.",
    `- After the first-call row, every case is set up and warmed up alone; then all samples are taken in ${rep.timing.rounds} rounds ` +
      "over the whole run, each round visiting every workload and contender for its share, so the shared machine's slow and fast " +
      `phases fall on every case alike. Each share starts with ~${rep.timing.reWarmMs} ms of untimed calls (bodies slower than that excepted): ` +
      "samples measure the steady state, not the switch from another case.",
    "- Before each setup, warmup and round the runner forces a full garbage collection and waits 50 ms (no contender pays for another's garbage, " +
      "and the previous contender's spinning thread-pool workers have gone idle).",
    "- GFLOP/s counts 2·N³ per matmul; GB/s counts 8 bytes per element (read + write) for tanh(2x+1).",
    "- Speed-up ratios divide the contender's median time by the baseline's median time.",
  );
  return lines.join("\n") + "\n";
}

// ---------------------------------------------------------------------------------------------
// Shared deterministic data
// ---------------------------------------------------------------------------------------------

/** Deterministic pseudo-random float32 data, uniform in [-scale, scale). Mulberry32. */
export function randomF32(n: number, seed: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const u = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    out[i] = (2 * u - 1) * scale;
  }
  return out;
}

/** MLP parameters and one batch, as flat float32 buffers (row-major), identical for all contenders. */
export interface MlpData {
  w1: Float32Array; // [inDim, hidden]
  b1: Float32Array; // [hidden]
  w2: Float32Array; // [hidden, outDim]
  b2: Float32Array; // [outDim]
  x: Float32Array; // [batch, inDim]
  y: Float32Array; // [batch, outDim], one-hot labels
}

export function mlpData(): MlpData {
  const { inDim, hidden, outDim, batch } = MLP;
  const y = new Float32Array(batch * outDim);
  for (let i = 0; i < batch; i++) y[i * outDim + ((i * 7) % outDim)] = 1;
  return {
    w1: randomF32(inDim * hidden, 1, Math.sqrt(6 / (inDim + hidden))),
    b1: new Float32Array(hidden),
    w2: randomF32(hidden * outDim, 2, Math.sqrt(6 / (hidden + outDim))),
    b2: new Float32Array(outDim),
    x: randomF32(batch * inDim, 3, 1),
    y,
  };
}

/** LeNet parameters (kernels OIHW, dense row-major) and one NCHW batch, identical for all contenders. */
export interface LenetData {
  k1: Float32Array;
  b1: Float32Array;
  k2: Float32Array;
  b2: Float32Array;
  w3: Float32Array;
  b3: Float32Array;
  x: Float32Array;
  y: Float32Array;
}
export function lenetData(): LenetData {
  const { batch, size, c1, c2, k, flat, outDim } = LENET;
  const y = new Float32Array(batch * outDim);
  for (let i = 0; i < batch; i++) y[i * outDim + ((i * 7) % outDim)] = 1;
  return {
    k1: randomF32(c1 * k * k, 11, Math.sqrt(6 / (k * k + c1 * k * k))),
    b1: new Float32Array(c1),
    k2: randomF32(c2 * c1 * k * k, 12, Math.sqrt(6 / (c1 * k * k + c2 * k * k))),
    b2: new Float32Array(c2),
    w3: randomF32(flat * outDim, 13, Math.sqrt(6 / (flat + outDim))),
    b3: new Float32Array(outDim),
    x: randomF32(batch * size * size, 14, 1),
    y,
  };
}
