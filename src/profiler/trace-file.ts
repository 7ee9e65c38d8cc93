/**
 * @file Chrome trace-event JSON for the profiler: spans become complete ("X") events on one track per device plus host
 * tracks (main thread, transfers, steps), with the process/thread naming metadata Perfetto and chrome://tracing show.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import type { ProfileSpan } from "../core/profile-events.js";

/** One trace event as written: "X" spans (with dur) and "M" metadata (names, sort order). */
export interface TraceEvent {
  name: string;
  ph: "X" | "M";
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  cat?: string;
  args?: Record<string, string | number>;
}

/** The file's top-level object (the JSON Object Format of the trace-event spec). */
export interface TraceFile {
  displayTimeUnit: "ms";
  traceEvents: TraceEvent[];
  otherData: Record<string, string | number>;
}

/** Process ids of the two groups of tracks. */
export const HOST_PID = 1;
export const DEVICES_PID = 2;
/** Thread ids of the host tracks; device d is drawn on tid DEVICE_TID0 + d of DEVICES_PID. */
export const HOST_TID = { host: 1, transfers: 2, steps: 3 } as const;
export const DEVICE_TID0 = 100;

/** Builds the trace file from spans (times in monotonic microseconds; `t0` becomes ts 0). */
export function buildTraceFile(spans: readonly ProfileSpan[], t0: number): TraceFile {
  const events: TraceEvent[] = [
    meta("process_name", HOST_PID, 0, { name: `Host (pid ${process.pid})` }),
    meta("process_sort_index", HOST_PID, 0, { sort_index: 0 }),
    meta("process_name", DEVICES_PID, 0, { name: "Devices" }),
    meta("process_sort_index", DEVICES_PID, 0, { sort_index: 1 }),
    meta("thread_name", HOST_PID, HOST_TID.host, { name: "main thread" }),
    meta("thread_name", HOST_PID, HOST_TID.transfers, { name: "transfers" }),
    meta("thread_name", HOST_PID, HOST_TID.steps, { name: "steps" }),
  ];
  const devices = new Set<number>();
  const spanEvents: TraceEvent[] = [];
  for (const s of spans) {
    let pid = HOST_PID,
      tid: number;
    if (typeof s.track === "object") {
      pid = DEVICES_PID;
      tid = DEVICE_TID0 + s.track.device;
      devices.add(s.track.device);
    } else tid = HOST_TID[s.track];
    const ev: TraceEvent = {
      name: s.name,
      ph: "X",
      ts: round(s.start - t0),
      dur: round(Math.max(0, s.end - s.start)),
      pid,
      tid,
      cat: s.cat,
    };
    if (s.args) ev.args = s.args;
    spanEvents.push(ev);
  }
  for (const d of [...devices].sort((a, b) => a - b)) {
    events.push(
      meta("thread_name", DEVICES_PID, DEVICE_TID0 + d, { name: `Device ${d}` }),
      meta("thread_sort_index", DEVICES_PID, DEVICE_TID0 + d, { sort_index: d }),
    );
  }
  // sorted by start, longer first at equal starts, so enclosing spans precede what they enclose
  spanEvents.sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  events.push(...spanEvents);
  // t0_us (the monotonic clock at ts 0) lets a merge align the files of several processes of one host
  return {
    displayTimeUnit: "ms",
    traceEvents: events,
    otherData: { producer: "jaxts", host: hostname(), pid: process.pid, t0_us: t0 },
  };
}

function meta(name: string, pid: number, tid: number, args: Record<string, string | number>): TraceEvent {
  return { name, ph: "M", ts: 0, pid, tid, args };
}
/** Microseconds to 3 decimals (nanosecond resolution keeps nested spans' order). */
function round(us: number): number {
  return Math.round(us * 1000) / 1000;
}

/** Writes `file` under `<dir>/plugins/profile/<run>/` atomically (as JAX lays traces out); returns its path. */
export function writeTraceFile(dir: string, file: TraceFile, gzip: boolean): string {
  const run = new Date().toISOString().replace(/[:.]/g, "_");
  const outDir = join(dir, "plugins", "profile", run);
  mkdirSync(outDir, { recursive: true });
  const path = join(outDir, `${hostname()}.${process.pid}.trace.json${gzip ? ".gz" : ""}`);
  const tmp = `${path}.tmp-${process.pid}`;
  const text = JSON.stringify(file);
  writeFileSync(tmp, gzip ? gzipSync(text) : text);
  renameSync(tmp, path);
  return path;
}

/** Reads a trace file written by stopTrace (plain or gzip), checking it is a trace-event object. */
export function readTraceFile(path: string): TraceFile {
  const raw = readFileSync(path);
  const text = raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw).toString("utf8") : raw.toString("utf8");
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (e) {
    throw new Error(`readTraceFile(${path}): not JSON: ${(e as Error).message}`);
  }
  const evs = (obj as { traceEvents?: unknown })?.traceEvents;
  if (!Array.isArray(evs))
    throw new Error(`readTraceFile(${path}): expected an object with a traceEvents array (Chrome trace-event JSON)`);
  return obj as TraceFile;
}

/**
 * Puts the traces of several processes on one timeline: each file's process ids are renumbered (file k uses
 * 10k + its own), its process names say which host and pid wrote it, and its times shift by its t0_us (the
 * monotonic clock, shared by the processes of one host) relative to the earliest file.
 */
export function mergeTraceFiles(files: readonly TraceFile[]): TraceFile {
  if (files.length === 0) throw new Error("mergeTraceFiles: no trace files given");
  const t0s = files.map((f, k) => {
    const t = Number(f.otherData?.t0_us);
    if (!Number.isFinite(t))
      throw new Error(`mergeTraceFiles: file ${k} has no otherData.t0_us (was it written by jaxts's profiler?)`);
    return t;
  });
  const base = Math.min(...t0s);
  const events: TraceEvent[] = [];
  files.forEach((f, k) => {
    const who = `${String(f.otherData?.host ?? "host")}:${String(f.otherData?.pid ?? k)}`;
    const shift = t0s[k] - base;
    for (const e of f.traceEvents) {
      const ev: TraceEvent = { ...e, pid: 10 * (k + 1) + e.pid, ts: e.ph === "M" ? 0 : round(e.ts + shift) };
      if (e.ph === "M" && e.name === "process_name") ev.args = { name: `${who} ${String(e.args?.name ?? "")}` };
      if (e.ph === "M" && e.name === "process_sort_index")
        ev.args = { sort_index: 10 * (k + 1) + Number(e.args?.sort_index ?? 0) };
      events.push(ev);
    }
  });
  return {
    displayTimeUnit: "ms",
    traceEvents: events,
    otherData: { producer: "jaxts", merged: files.length, t0_us: base },
  };
}
