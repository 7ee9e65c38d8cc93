/** @file Async dispatch of single-device jit programs: the backend's own ORT session runs on device 0's native executor (a one-rank device program borrowing it) and the outputs are returned at once, pending until the run settles. */
import { ArrayImpl, failedDependency, type PendingWrite } from "../../core/array-impl.js";
import type { ShapedArray } from "../../core/aval.js";
import { config } from "../../core/config.js";
import { type DType, isComplex } from "../../core/dtype.js";
import { notified, PendingRun } from "../../core/pending-run.js";
import type { OnnxStep, Program } from "../../compiler/compile.js";
import { own, recycle } from "./buffer-pool.js";
import { ONNX_DTYPE, type DType as GDType, type HostArray } from "./graph-builder.js";
import {
  type DeviceAddon,
  type DeviceLaunchResult,
  addonSessionHandle,
  deviceAddon,
  storageCtor,
} from "./ort-runtime.js";
import { acquireOutput, RunFailure, runErrorOn } from "./run-errors.js";
import type { ReadyStep } from "./sessions.js";

/** Monotonic microseconds on the native runtime's clock (CLOCK_MONOTONIC, as std::chrono::steady_clock on Linux). */
export function asyncNowUs(): number {
  return Number(process.hrtime.bigint()) / 1000;
}

let addonApi: DeviceAddon | null | undefined;
function devices(): DeviceAddon | null {
  if (addonApi === undefined) addonApi = deviceAddon().api;
  return addonApi;
}

/** Runs dispatched and not yet settled, oldest first (device 0's stream runs them in this order). */
const inFlight: AsyncRun[] = [];
/** Runs kept in flight before a dispatch waits for the oldest (bounds the memory pending work holds). */
const MAX_IN_FLIGHT = 8;
let failNext = false;
let delayNext = 0;
let dispatched = 0;

/** Test hook: the next asynchronous run fails on the device before running (as the device runtime's failRank). */
export function failNextAsyncRun(): void {
  failNext = true;
}
/** Test hook: the next asynchronous run sleeps `ms` on the device before running (a run that stays pending a while). */
export function delayNextAsyncRun(ms: number): void {
  if (!(Number.isInteger(ms) && ms >= 0 && ms <= 60_000))
    throw new RangeError(`delayNextAsyncRun: expected an integer number of milliseconds in [0, 60000], got ${ms}`);
  delayNext = ms;
}
let deferred = 0;
/** Asynchronous runs dispatched so far and in flight now, and storage waiting for a run to settle before it is pooled (tests). */
export function asyncRunStats(): { dispatched: number; inFlight: number; deferredReleases: number } {
  return { dispatched, inFlight: inFlight.length, deferredReleases: deferred };
}
/** Waits for every asynchronous run in flight (errors stay with their outputs). */
export function settleAsyncRuns(): void {
  while (inFlight.length) inFlight[0].settle();
}

/**
 * One asynchronous run of a compiled program on device 0: the writer of its outputs' host storage and the latest user
 * of its inputs'; storage it reads or writes is recycled only once it settled (afterSettle).
 */
export class AsyncRun extends PendingRun<DeviceLaunchResult> implements PendingWrite {
  /** asyncNowUs() when the dispatch returned to the caller. */
  readonly dispatchedAt: number;
  /** When the device started and finished the run (microseconds, asyncNowUs's clock; 0 until settled). */
  start = 0;
  end = 0;
  #deps: AsyncRun[];
  #after: (() => void)[] = [];
  constructor(
    private readonly prog: AsyncProgram,
    private readonly inputs: readonly ShapedArray[],
    handle: object,
    deps: AsyncRun[],
  ) {
    super(handle);
    this.#deps = deps;
    this.dispatchedAt = asyncNowUs();
  }
  /** Whether the device finished the run (settle() would not block); false without the addon's devDone. */
  get finished(): boolean {
    const h = this.handle;
    return h === null || devices()?.devDone?.(h) === true;
  }
  protected joinNative(h: object): DeviceLaunchResult {
    return devices()!.devWait(h);
  }
  protected record(r: DeviceLaunchResult): Error | null {
    this.start = r.start[0];
    this.end = r.end[0];
    const name = this.prog.name;
    const e = r.errors[0];
    let error: Error | null;
    if (e) {
      // the device runtime's failure, mapped as a synchronous run's (an ORT allocation failure: OutOfMemoryError)
      const original = new Error(e);
      error = runErrorOn(new RunFailure(original), `jit(${name})`, this.inputs) as Error;
    } else {
      this.prog.lastRunUs = this.end - this.start;
      error = failedDependency(
        this.#deps,
        (m) => `jit(${name}): consumed an output of a failed asynchronous run: ${m}`,
      );
    }
    this.#deps = [];
    const i = inFlight.indexOf(this);
    if (i >= 0) inFlight.splice(i, 1);
    const after = this.#after;
    this.#after = [];
    deferred -= after.length;
    for (const f of after) f();
    return error;
  }
  /** The device's completion callback (without the addon's devNotify, settle blocks). */
  protected whenDone(h: object): Promise<void> {
    return notified(devices()?.devNotify, h);
  }
  afterSettle(f: () => void): void {
    if (this.settled) f();
    else {
      deferred++;
      this.#after.push(f);
    }
  }
}

/** Whether a value of dtype d travels unchanged between host storage and the device program (no bfloat16, no complex). */
const plainDType = (d: DType): boolean => d !== "bfloat16" && !isComplex(d) && d in ONNX_DTYPE;

