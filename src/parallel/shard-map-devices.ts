/**
 * @file shardMap on the device runtime (config spmdRuntime "devices"): a staged primitive whose impl traces the body
 * once at the per-device block shapes with the mesh axis names bound, lowers it to one ONNX program whose collectives
 * are jaxts.collectives ops, dispatches it on every device of the mesh on its own block (arguments already resident
 * with the right sharding are not copied) and returns outputs resident on the devices per out_specs. What this slice cannot compile (host steps, dtypes, no addon) runs the emulation (nested
 * named vmap) instead, and the reason is printed once.
 */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { config } from "../core/config.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { type AxisData, type BDim, type MaybeZero, Primitive } from "../core/primitive.js";
import { bind, getCurrentTrace, type Trace, withNamedAxis } from "../core/trace.js";
import { unflatten, type TreeDef } from "../core/tree.js";
import { type Atom, Jaxpr } from "../core/jaxpr.js";
import { compileJaxpr, compileOptions, type OnnxStep, type Program } from "../compiler/compile.js";
import { summarizeOnnx } from "../compiler/summary.js";
import { installProgramLowerings } from "../lowerings/index.js";
import { type DebugCallbackParams, debugCallbackP } from "../primitives/debug-callback.js";
import { monotonicUs, profiling, reportSpan } from "../core/profile-events.js";
import {
  DEVICE_DTYPES,
  DeviceBuffer,
  type DeviceProgram,
  deviceProgram,
  deviceRuntimeUnavailable,
  dispatch,
  type RuntimeDevice,
  resolvedSpmdRuntime,
  runtimeDevice,
  transferStats,
  type TransferStats,
} from "../runtime/index.js";
import { spmdFallbackNote } from "../runtime/spmd-runtime.js";
import { flattenArrays } from "../transforms/api-util.js";
import { jvpFlat } from "../transforms/jvp.js";
import { vmapFlatKeep } from "../transforms/vmap.js";
import { withSpmdMesh } from "./lower-collectives.js";
import { type AsyncSchedule, asyncScheduleOptions, collectiveOverlapKey } from "./overlap-collectives.js";
import { scheduleAsyncCollectives } from "../compiler/async-collectives.js";
import { combineCollectives } from "../compiler/combine-collectives.js";
import { resolvePsumTranspose } from "./varying.js";
import { replicatedInGroups, shardWeightUpdates, type UpdateShardingInfo } from "./update-sharding.js";
import { fuseCollectiveEpilogues } from "../compiler/collective-epilogues.js";
import type { Mesh } from "./mesh.js";
import { NamedShardingImpl, type PartitionSpecImpl } from "./sharding.js";
import { placeBlocks, residentArray, sameSharding, shardedStorage } from "./device-arrays.js";
import { blockIndex, localRanks, localRanksOf, outputLayout, runMultiProcess } from "./shard-map-multiprocess.js";

type Spec = PartitionSpecImpl;
const JSArray = globalThis.Array;

/** Says once per reason that shardMap runs on the emulation (a warning under "devices", a debug note under "auto"). */
function fallback(why: string): null {
  spmdFallbackNote("shardMap", why);
  return null;
}

/** The trace names of loop and branch bodies (transforms/scan.ts, control-flow.ts): lax.scan, lax.map, foriLoop, whileLoop, cond, switch. */
const CONTROL_FLOW_BODY = /^(scan body|map|fori_loop body|while_loop body|while_loop cond|lax\.cond|lax\.switch)$/;
/** The control-flow body being traced around this call, or null. */
function enclosingControlFlow(): string | null {
  for (let t: Trace | null = getCurrentTrace(); t; t = t.parent) if (CONTROL_FLOW_BODY.test(t.name)) return t.name;
  return null;
}

/** The body traced once at the per-device block shapes with every mesh axis bound (its consts are concrete). */
export interface TracedBody {
  jaxpr: Jaxpr;
  consts: ArrayImpl[];
  outSpecs: Spec[];
  blockAvals: ShapedArray[];
}
export type SMP = {
  name: string;
  run: (xs: ArrayImpl[]) => ArrayImpl[];
  emulate: (...xs: Array[]) => Array[];
  out_avals: ShapedArray[];
  mesh: Mesh;
  in_specs: Spec[];
  check_vma: boolean;
  /** The per-device body (memoized), or why it cannot be had; the transformation rules (shard-map-rules.ts) use it. */
  body: () => TracedBody | string;
  /** The per-device program as text, with its collective counts (jit's lower().asText() of a program holding it). */
  describe: () => string;
};

