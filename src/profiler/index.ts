/**
 * @file jax.profiler: trace(dir, fn), startTrace / stopTrace, TraceAnnotation and StepTraceAnnotation. While a trace
 * runs it collects spans for eager ops, jit calls, tracing, compilation (and cache hits), each device's run of a device
 * launch (the runtime's own timestamps), transfers and user annotations, and writes a Chrome trace-event JSON file
 * (Perfetto, chrome://tracing, `jaxts trace summary|view`) under `<dir>/plugins/profile/<run>/`, atomically.
 */
import { checkArity, checkOptions } from "../core/check-args.js";
import { monotonicUs, reportSpan, setSpanSink, type ProfileSpan } from "../core/profile-events.js";
import { setProfileSink } from "../core/trace.js";
import { setLaunchObserver, synchronize, type LaunchRecord } from "../runtime/index.js";
import { buildTraceFile, writeTraceFile } from "./trace-file.js";

export { deviceMemoryProfile, type DeviceMemory, type LiveArrayRecord, type MemoryProfile } from "./memory.js";
export { buildTraceFile, mergeTraceFiles, readTraceFile, type TraceEvent, type TraceFile } from "./trace-file.js";
export { formatSummary, summarizeTrace, type DeviceSummary, type StepSummary, type TraceSummary } from "./summary.js";
export { renderTimelineHtml, timelineData } from "./timeline-html.js";

export interface TraceOptions {
  /** Write `.trace.json.gz` instead of `.trace.json`. */
  gzip?: boolean;
}

let active: {
  dir: string;
  spans: ProfileSpan[];
  t0: number;
  gzip: boolean;
  prevObserver: ((r: LaunchRecord) => void) | null;
} | null = null;

/** Starts collecting events; throws if a trace is already running (as JAX does). */
export function startTrace(logDir: string, opts: TraceOptions = {}): void {
  checkOptions("profiler.startTrace", opts, ["gzip"], "profiler.startTrace(logDir, { gzip })");
  if (active)
    throw new Error(`profiler.startTrace: a trace is already being collected into ${active.dir}; call stopTrace first`);
  const spans: ProfileSpan[] = [];
  const prevObserver = setLaunchObserver(onLaunch);
  active = { dir: logDir, spans, t0: monotonicUs(), gzip: opts.gzip ?? false, prevObserver };
  setSpanSink((s) => spans.push(s));
  setProfileSink((name, s, e, args) =>
    spans.push({
      name,
      cat: name.startsWith("jit(") ? "jit" : "op",
      start: s,
      end: e,
      track: "host",
      args,
    }),
  );
}

/** Each rank's run of a device launch as a span on that device's track (native steady-clock timestamps). */
function onLaunch(r: LaunchRecord): void {
  for (const t of r.timeline) {
    reportSpan({
      name: r.program,
      cat: "device",
      start: t.start,
      end: t.end,
      track: { device: t.device },
      args: { rank: t.rank, ranks: r.timeline.length, thread: t.thread, ...(r.failed ? { failed: "yes" } : {}) },
    });
    // each collective inside it: waiting for the peers (start..ready) and moving the data (ready..end)
    for (const c of r.collectives[t.rank] ?? []) {
      reportSpan({
        name: `${c.name} (${c.kind})`,
        cat: "collective",
        start: c.start,
        end: c.end,
        track: { device: t.device },
        args: {
          kind: c.kind,
          axes: c.axes,
          bytes: c.bytes,
          group_size: c.groupSize,
          wait_us: round3(c.ready - c.start),
          transfer_us: round3(c.end - c.ready),
        },
      });
    }
  }
  active?.prevObserver?.(r);
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** True while a trace is being collected. */
export function isTracing(): boolean {
  return active !== null;
}

/** Stops collecting and writes the trace file; returns its path. */
export function stopTrace(): string {
  if (!active) throw new Error("profiler.stopTrace: no trace is being collected; call startTrace first");
  // device launches are dispatched asynchronously: the ones in flight belong to this trace
  synchronize();
  const { dir, spans, t0, gzip, prevObserver } = active;
  active = null;
  setProfileSink(null);
  setSpanSink(null);
  setLaunchObserver(prevObserver);
  return writeTraceFile(dir, buildTraceFile(spans, t0), gzip);
}

/** profiler.trace(dir, fn, { gzip }): runs fn while tracing; the trace is written even if fn throws. Returns fn's result. */
export function trace<T>(logDir: string, fn: () => T, opts: TraceOptions = {}): T {
  checkArity("profiler.trace", arguments, 3, "profiler.trace(logDir, fn, { gzip })");
  checkOptions("profiler.trace", opts, ["gzip"], "profiler.trace(logDir, fn, { gzip })");
  startTrace(logDir, opts);
  try {
    return fn();
  } finally {
    stopTrace();
  }
}

/** A named region on the host track: `using _ = new TraceAnnotation("fwd")`, `.end()`, or `TraceAnnotation.run(name, fn)`. */
export class TraceAnnotation {
  readonly #start = monotonicUs();
  #done = false;
  constructor(
    readonly name: string,
    readonly args: Record<string, string | number> = {},
  ) {}
  /** Closes the region (idempotent); recorded only while a trace runs. */
  end(): void {
    if (this.#done) return;
    this.#done = true;
    reportSpan({
      name: this.name,
      cat: this.cat(),
      start: this.#start,
      end: monotonicUs(),
      track: this.track(),
      args: this.args,
    });
  }
  /** @internal */ protected cat(): string {
    return "annotation";
  }
  /** @internal */ protected track(): ProfileSpan["track"] {
    return "host";
  }
  [Symbol.dispose](): void {
    this.end();
  }
  /** Runs fn inside a region named `name` (closed when fn returns or throws). */
  static run<T>(name: string, fn: () => T): T {
    const a = new TraceAnnotation(name);
    try {
      return fn();
    } finally {
      a.end();
    }
  }
}

/**
 * One training step (jax.profiler.StepTraceAnnotation): drawn on the host's "steps" track with its step number;
 * `jaxts trace summary` breaks each step's time down by what ran inside it.
 */
export class StepTraceAnnotation extends TraceAnnotation {
  constructor(name: string, opts: { stepNum: number } & Record<string, string | number>) {
    if (!Number.isInteger(opts?.stepNum))
      throw new TypeError(
        `profiler.StepTraceAnnotation(${JSON.stringify(name)}): stepNum must be an integer, got ${String(opts?.stepNum)}`,
      );
    const { stepNum, ...rest } = opts;
    super(name, { ...rest, step_num: stepNum });
  }
  protected override cat(): string {
    return "step";
  }
  protected override track(): ProfileSpan["track"] {
    return "steps";
  }
  /** Runs fn as step `stepNum`. */
  static runStep<T>(name: string, stepNum: number, fn: () => T): T {
    const a = new StepTraceAnnotation(name, { stepNum });
    try {
      return fn();
    } finally {
      a.end();
    }
  }
}

/** jax.profiler.annotate_function-style wrapper. */
export function annotateFunction<A extends unknown[], R>(
  f: (...args: A) => R,
  name = f.name || "fn",
): (...args: A) => R {
  return (...args: A) => TraceAnnotation.run(name, () => f(...args));
}
