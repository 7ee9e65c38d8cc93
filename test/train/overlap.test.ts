/**
 * @file parallel_strategy.overlap in the job (4 CPU devices, device runtime): ZeRO-3 with overlap gives exactly the
 * losses of overlap off, stage 0 with overlap (the ZeRO engine's bucketed all-reduce) those of the plain step; the
 * key is refused where it would do nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type JobOutput, prepareDevices, runJob, setupJob } from "../../src/train/job.js";
import { type TrainConfig, resolveConfig, validateConfig } from "../../src/train/config.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";

prepareDevices(4);
const skip = deviceRuntimeUnavailable() ?? false;

const lines: string[] = [];
const quiet: JobOutput = { line: (s) => lines.push(s), bar: null };
const tmp = mkdtempSync(join(tmpdir(), "jaxts-overlap-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
let runs = 0;

function tiny(ps: Partial<TrainConfig["parallel_strategy"]>, steps = 3): TrainConfig {
  return resolveConfig({
    parallel_strategy: { tensor_parallel: 1, ...ps },
    sharding_spec: { embeddings: [null, null], attention: [null, null, null], mlp: [null, null] },
    model: { d_model: 16, heads: 2, layers: 2, ff: 32 },
    optimizer: { lr: 1e-2, warmup: 2 },
    data: { digits: 2, batch_size: 8, held_out: 16 },
    run: { steps, eval_every: 1000, checkpoint_every: 1000, trace_steps: 0, predictions: 0 },
  });
}
function run(c: TrainConfig) {
  const ps = c.parallel_strategy;
  return runJob(c, setupJob(c, ps.data_parallel * ps.tensor_parallel * ps.pipeline_stages), {
    out: join(tmp, `run${runs++}`),
    output: quiet,
  });
}

test("ZeRO-3 with overlap: true gives exactly the losses of overlap: false", { skip }, () => {
  const off = run(tiny({ data_parallel: 2, zero_stage: 3 }));
  lines.length = 0;
  const on = run(tiny({ data_parallel: 2, zero_stage: 3, overlap: true }));
  assert.deepEqual(on.losses, off.losses);
  assert.ok(
    lines.some((l) => l.includes("communication overlapped")),
    lines.join("\n"),
  );
});

test(
  "stage 0 with overlap (the ZeRO engine's per-layer all-reduce buckets) gives the plain step's losses",
  { skip },
  () => {
    const plain = run(tiny({ data_parallel: 2 }));
    const on = run(tiny({ data_parallel: 2, overlap: true }));
    const err = Math.max(...on.losses.map((x, i) => Math.abs(x - plain.losses[i]) / plain.losses[i]));
    assert.ok(err < 1e-5, `${on.losses} vs ${plain.losses}`);
  },
);

test("overlap is refused where it has no effect, naming the key and why", () => {
  const bad = (ps: Partial<TrainConfig["parallel_strategy"]>, re: RegExp, spmdRuntime?: string) => {
    const c = tiny({ overlap: true, ...ps });
    const p = c.parallel_strategy;
    const devices = p.data_parallel * p.tensor_parallel * p.pipeline_stages;
    assert.throws(() => validateConfig(c, { devices, spmdRuntime }), re);
  };
  bad({ data_parallel: 1, zero_stage: 0 }, /parallel_strategy\.overlap: true has no effect here: data_parallel is 1/);
  bad({ data_parallel: 4, zero_stage: 3 }, /emulation SPMD runtime has no asynchronous collectives/, "emulation");
  bad({ data_parallel: 2, tensor_parallel: 2, zero_stage: 1 }, /tensor_parallel 2: .*overlap: false/);
  bad({ data_parallel: 2, pipeline_stages: 2, zero_stage: 2 }, /pipeline_stages 2: .*overlap: false/);
  assert.throws(
    () => resolveConfig({ parallel_strategy: { overlap: "yes" } }),
    /parallel_strategy\.overlap must be true or false/,
  );
  validateConfig(tiny({ data_parallel: 4, zero_stage: 3, overlap: true }), { devices: 4, spmdRuntime: "devices" });
});
