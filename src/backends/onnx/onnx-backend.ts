/**
 * @file The "onnx" execution backend: eager primitives run as cached one-node-ish ONNX Runtime sessions
 * (one per primitive, params and input avals), jitted jaxprs as one cached session per program.
 */
import { availableParallelism } from "node:os";
import { ArrayImpl } from "../../core/array-impl.js";
import type { ShapedArray } from "../../core/aval.js";
import { config } from "../../core/config.js";
import { allocate } from "../../core/dtype.js";
import { Jaxpr, type JaxprEqn, Var } from "../../core/jaxpr.js";
import type { Params, Primitive } from "../../core/primitive.js";
import { type Backend, abstractEval, registerBackend, setBackendSelector } from "../../core/trace.js";
import { type Program, type OnnxStep, compileJaxpr } from "../../compiler/compile.js";
import { CALL_PRIMITIVES } from "../../compiler/context.js";
import { type HostTensor, type OrtSession, type RunOptions, type SessionOptions, createSessionSync, runSessionSync } from "./ort-runtime.js";
import type { DType as GDType } from "./graph-builder.js";

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
  /** Most eager sessions kept (least recently created are released first). */
  maxEagerSessions: 2048,
  /** Work (element operations) above which a jitted program gets all intra-op threads. */
  parallelWork: 1 << 18,
};

// ------------------------------------------------------------------ sessions for compiled steps
// small eager graphs gain nothing from ORT's graph optimizer, which triples session creation time
const EAGER_SESSION: SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "disabled", logSeverityLevel: 3 };
const EAGER_SESSION_OPT: SessionOptions = { ...EAGER_SESSION, graphOptimizationLevel: "basic" };

const JIT_SESSION: SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "all", logSeverityLevel: 3 };

function threadsFor(step: OnnxStep, jit: boolean): number {
  if (!jit) return 1;
  if (config.intraOpThreads > 0) return config.intraOpThreads;
  return step.work >= onnxBackendOptions.parallelWork ? availableParallelism() : 1;
}

interface ReadyStep {
  step: OnnxStep;
  session: OrtSession;
  runOpts: RunOptions;
  /** Owned by the shape-polymorphic cache rather than one eager entry. */
  shared?: boolean;
}

function prepareStep(step: OnnxStep, jit: boolean): ReadyStep {
  const threads = threadsFor(step, jit);
  const opts: SessionOptions = !jit ? (step.nodeCount > 6 ? EAGER_SESSION_OPT : EAGER_SESSION) : threads === 1 ? JIT_SESSION : {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: "all", logSeverityLevel: 3,
    configEntries: { "session.intra_op.allow_spinning": "0" },
  };
  const session = createSessionSync(step.model, opts);
  sessionsCreated++;
  const bf = step.outAvals.map((a, i) => [step.outputNames[i], a.dtype] as const).filter(([, d]) => d === "bfloat16");
  const runOpts: RunOptions = bf.length ? { outputDTypes: Object.fromEntries(bf) as Record<string, GDType> } : {};
  return { step, session, runOpts };
}

function runStep(r: ReadyStep, args: readonly ArrayImpl[]): ArrayImpl[] {
  const { step } = r;
  const feeds: Record<string, HostTensor> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    feeds[step.inputNames[i]] = { dtype: a.dtype as GDType, shape: a.shape, data: a.buffer } as HostTensor;
  }
  const outs = runSessionSync(r.session, feeds, step.outputNames, r.runOpts);
  const res = new Array<ArrayImpl>(outs.length);
  for (let i = 0; i < outs.length; i++) res[i] = new ArrayImpl(step.outAvals[i], outs[i].data as ArrayImpl["buffer"]);
  return res;
}

