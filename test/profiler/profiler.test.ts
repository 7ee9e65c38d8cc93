/** @file profiler.trace writes a Chrome trace with primitive/jit events and annotations. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Array, jit, numpy as jnp, profiler } from "../../src/index.js";

test("trace records eager ops, jitted calls and annotations", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-prof-"));
  const f = jit(function step(x: Array) { return jnp.sum(jnp.tanh(x)); });
  const x = jnp.ones([64]);
  f(x);
  profiler.startTrace(dir);
  {
    using _ = new profiler.TraceAnnotation("train_step");
    jnp.add(x, x);
    f(x);
  }
  const path = profiler.stopTrace();
  const t = JSON.parse(readFileSync(path, "utf8")) as { traceEvents: { name: string; dur: number; cat: string }[] };
  const names = t.traceEvents.map((e) => e.name);
  assert.ok(names.includes("add"), names.join(","));
  assert.ok(names.includes("jit(step)"), names.join(","));
  assert.ok(names.includes("train_step"));
  assert.ok(t.traceEvents.every((e) => e.dur >= 0));
  assert.throws(() => profiler.stopTrace(), /no trace is being collected/);
  profiler.trace(dir, () => jnp.multiply(x, 2));
  assert.throws(() => { profiler.startTrace(dir); profiler.startTrace(dir); }, /already being collected/);
  profiler.stopTrace();
});
