/**
 * @file shardMap over a mesh spanning processes (distributed.initialize, MPI): every process holds the global inputs,
 * launches its own devices' ranks of the per-device program (collectives cross processes through MPI) and the
 * outputs' blocks computed elsewhere arrive by a process allgather; global-array arguments stay on the devices
 * (resharded to the in_specs when laid out otherwise) and give global outputs.
 */
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { type TypedArray, allocate, itemsize } from "../core/dtype.js";
import { stridesOf } from "../core/shape.js";
import type { OnnxStep, Program } from "../compiler/compile.js";
import { DeviceBuffer, type DeviceProgram, type RuntimeDevice, launchSync, runtimeDevice } from "../runtime/index.js";
import { allgatherBytes, nextProcessLaunch, processCount, processIndex } from "./distributed.js";
import type { Mesh } from "./mesh.js";
import { type Index, NamedShardingImpl, type PartitionSpecImpl } from "./sharding.js";
import { type GlobalStorage, globalArray, globalStorage, sameLayout } from "./global-arrays.js";
import { reshardGlobal } from "./reshard-processes.js";

type Spec = PartitionSpecImpl;
const JSArray = globalThis.Array;

/** What runMultiProcess needs of a compiled shardMap body. */
export interface CompiledBody {
  program: Program;
  consts: ArrayImpl[];
  outAvals: ShapedArray[];
  outSpecs: Spec[];
  device: DeviceProgram | null;
}

/**
 * Output k's layout, common to the single- and multi-process launch plans: the mesh axes its spec names, its global
 * aval (the per-device block `aval` times the parts of each dim) and sharding; or the error its spec makes.
 */
export function outputLayout(
  fn: string,
  k: number,
  spec: Spec,
  aval: ShapedArray,
  mesh: Mesh,
): { used: Set<string>; gaval: ShapedArray; sharding: NamedShardingImpl } | { error: string } {
  if (spec.length > aval.ndim)
    return {
      error: `${fn}: out_specs[${k}] ${spec} has ${spec.length} entries but the output block has rank ${aval.ndim}`,
    };
  const used = new Set(spec.entries.flatMap((_, d) => spec.names(d)));
  for (const nm of used)
    if (!mesh.axisNames.includes(nm))
      return {
        error: `${fn}: out_specs[${k}] ${spec} names axis ${JSON.stringify(nm)}, which is not an axis of the mesh ${mesh}`,
      };
  const { parts } = blockIndex(spec, aval.ndim, mesh, mesh.coords(0));
  const gaval = new ShapedArray(
    aval.shape.map((s, d) => s * parts[d]),
    aval.dtype,
    aval.weakType,
  );
  return { used, gaval, sharding: new NamedShardingImpl(mesh, spec) };
}

/** Block index of each dim of an array with `spec` on the device at mesh coordinates `coords`. */
export function blockIndex(spec: Spec, rank: number, mesh: Mesh, coords: number[]): { idx: number[]; parts: number[] } {
  const idx: number[] = [],
    parts: number[] = [];
  for (let d = 0; d < rank; d++) {
    // the dim splits into (s_n1, ..., s_nk, block), major first in spec order
    let i = 0,
      p = 1;
    for (const nm of spec.names(d)) {
      const a = mesh.axisNames.indexOf(nm);
      i = i * mesh.dims[a] + coords[a];
      p *= mesh.dims[a];
    }
    idx.push(i);
    parts.push(p);
  }
  return { idx, parts };
}

/** Copies the block `idx` (block shape `block`) between a global row-major array and a block-sized one. */
function copyBlock(
  global: TypedArray,
  gshape: readonly number[],
  block: TypedArray,
  bshape: readonly number[],
  idx: readonly number[],
  toBlock: boolean,
): void {
  const r = gshape.length;
  if (r === 0) {
    if (toBlock) block[0] = global[0];
    else global[0] = block[0];
    return;
  }
  const gstr = stridesOf(gshape);
  const inner = bshape[r - 1];
  const outer = bshape.slice(0, r - 1).reduce((a, b) => a * b, 1);
  const c = new JSArray<number>(r - 1).fill(0);
  for (let o = 0; o < outer; o++) {
    let g = idx[r - 1] * inner;
    for (let d = 0; d < r - 1; d++) g += (idx[d] * bshape[d] + c[d]) * gstr[d];
    const b = o * inner;
    if (toBlock) (block as Float64Array).set((global as Float64Array).subarray(g, g + inner), b);
    else (global as Float64Array).set((block as Float64Array).subarray(b, b + inner), g);
    for (let d = r - 2; d >= 0; d--) {
      if (++c[d] < bshape[d]) break;
      c[d] = 0;
    }
  }
}

const sameData = (a: TypedArray, b: TypedArray): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(a[i] !== a[i] && b[i] !== b[i])) return false;
  return true;
};

