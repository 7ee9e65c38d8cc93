/**
 * @file Recycling of large host buffers. Writing freshly allocated memory costs a page fault per 4 KiB here
 * (~2.5-12 µs each). Outputs the backend writes itself (fused elementwise kernels, and ONNX Runtime runs through
 * jaxts's native runner, which binds outputs to caller buffers) are taken from a size-bucketed pool, and their
 * storage goes back to it when the array is disposed (explicitly, or by being donated to a jitted call) or garbage
 * collected. Without the native runner, onnxruntime-node copies every output into a fresh ArrayBuffer it allocates.
 */
import v8 from "node:v8";
import vm from "node:vm";
import { ArrayImpl } from "../../core/array-impl.js";
import type { TypedArray } from "../../core/dtype.js";
import { type NativeArena, nativeArena } from "./ort-runtime.js";

type Ctor = {
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TypedArray;
  new (length: number): TypedArray;
  readonly name: string;
};

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
  /** Buffers at least this large come from the native arena (when built): the collector hands them back for reuse. */
  arenaMinBytes: 256 * 1024,
  /**
   * Arena bytes handed out between two young-generation collections the pool requests (0: never request one);
   * at least half the arena's bytes in use after the previous one, so large models are not collected every output.
   */
  arenaGcBytes: 4 * 1024 * 1024,
  /**
   * The arena's free list holds at most this many times the bytes of its blocks in use (or twice the bytes handed
   * out between two requested collections, when more)...
   */
  arenaFreeRatio: 2,
  /** ...and at most this many bytes. */
  arenaMaxFreeBytes: 256 * 1024 * 1024,
  /**
   * Most sets of a jitted program's arena-sized outputs readied on the free list after its compiling call (0: none),
   * see reserveOutputs (with the defaults at most 4 MiB / 256 KiB + 2 = 18 are asked for).
   */
  reserveSets: 32,
};

interface Watched {
  buffer: ArrayBufferLike;
  ctor: Ctor;
  length: number;
  bytes: number;
}

const free = new Map<Ctor, Map<number, TypedArray[]>>();
/** Free buffers in release order (oldest first), for eviction. */
const order = new Set<TypedArray>();
let pooledBytes = 0;
let watchedBytes = 0;
/** Buffers registered with the finalization registry (each view at most once). */
const watched = new WeakMap<TypedArray, Watched>();
const stats = {
  acquired: 0,
  reused: 0,
  released: 0,
  collected: 0,
  arenaAllocated: 0,
  gcRequested: 0,
  /** Arena blocks mapped (pages touched) by reserveOutputs. */
  reservedBlocks: 0,
};

let arena: NativeArena | null | undefined;
let arenaLimits = "";
/** Storage that came from the arena (the collector recycles it natively: never watched). */
const fromArena = new WeakSet<ArrayBufferLike>();
let arenaSinceGc = 0;
let arenaGcBudget = 0;
let minorGc: (() => void) | null | undefined;

/** A young-generation collection on demand (V8's gc(), exposed through a fresh context), or null. */
function youngGc(): (() => void) | null {
  if (minorGc === undefined) {
    try {
      v8.setFlagsFromString("--expose-gc");
      const g = vm.runInNewContext("gc") as (o?: { type: string }) => void;
      minorGc = () => g({ type: "minor" });
    } catch {
      minorGc = null;
    }
  }
  return minorGc;
}

/**
 * Free-list bounds: at most arenaFreeRatio times the bytes in use, but at least twice the bytes handed out between
 * two requested collections (what a collection returns; below it every cycle would map fresh memory again).
 */
function setArenaLimits(a: NativeArena): void {
  const o = bufferPoolOptions;
  // twice the budget: the sweeper may return two collections' worth at once
  const floor = Math.min(2 * Math.max(o.arenaGcBytes, arenaGcBudget), o.arenaMaxFreeBytes);
  const lim = `${o.arenaMaxFreeBytes}/${o.arenaFreeRatio}/${floor}`;
  if (lim !== arenaLimits) {
    a.limits(o.arenaMaxFreeBytes, o.arenaFreeRatio, floor);
    arenaLimits = lim;
  }
}

