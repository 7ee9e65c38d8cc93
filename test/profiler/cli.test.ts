/** @file The jaxts CLI on a trace written by the test: summary numbers against the events, the HTML view (structure and a run of its script), merge, usage errors. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runInNewContext } from "node:vm";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 2);
import { type Array, jit, lax, makeMesh, numpy as jnp, profiler, shardMap, sharding } from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import type { TraceEvent, TraceSummary } from "../../src/profiler/index.js";
import { resolveTrace } from "../../src/profiler/cli.js";
const { P } = sharding;

const CLI = fileURLToPath(new URL("../../src/profiler/cli.js", import.meta.url));
const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8" });
const skip = deviceRuntimeUnavailable() ?? false;

/** Two steps of a jitted shardMap with a psum on 2 devices, traced into a fresh directory; returns the directory. */
function writeTrace(): string {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-cli-"));
  const mesh = makeMesh([2], ["d"]);
  const f = jit(shardMap((b: Array) => lax.psum(jnp.multiply(b, b), "d"), { mesh, inSpecs: P("d"), outSpecs: P() }));
  const x = jnp.arange(256, { dtype: "float32" });
  config.update("spmdRuntime", "devices");
  try {
    profiler.trace(dir, () => {
      for (let i = 0; i < 2; i++) profiler.StepTraceAnnotation.runStep("train", i, () => f(x).dataSync());
    });
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
  return dir;
}

test(
  "jaxts trace summary: per-device compute / communication / idle, collectives and steps agree with the trace's events",
  { skip },
  () => {
    const dir = writeTrace();
    const r = cli("trace", "summary", dir, "--json");
    assert.equal(r.status, 0, r.stderr);
    const s = JSON.parse(r.stdout) as TraceSummary;
    const events = profiler.readTraceFile(findTrace(dir)).traceEvents.filter((e) => e.ph === "X");
    const end = (e: TraceEvent) => e.ts + e.dur!;
    const lo = Math.min(...events.map((e) => e.ts)),
      hi = Math.max(...events.map(end));
    assert.ok(Math.abs(s.extentUs - (hi - lo)) < 0.01);
    assert.deepEqual(
      s.devices.map((d) => d.device),
      [0, 1],
    );
    const sum = (es: TraceEvent[]) => es.reduce((a, e) => a + e.dur!, 0);
    for (const d of s.devices) {
      // one device runs its launches one after another, and its collectives one at a time: plain sums are the busy time
      const runs = events.filter((e) => e.cat === "device" && e.tid === 100 + d.device);
      const colls = events.filter((e) => e.cat === "collective" && e.tid === 100 + d.device);
      assert.equal(d.launches, 2);
      assert.equal(colls.length, 2, "one psum per launch");
      assert.ok(Math.abs(d.busyUs - sum(runs)) < 0.01, `device ${d.device} busy ${d.busyUs} vs ${sum(runs)}`);
      assert.ok(Math.abs(d.communicationUs - sum(colls)) < 0.01);
      assert.ok(Math.abs(d.computeUs - (sum(runs) - sum(colls))) < 0.01);
      assert.ok(Math.abs(d.idleUs - (hi - lo - sum(runs))) < 0.01);
      assert.deepEqual(
        d.programs.map((p) => [p.name, p.count]),
        [["shard_map", 2]],
      );
      // psum of this device's f32[128] block, twice
      assert.equal(d.collectives.length, 1);
      assert.equal(d.collectives[0].bytes, 2 * 128 * 4);
      assert.equal(d.collectives[0].count, 2);
      assert.ok(Math.abs(d.collectives[0].waitUs + d.collectives[0].transferUs - sum(colls)) < 0.01);
    }
    const steps = events.filter((e) => e.cat === "step");
    assert.deepEqual(
      s.steps.map((st) => [st.name, st.step, st.durationUs]),
      steps.map((e) => [e.name, e.args!.step_num, e.dur]),
    );
    for (const st of s.steps) {
      const [a, b] = [steps[st.step].ts, end(steps[st.step])];
      const inStep = (e: TraceEvent) => e.ts >= a && end(e) <= b;
      const comm = [0, 1].map((d) =>
        sum(events.filter((e) => e.cat === "collective" && e.tid === 100 + d && inStep(e))),
      );
      assert.ok(
        Math.abs(st.deviceCommunicationUs - (comm[0] + comm[1]) / 2) < 0.01,
        `step ${st.step}: mean communication`,
      );
      const runs = [0, 1].map((d) => sum(events.filter((e) => e.cat === "device" && e.tid === 100 + d && inStep(e))));
      assert.ok(Math.abs(st.deviceIdleUs - (b - a - (runs[0] + runs[1]) / 2)) < 0.01);
      assert.ok(st.host.jit > 0, "the jit call ran inside the step");
    }
    const text = cli("trace", "summary", dir, "--top", "1");
    assert.equal(text.status, 0, text.stderr);
    assert.match(
      text.stdout,
      /Device 0: 2 launch\(es\); compute [\d.]+ ms \([\d.]+%\), communication [\d.]+ ms \([\d.]+%\), idle/,
    );
    assert.match(text.stdout, /psum \(AllReduce\) over mesh axis 'd' {2}x2 .* 1024 B/);
    assert.match(text.stdout, /Steps:\n {2}train 0: [\d.]+ ms; devices \(mean\) compute/);
  },
);

/** The trace file under a log directory (the CLI accepts the directory too). */
const findTrace = (dir: string): string => resolveTrace(dir);

test("jaxts trace view: one self-contained page whose script draws every track and zooms", { skip }, () => {
  const dir = writeTrace();
  const out = join(dir, "timeline.html");
  const r = cli("trace", "view", dir, "-o", out);
  assert.equal(r.status, 0, r.stderr);
  const html = readFileSync(out, "utf8");
  assert.ok(
    !/(src|href)\s*=|https?:\/\/|@import|fetch\(|XMLHttpRequest/.test(html),
    "nothing is loaded from elsewhere",
  );
  assert.match(html, /^<!DOCTYPE html>/);
  const data = JSON.parse(/<script type="application\/json" id="trace-data">([\s\S]*?)<\/script>/.exec(html)![1]) as {
    tracks: { label: string }[];
    spans: unknown[];
  };
  const events = profiler.readTraceFile(findTrace(dir)).traceEvents.filter((e) => e.ph === "X");
  assert.equal(data.spans.length, events.length, "every span is on the page");
  assert.deepEqual(
    data.tracks.map((t) => t.label),
    ["Device 0", "Device 1", "main thread", "transfers", "steps"],
  );
  // run the page's script against a recording canvas: it draws each track's label and every span, and zooms on wheel
  const script = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]).join("\n");
  const texts: string[] = [];
  let rects = 0;
  const handlers: Record<string, (ev: unknown) => void> = {};
  const el = (id: string) => ({
    id,
    width: 0,
    height: 0,
    style: {} as Record<string, string>,
    textContent: id === "trace-data" ? JSON.stringify(data) : "",
    getContext: () => ({
      clearRect() {},
      fillRect() {
        rects++;
      },
      fillText(t: string) {
        texts.push(t);
      },
      save() {},
      restore() {},
      beginPath() {},
      rect() {},
      clip() {},
      fillStyle: "",
    }),
    addEventListener: (type: string, h: (ev: unknown) => void) => {
      handlers[type] = h;
    },
  });
  const els = new Map<string, ReturnType<typeof el>>();
  const document = {
    getElementById: (id: string) => {
      if (!els.has(id)) els.set(id, el(id));
      return els.get(id)!;
    },
  };
  const window = { innerWidth: 1200, addEventListener: () => {} };
  runInNewContext(script, { document, window, JSON, Math, isFinite, Infinity });
  for (const t of data.tracks) assert.ok(texts.includes(t.label), `label ${t.label} drawn`);
  assert.ok(rects >= data.spans.length, `${rects} rectangles for ${data.spans.length} spans`);
  const range = () => els.get("range")!.textContent;
  const before = range();
  handlers.wheel({ offsetX: 600, deltaY: -1, preventDefault() {} });
  assert.notEqual(range(), before, "zooming in changes the visible range");
  assert.match(range(), /^view .* \(.*\)$/);
});

