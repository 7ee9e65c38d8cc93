/** @file jax.nn.initializers: JAX's published docstring values, exact equality with the jax.random composition JAX defines, sample statistics, fans, orthogonality and bad inputs. */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import * as I from "../../src/nn/initializers.js";
import * as nn from "../../src/nn/index.js";
import { PRNGKey, key as newKey } from "../../src/random/keys.js";
import * as random from "../../src/random/samplers.js";
import { jit } from "../../src/transforms/api.js";
import { assertThrowsWith } from "../numpy/math-cases.js";

const saved = { p: config.threefryPartitionable, x64: config.enableX64 };
after(() => {
  config.update("threefryPartitionable", saved.p);
  config.update("enableX64", saved.x64);
});

const flatten = (v: unknown): number[] => (globalThis.Array.isArray(v) ? v.flatMap(flatten) : [v as number]);
const flat = (x: Array): number[] => flatten(x.tolist());
const f32 = Math.fround;
const moments = (v: number[]): [number, number] => {
  const m = v.reduce((a, b) => a + b, 0) / v.length;
  return [m, Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / v.length)];
};

describe("JAX's published values (docstrings of jax.nn.initializers, PRNGKey(42), shape (2, 3), float32)", () => {
  // The docstrings were produced with jax_threefry_partitionable=False (JAX's default before 0.5).
  const run = (init: I.Initializer): number[] => {
    config.update("threefryPartitionable", false);
    try {
      return flat(init(PRNGKey(42), [2, 3], "float32"));
    } finally {
      config.update("threefryPartitionable", saved.p);
    }
  };
  // Uniform-based initializers print the shortest round-trip float32, so they must match bit for bit.
  const EXACT: [string, () => I.Initializer, number[]][] = [
    ["uniform(10)", () => I.uniform(10), [7.298188, 8.691938, 8.7230015, 2.0818567, 1.8662417, 5.5022564]],
    ["glorotUniform", () => I.glorotUniform(), [0.50350785, 0.8088631, 0.81566876, -0.6393332, -0.6865721, 0.11003882]],
    ["lecunUniform", () => I.lecunUniform(), [0.56293887, 0.90433645, 0.9119454, -0.71479625, -0.7676109, 0.12302713]],
    ["heUniform", () => I.heUniform(), [0.79611576, 1.2789248, 1.2896855, -1.0108745, -1.0855657, 0.17398663]],
  ];
  for (const [name, mk, want] of EXACT) it(`${name} is bit-exact`, () => assert.deepEqual(run(mk()), want.map(f32)));
  // Normal-based ones go through erf_inv, whose XLA implementation has changed by a few ulps since those docstrings
  // were generated (jaxts's normal is bit-exact with current JAX: test/random); orthogonal also goes through QR.
  const CLOSE: [string, () => I.Initializer, number[]][] = [
    ["normal(5)", () => I.normal(5), [3.0613258, 5.6129413, 5.6866574, -4.063663, -4.4520254, 0.63115686]],
    [
      "truncatedNormal(5)",
      () => I.truncatedNormal(5),
      [2.9047365, 5.2338114, 5.29852, -3.836303, -4.192359, 0.6022964],
    ],
    ["glorotNormal", () => I.glorotNormal(), [0.41770416, 0.75262755, 0.7619329, -0.5516644, -0.6028657, 0.08661086]],
    ["lecunNormal", () => I.lecunNormal(), [0.46700746, 0.8414632, 0.8518669, -0.61677957, -0.67402434, 0.09683388]],
    ["heNormal", () => I.heNormal(), [0.6604483, 1.1900088, 1.2047218, -0.87225807, -0.95321447, 0.1369438]],
    [
      "orthogonal",
      () => I.orthogonal(),
      [3.9026976e-1, 7.2495741e-1, -5.6756169e-1, 8.8047469e-1, -4.7409311e-1, -1.3157725e-4],
    ],
  ];
  for (const [name, mk, want] of CLOSE) {
    it(`${name} matches to float32 rounding`, () => {
      const got = run(mk());
      got.forEach((g, i) =>
        assert.ok(Math.abs(g - want[i]) <= 1e-6 * Math.abs(want[i]) + 2e-7, `${name}[${i}]: got ${g}, JAX ${want[i]}`),
      );
    });
  }
  it("deltaOrthogonal (3, 3, 3): zero except the centre slice, which matches JAX", () => {
    config.update("threefryPartitionable", false);
    let got: number[][][];
    try {
      got = I.deltaOrthogonal()(PRNGKey(42), [3, 3, 3], "float32").tolist() as number[][][];
    } finally {
      config.update("threefryPartitionable", saved.p);
    }
    const centre = [
      [0.27858758, -0.7949833, -0.53887904],
      [0.9120717, 0.04322892, 0.40774566],
      [-0.30085585, -0.6050892, 0.73712474],
    ];
    assert.deepEqual(got[0], [
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ]);
    assert.deepEqual(got[2], [
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ]);
    got[1]
      .flat()
      .forEach((g, i) =>
        assert.ok(Math.abs(g - centre.flat()[i]) <= 1e-6, `centre[${i}]: got ${g}, JAX ${centre.flat()[i]}`),
      );
  });
});

