/** @file jit: tracing once per signature, the compiled call, lower()/compile(), the jit-with-shardings hook and clearCaches. */
import { Array } from "../core/array.js";
import { disposeDonated } from "../core/donate.js";
import { ClosedJaxpr, type Jaxpr } from "../core/jaxpr.js";
import { paramsKey, staticArgKey } from "../core/static-key.js";
import { clearBackendCaches, describe, trimBackendMemory } from "../core/trace.js";
import { checkArity, checkOptions } from "../core/check-args.js";
import type { TreeDef } from "../core/tree.js";
import { flatOut, flatten, flattenArrays, unflatten } from "./api-util.js";
import {
  NO_MATCH,
  type Signature,
  callCompiled,
  clearTraceCaches,
  fastCall,
  newTraceCache,
  recordFast,
  recordSharded,
  shardedFastCall,
  traceCached,
} from "./jit.js";

const JSArray = globalThis.Array;

export interface JitOpts {
  staticArgnums?: number | number[];
  staticArgnames?: string | string[];
  donateArgnums?: number | number[];
  inShardings?: unknown;
  outShardings?: unknown;
}
export interface Lowered {
  asText(): string;
  compile(): { call: (...args: unknown[]) => unknown; asText(): string; costAnalysis?: () => unknown };
  jaxpr: ClosedJaxpr;
}

/** One jit call the parallel layer may partition (its arguments or in/out shardings are NamedShardings). */
export interface ShardedJitRequest {
  name: string;
  /** Identifies the jitted function's cache (for caching per function): a new object once that cache is cleared. */
  owner: object;
  /** The trace-cache key of this call signature. */
  key: string;
  /** The dynamic (non-static) arguments, the tree inShardings is a prefix of. */
  dyn: unknown[];
  leaves: Array[];
  flatF: (...xs: Array[]) => Array[];
  opts: JitOpts;
  /** The output tree (known once flatF has been traced). */
  outDef: () => TreeDef;
  /** The mesh of a sharding constraint in the traced program, when no argument or out sharding names one. */
  constraintMesh?: unknown;
}
/** A partitioned jit call's flat outputs, and what would repeat it (null: it cannot be repeated, e.g. the emulation ran it). */
export interface ShardedJitCall {
  outs: Array[];
  again: object | null;
}
/** Registered by src/parallel/gspmd.ts: partitions a jit call over a mesh (null: run it unpartitioned). */
export interface ShardedJitHook {
  anySharded(args: unknown[]): boolean;
  call(req: ShardedJitRequest): ShardedJitCall | null;
  /**
   * Runs a call again whose argument structure and leaf avals equal those of the call that gave `again`: the flat
   * outputs, or null when anything else it depended on changed (the caller then takes the full path).
   */
  repeat(again: object, leaves: Array[]): Array[] | null;
  lower(req: ShardedJitRequest): Lowered | null;
  /** The mesh (over more than one device) of a sharding constraint at the top of `jaxpr`, or null. */
  constraintMesh(jaxpr: Jaxpr): unknown;
}
let shardedJit: ShardedJitHook | null = null;
export function registerShardedJit(h: ShardedJitHook): void {
  shardedJit = h;
}
export type Jitted<A extends unknown[], R> = ((...args: A) => R) & {
  lower(...args: A): Lowered;
  clearCache(): void;
  cacheSize(): number;
};

/** A cache-key form of a pytree structure: custom nodes contribute their class (by identity) and aux data. */
function defKey(d: TreeDef): string {
  switch (d.kind) {
    case "leaf":
      return "*";
    case "null":
      return "N";
    case "undefined":
      return "u";
    case "array":
      return `[${d.children.map(defKey).join(",")}]`;
    case "object":
      return `{${(d.aux as string[]).map((k, i) => `${JSON.stringify(k)}:${defKey(d.children[i])}`).join(",")}}`;
    case "custom":
      return `C${paramsKey(d.aux)}(${d.children.map(defKey).join(",")})`;
  }
}

function argnumList(fn: string, name: string, v: number | number[] | undefined): number[] {
  const l = v === undefined ? [] : typeof v === "number" ? [v] : v;
  if (!JSArray.isArray(l) || !l.every((i) => Number.isInteger(i)))
    throw new TypeError(`${fn}: ${name} must be an integer or a list of integers, got ${describe(v)}`);
  return l;
}

/**
 * jit(f): traces f once per distinct (argument structure, avals, static values) and runs the staged
 * program as one compiled call. Side effects in f (console.log, pushing to outer arrays) run only while
 * tracing, i.e. on the first call for each new signature — exactly as in JAX.
 */
