/** @file ONNX Runtime sessions of compiled steps: options by work and size, sharing by model content (reference counted), and running a step (outputs into pooled buffers when the native runner allows). */
import { createHash } from "node:crypto";
import { availableParallelism } from "node:os";
import { ArrayImpl } from "../../core/array-impl.js";
import type { ShapedArray } from "../../core/aval.js";
import { config } from "../../core/config.js";
import { type DType, isComplex, realDType } from "../../core/dtype.js";
import type { OnnxStep } from "../../compiler/compile.js";
import { settleAsyncRuns } from "./async-run.js";
import { onnxBackendOptions } from "./backend-options.js";
import { own, recycle } from "./buffer-pool.js";
import type { DType as GDType, HostArray } from "./graph-builder.js";
import {
  type FastRunner,
  type HostTensor,
  type OrtSession,
  type RunOptions,
  type SessionOptions,
  createSessionSync,
  fastRunner,
  runSessionSync,
  storageCtor,
} from "./ort-runtime.js";
import { RunFailure, acquireOutput } from "./run-errors.js";

// small eager graphs gain nothing from ORT's graph optimizer, which triples session creation time
const EAGER_SESSION: SessionOptions = {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  graphOptimizationLevel: "disabled",
  logSeverityLevel: 3,
};
const EAGER_SESSION_OPT: SessionOptions = { ...EAGER_SESSION, graphOptimizationLevel: "basic" };
// small jitted programs: constant folding only; big ones get ORT's fusions too
const JIT_SESSION_SMALL: SessionOptions = { ...EAGER_SESSION, graphOptimizationLevel: "basic" };
const JIT_SESSION: SessionOptions = { ...EAGER_SESSION, graphOptimizationLevel: "all" };

/** Session options of a compiled step: threads by its work, graph optimizations by its size (exported for tests). */
export function sessionOptionsFor(step: Pick<OnnxStep, "work" | "nodeCount">, jit: boolean): SessionOptions {
  const big = step.work >= onnxBackendOptions.parallelWork;
  const threads = config.intraOpThreads > 0 ? config.intraOpThreads : big ? availableParallelism() : 1;
  if (!jit) {
    const base = step.nodeCount > 6 ? EAGER_SESSION_OPT : EAGER_SESSION;
    // a big eager op (a large matmul, a transcendental over millions of elements) gets every core; its workers
    // sleep between calls instead of spinning, since eager code runs other work (and other sessions) in between
    return threads === 1
      ? base
      : { ...base, intraOpNumThreads: threads, configEntries: { "session.intra_op.allow_spinning": "0" } };
  }
  const base = big || step.work >= onnxBackendOptions.optimizeWork ? JIT_SESSION : JIT_SESSION_SMALL;
  if (threads === 1) return base;
  // ORT's default spinning: a worker that has just finished a parallel section waits for the next one
  // hot instead of sleeping, which is what multithreaded GEMMs back to back want (raw ORT's default too)
  return { ...base, intraOpNumThreads: threads };
}

/** An ORT session shared by every step whose model bytes and options are identical (reference counted). */
export interface SharedSession {
  readonly session: OrtSession;
  readonly key: string;
  refs: number;
}
const sessionsByContent = new Map<string, SharedSession>();
let sessionsCreated = 0;

export function acquireSession(model: Uint8Array, opts: SessionOptions): SharedSession {
  const key = `${JSON.stringify(opts)}|${createHash("sha1").update(model).digest("base64")}`;
  let s = sessionsByContent.get(key);
  if (!s) {
    s = { session: createSessionSync(model, opts), key, refs: 0 };
    sessionsCreated++;
    sessionsByContent.set(key, s);
  }
  s.refs++;
  return s;
}
export function releaseSession(s: SharedSession): void {
  if (--s.refs > 0) return;
  // an asynchronous run on device 0 may still be running this session (it borrows it)
  settleAsyncRuns();
  sessionsByContent.delete(s.key);
  s.session.dispose();
}

/** The ONNX element type a value of dtype d travels as (a complex value is its float storage [..., 2]). */
const wireDType = (d: DType): GDType => (isComplex(d) ? realDType(d) : d) as GDType;
/** The ONNX shape of a value (a complex value has a trailing lane axis of 2). */
const wireShape = (a: { dtype: DType; shape: readonly number[] }): readonly number[] =>
  isComplex(a.dtype) ? [...a.shape, 2] : a.shape;

