/**
 * @file The stackless trace model: the current trace lives in a context, each trace knows its parent,
 * and `bind` hands a primitive to the current trace (as in current JAX's core.py).
 */
import { Array, type ArrayLike } from "./array.js";
import { ArrayImpl } from "./array-impl.js";
import { ShapedArray, avalsStr } from "./aval.js";
import { type DType, type TypedArray, bigintLiteralDType, numberLiteralDType } from "./dtype.js";
import { bigOf } from "./convert.js";
import { type Params, Primitive } from "./primitive.js";
import { OutOfMemoryError } from "./errors.js";
import { noteBackendName } from "./config.js";
import { monotonicUs } from "./profile-events.js";

export abstract class Trace {
  /** Set when the transformation that owns this trace has finished; its tracers are then leaked. */
  invalid = false;
  readonly parent: Trace | null;
  readonly depth: number;
  constructor(
    readonly name: string,
    parent?: Trace | null,
  ) {
    this.parent = parent === undefined ? currentTrace : parent;
    this.depth = this.parent ? this.parent.depth + 1 : 0;
  }
  abstract processPrimitive(prim: Primitive, args: Array[], params: Params): Array[];
  /** True when `t` is this trace or one of its ancestors (so its values are constants here). */
  isAncestorOrSelf(t: Trace): boolean {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- walking the parent chain from this trace
    for (let c: Trace | null = this; c; c = c.parent) if (c === t) return true;
    return false;
  }
  toString(): string {
    return `${this.name}Trace(depth=${this.depth})`;
  }
}

/** Thrown when a traced value escapes the transformation that created it (JAX's UnexpectedTracerError). */
export class UnexpectedTracerError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = "UnexpectedTracerError";
  }
}
/** Thrown when a traced value is used where a concrete one is needed (JAX's ConcretizationTypeError). */
export class ConcretizationTypeError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = "ConcretizationTypeError";
  }
}

