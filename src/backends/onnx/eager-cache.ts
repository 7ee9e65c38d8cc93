/**
 * @file The eager path: one cached ONNX Runtime session per (primitive, params, operand avals), shared across shapes
 * for shape-polymorphic primitives, the scalar shortcut to the reference impl for primitives exact on scalars, and
 * the reference impl when lowering or ORT fails (reported once).
 */
import { ArrayImpl } from "../../core/array-impl.js";
import type { ShapedArray } from "../../core/aval.js";
import { config } from "../../core/config.js";
import { allocate, isComplex } from "../../core/dtype.js";
import { OutOfMemoryError } from "../../core/errors.js";
import { Jaxpr, Var } from "../../core/jaxpr.js";
import type { Params, Primitive } from "../../core/primitive.js";
import { abstractEval } from "../../core/trace.js";
import { compileJaxpr } from "../../compiler/compile.js";
import { onnxBackendOptions } from "./backend-options.js";
import { keyOf } from "./cache-key.js";
import { warnFailedLowerings, warnOnce } from "./fallback.js";
import { runError } from "./run-errors.js";
import { type ReadyStep, prepareStep, releaseSession, runStep } from "./sessions.js";

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
  const tiny =
    onnxBackendOptions.scalarFastPath &&
    prim.rules.impl !== undefined &&
    prim.opts.exactOnScalars === true &&
    inAvals.every((a) => a.size <= 1) &&
    outAvals.every((a) => a.size <= 1);
  // complex operands take the primitive's complex rule, with static shapes (its [..., 2] lanes)
  const cplx = inAvals.some((a) => isComplex(a.dtype)) || outAvals.some((a) => isComplex(a.dtype));
  if (empty || tiny || !(cplx ? prim.rules.lowerComplex : prim.rules.lower))
    return { exe: null, outAvals, empty, poly: "", used: 0 };
  const poly = !cplx && prim.opts.shapePolymorphic === true;
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

function compileEager(
  prim: Primitive,
  inAvals: ShapedArray[],
  outAvals: ShapedArray[],
  params: Params,
  poly: boolean,
): ReadyStep | null {
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
    warnOnce(
      `${prim.name} on ${inAvals.map((a) => a.str()).join(", ")}: building its ONNX model failed (${(e as Error).message}); it runs on its reference implementation instead`,
    );
    return null;
  }
}

/** Runs a primitive through its cached eager session (or its reference impl: scalar shortcut, no lowering, a failure). */
export function executeEager(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[] {
  if (prim.opts.dispatchesItself && prim.rules.impl) {
    // as an entry would: no outputs with elements, nothing to run
    const outAvals = abstractEval(
      prim,
      args.map((a) => a.aval),
      params,
    );
    if (outAvals.every((a) => a.size === 0)) return outAvals.map((a) => new ArrayImpl(a, allocate(a.dtype, 0)));
    return prim.rules.impl(args, params, outAvals);
  }
  let m = eagerCache.get(prim);
  if (!m) {
    m = new Map();
    eagerCache.set(prim, m);
  }
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
      warnOnce(
        `${prim.name}: ONNX Runtime failed on ${args.map((a) => a.aval.str()).join(", ")} (${(err as Error).message}); this primitive runs on its reference implementation for these operands from now on`,
      );
      releaseEager(e);
    }
  }
  if (e.empty) return e.outAvals.map((a) => new ArrayImpl(a, allocate(a.dtype, 0)));
  const impl = prim.rules.impl;
  if (!impl)
    throw new Error(`${prim.name}: neither an ONNX lowering nor a reference implementation exists for this primitive`);
  return impl(args, params, e.outAvals);
}

/** Releases every cached eager session (jit executables are released with their jaxprs, or by jax.clearCaches). */
export function clearOnnxCaches(): void {
  for (const m of eagerCache.values()) for (const e of m.values()) if (e.exe) releaseSession(e.exe.shared);
  for (const r of polyCache.values()) if (r) releaseSession(r.shared);
  polyCache.clear();
  eagerCache.clear();
  eagerCount = 0;
}

/** Cached eager entries, and shape-polymorphic eager steps. */
export function eagerStats(): { eagerEntries: number; polySessions: number } {
  return { eagerEntries: eagerCount, polySessions: polyCache.size };
}
