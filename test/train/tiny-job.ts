/**
 * @file The tiny training jobs the parallel-training tests share: a 2-layer GPT config, runJob in a temporary folder,
 * loss and parameter differences, per-device bytes of a state, and the peak live bytes of a step's per-device programs.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Array } from "../../src/core/array.js";
import { ClosedJaxpr, Jaxpr, Literal, type Var } from "../../src/core/jaxpr.js";
import { itemsize } from "../../src/core/dtype.js";
import { flatten } from "../../src/core/tree.js";
import type { Shard } from "../../src/parallel/device-put.js";
import { type JobOutput, runJob, setupJob } from "../../src/train/job.js";
import { type TrainConfig, resolveConfig } from "../../src/train/config.js";

export const MEGATRON = { embeddings: [null, null], attention: [null, "model", null], mlp: [null, "model"] };
export const NONE = { embeddings: [null, null], attention: [null, null, null], mlp: [null, null] };

/**
 * A tiny job: d_model 16, 2 heads, batch 8, `layers` layers (default 2); clip 0.05 triggers (the global norm crosses
 * devices). The sharding spec is Megatron's when tensor_parallel > 1, else none.
 */
export function tinyJob(
  ps: Partial<TrainConfig["parallel_strategy"]>,
  steps: number,
  opts: { layers?: number; spec?: typeof MEGATRON } = {},
): TrainConfig {
  return resolveConfig({
    parallel_strategy: { data_parallel: 1, tensor_parallel: 1, ...ps },
    sharding_spec: opts.spec ?? ((ps.tensor_parallel ?? 1) > 1 ? MEGATRON : NONE),
    model: { d_model: 16, heads: 2, layers: opts.layers ?? 2, ff: 32 },
    optimizer: { lr: 1e-2, warmup: 2, clip: 0.05 },
    data: { digits: 2, batch_size: 8, held_out: 16 },
    run: { steps, eval_every: 1000, checkpoint_every: 1000, trace_steps: 0, predictions: 0 },
  });
}

/** runJob on as many devices as the config's mesh has, in a fresh folder under one temporary folder per test file. */
export function jobRunner(prefix: string, output: JobOutput = { line: () => {}, bar: null }) {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
  let runs = 0;
  const run = (c: TrainConfig, opts: { resume?: string; stopAfter?: number; out?: string } = {}) => {
    const ps = c.parallel_strategy;
    return runJob(c, setupJob(c, ps.data_parallel * ps.tensor_parallel * ps.pipeline_stages), {
      out: opts.out ?? join(tmp, `run${runs++}`),
      output,
      ...opts,
    });
  };
  return { tmp, run };
}

/** The largest relative difference of two loss curves. */
export const relErr = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]) / Math.abs(b[i])));

/** The largest |a - b| over every parameter leaf. */
export function paramErr(a: unknown, b: unknown): number {
  const [la] = flatten(a),
    [lb] = flatten(b);
  assert.equal(la.length, lb.length);
  return Math.max(
    ...la.map((x, i) => {
      const u = [(x as Array).tolist()].flat(Infinity) as number[],
        v = [(lb[i] as Array).tolist()].flat(Infinity) as number[];
      assert.equal(u.length, v.length);
      return Math.max(...u.map((e, j) => Math.abs(e - v[j])));
    }),
  );
}

/** Bytes each device holds of a tree's arrays (float32 and int32 leaves only). */
export function bytesPerDevice(tree: unknown): Map<number, number> {
  const m = new Map<number, number>();
  for (const leaf of flatten(tree)[0] as Array[])
    for (const s of leaf.addressableShards as Shard[]) m.set(s.device.id, (m.get(s.device.id) ?? 0) + s.data.size * 4);
  return m;
}

const bytesOf = (v: { aval: { shape: readonly number[]; dtype: string } }) =>
  v.aval.shape.reduce((a, b) => a * b, 1) * itemsize(v.aval.dtype as never);
/** The bodies of an equation (scan, pjit, checkpoint, ...; a shard_map's per-device body is traced on demand). */
const nested = (params: Record<string, unknown>): Jaxpr[] =>
  Object.entries(params)
    .flatMap(([k, p]) => {
      if (k === "body" && typeof p === "function") {
        const b = (p as () => { jaxpr: Jaxpr } | string)();
        assert.ok(typeof b !== "string", `a shard_map body could not be traced per device: ${String(b)}`);
        return [b.jaxpr];
      }
      return globalThis.Array.isArray(p) ? p : [p];
    })
    .flatMap((q) => (q instanceof Jaxpr ? [q] : q instanceof ClosedJaxpr ? [q.jaxpr] : []));

/**
 * Peak live bytes of a program: arguments, then each value until its last use; an equation with bodies (scan,
 * checkpoint, ...) adds its largest body's peak beyond that body's own arguments while it runs.
 */
export function livePeak(j: Jaxpr): number {
  const last = new Map<Var, number>();
  j.eqns.forEach((e, i) => e.inputs.forEach((a) => !(a instanceof Literal) && last.set(a, i)));
  j.outvars.forEach((a) => !(a instanceof Literal) && last.set(a, j.eqns.length));
  const args = [...j.constvars, ...j.invars];
  let live = args.reduce((a, v) => a + bytesOf(v), 0);
  let peak = live;
  const dying = new Map<number, number>();
  for (const v of args) dying.set(last.get(v) ?? -1, (dying.get(last.get(v) ?? -1) ?? 0) + bytesOf(v));
  j.eqns.forEach((e, i) => {
    const inner = nested(e.params).map(
      (b) => livePeak(b) - [...b.constvars, ...b.invars].reduce((a, v) => a + bytesOf(v), 0),
    );
    for (const v of e.outVars) {
      live += bytesOf(v);
      const l = last.get(v) ?? i;
      dying.set(l, (dying.get(l) ?? 0) + bytesOf(v));
    }
    peak = Math.max(peak, live + Math.max(0, ...inner));
    live -= dying.get(i) ?? 0;
  });
  return peak;
}

/** Every shard_map body (per-device program) in a jaxpr, nested ones included. */
export function deviceBodies(j: Jaxpr): Jaxpr[] {
  return j.eqns.flatMap((e) => {
    const bodies = nested(e.params);
    return [...(e.primitive.name === "shard_map" ? bodies : []), ...bodies.flatMap(deviceBodies)];
  });
}

/** all_gather results (per-device bytes) over exactly `axes` in a jaxpr's per-device programs. */
export function gatherBytes(j: Jaxpr, axes: string[]): number[] {
  const out: number[] = [];
  const walk = (jx: Jaxpr, inDevice: boolean): void => {
    for (const e of jx.eqns) {
      const a = e.params.axis_name ?? e.params.axes;
      const names = a === undefined || a === null ? [] : typeof a === "string" ? [a] : [...(a as string[])];
      if (inDevice && e.primitive.name === "all_gather" && names.join() === axes.join())
        out.push(...e.outVars.map(bytesOf));
      for (const b of nested(e.params)) walk(b, inDevice || e.primitive.name === "shard_map");
    }
  };
  walk(j, false);
  return out;
}
