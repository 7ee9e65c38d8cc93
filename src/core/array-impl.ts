/** @file ArrayImpl: a concrete array backed by host storage or by storage held elsewhere (per-device buffers). */
import { Array } from "./array.js";
import { ShapedArray } from "./aval.js";
import { type Complex, type DType, type TypedArray, isBigInt, isComplex, isFloat, lanes } from "./dtype.js";
import { readNumber } from "./convert.js";
import { formatArray } from "./format.js";
import { type Shape, prod } from "./shape.js";

/** jax.Device.memory_stats(): bytes of the runtime buffers accounted to one device. */
export interface DeviceMemoryStats {
  bytesInUse: number;
  peakBytesInUse: number;
  numAllocs: number;
  largestAllocSize: number;
  /** The device's limit, when one is set. */
  bytesLimit?: number;
}
let memoryStatsOf: ((id: number) => DeviceMemoryStats) | null = null;
/** Set by the parallel layer: where Device.memoryStats() reads the device runtime's counters (core cannot import it). */
export function setDeviceMemoryStats(f: (id: number) => DeviceMemoryStats): void {
  memoryStatsOf = f;
}
function statsOf(id: number): DeviceMemoryStats {
  if (!memoryStatsOf)
    throw new Error(`Device.memoryStats: the device runtime is not loaded (import "jaxts"), device ${id}`);
  return memoryStatsOf(id);
}

/** A compute device: an executor of the device runtime with its own memory; device 0 is also the host's default. */
export interface Device {
  readonly id: number;
  readonly platform: string;
  readonly deviceKind: string;
  readonly processIndex: number;
  /** The bytes of runtime buffers this device holds now, at peak, its allocations and its limit (jax.Device.memory_stats()). */
  memoryStats(): DeviceMemoryStats;
  toString(): string;
}
export const HOST_DEVICE: Device = {
  id: 0,
  platform: "cpu",
  deviceKind: "cpu",
  processIndex: 0,
  memoryStats: () => statsOf(0),
  toString: () => "CpuDevice(id=0)",
};

/**
 * Storage of an array whose value lives outside the host TypedArray (e.g. one buffer per device, possibly still being
 * written by a running device program). The owner decides whether `read` caches the assembled host value.
 */
export interface ExternalStorage {
  /** The global value in row-major host storage (waits for pending work; throws its error). */
  read(): TypedArray;
  /** Waits for pending work (throws its error). */
  wait(): void;
  /** wait() without blocking the thread: resolves once pending work finished, rejects with its error (absent: wait()). */
  whenReady?(): Promise<void>;
  /** Releases what this storage owns (idempotent). */
  free(): void;
  /** Whether read() returns memory this storage only borrows (a device buffer reused once its owner is disposed). */
  readonly borrowed?: boolean;
}

/**
 * A run that may still be writing an array's host storage (an execution backend's asynchronous dispatch): reading the
 * value waits for it; a failed run's error is raised at every read.
 */
export interface PendingWrite {
  /** Whether the run finished (its outcome is known). */
  readonly settled: boolean;
  /** Waits for the run (blocking the thread); throws its error. */
  wait(): void;
  /** wait() without blocking the thread (absent: wait()). */
  ready?(): Promise<void>;
  /** Calls `f` once the run settled (at once when it has): storage it reads or writes is recycled only then. */
  afterSettle?(f: () => void): void;
}

/**
 * Waits for each of `deps` in order and returns the first failure as a new Error with `describe(its message)`, or
 * null: work that read an output of a failed run computed on garbage and fails with that cause.
 */
export function failedDependency(deps: readonly PendingWrite[], describe: (cause: string) => string): Error | null {
  for (const d of deps) {
    try {
      d.wait();
    } catch (e) {
      return new Error(describe((e as Error).message));
    }
  }
  return null;
}

