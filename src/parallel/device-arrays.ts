/**
 * @file Arrays resident on the device runtime: a NamedSharding's blocks held in one DeviceBuffer per mesh device
 * (ShardedStorage, the external storage of an ArrayImpl), placement of host or sharded arrays onto a sharding
 * (copying only the blocks that are not already on their device), and the host assembly of the global value.
 */
import { Array } from "../core/array.js";
import { ArrayImpl, type Device, type ExternalStorage } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { config } from "../core/config.js";
import { type TypedArray, allocate, itemsize, lanes } from "../core/dtype.js";
import { stridesOf } from "../core/shape.js";
import {
  type BlockCopy,
  copyBlocks,
  countTransfer,
  DEVICE_DTYPES,
  DeviceBuffer,
  deviceRuntimeUnavailable,
  resolvedSpmdRuntime,
  runtimeDevice,
  type RuntimeDevice,
} from "../runtime/index.js";
import { type Index, NamedShardingImpl, type PartitionSpecImpl } from "./sharding.js";

const JSArray = globalThis.Array;

/**
 * Copies the region `size` (row-major) from `src` (shape sshape) at origin `so` into `dst` (shape dshape) at `dOrigin`.
 * A block's offset is sum_d (origin_d + i_d) * stride_d; rows along the last dim are contiguous in both. `lanes`:
 * storage slots per element (complex: 2, its interleaved (re, im)).
 */
export function copyRegion(
  src: TypedArray,
  sshape: readonly number[],
  so: readonly number[],
  dst: TypedArray,
  dshape: readonly number[],
  dOrigin: readonly number[],
  size: readonly number[],
  lanes = 1,
): void {
  const r = size.length;
  if (r === 0) {
    for (let l = 0; l < lanes; l++) dst[l] = src[l];
    return;
  }
  if (size.some((n) => n === 0)) return;
  const ss = stridesOf(sshape),
    ds = stridesOf(dshape);
  const inner = size[r - 1] * lanes;
  const outer = size.slice(0, r - 1).reduce((a, b) => a * b, 1);
  const c = new JSArray<number>(r - 1).fill(0);
  for (let o = 0; o < outer; o++) {
    let s = so[r - 1],
      d = dOrigin[r - 1];
    for (let k = 0; k < r - 1; k++) {
      s += (so[k] + c[k]) * ss[k];
      d += (dOrigin[k] + c[k]) * ds[k];
    }
    (dst as Float64Array).set((src as Float64Array).subarray(s * lanes, s * lanes + inner), d * lanes);
    for (let k = r - 2; k >= 0; k--) {
      if (++c[k] < size[k]) break;
      c[k] = 0;
    }
  }
}

const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((v, i) => v === b[i]);
const sameIndex = (a: Index, b: Index) =>
  a.length === b.length && a.every(([s, e], d) => s === b[d][0] && e === b[d][1]);
const contains = (outer: Index, inner: Index) => inner.every(([s, e], d) => s >= outer[d][0] && e <= outer[d][1]);

/** The intersection of two boxes, or null when empty. */
function intersect(a: Index, b: Index): Index | null {
  const out: Index = a.map(([s, e], d) => [Math.max(s, b[d][0]), Math.min(e, b[d][1])] as [number, number]);
  return out.some(([s, e]) => s >= e) ? null : out;
}
/** For each distinct source block overlapping `ix`: the position of one holder (on `dev` when one is, else the first). */
function overlapHolders(src: ShardedStorage, ix: Index, dev: RuntimeDevice): number[] {
  const pick: number[] = [];
  for (let j = 0; j < src.buffers.length; j++) {
    if (!intersect(src.indices[j], ix)) continue;
    const p = pick.findIndex((q) => sameIndex(src.indices[q], src.indices[j]));
    if (p < 0) pick.push(j);
    else if (src.buffers[j].device === dev && src.buffers[pick[p]].device !== dev) pick[p] = j;
  }
  return pick;
}

