/** @file Known-answer tests of the pure-TS Threefry-2x32 kernel and JAX key derivation against test/fixtures/golden/random.json and JAX's own test-suite values. */
import { describe, it } from "node:test";
import assert from "node:assert/strict";

import {
  type BitWidth,
  type SeedDtype,
  THREEFRY_PARITY,
  foldIn,
  randomBits,
  seedToKey,
  split,
  threefry2x32,
  threefry2x32Block,
  threefryHash,
} from "../../src/random/threefry-kernel.js";
import { type GoldenVector, goldenVectors } from "./helpers.js";

const golden = { vectors: goldenVectors() };
const vectors = golden.vectors;

const hex = (s: unknown): number => Number.parseInt(String(s), 16) >>> 0;
const u32 = (a: ArrayLike<number>): number[] => Array.from(a, (x) => x >>> 0);

/** Which jax_threefry_partitionable settings a vector applies to. */
function modesOf(v: GoldenVector): boolean[] {
  const c = v.flag_context;
  if (/partitionable=False/.test(c)) return [false];
  if (/partitionable=True/.test(c) || /current defaults/.test(c)) return [true];
  return [false, true];
}

const modeName = (p: boolean): string => (p ? "partitionable" : "legacy");

const SEED_TYPES: Record<string, SeedDtype> = {
  int: "int",
  "np.int32": "int32",
  "np.uint32": "uint32",
  "np.int64": "int64",
  "np.uint64": "uint64",
};

const f32 = new Float32Array(1);
const f32u = new Uint32Array(f32.buffer);
/** jax.random.uniform float32 bit trick: (bits >>> 9) | bits(1.0f), bitcast, minus 1, scale, max with minval. */
function uniformF32(bits: Uint32Array, minval = 0, maxval = 1): number[] {
  const lo = Math.fround(minval);
  const span = Math.fround(Math.fround(maxval) - lo);
  return Array.from(bits, (b) => {
    f32u[0] = (b >>> 9) | 0x3f800000;
    const fl = Math.fround(f32[0]! - 1);
    return Math.max(lo, Math.fround(Math.fround(fl * span) + lo));
  });
}

/** jax.random.randint for 32-bit dtypes (two draws: high and low bits from split keys). */
function randintI32(
  key: Uint32Array,
  shape: number[],
  minval: number,
  maxval: number,
  partitionable: boolean,
): number[] {
  const keys = split(key, 2, partitionable);
  const hi = randomBits(keys.subarray(0, 2), 32, shape, partitionable);
  const lo = randomBits(keys.subarray(2, 4), 32, shape, partitionable);
  const span = maxval <= minval ? 1 : (maxval - minval) >>> 0;
  const mult = Number((BigInt(2 ** 16 % span) * BigInt(2 ** 16 % span)) % BigInt(span));
  return Array.from(hi, (h, i) => {
    const off = Number((((BigInt(h % span) * BigInt(mult)) % 2n ** 32n) + BigInt(lo[i]! % span)) % 2n ** 32n) % span;
    return (minval + off) | 0;
  });
}

const handled = new Set<string>();