/** A single-ONNX-step program's device form: a one-rank device program and how its outputs map to the program's. */
export class AsyncProgram {
  /** The device's run time of the latest settled run (microseconds). */
  lastRunUs = 0;
  readonly name: string;
  private readonly step: OnnxStep;
  private constructor(
    private readonly handle: object,
    /** The backend's session this program borrows (kept alive by this reference while runs are pending). */
    readonly ready: ReadyStep,
    private readonly program: Program,
    /** argOf[i]: the program input feeding step input i. */
    private readonly argOf: readonly number[],
    /** outOf[j]: the step output that program output j is. */
    private readonly outOf: readonly number[],
  ) {
    this.name = program.name;
    this.step = ready.step;
  }
  /**
   * The device form of `program` (one ONNX step, `ready` its session) or null when it cannot run asynchronously: no
   * device runtime, a session the native addon does not run, a bfloat16/complex/empty value, or an output that is an
   * input or a constant.
   */
  static create(program: Program, ready: ReadyStep): AsyncProgram | null {
    const api = devices();
    const session = addonSessionHandle(ready.shared.session);
    if (!api?.devProgramFromSession || !session) return null;
    const { step } = ready;
    const ok =
      step.inputDTypes.every(plainDType) &&
      step.outAvals.every((a) => plainDType(a.dtype) && a.size > 0) &&
      program.outAvals.every((a) => plainDType(a.dtype));
    if (!ok) return null;
    const outOf: number[] = [];
    for (let j = 0; j < program.outs.length; j++) {
      const o = program.outs[j];
      const k = typeof o === "number" ? step.outputs.indexOf(o) : -1;
      if (k < 0 || outOf.includes(k) || step.outAvals[k].dtype !== program.outAvals[j].dtype) return null;
      outOf.push(k);
    }
    const argOf = step.inputs.map((q) => program.inSlots.indexOf(q));
    if (argOf.some((i) => i < 0)) return null;
    const handle = api.devProgramFromSession(
      session,
      step.inputNames,
      step.inputDTypes.map((d) => ONNX_DTYPE[d as GDType]),
      step.outputNames,
      step.outAvals.map((a) => ONNX_DTYPE[a.dtype as GDType]),
    );
    return new AsyncProgram(handle, ready, program, argOf, outOf);
  }
  /**
   * Enqueues a run on device 0 and returns its outputs at once (pending), or null when some input cannot be read
   * without waiting (held by another runtime, or written by work other than an asynchronous run in flight).
   */
  dispatch(inputs: readonly ArrayImpl[]): ArrayImpl[] | null {
    const api = devices()!;
    const { step, program } = this;
    const n = this.argOf.length;
    const data = new Array<HostArray>(n),
      shapes = new Array<readonly number[]>(n);
    const deps: AsyncRun[] = [];
    for (let i = 0; i < n; i++) {
      const a = inputs[this.argOf[i]];
      if (a.external !== null || a.size === 0) return null;
      const w = a.pendingWrite;
      if (w !== null) {
        if (!(w instanceof AsyncRun) || w.settled) return null; // a failed writer: the synchronous path raises its error
        if (!deps.includes(w)) deps.push(w);
      }
      data[i] = a.storageNoWait as HostArray;
      shapes[i] = a.shape;
    }
    // finished runs hand their storage back now (device 0 runs them in order: the oldest finishes first)
    while (inFlight.length && inFlight[0].finished) inFlight[0].settle();
    while (inFlight.length >= MAX_IN_FLIGHT) inFlight[0].settle();
    const m = this.outOf.length;
    const outs = new Array<HostArray>(step.outAvals.length);
    const outShapes = step.outAvals.map((a) => a.shape);
    try {
      for (let k = 0; k < outs.length; k++)
        outs[k] = acquireOutput(storageCtor(step.outAvals[k].dtype as GDType), step.outAvals[k], k);
    } catch (e) {
      for (const b of outs) if (b) recycle(b as ArrayImpl["buffer"]);
      throw e;
    }
    const opts: { timeoutMs: number; failRank?: number; delayMs?: number } = { timeoutMs: config.collectiveTimeoutMs };
    if (failNext) {
      failNext = false;
      opts.failRank = 0;
    }
    if (delayNext > 0) {
      opts.delayMs = delayNext;
      delayNext = 0;
    }
    let h: object;
    try {
      h = api.devLaunch(this.handle, [0], [data], [shapes], [outs], [outShapes], opts);
    } catch (e) {
      for (const b of outs) recycle(b as ArrayImpl["buffer"]);
      throw e;
    }
    // the launch keeps `data` and `outs` alive until it is waited for (one reference to each list)
    const run = new AsyncRun(
      this,
      inputs.map((a) => a.aval),
      h,
      deps,
    );
    inFlight.push(run);
    dispatched++;
    for (let i = 0; i < n; i++) inputs[this.argOf[i]].setPendingRead(run);
    const res = new Array<ArrayImpl>(m);
    for (let j = 0; j < m; j++) {
      const a = own(new ArrayImpl(program.outAvals[j], outs[this.outOf[j]] as ArrayImpl["buffer"]));
      a.setPendingWrite(run);
      res[j] = a;
    }
    // step outputs the program does not return are garbage now (pooled once the run settles)
    for (let k = 0; k < outs.length; k++)
      if (!this.outOf.includes(k)) run.afterSettle(() => recycle(outs[k] as ArrayImpl["buffer"]));
    return res;
  }
}
