/** @file Tests of the float32/float64 erfinv emulation: reference erfinv values and the normal-sampler golden vectors (normal = sqrt(2) * erfinv(uniform)). */
import { describe, it } from "node:test";
import assert from "node:assert/strict";

import { ERF_INV_F32_W_GE_5, ERF_INV_F32_W_LT_5, erfInvF32, erfInvF64 } from "../../src/random/erf-inv.js";
import { randomBits, seedToKey } from "../../src/random/threefry-kernel.js";
import { goldenVectors } from "./helpers.js";

const golden = { vectors: goldenVectors() };

/** erfinv reference values (scipy.special.erfinv in float64). */
const REFERENCE: ReadonlyArray<readonly [number, number]> = [
  [0.0, 0.0],
  [1e-30, 8.862269254527581e-31],
  [1e-8, 8.86226925452758e-9],
  [0.001, 0.000886227157466552],
  [-0.1, -0.08885599049425769],
  [0.25, 0.2253120550121781],
  [0.5, 0.4769362762044699],
  [-0.5, -0.4769362762044699],
  [0.75, 0.8134198475976184],
  [0.9, 1.1630871536766743],
  [0.99, 1.8213863677184496],
  [0.998, 2.185124219133004],
  [-0.999, -2.326753765513524],
  [0.9999, 2.7510639057120803],
  [0.999999, 3.458910737275499],
  [0.9999990463256836, 3.4655050258033304],
  [0.99999994, 3.8316710514352175],
  [0.9999999999, 4.572824958544925],
  [-0.9999999999990905, -5.05125408524939],
  [0.9999999999999998, 5.805018683193453],
];

/**
 * Tolerance for an erfinv approximation evaluated as p(w) * x with w = -log1p(x * -x):
 * a relative polynomial error plus the (unavoidable) effect of rounding x*x, which
 * erfinv's slope sqrt(pi)/2 * exp(y^2) amplifies near |x| = 1. `u` is the unit roundoff.
 */
function erfInvTol(x: number, y: number, u: number): number {
  return 8 * u * Math.abs(y) + 4 * u * Math.abs(x) * (Math.sqrt(Math.PI) / 2) * Math.exp(y * y) + 1e-300;
}
const U32 = 2 ** -24;
const U64 = 2 ** -53;

const f32 = new Float32Array(1);
const f32u = new Uint32Array(f32.buffer);

/** jax.random.normal float32: uniform in [nextafter(-1, 0), 1) via the mantissa trick, then sqrt(2) * erfinv. */
function normalF32FromBits(bits: Uint32Array): number[] {
  const lo = Math.fround(-1 + 2 ** -24); // np.nextafter(float32(-1), 0)
  const span = Math.fround(1 - lo); // rounds to 2.0 in float32
  const sqrt2 = Math.fround(Math.SQRT2);
  return Array.from(bits, (b) => {
    f32u[0] = (b >>> 9) | 0x3f800000;
    const fl = Math.fround(f32[0]! - 1);
    const u = Math.max(lo, Math.fround(Math.fround(fl * span) + lo));
    return Math.fround(sqrt2 * erfInvF32(u));
  });
}

describe("erfInvF32", () => {
  it("coefficient tables are float32 values", () => {
    for (const c of [...ERF_INV_F32_W_LT_5, ...ERF_INV_F32_W_GE_5]) assert.equal(Math.fround(c), c);
    assert.equal(ERF_INV_F32_W_LT_5.length, 9);
    assert.equal(ERF_INV_F32_W_GE_5.length, 9);
  });
  it("matches reference erfinv to float32 accuracy", () => {
    for (const [x, want] of REFERENCE) {
      const xf = Math.fround(x);
      if (Math.abs(xf) >= 1) continue; // rounds to +-1 in float32
      // the reference is for x, the emulation sees float32(x): compare at float32(x) via the f64 path
      const ref = Math.abs(xf - x) < 1e-12 ? want : erfInvF64(xf);
      const got = erfInvF32(x);
      assert.equal(Math.fround(got), got, "result must be a float32");
      const tol = erfInvTol(xf, ref, U32);
      assert.ok(Math.abs(got - ref) <= tol, `erfInvF32(${x}) = ${got}, want ${ref}`);
    }
  });
  it("edge cases: +-1 -> +-inf, |x| > 1 -> NaN, odd symmetry, signed zero", () => {
    assert.equal(erfInvF32(1), Infinity);
    assert.equal(erfInvF32(-1), -Infinity);
    assert.ok(Number.isNaN(erfInvF32(1.5)));
    assert.ok(Number.isNaN(erfInvF32(Number.NaN)));
    assert.ok(Object.is(erfInvF32(0), 0));
    assert.ok(Object.is(erfInvF32(-0), -0));
    for (const x of [0.1, 0.3, 0.7, 0.95, 0.999, 0.99999]) assert.equal(erfInvF32(-x), -erfInvF32(x));
  });
  it("both branches (w < 5 and w >= 5) are accurate around the switch", () => {
    // w = -log1p(-x^2) = 5  <=>  x = sqrt(1 - e^-5) ~ 0.99662
    const xs = Math.sqrt(1 - Math.exp(-5));
    for (const d of [-1e-5, -1e-6, 0, 1e-6, 1e-5]) {
      const x = Math.fround(xs + d);
      const ref = erfInvF64(x);
      const got = erfInvF32(x);
      assert.ok(Math.abs(got - ref) <= erfInvTol(x, ref, U32), `x=${x}: ${got} vs ${ref}`);
    }
  });
  it("accepts an injected log1p", () => {
    let calls = 0;
    const got = erfInvF32(0.5, (x) => {
      calls++;
      return Math.fround(Math.log1p(x));
    });
    assert.equal(calls, 1);
    assert.equal(got, erfInvF32(0.5));
  });
});

