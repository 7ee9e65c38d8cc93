/** @file jaxts's native addon as ORT's runner: loading it (with the ORT library onnxruntime-node ships), its session, fused-kernel, GEMM, arena and device-runtime entry points. */

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { HostArray } from "./graph-builder.js";
import { addonFiles, noAddonReason, warnNoNativeRunner } from "./addon-files.js";

// ---------------------------------------------------------------------------
// jaxts's native runner (native/ort-addon.cc, built by scripts/build-native.mjs): the same libonnxruntime that
// onnxruntime-node ships, driven through ORT's C API, with outputs written into buffers the caller owns.
// onnxruntime-node's binding copies every output into a fresh ArrayBuffer instead (see notes/onnx-runtime.md).
// ---------------------------------------------------------------------------

export interface AddonValueInfo {
  name: string;
  type: number;
  shape: (number | string)[];
}
export interface AddonSession {
  handle: object;
  inputs: AddonValueInfo[];
  outputs: AddonValueInfo[];
}
interface AddonModule {
  init(libraryPath: string): string;
  createSession(model: Uint8Array, options: object): AddonSession;
  release(handle: object): void;
  runner(
    handle: object,
    inputNames: string[],
    inputTypes: number[],
    outputNames: string[],
    outputTypes: number[],
  ): object;
  run(
    runner: object,
    inputs: readonly HostArray[],
    inputShapes: readonly (readonly number[])[],
    outputs: readonly (HostArray | null)[],
    outputShapes: readonly (readonly number[] | null)[],
  ): ([ArrayBuffer, number[]] | undefined)[] | undefined;
  fusedCompile(code: Int32Array, numInputs: number, numScalars: number): object;
  fusedRun(
    handle: object,
    ins: readonly Float32Array[],
    scalars: Float32Array,
    outs: readonly Float32Array[],
    n: number,
  ): void;
  fusedIsa(): string;
  gemmKernel(): string | null;
  /** Whether sessions can run jaxts.Lu / TriangularSolve / Cholesky / Qr (absent in older addons). */
  linalgOps?(): boolean;
  trimMemory(): boolean;
  arenaAlloc?(bytes: number): ArrayBuffer | null;
  arenaStats?(): number[];
  arenaReserve?(bytes: number, count: number): number;
  arenaLimits?(maxFreeBytes: number, ratio: number, floor: number): void;
  /**
   * Tests only: the collectives' reduction kernel (native/reduce-kernels.cc) at a CPU level (lowered to this
   * process's) into 64-byte-aligned scratch at byte offset dstOffset, copied to `outs`; returns the level that ran.
   */
  reduceKernel?(
    level: string,
    type: number,
    op: number,
    ins: readonly ArrayBufferView[],
    outs: readonly ArrayBufferView[],
    stream: boolean,
    dstOffset: number,
  ): string;
}

let addonModule: AddonModule | null | undefined;
let addonError = "";

function packageRoot(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "native"))) return dir;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

function ortLibraryPath(req: NodeRequire): string | null {
  const base = join(dirname(req.resolve("onnxruntime-node/package.json")), "bin");
  for (const napi of ["napi-v6", "napi-v3", "napi-v4", "napi-v5", "napi-v7", "napi-v8"]) {
    const p = join(base, napi, process.platform, process.arch, "libonnxruntime.so.1");
    if (existsSync(p)) return p;
  }
  return null;
}

/** The native addon (loaded once), or null when it is unavailable (addonError says why). */
export function addon(): AddonModule | null {
  if (addonModule !== undefined) return addonModule;
  addonModule = null;
  if (process.env.JAXTS_NATIVE === "0") {
    addonError = "disabled by JAXTS_NATIVE=0";
    return null;
  }
  try {
    const req = createRequire(import.meta.url);
    const root = packageRoot();
    const files = addonFiles(root);
    const lib = ortLibraryPath(req);
    if (files.length === 0) addonError = noAddonReason(root);
    else if (!lib) addonError = "onnxruntime-node ships no libonnxruntime.so.1 for this platform";
    else {
      // a file that does not load here (another libc, another CPU architecture) gives way to the next one
      let m: AddonModule | null = null;
      for (const f of files) {
        try {
          m = req(f) as AddonModule;
          break;
        } catch (e) {
          addonError = `${f}: ${(e as Error).message}`;
        }
      }
      if (m) {
        m.init(lib); // throws when ONNX Runtime is not the version the addon was written for
        addonModule = m;
      }
    }
  } catch (e) {
    addonError = (e as Error).message;
  }
  if (!addonModule) warnNoNativeRunner(addonError);
  return addonModule;
}

