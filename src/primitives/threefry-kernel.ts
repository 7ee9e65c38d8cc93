/** @file Pure-TypeScript Threefry-2x32 block function and JAX's key derivation (seed, split, fold_in, random_bits), bit-exact with jax.random; the reference/oracle for the threefry2x32 primitive. */

// Everything here works on raw uint32 key data (what jax.random.key_data returns):
// a key is a Uint32Array of length 2, a batch of n keys a Uint32Array of length 2n
// laid out row-major as (n, 2).
//
// Flag dependencies, exactly as in JAX:
//   * threefry2x32 block, fold_in: independent of every flag.
//   * seedToKey: depends on jax_enable_x64 (and on the seed's dtype).
//   * split, randomBits: depend on jax_threefry_partitionable (default true since JAX 0.5.0).

/** The Skein/Threefry key-schedule parity constant. */
export const THREEFRY_PARITY = 0x1bd11bda;

/** Rotation amounts of the two alternating 4-round groups. */
export const THREEFRY_ROTATIONS: readonly [readonly number[], readonly number[]] = [
  [13, 15, 26, 6],
  [17, 29, 16, 24],
];

/** Unsigned integer widths supported by random_bits. */
export type BitWidth = 8 | 16 | 32 | 64;

/** Array type returned by {@link randomBits} for each bit width. */
export type BitsArray<W extends BitWidth> = W extends 8
  ? Uint8Array
  : W extends 16
    ? Uint16Array
    : W extends 32
      ? Uint32Array
      : BigUint64Array;

/**
 * Dtype of the seed value handed to jax.random.key / PRNGKey.
 * "int" is a Python int (JAX converts it with np.int64 first).
 */
export type SeedDtype = "int" | "int32" | "uint32" | "int64" | "uint64";

const TWO32 = 4294967296;

/**
 * The 20-round Threefry-2x32 block on one counter pair, in int32 arithmetic
 * (callers convert with `>>> 0`). Writes the two output words into `out`.
 */
function block(k0: number, k1: number, c0: number, c1: number, out: Int32Array): void {
  const ks0 = k0 | 0;
  const ks1 = k1 | 0;
  const ks2 = (k0 ^ k1 ^ THREEFRY_PARITY) | 0;
  let x0 = (c0 + ks0) | 0;
  let x1 = (c1 + ks1) | 0;
  let v: number;

  // group 1: rotations 13,15,26,6 ; inject ks1, ks2 + 1
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 13) | (v >>> 19)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 15) | (v >>> 17)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 26) | (v >>> 6)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 6) | (v >>> 26)) ^ x0;
  x0 = (x0 + ks1) | 0;
  x1 = (x1 + ks2 + 1) | 0;

  // group 2: rotations 17,29,16,24 ; inject ks2, ks0 + 2
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 17) | (v >>> 15)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 29) | (v >>> 3)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 16) | (v >>> 16)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 24) | (v >>> 8)) ^ x0;
  x0 = (x0 + ks2) | 0;
  x1 = (x1 + ks0 + 2) | 0;

  // group 3: rotations 13,15,26,6 ; inject ks0, ks1 + 3
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 13) | (v >>> 19)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 15) | (v >>> 17)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 26) | (v >>> 6)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 6) | (v >>> 26)) ^ x0;
  x0 = (x0 + ks0) | 0;
  x1 = (x1 + ks1 + 3) | 0;

  // group 4: rotations 17,29,16,24 ; inject ks1, ks2 + 4
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 17) | (v >>> 15)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 29) | (v >>> 3)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 16) | (v >>> 16)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 24) | (v >>> 8)) ^ x0;
  x0 = (x0 + ks1) | 0;
  x1 = (x1 + ks2 + 4) | 0;

  // group 5: rotations 13,15,26,6 ; inject ks2, ks0 + 5
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 13) | (v >>> 19)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 15) | (v >>> 17)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 26) | (v >>> 6)) ^ x0;
  x0 = (x0 + x1) | 0;
  v = x1;
  x1 = ((v << 6) | (v >>> 26)) ^ x0;
  x0 = (x0 + ks2) | 0;
  x1 = (x1 + ks0 + 5) | 0;

  out[0] = x0;
  out[1] = x1;
}

const scratch = new Int32Array(2);

