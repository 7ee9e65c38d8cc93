/** @file The "onnx" execution backend: cached eager sessions per primitive (shape-polymorphic for elementwise ops), one cached session per jitted program (or a fused elementwise kernel), interpreter fallback, donation. */
import { createHash } from "node:crypto";
import { availableParallelism } from "node:os";
import { ArrayImpl } from "../../core/array-impl.js";
import type { ShapedArray } from "../../core/aval.js";
import { config } from "../../core/config.js";
import { logCompile } from "../../core/compile-log.js";
import { monotonicUs, profiling, reportSpan } from "../../core/profile-events.js";
import { allocate } from "../../core/dtype.js";
import { OutOfMemoryError } from "../../core/errors.js";
import { Jaxpr, type JaxprEqn, Var } from "../../core/jaxpr.js";
import type { Params, Primitive } from "../../core/primitive.js";
import { type Backend, abstractEval, registerBackend, setBackendSelector } from "../../core/trace.js";
import { type Program, type OnnxStep, LOWERING_FAILED, compileJaxpr } from "../../compiler/compile.js";
import { CALL_PRIMITIVES } from "../../compiler/context.js";
import { summarizeOnnx } from "../../compiler/summary.js";
import { type FusedSpec, fuseElementwise } from "../../compiler/fuse-elementwise.js";
import { acquire, clearBufferPool, own, ownsStorage, recycle } from "./buffer-pool.js";
import { ParallelKernel } from "./fused-workers.js";
import { NativeFusedKernel } from "./native-fused.js";
import { type FastRunner, type HostTensor, type OrtSession, type RunOptions, type SessionOptions, createSessionSync, fastRunner, runSessionSync, storageCtor, trimNativeHeap } from "./ort-runtime.js";
import type { DType as GDType, HostArray } from "./graph-builder.js";

/**
 * Primitives whose ONNX lowering and reference impl agree bit for bit (exactly rounded arithmetic, data
 * movement, integer ops): only these may take the scalar shortcut, so eager, vmapped and jitted results agree.
 */
const EXACT_ON_SCALARS: ReadonlySet<string> = new Set([
  "neg", "sign", "floor", "ceil", "round", "is_finite", "abs", "not", "population_count", "clz", "copy", "sqrt",
  "add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor", "shift_left", "shift_right_logical",
  "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt", "ge", "nextafter",
  "broadcast_in_dim", "reshape", "transpose", "squeeze", "rev", "pad", "concatenate", "slice", "convert_element_type",
  "bitcast_convert_type", "select_n", "clamp", "iota", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
  "reduce_and", "reduce_or", "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
  "gather", "dynamic_slice", "dynamic_update_slice", "stop_gradient", "threefry2x32",
]);

/**
 * Primitives whose lowering does not depend on operand shapes (only on dtypes and ranks): their eager sessions
 * declare unknown dimensions, so one session serves every shape.
 */
const SHAPE_POLYMORPHIC: ReadonlySet<string> = new Set([
  "neg", "sign", "floor", "ceil", "round", "is_finite", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic",
  "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt",
  "abs", "erf", "erfc", "erf_inv", "lgamma", "digamma", "not", "population_count", "clz", "copy",
  "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "and", "or", "xor", "shift_left",
  "shift_right_logical", "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt", "ge",
  "convert_element_type", "bitcast_convert_type", "select_n", "clamp", "stop_gradient",
]);

/** Tunables (tests switch the scalar fast path and strict lowering). */
export const onnxBackendOptions = {
  /** Run primitives whose operands and results all have at most one element on the reference impl (exact, no ORT call). */
  scalarFastPath: true,
  /** Rethrow errors from lowering rules and session creation instead of falling back to the interpreter. */
  strict: false,
  /** Work (element operations) above which a jitted program gets all intra-op threads. */
  parallelWork: 1 << 18,
  /** Work above which a jitted program gets ORT's full graph optimizations (below: constant folding only, faster to create). */
  optimizeWork: 1 << 14,
  /** Run jitted pure float32 elementwise programs as one fused kernel (single pass over memory). */
  fuseElementwise: true,
  /** Fused kernels run natively (AVX-512/AVX2, native threads) when the native addon is loaded; else WebAssembly SIMD. */
  nativeFused: true,
};

// ------------------------------------------------------------------ run-time failures
/** An allocation for a program's value failed (reported as an OutOfMemoryError naming the program and its inputs). */
class AllocationFailure extends Error {
  constructor(readonly bytes: number, readonly what: string, readonly original: unknown) {
    super(`${what}: ${(original as Error)?.message ?? String(original)}`);
  }
}
/** ONNX Runtime failed while running a session. */
class RunFailure extends Error {
  constructor(readonly original: Error) { super(original.message); }
}

