/** @file CPU devices, Mesh and makeMesh: named axes laid over an n-d array of devices (jax.sharding.Mesh). */
import { checkArity, checkOptions } from "../core/check-args.js";
import { type Device, type DeviceMemoryStats, HOST_DEVICE, setDeviceMemoryStats } from "../core/array-impl.js";
import { config, setConfigGuard } from "../core/config.js";
import { runtimeDevice } from "../runtime/index.js";

setDeviceMemoryStats((id) => runtimeDevice(id).memoryStats());

class CpuDevice implements Device {
  readonly platform = "cpu";
  readonly deviceKind = "cpu";
  constructor(
    readonly id: number,
    readonly processIndex = 0,
  ) {}
  memoryStats(): DeviceMemoryStats {
    return runtimeDevice(this.id).memoryStats();
  }
  toString(): string {
    return `CpuDevice(id=${this.id})`;
  }
}

let cached: Device[] | null = null;
// as JAX's jax_num_cpu_devices: the count is fixed once the devices exist (setting the same value again is allowed)
setConfigGuard("numCpuDevices", (n) => {
  if (cached && n !== cached.length) {
    throw new Error(
      `config.update: numCpuDevices cannot change to ${n} after the ${cached.length} CPU device(s) were created; as in JAX, set it before the backend is initialized (before the first devices(), makeMesh, pmap, shardMap or devicePut call), or set JAXTS_NUM_CPU_DEVICES`,
    );
  }
});
/** The CPU devices: config.numCpuDevices (or JAXTS_NUM_CPU_DEVICES) of them, fixed at first use as in JAX. */
export function devices(): Device[] {
  if (processView) return [...processView.all];
  if (!cached) {
    const n = config.numCpuDevices;
    if (!Number.isInteger(n) || n < 1) throw new Error(`devices: numCpuDevices must be a positive integer, got ${n}`);
    cached = [HOST_DEVICE, ...Array.from({ length: n - 1 }, (_, i) => new CpuDevice(i + 1))];
  }
  return [...cached];
}

/** After distributed.initialize over several processes: every process's devices (global ids) and this process's. */
let processView: { all: Device[]; local: Device[] } | null = null;

/**
 * @internal distributed.initialize: lays out the global device list from each process's device count (process q's
 * devices get ids offset_q + i, offset_q = the devices of the processes before it; process 0 keeps its ids).
 */
export function setProcessDevices(counts: readonly number[], self: number): void {
  if (cached && self > 0)
    throw new Error(
      `distributed.initialize: call it before devices(), makeMesh, pmap, shardMap or devicePut (process ${self} already created its devices with ids from 0)`,
    );
  if (counts[self] !== config.numCpuDevices)
    throw new Error(
      `distributed.initialize: this process has ${config.numCpuDevices} devices but reported ${counts[self]}`,
    );
  const local = self === 0 ? devices() : [];
  const all: Device[] = [];
  let off = 0;
  counts.forEach((c, q) => {
    for (let i = 0; i < c; i++) {
      const d = q === self && self === 0 ? local[i] : new CpuDevice(off + i, q);
      if (q === self && self > 0) local.push(d);
      all.push(d);
    }
    off += c;
  });
  if (self > 0) cached = local;
  processView = { all, local };
}

/** Devices of this process (all devices in a single-process run). */
export function localDevices(): Device[] {
  return processView ? [...processView.local] : devices();
}
/** Devices of every process (jax.device_count). */
export const deviceCount = (): number => (processView ? processView.all.length : devices().length);
export const localDeviceCount = (): number => localDevices().length;

type Nested = Device | Nested[];

