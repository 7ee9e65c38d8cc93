/**
 * @file ZeRO stages 1-2 x pipeline on a 2x2 pipe x data mesh (4 CPU devices, device runtime): losses and parameters
 * over 3 adamw steps (clipByGlobalNorm in the chain) equal the unsharded-optimizer pipelined run and the unpipelined model,
 * for GPipe and 1F1B; each device holds a quarter of the optimizer state (of the pipelined run's without ZeRO) and
 * only its stage's blocks; a checkpointed
 * run resumes with the uninterrupted run's losses.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Array } from "../../src/core/array.js";
import { flatten } from "../../src/core/tree.js";
import { prepareDevices, setupJob } from "../../src/train/job.js";
import type { TrainConfig } from "../../src/train/config.js";
import { gptParamSpecs, initGpt } from "../../src/models/gpt.js";
import { jit } from "../../src/transforms/api.js";
import { placeOnMesh } from "../../src/train/checkpoint.js";
import type { Shard } from "../../src/parallel/device-put.js";
import { makeGptZeroPipelineStep, zeroPipelineShardState } from "../../src/train/zero-pipeline.js";
import { makeGptPipelineStep, makeJobBatches } from "../../src/train/engines.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { bytesPerDevice, jobRunner, paramErr, relErr, tinyJob } from "./tiny-job.js";

prepareDevices(4);
const skip = deviceRuntimeUnavailable() ?? false;

const { tmp, run } = jobRunner("jaxts-zero-pipe-");
const tiny = tinyJob;
const pipe = (extra: Partial<TrainConfig["parallel_strategy"]>) => ({
  data_parallel: 2,
  pipeline_stages: 2,
  microbatches: 2,
  ...extra,
});

test(
  "ZeRO-1/2 x pipeline (GPipe, 1F1B) equal the pipelined run without ZeRO and the unpipelined model",
  { skip },
  () => {
    const ref = run(tiny({ data_parallel: 2 }, 3));
    for (const schedule of ["gpipe", "1f1b"] as const) {
      const plain = run(tiny(pipe({ schedule }), 3));
      assert.ok(relErr(plain.losses, ref.losses) < 1e-4, `${schedule}: ${plain.losses} vs ${ref.losses}`);
      for (const zero_stage of schedule === "gpipe" ? [1, 2] : [2]) {
        const z = run(tiny(pipe({ schedule, zero_stage }), 3));
        const what = `ZeRO-${zero_stage} x ${schedule}`;
        assert.ok(relErr(z.losses, plain.losses) < 1e-6, `${what}: ${z.losses} vs ${plain.losses}`);
        assert.ok(relErr(z.losses, ref.losses) < 1e-4, `${what}: ${z.losses} vs unpipelined ${ref.losses}`);
        const e = paramErr(z.params, plain.params);
        assert.ok(e < 1e-6, `${what}: parameters differ from the pipelined run by ${e}`);
        const u = paramErr(z.params, ref.params);
        assert.ok(u < 1e-4, `${what}: parameters differ from the unpipelined run by ${u}`);
      }
    }
  },
);

test("a ZeRO-2 x 1F1B run resumes from its checkpoint with the uninterrupted losses and parameters", { skip }, () => {
  const c = tiny(pipe({ schedule: "1f1b", zero_stage: 2 }), 4);
  const full = run(c);
  const dir = join(tmp, "interrupted");
  run(c, { out: dir, stopAfter: 2 });
  const rest = run(c, { resume: dir });
  assert.equal(rest.losses.length, 4);
  assert.ok(relErr(rest.losses, full.losses) < 1e-6, `${rest.losses} vs ${full.losses}`);
  assert.ok(paramErr(rest.params, full.params) < 1e-6);
  // the checkpoint's optimizer state is full-shaped: the pipelined run without ZeRO resumes from it too
  const plain = run(tiny(pipe({ schedule: "1f1b" }), 4), { resume: dir });
  assert.ok(relErr(plain.losses, full.losses) < 1e-5, `${plain.losses} vs ${full.losses}`);
});

test("ZeRO-1 x pipeline: a quarter of the optimizer state per device, blocks only on their stage", { skip }, () => {
  const c = tiny(pipe({ zero_stage: 1 }), 3);
  const { model, mesh, opt, task, spec } = setupJob(c, 4);
  const params = initGpt(model, 0);
  let st = zeroPipelineShardState(params, opt, mesh, 1);
  const step = makeGptZeroPipelineStep(model, opt, st.layout, { stage: 1, microbatches: 2 });
  const b = makeJobBatches(task, mesh, 8, 1).next();
  [, st] = step(st, b.tokens, b.targets, b.mask);
  // the pipelined step without ZeRO, as the job runs it (parameters placed by sharding_spec, one jit)
  const placed = placeOnMesh(params, gptParamSpecs(model, spec), mesh);
  const plainStep = jit(makeGptPipelineStep(model, opt, mesh, { microbatches: 2, spec }));
  const [, , plainState] = plainStep(placed, opt.init(placed), b.tokens, b.targets, b.mask);
  const perDevice = bytesPerDevice;
  const nParams = (flatten(params)[0] as Array[]).reduce((a, x) => a + x.size, 0);
  const full = 2 * nParams * 4 + 4; // adam's mu and nu + its count, unsharded (what each device holds without ZeRO)
  const k = st.layout.shardLen.reduce((a, x) => a + x, 0);
  const held = perDevice(st.optState);
  const plainHeld = perDevice(plainState);
  assert.equal(held.size, 4);
  // without ZeRO the jitted update leaves the whole state on one device (SingleDeviceSharding); with it every device
  // holds 1 / (stages x data_parallel) of every leaf, so at most 1 / data_parallel of the pipelined run's largest
  const plainMax = Math.max(...plainHeld.values());
  for (const [d, bytes] of held) {
    const ratio = bytes / plainMax;
    assert.ok(ratio <= 0.5 && Math.abs(ratio - 0.25) < 0.02, `device ${d}: ${ratio} of the pipelined run's bytes`);
  }
  for (const [d, bytes] of held) {
    // clip and adamw keep no per-parameter state besides mu and nu; counts are replicated int32 scalars
    assert.ok(bytes >= 2 * k * 4 && bytes <= 2 * k * 4 + 16, `device ${d}: ${bytes} bytes, expected ~${2 * k * 4}`);
    assert.ok(Math.abs(bytes / full - 0.25) < 0.02, `device ${d}: ${bytes / full} of the unsharded state`);
  }
  // each device's block of a stacked block leaf is its stage's layer (of 2): [1, ...]
  for (const s of st.params.blocks.wq.addressableShards as Shard[]) assert.equal(s.data.shape[0], 1);
  for (const s of st.params.wte.addressableShards as Shard[]) assert.deepEqual(s.data.shape, [...params.wte.shape]);
});

test("ZeRO-3 x pipeline (GPipe, 1F1B) equals ZeRO-2 x pipeline and the unpipelined model", { skip }, () => {
  const ref = run(tiny({ data_parallel: 2 }, 3));
  for (const schedule of ["gpipe", "1f1b"] as const) {
    const z2 = run(tiny(pipe({ schedule, zero_stage: 2 }), 3));
    const z3 = run(tiny(pipe({ schedule, zero_stage: 3 }), 3));
    const what = `ZeRO-3 x ${schedule}`;
    assert.ok(relErr(z3.losses, z2.losses) < 1e-6, `${what}: ${z3.losses} vs ZeRO-2 ${z2.losses}`);
    assert.ok(relErr(z3.losses, ref.losses) < 1e-4, `${what}: ${z3.losses} vs unpipelined ${ref.losses}`);
    const e = paramErr(z3.params, z2.params);
    assert.ok(e < 1e-6, `${what}: parameters differ from ZeRO-2 x pipeline by ${e}`);
    const u = paramErr(z3.params, ref.params);
    assert.ok(u < 1e-4, `${what}: parameters differ from the unpipelined run by ${u}`);
  }
});

test("a ZeRO-3 x pipeline run resumes (at stage 3 and at stage 2) with the uninterrupted losses", { skip }, () => {
  const c = tiny(pipe({ zero_stage: 3 }), 4);
  const full = run(c);
  const dir = join(tmp, "interrupted3");
  run(c, { out: dir, stopAfter: 2 });
  const rest = run(c, { resume: dir });
  assert.equal(rest.losses.length, 4);
  assert.ok(relErr(rest.losses, full.losses) < 1e-6, `${rest.losses} vs ${full.losses}`);
  assert.ok(paramErr(rest.params, full.params) < 1e-6);
  // the checkpoint is in the full layout: ZeRO-2 x pipeline resumes from it (resharded) with the same losses
  const z2 = run(tiny(pipe({ zero_stage: 2 }), 4), { resume: dir });
  assert.ok(relErr(z2.losses, full.losses) < 1e-5, `${z2.losses} vs ${full.losses}`);
  assert.ok(paramErr(z2.params, full.params) < 1e-5);
});

test("ZeRO-3 x pipeline: each device holds a quarter of the parameter and optimizer bytes", { skip }, () => {
  const c = tiny(pipe({ zero_stage: 3 }), 3);
  const { model, mesh, opt, task } = setupJob(c, 4);
  const params = initGpt(model, 0);
  let st = zeroPipelineShardState(params, opt, mesh, 3);
  const step = makeGptZeroPipelineStep(model, opt, st.layout, { stage: 3, microbatches: 2 });
  const b = makeJobBatches(task, mesh, 8, 1).next();
  [, st] = step(st, b.tokens, b.targets, b.mask);
  const perDevice = bytesPerDevice;
  const nParams = (flatten(params)[0] as Array[]).reduce((a, x) => a + x.size, 0);
  const total = 3 * nParams * 4; // parameters + adam's mu and nu, unsharded
  const k = st.layout.shardLen.reduce((a, x) => a + x, 0);
  const p = perDevice(st.params),
    o = perDevice(st.optState);
  assert.equal(p.size, 4);
  for (const [d, bytes] of p) {
    assert.equal(bytes, k * 4, `device ${d}: ${bytes} parameter bytes, expected its ${k} flat elements`);
    const all = bytes + o.get(d)!;
    // the shards cover the total exactly once (plus padding and the replicated counts)
    assert.ok(Math.abs(all / total - 0.25) < 0.02, `device ${d}: ${all / total} of the unsharded bytes`);
  }
  // no device holds a whole leaf: every shard is a flat 1 / (stages x data_parallel) slice
  for (const s of st.params.blocks.wq.addressableShards as Shard[]) assert.equal(s.data.ndim, 1);
  for (const s of st.params.wte.addressableShards as Shard[]) assert.ok(s.data.size * 4 <= params.wte.size + 4);
});