describe("exactly JAX's composition of jax.random samplers (float32 constants rounded as JAX does)", () => {
  const k = newKey(7);
  const scaledBy = (x: Array, s: number): number[] => flat(x).map((v) => f32(v * s));
  it("glorotNormal == truncatedNormal(key, -2, 2) * (sqrt(1 / fan_avg) / 0.8796...) in float32", () => {
    const stddev = f32(f32(Math.sqrt(f32(1 / 3.5))) / f32(0.87962566103423978)); // shape (3, 4): fan_avg = 3.5
    assert.deepEqual(
      flat(I.glorotNormal()(k, [3, 4])),
      scaledBy(random.truncatedNormal(k, -2, 2, [3, 4], "float32"), stddev),
    );
  });
  it("heUniform on a conv kernel == uniform(key, -1, 1) * sqrt(3 * 2 / fan_in), fan_in = 3*3*4", () => {
    const s = f32(Math.sqrt(f32(3 * f32(2 / 36))));
    assert.deepEqual(flat(I.heUniform()(k, [3, 3, 4, 5])), scaledBy(random.uniform(k, [3, 3, 4, 5], "float32", -1), s));
  });
  it("varianceScaling(0.5, fan_out, normal) == normal * sqrt(0.5 / fan_out)", () => {
    const s = f32(Math.sqrt(f32(0.5 / 10)));
    assert.deepEqual(
      flat(I.varianceScaling(0.5, "fan_out", "normal")(k, [7, 10])),
      scaledBy(random.normal(k, [7, 10], "float32"), s),
    );
  });
  it("lecunNormal in float64 (x64) == truncatedNormal * sqrt(1 / fan_in) / 0.8796...", () => {
    config.update("enableX64", true);
    try {
      const got = I.lecunNormal({ dtype: "float64" })(k, [6, 2]);
      assert.equal(got.dtype, "float64");
      const s = Math.sqrt(1 / 6) / 0.87962566103423978;
      assert.deepEqual(
        flat(got),
        flat(random.truncatedNormal(k, -2, 2, [6, 2], "float64")).map((v) => v * s),
      );
    } finally {
      config.update("enableX64", saved.x64);
    }
  });
  it("normal, uniform and truncatedNormal multiply by the float32-rounded parameter", () => {
    assert.deepEqual(flat(I.normal(0.3)(k, [5])), scaledBy(random.normal(k, [5], "float32"), f32(0.3)));
    assert.deepEqual(flat(I.uniform()(k, [5])), scaledBy(random.uniform(k, [5], "float32"), f32(1e-2)));
    assert.deepEqual(
      flat(I.truncatedNormal(2, undefined, -1, 3)(k, [5])),
      scaledBy(random.truncatedNormal(k, -1, 3, [5], "float32"), 2),
    );
    assert.deepEqual(
      flat(I.truncatedNormal({ stddev: 2, lower: -1, upper: 3 })(k, [5])),
      scaledBy(random.truncatedNormal(k, -1, 3, [5], "float32"), 2),
    );
  });
  it("aliases: xavier = glorot, kaiming = he", () => {
    assert.deepEqual(flat(I.xavierNormal()(k, [4, 4])), flat(I.glorotNormal()(k, [4, 4])));
    assert.deepEqual(flat(I.xavierUniform()(k, [4, 4])), flat(I.glorotUniform()(k, [4, 4])));
    assert.deepEqual(flat(I.kaimingNormal()(k, [4, 4])), flat(I.heNormal()(k, [4, 4])));
    assert.deepEqual(flat(I.kaimingUniform()(k, [4, 4])), flat(I.heUniform()(k, [4, 4])));
  });
  it("the builder's dtype is the default; the call's dtype overrides it", () => {
    assert.equal(I.glorotNormal({ dtype: "float16" })(k, [2, 2]).dtype, "float16");
    assert.equal(I.glorotNormal({ dtype: "float16" })(k, [2, 2], "bfloat16").dtype, "bfloat16");
    assert.equal(I.normal()(k, [2]).dtype, "float32");
  });
});