/** Spec entries as lists of axis names, trailing replicated dims dropped (P("x") and P("x", null) are one sharding). */
function normSpec(spec: PartitionSpecImpl, rank: number): string {
  // memoized per spec object and rank (a PartitionSpec is immutable)
  let byRank = normSpecs.get(spec);
  if (!byRank) normSpecs.set(spec, (byRank = []));
  return (byRank[rank] ??= normSpecText(spec, rank));
}
const normSpecs = new WeakMap<PartitionSpecImpl, string[]>();
function normSpecText(spec: PartitionSpecImpl, rank: number): string {
  const e: string[][] = [];
  for (let d = 0; d < Math.max(rank, spec.length); d++) e.push(spec.names(d));
  while (e.length && e[e.length - 1].length === 0) e.pop();
  return JSON.stringify(e);
}
/** Whether two NamedShardings place every block of a rank-`rank` array on the same device. */
export function sameSharding(a: NamedShardingImpl, b: NamedShardingImpl, rank: number): boolean {
  return (
    a === b ||
    (a.mesh === b.mesh && a.spec === b.spec) ||
    (same(a.mesh.deviceIds, b.mesh.deviceIds) &&
      same(a.mesh.dims, b.mesh.dims) &&
      a.mesh.axisNames.join() === b.mesh.axisNames.join() &&
      normSpec(a.spec, rank) === normSpec(b.spec, rank))
  );
}

/** Values equal, NaN equal to NaN (the replicated-output check). */
function sameData(a: TypedArray, b: TypedArray): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(a[i] !== a[i] && b[i] !== b[i])) return false;
  return true;
}

/** The replicated-output check of a shardMap output, run when its value is first waited for. */
export interface ReplicaCheck {
  fn: string;
}

/** Each device's block index under a sharding, by global shape (memoized: every output of a compiled call asks). */
const indexMemo = new WeakMap<NamedShardingImpl, Map<string, readonly Index[]>>();
function blockIndices(sharding: NamedShardingImpl, shape: readonly number[]): readonly Index[] {
  let m = indexMemo.get(sharding);
  if (!m) indexMemo.set(sharding, (m = new Map()));
  const key = shape.join(",");
  let ix = m.get(key);
  if (!ix) m.set(key, (ix = [...sharding.devicesIndicesMap(shape).values()]));
  return ix;
}

/**
 * One DeviceBuffer per device of the sharding's mesh (flat mesh order) holding that device's block; devices holding
 * the same block (replicas) each hold their own copy. The assembled host value is cached (the array is immutable and
 * eager code reads it repeatedly); it is dropped with the buffers on free().
 */
