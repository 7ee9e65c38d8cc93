/** @file jax.random under transformations: vmap over keys equals stacking eager calls, jit equals eager, grad through reparameterized samplers (incl. gamma's implicit gradient), the threefry2x32 and random_gamma_grad primitives. */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";

import "../../src/backends/interpreter/interpreter.js";
import type { Array as JArray } from "../../src/core/array.js";
import { ShapedArray } from "../../src/core/aval.js";
import { config } from "../../src/core/config.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { gammaSampleGrad, randomGammaGrad, threefry2x32 as tfPrim } from "../../src/primitives/random.js";
import * as random from "../../src/random/index.js";
import { threefry2x32Block } from "../../src/random/threefry-kernel.js";
import { grad, jit, jvp, makeJaxpr, vmap } from "../../src/transforms/api.js";
import { vmapFlat } from "../../src/transforms/vmap.js";

const saved = { p: config.threefryPartitionable, x64: config.enableX64 };
after(() => {
  config.update("threefryPartitionable", saved.p);
  config.update("enableX64", saved.x64);
});
function withFlags<T>(flags: { partitionable?: boolean; x64?: boolean }, f: () => T): T {
  const p = config.threefryPartitionable,
    x = config.enableX64;
  if (flags.partitionable !== undefined) config.update("threefryPartitionable", flags.partitionable);
  if (flags.x64 !== undefined) config.update("enableX64", flags.x64);
  try {
    return f();
  } finally {
    config.update("threefryPartitionable", p);
    config.update("enableX64", x);
  }
}
const list = (x: unknown): unknown =>
  x instanceof random.PRNGKeyArray ? random.keyData(x).tolist() : (x as JArray).tolist();
const u32 = (xs: number[]) => array(xs, { dtype: "uint32" });

type Sampler = [string, (k: random.KeyLike) => JArray | random.KeyLike];
const SAMPLERS: Sampler[] = [
  ["uniform", (k) => random.uniform(k, [3], { minval: -1, maxval: 2 })],
  ["normal", (k) => random.normal(k, [2, 2])],
  ["truncatedNormal", (k) => random.truncatedNormal(k, -0.5, 1.5, [3])],
  ["randint", (k) => random.randint(k, [4], 0, 7)],
  ["bernoulli", (k) => random.bernoulli(k, 0.3, [4])],
  ["bits", (k) => random.bits(k, [3], "uint8")],
  ["split", (k) => random.split(k, 3)],
  ["foldIn", (k) => random.foldIn(k, 17)],
  ["exponential", (k) => random.exponential(k, [3])],
  ["gumbel", (k) => random.gumbel(k, [3], { mode: "highest" })],
  ["gamma", (k) => random.gamma(k, array([0.4, 3]), [2])],
  ["beta", (k) => random.beta(k, 0.7, 2, [2])],
  ["poisson", (k) => random.poisson(k, array([2, 40]), [2])],
  ["binomial", (k) => random.binomial(k, array([5, 80]), 0.4, [2])],
  ["permutation", (k) => random.permutation(k, 6)],
  ["choice", (k) => random.choice(k, 5, [3], true, array([0.1, 0.2, 0.3, 0.2, 0.2]))],
  ["categorical", (k) => random.categorical(k, array([0.1, 0.5, 2.0]), { shape: [3] })],
  [
    "multivariateNormal",
    (k) =>
      random.multivariateNormal(
        k,
        array([0, 1]),
        array([
          [1, 0.5],
          [0.5, 2],
        ]),
      ),
  ],
];

describe("split(key, n)[i] == foldIn(key, i) (partitionable)", () => {
  it("typed and raw keys, flat and shaped num", () =>
    withFlags({ partitionable: true }, () => {
      const key = random.key(1234);
      const s = random.split(key, 5) as random.PRNGKeyArray;
      for (let i = 0; i < 5; i++) assert.deepEqual(list(s.get(i)), list(random.foldIn(key, i)));
      const raw = random.PRNGKey(1234);
      const rs = (random.split(raw, [2, 3]) as JArray).tolist() as number[][][];
      for (let i = 0; i < 6; i++)
        assert.deepEqual(rs[Math.floor(i / 3)][i % 3], (random.foldIn(raw, i) as JArray).tolist());
    }));
  it("does not hold in legacy mode", () =>
    withFlags({ partitionable: false }, () => {
      const key = random.key(1234);
      assert.notDeepEqual(list((random.split(key, 2) as random.PRNGKeyArray).get(1)), list(random.foldIn(key, 1)));
    }));
});