export class ArrayImpl extends Array {
  /** Called with the storage an array gives up in dispose() (an execution backend may recycle it). */
  static releaseHook: ((a: ArrayImpl, data: TypedArray) => void) | null = null;
  /** Called with every new array while the memory profiler tracks live arrays (null otherwise: one test per array). */
  static createHook: ((a: ArrayImpl) => void) | null = null;
  #aval: ShapedArray;
  #data: TypedArray | null;
  #external: ExternalStorage | null = null;
  #disposed = false;
  /** The asynchronous run writing #data, until a wait saw it succeed (a failed one stays: its error is re-raised). */
  #pending: PendingWrite | null = null;
  /** The latest asynchronous run reading or writing #data (runs on one stream finish in order). */
  #lastUse: PendingWrite | null = null;
  readonly device: Device;
  /** Placement metadata set by devicePut / sharded constructors (a parallel-layer Sharding); null = on `device`. */
  placement: unknown = null;
  /**
   * Set by an execution backend's buffer pool: this array is the sole user of its storage, which dispose() hands
   * back (a field, not a WeakMap entry: an ephemeron whose value holds its key outlives young-generation collections).
   */
  ownsPooledStorage = false;
  constructor(aval: ShapedArray, data: TypedArray | ExternalStorage, device: Device = HOST_DEVICE) {
    super();
    if (ArrayBuffer.isView(data)) {
      if (data.length !== aval.size * lanes(aval.dtype)) {
        throw new Error(
          `ArrayImpl: storage holds ${data.length} elements but ${aval.str()} needs ${aval.size * lanes(aval.dtype)}`,
        );
      }
      this.#data = data;
    } else {
      this.#data = null;
      this.#external = data;
    }
    this.#aval = aval;
    this.device = device;
    if (ArrayImpl.createHook !== null) ArrayImpl.createHook(this);
  }
  /** The storage held elsewhere (per-device buffers), or null for host storage. */
  get external(): ExternalStorage | null {
    return this.#disposed ? null : this.#external;
  }
  static of(shape: Shape, dtype: DType, data: TypedArray, weakType = false): ArrayImpl {
    return new ArrayImpl(new ShapedArray(shape, dtype, weakType), data);
  }
  get aval(): ShapedArray {
    return this.#aval;
  }
  /** The storage itself (read-only by convention; the array is immutable). */
  get buffer(): TypedArray {
    this.#checkLive();
    if (this.#pending !== null) this.#waitPending();
    return this.#data ?? this.#external!.read();
  }
  #checkLive(): void {
    if (this.#disposed)
      throw new Error(
        `Array: use of a disposed array ${this.#aval.str()} (disposed, or donated to a jitted call through donateArgnums)`,
      );
  }
  #waitPending(): void {
    this.#pending!.wait();
    this.#pending = null;
  }
  /** @internal Marks the host storage as being written by an asynchronous run (set by the execution backend). */
  setPendingWrite(w: PendingWrite): void {
    this.#pending = w;
    this.#lastUse = w;
  }
  /** @internal Marks the host storage as read by an asynchronous run (queued after every earlier use). */
  setPendingRead(w: PendingWrite): void {
    this.#lastUse = w;
  }
  /** @internal The latest asynchronous run still reading or writing the host storage, or null. */
  get pendingUse(): PendingWrite | null {
    const u = this.#lastUse;
    if (u !== null && u.settled) this.#lastUse = null;
    return this.#lastUse;
  }
  /** @internal The run still writing (or that failed writing) this array's host storage, or null. */
  get pendingWrite(): PendingWrite | null {
    if (this.#pending?.settled) {
      try {
        this.#waitPending();
      } catch {
        // failed: kept, its error is raised at the next read
      }
    }
    return this.#pending;
  }
  /**
   * @internal The host storage without waiting for a pending write (an execution backend queues its reader behind the
   * writer on the same stream); throws when disposed, null for storage held elsewhere.
   */
  get storageNoWait(): TypedArray | null {
    this.#checkLive();
    return this.#data;
  }
  /**
   * The storage for a new array over the same value: the storage itself (immutable, so sharing is safe), or a copy when
   * it is borrowed memory (a shard's device buffer, which its parent's disposal hands to other arrays).
   */
  get shareableBuffer(): TypedArray {
    const b = this.buffer;
    return this.#external?.borrowed ? b.slice() : b;
  }
  get isDisposed(): boolean {
    return this.#disposed;
  }
  override blockUntilReady(): this {
    if (this.#disposed) return this;
    if (this.#pending !== null) this.#waitPending();
    this.#external?.wait();
    return this;
  }
  override async ready(): Promise<this> {
    const w = this.#disposed ? null : this.#pending;
    if (w !== null) {
      if (w.ready) await w.ready();
      if (this.#pending !== null) this.#waitPending();
    }
    const ext = this.external;
    if (ext?.whenReady) await ext.whenReady();
    else ext?.wait();
    return this;
  }
  override dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const d = this.#data,
      ext = this.#external;
    this.#data = null;
    this.#external = null;
    if (ext) ext.free();
    else if (d !== null && ArrayImpl.releaseHook) ArrayImpl.releaseHook(this, d);
  }
  /** A copy of the elements (float16/bfloat16 as raw Uint16 bits, bool as 0/1 Uint8, complex as interleaved re, im). */
  dataSync(): TypedArray {
    return this.buffer.slice();
  }
  item(): number | boolean | bigint | Complex {
    if (this.size !== 1)
      throw new Error(`Array.item: can only convert an array of size 1 to a scalar, got shape [${this.shape}]`);
    return this.elementAt(0);
  }
  elementAt(i: number): number | boolean | bigint | Complex {
    const d = this.dtype;
    if (isComplex(d)) {
      const b = this.buffer as Float64Array;
      return { re: b[2 * i], im: b[2 * i + 1] };
    }
    if (d === "bool") return this.buffer[i] !== 0;
    if (isBigInt(d)) return this.buffer[i] as bigint;
    return readNumber(this.buffer, d, i);
  }
  tolist(): unknown {
    const shape = this.shape;
    let k = 0;
    const rec = (dim: number): unknown => {
      if (dim === shape.length) return this.elementAt(k++);
      const out: unknown[] = [];
      for (let i = 0; i < shape[dim]; i++) out.push(rec(dim + 1));
      return out;
    };
    return rec(0);
  }
  override toString(): string {
    return formatArray(this.shape, this.dtype, this.weakType, (i) => this.elementAt(i), prod(this.shape));
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
  get isFloating(): boolean {
    return isFloat(this.dtype);
  }
}
