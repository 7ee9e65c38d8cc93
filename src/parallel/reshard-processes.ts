/**
 * @file Resharding a global array (blocks on several processes) to another NamedSharding over the same devices: every
 * process computes the same plan from the two shardings, copies what it already holds locally and exchanges the rest
 * point to point over MPI (each needed slice sent once per destination process), counted by processTransferStats.
 */
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { type TypedArray, allocate, itemsize, lanes } from "../core/dtype.js";
import { type BlockCopy, copyBlocks, countTransfer, DeviceBuffer, runtimeDevice } from "../runtime/index.js";
import { copyRegion } from "./device-arrays.js";
import { allgatherBytes, exchangeBytes, processCount, processIndex } from "./distributed.js";
import { type GlobalStorage, addressablePositions, globalArray, sameLayout } from "./global-arrays.js";
import { type Index, NamedShardingImpl } from "./sharding.js";

/** Bytes moved between processes by resharding (monotonic; compare before/after). */
export interface ProcessTransferStats {
  /** Bytes this process sent to other processes. */
  bytesSent: number;
  /** Bytes this process received from other processes. */
  bytesReceived: number;
  /** Messages this process sent (one per destination process and resharding). */
  messages: number;
  /** Reshardings that ran (same-layout requests cost nothing and are not counted). */
  reshards: number;
}
const stats: ProcessTransferStats = { bytesSent: 0, bytesReceived: 0, messages: 0, reshards: 0 };
/** A copy of the counters of bytes moved between processes by resharding. */
export function processTransferStats(): ProcessTransferStats {
  return { ...stats };
}

/** One slice moved between processes: the part `region` (global coordinates) of source block `src` for block `dst`. */
interface Piece {
  from: number;
  to: number;
  /** Mesh position (source sharding) of the device the sender reads. */
  srcPos: number;
  key: string;
  region: Index;
  elems: number;
}

const keyOf = (ix: Index): string => ix.map(([s, e]) => `${s}:${e}`).join(",");
/** The intersection of two boxes, or null when empty. */
function intersect(a: Index, b: Index): Index | null {
  const out: Index = a.map(([s, e], d) => [Math.max(s, b[d][0]), Math.min(e, b[d][1])] as [number, number]);
  return out.some(([s, e]) => s >= e) ? null : out;
}
const sizeOf = (ix: Index): number => ix.reduce((n, [s, e]) => n * (e - s), 1);
const shapeStr = (s: readonly number[]) => `(${s.join(", ")})`;
const idsStr = (s: NamedShardingImpl) => `[${s.mesh.deviceIds.join(", ")}]`;

/** Distinct blocks of a sharding (first-holder order) with the mesh positions holding each. */
function distinctBlocks(indices: readonly Index[]): { index: Index; key: string; holders: number[] }[] {
  const m = new Map<string, { index: Index; key: string; holders: number[] }>();
  indices.forEach((ix, k) => {
    const key = keyOf(ix);
    const b = m.get(key);
    if (b) b.holders.push(k);
    else m.set(key, { index: ix, key, holders: [k] });
  });
  return [...m.values()];
}

/**
 * The global array x (storage g) laid out per `target`, a NamedSharding over the same devices: x itself when the
 * layout is the same, else a new global array. Every process must call it (in the same order as the others), also
 * one holding no block. `fn` names the caller in errors.
 */