let emulating = 0;
/** f run as the emulation: shardMaps reached inside it take the nested-vmap path. */
const asEmulation =
  <A extends unknown[], R>(f: (...a: A) => R) =>
  (...a: A): R => {
    emulating++;
    try {
      return f(...a);
    } finally {
      emulating--;
    }
  };

/**
 * shard_map as one staged primitive (device runtime only): its impl runs the body on every device of the mesh (or the
 * emulation where the device path cannot); under jit it is one equation (run between the program's ONNX segments).
 * jvp, transpose and vmap are shard_maps of the transformed body (installed by shard-map-rules.ts); the rules here
 * are their fallback through the emulation, whose collectives carry their own rules.
 */
export const shardMapP: Primitive<SMP> = new Primitive<SMP>(
  "shard_map",
  {
    abstractEval(_avals, p) {
      return p.out_avals;
    },
    impl(args, p) {
      return p.run(args);
    },
    jvp(primals, tangents, p) {
      return jvpByEmulation(primals, tangents, p);
    },
    vmap(axis, args, dims, p) {
      return vmapByEmulation(axis, args, dims, p);
    },
    missing: {
      lower:
        "shard_map runs on the device runtime as its own launch (a host step between a jitted program's ONNX segments)",
      transpose: "installed by shard-map-rules.ts (a shard_map of the body's transpose)",
    },
  },
  { multipleResults: true, dispatchesItself: true },
);
// a call: complex operands pass through to the body, whose own primitives accept or refuse them when it is traced
// (guardComplexOperands skips a primitive marked guarded)
(shardMapP.rules as { complexGuarded?: boolean }).complexGuarded = true;

/** The jvp of a shard_map through its emulation (what the rules fall back to). */
export function jvpByEmulation(primals: Array[], tangents: MaybeZero[], p: SMP): [Array[], MaybeZero[]] {
  fallback(
    "differentiating this shardMap (grad, jvp) runs its emulation: its body cannot be traced per device or already takes a gradient through psum",
  );
  return jvpFlat(asEmulation(p.emulate), primals, tangents);
}
/** The vmap of a shard_map through its emulation (what the rules fall back to). */
export function vmapByEmulation(
  axis: AxisData,
  args: Array[],
  dims: BDim[],
  p: SMP,
  why = "vmap of a shardMap runs its emulation",
): [Array[], BDim[]] {
  fallback(why);
  const r = vmapFlatKeep(asEmulation(p.emulate), args, dims, axis);
  return [r.outs, r.dims];
}

interface Entry {
  params: SMP;
  /** Collectives split into start/done around compute (withCollectiveOverlap, when the call was staged), this schedule. */
  overlap: false | AsyncSchedule;
  /** Gradient bucketing's threshold when the call was staged (config collectiveCombineBytes; 0: off). */
  combineBytes: number;
  /** All-reduce epilogues (compileOptions.collectiveEpilogues when the call was staged). */
  epilogues: boolean;
  outDef: TreeDef;
  compiled?: Compiled | string;
}
/** Per function: staged-call entries by call signature (mesh, argument structure and avals, specs). */
const entries = new WeakMap<object, Map<string, Entry>>();

/**
 * shardMap on the device runtime (config spmdRuntime "devices", or "auto" with the addon loaded): binds shardMapP (under jit it is staged; eagerly it runs on the
 * devices), or returns null for the emulation (another spmdRuntime, or inside the emulation itself).
 * `emulation` is shardMap's nested-vmap path; `outSpecsOf` resolves out_specs against an output tree. Without the
 * replication check (checkVma false, as pmap uses) an output unsharded over an axis is the block of the device with
 * index 0 along it, whatever the others hold.
 */
