/**
 * @file The "onnx" execution backend: dispatch between the eager per-primitive session cache (eager-cache.ts), the
 * jit program cache (jit-cache.ts, executable.ts, fusion.ts, donation.ts) and the reference impls of call primitives;
 * fallbacks to the interpreter are reported once (fallback.ts). Loading it installs the program lowerings and
 * registers the backend.
 */
import type { ArrayImpl } from "../../core/array-impl.js";
import { config } from "../../core/config.js";
import { Jaxpr } from "../../core/jaxpr.js";
import type { Params, Primitive } from "../../core/primitive.js";
import { type Backend, abstractEval, registerBackend, setBackendSelector } from "../../core/trace.js";
import { installProgramLowerings } from "../../lowerings/index.js";
import { clearBufferPool } from "./buffer-pool.js";
import { donationAtDispatch } from "./donation.js";
import { clearOnnxCaches, eagerStats, executeEager } from "./eager-cache.js";
import { loaded, setHostExecutor } from "./executable.js";
import { clearSharedPrograms, compiledFor, jitStats, releaseJaxpr, runJitted } from "./jit-cache.js";
import { sessionStats } from "./sessions.js";
import { trimNativeHeap } from "./ort-runtime.js";

export { onnxBackendOptions } from "./backend-options.js";
export { sessionOptionsFor } from "./sessions.js";
export { Executable } from "./executable.js";
export { compiledFor, loweringSummary } from "./jit-cache.js";
export { clearOnnxCaches } from "./eager-cache.js";

/** Runs one primitive on concrete arrays: a call primitive's impl, a jit call's compiled program, or the eager path. */
function execute(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[] {
  // call primitives (custom_jvp_call, checkpoint...) run their jaxpr; their impls come back here or to executeJaxpr
  if (!prim.rules.lower && prim.opts.callJaxprParam !== undefined && prim.rules.impl)
    return prim.rules.impl(args, params, []);
  // an effectful primitive without a lowering (a debug callback) runs its impl every time: no cache entry per closure,
  // and never the no-output shortcut
  if (prim.opts.effectful === true && !prim.rules.lower && prim.rules.impl)
    return prim.rules.impl(
      args,
      params,
      abstractEval(
        prim,
        args.map((a) => a.aval),
        params,
      ),
    );
  // a jit call: its jaxpr is one compiled program (sessions sized for it), not an eager one-equation model
  if (prim.name === "pjit" && params.jaxpr instanceof Jaxpr)
    return runJitted(params.jaxpr, args, params.name as string | undefined, donationAtDispatch(params));
  return executeEager(prim, args, params);
}

/** Cache statistics: ORT sessions created so far and alive, cached eager entries, shape-polymorphic eager steps, loaded and shared jit programs. */
export function onnxCacheStats(): {
  sessionsCreated: number;
  sessionsAlive: number;
  eagerEntries: number;
  polySessions: number;
  loadedPrograms: number;
  sharedPrograms: number;
} {
  const { sessionsCreated, sessionsAlive } = sessionStats();
  const { eagerEntries, polySessions } = eagerStats();
  return {
    sessionsCreated,
    sessionsAlive,
    eagerEntries,
    polySessions,
    loadedPrograms: loaded.size,
    sharedPrograms: jitStats().sharedPrograms,
  };
}

export const onnxBackend: Backend & {
  compiledFor: typeof compiledFor;
  release(jaxpr: Jaxpr): void;
  clearCaches(): void;
  trimMemory(): void;
} = {
  name: "onnx",
  execute,
  executeJaxpr(
    jaxpr: Jaxpr,
    consts: ArrayImpl[],
    args: ArrayImpl[],
    opts: { donate?: boolean[]; name?: string },
  ): ArrayImpl[] {
    const donate = opts.donate && consts.length ? [...consts.map(() => false), ...opts.donate] : opts.donate;
    return runJitted(jaxpr, consts.length ? [...consts, ...args] : args, opts.name, donate);
  },
  compiledFor,
  release: releaseJaxpr,
  clearCaches(): void {
    // compiled programs still referenced keep their plans and recreate sessions if run again
    for (const exe of [...loaded]) exe.dispose();
    clearSharedPrograms();
    clearOnnxCaches();
    clearBufferPool();
  },
  trimMemory(): void {
    trimNativeHeap();
  },
};

// host steps of jit programs (equations left to the interpreter) run through this backend's dispatch
setHostExecutor(execute);
// the lowerings written as jaxts programs (qr, eigh, svd, cholesky, ...): one explicit table, never an import side effect
installProgramLowerings();
registerBackend(onnxBackend);
setBackendSelector(() => config.backend);
