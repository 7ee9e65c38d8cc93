/** @file Runtime devices: per-device buffers and their memory accounting (memoryStats), by device id. */
import { failedDependency, type PendingWrite } from "../core/array-impl.js";
import { config } from "../core/config.js";
import { allocate, itemsize, type DType, type TypedArray } from "../core/dtype.js";
import { OutOfMemoryError } from "../core/errors.js";
import { memoryTracking } from "../core/profile-events.js";
import { userSite } from "../core/source-site.js";

/** jax.Device.memory_stats(): bytes of the buffers the runtime holds for one device. */
export interface MemoryStats {
  bytesInUse: number;
  peakBytesInUse: number;
  numAllocs: number;
  /** Bytes of the largest buffer allocated. */
  largestAllocSize: number;
  /** The device's limit (setBytesLimit, else config deviceBytesLimit); absent when there is none. */
  bytesLimit?: number;
}

/** A live buffer as the memory profiler and out-of-memory errors describe it. */
export interface LiveBufferInfo {
  readonly device: number;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly bytes: number;
  readonly site?: string;
}

/**
 * A device allocation past the device's bytesLimit: names the device, the request, what is in use and the largest
 * live buffers. Raised before anything is allocated, so every array computed so far stays valid (free some, retry).
 */
export class DeviceOutOfMemoryError extends OutOfMemoryError {
  constructor(
    readonly device: number,
    readonly request: { dtype: DType; shape: readonly number[]; bytes: number },
    readonly bytesInUse: number,
    readonly bytesLimit: number,
    readonly largest: readonly LiveBufferInfo[],
  ) {
    super(
      `device ${device}`,
      [],
      request.bytes,
      `${request.dtype}[${request.shape.join(",")}] on device ${device}, which holds ${bytesInUse} of its bytesLimit ${bytesLimit} bytes; ` +
        `largest live buffers on device ${device}: ${largest.length ? largest.map(describeBuffer).join("; ") : "none tracked"}`,
    );
  }
}
function describeBuffer(b: LiveBufferInfo): string {
  return `${b.dtype}[${b.shape.join(",")}] ${b.bytes} B${b.site ? ` (created at ${b.site})` : ""}`;
}