/**
 * Threefry-2x32 block function on a single counter pair: returns [y0, y1] as
 * unsigned 32-bit numbers.
 */
export function threefry2x32Block(k0: number, k1: number, x0: number, x1: number): [number, number] {
  block(k0, k1, x0, x1, scratch);
  return [scratch[0]! >>> 0, scratch[1]! >>> 0];
}

/**
 * The threefry2x32 primitive: elementwise 20-round Threefry-2x32 with key (k0, k1)
 * over counter pairs (x0[i], x1[i]). A length-1 counter array broadcasts against
 * the other one (as the primitive's broadcasting rule allows); otherwise lengths
 * must match.
 */
export function threefry2x32(k0: number, k1: number, x0: Uint32Array, x1: Uint32Array): [Uint32Array, Uint32Array] {
  const n = x0.length === x1.length ? x0.length : x0.length === 1 ? x1.length : x1.length === 1 ? x0.length : -1;
  if (n < 0) throw new Error(`threefry2x32: counter lengths ${x0.length} and ${x1.length} do not broadcast`);
  const b0 = x0.length === 1 && n !== 1;
  const b1 = x1.length === 1 && n !== 1;
  const y0 = new Uint32Array(n);
  const y1 = new Uint32Array(n);
  const out = new Int32Array(2);
  for (let i = 0; i < n; i++) {
    block(k0, k1, x0[b0 ? 0 : i]!, x1[b1 ? 0 : i]!, out);
    y0[i] = out[0]!;
    y1[i] = out[1]!;
  }
  return [y0, y1];
}

/**
 * Elementwise block over `n` outputs with per-element keys: operand j's element i is read at
 * `offs[j][i]` (a broadcast index map), at 0 when `offs[j]` is "first" (a broadcast single
 * element), or at i when `offs[j]` is null. Backs the threefry2x32 primitive's reference
 * implementation.
 */
export function threefry2x32Indexed(
  k0: Uint32Array,
  k1: Uint32Array,
  x0: Uint32Array,
  x1: Uint32Array,
  offs: readonly (Int32Array | null | "first")[],
  n: number,
): [Uint32Array, Uint32Array] {
  const y0 = new Uint32Array(n);
  const y1 = new Uint32Array(n);
  const out = new Int32Array(2);
  const at = (buf: Uint32Array, o: Int32Array | null | "first" | undefined, i: number): number =>
    buf[o === "first" ? 0 : o ? o[i]! : i]!;
  const [o0, o1, o2, o3] = offs;
  for (let i = 0; i < n; i++) {
    block(at(k0, o0, i), at(k1, o1, i), at(x0, o2, i), at(x1, o3, i), out);
    y0[i] = out[0]!;
    y1[i] = out[1]!;
  }
  return [y0, y1];
}

function checkKey(key: Uint32Array, what: string): void {
  if (key.length !== 2) throw new Error(`${what}: expected a threefry key of 2 uint32 words, got length ${key.length}`);
}

/**
 * JAX's `threefry_2x32(keypair, count)` hash on a flat uint32 count array: the
 * counts are split into halves x0 = count[:h], x1 = count[h:] (an odd-length
 * array is first padded with one 0), the block function is applied pairwise,
 * and the output is concat(y0, y1) trimmed back to the input length.
 */
export function threefryHash(key: Uint32Array, count: Uint32Array): Uint32Array {
  checkKey(key, "threefryHash");
  const len = count.length;
  const h = (len + 1) >>> 1; // half of the padded length
  const out = new Uint32Array(len);
  const tmp = new Int32Array(2);
  const k0 = key[0]!;
  const k1 = key[1]!;
  for (let j = 0; j < h; j++) {
    const c1 = h + j < len ? count[h + j]! : 0;
    block(k0, k1, count[j]!, c1, tmp);
    out[j] = tmp[0]!;
    if (h + j < len) out[h + j] = tmp[1]!;
  }
  return out;
}

/**
 * The legacy (non-partitionable) hash of iota(n): equals
 * `threefryHash(key, Uint32Array.from({length: n}, (_, i) => i))` without
 * materialising the counts. Requires n <= 0xffffffff.
 */