describe("fans and statistics", () => {
  it("computeFans: dense, conv (receptive field = product of the other axes), explicit and batch axes", () => {
    assert.deepEqual(I.computeFans([3, 4]), [3, 4]);
    assert.deepEqual(I.computeFans([3, 3, 16, 32]), [144, 288]);
    assert.deepEqual(I.computeFans([32, 16, 3, 3], { inAxis: 1, outAxis: 0 }), [144, 288]);
    assert.deepEqual(I.computeFans([4, 8, 16], { batchAxis: 0 }), [8, 16]);
    assert.deepEqual(I.computeFans([2, 3, 5, 7], { inAxis: [0, 1], outAxis: -1 }), [30, 35]);
  });
  const k = newKey(3);
  const stats: [string, I.Initializer, number[], number][] = [
    // [name, init, shape, expected std]; truncated normals are rescaled so their std is exactly sqrt(scale / n)
    ["heNormal HWIO conv", I.heNormal(), [3, 3, 64, 32], Math.sqrt(2 / 576)],
    ["glorotNormal", I.glorotNormal(), [300, 100], Math.sqrt(1 / 200)],
    ["glorotUniform", I.glorotUniform(), [300, 100], Math.sqrt(1 / 200)],
    ["lecunUniform OIHW via axes", I.lecunUniform(1, 0), [32, 64, 3, 3], Math.sqrt(1 / 576)],
    ["varianceScaling fan_out normal", I.varianceScaling(3, "fan_out", "normal"), [100, 300], Math.sqrt(3 / 300)],
    ["normal(0.2)", I.normal(0.2), [30000], 0.2],
  ];
  for (const [name, init, shape, std] of stats) {
    it(`${name}: mean 0, std ${std.toPrecision(4)}`, () => {
      const v = flat(init(k, shape));
      const [m, s] = moments(v);
      assert.ok(Math.abs(m) < (4 * std) / Math.sqrt(v.length), `${name}: mean ${m}`);
      assert.ok(Math.abs(s / std - 1) < 0.03, `${name}: std ${s}, expected ${std}`);
    });
  }
  it("uniform(scale) lies in [0, scale) with mean scale / 2; truncated normals stay inside their bounds", () => {
    const u = flat(I.uniform(4)(k, [20000]));
    assert.ok(u.every((x) => x >= 0 && x < 4));
    assert.ok(Math.abs(moments(u)[0] - 2) < 0.05);
    const bound = (2 * Math.sqrt(1 / 150)) / 0.87962566103423978;
    assert.ok(flat(I.glorotNormal()(k, [100, 200])).every((x) => Math.abs(x) < bound * (1 + 1e-6)));
    const t = flat(I.truncatedNormal(1, undefined, -0.5, 1.5)(k, [5000]));
    assert.ok(t.every((x) => x > -0.5 && x < 1.5) && t.some((x) => x < 0) && t.some((x) => x > 1));
  });
});

