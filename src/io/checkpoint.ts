/** @file Checkpoints: save/load a pytree of Arrays as a .safetensors file (atomic write; structure kept in __metadata__). */
import { checkArity, checkOptions } from "../core/check-args.js";
import {
  type Stats,
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { randomBytes } from "node:crypto";
import { basename, dirname, join, resolve } from "node:path";
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { type DType, canonicalizeDType, isDType, itemsize } from "../core/dtype.js";
import { Tracer } from "../core/trace.js";
import * as tree from "../core/tree.js";
import type { TreeDef } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import {
  MAX_HEADER_BYTES,
  type RawTensor,
  ST_DTYPE,
  decode,
  encode,
  jsonDepthExceeded,
  storageBytes,
  storageFromBytes,
} from "./safetensors.js";

/** The __metadata__ keys jaxts writes: a format tag and the JSON-encoded tree structure. */
export const FORMAT_KEY = "format";
export const TREE_KEY = "jaxts.tree";
const FORMAT = "jaxts";
/** Deepest nesting of lists/objects load accepts in the tree-structure JSON (each pytree level adds 1 or 2). */
export const MAX_TREE_DEPTH = 1000;
/** Marker in temporary file names: `<target>.jaxts-tmp-<pid>-<random hex>`. */
const TMP_MARK = ".jaxts-tmp-";

/** Options of load/deserialize. */
export interface LoadOptions {
  /**
   * Most bytes of tensor storage the load may allocate (default: twice the size of the file or buffer;
   * each stored tensor is materialized once, and tree references to one tensor share its Array).
   */
  maxBytes?: number;
}

type ScalarKind = "number" | "boolean" | "bigint";
/**
 * Encoded structure: a tensor name (Array leaf), { number|boolean|bigint: name } (JS scalar leaf), null,
 * { undefined: true }, a list (JS array), { object: {...} } (plain object), { custom, children } (registered class).
 */
type Enc =
  | string
  | null
  | Enc[]
  | { [k in ScalarKind]?: string }
  | { undefined: true }
  | { object: Record<string, Enc> }
  | { custom: string; children: Enc[] };

const shapeStr = (s: readonly number[]): string => `(${s.join(", ")}${s.length === 1 ? "," : ""})`;
const describeLeaf = (x: unknown): string =>
  x === null
    ? "null"
    : typeof x === "object"
      ? `an instance of ${(x as object).constructor?.name ?? "Object"}`
      : `a ${typeof x}`;

/**
 * Walks a pytree (as tree.flatten sees it) and returns its leaves with their dotted names
 * ("layers.0.w": object keys and list/child indices joined by ".") and the encoded structure.
 */
function namedLeaves(x: unknown, fn: string): { leaves: [string, unknown][]; enc: Enc } {
  const leaves: [string, unknown][] = [];
  const seen = new Set<string>();
  const add = (name: string, v: unknown): string => {
    if (name === "__metadata__")
      throw new Error(`${fn}: the leaf name "__metadata__" is reserved by safetensors; rename that key`);
    if (seen.has(name))
      throw new Error(
        `${fn}: two leaves map to the tensor name "${name}" (an object key containing "." collides with a nested path); rename one`,
      );
    seen.add(name);
    leaves.push([name, v]);
    return name;
  };
  const join1 = (p: string, k: string | number): string => (p === "" ? String(k) : `${p}.${k}`);
  const rec = (def: TreeDef, path: string, ls: unknown[], k: { i: number }): Enc => {
    switch (def.kind) {
      case "leaf": {
        const leaf = ls[k.i++];
        if (typeof leaf === "number" || typeof leaf === "boolean" || typeof leaf === "bigint")
          return { [typeof leaf]: add(path, leaf) } as Enc;
        return add(path, leaf);
      }
      case "null":
        return null;
      case "undefined":
        return { undefined: true };
      case "array":
        return def.children.map((c, i) => rec(c, join1(path, i), ls, k));
      case "object": {
        const o: Record<string, Enc> = {};
        (def.aux as string[]).forEach((key, i) => {
          o[key] = rec(def.children[i], join1(path, key), ls, k);
        });
        return { object: o };
      }
      case "custom": {
        const [cls] = def.aux as [{ name?: string }, unknown];
        return { custom: cls.name ?? "anonymous", children: def.children.map((c, i) => rec(c, join1(path, i), ls, k)) };
      }
    }
  };
  const [ls, def] = tree.flatten(x);
  const enc = rec(def, "", ls, { i: 0 });
  return { leaves, enc };
}

/** A leaf's raw tensor (JS scalars become 0-d F64 / BOOL / I64|U64 tensors). */
function toRaw(name: string, leaf: unknown, fn: string): RawTensor {
  if (leaf instanceof Tracer)
    throw new Error(
      `${fn}: leaf "${name}" is a traced value (inside jit/grad/vmap); checkpoints can only save concrete Arrays`,
    );
  if (leaf instanceof Array) {
    const t = leaf.dataSync();
    return { dtype: leaf.dtype, shape: leaf.shape, bytes: storageBytes(t, leaf.dtype) };
  }
  if (typeof leaf === "number")
    return { dtype: "float64", shape: [], bytes: storageBytes(new Float64Array([leaf]), "float64") };
  if (typeof leaf === "boolean") return { dtype: "bool", shape: [], bytes: new Uint8Array([leaf ? 1 : 0]) };
  if (typeof leaf === "bigint") {
    if (leaf >= 0n && leaf < 1n << 64n && leaf >= 1n << 63n)
      return { dtype: "uint64", shape: [], bytes: storageBytes(new BigUint64Array([leaf]), "uint64") };
    if (leaf < -(1n << 63n) || leaf >= 1n << 63n)
      throw new Error(`${fn}: leaf "${name}" is the bigint ${leaf}, outside the int64/uint64 range`);
    return { dtype: "int64", shape: [], bytes: storageBytes(new BigInt64Array([leaf]), "int64") };
  }
  throw new TypeError(
    `${fn}: leaf "${name}" is ${describeLeaf(leaf)}; only Arrays, numbers, booleans and bigints can be saved`,
  );
}

/** serialize(pytree): the bytes of a .safetensors file holding every leaf of the pytree (what save writes). */
export function serialize(pytree: unknown): Uint8Array {
  checkArity("serialize", arguments, 1, "serialize(pytree)");
  return serializeAs(pytree, "serialize");
}

function serializeAs(pytree: unknown, fn: string): Uint8Array {
  const { leaves, enc } = namedLeaves(pytree, fn);
  const tensors = new Map<string, RawTensor>();
  for (const [name, leaf] of leaves) tensors.set(name, toRaw(name, leaf, fn));
  return encode(tensors, { [FORMAT_KEY]: FORMAT, [TREE_KEY]: JSON.stringify(enc) });
}

/**
 * save(path, pytree): writes every leaf Array of the pytree to a .safetensors file named by its dotted
 * path ("layers.0.w"), with the tree structure in __metadata__. The write is atomic: the bytes go to a
 * temporary file `<path>.jaxts-tmp-<pid>-<hex>` beside it, which is synced and then renamed over `path`;
 * temporaries that killed saves to the same path left behind (their pid is gone) are removed first.
 */
export function save(path: string, pytree: unknown): void {
  checkArity("save", arguments, 2, "save(path, pytree)");
  if (typeof path !== "string" || path === "")
    throw new TypeError(`save: path must be a non-empty string, got ${describeLeaf(path)}`);
  const bytes = serializeAs(pytree, "save"); // fails before touching the file system
  const target = resolve(path);
  const dir = dirname(target);
  const tmp = `${target}${TMP_MARK}${process.pid}-${randomBytes(6).toString("hex")}`;
  let fd: number | null = null;
  try {
    mkdirSync(dir, { recursive: true });
    removeStaleTemporaries(target);
    fd = openSync(tmp, "wx");
    for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
    closeSync(fd);
    fd = null;
    renameSync(tmp, target);
  } catch (e) {
    if (fd !== null) {
      try {
        closeSync(fd);
      } catch {
        /* already failing */
      }
    }
    rmSync(tmp, { force: true });
    throw new Error(`save: could not write ${JSON.stringify(path)}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    /* directory fsync is best effort */
  }
}

/** Whether a process with this pid exists on this host (EPERM: it exists but belongs to another user). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes the temporary files earlier saves to `target` left behind when their process died mid-write
 * (`<target>.jaxts-tmp-<pid>-<hex>` whose pid no longer runs). Temporaries of live processes are kept: they may be
 * saving right now. Pids are those of this host, so a directory shared by several hosts should not share targets.
 */
function removeStaleTemporaries(target: string): void {
  const dir = dirname(target),
    prefix = basename(target) + TMP_MARK;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /^(\d+)-[0-9a-f]+$/.exec(name.slice(prefix.length));
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || processAlive(pid)) continue;
    try {
      rmSync(join(dir, name), { force: true });
    } catch {
      /* another save removed it first, or no permission: harmless */
    }
  }
}

/** Counts the tensor storage a load allocates and refuses to go past its limit. */
class LoadBudget {
  used = 0;
  constructor(
    readonly limit: number,
    readonly what: string,
    readonly fileBytes: number,
  ) {}
  charge(name: string, bytes: number): void {
    this.used += bytes;
    if (this.used > this.limit) {
      throw new Error(
        `load: loading ${this.what} (${this.fileBytes} bytes) would allocate more than ${this.limit} bytes ` +
          `(${this.used} bytes by tensor "${name}"); the limit is maxBytes, by default twice the file size`,
      );
    }
  }
}

/** Loaded tensor as an Array (64-bit dtypes canonicalize to 32-bit without enableX64, as jnp.asarray does). */
function toArray(t: RawTensor, name: string, budget: LoadBudget): Array {
  const c = canonicalizeDType(t.dtype);
  budget.charge(name, t.bytes.length + (c === t.dtype ? 0 : (t.bytes.length / itemsize(t.dtype)) * itemsize(c)));
  const a = ArrayImpl.of(
    t.shape,
    t.dtype,
    storageFromBytes(
      t.bytes,
      t.dtype,
      t.shape.reduce((x, y) => x * y, 1),
    ),
  );
  return c === t.dtype ? a : ops.convert(a, c);
}

function toScalar(name: string, kind: ScalarKind, t: RawTensor, what: string): number | boolean | bigint {
  if (t.shape.length !== 0)
    throw new Error(
      `load: tensor "${name}" in ${what} should be a scalar (${kind} leaf) but has shape ${shapeStr(t.shape)}`,
    );
  const v = ArrayImpl.of([], t.dtype, storageFromBytes(t.bytes, t.dtype, 1)).item();
  if (kind === "number") return Number(v);
  if (kind === "boolean") return typeof v === "boolean" ? v : v !== 0 && v !== 0n;
  return typeof v === "bigint" ? v : BigInt(v as number);
}

/** A `like` leaf's expected shape and dtype: an Array, a ShapeDtypeStruct-like {shape, dtype}, or a JS scalar. */
function specOf(leaf: unknown): { shape: number[]; dtype: DType } | ScalarKind | null {
  if (typeof leaf === "number" || typeof leaf === "boolean" || typeof leaf === "bigint")
    return typeof leaf as ScalarKind;
  if (leaf instanceof Array) return { shape: leaf.shape, dtype: leaf.dtype };
  if (leaf !== null && typeof leaf === "object") {
    const { shape, dtype } = leaf as { shape?: unknown; dtype?: unknown };
    if (globalThis.Array.isArray(shape) && isDType(dtype)) return { shape: shape as number[], dtype };
  }
  return null;
}

/** The pytree described by `enc`; every reference to one tensor gets the same (immutable) Array or scalar. */
function rebuild(enc: Enc, tensors: Map<string, RawTensor>, what: string, budget: LoadBudget): unknown {
  const loaded = new Map<string, unknown>();
  const once = (name: string, make: () => unknown): unknown => {
    if (!loaded.has(name)) loaded.set(name, make());
    return loaded.get(name);
  };
  const get = (name: string): RawTensor => {
    const t = tensors.get(name);
    if (!t)
      throw new Error(
        `load: ${what} is inconsistent: its tree structure names tensor "${name}", which the file does not contain`,
      );
    return t;
  };
  const rec = (e: Enc): unknown => {
    if (e === null) return null;
    if (typeof e === "string") return once(e, () => toArray(get(e), e, budget));
    if (globalThis.Array.isArray(e)) return e.map(rec);
    if (typeof e === "object") {
      if ("undefined" in e) return undefined;
      if ("object" in e) return Object.fromEntries(Object.entries(e.object).map(([k, v]) => [k, rec(v)]));
      if ("custom" in e) {
        throw new Error(
          `load: ${what} contains a registered pytree class (${e.custom}); pass \`like\` (a pytree with that class) to rebuild it`,
        );
      }
      for (const kind of ["number", "boolean", "bigint"] as const) {
        const n = (e as Record<string, unknown>)[kind];
        if (typeof n === "string") return once(n, () => toScalar(n, kind, get(n), what));
      }
    }
    throw new Error(
      `load: ${what} has an unreadable tree structure in __metadata__ (${JSON.stringify(e).slice(0, 80)})`,
    );
  };
  return rec(enc);
}

