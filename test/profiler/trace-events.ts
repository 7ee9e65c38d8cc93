/** @file Helpers of the profiler tests: a schema check of Chrome trace-event files. */
import assert from "node:assert/strict";
import type { TraceEvent, TraceFile } from "../../src/profiler/index.js";

/**
 * Every event has ph/ts/pid/tid/name; X events have a non-negative dur; B/E events balance per (pid, tid); metadata
 * names every (pid, tid) that holds a span. Returns the span events.
 */
export function checkTraceSchema(t: TraceFile): TraceEvent[] {
  assert.ok(Array.isArray(t.traceEvents), "traceEvents is an array");
  const named = new Set<string>(),
    used = new Set<string>(),
    depth = new Map<string, number>();
  const spans: TraceEvent[] = [];
  for (const e of t.traceEvents) {
    for (const k of ["ph", "ts", "pid", "tid", "name"] as const)
      assert.ok(e[k] !== undefined, `event ${JSON.stringify(e)} has ${k}`);
    assert.equal(typeof e.ts, "number");
    assert.ok(Number.isInteger(e.pid) && Number.isInteger(e.tid));
    const key = `${e.pid}/${e.tid}`;
    if (e.ph === "M") {
      if (e.name === "thread_name") named.add(key);
      continue;
    }
    const ph = e.ph as string;
    if (ph === "B" || ph === "E") {
      depth.set(key, (depth.get(key) ?? 0) + (ph === "B" ? 1 : -1));
      assert.ok(depth.get(key)! >= 0, `E before B on ${key}`);
      continue;
    }
    assert.equal(ph, "X", `event ${e.name}: phase ${ph}`);
    assert.ok(typeof e.dur === "number" && e.dur >= 0, `event ${e.name} has a duration`);
    used.add(key);
    spans.push(e);
  }
  for (const [k, d] of depth) assert.equal(d, 0, `B/E balanced on ${k}`);
  for (const k of used) assert.ok(named.has(k), `track ${k} is named by a thread_name metadata event`);
  return spans;
}
