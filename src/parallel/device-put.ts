/**
 * @file devicePut, makeArrayFromCallback and the Array sharding accessors
 * (x.sharding, x.addressableShards, x.isFullyReplicated). With spmdRuntime "devices" a NamedSharding's blocks are
 * copied into per-device buffers (./device-arrays.ts); otherwise placement is recorded as metadata and every device's
 * block is a slice computed on read.
 */
import { checkArity } from "../core/check-args.js";
import { Array, registerShardingHooks } from "../core/array.js";
import { ArrayImpl, type Device, HOST_DEVICE } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { allocate, itemsize, lanes } from "../core/dtype.js";
import { monotonicUs, profiling, reportSpan } from "../core/profile-events.js";
import { Tracer } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { unflatten } from "../core/tree.js";
import { flattenArrays } from "../transforms/api-util.js";
import { Mesh } from "./mesh.js";
import { copyRegion, placeOnDevices, residentUnavailable, shardedStorage } from "./device-arrays.js";
import { globalFromCallback, globalStorage, isFullyAddressable, reshardError, setPlacer } from "./global-arrays.js";
import { reshardGlobal } from "./reshard-processes.js";
import {
  type Index,
  NamedShardingImpl,
  PartitionSpecImpl,
  type Sharding,
  SingleDeviceShardingImpl,
} from "./sharding.js";

export interface Shard {
  device: Device;
  index: Index;
  replicaId: number;
  data: Array;
}

const shardingOf = (x: Array): Sharding => {
  if (x instanceof ArrayImpl && x.placement) return x.placement as Sharding;
  return new SingleDeviceShardingImpl(x instanceof ArrayImpl ? x.device : HOST_DEVICE);
};
function blockOf(x: Array, index: Index): Array {
  return ops.slice(
    x,
    index.map((r) => r[0]),
    index.map((r) => r[1]),
  );
}
function shardsOf(x: Array): Shard[] {
  // an array spanning processes: this process's shards only
  const g = globalStorage(x);
  if (g) return g.shards();
  const st = shardedStorage(x);
  if (st) {
    const devs = st.sharding.mesh.flatDevices,
      reps = st.sharding.replicaIds(),
      data = st.shardArrays(devs);
    return devs.map((device, k) => ({ device, index: st.indices[k], replicaId: reps[k], data: data[k] }));
  }
  const s = shardingOf(x);
  const idx = s.devicesIndicesMap(x.shape);
  const reps = s instanceof NamedShardingImpl ? s.replicaIds() : [0];
  return [...idx.entries()].map(([device, index], k) => ({
    device,
    index,
    replicaId: reps[k] ?? 0,
    data: blockOf(x, index),
  }));
}
registerShardingHooks({
  sharding: shardingOf,
  addressableShards: shardsOf,
  isFullyReplicated: (x) => shardingOf(x).isFullyReplicated,
});

function toSharding(fn: string, d: Device | Sharding): Sharding {
  if (d instanceof NamedShardingImpl || d instanceof SingleDeviceShardingImpl) return d;
  if (d && typeof d === "object" && "platform" in d && "id" in d) return new SingleDeviceShardingImpl(d as Device);
  throw new TypeError(`${fn}: expected a Device or a Sharding, got ${String(d)}`);
}

/** jax.device_put(x, deviceOrSharding): the same values placed as described (inside jit: a sharding constraint). */
export function devicePut<T>(x: T, where?: Device | Sharding): T {
  checkArity("devicePut", arguments, 2, "devicePut(x, deviceOrSharding?)");
  if (where === undefined) return x;
  const s = toSharding("devicePut", where);
  const place = (a: unknown): unknown => {
    if (a instanceof Tracer) return a;
    if (!(a instanceof ArrayImpl)) return a;
    const g = globalStorage(a);
    if (g) {
      // another layout over the same devices: blocks move within and between processes (reshard-processes.ts)
      if (s instanceof NamedShardingImpl) return reshardGlobal("devicePut", a, g, s);
      throw reshardError("devicePut", "the argument", g, s);
    }
    const t0 = profiling() ? monotonicUs() : 0;
    s.shardShape(a.shape); // validates divisibility and rank with a clear error
    if (s instanceof NamedShardingImpl && residentUnavailable(a.dtype) === null) return placeOnDevices(a, s);
    const out = new ArrayImpl(a.aval, a.shareableBuffer, s instanceof SingleDeviceShardingImpl ? s.device : a.device);
    out.placement = s;
    if (t0)
      reportSpan({
        name: "devicePut",
        cat: "transfer",
        start: t0,
        end: monotonicUs(),
        track: "transfers",
        args: { array: a.aval.str(), bytes: a.size * itemsize(a.dtype), to: String(s) },
      });
    return out;
  };
  if (x instanceof Array) return place(x) as T;
  if (globalThis.Array.isArray(x)) return x.map(place) as T;
  return place(x) as T;
}

setPlacer((x, s) => devicePut(x, s));