export function shardMapOnDevices(
  fn: string,
  f: (...args: never[]) => unknown,
  mesh: Mesh,
  inSpecs: Spec[],
  outSpecsOf: (out: unknown) => Spec[],
  args: unknown[],
  emulation: (...args: unknown[]) => unknown,
  checkVma = true,
): { value: unknown; again: RepeatCall } | null {
  if (emulating > 0 || resolvedSpmdRuntime() !== "devices") return null;
  const loop = enclosingControlFlow();
  if (loop)
    return fallback(
      `it is inside a ${loop} (the body compiles to one program there; on the devices each iteration or branch would be its own launch with the rest of the body on the interpreter)`,
    );
  const [leaves, def] = flattenArrays(fn, args, "argument");
  if (inSpecs.length !== leaves.length) return null; // the emulation reports the mismatch
  // the closures below (kept with the entry) see the avals, never the arguments: they must not keep them alive
  const avals = leaves.map((x) => x.aval);
  const key = [
    mesh.cacheKey,
    String(def),
    specsKey(inSpecs),
    config.enableX64,
    config.spmdShardUpdates,
    checkVma,
    collectiveOverlapKey(),
    config.collectiveCombineBytes,
    compileOptions.collectiveEpilogues,
    // the weak type too (aval text omits it): a weak and a strong scalar give outputs of different weak types
    ...avals.map((a) => (a.weakType ? `${a.str()}~weak` : a.str())),
  ].join("|");
  let perFn = entries.get(f);
  if (!perFn) {
    perFn = new Map();
    entries.set(f, perFn);
  }
  let entry = perFn.get(key);
  if (!entry) {
    let outDef: TreeDef | null = null;
    const emulate = (...xs: Array[]): Array[] => {
      const [ol, od] = flattenArrays(fn, emulation(...(unflatten(def, xs) as unknown[])), "output");
      outDef = od;
      return ol;
    };
    // the output avals, and the emulation's static errors (e.g. an output declared replicated over an axis it
    // varies over, even where the values happen to agree), from an abstract trace of the emulation
    const { jaxpr } = traceToJaxpr(asEmulation(emulate), avals, "shard_map_check");
    let traced: TracedBody | string | undefined;
    const e: Entry = {
      overlap: collectiveOverlapKey(),
      combineBytes: config.collectiveCombineBytes,
      epilogues: compileOptions.collectiveEpilogues,
      outDef: outDef!,
      params: {
        name: fn,
        emulate,
        out_avals: jaxpr.outvars.map((v) => v.aval),
        mesh,
        in_specs: inSpecs,
        check_vma: checkVma,
        body: () => (traced ??= traceBody(fn, f, mesh, inSpecs, outSpecsOf, avals, def)),
        describe: () => {
          e.compiled ??= compile(e.params.body(), mesh, inSpecs, false, e.combineBytes, e.epilogues);
          return describeCompiled(e.compiled, mesh);
        },
        run: (xs: ArrayImpl[]): ArrayImpl[] => {
          const done = runOnDevices(fn, mesh, inSpecs, xs, e, checkVma);
          return done ?? (asEmulation(emulate)(...xs) as ArrayImpl[]);
        },
      },
    };
    entry = e;
    perFn.set(key, entry);
  }
  const outs = bind(shardMapP, leaves, entry.params);
  const again: RepeatCall = {
    entry,
    avals,
    x64: config.enableX64,
    shardUpdates: config.spmdShardUpdates,
    overlap: entry.overlap,
    combineBytes: entry.combineBytes,
    epilogues: entry.epilogues,
  };
  return { value: unflatten(entry.outDef, outs), again };
}

/**
 * What a later call of the same shardMap with the same argument structure may reuse (shardMap's per-closure fast
 * path): the staged-call entry and what its key was made of besides the structure, mesh and specs (the leaves' avals,
 * the config flags). It holds avals and the entry, never the arguments.
 */
export interface RepeatCall {
  entry: Entry;
  avals: ShapedArray[];
  x64: boolean;
  shardUpdates: boolean;
  overlap: false | AsyncSchedule;
  combineBytes: number;
  epilogues: boolean;
}

/** Same shape, dtype and weak type (what the call signature's aval text says). */
function sameAval(a: ShapedArray, b: ShapedArray): boolean {
  if (a === b) return true;
  if (a.dtype !== b.dtype || a.weakType !== b.weakType || a.shape.length !== b.shape.length) return false;
  for (let d = 0; d < a.shape.length; d++) if (a.shape[d] !== b.shape[d]) return false;
  return true;
}

/**
 * shardMapOnDevices for a call whose structure, mesh and specs equal those of the call that made `c` (the caller
 * checked them): binds the same entry when the leaves' avals and the config flags of its key are unchanged too, else
 * returns null (the caller takes the full path, which makes or finds the right entry and raises its errors).
 */
