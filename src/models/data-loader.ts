/**
 * @file Sharded data loading: each device's block of a global batch comes from a generator asked only for that
 * block's rows (makeArrayFromCallback), and the next batch can be prepared while the dispatched step runs.
 */
import { type Array } from "../core/array.js";
import { Mesh } from "../parallel/mesh.js";
import { NamedSharding, P, type PartitionSpec, type Index } from "../parallel/sharding.js";
import { makeArrayFromCallback } from "../parallel/device-put.js";

/** Rows [start, stop) of the global batch for a step, one array per field (each [stop - start, ...]). */
export type BatchGenerator<T extends Record<string, Array>> = (step: number, rows: readonly [number, number]) => T;

export interface ShardedBatchOptions {
  /** Rows of the global batch (split along the first dimension as `spec` says). */
  globalBatch: number;
  /** How every field is laid out; only the first dimension may be split (default P("data")). */
  spec?: PartitionSpec;
}

/** Batches of a generator laid out over a mesh; `next()` returns step k's batch, `prefetch()` builds step k+1's. */
export interface ShardedBatches<T extends Record<string, Array>> {
  /** The batch of the current step (the prefetched one when there is one), then the step advances. */
  next(): T;
  /** Builds the next step's batch now (call it after dispatching a step: the devices compute meanwhile). */
  prefetch(): void;
  /** The step whose batch next() returns. */
  readonly step: number;
}

/**
 * Sharded batches: for each step, each distinct block of the batch (per the sharding of `spec` over `mesh`) is asked
 * from `generator(step, [start, stop))` once, and the fields become resident arrays with that sharding (devices
 * along an axis the spec does not name share the same rows, so the generator is asked once for them).
 */
export function makeShardedBatches<T extends Record<string, Array>>(
  generator: BatchGenerator<T>,
  mesh: Mesh,
  opts: ShardedBatchOptions,
): ShardedBatches<T> {
  const fn = "makeShardedBatches";
  if (typeof generator !== "function")
    throw new TypeError(`${fn}: expected a generator (step, [start, stop]) => fields`);
  if (!(mesh instanceof Mesh)) throw new TypeError(`${fn}: expected a Mesh (from makeMesh), got ${String(mesh)}`);
  const B = opts?.globalBatch;
  if (!Number.isInteger(B) || B < 1) throw new RangeError(`${fn}: globalBatch must be a positive integer, got ${B}`);
  const spec = opts.spec ?? P("data");
  for (let d = 1; d < spec.length; d++)
    if (spec.names(d).length)
      throw new Error(`${fn}: spec ${spec.toString()} splits dimension ${d}; only the batch dimension may be split`);
  const sharding = NamedSharding(mesh, spec);
  const rowShards = spec.names(0).reduce((a, n) => a * mesh.axisSize(n), 1);
  if (B % rowShards !== 0)
    throw new Error(
      `${fn}: globalBatch ${B} is not divisible by the ${rowShards} shards of spec ${spec.toString()} over ${mesh.toString()}`,
    );

  const build = (step: number): T => {
    const cache = new Map<string, T>();
    const rowsOf = (index: Index): [number, number] => index[0];
    const fields = (rows: [number, number]): T => {
      const k = `${rows[0]}:${rows[1]}`;
      let f = cache.get(k);
      if (!f) {
        f = generator(step, rows);
        for (const [name, a] of Object.entries(f))
          if (a.shape[0] !== rows[1] - rows[0])
            throw new Error(
              `${fn}: generator field ${JSON.stringify(name)} has ${a.shape[0]} rows (${a.dtype}[${a.shape.join(",")}]) for rows [${rows[0]}, ${rows[1]}) of step ${step}; expected ${rows[1] - rows[0]}`,
            );
        cache.set(k, f);
      }
      return f;
    };
    // the first block tells the fields and their per-row shapes
    const probe = NamedSharding(mesh, P(spec.entries[0] ?? null));
    const first = fields(rowsOf([...probe.devicesIndicesMap([B]).values()][0]));
    const out: Record<string, Array> = {};
    for (const [name, a] of Object.entries(first)) {
      const shape = [B, ...a.shape.slice(1)];
      out[name] = makeArrayFromCallback(shape, sharding, (index) => fields(rowsOf(index))[name]);
    }
    return out as T;
  };

  let step = 0;
  let ready: T | null = null;
  return {
    next(): T {
      const b = ready ?? build(step);
      ready = null;
      step++;
      return b;
    },
    prefetch(): void {
      ready ??= build(step);
    },
    get step() {
      return step;
    },
  };
}