function hashIota(k0: number, k1: number, n: number, out: Uint32Array, offset: number): void {
  const h = Math.ceil(n / 2);
  const tmp = new Int32Array(2);
  for (let j = 0; j < h; j++) {
    const hi = h + j;
    block(k0, k1, j, hi < n ? hi : 0, tmp);
    out[offset + j] = tmp[0]!;
    if (hi < n) out[offset + hi] = tmp[1]!;
  }
}

function toBigIntSeed(seed: number | bigint): bigint {
  if (typeof seed === "bigint") return seed;
  if (!Number.isInteger(seed)) throw new TypeError(`PRNG key seed must be an integer; got ${seed}`);
  if (!Number.isSafeInteger(seed)) {
    throw new RangeError(`PRNG key seed ${seed} is not a safe integer; pass it as a bigint`);
  }
  return BigInt(seed);
}

/**
 * `jax.random.key(seed)` / `PRNGKey(seed)` key data for threefry2x32.
 *
 * JAX computes `[uint32(seed >>> 32), uint32(seed & 0xFFFFFFFF)]` in the seed's
 * (canonicalized) dtype, with a logical shift: a 32-bit seed dtype therefore
 * always has a zero high word. A Python int goes through np.int64 first; in x32
 * mode (`x64 = false`) every 64-bit seed is canonicalized (wrapped) to its
 * 32-bit counterpart, so the high word is 0 and the low word is the low 32 bits
 * of the seed. `jax_random_seed_offset` (default 0) would be added to the seed
 * before this; callers apply it themselves.
 */
export function seedToKey(seed: number | bigint, x64: boolean, seedDtype: SeedDtype = "int"): Uint32Array {
  const s = toBigIntSeed(seed);
  const unsignedDtype = seedDtype === "uint32" || seedDtype === "uint64";
  const bits = seedDtype === "int32" || seedDtype === "uint32" ? 32 : 64;
  const min = unsignedDtype ? 0n : -(1n << BigInt(bits - 1));
  const max = unsignedDtype ? (1n << BigInt(bits)) - 1n : (1n << BigInt(bits - 1)) - 1n;
  if (s < min || s > max) {
    throw new RangeError(`seed ${s} out of range for dtype ${seedDtype === "int" ? "int64" : seedDtype}`);
  }
  const lo = Number(BigInt.asUintN(32, s));
  const hi = x64 && bits === 64 ? Number(BigInt.asUintN(32, BigInt.asUintN(64, s) >> 32n)) : 0;
  return Uint32Array.of(hi, lo);
}

function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0) throw new Error(`invalid dimension ${d} in shape [${shape.join(", ")}]`);
    n *= d;
  }
  return n;
}

/**
 * `jax.random.split(key, num)` key data: `num` may be a count or a shape; the
 * result holds prod(shape) keys as a flat (…, 2) row-major Uint32Array.
 *
 * * partitionable = true: key i is block(key, hi32(i), lo32(i)) = (y0, y1),
 *   i.e. split(key, n)[i] == foldIn(key, i) for i < 2**32.
 * * partitionable = false (legacy): threefryHash(key, iota(2n)) reshaped (n, 2).
 */
export function split(key: Uint32Array, num: number | readonly number[], partitionable: boolean): Uint32Array {
  checkKey(key, "split");
  const n = typeof num === "number" ? shapeSize([num]) : shapeSize(num);
  const k0 = key[0]!;
  const k1 = key[1]!;
  const out = new Uint32Array(2 * n);
  if (partitionable) {
    const tmp = new Int32Array(2);
    for (let i = 0; i < n; i++) {
      block(k0, k1, Math.floor(i / TWO32), i >>> 0, tmp);
      out[2 * i] = tmp[0]!;
      out[2 * i + 1] = tmp[1]!;
    }
  } else {
    if (2 * n > 0xffffffff) throw new RangeError("split: legacy split of more than 2**31 keys is not representable");
    hashIota(k0, k1, 2 * n, out, 0);
  }
  return out;
}

/**
 * `jax.random.fold_in(key, data)` key data: data is converted to uint32
 * (wrapping) and the new key is block(key, 0, data). Independent of every flag.
 */
export function foldIn(key: Uint32Array, data: number | bigint): Uint32Array {
  checkKey(key, "foldIn");
  if (typeof data === "number" && !Number.isInteger(data))
    throw new TypeError(`fold_in data must be an integer; got ${data}`);
  const d = typeof data === "bigint" ? Number(BigInt.asUintN(32, data)) : Number(BigInt.asUintN(32, BigInt(data)));
  const [y0, y1] = threefry2x32Block(key[0]!, key[1]!, 0, d);
  return Uint32Array.of(y0, y1);
}

