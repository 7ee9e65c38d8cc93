/** @file PRNG keys for threefry2x32: typed key arrays (PRNGKeyArray), seeding, split, fold_in, key data and random bits, all built on the threefry2x32 primitive so they trace under jit/vmap. */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { config } from "../core/config.js";
import { type DType, defaultUIntDType, isInteger, isUnsigned } from "../core/dtype.js";
import { shapeStr } from "../core/shape.js";
import { array2string } from "../core/format.js";
import { Tracer, describe } from "../core/trace.js";
import { registerNode } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { threefry2x32 as threefryBind } from "../primitives/random.js";
import { type SeedDtype, seedToKey } from "./threefry-kernel.js";
import {
  type Shape,
  type ShapeArg,
  canonicalShape,
  constant,
  index0,
  parseArgs,
  sizeOf,
  stack,
  toDtype,
  uintOf,
  userDtype,
} from "./util.js";

const JSArray = globalThis.Array;

/** The name of the only PRNG implementation (JAX's default). */
export const THREEFRY_IMPL = "threefry2x32";

/**
 * A typed PRNG key array (JAX's `key<fry>` dtype): wraps the raw key data, a uint32 Array of shape
 * (*shape, 2). `random.key()`, and `split`/`foldIn` of typed keys, return these; `keyData` unwraps
 * and `wrapKeyData` wraps. It is a pytree node whose only leaf is the key data, so keys pass
 * through jit, vmap (mapping over leading key axes) and grad like arrays. Raw uint32 keys (from
 * `PRNGKey`) are accepted everywhere too, and functions return raw keys when given raw keys.
 */
