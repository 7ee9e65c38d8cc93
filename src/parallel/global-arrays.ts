/**
 * @file Global arrays over meshes spanning processes (jax.make_array_from_process_local_data,
 * make_array_from_single_device_arrays, make_array_from_callback): each process holds the blocks of its own devices
 * only (GlobalStorage, resident on the device runtime), `shape` is the global shape, reading the value is refused
 * (multihostUtils.processAllgather gathers it) and shardMap / pmap consume them block by block.
 */
import { Array } from "../core/array.js";
import { ArrayImpl, type Device, type ExternalStorage } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { type DType, type TypedArray, allocate, itemsize, lanes } from "../core/dtype.js";
import { DEVICE_DTYPES, DeviceBuffer, deviceRuntimeUnavailable, runtimeDevice } from "../runtime/index.js";
import { BufferView, copyRegion, sameSharding } from "./device-arrays.js";
import { allgatherBytes, processIndex, setGlobalGather } from "./distributed.js";
import { type Index, NamedShardingImpl, type Sharding } from "./sharding.js";

const JSArray = globalThis.Array;

/** Mesh positions (row-major) of the sharding's devices that belong to this process. */
export function addressablePositions(s: NamedShardingImpl): number[] {
  const self = processIndex();
  const out: number[] = [];
  s.mesh.flatDevices.forEach((d, k) => {
    if (d.processIndex === self) out.push(k);
  });
  return out;
}

/** Whether every device of the sharding belongs to this process (jax.Array.is_fully_addressable). */
export function isFullyAddressable(s: Sharding): boolean {
  const self = processIndex();
  return s.deviceSet.every((d) => d.processIndex === self);
}

/** The Array method on the stack that asked for the value (for the error), or a generic phrase. */
function reader(): string {
  const frames = (new Error().stack ?? "").split("\n");
  let name = "";
  for (const f of frames) {
    const m = /at (?:Array|ArrayImpl)\.(\w+)/.exec(f);
    if (m && m[1] !== "read") name = m[1];
  }
  return name ? `Array.${name}` : "reading an array's value";
}

/** One addressable shard: its device, its index in the global array, its replica id and its block. */
export interface GlobalShard {
  device: Device;
  index: Index;
  replicaId: number;
  data: Array;
}

/**
 * The blocks of a global array held by this process: `buffers[i]` is the block of mesh position `positions[i]`
 * (this process's devices of the mesh, in mesh order). Its global value is on no single process: read() refuses.
 */
export class GlobalStorage implements ExternalStorage {
  #freed = false;
  #shards: GlobalShard[] | null = null;
  readonly indices: Index[];
  constructor(
    readonly sharding: NamedShardingImpl,
    readonly aval: ShapedArray,
    readonly positions: readonly number[],
    readonly buffers: readonly DeviceBuffer[],
    indices?: Index[],
  ) {
    if (indices) this.indices = indices;
    else {
      const all = [...sharding.devicesIndicesMap(aval.shape).values()];
      this.indices = positions.map((k) => all[k]);
    }
  }
  get isFreed(): boolean {
    return this.#freed;
  }
  #live(what: string): void {
    if (this.#freed)
      throw new Error(`Array.${what}: use of a disposed global array ${this.aval.str()} (${this.sharding})`);
  }
  read(): TypedArray {
    const fn = reader();
    this.#live(fn);
    const procs = [...new Set(this.sharding.mesh.flatDevices.map((d) => d.processIndex))].sort((a, b) => a - b);
    throw new Error(
      `${fn}: the value of ${this.aval.str()} (${this.sharding}) spans devices of processes [${procs.join(", ")}] and cannot be fetched on process ${processIndex()}, which holds only its own shards; gather it with multihostUtils.processAllgather(x) or inspect x.addressableShards`,
    );
  }
  wait(): void {
    this.#live("blockUntilReady");
    for (const b of this.buffers) b.ready();
  }
  /** wait() without blocking the thread (this process's buffers). */
  async whenReady(): Promise<void> {
    this.#live("ready");
    await Promise.all(this.buffers.map((b) => b.whenReady()));
  }
  /** This process's shards (views of the buffers, disposed with this storage). */
  shards(): GlobalShard[] {
    this.#live("addressableShards");
    if (this.#shards) return this.#shards;
    const bshape = this.sharding.shardShape(this.aval.shape);
    const reps = this.sharding.replicaIds();
    this.#shards = this.positions.map((k, i) => ({
      device: this.sharding.mesh.flatDevices[k],
      index: this.indices[i],
      replicaId: reps[k],
      data: new ArrayImpl(
        new ShapedArray(bshape, this.aval.dtype, this.aval.weakType),
        new BufferView(this.buffers[i], this, "global"),
        this.sharding.mesh.flatDevices[k],
      ),
    }));
    return this.#shards;
  }
  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    for (const b of this.buffers) b.free();
  }
}