/** The device runtime's part of the native addon (native/devices.cc): executors, device programs, launches. */
export interface DeviceAddon {
  devCreateProgram(
    model: Uint8Array,
    inNames: readonly string[],
    inTypes: readonly number[],
    outNames: readonly string[],
    outTypes: readonly number[],
    options: { numDevices: number; intraOpNumThreads: number; graphOptimizationLevel?: number },
  ): object;
  /** Keeps the input and output lists alive (one reference each) until waited for: do not change them before. */
  devLaunch(
    program: object,
    deviceIds: readonly number[],
    inputs: readonly (readonly HostArray[])[],
    inputShapes: readonly (readonly (readonly number[])[])[],
    outputs: readonly (readonly HostArray[])[],
    outputShapes: readonly (readonly (readonly number[])[])[],
    options: {
      timeoutMs: number;
      failRank?: number;
      recordCollectives?: number;
      callerRuns?: number;
      /** Test hook: every rank sleeps this long before running. */
      delayMs?: number;
      process?: ProcessLaunch;
    },
    callback?: (r: DeviceLaunchResult) => void,
  ): object;
  devWait(launch: object): DeviceLaunchResult;
  /** Calls `callback` once on the JS thread when the launch finished (true), or returns false when it already had. Older addons lack it. */
  devNotify?(launch: object, callback: () => void): boolean;
  /** devNotify callbacks made and not yet finalized (tests: none leak). */
  devLiveNotifies?(): number;
  /** Whether every device of the launch finished (never blocks). Older addons lack it. */
  devDone?(launch: object): boolean;
  /** A one-rank program over a session createSession made (borrowed: keep it alive and unreleased while in use). Older addons lack it. */
  devProgramFromSession?(
    session: object,
    inNames: readonly string[],
    inTypes: readonly number[],
    outNames: readonly string[],
    outTypes: readonly number[],
  ): object;
  devOpenRendezvous(): number;
  /** Sets how long (us) an idle executor polls its queue before blocking (0: never); returns the previous value. Older addons lack it. */
  devSetExecutorSpin?(us: number): number;
  /** Strided block copies on the destination devices' executors (native/block-copy.cc); older addons lack them. */
  devCopyBlocks?(buffers: readonly HostArray[], plan: Float64Array, sync: number): object | undefined;
  devCopyDone?(op: object): boolean;
  devCopyWait?(op: object): void;
}
/** A launch spanning processes: its number (equal on every process), this process, the global rank of each local device, the process of each global rank. */
export interface ProcessLaunch {
  launch: number;
  self: number;
  ranks: readonly number[];
  rankProcess: readonly number[];
}
/**
 * Per-rank outcome of a launch: error text or null, start/end (microseconds, steady clock), native thread id; and the
 * launch's own stamps (same clock): devLaunch entered, all ranks submitted, last rank done, devWait returned (0 with a
 * callback), and the rank the calling thread ran itself (-1: none). Older addons omit the stamps.
 */
export interface DeviceLaunchResult {
  errors: (string | null)[];
  start: number[];
  end: number[];
  threads: number[];
  enter?: number;
  submitted?: number;
  complete?: number;
  woke?: number;
  callerRank?: number;
  /** With options.recordCollectives: each rank's collectives in the order it ran them. */
  collectives?: CollectiveTiming[][];
}
/** One collective of one rank: kind (AllReduce...), the user's name (psum...), axes, payload bytes, and steady-clock times (us): entered, every peer arrived, returned. */
export interface CollectiveTiming {
  kind: string;
  name: string;
  axes: string;
  groupSize: number;
  bytes: number;
  start: number;
  ready: number;
  end: number;
  /** Asynchronous collectives (jaxts.async): microseconds the device thread blocked awaiting it; -1: synchronous. */
  wait: number;
}

