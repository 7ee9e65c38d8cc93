/**
 * @file shardMap on the device runtime (config spmdRuntime "devices"): a staged primitive whose impl traces the body
 * once at the per-device block shapes with the mesh axis names bound, lowers it to one ONNX program whose collectives
 * are jaxts.collectives ops, runs it on every device of the mesh concurrently on its own block and assembles the
 * outputs per out_specs. What this slice cannot compile (host steps, dtypes, no addon) runs the emulation (nested
 * named vmap) instead, and the reason is printed once.
 */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { config } from "../core/config.js";
import { type TypedArray, allocate } from "../core/dtype.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import type { Jaxpr } from "../core/jaxpr.js";
import { type AxisData, type BDim, type MaybeZero, Primitive } from "../core/primitive.js";
import { bind, withNamedAxis } from "../core/trace.js";
import { unflatten, type TreeDef } from "../core/tree.js";
import { compileJaxpr, type OnnxStep, type Program } from "../compiler/compile.js";
import { DEVICE_DTYPES, DeviceBuffer, type DeviceProgram, deviceProgram, deviceRuntimeUnavailable, launchSync, runtimeDevice } from "../runtime/index.js";
import { flattenArrays } from "../transforms/api-util.js";
import { jvpFlat } from "../transforms/jvp.js";
import { vmapFlatKeep } from "../transforms/vmap.js";
import { withSpmdMesh } from "./lower-collectives.js";
import { resolvePsumTranspose } from "./varying.js";
import type { Mesh } from "./mesh.js";
import type { PartitionSpecImpl } from "./sharding.js";

type Spec = PartitionSpecImpl;
const JSArray = globalThis.Array;

const said = new Set<string>();
/** Says once per reason that shardMap runs on the emulation. */
function fallback(why: string): null {
  if (!said.has(why)) {
    said.add(why);
    console.warn(`jaxts: shardMap runs on the emulation (nested vmap), not the device runtime: ${why}`);
  }
  return null;
}

/** Block index of each dim of an array with `spec` on the device at mesh coordinates `coords`. */
function blockIndex(spec: Spec, rank: number, mesh: Mesh, coords: number[]): { idx: number[]; parts: number[] } {
  const idx: number[] = [], parts: number[] = [];
  for (let d = 0; d < rank; d++) {
    // the dim splits into (s_n1, ..., s_nk, block), major first in spec order
    let i = 0, p = 1;
    for (const nm of spec.names(d)) { const a = mesh.axisNames.indexOf(nm); i = i * mesh.dims[a] + coords[a]; p *= mesh.dims[a]; }
    idx.push(i);
    parts.push(p);
  }
  return { idx, parts };
}

/** Copies the block `idx` (block shape `block`) between a global row-major array and a block-sized one. */
function copyBlock(global: TypedArray, gshape: readonly number[], block: TypedArray, bshape: readonly number[], idx: readonly number[], toBlock: boolean): void {
  const r = gshape.length;
  if (r === 0) { if (toBlock) block[0] = global[0]; else global[0] = block[0]; return; }
  const gstr = gshape.map((_, i) => gshape.slice(i + 1).reduce((a, b) => a * b, 1));
  const inner = bshape[r - 1];
  const outer = bshape.slice(0, r - 1).reduce((a, b) => a * b, 1);
  const c = new JSArray<number>(r - 1).fill(0);
  for (let o = 0; o < outer; o++) {
    let g = idx[r - 1] * inner;
    for (let d = 0; d < r - 1; d++) g += (idx[d] * bshape[d] + c[d]) * gstr[d];
    const b = o * inner;
    if (toBlock) (block as Float64Array).set((global as Float64Array).subarray(g, g + inner), b);
    else (global as Float64Array).set((block as Float64Array).subarray(b, b + inner), g);
    for (let d = r - 2; d >= 0; d--) { if (++c[d] < bshape[d]) break; c[d] = 0; }
  }
}

const sameData = (a: TypedArray, b: TypedArray): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(a[i] !== a[i] && b[i] !== b[i])) return false;
  return true;
};

/** The body traced once at the per-device block shapes with every mesh axis bound (its consts are concrete). */
export interface TracedBody { jaxpr: Jaxpr; consts: ArrayImpl[]; outSpecs: Spec[]; blockAvals: ShapedArray[] }
export type SMP = {
  name: string; run: (xs: ArrayImpl[]) => ArrayImpl[]; emulate: (...xs: Array[]) => Array[]; out_avals: ShapedArray[];
  mesh: Mesh; in_specs: Spec[]; check_vma: boolean;
  /** The per-device body (memoized), or why it cannot be had; the transformation rules (shard-map-rules.ts) use it. */
  body: () => TracedBody | string;
};