/** jax.make_array_from_callback(shape, sharding, cb): cb(index) returns each device's block (called once per distinct block). */
export function makeArrayFromCallback(
  shape: readonly number[],
  s: Sharding,
  cb: (index: Index) => Array | number[] | number,
): Array {
  const idx = s.devicesIndicesMap(shape);
  const blockShape = s.shardShape(shape);
  const blockOfCb = (index: Index): ArrayImpl => {
    const r = cb(index);
    const blk = (r instanceof Array ? r : ops.reshape(fromNested(r), blockShape)) as ArrayImpl;
    if (blk.shape.join() !== blockShape.join())
      throw new Error(
        `makeArrayFromCallback: the callback returned shape (${blk.shape.join(", ")}) for index ${JSON.stringify(index)}, expected the block shape (${blockShape.join(", ")})`,
      );
    return blk;
  };
  // a mesh spanning processes: the callback runs for this process's devices only, whose blocks stay on them
  if (s instanceof NamedShardingImpl && !isFullyAddressable(s)) return globalFromCallback(shape, s, blockOfCb);
  const n = shape.reduce((a, b) => a * b, 1);
  let g: ArrayImpl | null = null;
  const done = new Set<string>();
  for (const index of idx.values()) {
    const key = JSON.stringify(index);
    if (done.has(key)) continue;
    done.add(key);
    const blk = blockOfCb(index);
    g ??= new ArrayImpl(new ShapedArray(shape, blk.dtype), allocate(blk.dtype, n));
    if (blk.dtype !== g.dtype)
      throw new TypeError(
        `makeArrayFromCallback: the callback returned ${blk.dtype} for index ${JSON.stringify(index)}, and ${g.dtype} before (every block must have one dtype)`,
      );
    // the block's storage copied into the global row-major buffer (every dtype exactly; complex as its (re, im) lanes)
    copyRegion(
      blk.buffer,
      blockShape,
      blockShape.map(() => 0),
      g.buffer,
      shape,
      index.map((r) => r[0]),
      blockShape,
      lanes(blk.dtype),
    );
  }
  const out = g ?? new ArrayImpl(new ShapedArray(shape, "float32"), new Float32Array(n));
  if (s instanceof NamedShardingImpl && residentUnavailable(out.dtype) === null) return placeOnDevices(out, s);
  out.placement = s;
  return out;
}
function fromNested(r: number[] | number): Array {
  const flat = typeof r === "number" ? [r] : (r.flat(Infinity as 1) as number[]);
  return new ArrayImpl(new ShapedArray([flat.length], "float32"), Float32Array.from(flat));
}

/** arr.addressable_data(i): the i-th device's block. */
export const addressableData = (x: Array, i: number): Array => shardsOf(x)[i].data;

const isDevice = (d: unknown): d is Device => !!d && typeof d === "object" && "platform" in d && "id" in d;
function checkDevices(fn: string, devs: readonly Device[]): void {
  if (!globalThis.Array.isArray(devs) || devs.length === 0)
    throw new Error(`${fn}: devices must be a non-empty list of Device objects (from devices())`);
  devs.forEach((d, i) => {
    if (!isDevice(d))
      throw new TypeError(`${fn}: devices[${i}] is ${typeof d} ${JSON.stringify(d)}; expected a Device from devices()`);
  });
}
/** A one-axis mesh over `devs` and the sharding that splits a new leading axis across it (JAX's internal axis names). */
const leadingSharding = (devs: readonly Device[], axis: string) =>
  new NamedShardingImpl(new Mesh([...devs], [axis]), new PartitionSpecImpl(axis));

/**
 * jax.device_put_sharded(shards, devices): the shards (arrays or identical pytrees of them) stacked along a new
 * leading axis, shard i on devices[i] (NamedSharding over a one-axis mesh of `devices`).
 */
export function devicePutSharded<T>(shards: readonly T[], devs: readonly Device[]): T {
  const fn = "devicePutSharded";
  if (!globalThis.Array.isArray(shards))
    throw new TypeError(`${fn}: shards must be a list (one entry per device), got ${typeof shards}`);
  checkDevices(fn, devs);
  if (shards.length !== devs.length)
    throw new Error(`${fn}: len(shards) = ${shards.length} must equal len(devices) = ${devs.length}`);
  const flat = shards.map((s) => flattenArrays(fn, s, "shard"));
  const def = flat[0][1];
  flat.forEach(([, d], i) => {
    if (!d.equals(def)) throw new TypeError(`${fn}: shard ${i} has tree structure ${d} but shard 0 has ${def}`);
  });
  const sharding = leadingSharding(devs, "_device_put_sharded");
  const leaves = flat[0][0].map((_, k) => {
    const xs = flat.map(([ls]) => ls[k]);
    xs.forEach((x, i) => {
      if (x.dtype !== xs[0].dtype || x.shape.join() !== xs[0].shape.join())
        throw new Error(
          `${fn}: the shards must have consistent shape and dtype, but shard 0 is ${xs[0].dtype}[${xs[0].shape.join(",")}] and shard ${i} is ${x.dtype}[${x.shape.join(",")}]`,
        );
    });
    return devicePut(
      ops.concatenate(
        xs.map((x) => ops.expandDims(x, [0])),
        0,
      ),
      sharding,
    );
  });
  return unflatten(def, leaves) as T;
}

/** jax.device_put_replicated(x, devices): x (or each leaf) broadcast along a new leading axis, slice i on devices[i]. */
export function devicePutReplicated<T>(x: T, devs: readonly Device[]): T {
  const fn = "devicePutReplicated";
  checkDevices(fn, devs);
  const [ls, def] = flattenArrays(fn, x, "argument");
  const sharding = leadingSharding(devs, "_device_put_replicated");
  return unflatten(
    def,
    ls.map((l) => devicePut(ops.broadcastBatch(l, devs.length, 0), sharding)),
  ) as T;
}