/** Per mesh: this process's mesh ranks, for the process index and count they were computed under. */
const rankCache = new WeakMap<Mesh, { self: number; count: number; ranks: readonly number[] }>();
/** Mesh ranks whose devices belong to this process (memoized per mesh; the caller must not change the list). */
export function localRanksOf(mesh: Mesh): readonly number[] {
  const self = processIndex(),
    count = processCount();
  const hit = rankCache.get(mesh);
  if (hit && hit.self === self && hit.count === count) return hit.ranks;
  const ranks: number[] = [];
  for (let r = 0; r < mesh.size; r++) if (count === 1 || mesh.flatDevices[r].processIndex === self) ranks.push(r);
  rankCache.set(mesh, { self, count, ranks });
  return ranks;
}

/** Mesh ranks (row-major positions) whose devices belong to this process: all of them in a single-process run. */
export function localRanks(mesh: Mesh): number[] {
  return [...localRanksOf(mesh)];
}

/** An output's representative ranks and layout (see callPlan). */
type OutPlan = {
  spec: Spec;
  aval: ShapedArray;
  used: Set<string>;
  repOf: (r: number) => number;
  /** The global aval and sharding of the output, and the indices of this process's blocks in it. */
  gaval: ShapedArray;
  sharding: NamedShardingImpl;
  indices: Index[];
};
/**
 * What runMultiProcess derives from the compiled body, the mesh object and this process alone (the leaves' avals are
 * part of the compiled body's key): made at the first call, reused by every later call with the same mesh (a repeated
 * training step pays no spec resolution, block shapes, sharding objects, rank lists or output plans).
 */
interface CallPlan {
  mesh: Mesh;
  self: number;
  count: number;
  ranks: readonly number[];
  multi: boolean;
  local: Map<number, number>;
  devs: RuntimeDevice[];
  ids: number[];
  blockShapes: number[][];
  /** Per argument: the NamedSharding its in_spec asks for, and per global sharding seen whether it is that layout. */
  targets: NamedShardingImpl[];
  layoutOk: WeakMap<NamedShardingImpl, boolean>[];
  /** Program input slots read by the launch or passed through to an output: [slot, constant or argument index]. */
  feeds: [number, number][];
  rankProcess: number[];
  /** Per output its plan, or the error its out_specs raise (thrown where the unplanned path threw it). */
  outs: (OutPlan | { error: string })[];
}
const plans = new WeakMap<CompiledBody, CallPlan>();

/** The call plan of compiled body `c` over `mesh` (see CallPlan). */
function callPlan(fn: string, mesh: Mesh, c: CompiledBody, inSpecs: Spec[], leaves: ArrayImpl[]): CallPlan {
  const self = processIndex(),
    count = processCount();
  const hit = plans.get(c);
  if (hit && hit.mesh === mesh && hit.self === self && hit.count === count) return hit;
  const { program, outSpecs } = c;
  const step = program.steps[0] as OnnxStep | undefined;
  const ranks = localRanksOf(mesh);
  const blockShapes = leaves.map((x, k) => {
    const { parts } = blockIndex(inSpecs[k], x.ndim, mesh, mesh.coords(0));
    return x.shape.map((s, d) => s / parts[d]);
  });
  const needed = new Set(step ? step.inputs : []);
  for (const o of program.outs) if (typeof o === "number") needed.add(o);
  const feeds: [number, number][] = [];
  program.inSlots.forEach((slot, j) => {
    if (needed.has(slot)) feeds.push([slot, j]);
  });
  const devs = ranks.map((r) => runtimeDevice(mesh.flatDevices[r].id));
  // each output's representative ranks: the device with coordinate 0 on every axis its spec does not name
  const outs = program.outs.slice(0, c.outAvals.length).map((_, k): OutPlan | { error: string } => {
    const spec = outSpecs[k],
      aval = c.outAvals[k];
    const lay = outputLayout(fn, k, spec, aval, mesh);
    if ("error" in lay) return lay;
    const { used, gaval, sharding } = lay;
    const repOf = (r: number): number =>
      mesh.coords(r).reduce((acc, c, a) => acc * mesh.dims[a] + (used.has(mesh.axisNames[a]) ? c : 0), 0);
    const all = [...sharding.devicesIndicesMap(gaval.shape).values()];
    return { spec, aval, used, repOf, gaval, sharding, indices: ranks.map((r) => all[r]) };
  });
  const plan: CallPlan = {
    mesh,
    self,
    count,
    ranks,
    multi: ranks.length < mesh.size,
    local: new Map(ranks.map((r, i) => [r, i])),
    devs,
    ids: devs.map((d) => d.id),
    blockShapes,
    targets: inSpecs.map((sp) => new NamedShardingImpl(mesh, sp)),
    layoutOk: inSpecs.map(() => new WeakMap()),
    feeds,
    rankProcess: mesh.flatDevices.map((d) => d.processIndex),
    outs,
  };
  plans.set(c, plan);
  return plan;
}