let emulating = 0;
/** f run as the emulation: shardMaps reached inside it take the nested-vmap path. */
const asEmulation = <A extends unknown[], R>(f: (...a: A) => R) => (...a: A): R => {
  emulating++;
  try { return f(...a); } finally { emulating--; }
};

/**
 * shard_map as one staged primitive (device runtime only): its impl runs the body on every device of the mesh (or the
 * emulation where the device path cannot); under jit it is one equation (run between the program's ONNX segments).
 * jvp, transpose and vmap are shard_maps of the transformed body (installed by shard-map-rules.ts); the rules here
 * are their fallback through the emulation, whose collectives carry their own rules.
 */
export const shardMapP: Primitive<SMP> = new Primitive<SMP>("shard_map", {
  abstractEval(_avals, p) { return p.out_avals; },
  impl(args, p) { return p.run(args); },
  jvp(primals, tangents, p) {
    return jvpByEmulation(primals, tangents, p);
  },
  vmap(axis, args, dims, p) {
    return vmapByEmulation(axis, args, dims, p);
  },
  missing: {
    lower: "shard_map runs on the device runtime as its own launch (a host step between a jitted program's ONNX segments)",
    transpose: "installed by shard-map-rules.ts (a shard_map of the body's transpose)",
  },
}, { multipleResults: true });

/** The jvp of a shard_map through its emulation (what the rules fall back to). */
export function jvpByEmulation(primals: Array[], tangents: MaybeZero[], p: SMP): [Array[], MaybeZero[]] {
  fallback("differentiating this shardMap (grad, jvp) runs its emulation: its body cannot be traced per device or already takes a gradient through psum");
  return jvpFlat(asEmulation(p.emulate), primals, tangents);
}
/** The vmap of a shard_map through its emulation (what the rules fall back to). */
export function vmapByEmulation(axis: AxisData, args: Array[], dims: BDim[], p: SMP, why = "vmap of a shardMap runs its emulation"): [Array[], BDim[]] {
  fallback(why);
  const r = vmapFlatKeep(asEmulation(p.emulate), args, dims, axis);
  return [r.outs, r.dims];
}

interface Entry { params: SMP; outDef: TreeDef; compiled?: Compiled | string }
/** Per function: staged-call entries by call signature (mesh, argument structure and avals, specs). */
const entries = new WeakMap<object, Map<string, Entry>>();

/**
 * shardMap with config spmdRuntime "devices": binds shardMapP (under jit it is staged; eagerly it runs on the
 * devices), or returns null for the emulation (another spmdRuntime, or inside the emulation itself).
 * `emulation` is shardMap's nested-vmap path; `outSpecsOf` resolves out_specs against an output tree. Without the
 * replication check (checkVma false, as pmap uses) an output unsharded over an axis is the block of the device with
 * index 0 along it, whatever the others hold.
 */
export function shardMapOnDevices(
  fn: string, f: (...args: never[]) => unknown, mesh: Mesh, inSpecs: Spec[], outSpecsOf: (out: unknown) => Spec[], args: unknown[],
  emulation: (...args: unknown[]) => unknown, checkVma = true,
): { value: unknown } | null {
  if (config.spmdRuntime !== "devices" || emulating > 0) return null;
  const [leaves, def] = flattenArrays(fn, args, "argument");
  if (inSpecs.length !== leaves.length) return null; // the emulation reports the mismatch
  const key = [mesh.toString(), mesh.deviceIds.join(","), String(def), inSpecs.map(String).join(";"), config.enableX64, checkVma,
    ...leaves.map((x) => x.aval.str())].join("|");
  let perFn = entries.get(f);
  if (!perFn) { perFn = new Map(); entries.set(f, perFn); }
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
    const { jaxpr } = traceToJaxpr(asEmulation(emulate), leaves.map((x) => x.aval), "shard_map_check");
    let traced: TracedBody | string | undefined;
    const e: Entry = {
      outDef: outDef!,
      params: {
        name: fn, emulate, out_avals: jaxpr.outvars.map((v) => v.aval), mesh, in_specs: inSpecs, check_vma: checkVma,
        body: () => (traced ??= traceBody(fn, f, mesh, inSpecs, outSpecsOf, leaves.map((x) => x.aval), def)),
        run: (xs: ArrayImpl[]): ArrayImpl[] => {
          const done = runOnDevices(fn, f, mesh, inSpecs, outSpecsOf, xs, def, e, checkVma);
          return done ?? (asEmulation(emulate)(...xs) as ArrayImpl[]);
        },
      },
    };
    entry = e;
    perFn.set(key, entry);
  }
  const outs = bind(shardMapP, leaves, entry.params);
  return { value: unflatten(entry.outDef, outs) };
}