describe("erfInvF64", () => {
  it("matches reference erfinv in all three regimes (w < 6.25, w < 16, w >= 16)", () => {
    for (const [x, want] of REFERENCE) {
      const got = erfInvF64(x);
      const tol = erfInvTol(x, want, U64);
      assert.ok(Math.abs(got - want) <= tol, `erfInvF64(${x}) = ${got}, want ${want}`);
    }
  });
  it("edge cases", () => {
    assert.equal(erfInvF64(1), Infinity);
    assert.equal(erfInvF64(-1), -Infinity);
    assert.ok(Number.isNaN(erfInvF64(-1.0000001)));
    assert.ok(Object.is(erfInvF64(-0), -0));
  });
  it("agrees with erfInvF32 to float32 precision on a grid", () => {
    for (let i = -999; i <= 999; i += 7) {
      const x = Math.fround(i / 1000);
      const a = erfInvF32(x);
      const b = erfInvF64(x);
      assert.ok(Math.abs(a - b) <= erfInvTol(x, b, U32), `x=${x}: ${a} vs ${b}`);
    }
  });
});

describe("normal sampler vectors (sqrt(2) * erfinv(uniform))", () => {
  const normals = golden.vectors.filter((v) => v.kind.startsWith("random.normal("));
  it("random.json has at least one normal vector", () => assert.ok(normals.length > 0));
  for (const v of normals) {
    it(`${v.id} (legacy bits, float32)`, () => {
      assert.match(v.flag_context, /partitionable=False/);
      assert.equal(v.inputs["dtype"], "np.float32");
      const shape = JSON.parse(
        String(v.inputs["shape"]).replace("(", "[").replace(",)", "]").replace(")", "]"),
      ) as number[];
      const bits = randomBits(seedToKey(v.inputs["seed"] as number, false), 32, shape, false);
      const got = normalF32FromBits(bits);
      const exp = v.expected as number[];
      // expected = float32(7-significant-digit printout), and the test's rtol is 1e-5
      got.forEach((g, i) => {
        assert.ok(Math.abs(g - exp[i]!) <= 1e-6 * Math.max(1, Math.abs(exp[i]!)), `element ${i}: ${g} vs ${exp[i]}`);
      });
    });
  }
  it("multivariate_normal (mean 1, cov I) from tests/random_test.py, seed adler32('multivariate_normalthreefry2x32')", () => {
    // cholesky(I) = I, so the sample is 1 + normal(key, (2, 3)).
    const got = normalF32FromBits(randomBits(seedToKey(3497659512, false), 32, [2, 3], false)).map((z) =>
      Math.fround(1 + z),
    );
    const exp = [1.067826, 1.215599, 0.234166, -0.237534, 1.32591, 1.413987];
    got.forEach((g, i) =>
      assert.ok(Math.abs(g - exp[i]!) <= 2e-6 * Math.max(1, Math.abs(exp[i]!)), `${g} vs ${exp[i]}`),
    );
  });
  it("maxwell (5,) from tests/random_test.py: norm of normal(key, (5, 3))", () => {
    const z = normalF32FromBits(randomBits(seedToKey(1331627891, false), 32, [5, 3], false));
    const exp = [3.070779, 0.908479, 1.521317, 0.875551, 1.306137];
    for (let i = 0; i < 5; i++) {
      const sq = (t: number): number => Math.fround(t * t);
      const s = Math.fround(Math.fround(sq(z[3 * i]!) + sq(z[3 * i + 1]!)) + sq(z[3 * i + 2]!));
      const g = Math.fround(Math.sqrt(s));
      assert.ok(Math.abs(g - exp[i]!) <= 2e-6 * exp[i]!, `${g} vs ${exp[i]}`);
    }
  });
});
