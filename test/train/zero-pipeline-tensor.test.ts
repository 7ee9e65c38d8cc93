/**
 * @file ZeRO 1-3 x pipeline x tensor parallelism on 2x1x2 and 2x2x2 pipe x data x model meshes (CPU devices):
 * losses and parameters over 3 adamw steps equal the pipeline x tensor run without ZeRO and the unpipelined model, for
 * GPipe and 1F1B; a ZeRO-3 run resumes with the uninterrupted losses; a quarter of the bytes per device at stage 3.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Array } from "../../src/core/array.js";
import { flatten } from "../../src/core/tree.js";
import { prepareDevices, setupJob } from "../../src/train/job.js";
import type { TrainConfig } from "../../src/train/config.js";
import { initGpt } from "../../src/models/gpt.js";
import { makeGptZeroPipelineTensorStep, zeroPipelineTensorShardState } from "../../src/train/zero-pipeline-tensor.js";
import { makeJobBatches } from "../../src/train/engines.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { MEGATRON, bytesPerDevice, jobRunner, paramErr, relErr, tinyJob } from "./tiny-job.js";

prepareDevices(8);
const skip = deviceRuntimeUnavailable() ?? false;

const { tmp, run } = jobRunner("jaxts-zero-pipe-tp-");
/** A tiny 2-layer job, heads and MLP units Megatron-sharded over 'model', clipByGlobalNorm in the chain. */
const tiny = (ps: Partial<TrainConfig["parallel_strategy"]>, steps: number): TrainConfig =>
  tinyJob({ tensor_parallel: 2, pipeline_stages: 2, microbatches: 2, ...ps }, steps, { spec: MEGATRON });

test("ZeRO-1/2/3 x pipeline x tensor (GPipe, 1F1B) equal pipeline x tensor and the unpipelined model", { skip }, () => {
  const ref = run(tiny({ tensor_parallel: 1, pipeline_stages: 1, microbatches: 0 }, 3));
  for (const schedule of ["gpipe", "1f1b"] as const) {
    const plain = run(tiny({ schedule }, 3));
    assert.ok(relErr(plain.losses, ref.losses) < 1e-4, `${schedule}: ${plain.losses} vs ${ref.losses}`);
    for (const zero_stage of schedule === "gpipe" ? [1, 2, 3] : [3]) {
      const z = run(tiny({ schedule, zero_stage }, 3));
      const what = `ZeRO-${zero_stage} x ${schedule} x tensor`;
      assert.ok(relErr(z.losses, plain.losses) < 1e-5, `${what}: ${z.losses} vs ${plain.losses}`);
      assert.ok(relErr(z.losses, ref.losses) < 1e-4, `${what}: ${z.losses} vs unpipelined ${ref.losses}`);
      const e = paramErr(z.params, plain.params);
      assert.ok(e < 1e-5, `${what}: parameters differ from pipeline x tensor by ${e}`);
      const u = paramErr(z.params, ref.params);
      assert.ok(u < 1e-4, `${what}: parameters differ from the unpipelined run by ${u}`);
    }
  }
});

test(
  "a ZeRO-3 x pipeline x tensor run resumes (at stage 3 and at stage 1) with the uninterrupted losses",
  { skip },
  () => {
    const c = tiny({ zero_stage: 3, schedule: "1f1b" }, 4);
    const full = run(c);
    const dir = join(tmp, "interrupted");
    run(c, { out: dir, stopAfter: 2 });
    const rest = run(c, { resume: dir });
    assert.equal(rest.losses.length, 4);
    assert.ok(relErr(rest.losses, full.losses) < 1e-6, `${rest.losses} vs ${full.losses}`);
    assert.ok(paramErr(rest.params, full.params) < 1e-6);
    const z1 = run(tiny({ zero_stage: 1, schedule: "1f1b" }, 4), { resume: dir });
    assert.ok(relErr(z1.losses, full.losses) < 1e-5, `${z1.losses} vs ${full.losses}`);
    assert.ok(paramErr(z1.params, full.params) < 1e-5);
  },
);

test("ZeRO-3 x pipeline x tensor: each device holds a quarter of the parameter and optimizer bytes", { skip }, () => {
  const c = tiny({ zero_stage: 3 }, 1);
  const { model, mesh, opt, task, spec } = setupJob(c, 4);
  const params = initGpt(model, 0);
  let st = zeroPipelineTensorShardState(params, opt, mesh, model, spec, 3);
  const step = makeGptZeroPipelineTensorStep(model, opt, st.layout, { stage: 3, microbatches: 2 });
  const b = makeJobBatches(task, mesh, 8, 1).next();
  [, st] = step(st, b.tokens, b.targets, b.mask);
  const perDevice = bytesPerDevice;
  const nParams = (flatten(params)[0] as Array[]).reduce((a, x) => a + x.size, 0);
  const total = 3 * nParams * 4; // parameters + adam's mu and nu, unsharded
  const k = st.layout.shardLen.reduce((a, x) => a + x, 0);
  const p = perDevice(st.params),
    o = perDevice(st.optState);
  assert.equal(p.size, 4);
  // the three groups: heads / MLP units split over 'model', layer norms and row biases replicated over it, outer leaves
  assert.deepEqual(
    [0, 1, 2].map((g) => st.layout.group.includes(g as 0 | 1 | 2)),
    [true, true, true],
  );
  for (const [d, bytes] of p) {
    assert.equal(bytes, k * 4, `device ${d}: ${bytes} parameter bytes, expected its ${k} flat elements`);
    const all = bytes + o.get(d)!;
    assert.ok(Math.abs(all / total - 0.25) < 0.02, `device ${d}: ${all / total} of the unsharded bytes`);
  }
});

test("ZeRO-2/3 x pipeline x tensor on a 2x2x2 mesh (8 devices) equal pipeline x tensor there", { skip }, () => {
  const plain = run(tiny({ data_parallel: 2 }, 3));
  for (const zero_stage of [2, 3]) {
    const z = run(tiny({ data_parallel: 2, zero_stage }, 3));
    const what = `ZeRO-${zero_stage} x pipeline x tensor on 2x2x2`;
    assert.ok(relErr(z.losses, plain.losses) < 1e-5, `${what}: ${z.losses} vs ${plain.losses}`);
    const e = paramErr(z.params, plain.params);
    assert.ok(e < 1e-5, `${what}: parameters differ from pipeline x tensor by ${e}`);
  }
});
