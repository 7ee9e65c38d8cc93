/** @file jax.random samplers: JAX's own test-suite values (legacy mode), bit-level checks against the pure-TS kernel, statistical sanity of every sampler, dtypes and error messages. */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";

import "../../src/backends/interpreter/interpreter.js";
import type { Array as JArray } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import { array } from "../../src/numpy/core.js";
import * as random from "../../src/random/index.js";
import { randomBits, seedToKey } from "../../src/random/threefry-kernel.js";
import { withFlags } from "./helpers.js";

const saved = { p: config.threefryPartitionable, x64: config.enableX64 };
after(() => {
  config.update("threefryPartitionable", saved.p);
  config.update("enableX64", saved.x64);
});

const nums = (x: JArray): number[] => {
  const out: number[] = [];
  const rec = (v: unknown): void => {
    if (globalThis.Array.isArray(v)) v.forEach(rec);
    else out.push(typeof v === "boolean" ? Number(v) : Number(v));
  };
  rec(x.tolist());
  return out;
};
function close(got: number[], exp: number[], rtol: number, msg = ""): void {
  assert.equal(got.length, exp.length, `${msg} length`);
  got.forEach((g, i) =>
    assert.ok(Math.abs(g - exp[i]) <= rtol * Math.max(1, Math.abs(exp[i])), `${msg} element ${i}: ${g} vs ${exp[i]}`),
  );
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const variance = (xs: number[]) => {
  const m = mean(xs);
  return xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1);
};
/** |sample mean - mu| within z standard errors (sd given or estimated). */
function meanOk(xs: number[], mu: number, sd: number, name: string, z = 5): void {
  const m = mean(xs);
  assert.ok(
    Math.abs(m - mu) <= (z * sd) / Math.sqrt(xs.length),
    `${name}: mean ${m}, expected ${mu} (sd ${sd}, n ${xs.length})`,
  );
}
function varOk(xs: number[], v: number, name: string, rel = 0.15): void {
  const s = variance(xs);
  assert.ok(Math.abs(s - v) <= rel * v, `${name}: variance ${s}, expected ${v}`);
}
const inRange = (xs: number[], lo: number, hi: number, name: string, closedHi = false): void => {
  for (const x of xs)
    assert.ok(x >= lo && (closedHi ? x <= hi : x < hi), `${name}: ${x} outside [${lo}, ${hi}${closedHi ? "]" : ")"}`);
};

