/** @file Weight-update sharding (config spmdShardUpdates): exact against the unrewritten program and the emulation, visible in the collective counts. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
// the psums weight-update sharding rewrites are counted one by one: no gradient bucketing (combine-collectives.test.ts)
config.update("collectiveCombineBytes", 0);
import { type Array, grad, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import { deviceRuntimeUnavailable, lastLaunchTimeline } from "../../src/runtime/index.js";
import type { Mesh } from "../../src/parallel/mesh.js";
import { values } from "./device-compare.js";
import { perDeviceCounts } from "../helpers/per-device-program.js";
import { compileOptions } from "../../src/compiler/compile.js";
import { nativeGemmKernel } from "../../src/backends/onnx/ort-runtime.js";
const { P } = sharding;
type Spec = ReturnType<typeof P>;

const skip = deviceRuntimeUnavailable() ?? false;

/** Runs f(...args) eagerly with the runtime and flag given; the flat outputs' values (and whether it launched). */
function runWith(runtime: "emulation" | "devices", shard: boolean, f: (...a: Array[]) => Array[], args: Array[]) {
  config.update("spmdRuntime", runtime);
  config.update("spmdShardUpdates", shard);
  const before = lastLaunchTimeline();
  try {
    const outs = f(...args);
    return {
      vals: outs.map((o) => Float32Array.from(o.dataSync() as Float32Array)),
      launched: lastLaunchTimeline() !== before,
    };
  } finally {
    config.update("spmdRuntime", "emulation");
    config.update("spmdShardUpdates", false);
  }
}

/** The per-device program's header line under jit(f).lower(...).asText(): collective counts and what the pass did. */
function header(
  shard: boolean,
  f: (...a: Array[]) => Array[],
  args: Array[],
): { counts: Record<string, number>; line: string } {
  config.update("spmdRuntime", "devices");
  config.update("spmdShardUpdates", shard);
  try {
    const { counts, line } = perDeviceCounts(f, args);
    return { counts, line };
  } finally {
    config.update("spmdRuntime", "emulation");
    config.update("spmdShardUpdates", false);
  }
}

/** Sharded vs unsharded device runs bit for bit, both against the emulation within float32 rounding of the sums. */
function exact(what: string, f: (...a: Array[]) => Array[], args: Array[]): void {
  const on = runWith("devices", true, f, args),
    off = runWith("devices", false, f, args),
    emu = runWith("emulation", true, f, args);
  assert.ok(on.launched && off.launched, `${what}: ran on the devices`);
  assert.equal(on.vals.length, emu.vals.length);
  on.vals.forEach((v, k) => {
    assert.equal(v.length, off.vals[k].length, `${what}: output ${k} size`);
    for (let i = 0; i < v.length; i++) {
      assert.ok(Object.is(v[i], off.vals[k][i]), `${what}: output ${k}[${i}] ${v[i]} vs unrewritten ${off.vals[k][i]}`);
      const e = emu.vals[k][i];
      assert.ok(
        Math.abs(v[i] - e) <= 1e-5 * Math.max(1, Math.abs(e)),
        `${what}: output ${k}[${i}] ${v[i]} vs emulation ${e}`,
      );
    }
  });
}

/** A data-parallel SGD step of a 2-layer MLP: w1 [din, h] (large enough for a bucket of its own when din*h >= 65536). */
function sgdStep(mesh: Mesh, axis: string, pSpecs: Spec[], lr: number) {
  const loss = (p: Array[], x: Array, y: Array): Array => {
    const h = jnp.tanh(jnp.add(jnp.matmul(x, p[0]), p[1]));
    return jnp.mean(jnp.square(jnp.subtract(jnp.add(jnp.matmul(h, p[2]), p[3]), y)));
  };
  return shardMap(
    (p: Array[], x: Array, y: Array) => {
      const g = grad(loss)(p, x, y) as unknown as Array[];
      return p.map((w, i) => jnp.subtract(w, jnp.multiply(lax.psum(g[i], axis), lr)));
    },
    { mesh, inSpecs: [pSpecs, P(axis), P(axis)], outSpecs: pSpecs },
  ) as unknown as (...a: Array[]) => Array[];
}
const mlpArgs = (din: number, h: number, dout: number, batch: number): Array[] => [
  jnp.multiply(values([din, h], "float32"), 0.01),
  jnp.multiply(values([h], "float32"), 0.1),
  jnp.multiply(values([h, dout], "float32"), 0.01),
  jnp.multiply(values([dout], "float32"), 0.1),
  jnp.multiply(values([batch, din], "float32"), 0.1),
  jnp.multiply(values([batch, dout], "float32"), 0.1),
];
const asStep = (step: (...a: Array[]) => Array[]) => (w1: Array, b1: Array, w2: Array, b2: Array, x: Array, y: Array) =>
  step([w1, b1, w2, b2] as unknown as Array, x, y);

