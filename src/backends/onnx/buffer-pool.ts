/**
 * @file Recycling of large host buffers. Writing freshly allocated memory costs a page fault per 4 KiB here
 * (~2.5-12 µs each). Outputs the backend writes itself (fused elementwise kernels, and ONNX Runtime runs through
 * jaxts's native runner, which binds outputs to caller buffers) are taken from a size-bucketed pool, and their
 * storage goes back to it when the array is disposed (explicitly, or by being donated to a jitted call) or garbage
 * collected. Without the native runner, onnxruntime-node copies every output into a fresh ArrayBuffer it allocates.
 */
import { ArrayImpl } from "../../core/array-impl.js";
import type { TypedArray } from "../../core/dtype.js";

type Ctor = { new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TypedArray; new (length: number): TypedArray; readonly name: string };

/** Tunables (tests shrink them). */
export const bufferPoolOptions = {
  /** Buffers smaller than this are left to the allocator. */
  minBytes: 4096,
  /** Buffers smaller than this are not watched for garbage collection (only recycled when disposed). */
  minWatchedBytes: 64 * 1024,
  /** Most bytes kept in the pool; the oldest free buffers are dropped beyond it. */
  maxPooledBytes: 256 * 1024 * 1024,
  /**
   * Most bytes of live pool buffers watched for garbage collection. A FinalizationRegistry keeps a watched
   * buffer alive until its callback runs (after the current task), so this bounds what a long synchronous loop
   * can hold on to; beyond it, buffers are left to the garbage collector.
   */
  maxWatchedBytes: 128 * 1024 * 1024,
};

interface Watched { buffer: ArrayBufferLike; ctor: Ctor; length: number; bytes: number }

const free = new Map<Ctor, Map<number, TypedArray[]>>();
/** Free buffers in release order (oldest first), for eviction. */
const order = new Set<TypedArray>();
let pooledBytes = 0;
let watchedBytes = 0;
/** The one array allowed to hand each buffer back (arrays sharing storage with it are not). */
const owners = new WeakMap<TypedArray, ArrayImpl>();
/** Buffers registered with the finalization registry (each view at most once). */
const watched = new WeakMap<TypedArray, Watched>();
const stats = { acquired: 0, reused: 0, released: 0, collected: 0 };

const registry = new FinalizationRegistry<Watched>((w) => {
  watchedBytes -= w.bytes;
  stats.collected++;
  // the view died with its array: recycle the memory under a new view
  const v = new w.ctor(w.buffer, 0, w.length);
  pushFree(v);
});

function bucket(ctor: Ctor, length: number, create: boolean): TypedArray[] | undefined {
  let m = free.get(ctor);
  if (!m) { if (!create) return undefined; free.set(ctor, (m = new Map())); }
  let b = m.get(length);
  if (!b && create) m.set(length, (b = []));
  return b;
}

function pushFree(v: TypedArray): void {
  if (v.byteLength > bufferPoolOptions.maxPooledBytes) { unwatch(v); return; }
  bucket(v.constructor as Ctor, v.length, true)!.push(v);
  order.add(v);
  pooledBytes += v.byteLength;
  for (const old of order) {
    if (pooledBytes <= bufferPoolOptions.maxPooledBytes) break;
    order.delete(old);
    const b = bucket(old.constructor as Ctor, old.length, false);
    const i = b ? b.indexOf(old) : -1;
    if (i < 0) continue;
    b!.splice(i, 1);
    pooledBytes -= old.byteLength;
    unwatch(old);
  }
}

function unwatch(v: TypedArray): void {
  const w = watched.get(v);
  if (!w) return;
  watched.delete(v);
  registry.unregister(v);
  watchedBytes -= w.bytes;
}

function watch(v: TypedArray): void {
  if (v.byteLength < bufferPoolOptions.minWatchedBytes || watched.has(v) || watchedBytes + v.byteLength > bufferPoolOptions.maxWatchedBytes) return;
  // only whole-buffer views: the memory is recycled as a whole
  if (v.byteOffset !== 0 || v.byteLength !== v.buffer.byteLength) return;
  const w: Watched = { buffer: v.buffer, ctor: v.constructor as Ctor, length: v.length, bytes: v.byteLength };
  watched.set(v, w);
  watchedBytes += w.bytes;
  registry.register(v, w, v);
}

/**
 * Storage for `length` elements of `ctor`: a recycled buffer when one of that exact size is free, else a
 * fresh one. The contents are unspecified (the caller overwrites every element).
 */
export function acquire(ctor: Ctor, length: number): TypedArray {
  stats.acquired++;
  const bytes = length * (ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
  if (bytes >= bufferPoolOptions.minBytes) {
    const b = bucket(ctor, length, false);
    const v = b?.pop();
    if (v) {
      order.delete(v);
      pooledBytes -= v.byteLength;
      stats.reused++;
      return v;
    }
  }
  return new ctor(length);
}

/**
 * Declares `a` the sole user of its storage (it was just created over a buffer nothing else references):
 * disposing `a` then recycles the storage, and so does garbage collection of the storage's view.
 */
export function own(a: ArrayImpl): ArrayImpl {
  const d = a.buffer;
  if (d.byteLength < bufferPoolOptions.minBytes) return a;
  owners.set(d, a);
  watch(d);
  return a;
}

/** True when `a` is the sole user of its (pooled) storage. */
export function ownsStorage(a: ArrayImpl): boolean {
  return !a.isDisposed && owners.get(a.buffer) === a;
}

/** Returns storage nothing references any more (e.g. an output buffer of a failed run) to the pool. */
export function recycle(d: TypedArray): void {
  if (d.byteLength < bufferPoolOptions.minBytes || owners.has(d)) return;
  pushFree(d);
}

/** The release hook ArrayImpl.dispose() calls: recycles storage its owner gives up. */
function release(a: ArrayImpl, d: TypedArray): void {
  if (owners.get(d) !== a) return;
  owners.delete(d);
  stats.released++;
  pushFree(d);
}
ArrayImpl.releaseHook = release;

/** Pool statistics (tests): free bytes, watched bytes, counters. */
export function bufferPoolStats(): { pooledBytes: number; watchedBytes: number; acquired: number; reused: number; released: number; collected: number } {
  return { pooledBytes, watchedBytes, ...stats };
}

/** Drops every free buffer (tests). */
export function clearBufferPool(): void {
  for (const v of order) unwatch(v);
  free.clear();
  order.clear();
  pooledBytes = 0;
}
