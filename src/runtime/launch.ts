/** @file Device programs (one ONNX model, one ORT session per device) and their launch across devices: async dispatch (pending outputs), Promise or blocking. */
import { availableParallelism } from "node:os";
import { ONNX_DTYPE, type DType as GDType, type HostArray } from "../backends/onnx/graph-builder.js";
import {
  type CollectiveTiming,
  deviceAddon,
  type DeviceAddon,
  type DeviceLaunchResult,
  type ProcessLaunch,
} from "../backends/onnx/ort-runtime.js";
import { settleAsyncRuns } from "../backends/onnx/async-run.js";
import { config } from "../core/config.js";
import { depsSettled, notified, PendingRun } from "../core/pending-run.js";
import { type DType, isComplex, realDType } from "../core/dtype.js";
import { synchronizeCopies } from "./block-copy.js";
import { DeviceBuffer, failedDependency, runtimeDevice, type PendingWork, type RuntimeDevice } from "./device.js";

/**
 * The dtypes the device runtime moves (bfloat16 as its bits: programs compiled with bfloat16Bits; complex as its
 * interleaved (re, im) storage, a float tensor of shape [..., 2] to the ONNX program, as the lowering declares it).
 */
export const DEVICE_DTYPES: ReadonlySet<DType> = new Set<DType>([
  "float32",
  "float64",
  "int32",
  "int64",
  "bool",
  "int8",
  "uint8",
  "float16",
  "bfloat16",
  "int16",
  "uint16",
  "uint32",
  "uint64",
  "complex64",
  "complex128",
]);

/** The ONNX element type of dtype d at the program's boundary (complex: its float parts). */
const wireType = (d: DType): number => ONNX_DTYPE[realDType(d) as GDType];
/** The shape of a dtype-d value of shape s at the program's boundary (complex: a trailing (re, im) axis). */
const wireShape = (d: DType, s: readonly number[]): readonly number[] => (isComplex(d) ? [...s, 2] : s);

/** Why the device runtime is unavailable, or null when it is available. */
export function deviceRuntimeUnavailable(): string | null {
  const { api, why } = deviceAddon();
  return api ? null : why || "the native addon is unavailable";
}

let loaded: DeviceAddon | null = null;
function api(): DeviceAddon {
  if (loaded) return loaded;
  const { api: a, why } = deviceAddon();
  if (!a) throw new Error(`device runtime: unavailable (${why})`);
  return (loaded = a);
}

export interface ProgramSignature {
  readonly name: string;
  readonly inputNames: readonly string[];
  readonly inputDTypes: readonly DType[];
  readonly outputNames: readonly string[];
  readonly outputDTypes: readonly DType[];
  readonly outputShapes: readonly (readonly number[])[];
}

/** One compiled per-device program: the same ONNX model in one ORT session per device rank. */
export class DeviceProgram {
  /** @internal */ readonly handle: object;
  /** The longest rank run (microseconds) of this program's latest settled launch (Infinity before any). */
  lastRunUs = Infinity;
  /** @internal The output shapes the ONNX program sees (complex outputs with their (re, im) axis). */
  readonly wireOutputShapes: readonly (readonly number[])[];
  /**
   * Whether this program's latest settled launch was waited for by a blocking wait before anything else was dispatched
   * (a synchronous step loop: blocking the caller on rank 0 at the next dispatch costs it no overlap it used).
   */
  waitedInLoop = false;
  constructor(
    readonly model: Uint8Array,
    readonly sig: ProgramSignature,
    readonly numDevices: number,
    readonly intraOpThreads: number,
  ) {
    for (const d of [...sig.inputDTypes, ...sig.outputDTypes]) {
      if (!DEVICE_DTYPES.has(d))
        throw new TypeError(
          `DeviceProgram ${sig.name}: dtype ${d} is not supported by the device runtime (supported: ${[...DEVICE_DTYPES].join(", ")})`,
        );
    }
    this.wireOutputShapes = sig.outputShapes.map((sh, k) => wireShape(sig.outputDTypes[k], sh));
    this.handle = api().devCreateProgram(
      model,
      sig.inputNames,
      sig.inputDTypes.map(wireType),
      sig.outputNames,
      sig.outputDTypes.map(wireType),
      { numDevices, intraOpNumThreads: intraOpThreads },
    );
  }
}