describe("tests/random_test.py _RANDOM_VALUES_CASES (legacy threefry, x32; seeds adler32(name + 'threefry2x32'))", () => {
  const cases: [string, () => JArray, number[], number][] = [
    [
      "uniform",
      () => random.uniform(random.key(1338574713), [5]),
      [0.298671, 0.073213, 0.873356, 0.260549, 0.412797],
      2e-6,
    ],
    [
      "exponential",
      () => random.exponential(random.key(1942292768), [5]),
      [0.526067, 0.043046, 0.039932, 0.46427, 0.123886],
      2e-6,
    ],
    [
      "gumbel",
      () => random.gumbel(random.key(1179715317), [5]),
      [2.06701, 0.911726, 0.145736, 0.185427, -0.00711],
      2e-6,
    ],
    [
      "laplace",
      () => random.laplace(random.key(1291781963), [5]),
      [0.578939, -0.204902, 0.555733, 0.911053, -0.96456],
      2e-6,
    ],
    [
      "logistic",
      () => random.logistic(random.key(1466238935), [5]),
      [0.19611, -1.709053, -0.274093, -0.208322, -1.675489],
      2e-6,
    ],
    [
      "cauchy",
      () => random.cauchy(random.key(1175914230), [5]),
      [-0.088416, -10.169713, 3.49677, -1.18056, 0.34556],
      5e-6,
    ],
    [
      "pareto",
      () => random.pareto(random.key(1192560388), 0.5, [5]),
      [2.751398, 1.281863, 87.85448, 1.254542, 2.824487],
      2e-6,
    ],
    [
      "weibull_min",
      () => random.weibullMin(random.key(1921059088), 1, 1, [5]),
      [1.605863, 0.841809, 0.224218, 0.4826, 0.027901],
      2e-6,
    ],
    [
      "gamma",
      () => random.gamma(random.key(1038747260), 0.8, [5]),
      [0.824221, 1.724476, 0.502882, 5.386132, 0.685543],
      2e-6,
    ],
    [
      "loggamma",
      () => random.loggamma(random.key(1440221118), 0.8, [5]),
      [0.240559, -3.575443, -0.450946, -2.161372, -2.943277],
      2e-6,
    ],
    [
      "beta",
      () => random.beta(random.key(923534869), 0.8, 0.9, [5]),
      [0.13259, 0.824893, 0.948363, 0.964155, 0.235448],
      2e-6,
    ],
    [
      "maxwell",
      () => random.maxwell(random.key(1331627891), [5]),
      [3.070779, 0.908479, 1.521317, 0.875551, 1.306137],
      2e-6,
    ],
    [
      "double_sided_maxwell",
      () => random.doubleSidedMaxwell(random.key(3634826421), 1, 2, [5]),
      [-2.408914, -3.370437, 3.235352, -0.907734, -1.708732],
      2e-6,
    ],
    [
      "truncated_normal",
      () => random.truncatedNormal(random.key(2846034731), 0, 2, [5]),
      [0.582807, 1.709771, 0.159513, 0.861376, 0.36148],
      2e-6,
    ],
    ["poisson", () => random.poisson(random.key(1349191556), 5, [5]), [7, 3, 6, 11, 6], 0],
    ["bernoulli", () => random.bernoulli(random.key(1612777541), 0.5, [5]), [0, 1, 1, 1, 0], 0],
    ["randint", () => random.randint(random.key(1319372649), [5], 0, 10), [0, 5, 7, 7, 5], 0],
    [
      "dirichlet",
      () => random.dirichlet(random.key(1590822961), array([0.5, 0.6, 0.7]), [2]),
      [0.003128, 0.009694, 0.987178, 0.025938, 0.479091, 0.494971],
      2e-6,
    ],
    [
      "multivariate_normal",
      () =>
        random.multivariateNormal(
          random.key(3497659512),
          array([[1, 1, 1]]),
          array([
            [1, 0, 0],
            [0, 1, 0],
            [0, 0, 1],
          ]),
          [2],
        ),
      [1.067826, 1.215599, 0.234166, -0.237534, 1.32591, 1.413987],
      2e-6,
    ],
  ];
  for (const [name, f, exp, rtol] of cases) {
    it(name, () => withFlags({ partitionable: false, x64: false }, () => close(nums(f()), exp, rtol, name)));
  }
  it("loggamma(a=0) on raw key [3200590325, 713258242] takes the u == 0 guard", () =>
    withFlags({ partitionable: false, x64: false }, () => {
      close(
        nums(random.loggamma(array([3200590325, 713258242], { dtype: "uint32" }), 0, [], "float32")),
        [-4.595436],
        2e-6,
      );
    }));
});