export function jit<A extends unknown[], R>(f: (...args: A) => R, opts: JitOpts = {}): Jitted<A, R> {
  if (typeof f !== "function") throw new TypeError(`jit: expected a function to compile, got ${describe(f)}`);
  const jitForms = "jit(f, { staticArgnums, staticArgnames, donateArgnums, inShardings, outShardings })";
  checkArity("jit", arguments, 2, jitForms);
  checkOptions(
    "jit",
    opts,
    ["staticArgnums", "staticArgnames", "donateArgnums", "inShardings", "outShardings"],
    jitForms,
  );
  const cache = newTraceCache();
  const name = f.name || "fn";
  const staticNums = argnumList(`jit(${name})`, "staticArgnums", opts.staticArgnums);
  const staticNames =
    opts.staticArgnames === undefined
      ? []
      : typeof opts.staticArgnames === "string"
        ? [opts.staticArgnames]
        : opts.staticArgnames;
  const donateNums = argnumList(`jit(${name})`, "donateArgnums", opts.donateArgnums);
  const outDefs = new Map<string, TreeDef>();

  const prepare = (args: unknown[]) => {
    const n = args.length;
    // as in JAX, every static argnum must name a passed positional argument
    const bad = staticNums.filter((i) => i >= n || i < -n);
    if (bad.length) {
      throw new RangeError(
        `jit(${name}): staticArgnums=[${staticNums.join(", ")}] refers to argument(s) ${bad.join(", ")}, but the function was called with only ${n} positional argument(s)`,
      );
    }
    const stat = new Set(staticNums.map((i) => (i < 0 ? i + n : i)));
    const dyn: unknown[] = [],
      statVals: string[] = [];
    let optsStatic: Record<string, unknown> | null = null;
    args.forEach((a, i) => {
      if (stat.has(i)) {
        statVals.push(`${i}=${staticArgKey(`jit(${name})`, `static argument ${i}`, a)}`);
        return;
      }
      if (
        i === n - 1 &&
        staticNames.length &&
        a !== null &&
        typeof a === "object" &&
        !(a instanceof Array) &&
        !JSArray.isArray(a)
      ) {
        // Python-style keyword options: named static entries leave the traced tree
        const o = a as Record<string, unknown>;
        optsStatic = {};
        const rest: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(o)) {
          if (staticNames.includes(k)) {
            optsStatic[k] = v;
            statVals.push(
              `${JSON.stringify(k)}=${staticArgKey(`jit(${name})`, `static argument ${JSON.stringify(k)}`, v)}`,
            );
          } else rest[k] = v;
        }
        dyn.push(rest);
        return;
      }
      dyn.push(a);
    });
    const [leaves, def] = flattenArrays(`jit(${name})`, dyn, "argument");
    const donate: boolean[] = new JSArray<boolean>(leaves.length).fill(false);
    if (donateNums.length) {
      // mark every leaf of a donated positional argument
      let k = 0;
      dyn.forEach((a, i) => {
        const cnt = flatten(a)[0].length;
        if (donateNums.includes(i)) for (let j = 0; j < cnt; j++) donate[k + j] = true;
        k += cnt;
      });
    }
    const key = `${defKey(def)}|${leaves.map((l) => l.aval.key()).join(";")}|${statVals.join(",")}`;
    // for logCompiles only: which positional argument each leaf comes from
    const sig = (): Signature => {
      const labels: string[] = [];
      const dynIdx = args.map((_, i) => i).filter((i) => !stat.has(i));
      dyn.forEach((a, j) => {
        const cnt = flatten(a)[0].length;
        for (let q = 0; q < cnt; q++)
          labels.push(cnt === 1 ? `argument ${dynIdx[j]}` : `argument ${dynIdx[j]} leaf ${q}`);
      });
      return {
        structure: defKey(def),
        leaves: leaves.map((l, i) => ({
          label: labels[i] ?? `leaf ${i}`,
          aval: `${l.aval.str()}${l.aval.weakType ? " (weakly typed)" : ""}`,
        })),
        statics: statVals.map((v) => {
          const e = v.indexOf("=");
          return { label: v.slice(0, e), value: v.slice(e + 1) };
        }),
      };
    };
    const rebuild = (xs: Array[]): unknown[] => {
      const d = unflatten(def, xs) as unknown[];
      const full: unknown[] = [];
      let k = 0;
      args.forEach((a, i) => {
        if (stat.has(i)) full.push(a);
        else if (optsStatic && i === n - 1) full.push({ ...(d[k++] as object), ...optsStatic });
        else full.push(d[k++]);
      });
      return full;
    };
    const flatF = (...xs: Array[]): Array[] => {
      const store: { def?: TreeDef } = {};
      const outs = flatOut(`jit(${name})`, f(...(rebuild(xs) as A)), store);
      outDefs.set(key, store.def!);
      return outs;
    };
    return { leaves, key, flatF, donate, def, sig, dyn };
  };

  const noStatic = staticNums.length === 0 && staticNames.length === 0;
  const shardedOpts = opts.inShardings !== undefined || opts.outShardings !== undefined;
  const repeat = (again: object, leaves: Array[]) => shardedJit!.repeat(again, leaves);
  // what the parallel layer keys its partitioned signatures by: renewed when this cache is cleared
  const scope = (): object => {
    cache.check();
    return cache.scope;
  };
  const call = (...args: A): R => {
    // the latest partitioned call again (its arguments' shardings are checked there: the same ones imply the hook)
    if (noStatic && cache.sharded && shardedJit) {
      const r = shardedFastCall(cache, args, repeat);
      if (r !== NO_MATCH) return r as R;
    }
    const hook = shardedJit && (shardedOpts || shardedJit.anySharded(args)) ? shardedJit : null;
    if (noStatic && !hook) {
      const r = fastCall(cache, args);
      if (r !== NO_MATCH) return r as R;
    }
    const { leaves, key, flatF, donate, def, sig, dyn } = prepare(args);
    if (hook) {
      const req = { name, owner: scope(), key, dyn, leaves, flatF, opts, outDef: () => outDefs.get(key)! };
      const res = hook.call(req);
      if (res) {
        const outDef = outDefs.get(key)!;
        if (noStatic && res.again) recordSharded(cache, args, def, outDef, res.again, donate);
        // JAX's donation: the donated arguments are invalid after the call (their device buffers go back to the pool)
        if (donate.some(Boolean)) disposeDonated(leaves, res.outs, donate);
        return unflatten(outDef, res.outs) as R;
      }
    }
    const c = traceCached(
      cache,
      key,
      flatF,
      leaves.map((l) => l.aval),
      name,
      sig,
    );
    // unsharded arguments, but the program constrains a value's sharding: partition it as JAX does
    const cm = !hook && shardedJit ? shardedJit.constraintMesh(c.jaxpr) : null;
    if (cm) {
      const req = { name, owner: scope(), key, dyn, leaves, flatF, opts, outDef: () => outDefs.get(key)! };
      const res = shardedJit!.call({ ...req, constraintMesh: cm });
      if (res) {
        if (donate.some(Boolean)) disposeDonated(leaves, res.outs, donate);
        return unflatten(outDefs.get(key)!, res.outs) as R;
      }
    }
    const outs = callCompiled(c, leaves, name, donate);
    const outDef = outDefs.get(key)!;
    if (noStatic && cache.entries.get(key) === c) recordFast(cache, args, def, c, outDef, name, donate);
    // output structures of signatures the (bounded) cache dropped
    if (outDefs.size > 2 * cache.entries.size + 16)
      for (const k of outDefs.keys()) if (k !== key && !cache.entries.has(k)) outDefs.delete(k);
    return unflatten(outDef, outs) as R;
  };
  const jitted = call as Jitted<A, R>;
  jitted.lower = (...args: A): Lowered => {
    const { leaves, key, flatF, sig, dyn } = prepare(args);
    if (shardedJit && (shardedOpts || shardedJit.anySharded(args))) {
      const low = shardedJit.lower({
        name,
        owner: scope(),
        key,
        dyn,
        leaves,
        flatF,
        opts,
        outDef: () => outDefs.get(key)!,
      });
      if (low) {
        const compiled = low.compile;
        return { ...low, compile: () => ({ ...compiled(), call: (...a: unknown[]) => call(...(a as A)) }) };
      }
    }
    const c = traceCached(
      cache,
      key,
      flatF,
      leaves.map((l) => l.aval),
      name,
      sig,
    );
    const cm = shardedJit ? shardedJit.constraintMesh(c.jaxpr) : null;
    if (cm) {
      const req = { name, owner: scope(), key, dyn, leaves, flatF, opts, outDef: () => outDefs.get(key)! };
      const low = shardedJit!.lower({ ...req, constraintMesh: cm });
      if (low) {
        const compiled = low.compile;
        return { ...low, compile: () => ({ ...compiled(), call: (...a: unknown[]) => call(...(a as A)) }) };
      }
    }
    const closed = new ClosedJaxpr(c.jaxpr, []);
    const text = () =>
      `module @jit_${name}\n${c.jaxpr.toString()}${loweringSummary ? `\n\n${loweringSummary(c.jaxpr)}` : ""}`;
    return {
      asText: text,
      jaxpr: closed,
      compile: () => ({ call: (...a: unknown[]) => call(...(a as A)), asText: text }),
    };
  };
  // releases the compiled programs and their ONNX Runtime sessions now, and the memory they held
  jitted.clearCache = () => {
    cache.clear();
    outDefs.clear();
    trimBackendMemory();
  };
  jitted.cacheSize = () => {
    cache.check();
    return cache.entries.size;
  };
  return jitted;
}

/**
 * jax.clearCaches(): every jitted function retraces on its next call, and the backends release every compiled
 * program, cached eager session and pooled buffer now, handing the freed memory back to the system.
 */
export function clearCaches(): void {
  clearTraceCaches();
  clearBackendCaches();
  trimBackendMemory();
}

/** The engine registers a summarizer of the compiled ONNX graph for lower().asText(). */
let loweringSummary: ((j: import("../core/jaxpr.js").Jaxpr) => string) | null = null;
export function setLoweringSummary(f: (j: import("../core/jaxpr.js").Jaxpr) => string): void {
  loweringSummary = f;
}

// ---------------------------------------------------------------- makeJaxpr / evalShape