/** ORT intra-op threads for each device's session: config.deviceIntraOpThreads, else max(1, cores / devices). */
export function deviceIntraOpThreads(numDevices: number): number {
  return config.deviceIntraOpThreads > 0
    ? config.deviceIntraOpThreads
    : Math.max(1, Math.floor(availableParallelism() / Math.max(1, numDevices)));
}

/** Device programs by model bytes and device count (creating N sessions is the expensive part). */
const programs = new Map<string, DeviceProgram>();
const MAX_PROGRAMS = 64;

function modelKey(model: Uint8Array, sig: ProgramSignature, n: number, threads: number): string {
  // FNV-1a over the bytes, plus the length and the signature: a collision would need equal lengths and names too
  let h = 0x811c9dc5;
  for (let i = 0; i < model.length; i++) h = Math.imul(h ^ model[i], 0x01000193);
  return `${n}|${threads}|${model.length}|${(h >>> 0).toString(16)}|${sig.inputNames.join(",")}|${sig.outputNames.join(",")}`;
}

/** The device program for `model` over `numDevices` ranks (cached). */
export function deviceProgram(model: Uint8Array, sig: ProgramSignature, numDevices: number): DeviceProgram {
  const threads = deviceIntraOpThreads(config.numCpuDevices);
  const key = modelKey(model, sig, numDevices, threads);
  let p = programs.get(key);
  if (p && !sameBytes(p.model, model)) p = undefined;
  if (!p) {
    p = new DeviceProgram(model, sig, numDevices, threads);
    if (programs.size >= MAX_PROGRAMS) programs.delete(programs.keys().next().value as string);
    programs.set(key, p);
  }
  return p;
}
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One rank's run as the runtime recorded it (times in microseconds of a monotonic clock). */
export interface RankTiming {
  rank: number;
  device: number;
  thread: number;
  start: number;
  end: number;
}

export interface LaunchResult {
  /** outputs[rank][k]: output k of the device at that rank, on that device. */
  readonly outputs: DeviceBuffer[][];
  readonly timeline: readonly RankTiming[];
  /** The launch's native stamps (microseconds, the timeline's clock), for per-call breakdowns (bench/devices.ts). */
  readonly stamps?: LaunchStamps;
}

/** When the native launch entered, had submitted every rank, saw the last rank finish and (blocking) woke its caller. */
export interface LaunchStamps {
  enter: number;
  submitted: number;
  complete: number;
  woke: number;
  callerRank: number;
}

export interface LaunchOptions {
  /** Collective timeout (default config.collectiveTimeoutMs). */
  timeoutMs?: number;
  /** Test hook: the device at this rank fails before running its program. */
  failRank?: number;
  /** Test hook: every rank sleeps this long (ms) before running (a launch that stays pending a while). */
  delayMs?: number;
  /** A launch spanning processes (deviceIds are this process's devices; collectives cross processes through MPI). */
  process?: ProcessLaunch;
}

let failNext: number | undefined;
/** Test hook: the next launch (whoever makes it: shardMap, pmap, dispatch, launch or launchSync) fails on the device at `rank`, as failRank does. */
export function failNextLaunch(rank: number): void {
  failNext = rank;
}
let delayNext: number | undefined;
/** Test hook: every rank of the next launch sleeps `ms` before running, as delayMs does (none runs on the caller). */
export function delayNextLaunch(ms: number): void {
  if (!(Number.isInteger(ms) && ms >= 0 && ms <= 60_000))
    throw new RangeError(`delayNextLaunch: expected an integer number of milliseconds in [0, 60000], got ${ms}`);
  delayNext = ms;
}

interface Prepared {
  devs: RuntimeDevice[];
  inputs: readonly (readonly DeviceBuffer[])[];
  outs: DeviceBuffer[][];
  args: Parameters<DeviceAddon["devLaunch"]>;
}

/** Whether some device id appears twice (pairwise for the usual few devices: no Set per launch). */
function repeatsDevice(ids: readonly number[]): boolean {
  if (ids.length > 16) return new Set(ids).size !== ids.length;
  for (let i = 1; i < ids.length; i++) for (let j = 0; j < i; j++) if (ids[i] === ids[j]) return true;
  return false;
}