describe("bit-level agreement with the pure-TS kernel", () => {
  const f32 = new Float32Array(1),
    f32u = new Uint32Array(f32.buffer);
  for (const p of [false, true]) {
    it(`uniform float32 = (bits >>> 9 | 1.0f) - 1 [partitionable=${p}]`, () =>
      withFlags({ partitionable: p, x64: false }, () => {
        const b = randomBits(seedToKey(7, false), 32, [40], p);
        const exp = Array.from(b, (x) => {
          f32u[0] = (x >>> 9) | 0x3f800000;
          return Math.fround(f32[0] - 1);
        });
        assert.deepEqual(nums(random.uniform(random.key(7), [40])), exp);
        // minval/maxval: max(lo, f * (hi - lo) + lo) in float32
        const lo = Math.fround(-1.5),
          span = Math.fround(Math.fround(2.25) - lo);
        assert.deepEqual(
          nums(random.uniform(random.key(7), [40], { minval: -1.5, maxval: 2.25 })),
          exp.map((x) => Math.max(lo, Math.fround(Math.fround(x * span) + lo))),
        );
      }));
    it(`uniform float64 under x64 = (bits >>> 12 | 1.0) - 1 [partitionable=${p}]`, () =>
      withFlags({ partitionable: p, x64: true }, () => {
        const b = randomBits(seedToKey(7, true), 64, [20], p);
        const f64 = new Float64Array(1),
          f64u = new BigUint64Array(f64.buffer);
        const exp = Array.from(b, (x) => {
          f64u[0] = (x >> 12n) | 0x3ff0000000000000n;
          return f64[0] - 1;
        });
        const u = random.uniform(random.key(7), [20]);
        assert.equal(u.dtype, "float64");
        assert.deepEqual(nums(u), exp);
      }));
    it(`uniform float16 / bfloat16 draw 16 / 8 bits [partitionable=${p}]`, () =>
      withFlags({ partitionable: p, x64: false }, () => {
        const b16 = randomBits(seedToKey(9, false), 16, [30], p);
        const h = random.uniform(random.key(9), [30], "float16");
        assert.equal(h.dtype, "float16");
        // (b >>> 6) | 0x3C00 is 1 + m/1024
        assert.deepEqual(
          nums(h),
          Array.from(b16, (x) => (x >>> 6) / 1024),
        );
        const b8 = randomBits(seedToKey(9, false), 8, [30], p);
        assert.deepEqual(
          nums(random.uniform(random.key(9), [30], "bfloat16")),
          Array.from(b8, (x) => (x >>> 1) / 128),
        );
      }));
    it(`bits of every width and the default uint dtype [partitionable=${p}]`, () =>
      withFlags({ partitionable: p }, () => {
        for (const w of [8, 16, 32] as const) {
          assert.deepEqual(
            nums(random.bits(random.key(3), [2, 3], `uint${w}` as DType)),
            Array.from(randomBits(seedToKey(3, false), w, [2, 3], p)),
          );
        }
        assert.equal(random.bits(random.key(3)).dtype, "uint32");
        withFlags({ x64: true }, () => {
          const b = random.bits(random.key(3), [4]);
          assert.equal(b.dtype, "uint64");
          assert.deepEqual(b.tolist(), Array.from(randomBits(seedToKey(3, true), 64, [4], p)));
        });
      }));
  }
  it("randint int64 under x64 (testPRNGValues: lo bits mod 8, multiplier 0)", () =>
    withFlags({ partitionable: false, x64: true }, () => {
      const r = random.randint(random.key(0), [3, 3], 0, 8);
      assert.equal(r.dtype, "int64");
      assert.deepEqual(r.tolist(), [
        [7n, 2n, 6n],
        [2n, 1n, 0n],
        [6n, 7n, 7n],
      ]);
    }));
});