export class ShardedStorage implements ExternalStorage {
  #host: TypedArray | null = null;
  #freed = false;
  #check: ReplicaCheck | null;
  #shards: ArrayImpl[] | null = null;
  readonly indices: readonly Index[];
  constructor(
    readonly sharding: NamedShardingImpl,
    readonly aval: ShapedArray,
    readonly buffers: readonly DeviceBuffer[],
    check: ReplicaCheck | null = null,
  ) {
    this.indices = blockIndices(sharding, aval.shape);
    this.#check = check;
  }
  get isFreed(): boolean {
    return this.#freed;
  }
  #live(what: string): void {
    if (this.#freed)
      throw new Error(`Array.${what}: use of a disposed sharded array ${this.aval.str()} (${this.sharding})`);
  }
  wait(): void {
    this.#live("blockUntilReady");
    for (const b of this.buffers) b.ready();
    const c = this.#check;
    if (c) {
      // replicas must agree: compare each device's block with the first device holding the same block
      const m = this.sharding.mesh;
      this.buffers.forEach((b, k) => {
        const rep = this.indices.findIndex((ix) => sameIndex(ix, this.indices[k]));
        if (rep === k || sameData(b.data, this.buffers[rep].data)) return;
        const ck = m.coords(k),
          cr = m.coords(rep);
        const axis = m.axisNames.find((_, a) => ck[a] !== cr[a]) ?? m.axisNames[0];
        throw new Error(
          `${c.fn}: an output is declared replicated over mesh axis ${JSON.stringify(axis)} by its out_specs, but it varies over that axis; use a collective (e.g. psum over ${JSON.stringify(axis)}) or name the axis in out_specs`,
        );
      });
      this.#check = null;
    }
  }
  /** wait() without blocking the thread: every device's buffer, then the replica check (which then waits no more). */
  async whenReady(): Promise<void> {
    this.#live("ready");
    await Promise.all(this.buffers.map((b) => b.whenReady()));
    this.wait();
  }
  read(): TypedArray {
    if (this.#host) return this.#host;
    this.wait();
    const shape = this.aval.shape;
    const bshape = this.sharding.shardShape(shape);
    const g = allocate(this.aval.dtype, this.aval.size);
    const done: Index[] = [];
    this.buffers.forEach((b, k) => {
      const ix = this.indices[k];
      if (done.some((d) => sameIndex(d, ix))) return;
      done.push(ix);
      copyRegion(
        b.data,
        bshape,
        bshape.map(() => 0),
        g,
        shape,
        ix.map((r) => r[0]),
        bshape,
        lanes(this.aval.dtype),
      );
    });
    this.#host = g;
    return g;
  }
  /** The per-device arrays of addressableShards (views of the buffers, disposed with this storage). */
  shardArrays(devices: readonly Device[]): ArrayImpl[] {
    this.#live("addressableShards");
    const bshape = this.sharding.shardShape(this.aval.shape);
    this.#shards ??= this.buffers.map(
      (b, k) =>
        new ArrayImpl(
          new ShapedArray(bshape, this.aval.dtype, this.aval.weakType),
          new BufferView(b, this),
          devices[k],
        ),
    );
    return this.#shards;
  }
  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    this.#host = null;
    for (const b of this.buffers) b.free();
  }
}

/**
 * One device's block of a sharded (or, in global-arrays.ts, a process-local global) array as an array's storage:
 * reads the buffer itself (no copy); owns nothing. `kind` names the owner in the use-after-dispose error.
 */
export class BufferView implements ExternalStorage {
  constructor(
    readonly buffer: DeviceBuffer,
    readonly owner: { readonly isFreed: boolean },
    readonly kind = "sharded",
  ) {}
  /** read() is the device buffer itself, reused once the owner is disposed: arrays made from it copy it. */
  readonly borrowed = true;
  read(): TypedArray {
    if (this.owner.isFreed)
      throw new Error(
        `Array: use of a shard of a disposed ${this.kind} array (${this.buffer.dtype}[${this.buffer.shape.join(",")}] on device ${this.buffer.device.id})`,
      );
    return this.buffer.ready().data;
  }
  wait(): void {
    this.buffer.ready();
  }
  async whenReady(): Promise<void> {
    await this.buffer.whenReady();
  }
  free(): void {}
}

/** The ShardedStorage behind an array, or null. */
export function shardedStorage(x: Array): ShardedStorage | null {
  const e = x instanceof ArrayImpl ? x.external : null;
  return e instanceof ShardedStorage ? e : null;
}

/** Why arrays cannot be resident on devices now (another spmdRuntime, no addon, a dtype), or null. */
export function residentUnavailable(dtype: ShapedArray["dtype"]): string | null {
  if (resolvedSpmdRuntime() !== "devices")
    return `spmdRuntime ${JSON.stringify(config.spmdRuntime)} runs the emulation`;
  if (!DEVICE_DTYPES.has(dtype)) return `dtype ${dtype} is not supported by the device runtime`;
  return deviceRuntimeUnavailable();
}

/**
 * The blocks of x laid out per `target` (one buffer per mesh device, each with one reference for the caller). A block
 * already on its device with the same index is shared (retained, counted as reused); one contained in a block of x's
 * current shards is copied from there (preferring the same device; another device's is a move); otherwise it is
 * copied from x's host value. The copies run as one native op on the destination devices' executors after the
 * sources' producers (no wait here: the buffers are pending until then), or on this thread without the native op.
 */