function prepare(
  p: DeviceProgram,
  deviceIds: readonly number[],
  inputs: readonly (readonly DeviceBuffer[])[],
  opts: LaunchOptions,
): Prepared {
  const { sig } = p;
  const fn = `launch(${sig.name})`;
  if (deviceIds.length !== inputs.length)
    throw new Error(`${fn}: ${deviceIds.length} devices but ${inputs.length} input lists`);
  if (deviceIds.length > p.numDevices)
    throw new Error(`${fn}: ${deviceIds.length} devices given; the program was created for ${p.numDevices}`);
  if (repeatsDevice(deviceIds)) throw new Error(`${fn}: device ids [${deviceIds.join(", ")}] repeat a device`);
  // plain loops, no per-call closures: this runs once per launch on the JS thread before the devices start
  const devs: RuntimeDevice[] = [];
  const inData: HostArray[][] = [],
    inShapes: (readonly number[])[][] = [];
  for (let r = 0; r < deviceIds.length; r++) {
    const dev = runtimeDevice(deviceIds[r]);
    devs.push(dev);
    const ins = inputs[r];
    if (ins.length !== sig.inputNames.length)
      throw new Error(
        `${fn}: device ${deviceIds[r]} (rank ${r}) has ${ins.length} inputs; the program takes ${sig.inputNames.length}`,
      );
    const ds: HostArray[] = [],
      ss: (readonly number[])[] = [];
    for (let k = 0; k < ins.length; k++) {
      const b = ins[k];
      if (b.dtype !== sig.inputDTypes[k])
        throw new TypeError(
          `${fn}: input ${k} (${sig.inputNames[k]}) of device ${deviceIds[r]} is ${b.dtype}; the program expects ${sig.inputDTypes[k]}`,
        );
      if (b.device !== dev)
        throw new Error(`${fn}: input ${k} of rank ${r} lives on device ${b.device.id}, not on device ${deviceIds[r]}`);
      ds.push(b.data as HostArray);
      ss.push(wireShape(b.dtype, b.shape));
    }
    inData.push(ds);
    inShapes.push(ss);
  }
  // ORT writes every element of each output
  const outs: DeviceBuffer[][] = [];
  const outData: HostArray[][] = [];
  const { outputDTypes, outputShapes } = sig;
  const wireOutShapes = p.wireOutputShapes;
  try {
    for (const d of devs) {
      const os: DeviceBuffer[] = [],
        ds: HostArray[] = [];
      outs.push(os);
      outData.push(ds);
      for (let k = 0; k < outputDTypes.length; k++) {
        const b = DeviceBuffer.uninitialized(d, outputDTypes[k], outputShapes[k]);
        os.push(b);
        ds.push(b.data as HostArray);
      }
    }
  } catch (e) {
    // past a device's bytesLimit: nothing allocated for this launch stays accounted
    for (const os of outs) for (const b of os) b.free();
    throw e;
  }
  const failRank = opts.failRank ?? failNext;
  failNext = undefined;
  const delayMs = opts.delayMs ?? delayNext;
  delayNext = undefined;
  const o: Prepared["args"][6] = { timeoutMs: opts.timeoutMs ?? config.collectiveTimeoutMs };
  if (failRank !== undefined) o.failRank = failRank;
  if (delayMs) o.delayMs = delayMs;
  if (observer) o.recordCollectives = 1;
  if (opts.process) o.process = opts.process;
  // every rank's output shapes are the program's (one list shared by the ranks)
  const outShapes = devs.map(() => wireOutShapes);
  const args: Prepared["args"] = [p.handle, deviceIds, inData, inShapes, outData, outShapes, o];
  return { devs, inputs, outs, args };
}

/** What a launch observer sees: the program, each rank's timing, and whether some rank failed. */
export interface LaunchRecord {
  readonly program: string;
  readonly timeline: readonly RankTiming[];
  readonly failed: boolean;
  /** collectives[rank]: the collectives that rank ran (recorded while an observer is installed). */
  readonly collectives: readonly (readonly CollectiveTiming[])[];
}
export type { CollectiveTiming };
let observer: ((r: LaunchRecord) => void) | null = null;
/** Installs (null: removes) the function told about every completed launch (the profiler's hook); returns the previous one. */
export function setLaunchObserver(f: ((r: LaunchRecord) => void) | null): ((r: LaunchRecord) => void) | null {
  const prev = observer;
  observer = f;
  return prev;
}

let lastTimeline: readonly RankTiming[] = [];
let launches = 0;
/** How many launches completed (or failed on the devices) in this process (tests: did the device runtime run). */
export function launchCount(): number {
  return launches;
}
/** The per-rank timings of the most recent completed launch (tests and the profiler); settles the launches in flight first. */
export function lastLaunchTimeline(): readonly RankTiming[] {
  synchronize();
  return lastTimeline;
}