/**
 * The 32-bit words of legacy random_bits: threefryHash(key, iota(maxCount)),
 * including JAX's handling of maxCount >= 0xffffffff (split into nblocks + 1
 * legacy subkeys, each hashing iota(0xffffffff), the last hashing iota(rem)).
 */
function legacyWords(key: Uint32Array, maxCount: number): Uint32Array {
  const UMAX = 0xffffffff;
  const nblocks = Math.floor(maxCount / UMAX);
  const rem = maxCount - nblocks * UMAX;
  const words = new Uint32Array(maxCount);
  if (nblocks === 0) {
    hashIota(key[0]!, key[1]!, rem, words, 0);
  } else {
    const keys = split(key, nblocks + 1, false);
    for (let b = 0; b < nblocks; b++) hashIota(keys[2 * b]!, keys[2 * b + 1]!, UMAX, words, b * UMAX);
    hashIota(keys[2 * nblocks]!, keys[2 * nblocks + 1]!, rem, words, nblocks * UMAX);
  }
  return words;
}

/**
 * `jax.random.bits(key, shape, uint{bitWidth})` (the random_bits primitive) as a
 * flat row-major typed array of prod(shape) elements.
 *
 * partitionable = true: for each flat output index i, (y0, y1) = block(key,
 *   hi32(i), lo32(i)); 64-bit -> (y0 << 32) | y1, 32-bit -> y0 ^ y1, 8/16-bit ->
 *   low bits of y0 ^ y1.
 * partitionable = false: words = threefryHash(key, iota(ceil(bitWidth*size/32)));
 *   32-bit -> words; 64-bit -> (words[i] << 32) | words[size + i]; 8/16-bit ->
 *   the little-endian sub-words of the words, first `size` of them.
 */
export function randomBits<W extends BitWidth>(
  key: Uint32Array,
  bitWidth: W,
  shape: readonly number[],
  partitionable: boolean,
): BitsArray<W>;
export function randomBits(
  key: Uint32Array,
  bitWidth: BitWidth,
  shape: readonly number[],
  partitionable: boolean,
): Uint8Array | Uint16Array | Uint32Array | BigUint64Array {
  checkKey(key, "randomBits");
  if (bitWidth !== 8 && bitWidth !== 16 && bitWidth !== 32 && bitWidth !== 64) {
    throw new TypeError("requires 8-, 16-, 32- or 64-bit field width.");
  }
  const size = shapeSize(shape);
  const k0 = key[0]!;
  const k1 = key[1]!;

  if (partitionable) {
    const tmp = new Int32Array(2);
    if (bitWidth === 64) {
      const out = new BigUint64Array(size);
      for (let i = 0; i < size; i++) {
        block(k0, k1, Math.floor(i / TWO32), i >>> 0, tmp);
        out[i] = (BigInt(tmp[0]! >>> 0) << 32n) | BigInt(tmp[1]! >>> 0);
      }
      return out;
    }
    const out =
      bitWidth === 32 ? new Uint32Array(size) : bitWidth === 16 ? new Uint16Array(size) : new Uint8Array(size);
    for (let i = 0; i < size; i++) {
      block(k0, k1, Math.floor(i / TWO32), i >>> 0, tmp);
      out[i] = tmp[0]! ^ tmp[1]!; // typed-array store keeps the low bits
    }
    return out;
  }

  const maxCount = Math.ceil((bitWidth * size) / 32);
  const words = legacyWords(key, maxCount);
  if (bitWidth === 32) return words;
  if (bitWidth === 64) {
    const out = new BigUint64Array(size);
    for (let i = 0; i < size; i++) out[i] = (BigInt(words[i]!) << 32n) | BigInt(words[size + i]!);
    return out;
  }
  const per = 32 / bitWidth;
  const mask = bitWidth === 16 ? 0xffff : 0xff;
  const out = bitWidth === 16 ? new Uint16Array(size) : new Uint8Array(size);
  for (let i = 0; i < size; i++) {
    const w = words[Math.floor(i / per)]!;
    out[i] = (w >>> (bitWidth * (i % per))) & mask;
  }
  return out;
}
