/** @file jit: trace once per (avals, static args), cache, and run the jaxpr as one compiled program (the pjit primitive). */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { config, onConfigChange } from "../core/config.js";
import { Jaxpr, convertConstvars, evalJaxpr, typecheckJaxpr } from "../core/jaxpr.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { Primitive } from "../core/primitive.js";
import { bind, getBackend, withTrace, evalTrace } from "../core/trace.js";
import { jvpFlat } from "./jvp.js";
import { vmapFlat } from "./vmap.js";

export interface PjitParams { jaxpr: Jaxpr; name: string; donated_invars: boolean[]; [k: string]: unknown }

/** The primitive a jitted call binds: its jaxpr runs as one program on the backend. */
export const pjitP: Primitive<PjitParams> = new Primitive<PjitParams>("pjit", {
  abstractEval(avals, { jaxpr, name }) {
    if (avals.length !== jaxpr.invars.length) throw new TypeError(`pjit ${name}: expected ${jaxpr.invars.length} arguments, got ${avals.length}`);
    avals.forEach((a, i) => {
      if (!a.sameType(jaxpr.invars[i].aval)) throw new TypeError(`pjit ${name}: argument ${i} is ${a.str()} but the jaxpr expects ${jaxpr.invars[i].aval.str()}`);
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
    const { jaxpr: bj, consts } = traceToJaxpr(
      (...xs) => vmapFlat((...ys) => evalJaxpr(jaxpr, [], ys), xs, dims, () => 0, axis),
      inAvals, "vmap(pjit)",
    );
    const j = convertConstvars(bj);
    const outs: Array[] = bind(pjitP, [...consts, ...args], { jaxpr: j, name: `vmap(${name})`, donated_invars: [...consts.map(() => false), ...donated_invars] });
    return [outs, outs.map(() => 0)];
  },
  lower: (ctx, inputs, { jaxpr }) => ctx.inlineJaxpr(jaxpr, inputs),
  missing: { transpose: "pjit is inlined under jvp, so linear jaxprs never contain it" },
});

export interface CompiledCall {
  jaxpr: Jaxpr;
  consts: Array[];
  outAvals: ShapedArray[];
}

/** A cache of traced jaxprs keyed by input avals (and static args); cleared when semantics flags change. */
export class TraceCache {
  readonly entries = new Map<string, CompiledCall>();
  hits = 0;
  misses = 0;
}
const allCaches = new Set<WeakRef<TraceCache>>();
onConfigChange((name) => {
  if (name === "enableX64" || name === "threefryPartitionable") for (const r of allCaches) r.deref()?.entries.clear();
});
export function newTraceCache(): TraceCache {
  const c = new TraceCache();
  allCaches.add(new WeakRef(c));
  return c;
}

/** Traces (or fetches) the flat jaxpr of f for these avals; consts are returned separately. */
export function traceCached(cache: TraceCache, key: string, f: (...xs: Array[]) => Array[], avals: ShapedArray[], name: string): CompiledCall {
  const hit = cache.entries.get(key);
  if (hit) { cache.hits++; return hit; }
  cache.misses++;
  const { jaxpr, consts } = traceToJaxpr(f, avals, `jit(${name})`);
  const j = convertConstvars(jaxpr);
  if (config.checkJaxprs) typecheckJaxpr(j, `jit(${name})`);
  const entry = { jaxpr: j, consts, outAvals: j.outAvals };
  // a jaxpr that closes over tracers of an enclosing transformation is only valid inside it
  if (consts.every((c) => c instanceof ArrayImpl)) cache.entries.set(key, entry);
  return entry;
}

export function callCompiled(c: CompiledCall, args: Array[], name: string, donate: boolean[]): Array[] {
  return bind(pjitP, [...c.consts, ...args], { jaxpr: c.jaxpr, name, donated_invars: [...c.consts.map(() => false), ...donate] });
}
