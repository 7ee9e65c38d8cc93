/** @file The abstract Array type shared by concrete arrays and tracers, with JAX's method forms. */
import type { ShapedArray } from "./aval.js";
import type { Complex, DType, TypedArray } from "./dtype.js";

const JSArray = globalThis.Array;

/** A value a jnp function accepts: an Array or a JS scalar (weakly typed, as in JAX). */
export type ArrayLike = Array | number | boolean | bigint;
/** A JS scalar or nested JS array that `jnp.array` accepts. */
export type NestedValue = number | boolean | bigint | NestedValue[] | TypedArray | Array;

/** One index entry: integer, slice, null (newaxis), "..." (ellipsis), an integer/boolean Array or nested list. */
export type Slice = { start?: number | null; stop?: number | null; step?: number | null };
export type Index = number | string | Slice | null | Array | number[] | boolean[];

export type AxisOpt = number | number[] | null;
export interface ReduceOpts {
  axis?: AxisOpt;
  keepdims?: boolean;
  where?: ArrayLike;
  dtype?: DType;
  initial?: number;
}

/** Methods are implemented by the numpy layer, which registers them at import (core may not import it). */
export interface ArrayMethodTable {
  [name: string]: (self: Array, ...args: never[]) => unknown;
}
let METHODS: ArrayMethodTable | null = null;
export function registerArrayMethods(t: ArrayMethodTable): void {
  METHODS = t;
}
function m(name: string): (self: Array, ...args: unknown[]) => unknown {
  const f = METHODS?.[name];
  if (!f) throw new Error(`Array.${name}: method table not registered (import "jaxts" rather than a core module)`);
  return f as unknown as (self: Array, ...args: unknown[]) => unknown;
}

/** Sharding accessors are provided by the parallel layer, which registers them at import (core may not import it). */
export interface ShardingHooks {
  sharding(x: Array): unknown;
  addressableShards(x: Array): unknown[];
  isFullyReplicated(x: Array): boolean;
}
let SHARDING: ShardingHooks | null = null;
export function registerShardingHooks(h: ShardingHooks): void {
  SHARDING = h;
}
function sh(): ShardingHooks {
  if (!SHARDING) throw new Error('Array.sharding: the parallel layer is not loaded (import "jaxts")');
  return SHARDING;
}

/** The `x.at(idx)` helper for functional updates (JAX's x.at[idx]). */
export interface AtIndexer {
  get(opts?: { mode?: "clip" | "fill" | "promise_in_bounds"; fillValue?: number }): Array;
  set(v: ArrayLike): Array;
  add(v: ArrayLike): Array;
  subtract(v: ArrayLike): Array;
  multiply(v: ArrayLike): Array;
  divide(v: ArrayLike): Array;
  power(v: ArrayLike): Array;
  min(v: ArrayLike): Array;
  max(v: ArrayLike): Array;
}

/**
 * jax.Array: the common base of concrete arrays (ArrayImpl) and tracers. Immutable.
 * Indexing: `x.get(0, "1:3", null, "...", idxArray)`; a slice is "start:stop:step" or {start, stop, step}.
 */
export abstract class Array {
  abstract get aval(): ShapedArray;
  get shape(): number[] {
    return [...this.aval.shape];
  }
  get dtype(): DType {
    return this.aval.dtype;
  }
  get ndim(): number {
    return this.aval.shape.length;
  }
  get size(): number {
    return this.aval.size;
  }
  get weakType(): boolean {
    return this.aval.weakType;
  }

  abstract dataSync(): TypedArray;
  abstract tolist(): unknown;
  abstract item(): number | boolean | bigint | Complex;
  /** dataSync() once the device work producing the array finished, awaited without blocking the JS thread. */
  async data(): Promise<TypedArray> {
    await this.ready();
    return this.dataSync();
  }
  /** JAX's block_until_ready: waits (blocking the thread) for the device work producing the array; throws its error. */
  blockUntilReady(): this {
    return this;
  }
  /** blockUntilReady without blocking the JS thread: resolves to the array once its device work finished, rejects with its error. */
  async ready(): Promise<this> {
    return this.blockUntilReady();
  }
  dispose(): void {}
  [Symbol.dispose](): void {
    this.dispose();
  }