describe("golden random.json: threefry2x32 block function", () => {
  for (const v of vectors.filter((x) => x.kind === "threefry2x32_block")) {
    it(v.id, () => {
      const key = (v.inputs["key"] as string[]).map(hex) as [number, number];
      const count = v.inputs["count"];
      if (Array.isArray(count)) {
        const expected = (v.expected as string[]).map(hex);
        assert.deepEqual(threefry2x32Block(key[0], key[1], hex(count[0]), hex(count[1])), expected);
        const [y0, y1] = threefry2x32(key[0], key[1], Uint32Array.of(hex(count[0])), Uint32Array.of(hex(count[1])));
        assert.deepEqual([y0[0], y1[0]], expected);
        assert.deepEqual(u32(threefryHash(Uint32Array.from(key), Uint32Array.from(count.map(hex)))), expected);
      } else {
        // "concat(full(n,A), full(n,B)), n=10_000_000": the flat hash splits the count array in halves.
        const desc = String(count);
        const m = /full\(n,(0x[0-9a-f]+)\), full\(n,(0x[0-9a-f]+)\)\), n=([\d_]+)/i.exec(desc);
        assert.ok(m, `unparsed count description: ${desc}`);
        const n = Number(m[3]!.replace(/_/g, ""));
        const counts = new Uint32Array(2 * n);
        counts.fill(hex(m[1]), 0, n);
        counts.fill(hex(m[2]), n);
        const out = threefryHash(Uint32Array.from(key), counts);
        const e = /all (0x[0-9a-f]+), last n all (0x[0-9a-f]+)/i.exec(String(v.expected));
        assert.ok(e, `unparsed expectation: ${String(v.expected)}`);
        const e0 = hex(e[1]);
        const e1 = hex(e[2]);
        for (let i = 0; i < n; i++) {
          if (out[i] !== e0) assert.fail(`out[${i}] = ${out[i]} != ${e0}`);
          if (out[n + i] !== e1) assert.fail(`out[${n + i}] = ${out[n + i]} != ${e1}`);
        }
      }
      handled.add(v.id);
    });
  }
});

describe("golden random.json: seed -> key", () => {
  for (const v of vectors.filter((x) => x.kind.startsWith("PRNGKey/key(seed)") || x.kind.startsWith("key("))) {
    it(v.id, () => {
      const seed = v.inputs["seed"] as number;
      const typeName = (v.inputs["seed_type"] as string | undefined) ?? "int";
      const dtype = SEED_TYPES[typeName];
      assert.ok(dtype, `unknown seed type ${typeName}`);
      const exp = v.expected as number[] | { x32: number[]; x64: number[] };
      if (Array.isArray(exp)) {
        for (const x64 of [false, true]) assert.deepEqual(u32(seedToKey(seed, x64, dtype)), exp);
      } else {
        assert.deepEqual(u32(seedToKey(seed, false, dtype)), exp.x32, "x32");
        assert.deepEqual(u32(seedToKey(seed, true, dtype)), exp.x64, "x64");
      }
      handled.add(v.id);
    });
  }
});

describe("golden random.json: split / fold_in", () => {
  for (const v of vectors.filter((x) => x.kind.startsWith("split(") || x.kind.startsWith("fold_in("))) {
    for (const p of modesOf(v)) {
      it(`${v.id} [${modeName(p)}]`, () => {
        const key = seedToKey(v.inputs["seed"] as number, false);
        if (v.kind.startsWith("split(")) {
          const num = v.inputs["num"] as number;
          assert.deepEqual(u32(split(key, num, p)), (v.expected as number[][]).flat());
        } else {
          assert.deepEqual(u32(foldIn(key, v.inputs["data"] as number)), v.expected);
        }
        handled.add(v.id);
      });
    }
  }
});

describe("golden random.json: random bits", () => {
  for (const v of vectors.filter((x) => x.kind.startsWith("random.bits("))) {
    for (const p of modesOf(v)) {
      it(`${v.id} [${modeName(p)}]`, () => {
        const width = Number(/uint(\d+)/.exec(v.inputs["dtype"] as string)![1]) as BitWidth;
        const key = seedToKey(v.inputs["seed"] as number, false);
        const bits = randomBits(key, width, v.inputs["shape"] as number[], p);
        assert.deepEqual(
          Array.from(bits as ArrayLike<number | bigint>, (x) => String(x)),
          (v.expected as (number | string)[]).map(String),
        );
        handled.add(v.id);
      });
    }
  }
});

