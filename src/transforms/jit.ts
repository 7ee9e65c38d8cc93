/** @file jit: trace once per (avals, static args), cache, and run the jaxpr as one compiled program (the pjit primitive). */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { config, onConfigChange } from "../core/config.js";
import { logCompile } from "../core/compile-log.js";
import { disposeDonated } from "../core/donate.js";
import { monotonicUs, profiling, reportSpan } from "../core/profile-events.js";
import "../core/debug-nans.js";
import { Jaxpr, convertConstvars, evalJaxpr, typecheckJaxpr } from "../core/jaxpr.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { Primitive } from "../core/primitive.js";
import {
  bind,
  getBackend,
  withTrace,
  evalTrace,
  executePrimitive,
  getCurrentTrace,
  releaseCompiled,
} from "../core/trace.js";
import { type TreeDef, unflatten } from "../core/tree.js";
import { jvpFlat } from "./jvp.js";
import { vmapFlatKeep } from "./vmap.js";

export interface PjitParams {
  jaxpr: Jaxpr;
  name: string;
  donated_invars: boolean[];
  [k: string]: unknown;
}

/** The primitive a jitted call binds: its jaxpr runs as one program on the backend. */
export const pjitP: Primitive<PjitParams> = new Primitive<PjitParams>(
  "pjit",
  {
    abstractEval(avals, { jaxpr, name }) {
      if (avals.length !== jaxpr.invars.length)
        throw new TypeError(`pjit ${name}: expected ${jaxpr.invars.length} arguments, got ${avals.length}`);
      avals.forEach((a, i) => {
        if (!a.sameType(jaxpr.invars[i].aval))
          throw new TypeError(
            `pjit ${name}: argument ${i} is ${a.str()} but the jaxpr expects ${jaxpr.invars[i].aval.str()}`,
          );
      });
      return jaxpr.outAvals;
    },
    impl(args, { jaxpr, name, donated_invars }) {
      const b = getBackend();
      if (b.executeJaxpr) return b.executeJaxpr(jaxpr, [], args, { donate: donated_invars, name });
      return withTrace(evalTrace, () => evalJaxpr(jaxpr, [], args)) as ArrayImpl[];
    },
    // under differentiation the call is inlined: the enclosing jit (if any) compiles the whole derivative
    jvp(primals, tangents, { jaxpr }) {
      return jvpFlat((...xs) => evalJaxpr(jaxpr, [], xs), primals, tangents);
    },
    vmap(axis, args, dims, { jaxpr, name, donated_invars }) {
      const inAvals = args.map((a) => a.aval);
      let outDims: (number | null)[] = [];
      const { jaxpr: bj, consts } = traceToJaxpr(
        (...xs) => {
          const r = vmapFlatKeep((...ys) => evalJaxpr(jaxpr, [], ys), xs, dims, axis);
          outDims = r.dims;
          return r.outs;
        },
        inAvals,
        "vmap(pjit)",
      );
      const j = convertConstvars(bj);
      const outs: Array[] = bind(pjitP, [...consts, ...args], {
        jaxpr: j,
        name: `vmap(${name})`,
        donated_invars: [...consts.map(() => false), ...donated_invars],
      });
      return [outs, outDims];
    },
    lower: (ctx, inputs, { jaxpr }) => ctx.inlineJaxpr(jaxpr, inputs),
    missing: { transpose: "pjit is inlined under jvp, so linear jaxprs never contain it" },
  },
  { callJaxprParam: "jaxpr" },
);

export interface CompiledCall {
  jaxpr: Jaxpr;
  consts: Array[];
  outAvals: ShapedArray[];
  /** useClock at the latest call (the least recently used signature is evicted first). */
  used: number;
  /** The call signature that traced it, kept while config logCompiles is on (to explain the next retrace). */
  sig?: Signature;
}

/** A readable call signature for logCompiles: the argument structure, each array leaf's aval and the static values. */
export interface Signature {
  structure: string;
  leaves: { label: string; aval: string }[];
  statics: { label: string; value: string }[];
}
let useClock = 0;

/** One traced signature of a jitted function, matched per call without building a cache key (see fastCall). */
export interface FastEntry {
  readonly def: TreeDef;
  readonly avals: readonly ShapedArray[];
  readonly consts: readonly ArrayImpl[];
  readonly params: PjitParams;
  readonly outDef: TreeDef;
  readonly call: CompiledCall;
}

/**
 * Bumped when a flag that changes semantics flips, or by jax.clearCaches(): every TraceCache then empties itself
 * on its next use. (A registry of caches would have to hold WeakRefs, and a WeakRef keeps its target alive until
 * the current synchronous job ends: a loop creating a fresh jit wrapper per step would keep every one alive.)
 */