/** The launch's timeline and its error (root cause first, one line per distinct message), or null when it succeeded. */
function outcome(
  p: DeviceProgram,
  deviceIds: readonly number[],
  r: DeviceLaunchResult,
): { timeline: RankTiming[]; error: Error | null } {
  // plain loops: this runs once per launch on the JS thread
  const timeline: RankTiming[] = [];
  let longest = 0,
    failed = false;
  for (let rank = 0; rank < deviceIds.length; rank++) {
    const start = r.start[rank],
      end = r.end[rank];
    timeline.push({ rank, device: deviceIds[rank], thread: r.threads[rank], start, end });
    if (end - start > longest) longest = end - start;
    if (r.errors[rank]) failed = true;
  }
  launches++;
  p.lastRunUs = longest;
  if (observer) observer({ program: p.sig.name, timeline, failed, collectives: r.collectives ?? [] });
  if (!failed) return { timeline, error: null };
  const errs = r.errors
    .map((e, rank) => (e ? { rank, e } : null))
    .filter((x): x is { rank: number; e: string } => x !== null);
  // ORT wraps a failing node's message once per enclosing node (If, Loop): keep the innermost
  const clean = errs.map(({ rank, e }) => ({
    rank,
    e: e.replace(/Non-zero status code returned while running \w+ node\. Name:'[^']*' Status Message: /g, ""),
  }));
  // the root cause first (ranks released because a peer failed say so), one line per distinct message
  clean.sort((a, b) => Number(/released because/.test(a.e)) - Number(/released because/.test(b.e)) || a.rank - b.rank);
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const { e } of clean) {
    const body = e.replace(/^device \d+ \(rank \d+\): /, "").replace(/ on rank \d+(?=:)/, "");
    if (seen.has(body)) continue;
    seen.add(body);
    lines.push(e);
  }
  return {
    timeline,
    error: new Error(
      `device runtime: program ${p.sig.name} failed on devices [${deviceIds.join(", ")}]: ${lines.join("; ")}`,
    ),
  };
}
let lastStamps: LaunchStamps | null = null;
/** The native stamps of the most recent completed launch (null before any, or from an addon without them). */
export function lastLaunchStamps(): LaunchStamps | null {
  return lastStamps;
}

function finish(p: DeviceProgram, deviceIds: readonly number[], prep: Prepared, r: DeviceLaunchResult): LaunchResult {
  const { timeline, error } = outcome(p, deviceIds, r);
  lastTimeline = timeline;
  if (error) {
    for (const os of prep.outs) for (const b of os) b.free();
    throw error;
  }
  const stamps = stampsOf(r);
  return { outputs: prep.outs, timeline, ...(stamps ? { stamps } : {}) };
}
/** The launch's native stamps (undefined from an addon without them); records them as the latest. */
function stampsOf(r: DeviceLaunchResult): LaunchStamps | undefined {
  const stamps =
    r.enter === undefined
      ? undefined
      : {
          enter: r.enter,
          submitted: r.submitted ?? 0,
          complete: r.complete ?? 0,
          woke: r.woke ?? 0,
          callerRank: r.callerRank ?? -1,
        };
  lastStamps = stamps ?? null;
  return stamps;
}

/** Monotonic microseconds on the clock of the runtime's timestamps (CLOCK_MONOTONIC, as std::chrono::steady_clock on Linux). */
export function nowUs(): number {
  return Number(process.hrtime.bigint()) / 1000;
}

/** Launches dispatched and not yet settled, oldest first. */
const inFlight: PendingLaunch[] = [];
/** Launches kept in flight before a dispatch waits for the oldest (bounds the memory held by pending work). */
const MAX_IN_FLIGHT = 8;
/**
 * A program whose last run took less than this (microseconds) is dispatched with rank 0 run on the calling thread when
 * device 0's stream is idle (as XLA's CPU client runs cheap computations inline): handing a run to an executor costs a
 * thread wake-up (10-30 us here), as much as the run itself, and asynchrony buys nothing for so little work.
 */
let inlineRunUs = 200;
/** Sets the inline threshold (microseconds; 0: always hand every rank to its executor); returns the previous one. */
export function setInlineRunUs(us: number): number {
  const prev = inlineRunUs;
  inlineRunUs = us;
  return prev;
}

/**
 * When a costly program's launch has as many ranks as the host has cores, every core already has a rank to run: the
 * calling thread's own work after dispatch then only takes a core from a rank, and its wait costs a wake-up. It runs
 * rank 0 itself instead (when device 0's stream is idle), so the runnable threads match the cores, as one process per
 * core runs its rank on its own thread. "auto" (the default): that rule; "always": every dispatch; "never": only cheap
 * programs (the rule before). `JAXTS_CALLER_RUNS` sets the start value (A/B).
 */
