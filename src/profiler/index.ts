/**
 * @file jax.profiler: trace(dir, fn), startTrace / stopTrace and TraceAnnotation. Records one event per executed
 * primitive or compiled call plus user annotations, and writes a Chrome trace-event JSON file (open it in Perfetto
 * or chrome://tracing) under `<dir>/plugins/profile/<run>/`, atomically.
 */
import { checkArity } from "../core/check-args.js";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { setProfileSink } from "../core/trace.js";

interface TraceEvent { name: string; ph: "X"; ts: number; dur: number; pid: number; tid: number; cat: string; args?: Record<string, string> }

let active: { dir: string; events: TraceEvent[]; t0: number } | null = null;

/** Starts collecting events; throws if a trace is already running (as JAX does). */
export function startTrace(logDir: string): void {
  if (active) throw new Error(`profiler.startTrace: a trace is already being collected into ${active.dir}; call stopTrace first`);
  active = { dir: logDir, events: [], t0: performance.now() };
  const ev = active.events;
  setProfileSink((name, s, e, args) => ev.push({ name, ph: "X", ts: s * 1000, dur: (e - s) * 1000, pid: process.pid, tid: 1, cat: "op", args }));
}

/** Stops collecting and writes the trace file; returns its path. */
export function stopTrace(): string {
  if (!active) throw new Error("profiler.stopTrace: no trace is being collected; call startTrace first");
  const { dir, events } = active;
  active = null;
  setProfileSink(null);
  const run = new Date().toISOString().replace(/[:.]/g, "_");
  const outDir = join(dir, "plugins", "profile", run);
  mkdirSync(outDir, { recursive: true });
  const path = join(outDir, `${hostname()}.trace.json`);
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify({ displayTimeUnit: "ms", traceEvents: events }));
  renameSync(tmp, path);
  return path;
}

/** profiler.trace(dir, fn): runs fn while tracing; the trace is written even if fn throws. */
export function trace<T>(logDir: string, fn: () => T): T {
  checkArity("profiler.trace", arguments, 2, "profiler.trace(logDir, fn)");
  startTrace(logDir);
  try { return fn(); } finally { stopTrace(); }
}

/** A named region in the trace: `using _ = new TraceAnnotation("step")`, or `.run(fn)`. */
export class TraceAnnotation {
  readonly #start = performance.now();
  #done = false;
  constructor(readonly name: string, readonly args: Record<string, string> = {}) {}
  end(): void {
    if (this.#done) return;
    this.#done = true;
    if (active) active.events.push({ name: this.name, ph: "X", ts: this.#start * 1000, dur: (performance.now() - this.#start) * 1000, pid: process.pid, tid: 0, cat: "annotation", args: this.args });
  }
  [Symbol.dispose](): void { this.end(); }
  static run<T>(name: string, fn: () => T): T {
    const a = new TraceAnnotation(name);
    try { return fn(); } finally { a.end(); }
  }
}
/** jax.profiler.annotate_function-style wrapper. */
export function annotateFunction<A extends unknown[], R>(f: (...args: A) => R, name = f.name || "fn"): (...args: A) => R {
  return (...args: A) => TraceAnnotation.run(name, () => f(...args));
}