/** Storage for output `i` (aval `a`) from the buffer pool; a failed allocation becomes an AllocationFailure. */
function acquireOutput(ctor: ReturnType<typeof storageCtor>, a: ShapedArray, i: number): HostArray {
  try {
    return acquire(ctor, a.size) as HostArray;
  } catch (e) {
    throw new AllocationFailure(a.size * (ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT, `output ${i} (${a.str()})`, e);
  }
}

// ONNX Runtime's messages for a failed allocation (its CPU allocator, or a C++ bad_alloc)
const ORT_OOM = /Failed to allocate memory|bad_alloc|out of memory/i;

/**
 * The error a user sees for a failure while running `program` on `inputs`: an OutOfMemoryError for a failed
 * allocation (ours or ONNX Runtime's), a run failure naming the program, or the error itself (a host step's).
 */
function runError(e: unknown, program: string, inputs: readonly ArrayImpl[]): unknown {
  const shapes = () => inputs.map((a) => a.aval.str());
  if (e instanceof AllocationFailure) return new OutOfMemoryError(program, shapes(), e.bytes, e.message);
  if (!(e instanceof RunFailure)) return e;
  const msg = e.original.message.trim();
  if (ORT_OOM.test(msg)) {
    const m = /size\s*(\d+)/.exec(msg);
    return new OutOfMemoryError(program, shapes(), m ? Number(m[1]) : NaN, `ONNX Runtime: ${msg}`);
  }
  return new Error(`${program}: ONNX Runtime failed running the compiled program on inputs ${shapes().join(", ") || "(none)"}: ${msg}`, { cause: e.original });
}

const warned = new Set<string>();
/** Reports a fallback (a program or primitive that stops using ONNX Runtime) once per distinct message. */
function warnOnce(msg: string): void {
  if (warned.has(msg)) return;
  warned.add(msg);
  process.emitWarning(msg, { code: "JAXTS_FALLBACK" });
}
/** Warns once about each equation of `program` whose lowering rule threw and that therefore runs on the interpreter. */
function warnFailedLowerings(program: Program, where: string): void {
  for (const s of program.steps) {
    if (s.kind === "host" && s.reason.includes(`(${LOWERING_FAILED}: `)) warnOnce(`${where}: ${s.reason}; it runs on the reference interpreter instead`);
  }
}

// ------------------------------------------------------------------ sessions for compiled steps
// small eager graphs gain nothing from ORT's graph optimizer, which triples session creation time
const EAGER_SESSION: SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "disabled", logSeverityLevel: 3 };
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
    return threads === 1 ? base : { ...base, intraOpNumThreads: threads, configEntries: { "session.intra_op.allow_spinning": "0" } };
  }
  const base = big || step.work >= onnxBackendOptions.optimizeWork ? JIT_SESSION : JIT_SESSION_SMALL;
  if (threads === 1) return base;
  // ORT's default spinning: a worker that has just finished a parallel section waits for the next one
  // hot instead of sleeping, which is what multithreaded GEMMs back to back want (raw ORT's default too)
  return { ...base, intraOpNumThreads: threads };
}

/** An ORT session shared by every step whose model bytes and options are identical (reference counted). */
interface SharedSession {
  readonly session: OrtSession;
  readonly key: string;
  refs: number;
}
const sessionsByContent = new Map<string, SharedSession>();
let sessionsCreated = 0;

