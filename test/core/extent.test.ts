/** @file extent and the long lists it serves: bincount, the loss curve and trace summaries of ~200k values, which spread into Math.min / Math.max overflowed the stack. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { extent } from "../../src/core/extent.js";
import { numpy as jnp } from "../../src/index.js";
import { lossCurveSvg } from "../../src/train/loss-svg.js";
import { summarizeTrace } from "../../src/profiler/summary.js";
import type { TraceFile } from "../../src/profiler/trace-file.js";

const N = 200_000;

test("extent: min and max of a list, NaNs ignored, of any length", () => {
  assert.deepEqual(extent([3, -1, NaN, 7, 2]), [-1, 7]);
  assert.deepEqual(extent([]), [Infinity, -Infinity]);
  const long = Array.from({ length: N }, (_, i) => (i * 7919) % N);
  assert.deepEqual(extent(long), [0, N - 1]);
});

test("bincount, the loss curve and a trace summary take 200,000 values", () => {
  // bincount: 200,000 values 0..999, each value 200 times
  const x = jnp.array(Int32Array.from({ length: N }, (_, i) => i % 1000));
  const counts = jnp.bincount(x).tolist() as number[];
  assert.equal(counts.length, 1000);
  assert.ok(counts.every((c) => c === 200));
  // a loss curve of 200,000 steps: its y axis spans the smallest and largest loss
  const losses = Array.from({ length: N }, (_, i) => 2 + Math.sin(i / 1000));
  const svg = lossCurveSvg(losses);
  assert.match(svg, /^<svg/);
  // the y axis labels come from the extent: 1.00 (the smallest loss) and 3.00 (the largest)
  assert.match(svg, />1\.00</);
  assert.match(svg, />3\.00</);
  // a trace of 200,000 complete events: its span is first start to last end
  const t = {
    traceEvents: Array.from({ length: N }, (_, i) => ({ name: "op", ph: "X", ts: 10 + i, dur: 5, pid: 1, tid: 1 })),
  } as unknown as TraceFile;
  assert.equal(summarizeTrace(t).extentUs, N - 1 + 5);
});
