/** @file Accuracy of long float reductions, scans and contractions (blocked trees) against float64 references, eager, jitted and on the interpreter. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { loweringSummary } from "../../src/backends/onnx/onnx-backend.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import type { Jaxpr } from "../../src/core/jaxpr.js";
import { jit, makeJaxpr } from "../../src/transforms/api.js";
import * as jnp from "../../src/numpy/index.js";
import * as lax from "../../src/lax/index.js";
import { divisorNear } from "../../src/compiler/lower-blocked.js";

const U32 = 2 ** -24;
/** The asserted bound: relative error <= 4 log2(n) ulp/2 (today's naive float32 sums exceed it ~1000x at 1e6). */
const bound = (n: number, u = U32): number => 4 * Math.log2(n) * u;
const rel = (got: number, want: number): number => Math.abs(got - want) / Math.abs(want);

/** Neumaier-compensated float64 sum of f(i), i < n: the reference (error ~1e-16, far below float32's). */
function refSum(n: number, f: (i: number) => number): number {
  let s = 0,
    c = 0;
  for (let i = 0; i < n; i++) {
    const v = f(i),
      t = s + v;
    c += Math.abs(s) >= Math.abs(v) ? s - t + v : v - t + s;
    s = t;
  }
  return s + c;
}
/** Compensated float64 prefix sums. */
function refCumsum(h: Float32Array): Float64Array {
  const out = new Float64Array(h.length);
  let s = 0,
    c = 0;
  for (let i = 0; i < h.length; i++) {
    const v = h[i],
      t = s + v;
    c += Math.abs(s) >= Math.abs(v) ? s - t + v : v - t + s;
    s = t;
    out[i] = s + c;
  }
  return out;
}
/** A seeded uniform [0, 1) generator (LCG): the same data on every run. */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}
/** Adversarial float32 data of length n: constant (the issue's), sorted ascending/descending, alternating large/small, random. */
function datasets(n: number): [string, Float32Array][] {
  const r = rng(7);
  return [
    ["constant", new Float32Array(n).fill(0.7615942)],
    ["ascending", Float32Array.from({ length: n }, (_, i) => (i + 1) / n)],
    ["descending", Float32Array.from({ length: n }, (_, i) => (n - i) / n)],
    ["alternating", Float32Array.from({ length: n }, (_, i) => (i % 2 ? 1e4 : 1e-3) * (1 + r() / 100))],
    ["random", Float32Array.from({ length: n }, () => r())],
  ];
}
function onInterpreter<T>(f: () => T): T {
  const prev = config.backend;
  config.update("backend", "interpreter");
  try {
    return f();
  } finally {
    config.update("backend", prev);
  }
}
const item = (a: Array): number => Number(a.item());
const host = (a: Array): Float32Array => a.dataSync() as Float32Array;

test("the issue's sum: 1e8 float32 values of 0.7615942, eager and jitted sum and jitted mean, within 4 log2(n) ulp", () => {
  const n = 1e8,
    c = Math.fround(0.7615942);
  const x = jnp.full([n], c, { dtype: "float32" });
  const want = c * n; // exact in float64
  const eager = item(jnp.sum(x));
  assert.ok(rel(eager, want) <= bound(n), `eager sum ${eager}, want ${want}, rel ${rel(eager, want)}`);
  const [s, m] = jit((v: Array) => [jnp.sum(v), jnp.mean(v)])(x) as Array[];
  assert.ok(rel(item(s), want) <= bound(n), `jit sum ${item(s)}, want ${want}`);
  assert.ok(rel(item(m), c) <= bound(n), `jit mean ${item(m)}, want ${c}`);
});

test("1e6 elements in adversarial orders: sum (eager, jit, interpreter), mean and var against float64", () => {
  const n = 1e6;
  const jsum = jit((v: Array) => jnp.sum(v)),
    jmean = jit((v: Array) => jnp.mean(v)),
    jvar = jit((v: Array) => jnp.var(v));
  for (const [name, h] of datasets(n)) {
    const x = jnp.array(h);
    const want = refSum(n, (i) => h[i]);
    for (const [how, got] of [
      ["eager", item(jnp.sum(x))],
      ["jit", item(jsum(x))],
      ["interpreter", onInterpreter(() => item(jnp.sum(x)))],
    ] as const) {
      assert.ok(
        rel(got, want) <= bound(n),
        `${name} ${how} sum: ${got}, want ${want}, rel ${rel(got, want)} > ${bound(n)}`,
      );
    }
    const mu = want / n;
    assert.ok(rel(item(jmean(x)), mu) <= bound(n), `${name} mean ${item(jmean(x))}, want ${mu}`);
    // var = mean((x - mean)^2): its own rounding of x - mean adds an ulp of |x|, hence the absolute floor
    const v = refSum(n, (i) => (h[i] - mu) ** 2) / n;
    const gv = item(jvar(x));
    assert.ok(
      Math.abs(gv - v) <= bound(n) * v + (4 * U32 * refSum(n, (i) => h[i] * h[i])) / n,
      `${name} var ${gv}, want ${v}`,
    );
  }
});