export type CallerRunsMode = "auto" | "always" | "never";
const CALLER_RUNS_MODES: readonly CallerRunsMode[] = ["auto", "always", "never"];
let callerRunsMode: CallerRunsMode = ((): CallerRunsMode => {
  const v = process.env.JAXTS_CALLER_RUNS;
  return CALLER_RUNS_MODES.includes(v as CallerRunsMode) ? (v as CallerRunsMode) : "auto";
})();
/** Sets when dispatch runs rank 0 of a costly program on the calling thread; returns the previous mode. */
export function setCallerRunsMode(mode: CallerRunsMode): CallerRunsMode {
  if (!CALLER_RUNS_MODES.includes(mode))
    throw new Error(`setCallerRunsMode: mode must be one of ${CALLER_RUNS_MODES.join(", ")}, got ${String(mode)}`);
  const prev = callerRunsMode;
  callerRunsMode = mode;
  return prev;
}
/**
 * Whether a dispatch of `program` on `ranks` devices asks the addon to run rank 0 on the calling thread. "auto" does
 * so only in a synchronous loop (the program's previous launch was waited for, blocking, before the next dispatch), so
 * pipelined dispatch and awaited launches (`await x.data()`) stay asynchronous.
 */
function callerRunsRank0(program: DeviceProgram, ranks: number): boolean {
  if (program.lastRunUs < inlineRunUs) return true;
  if (callerRunsMode === "never") return false;
  return callerRunsMode === "always" || (program.waitedInLoop && ranks >= cores());
}
/** Dispatches so far (a launch settled while it is still the latest one was waited for before any other dispatch). */
let dispatches = 0;
let hostCores = 0;
function cores(): number {
  return (hostCores ||= availableParallelism());
}

/**
 * Sets how long (microseconds) an idle device executor polls for its next launch before it blocks (0: block at once;
 * the default 250 keeps a tight loop of small launches free of thread wake-ups); returns the previous value, or -1
 * when the addon cannot change it.
 */
export function setExecutorSpinUs(us: number): number {
  const f = api().devSetExecutorSpin;
  return f ? f(Math.max(0, Math.round(us))) : -1;
}

/**
 * A dispatched launch: its output buffers exist at once (pending until the devices finish: each device's stream runs
 * its programs in submission order, so a later launch on the same devices may consume them without a wait).
 */