describe("vmap over keys equals stacking eager calls", () => {
  for (const p of [true, false]) {
    for (const [name, f] of SAMPLERS) {
      it(`${name} [partitionable=${p}]`, () =>
        withFlags({ partitionable: p }, () => {
          const keys = random.split(random.key(99), 3) as random.PRNGKeyArray;
          const batched = list(vmap(f)(keys));
          const each = [0, 1, 2].map((i) => list(f(keys.get(i))));
          assert.deepEqual(batched, each);
          // raw keys through vmapFlat (the flat transformation) agree too
          const rawKeys = random.keyData(keys);
          const [flatOut] = vmapFlat(
            (k) => {
              const o = f(k);
              return [o instanceof random.PRNGKeyArray ? o.data : (o as JArray)];
            },
            [rawKeys],
            [0],
            [0],
            { size: 3, name: null },
          );
          assert.deepEqual(flatOut.tolist(), each);
        }));
    }
  }
  it("vmap over a parameter with an unbatched key", () => {
    const key = random.key(5);
    const lo = array([-1, 0, 1], { dtype: "float32" });
    const out = vmap((m: JArray) => random.uniform(key, [2], { minval: m, maxval: 3 }), { inAxes: 0 })(lo);
    assert.deepEqual(
      out.tolist(),
      [0, 1, 2].map((i) => random.uniform(key, [2], { minval: [-1, 0, 1][i], maxval: 3 }).tolist()),
    );
    const g = vmap((a: JArray) => random.gamma(key, a))(array([0.5, 2, 9], { dtype: "float32" }));
    assert.deepEqual(
      g.tolist(),
      [0.5, 2, 9].map((a) => random.gamma(key, a).item()),
    );
  });
  it("nested vmap over a (2, 3) key array", () => {
    const keys = random.split(random.key(7), [2, 3]) as random.PRNGKeyArray;
    const out = vmap(vmap((k: random.PRNGKeyArray) => random.normal(k, [2])))(keys);
    const each = [0, 1].map((i) => [0, 1, 2].map((j) => random.normal(keys.get(i).get(j), [2]).tolist()));
    assert.deepEqual(out.tolist(), each);
  });
});

describe("jit equals eager", () => {
  for (const p of [true, false]) {
    for (const [name, f] of SAMPLERS) {
      it(`${name} [partitionable=${p}]`, () =>
        withFlags({ partitionable: p }, () => {
          const key = random.key(2024);
          assert.deepEqual(list(jit(f)(key)), list(f(key)));
          const raw = random.PRNGKey(2024);
          assert.deepEqual(list(jit(f)(raw)), list(f(raw)));
        }));
    }
  }
  it("typed keys pass through jit as pytrees, keyData/wrapKeyData inside jit", () => {
    const key = random.key(11);
    const step = jit((k: random.PRNGKeyArray) => {
      const [a, b] = random.split(k) as random.PRNGKeyArray;
      return [a, random.normal(b, [2])];
    });
    const [k2, x] = step(key) as [random.PRNGKeyArray, JArray];
    assert.ok(k2 instanceof random.PRNGKeyArray);
    const [a, b] = random.split(key) as random.PRNGKeyArray;
    assert.deepEqual(list(k2), list(a));
    assert.deepEqual(x.tolist(), random.normal(b, [2]).tolist());
    const rt = jit((d: JArray) => random.keyData(random.foldIn(random.wrapKeyData(d), 3)))(random.keyData(key));
    assert.deepEqual(rt.tolist(), list(random.foldIn(key, 3)));
  });
  it("a traced integer seed: jit(key)(seed) == key(seed)", () =>
    withFlags({ x64: false }, () => {
      const mk = jit((s: JArray) => random.keyData(random.key(s)));
      for (const s of [0, 7, -1]) assert.deepEqual(mk(array(s, { dtype: "int32" })).tolist(), list(random.key(s)));
      withFlags({ x64: true }, () => {
        assert.deepEqual(
          jit((s: JArray) => random.PRNGKey(s))(array(-3, { dtype: "int64" })).tolist(),
          [4294967295, 4294967293],
        );
      });
    }));
  it("the jaxpr of uniform shows threefry2x32 and the mantissa trick", () => {
    const j = String(makeJaxpr((k: random.PRNGKeyArray) => random.uniform(k, [2]))(random.key(0)));
    assert.match(j, /threefry2x32/);
    assert.match(j, /shift_right_logical .* 9:u32\[\]/);
    assert.match(j, /bitcast_convert_type\[new_dtype=float32\]/);
  });
});