/** The output plans, or the first out_specs error. */
function outPlans(p: CallPlan): OutPlan[] {
  for (const o of p.outs) if ("error" in o) throw new Error(o.error);
  return p.outs as OutPlan[];
}

/**
 * Runs a compiled body: blocks in, one launch on every device, outputs assembled per out_specs (checked replicated
 * over the axes they do not name, or with checkVma false simply taken from index 0 along them).
 * Over a mesh spanning processes (distributed.initialize) every process holds the global inputs, launches its own
 * devices' ranks (their collectives cross processes through MPI) and the outputs' blocks computed elsewhere arrive
 * by a process allgather (of every process: one without a device in the mesh launches nothing but takes part);
 * replication across processes is not checked (only among this process's devices).
 * Global arguments (arrays spanning processes, ./global-arrays.ts) are passed block by block as they are; when there is
 * one, the outputs are global arrays too (each process keeps its devices' blocks: no exchange, no host assembly).
 */
export function runMultiProcess(
  fn: string,
  mesh: Mesh,
  c: CompiledBody,
  inSpecs: Spec[],
  leaves: ArrayImpl[],
  checkVma: boolean,
): ArrayImpl[] {
  const plan = callPlan(fn, mesh, c, inSpecs, leaves);
  const { ranks, multi, local, devs, blockShapes, feeds } = plan;
  // global arguments: passed as they are when their layout is the one the in_specs ask for; otherwise resharded for
  // this call (blocks move within and between processes: reshard-processes.ts) and the copies freed after it
  const temps: ArrayImpl[] = [];
  let globalOut = false;
  const globals = new JSArray<GlobalStorage | null>(leaves.length);
  for (let k = 0; k < leaves.length; k++) {
    const x = leaves[k];
    const g = globalStorage(x);
    globals[k] = g;
    if (!g) continue;
    globalOut = true;
    const target = plan.targets[k];
    let ok = plan.layoutOk[k].get(g.sharding);
    if (ok === undefined) plan.layoutOk[k].set(g.sharding, (ok = sameLayout(g.sharding, target, x.shape)));
    if (ok) continue;
    try {
      const y = reshardGlobal(`${fn} (argument ${k})`, x, g, target);
      temps.push(y);
      globals[k] = globalStorage(y);
    } catch (e) {
      for (const t of temps) t.dispose();
      throw e;
    }
  }
  const { program, consts } = c;
  // debug callbacks hoisted out of the body add outputs past the body's own: not supported across processes
  const bodyOuts = program.outs.slice(0, c.outAvals.length);
  const n = mesh.size;
  const step = program.steps[0] as OnnxStep | undefined;
  // per-device inputs: each device's blocks (copied into its memory) and the replicated consts
  const slotBuffers: Map<number, DeviceBuffer>[] = devs.map(() => new Map());
  const owned: DeviceBuffer[] = [];
  try {
    for (const [slot, j] of feeds) {
      const x = j < consts.length ? consts[j] : leaves[j - consts.length];
      const spec = j < consts.length ? null : inSpecs[j - consts.length];
      const g = j >= consts.length ? globals[j - consts.length] : null;
      for (let r = 0; r < devs.length; r++) {
        let buf: DeviceBuffer;
        if (g) {
          // the positions of a global storage are this process's mesh ranks in mesh order (its buffers' order)
          const i = g.positions[r] === ranks[r] ? r : g.positions.indexOf(ranks[r]);
          slotBuffers[r].set(slot, g.buffers[i]);
          continue;
        }
        if (!spec) buf = DeviceBuffer.copyOf(devs[r], x.dtype, x.shape, x.buffer);
        else {
          const { idx } = blockIndex(spec, x.ndim, mesh, mesh.coords(ranks[r]));
          const bshape = blockShapes[j - consts.length];
          buf = DeviceBuffer.uninitialized(devs[r], x.dtype, bshape);
          copyBlock(x.buffer, x.shape, buf.data, bshape, idx, true);
        }
        owned.push(buf);
        slotBuffers[r].set(slot, buf);
      }
    }
    // every process counts the launches over meshes spanning processes, also one that has no device in the mesh
    const process =
      step && multi
        ? { launch: nextProcessLaunch(), self: plan.self, ranks: ranks as number[], rankProcess: plan.rankProcess }
        : undefined;
    if (step && c.device && devs.length > 0) {
      const ins = new JSArray<DeviceBuffer[]>(devs.length);
      for (let r = 0; r < devs.length; r++) {
        const row = new JSArray<DeviceBuffer>(step.inputs.length);
        for (let i = 0; i < row.length; i++) row[i] = slotBuffers[r].get(step.inputs[i])!;
        ins[r] = row;
      }
      const res = launchSync(c.device, plan.ids, ins, process ? { process } : {});
      res.outputs.forEach((os, r) =>
        os.forEach((b, k) => {
          owned.push(b);
          slotBuffers[r].set(step.outputs[k], b);
        }),
      );
    }
    const outPlan = outPlans(plan);
    if (globalOut) return globalOutputs(fn, mesh, bodyOuts, outPlan, slotBuffers, ranks, checkVma);
    const remote = multi
      ? exchangeBlocks(fn, mesh, bodyOuts, outPlan, slotBuffers, local)
      : new Map<string, TypedArray>();
    // assemble each output from its devices' blocks
    const outs = bodyOuts.map((o, k) => {
      const { spec, aval, used, repOf, gaval } = outPlan[k];
      const blockOf = (r: number): TypedArray =>
        typeof o !== "number"
          ? (o as ArrayImpl).buffer
          : local.has(r)
            ? slotBuffers[local.get(r)!].get(o)!.data
            : remote.get(`${k}:${r}`)!;
      const gshape = gaval.shape;
      const global = allocate(
        aval.dtype,
        gshape.reduce((a, b) => a * b, 1),
      );
      for (let r = 0; r < n; r++) {
        const coords = mesh.coords(r);
        const rep = repOf(r);
        if (rep !== r) {
          if (checkVma && local.has(r) && local.has(rep) && !sameData(blockOf(r), blockOf(rep))) {
            const axis = mesh.axisNames.find((nm, a) => !used.has(nm) && coords[a] !== 0)!;
            throw new Error(
              `${fn}: an output is declared replicated over mesh axis ${JSON.stringify(axis)} by its out_specs, but it varies over that axis; use a collective (e.g. psum over ${JSON.stringify(axis)}) or name the axis in out_specs`,
            );
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
    for (const t of temps) t.dispose();
  }
}

/**
 * The outputs as global arrays: this process's devices' blocks stay where they are (replicas checked among this
 * process's devices only).
 */
function globalOutputs(
  fn: string,
  mesh: Mesh,
  outs: Program["outs"],
  plans: OutPlan[],
  slotBuffers: Map<number, DeviceBuffer>[],
  ranks: readonly number[],
  checkVma: boolean,
): ArrayImpl[] {
  return outs.map((o, k) => {
    const { aval, used, repOf, gaval, sharding, indices } = plans[k];
    const bufs = ranks.map((_, i) =>
      typeof o === "number"
        ? slotBuffers[i].get(o)!.retain()
        : DeviceBuffer.copyOf(runtimeDevice(mesh.flatDevices[ranks[i]].id), aval.dtype, aval.shape, o.buffer),
    );
    if (checkVma && typeof o === "number" && ranks.length > 1)
      ranks.forEach((r, i) => {
        const rep = ranks.indexOf(repOf(r));
        if (rep < 0 || rep === i || sameData(bufs[i].ready().data, bufs[rep].ready().data)) return;
        const coords = mesh.coords(r);
        const axis = mesh.axisNames.find((nm, a) => !used.has(nm) && coords[a] !== 0)!;
        for (const b of bufs) b.free();
        throw new Error(
          `${fn}: an output is declared replicated over mesh axis ${JSON.stringify(axis)} by its out_specs, but it varies over that axis; use a collective (e.g. psum over ${JSON.stringify(axis)}) or name the axis in out_specs`,
        );
      });
    return globalArray(gaval, sharding, bufs, { positions: ranks, indices });
  });
}

/**
 * The output blocks other processes computed (key `${output}:${rank}`): each process sends the representative blocks
 * of its own ranks, in output then rank order, and decodes the others' in the same order.
 */
function exchangeBlocks(
  fn: string,
  mesh: Mesh,
  outs: Program["outs"],
  plans: OutPlan[],
  slotBuffers: Map<number, DeviceBuffer>[],
  local: Map<number, number>,
): Map<string, TypedArray> {
  const owner = (r: number): number => mesh.flatDevices[r].processIndex;
  const blocks = (q: number): { k: number; r: number; bytes: number }[] => {
    const list: { k: number; r: number; bytes: number }[] = [];
    outs.forEach((o, k) => {
      if (typeof o !== "number") return;
      const { aval, repOf } = plans[k];
      for (let r = 0; r < mesh.size; r++)
        if (repOf(r) === r && owner(r) === q) list.push({ k, r, bytes: aval.size * itemsize(aval.dtype) });
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
    if (at !== p.byteLength)
      throw new Error(
        `${fn}: process ${q} sent ${p.byteLength} bytes of output blocks, ${at} expected (the processes ran different programs?)`,
      );
  });
  return got;
}
