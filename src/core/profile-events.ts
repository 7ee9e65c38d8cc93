/**
 * @file The profiler's event hub: modules below the profiler (jit, the ONNX backend, the device runtime, the parallel
 * layer) report timed spans here while a trace is being collected; with no trace running each report is one null test.
 */

/** Where a span is drawn: the host's main track, its transfer or step tracks, or a device's track. */
export type SpanTrack = "host" | "transfers" | "steps" | { device: number };

/** One timed region; times are microseconds of the monotonic clock (the same clock the native runtime reports). */
export interface ProfileSpan {
  name: string;
  /** "op", "jit", "tracing", "compile", "device", "collective", "transfer", "annotation", "step", "debug". */
  cat: string;
  start: number;
  end: number;
  track: SpanTrack;
  args?: Record<string, string | number>;
}

import { config } from "./config.js";

let sink: ((s: ProfileSpan) => void) | null = null;

/** Installs (or with null removes) the receiver of spans; the profiler calls it on startTrace / stopTrace. */
export function setSpanSink(s: ((s: ProfileSpan) => void) | null): void {
  sink = s;
}

/** True while a trace is being collected (callers skip building span arguments otherwise). */
export function profiling(): boolean {
  return sink !== null;
}

/** Reports one span (ignored when no trace is running). */
export function reportSpan(s: ProfileSpan): void {
  if (sink !== null) sink(s);
}

/** Microseconds of the monotonic clock (CLOCK_MONOTONIC, as std::chrono::steady_clock in the native runtime). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint()) / 1000;
}

/**
 * True while arrays and device buffers record their creating source line (config memoryProfile). A running trace does
 * not turn it on: a stack capture per array would inflate the very op and launch times the trace measures.
 */
export function memoryTracking(): boolean {
  return config.memoryProfile;
}