export class PendingLaunch extends PendingRun<DeviceLaunchResult> implements PendingWork {
  /** outputs[rank][k]: output k of the device at that rank (the caller owns them; free() is safe while pending). */
  readonly outputs: DeviceBuffer[][];
  /** nowUs() when dispatch returned to the caller. */
  readonly dispatchedAt: number;
  #held: DeviceBuffer[];
  #timeline: RankTiming[] = [];
  #stamps: LaunchStamps | undefined;
  #deps: PendingWork[];
  readonly #seq = ++dispatches;
  /** @internal */
  constructor(
    readonly program: DeviceProgram,
    readonly deviceIds: readonly number[],
    prep: Prepared,
    handle: object,
    deps: PendingWork[],
  ) {
    super(handle);
    this.outputs = prep.outs;
    this.#deps = deps;
    // the launch holds a reference to every buffer it reads or writes until it settles
    const held: DeviceBuffer[] = [];
    for (const ins of prep.inputs) for (const b of ins) held.push(b.retain());
    for (const os of prep.outs)
      for (const b of os) {
        held.push(b.retain());
        b.setWriter(this);
      }
    this.#held = held;
    this.dispatchedAt = nowUs();
  }
  /** The per-rank timings (empty until settled). */
  get timeline(): readonly RankTiming[] {
    return this.#timeline;
  }
  /** The native stamps (undefined until settled, or from an addon without them). */
  get stamps(): LaunchStamps | undefined {
    return this.#stamps;
  }
  /**
   * `forOutputs`: a blocking wait for this launch's outputs (wait(): reading them, blockUntilReady), not synchronize(),
   * the in-flight bound or the completion of an awaited launch.
   */
  protected joinNative(h: object, forOutputs: boolean): DeviceLaunchResult {
    this.program.waitedInLoop = forOutputs && this.#seq === dispatches;
    return api().devWait(h);
  }
  protected record(r: DeviceLaunchResult): Error | null {
    const { timeline, error } = outcome(this.program, this.deviceIds, r);
    this.#timeline = timeline;
    lastTimeline = timeline;
    this.#stamps = stampsOf(r);
    const depError = failedDependency(
      this.#deps,
      (m) =>
        `device runtime: program ${this.program.sig.name} on devices [${this.deviceIds.join(", ")}] consumed an output of a failed launch: ${m}`,
    );
    this.#deps = []; // settled: no chain of earlier launches stays reachable
    for (const b of this.#held) b.free();
    this.#held = [];
    const i = inFlight.indexOf(this);
    if (i >= 0) inFlight.splice(i, 1);
    return error ?? depError;
  }
  /**
   * The devices' completion callback (one per launch), then the launches whose outputs it consumed: their ranks on
   * other devices may still run, and their errors become this launch's at settle. Without devNotify, settle blocks.
   */
  protected async whenDone(h: object): Promise<void> {
    await notified(api().devNotify, h);
    await depsSettled(this.#deps);
  }
}

/** devNotify completion callbacks made and not yet released (tests: awaited launches leak none; -1: addon without them). */
export function liveCompletionCallbacks(): number {
  const f = api().devLiveNotifies;
  return f ? f() : -1;
}

/**
 * Async dispatch: enqueues `program` on each device's stream (rank r on deviceIds[r], with inputs[r], which may be
 * pending outputs of earlier launches) and returns at once. Errors surface at wait() (or when reading an output).
 */
export function dispatch(
  program: DeviceProgram,
  deviceIds: readonly number[],
  inputs: readonly (readonly DeviceBuffer[])[],
  opts: LaunchOptions = {},
): PendingLaunch {
  while (inFlight.length >= MAX_IN_FLIGHT) inFlight[0].settle();
  const deps: PendingWork[] = [];
  for (const ins of inputs)
    for (const b of ins) {
      const w = b.writer;
      if (w && !deps.includes(w)) deps.push(w);
    }
  const prep = prepare(program, deviceIds, inputs, opts);
  if (!prep.args[6].delayMs && callerRunsRank0(program, deviceIds.length)) prep.args[6].callerRuns = 1;
  const h = api().devLaunch(...prep.args);
  const p = new PendingLaunch(program, deviceIds, prep, h, deps);
  inFlight.push(p);
  return p;
}

/** Waits for every launch and block copy in flight (errors stay with their outputs). */
export function synchronize(): void {
  while (inFlight.length) inFlight[0].settle();
  settleAsyncRuns(); // single-device jit runs (the ONNX backend's async dispatch)
  synchronizeCopies();
}
/** Launches dispatched and not yet settled. */
export function launchesInFlight(): number {
  return inFlight.length;
}

/**
 * Runs `program` on every device of `deviceIds` (rank r on device deviceIds[r], with inputs[r]) concurrently; the
 * promise resolves when all finished. Output buffers are allocated on each device (the caller frees them).
 */
export function launch(
  program: DeviceProgram,
  deviceIds: readonly number[],
  inputs: readonly (readonly DeviceBuffer[])[],
  opts: LaunchOptions = {},
): Promise<LaunchResult> {
  const prep = prepare(program, deviceIds, inputs, opts);
  return new Promise<LaunchResult>((resolve, reject) => {
    const [h, ids, ins, ishapes, outs, oshapes, o] = prep.args;
    api().devLaunch(h, ids, ins, ishapes, outs, oshapes, o, (r: DeviceLaunchResult) => {
      try {
        resolve(finish(program, deviceIds, prep, r));
      } catch (e) {
        reject(e);
      }
    });
  });
}

/** launch, blocking the calling thread until every device finished (for synchronous callers). */
export function launchSync(
  program: DeviceProgram,
  deviceIds: readonly number[],
  inputs: readonly (readonly DeviceBuffer[])[],
  opts: LaunchOptions = {},
): LaunchResult {
  const prep = prepare(program, deviceIds, inputs, opts);
  const a = api();
  // the calling thread blocks anyway: it runs rank 0 itself when that device's stream is idle (one hand-off fewer)
  const [h0, ids, ins, ishapes, outs, oshapes, o] = prep.args;
  const h = a.devLaunch(h0, ids, ins, ishapes, outs, oshapes, { ...o, callerRuns: 1 });
  return finish(program, deviceIds, prep, a.devWait(h));
}

/** Rendezvous the shared-memory communicator holds open (0 when no launch is in flight). */
export function openRendezvous(): number {
  return api().devOpenRendezvous();
}