/**
 * deserialize(bytes, like?, { maxBytes }?): the pytree stored in safetensors bytes. With `like`, the result has like's
 * structure and every tensor is checked against like's leaf shapes and dtypes; otherwise the structure
 * comes from the jaxts metadata, or (for files from other writers) is a flat object of name -> Array.
 */
export function deserialize<T = unknown>(bytes: Uint8Array, like?: T, options: LoadOptions = {}): T {
  checkArity("deserialize", arguments, 3, "deserialize(bytes, like?, { maxBytes })");
  checkOptions("deserialize", options, ["maxBytes"], "deserialize(bytes, like?, { maxBytes })");
  return deserializeFrom(bytes, like, "the buffer", options);
}

function deserializeFrom<T>(bytes: Uint8Array, like: T | undefined, what: string, options: LoadOptions): T {
  const limit = options.maxBytes ?? 2 * bytes.length;
  if (typeof limit !== "number" || !(limit >= 0))
    throw new TypeError(`load: maxBytes must be a non-negative number, got ${String(limit)}`);
  const budget = new LoadBudget(limit, what, bytes.length);
  const { tensors, metadata } = decode(bytes, what);
  if (like !== undefined) {
    const { leaves } = namedLeaves(like, "load");
    const def = tree.structure(like);
    const used = new Set<string>();
    const out = leaves.map(([name, leaf]) => {
      const spec = specOf(leaf);
      if (spec === null)
        throw new TypeError(
          `load: like's leaf "${name}" is ${describeLeaf(leaf)}; expected an Array, a ShapeDtypeStruct or a JS scalar`,
        );
      const t = tensors.get(name);
      if (!t) {
        const have = [...tensors.keys()];
        throw new Error(
          `load: ${what} has no tensor "${name}" (required by like); it has ${have.length} tensor(s): ${have
            .slice(0, 8)
            .map((h) => JSON.stringify(h))
            .join(", ")}${have.length > 8 ? ", ..." : ""}`,
        );
      }
      used.add(name);
      if (typeof spec === "string") return toScalar(name, spec, t, what);
      if (t.shape.length !== spec.shape.length || t.shape.some((d, i) => d !== spec.shape[i])) {
        throw new Error(
          `load: tensor "${name}" has shape ${shapeStr(t.shape)} in ${what} but like expects shape ${shapeStr(spec.shape)}`,
        );
      }
      if (canonicalizeDType(t.dtype) !== spec.dtype) {
        throw new Error(
          `load: tensor "${name}" has dtype ${ST_DTYPE[t.dtype]} (${t.dtype}) in ${what} but like expects dtype ${spec.dtype}`,
        );
      }
      return toArray(t, name, budget);
    });
    const extra = [...tensors.keys()].filter((k) => !used.has(k));
    if (extra.length) {
      throw new Error(
        `load: ${what} has ${extra.length} tensor(s) that like does not contain: ${extra
          .slice(0, 8)
          .map((h) => JSON.stringify(h))
          .join(", ")}${extra.length > 8 ? ", ..." : ""}`,
      );
    }
    return tree.unflatten(def, out) as T;
  }
  const treeJson = metadata?.[TREE_KEY];
  if (treeJson !== undefined) {
    const deep = jsonDepthExceeded(treeJson, MAX_TREE_DEPTH);
    if (deep >= 0)
      throw new Error(
        `load: ${what} has a "${TREE_KEY}" tree structure nested deeper than ${MAX_TREE_DEPTH} levels (at character ${deep}); refusing to rebuild it`,
      );
    let enc: Enc;
    try {
      enc = JSON.parse(treeJson) as Enc;
    } catch (e) {
      throw new Error(`load: ${what} has an unreadable "${TREE_KEY}" entry in __metadata__ (${(e as Error).message})`);
    }
    return rebuild(enc, tensors, what, budget) as T;
  }
  return Object.fromEntries([...tensors].map(([k, t]) => [k, toArray(t, k, budget)])) as T;
}

