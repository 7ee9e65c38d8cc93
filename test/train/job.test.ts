/**
 * @file The training job end to end with a tiny model on CPU devices (spmdRuntime "devices"): the loss goes down,
 * runs are deterministic, a 1x1 and a 2x2 mesh agree, a resumed run continues with the same losses, a checkpoint
 * loads onto another mesh (resharded), and the outputs (checkpoint, loss.svg, metrics, trace) are written.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type JobOutput, prepareDevices, runJob, setupJob } from "../../src/train/job.js";
import { type TrainConfig, resolveConfig } from "../../src/train/config.js";
import { loadTrainState, placeOnMesh } from "../../src/train/checkpoint.js";
import { gptParamSpecs } from "../../src/models/gpt.js";
import { NamedShardingImpl } from "../../src/parallel/sharding.js";
import { config } from "../../src/core/config.js";

// an explicit runtime choice survives prepareDevices; "auto" (the default) becomes the device runtime
config.update("spmdRuntime", "emulation");
prepareDevices(4);
assert.equal(config.spmdRuntime, "emulation", "prepareDevices kept the user's explicit emulation");
config.update("spmdRuntime", "auto");
prepareDevices(4);
assert.equal(config.spmdRuntime, "devices", "prepareDevices resolved auto to the device runtime");

const quiet: JobOutput = { line: () => {}, bar: null };
const tmp = mkdtempSync(join(tmpdir(), "jaxts-train-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
let runs = 0;

/** A tiny job: 2-digit addition, d_model 16, one layer, batch 8. */
function tiny(dp: number, tp: number, steps: number, extra: Partial<TrainConfig["run"]> = {}): TrainConfig {
  return resolveConfig({
    parallel_strategy: { data_parallel: dp, tensor_parallel: tp },
    model: { d_model: 16, heads: 2, layers: 1, ff: 32 },
    optimizer: { lr: 1e-2, warmup: 2 },
    data: { digits: 2, batch_size: 8, held_out: 16 },
    run: { steps, eval_every: 1000, checkpoint_every: 1000, trace_steps: 0, predictions: 0, ...extra },
  });
}
function run(c: TrainConfig, opts: { resume?: string; stopAfter?: number; out?: string } = {}) {
  const ps = c.parallel_strategy;
  const out = opts.out ?? join(tmp, `run${runs++}`);
  return runJob(c, setupJob(c, ps.data_parallel * ps.tensor_parallel), { out, output: quiet, ...opts });
}
const relErr = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]) / Math.abs(b[i])));

test("two runs on the same 2x2 mesh give identical losses, and the loss goes down", () => {
  const a = run(tiny(2, 2, 8)),
    b = run(tiny(2, 2, 8));
  assert.equal(a.losses.length, 8);
  assert.deepEqual(a.losses, b.losses);
  assert.ok(a.losses[7] < a.losses[0] - 0.1, `loss ${a.losses[0]} -> ${a.losses[7]}`);
});

test("the first 50 losses on a 1x1 mesh and on the 2x2 mesh agree within 1e-4 relative", () => {
  const one = run(tiny(1, 1, 50)),
    four = run(tiny(2, 2, 50));
  assert.equal(one.losses.length, 50);
  const err = relErr(four.losses, one.losses);
  assert.ok(err < 1e-4, `max relative difference ${err}`);
  assert.ok(one.losses[49] < one.losses[0] * 0.7, `loss ${one.losses[0]} -> ${one.losses[49]}`);
});

test("a resumed run continues with the same losses as an uninterrupted one; another mesh reshards the checkpoint", () => {
  const full = run(tiny(2, 2, 6));
  const dir = join(tmp, "interrupted");
  const first = run(tiny(2, 2, 6), { stopAfter: 3, out: dir });
  assert.equal(first.losses.length, 3);
  assert.equal(first.finalAccuracy, null); // stopped early: no final evaluation
  const resumed = run(tiny(2, 2, 6), { resume: dir });
  assert.deepEqual(resumed.losses, full.losses);
  // the saved state has the step and the losses so far
  const c = tiny(2, 2, 6);
  const s = setupJob(c, 4);
  const ck = loadTrainState(dir, resumed.params, s.opt.init(resumed.params));
  assert.equal(ck.step, 3);
  assert.deepEqual(ck.losses, full.losses.slice(0, 3));
  // onto a 4x1 mesh with FSDP-style storage (embeddings and attention's d_model over 'data', gathered before use):
  // the same losses up to float rounding, and each device holds its block of the new layout
  const fsdp = tiny(4, 1, 6);
  fsdp.sharding_spec = { embeddings: ["data", null], attention: ["data", "model", null], mlp: [null, "model"] };
  const moved = run(fsdp, { resume: dir });
  assert.ok(relErr(moved.losses, full.losses) < 1e-4, `${moved.losses} vs ${full.losses}`);
  const s4 = setupJob(fsdp, 4);
  const loaded = loadTrainState(dir, resumed.params, s4.opt.init(resumed.params));
  const placed = placeOnMesh(loaded.params, gptParamSpecs(s4.model, s4.spec), s4.mesh);
  const wte = placed.wte;
  assert.ok(wte.sharding instanceof NamedShardingImpl, `wte is placed on the mesh (${String(wte.sharding)})`);
  assert.deepEqual(wte.sharding.mesh.shape, { data: 4, model: 1 });
  assert.deepEqual(wte.shape, [16, 16]);
  assert.deepEqual(
    (wte.addressableShards as { data: { shape: number[] } }[]).map((sh) => sh.data.shape),
    [0, 1, 2, 3].map(() => [4, 16]),
  );
  assert.deepEqual(wte.tolist(), loaded.params.wte.tolist());
});

test("the job writes the checkpoint, loss.svg, metrics.json and a profiler trace, and evaluates on held-out problems", () => {
  const out = join(tmp, "outputs");
  const lines: string[] = [];
  const r = runJob(tiny(2, 2, 4, { trace_steps: 2, eval_every: 2, predictions: 3 }), setupJob(tiny(2, 2, 4), 4), {
    out,
    output: { line: (s) => lines.push(s), bar: null },
  });
  for (const f of ["checkpoint.safetensors", "loss.svg", "metrics.json"]) assert.ok(existsSync(join(out, f)), f);
  const traces = readdirSync(join(out, "trace"), { recursive: true }).map(String);
  assert.ok(
    traces.some((f) => /\.trace\.json(\.gz)?$/.test(f)),
    `a trace file in ${traces}`,
  );
  const svg = readFileSync(join(out, "loss.svg"), "utf8");
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.equal((svg.match(/<polyline/g) ?? []).length, 1);
  const m = JSON.parse(readFileSync(join(out, "metrics.json"), "utf8")) as { losses: number[]; evals: unknown[] };
  assert.deepEqual(m.losses, r.losses);
  assert.equal(r.evals.length, 2); // step 2 and the final one
  assert.ok(r.finalAccuracy !== null && r.finalAccuracy >= 0 && r.finalAccuracy <= 1);
  assert.ok(
    lines.some((l) => /^final held-out exact match: [\d.]+% of 16 problems never seen in training$/.test(l)),
    lines.join("\n"),
  );
  // three predictions: "ab+cd=sum" and ok or the expected answer
  assert.equal(
    lines.filter((l) => /^ {2}\d\d\+\d\d=\d{3} {2}(ok|\(expected \d{3}\))$/.test(l)).length,
    3,
    lines.join("\n"),
  );
});