let cacheEpoch = 0;
onConfigChange((name) => {
  // spmdRuntime: a shardMap (pmap) traced under the emulation is inlined vmaps, under "devices" a staged launch;
  // debug flags are part of the trace context as in JAX: a retrace records source lines per equation
  if (
    name === "enableX64" ||
    name === "threefryPartitionable" ||
    name === "randomSeedOffset" ||
    name === "highDynamicRangeGumbel" ||
    name === "spmdRuntime" ||
    name === "debugNans" ||
    name === "debugInfs"
  )
    cacheEpoch++;
});

/**
 * A jitted function's traced jaxprs keyed by input avals (and static args): a least-recently-used map of at most
 * config.jitCacheSize entries. An entry that leaves it (evicted, cleared) releases its compiled program at once.
 */
export class TraceCache {
  readonly entries = new Map<string, CompiledCall>();
  /** Recently used signatures for the eval-trace fast path (most recent first). */
  fast: FastEntry[] = [];
  /** The latest call partitioned over a mesh that ran on the devices, for shardedFastCall. */
  sharded: ShardedFastEntry | null = null;
  /**
   * Identifies this cache's contents to caches kept elsewhere per jitted function (gspmd.ts's partitioned
   * signatures, in a WeakMap by it): a new object on every clear, so those go with the traces they came from.
   */
  scope: object = {};
  hits = 0;
  misses = 0;
  epoch = cacheEpoch;
  /** Why signatures left the cache (key -> reason), recorded while logCompiles is on to explain their retrace. */
  readonly gone = new Map<string, string>();
  clear(reason = "the jit cache was cleared"): void {
    const dropped = [...this.entries.values()];
    if (config.logCompiles) for (const k of this.entries.keys()) this.noteGone(k, reason);
    this.entries.clear();
    this.fast = [];
    this.sharded = null;
    this.scope = {};
    this.epoch = cacheEpoch;
    for (const c of dropped) releaseCompiled(c.jaxpr);
  }
  /** Empties the cache when the epoch moved on (a semantics flag flipped or all caches were cleared). */
  check(): void {
    if (this.epoch !== cacheEpoch)
      this.clear("caches were cleared (clearCaches, or a flag that changes tracing flipped)");
  }
  noteGone(key: string, reason: string): void {
    if (this.gone.size >= 256) this.gone.clear();
    this.gone.set(key, reason);
  }
  get(key: string): CompiledCall | undefined {
    const c = this.entries.get(key);
    if (c) c.used = ++useClock;
    return c;
  }
  set(key: string, c: CompiledCall): void {
    c.used = ++useClock;
    this.entries.set(key, c);
    const max = config.jitCacheSize;
    while (this.entries.size > max) {
      // the least recently used signature (fast-path calls count as uses)
      let oldKey = "",
        old: CompiledCall | null = null;
      for (const [k, e] of this.entries)
        if (!old || e.used < old.used) {
          oldKey = k;
          old = e;
        }
      this.entries.delete(oldKey);
      if (config.logCompiles)
        this.noteGone(oldKey, `its signature was evicted from the jit cache (jitCacheSize=${max})`);
      this.fast = this.fast.filter((f) => f.call !== old);
      releaseCompiled(old!.jaxpr);
    }
  }
}
/** Empties every jit trace cache (lazily, on each cache's next use); backends drop their compilations now. */
export function clearTraceCaches(): void {
  cacheEpoch++;
}

const MAX_FAST = 8;

/** Pushes `x`'s leaves to `out` when x has exactly the structure `def` with concrete array leaves. */
function matchTree(def: TreeDef, x: unknown, out: ArrayImpl[]): boolean {
  switch (def.kind) {
    case "leaf":
      if (!(x instanceof ArrayImpl)) return false;
      out.push(x);
      return true;
    case "array": {
      if (!globalThis.Array.isArray(x) || x.length !== def.children.length) return false;
      for (let i = 0; i < x.length; i++) if (!matchTree(def.children[i], x[i], out)) return false;
      return true;
    }
    case "object": {
      if (x === null || typeof x !== "object" || globalThis.Array.isArray(x) || x instanceof Array) return false;
      const p = Object.getPrototypeOf(x);
      if (p !== Object.prototype && p !== null) return false;
      const keys = def.aux as string[];
      const o = x as Record<string, unknown>;
      let n = 0;
      for (const _k in o) n++;
      if (n !== keys.length) return false;
      for (let i = 0; i < keys.length; i++) {
        if (!Object.prototype.hasOwnProperty.call(o, keys[i])) return false;
        if (!matchTree(def.children[i], o[keys[i]], out)) return false;
      }
      return true;
    }
    case "null":
      return x === null;
    case "undefined":
      return x === undefined;
    default:
      return false;
  }
}

