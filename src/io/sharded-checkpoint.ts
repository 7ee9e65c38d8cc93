/**
 * @file Sharded checkpoints for multi-process runs: saveSharded writes each process's own blocks (one file per
 * process, replicas written once), process 0 writes the index, and the whole write is committed by one atomic rename
 * of a LATEST pointer after a barrier (a crash before it leaves the previous checkpoint loadable); loadSharded builds
 * every leaf for the sharding asked for, each process reading only the blocks its devices need (any process count or
 * mesh: the saved blocks are resharded).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { checkArity } from "../core/check-args.js";
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { type DType, allocate, lanes } from "../core/dtype.js";
import * as tree from "../core/tree.js";
import { copyRegion } from "../parallel/device-arrays.js";
import { makeArrayFromCallback } from "../parallel/device-put.js";
import { allgatherBytes, processCount, processIndex } from "../parallel/distributed.js";
import { globalStorage } from "../parallel/global-arrays.js";
import { type Index, NamedShardingImpl } from "../parallel/sharding.js";
import { load, save } from "./checkpoint.js";

const FORMAT = "jaxts-sharded-1";
const LATEST = "LATEST";

interface BlockEntry {
  leaf: number;
  index: Index;
  process: number;
  pos: number;
}
interface IndexFile {
  format: string;
  processes: number;
  leaves: { dtype: DType; shape: number[] }[];
  blocks: BlockEntry[];
}

const enc = new TextEncoder(),
  dec = new TextDecoder();
/** Every process's bytes of `text` (one process: just this one's). */
const gather = (text: string, what: string): string[] =>
  allgatherBytes(enc.encode(text), what).map((b) => dec.decode(b));

/** Writes `text` to `path` atomically (a temporary file beside it, renamed over it). */
function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/**
 * saveSharded(dir, pytree): every process calls it with the same tree (global arrays from
 * makeArrayFromProcessLocalData / shardMap, or host arrays, which process 0 writes). Each process writes the
 * distinct blocks its devices hold (replica 0 of each) into dir/<step>/process-<p>.safetensors, process 0 the index;
 * after a barrier process 0 renames the step into place and points dir/LATEST at it (the commit), and removes the
 * step it replaced. A save that dies before the commit leaves the previous checkpoint as LATEST.
 */
export function saveSharded(dir: string, pytree: unknown): void {
  const fn = "saveSharded";
  checkArity(fn, arguments, 2, "saveSharded(dir, pytree)");
  if (typeof dir !== "string" || dir === "") throw new TypeError(`${fn}: dir must be a non-empty string`);
  const [leaves] = tree.flatten(pytree);
  leaves.forEach((l, k) => {
    if (!(l instanceof ArrayImpl))
      throw new TypeError(`${fn}: leaf ${k} is ${l === null ? "null" : typeof l}; every leaf must be an Array`);
  });
  const self = processIndex();
  const root = resolve(dir);
  // one step name for all processes (process 0's choice)
  const step = gather(`step-${Date.now()}-${randomBytes(4).toString("hex")}`, `${fn} (step name)`)[0];
  const tmp = join(root, `.tmp-${step}`);
  mkdirSync(tmp, { recursive: true });
  const blocks: Array[] = [];
  const entries: BlockEntry[] = [];
  (leaves as ArrayImpl[]).forEach((x, leaf) => {
    const g = globalStorage(x);
    if (g) {
      for (const sh of g.shards())
        if (sh.replicaId === 0) {
          entries.push({ leaf, index: sh.index, process: self, pos: blocks.length });
          blocks.push(sh.data);
        }
    } else if (self === 0) {
      entries.push({ leaf, index: x.shape.map((n) => [0, n]), process: 0, pos: blocks.length });
      blocks.push(x);
    }
  });
  save(join(tmp, `process-${self}.safetensors`), blocks);
  const all = gather(JSON.stringify(entries), `${fn} (block lists)`).flatMap((t) => JSON.parse(t) as BlockEntry[]);
  if (self === 0) {
    const index: IndexFile = {
      format: FORMAT,
      processes: processCount(),
      leaves: (leaves as ArrayImpl[]).map((x) => ({ dtype: x.dtype, shape: [...x.shape] })),
      blocks: all,
    };
    writeFileSync(join(tmp, "index.json"), JSON.stringify(index));
  }
  // every process has written its blocks before the commit
  gather("written", `${fn} (barrier before the commit)`);
  if (self === 0) {
    const prev = existsSync(join(root, LATEST)) ? readFileSync(join(root, LATEST), "utf8").trim() : null;
    renameSync(tmp, join(root, step));
    writeAtomic(join(root, LATEST), step);
    // the replaced step, and temporaries of saves that died before their commit
    for (const n of readdirSync(root))
      if ((n === prev && n !== step) || (n.startsWith(".tmp-") && n !== `.tmp-${step}`))
        rmSync(join(root, n), { recursive: true, force: true });
  }
  gather("committed", `${fn} (barrier after the commit)`);
}