for (const n of [2, 3, 4]) {
  test(
    `an SGD step on ${n} devices: reduce-scatter + sharded update + all-gather, bit for bit the all-reduce program`,
    { skip },
    () => {
      const mesh = makeMesh([n], ["data"]);
      // w1 301x256 = 77,056 elements (own bucket, padded when n = 3); b1, w2, b2 share one bucket (padded)
      const f = asStep(sgdStep(mesh, "data", [P(), P(), P(), P()], 0.05));
      const args = mlpArgs(301, 256, 5, 6 * n);
      exact(`sgd n=${n}`, f, args);
      const on = header(true, f, args),
        off = header(false, f, args);
      assert.deepEqual(on.counts.AllReduce ?? 0, 0, on.line);
      assert.equal(on.counts.ReduceScatter, 2, on.line);
      assert.equal(on.counts.AllGather, 2, on.line);
      assert.match(on.line, /4 psums -> reduce-scatter \+ 8 update ops on 1\//);
      // unsharded, each psum and its update are one AllReduceEpilogue (compiler/collective-epilogues.ts) where
      // programs get jaxts.Fused nodes (a native GEMM kernel for this CPU)
      const fused = nativeGemmKernel() !== null && compileOptions.fuseInGraph;
      assert.equal(off.counts.AllReduceEpilogue ?? 0, fused ? 4 : 0, off.line);
      assert.equal(off.counts.AllReduce ?? 0, fused ? 0 : 4, off.line);
      assert.equal(off.counts.ReduceScatter ?? 0, 0, off.line);
      assert.match(off.line, /weight-update sharding: none/);
    },
  );
}

test(
  "an Adam-like update (moments replicated, sqrt and division) is sharded and exact; every updated value is gathered",
  { skip },
  () => {
    const mesh = makeMesh([2], ["data"]);
    const step = shardMap(
      (w: Array, m: Array, v: Array, x: Array) => {
        const g = lax.psum(jnp.multiply(x, jnp.sum(x)), "data");
        const m2 = jnp.add(jnp.multiply(m, 0.9), jnp.multiply(g, 0.1));
        const v2 = jnp.add(jnp.multiply(v, 0.999), jnp.multiply(jnp.square(g), 0.001));
        return [jnp.subtract(w, jnp.divide(jnp.multiply(m2, 0.01), jnp.add(jnp.sqrt(v2), 1e-8))), m2, v2];
      },
      { mesh, inSpecs: [P(), P(), P(), P("data")], outSpecs: [P(), P(), P()] },
    ) as unknown as (...a: Array[]) => Array[];
    const args = [
      values([7, 5], "float32"),
      jnp.multiply(values([7, 5], "float32"), 0.1),
      jnp.abs(values([7, 5], "float32")),
      values([14, 5], "float32"),
    ];
    exact("adam", step, args);
    const { counts, line } = header(true, step, args);
    assert.equal(counts.AllReduce ?? 0, 0, line);
    assert.equal(counts.ReduceScatter, 1, line);
    // w', m' and v' leave the update: one all-gather bucket of three pieces
    assert.equal(counts.AllGather, 1, line);
    assert.match(line, /1 psums -> .* \(2 buckets, 18 \/ 54 elements/);
  },
);

test(
  "on a data x model mesh a psum over data is sharded within each model group (ranks {0,2} and {1,3})",
  { skip },
  () => {
    const mesh = makeMesh([2, 2], ["data", "model"]);
    const f = asStep(sgdStep(mesh, "data", [P(), P(), P(), P()], 0.1));
    const args = mlpArgs(9, 8, 3, 8);
    exact("2x2", f, args);
    const { counts, line } = header(true, f, args);
    assert.equal(counts.AllReduce ?? 0, 0, line);
    assert.equal(counts.ReduceScatter, 1, line);
    assert.equal(counts.AllGather, 1, line);
  },
);

test("psums the pass must leave alone stay all-reduces (and the values stay those of the emulation)", { skip }, () => {
  const mesh = makeMesh([2], ["data"]);
  const cases: [string, (w: Array, x: Array) => Array[], Spec?][] = [
    // the update's other operand varies over the axis: a per-rank slice would mix ranks
    ["varying operand", (w, x) => [jnp.subtract(w, jnp.multiply(lax.psum(x, "data"), x))], P("data")],
    // no elementwise update: reduce-scatter + all-gather would only add a step
    ["psum to the output", (_w, x) => [lax.psum(x, "data")]],
    // clipping by the global norm: the scale depends on the psum result through a reduction
    [
      "norm-clipped update",
      (w, x) => {
        const g = lax.psum(x, "data");
        const scale = jnp.minimum(1, jnp.divide(1, jnp.sqrt(jnp.sum(jnp.square(g)))));
        return [jnp.subtract(w, jnp.multiply(g, scale))];
      },
    ],
  ];
  for (const [what, body, out] of cases) {
    const f = shardMap(body, { mesh, inSpecs: [P(), P("data")], outSpecs: [out ?? P()] }) as unknown as (
      ...a: Array[]
    ) => Array[];
    const args = [values([4, 6], "float32"), values([8, 6], "float32")];
    exact(what, f, args);
    const { counts, line } = header(true, f, args);
    assert.equal(counts.AllReduce, 1, `${what}: ${line}`);
    assert.equal(counts.ReduceScatter ?? 0, 0, `${what}: ${line}`);
    assert.match(line, /weight-update sharding: none/, what);
  }
});