/** The device path of one call on concrete arguments: the flat outputs, or null (said once) for the emulation. */
function runOnDevices(fn: string, f: (...args: never[]) => unknown, mesh: Mesh, inSpecs: Spec[], outSpecsOf: (out: unknown) => Spec[],
  leaves: ArrayImpl[], def: TreeDef, entry: Entry, checkVma: boolean): ArrayImpl[] | null {
  const why = deviceRuntimeUnavailable();
  if (why) return fallback(`the device runtime is unavailable (${why})`);
  const blockShapes: number[][] = [];
  for (let k = 0; k < leaves.length; k++) {
    const x = leaves[k], spec = inSpecs[k];
    const { parts } = blockIndex(spec, x.ndim, mesh, mesh.coords(0));
    blockShapes.push(x.shape.map((s, d) => s / parts[d]));
  }
  for (const x of leaves) if (!DEVICE_DTYPES.has(x.dtype)) return fallback(`an argument is ${x.dtype}`);
  if (entry.compiled === undefined) entry.compiled = compile(entry.params.body(), mesh, inSpecs);
  if (typeof entry.compiled === "string") return fallback(entry.compiled);
  return run(fn, mesh, entry.compiled, inSpecs, leaves, blockShapes, checkVma);
}

interface Compiled {
  program: Program;
  consts: ArrayImpl[];
  outAvals: ShapedArray[];
  outSpecs: Spec[];
  device: DeviceProgram | null;
}

/** Per-device block avals of arguments with avals `avals` split by `inSpecs` over the mesh. */
export function blockAvals(mesh: Mesh, inSpecs: Spec[], avals: readonly ShapedArray[]): ShapedArray[] {
  return avals.map((a, k) => {
    const { parts } = blockIndex(inSpecs[k], a.ndim, mesh, mesh.coords(0));
    return new ShapedArray(a.shape.map((s, d) => s / parts[d]), a.dtype, a.weakType);
  });
}

/** Traces f at block shapes with every mesh axis bound; a string says why it cannot be traced that way. */
function traceBody(fn: string, f: (...args: never[]) => unknown, mesh: Mesh, inSpecs: Spec[], outSpecsOf: (out: unknown) => Spec[],
  avals: readonly ShapedArray[], def: TreeDef): TracedBody | string {
  let outSpecs: Spec[] = [];
  const body = (...xs: Array[]): Array[] => {
    const out = f(...(unflatten(def, xs) as never[]));
    const [ol] = flattenArrays(fn, out, "output");
    outSpecs = outSpecsOf(out);
    return ol;
  };
  const bAvals = blockAvals(mesh, inSpecs, avals);
  const bound = mesh.axisNames.reduceRight<() => ReturnType<typeof traceToJaxpr>>(
    (inner, name, a) => () => withNamedAxis({ name, size: mesh.dims[a] }, inner), () => traceToJaxpr(body, bAvals, "shard_map"));
  let jaxpr: Jaxpr, consts: Array[];
  try { ({ jaxpr, consts } = bound()); } catch (e) { return `the body cannot be traced per device (${e instanceof Error ? e.message : String(e)})`; }
  if (!consts.every((c) => c instanceof ArrayImpl)) return "the body closes over a traced value";
  if (outSpecs.length !== jaxpr.outvars.length) return "the out_specs do not match the outputs";
  return { jaxpr, consts: consts as ArrayImpl[], outSpecs, blockAvals: bAvals };
}

/** Compiles the traced body for the mesh; a string says why it cannot run on devices. */
function compile(body: TracedBody | string, mesh: Mesh, inSpecs: Spec[]): Compiled | string {
  if (typeof body === "string") return body;
  const { jaxpr, consts, outSpecs } = body;
  for (const v of [...jaxpr.constvars, ...jaxpr.outvars]) if (!DEVICE_DTYPES.has(v.aval.dtype)) return `a value of the body is ${v.aval.dtype}`;
  // gradients through psum: psum_transpose is a psum over the axes its cotangent varies over, else the identity
  const resolved = resolvePsumTranspose(jaxpr, inSpecs.map((sp) => new Set(sp.entries.flatMap((_, d) => sp.names(d)))));
  if (typeof resolved === "string") return resolved;
  const program = withSpmdMesh({ axisNames: mesh.axisNames, dims: mesh.dims }, () => compileJaxpr(resolved, { name: "shard_map" }));
  if (program.steps.some((s) => s.kind === "host")) return `the body needs the interpreter for ${program.notes.join("; ")}`;
  const step = program.steps[0] as OnnxStep | undefined;
  if (step && step.inputDTypes.some((d) => !DEVICE_DTYPES.has(d))) return `a program input is ${step.inputDTypes.find((d) => !DEVICE_DTYPES.has(d))}`;
  const device = step ? deviceProgram(step.model, {
    name: "shard_map", inputNames: step.inputNames, inputDTypes: step.inputDTypes, outputNames: step.outputNames,
    outputDTypes: step.outAvals.map((a) => a.dtype), outputShapes: step.outAvals.map((a) => a.shape),
  }, mesh.size) : null;
  return { program, consts, outAvals: jaxpr.outvars.map((v) => v.aval), outSpecs, device };
}