/**
 * loadSharded(dir, like?): the checkpoint LATEST points at. `like` gives the structure and, per leaf, where to put it:
 * a NamedSharding or an Array carrying one (each process builds its devices' blocks, reading only the saved blocks
 * they overlap), or another leaf (e.g. a host Array) for a host array. Without `like`, the leaves come back as a flat
 * list of host arrays.
 */
export function loadSharded<T = unknown>(dir: string, like?: unknown): T {
  const fn = "loadSharded";
  checkArity(fn, arguments, 2, "loadSharded(dir, like?)");
  if (typeof dir !== "string" || dir === "") throw new TypeError(`${fn}: dir must be a non-empty string`);
  const root = resolve(dir);
  const latest = join(root, LATEST);
  if (!existsSync(latest))
    throw new Error(`${fn}: ${JSON.stringify(dir)} holds no committed checkpoint (no ${LATEST} file)`);
  const step = join(root, readFileSync(latest, "utf8").trim());
  const index = JSON.parse(readFileSync(join(step, "index.json"), "utf8")) as IndexFile;
  if (index.format !== FORMAT)
    throw new Error(`${fn}: ${JSON.stringify(step)} has format ${JSON.stringify(index.format)}, expected ${FORMAT}`);
  const files = new Map<number, ArrayImpl[]>();
  const fileOf = (p: number): ArrayImpl[] => {
    let f = files.get(p);
    if (!f) {
      f = load(join(step, `process-${p}.safetensors`)) as ArrayImpl[];
      files.set(p, f);
    }
    return f;
  };
  const [likeLeaves, def] = like === undefined ? [null, null] : tree.flatten(like);
  if (likeLeaves && likeLeaves.length !== index.leaves.length)
    throw new Error(`${fn}: like has ${likeLeaves.length} leaves; the checkpoint has ${index.leaves.length}`);
  const outs = index.leaves.map(({ dtype, shape }, leaf) => {
    const blocks = index.blocks.filter((b) => b.leaf === leaf);
    // the region `ix` of the leaf, from the saved blocks overlapping it
    const region = (ix: Index): ArrayImpl => {
      const rshape = ix.map(([a, b]) => b - a);
      const out = allocate(
        dtype,
        rshape.reduce((a, b) => a * b, 1),
      );
      for (const b of blocks) {
        const lo = ix.map(([a], d) => Math.max(a, b.index[d][0])),
          hi = ix.map(([, e], d) => Math.min(e, b.index[d][1]));
        if (lo.some((v, d) => v >= hi[d]) && rshape.length > 0) continue;
        const src = fileOf(b.process)[b.pos];
        copyRegion(
          src.buffer,
          src.shape,
          lo.map((v, d) => v - b.index[d][0]),
          out,
          rshape,
          lo.map((v, d) => v - ix[d][0]),
          lo.map((v, d) => hi[d] - v),
          lanes(dtype),
        );
      }
      return new ArrayImpl(new ShapedArray(rshape, dtype), out);
    };
    const target = likeLeaves?.[leaf];
    const s =
      target instanceof NamedShardingImpl
        ? target
        : target instanceof ArrayImpl && target.placement instanceof NamedShardingImpl
          ? target.placement
          : null;
    if (target instanceof ArrayImpl && target.shape.join() !== shape.join())
      throw new Error(
        `${fn}: leaf ${leaf} was saved with shape (${shape.join(", ")}); like has (${target.shape.join(", ")})`,
      );
    if (s) return makeArrayFromCallback(shape, s, (ix) => region(ix));
    return region(shape.map((n) => [0, n]));
  });
  return (def ? tree.unflatten(def, outs) : outs) as T;
}
