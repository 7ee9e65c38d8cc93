/** @file Every golden vector of test/fixtures/golden/random.json checked through the public random API (key, PRNGKey, split, foldIn, bits, threefry2x32, uniform, randint, normal), in the flag mode it states. */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";

import "../../src/backends/interpreter/interpreter.js";
import { ArrayImpl } from "../../src/core/array-impl.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import { array } from "../../src/numpy/core.js";
import * as random from "../../src/random/index.js";
import { erfInvF32 } from "../../src/random/erf-inv.js";
import { type GoldenVector, goldenVectors, withFlags } from "./helpers.js";

const vectors = goldenVectors();

const saved = { p: config.threefryPartitionable, x64: config.enableX64 };
after(() => {
  config.update("threefryPartitionable", saved.p);
  config.update("enableX64", saved.x64);
});

function modesOf(v: GoldenVector): boolean[] {
  if (/partitionable=False/.test(v.flag_context)) return [false];
  if (/partitionable=True/.test(v.flag_context) || /current defaults/.test(v.flag_context)) return [true];
  return [false, true];
}
const hex = (s: unknown): number => Number.parseInt(String(s), 16) >>> 0;
const u32 = (xs: number[]) => array(xs, { dtype: "uint32" });
const flat = (x: unknown): unknown[] => (Array.isArray(x) ? x.flatMap(flat) : [x]);
const handled = new Set<string>();

describe("random.json through the public API", () => {
  for (const v of vectors) {
    if (v.kind === "threefry2x32_block") {
      it(`${v.id}: random.threefry2x32`, () => {
        const key = (v.inputs.key as string[]).map(hex);
        const count = v.inputs.count;
        if (Array.isArray(count)) {
          const out = random.threefry2x32(u32(key), u32(count.map(hex)));
          assert.deepEqual(out.tolist(), (v.expected as string[]).map(hex));
          assert.equal(out.dtype, "uint32");
        } else {
          const m = /full\(n,(0x[0-9a-f]+)\), full\(n,(0x[0-9a-f]+)\)\), n=([\d_]+)/i.exec(String(count))!;
          const e = /all (0x[0-9a-f]+), last n all (0x[0-9a-f]+)/i.exec(String(v.expected))!;
          const n = Number(m[3].replace(/_/g, ""));
          const c = new Uint32Array(2 * n);
          c.fill(hex(m[1]), 0, n);
          c.fill(hex(m[2]), n);
          const out = random.threefry2x32(u32(key), ArrayImpl.of([2 * n], "uint32", c)).dataSync() as Uint32Array;
          const e0 = hex(e[1]),
            e1 = hex(e[2]);
          for (let i = 0; i < n; i++) if (out[i] !== e0 || out[n + i] !== e1) assert.fail(`mismatch at ${i}`);
        }
        handled.add(v.id);
      });
    } else if (v.kind.startsWith("PRNGKey/key(seed)")) {
      it(`${v.id}: key / PRNGKey`, () => {
        const seed = v.inputs.seed as number;
        const st = (v.inputs.seed_type as string) ?? "int";
        const exp = v.expected as { x32: number[]; x64: number[] };
        for (const x64 of [false, true]) {
          withFlags({ x64 }, () => {
            const want = x64 ? exp.x64 : exp.x32;
            // a Python int is a JS number; np.int32 etc. are 0-d arrays of that dtype (canonicalized like JAX)
            const s = st === "int" ? seed : array(seed, { dtype: st.slice(3) as DType });
            assert.deepEqual(random.keyData(random.key(s)).tolist(), want, `key x64=${x64}`);
            assert.deepEqual(random.PRNGKey(s).tolist(), want, `PRNGKey x64=${x64}`);
          });
        }
        handled.add(v.id);
      });
    } else if (v.kind.startsWith("key(")) {
      it(`${v.id}: key(0) data and repr`, () => {
        const k = random.key(v.inputs.seed as number);
        assert.deepEqual(random.keyData(k).tolist(), v.expected);
        assert.equal(String(k), "Array((), dtype=key<fry>) overlaying:\n[0 0]");
        handled.add(v.id);
      });
    } else if (v.kind.startsWith("split(")) {
      for (const p of modesOf(v)) {
        it(`${v.id}: split [partitionable=${p}]`, () =>
          withFlags({ partitionable: p }, () => {
            const typed = random.split(
              random.key(v.inputs.seed as number),
              v.inputs.num as number,
            ) as random.PRNGKeyArray;
            assert.ok(typed instanceof random.PRNGKeyArray);
            assert.deepEqual(typed.shape, [v.inputs.num]);
            assert.deepEqual(random.keyData(typed).tolist(), v.expected);
            const raw = random.split(random.PRNGKey(v.inputs.seed as number), v.inputs.num as number);
            assert.deepEqual((raw as ArrayImpl).tolist(), v.expected);
            handled.add(v.id);
          }));
      }
    } else if (v.kind.startsWith("fold_in(")) {
      for (const p of modesOf(v)) {
        it(`${v.id}: foldIn [partitionable=${p}]`, () =>
          withFlags({ partitionable: p }, () => {
            const k = random.foldIn(random.key(v.inputs.seed as number), v.inputs.data as number);
            assert.deepEqual(random.keyData(k).tolist(), v.expected);
            const d = array(v.inputs.data as number, { dtype: "int32" });
            assert.deepEqual(
              (random.foldIn(random.PRNGKey(v.inputs.seed as number), d) as ArrayImpl).tolist(),
              v.expected,
            );
            handled.add(v.id);
          }));
      }
    } else if (v.kind.startsWith("random.bits(")) {
      for (const p of modesOf(v)) {
        it(`${v.id}: bits [partitionable=${p}]`, () =>
          withFlags({ partitionable: p }, () => {
            const b = random.bits(random.key(v.inputs.seed as number), v.inputs.shape as number[], {
              dtype: v.inputs.dtype as DType,
            });
            assert.equal(b.dtype, v.inputs.dtype);
            assert.deepEqual(b.tolist(), v.expected);
            handled.add(v.id);
          }));
      }
    } else if (v.kind.startsWith("random.randint(")) {
      for (const p of modesOf(v)) {
        it(`${v.id}: randint [partitionable=${p}]`, () =>
          withFlags({ partitionable: p, x64: false }, () => {
            const i = v.inputs as { seed: number; shape: number[]; minval: number; maxval: number; dtype: DType };
            const r = random.randint(random.key(i.seed), i.shape, i.minval, i.maxval, { dtype: i.dtype });
            assert.equal(r.dtype, "int32");
            assert.deepEqual(r.tolist(), v.expected);
            // positional dtype and the default int dtype agree in x32
            assert.deepEqual(random.randint(random.key(i.seed), i.shape, i.minval, i.maxval).tolist(), v.expected);
            handled.add(v.id);
          }));
      }
    } else if (v.kind.startsWith("random.uniform(raw uint32 key")) {
      for (const p of modesOf(v)) {
        it(`${v.id}: uniform on a raw key [partitionable=${p}]`, () =>
          withFlags({ partitionable: p, x64: false }, () => {
            const u = random.uniform(
              u32(v.inputs.key_data as number[]),
              v.inputs.shape as number[],
              v.inputs.dtype as DType,
            );
            assert.equal(u.dtype, "float32");
            const exp = flat(v.expected) as number[];
            (flat(u.tolist()) as number[]).forEach((g, j) => assert.equal(g, Math.fround(exp[j]), `element ${j}`));
            handled.add(v.id);
          }));
      }
    } else if (v.kind.startsWith("random.uniform(key(")) {
      for (const p of modesOf(v)) {
        it(`${v.id}: uniform(key), uniform(split(key)[1]) [partitionable=${p}]`, () =>
          withFlags({ partitionable: p, x64: false }, () => {
            const key = random.key(v.inputs.seed as number);
            const [, subkey] = random.split(key) as random.PRNGKeyArray;
            const a = random.uniform(key).item() as number,
              b = random.uniform(subkey).item() as number;
            const exp = v.expected as Record<string, number>;
            assert.ok(Math.abs(a - exp["uniform(key)"]) < 5e-7 && Math.abs(b - exp["uniform(subkey)"]) < 5e-9);
            assert.equal(a, 0.9476670026779175);
            assert.equal(b, 0.007293820381164551);
            handled.add(v.id);
          }));
      }
    } else if (v.kind.startsWith("random.normal(")) {
      for (const p of modesOf(v)) {
        it(`${v.id}: normal [partitionable=${p}]`, () =>
          withFlags({ partitionable: p, x64: false }, () => {
            const n = random.normal(random.key(v.inputs.seed as number), [5]);
            assert.equal(n.dtype, "float32");
            const got = n.tolist() as number[];
            (v.expected as number[]).forEach((e, j) =>
              assert.ok(Math.abs(got[j] - e) <= 1e-6 * Math.max(1, Math.abs(e)), `element ${j}: ${got[j]} vs ${e}`),
            );
            handled.add(v.id);
          }));
      }
    }
  }
  it("every golden vector was checked through the public API", () => {
    assert.deepEqual(
      vectors.filter((v) => !handled.has(v.id)).map((v) => v.id),
      [],
    );
  });
});