/** The arena when the pool should use it for `bytes` (null: allocate through V8). */
function arenaFor(bytes: number): NativeArena | null {
  if (bytes < bufferPoolOptions.arenaMinBytes) return null;
  if (arena === undefined) arena = nativeArena();
  if (!arena) return null;
  setArenaLimits(arena);
  return arena;
}

/** Rounds to the arena's blocks (whole 4 KiB pages). */
const blockBytes = (bytes: number): number => Math.ceil(bytes / 4096) * 4096;

/** A requested young-generation collection; restarts the count of arena bytes handed out. */
function collectYoung(a: NativeArena, g: () => void): void {
  g();
  stats.gcRequested++;
  arenaSinceGc = 0;
  arenaGcBudget = a.stats().inUseBytes / 2;
  setArenaLimits(a);
}

/**
 * Readies memory for the calls after a jitted program's compiling call, given the storage of that call's outputs
 * (those that are not an input's storage). Without donation, each call's outputs need blocks while the previous
 * call's are still alive and older ones wait for the next requested collection; before they come back, every output
 * is fresh memory whose first touch costs a page fault per 4 KiB (several ms per MiB on a loaded VM), so the first
 * steps of a training loop ran 1.3-1.8x slower than the steady state. So, for outputs from the arena:
 * - a young-generation collection now: the compiling call's garbage (traces, jaxprs, model bytes) is evacuated here
 *   rather than by the first step's collection, and the count towards the next collection restarts;
 * - the arena's free list is topped up to `sets` blocks per output (pages touched now), where sets covers the calls
 *   between two requested collections plus two: ceil(budget / bytes per call) + 2, at most reserveSets, and within
 *   the free list's bounds (at most the larger of twice the bytes in use and twice the collection budget).
 * Returns the blocks mapped (0 without the native arena, or when no output is large enough).
 */
export function reserveOutputs(outputs: readonly TypedArray[]): number {
  const o = bufferPoolOptions;
  const big = outputs.filter((d) => d.byteLength >= o.arenaMinBytes && fromArena.has(d.buffer));
  if (o.reserveSets <= 0 || big.length === 0) return 0;
  const a = arenaFor(big[0].byteLength);
  if (!a) return 0;
  const g = o.arenaGcBytes > 0 ? youngGc() : null;
  if (g) collectYoung(a, g);
  const perCall = big.reduce((u, d) => u + blockBytes(d.byteLength), 0);
  // +2: the call that triggers a collection allocates before the blocks it frees come back, and the collector's
  // sweeper returns them from its own thread, some of them after the next call
  const sets = Math.min(o.reserveSets, Math.ceil(Math.max(o.arenaGcBytes, arenaGcBudget) / perCall) + 2);
  // blocks per size: outputs of equal size share the free list's bucket
  const perSize = new Map<number, number>();
  for (const d of big) perSize.set(blockBytes(d.byteLength), (perSize.get(blockBytes(d.byteLength)) ?? 0) + sets);
  let mapped = 0;
  for (const [bytes, count] of perSize) mapped += a.reserve(bytes, count);
  stats.reservedBlocks += mapped;
  return mapped;
}

/**
 * Fresh storage from the arena. Arrays die unseen in a loop that never yields (finalizers wait for the event
 * loop), but the collector returns their blocks: every arenaGcBytes handed out, a young-generation collection
 * (~0.1 ms) lets the blocks of the arrays that died meanwhile (e.g. last step's parameters) serve the next outputs.
 */
function fromArenaAlloc(a: NativeArena, ctor: Ctor, length: number, bytes: number): TypedArray {
  const every = bufferPoolOptions.arenaGcBytes;
  if (every > 0 && (arenaSinceGc += bytes) > Math.max(every, arenaGcBudget)) {
    arenaSinceGc = bytes;
    const g = youngGc();
    if (g) {
      collectYoung(a, g);
      arenaSinceGc = bytes;
    }
  }
  const ab = a.alloc(bytes);
  if (!ab) throw new RangeError(`Array buffer allocation failed: the native arena could not map ${bytes} bytes`);
  fromArena.add(ab);
  stats.arenaAllocated++;
  return new ctor(ab, 0, length);
}