const NO_MATCH: unique symbol = Symbol("no fast match");

/**
 * The per-call fast path of jit on concrete arguments: when the arguments match a recorded signature
 * (same tree structure, same avals) the program runs directly, with no cache key string and no retrace.
 * Returns NO_MATCH otherwise (the caller takes the general path, which records new signatures).
 */
export function fastCall(cache: TraceCache, args: unknown[]): unknown {
  cache.check();
  const fast = cache.fast;
  if (fast.length === 0 || getCurrentTrace() !== evalTrace) return NO_MATCH;
  const leaves: ArrayImpl[] = [];
  for (let k = 0; k < fast.length; k++) {
    const e = fast[k];
    leaves.length = 0;
    if (!matchTree(e.def, args, leaves)) continue;
    let same = true;
    for (let i = 0; i < leaves.length; i++) {
      const a = leaves[i].aval,
        b = e.avals[i];
      if (a !== b && !a.equals(b)) {
        same = false;
        break;
      }
    }
    if (!same) continue;
    cache.hits++;
    if (profiling()) reportCacheHit(e.params.name);
    e.call.used = ++useClock;
    if (k > 0) {
      fast.splice(k, 1);
      fast.unshift(e);
    }
    const outs = executePrimitive(
      pjitP as unknown as Primitive,
      e.consts.length ? [...e.consts, ...leaves] : leaves,
      e.params,
    );
    return unflatten(e.outDef, outs);
  }
  return NO_MATCH;
}
export { NO_MATCH };

/**
 * A jit call with shardings that ran partitioned on the devices, matched per call as a FastEntry is: the argument
 * structure and leaf avals it had, its output structure, and what the parallel layer needs to repeat it (opaque here).
 */
export interface ShardedFastEntry {
  readonly def: TreeDef;
  readonly avals: readonly ShapedArray[];
  readonly outDef: TreeDef;
  readonly again: object;
  /** The leaves donated (donateArgnums), disposed after each repeat as after the full path; null when none. */
  readonly donate: readonly boolean[] | null;
}

/**
 * The per-call fast path of jit with shardings on concrete arguments: when they have the structure and avals of the
 * latest partitioned call, `repeat` (the parallel layer's) checks the rest (options, the arguments' shardings, config
 * flags) and runs that call again, with no flatten, cache key or partitioning plan. NO_MATCH otherwise: the caller
 * takes the full path with its checks and errors.
 */
export function shardedFastCall(
  cache: TraceCache,
  args: unknown[],
  repeat: (again: object, leaves: ArrayImpl[]) => Array[] | null,
): unknown {
  cache.check();
  const e = cache.sharded;
  if (e === null || getCurrentTrace() !== evalTrace) return NO_MATCH;
  const leaves: ArrayImpl[] = [];
  if (!matchTree(e.def, args, leaves)) return NO_MATCH;
  for (let i = 0; i < leaves.length; i++) {
    const a = leaves[i].aval,
      b = e.avals[i];
    if (a !== b && !a.equals(b)) return NO_MATCH;
  }
  const outs = repeat(e.again, leaves);
  if (!outs) return NO_MATCH;
  if (e.donate) disposeDonated(leaves, outs, e.donate);
  return unflatten(e.outDef, outs);
}

/** Records a partitioned call for shardedFastCall (the latest one only) after a full-path call at the eval trace. */
export function recordSharded(
  cache: TraceCache,
  args: unknown[],
  def: TreeDef,
  outDef: TreeDef,
  again: object,
  donate: readonly boolean[],
): void {
  if (getCurrentTrace() !== evalTrace) return;
  const leaves: ArrayImpl[] = [];
  // only signatures whose leaves are all concrete arrays (JS scalars take the full path)
  if (!matchTree(def, args, leaves)) return;
  cache.sharded = {
    def,
    avals: leaves.map((l) => l.aval),
    outDef,
    again,
    donate: donate.some(Boolean) ? donate : null,
  };
}

