/** @file Runtime devices: per-device buffers and their memory accounting (memoryStats), by device id. */
import { allocate, itemsize, type DType, type TypedArray } from "../core/dtype.js";

/** jax.Device.memory_stats(): bytes of the buffers the runtime holds for one device. */
export interface MemoryStats {
  bytesInUse: number;
  peakBytesInUse: number;
  numAllocs: number;
  /** Bytes of the largest buffer allocated. */
  largestAllocSize: number;
}

/** A CPU device as the runtime sees it: an executor thread (native) and the buffers accounted to it. */
export class RuntimeDevice {
  readonly #stats: MemoryStats = { bytesInUse: 0, peakBytesInUse: 0, numAllocs: 0, largestAllocSize: 0 };
  constructor(readonly id: number) {}
  /** A copy of this device's memory counters. */
  memoryStats(): MemoryStats { return { ...this.#stats }; }
  /** @internal */ account(bytes: number): void {
    const s = this.#stats;
    s.bytesInUse += bytes;
    if (bytes > 0) {
      s.numAllocs++;
      s.largestAllocSize = Math.max(s.largestAllocSize, bytes);
      s.peakBytesInUse = Math.max(s.peakBytesInUse, s.bytesInUse);
    }
  }
  toString(): string { return `RuntimeDevice(id=${this.id})`; }
}

const registry = new Map<number, RuntimeDevice>();
/** The runtime device with this id (created on first use). */
export function runtimeDevice(id: number): RuntimeDevice {
  if (!Number.isInteger(id) || id < 0) throw new RangeError(`runtimeDevice: device id must be a non-negative integer, got ${id}`);
  let d = registry.get(id);
  if (!d) { d = new RuntimeDevice(id); registry.set(id, d); }
  return d;
}

/** Bytes still accounted for buffers the garbage collector reclaimed without free() (a safety net, not the rule). */
const reclaim = new FinalizationRegistry<{ device: RuntimeDevice; bytes: number; freed: { v: boolean } }>((h) => {
  if (!h.freed.v) h.device.account(-h.bytes);
});

/** Memory owned by one device: a typed array whose bytes count towards the device's memoryStats until free(). */
export class DeviceBuffer {
  readonly #freed = { v: false };
  #data: TypedArray | null;
  readonly bytes: number;
  private constructor(readonly device: RuntimeDevice, readonly dtype: DType, readonly shape: readonly number[], data: TypedArray) {
    this.#data = data;
    this.bytes = data.length * itemsize(dtype);
    device.account(this.bytes);
    reclaim.register(this, { device, bytes: this.bytes, freed: this.#freed }, this);
  }
  /** A zero-filled buffer of dtype and shape on `device`. */
  static alloc(device: RuntimeDevice, dtype: DType, shape: readonly number[]): DeviceBuffer {
    return new DeviceBuffer(device, dtype, shape, allocate(dtype, shape.reduce((a, b) => a * b, 1)));
  }
  /** A copy of `src` (dtype's host storage) on `device`. */
  static copyOf(device: RuntimeDevice, dtype: DType, shape: readonly number[], src: TypedArray): DeviceBuffer {
    const b = DeviceBuffer.alloc(device, dtype, shape);
    (b.data as { set(a: ArrayLike<number | bigint>): void }).set(src as ArrayLike<number | bigint>);
    return b;
  }
  get data(): TypedArray {
    if (!this.#data) throw new Error(`DeviceBuffer: use of a freed buffer (${this.dtype}[${this.shape.join(",")}] on device ${this.device.id})`);
    return this.#data;
  }
  get isFreed(): boolean { return this.#data === null; }
  /** Releases the storage and its accounting (idempotent). */
  free(): void {
    if (!this.#data) return;
    this.#data = null;
    this.#freed.v = true;
    this.device.account(-this.bytes);
    reclaim.unregister(this);
  }
}