test("1e7 elements: constant and random sums, eager and jitted", () => {
  const n = 1e7,
    r = rng(3);
  const hs: [string, Float32Array][] = [
    ["constant", new Float32Array(n).fill(0.7615942)],
    ["random", Float32Array.from({ length: n }, () => r())],
  ];
  const jsum = jit((v: Array) => jnp.sum(v));
  for (const [name, h] of hs) {
    const x = jnp.array(h),
      want = refSum(n, (i) => h[i]);
    for (const [how, got] of [
      ["eager", item(jnp.sum(x))],
      ["jit", item(jsum(x))],
    ] as const) {
      assert.ok(rel(got, want) <= bound(n), `${name} ${how}: ${got}, want ${want}, rel ${rel(got, want)}`);
    }
  }
});

test("sums along one axis of 2-D arrays (axis 0 of [1e6, 4], axis 1 of [4, 1e6]) and over two separated axes", () => {
  // constant data: the exact sums are c * n, and the worst case for naive accumulation
  const n = 1e6,
    c = Math.fround(0.7615942);
  const x = jnp.full([4 * n], c, { dtype: "float32" });
  const a0 = host(jit((v: Array) => jnp.sum(v, 0))(jnp.reshape(x, [n, 4])));
  const a1 = host(jnp.sum(jnp.reshape(x, [4, n]), 1));
  for (let j = 0; j < 4; j++) {
    assert.ok(rel(a0[j], c * n) <= bound(n), `axis 0 [${j}]: ${a0[j]}, want ${c * n}`);
    assert.ok(rel(a1[j], c * n) <= bound(n), `axis 1 [${j}]: ${a1[j]}, want ${c * n}`);
  }
  // random data along axis 0 (strided runs)
  const r = rng(13),
    h = Float32Array.from({ length: 4 * n }, () => r());
  const g0 = host(jnp.sum(jnp.reshape(jnp.array(h), [n, 4]), 0));
  for (let j = 0; j < 4; j++) {
    const w = refSum(n, (i) => h[4 * i + j]);
    assert.ok(rel(g0[j], w) <= bound(n), `random axis 0 [${j}]: ${g0[j]}, want ${w}`);
  }
  // axes (0, 2) of [1000, 4, 1000]: two runs of 1000 (one strided) in one reduction
  const s = host(jit((v: Array) => jnp.sum(v, [0, 2]))(jnp.reshape(x, [1000, 4, 1000])));
  for (const v of s) assert.ok(rel(v, c * 1e6) <= bound(1e6), `axes (0, 2): ${v}`);
});