/**
 * load(path, like?, { maxBytes }?): reads a .safetensors file. With `like` (a pytree of Arrays or ShapeDtypeStructs)
 * the result has like's structure, validated leaf by leaf; without it, the structure saved by `save`
 * is rebuilt (files from other writers load as a flat object of tensor name -> Array). Only regular files are
 * read; tree references to one tensor share one Array; the tensor storage allocated is capped by maxBytes.
 */
export function load<T = unknown>(path: string, like?: T, options: LoadOptions = {}): T {
  checkArity("load", arguments, 3, "load(path, like?, { maxBytes })");
  checkOptions("load", options, ["maxBytes"], "load(path, like?, { maxBytes })");
  if (typeof path !== "string" || path === "")
    throw new TypeError(`load: path must be a non-empty string, got ${describeLeaf(path)}`);
  return deserializeFrom(readCheckpointFile(path), like, JSON.stringify(path), options);
}

/** Reads exactly `buf.length` bytes at `pos`; false if the file ended first. */
function readFully(fd: number, buf: Uint8Array, pos: number): boolean {
  for (let off = 0; off < buf.length;) {
    const n = readSync(fd, buf, off, buf.length - off, pos + off);
    if (n === 0) return false;
    off += n;
  }
  return true;
}

const fileKind = (st: Stats): string =>
  st.isDirectory()
    ? "a directory"
    : st.isCharacterDevice()
      ? "a character device"
      : st.isBlockDevice()
        ? "a block device"
        : st.isFIFO()
          ? "a FIFO"
          : st.isSocket()
            ? "a socket"
            : "not a regular file";

