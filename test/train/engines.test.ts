/**
 * @file The training job's engines on a tiny config (4 CPU devices, device runtime): ZeRO stages 1-3 give the losses
 * of stage 0, a 2-stage pipeline gives the unpipelined losses, the sharded batches equal the host-built ones, a ZeRO-3
 * checkpoint resumes at stage 3 and at stage 0, and bad combinations are refused by validation.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type JobOutput, prepareDevices, runJob, setupJob } from "../../src/train/job.js";
import { type TrainConfig, resolveConfig, validateConfig } from "../../src/train/config.js";
import { gptPipelineParamSpecs, makeGptPipelineStep, makeJobBatches } from "../../src/train/engines.js";
import { gptEdgeLayout, gptPipeSpecs } from "../../src/train/pipeline-edges.js";
import { placeOnMesh } from "../../src/train/checkpoint.js";
import { initGpt } from "../../src/models/gpt.js";
import { type Array, jit, numpy as jnp, type optim, tree } from "../../src/index.js";
import { flatten } from "../../src/core/tree.js";
import { NamedSharding, type PartitionSpec, PartitionSpecImpl } from "../../src/parallel/sharding.js";

const isSpec = (x: unknown): boolean => x instanceof PartitionSpecImpl;
import { AdditionTask } from "../../src/train/addition.js";
import { makeMesh } from "../../src/parallel/mesh.js";

prepareDevices(4);

const lines: string[] = [];
const quiet: JobOutput = { line: (s) => lines.push(s), bar: null };
const tmp = mkdtempSync(join(tmpdir(), "jaxts-engines-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
let runs = 0;

/** A tiny job (no gradient clipping unless `clip` is given). */
function tiny(ps: Partial<TrainConfig["parallel_strategy"]>, steps: number, layers = 1, clip = 0): TrainConfig {
  return resolveConfig({
    parallel_strategy: { tensor_parallel: 1, ...ps },
    sharding_spec: { embeddings: [null, null], attention: [null, null, null], mlp: [null, null] },
    model: { d_model: 16, heads: 2, layers, ff: 32 },
    optimizer: { lr: 1e-2, warmup: 2, clip },
    data: { digits: 2, batch_size: 8, held_out: 16 },
    run: { steps, eval_every: 1000, checkpoint_every: 1000, trace_steps: 0, predictions: 0 },
  });
}
function run(c: TrainConfig, opts: { resume?: string; stopAfter?: number; out?: string } = {}) {
  const ps = c.parallel_strategy;
  const out = opts.out ?? join(tmp, `run${runs++}`);
  return runJob(c, setupJob(c, ps.data_parallel * ps.tensor_parallel * ps.pipeline_stages), {
    out,
    output: quiet,
    ...opts,
  });
}
const relErr = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]) / Math.abs(b[i])));

test("ZeRO stages 1-3 on 4 devices give the losses of stage 0 (rtol 1e-5), and the memory report is printed", () => {
  const ref = run(tiny({ data_parallel: 4 }, 4));
  assert.equal(ref.losses.length, 4);
  for (const stage of [1, 2, 3]) {
    lines.length = 0;
    const z = run(tiny({ data_parallel: 4, zero_stage: stage }, 4));
    const err = relErr(z.losses, ref.losses);
    assert.ok(err < 1e-5, `stage ${stage}: max relative difference ${err} (${z.losses} vs ${ref.losses})`);
    assert.ok(lines.some((l) => l.includes(`ZeRO stage ${stage}`)));
    const mem = lines.find((l) => l.startsWith("memory per device"));
    assert.ok(mem && mem.split(", ").length === 4, String(mem));
    assert.equal(z.params.blocks.wq.shape.join(), ref.params.blocks.wq.shape.join());
  }
});

test("with gradient clipping that triggers, ZeRO stages 1 and 3 still give the losses of stage 0", () => {
  // the global norm under ZeRO sums every device's slice (optim's sharded-update context), so the clip matches
  const unclipped = run(tiny({ data_parallel: 4 }, 4));
  const ref = run(tiny({ data_parallel: 4 }, 4, 1, 0.05));
  assert.ok(relErr(ref.losses, unclipped.losses) > 1e-4, "the clip must change the run for this test to mean anything");
  for (const stage of [1, 3]) {
    const z = run(tiny({ data_parallel: 4, zero_stage: stage }, 4, 1, 0.05));
    const err = relErr(z.losses, ref.losses);
    assert.ok(err < 1e-5, `stage ${stage} with clip: max relative difference ${err} (${z.losses} vs ${ref.losses})`);
  }
});