/** The GlobalStorage behind an array, or null. */
export function globalStorage(x: unknown): GlobalStorage | null {
  const e = x instanceof ArrayImpl ? x.external : null;
  return e instanceof GlobalStorage ? e : null;
}

/**
 * A global array over this process's `buffers` (their references pass to it); `known`: the addressable positions and
 * their blocks' indices when the caller has them already (a repeated call's plan), else computed from the sharding.
 */
export function globalArray(
  aval: ShapedArray,
  s: NamedShardingImpl,
  buffers: DeviceBuffer[],
  known?: { positions: readonly number[]; indices: Index[] },
): ArrayImpl {
  const positions = known ? known.positions : addressablePositions(s);
  if (positions.length !== buffers.length)
    throw new Error(
      `globalArray: ${buffers.length} buffers for the ${positions.length} devices of this process in ${s.mesh}`,
    );
  const out = new ArrayImpl(
    aval,
    new GlobalStorage(s, aval, positions, buffers, known?.indices),
    s.mesh.flatDevices[0],
  );
  out.placement = s;
  return out;
}

/** Whether two NamedShardings put the same block of an array of `shape` on every device (axis names may differ). */
export function sameLayout(a: NamedShardingImpl, b: NamedShardingImpl, shape: readonly number[]): boolean {
  if (sameSharding(a, b, shape.length)) return true;
  const da = a.mesh.deviceIds,
    db = b.mesh.deviceIds;
  if (da.length !== db.length || da.some((d, i) => d !== db[i])) return false;
  const ia = [...a.devicesIndicesMap(shape).values()],
    ib = [...b.devicesIndicesMap(shape).values()];
  return ia.every((ix, k) => ix.every(([s, e], d) => s === ib[k][d][0] && e === ib[k][d][1]));
}

/** Refuses, naming `fn`, a global array asked for as a sharding it cannot take (not a NamedSharding over its devices). */
export function reshardError(fn: string, what: string, x: GlobalStorage, want: Sharding): Error {
  return new Error(
    `${fn}: ${what} is a global array ${x.aval.str()} sharded as ${x.sharding}, but ${want} is asked for; a global array spanning processes can be resharded only to a NamedSharding over the same devices (or gathered with multihostUtils.processAllgather)`,
  );
}

function namedSharding(fn: string, s: unknown): NamedShardingImpl {
  if (!(s instanceof NamedShardingImpl))
    throw new TypeError(`${fn}: sharding must be a NamedSharding (a mesh and a PartitionSpec), got ${String(s)}`);
  return s;
}
function deviceReady(fn: string, dtype: DType): void {
  const why = deviceRuntimeUnavailable();
  if (why)
    throw new Error(
      `${fn}: an array spanning processes is resident on the device runtime, which is unavailable (${why})`,
    );
  if (!DEVICE_DTYPES.has(dtype)) throw new TypeError(`${fn}: dtype ${dtype} is not supported by the device runtime`);
}
const shapeStr = (s: readonly number[]) => `(${s.join(", ")})`;

