/** @file PartitionSpec (P), NamedSharding and SingleDeviceSharding: which block of a global array each device holds. */
import type { Device } from "../core/array-impl.js";
import { Mesh } from "./mesh.js";

export type SpecEntry = string | readonly string[] | null;

/** A PartitionSpec: one entry per array dimension (null = replicated, a name or names = split over those mesh axes). */
export class PartitionSpecImpl {
  readonly entries: readonly SpecEntry[];
  constructor(...entries: SpecEntry[]) {
    for (const e of entries) {
      if (e !== null && typeof e !== "string" && !(Array.isArray(e) && e.every((x) => typeof x === "string"))) {
        throw new TypeError(
          `PartitionSpec: each entry must be null, an axis name or an array of axis names, got ${JSON.stringify(e)}`,
        );
      }
    }
    const used = entries.flatMap((e) => (e === null ? [] : typeof e === "string" ? [e] : [...e]));
    if (new Set(used).size !== used.length)
      throw new Error(`PartitionSpec: a mesh axis is used more than once in (${used.join(", ")})`);
    this.entries = Object.freeze(entries.map((e) => (Array.isArray(e) ? Object.freeze([...e]) : e)) as SpecEntry[]);
  }
  get length(): number {
    return this.entries.length;
  }
  /** Mesh axis names of dimension d (empty when replicated or beyond the spec). */
  names(d: number): string[] {
    const e = this.entries[d];
    return e === null || e === undefined ? [] : typeof e === "string" ? [e] : [...e];
  }
  toString(): string {
    return `PartitionSpec(${this.entries.map((e) => (e === null ? "None" : typeof e === "string" ? `'${e}'` : `(${e.map((x) => `'${x}'`).join(", ")}${e.length === 1 ? "," : ""})`)).join(", ")})`;
  }
}
type SpecCtor = typeof PartitionSpecImpl & ((...entries: SpecEntry[]) => PartitionSpecImpl);
/** Callable with or without `new`, like JAX's tuple subclass. */
function callable<C extends new (...a: never[]) => object>(
  cls: C,
): C & ((...a: ConstructorParameters<C>) => InstanceType<C>) {
  return new Proxy(cls, { apply: (target, _this, args) => new target(...(args as never[])) }) as C &
    ((...a: ConstructorParameters<C>) => InstanceType<C>);
}
export const PartitionSpec: SpecCtor = callable(PartitionSpecImpl);
export const P = PartitionSpec;
export type PartitionSpec = PartitionSpecImpl;

/** [start, stop) per dimension. */
export type Index = [number, number][];

export interface Sharding {
  readonly deviceSet: readonly Device[];
  shardShape(globalShape: readonly number[]): number[];
  devicesIndicesMap(globalShape: readonly number[]): Map<Device, Index>;
  readonly isFullyReplicated: boolean;
}

export class NamedShardingImpl implements Sharding {
  constructor(
    readonly mesh: Mesh,
    readonly spec: PartitionSpecImpl = new PartitionSpecImpl(),
  ) {
    if (!(mesh instanceof Mesh)) throw new TypeError("NamedSharding: the first argument must be a Mesh");
    if (!(spec instanceof PartitionSpecImpl))
      throw new TypeError("NamedSharding: the second argument must be a PartitionSpec (P(...))");
    for (let d = 0; d < spec.length; d++)
      for (const n of spec.names(d)) {
        if (!mesh.axisNames.includes(n))
          throw new Error(`NamedSharding: ${spec} refers to axis ${JSON.stringify(n)} which is not in ${mesh}`);
      }
  }
  get deviceSet(): readonly Device[] {
    return this.mesh.flatDevices;
  }
  get isFullyReplicated(): boolean {
    return this.spec.entries.every((_, d) => this.spec.names(d).every((n) => this.mesh.axisSize(n) === 1));
  }
  private check(fn: string, shape: readonly number[]): void {
    if (this.spec.length > shape.length)
      throw new Error(
        `${fn}: ${this.spec} has ${this.spec.length} entries but the array has rank ${shape.length} (shape (${shape.join(", ")}))`,
      );
    shape.forEach((n, d) => {
      const parts = this.parts(d);
      if (n % parts !== 0)
        throw new Error(
          `${fn}: dimension ${d} of size ${n} is not divisible by ${parts} (mesh axes ${this.spec.names(d).join(", ")} of ${this.mesh}) for ${this.spec}`,
        );
    });
  }
  /** Number of blocks dimension d is split into. */
  parts(d: number): number {
    return this.spec.names(d).reduce((a, n) => a * this.mesh.axisSize(n), 1);
  }
  shardShape(globalShape: readonly number[]): number[] {
    this.check("NamedSharding.shardShape", globalShape);
    return globalShape.map((n, d) => n / this.parts(d));
  }
  /** Block index along dimension d for a device at mesh coordinates c (the first named axis is major). */
  private block(d: number, c: readonly number[]): number {
    let b = 0;
    for (const n of this.spec.names(d)) {
      const i = this.mesh.axisNames.indexOf(n);
      b = b * this.mesh.dims[i] + c[i];
    }
    return b;
  }
  devicesIndicesMap(globalShape: readonly number[]): Map<Device, Index> {
    const sh = this.shardShape(globalShape);
    const m = new Map<Device, Index>();
    this.mesh.flatDevices.forEach((dev, k) => {
      const c = this.mesh.coords(k);
      m.set(
        dev,
        globalShape.map((_, d) => {
          const b = this.block(d, c);
          return [b * sh[d], (b + 1) * sh[d]] as [number, number];
        }),
      );
    });
    return m;
  }
  /** Replica id of each device (row-major over mesh axes the spec does not use), in mesh order. */
  replicaIds(): number[] {
    const used = new Set(this.spec.entries.flatMap((_, d) => this.spec.names(d)));
    return this.mesh.flatDevices.map((_, k) => {
      const c = this.mesh.coords(k);
      let r = 0;
      this.mesh.dims.forEach((n, i) => {
        if (!used.has(this.mesh.axisNames[i])) r = r * n + c[i];
      });
      return r;
    });
  }
  toString(): string {
    return `NamedSharding(mesh=${this.mesh}, spec=${this.spec})`;
  }
}
export const NamedSharding = callable(NamedShardingImpl);
export type NamedSharding = NamedShardingImpl;

export class SingleDeviceShardingImpl implements Sharding {
  constructor(readonly device: Device) {}
  get deviceSet(): readonly Device[] {
    return [this.device];
  }
  get isFullyReplicated(): boolean {
    return true;
  }
  shardShape(globalShape: readonly number[]): number[] {
    return [...globalShape];
  }
  devicesIndicesMap(globalShape: readonly number[]): Map<Device, Index> {
    return new Map([[this.device, globalShape.map((n) => [0, n] as [number, number])]]);
  }
  toString(): string {
    return `SingleDeviceSharding(device=${this.device})`;
  }
}
export const SingleDeviceSharding = callable(SingleDeviceShardingImpl);
export type SingleDeviceSharding = SingleDeviceShardingImpl;

export { Mesh };