export function repeatOnDevices(c: RepeatCall, leaves: Array[]): Array[] | null {
  if (emulating > 0 || resolvedSpmdRuntime() !== "devices") return null;
  if (config.enableX64 !== c.x64 || config.spmdShardUpdates !== c.shardUpdates) return null;
  if (collectiveOverlapKey() !== c.overlap || leaves.length !== c.avals.length) return null;
  if (config.collectiveCombineBytes !== c.combineBytes || compileOptions.collectiveEpilogues !== c.epilogues)
    return null;
  if (enclosingControlFlow()) return null;
  // reading a disposed leaf's aval raises the same error the full path's key would
  for (let k = 0; k < leaves.length; k++) if (!sameAval(leaves[k].aval, c.avals[k])) return null;
  return bind(shardMapP, leaves, c.entry.params);
}

const specTexts = new WeakMap<Spec, string>();
/** The specs as text (each spec's text memoized: a PartitionSpec is immutable). */
function specsKey(specs: readonly Spec[]): string {
  let s = "";
  for (const sp of specs) {
    let t = specTexts.get(sp);
    if (t === undefined) specTexts.set(sp, (t = String(sp)));
    s += t + ";";
  }
  return s;
}

/** The device path of one call on concrete arguments: the flat outputs, or null (said once) for the emulation. */
function runOnDevices(
  fn: string,
  mesh: Mesh,
  inSpecs: Spec[],
  leaves: ArrayImpl[],
  entry: Entry,
  checkVma: boolean,
): ArrayImpl[] | null {
  // staged (jit) under the devices, run after the runtime resolved to the emulation (another setting or backend)
  if (resolvedSpmdRuntime() !== "devices") return null;
  const why = deviceRuntimeUnavailable();
  if (why) return fallback(`the device runtime is unavailable (${why})`);
  for (const x of leaves) if (!DEVICE_DTYPES.has(x.dtype)) return fallback(`an argument is ${x.dtype}`);
  // a mesh wholly on another process: nothing to launch or exchange here; this process computes the same values alone
  const ranks = localRanksOf(mesh);
  if (ranks.length === 0 && new Set(mesh.flatDevices.map((d) => d.processIndex)).size === 1) return null;
  if (entry.compiled === undefined)
    entry.compiled = compile(entry.params.body(), mesh, inSpecs, entry.overlap, entry.combineBytes, entry.epilogues);
  if (typeof entry.compiled === "string") return fallback(entry.compiled);
  // a mesh spanning processes runs synchronously with host-assembled outputs (shard-map-multiprocess.ts)
  if (ranks.length < mesh.size) return runMultiProcess(fn, mesh, entry.compiled, inSpecs, leaves, checkVma);
  return run(fn, mesh, entry.compiled, inSpecs, leaves, checkVma);
}

interface Compiled {
  program: Program;
  consts: ArrayImpl[];
  outAvals: ShapedArray[];
  outSpecs: Spec[];
  device: DeviceProgram | null;
  /** Device copies of the closed-over constants, by input position (made on first use). */
  constBuffers: Map<number, DeviceBuffer[]>;
  /** Debug callbacks hoisted out of the device program (see hoistCallbacks). */
  callbacks: HoistedCallback[];
  /** Whether the replicated outputs' values were compared across devices (at the first call only, see run()). */
  replicasCompared?: boolean;
  /** What run() derives from the mesh and specs alone, for the mesh object it was made for (see callPlan). */
  plan?: CallPlan;
  /** What weight-update sharding (config spmdShardUpdates) rewrote, or null. */
  updateSharding: UpdateShardingInfo | null;
}
/** The per-call constants of a compiled body on one mesh object: computed at its first call, reused by every later one. */
interface CallPlan {
  mesh: Mesh;
  devs: RuntimeDevice[];
  ids: number[];
  /** Program input slots fed by a constant or an argument, in inSlots order: [slot, const or argument index]. */
  feeds: { slot: number; konst: number; arg: number }[];
  /** stepFeeds[j]: the feed (index into feeds) of the launch's input j. */
  stepFeeds: number[];
  /** outFrom[k]: the launch output that program output k is (-1: a feed passed through, or a host constant). */
  outFrom: number[];
  /** Each argument's target sharding (NamedSharding(mesh, in_spec)). */
  inTargets: NamedShardingImpl[];
  /** Each output's global aval and sharding, whether it is replicated over some mesh axis, or why its spec is wrong. */
  outs: ({ aval: ShapedArray; sharding: NamedShardingImpl; replicated: boolean } | { error: string })[];
}
interface HoistedCallback {
  params: DebugCallbackParams;
  first: number;
  count: number;
  avals: ShapedArray[];
}