describe("statistical sanity (partitionable, x32)", () => {
  const N = 3000;
  const k = (s: number) => random.key(s);
  it("uniform", () => {
    const x = nums(random.uniform(k(1), [N], { minval: -2, maxval: 3 }));
    inRange(x, -2, 3, "uniform");
    meanOk(x, 0.5, Math.sqrt(25 / 12), "uniform");
    varOk(x, 25 / 12, "uniform");
  });
  it("normal", () => {
    const x = nums(random.normal(k(2), [N]));
    meanOk(x, 0, 1, "normal");
    varOk(x, 1, "normal");
  });
  it("truncatedNormal", () => {
    const x = nums(random.truncatedNormal(k(3), -1, 2, [N]));
    inRange(x, -1, 2, "truncatedNormal");
    // mean of N(0,1) truncated to [a, b] = (phi(a) - phi(b)) / (Phi(b) - Phi(a))
    const phi = (z: number) => Math.exp((-z * z) / 2) / Math.sqrt(2 * Math.PI);
    meanOk(x, (phi(-1) - phi(2)) / (0.9772498680518208 - 0.15865525393145707), 0.8, "truncatedNormal");
    for (const v of x) assert.ok(v > -1 && v < 2);
  });
  it("randint", () => {
    const x = nums(random.randint(k(4), [N], 0, 10));
    inRange(x, 0, 10, "randint");
    meanOk(x, 4.5, Math.sqrt(99 / 12), "randint");
    const i8 = random.randint(k(5), [N], -5, 5, "int8");
    assert.equal(i8.dtype, "int8");
    inRange(nums(i8), -5, 5, "randint int8");
    const u8 = nums(random.randint(k(6), [N], 0, 256, "uint8"));
    inRange(u8, 0, 256, "randint uint8");
    assert.ok(Math.max(...u8) >= 250 && Math.min(...u8) <= 5);
    // maxval <= minval returns minval
    assert.deepEqual(nums(random.randint(k(7), [3], 5, 2)), [5, 5, 5]);
  });
  it("bernoulli / rademacher", () => {
    const b = random.bernoulli(k(8), 0.3, [N]);
    assert.equal(b.dtype, "bool");
    meanOk(nums(b), 0.3, Math.sqrt(0.21), "bernoulli");
    meanOk(nums(random.bernoulli(k(9), 0.3, [N], "high")), 0.3, Math.sqrt(0.21), "bernoulli high");
    const r = random.rademacher(k(10), [N]);
    assert.equal(r.dtype, "int32");
    const rv = nums(r);
    assert.ok(rv.every((v) => v === 1 || v === -1));
    meanOk(rv, 0, 1, "rademacher");
  });
  it("exponential / gumbel / laplace / logistic / cauchy", () => {
    const e = nums(random.exponential(k(11), [N]));
    inRange(e, 0, Infinity, "exponential");
    meanOk(e, 1, 1, "exponential");
    varOk(e, 1, "exponential", 0.2);
    for (const mode of ["low", "high", "highest"] as const) {
      const g = nums(random.gumbel(k(12), [N], { mode }));
      meanOk(g, 0.5772156649, Math.PI / Math.sqrt(6), `gumbel ${mode}`);
      varOk(g, Math.PI ** 2 / 6, `gumbel ${mode}`, 0.2);
    }
    const l = nums(random.laplace(k(13), [N]));
    meanOk(l, 0, Math.SQRT2, "laplace");
    varOk(l, 2, "laplace", 0.2);
    const lg = nums(random.logistic(k(14), [N]));
    meanOk(lg, 0, Math.PI / Math.sqrt(3), "logistic");
    varOk(lg, Math.PI ** 2 / 3, "logistic", 0.2);
    const c = nums(random.cauchy(k(15), [N]));
    const frac = c.filter((v) => Math.abs(v) < 1).length / N;
    assert.ok(Math.abs(frac - 0.5) < 0.05, `cauchy |x| < 1 fraction ${frac}`);
  });
  it("pareto / rayleigh / lognormal / wald / weibullMin / triangular / geometric", () => {
    const p = nums(random.pareto(k(16), 3, [N]));
    inRange(p, 1, Infinity, "pareto");
    meanOk(p, 1.5, Math.sqrt(0.75), "pareto", 6);
    meanOk(
      nums(random.rayleigh(k(17), 2, [N])),
      2 * Math.sqrt(Math.PI / 2),
      2 * Math.sqrt((4 - Math.PI) / 2),
      "rayleigh",
    );
    meanOk(
      nums(random.lognormal(k(18), 0.5, [N])),
      Math.exp(0.125),
      Math.sqrt((Math.exp(0.25) - 1) * Math.exp(0.25)),
      "lognormal",
    );
    const w = nums(random.wald(k(19), 2, [N]));
    inRange(w, 0, Infinity, "wald");
    meanOk(w, 2, Math.sqrt(8), "wald");
    meanOk(
      nums(random.weibullMin(k(20), 2, 1.5, [N])),
      2 * 0.9027452929509336,
      2 * Math.sqrt(1.1906393624359435 - 0.9027452929509336 ** 2),
      "weibullMin",
    );
    const t = nums(random.triangular(k(21), 0, 1, 3, [N]));
    inRange(t, 0, 3, "triangular", true);
    meanOk(t, 4 / 3, Math.sqrt(7 / 18), "triangular");
    const g = random.geometric(k(22), 0.25, [N]);
    assert.equal(g.dtype, "int32");
    const gv = nums(g);
    inRange(gv, 1, Infinity, "geometric");
    meanOk(gv, 4, Math.sqrt(0.75) / 0.25, "geometric");
  });
  it("maxwell / doubleSidedMaxwell", () => {
    const m = nums(random.maxwell(k(23), [N]));
    inRange(m, 0, Infinity, "maxwell");
    meanOk(m, 2 * Math.sqrt(2 / Math.PI), Math.sqrt(3 - 8 / Math.PI), "maxwell");
    const d = random.doubleSidedMaxwell(k(24), 1, 2, [N]);
    assert.deepEqual(d.shape, [N]);
    meanOk(nums(d), 1, Math.sqrt(12), "doubleSidedMaxwell");
    varOk(nums(d), 12, "doubleSidedMaxwell", 0.2);
  });
  it("gamma / loggamma / beta / dirichlet / chisquare / t / f", () => {
    const g = nums(random.gamma(k(25), 0.5, [N]));
    inRange(g, 0, Infinity, "gamma");
    meanOk(g, 0.5, Math.sqrt(0.5), "gamma");
    varOk(g, 0.5, "gamma", 0.25);
    const g3 = nums(random.gamma(k(26), array([3, 7]), [N / 2, 2]));
    meanOk(
      g3.filter((_, i) => i % 2 === 0),
      3,
      Math.sqrt(3),
      "gamma(3)",
    );
    meanOk(
      g3.filter((_, i) => i % 2 === 1),
      7,
      Math.sqrt(7),
      "gamma(7)",
    );
    meanOk(nums(random.loggamma(k(27), 2, [N])).map(Math.exp), 2, Math.SQRT2, "exp(loggamma)");
    for (const method of ["approximate"] as const) {
      meanOk(nums(random.gamma(k(28), 2, [N], { method })), 2, Math.SQRT2, "gamma approximate");
      meanOk(
        nums(random.loggamma(k(28), 0.3, [N], { method })).map(Math.exp),
        0.3,
        Math.sqrt(0.3),
        "loggamma approximate",
      );
    }
    const b = nums(random.beta(k(29), 2, 3, [N]));
    inRange(b, 0, 1, "beta", true);
    meanOk(b, 0.4, Math.sqrt(0.04), "beta");
    const d = random.dirichlet(k(30), array([1, 2, 3]), [N / 3]);
    assert.deepEqual(d.shape, [N / 3, 3]);
    const dv = nums(d);
    for (let i = 0; i < dv.length; i += 3) assert.ok(Math.abs(dv[i] + dv[i + 1] + dv[i + 2] - 1) < 1e-5);
    meanOk(
      dv.filter((_, i) => i % 3 === 2),
      0.5,
      Math.sqrt((0.5 * 0.5) / 7),
      "dirichlet",
    );
    meanOk(nums(random.chisquare(k(31), 4, [N])), 4, Math.sqrt(8), "chisquare");
    const tt = nums(random.t(k(32), 5, [N]));
    meanOk(tt, 0, Math.sqrt(5 / 3), "t");
    varOk(tt, 5 / 3, "t", 0.3);
    meanOk(nums(random.f(k(33), 5, 10, [N])), 1.25, 1.36, "f");
  });
  it("generalizedNormal / ball", () => {
    const g = nums(random.generalizedNormal(k(34), 1, [N]));
    meanOk(g.map(Math.abs), 1, 1, "generalizedNormal |x|");
    varOk(g, 2, "generalizedNormal", 0.2);
    const b = random.ball(k(35), 3, 2, [N / 3]);
    assert.deepEqual(b.shape, [N / 3, 3]);
    const bv = nums(b);
    const norms = [];
    for (let i = 0; i < bv.length; i += 3) norms.push(Math.hypot(bv[i], bv[i + 1], bv[i + 2]));
    inRange(norms, 0, 1, "ball", true);
    meanOk(norms, 0.75, Math.sqrt(3 / 80), "ball norm");
  });
  it("poisson (Knuth and rejection) / binomial (inversion and BTRS) / multinomial", () => {
    const p3 = random.poisson(k(36), 3, [N]);
    assert.equal(p3.dtype, "int32");
    meanOk(nums(p3), 3, Math.sqrt(3), "poisson(3)");
    varOk(nums(p3), 3, "poisson(3)", 0.15);
    meanOk(nums(random.poisson(k(37), 30, [N])), 30, Math.sqrt(30), "poisson(30)");
    for (const lam of [3, 30]) {
      const pa = random.poisson(k(62), lam, [N], { method: "approximate" });
      assert.equal(pa.dtype, "int32");
      meanOk(nums(pa), lam, Math.sqrt(lam), `poisson(${lam}) approximate`);
      varOk(nums(pa), lam, `poisson(${lam}) approximate`);
    }
    const mixed = nums(random.poisson(k(38), array([0, 2, 50]), [N / 3, 3]));
    assert.ok(mixed.filter((_, i) => i % 3 === 0).every((v) => v === 0));
    meanOk(
      mixed.filter((_, i) => i % 3 === 2),
      50,
      Math.sqrt(50),
      "poisson(50)",
    );
    const b1 = random.binomial(k(39), 20, 0.3, [N]);
    assert.equal(b1.dtype, "float32");
    meanOk(nums(b1), 6, Math.sqrt(4.2), "binomial inversion");
    inRange(nums(b1), 0, 20, "binomial", true);
    const b2 = nums(random.binomial(k(40), 100, 0.6, [N]));
    meanOk(b2, 60, Math.sqrt(24), "binomial btrs");
    inRange(b2, 0, 100, "binomial btrs", true);
    const m = random.multinomial(k(41), 10, array([0.2, 0.3, 0.5]), { shape: [N / 3, 3] });
    assert.deepEqual(m.shape, [N / 3, 3]);
    const mv = nums(m);
    for (let i = 0; i < mv.length; i += 3) assert.equal(mv[i] + mv[i + 1] + mv[i + 2], 10);
    meanOk(
      mv.filter((_, i) => i % 3 === 2),
      5,
      Math.sqrt(2.5),
      "multinomial",
    );
  });
  it("categorical / choice / permutation", () => {
    const probs = [0.2, 0.3, 0.5];
    const logits = array(probs.map(Math.log));
    const c = random.categorical(k(42), logits, { shape: [N] });
    assert.equal(c.dtype, "int32");
    const cv = nums(c);
    probs.forEach((p, j) =>
      meanOk(
        cv.map((v) => Number(v === j)),
        p,
        Math.sqrt(p * (1 - p)),
        `categorical ${j}`,
      ),
    );
    // batched logits along axis 0, and sampling without replacement
    const c2 = random.categorical(
      k(43),
      array(
        [
          [0, 0],
          [0, 0],
          [5, -5],
        ],
        { dtype: "float32" },
      ),
      0,
    );
    assert.deepEqual(c2.shape, [2]);
    const nr = random.categorical(k(44), array([1, 2, 3, 4], { dtype: "float32" }), { shape: [4], replace: false });
    assert.deepEqual([...nums(nr)].sort(), [0, 1, 2, 3]);
    const ch = nums(random.choice(k(45), 3, [N], true, array(probs)));
    probs.forEach((p, j) =>
      meanOk(
        ch.map((v) => Number(v === j)),
        p,
        Math.sqrt(p * (1 - p)),
        `choice ${j}`,
      ),
    );
    const chu = nums(random.choice(k(46), 10, [N]));
    inRange(chu, 0, 10, "choice");
    meanOk(chu, 4.5, Math.sqrt(99 / 12), "choice");
    const nrep = nums(random.choice(k(47), 20, [10], false));
    assert.equal(new Set(nrep).size, 10);
    const nrepP = nums(random.choice(k(48), 20, [10], false, array(Array.from({ length: 20 }, () => 0.05))));
    assert.equal(new Set(nrepP).size, 10);
    const rows = random.choice(
      k(49),
      array([
        [1, 2],
        [3, 4],
        [5, 6],
      ]),
      [4],
      { axis: 0 },
    );
    assert.deepEqual(rows.shape, [4, 2]);
    for (let i = 0; i < 4; i++) {
      const r = nums(rows).slice(2 * i, 2 * i + 2);
      assert.equal(r[1], r[0] + 1);
    }
    const perm = nums(random.permutation(k(50), 50));
    assert.deepEqual(
      [...perm].sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i),
    );
    const x = array([
      [0, 1, 2],
      [10, 11, 12],
      [20, 21, 22],
      [30, 31, 32],
    ]);
    const px = nums(random.permutation(k(51), x));
    for (let i = 0; i < 4; i++)
      assert.deepEqual(
        px.slice(3 * i, 3 * i + 3).map((v) => v % 10),
        [0, 1, 2],
      );
    const ind = nums(random.permutation(k(52), x, 1, true));
    for (let i = 0; i < 4; i++)
      assert.deepEqual(
        ind.slice(3 * i, 3 * i + 3).sort((a, b) => a - b),
        [0, 1, 2].map((j) => 10 * i + j),
      );
    assert.deepEqual(nums(random.shuffle(k(53), array([5, 6, 7]))).sort(), [5, 6, 7]);
  });
  it("multivariateNormal (cholesky, eigh, svd) / orthogonal", () => {
    const cov = [
      [2, 0.6],
      [0.6, 1],
    ];
    for (const method of ["cholesky", "eigh", "svd"] as const) {
      const x = random.multivariateNormal(k(54), array([1, -1]), array(cov), [N], { method });
      assert.deepEqual(x.shape, [N, 2]);
      const v = nums(x),
        a = v.filter((_, i) => i % 2 === 0),
        b = v.filter((_, i) => i % 2 === 1);
      meanOk(a, 1, Math.SQRT2, `mvn ${method}`);
      meanOk(b, -1, 1, `mvn ${method}`);
      varOk(a, 2, `mvn ${method}`);
      const ma = mean(a),
        mb = mean(b);
      const cv = a.reduce((s, ai, i) => s + (ai - ma) * (b[i] - mb), 0) / (N - 1);
      assert.ok(Math.abs(cv - 0.6) < 0.12, `mvn ${method} covariance ${cv}`);
    }
    for (const [n, m] of [
      [4, 4],
      [4, 2],
      [2, 5],
    ]) {
      const q = random.orthogonal(k(55), n, [3], { m });
      assert.deepEqual(q.shape, [3, n, m]);
      const v = nums(q);
      for (let b = 0; b < 3; b++) {
        const at = (i: number, j: number) => v[b * n * m + i * m + j];
        const small = Math.min(n, m);
        // the smaller Gram matrix is the identity
        for (let i = 0; i < small; i++)
          for (let j = 0; j < small; j++) {
            let s = 0;
            if (n >= m) for (let r = 0; r < n; r++) s += at(r, i) * at(r, j);
            else for (let c = 0; c < m; c++) s += at(i, c) * at(j, c);
            assert.ok(Math.abs(s - (i === j ? 1 : 0)) < 1e-5, `orthogonal ${n}x${m} gram[${i},${j}] = ${s}`);
          }
      }
    }
  });
  it("float64 samplers under x64", () =>
    withFlags({ x64: true }, () => {
      for (const [name, x] of [
        ["normal", random.normal(k(56), [N])],
        ["gamma", random.gamma(k(57), 2, [500])],
        ["exponential", random.exponential(k(58), [N])],
      ] as const)
        assert.equal(x.dtype, "float64", name);
      meanOk(nums(random.normal(k(56), [N])), 0, 1, "normal f64");
      meanOk(nums(random.gamma(k(57), 2, [500])), 2, Math.SQRT2, "gamma f64");
      assert.equal(random.poisson(k(59), 4, [3]).dtype, "int64");
      assert.equal(random.randint(k(60), [3], 0, 5).dtype, "int64");
      assert.equal(random.bernoulli(k(61), 0.5, [3]).dtype, "bool");
    }));
});

