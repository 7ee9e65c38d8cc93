/** @file calibrateAutoShard(): measures autoShard's machine constants (matmul rate, bandwidth, psum) on the device runtime. */
import { checkOptions } from "../core/check-args.js";
import type { Array } from "../core/array.js";
import { config } from "../core/config.js";
import * as ops from "../primitives/bind-ops.js";
import { deviceRuntimeUnavailable } from "../runtime/index.js";
import type { MachineModel } from "./auto-shard-cost.js";
import { psum } from "./collectives.js";
import { makeMesh } from "./mesh.js";
import { devicePut } from "./device-put.js";
import { shardMap } from "./shard-map.js";
import { NamedShardingImpl, PartitionSpecImpl } from "./sharding.js";

export interface CalibrateOpts {
  /** Devices the collectives run over (default 2; at most config.numCpuDevices). */
  devices?: number;
  /** Timed repetitions per measurement (the fastest is taken; default 9). */
  repeats?: number;
}

/** Fastest of `repeats` calls after two warm-up calls (the least disturbed by other load on a shared host). */
function bestSeconds(f: () => void, repeats: number): number {
  f();
  f();
  const ts: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    f();
    ts.push((performance.now() - t) / 1e3);
  }
  return Math.min(...ts);
}

/**
 * Measures the constants of autoShard's cost model on the device runtime (spmdRuntime "devices", each device one
 * ORT session): a 512 x 512 x 512 matmul per device (FLOP rate), a 4 MiB elementwise add (memory bandwidth), a psum
 * of a scalar (latency, over an identity program) and a psum of 4 MiB (bandwidth: 2(n-1)/n * bytes / time).
 * Pass the result as `autoShard(f, { mesh, machine })`.
 */
export function calibrateAutoShard(opts?: CalibrateOpts): MachineModel {
  const fn = "calibrateAutoShard";
  checkOptions(fn, opts, ["devices", "repeats"]);
  const n = opts?.devices ?? 2,
    reps = opts?.repeats ?? 9;
  if (!Number.isInteger(n) || n < 2 || n > config.numCpuDevices)
    throw new RangeError(`${fn}: devices must be an integer in [2, ${config.numCpuDevices}] (numCpuDevices), got ${n}`);
  if (!Number.isInteger(reps) || reps < 1)
    throw new RangeError(`${fn}: repeats must be a positive integer, got ${reps}`);
  const why = deviceRuntimeUnavailable();
  if (why) throw new Error(`${fn}: the device runtime is unavailable (${why})`);
  const saved = config.spmdRuntime;
  config.update("spmdRuntime", "devices");
  try {
    const mesh = makeMesh([n], ["i"]);
    const split = new NamedShardingImpl(mesh, new PartitionSpecImpl("i"));
    const inSpecs = [new PartitionSpecImpl("i"), new PartitionSpecImpl("i")];
    const outSpecs = new PartitionSpecImpl("i");
    const run = (f: (a: Array, b: Array) => Array, a: Array, b: Array) => () => {
      shardMap(f, { mesh, inSpecs, outSpecs })(a, b).blockUntilReady();
    };
    const put = (shape: number[]) => devicePut(ops.full(shape, 1, "float32"), split) as Array;
    // FLOP rate: one 512^3 matmul per device (2 * 512^3 FLOPs)
    const k = 512;
    const a = put([n * k, k]),
      b = put([n * k, k]);
    const mm = (x: Array, y: Array) =>
      ops.dotGeneral(x, y, [
        [[1], [1]],
        [[], []],
      ]);
    const tMatmul = bestSeconds(run(mm, a, b), reps);
    // bandwidth: an add of two 4 MiB blocks (reads 8 MiB, writes 4 MiB)
    const len = 1 << 20;
    const u = put([n * len]),
      v = put([n * len]);
    const tAdd = bestSeconds(run(ops.add, u, v), reps);
    // psum: a chain of 8 (each result halved and reduced again) against the same chain without the psums, for a
    // scalar (latency) and for 4 MiB (bandwidth)
    const chain = (reduce: boolean) => (x: Array) => {
      let y = x;
      for (let i = 0; i < 8; i++)
        y = ops.mul(reduce ? (psum(y, "i") as Array) : ops.neg(y), ops.full([], 0.5, "float32"));
      return y;
    };
    const s = put([n]);
    const per = (x: Array) =>
      Math.max((bestSeconds(run(chain(true), x, x), reps) - bestSeconds(run(chain(false), x, x), reps)) / 8, 1e-7);
    const latency = per(s);
    const tBig = per(u);
    const moved = (2 * (n - 1) * 4 * len) / n;
    return {
      flopsPerSecond: (2 * k * k * k) / tMatmul,
      memoryBytesPerSecond: (12 * len) / tAdd,
      collectiveLatencySeconds: latency,
      collectiveBytesPerSecond: moved / Math.max(tBig - latency, 1e-7),
    };
  } finally {
    config.update("spmdRuntime", saved);
  }
}
