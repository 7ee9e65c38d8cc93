/**
 * @file shardMap and pmap with JAX's semantics. Each device's block is a slice of a nested vmap over the mesh axes
 * (axis names bound, so collectives reduce across blocks); this single-process emulation gives JAX's results and
 * shapes and is the oracle the worker-thread devices will be tested against.
 */
import { Array } from "../core/array.js";
import { flatten, unflatten, type TreeDef } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { flattenArrays } from "../transforms/api-util.js";
import { jit, vmap } from "../transforms/api.js";
import { vmapFlat } from "../transforms/vmap.js";
import { devices } from "./mesh.js";
import type { Mesh } from "./mesh.js";
import { PartitionSpecImpl } from "./sharding.js";
import { shardMapOnDevices } from "./shard-map-devices.js";

type Spec = PartitionSpecImpl;
const JSArray = globalThis.Array;

/** Broadcasts a spec prefix tree onto the leaves of a value tree (a single spec applies to a whole subtree). */
function specsFor(fn: string, specs: unknown, tree: unknown, what: string): Spec[] {
  const n = flatten(tree)[0].length;
  if (specs instanceof PartitionSpecImpl) return new JSArray(n).fill(specs);
  const out: Spec[] = [];
  const rec = (s: unknown, t: unknown): void => {
    if (s instanceof PartitionSpecImpl) { flatten(t)[0].forEach(() => out.push(s)); return; }
    if (s === null || s === undefined) { flatten(t)[0].forEach(() => out.push(new PartitionSpecImpl())); return; }
    if (JSArray.isArray(s)) {
      if (!JSArray.isArray(t) || t.length !== s.length) throw new TypeError(`${fn}: ${what} ${JSON.stringify(String(s))} does not match the structure of the values (${JSArray.isArray(t) ? `length ${t.length}` : typeof t})`);
      s.forEach((si, i) => rec(si, t[i]));
      return;
    }
    if (typeof s === "object" && t && typeof t === "object") { for (const k of Object.keys(t).sort()) rec((s as Record<string, unknown>)[k], (t as Record<string, unknown>)[k]); return; }
    throw new TypeError(`${fn}: ${what} must be PartitionSpecs (P(...)) in a tree matching the values`);
  };
  rec(specs, tree);
  return out;
}

/** Moves each mesh-split part of x's dims to the front, one leading dim per used mesh axis, in mesh order. */
function splitToMesh(fn: string, x: Array, spec: Spec, mesh: Mesh, k: number): Array {
  if (spec.length > x.ndim) throw new Error(`${fn}: in_specs[${k}] ${spec} has ${spec.length} entries but the argument has rank ${x.ndim} (shape (${x.shape.join(", ")}))`);
  let y = x;
  // split dim d of size N into (s_n1, ..., s_nk, N / prod)
  const shape: number[] = [];
  const meshDimPos = new Map<string, number>();
  x.shape.forEach((n, d) => {
    const names = spec.names(d);
    const parts = names.reduce((a, nm) => a * mesh.axisSize(nm), 1);
    if (n % parts !== 0) throw new Error(`${fn}: argument ${k} of shape (${x.shape.join(", ")}) dimension ${d} (size ${n}) is not divisible by ${parts}, the size of mesh axes ${names.join(", ")} in ${spec}`);
    for (const nm of names) { meshDimPos.set(nm, shape.length); shape.push(mesh.axisSize(nm)); }
    shape.push(n / parts);
  });
  y = ops.reshape(y, shape);
  const used = mesh.axisNames.filter((nm) => meshDimPos.has(nm));
  const front = used.map((nm) => meshDimPos.get(nm)!);
  const rest = [...shape.keys()].filter((i) => !front.includes(i));
  return ops.transpose(y, [...front, ...rest]);
}

/** Inverse of splitToMesh for outputs: leading dims (the used mesh axes, in mesh order) merge back into their dims. */
function mergeFromMesh(fn: string, y: Array, spec: Spec, mesh: Mesh, k: number): Array {
  const used = mesh.axisNames.filter((nm) => spec.entries.some((_, d) => spec.names(d).includes(nm)));
  const block = y.shape.slice(used.length);
  if (spec.length > block.length) throw new Error(`${fn}: out_specs[${k}] ${spec} has ${spec.length} entries but the output block has rank ${block.length}`);
  // target order: for each block dim d, the mesh dims of its names (in spec order), then the block dim
  const perm: number[] = [];
  const outShape: number[] = [];
  block.forEach((b, d) => {
    let n = b;
    for (const nm of spec.names(d)) { perm.push(used.indexOf(nm)); n *= mesh.axisSize(nm); }
    perm.push(used.length + d);
    outShape.push(n);
  });
  return ops.reshape(ops.transpose(y, perm), outShape);
}

export interface ShardMapOpts { mesh: Mesh; inSpecs: unknown; outSpecs: unknown; checkVma?: boolean; checkRep?: boolean }