/**
 * Runs a compiled body: blocks in, one launch on every device, outputs assembled per out_specs (checked replicated
 * over the axes they do not name, or with checkVma false simply taken from index 0 along them).
 */
function run(fn: string, mesh: Mesh, c: Compiled, inSpecs: Spec[], leaves: ArrayImpl[], blockShapes: number[][], checkVma: boolean): ArrayImpl[] {
  const { program, consts, outSpecs } = c;
  const n = mesh.size;
  const step = program.steps[0] as OnnxStep | undefined;
  // per-device inputs: each device's blocks (copied into its memory) and the replicated consts
  const devs = mesh.flatDevices.map((d) => runtimeDevice(d.id));
  const slotBuffers: Map<number, DeviceBuffer>[] = devs.map(() => new Map());
  const owned: DeviceBuffer[] = [];
  try {
    const inVals: ArrayImpl[] = [...consts, ...leaves];
    const inSpecsAll: (Spec | null)[] = [...consts.map(() => null), ...inSpecs];
    const needed = new Set(step ? step.inputs : []);
    for (const o of program.outs) if (typeof o === "number") needed.add(o);
    program.inSlots.forEach((slot, j) => {
      if (!needed.has(slot)) return;
      const x = inVals[j], spec = inSpecsAll[j];
      devs.forEach((dev, r) => {
        let buf: DeviceBuffer;
        if (!spec) buf = DeviceBuffer.copyOf(dev, x.dtype, x.shape, x.buffer);
        else {
          const { idx } = blockIndex(spec, x.ndim, mesh, mesh.coords(r));
          const bshape = blockShapes[j - consts.length];
          buf = DeviceBuffer.uninitialized(dev, x.dtype, bshape);
          copyBlock(x.buffer, x.shape, buf.data, bshape, idx, true);
        }
        owned.push(buf);
        slotBuffers[r].set(slot, buf);
      });
    });
    if (step && c.device) {
      const res = launchSync(c.device, devs.map((d) => d.id), devs.map((_, r) => step.inputs.map((sl) => slotBuffers[r].get(sl)!)));
      res.outputs.forEach((os, r) => os.forEach((b, k) => { owned.push(b); slotBuffers[r].set(step.outputs[k], b); }));
    }
    // assemble each output from its devices' blocks
    const outs = program.outs.map((o, k) => {
      const aval = c.outAvals[k];
      const blockOf = (r: number): TypedArray => (typeof o === "number" ? slotBuffers[r].get(o)!.data : (o as ArrayImpl).buffer);
      const spec = outSpecs[k];
      if (spec.length > aval.ndim) throw new Error(`${fn}: out_specs[${k}] ${spec} has ${spec.length} entries but the output block has rank ${aval.ndim}`);
      const used = new Set(spec.entries.flatMap((_, d) => spec.names(d)));
      for (const nm of used) if (!mesh.axisNames.includes(nm)) throw new Error(`${fn}: out_specs[${k}] ${spec} names axis ${JSON.stringify(nm)}, which is not an axis of the mesh ${mesh}`);
      const { parts } = blockIndex(spec, aval.ndim, mesh, mesh.coords(0));
      const gshape = aval.shape.map((s, d) => s * parts[d]);
      const global = allocate(aval.dtype, gshape.reduce((a, b) => a * b, 1));
      for (let r = 0; r < n; r++) {
        const coords = mesh.coords(r);
        // the representative of r's block: the device with coordinate 0 on every axis the spec does not name
        const rep = coords.reduce((acc, c, a) => acc * mesh.dims[a] + (used.has(mesh.axisNames[a]) ? c : 0), 0);
        if (rep !== r) {
          if (checkVma && !sameData(blockOf(r), blockOf(rep))) {
            const axis = mesh.axisNames.find((nm, a) => !used.has(nm) && coords[a] !== 0)!;
            throw new Error(`${fn}: an output is declared replicated over mesh axis ${JSON.stringify(axis)} by its out_specs, but it varies over that axis; use a collective (e.g. psum over ${JSON.stringify(axis)}) or name the axis in out_specs`);
          }
          continue;
        }
        copyBlock(global, gshape, blockOf(r), aval.shape, blockIndex(spec, aval.ndim, mesh, coords).idx, false);
      }
      return new ArrayImpl(new ShapedArray(gshape, aval.dtype, aval.weakType), global);
    });
    return outs;
  } finally {
    for (const b of owned) b.free();
  }
}
