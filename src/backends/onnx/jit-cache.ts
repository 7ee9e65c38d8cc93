/**
 * @file The jit program cache: one executable per jaxpr (compiled ahead of the first call), shared between jaxprs
 * whose compiled programs are identical, released when its jaxprs are collected or dropped.
 */
import { createHash } from "node:crypto";
import type { ArrayImpl } from "../../core/array-impl.js";
import { config } from "../../core/config.js";
import { logCompile } from "../../core/compile-log.js";
import { monotonicUs, profiling, reportSpan } from "../../core/profile-events.js";
import type { Jaxpr } from "../../core/jaxpr.js";
import { type Program, compileJaxpr } from "../../compiler/compile.js";
import { summarizeOnnx } from "../../compiler/summary.js";
import { fuseElementwise } from "../../compiler/fuse-elementwise.js";
import { onnxBackendOptions } from "./backend-options.js";
import { keyOf } from "./cache-key.js";
import { disposeDonated } from "./donation.js";
import { Executable } from "./executable.js";
import { warnFailedLowerings } from "./fallback.js";
import { type Fused, fusedFor } from "./fusion.js";

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

/**
 * A content key for a program (null: not shareable, e.g. it runs equations on the interpreter or returns constants).
 * The input avals are part of it: programs over bfloat16 and float32 inputs lower to the same graph (bfloat16 values
 * are float32 in it), but their executables marshal the inputs differently.
 */
function contentKey(program: Program, fused: Fused | null, inAvals: readonly { key(): string }[]): string | null {
  if (program.outs.some((o) => typeof o !== "number")) return null;
  let key = `${program.name}|${program.numSlots}|${program.inSlots}|${inAvals.map((a) => a.key()).join(";")}|${program.outs}|${program.outAvals.map((a) => a.key()).join(";")}`;
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
  const key = contentKey(
    program,
    fused,
    [...jaxpr.constvars, ...jaxpr.invars].map((v) => v.aval),
  );
  let c = key ? byContent.get(key) : undefined;
  const reused = c !== undefined;
  if (config.logCompiles) {
    const ins = jaxpr.invars.map((v) => v.aval.str()).join(", ");
    logCompile(
      c
        ? `jit(${name}): compiled (${ins}); an identical program is loaded, reusing its sessions`
        : `jit(${name}): compiling (${ins}) to ${program.steps.length} step(s) from ${jaxpr.eqns.length} equation(s)`,
    );
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
    reportSpan({
      name: `compile jit(${name})`,
      cat: "compile",
      start: t0,
      end: monotonicUs(),
      track: "host",
      args: {
        cache: reused ? "identical program loaded" : "miss",
        steps: program.steps.length,
        equations: jaxpr.eqns.length,
      },
    });
  }
  c.refs++;
  jitCache.set(jaxpr, c);
  releaseOnCollect.register(jaxpr, c, jaxpr);
  return c.exe;
}

/** Releases what was compiled for `jaxpr` now (a jit cache dropped it), instead of when it is collected. */
export function releaseJaxpr(jaxpr: Jaxpr): void {
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
export function runJitted(
  jaxpr: Jaxpr,
  args: ArrayImpl[],
  name: string | undefined,
  donate: readonly boolean[] | undefined,
): ArrayImpl[] {
  const outs = compiledFor(jaxpr, name).run(args, donate);
  disposeDonated(args, outs, donate);
  return outs;
}

/** The ONNX program a jaxpr compiles to, as text (for `jit(f).lower(...).asText()`); compiles without creating sessions. */
export function loweringSummary(jaxpr: Jaxpr, name = "jit"): string {
  const exe = jitCache.get(jaxpr)?.exe;
  const program = exe ? exe.program : compileJaxpr(jaxpr, { name: sanitize(name) });
  const fused = exe ? exe.isFused : onnxBackendOptions.fuseElementwise && fuseElementwise(jaxpr) !== null;
  const head = fused
    ? "// runs as one fused elementwise kernel (native vectors or WebAssembly SIMD, single pass); the ONNX model below is its fallback\n"
    : "";
  return head + summarizeOnnx(program);
}

const sanitize = (s: string): string => s.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 64) || "jit";

/** Programs sharing one executable by content. */
export function jitStats(): { sharedPrograms: number } {
  return { sharedPrograms: byContent.size };
}

/** Forgets the executables shared by content (clearCaches: the executables themselves are disposed by the caller). */
export function clearSharedPrograms(): void {
  byContent.clear();
}