  // ---- method forms (numpy layer) ----
  add(y: ArrayLike): Array {
    return m("add")(this, y) as Array;
  }
  sub(y: ArrayLike): Array {
    return m("subtract")(this, y) as Array;
  }
  mul(y: ArrayLike): Array {
    return m("multiply")(this, y) as Array;
  }
  div(y: ArrayLike): Array {
    return m("divide")(this, y) as Array;
  }
  pow(y: ArrayLike): Array {
    return m("power")(this, y) as Array;
  }
  mod(y: ArrayLike): Array {
    return m("mod")(this, y) as Array;
  }
  neg(): Array {
    return m("negative")(this) as Array;
  }
  abs(): Array {
    return m("abs")(this) as Array;
  }
  exp(): Array {
    return m("exp")(this) as Array;
  }
  log(): Array {
    return m("log")(this) as Array;
  }
  sqrt(): Array {
    return m("sqrt")(this) as Array;
  }
  tanh(): Array {
    return m("tanh")(this) as Array;
  }
  sin(): Array {
    return m("sin")(this) as Array;
  }
  cos(): Array {
    return m("cos")(this) as Array;
  }
  round(decimals?: number): Array {
    return m("round")(this, decimals) as Array;
  }
  floor(): Array {
    return m("floor")(this) as Array;
  }
  ceil(): Array {
    return m("ceil")(this) as Array;
  }
  eq(y: ArrayLike): Array {
    return m("equal")(this, y) as Array;
  }
  ne(y: ArrayLike): Array {
    return m("not_equal")(this, y) as Array;
  }
  lt(y: ArrayLike): Array {
    return m("less")(this, y) as Array;
  }
  le(y: ArrayLike): Array {
    return m("less_equal")(this, y) as Array;
  }
  gt(y: ArrayLike): Array {
    return m("greater")(this, y) as Array;
  }
  ge(y: ArrayLike): Array {
    return m("greater_equal")(this, y) as Array;
  }
  matmul(y: ArrayLike): Array {
    return m("matmul")(this, y) as Array;
  }
  dot(y: ArrayLike): Array {
    return m("dot")(this, y) as Array;
  }
  astype(dtype: DType): Array {
    return m("astype")(this, dtype) as Array;
  }
  reshape(...shape: (number | number[])[]): Array {
    const s = shape.length === 1 && JSArray.isArray(shape[0]) ? (shape[0] as number[]) : (shape as number[]);
    return m("reshape")(this, s) as Array;
  }
  transpose(...axes: (number | number[])[]): Array {
    const a =
      axes.length === 0
        ? null
        : axes.length === 1 && JSArray.isArray(axes[0])
          ? (axes[0] as number[])
          : (axes as number[]);
    return m("transpose")(this, a) as Array;
  }
  get T(): Array {
    return m("transpose")(this, null) as Array;
  }
  get mT(): Array {
    return m("matrix_transpose")(this) as Array;
  }
  swapaxes(a: number, b: number): Array {
    return m("swapaxes")(this, a, b) as Array;
  }
  squeeze(axis?: AxisOpt): Array {
    return m("squeeze")(this, axis) as Array;
  }
  flatten(): Array {
    return m("ravel")(this) as Array;
  }
  ravel(): Array {
    return m("ravel")(this) as Array;
  }
  sum(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts): Array {
    return m("sum")(this, axis, opts) as Array;
  }
  prod(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts): Array {
    return m("prod")(this, axis, opts) as Array;
  }
  mean(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts): Array {
    return m("mean")(this, axis, opts) as Array;
  }
  max(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts): Array {
    return m("max")(this, axis, opts) as Array;
  }
  min(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts): Array {
    return m("min")(this, axis, opts) as Array;
  }
  all(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts): Array {
    return m("all")(this, axis, opts) as Array;
  }
  any(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts): Array {
    return m("any")(this, axis, opts) as Array;
  }
  var(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts & { ddof?: number }): Array {
    return m("var")(this, axis, opts) as Array;
  }
  std(axis?: AxisOpt | ReduceOpts, opts?: ReduceOpts & { ddof?: number }): Array {
    return m("std")(this, axis, opts) as Array;
  }
  argmax(axis?: number | { axis?: number; keepdims?: boolean }): Array {
    return m("argmax")(this, axis) as Array;
  }
  argmin(axis?: number | { axis?: number; keepdims?: boolean }): Array {
    return m("argmin")(this, axis) as Array;
  }
  cumsum(axis?: number): Array {
    return m("cumsum")(this, axis) as Array;
  }
  cumprod(axis?: number): Array {
    return m("cumprod")(this, axis) as Array;
  }
  sort(axis?: number): Array {
    return m("sort")(this, axis) as Array;
  }
  argsort(axis?: number): Array {
    return m("argsort")(this, axis) as Array;
  }
  clip(min?: ArrayLike | null, max?: ArrayLike | null): Array {
    return m("clip")(this, min, max) as Array;
  }
  take(indices: ArrayLike | number[], axis?: number): Array {
    return m("take")(this, indices, axis) as Array;
  }
  copy(): Array {
    return m("copy")(this) as Array;
  }
  diagonal(offset?: number, axis1?: number, axis2?: number): Array {
    return m("diagonal")(this, offset, axis1, axis2) as Array;
  }
  /** The same bytes read as dtype (NumPy's / JAX's view); an itemsize change regroups the last axis. */
  view(dtype?: DType | null): Array {
    return m("view")(this, dtype) as Array;
  }
  /** JS's number conversion (`+x`, `Number(x)`, `x * 2` on a 0-d array), like Python's float(x): only a 0-d array has one. */
  valueOf(): number {
    if (this.ndim !== 0) {
      throw new TypeError(
        `Array: only a 0-d array converts to a JS number (+x, Number(x), arithmetic operators), got shape [${this.shape}] (${this.aval.str()}); use jnp functions for array arithmetic, x.item() for one element or x.tolist() for all`,
      );
    }
    const v = this.item();
    if (typeof v === "object")
      throw new TypeError(
        `Array: a complex array (${this.aval.str()}) has no JS number value (Python's float() of a complex raises too); use jnp.real / jnp.imag, or x.item() for {re, im}`,
      );
    return typeof v === "boolean" ? (v ? 1 : 0) : Number(v);
  }
  /** String contexts (`${x}`, String(x)) give the repr; numeric and default contexts (+x, x + 1) give valueOf(). */
  [Symbol.toPrimitive](hint: "number" | "string" | "default"): number | string {
    return hint === "string" ? this.toString() : this.valueOf();
  }
  /** The array's sharding (a SingleDeviceSharding unless placed with devicePut or made sharded). */
  get sharding(): unknown {
    return sh().sharding(this);
  }
  /** One entry per device holding part of the array: { device, index, replicaId, data }. */
  get addressableShards(): unknown[] {
    return sh().addressableShards(this);
  }
  get isFullyReplicated(): boolean {
    return sh().isFullyReplicated(this);
  }
  /** Iterates over the leading axis, like iterating a NumPy/JAX array. */
  *[Symbol.iterator](): Iterator<Array> {
    if (this.ndim === 0) throw new TypeError(`iteration over a 0-d array (${this.aval.str()})`);
    for (let i = 0; i < this.shape[0]; i++) yield this.get(i);
  }
  /** Basic and advanced indexing, like x[...] in JAX. */
  get(...idx: Index[]): Array {
    return m("getitem")(this, idx) as Array;
  }
  /** Functional updates, like JAX's x.at[idx]. */
  at(...idx: Index[]): AtIndexer {
    return m("at")(this, idx) as AtIndexer;
  }
}