/** A compiled program with its sessions (created on first use). */
export class Executable {
  private ready: (ReadyStep | null)[];
  constructor(readonly program: Program, private readonly jit: boolean) {
    this.ready = program.steps.map(() => null);
  }
  /** Creates every session now (jit compiles ahead of the first call). */
  prepare(): this {
    this.program.steps.forEach((s, i) => { if (s.kind === "onnx" && !this.ready[i]) this.ready[i] = prepareStep(s, this.jit); });
    return this;
  }
  run(inputs: readonly ArrayImpl[]): ArrayImpl[] {
    const p = this.program;
    const env = new Array<ArrayImpl | undefined>(p.numSlots);
    p.inSlots.forEach((s, i) => { env[s] = inputs[i]; });
    const read = (o: number | ArrayImpl): ArrayImpl => (typeof o === "number" ? env[o]! : o);
    for (let k = 0; k < p.steps.length; k++) {
      const s = p.steps[k];
      if (s.kind === "onnx") {
        const r = this.ready[k] ?? (this.ready[k] = prepareStep(s, this.jit));
        const outs = runStep(r, s.inputs.map((q) => env[q]!));
        s.outputs.forEach((q, i) => { env[q] = outs[i]; });
      } else {
        const outs = runEqnOnHost(s.eqn, s.inputs.map(read));
        s.outputs.forEach((q, i) => { env[q] = outs[i]; });
      }
    }
    return p.outs.map((o, i) => {
      const v = read(o);
      const want = p.outAvals[i];
      return v.aval.weakType === want.weakType ? v : new ArrayImpl(want, v.buffer);
    });
  }
  dispose(): void {
    for (const r of this.ready) r?.session.dispose();
    this.ready = this.ready.map(() => null);
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

function evictEager(): void {
  // drop the oldest half
  let drop = eagerCount >> 1;
  for (const m of eagerCache.values()) {
    for (const [k, e] of m) {
      if (drop-- <= 0) return;
      if (e.exe && !e.exe.shared) e.exe.session.dispose();
      m.delete(k);
      eagerCount--;
    }
  }
}

/** Shape-polymorphic eager sessions by (primitive, params, dtypes and ranks); shared by many eager entries. */
const polyCache = new Map<string, ReadyStep | null>();
let sessionsCreated = 0;

function buildEager(prim: Primitive, args: readonly ArrayImpl[], params: Params, paramsKey: string): EagerEntry {
  const inAvals = args.map((a) => a.aval);
  const outAvals = abstractEval(prim, inAvals, params);
  const empty = outAvals.every((a) => a.size === 0);
  const tiny = onnxBackendOptions.scalarFastPath && prim.rules.impl !== undefined && EXACT_ON_SCALARS.has(prim.name)
    && inAvals.every((a) => a.size <= 1) && outAvals.every((a) => a.size <= 1);
  if (empty || tiny || !prim.rules.lower) return { exe: null, outAvals, empty };
  const poly = SHAPE_POLYMORPHIC.has(prim.name);
  const pkey = poly ? `${prim.name}|${paramsKey}|${inAvals.map((a) => `${a.dtype}${a.ndim}`).join(",")}` : "";
  if (poly) {
    const hit = polyCache.get(pkey);
    if (hit !== undefined) return { exe: hit, outAvals, empty };
  }
  const exe = compileEager(prim, inAvals, outAvals, params, poly);
  if (poly) polyCache.set(pkey, exe);
  return { exe, outAvals, empty };
}

function compileEager(prim: Primitive, inAvals: ShapedArray[], outAvals: ShapedArray[], params: Params, poly: boolean): ReadyStep | null {
  const invars = inAvals.map((a) => new Var(a));
  const outVars = outAvals.map((a) => new Var(a));
  const j = new Jaxpr([], invars, outVars, [{ primitive: prim, inputs: invars, params, outVars }]);
  try {
    const program = compileJaxpr(j, { name: prim.name, strict: onnxBackendOptions.strict, dynamicShapes: poly });
    const step = program.steps[0];
    if (program.steps.length !== 1 || step.kind !== "onnx" || step.outputs.length !== outAvals.length) return null;
    const r = prepareStep(step, false);
    r.shared = poly;
    return r;
  } catch (e) {
    if (onnxBackendOptions.strict) throw e;
    return null;
  }
}

/** Cache statistics (sessions created so far, cached eager entries and shape-polymorphic sessions). */
export function onnxCacheStats(): { sessionsCreated: number; eagerEntries: number; polySessions: number } {
  return { sessionsCreated, eagerEntries: eagerCount, polySessions: polyCache.size };
}

function executeEager(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[] {
  let m = eagerCache.get(prim);
  if (!m) { m = new Map(); eagerCache.set(prim, m); }
  const pk = keyOf(params);
  let key = pk;
  for (let i = 0; i < args.length; i++) key += "|" + args[i].aval.key();
  let e = m.get(key);
  if (!e) {
    e = buildEager(prim, args, params, pk);
    if (eagerCount >= onnxBackendOptions.maxEagerSessions) evictEager();
    m.set(key, e);
    eagerCount++;
  }
  if (e.exe) {
    const r = e.exe;
    const { step } = r;
    const feeds: Record<string, HostTensor> = {};
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      feeds[step.inputNames[i]] = { dtype: a.dtype as GDType, shape: a.shape, data: a.buffer } as HostTensor;
    }
    const outs = runSessionSync(r.session, feeds, step.outputNames, r.runOpts);
    const res = new Array<ArrayImpl>(outs.length);
    for (let i = 0; i < outs.length; i++) res[i] = new ArrayImpl(e.outAvals[i], outs[i].data as ArrayImpl["buffer"]);
    return res;
  }
  if (e.empty) return e.outAvals.map((a) => new ArrayImpl(a, allocate(a.dtype, 0)));
  const impl = prim.rules.impl;
  if (!impl) throw new Error(`${prim.name}: neither an ONNX lowering nor a reference implementation exists for this primitive`);
  return impl(args, params, e.outAvals);
}

// ------------------------------------------------------------------ jit cache
const jitCache = new WeakMap<Jaxpr, Executable>();

/** Compiles (or fetches) the executable for a jaxpr whose constvars come first. */
export function compiledFor(jaxpr: Jaxpr, name = "jit"): Executable {
  let exe = jitCache.get(jaxpr);
  if (!exe) {
    const program = compileJaxpr(jaxpr, { name: sanitize(name), strict: onnxBackendOptions.strict });
    exe = new Executable(program, true);
    try {
      exe.prepare();
    } catch (e) {
      if (onnxBackendOptions.strict) throw e;
      // ORT rejected a model: run the whole jaxpr equation by equation instead
      exe = new Executable(interpretedProgram(jaxpr, program, (e as Error).message), true);
    }
    jitCache.set(jaxpr, exe);
  }
  return exe;
}

/** A program whose every equation runs through the eager path (used when session creation fails). */
function interpretedProgram(jaxpr: Jaxpr, p: Program, why: string): Program {
  const slots = new Map<Var, number>();
  const slotOf = (v: Var): number => { let s = slots.get(v); if (s === undefined) { s = slots.size; slots.set(v, s); } return s; };
  const inSlots = [...jaxpr.constvars, ...jaxpr.invars].map(slotOf);
  const op = (a: Var | { value: ArrayImpl }) => (a instanceof Var ? slotOf(a) : a.value);
  const steps = jaxpr.eqns.map((e) => ({ kind: "host" as const, eqn: e, inputs: e.inputs.map(op), outputs: e.outVars.map(slotOf), reason: why }));
  return { ...p, steps, numSlots: slots.size, inSlots, outs: jaxpr.outvars.map(op), notes: [`session creation failed (${why}); running equation by equation`] };
}

const sanitize = (s: string): string => s.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 64) || "jit";

export const onnxBackend: Backend & { compiledFor: typeof compiledFor } = {
  name: "onnx",
  execute: executeEager,
  executeJaxpr(jaxpr: Jaxpr, consts: ArrayImpl[], args: ArrayImpl[], opts: { donate?: boolean[]; name?: string }): ArrayImpl[] {
    return compiledFor(jaxpr, opts.name).run(consts.length ? [...consts, ...args] : args);
  },
  compiledFor,
};

/** Releases every cached eager session (jit executables are released with their jaxprs). */
export function clearOnnxCaches(): void {
  for (const m of eagerCache.values()) for (const e of m.values()) if (e.exe && !e.exe.shared) e.exe.session.dispose();
  for (const r of polyCache.values()) r?.session.dispose();
  polyCache.clear();
  eagerCache.clear();
  eagerCount = 0;
}

registerBackend(onnxBackend);
setBackendSelector(() => config.backend);