describe("golden random.json: samplers built directly on split/bits", () => {
  for (const v of vectors.filter((x) => x.kind.startsWith("random.randint("))) {
    for (const p of modesOf(v)) {
      it(`${v.id} [${modeName(p)}]`, () => {
        const inp = v.inputs as { seed: number; shape: number[]; minval: number; maxval: number; dtype: string };
        assert.equal(inp.dtype, "int32");
        const got = randintI32(seedToKey(inp.seed, false), inp.shape, inp.minval, inp.maxval, p);
        assert.deepEqual(got, (v.expected as number[][]).flat());
        handled.add(v.id);
      });
    }
  }
  for (const v of vectors.filter((x) => x.kind.startsWith("random.uniform(raw uint32 key"))) {
    for (const p of modesOf(v)) {
      it(`${v.id} [${modeName(p)}]`, () => {
        const key = Uint32Array.from(v.inputs["key_data"] as number[]);
        const shape = v.inputs["shape"] as number[];
        const got = uniformF32(randomBits(key, 32, shape, p));
        const exp = (v.expected as number[][]).flat();
        // expected values are float32s printed with 8 significant digits
        got.forEach((g, i) => assert.equal(g, Math.fround(exp[i]!), `element ${i}: ${g} vs ${exp[i]}`));
        handled.add(v.id);
      });
    }
  }
  for (const v of vectors.filter((x) => x.kind.startsWith("random.uniform(key("))) {
    for (const p of modesOf(v)) {
      it(`${v.id} [${modeName(p)}]`, () => {
        const key = seedToKey(v.inputs["seed"] as number, false);
        const exp = v.expected as Record<string, number>;
        const [u0] = uniformF32(randomBits(key, 32, [], p));
        const subkey = split(key, 2, p).subarray(2, 4);
        const [u1] = uniformF32(randomBits(subkey, 32, [], p));
        // doctest prints ~6 significant digits
        assert.ok(Math.abs(u0! - exp["uniform(key)"]!) <= 5e-7 * Math.max(1, Math.abs(u0!)), `uniform(key) ${u0}`);
        assert.ok(Math.abs(u1! - exp["uniform(subkey)"]!) <= 5e-9, `uniform(subkey) ${u1}`);
        // the full-precision values quoted in the vector's comment
        assert.equal(u0, 0.9476670026779175);
        assert.equal(u1, 0.007293820381164551);
        handled.add(v.id);
      });
    }
  }

  it("every golden vector of a key/bits kind was checked", () => {
    const keyKinds = vectors.filter((v) =>
      /^(threefry2x32_block|PRNGKey\/key\(seed\)|key\(|split\(|fold_in\(|random\.bits\(|random\.randint\(|random\.uniform\()/.test(
        v.kind,
      ),
    );
    const missing = keyKinds.filter((v) => !handled.has(v.id)).map((v) => v.id);
    assert.deepEqual(missing, []);
  });
});

describe("JAX test-suite vectors (tests/random_test.py), legacy mode", () => {
  // _RANDOM_VALUES_CASES seeds are zlib.adler32(name + impl).
  const bitsSeed = 942802475; // adler32("bitsthreefry2x32")
  it("bits uint8/16/32 (5,) for adler32('bitsthreefry2x32')", () => {
    const key = seedToKey(bitsSeed, false);
    assert.deepEqual(Array.from(randomBits(key, 8, [5], false)), [10, 158, 82, 54, 158]);
    assert.deepEqual(Array.from(randomBits(key, 16, [5], false)), [6738, 38161, 50695, 57337, 61600]);
    assert.deepEqual(
      Array.from(randomBits(key, 32, [5], false)),
      [1978747883, 4134381225, 3628107870, 689687174, 2788938207],
    );
  });
  it("bits uint64 (5,) (x64 only)", () => {
    const key = seedToKey(bitsSeed, true);
    assert.deepEqual(Array.from(randomBits(key, 64, [5], false)), [
      17649965731882839947n,
      1415307058040849897n,
      8282622628079774249n,
      14024425113645909402n,
      2012979996110532418n,
    ]);
  });
  it("testRngRandomBits uint64 under x64 for key(1701)", () => {
    assert.deepEqual(Array.from(randomBits(seedToKey(1701, true), 64, [3], false)), [
      3982329540505020460n,
      16822122385914693683n,
      7882654074788531506n,
    ]);
  });
  it("testRngRandomBitsViewProperty: 8/16/32-bit draws share the same bytes", () => {
    const key = seedToKey(1701, false);
    const b8 = randomBits(key, 8, [80], false);
    const b16 = randomBits(key, 16, [40], false);
    const b32 = randomBits(key, 32, [20], false);
    assert.deepEqual(Array.from(new Uint32Array(b8.buffer)), Array.from(b32));
    assert.deepEqual(Array.from(new Uint32Array(b16.buffer)), Array.from(b32));
  });
  it("randint (5,) in [0, 10) for adler32('randintthreefry2x32')", () => {
    assert.deepEqual(randintI32(seedToKey(1319372649, false), [5], 0, 10, false), [0, 5, 7, 7, 5]);
  });
  it("uniform (5,) float32 for adler32('uniformthreefry2x32')", () => {
    const got = uniformF32(randomBits(seedToKey(1338574713, false), 32, [5], false));
    const exp = [0.298671, 0.073213, 0.873356, 0.260549, 0.412797];
    got.forEach((g, i) => assert.ok(Math.abs(g - exp[i]!) <= 1e-6, `${g} vs ${exp[i]}`));
  });
  it("testPRNGValues randint int64 under x64", () => {
    // nbits = 64: span 8, multiplier (2**32 % 8)**2 % 8 = 0, so the result is lo % 8.
    const key = seedToKey(0, true);
    const keys = split(key, 2, false);
    const lo = randomBits(keys.subarray(2, 4), 64, [3, 3], false);
    assert.deepEqual(
      Array.from(lo, (x) => Number(x % 8n)),
      [7, 2, 6, 2, 1, 0, 6, 7, 7],
    );
  });
  it("test_prng_seeds_and_keys extra rows (int32 overflow seeds)", () => {
    const i32max = 2147483647;
    const i32min = -2147483648;
    assert.deepEqual(u32(seedToKey(i32max + 100, false)), [0, 2147483747]);
    assert.deepEqual(u32(seedToKey(i32max + 100, true)), [0, 2147483747]);
    assert.deepEqual(u32(seedToKey(i32max + 101, false, "uint32")), [0, 2147483748]);
    assert.deepEqual(u32(seedToKey(i32max + 101, true, "uint32")), [0, 2147483748]);
    assert.deepEqual(u32(seedToKey(i32min - 100, false)), [0, 2147483548]);
    assert.deepEqual(u32(seedToKey(i32min - 100, true)), [4294967295, 2147483548]);
    assert.deepEqual(u32(seedToKey(i32min - 101, false, "int64")), [0, 2147483547]);
    assert.deepEqual(u32(seedToKey(i32min - 101, true, "int64")), [4294967295, 2147483547]);
  });
});

describe("structural properties", () => {
  it("partitionable split(key, n)[i] == fold_in(key, i) (test_threefry_split_fold_in_symmetry)", () => {
    const key = seedToKey(72, false);
    const s = split(key, 3, true);
    for (let i = 0; i < 3; i++) assert.deepEqual(u32(s.subarray(2 * i, 2 * i + 2)), u32(foldIn(key, i)));
  });
  it("split accepts a shape and flattens it row-major", () => {
    const key = seedToKey(5, false);
    for (const p of [false, true]) assert.deepEqual(u32(split(key, [2, 3], p)), u32(split(key, 6, p)));
  });
  it("legacy split = threefryHash(key, iota(2n)) reshaped (n, 2)", () => {
    const key = seedToKey(123, false);
    const iota = Uint32Array.from({ length: 10 }, (_, i) => i);
    assert.deepEqual(u32(split(key, 5, false)), u32(threefryHash(key, iota)));
  });
  it("threefryHash zero-pads an odd count array and trims the output", () => {
    const key = Uint32Array.of(7, 9);
    const counts = Uint32Array.of(11, 22, 33);
    const [a0, a1] = threefry2x32Block(7, 9, 11, 33);
    const [b0] = threefry2x32Block(7, 9, 22, 0);
    assert.deepEqual(u32(threefryHash(key, counts)), [a0, b0, a1]);
    // legacy bits of an odd word count use the same padding
    assert.deepEqual(u32(randomBits(key, 32, [3], false)), u32(threefryHash(key, Uint32Array.of(0, 1, 2))));
  });
  it("partitionable bits: 32 = y0^y1, 64 = y0<<32|y1, 8/16 = low bits of y0^y1", () => {
    const key = seedToKey(42, false);
    const shape = [2, 3];
    const b8 = randomBits(key, 8, shape, true);
    const b16 = randomBits(key, 16, shape, true);
    const b32 = randomBits(key, 32, shape, true);
    const b64 = randomBits(key, 64, shape, true);
    for (let i = 0; i < 6; i++) {
      const [y0, y1] = threefry2x32Block(key[0]!, key[1]!, 0, i);
      assert.equal(b32[i], (y0 ^ y1) >>> 0);
      assert.equal(b16[i], (y0 ^ y1) & 0xffff);
      assert.equal(b8[i], (y0 ^ y1) & 0xff);
      assert.equal(b64[i], (BigInt(y0) << 32n) | BigInt(y1));
    }
  });
  it("legacy 64-bit bits pair word i with word size+i", () => {
    const key = seedToKey(3, false);
    const words = randomBits(key, 32, [8], false);
    const b64 = randomBits(key, 64, [4], false);
    for (let i = 0; i < 4; i++) assert.equal(b64[i], (BigInt(words[i]!) << 32n) | BigInt(words[4 + i]!));
  });
  it("threefry2x32 broadcasts a length-1 counter array and checks lengths", () => {
    const [y0, y1] = threefry2x32(1, 2, Uint32Array.of(5), Uint32Array.of(6, 7));
    assert.deepEqual([y0[0], y1[0]], threefry2x32Block(1, 2, 5, 6));
    assert.deepEqual([y0[1], y1[1]], threefry2x32Block(1, 2, 5, 7));
    assert.throws(() => threefry2x32(1, 2, new Uint32Array(2), new Uint32Array(3)));
  });
  it("empty shapes and key schedule constant", () => {
    assert.equal(randomBits(seedToKey(0, false), 32, [0, 4], false).length, 0);
    assert.equal(randomBits(seedToKey(0, false), 32, [0], true).length, 0);
    assert.equal(split(seedToKey(0, false), 0, false).length, 0);
    assert.equal(THREEFRY_PARITY, 0x1bd11bda);
  });
  it("seedToKey: bigint seeds, ranges and validation", () => {
    assert.deepEqual(u32(seedToKey(0x123456789abcdefn, true)), [0x01234567, 0x89abcdef]);
    assert.deepEqual(u32(seedToKey(0x123456789abcdefn, false)), [0, 0x89abcdef]);
    assert.deepEqual(u32(seedToKey(2n ** 64n - 1n, true, "uint64")), [0xffffffff, 0xffffffff]);
    assert.deepEqual(u32(seedToKey(-(2n ** 63n), true)), [0x80000000, 0]);
    assert.throws(() => seedToKey(2n ** 63n, true), RangeError);
    assert.throws(() => seedToKey(-1, true, "uint32"), RangeError);
    assert.throws(() => seedToKey(2 ** 31, true, "int32"), RangeError);
    assert.throws(() => seedToKey(1.5, true), TypeError);
    assert.throws(() => seedToKey(2 ** 60, true), RangeError);
  });
  it("foldIn wraps data to uint32", () => {
    const key = seedToKey(0, false);
    assert.deepEqual(u32(foldIn(key, -1)), u32(foldIn(key, 0xffffffff)));
    assert.deepEqual(u32(foldIn(key, 2n ** 32n + 4n)), u32(foldIn(key, 4)));
  });
});
