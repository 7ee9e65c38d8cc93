/** @file Executable: a compiled program with its ONNX Runtime sessions (created on first use, released beyond config.compiledCacheSize) or its fused elementwise kernel. */
import { ArrayImpl } from "../../core/array-impl.js";
import type { ShapedArray } from "../../core/aval.js";
import { config } from "../../core/config.js";
import { logCompile } from "../../core/compile-log.js";
import type { JaxprEqn } from "../../core/jaxpr.js";
import type { Params, Primitive } from "../../core/primitive.js";
import type { OnnxStep, Program } from "../../compiler/compile.js";
import { AsyncProgram } from "./async-run.js";
import { onnxBackendOptions } from "./backend-options.js";
import { own, ownsStorage, reserveOutputs } from "./buffer-pool.js";
import { donatedOutput } from "./donation.js";
import { type JaxprParts, interpretedProgram, warnOnce } from "./fallback.js";
import type { Fused } from "./fusion.js";
import type { ParallelKernel } from "./fused-workers.js";
import type { NativeFusedKernel } from "./native-fused.js";
import { acquireOutput, runError } from "./run-errors.js";
import { type ReadyStep, prepareStep, releaseSession, runStep } from "./sessions.js";

/** An array over `v`'s storage with aval `want` (a copy when the storage is pooled: it has one owner). */
function rewrap(v: ArrayImpl, want: ShapedArray): ArrayImpl {
  if (v.aval.weakType === want.weakType) return v;
  return new ArrayImpl(want, ownsStorage(v) ? v.buffer.slice() : v.shareableBuffer);
}

/** The storage of outputs that own fresh pool memory (not an input's storage, as donated outputs are). */
function freshOutputs(res: readonly ArrayImpl[], inputs: readonly ArrayImpl[]): ArrayImpl["buffer"][] {
  const given = new Set<ArrayBufferLike>();
  for (const a of inputs) if (!a.isDisposed && !a.external) given.add(a.buffer.buffer);
  const out: ArrayImpl["buffer"][] = [];
  for (const r of res) if (ownsStorage(r) && !given.has(r.buffer.buffer)) out.push(r.buffer);
  return out;
}

/**
 * Executables holding ONNX Runtime sessions, at most config.compiledCacheSize: beyond it, the least recently run
 * release theirs (and recreate them if run again), whatever keeps their jaxprs alive.
 */