describe("argument handling and errors", () => {
  const key = random.key(0);
  it("positional JAX order and options objects agree", () => {
    assert.deepEqual(
      nums(random.uniform(key, [3], "float32", -1, 1)),
      nums(random.uniform(key, [3], { minval: -1, maxval: 1 })),
    );
    assert.deepEqual(
      nums(random.randint(key, [3], 0, 9, "int32")),
      nums(random.randint(key, { shape: [3], minval: 0, maxval: 9, dtype: "int32" })),
    );
    assert.deepEqual(nums(random.normal(key, 3)), nums(random.normal(key, [3])));
    assert.throws(() => random.uniform(key, [3], { bogus: 1 } as never), /uniform: got an unexpected option "bogus"/);
    assert.throws(
      () => random.uniform(key, [3], "float32", { dtype: "float32" }),
      /multiple values for argument "dtype"/,
    );
  });
  it("bad keys name the function and the key's shape and dtype", () => {
    assert.throws(
      () => random.uniform(array([1, 2], { dtype: "float32" }) as never),
      /uniform: invalid PRNG key.*dtype float32 and shape \(2,\)/,
    );
    assert.throws(
      () => random.normal(array([1, 2, 3], { dtype: "uint32" })),
      /normal: invalid PRNG key.*dtype uint32 and shape \(3,\)/,
    );
    assert.throws(() => random.split(5 as never), /split: unexpected PRNG key type: number 5/);
    assert.throws(
      () => random.gamma(random.split(key, 3), 1.0),
      /gamma accepts a single key, but was given a key array of shape \(3,\)/,
    );
    assert.throws(() => random.wrapKeyData(array([1, 2, 3], { dtype: "uint32" })), /wrapKeyData: .*shape \(3,\)/);
    assert.throws(() => random.key(array([1, 2])), /key accepts a scalar seed/);
    assert.throws(() => random.key(1.5), /must be an integer/);
    assert.throws(() => random.key(key as never), /scalar seed, but was given a PRNG key/);
  });
  it("bad dtypes and shapes", () => {
    assert.throws(
      () => random.uniform(key, [2], "int32"),
      /dtype argument to `uniform` must be a float dtype, got int32/,
    );
    assert.throws(() => random.randint(key, [2], 0, 5, "float32"), /randint.*integer dtype/);
    assert.throws(() => random.bits(key, [2], "int32"), /unsigned int dtype/);
    assert.throws(() => random.normal(key, [-1]), /shape must be a non-negative integer/);
    assert.throws(
      () => random.gamma(key, array([1, 2, 3]), [2]),
      /gamma parameter shapes must be broadcast-compatible/,
    );
    assert.throws(
      () => random.bernoulli(key, array([1, 0])),
      /bernoulli probability `p` must have a floating dtype, got int32/,
    );
    assert.throws(() => random.choice(key, 3, [5], false), /Cannot take a larger sample/);
    assert.throws(
      () =>
        random.multivariateNormal(
          key,
          array([0, 0]),
          array([
            [1, 0, 0],
            [0, 1, 0],
            [0, 0, 1],
          ]),
        ),
      /cov.shape == \(..., n, n\) for n=2/,
    );
  });
  it("typed and raw keys: split/foldIn return the same kind, keyData/wrapKeyData round-trip", () => {
    const raw = random.PRNGKey(3);
    assert.equal(raw.dtype, "uint32");
    assert.deepEqual(raw.shape, [2]);
    const typed = random.key(3);
    assert.deepEqual(random.keyData(typed).tolist(), raw.tolist());
    const s = random.split(typed, [2, 3]) as random.PRNGKeyArray;
    assert.ok(s instanceof random.PRNGKeyArray);
    assert.deepEqual(s.shape, [2, 3]);
    assert.equal(s.dtype, "key<fry>");
    const rs = random.split(raw, [2, 3]) as JArray;
    assert.ok(!(rs instanceof random.PRNGKeyArray));
    assert.deepEqual(rs.tolist(), random.keyData(s).tolist());
    const w = random.wrapKeyData(random.keyData(s));
    assert.deepEqual(random.keyData(w).tolist(), random.keyData(s).tolist());
    assert.deepEqual(nums(w.get(1).get(2).eq(s.get(1).get(2))), [1]);
    const [a, b] = random.split(typed) as random.PRNGKeyArray;
    const row0 = (random.keyData(random.split(typed)).tolist() as number[][])[0];
    assert.deepEqual(nums(random.uniform(a, [2])), nums(random.uniform(array(row0, { dtype: "uint32" }), [2])));
    assert.notDeepEqual(nums(random.uniform(a, [2])), nums(random.uniform(b, [2])));
    assert.equal(random.keyImpl(typed), "threefry2x32");
    assert.equal(random.clone(typed), typed);
  });
});