/** Per-device block avals of arguments with avals `avals` split by `inSpecs` over the mesh. */
export function blockAvals(mesh: Mesh, inSpecs: Spec[], avals: readonly ShapedArray[]): ShapedArray[] {
  return avals.map((a, k) => {
    const { parts } = blockIndex(inSpecs[k], a.ndim, mesh, mesh.coords(0));
    return new ShapedArray(
      a.shape.map((s, d) => s / parts[d]),
      a.dtype,
      a.weakType,
    );
  });
}

/** Traces f at block shapes with every mesh axis bound; a string says why it cannot be traced that way. */
function traceBody(
  fn: string,
  f: (...args: never[]) => unknown,
  mesh: Mesh,
  inSpecs: Spec[],
  outSpecsOf: (out: unknown) => Spec[],
  avals: readonly ShapedArray[],
  def: TreeDef,
): TracedBody | string {
  let outSpecs: Spec[] = [];
  const body = (...xs: Array[]): Array[] => {
    const out = f(...(unflatten(def, xs) as never[]));
    const [ol] = flattenArrays(fn, out, "output");
    outSpecs = outSpecsOf(out);
    return ol;
  };
  const bAvals = blockAvals(mesh, inSpecs, avals);
  const bound = mesh.axisNames.reduceRight<() => ReturnType<typeof traceToJaxpr>>(
    (inner, name, a) => () => withNamedAxis({ name, size: mesh.dims[a] }, inner),
    () => traceToJaxpr(body, bAvals, "shard_map"),
  );
  let jaxpr: Jaxpr, consts: Array[];
  try {
    ({ jaxpr, consts } = bound());
  } catch (e) {
    return `the body cannot be traced per device (${e instanceof Error ? e.message : String(e)})`;
  }
  if (!consts.every((c) => c instanceof ArrayImpl)) return "the body closes over a traced value";
  if (outSpecs.length !== jaxpr.outvars.length) return "the out_specs do not match the outputs";
  return { jaxpr, consts: consts as ArrayImpl[], outSpecs, blockAvals: bAvals };
}

/** Counts of each collective op in a compiled body's per-device program. */
export function collectiveCounts(program: Program): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const m of summarizeOnnx(program).matchAll(/jaxts\.collectives\.(\w+)/g)) counts[m[1]] = (counts[m[1]] ?? 0) + 1;
  return counts;
}

/** A compiled body as text: where it runs, its collectives, what weight-update sharding did, the program. */
function describeCompiled(c: Compiled | string, mesh: Mesh): string {
  if (typeof c === "string") return `// shard_map on the emulation (nested vmap): ${c}`;
  const counts = Object.entries(collectiveCounts(c.program))
    .map(([k, v]) => `${k} x${v}`)
    .join(", ");
  const u = c.updateSharding;
  const upd = u
    ? `weight-update sharding: ${u.psums} psums -> reduce-scatter + ${u.updateEqns} update ops on 1/${mesh.size} + all-gather (${u.buckets} buckets, ${u.scatteredElements} / ${u.gatheredElements} elements scattered / gathered per device)`
    : "weight-update sharding: none";
  return [
    `// shard_map on ${mesh.size} devices (${mesh}), one per-device program; collectives: ${counts || "none"}; ${upd}`,
    summarizeOnnx(c.program),
  ].join("\n");
}

/** A compiled per-device ONNX model and how it was staged (bench/overlap-step-profile.ts profiles these per node). */
export interface DeviceProgramInfo {
  model: Uint8Array;
  overlap: false | AsyncSchedule;
  combineBytes: number;
}
let programObserver: ((p: DeviceProgramInfo) => void) | null = null;
/** Sets the observer called with every per-device program shardMap compiles (null: none); returns the previous one. */
export function setDeviceProgramObserver(
  f: ((p: DeviceProgramInfo) => void) | null,
): ((p: DeviceProgramInfo) => void) | null {
  const prev = programObserver;
  programObserver = f;
  return prev;
}