export function placeBlocks(x: ArrayImpl, target: NamedShardingImpl): DeviceBuffer[] {
  const shape = x.shape;
  const bshape = target.shardShape(shape);
  const zero = bshape.map(() => 0);
  const indices = [...target.devicesIndicesMap(shape).values()];
  const src = shardedStorage(x);
  const devs = target.mesh.flatDevices;
  const srcBshape = src ? src.sharding.shardShape(shape) : null;
  const copies: BlockCopy[] = [];
  const out: DeviceBuffer[] = [];
  try {
    for (let k = 0; k < indices.length; k++) {
      const ix = indices[k];
      const dev = runtimeDevice(devs[k].id);
      let best = -1;
      if (src && srcBshape) {
        let reuse: DeviceBuffer | null = null;
        for (let j = 0; j < src.buffers.length; j++) {
          if (!contains(src.indices[j], ix)) continue;
          if (src.buffers[j].device === dev) {
            if (sameIndex(src.indices[j], ix)) {
              reuse = src.buffers[j];
              break;
            }
            best = j;
          } else if (best < 0) best = j;
        }
        if (reuse) {
          countTransfer(-1);
          out.push(reuse.retain());
          continue;
        }
      }
      const b = DeviceBuffer.uninitialized(dev, x.dtype, bshape);
      out.push(b);
      if (src && srcBshape && best >= 0) {
        const from = src.buffers[best];
        const o = src.indices[best];
        copies.push({
          src: from,
          srcShape: srcBshape,
          srcOrigin: ix.map((r, d) => r[0] - o[d][0]),
          dst: b,
          dstOrigin: zero,
          size: bshape,
        });
        countTransfer(b.bytes, from.device !== dev);
      } else if (src && srcBshape) {
        // pieced together from the source blocks it overlaps (one holder each, this device's when it has one)
        let movedBytes = 0;
        for (const j of overlapHolders(src, ix, dev)) {
          const o = src.indices[j],
            part = intersect(o, ix)!;
          const from = src.buffers[j];
          const size = part.map(([a, e]) => e - a);
          copies.push({
            src: from,
            srcShape: srcBshape,
            srcOrigin: part.map((r, d) => r[0] - o[d][0]),
            dst: b,
            dstOrigin: part.map((r, d) => r[0] - ix[d][0]),
            size,
          });
          if (from.device !== dev) movedBytes += itemsize(x.dtype) * size.reduce((p, q) => p * q, 1);
        }
        countTransfer(b.bytes, movedBytes > 0, movedBytes);
      } else {
        copies.push({
          src: x.buffer,
          srcShape: shape,
          srcOrigin: ix.map((r) => r[0]),
          dst: b,
          dstOrigin: zero,
          size: bshape,
        });
        countTransfer(b.bytes);
      }
    }
    copyBlocks(copies);
  } catch (e) {
    // past a device's bytesLimit: nothing allocated for this placement stays accounted
    for (const b of out) b.free();
    throw e;
  }
  return out;
}

/** x as an array resident per `target`: x itself when it already has that sharding, else a new array (x is unchanged). */
export function placeOnDevices(x: ArrayImpl, target: NamedShardingImpl): ArrayImpl {
  const src = shardedStorage(x);
  if (src && sameSharding(src.sharding, target, x.ndim)) return x;
  const buffers = placeBlocks(x, target);
  return residentArray(x.aval, target, buffers);
}

/** An array over `buffers` (their references pass to it) with `sharding` as its placement. */
export function residentArray(
  aval: ShapedArray,
  sharding: NamedShardingImpl,
  buffers: DeviceBuffer[],
  check: ReplicaCheck | null = null,
): ArrayImpl {
  const out = new ArrayImpl(aval, new ShardedStorage(sharding, aval, buffers, check), sharding.mesh.flatDevices[0]);
  out.placement = sharding;
  return out;
}