test("a ZeRO-3 run resumes with the same losses, also at stage 0 (the checkpoint's optimizer state is full-shaped)", () => {
  const full = run(tiny({ data_parallel: 4, zero_stage: 3 }, 4));
  const dir = join(tmp, "zero-interrupted");
  run(tiny({ data_parallel: 4, zero_stage: 3 }, 4), { out: dir, stopAfter: 2 });
  const rest = run(tiny({ data_parallel: 4, zero_stage: 3 }, 4), { resume: dir });
  assert.ok(relErr(rest.losses, full.losses) < 1e-6, `${rest.losses} vs ${full.losses}`);
  const plain = run(tiny({ data_parallel: 4, zero_stage: 0 }, 4), { resume: dir });
  assert.ok(relErr(plain.losses, full.losses) < 1e-5, `${plain.losses} vs ${full.losses}`);
});

test("2 pipeline stages x 2 data shards give the unpipelined losses (1e-4)", () => {
  const ref = run(tiny({ data_parallel: 2 }, 3, 2));
  const pipe = run(tiny({ data_parallel: 2, pipeline_stages: 2, microbatches: 2 }, 3, 2));
  assert.equal(pipe.losses.length, 3);
  const err = relErr(pipe.losses, ref.losses);
  assert.ok(err < 1e-4, `max relative difference ${err} (${pipe.losses} vs ${ref.losses})`);
});

/** Bytes of a tree's shards per device id. */
function bytesPerDevice(t: unknown): Map<number, number> {
  const m = new Map<number, number>();
  for (const x of tree.leaves(t) as Array[])
    for (const s of x.addressableShards as { device: { id: number }; data: Array }[])
      m.set(s.device.id, (m.get(s.device.id) ?? 0) + s.data.size * 4);
  return m;
}

test("the pipelined job without ZeRO keeps every parameter and optimizer-state leaf on its stage across steps", () => {
  const c = tiny({ data_parallel: 1, pipeline_stages: 2, microbatches: 2 }, 2, 2);
  const setup = setupJob(c, 2);
  const r = runJob(c, setup, { out: join(tmp, `run${runs++}`), output: quiet });
  assert.ok(r.pipeline, "the job ran the per-stage layout");
  const { params, optState } = r.pipeline;
  const specs = gptPipeSpecs(setup.model, c.sharding_spec);
  const want = (flatten(specs, isSpec)[0] as PartitionSpec[]).map((s) => String(new NamedSharding(setup.mesh, s)));
  assert.deepEqual(
    (tree.leaves(params) as Array[]).map((x) => String(x.sharding)),
    want,
    "each parameter keeps its initial sharding (block layers and edge rows over 'pipe')",
  );
  // adamw's moments: every leaf shaped like a parameter sits where that parameter does
  const bySize = new Map((tree.leaves(params) as Array[]).map((x, i) => [x.shape.join(), want[i]]));
  const moments = (tree.leaves(optState) as Array[]).filter((x) => x.ndim > 0);
  assert.ok(moments.length >= 2 * want.length, `${moments.length} optimizer-state leaves`);
  for (const x of moments) assert.equal(String(x.sharding), bySize.get(x.shape.join()), `state leaf [${x.shape}]`);
  // per-device bytes: the block layers, the edge rows and their moments split evenly over both pipe devices
  for (const t of [params, moments]) {
    const per = bytesPerDevice(t);
    assert.deepEqual([...per.keys()].sort(), [0, 1]);
    assert.equal(per.get(0), per.get(1), `bytes per device ${[...per.entries()]}`);
  }
  // the embeddings only on stage 0's device, the final norm (and the tied embedding's copy) only on stage 1's
  const layout = gptEdgeLayout(setup.model, 2);
  const rows = (params.edges.addressableShards as { device: { id: number }; data: Array }[]).map((s) => s.data);
  const full = r.params;
  const wteWpe = jnp.concatenate([jnp.reshape(full.wte, [-1]), jnp.reshape(full.wpe, [-1])]);
  assert.deepEqual((jnp.reshape(rows[0], [-1]).tolist() as number[]).slice(0, wteWpe.size), wteWpe.tolist());
  assert.deepEqual(
    (jnp.reshape(rows[1], [-1]).tolist() as number[]).slice(0, 16),
    jnp.reshape(full.lnfg, [-1]).tolist(),
  );
  const outer = full.wte.size + full.wpe.size + full.lnfg.size + full.lnfb.size;
  assert.ok(layout.k < outer, `each device holds ${layout.k} edge values, not all ${outer} outer ones`);
});