/** jax.sharding.Mesh: `new Mesh(devices, axisNames)` with devices nested to the mesh's rank. */
export class Mesh {
  readonly axisNames: readonly string[];
  readonly devices: Nested;
  /** Mesh shape as axis name -> size, in axis order. */
  readonly shape: Readonly<Record<string, number>>;
  readonly dims: readonly number[];
  /** Devices in row-major mesh order. */
  readonly flatDevices: readonly Device[];
  constructor(devs: Nested, axisNames: string | readonly string[]) {
    const names = typeof axisNames === "string" ? [axisNames] : [...axisNames];
    const dims: number[] = [];
    for (let d: Nested = devs; Array.isArray(d); d = d[0]) {
      dims.push(d.length);
      if (d.length === 0) break;
    }
    if (dims.length !== names.length) {
      throw new Error(
        `Mesh: devices array of shape (${dims.join(", ")}) has ${dims.length} dimensions but ${names.length} axis names were given (${names.join(", ")})`,
      );
    }
    if (new Set(names).size !== names.length) throw new Error(`Mesh: repeated axis names ${JSON.stringify(names)}`);
    const flat: Device[] = [];
    const rec = (d: Nested, k: number): void => {
      if (k === dims.length) {
        if (Array.isArray(d)) throw new Error(`Mesh: devices array is ragged or deeper than ${dims.length} dimensions`);
        flat.push(d);
        return;
      }
      if (!Array.isArray(d) || d.length !== dims[k])
        throw new Error(`Mesh: devices array is ragged at depth ${k} (expected ${dims[k]} entries)`);
      d.forEach((x) => rec(x, k + 1));
    };
    rec(devs, 0);
    if (new Set(flat.map((d) => d.id)).size !== flat.length) throw new Error("Mesh: a device appears twice");
    this.axisNames = Object.freeze(names);
    this.devices = devs;
    this.dims = Object.freeze(dims);
    this.flatDevices = Object.freeze(flat);
    this.shape = Object.freeze(Object.fromEntries(names.map((n, i) => [n, dims[i]])));
  }
  get size(): number {
    return this.flatDevices.length;
  }
  get deviceIds(): number[] {
    return this.flatDevices.map((d) => d.id);
  }
  axisSize(name: string): number {
    const i = this.axisNames.indexOf(name);
    if (i < 0)
      throw new Error(`Mesh: no axis named ${JSON.stringify(name)}; axes are ${JSON.stringify(this.axisNames)}`);
    return this.dims[i];
  }
  /** Mesh coordinates (one per axis) of the k-th device in row-major order. */
  coords(k: number): number[] {
    const c = new Array<number>(this.dims.length);
    for (let i = this.dims.length - 1; i >= 0; i--) {
      c[i] = k % this.dims[i];
      k = Math.floor(k / this.dims[i]);
    }
    return c;
  }
  #text?: string;
  #key?: string;
  toString(): string {
    // memoized: every field is frozen at construction
    return (this.#text ??= `Mesh(${this.axisNames.map((n, i) => `'${n}': ${this.dims[i]}`).join(", ")})`);
  }
  /** @internal Axis names, sizes and device ids in one string (call-signature caches; memoized). */
  get cacheKey(): string {
    return (this.#key ??= `${this.toString()}@${this.deviceIds.join(",")}`);
  }
}

/** jax.make_mesh(shape, axisNames): the first prod(shape) devices, in order. */
export function makeMesh(
  shape: readonly number[],
  axisNames: readonly string[],
  opts: { devices?: Device[] } = {},
): Mesh {
  checkArity("makeMesh", arguments, 3, "makeMesh(axisShapes, axisNames, { devices })");
  checkOptions("makeMesh", opts, ["devices"], "makeMesh(axisShapes, axisNames, { devices })");
  const devs = opts.devices ?? devices();
  const n = shape.reduce((a, b) => a * b, 1);
  if (n > devs.length)
    throw new Error(
      `makeMesh: mesh shape (${shape.join(", ")}) needs ${n} devices but only ${devs.length} exist (set config numCpuDevices or JAXTS_NUM_CPU_DEVICES)`,
    );
  const build = (k: number, off: number): Nested => {
    if (k === shape.length) return devs[off];
    const stride = shape.slice(k + 1).reduce((a, b) => a * b, 1);
    return Array.from({ length: shape[k] }, (_, i) => build(k + 1, off + i * stride));
  };
  return new Mesh(build(0, 0), axisNames);
}