/** A CPU device as the runtime sees it: an executor thread (native) and the buffers accounted to it. */
export class RuntimeDevice {
  readonly #stats: MemoryStats = { bytesInUse: 0, peakBytesInUse: 0, numAllocs: 0, largestAllocSize: 0 };
  /** Freed storage kept for reuse, by dtype and length (fresh pages cost a fault each on first write). */
  readonly #pool = new Map<string, TypedArray[]>();
  #pooledBytes = 0;
  #bytesLimit: number | undefined;
  /** Live buffers, kept while a limit applies or memory is profiled (weakly: a leaked buffer can still be collected). */
  readonly #live = new Set<WeakRef<DeviceBuffer>>();
  constructor(readonly id: number) {}
  /** This device's limit in bytes (null: back to config deviceBytesLimit). */
  setBytesLimit(bytes: number | null): void {
    if (bytes !== null && !(Number.isInteger(bytes) && bytes > 0))
      throw new RangeError(
        `RuntimeDevice(id=${this.id}).setBytesLimit: expected a positive integer number of bytes or null, got ${bytes}`,
      );
    this.#bytesLimit = bytes ?? undefined;
  }
  /** The limit in force (0 = none). */
  get bytesLimit(): number {
    return this.#bytesLimit ?? config.deviceBytesLimit;
  }
  /** The live buffers this device tracks (see #live), largest first. */
  liveBuffers(): LiveBufferInfo[] {
    const out: LiveBufferInfo[] = [];
    for (const r of this.#live) {
      const b = r.deref();
      if (!b || b.isFreed) {
        this.#live.delete(r);
        continue;
      }
      out.push({
        device: this.id,
        dtype: b.dtype,
        shape: b.shape,
        bytes: b.bytes,
        ...(b.site ? { site: b.site } : {}),
      });
    }
    return out.sort((a, b) => b.bytes - a.bytes);
  }
  /** @internal */ get tracking(): boolean {
    return this.bytesLimit > 0 || memoryTracking();
  }
  /** @internal */ track(b: DeviceBuffer): WeakRef<DeviceBuffer> {
    const r = new WeakRef(b);
    this.#live.add(r);
    return r;
  }
  /** @internal */ untrack(r: WeakRef<DeviceBuffer>): void {
    this.#live.delete(r);
  }
  /** @internal Throws DeviceOutOfMemoryError when `bytes` more would pass the limit. */
  reserve(dtype: DType, shape: readonly number[], bytes: number): void {
    const limit = this.bytesLimit;
    if (limit > 0 && this.#stats.bytesInUse + bytes > limit) {
      throw new DeviceOutOfMemoryError(
        this.id,
        { dtype, shape: [...shape], bytes },
        this.#stats.bytesInUse,
        limit,
        this.liveBuffers().slice(0, 5),
      );
    }
  }
  /** @internal */ take(dtype: DType, n: number): TypedArray | undefined {
    const list = this.#pool.get(`${dtype}:${n}`);
    const d = list?.pop();
    if (d) this.#pooledBytes -= n * itemsize(dtype);
    return d;
  }
  /** @internal */ give(dtype: DType, data: TypedArray): void {
    // keyed by element count as take() asks (a complex element spans two storage lanes)
    const bytes = data.byteLength;
    if (this.#pooledBytes + bytes > POOL_BYTES) return; // let the garbage collector have it
    const k = `${dtype}:${bytes / itemsize(dtype)}`;
    let list = this.#pool.get(k);
    if (!list) {
      list = [];
      this.#pool.set(k, list);
    }
    list.push(data);
    this.#pooledBytes += bytes;
  }
  /** Drops the storage kept for reuse. */
  trimPool(): void {
    this.#pool.clear();
    this.#pooledBytes = 0;
  }
  /** A copy of this device's memory counters. */
  memoryStats(): MemoryStats {
    const limit = this.bytesLimit;
    return limit > 0 ? { ...this.#stats, bytesLimit: limit } : { ...this.#stats };
  }
  /** @internal */ account(bytes: number): void {
    const s = this.#stats;
    s.bytesInUse += bytes;
    if (bytes > 0) {
      s.numAllocs++;
      s.largestAllocSize = Math.max(s.largestAllocSize, bytes);
      s.peakBytesInUse = Math.max(s.peakBytesInUse, s.bytesInUse);
    }
  }
  toString(): string {
    return `RuntimeDevice(id=${this.id})`;
  }
}

/** Bytes of freed buffers each device keeps for reuse. */
const POOL_BYTES = 256 << 20;

const registry = new Map<number, RuntimeDevice>();
/** The runtime device with this id (created on first use). */
export function runtimeDevice(id: number): RuntimeDevice {
  if (!Number.isInteger(id) || id < 0)
    throw new RangeError(`runtimeDevice: device id must be a non-negative integer, got ${id}`);
  let d = registry.get(id);
  if (!d) {
    d = new RuntimeDevice(id);
    registry.set(id, d);
  }
  return d;
}

/** Every runtime device created so far, by id. */
export function allRuntimeDevices(): RuntimeDevice[] {
  return [...registry.values()].sort((a, b) => a.id - b.id);
}

/** Bytes still accounted for buffers the garbage collector reclaimed without free() (a safety net, not the rule). */
const reclaim = new FinalizationRegistry<{
  device: RuntimeDevice;
  bytes: number;
  freed: { v: boolean };
  ref: WeakRef<DeviceBuffer> | null;
}>((h) => {
  if (!h.freed.v) h.device.account(-h.bytes);
  if (h.ref) h.device.untrack(h.ref);
});

/** A device program run that may still be in flight: the writer of its output buffers (core's PendingWrite, with its outcome). */
export interface PendingWork extends PendingWrite {
  /** The run's error once settled, or null. */
  readonly error: Error | null;
}
export { failedDependency };

/** Counters of block copies into device memory (tests check that placement copies only what it must). */
export interface TransferStats {
  /** Blocks copied into a device buffer (from host storage or from another buffer). */
  blocksCopied: number;
  bytesCopied: number;
  /** Of those, blocks copied from another device's buffer (a move between devices). */
  blocksMoved: number;
  /** Blocks a placement found already on the right device and reused without a copy. */
  blocksReused: number;
  /** Of bytesCopied, the bytes read from another device's buffer. */
  bytesMoved: number;
}
const transfers: TransferStats = { blocksCopied: 0, bytesCopied: 0, blocksMoved: 0, blocksReused: 0, bytesMoved: 0 };
/** A copy of the block-copy counters (monotonic; compare before/after). */
export function transferStats(): TransferStats {
  return { ...transfers };
}
/**
 * @internal Counts one block copy (`moved`: some of it from another device, `movedBytes` of it, all by default) or,
 * with bytes < 0, one reuse.
 */
export function countTransfer(bytes: number, moved = false, movedBytes = moved ? bytes : 0): void {
  if (bytes < 0) {
    transfers.blocksReused++;
    return;
  }
  transfers.blocksCopied++;
  transfers.bytesCopied += bytes;
  transfers.bytesMoved += movedBytes;
  if (moved) transfers.blocksMoved++;
}

/**
 * Memory owned by one device: a typed array whose bytes count towards the device's memoryStats until its last
 * reference is dropped. References: the creator's (free() drops it), retain() for each further owner (an array
 * sharing a block, an in-flight launch reading or writing it); storage goes back to the device only at zero, so a
 * running program never sees its memory reused.
 */
export class DeviceBuffer {
  readonly #freed = { v: false };
  #data: TypedArray | null;
  #refs = 1;
  /** The in-flight launch writing this buffer (null once it settled, or for host-written buffers). */
  #writer: PendingWork | null = null;
  readonly bytes: number;
  /** Where the user's code created it (recorded only while memory is profiled). */
  readonly site: string | undefined;
  readonly #ref: WeakRef<DeviceBuffer> | null;
  private constructor(
    readonly device: RuntimeDevice,
    readonly dtype: DType,
    readonly shape: readonly number[],
    data: TypedArray,
  ) {
    this.#data = data;
    this.bytes = data.byteLength;
    device.account(this.bytes);
    this.site = memoryTracking() ? userSite() : undefined;
    this.#ref = device.tracking ? device.track(this) : null;
    reclaim.register(this, { device, bytes: this.bytes, freed: this.#freed, ref: this.#ref }, this);
  }
  /** A zero-filled buffer of dtype and shape on `device`. */
  static alloc(device: RuntimeDevice, dtype: DType, shape: readonly number[]): DeviceBuffer {
    const b = DeviceBuffer.uninitialized(device, dtype, shape);
    (b.data as { fill(v: number | bigint): void }).fill(dtype === "int64" || dtype === "uint64" ? 0n : 0);
    return b;
  }
  /** A buffer whose contents are unspecified (the caller writes all of it: program outputs, copied blocks). */
  static uninitialized(device: RuntimeDevice, dtype: DType, shape: readonly number[]): DeviceBuffer {
    const n = shape.reduce((a, b) => a * b, 1);
    device.reserve(dtype, shape, n * itemsize(dtype));
    return new DeviceBuffer(device, dtype, shape, device.take(dtype, n) ?? allocate(dtype, n));
  }
  /** A copy of `src` (dtype's host storage) on `device` (counted by transferStats). */
  static copyOf(device: RuntimeDevice, dtype: DType, shape: readonly number[], src: TypedArray): DeviceBuffer {
    const b = DeviceBuffer.uninitialized(device, dtype, shape);
    (b.data as { set(a: ArrayLike<number | bigint>): void }).set(src as ArrayLike<number | bigint>);
    countTransfer(b.bytes);
    return b;
  }
  /** The storage (a pending launch may still be writing it: call ready() before reading it on the host). */
  get data(): TypedArray {
    if (!this.#data || this.#refs <= 0)
      throw new Error(
        `DeviceBuffer: use of a freed buffer (${this.dtype}[${this.shape.join(",")}] on device ${this.device.id})`,
      );
    return this.#data;
  }
  get isFreed(): boolean {
    return this.#data === null || this.#refs <= 0;
  }
  /** The launch still writing this buffer, or the failed launch that wrote it (its error stays with the buffer). */
  get writer(): PendingWork | null {
    if (this.#writer?.settled && !this.#writer.error) this.#writer = null;
    return this.#writer;
  }
  /** @internal Marks the buffer as an output of an in-flight launch. */
  setWriter(w: PendingWork | null): void {
    this.#writer = w;
  }
  /** Waits until no launch is writing this buffer (throws the launch's error); returns this. */
  ready(): this {
    this.writer?.wait();
    return this;
  }
  /** ready() without blocking the thread: resolves once no launch is writing this buffer, rejects with its error. */
  async whenReady(): Promise<this> {
    const w = this.writer;
    if (w?.ready) await w.ready();
    else w?.wait();
    return this;
  }
  /** Adds a reference (another owner, or an in-flight launch); each is dropped by free(). */
  retain(): this {
    if (this.isFreed)
      throw new Error(
        `DeviceBuffer.retain: the buffer was freed (${this.dtype}[${this.shape.join(",")}] on device ${this.device.id})`,
      );
    this.#refs++;
    return this;
  }
  /** Drops one reference; the last releases the storage (kept by the device for reuse) and its accounting. */
  free(): void {
    if (!this.#data) return;
    if (--this.#refs > 0) return;
    this.device.give(this.dtype, this.#data);
    this.#data = null;
    this.#freed.v = true;
    this.device.account(-this.bytes);
    if (this.#ref) this.device.untrack(this.#ref);
    reclaim.unregister(this);
  }
}