test("the pipelined job's losses equal the previous engine's (embeddings and head outside the pipeline), 1e-4", () => {
  const c = tiny({ data_parallel: 2, pipeline_stages: 2, microbatches: 2, schedule: "1f1b" }, 3, 2, 1);
  const setup = setupJob(c, 4);
  const job = runJob(c, setup, { out: join(tmp, `run${runs++}`), output: quiet });
  const { model, mesh, opt, task } = setup;
  const step = jit(makeGptPipelineStep(model, opt, mesh, { microbatches: 2, schedule: "1f1b" }));
  let params = placeOnMesh(initGpt(model, c.run.seed), gptPipelineParamSpecs(model, c.sharding_spec), mesh);
  let state = opt.init(params) as optim.OptState;
  const batches = makeJobBatches(task, mesh, c.data.batch_size, 1);
  const old: number[] = [];
  for (let i = 0; i < 3; i++) {
    const b = batches.next();
    let l: Array;
    [l, params, state] = step(params, state, b.tokens, b.targets, b.mask);
    old.push(l.item() as number);
  }
  const err = relErr(job.losses, old);
  assert.ok(err < 1e-4, `max relative difference ${err} (${job.losses} vs ${old})`);
});

test("the job's sharded batches equal the host-built ones, prefetched or not", () => {
  const task = new AdditionTask(2, 0, 16);
  const mesh = makeMesh([2, 2], ["data", "model"]);
  const batches = makeJobBatches(task, mesh, 8, 5);
  for (let step = 5; step < 8; step++) {
    if (step === 6) batches.prefetch();
    const got = batches.next(),
      want = task.batch(task.trainProblems(step, 8));
    for (const k of ["tokens", "targets", "mask"] as const) {
      assert.deepEqual(got[k].tolist(), want[k].tolist(), `step ${step} ${k}`);
      assert.match(String(got[k].sharding), /data/);
    }
  }
});

test("bad combinations are refused with the keys and the fix", () => {
  const bad = (ps: Partial<TrainConfig["parallel_strategy"]>, re: RegExp, layers = 2) => {
    const c = tiny(ps, 1, layers);
    const p = c.parallel_strategy;
    assert.throws(() => validateConfig(c, { devices: p.data_parallel * p.tensor_parallel * p.pipeline_stages }), re);
  };
  // ZeRO-1/2/3 x pipeline is accepted (test/train/zero-pipeline.test.ts runs it; x tensor: configs/pipeline-zero3-tp.yaml)
  for (const zero_stage of [1, 2, 3]) {
    validateConfig(tiny({ data_parallel: 2, pipeline_stages: 2, zero_stage }, 1, 2), { devices: 4 });
  }
  // but not with overlap, which the pipeline's schedule cannot use
  bad(
    { data_parallel: 2, pipeline_stages: 2, zero_stage: 3, overlap: true },
    /parallel_strategy\.overlap: true has no effect here: .*pipeline_stages 2.*use pipeline_stages: 1/,
  );
  bad({ pipeline_stages: 2 }, /model\.layers \(3\) must be divisible by parallel_strategy\.pipeline_stages \(2\)/, 3);
  bad({ pipeline_stages: 2, microbatches: 3 }, /divisible by the 3 pipeline microbatches/);
  const c = tiny({ data_parallel: 4, zero_stage: 3 }, 1);
  c.sharding_spec.embeddings = ["data", null];
  assert.throws(() => validateConfig(c, { devices: 4 }), /sharding_spec\.embeddings.*ZeRO engine; use None/);
});