/** Records a signature for fastCall after a general-path call at the eval trace (no static arguments). */
export function recordFast(
  cache: TraceCache,
  args: unknown[],
  def: TreeDef,
  c: CompiledCall,
  outDef: TreeDef,
  name: string,
  donate: boolean[],
): void {
  if (getCurrentTrace() !== evalTrace || !c.consts.every((x) => x instanceof ArrayImpl)) return;
  const leaves: ArrayImpl[] = [];
  // only signatures whose leaves are all concrete arrays (JS scalars take the general path)
  if (!matchTree(def, args, leaves)) return;
  const params: PjitParams = { jaxpr: c.jaxpr, name, donated_invars: [...c.consts.map(() => false), ...donate] };
  if (donate.some(Boolean)) params.donate_at_dispatch = true;
  cache.fast.unshift({
    def,
    avals: leaves.map((l) => l.aval),
    consts: c.consts as ArrayImpl[],
    params,
    outDef,
    call: c,
  });
  if (cache.fast.length > MAX_FAST) cache.fast.length = MAX_FAST;
}
/** A jit call that reused a traced signature: a zero-length compile span with cache "hit". */
function reportCacheHit(name: string): void {
  const t = monotonicUs();
  reportSpan({
    name: `jit(${name}) cache hit`,
    cat: "compile",
    start: t,
    end: t,
    track: "host",
    args: { cache: "hit" },
  });
}
export function newTraceCache(): TraceCache {
  return new TraceCache();
}

/** Traces (or fetches) the flat jaxpr of f for these avals; consts are returned separately. */
export function traceCached(
  cache: TraceCache,
  key: string,
  f: (...xs: Array[]) => Array[],
  avals: ShapedArray[],
  name: string,
  sig?: () => Signature,
): CompiledCall {
  cache.check();
  const hit = cache.get(key);
  if (hit) {
    cache.hits++;
    if (profiling()) reportCacheHit(name);
    return hit;
  }
  cache.misses++;
  const t0 = profiling() ? monotonicUs() : 0;
  let s: Signature | undefined;
  if (config.logCompiles) {
    s = sig?.() ?? {
      structure: "",
      leaves: avals.map((a, i) => ({ label: `argument ${i}`, aval: a.str() })),
      statics: [],
    };
    logCompile(
      `jit(${name}): tracing for (${s.leaves.map((l) => l.aval).join(", ")}) because ${retraceCause(cache, key, s)}`,
    );
  }
  const { jaxpr, consts } = traceToJaxpr(f, avals, `jit(${name})`);
  const j = convertConstvars(jaxpr);
  if (config.checkJaxprs) typecheckJaxpr(j, `jit(${name})`);
  const entry: CompiledCall = { jaxpr: j, consts, outAvals: j.outAvals, used: 0, sig: s };
  // a jaxpr that closes over tracers of an enclosing transformation is only valid inside it
  if (consts.every((c) => c instanceof ArrayImpl)) cache.set(key, entry);
  if (t0)
    reportSpan({
      name: `trace jit(${name})`,
      cat: "tracing",
      start: t0,
      end: monotonicUs(),
      track: "host",
      args: { inputs: avals.map((a) => a.str()).join(", "), equations: j.eqns.length },
    });
  return entry;
}

export function callCompiled(c: CompiledCall, args: Array[], name: string, donate: boolean[]): Array[] {
  const params: PjitParams = { jaxpr: c.jaxpr, name, donated_invars: [...c.consts.map(() => false), ...donate] };
  // donation applies to a call dispatched on concrete arrays, never to a pjit equation recorded in another jaxpr
  if (getCurrentTrace() === evalTrace && donate.some(Boolean)) params.donate_at_dispatch = true;
  return bind(pjitP, [...c.consts, ...args], params);
}

/** Why a jitted function traces again: the first call, a signature that left the cache, or what differs from the latest one. */
function retraceCause(cache: TraceCache, key: string, s: Signature): string {
  const gone = cache.gone.get(key);
  if (gone) return gone;
  let prev: CompiledCall | null = null;
  for (const e of cache.entries.values()) if (e.sig && (!prev || e.used > prev.used)) prev = e;
  if (!prev)
    return cache.entries.size
      ? "a new signature (earlier ones were traced with logCompiles off)"
      : "it is the first call";
  const p = prev.sig!;
  if (p.structure !== s.structure || p.leaves.length !== s.leaves.length)
    return `the argument structure changed from ${p.structure} to ${s.structure}`;
  const diffs: string[] = [];
  s.leaves.forEach((l, i) => {
    if (l.aval !== p.leaves[i].aval) diffs.push(`${l.label} changed from ${p.leaves[i].aval} to ${l.aval}`);
  });
  const pst = new Map(p.statics.map((x) => [x.label, x.value]));
  for (const x of s.statics)
    if (pst.get(x.label) !== x.value)
      diffs.push(`static argument ${x.label} changed from ${pst.get(x.label) ?? "(absent)"} to ${x.value}`);
  if (diffs.length === 0) return "a new signature (same avals as the latest one; weak types or static values differ)";
  return diffs.length > 4 ? `${diffs.slice(0, 4).join("; ")}; and ${diffs.length - 4} more` : diffs.join("; ");
}