test("cumsum of 1e6 elements (forward and reverse) and of a prime length (padded blocks) against float64 prefix sums", () => {
  const jcumsum = jit((v: Array) => jnp.cumsum(v)),
    jrev = jit((v: Array) => lax.cumsum(v, 0, true));
  for (const n of [1e6, 1000003]) {
    for (const [name, h] of datasets(n).filter(
      ([k]) => k === "random" || (n === 1e6 && (k === "constant" || k === "alternating")),
    )) {
      const x = jnp.array(h);
      const want = refCumsum(h),
        got = host(jcumsum(x));
      const rev = host(jrev(x)),
        total = want[n - 1];
      for (let i = 0; i < n; i += i < 5000 ? 1 : 997) {
        assert.ok(rel(got[i], want[i]) <= bound(i + 2), `${name} n=${n} cumsum[${i}]: ${got[i]}, want ${want[i]}`);
        // reverse: suffix sums total - prefix (the reference's own cancellation is tiny in float64)
        const suf = total - (i > 0 ? want[i - 1] : 0);
        assert.ok(rel(rev[i], suf) <= bound(n), `${name} n=${n} reverse cumsum[${i}]: ${rev[i]}, want ${suf}`);
      }
      assert.ok(rel(got[n - 1], total) <= bound(n), `${name} last: ${got[n - 1]}, want ${total}`);
    }
  }
  // along an axis of 2-D arrays: strided runs (axis 0 of [250000, 4]) and several contiguous runs (axis 1 of [4, 250000])
  const r = rng(9),
    h2 = Float32Array.from({ length: 1e6 }, () => r());
  const x2 = jnp.array(h2);
  const c0 = host(jit((v: Array) => jnp.cumsum(v, 0))(jnp.reshape(x2, [250000, 4])));
  const c1 = host(jit((v: Array) => lax.cumsum(v, 1, true))(jnp.reshape(x2, [4, 250000])));
  for (let j = 0; j < 4; j++) {
    const w0 = refCumsum(Float32Array.from({ length: 250000 }, (_, i) => h2[4 * i + j]));
    const w1 = refCumsum(h2.slice(j * 250000, (j + 1) * 250000).reverse());
    for (let i = 0; i < 250000; i += i < 3000 ? 1 : 499) {
      assert.ok(rel(c0[4 * i + j], w0[i]) <= bound(i + 2), `axis 0 [${i}, ${j}]: ${c0[4 * i + j]}, want ${w0[i]}`);
      // reverse along axis 1: position 249999 - i holds the suffix sum of i + 1 elements
      assert.ok(rel(c1[j * 250000 + 249999 - i], w1[i]) <= bound(i + 2), `reverse axis 1 [${j}, ${249999 - i}]`);
    }
  }
  // the interpreter's cumsum too
  const h = new Float32Array(1e6).fill(0.7615942);
  const last = onInterpreter(() => host(jnp.cumsum(jnp.array(h))))[1e6 - 1];
  assert.ok(rel(last, Math.fround(0.7615942) * 1e6) <= bound(1e6), `interpreter cumsum ${last}`);
});

test("long contractions: dot of two 1e6-vectors, and matrix-vector, vector-matrix, matrix-matrix products with K = 2^17 and a prime K", () => {
  const n = 1e6,
    jdot = jit((a: Array, b: Array) => jnp.dot(a, b));
  for (const [name, h] of datasets(n)) {
    const x = jnp.array(h),
      want = refSum(n, (i) => h[i] * h[i]);
    for (const [how, got] of [
      ["eager", item(jnp.dot(x, x))],
      ["jit", item(jdot(x, x))],
      ["interpreter", onInterpreter(() => item(jnp.dot(x, x)))],
    ] as const) {
      assert.ok(rel(got, want) <= bound(n), `${name} ${how} dot: ${got}, want ${want}, rel ${rel(got, want)}`);
    }
  }
  const r = rng(11);
  const products = jit((a: Array, b: Array, w: Array) => [jnp.dot(a, w), jnp.dot(w, b), jnp.dot(a, b)]);
  for (const K of [2 ** 17, 100003]) {
    for (const kind of ["constant", "random"]) {
      const gen = (len: number) => Float32Array.from({ length: len }, () => (kind === "constant" ? 0.7615942 : r()));
      const A = gen(4 * K),
        B = gen(K * 4),
        v = gen(K);
      const [mv, vm, mm] = (
        products(jnp.reshape(jnp.array(A), [4, K]), jnp.reshape(jnp.array(B), [K, 4]), jnp.array(v)) as Array[]
      ).map(host);
      for (let i = 0; i < 4; i++) {
        const wmv = refSum(K, (k) => A[i * K + k] * v[k]),
          wvm = refSum(K, (k) => v[k] * B[k * 4 + i]);
        assert.ok(rel(mv[i], wmv) <= bound(K), `${kind} K=${K} matvec[${i}]: ${mv[i]}, want ${wmv}`);
        assert.ok(rel(vm[i], wvm) <= bound(K), `${kind} K=${K} vecmat[${i}]: ${vm[i]}, want ${wvm}`);
        for (let j = 0; j < 4; j++) {
          const w = refSum(K, (k) => A[i * K + k] * B[k * 4 + j]);
          assert.ok(rel(mm[i * 4 + j], w) <= bound(K), `${kind} K=${K} matmul[${i},${j}]: ${mm[i * 4 + j]}, want ${w}`);
        }
      }
    }
  }
});

