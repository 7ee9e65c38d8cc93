/**
 * @file ZeRO-3 x pipeline (x tensor) with 2 layers per stage: gathering each layer's parameters inside the stage's
 * layer scan (the default) gives the losses of gathering the stage once, of the pipeline without ZeRO and of the
 * unpipelined model (GPipe, 1F1B), and its per-device programs hold less at their peak and gather only one layer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { makeJaxpr } from "../../src/transforms/api.js";
import { prepareDevices, setupJob } from "../../src/train/job.js";
import { initGpt } from "../../src/models/gpt.js";
import { makeGptZeroPipelineStep, zeroPipelineShardState } from "../../src/train/zero-pipeline.js";
import {
  type ZeroPipelineTensorState,
  makeGptZeroPipelineTensorStep,
  zeroPipelineTensorShardState,
} from "../../src/train/zero-pipeline-tensor.js";
import { makeJobBatches } from "../../src/train/engines.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { deviceBodies, gatherBytes, jobRunner, livePeak, paramErr, relErr, tinyJob } from "./tiny-job.js";

prepareDevices(8);
const skip = deviceRuntimeUnavailable() ?? false;
const { run } = jobRunner("jaxts-zero-pipe-gather-");
const LAYERS = { layers: 4 }; // 2 stages of 2 layers

test(
  "ZeRO-3 x pipeline gathering per layer (GPipe, 1F1B) equals per stage, no ZeRO and the unpipelined model",
  { skip },
  () => {
    const ref = run(tinyJob({ data_parallel: 2 }, 3, LAYERS));
    for (const schedule of ["gpipe", "1f1b"] as const) {
      const ps = { data_parallel: 2, pipeline_stages: 2, microbatches: 2, schedule };
      const plain = run(tinyJob(ps, 3, LAYERS));
      const z3 = run(tinyJob({ ...ps, zero_stage: 3 }, 3, LAYERS));
      const what = `ZeRO-3 x ${schedule}, per layer`;
      assert.ok(relErr(z3.losses, plain.losses) < 1e-6, `${what}: ${z3.losses} vs ${plain.losses}`);
      assert.ok(relErr(z3.losses, ref.losses) < 1e-4, `${what}: ${z3.losses} vs unpipelined ${ref.losses}`);
      assert.ok(paramErr(z3.params, plain.params) < 1e-6, `${what}: parameters differ from the pipelined run`);
      assert.ok(paramErr(z3.params, ref.params) < 1e-4, `${what}: parameters differ from the unpipelined run`);
    }
  },
);

test(
  "ZeRO-3 x pipeline x tensor gathering per layer (GPipe, 1F1B) equals pipeline x tensor, 2x2x2 mesh",
  { skip },
  () => {
    const ref = run(tinyJob({ data_parallel: 2 }, 3, LAYERS));
    for (const schedule of ["gpipe", "1f1b"] as const) {
      const ps = { data_parallel: 2, tensor_parallel: 2, pipeline_stages: 2, microbatches: 2, schedule };
      const plain = run(tinyJob(ps, 3, LAYERS));
      const z3 = run(tinyJob({ ...ps, zero_stage: 3 }, 3, LAYERS));
      const what = `ZeRO-3 x ${schedule} x tensor, per layer`;
      assert.ok(relErr(z3.losses, plain.losses) < 1e-5, `${what}: ${z3.losses} vs ${plain.losses}`);
      assert.ok(relErr(z3.losses, ref.losses) < 1e-4, `${what}: ${z3.losses} vs unpipelined ${ref.losses}`);
      assert.ok(paramErr(z3.params, plain.params) < 1e-5, `${what}: parameters differ from pipeline x tensor`);
      assert.ok(paramErr(z3.params, ref.params) < 1e-4, `${what}: parameters differ from the unpipelined run`);
    }
  },
);

/** Per layer vs per stage on one state: losses over 2 steps, the programs' peak live bytes, the block gathers. */
function compare(tp: number) {
  const c = tinyJob(
    { data_parallel: 2, tensor_parallel: tp, pipeline_stages: 2, microbatches: 2, zero_stage: 3 },
    2,
    LAYERS,
  );
  const { model, mesh, opt, task, spec } = setupJob(c, 4 * tp);
  const params = initGpt(model, 0);
  const st0: ZeroPipelineTensorState =
    tp > 1
      ? zeroPipelineTensorShardState(params, opt, mesh, model, spec, 3)
      : zeroPipelineShardState(params, opt, mesh, 3);
  const make = tp > 1 ? makeGptZeroPipelineTensorStep : makeGptZeroPipelineStep;
  const batches = makeJobBatches(task, mesh, 8, 1);
  const bs = [batches.next(), batches.next()];
  const out = (["layer", "stage"] as const).map((gather) => {
    const step = make(model, opt, st0.layout, { stage: 3, microbatches: 2, gather });
    let st = st0; // arrays are immutable: both runs start from the same state
    const losses: number[] = [];
    for (const b of bs) {
      let l: Array;
      [l, st] = step(st, b.tokens, b.targets, b.mask);
      losses.push(l.item() as number);
    }
    const b = bs[0];
    const j = makeJaxpr((p: unknown, s: unknown) => {
      const [l, next] = step(
        { ...st0, params: p, optState: s } as ZeroPipelineTensorState,
        b.tokens,
        b.targets,
        b.mask,
      );
      return [l, next.params, next.optState];
    })(st0.params, st0.optState).jaxpr;
    const peak = Math.max(...deviceBodies(j).map(livePeak));
    const gathers = gatherBytes(j, ["data"]).concat(gatherBytes(j, ["model", "data"]));
    return { losses, peak, gathers, params: st.params };
  });
  // one layer's parameter bytes on one device before ZeRO (its model block of each block leaf)
  const L = st0.layout;
  const layerBytes = L.localShapes
    .filter((_, i) => L.group[i] !== 2)
    .reduce((a, sh) => a + (sh.reduce((x, y) => x * y, 1) / sh[0]) * 4, 0);
  return { layer: out[0], stage: out[1], layerBytes };
}

for (const tp of [1, 2])
  test(
    `ZeRO-3 x pipeline${tp > 1 ? " x tensor" : ""}: per-layer gathering holds less at its peak than per-stage`,
    { skip },
    () => {
      const { layer, stage, layerBytes } = compare(tp);
      assert.ok(relErr(layer.losses, stage.losses) < 1e-6, `${layer.losses} vs ${stage.losses}`);
      assert.ok(paramErr(layer.params, stage.params) < 1e-6);
      // per layer: no block gather is larger than one layer; per stage: one gathers the stage's 2 layers at once
      assert.ok(layer.gathers.length >= 2 && stage.gathers.length >= 1, "the block gathers were not found");
      const maxLayer = Math.max(...layer.gathers),
        maxStage = Math.max(...stage.gathers);
      assert.ok(maxLayer <= layerBytes, `per layer: a block gather of ${maxLayer} bytes, one layer is ~${layerBytes}`);
      assert.ok(maxStage >= 1.5 * layerBytes, `per stage: the largest block gather is ${maxStage} bytes`);
      assert.ok(
        layer.peak < stage.peak - 0.5 * layerBytes,
        `peak live bytes per device: per layer ${layer.peak}, per stage ${stage.peak} (a layer is ~${layerBytes})`,
      );
    },
  );