export abstract class Tracer extends Array {
  abstract readonly trace: Trace;
  /** Stack at creation, recorded by traces that keep source info (for leak errors). */
  creationSite?: string;
  /** A concrete value for this tracer when one exists (JVP primals of concrete values); else null. */
  concreteValue(): Array | null {
    return null;
  }
  private concrete(what: string): Array {
    const c = this.concreteValue();
    if (c === null || c instanceof Tracer) throw this.concretizationError(what);
    return c;
  }
  dataSync(): TypedArray {
    return this.concrete("dataSync()").dataSync();
  }
  tolist(): unknown {
    return this.concrete("tolist()").tolist();
  }
  item(): number | boolean | bigint | import("./dtype.js").Complex {
    return this.concrete("item()").item();
  }
  protected concretizationError(what: string): ConcretizationTypeError {
    return new ConcretizationTypeError(
      `Abstract tracer value encountered where a concrete value is expected: ${what} on a ${this.aval.str()} ` +
        `traced by ${this.trace.name}. Values inside jit/grad/vmap are abstract; use lax.cond/whileLoop ` +
        `for value-dependent control flow, or mark the argument static (staticArgnums).`,
    );
  }
  /** Materializes the full value when the trace can (JVP/batch tracers of concrete values); else null. */
  fullLower(): Array | null {
    return null;
  }
  override toString(): string {
    return `Traced<${this.aval.str()}>with<${this.trace.name}>`;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

class EvalTrace extends Trace {
  constructor() {
    super("Eval", null);
  }
  processPrimitive(prim: Primitive, args: Array[], params: Params): Array[] {
    const concrete = args.map((a) => {
      if (a instanceof ArrayImpl) return a;
      const t = a as Tracer;
      const low = t.fullLower?.();
      if (low instanceof ArrayImpl) return low;
      throw leakedError(t, prim);
    });
    // an operand placed on several devices: the parallel layer may run the op partitioned (outputs keep a sharding)
    if (eagerPlaced)
      for (const a of concrete)
        if (a.placement !== null) {
          const r = eagerPlaced(prim, concrete, params);
          if (r) return r;
          break;
        }
    return executePrimitive(prim, concrete, params);
  }
}

/** Registered by src/parallel/gspmd-eager.ts: runs an eager op over placed (sharded) operands, or returns null. */
let eagerPlaced: ((prim: Primitive, args: ArrayImpl[], params: Params) => Array[] | null) | null = null;
export function registerEagerPlaced(h: (prim: Primitive, args: ArrayImpl[], params: Params) => Array[] | null): void {
  eagerPlaced = h;
}

export function leakedError(t: Tracer, prim: Primitive | string): UnexpectedTracerError {
  const site = t.creationSite ? `\nThe tracer was created at:\n${t.creationSite}` : "";
  return new UnexpectedTracerError(
    `Encountered an unexpected tracer: a ${t.aval.str()} value from a ${t.trace.name} transformation ` +
      `(${t.trace.invalid ? "which has already finished" : "which is not active here"}) was passed to ${typeof prim === "string" ? prim : prim.name}. ` +
      `A traced value leaked out of the function being transformed, e.g. stored in an outer variable or returned through a side channel.${site}`,
  );
}

export const evalTrace: Trace = new EvalTrace();
let currentTrace: Trace = evalTrace;

export function getCurrentTrace(): Trace {
  return currentTrace;
}
/** Runs f with t as the current trace (JAX's set_current_trace). */
export function withTrace<T>(t: Trace, f: () => T): T {
  const prev = currentTrace;
  currentTrace = t;
  try {
    return f();
  } finally {
    currentTrace = prev;
  }
}

// ---- execution backends: how the eval trace runs a primitive on concrete arrays ----
export interface Backend {
  readonly name: string;
  /** Runs one primitive eagerly. */
  execute(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[];
  /**
   * Runs a whole closed jaxpr as one compiled program (what jit does). `consts` bind the constvars.
   * `donate[i]` says argument i's memory may be reused for outputs. Absent: evaluate equation by equation.
   */
  executeJaxpr?(
    jaxpr: import("./jaxpr.js").Jaxpr,
    consts: ArrayImpl[],
    args: ArrayImpl[],
    opts: { donate?: boolean[]; name?: string },
  ): ArrayImpl[];
  /** Releases now what the backend compiled for `jaxpr` (a jit cache dropped it), instead of when it is garbage collected. */
  release?(jaxpr: import("./jaxpr.js").Jaxpr): void;
  /** Drops every cached compilation and session and hands freed memory back to the system (jax.clearCaches). */
  clearCaches?(): void;
  /** Hands memory the backend freed (released sessions) back to the system. */
  trimMemory?(): void;
}
const backends = new Map<string, Backend>();
let backendSelector: () => string = () => "interpreter";
/** Registers an execution backend under its name (config.backend then accepts that name). */
export function registerBackend(b: Backend): void {
  backends.set(b.name, b);
  noteBackendName(b.name);
}
/** Tells every backend that `jaxpr` will not run again (see Backend.release). */
export function releaseCompiled(jaxpr: import("./jaxpr.js").Jaxpr): void {
  for (const b of backends.values()) b.release?.(jaxpr);
}
/** Clears every backend's caches (see Backend.clearCaches). */
export function clearBackendCaches(): void {
  for (const b of backends.values()) b.clearCaches?.();
}
/** Lets every backend hand freed memory back to the system (see Backend.trimMemory). */
export function trimBackendMemory(): void {
  for (const b of backends.values()) b.trimMemory?.();
}
export function setBackendSelector(f: () => string): void {
  backendSelector = f;
}
export function getBackend(name?: string): Backend {
  const n = name ?? backendSelector();
  const b = backends.get(n) ?? backends.get("interpreter");
  if (!b) throw new Error(`no execution backend registered (wanted ${n})`);
  return b;
}
/** Observers of eager primitive executions (checkpoint tests count recomputation with it). */
const executionHooks: ((prim: Primitive) => void)[] = [];
export function addExecutionHook(h: (prim: Primitive) => void): () => void {
  executionHooks.push(h);
  return () => {
    const i = executionHooks.indexOf(h);
    if (i >= 0) executionHooks.splice(i, 1);
  };
}
/** A profiler sink receives one timed event per eager primitive execution (or compiled call), in monotonic microseconds. */
export type ProfileSink = (name: string, startUs: number, endUs: number, args: { shapes: string }) => void;
let profileSink: ProfileSink | null = null;
export function setProfileSink(s: ProfileSink | null): void {
  profileSink = s;
}

/** Runs a primitive unchecked (the checker's way to execute); see setSpecialCheck. */
export type RawExecute = (prim: Primitive, args: ArrayImpl[], params: Params) => ArrayImpl[];
/** The NaN/inf checker, installed only while config debugNans or debugInfs is on (so the hot path tests one variable). */
let specialCheck: ((prim: Primitive, args: ArrayImpl[], params: Params, run: RawExecute) => ArrayImpl[]) | null = null;
export function setSpecialCheck(f: typeof specialCheck): void {
  specialCheck = f;
}

export function executePrimitive(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[] {
  for (const h of executionHooks) h(prim);
  if (specialCheck !== null) return specialCheck(prim, args, params, executeProfiled);
  return executeProfiled(prim, args, params);
}

function executeProfiled(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[] {
  if (!profileSink) return execute(prim, args, params);
  const t0 = monotonicUs();
  const out = execute(prim, args, params);
  profileSink(label(prim, params), t0, monotonicUs(), { shapes: args.map((a) => a.aval.str()).join(", ") });
  return out;
}

/** How profiles and errors name a primitive application: jit(f) for a jitted call, else the primitive's name. */
function label(prim: Primitive, params: Params): string {
  return prim.name === "pjit" ? `jit(${String(params.name)})` : prim.name;
}

/** Runs one primitive on the backend; a result too large to allocate raises naming the primitive and its operands. */
function execute(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[] {
  try {
    return getBackend().execute(prim, args, params);
  } catch (e) {
    // an OutOfMemoryError already names the program, its inputs and the bytes requested
    if (
      e instanceof RangeError &&
      !(e instanceof OutOfMemoryError) &&
      /Invalid typed array length|Array buffer allocation failed/.test(e.message)
    ) {
      throw new RangeError(
        `${label(prim, params)}: a result is too large to allocate (operands: ${avalsStr(args.map((a) => a.aval)) || "none"}): ${e.message}; an array holds at most 2^32 elements and must fit in memory`,
      );
    }
    throw e;
  }
}

/** Turns a JS scalar into a weakly typed 0-d array, as JAX does for Python scalars. */
export function scalarToArray(x: number | boolean | bigint, dtype?: DType, weakType?: boolean): ArrayImpl {
  if (typeof x === "boolean") return ArrayImpl.of([], "bool", new Uint8Array([x ? 1 : 0]));
  // -0 exists only as a float, so a JS -0 (Python's -0.0) is a float literal, not the int 0
  const d = dtype ?? (typeof x === "bigint" ? bigintLiteralDType(x, "array") : numberLiteralDType(x));
  const weak = weakType ?? dtype === undefined;
  const data =
    d === "int64" || d === "uint64"
      ? d === "int64"
        ? new BigInt64Array([bigOf(x, d)])
        : new BigUint64Array([bigOf(x, d)])
      : d === "float32"
        ? new Float32Array([Number(x)])
        : d === "float64"
          ? new Float64Array([Number(x)])
          : d === "int32"
            ? new Int32Array([Number(x)])
            : null;
  if (!data) throw new TypeError(`scalarToArray: unsupported dtype ${d}`);
  const out = new ArrayImpl(new ShapedArray([], d, weak), data);
  if (d === "float32" && typeof x === "number" && data[0] !== x && !Number.isNaN(x)) literals.set(out, x);
  return out;
}
const literals = new WeakMap<ArrayImpl, number>();
/** The JS number a float32 scalar was made from when float32 could not hold it exactly (converting it to float16 then rounds once, as JAX). */
export function scalarLiteral(x: ArrayImpl): number | undefined {
  return literals.get(x);
}

export function toArray(x: ArrayLike, fn = "bind"): Array {
  if (x instanceof Array) return x;
  if (typeof x === "number" || typeof x === "boolean" || typeof x === "bigint") return scalarToArray(x);
  throw new TypeError(`${fn}: expected an Array or a JS number/boolean, got ${describe(x)}`);
}

export function describe(x: unknown): string {
  if (x === null) return "null";
  if (x instanceof Array) return `Array ${x.aval.str()}`;
  if (globalThis.Array.isArray(x)) return `a JS array of length ${x.length}`;
  if (typeof x === "object") return `an object (${(x as object).constructor?.name ?? "Object"})`;
  return `${typeof x} ${String(x)}`;
}

/** Binds a primitive on the current trace; returns all outputs. */
export function bind<P extends Params>(prim: Primitive<P>, args: ArrayLike[], params: P = {} as P): Array[] {
  const arr = args.map((a) => toArray(a, prim.name));
  return currentTrace.processPrimitive(prim as unknown as Primitive, arr, params);
}
/** Binds a single-result primitive. */
export function bind1<P extends Params>(prim: Primitive<P>, args: ArrayLike[], params: P = {} as P): Array {
  return bind(prim, args, params)[0];
}

/** Abstract evaluation with a uniform error prefix naming the primitive and avals. */
export function abstractEval(prim: Primitive, avals: ShapedArray[], params: Params): ShapedArray[] {
  try {
    return prim.rules.abstractEval(avals, params);
  } catch (e) {
    if (e instanceof Error && !e.message.includes(prim.name)) {
      e.message = `${prim.name}: ${e.message} (operands: ${avalsStr(avals)})`;
    }
    throw e;
  }
}

// ---- the axis environment: named mapped axes (vmap/pmap/shardMap) visible while tracing ----
export interface NamedAxis {
  name: string;
  size: number;
}
const axisEnv: NamedAxis[] = [];
/** Runs f with a named axis bound (innermost last). */
export function withNamedAxis<T>(a: NamedAxis | null, f: () => T): T {
  if (!a) return f();
  axisEnv.push(a);
  try {
    return f();
  } finally {
    axisEnv.pop();
  }
}
/** The size of a bound axis name, or an error naming the function and the axis. */
export function axisSizeOf(fn: string, name: string): number {
  for (let i = axisEnv.length - 1; i >= 0; i--) if (axisEnv[i].name === name) return axisEnv[i].size;
  throw new Error(
    `${fn}: unbound axis name ${JSON.stringify(name)}; bound axes: [${axisEnv.map((a) => a.name).join(", ")}]. Collectives need an enclosing vmap/pmap/shardMap with that axisName`,
  );
}