describe("orthogonal and deltaOrthogonal", () => {
  const k = newKey(11);
  /** Max |(A^T A) - c I| over the columns of a (rows, cols) matrix given as nested lists. */
  const gramErr = (a: number[][], c = 1): number => {
    const n = a[0].length;
    let e = 0;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (const row of a) s += row[i] * row[j];
        e = Math.max(e, Math.abs(s - (i === j ? c : 0)));
      }
    return e;
  };
  const T = (a: number[][]): number[][] => a[0].map((_, j) => a.map((r) => r[j]));
  it("tall (6, 3): orthonormal columns", () =>
    assert.ok(gramErr(I.orthogonal()(k, [6, 3]).tolist() as number[][]) < 1e-5));
  it("wide (3, 6): orthonormal rows", () =>
    assert.ok(gramErr(T(I.orthogonal()(k, [3, 6]).tolist() as number[][])) < 1e-5));
  it("square (5, 5) with scale 2: Q^T Q = 4 I", () =>
    assert.ok(gramErr(I.orthogonal(2)(k, [5, 5]).tolist() as number[][], 4) < 1e-4));
  it("columnAxis 0 of (4, 2, 5): the 4 columns are orthonormal over the other 10 entries", () => {
    const q = I.orthogonal({ columnAxis: 0 })(k, [4, 2, 5]).tolist() as number[][][];
    const cols = q.map((m) => m.flat()); // (4, 10): row i is column i
    assert.ok(gramErr(T(cols)) < 1e-5);
  });
  it("conv (3, 3, 4, 8): the (36, 8) matrix has orthonormal columns; float64 under x64 to 1e-12", () => {
    const q = I.orthogonal()(k, [3, 3, 4, 8]).tolist() as number[][][][];
    assert.ok(gramErr(q.flat(2)) < 1e-5);
    config.update("enableX64", true);
    try {
      assert.ok(gramErr(I.orthogonal({ dtype: "float64" })(k, [7, 4]).tolist() as number[][]) < 1e-12);
    } finally {
      config.update("enableX64", saved.x64);
    }
  });
  it("the sign fix makes Q a deterministic function of the normal sample: Q equals the Gram-Schmidt of its columns", () => {
    // Gram-Schmidt of A's columns gives the unique Q with positive diag(R), which is what Q * sign(diag R) is
    const a = random.normal(k, [5, 3], "float32").tolist() as number[][];
    const q = I.orthogonal()(k, [5, 3]).tolist() as number[][];
    const cols = T(a).map((c) => [...c]);
    const out: number[][] = [];
    for (const c of cols) {
      for (const u of out) {
        const d = c.reduce((s, x, i) => s + x * u[i], 0);
        c.forEach((_, i) => {
          c[i] -= d * u[i];
        });
      }
      const nrm = Math.hypot(...c);
      out.push(c.map((x) => x / nrm));
    }
    T(out)
      .flat()
      .forEach((g, i) => assert.ok(Math.abs(g - q.flat()[i]) < 1e-5, `Q[${i}]: ${q.flat()[i]} vs Gram-Schmidt ${g}`));
  });
  it("deltaOrthogonal 4-D (4, 5, 3, 6): only the centre (1, 2) holds the orthogonal matrix, equal to orthogonal(key, (3, 6))", () => {
    const w = I.deltaOrthogonal()(k, [4, 5, 3, 6]).tolist() as number[][][][];
    const m = I.orthogonal()(k, [3, 6]).tolist() as number[][];
    for (let a = 0; a < 4; a++)
      for (let b = 0; b < 5; b++) {
        if (a === 1 && b === 2) assert.deepEqual(w[a][b], m);
        else
          assert.ok(
            w[a][b].flat().every((x) => x === 0),
            `(${a}, ${b}) should be zero`,
          );
      }
    const w5 = I.deltaOrthogonal(1.5)(k, [3, 3, 3, 2, 2], "float32").tolist() as number[][][][][];
    assert.ok(gramErr(w5[1][1][1], 2.25) < 1e-5);
    assert.equal(w5.flat(4).filter((x) => x !== 0).length, 4);
  });
});

