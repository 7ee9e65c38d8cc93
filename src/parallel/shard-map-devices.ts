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
import { type TypedArray, allocate, itemsize } from "../core/dtype.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { Primitive } from "../core/primitive.js";
import { bind, withNamedAxis } from "../core/trace.js";
import { unflatten, type TreeDef } from "../core/tree.js";
import { compileJaxpr, type OnnxStep, type Program } from "../compiler/compile.js";
import { DEVICE_DTYPES, DeviceBuffer, type DeviceProgram, deviceProgram, deviceRuntimeUnavailable, launchSync, runtimeDevice } from "../runtime/index.js";
import { flattenArrays } from "../transforms/api-util.js";
import { jvpFlat } from "../transforms/jvp.js";
import { vmapFlatKeep } from "../transforms/vmap.js";
import { allgatherBytes, nextProcessLaunch, processCount, processIndex } from "./distributed.js";
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

type SMP = { name: string; run: (xs: ArrayImpl[]) => ArrayImpl[]; emulate: (...xs: Array[]) => Array[]; out_avals: ShapedArray[] };

let emulating = 0;
/** f run as the emulation: shardMaps reached inside it take the nested-vmap path. */
const asEmulation = <A extends unknown[], R>(f: (...a: A) => R) => (...a: A): R => {
  emulating++;
  try { return f(...a); } finally { emulating--; }
};

/**
 * shard_map as one staged primitive (device runtime only): its impl runs the body on every device of the mesh (or the
 * emulation where the device path cannot); under jit it is one equation (run between the program's ONNX segments);
 * jvp and vmap go through the emulation, whose collectives carry their own rules.
 */
export const shardMapP: Primitive<SMP> = new Primitive<SMP>("shard_map", {
  abstractEval(_avals, p) { return p.out_avals; },
  impl(args, p) { return p.run(args); },
  jvp(primals, tangents, p) {
    fallback("differentiating a shardMap (grad, jvp) runs its emulation; gradients taken inside the body run on the devices");
    return jvpFlat(asEmulation(p.emulate), primals, tangents);
  },
  vmap(axis, args, dims, p) {
    fallback("vmap of a shardMap runs its emulation");
    const r = vmapFlatKeep(asEmulation(p.emulate), args, dims, axis);
    return [r.outs, r.dims];
  },
  missing: {
    lower: "shard_map runs on the device runtime as its own launch (a host step between a jitted program's ONNX segments)",
    transpose: "shard_map is differentiated through its emulation (jvp rule), whose collectives transpose one by one",
  },
}, { multipleResults: true });

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
    const e: Entry = {
      outDef: outDef!,
      params: {
        name: fn, emulate, out_avals: jaxpr.outvars.map((v) => v.aval),
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
  // a mesh wholly on another process: nothing to launch or exchange here; this process computes the same values alone
  if (localRanks(mesh).length === 0 && new Set(mesh.flatDevices.map((d) => d.processIndex)).size === 1) return null;
  if (entry.compiled === undefined) entry.compiled = compile(fn, f, mesh, inSpecs, outSpecsOf, leaves, blockShapes, def);
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

/** Traces f at block shapes with every mesh axis bound and compiles it for the mesh; a string says why it cannot run on devices. */
function compile(fn: string, f: (...args: never[]) => unknown, mesh: Mesh, inSpecs: Spec[], outSpecsOf: (out: unknown) => Spec[],
  leaves: Array[], blockShapes: number[][], def: TreeDef): Compiled | string {
  let outSpecs: Spec[] = [];
  const body = (...xs: Array[]): Array[] => {
    const out = f(...(unflatten(def, xs) as never[]));
    const [ol] = flattenArrays(fn, out, "output");
    outSpecs = outSpecsOf(out);
    return ol;
  };
  const avals = leaves.map((x, k) => new ShapedArray(blockShapes[k], x.dtype, x.aval.weakType));
  const bound = mesh.axisNames.reduceRight<() => ReturnType<typeof traceToJaxpr>>(
    (inner, name, a) => () => withNamedAxis({ name, size: mesh.dims[a] }, inner), () => traceToJaxpr(body, avals, "shard_map"));
  const { jaxpr, consts } = bound();
  if (!consts.every((c) => c instanceof ArrayImpl)) return "the body closes over a traced value";
  if (outSpecs.length !== jaxpr.outvars.length) return "the out_specs do not match the outputs";
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
  }, Math.max(1, localRanks(mesh).length)) : null;
  return { program, consts: consts as ArrayImpl[], outAvals: jaxpr.outvars.map((v) => v.aval), outSpecs, device };
}

/** Mesh ranks (row-major positions) whose devices belong to this process: all of them in a single-process run. */
function localRanks(mesh: Mesh): number[] {
  const self = processIndex();
  return JSArray.from({ length: mesh.size }, (_, r) => r).filter((r) => processCount() === 1 || mesh.flatDevices[r].processIndex === self);
}

/**
 * Runs a compiled body: blocks in, one launch on every device, outputs assembled per out_specs (checked replicated
 * over the axes they do not name, or with checkVma false simply taken from index 0 along them).
 * Over a mesh spanning processes (distributed.initialize) every process holds the global inputs, launches its own
 * devices' ranks (their collectives cross processes through MPI) and the outputs' blocks computed elsewhere arrive
 * by a process allgather (of every process: one without a device in the mesh launches nothing but takes part);
 * replication across processes is not checked (only among this process's devices).
 */