describe("grad through samplers (keys are not differentiable)", () => {
  const key = random.key(3);
  it("normal * sigma + mu", () => {
    const z = random.normal(key, [4]);
    const loss = (mu: JArray, sigma: JArray) =>
      ops.reduceSum(ops.add(ops.mul(random.normal(key, [4]), sigma), mu), [0]);
    const g = grad(loss, { argnums: [0, 1] })(
      array(0.5, { dtype: "float32" }),
      array(2, { dtype: "float32" }),
    ) as unknown as JArray[];
    assert.equal(g[0].item(), 4);
    assert.ok(Math.abs((g[1].item() as number) - (ops.reduceSum(z, [0]).item() as number)) < 1e-6);
  });
  it("uniform in minval/maxval, and jit(grad)", () => {
    const f = (hi: JArray) => ops.reduceSum(random.uniform(key, [5], { minval: 0, maxval: hi }), [0]);
    const unit = ops.reduceSum(random.uniform(key, [5]), [0]).item() as number;
    const g = grad(f)(array(3, { dtype: "float32" })) as JArray;
    assert.ok(Math.abs((g.item() as number) - unit) < 1e-6);
    assert.equal((jit(grad(f))(array(3, { dtype: "float32" })) as JArray).item(), g.item());
  });
  it("truncatedNormal in its bounds is finite", () => {
    const g = grad((lo: JArray) => ops.reduceSum(random.truncatedNormal(key, lo, 2, [3]), [0]))(
      array(-1, { dtype: "float32" }),
    ) as JArray;
    assert.ok(Number.isFinite(g.item() as number));
  });
  it("gamma: implicit reparameterization d sample / d a = -(dP/da) / pdf", () =>
    withFlags({ x64: true }, () => {
      const a = array([0.3, 1.0, 2.5, 12], { dtype: "float64" });
      const samples = random.gamma(key, a).tolist() as number[];
      const [, tangent] = jvp(
        (x: JArray) => random.gamma(key, x),
        [a],
        [array([1, 1, 1, 1], { dtype: "float64" })],
      ) as [JArray, JArray];
      const t = tangent.tolist() as number[];
      [0.3, 1.0, 2.5, 12].forEach((ai, i) => {
        const x = samples[i];
        const h = 1e-6 * Math.max(1, ai);
        const dPda = (regGammaP(ai + h, x) - regGammaP(ai - h, x)) / (2 * h);
        const pdf = Math.exp((ai - 1) * Math.log(x) - x - lgammaRef(ai));
        const want = -dPda / pdf;
        assert.ok(Math.abs(t[i] - want) <= 1e-5 * Math.max(1, Math.abs(want)), `a=${ai} x=${x}: ${t[i]} vs ${want}`);
      });
      // grad of sum(gamma) equals the jvp with ones; loggamma's tangent is the gamma tangent over the sample
      const g = grad((x: JArray) => ops.reduceSum(random.gamma(key, x), [0]))(a) as JArray;
      (g.tolist() as number[]).forEach((v, i) => assert.ok(Math.abs(v - t[i]) < 1e-9 * Math.max(1, Math.abs(t[i]))));
      const [, lt] = jvp((x: JArray) => random.loggamma(key, x), [a], [array([1, 1, 1, 1], { dtype: "float64" })]) as [
        JArray,
        JArray,
      ];
      (lt.tolist() as number[]).forEach((v, i) =>
        assert.ok(Math.abs(v - t[i] / samples[i]) < 1e-6 * Math.max(1, Math.abs(v))),
      );
    }));
  it("beta and dirichlet are differentiable in their parameters", () => {
    const gb = grad((a: JArray) => ops.reduceSum(random.beta(key, a, 2, [3]), [0]))(
      array(1.5, { dtype: "float32" }),
    ) as JArray;
    assert.ok(Number.isFinite(gb.item() as number));
    const gd = grad((al: JArray) =>
      ops.reduceSum(ops.mul(random.dirichlet(key, al), array([1, 2, 3], { dtype: "float32" })), [0]),
    )(array([1, 2, 3], { dtype: "float32" })) as JArray;
    assert.ok((gd.tolist() as number[]).every(Number.isFinite));
  });
});