describe("normal's erf_inv", () => {
  const key = random.key(1193674498);
  const viaKernel = (): number[] =>
    withFlags({ partitionable: false, x64: false }, () => {
      // the same uniforms, mapped through XLA's float32 erf_inv expansion (src/random/erf-inv.ts)
      const lo = Math.fround(-1 + 2 ** -24);
      const u = random.uniform(key, [64], "float32", lo, 1).tolist() as number[];
      return u.map((x) => Math.fround(Math.fround(Math.SQRT2) * erfInvF32(x)));
    });
  const got = (): number[] =>
    withFlags({ partitionable: false, x64: false }, () => random.normal(key, [64]).tolist() as number[]);
  it("agrees with XLA's float32 erf_inv expansion to a few ulps", () => {
    const e = viaKernel(),
      g = got();
    g.forEach((x, i) =>
      assert.ok(Math.abs(x - e[i]) <= 4 * 2 ** -23 * Math.max(1, Math.abs(e[i])), `element ${i}: ${x} vs ${e[i]}`),
    );
  });
  it("is bit-exact once the erf_inv primitive's reference impl replays XLA's expansion (erfInvF32/erfInvF64)", () => {
    assert.deepEqual(got(), viaKernel());
  });
});

it("normal(PRNGKey(0), (3,)) equals JAX's printed output bit for bit (XLA fuses the erf_inv Horner steps into FMAs)", () => {
  const got = Array.from(random.normal(random.PRNGKey(0), [3]).dataSync() as Float32Array);
  const want = Array.from(new Float32Array([1.6226422, 2.0252647, -0.43359444]));
  assert.deepEqual(got, want);
});
