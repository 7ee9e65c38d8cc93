/**
 * @file shardMap over a mesh spanning processes (distributed.initialize, MPI): every process holds the global inputs,
 * launches its own devices' ranks of the per-device program (collectives cross processes through MPI) and the
 * outputs' blocks computed elsewhere arrive by a process allgather; global-array arguments stay on the devices
 * (resharded to the in_specs when laid out otherwise) and give global outputs.
 */
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { type TypedArray, allocate, itemsize } from "../core/dtype.js";
import type { OnnxStep, Program } from "../compiler/compile.js";
import { DeviceBuffer, type DeviceProgram, launchSync, runtimeDevice } from "../runtime/index.js";
import { allgatherBytes, nextProcessLaunch, processCount, processIndex } from "./distributed.js";
import type { Mesh } from "./mesh.js";
import { NamedShardingImpl, type PartitionSpecImpl } from "./sharding.js";
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

/** Mesh ranks (row-major positions) whose devices belong to this process: all of them in a single-process run. */
export function localRanks(mesh: Mesh): number[] {
  const self = processIndex();
  return JSArray.from({ length: mesh.size }, (_, r) => r).filter(
    (r) => processCount() === 1 || mesh.flatDevices[r].processIndex === self,
  );
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
  const blockShapes = leaves.map((x, k) => {
    const { parts } = blockIndex(inSpecs[k], x.ndim, mesh, mesh.coords(0));
    return x.shape.map((s, d) => s / parts[d]);
  });
  // global arguments: passed as they are when their layout is the one the in_specs ask for; otherwise resharded for
  // this call (blocks move within and between processes: reshard-processes.ts) and the copies freed after it
  const temps: ArrayImpl[] = [];
  const globals: (GlobalStorage | null)[] = leaves.map((x, k) => {
    const g = globalStorage(x);
    if (!g) return null;
    const target = new NamedShardingImpl(mesh, inSpecs[k]);
    if (sameLayout(g.sharding, target, x.shape)) return g;
    try {
      const y = reshardGlobal(`${fn} (argument ${k})`, x, g, target);
      temps.push(y);
      return globalStorage(y);
    } catch (e) {
      for (const t of temps) t.dispose();
      throw e;
    }
  });
  const globalOut = globals.some((g) => g !== null);
  const { program, consts, outSpecs } = c;
  // debug callbacks hoisted out of the body add outputs past the body's own: not supported across processes
  const bodyOuts = program.outs.slice(0, c.outAvals.length);
  const n = mesh.size;
  const step = program.steps[0] as OnnxStep | undefined;
  const ranks = localRanks(mesh),
    self = processIndex();
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
      const x = inVals[j],
        spec = inSpecsAll[j];
      const g = j >= consts.length ? globals[j - consts.length] : null;
      devs.forEach((dev, r) => {
        let buf: DeviceBuffer;
        if (g) {
          slotBuffers[r].set(slot, g.buffers[g.positions.indexOf(ranks[r])]);
          return;
        }
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
    const process =
      step && multi
        ? { launch: nextProcessLaunch(), self, ranks, rankProcess: mesh.flatDevices.map((d) => d.processIndex) }
        : undefined;
    if (step && c.device && devs.length > 0) {
      const res = launchSync(
        c.device,
        devs.map((d) => d.id),
        devs.map((_, r) => step.inputs.map((sl) => slotBuffers[r].get(sl)!)),
        process ? { process } : {},
      );
      res.outputs.forEach((os, r) =>
        os.forEach((b, k) => {
          owned.push(b);
          slotBuffers[r].set(step.outputs[k], b);
        }),
      );
    }
    // each output's representative ranks: the device with coordinate 0 on every axis its spec does not name
    const plans = bodyOuts.map((_, k) => {
      const spec = outSpecs[k],
        aval = c.outAvals[k];
      if (spec.length > aval.ndim)
        throw new Error(
          `${fn}: out_specs[${k}] ${spec} has ${spec.length} entries but the output block has rank ${aval.ndim}`,
        );
      const used = new Set(spec.entries.flatMap((_, d) => spec.names(d)));
      for (const nm of used)
        if (!mesh.axisNames.includes(nm))
          throw new Error(
            `${fn}: out_specs[${k}] ${spec} names axis ${JSON.stringify(nm)}, which is not an axis of the mesh ${mesh}`,
          );
      const repOf = (r: number): number =>
        mesh.coords(r).reduce((acc, c, a) => acc * mesh.dims[a] + (used.has(mesh.axisNames[a]) ? c : 0), 0);
      return { spec, aval, used, repOf };
    });
    if (globalOut) return globalOutputs(fn, mesh, bodyOuts, plans, slotBuffers, ranks, checkVma);
    const remote = multi
      ? exchangeBlocks(fn, mesh, bodyOuts, plans, slotBuffers, local)
      : new Map<string, TypedArray>();
    // assemble each output from its devices' blocks
    const outs = bodyOuts.map((o, k) => {
      const { spec, aval, used, repOf } = plans[k];
      const blockOf = (r: number): TypedArray =>
        typeof o !== "number"
          ? (o as ArrayImpl).buffer
          : local.has(r)
            ? slotBuffers[local.get(r)!].get(o)!.data
            : remote.get(`${k}:${r}`)!;
      const { parts } = blockIndex(spec, aval.ndim, mesh, mesh.coords(0));
      const gshape = aval.shape.map((s, d) => s * parts[d]);
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
  plans: { spec: Spec; aval: ShapedArray; used: Set<string>; repOf: (r: number) => number }[],
  slotBuffers: Map<number, DeviceBuffer>[],
  ranks: number[],
  checkVma: boolean,
): ArrayImpl[] {
  return outs.map((o, k) => {
    const { spec, aval, used, repOf } = plans[k];
    const bufs = ranks.map((_, i) =>
      typeof o === "number"
        ? slotBuffers[i].get(o)!.retain()
        : DeviceBuffer.copyOf(runtimeDevice(mesh.flatDevices[ranks[i]].id), aval.dtype, aval.shape, o.buffer),
    );
    if (checkVma && typeof o === "number")
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
    const { parts } = blockIndex(spec, aval.ndim, mesh, mesh.coords(0));
    const gshape = aval.shape.map((s, d) => s * parts[d]);
    return globalArray(new ShapedArray(gshape, aval.dtype, aval.weakType), new NamedShardingImpl(mesh, spec), bufs);
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
  plans: { aval: ShapedArray; repOf: (r: number) => number }[],
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