/** jax.shard_map: f sees per-device blocks; collectives over mesh axis names combine them. */
export function shardMap<A extends unknown[], R>(f: (...args: A) => R, opts: ShardMapOpts): (...args: A) => R {
  const { mesh } = opts;
  const fn = "shard_map";
  return (...args: A): R => {
    const inSpecs = specsFor(fn, JSArray.isArray(opts.inSpecs) && !(opts.inSpecs instanceof PartitionSpecImpl) ? opts.inSpecs : [opts.inSpecs], JSArray.isArray(opts.inSpecs) ? args : [args[0]], "in_specs");
    // config spmdRuntime "devices": one program per device, run concurrently (null: run the emulation below)
    const real = shardMapOnDevices(fn, f as (...a: never[]) => unknown, mesh, inSpecs, (out) => specsFor(fn, opts.outSpecs, out, "out_specs"), args,
      (...a: unknown[]) => shardMap(f, opts)(...(a as A)));
    if (real) return real.value as R;
    const [leaves, def] = flattenArrays(fn, args, "argument");
    if (inSpecs.length !== leaves.length) throw new TypeError(`${fn}: in_specs describe ${inSpecs.length} array leaves but the arguments have ${leaves.length}`);
    const split = leaves.map((x, k) => splitToMesh(fn, x, inSpecs[k], mesh, k));
    const usedIn = inSpecs.map((s) => new Set(s.entries.flatMap((_, d) => s.names(d))));
    let outDef: TreeDef | null = null;
    let outSpecs: Spec[] = [];
    // nested vmaps, outermost = first mesh axis; each binds its mesh axis name for collectives
    const level = (a: number) => (...xs: Array[]): Array[] => {
      if (a === mesh.axisNames.length) {
        const out = f(...(unflatten(def, xs) as A));
        const [ol, od] = flattenArrays(fn, out, "output");
        outDef = od;
        outSpecs = specsFor(fn, opts.outSpecs, out, "out_specs");
        return ol;
      }
      const name = mesh.axisNames[a];
      const inAxes = xs.map((_, k) => (usedIn[k].has(name) ? 0 : null));
      return vmapOuts(level(a + 1), xs, inAxes, name, mesh.dims[a], () => outSpecs);
    };
    const outs = level(0)(...split);
    const merged = outs.map((y, k) => mergeFromMesh(fn, y, outSpecs[k], mesh, k));
    return unflatten(outDef!, merged) as R;
  };
}

/** vmap whose out axes are chosen after tracing: 0 for outputs whose spec uses this axis, else null (replicated). */
function vmapOuts(f: (...xs: Array[]) => Array[], xs: Array[], inAxes: (number | null)[], name: string, size: number, specs: () => Spec[]): Array[] {
  const outDim = (i: number): number | null => { const sp = specs()[i]; return sp && sp.entries.some((_, d) => sp.names(d).includes(name)) ? 0 : null; };
  try {
    return vmapFlat(f, xs, inAxes, outDim, { size, name });
  } catch (e) {
    if (e instanceof Error && /outAxes=null/.test(e.message)) {
      throw new Error(`shard_map: an output is declared replicated over mesh axis ${JSON.stringify(name)} by its out_specs, but it varies over that axis; use a collective (e.g. psum over ${JSON.stringify(name)}) or name the axis in out_specs`);
    }
    throw e;
  }
}

export interface PmapOpts { axisName?: string; inAxes?: number | null | (number | null)[]; outAxes?: number | null | (number | null)[]; staticBroadcastedArgnums?: number | number[]; devices?: unknown[] }

/** jax.pmap: maps f over the leading axis, one device per element (at most the device count), axis name bound. */
export function pmap<A extends unknown[], R>(f: (...args: A) => R, opts: PmapOpts = {}): (...args: A) => R {
  const jf = jit((...a: A) => vmap(f, { axisName: opts.axisName, inAxes: (opts.inAxes ?? 0) as never, outAxes: (opts.outAxes ?? 0) as never })(...a), { staticArgnums: opts.staticBroadcastedArgnums });
  return (...args: A): R => {
    const [leaves] = flattenArrays("pmap", args.filter((_, i) => ![opts.staticBroadcastedArgnums].flat().includes(i)), "argument");
    const inAx = opts.inAxes ?? 0;
    const sizes = new Set(leaves.map((l, k) => { const a = JSArray.isArray(inAx) ? inAx[k] ?? 0 : inAx; return a === null ? -1 : l.shape[a < 0 ? a + l.ndim : a]; }).filter((s) => s >= 0));
    const n = [...sizes][0];
    const avail = opts.devices?.length ?? devices().length;
    if (n !== undefined && n > avail) {
      throw new Error(`pmap: compiling computation that requires ${n} logical devices, but only ${avail} devices are available (set config numCpuDevices or JAXTS_NUM_CPU_DEVICES)`);
    }
    return jf(...args);
  };
}