function acquireSession(model: Uint8Array, opts: SessionOptions): SharedSession {
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
function releaseSession(s: SharedSession): void {
  if (--s.refs > 0) return;
  sessionsByContent.delete(s.key);
  s.session.dispose();
}

interface ReadyStep {
  step: OnnxStep;
  shared: SharedSession;
  runOpts: RunOptions;
  /** Cheap synchronous runner (null: bfloat16 values or no native binding; use runSessionSync). */
  fast: FastRunner | null;
}

function prepareStep(step: OnnxStep, jit: boolean): ReadyStep {
  const shared = acquireSession(step.model, sessionOptionsFor(step, jit));
  const bf = step.outAvals.map((a, i) => [step.outputNames[i], a.dtype] as const).filter(([, d]) => d === "bfloat16");
  const runOpts: RunOptions = bf.length ? { outputDTypes: Object.fromEntries(bf) as Record<string, GDType> } : {};
  const fast = fastRunner(shared.session, step.inputNames.map((name, i) => ({ name, dtype: step.inputDTypes[i] as GDType })),
    step.outputNames.map((name, i) => ({ name, dtype: step.outAvals[i].dtype as GDType })));
  return { step, shared, runOpts, fast };
}

function runStep(r: ReadyStep, args: readonly ArrayImpl[], outAvals: readonly ShapedArray[] = r.step.outAvals): ArrayImpl[] {
  const { step } = r;
  const n = args.length;
  let outs: HostArray[];
  if (r.fast) {
    const data = new Array<HostArray>(n), shapes = new Array<readonly number[]>(n);
    for (let i = 0; i < n; i++) { const a = args[i]; data[i] = a.buffer as HostArray; shapes[i] = a.shape; }
    if (r.fast.writesOutputs) return runIntoPool(r.fast, data, shapes, outAvals);
    try { outs = r.fast.run(data, shapes); } catch (e) { throw new RunFailure(e as Error); }
  } else {
    const feeds: Record<string, HostTensor> = {};
    for (let i = 0; i < n; i++) {
      const a = args[i];
      feeds[step.inputNames[i]] = { dtype: a.dtype as GDType, shape: a.shape, data: a.buffer } as HostTensor;
    }
    try { outs = runSessionSync(r.shared.session, feeds, step.outputNames, r.runOpts).map((t) => t.data); } catch (e) { throw new RunFailure(e as Error); }
  }
  const res = new Array<ArrayImpl>(outs.length);
  for (let i = 0; i < outs.length; i++) res[i] = new ArrayImpl(outAvals[i], outs[i] as ArrayImpl["buffer"]);
  return res;
}

/**
 * A run whose outputs ORT writes straight into pooled buffers (jaxts's native runner): steady-state calls
 * allocate no fresh memory, whose first touch costs about as much as a 256x256 GEMM here.
 */
function runIntoPool(fast: FastRunner, data: readonly HostArray[], shapes: readonly (readonly number[])[], outAvals: readonly ShapedArray[]): ArrayImpl[] {
  const m = outAvals.length;
  const bufs = new Array<HostArray | null>(m).fill(null), outShapes = new Array<readonly number[] | null>(m);
  let outs: HostArray[];
  try {
    for (let i = 0; i < m; i++) {
      const a = outAvals[i];
      // empty outputs: ORT allocates (there is no memory to hand it)
      bufs[i] = a.size > 0 ? acquireOutput(storageCtor(a.dtype as GDType), a, i) : null;
      outShapes[i] = a.shape;
    }
    try { outs = fast.run(data, shapes, bufs, outShapes); } catch (e) { throw new RunFailure(e as Error); }
  } catch (e) {
    for (const b of bufs) if (b) recycle(b as ArrayImpl["buffer"]);
    throw e;
  }
  const res = new Array<ArrayImpl>(m);
  for (let i = 0; i < m; i++) res[i] = own(new ArrayImpl(outAvals[i], outs[i] as ArrayImpl["buffer"]));
  return res;
}

/** The parts of a jaxpr an executable keeps to re-plan itself (not the Jaxpr object, which keys the jit cache). */
type JaxprParts = Pick<Jaxpr, "constvars" | "invars" | "outvars" | "eqns">;

/** A pure elementwise program's fused kernel. */
interface Fused {
  readonly spec: FusedSpec;
  readonly kernel: ParallelKernel | NativeFusedKernel;
}

/** An array over `v`'s storage with aval `want` (a copy when the storage is pooled: it has one owner). */
function rewrap(v: ArrayImpl, want: ShapedArray): ArrayImpl {
  if (v.aval.weakType === want.weakType) return v;
  return new ArrayImpl(want, ownsStorage(v) ? v.buffer.slice() : v.buffer);
}

/**
 * Executables holding ONNX Runtime sessions, at most config.compiledCacheSize: beyond it, the least recently run
 * release theirs (and recreate them if run again), whatever keeps their jaxprs alive.
 */
const loaded = new Set<Executable>();
let runClock = 0;

function noteLoaded(exe: Executable): void {
  if (loaded.has(exe)) return;
  loaded.add(exe);
  const max = config.compiledCacheSize;
  while (loaded.size > max) {
    let oldest: Executable | null = null;
    for (const x of loaded) if (x !== exe && (!oldest || x.lastRun < oldest.lastRun)) oldest = x;
    if (!oldest) break;
    oldest.dispose();
  }
}

/** A compiled program with its sessions (created on first use), or its fused elementwise kernel. */
export class Executable {
  private ready: (ReadyStep | null)[];
  /** runClock at the latest run (orders executables for releasing sessions). */
  lastRun = 0;
  constructor(public program: Program, private readonly jit: boolean, private readonly parts?: JaxprParts, private fused: Fused | null = null) {
    this.ready = program.steps.map(() => null);
  }
  /** True when the program runs as a fused elementwise kernel instead of ONNX Runtime sessions. */
  get isFused(): boolean { return this.fused !== null; }
  /** The fused kernel, if any (tests inspect its thread statistics). */
  get fusedKernel(): ParallelKernel | NativeFusedKernel | null { return this.fused ? this.fused.kernel : null; }
  /** Replaces the plan by equation-by-equation execution (after ORT rejected a model); reported once. */
  fallBack(why: string): void {
    if (!this.parts) throw new Error(`onnx backend: ${why}`);
    warnOnce(`jit(${this.program.name}): ${why}; running its ${this.parts.eqns.length} equations one by one instead`);
    this.dispose();
    this.fused = null;
    this.program = interpretedProgram(this.parts, this.program, why);
    this.ready = this.program.steps.map(() => null);
  }
  /** Creates every session now (jit compiles ahead of the first call). */
  prepare(): this {
    if (this.fused) return this;
    this.program.steps.forEach((s, i) => { if (s.kind === "onnx" && !this.ready[i]) this.ready[i] = this.prepareAt(i, s); });
    this.prepared = true;
    return this;
  }
  /** Set once prepare() created the sessions: a later prepareAt recreates one that was released. */
  private prepared = false;
  private prepareAt(i: number, s: OnnxStep): ReadyStep {
    if (this.prepared && this.jit && config.logCompiles) {
      logCompile(`jit(${this.program.name}): recreating the ONNX Runtime session of step ${i} (released by the compiledCacheSize=${config.compiledCacheSize} eviction or clearCaches)`);
    }
    const r = prepareStep(s, this.jit);
    this.ready[i] = r;
    noteLoaded(this);
    return r;
  }
  /** Runs the program; `donate[i]` lets input i's storage become an output's (fused kernels write in place). */
  // A failure at run time raises (an OutOfMemoryError for a failed allocation): switching to equation-by-equation
  // execution would hide it and make every later call slow.
  run(inputs: readonly ArrayImpl[], donate?: readonly boolean[]): ArrayImpl[] {
    this.lastRun = ++runClock;
    try {
      return this.fused ? this.runFused(this.fused, inputs, donate) : this.runPlan(inputs);
    } catch (e) {
      throw runError(e, `jit(${this.program.name})`, inputs);
    }
  }
  private runPlan(inputs: readonly ArrayImpl[]): ArrayImpl[] {
    const p = this.program;
    if (p.steps.length === 1 && p.steps[0].kind === "onnx") return this.runSingle(p, p.steps[0], inputs);
    const env = new Array<ArrayImpl | undefined>(p.numSlots);
    p.inSlots.forEach((s, i) => { env[s] = inputs[i]; });
    const read = (o: number | ArrayImpl): ArrayImpl => (typeof o === "number" ? env[o]! : o);
    for (let k = 0; k < p.steps.length; k++) {
      const s = p.steps[k];
      if (s.kind === "onnx") {
        const r = this.ready[k] ?? this.prepareAt(k, s);
        const outs = runStep(r, s.inputs.map((q) => env[q]!));
        s.outputs.forEach((q, i) => { env[q] = outs[i]; });
      } else {
        const outs = runEqnOnHost(s.eqn, s.inputs.map(read));
        s.outputs.forEach((q, i) => { env[q] = outs[i]; });
      }
    }
    return p.outs.map((o, i) => rewrap(read(o), p.outAvals[i]));
  }
  /** One pass of the fused kernel; outputs come from the buffer pool, or are donated inputs' storage. */
  private runFused({ spec, kernel }: Fused, inputs: readonly ArrayImpl[], donate: readonly boolean[] | undefined): ArrayImpl[] {
    let n = 1;
    for (const d of spec.shape) n *= d;
    const ins = new Array<Float32Array>(spec.numInputs), scalars = new Array<number>(spec.numScalars);
    for (let i = 0; i < inputs.length; i++) {
      const [kind, k] = spec.params[i];
      const d = inputs[i].buffer as Float32Array;
      if (kind === "input") ins[k] = d; else scalars[k] = d[0];
    }
    const outs = new Array<Float32Array>(spec.outputs.length);
    const taken = new Set<number>();
    for (let j = 0; j < outs.length; j++) {
      let d: Float32Array | undefined;
      // a donated array whose storage nothing else shares becomes this output (same size, read before written)
      if (donate) {
        for (let i = 0; i < inputs.length && !d; i++) {
          if (donate[i] && !taken.has(i) && spec.params[i][0] === "input" && ownsStorage(inputs[i])) { taken.add(i); d = inputs[i].buffer as Float32Array; }
        }
      }
      outs[j] = d ?? (acquireOutput(Float32Array, this.program.outAvals[j], j) as Float32Array);
    }
    kernel.run(ins, scalars, outs, n);
    const res = new Array<ArrayImpl>(outs.length);
    for (let j = 0; j < outs.length; j++) res[j] = own(new ArrayImpl(this.program.outAvals[j], outs[j]));
    return res;
  }
  /** The common case, one ONNX model: feed the inputs it reads, pick the outputs (no environment). */
  private runSingle(p: Program, s: OnnxStep, inputs: readonly ArrayImpl[]): ArrayImpl[] {
    const r = this.ready[0] ?? this.prepareAt(0, s);
    const args = new Array<ArrayImpl>(s.inputs.length);
    for (let i = 0; i < args.length; i++) args[i] = inputs[p.inSlots.indexOf(s.inputs[i])];
    const outs = runStep(r, args);
    const res = new Array<ArrayImpl>(p.outs.length);
    for (let i = 0; i < res.length; i++) {
      const o = p.outs[i];
      let v: ArrayImpl;
      if (typeof o !== "number") v = o;
      else {
        const k = s.outputs.indexOf(o);
        v = k >= 0 ? outs[k] : inputs[p.inSlots.indexOf(o)];
      }
      res[i] = rewrap(v, p.outAvals[i]);
    }
    return res;
  }
  /** Releases this executable's sessions (shared sessions stay alive while other users hold them). */
  dispose(): void {
    for (const r of this.ready) if (r) releaseSession(r.shared);
    this.ready = this.ready.map(() => null);
    loaded.delete(this);
  }
}

/** Runs one equation by its reference impl (call primitives recurse into this backend). */
function runEqnOnHost(e: JaxprEqn, args: ArrayImpl[]): ArrayImpl[] {
  return onnxBackend.execute(e.primitive, args, e.params);
}

// ------------------------------------------------------------------ eager cache
interface EagerEntry {
  /** null: run the primitive's reference impl. */
  exe: ReadyStep | null;
  /** The shape-polymorphic step's polyCache key (its session is shared with other entries), or "". */
  poly: string;
  /** eagerClock at the latest use (the least recently used entries are released first). */
  used: number;
  outAvals: ShapedArray[];
  /** Shortcut: every output is empty, no run needed. */
  empty: boolean;
}

const objIds = new WeakMap<object, number>();
let nextObjId = 1;
/** A cheap, exact cache key for primitive params. */
function keyOf(v: unknown): string {
  switch (typeof v) {
    case "number": return Object.is(v, -0) ? "-0" : String(v);
    case "string": return JSON.stringify(v);
    case "boolean": return v ? "T" : "F";
    case "bigint": return `${v}n`;
    case "undefined": return "u";
    case "function": case "object": {
      if (v === null) return "N";
      if (Array.isArray(v)) { let s = "["; for (const x of v) s += keyOf(x) + ","; return s + "]"; }
      if (Object.getPrototypeOf(v) === Object.prototype) {
        let s = "{";
        for (const k in v as Record<string, unknown>) s += k + ":" + keyOf((v as Record<string, unknown>)[k]) + ",";
        return s + "}";
      }
      let id = objIds.get(v as object);
      if (id === undefined) { id = nextObjId++; objIds.set(v as object, id); }
      return `#${id}`;
    }
    default: return "?";
  }
}

const eagerCache = new Map<Primitive, Map<string, EagerEntry>>();
let eagerCount = 0;
let eagerClock = 0;

/** Releases an eager entry's session reference (and its shape-polymorphic step once no entry uses it). */
function releaseEager(e: EagerEntry): void {
  if (!e.exe) return;
  releaseSession(e.exe.shared);
  // the polyCache's own reference is the last one: drop the step
  if (e.poly && e.exe.shared.refs === 1 && polyCache.get(e.poly) === e.exe) {
    polyCache.delete(e.poly);
    releaseSession(e.exe.shared);
  }
  e.exe = null;
}

/** Keeps the eager cache within config.eagerCacheSize: releases the least recently used half when it is full. */
function evictEager(): void {
  const all: [Map<string, EagerEntry>, string, EagerEntry][] = [];
  for (const m of eagerCache.values()) for (const [k, e] of m) all.push([m, k, e]);
  all.sort((a, b) => a[2].used - b[2].used);
  const drop = all.length - (config.eagerCacheSize >> 1);
  for (let i = 0; i < drop; i++) {
    const [m, k, e] = all[i];
    releaseEager(e);
    m.delete(k);
    eagerCount--;
  }
}

/** Shape-polymorphic eager steps by (primitive, params, dtypes and ranks); each eager entry using one holds a reference. */
const polyCache = new Map<string, ReadyStep | null>();

function buildEager(prim: Primitive, args: readonly ArrayImpl[], params: Params, paramsKey: string): EagerEntry {
  const inAvals = args.map((a) => a.aval);
  const outAvals = abstractEval(prim, inAvals, params);
  const empty = outAvals.every((a) => a.size === 0);
  const tiny = onnxBackendOptions.scalarFastPath && prim.rules.impl !== undefined && EXACT_ON_SCALARS.has(prim.name)
    && inAvals.every((a) => a.size <= 1) && outAvals.every((a) => a.size <= 1);
  if (empty || tiny || !prim.rules.lower) return { exe: null, outAvals, empty, poly: "", used: 0 };
  const poly = SHAPE_POLYMORPHIC.has(prim.name);
  const pkey = poly ? `${prim.name}|${paramsKey}|${inAvals.map((a) => `${a.dtype}${a.ndim}`).join(",")}` : "";
  if (poly) {
    const hit = polyCache.get(pkey);
    if (hit !== undefined) {
      if (hit) hit.shared.refs++;
      return { exe: hit, outAvals, empty, poly: pkey, used: 0 };
    }
  }
  const exe = compileEager(prim, inAvals, outAvals, params, poly);
  if (poly) {
    polyCache.set(pkey, exe);
    if (exe) exe.shared.refs++;
  }
  return { exe, outAvals, empty, poly: pkey, used: 0 };
}

function compileEager(prim: Primitive, inAvals: ShapedArray[], outAvals: ShapedArray[], params: Params, poly: boolean): ReadyStep | null {
  const invars = inAvals.map((a) => new Var(a));
  const outVars = outAvals.map((a) => new Var(a));
  const j = new Jaxpr([], invars, outVars, [{ primitive: prim, inputs: invars, params, outVars }]);
  try {
    const program = compileJaxpr(j, { name: prim.name, strict: onnxBackendOptions.strict, dynamicShapes: poly });
    warnFailedLowerings(program, `${prim.name} on ${inAvals.map((a) => a.str()).join(", ")}`);
    const step = program.steps[0];
    if (program.steps.length !== 1 || step.kind !== "onnx" || step.outputs.length !== outAvals.length) return null;
    return prepareStep(step, false);
  } catch (e) {
    if (onnxBackendOptions.strict) throw e;
    warnOnce(`${prim.name} on ${inAvals.map((a) => a.str()).join(", ")}: building its ONNX model failed (${(e as Error).message}); it runs on its reference implementation instead`);
    return null;
  }
}

/** Cache statistics: ORT sessions created so far and alive, cached eager entries, shape-polymorphic eager steps. */
export function onnxCacheStats(): { sessionsCreated: number; sessionsAlive: number; eagerEntries: number; polySessions: number; loadedPrograms: number; sharedPrograms: number } {
  return { sessionsCreated, sessionsAlive: sessionsByContent.size, eagerEntries: eagerCount, polySessions: polyCache.size, loadedPrograms: loaded.size, sharedPrograms: byContent.size };
}

function executeEager(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[] {
  // call primitives (pjit, custom_jvp_call, checkpoint...) run their jaxpr; their impls come back here or to executeJaxpr
  if (!prim.rules.lower && CALL_PRIMITIVES.has(prim.name) && prim.rules.impl) return prim.rules.impl(args, params, []);
  // an effectful primitive without a lowering (a debug callback) runs its impl every time: no cache entry per closure,
  // and never the no-output shortcut
  if (prim.opts.effectful === true && !prim.rules.lower && prim.rules.impl) return prim.rules.impl(args, params, abstractEval(prim, args.map((a) => a.aval), params));
  // a jit call: its jaxpr is one compiled program (sessions sized for it), not an eager one-equation model
  if (prim.name === "pjit" && params.jaxpr instanceof Jaxpr) {
    // donation only for a call dispatched by jit on concrete arrays (a pjit equation evaluated inside another
    // program must leave its inputs alone: they may be read again)
    const donate = params.donate_at_dispatch === true ? (params.donated_invars as readonly boolean[] | undefined) : undefined;
    return runJitted(params.jaxpr, args, params.name as string | undefined, donate);
  }
  let m = eagerCache.get(prim);
  if (!m) { m = new Map(); eagerCache.set(prim, m); }
  const pk = keyOf(params);
  let key = pk;
  for (let i = 0; i < args.length; i++) key += "|" + args[i].aval.key();
  let e = m.get(key);
  if (!e) {
    e = buildEager(prim, args, params, pk);
    if (eagerCount >= config.eagerCacheSize) evictEager();
    m.set(key, e);
    eagerCount++;
  }
  e.used = ++eagerClock;
  if (e.exe) {
    try {
      return runStep(e.exe, args, e.outAvals);
    } catch (err) {
      const user = runError(err, prim.name, args);
      // out of memory (or no reference impl to switch to): raise
      if (user instanceof OutOfMemoryError || onnxBackendOptions.strict || !prim.rules.impl) throw user;
      // ORT failed on this model: use the reference impl for this entry from now on
      warnOnce(`${prim.name}: ONNX Runtime failed on ${args.map((a) => a.aval.str()).join(", ")} (${(err as Error).message}); this primitive runs on its reference implementation for these operands from now on`);
      releaseEager(e);
    }
  }
  if (e.empty) return e.outAvals.map((a) => new ArrayImpl(a, allocate(a.dtype, 0)));
  const impl = prim.rules.impl;
  if (!impl) throw new Error(`${prim.name}: neither an ONNX lowering nor a reference implementation exists for this primitive`);
  return impl(args, params, e.outAvals);
}

// ------------------------------------------------------------------ jit cache
/**
 * An executable and the jaxprs using it. Jaxprs whose compiled programs are identical (same model bytes, or the
 * same fused kernel: e.g. one function jitted afresh every step) share one executable, so a dead jit wrapper
 * holds nothing but a registry cell until the garbage collector notices it.
 */
interface Compiled {
  readonly exe: Executable;
  /** Key in byContent ("": not shared). */
  readonly key: string;
  refs: number;
}
const jitCache = new WeakMap<Jaxpr, Compiled>();
const byContent = new Map<string, Compiled>();
const releaseOnCollect = new FinalizationRegistry<Compiled>((c) => unref(c));

function unref(c: Compiled): void {
  if (--c.refs > 0) return;
  if (c.key && byContent.get(c.key) === c) byContent.delete(c.key);
  c.exe.dispose();
}

/** A content key for a program (null: not shareable, e.g. it runs equations on the interpreter or returns constants). */
function contentKey(program: Program, fused: Fused | null): string | null {
  if (program.outs.some((o) => typeof o !== "number")) return null;
  let key = `${program.name}|${program.numSlots}|${program.inSlots}|${program.outs}|${program.outAvals.map((a) => a.key()).join(";")}`;
  if (fused) return `${key}|fused:${fused.kernel.constructor.name}|${keyOf(fused.spec)}`;
  for (const st of program.steps) {
    if (st.kind !== "onnx") return null;
    key += `|${st.inputs}>${st.outputs}:${st.inputNames}>${st.outputNames}:${st.work}:${createHash("sha1").update(st.model).digest("base64")}`;
  }
  return key;
}

/** Compiles (or fetches) the executable for a jaxpr whose constvars come first. */
export function compiledFor(jaxpr: Jaxpr, name = "jit"): Executable {
  const hit = jitCache.get(jaxpr);
  if (hit) return hit.exe;
  const t0 = profiling() ? monotonicUs() : 0;
  const program = compileJaxpr(jaxpr, { name: sanitize(name), strict: onnxBackendOptions.strict });
  warnFailedLowerings(program, `jit(${program.name})`);
  const fused = fusedFor(jaxpr);
  const key = contentKey(program, fused);
  let c = key ? byContent.get(key) : undefined;
  const reused = c !== undefined;
  if (config.logCompiles) {
    const ins = jaxpr.invars.map((v) => v.aval.str()).join(", ");
    logCompile(c ? `jit(${name}): compiled (${ins}); an identical program is loaded, reusing its sessions`
      : `jit(${name}): compiling (${ins}) to ${program.steps.length} step(s) from ${jaxpr.eqns.length} equation(s)`);
  }
  if (!c) {
    const { constvars, invars, outvars, eqns } = jaxpr;
    const exe = new Executable(program, true, { constvars, invars, outvars, eqns }, fused);
    try {
      exe.prepare();
    } catch (e) {
      if (onnxBackendOptions.strict) throw e;
      // ORT rejected a model: run the whole jaxpr equation by equation instead
      exe.fallBack(`session creation failed: ${(e as Error).message}`);
    }
    c = { exe, key: key ?? "", refs: 0 };
    if (key) byContent.set(key, c);
  }
  if (t0) {
    reportSpan({ name: `compile jit(${name})`, cat: "compile", start: t0, end: monotonicUs(), track: "host",
      args: { cache: reused ? "identical program loaded" : "miss", steps: program.steps.length, equations: jaxpr.eqns.length } });
  }
  c.refs++;
  jitCache.set(jaxpr, c);
  releaseOnCollect.register(jaxpr, c, jaxpr);
  return c.exe;
}

/** Releases what was compiled for `jaxpr` now (a jit cache dropped it), instead of when it is collected. */
function releaseJaxpr(jaxpr: Jaxpr): void {
  const c = jitCache.get(jaxpr);
  if (!c) return;
  jitCache.delete(jaxpr);
  releaseOnCollect.unregister(jaxpr);
  unref(c);
}

/**
 * Runs a jitted program. Donated inputs (JAX's donate_argnums) are invalid afterwards: each one that is not
 * itself an output is disposed, which hands its storage to the buffer pool for later outputs.
 */
function runJitted(jaxpr: Jaxpr, args: ArrayImpl[], name: string | undefined, donate: readonly boolean[] | undefined): ArrayImpl[] {
  const outs = compiledFor(jaxpr, name).run(args, donate);
  if (donate) {
    for (let i = 0; i < args.length; i++) {
      if (donate[i] && !outs.includes(args[i])) args[i].dispose();
    }
  }
  return outs;
}

/** The fused kernel of a pure float32 elementwise program (null: not one, disabled, or neither the native addon nor WebAssembly SIMD). */
function fusedFor(jaxpr: Jaxpr): Fused | null {
  if (!onnxBackendOptions.fuseElementwise) return null;
  const spec = fuseElementwise(jaxpr);
  if (!spec) return null;
  try {
    const kernel = (onnxBackendOptions.nativeFused ? NativeFusedKernel.create(spec) : null) ?? ParallelKernel.create(spec);
    return kernel ? { spec, kernel } : null;
  } catch (e) {
    if (onnxBackendOptions.strict) throw e;
    warnOnce(`fused elementwise kernel: creating it failed (${(e as Error).message}); the program runs through ONNX Runtime instead`);
    return null;
  }
}

/** A program whose every equation runs through the eager path (used when ORT rejects a model). */
function interpretedProgram(jaxpr: JaxprParts, p: Program, why: string): Program {
  const slots = new Map<Var, number>();
  const slotOf = (v: Var): number => { let s = slots.get(v); if (s === undefined) { s = slots.size; slots.set(v, s); } return s; };
  const inSlots = [...jaxpr.constvars, ...jaxpr.invars].map(slotOf);
  const op = (a: Var | { value: ArrayImpl }) => (a instanceof Var ? slotOf(a) : a.value);
  const steps = jaxpr.eqns.map((e) => ({ kind: "host" as const, eqn: e, inputs: e.inputs.map(op), outputs: e.outVars.map(slotOf), reason: why }));
  return { ...p, steps, numSlots: slots.size, inSlots, outs: jaxpr.outvars.map(op), notes: [`${why}; running equation by equation`] };
}

/** The ONNX program a jaxpr compiles to, as text (for `jit(f).lower(...).asText()`); compiles without creating sessions. */
export function loweringSummary(jaxpr: Jaxpr, name = "jit"): string {
  const exe = jitCache.get(jaxpr)?.exe;
  const program = exe ? exe.program : compileJaxpr(jaxpr, { name: sanitize(name) });
  const fused = exe ? exe.isFused : onnxBackendOptions.fuseElementwise && fuseElementwise(jaxpr) !== null;
  const head = fused ? "// runs as one fused elementwise kernel (native vectors or WebAssembly SIMD, single pass); the ONNX model below is its fallback\n" : "";
  return head + summarizeOnnx(program);
}

const sanitize = (s: string): string => s.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 64) || "jit";

export const onnxBackend: Backend & { compiledFor: typeof compiledFor; release(jaxpr: Jaxpr): void; clearCaches(): void; trimMemory(): void } = {
  name: "onnx",
  execute: executeEager,
  executeJaxpr(jaxpr: Jaxpr, consts: ArrayImpl[], args: ArrayImpl[], opts: { donate?: boolean[]; name?: string }): ArrayImpl[] {
    const donate = opts.donate && consts.length ? [...consts.map(() => false), ...opts.donate] : opts.donate;
    return runJitted(jaxpr, consts.length ? [...consts, ...args] : args, opts.name, donate);
  },
  compiledFor,
  release: releaseJaxpr,
  clearCaches(): void {
    // compiled programs still referenced keep their plans and recreate sessions if run again
    for (const exe of [...loaded]) exe.dispose();
    byContent.clear();
    clearOnnxCaches();
    clearBufferPool();
  },
  trimMemory(): void { trimNativeHeap(); },
};

/** Releases every cached eager session (jit executables are released with their jaxprs, or by jax.clearCaches). */
export function clearOnnxCaches(): void {
  for (const m of eagerCache.values()) for (const e of m.values()) if (e.exe) releaseSession(e.exe.shared);
  for (const r of polyCache.values()) if (r) releaseSession(r.shared);
  polyCache.clear();
  eagerCache.clear();
  eagerCount = 0;
}

registerBackend(onnxBackend);
setBackendSelector(() => config.backend);