test("jaxts trace merge puts several processes' traces on one timeline; usage errors exit 2", { skip }, () => {
  const a = findTrace(writeTrace()),
    b = findTrace(writeTrace());
  const out = join(mkdtempSync(join(tmpdir(), "jaxts-merge-")), "merged.trace.json");
  const r = cli("trace", "merge", a, b, "-o", out);
  assert.equal(r.status, 0, r.stderr);
  const m = profiler.readTraceFile(out),
    fa = profiler.readTraceFile(a),
    fb = profiler.readTraceFile(b);
  assert.equal(m.traceEvents.length, fa.traceEvents.length + fb.traceEvents.length);
  const pids = new Set(m.traceEvents.map((e) => e.pid));
  assert.deepEqual([...pids].sort(), [11, 12, 21, 22]);
  // file b started later: its events shift by the difference of the two files' monotonic t0
  const shift = Number(fb.otherData.t0_us) - Number(fa.otherData.t0_us);
  assert.ok(shift > 0);
  const firstB = fb.traceEvents.find((e) => e.ph === "X")!;
  assert.ok(
    m.traceEvents.some(
      (e) => e.pid === 10 * 2 + firstB.pid && e.name === firstB.name && Math.abs(e.ts - (firstB.ts + shift)) < 0.01,
    ),
  );
  const bad = cli("trace", "frobnicate", a);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /usage:\n {2}jaxts trace summary/);
  assert.match(cli("trace", "view", a).stderr, /missing -o <output file>/);
  const missing = cli("trace", "summary", join(tmpdir(), "no-such-trace.json"));
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /ENOENT|no such file/);
});
