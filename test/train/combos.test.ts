/**
 * @file Every combination of the job's parallelism on 4 CPU devices (device runtime) against the 1-device job:
 * ZeRO stages 1-3 x tensor parallel, pipeline x tensor parallel, the 1F1B schedule (= GPipe), and one run resumed
 * across stages and meshes
 * (ZeRO-3 x TP on 2x2, then ZeRO-1 on 4x1, then pipeline x data) giving the uninterrupted losses.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { prepareDevices } from "../../src/train/job.js";
import { jobRunner, relErr, tinyJob } from "./tiny-job.js";

prepareDevices(4);

const lines: string[] = [];
const { tmp, run } = jobRunner("jaxts-combos-", { line: (s) => lines.push(s), bar: null });
const tiny = tinyJob;
const ref = run(tiny({}, 4));

test("ZeRO stages 1-3 x 2-way tensor parallel on a 2x2 mesh give the 1-device losses (1e-4)", () => {
  for (const stage of [1, 2, 3]) {
    lines.length = 0;
    const z = run(tiny({ data_parallel: 2, tensor_parallel: 2, zero_stage: stage }, 4));
    const err = relErr(z.losses, ref.losses);
    assert.ok(err < 1e-4, `stage ${stage}: max relative difference ${err} (${z.losses} vs ${ref.losses})`);
    assert.ok(lines.some((l) => l.includes(`mesh 2x2 (data x model)`) && l.includes(`ZeRO stage ${stage}`)));
  }
});

test("2 pipeline stages x 2-way tensor parallel give the 1-device losses (1e-4)", () => {
  const pt = run(tiny({ tensor_parallel: 2, pipeline_stages: 2, microbatches: 2 }, 4));
  const err = relErr(pt.losses, ref.losses);
  assert.ok(err < 1e-4, `max relative difference ${err} (${pt.losses} vs ${ref.losses})`);
});

test("the 1F1B schedule gives GPipe's losses, with data and with tensor parallelism (1e-4)", () => {
  for (const ps of [
    { data_parallel: 2, pipeline_stages: 2, microbatches: 4 },
    { tensor_parallel: 2, pipeline_stages: 2, microbatches: 4 },
  ]) {
    const gpipe = run(tiny(ps, 4));
    lines.length = 0;
    const f = run(tiny({ ...ps, schedule: "1f1b" }, 4));
    assert.ok(
      lines.some((l) => l.includes("2 pipeline stages x 4 microbatches (1f1b)")),
      lines.join("\n"),
    );
    assert.ok(relErr(f.losses, gpipe.losses) < 1e-4, `${JSON.stringify(ps)}: ${f.losses} vs GPipe ${gpipe.losses}`);
    assert.ok(relErr(f.losses, ref.losses) < 1e-4, `${JSON.stringify(ps)}: ${f.losses} vs 1 device ${ref.losses}`);
  }
});

test("a run resumed across ZeRO stages and meshes gives the uninterrupted losses (1e-4)", () => {
  const a = join(tmp, "zero3-tp"),
    b = join(tmp, "zero1-dp");
  run(tiny({ data_parallel: 2, tensor_parallel: 2, zero_stage: 3 }, 6), { out: a, stopAfter: 2 });
  lines.length = 0;
  run(tiny({ data_parallel: 4, zero_stage: 1 }, 6), { resume: a, out: b, stopAfter: 2 });
  assert.ok(
    lines.some((l) => /written at ZeRO stage 3, resharded to stage 1/.test(l)),
    lines.join("\n"),
  );
  const last = run(tiny({ data_parallel: 2, pipeline_stages: 2 }, 6), { resume: b });
  const full = run(tiny({}, 6));
  assert.equal(last.losses.length, 6);
  const err = relErr(last.losses, full.losses);
  assert.ok(err < 1e-4, `max relative difference ${err} (${last.losses} vs ${full.losses})`);
});