const registry = new FinalizationRegistry<Watched>((w) => {
  watchedBytes -= w.bytes;
  stats.collected++;
  // the view died with its array: recycle the memory under a new view
  const v = new w.ctor(w.buffer, 0, w.length);
  pushFree(v);
});

function bucket(ctor: Ctor, length: number, create: boolean): TypedArray[] | undefined {
  let m = free.get(ctor);
  if (!m) {
    if (!create) return undefined;
    free.set(ctor, (m = new Map()));
  }
  let b = m.get(length);
  if (!b && create) m.set(length, (b = []));
  return b;
}

function pushFree(v: TypedArray): void {
  if (v.byteLength > bufferPoolOptions.maxPooledBytes) {
    unwatch(v);
    return;
  }
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
  if (
    v.byteLength < bufferPoolOptions.minWatchedBytes ||
    watched.has(v) ||
    watchedBytes + v.byteLength > bufferPoolOptions.maxWatchedBytes
  )
    return;
  // the collector hands arena storage back by itself (a watch would keep it alive until the loop yields)
  if (fromArena.has(v.buffer)) return;
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
    const a = arenaFor(bytes);
    if (a) return fromArenaAlloc(a, ctor, length, bytes);
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
  // the one array allowed to hand the buffer back (arrays sharing storage with it are not)
  a.ownsPooledStorage = true;
  watch(d);
  return a;
}

/** True when `a` is the sole user of its (pooled) storage. */
export function ownsStorage(a: ArrayImpl): boolean {
  return a.ownsPooledStorage && !a.isDisposed;
}

/** Returns storage nothing references any more (e.g. an output buffer of a failed run) to the pool. */
export function recycle(d: TypedArray): void {
  if (d.byteLength < bufferPoolOptions.minBytes) return;
  pushFree(d);
}

/** The release hook ArrayImpl.dispose() calls: recycles storage its owner gives up. */
function release(a: ArrayImpl, d: TypedArray): void {
  if (!a.ownsPooledStorage) return;
  a.ownsPooledStorage = false;
  stats.released++;
  // an asynchronous run in flight still reads or writes it: pooled once that run settles (no set of busy buffers: a
  // long-lived collection holding them made the arrays outlive young-generation collections)
  const u = a.pendingUse;
  if (u?.afterSettle) u.afterSettle(() => pushFree(d));
  else pushFree(d);
}
ArrayImpl.releaseHook = release;

/** Pool statistics (tests): free bytes, watched bytes, counters. */
export function bufferPoolStats(): {
  pooledBytes: number;
  watchedBytes: number;
  acquired: number;
  reused: number;
  released: number;
  collected: number;
  arenaAllocated: number;
  gcRequested: number;
  reservedBlocks: number;
  /** The native arena's free list and blocks in use (not yet collected); zeros without the arena. */
  arenaFreeBytes: number;
  arenaInUseBytes: number;
  arenaFresh: number;
  arenaReused: number;
  arenaReturned: number;
} {
  const a = arena ?? null;
  const s = a ? a.stats() : { freeBytes: 0, inUseBytes: 0, fresh: 0, reused: 0, returned: 0 };
  return {
    pooledBytes,
    watchedBytes,
    ...stats,
    arenaFreeBytes: s.freeBytes,
    arenaInUseBytes: s.inUseBytes,
    arenaFresh: s.fresh,
    arenaReused: s.reused,
    arenaReturned: s.returned,
  };
}

/** Drops every free buffer, the native arena's included (tests, jax.clearCaches). */
export function clearBufferPool(): void {
  for (const v of order) unwatch(v);
  free.clear();
  order.clear();
  pooledBytes = 0;
  // unmap the arena's free blocks now (its bounds are set again on the next arena allocation)
  if (arena) {
    arena.limits(0, 0, 0);
    arenaLimits = "";
  }
}