/** Blocks of this process's devices copied from `src` (shape sshape) whose element [0, ...] is global `origin`. */
function blocksFrom(
  s: NamedShardingImpl,
  gshape: readonly number[],
  src: TypedArray,
  sshape: readonly number[],
  origin: readonly number[],
  dtype: DType,
): DeviceBuffer[] {
  const bshape = s.shardShape(gshape);
  const all = [...s.devicesIndicesMap(gshape).values()];
  return addressablePositions(s).map((k) => {
    const b = DeviceBuffer.uninitialized(runtimeDevice(s.mesh.flatDevices[k].id), dtype, bshape);
    copyRegion(
      src,
      sshape,
      all[k].map((r, d) => r[0] - origin[d]),
      b.data,
      bshape,
      bshape.map(() => 0),
      bshape,
      lanes(dtype),
    );
    return b;
  });
}

/**
 * The region of the global array this process's devices hold: [start, end) per dimension, checked to be filled by
 * their blocks (a box), or null when this process has no device in the mesh.
 */
function localBox(fn: string, s: NamedShardingImpl, gshape: readonly number[]): Index | null {
  const all = [...s.devicesIndicesMap(gshape).values()];
  const mine = addressablePositions(s).map((k) => all[k]);
  if (!mine.length) return null;
  const box: Index = gshape.map((_, d) => [
    Math.min(...mine.map((ix) => ix[d][0])),
    Math.max(...mine.map((ix) => ix[d][1])),
  ]);
  const bshape = s.shardShape(gshape);
  // a box: its blocks along each dimension are all present (the distinct starts times the block fill the extent)
  gshape.forEach((_, d) => {
    const starts = new Set(mine.map((ix) => ix[d][0]));
    if (starts.size * bshape[d] !== box[d][1] - box[d][0])
      throw new Error(
        `${fn}: this process's devices hold blocks along dimension ${d} that are not contiguous (${s}, global shape ${shapeStr(gshape)}); choose a mesh whose processes own contiguous regions`,
      );
  });
  return box;
}

/**
 * jax.make_array_from_process_local_data(sharding, localData, globalShape?): a global array whose blocks on this
 * process's devices come from `localData`, this process's region of the global array (or the whole global array).
 * Without globalShape, a dimension split over k distinct blocks of which this process holds l is l/k of the global.
 */
export function makeArrayFromProcessLocalData(
  sharding: Sharding,
  localData: Array,
  globalShape?: readonly number[],
): Array {
  const fn = "makeArrayFromProcessLocalData";
  const s = namedSharding(fn, sharding);
  if (!(localData instanceof ArrayImpl))
    throw new TypeError(`${fn}: localData must be an Array (this process's data), got ${typeof localData}`);
  const x = localData;
  let gshape: number[];
  if (globalShape !== undefined) {
    if (!JSArray.isArray(globalShape) || globalShape.some((n) => !Number.isInteger(n) || n < 0))
      throw new TypeError(`${fn}: globalShape must be a list of non-negative integers, got ${String(globalShape)}`);
    if (globalShape.length !== x.ndim)
      throw new Error(
        `${fn}: globalShape ${shapeStr(globalShape)} has rank ${globalShape.length} but localData has shape ${shapeStr(x.shape)}`,
      );
    gshape = [...globalShape];
  } else {
    const pos = addressablePositions(s);
    if (!pos.length)
      throw new Error(`${fn}: this process has no device in ${s.mesh}; pass globalShape to build its (empty) part`);
    // dimension d: this process's devices hold l distinct of its parts(d) blocks -> global = local / l * parts
    gshape = x.shape.map((n, d) => {
      const parts = d < s.spec.length ? s.parts(d) : 1;
      const blocks = new Set(pos.map((k) => blockNumber(s, d, k))).size;
      if (n % blocks !== 0)
        throw new Error(
          `${fn}: dimension ${d} of localData (size ${n}) holds ${blocks} blocks of this process's devices; it must divide evenly (${s})`,
        );
      return (n / blocks) * parts;
    });
  }
  s.shardShape(gshape); // rank and divisibility, with NamedSharding's error
  const box = localBox(fn, s, gshape);
  const whole = x.shape.every((n, d) => n === gshape[d]);
  if (box && !whole && x.shape.some((n, d) => n !== box[d][1] - box[d][0]))
    throw new Error(
      `${fn}: this process's devices hold the region ${box.map(([a, b]) => `${a}:${b}`).join(", ")} of the global shape ${shapeStr(gshape)}, of shape ${shapeStr(box.map(([a, b]) => b - a))}; localData has shape ${shapeStr(x.shape)}`,
    );
  const aval = new ShapedArray(gshape, x.dtype, x.aval.weakType);
  if (isFullyAddressable(s)) return place(new ArrayImpl(aval, x.shareableBuffer), s);
  deviceReady(fn, x.dtype);
  const origin = whole || !box ? gshape.map(() => 0) : box.map((r) => r[0]);
  return globalArray(aval, s, blocksFrom(s, gshape, x.buffer, x.shape, origin, x.dtype));
}

