/** @file profiler traces of a data-parallel training step on 4 devices: tracks per device, launch spans, compile/cache and transfer spans, steps. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
// each psum is its own traced collective (gradient bucketing would combine them: combine-collectives.test.ts)
config.update("collectiveCombineBytes", 0);
import {
  type Array,
  jit,
  lax,
  makeMesh,
  numpy as jnp,
  profiler,
  shardMap,
  sharding,
  valueAndGrad,
} from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { checkTraceSchema } from "./trace-events.js";
const { P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;

/** A linear-regression step: per-device loss and grads on a batch block, grads averaged with pmean over "data". */
function trainStep(mesh: ReturnType<typeof makeMesh>) {
  const local = (w: Array, x: Array, y: Array) => {
    const [loss, g] = valueAndGrad((w: Array) => jnp.mean(jnp.square(jnp.subtract(jnp.matmul(x, w), y))))(w) as [
      Array,
      Array,
    ];
    return [lax.pmean(loss, "data"), jnp.subtract(w, jnp.multiply(lax.pmean(g, "data"), 0.1))];
  };
  return jit(
    shardMap(local, { mesh, inSpecs: [P(), P("data"), P("data")], outSpecs: [P(), P()] }) as (
      w: Array,
      x: Array,
      y: Array,
    ) => Array[],
  );
}

test(
  "a sharded training step on 4 devices: one track per device, overlapping launch spans, collectives with their bytes, compile, cache hits, transfers and steps",
  { skip },
  () => {
    const mesh = makeMesh([4], ["data"]);
    const step = trainStep(mesh);
    const dir = mkdtempSync(join(tmpdir(), "jaxts-trace-"));
    let w = jnp.zeros([8, 2]);
    const x = jnp.reshape(jnp.arange(64 * 8, { dtype: "float32" }), [64, 8]);
    const y = jnp.ones([64, 2]);
    config.update("spmdRuntime", "devices");
    let path: string;
    try {
      profiler.startTrace(dir, { gzip: true });
      for (let i = 0; i < 3; i++) {
        using _ = new profiler.StepTraceAnnotation("train", { stepNum: i });
        const [loss, w1] = step(w, jnp.multiply(x, 1e-3), y);
        w = w1;
        loss.blockUntilReady(); // dispatch is asynchronous: the step ends when its loss is ready
      }
      path = profiler.stopTrace();
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
    assert.match(path, /\.trace\.json\.gz$/);
    const spans = checkTraceSchema(profiler.readTraceFile(path));
    const devSpans = spans.filter((e) => e.cat === "device");
    // 3 steps x 4 devices, each device on its own named track
    assert.equal(devSpans.length, 12);
    assert.deepEqual([...new Set(devSpans.map((e) => e.tid))].sort(), [100, 101, 102, 103]);
    for (let k = 0; k < 3; k++) {
      const launch = devSpans
        .filter((e) => e.args!.rank !== undefined)
        .sort((a, b) => a.ts - b.ts)
        .slice(4 * k, 4 * k + 4);
      assert.equal(new Set(launch.map((e) => e.tid)).size, 4, "the devices of one launch run on distinct tracks");
      assert.deepEqual(launch.map((e) => e.args!.rank).sort(), [0, 1, 2, 3]);
      // pmean makes every rank wait for the others: the four runs share an instant
      const lastStart = Math.max(...launch.map((e) => e.ts)),
        firstEnd = Math.min(...launch.map((e) => e.ts + e.dur!));
      assert.ok(lastStart <= firstEnd, `launch ${k}: the devices' spans overlap (${lastStart} <= ${firstEnd})`);
    }
    // each device ran four all-reduces per launch inside its run span: lax.pmean(v) is psum(v) / psum(fullLike(v, 1)),
    // two psums of v's size, for the loss (f32[], 4 B) and the gradient (f32[8,2], 64 B); wait + transfer = the span
    const colls = spans.filter((e) => e.cat === "collective");
    assert.equal(colls.length, 3 * 4 * 4);
    for (const c of colls) {
      const run = devSpans.find((d) => d.tid === c.tid && d.ts <= c.ts && c.ts + c.dur! <= d.ts + d.dur! + 1e-3);
      assert.ok(run, `collective ${c.name} at ${c.ts} lies inside a run of its device ${c.tid}`);
      assert.equal(c.args!.kind, "AllReduce");
      assert.equal(c.args!.group_size, 4);
      assert.ok(
        Math.abs((c.args!.wait_us as number) + (c.args!.transfer_us as number) - c.dur!) < 0.01,
        "wait + transfer = duration",
      );
    }
    for (let d = 0; d < 4; d++) {
      assert.deepEqual(
        colls
          .filter((c) => c.tid === 100 + d)
          .map((c) => c.args!.bytes)
          .sort((a, b) => Number(a) - Number(b)),
        [4, 4, 4, 4, 4, 4, 64, 64, 64, 64, 64, 64],
        `device ${d}: the loss (f32[]) and gradient (f32[8,2]) payloads`,
      );
    }
    // tracing and compilation once, then cache hits
    assert.equal(spans.filter((e) => e.cat === "tracing" && /^trace jit\(/.test(e.name)).length, 1);
    const compiles = spans.filter((e) => e.cat === "compile" && e.args?.cache !== "hit");
    assert.ok(compiles.length >= 1, "the jitted step was compiled");
    assert.equal(
      spans.filter((e) => e.cat === "compile" && e.args?.cache === "hit").length,
      2,
      "steps 2 and 3 reuse the traced program",
    );
    // the copies into the devices: w replicated to 4 devices (4 x 64 B) at step 0 only (later steps get the previous
    // step's w, resident with the sharding asked for), plus each step's x and y blocks (64x8 and 64x2 float32 in all)
    const h2d = spans.filter((e) => e.name === "copy host -> devices");
    assert.deepEqual(
      h2d.map((e) => e.args!.bytes),
      [4 * 8 * 2 * 4 + 64 * 8 * 4 + 64 * 2 * 4, 64 * 8 * 4 + 64 * 2 * 4, 64 * 8 * 4 + 64 * 2 * 4],
    );
    // outputs stay on the devices: nothing is assembled on the host
    assert.equal(spans.filter((e) => e.name === "copy devices -> host").length, 0);
    // steps on the steps track, each enclosing its jit call and its device runs
    const steps = spans.filter((e) => e.cat === "step");
    assert.deepEqual(
      steps.map((e) => e.args!.step_num),
      [0, 1, 2],
    );
    for (const s of steps) {
      const inside = devSpans.filter((e) => e.ts >= s.ts && e.ts + e.dur! <= s.ts + s.dur!);
      assert.equal(inside.length, 4, `step ${s.args!.step_num} encloses one launch`);
      assert.ok(
        spans.some((e) => e.cat === "jit" && e.ts >= s.ts && e.ts <= s.ts + s.dur!),
        "and the jit call",
      );
    }
  },
);
