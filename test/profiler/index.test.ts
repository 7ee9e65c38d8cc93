/** @file profiler.trace writes a Chrome trace with primitive/jit events and annotations. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Array, jit, numpy as jnp, profiler } from "../../src/index.js";
import { checkTraceSchema } from "./trace-events.js";

test("trace records eager ops, jitted calls and annotations", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-prof-"));
  const f = jit(function step(x: Array) {
    return jnp.sum(jnp.tanh(x));
  });
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
  checkTraceSchema(t as unknown as profiler.TraceFile);
  assert.ok(t.traceEvents.filter((e) => e.cat === "op").every((e) => e.dur >= 0));
  assert.throws(() => profiler.stopTrace(), /no trace is being collected/);
  profiler.trace(dir, () => jnp.multiply(x, 2));
  assert.throws(() => {
    profiler.startTrace(dir);
    profiler.startTrace(dir);
  }, /already being collected/);
  profiler.stopTrace();
});

test("annotations nest around what ran inside them; StepTraceAnnotation carries its step number; bad input is named", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-prof-"));
  const x = jnp.ones([16]);
  const scaled = profiler.annotateFunction(function scale(a: Array) {
    return jnp.multiply(a, 3);
  });
  profiler.startTrace(dir);
  let path: string;
  try {
    profiler.StepTraceAnnotation.runStep("train", 7, () => profiler.TraceAnnotation.run("fwd", () => scaled(x)));
  } finally {
    path = profiler.stopTrace();
  }
  const spans = checkTraceSchema(profiler.readTraceFile(path));
  const get = (n: string) => {
    const e = spans.find((s) => s.name === n);
    assert.ok(e, `${n} in ${spans.map((s) => s.name)}`);
    return e!;
  };
  const step = get("train"),
    fwd = get("fwd"),
    sc = get("scale"),
    mul = get("mul");
  assert.equal(step.args!.step_num, 7);
  assert.equal(step.cat, "step");
  assert.notEqual(step.tid, fwd.tid, "steps have their own track");
  for (const [outer, inner] of [
    [step, fwd],
    [fwd, sc],
    [sc, mul],
  ]) {
    assert.ok(
      outer.ts <= inner.ts && inner.ts + inner.dur! <= outer.ts + outer.dur! + 1e-3,
      `${outer.name} encloses ${inner.name}`,
    );
  }
  assert.throws(
    () => new profiler.StepTraceAnnotation("s", { stepNum: 1.5 }),
    /StepTraceAnnotation\("s"\): stepNum must be an integer, got 1.5/,
  );
});