describe("primitives", () => {
  it("threefry2x32 broadcasts its operands and checks dtypes", () => {
    const sc = (v: number) => ops.reshape(u32([v]), []);
    const [y0, y1] = tfPrim(sc(1), sc(2), u32([5, 6]), sc(9));
    assert.deepEqual(
      [y0.tolist(), y1.tolist()],
      [
        [threefry2x32Block(1, 2, 5, 9)[0], threefry2x32Block(1, 2, 6, 9)[0]],
        [threefry2x32Block(1, 2, 5, 9)[1], threefry2x32Block(1, 2, 6, 9)[1]],
      ],
    );
    assert.throws(
      () => tfPrim(array([1], { dtype: "int32" }), u32([1]), u32([1]), u32([1])),
      /threefry2x32 must have uint32 type/,
    );
    assert.throws(() => tfPrim(u32([1, 2]), u32([1, 2, 3]), u32([1]), u32([1])), /threefry2x32.*cannot be broadcast/);
    const { jaxpr } = traceToJaxpr(
      (a, b, c, d) => tfPrim(a, b, c, d),
      [
        new ShapedArray([], "uint32"),
        new ShapedArray([], "uint32"),
        new ShapedArray([4], "uint32"),
        new ShapedArray([4], "uint32"),
      ],
    );
    assert.match(String(jaxpr), /e:u32\[4\] f:u32\[4\] = threefry2x32 a b c d/);
  });
  it("threefry2x32 vmap: batched key words against unbatched counters", () => {
    const k0 = u32([1, 2, 3]),
      x = u32([10, 11]);
    const [out] = vmapFlat((k) => [tfPrim(k, ops.reshape(u32([7]), []), x, x)[0]], [k0], [0], [0], {
      size: 3,
      name: null,
    });
    assert.deepEqual(
      out.tolist(),
      [1, 2, 3].map((k) => [10, 11].map((c) => threefry2x32Block(k, 7, c, c)[0])),
    );
  });
  it("random_gamma_grad matches the implicit derivative and batches", () => {
    withFlags({ x64: true }, () => {
      const g = randomGammaGrad(
        array([0.5, 4], { dtype: "float64" }),
        array([0.2, 5], { dtype: "float64" }),
      ).tolist() as number[];
      [
        [0.5, 0.2],
        [4, 5],
      ].forEach(([ai, xi], i) => {
        const h = 1e-6;
        const want =
          -((regGammaP(ai + h, xi) - regGammaP(ai - h, xi)) / (2 * h)) /
          Math.exp((ai - 1) * Math.log(xi) - xi - lgammaRef(ai));
        assert.ok(Math.abs(g[i] - want) < 1e-6 * Math.max(1, Math.abs(want)), `${g[i]} vs ${want}`);
      });
    });
    assert.equal(gammaSampleGrad(1, 0), 0);
    assert.ok(Number.isNaN(gammaSampleGrad(-1, 1)));
  });
});

// ---- float64 references for the gamma gradient checks
function lgammaRef(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgammaRef(1 - x);
  const z = x - 1;
  let s = c[0];
  for (let i = 1; i < 9; i++) s += c[i] / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(s);
}
/** Regularized lower incomplete gamma P(a, x) (series / continued fraction). */
function regGammaP(a: number, x: number): number {
  const lp = a * Math.log(x) - x - lgammaRef(a);
  if (x < a + 1) {
    let ap = a,
      del = 1 / a,
      sum = del;
    for (let n = 0; n < 10000 && Math.abs(del) > Math.abs(sum) * 1e-17; n++) {
      ap += 1;
      del *= x / ap;
      sum += del;
    }
    return sum * Math.exp(lp);
  }
  let b = x + 1 - a,
    c = 1e300,
    d = 1 / b,
    h = d;
  for (let i = 1; i < 10000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (Math.abs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-17) break;
  }
  return 1 - Math.exp(lp) * h;
}