/** Compiles the traced body for the mesh; a string says why it cannot run on devices. */
function compile(
  body: TracedBody | string,
  mesh: Mesh,
  inSpecs: Spec[],
  overlap: false | AsyncSchedule = false,
  combineBytes = config.collectiveCombineBytes,
  epilogues = compileOptions.collectiveEpilogues,
): Compiled | string {
  if (typeof body === "string") return body;
  const { jaxpr, outSpecs } = body;
  for (const v of [...jaxpr.constvars, ...jaxpr.outvars])
    if (!DEVICE_DTYPES.has(v.aval.dtype)) return `a value of the body is ${v.aval.dtype}`;
  // gradients through psum: psum_transpose is a psum over the axes its cotangent varies over, else the identity
  const invarAxes = inSpecs.map((sp) => new Set(sp.entries.flatMap((_, d) => sp.names(d))));
  const resolved = resolvePsumTranspose(jaxpr, invarAxes);
  if (typeof resolved === "string") return resolved;
  installProgramLowerings();
  // the optimizer update of psummed gradients on each device's 1/n (reduce-scatter, update, all-gather)
  const sharded = config.spmdShardUpdates
    ? shardWeightUpdates(resolved, body.consts, invarAxes, mesh)
    : { jaxpr: resolved, consts: body.consts, info: null };
  const consts = sharded.consts;
  const { jaxpr: body2, callbacks } = hoistCallbacks(sharded.jaxpr);
  const program = withSpmdMesh({ axisNames: mesh.axisNames, dims: mesh.dims }, () =>
    compileJaxpr(body2, {
      name: "shard_map",
      bfloat16Bits: true,
      // gradient bucketing first (each bucket then becomes one Start/Done); with overlap, the asynchronous
      // collectives: in mailbox mode the wide schedule (post every collective as early as its input allows, await at
      // the reader)
      rewriteGraph: (g, shapes, dtypes, valueVar) => {
        combineCollectives(g, shapes, dtypes, { thresholdBytes: combineBytes });
        // the replicated update fused into its all-reduce (an AllReduceEpilogue stays synchronous: synchronous
        // programs, and overlapped ones under the cost model, which keeps large all-reduces synchronous anyway)
        if (
          (!overlap || !asyncScheduleOptions(overlap).every) &&
          epilogues &&
          body2.invars.length === invarAxes.length
        ) {
          const replicated = replicatedInGroups(body2, invarAxes, mesh);
          fuseCollectiveEpilogues(g, dtypes, (nm, groups) => replicated(valueVar(nm), groups));
        }
        if (overlap) scheduleAsyncCollectives(g, shapes, asyncScheduleOptions(overlap), dtypes);
      },
    }),
  );
  if (program.steps.some((s) => s.kind === "host"))
    return `the body needs the interpreter for ${program.notes.join("; ")}`;
  const step = program.steps[0] as OnnxStep | undefined;
  if (step && programObserver) programObserver({ model: step.model, overlap, combineBytes });
  if (step && step.inputDTypes.some((d) => !DEVICE_DTYPES.has(d)))
    return `a program input is ${step.inputDTypes.find((d) => !DEVICE_DTYPES.has(d))}`;
  if (step && step.outAvals.some((a) => !DEVICE_DTYPES.has(a.dtype)))
    return `a program output is ${step.outAvals.find((a) => !DEVICE_DTYPES.has(a.dtype))!.dtype}`;
  const device = step
    ? deviceProgram(
        step.model,
        {
          name: "shard_map",
          inputNames: step.inputNames,
          inputDTypes: step.inputDTypes,
          outputNames: step.outputNames,
          outputDTypes: step.outAvals.map((a) => a.dtype),
          outputShapes: step.outAvals.map((a) => a.shape),
        },
        Math.max(1, localRanks(mesh).length),
      )
    : null;
  return {
    program,
    consts,
    outAvals: jaxpr.outvars.map((v) => v.aval),
    outSpecs,
    device,
    constBuffers: new Map(),
    callbacks,
    updateSharding: sharded.info,
  };
}

/**
 * The body's top-level debug callbacks leave the device program: their operands become extra outputs (after the
 * body's own), and run() calls them back per device, in program order, once the launch finished.
 */