export function reshardGlobal(fn: string, x: ArrayImpl, g: GlobalStorage, target: NamedShardingImpl): ArrayImpl {
  const shape = x.shape,
    src = g.sharding;
  if (g.isFreed) throw new Error(`${fn}: use of a disposed global array ${x.aval.str()} (${src})`);
  const a = [...src.mesh.deviceIds].sort((p, q) => p - q),
    b = [...target.mesh.deviceIds].sort((p, q) => p - q);
  if (a.length !== b.length || a.some((d, i) => d !== b[i]))
    throw new Error(
      `${fn}: cannot reshard the global array ${x.aval.str()} from ${src} (devices ${idsStr(src)}) to ${target} (devices ${idsStr(target)}): the target sharding must be over the same devices as the array`,
    );
  let bshape: number[];
  try {
    bshape = target.shardShape(shape);
  } catch (e) {
    throw new Error(
      `${fn}: cannot reshard the global array ${x.aval.str()} of shape ${shapeStr(shape)} from ${src} to ${target}: ${(e as Error).message}`,
    );
  }
  if (sameLayout(src, target, shape)) return x;
  // every process must be resharding the same array the same way (processes out of step fail here, naming both)
  const what = `${x.aval.str()} ${src} ${idsStr(src)} -> ${target} ${idsStr(target)}`;
  const enc = new TextEncoder(),
    dec = new TextDecoder();
  const descs = allgatherBytes(enc.encode(what), `${fn} (resharding ${x.aval.str()})`).map((d) => dec.decode(d));
  const bad = descs.map((d, q) => (d !== what ? `process ${q} reshards ${d}` : "")).filter(Boolean);
  if (bad.length)
    throw new Error(`${fn}: processes disagree: this process (${processIndex()}) reshards ${what}, ${bad.join(", ")}`);

  const self = processIndex(),
    P = processCount();
  const srcIdx = [...src.devicesIndicesMap(shape).values()],
    dstIdx = [...target.devicesIndicesMap(shape).values()];
  const srcProc = src.mesh.flatDevices.map((d) => d.processIndex),
    dstProc = target.mesh.flatDevices.map((d) => d.processIndex);
  const srcBlocks = distinctBlocks(srcIdx),
    dstBlocks = distinctBlocks(dstIdx);
  // the plan: for each destination process p and each distinct target block it holds, the parts of every source block
  // that p lacks come from one holder, chosen by p among the holders' processes (spreads the senders); same order
  // everywhere, so a message's pieces are decoded in the order they were packed
  const pieces: Piece[] = [];
  for (let p = 0; p < P; p++)
    for (const t of dstBlocks) {
      if (!t.holders.some((k) => dstProc[k] === p)) continue;
      for (const s of srcBlocks) {
        const region = intersect(s.index, t.index);
        if (!region || s.holders.some((k) => srcProc[k] === p)) continue;
        const srcPos = s.holders[p % s.holders.length];
        pieces.push({ from: srcProc[srcPos], to: p, srcPos, key: `${s.key}|${t.key}`, region, elems: sizeOf(region) });
      }
    }
  const dtype = x.dtype,
    isz = itemsize(dtype),
    nl = lanes(dtype); // storage slots per element (complex: 2)
  const srcBshape = src.shardShape(shape);
  const bufOf = (k: number): DeviceBuffer => g.buffers[g.positions.indexOf(k)];
  // pack what this process sends, per destination process
  const sends = Array.from({ length: P }, (_, q) => {
    const mine = pieces.filter((pc) => pc.from === self && pc.to === q);
    const data = allocate(
      dtype,
      mine.reduce((n, pc) => n + pc.elems, 0),
    );
    let off = 0;
    for (const pc of mine) {
      const rshape = pc.region.map(([s, e]) => e - s);
      copyRegion(
        bufOf(pc.srcPos).ready().data,
        srcBshape,
        pc.region.map(([s], d) => s - srcIdx[pc.srcPos][d][0]),
        data.subarray(off * nl, (off + pc.elems) * nl),
        rshape,
        rshape.map(() => 0),
        rshape,
        nl,
      );
      off += pc.elems;
    }
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  });
  const recvBytes = Array.from(
    { length: P },
    (_, q) => pieces.filter((pc) => pc.from === q && pc.to === self).reduce((n, pc) => n + pc.elems, 0) * isz,
  );
  sends[self] = new Uint8Array(0);
  recvBytes[self] = 0;
  const got = exchangeBytes(sends, recvBytes, `${fn} (resharding ${x.aval.str()} from ${src} to ${target})`);
  stats.reshards++;
  sends.forEach((s, q) => {
    if (q === self || !s.byteLength) return;
    stats.bytesSent += s.byteLength;
    stats.messages++;
  });
  // the received slices, by source|target block key
  const Ctor = allocate(dtype, 0).constructor as new (buf: ArrayBufferLike, off: number, n: number) => TypedArray;
  const received = new Map<string, TypedArray>();
  got.forEach((bytes, q) => {
    if (q === self) return;
    if (bytes.byteLength !== recvBytes[q])
      throw new Error(`${fn}: process ${q} sent ${bytes.byteLength} bytes of ${what}, ${recvBytes[q]} expected`);
    stats.bytesReceived += bytes.byteLength;
    // the native exchange gives each peer's bytes their own buffer (offset 0): element views stay aligned
    const copy = bytes.byteOffset % isz === 0 ? bytes : bytes.slice();
    let off = 0;
    for (const pc of pieces)
      if (pc.from === q && pc.to === self) {
        received.set(pc.key, new Ctor(copy.buffer, copy.byteOffset + off * isz, pc.elems * nl));
        off += pc.elems;
      }
  });
  // this process's target blocks: kept when already on their device, else assembled from local and received slices
  // (one copyBlocks call: local pieces on the destination devices' executors after their producers, received ones now)
  const copies: BlockCopy[] = [];
  const bufs = addressablePositions(target).map((t) => {
    const ix = dstIdx[t],
      devId = target.mesh.flatDevices[t].id;
    const dev = runtimeDevice(devId);
    const local = g.positions.filter((k) => srcProc[k] === self);
    const same = local.find((k) => src.mesh.flatDevices[k].id === devId && keyOf(srcIdx[k]) === keyOf(ix));
    if (same !== undefined) {
      countTransfer(-1);
      return bufOf(same).retain();
    }
    const out = DeviceBuffer.uninitialized(dev, dtype, bshape);
    for (const s of srcBlocks) {
      const region = intersect(s.index, ix);
      if (!region) continue;
      const size = region.map(([a0, e]) => e - a0);
      const dstOrigin = region.map(([a0], d) => a0 - ix[d][0]);
      // a local holder, preferring this very device
      const holders = s.holders.filter((k) => srcProc[k] === self);
      if (holders.length) {
        const k = holders.find((h) => src.mesh.flatDevices[h].id === devId) ?? holders[0];
        const srcOrigin = region.map(([a0], d) => a0 - srcIdx[k][d][0]);
        copies.push({ src: bufOf(k), srcShape: srcBshape, srcOrigin, dst: out, dstOrigin, size });
        countTransfer(sizeOf(region) * isz, src.mesh.flatDevices[k].id !== devId);
        continue;
      }
      const r = received.get(`${s.key}|${keyOf(ix)}`);
      if (!r) throw new Error(`${fn}: internal error: the slice ${keyOf(region)} of ${what} was not received`);
      copies.push({ src: r, srcShape: size, srcOrigin: size.map(() => 0), dst: out, dstOrigin, size });
    }
    return out;
  });
  copyBlocks(copies);
  return globalArray(new ShapedArray([...shape], dtype, x.aval.weakType), target, bufs);
}
