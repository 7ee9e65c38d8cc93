/**
 * @file The job's parallelism combined on 8 CPU devices (device runtime) against the 1-device job: 2 pipeline stages x
 * 2 data x 2 tensor with the 1F1B schedule, and ZeRO-3 x tensor parallel on a 4x2 mesh (losses within 1e-4).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type JobOutput, prepareDevices, runJob, setupJob } from "../../src/train/job.js";
import { type TrainConfig, resolveConfig } from "../../src/train/config.js";

prepareDevices(8);

const quiet: JobOutput = { line: () => {}, bar: null };
const tmp = mkdtempSync(join(tmpdir(), "jaxts-combos8-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
let runs = 0;

/** A tiny job: 2 layers, d_model 16, 2 heads, batch 8, a clip that triggers. */
function tiny(ps: Partial<TrainConfig["parallel_strategy"]>, steps: number): TrainConfig {
  const tp = (ps.tensor_parallel ?? 1) > 1;
  return resolveConfig({
    parallel_strategy: { data_parallel: 1, tensor_parallel: 1, ...ps },
    sharding_spec: {
      embeddings: [null, null],
      attention: [null, tp ? "model" : null, null],
      mlp: [null, tp ? "model" : null],
    },
    model: { d_model: 16, heads: 2, layers: 2, ff: 32 },
    optimizer: { lr: 1e-2, warmup: 2, clip: 0.05 },
    data: { digits: 2, batch_size: 8, held_out: 16 },
    run: { steps, eval_every: 1000, checkpoint_every: 1000, trace_steps: 0, predictions: 0 },
  });
}
function run(c: TrainConfig) {
  const ps = c.parallel_strategy;
  const n = ps.data_parallel * ps.tensor_parallel * ps.pipeline_stages;
  return runJob(c, setupJob(c, n), { out: join(tmp, `run${runs++}`), output: quiet });
}
const relErr = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]) / Math.abs(b[i])));
const ref = run(tiny({}, 3));

test("2 pipeline stages (1F1B) x 2 data x 2 tensor on 8 devices give the 1-device losses (1e-4)", () => {
  const r = run(
    tiny({ data_parallel: 2, tensor_parallel: 2, pipeline_stages: 2, microbatches: 2, schedule: "1f1b" }, 3),
  );
  assert.ok(relErr(r.losses, ref.losses) < 1e-4, `${r.losses} vs ${ref.losses}`);
});

test("ZeRO-3 x tensor parallel on a 4x2 mesh gives the 1-device losses (1e-4)", () => {
  const r = run(tiny({ data_parallel: 4, tensor_parallel: 2, zero_stage: 3 }, 3));
  assert.ok(relErr(r.losses, ref.losses) < 1e-4, `${r.losses} vs ${ref.losses}`);
});