/** The device runtime of jaxts's native addon, or null (with the reason) when the addon is unavailable. */
export function deviceAddon(): { api: DeviceAddon | null; why: string } {
  const a = addon() as (AddonModule & Partial<DeviceAddon>) | null;
  if (!a) return { api: null, why: addonError };
  if (typeof a.devLaunch !== "function")
    return { api: null, why: "the native addon was built without the device runtime (rebuild it)" };
  return { api: a as unknown as DeviceAddon, why: "" };
}

/** Which runner executes sessions: "native" (jaxts's addon: outputs into caller buffers) or "onnxruntime-node". */
export function runnerKind(): { kind: "native" | "onnxruntime-node"; why?: string } {
  return addon() ? { kind: "native" } : { kind: "onnxruntime-node", why: addonError };
}

/** The native addon's fused elementwise kernels (native/fused.cc), or null without the addon. */
export function nativeFusedApi(): {
  compile(code: Int32Array, numInputs: number, numScalars: number): object;
  run(
    handle: object,
    ins: readonly Float32Array[],
    scalars: Float32Array,
    outs: readonly Float32Array[],
    n: number,
  ): void;
  isa(): string;
} | null {
  const a = addon();
  if (!a || typeof a.fusedCompile !== "function") return null;
  return {
    compile: (c, i, s) => a.fusedCompile(c, i, s),
    run: (h, i, s, o, n) => a.fusedRun(h, i, s, o, n),
    isa: () => a.fusedIsa(),
  };
}

/**
 * The micro-kernel ("avx512" / "avx2") behind the jaxts.Gemm custom op every native session can run, or null when
 * there is none (no native runner, no fast kernel for this CPU, JAXTS_NATIVE_GEMM=0): then GEMMs stay ONNX Gemm.
 */
export function nativeGemmKernel(): string | null {
  return addon()?.gemmKernel() ?? null;
}

/**
 * Whether every native session can run the float64 linear-algebra custom ops jaxts.Lu, TriangularSolve, Cholesky and
 * Qr (native/linalg-ops.cc): false without the native runner (or with an addon built before them).
 */
export function nativeLinalgOps(): boolean {
  const a = addon();
  return a !== null && typeof a.linalgOps === "function" && a.linalgOps();
}

/**
 * Hands the C heap's free memory back to the system (glibc keeps what released sessions freed mapped); false
 * without the native addon or when nothing was released.
 */
export function trimNativeHeap(): boolean {
  const a = addon();
  return a !== null && typeof a.trimMemory === "function" ? a.trimMemory() : false;
}

/** The native arena (native/arena.cc): ArrayBuffers whose memory the garbage collector hands back for reuse. */
export interface NativeArena {
  /** An ArrayBuffer of exactly `bytes` (contents unspecified), or null when the memory cannot be mapped. */
  alloc(bytes: number): ArrayBuffer | null;
  /** Free-list bytes, bytes of blocks in use (not yet collected), fresh mappings, reuses, blocks returned by the collector, blocks unmapped, blocks reserved. */
  stats(): {
    freeBytes: number;
    inUseBytes: number;
    fresh: number;
    reused: number;
    returned: number;
    unmapped: number;
    reserved: number;
  };
  /**
   * Maps blocks for `bytes`-byte buffers, their pages already touched, onto the free list until it holds `count` of
   * them (as far as its bounds allow); returns how many were mapped (0 from an addon built before this entry point).
   */
  reserve(bytes: number, count: number): number;
  /** Bounds the free list: at most `maxFreeBytes`, and at most max(`ratio` times the bytes in use, `floor`). */
  limits(maxFreeBytes: number, ratio: number, floor: number): void;
}

/** The native arena, or null without the native addon (or V8's headers when it was built). */
export function nativeArena(): NativeArena | null {
  const a = addon();
  if (!a || typeof a.arenaAlloc !== "function" || !a.arenaStats || !a.arenaLimits) return null;
  const { arenaAlloc, arenaStats, arenaLimits } = a as Required<AddonModule>;
  const arenaReserve = a.arenaReserve;
  return {
    alloc: arenaAlloc,
    stats() {
      const [freeBytes, inUseBytes, fresh, reused, returned, unmapped, reserved = 0] = arenaStats();
      return { freeBytes, inUseBytes, fresh, reused, returned, unmapped, reserved };
    },
    reserve: (bytes, count) => (arenaReserve ? arenaReserve(bytes, count) : 0),
    limits: arenaLimits,
  };
}