test("blocked scans keep the plain scan's special values: -0 prefixes, infinities and NaN from where they occur", () => {
  const n = 5000;
  const z = host(jit((v: Array) => jnp.cumsum(v))(jnp.array(new Float32Array(n).fill(-0))));
  assert.ok(
    z.every((v) => Object.is(v, -0)),
    "a prefix of -0 stays -0",
  );
  const h = Float32Array.from({ length: n }, (_, i) => ((i * 7) % 13) - 6);
  h[1500] = Infinity;
  h[3200] = NaN;
  const got = host(jit((v: Array) => jnp.cumsum(v))(jnp.array(h)));
  const want = refCumsum(h);
  for (let i = 0; i < n; i++) {
    if (i < 1500)
      assert.equal(got[i], want[i], `[${i}]`); // small integers: exact
    else if (i < 3200) assert.equal(got[i], Infinity, `[${i}]`);
    else assert.ok(Number.isNaN(got[i]), `[${i}]`);
  }
  const rev = host(lax.cumsum(jnp.array(h), 0, true));
  for (let i = 0; i < n; i++)
    assert.ok(i <= 3200 ? Number.isNaN(rev[i]) : Number.isFinite(rev[i]), `reverse [${i}]: ${rev[i]}`);
});

test("long float32 products and cumulative products (computed in float64); integer sums stay exact (wrapping), float64 and float16 sums accurate", () => {
  const n = 100003,
    r = rng(5);
  const h = Float32Array.from({ length: n }, () => 1 + (r() - 0.5) * 1e-3);
  const want = Math.exp(refSum(n, (i) => Math.log(h[i])));
  const x = jnp.array(h);
  assert.ok(rel(item(jnp.prod(x)), want) <= bound(n), `prod ${item(jnp.prod(x))}, want ${want}`);
  const cp = host(jit((v: Array) => jnp.cumprod(v))(x));
  assert.ok(rel(cp[n - 1], want) <= bound(n), `cumprod last ${cp[n - 1]}, want ${want}`);
  const mid = Math.exp(refSum(50001, (i) => Math.log(h[i])));
  assert.ok(rel(cp[50000], mid) <= bound(n), `cumprod [50000] ${cp[50000]}, want ${mid}`);
  // int32: 1e6 * (2^20 + 3) wraps modulo 2^32, exactly
  const ints = jnp.full([1e6], 2 ** 20 + 3, { dtype: "int32" });
  assert.equal(item(jnp.sum(ints)), Number(BigInt.asIntN(32, 1000000n * BigInt(2 ** 20 + 3))));
  // float64: 4 log2(n) ulp of float64
  const f = Float64Array.from({ length: 1e6 }, () => 0.1 + r());
  const w64 = refSum(1e6, (i) => f[i]);
  config.update("enableX64", true);
  try {
    const s64 = item(jnp.sum(jnp.array(f, { dtype: "float64" })));
    assert.ok(rel(s64, w64) <= bound(1e6, 2 ** -53), `float64 sum ${s64}, want ${w64}`);
  } finally {
    config.update("enableX64", false);
  }
  // float16 accumulates in float32: only the final rounding to float16 remains (ulp 8 at 8192..16384)
  const s16 = item(jnp.sum(jnp.full([1e5], 0.1, { dtype: "float16" })));
  assert.ok(Math.abs(s16 - 1e5 * 0.0999755859375) <= 4, `float16 sum ${s16}`);
});

test("short reductions keep their single ORT op; long ones become trees of short ones", () => {
  const summary = (f: (v: Array) => Array, n: number): string => {
    const cj = makeJaxpr(f)(jnp.zeros([n], { dtype: "float32" }));
    return loweringSummary(cj.jaxpr as Jaxpr, `n${n}`);
  };
  const count = (text: string, op: string): number => (text.match(new RegExp(`= ${op}[\\[(]`, "g")) ?? []).length;
  assert.equal(
    count(
      summary((v) => jnp.sum(v), 1024),
      "ReduceSum",
    ),
    1,
  );
  assert.ok(
    count(
      summary((v) => jnp.sum(v), 4096),
      "ReduceSum",
    ) >= 2,
  );
  assert.equal(
    count(
      summary((v) => jnp.cumsum(v), 1024),
      "CumSum",
    ),
    1,
  );
  assert.ok(
    count(
      summary((v) => jnp.cumsum(v), 4096),
      "CumSum",
    ) >= 2,
  );
  // block lengths: a divisor near the target when one exists (no padding), else 0
  assert.equal(divisorNear(1e6, 64), 64);
  assert.equal(divisorNear(3125, 64), 25);
  assert.equal(divisorNear(1000003, 64), 0);
});