/**
 * The bytes of a checkpoint file. Only regular files are read (devices such as /dev/zero or FIFOs never end; a
 * FIFO is opened non-blocking so that even the open returns), and the header length is checked against the size
 * fstat reports before the rest is read, so a corrupt length prefix never triggers a huge read.
 */
function readCheckpointFile(path: string): Uint8Array {
  const q = JSON.stringify(path);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw new Error(`load: cannot read ${q}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile())
      throw new Error(
        `load: cannot read ${q}: it is ${fileKind(st)}, not a regular file; checkpoints are loaded from regular files only`,
      );
    const size = st.size;
    if (size < 8) {
      const small = new Uint8Array(size);
      if (!readFully(fd, small, 0)) throw new Error(`load: ${q} shrank while being read (fstat said ${size} bytes)`);
      return small; // decode names the missing length prefix
    }
    const buf = new Uint8Array(size);
    if (!readFully(fd, buf.subarray(0, 8), 0))
      throw new Error(`load: ${q} shrank while being read (fstat said ${size} bytes)`);
    const n = new DataView(buf.buffer, 0, 8).getBigUint64(0, true);
    const bad = `load: ${q} is not a valid safetensors file: `;
    if (n > BigInt(MAX_HEADER_BYTES))
      throw new Error(
        `${bad}the header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit (corrupt length prefix?)`,
      );
    if (8n + n > BigInt(size))
      throw new Error(
        `${bad}the header length is ${n} bytes but only ${size - 8} bytes follow the length prefix (truncated file?)`,
      );
    if (!readFully(fd, buf.subarray(8), 8))
      throw new Error(`load: ${q} shrank while being read (fstat said ${size} bytes)`);
    return buf;
  } catch (e) {
    if ((e as Error).message.startsWith("load:")) throw e;
    throw new Error(`load: cannot read ${q}: ${(e as Error).message}`, { cause: e });
  } finally {
    closeSync(fd);
  }
}