describe("under jit (the key traced; shapes, fans and constants static)", () => {
  const k = newKey(5);
  const CASES: [string, I.Initializer, number[], number][] = [
    ["glorotNormal", I.glorotNormal(), [3, 4], 0],
    ["heUniform conv", I.heUniform(), [3, 3, 2, 4], 0],
    ["truncatedNormal", I.truncatedNormal(0.5), [6], 0],
    ["orthogonal (QR in the program)", I.orthogonal(), [6, 4], 1e-6],
    ["deltaOrthogonal", I.deltaOrthogonal(), [3, 2, 2], 1e-6],
  ];
  for (const [name, init, shape, tol] of CASES) {
    it(`${name}: jit equals eager`, () => {
      const eager = flat(init(k, shape)),
        jitted = flat(jit((kk: unknown) => init(kk, shape))(k));
      if (tol === 0) assert.deepEqual(jitted, eager);
      else
        jitted.forEach((x, i) =>
          assert.ok(Math.abs(x - eager[i]) <= tol, `${name}[${i}]: jit ${x} vs eager ${eager[i]}`),
        );
    });
  }
});

describe("nn namespace and bad inputs", () => {
  it("is exported as nn.initializers", () => {
    assert.equal(nn.initializers.glorotNormal, I.glorotNormal);
    assert.equal(typeof nn.initializers.deltaOrthogonal, "function");
  });
  const k = newKey(0);
  const BAD: [string, () => unknown, (string | RegExp)[]][] = [
    [
      "unknown mode",
      () => I.varianceScaling(1, "fan_mid" as "fan_in", "normal"),
      ["initializers.varianceScaling", "fan_mid", "fan_avg"],
    ],
    [
      "unknown distribution",
      () => I.varianceScaling(1, "fan_in", "cauchy" as "normal"),
      ["initializers.varianceScaling", "cauchy", "truncated_normal"],
    ],
    ["1-D shape", () => I.glorotNormal()(k, [5]), ["initializers.glorotNormal", "(5,)", "at least 2-D"]],
    ["zero-size fan", () => I.glorotUniform()(k, [0, 3]), ["initializers.glorotUniform", "(0, 3)", "zero-size"]],
    ["axis out of range", () => I.heNormal({ inAxis: 3 })(k, [2, 3]), ["initializers.heNormal", "inAxis", "(2, 3)"]],
    ["integer dtype", () => I.lecunNormal()(k, [2, 3], "int32"), ["initializers.lecunNormal", "floating", "int32"]],
    ["missing key", () => I.normal()(null, [2]), ["initializers.normal", "key"]],
    ["bad shape", () => I.uniform()(k, [2, -1]), ["initializers.uniform", "shape"]],
    ["orthogonal 1-D", () => I.orthogonal()(k, [4]), ["initializers.orthogonal", "2-D", "(4,)"]],
    [
      "orthogonal columnAxis",
      () => I.orthogonal({ columnAxis: 2 })(k, [4, 4]),
      ["initializers.orthogonal", "columnAxis 2", "(4, 4)"],
    ],
    [
      "deltaOrthogonal 2-D",
      () => I.deltaOrthogonal()(k, [3, 3]),
      ["initializers.deltaOrthogonal", "3-D, 4-D or 5-D", "(3, 3)"],
    ],
    [
      "deltaOrthogonal fan_in > fan_out",
      () => I.deltaOrthogonal()(k, [3, 5, 4]),
      ["initializers.deltaOrthogonal", "fan_in (5", "fan_out (4", "(3, 5, 4)"],
    ],
    [
      "truncatedNormal bounds",
      () => I.truncatedNormal(1, undefined, 2, -2),
      ["initializers.truncatedNormal", "lower (2)", "upper (-2)"],
    ],
    [
      "unknown option",
      () => I.glorotUniform({ inAxes: 0 } as unknown as I.FanOptions),
      ["initializers.glorotUniform", "inAxes"],
    ],
  ];
  for (const [name, f, pats] of BAD) it(name, () => assertThrowsWith(f, ...pats));
});