export class PRNGKeyArray {
  /** The key data: a uint32 Array of shape (*shape, 2). */
  readonly data: Array;
  constructor(data: Array) {
    this.data = data;
  }
  readonly impl = THREEFRY_IMPL;
  /** The key array's shape (the data's shape without the trailing 2). */
  get shape(): number[] {
    return this.data.shape.slice(0, -1);
  }
  get ndim(): number {
    return this.data.ndim - 1;
  }
  get size(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }
  /** The key dtype's name, as JAX prints it. */
  get dtype(): string {
    return "key<fry>";
  }
  /** keys[i] along the leading key axis (negative i counts from the end). */
  get(i: number): PRNGKeyArray {
    if (this.ndim === 0) throw new TypeError("PRNGKeyArray.get: cannot index a scalar key array");
    const n = this.shape[0];
    const j = i < 0 ? i + n : i;
    if (!Number.isInteger(j) || j < 0 || j >= n)
      throw new RangeError(`PRNGKeyArray.get: index ${i} is out of bounds for axis 0 with size ${n}`);
    return new PRNGKeyArray(index0(this.data, j));
  }
  /** Iterates over the leading key axis, so `const [k1, k2] = random.split(key)` works. */
  *[Symbol.iterator](): IterableIterator<PRNGKeyArray> {
    for (let i = 0; i < (this.shape[0] ?? 0); i++) yield this.get(i);
  }
  reshape(...shape: (number | number[])[]): PRNGKeyArray {
    const s = shape.length === 1 && JSArray.isArray(shape[0]) ? (shape[0] as number[]) : (shape as number[]);
    const known = s.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
    const full = s.map((d) => (d === -1 ? this.size / known : d));
    return new PRNGKeyArray(ops.reshape(this.data, [...full, 2]));
  }
  flatten(): PRNGKeyArray {
    return this.reshape([this.size]);
  }
  ravel(): PRNGKeyArray {
    return this.flatten();
  }
  /** Elementwise key equality (keys are equal when both data words are). */
  eq(other: PRNGKeyArray): Array {
    return ops.reduceAnd(ops.eq(this.data, other.data), [this.data.ndim - 1]);
  }
  toString(): string {
    const s = this.shape;
    const shape = `(${s.join(", ")}${s.length === 1 ? "," : ""})`;
    if (this.data instanceof Tracer) return `Traced<key<fry>[${s.join(",")}]>`;
    // JAX prints str() of the uint32 key data: NumPy's array2string with its default ' ' separator
    const words = (this.data.tolist() as unknown[]).flat(Infinity) as number[];
    const data = array2string(this.data.shape, this.data.dtype, (i) => words[i], {
      separator: " ",
      prefix: "",
      suffix: "",
    });
    return `Array(${shape}, dtype=key<fry>) overlaying:\n${data}`;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}
registerNode(PRNGKeyArray, {
  flatten: (k) => [[k.data], null],
  unflatten: (_aux, [d]) => new PRNGKeyArray(d as Array),
});

/** Anything the samplers accept as a key: a typed key array or raw uint32 key data of shape (..., 2). */
export type KeyLike = PRNGKeyArray | Array;

/** The checked key data of a key argument (JAX's _check_prng_key); `wrapped` is true for raw uint32 keys. */
export function checkKey(fn: string, key: unknown, allowBatched = false): { data: Array; wrapped: boolean } {
  let data: Array, wrapped: boolean;
  if (key instanceof PRNGKeyArray) {
    data = key.data;
    wrapped = false;
    if (!(data instanceof Array) || data.dtype !== "uint32" || data.shape[data.ndim - 1] !== 2) {
      throw new TypeError(
        `${fn}: invalid key array: its key data must be a uint32 array of shape (..., 2), got ${describe(data)}`,
      );
    }
  } else if (key instanceof Array) {
    if (key.dtype !== "uint32" || key.ndim < 1 || key.shape[key.ndim - 1] !== 2) {
      throw new TypeError(
        `${fn}: invalid PRNG key: expected a key from random.key()/PRNGKey() — a typed key array, or raw key data of dtype uint32 ` +
          `and shape (..., 2) — but got an array of dtype ${key.dtype} and shape ${shapeStr(key.shape)}`,
      );
    }
    data = key;
    wrapped = true;
  } else {
    throw new TypeError(
      `${fn}: unexpected PRNG key type: ${describe(key)}; create keys with random.key(seed) or random.PRNGKey(seed)`,
    );
  }
  if (!allowBatched && data.ndim > 1) {
    throw new Error(
      `${fn} accepts a single key, but was given a key array of shape ${shapeStr(data.shape.slice(0, -1))} != (). Use vmap for batching.`,
    );
  }
  return { data, wrapped };
}

/** JAX's _return_prng_keys: raw key data for raw inputs, typed keys for typed inputs. */
export const returnKeys = (wrapped: boolean, data: Array): KeyLike => (wrapped ? data : new PRNGKeyArray(data));

/** Word i (0 or 1) of key data (..., 2), as an array of shape (...). */
export function keyWord(data: Array, i: 0 | 1): Array {
  const start = data.shape.map((_, k) => (k === data.ndim - 1 ? i : 0));
  const limit = data.shape.map((d, k) => (k === data.ndim - 1 ? i + 1 : d));
  return ops.reshape(ops.slice(data, start, limit), data.shape.slice(0, -1));
}

// ---------------------------------------------------------------- seeds
function resolveImpl(fn: string, impl: unknown): void {
  if (impl === undefined || impl === null || impl === THREEFRY_IMPL) return;
  throw new Error(
    `${fn}: unrecognized PRNG implementation ${JSON.stringify(impl)}. Did you mean one of: "${THREEFRY_IMPL}"?`,
  );
}

/** threefry_seed: key data [uint32(seed >> 32), uint32(seed & 0xFFFFFFFF)] for a scalar integer seed. */
function seedData(fn: string, seed: unknown, seedDtype?: SeedDtype): Array {
  if (seed instanceof PRNGKeyArray) throw new TypeError(`${fn} accepts a scalar seed, but was given a PRNG key.`);
  if (typeof seed === "number" || typeof seed === "bigint") {
    if (typeof seed === "number" && !Number.isInteger(seed))
      throw new TypeError(`${fn}: PRNG key seed must be an integer; got ${seed}`);
    // jax_random_seed_offset is added to the seed before it becomes a key (JAX's random_seed)
    const off = config.randomSeedOffset;
    const d = seedToKey(off ? BigInt(seed) + BigInt(off) : seed, config.enableX64, seedDtype ?? "int");
    return new ArrayImpl(new ShapedArray([2], "uint32", false), d);
  }
  if (!(seed instanceof Array))
    throw new TypeError(`${fn}: PRNG key seed must be an integer or an integer Array; got ${describe(seed)}`);
  if (seed.ndim !== 0)
    throw new TypeError(
      `${fn} accepts a scalar seed, but was given an array of shape ${shapeStr(seed.shape)} != (). Use vmap for batching`,
    );
  if (!isInteger(seed.dtype))
    throw new TypeError(`${fn}: PRNG key seed must be an integer; got an array of dtype ${seed.dtype}`);
  // computed in the seed's dtype: a logical shift by 32 of a 32-bit (or narrower) seed gives 0
  const s0 = seed.weakType ? ops.convert(seed, seed.dtype, false) : seed;
  const s = config.randomSeedOffset ? ops.add(s0, constant(s0.dtype, config.randomSeedOffset)) : s0;
  const hi = toDtype(ops.shiftRightLogical(s, constant(s.dtype, 32)), "uint32");
  const lo = toDtype(s, "uint32");
  return ops.concatenate([ops.reshape(hi, [1]), ops.reshape(lo, [1])], 0);
}

export interface KeyOptions {
  impl?: string;
  dtype?: string;
}

/** random.key(seed): a scalar typed key. A JS number/bigint seed is JAX's Python int (np.int64, canonicalized). */
export function key(seed: number | bigint | Array, opts: KeyOptions = {}): PRNGKeyArray {
  checkArity("key", arguments, 2, "random.key(seed, { impl })");
  checkOptions("key", opts, ["impl", "dtype"], "random.key(seed, { impl })");
  resolveImpl("key", opts.impl ?? opts.dtype);
  return new PRNGKeyArray(seedData("key", seed));
}

/** random.PRNGKey(seed): a legacy raw key, uint32 data of shape (2,). */
export function PRNGKey(seed: number | bigint | Array, opts: { impl?: string } = {}): Array {
  checkArity("PRNGKey", arguments, 2, "random.PRNGKey(seed, { impl })");
  checkOptions("PRNGKey", opts, ["impl"], "random.PRNGKey(seed, { impl })");
  resolveImpl("PRNGKey", opts.impl);
  return seedData("PRNGKey", seed);
}

// ---------------------------------------------------------------- hashing, split, fold_in
/**
 * JAX's threefry_2x32 hash of a uint32 count array under key words (k0, k1): the flattened
 * counts are split in halves (an odd length is padded with one 0), the block function pairs
 * count[j] with count[h + j], and the outputs are concatenated back (trimmed) to count's shape.
 */
export function threefryHash(k0: Array, k1: Array, count: Array): Array {
  const n = count.size;
  if (n === 0) return count;
  let flat = ops.reshape(count, [n]);
  const odd = n % 2;
  if (odd) flat = ops.concatenate([flat, ops.full([1], 0, "uint32")], 0);
  const h = (n + odd) / 2;
  const x0 = ops.slice(flat, [0], [h]);
  const x1 = ops.slice(flat, [h], [2 * h]);
  const [y0, y1] = threefryBind(k0, k1, x0, x1);
  let out = ops.concatenate([y0, y1], 0);
  if (odd) out = ops.slice(out, [0], [n]);
  return ops.reshape(out, count.shape);
}

/** iota_2x32_shape: the (hi, lo) uint32 words of a row-major uint64 iota of `shape`. */
function iota2x32(shape: Shape): [Array, Array] {
  const n = sizeOf("iota_2x32_shape", shape);
  const hi = ops.full(shape, 0, "uint32");
  if (shape.length === 0) return [hi, hi];
  if (n > 0xffffffff)
    throw new RangeError(`random: counter space of ${n} elements exceeds 2**32 (not representable here)`);
  return [hi, ops.reshape(ops.iota("uint32", [n], 0), shape)];
}

/** split of scalar key data (2,) into key data of shape (*shape, 2), per jax_threefry_partitionable. */
export function splitData(data: Array, shape: Shape): Array {
  const k0 = keyWord(data, 0),
    k1 = keyWord(data, 1);
  const n = sizeOf("split", shape);
  if (n === 0) return ops.full([...shape, 2], 0, "uint32");
  if (config.threefryPartitionable) {
    const [c0, c1] = iota2x32(shape);
    const [y0, y1] = threefryBind(k0, k1, c0, c1);
    return stack([y0, y1], shape.length);
  }
  const out = threefryHash(k0, k1, ops.iota("uint32", [2 * n], 0));
  return ops.reshape(out, [...shape, 2]);
}

/** Splits key data into `n` keys and returns them as a list of (2,) key data. */
export function splitList(data: Array, n: number): Array[] {
  const keys = splitData(data, [n]);
  return JSArray.from({ length: n }, (_, i) => index0(keys, i));
}

/** fold_in of scalar key data with a uint32 scalar: block(key, 0, data). */
export function foldInData(data: Array, msg: Array): Array {
  const [y0, y1] = threefryBind(keyWord(data, 0), keyWord(data, 1), ops.full([], 0, "uint32"), msg);
  return stack([y0, y1], y0.ndim);
}

/** random.split(key, num = 2): `num` keys (or a shape of keys) along new leading axes. */
export function split(key: KeyLike, num: ShapeArg = 2): KeyLike {
  const { data, wrapped } = checkKey("split", key);
  const shape = canonicalShape("split", num);
  return returnKeys(wrapped, splitData(data, shape));
}

/** random.foldIn(key, data): a new key from a key and a 32-bit integer (wrapped to uint32). */
export function foldIn(key: KeyLike, data: number | bigint | Array): KeyLike {
  const { data: kd, wrapped } = checkKey("foldIn", key);
  let msg: Array;
  if (typeof data === "number" || typeof data === "bigint") {
    if (typeof data === "number" && !Number.isInteger(data))
      throw new TypeError(`foldIn: data must be an integer, got ${data}`);
    msg = constant("uint32", Number(BigInt.asUintN(32, BigInt(data))));
  } else if (data instanceof Array) {
    if (data.ndim !== 0)
      throw new TypeError(
        `foldIn accepts a scalar, but was given an array of shape ${shapeStr(data.shape)} != (). Use vmap for batching.`,
      );
    if (!isInteger(data.dtype) && data.dtype !== "bool")
      throw new TypeError(`foldIn: data must be an integer, got an array of dtype ${data.dtype}`);
    msg = toDtype(data, "uint32");
  } else {
    throw new TypeError(`foldIn: data must be an integer or an integer Array, got ${describe(data)}`);
  }
  return returnKeys(wrapped, foldInData(kd, msg));
}

/** random.keyData(keys): the uint32 data (*shape, 2) underlying keys (raw keys pass through). */
export function keyData(keys: KeyLike): Array {
  return checkKey("keyData", keys, true).data;
}

/** random.wrapKeyData(data): a typed key array over uint32 key data of shape (..., 2). */
export function wrapKeyData(data: Array, opts: KeyOptions = {}): PRNGKeyArray {
  resolveImpl("wrapKeyData", opts.impl ?? opts.dtype);
  if (!(data instanceof Array))
    throw new TypeError(`wrapKeyData: expected a uint32 Array of shape (..., 2), got ${describe(data)}`);
  if (data.dtype !== "uint32" || data.ndim < 1 || data.shape[data.ndim - 1] !== 2) {
    throw new TypeError(
      `wrapKeyData: threefry2x32 key data must have dtype uint32 and shape (..., 2), got dtype ${data.dtype} and shape ${shapeStr(data.shape)}`,
    );
  }
  return new PRNGKeyArray(data);
}

/** random.keyImpl(keys): the PRNG implementation's name. */
export function keyImpl(keys: KeyLike): string {
  checkKey("keyImpl", keys, true);
  return THREEFRY_IMPL;
}

/** random.clone(key): the identity outside key-reuse checking. */
export function clone<K extends KeyLike>(key: K): K {
  checkKey("clone", key, true);
  return key;
}

// ---------------------------------------------------------------- random bits
/** random_bits on scalar key data: uint{width} bits of `shape`, per jax_threefry_partitionable. */
export function randomBits(data: Array, width: 8 | 16 | 32 | 64, shape: Shape): Array {
  const dtype = uintOf(width);
  const size = sizeOf("bits", shape);
  if (size === 0) return ops.full(shape, 0, dtype);
  const k0 = keyWord(data, 0),
    k1 = keyWord(data, 1);
  if (config.threefryPartitionable) {
    const [c0, c1] = iota2x32(shape);
    const [y0, y1] = threefryBind(k0, k1, c0, c1);
    if (width === 64) return ops.or(ops.shiftLeft(toDtype(y0, dtype), constant(dtype, 32)), toDtype(y1, dtype));
    const x = ops.xor(y0, y1);
    return width === 32 ? x : toDtype(x, dtype);
  }
  const maxCount = Math.ceil((width * size) / 32);
  if (maxCount >= 0xffffffff) throw new RangeError("bits: legacy random bits of 2**32 or more words are not supported");
  const words = threefryHash(k0, k1, ops.iota("uint32", [maxCount], 0));
  if (width === 32) return ops.reshape(words, shape);
  if (width === 64) {
    const hi = toDtype(ops.slice(words, [0], [size]), dtype);
    const lo = toDtype(ops.slice(words, [size], [2 * size]), dtype);
    return ops.reshape(ops.or(ops.shiftLeft(hi, constant(dtype, 32)), lo), shape);
  }
  // 8/16 bits: the little-endian sub-words of each word (words.view(uint8/16)), first `size` of them
  const per = 32 / width;
  const mask = constant("uint32", width === 8 ? 0xff : 0xffff);
  const subs = JSArray.from({ length: per }, (_, j) =>
    ops.and(ops.shiftRightLogical(words, constant("uint32", width * j)), mask),
  );
  const flat = ops.reshape(stack(subs, 1), [maxCount * per]);
  return ops.reshape(toDtype(ops.slice(flat, [0], [size]), dtype), shape);
}

export interface BitsOptions {
  shape?: ShapeArg;
  dtype?: DType;
}
/** random.bits(key, shape = [], dtype = default uint): uniform random bits as unsigned integers. */
export function bits(
  key: KeyLike,
  shape?: ShapeArg | BitsOptions,
  dtype?: DType | BitsOptions,
  options?: BitsOptions,
): Array {
  const { data } = checkKey("bits", key);
  const p = parseArgs("bits", [shape, dtype, options], ["shape", "dtype"], {
    shape: [] as ShapeArg,
    dtype: null as DType | null,
  });
  const d = userDtype("bits", p.dtype, defaultUIntDType());
  if (!isUnsigned(d)) throw new TypeError(`dtype argument to \`bits\` must be an unsigned int dtype, got ${d}`);
  const width = Number(d.slice(4)) as 8 | 16 | 32 | 64;
  return randomBits(data, width, canonicalShape("bits", p.shape));
}

/**
 * random.threefry2x32(keyPair, count): the raw Threefry-2x32 hash (JAX's prng.threefry_2x32) of a
 * uint32 count array under a key pair (a uint32 (2,) array, or two uint32 scalars/numbers).
 */
export function threefry2x32(keyPair: Array | readonly [Array | number, Array | number], count: Array): Array {
  let k0: Array, k1: Array;
  const word = (w: Array | number, i: number): Array => {
    if (typeof w === "number") return constant("uint32", w >>> 0);
    if (!(w instanceof Array) || w.dtype !== "uint32" || w.ndim !== 0)
      throw new TypeError(`threefry2x32: key word ${i} must be a uint32 scalar, got ${describe(w)}`);
    return w;
  };
  if (keyPair instanceof Array) {
    if (keyPair.dtype !== "uint32" || keyPair.ndim !== 1 || keyPair.shape[0] !== 2) {
      throw new TypeError(
        `threefry2x32 requires a uint32 key pair of shape (2,), got dtype ${keyPair.dtype} and shape ${shapeStr(keyPair.shape)}`,
      );
    }
    k0 = keyWord(keyPair, 0);
    k1 = keyWord(keyPair, 1);
  } else if (JSArray.isArray(keyPair) && keyPair.length === 2) {
    k0 = word(keyPair[0], 0);
    k1 = word(keyPair[1], 1);
  } else {
    throw new TypeError(
      `threefry2x32: keyPair must be a uint32 Array of shape (2,) or a pair of uint32 scalars, got ${describe(keyPair)}`,
    );
  }
  if (!(count instanceof Array) || count.dtype !== "uint32")
    throw new TypeError(`threefry2x32 requires uint32 counts, got ${describe(count)}`);
  return threefryHash(k0, k1, count);
}