/** Block number along dimension d of the device at mesh position k (the first named axis is major). */
function blockNumber(s: NamedShardingImpl, d: number, k: number): number {
  const c = s.mesh.coords(k);
  let b = 0;
  for (const nm of s.spec.names(d)) {
    const i = s.mesh.axisNames.indexOf(nm);
    b = b * s.mesh.dims[i] + c[i];
  }
  return b;
}

let placer: ((x: ArrayImpl, s: NamedShardingImpl) => Array) | null = null;
/** @internal device-put.ts: how a fully addressable array is placed (devicePut). */
export function setPlacer(f: (x: ArrayImpl, s: NamedShardingImpl) => Array): void {
  placer = f;
}
const place = (x: ArrayImpl, s: NamedShardingImpl): Array => placer!(x, s);

/**
 * jax.make_array_from_single_device_arrays(globalShape, sharding, arrays): a global array from one block per device
 * of this process in the mesh (mesh order), each of the sharding's block shape.
 */
export function makeArrayFromSingleDeviceArrays(
  globalShape: readonly number[],
  sharding: Sharding,
  arrays: readonly Array[],
): Array {
  const fn = "makeArrayFromSingleDeviceArrays";
  const s = namedSharding(fn, sharding);
  if (!JSArray.isArray(globalShape) || globalShape.some((n) => !Number.isInteger(n) || n < 0))
    throw new TypeError(`${fn}: globalShape must be a list of non-negative integers, got ${String(globalShape)}`);
  if (!JSArray.isArray(arrays)) throw new TypeError(`${fn}: arrays must be a list of Arrays, got ${typeof arrays}`);
  const bshape = s.shardShape(globalShape);
  const pos = addressablePositions(s);
  const devs = pos.map((k) => s.mesh.flatDevices[k]);
  if (arrays.length !== pos.length)
    throw new Error(
      `${fn}: ${arrays.length} arrays given; this process has ${pos.length} devices in ${s.mesh} (ids [${devs.map((d) => d.id).join(", ")}]), one block each`,
    );
  const dtype = arrays[0]?.dtype ?? "float32";
  arrays.forEach((a, i) => {
    if (!(a instanceof ArrayImpl)) throw new TypeError(`${fn}: arrays[${i}] is ${typeof a}; expected an Array`);
    if (a.dtype !== dtype || a.shape.join() !== bshape.join())
      throw new Error(
        `${fn}: arrays[${i}] is ${a.dtype}[${a.shape.join(",")}]; every block must be ${dtype}[${bshape.join(",")}] (global shape ${shapeStr(globalShape)}, ${s})`,
      );
    if (a.placement !== null && a.device.id !== devs[i].id)
      throw new Error(
        `${fn}: arrays[${i}] is on device ${a.device.id}; it is the block of device ${devs[i].id} (this process's devices of the mesh, in mesh order)`,
      );
  });
  const aval = new ShapedArray(globalShape, dtype);
  const all = [...s.devicesIndicesMap(globalShape).values()];
  if (isFullyAddressable(s)) {
    const g = allocate(dtype, aval.size);
    pos.forEach((k, i) =>
      copyRegion(
        (arrays[i] as ArrayImpl).buffer,
        bshape,
        bshape.map(() => 0),
        g,
        globalShape,
        all[k].map((r) => r[0]),
        bshape,
        lanes(dtype),
      ),
    );
    return place(new ArrayImpl(aval, g), s);
  }
  deviceReady(fn, dtype);
  const bufs = pos.map((k, i) => DeviceBuffer.copyOf(runtimeDevice(devs[i].id), dtype, bshape, arrays[i].dataSync()));
  return globalArray(aval, s, bufs);
}