function run(fn: string, mesh: Mesh, c: Compiled, inSpecs: Spec[], leaves: ArrayImpl[], blockShapes: number[][], checkVma: boolean): ArrayImpl[] {
  const { program, consts, outSpecs } = c;
  const n = mesh.size;
  const step = program.steps[0] as OnnxStep | undefined;
  const ranks = localRanks(mesh), self = processIndex();
  const multi = ranks.length < n;
  const local = new Map(ranks.map((r, i) => [r, i]));
  // per-device inputs: each device's blocks (copied into its memory) and the replicated consts
  const devs = ranks.map((r) => runtimeDevice(mesh.flatDevices[r].id));
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
          const { idx } = blockIndex(spec, x.ndim, mesh, mesh.coords(ranks[r]));
          const bshape = blockShapes[j - consts.length];
          buf = DeviceBuffer.uninitialized(dev, x.dtype, bshape);
          copyBlock(x.buffer, x.shape, buf.data, bshape, idx, true);
        }
        owned.push(buf);
        slotBuffers[r].set(slot, buf);
      });
    });
    // every process counts the launches over meshes spanning processes, also one that has no device in the mesh
    const process = step && multi ? { launch: nextProcessLaunch(), self, ranks, rankProcess: mesh.flatDevices.map((d) => d.processIndex) } : undefined;
    if (step && c.device && devs.length > 0) {
      const res = launchSync(c.device, devs.map((d) => d.id), devs.map((_, r) => step.inputs.map((sl) => slotBuffers[r].get(sl)!)), process ? { process } : {});
      res.outputs.forEach((os, r) => os.forEach((b, k) => { owned.push(b); slotBuffers[r].set(step.outputs[k], b); }));
    }
    // each output's representative ranks: the device with coordinate 0 on every axis its spec does not name
    const plans = program.outs.map((_, k) => {
      const spec = outSpecs[k], aval = c.outAvals[k];
      if (spec.length > aval.ndim) throw new Error(`${fn}: out_specs[${k}] ${spec} has ${spec.length} entries but the output block has rank ${aval.ndim}`);
      const used = new Set(spec.entries.flatMap((_, d) => spec.names(d)));
      for (const nm of used) if (!mesh.axisNames.includes(nm)) throw new Error(`${fn}: out_specs[${k}] ${spec} names axis ${JSON.stringify(nm)}, which is not an axis of the mesh ${mesh}`);
      const repOf = (r: number): number => mesh.coords(r).reduce((acc, c, a) => acc * mesh.dims[a] + (used.has(mesh.axisNames[a]) ? c : 0), 0);
      return { spec, aval, used, repOf };
    });
    const remote = multi ? exchangeBlocks(fn, mesh, program.outs, plans, slotBuffers, local) : new Map<string, TypedArray>();
    // assemble each output from its devices' blocks
    const outs = program.outs.map((o, k) => {
      const { spec, aval, used, repOf } = plans[k];
      const blockOf = (r: number): TypedArray => (typeof o !== "number" ? (o as ArrayImpl).buffer
        : local.has(r) ? slotBuffers[local.get(r)!].get(o)!.data : remote.get(`${k}:${r}`)!);
      const { parts } = blockIndex(spec, aval.ndim, mesh, mesh.coords(0));
      const gshape = aval.shape.map((s, d) => s * parts[d]);
      const global = allocate(aval.dtype, gshape.reduce((a, b) => a * b, 1));
      for (let r = 0; r < n; r++) {
        const coords = mesh.coords(r);
        const rep = repOf(r);
        if (rep !== r) {
          if (checkVma && local.has(r) && local.has(rep) && !sameData(blockOf(r), blockOf(rep))) {
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

/**
 * The output blocks other processes computed (key `${output}:${rank}`): each process sends the representative blocks
 * of its own ranks, in output then rank order, and decodes the others' in the same order.
 */
function exchangeBlocks(fn: string, mesh: Mesh, outs: Program["outs"], plans: { aval: ShapedArray; repOf: (r: number) => number }[],
  slotBuffers: Map<number, DeviceBuffer>[], local: Map<number, number>): Map<string, TypedArray> {
  const owner = (r: number): number => mesh.flatDevices[r].processIndex;
  const blocks = (q: number): { k: number; r: number; bytes: number }[] => {
    const list: { k: number; r: number; bytes: number }[] = [];
    outs.forEach((o, k) => {
      if (typeof o !== "number") return;
      const { aval, repOf } = plans[k];
      for (let r = 0; r < mesh.size; r++) if (repOf(r) === r && owner(r) === q) list.push({ k, r, bytes: aval.size * itemsize(aval.dtype) });
    });
    return list;
  };
  const self = processIndex();
  const mine = blocks(self);
  const send = new Uint8Array(mine.reduce((a, b) => a + b.bytes, 0));
  let off = 0;
  for (const { k, r, bytes } of mine) {
    const d = slotBuffers[local.get(r)!].get(outs[k] as number)!.data;
    send.set(new Uint8Array(d.buffer, d.byteOffset, bytes), off);
    off += bytes;
  }
  const parts = allgatherBytes(send, `${fn} (assembling the outputs across processes)`);
  const got = new Map<string, TypedArray>();
  parts.forEach((p, q) => {
    if (q === self) return;
    let at = 0;
    for (const { k, r, bytes } of blocks(q)) {
      const a = plans[k].aval;
      const t = allocate(a.dtype, a.size);
      new Uint8Array(t.buffer, t.byteOffset, bytes).set(p.subarray(at, at + bytes));
      got.set(`${k}:${r}`, t);
      at += bytes;
    }
    if (at !== p.byteLength) throw new Error(`${fn}: process ${q} sent ${p.byteLength} bytes of output blocks, ${at} expected (the processes ran different programs?)`);
  });
  return got;
}