export interface ReadyStep {
  step: OnnxStep;
  shared: SharedSession;
  runOpts: RunOptions;
  /** Cheap synchronous runner (null: bfloat16 values or no native binding; use runSessionSync). */
  fast: FastRunner | null;
}

export function prepareStep(step: OnnxStep, jit: boolean): ReadyStep {
  const shared = acquireSession(step.model, sessionOptionsFor(step, jit));
  const bf = step.outAvals.map((a, i) => [step.outputNames[i], a.dtype] as const).filter(([, d]) => d === "bfloat16");
  const runOpts: RunOptions = bf.length ? { outputDTypes: Object.fromEntries(bf) as Record<string, GDType> } : {};
  const fast = fastRunner(
    shared.session,
    step.inputNames.map((name, i) => ({ name, dtype: wireDType(step.inputDTypes[i]) })),
    step.outputNames.map((name, i) => ({ name, dtype: wireDType(step.outAvals[i].dtype) })),
  );
  return { step, shared, runOpts, fast };
}

export function runStep(
  r: ReadyStep,
  args: readonly ArrayImpl[],
  outAvals: readonly ShapedArray[] = r.step.outAvals,
): ArrayImpl[] {
  const { step } = r;
  const n = args.length;
  let outs: HostArray[];
  if (r.fast) {
    const data = new Array<HostArray>(n),
      shapes = new Array<readonly number[]>(n);
    for (let i = 0; i < n; i++) {
      const a = args[i];
      data[i] = a.buffer as HostArray;
      shapes[i] = wireShape(a);
    }
    if (r.fast.writesOutputs) return runIntoPool(r.fast, data, shapes, outAvals);
    try {
      outs = r.fast.run(data, shapes);
    } catch (e) {
      throw new RunFailure(e as Error);
    }
  } else {
    const feeds: Record<string, HostTensor> = {};
    for (let i = 0; i < n; i++) {
      const a = args[i];
      feeds[step.inputNames[i]] = { dtype: wireDType(a.dtype), shape: wireShape(a), data: a.buffer } as HostTensor;
    }
    try {
      outs = runSessionSync(r.shared.session, feeds, step.outputNames, r.runOpts).map((t) => t.data);
    } catch (e) {
      throw new RunFailure(e as Error);
    }
  }
  const res = new Array<ArrayImpl>(outs.length);
  for (let i = 0; i < outs.length; i++) res[i] = new ArrayImpl(outAvals[i], outs[i] as ArrayImpl["buffer"]);
  return res;
}

/**
 * A run whose outputs ORT writes straight into pooled buffers (jaxts's native runner): steady-state calls
 * allocate no fresh memory, whose first touch costs about as much as a 256x256 GEMM here.
 */
function runIntoPool(
  fast: FastRunner,
  data: readonly HostArray[],
  shapes: readonly (readonly number[])[],
  outAvals: readonly ShapedArray[],
): ArrayImpl[] {
  const m = outAvals.length;
  const bufs = new Array<HostArray | null>(m).fill(null),
    outShapes = new Array<readonly number[] | null>(m);
  let outs: HostArray[];
  try {
    for (let i = 0; i < m; i++) {
      const a = outAvals[i];
      // empty outputs: ORT allocates (there is no memory to hand it)
      const w = isComplex(a.dtype) ? a.update({ dtype: realDType(a.dtype), shape: wireShape(a) }) : a;
      bufs[i] = a.size > 0 ? acquireOutput(storageCtor(wireDType(a.dtype)), w, i) : null;
      outShapes[i] = w.shape;
    }
    try {
      outs = fast.run(data, shapes, bufs, outShapes);
    } catch (e) {
      throw new RunFailure(e as Error);
    }
  } catch (e) {
    for (const b of bufs) if (b) recycle(b as ArrayImpl["buffer"]);
    throw e;
  }
  const res = new Array<ArrayImpl>(m);
  for (let i = 0; i < m; i++) res[i] = own(new ArrayImpl(outAvals[i], outs[i] as ArrayImpl["buffer"]));
  return res;
}

/** ORT sessions created so far, and alive now. */
export function sessionStats(): { sessionsCreated: number; sessionsAlive: number } {
  return { sessionsCreated, sessionsAlive: sessionsByContent.size };
}