function hoistCallbacks(j: Jaxpr): { jaxpr: Jaxpr; callbacks: HoistedCallback[] } {
  const callbacks: HoistedCallback[] = [];
  const extra: Atom[] = [];
  for (const e of j.eqns) {
    if (e.primitive !== debugCallbackP) continue;
    callbacks.push({
      params: e.params as DebugCallbackParams,
      first: j.outvars.length + extra.length,
      count: e.inputs.length,
      avals: e.inputs.map((a) => a.aval),
    });
    extra.push(...e.inputs);
  }
  if (!callbacks.length) return { jaxpr: j, callbacks };
  return {
    jaxpr: new Jaxpr(
      j.constvars,
      j.invars,
      [...j.outvars, ...extra],
      j.eqns.filter((e) => e.primitive !== debugCallbackP),
    ),
    callbacks,
  };
}

/**
 * Runs a compiled body: each argument's blocks on their devices (an argument already resident with the sharding its
 * in_spec asks for is passed as it is; others are placed, copying only the blocks not already on their device), one
 * launch dispatched on every device (async: the outputs are pending until read), outputs resident per out_specs.
 * An output unsharded over some mesh axis is checked replicated when its value is first waited for (checkVma), or
 * with checkVma false is simply read from the device with index 0 along those axes.
 */
function run(
  fn: string,
  mesh: Mesh,
  c: Compiled,
  inSpecs: Spec[],
  leaves: ArrayImpl[],
  checkVma: boolean,
): ArrayImpl[] {
  const { program, consts } = c;
  const step = program.steps[0] as OnnxStep | undefined;
  const plan = c.plan?.mesh === mesh ? c.plan : (c.plan = callPlan(fn, mesh, c, inSpecs));
  const { devs, feeds } = plan;
  const n = devs.length;
  // feedBufs[f][r]: feed f's buffer on rank r; this call holds one reference to each argument's (freed at the end)
  const feedBufs = new JSArray<DeviceBuffer[]>(feeds.length);
  let owned = 0;
  let launched: DeviceBuffer[][] | null = null;
  const t0 = profiling() ? monotonicUs() : 0;
  const copied0 = t0 ? transferStats() : null;
  try {
    for (let f = 0; f < feeds.length; f++) {
      const { konst, arg } = feeds[f];
      if (konst >= 0) {
        // closed-over constants: copied to every device once per compiled body, kept with it
        const x = consts[konst];
        let bufs = c.constBuffers.get(konst);
        if (!bufs)
          c.constBuffers.set(konst, (bufs = devs.map((dev) => DeviceBuffer.copyOf(dev, x.dtype, x.shape, x.buffer))));
        feedBufs[f] = bufs;
      } else {
        const x = leaves[arg],
          target = plan.inTargets[arg];
        const st = shardedStorage(x);
        if (st && sameSharding(st.sharding, target, x.ndim)) {
          const bufs = new JSArray<DeviceBuffer>(n);
          for (let r = 0; r < n; r++) bufs[r] = st.buffers[r].retain();
          feedBufs[f] = bufs;
        } else feedBufs[f] = placeBlocks(x, target);
      }
      owned = f + 1;
    }
    if (copied0) reportTransfer("copy host -> devices", t0, copied0);
    if (step && c.device) {
      const ins = new JSArray<DeviceBuffer[]>(n);
      for (let r = 0; r < n; r++) {
        const row = new JSArray<DeviceBuffer>(plan.stepFeeds.length);
        for (let j = 0; j < row.length; j++) row[j] = feedBufs[plan.stepFeeds[j]][r];
        ins[r] = row;
      }
      launched = dispatch(c.device, plan.ids, ins).outputs;
    }
    // a program value's buffer on rank r: an output of the launch or a feed (an argument or constant passed through)
    const bufferOf = (slot: number, r: number): DeviceBuffer => {
      const k = step ? step.outputs.indexOf(slot) : -1;
      if (k >= 0 && launched) return launched[r][k];
      return feedBufs[feeds.findIndex((fd) => fd.slot === slot)][r];
    };
    // the hoisted debug callbacks, in program order, each once per device (rank order) with its mesh axis indices;
    // they read their operands on the host: they wait for this launch
    for (const cb of c.callbacks) {
      for (let r = 0; r < n; r++) {
        const vals = cb.avals.map((a, i) => {
          const o = program.outs[cb.first + i] as number | ArrayImpl;
          return new ArrayImpl(a, (typeof o === "number" ? bufferOf(o, r).ready().data : o.buffer).slice());
        });
        const coords = mesh.coords(r);
        bind(debugCallbackP, vals, {
          ...cb.params,
          device: devs[r].id,
          axis_indices: {
            ...Object.fromEntries(mesh.axisNames.map((nm, a) => [nm, coords[a]])),
            ...cb.params.axis_indices,
          },
        });
      }
    }
    // each output stays on its devices, sharded per its out_spec
    const outs = new JSArray<ArrayImpl>(c.outAvals.length);
    for (let k = 0; k < outs.length; k++) {
      const o = program.outs[k],
        info = plan.outs[k];
      if ("error" in info) throw new Error(info.error);
      const aval = c.outAvals[k];
      const src = plan.outFrom[k];
      const bufs = new JSArray<DeviceBuffer>(n);
      for (let r = 0; r < n; r++)
        bufs[r] =
          typeof o !== "number"
            ? DeviceBuffer.copyOf(devs[r], aval.dtype, aval.shape, o.buffer)
            : src >= 0 && launched
              ? launched[r][src].retain()
              : bufferOf(o, r).retain();
      outs[k] = residentArray(
        info.aval,
        info.sharding,
        bufs,
        checkVma && !c.replicasCompared && info.replicated && typeof o === "number" ? { fn } : null,
      );
    }
    // the static check (the emulation's abstract trace) proved the replicated outputs equal on every call; their
    // values are compared once per compiled body, a check of the runtime rather than of the program (comparing every
    // replicated parameter of a training step took ~0.5 ms per step, as long as the step's compute)
    c.replicasCompared = true;
    return outs;
  } finally {
    // this call's references (the launch and the outputs hold their own)
    for (let f = 0; f < owned; f++) if (feeds[f].konst < 0) for (const b of feedBufs[f]) b.free();
    if (launched) for (const os of launched) for (const b of os) b.free();
  }
}