/**
 * makeArrayFromCallback over a mesh spanning processes: `cb(index)` is called for this process's devices only
 * (once per distinct block) and the blocks stay on them.
 */
export function globalFromCallback(
  shape: readonly number[],
  s: NamedShardingImpl,
  block: (index: Index) => ArrayImpl,
): Array {
  const fn = "makeArrayFromCallback";
  const all = [...s.devicesIndicesMap(shape).values()];
  const bshape = s.shardShape(shape);
  const done = new Map<string, ArrayImpl>();
  const pos = addressablePositions(s);
  const blocks = pos.map((k) => {
    const key = JSON.stringify(all[k]);
    let b = done.get(key);
    if (!b) {
      b = block(all[k]);
      done.set(key, b);
    }
    return b;
  });
  const dtype = blocks[0]?.dtype ?? "float32";
  deviceReady(fn, dtype);
  blocks.forEach((b, i) => {
    if (b.dtype !== dtype)
      throw new Error(
        `${fn}: the callback returned ${b.dtype} for index ${JSON.stringify(all[pos[i]])}, ${dtype} before`,
      );
  });
  const bufs = pos.map((k, i) =>
    DeviceBuffer.copyOf(runtimeDevice(s.mesh.flatDevices[k].id), dtype, bshape, blocks[i].buffer),
  );
  return globalArray(new ShapedArray(shape, dtype), s, bufs);
}

/**
 * The global value of a global array gathered on every process (multihostUtils.processAllgather of one): each
 * process sends its blocks (mesh order) and every process places all of them.
 */
export function gatherGlobal(x: GlobalStorage, what: string): ArrayImpl {
  const { aval, sharding: s } = x;
  const bshape = s.shardShape(aval.shape);
  const bbytes = bshape.reduce((a, b) => a * b, 1) * itemsize(aval.dtype);
  const send = new Uint8Array(bbytes * x.buffers.length);
  x.buffers.forEach((b, i) => {
    const d = b.ready().data;
    send.set(new Uint8Array(d.buffer, d.byteOffset, bbytes), i * bbytes);
  });
  const parts = allgatherBytes(send, what);
  const all = [...s.devicesIndicesMap(aval.shape).values()];
  const g = allocate(aval.dtype, aval.size);
  const block = allocate(aval.dtype, bbytes / itemsize(aval.dtype));
  const blockBytes = new Uint8Array(block.buffer, block.byteOffset, bbytes);
  parts.forEach((p, q) => {
    const pos = s.mesh.flatDevices.map((d, k) => (d.processIndex === q ? k : -1)).filter((k) => k >= 0);
    if (p.byteLength !== pos.length * bbytes)
      throw new Error(
        `${what}: process ${q} sent ${p.byteLength} bytes of blocks of ${aval.str()}, ${pos.length * bbytes} expected (the processes gathered different arrays?)`,
      );
    pos.forEach((k, i) => {
      blockBytes.set(p.subarray(i * bbytes, (i + 1) * bbytes));
      copyRegion(
        block,
        bshape,
        bshape.map(() => 0),
        g,
        aval.shape,
        all[k].map((r) => r[0]),
        bshape,
        lanes(aval.dtype),
      );
    });
  });
  return new ArrayImpl(new ShapedArray(aval.shape, aval.dtype, aval.weakType), g);
}

setGlobalGather((x, what) => {
  const g = globalStorage(x);
  return g ? gatherGlobal(g, what) : null;
});