export const loaded = new Set<Executable>();
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
  /** Set after the first run of a jitted program readied memory for the next calls' outputs. */
  private reserved = false;
  /** Synchronous runs so far, and the fastest of them after the first (microseconds), deciding async dispatch. */
  private syncRuns = 0;
  private fastestUs = Infinity;
  /** The program's device form for async dispatch (undefined: not made yet; null: it cannot run asynchronously). */
  private asyncProgram: AsyncProgram | null | undefined;
  constructor(
    public program: Program,
    private readonly jit: boolean,
    private readonly parts?: JaxprParts,
    private fused: Fused | null = null,
  ) {
    this.ready = program.steps.map(() => null);
  }
  /** True when the program runs as a fused elementwise kernel instead of ONNX Runtime sessions. */
  get isFused(): boolean {
    return this.fused !== null;
  }
  /** The fused kernel, if any (tests inspect its thread statistics). */
  get fusedKernel(): ParallelKernel | NativeFusedKernel | null {
    return this.fused ? this.fused.kernel : null;
  }
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
    this.program.steps.forEach((s, i) => {
      if (s.kind === "onnx" && !this.ready[i]) this.ready[i] = this.prepareAt(i, s);
    });
    this.prepared = true;
    return this;
  }
  /** Set once prepare() created the sessions: a later prepareAt recreates one that was released. */
  private prepared = false;
  private prepareAt(i: number, s: OnnxStep): ReadyStep {
    if (this.prepared && this.jit && config.logCompiles) {
      logCompile(
        `jit(${this.program.name}): recreating the ONNX Runtime session of step ${i} (released by the compiledCacheSize=${config.compiledCacheSize} eviction or clearCaches)`,
      );
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
    let res: ArrayImpl[];
    try {
      res = this.fused ? this.runFused(this.fused, inputs, donate) : this.runPlan(inputs);
    } catch (e) {
      throw runError(e, `jit(${this.program.name})`, inputs);
    }
    // a loop that donates its parameters recycles them into the next outputs: nothing to ready
    if (this.jit && !this.reserved && !donate?.includes(true)) {
      this.reserved = true;
      reserveOutputs(freshOutputs(res, inputs));
    }
    return res;
  }
  private runPlan(inputs: readonly ArrayImpl[]): ArrayImpl[] {
    const p = this.program;
    if (p.steps.length === 1 && p.steps[0].kind === "onnx") return this.runSingle(p, p.steps[0], inputs);
    const env = new Array<ArrayImpl | undefined>(p.numSlots);
    p.inSlots.forEach((s, i) => {
      env[s] = inputs[i];
    });
    const read = (o: number | ArrayImpl): ArrayImpl => (typeof o === "number" ? env[o]! : o);
    for (let k = 0; k < p.steps.length; k++) {
      const s = p.steps[k];
      if (s.kind === "onnx") {
        const r = this.ready[k] ?? this.prepareAt(k, s);
        const outs = runStep(
          r,
          s.inputs.map((q) => env[q]!),
        );
        s.outputs.forEach((q, i) => {
          env[q] = outs[i];
        });
      } else {
        const outs = runEqnOnHost(s.eqn, s.inputs.map(read));
        s.outputs.forEach((q, i) => {
          env[q] = outs[i];
        });
      }
    }
    const res = p.outs.map((o, i) => rewrap(read(o), p.outAvals[i]));
    // intermediates held on devices (a shard_map host step's outputs) are freed now, not when the collector finds them
    const keep = new Set<ArrayImpl>([...inputs, ...res, ...p.outs.map(read)]);
    for (const v of env)
      if (v && v.external && !keep.has(v)) {
        keep.add(v);
        v.dispose();
      }
    return res;
  }
  /** One pass of the fused kernel; outputs come from the buffer pool, or are donated inputs' storage. */
  private runFused(
    { spec, kernel }: Fused,
    inputs: readonly ArrayImpl[],
    donate: readonly boolean[] | undefined,
  ): ArrayImpl[] {
    let n = 1;
    for (const d of spec.shape) n *= d;
    const ins = new Array<Float32Array>(spec.numInputs),
      scalars = new Array<number>(spec.numScalars);
    for (let i = 0; i < inputs.length; i++) {
      const [kind, k] = spec.params[i];
      const d = inputs[i].buffer as Float32Array;
      if (kind === "input") ins[k] = d;
      else scalars[k] = d[0];
    }
    const outs = new Array<Float32Array>(spec.outputs.length);
    const taken = new Set<number>();
    for (let j = 0; j < outs.length; j++) {
      const d = donatedOutput(inputs, donate, taken, (i) => spec.params[i][0] === "input");
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
    // decided from the third synchronous run on (see below)
    const costly = this.syncRuns > 2 && this.fastestUs >= onnxBackendOptions.asyncMinRunUs;
    if (this.jit && costly && onnxBackendOptions.asyncDispatch && r.fast) {
      const a = this.asyncProgram === undefined ? (this.asyncProgram = AsyncProgram.create(p, r)) : this.asyncProgram;
      // a program whose device run turned out cheap goes back inline for good (that time is the run's own)
      if (a && a.lastRunUs > 0 && a.lastRunUs < onnxBackendOptions.asyncMinRunUs) this.asyncProgram = null;
      else if (a) {
        const res = a.dispatch(inputs);
        if (res) return res;
      }
    }
    const args = new Array<ArrayImpl>(s.inputs.length);
    for (let i = 0; i < args.length; i++) args[i] = inputs[p.inSlots.indexOf(s.inputs[i])];
    if (!this.jit) return this.finishSingle(p, s, inputs, runStep(r, args));
    // pending inputs are waited for outside the timed run
    for (const a of args) if (a.pendingWrite !== null) a.blockUntilReady();
    const t0 = performance.now();
    const outs = runStep(r, args);
    // the first run's time includes ORT's first-run allocations: the fastest of the later ones decides (from the
    // third call on: one slow run on a loaded host does not move a cheap program off the calling thread)
    const us = (performance.now() - t0) * 1000;
    if (this.syncRuns++ > 0) this.fastestUs = Math.min(this.fastestUs, us);
    return this.finishSingle(p, s, inputs, outs);
  }
  private finishSingle(p: Program, s: OnnxStep, inputs: readonly ArrayImpl[], outs: ArrayImpl[]): ArrayImpl[] {
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
    this.asyncProgram = undefined;
    loaded.delete(this);
  }
}

/** Runs one equation off ONNX Runtime (set by the backend: its eager path, where call primitives recurse). */
let hostExecute: ((prim: Primitive, args: ArrayImpl[], params: Params) => ArrayImpl[]) | null = null;
/** Sets how host steps run (the backend's eager path). */
export function setHostExecutor(f: (prim: Primitive, args: ArrayImpl[], params: Params) => ArrayImpl[]): void {
  hostExecute = f;
}
/** Runs one equation by its reference impl (call primitives recurse into this backend). */
function runEqnOnHost(e: JaxprEqn, args: ArrayImpl[]): ArrayImpl[] {
  if (!hostExecute) throw new Error("onnx backend: no host executor is set (the backend module sets it when it loads)");
  return hostExecute(e.primitive, args, e.params);
}