/** The per-call constants of run() for a compiled body on `mesh` (see CallPlan). */
function callPlan(fn: string, mesh: Mesh, c: Compiled, inSpecs: Spec[]): CallPlan {
  const { program, consts, outSpecs } = c;
  const step = program.steps[0] as OnnxStep | undefined;
  const devs = mesh.flatDevices.map((d) => runtimeDevice(d.id));
  const needed = new Set(step ? step.inputs : []);
  for (const o of program.outs) if (typeof o === "number") needed.add(o);
  const feeds: CallPlan["feeds"] = [];
  program.inSlots.forEach((slot, j) => {
    if (needed.has(slot))
      feeds.push({ slot, konst: j < consts.length ? j : -1, arg: j < consts.length ? -1 : j - consts.length });
  });
  const outs = c.outAvals.map((aval, k): CallPlan["outs"][number] => {
    const lay = outputLayout(fn, k, outSpecs[k], aval, mesh);
    if ("error" in lay) return lay;
    return {
      aval: lay.gaval,
      sharding: lay.sharding,
      replicated: mesh.axisNames.some((nm, a) => !lay.used.has(nm) && mesh.dims[a] > 1),
    };
  });
  const stepFeeds = (step ? step.inputs : []).map((sl) => {
    const f = feeds.findIndex((fd) => fd.slot === sl);
    if (f < 0) throw new Error(`${fn}: internal error: the device program reads slot ${sl}, which no argument feeds`);
    return f;
  });
  return {
    mesh,
    devs,
    ids: devs.map((d) => d.id),
    feeds,
    stepFeeds,
    outFrom: program.outs.map((o) => (typeof o === "number" && step ? step.outputs.indexOf(o) : -1)),
    inTargets: inSpecs.map((sp) => new NamedShardingImpl(mesh, sp)),
    outs,
  };
}

/** A transfer span on the host's transfers track: the bytes of the buffers or arrays it copied (profiling only). */
function reportTransfer(name: string, start: number, before: TransferStats): void {
  const now = transferStats();
  const bytes = now.bytesCopied - before.bytesCopied,
    blocks = now.blocksCopied - before.blocksCopied;
  // arguments already resident with the sharding asked for are passed as they are: nothing to report
  if (blocks > 0)
    reportSpan({ name, cat: "transfer", start, end: monotonicUs(), track: "transfers", args: { bytes, blocks } });
}
