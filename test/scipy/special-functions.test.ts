/** @file jax.scipy.special gammainc/gammaincc/betainc/i0e/i1e/i0/i1/zeta/factorial/poch and lax.igammaGradA against mpmath/SciPy fixtures (test/fixtures/scipy-special.json) on the interpreter, ONNX eager and jit, float64 and float32; gradients vs finite differences and JAX's rules; vmap. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import * as lax from "../../src/lax/index.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as SP from "../../src/scipy/special-public.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { loadFixture } from "../helpers/fixtures.js";

type V = number | string;
interface FixCase {
  fn: string;
  note: string;
  args: V[][];
  out: V[];
}
const num = (v: V): number => (v === "nan" ? NaN : v === "inf" ? Infinity : v === "-inf" ? -Infinity : Number(v));
const FIX = loadFixture<{ cases: FixCase[] }>("scipy-special.json").cases;

type Fn = (...xs: Array[]) => Array;
const FNS: Record<string, Fn> = {
  gammainc: SP.gammainc,
  gammaincc: SP.gammaincc,
  igamma_grad_a: lax.igammaGradA,
  betainc: SP.betainc,
  i0e: SP.i0e,
  i1e: SP.i1e,
  i0: SP.i0,
  i1: SP.i1,
  zeta: SP.zeta,
  factorial: (n) => SP.factorial(n),
  poch: SP.poch,
  gammasgn: SP.gammasgn,
  rgamma: SP.rgamma,
  beta: SP.beta,
  exp1: SP.exp1,
  expi: SP.expi,
  expn: SP.expn,
  spence: SP.spence,
};

const MODES = ["interpreter", "eager", "jit"] as const;
function run(fn: Fn, args: number[][], dtype: "float32" | "float64", mode: (typeof MODES)[number]): number[] {
  const prevB = config.backend,
    prevX = config.enableX64;
  config.update("enableX64", dtype === "float64");
  if (mode === "interpreter") config.update("backend", "interpreter");
  try {
    const xs = args.map((a) => array(a, { dtype }));
    const y = mode === "jit" ? jit(fn)(...xs) : fn(...xs);
    assert.equal(y.dtype, dtype);
    return y.tolist() as number[];
  } finally {
    config.update("backend", prevB);
    config.update("enableX64", prevX);
  }
}

function close(got: number, want: number, rtol: number, atol: number): boolean {
  if (Number.isNaN(want)) return Number.isNaN(got);
  if (!Number.isFinite(want)) return got === want;
  return Math.abs(got - want) <= atol + rtol * Math.abs(want);
}

test("the fixtures cover every new function", () => {
  assert.deepEqual([...new Set(FIX.map((c) => c.fn))].sort(), [...Object.keys(FNS), "bernoulli"].sort());
});

test("bernoulli(30) matches the fixture's B_0..B_30 (B_1 = -1/2) in float64 and float32", () => {
  const c = FIX.find((k) => k.fn === "bernoulli")!;
  const n = num(c.args[0][0]),
    want = c.out.map(num);
  const prev = config.enableX64;
  try {
    config.update("enableX64", true);
    const b64 = SP.bernoulli(n);
    assert.equal(b64.dtype, "float64");
    (b64.tolist() as number[]).forEach((g, i) => assert.ok(close(g, want[i], 1e-15, 0), `B_${i}: ${g} vs ${want[i]}`));
    config.update("enableX64", false);
    assert.deepEqual(SP.bernoulli(n).tolist(), want.map(Math.fround));
  } finally {
    config.update("enableX64", prev);
  }
  assert.throws(() => SP.bernoulli(-1), /bernoulli: n must be a static non-negative integer, got -1/);
});

for (const c of FIX.filter((k) => k.fn !== "bernoulli")) {
  const fn = FNS[c.fn];
  const args = c.args.map((a) => a.map(num)),
    want = c.out.map(num);
  test(`${c.fn} ${c.note || "values"}: float64 matches the fixture on the interpreter, ONNX eager and jit`, () => {
    for (const mode of MODES) {
      const got = run(fn, args, "float64", mode);
      got.forEach((g, i) =>
        assert.ok(
          close(g, want[i], 1e-12, 1e-300),
          `${c.fn}(${args.map((a) => a[i]).join(", ")}) ${mode}: ${g}, expected ${want[i]}`,
        ),
      );
    }
  });
  // beta goes through exp(lgamma(a) + lgamma(b) - lgamma(a + b)) in the input dtype (as betaln): at a, b = 30, 40 the
  // float32 cancellation of lgamma values near 230 costs ~1e-5 relative
  const rtol32 = c.fn === "beta" ? 3e-5 : 2e-6;
  test(`${c.fn} ${c.note || "values"}: float32 rounds the float64 result at the float32 inputs`, () => {
    const a32 = args.map((a) => a.map(Math.fround));
    // the float64 value at the rounded inputs, then rounded: what computing in float64 and rounding gives
    const ref = run(fn, a32, "float64", "interpreter").map(Math.fround);
    for (const mode of MODES) {
      const got = run(fn, a32, "float32", mode);
      got.forEach((g, i) =>
        assert.ok(
          close(g, ref[i], rtol32, 1e-37),
          `${c.fn}(${a32.map((a) => a[i]).join(", ")}) float32 ${mode}: ${g}, expected ${ref[i]}`,
        ),
      );
    }
  });
}

const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
const f64 = (v: number[]): Array => array(v, { dtype: "float64" });

test("gradients agree with finite differences (x and a of gammainc/gammaincc, x of betainc, Bessel, poch, factorial)", () => {
  const A = f64([0.5, 2.5, 10, 3]),
    X = f64([0.3, 1.5, 11.5, 8]);
  checkGrad("gammainc d/dx", (x) => sum(SP.gammainc(A, x)), [0.3, 1.5, 11.5, 8]);
  checkGrad("gammainc d/da", (a) => sum(SP.gammainc(a, X)), [0.5, 2.5, 10, 3], { rtol: 1e-4 });
  checkGrad("gammaincc d/dx", (x) => sum(SP.gammaincc(A, x)), [0.3, 1.5, 11.5, 8]);
  checkGrad("gammaincc d/da", (a) => sum(SP.gammaincc(a, X)), [0.5, 2.5, 10, 3], { rtol: 1e-4 });
  checkGrad("betainc d/dx", (x) => sum(SP.betainc(f64([0.5, 2, 5]), f64([0.5, 3, 1]), x)), [0.3, 0.7, 0.95]);
  checkGrad("i0e", (x) => sum(SP.i0e(x)), [-3, -0.4, 0.5, 2, 30]);
  checkGrad("i1e", (x) => sum(SP.i1e(x)), [-3, -0.4, 0.5, 2, 30]);
  checkGrad("i0", (x) => sum(SP.i0(x)), [-2, 0.5, 3]);
  checkGrad("i1", (x) => sum(SP.i1(x)), [-2, 0.5, 3]);
  checkGrad("poch d/dz", (z) => sum(SP.poch(z, f64([2, 0.5, 3]))), [1.5, 2.5, 4]);
  checkGrad("factorial", (n) => sum(SP.factorial(n)), [0.5, 2, 4.5]);
  checkGrad("rgamma", (x) => sum(SP.rgamma(x)), [-1.5, 0.5, 3]);
  checkGrad("beta d/da", (a) => sum(SP.beta(a, f64([3, 1.2, 0.5]))), [2, -0.5, 1.5]);
  checkGrad("exp1", (x) => sum(SP.exp1(x)), [0.2, 1.5, 1.6, 20]);
  checkGrad("expi", (x) => sum(SP.expi(x)), [-3, 0.2, 39, 41]);
  checkGrad("spence", (x) => sum(SP.spence(x)), [0.2, 0.8, 1.7, 3]);
  checkGrad("expn d/dx", (x) => sum(SP.expn(f64([1, 2, 5, 3]), x)), [0.3, 1.4, 1.6, 12]);
});

test("JAX's jvp rules: d gammainc/da is igamma_grad_a, i1e'(0) = 1/2, betainc in a/b and zeta raise", () => {
  const prev = config.enableX64;
  config.update("enableX64", true);
  try {
    const a = f64([0.5, 3, 10]),
      x = f64([0.3, 8, 9]);
    const ga = (grad((v: Array) => sum(SP.gammainc(v, x))) as (v: Array) => Array)(a).tolist() as number[];
    const want = lax.igammaGradA(a, x).tolist() as number[];
    ga.forEach((g, i) => assert.ok(close(g, want[i], 1e-14, 0), `d gammainc/da [${i}]: ${g} vs ${want[i]}`));
    const gc = (grad((v: Array) => sum(SP.gammaincc(v, x))) as (v: Array) => Array)(a).tolist() as number[];
    gc.forEach((g, i) => assert.ok(close(g, -want[i], 1e-14, 0), `d gammaincc/da [${i}]: ${g} vs ${-want[i]}`));
    const g1 = (grad((v: Array) => sum(SP.i1e(v))) as (v: Array) => Array)(f64([0, 1e-20])).tolist() as number[];
    assert.deepEqual(g1, [0.5, 0.5]);
    const g0 = (grad((v: Array) => sum(SP.i0e(v))) as (v: Array) => Array)(f64([0])).tolist() as number[];
    assert.deepEqual(g0, [0]);
    assert.throws(
      () => (grad((v: Array) => sum(SP.betainc(v, f64([2]), f64([0.5])))) as (v: Array) => Array)(f64([1.5])),
      /regularized_incomplete_beta \(betainc\): the gradient with respect to a and b is not supported/,
    );
    assert.throws(() => (grad((v: Array) => sum(SP.zeta(v, f64([1])))) as (v: Array) => Array)(f64([2.5])), /zeta/);
  } finally {
    config.update("enableX64", prev);
  }
});

test("vmap of the new functions equals the unbatched call; scalars broadcast; argument errors", () => {
  const a = array(
      [
        [0.5, 2],
        [3, 10],
      ],
      { dtype: "float32" },
    ),
    x = array(
      [
        [0.3, 1],
        [4, 9.5],
      ],
      { dtype: "float32" },
    );
  const direct = SP.gammainc(a, x).tolist();
  assert.deepEqual(vmap((p: Array, q: Array) => SP.gammainc(p, q))(a, x).tolist(), direct);
  assert.deepEqual(vmap((q: Array) => SP.zeta(q, 2))(x).tolist(), SP.zeta(x, 2).tolist());
  const bx = array([0.1, 0.5, 0.9], { dtype: "float32" });
  assert.deepEqual(
    vmap((v: Array) => SP.betainc(2, 3, v))(bx).tolist(),
    SP.betainc(array([2, 2, 2], { dtype: "float32" }), array([3, 3, 3], { dtype: "float32" }), bx).tolist(),
  );
  assert.deepEqual(vmap(SP.i1e)(bx).tolist(), SP.i1e(bx).tolist());
  // the fixed-count loops of exp1 / expi / expn batch, and differentiate under jit through their custom jvps
  const ex = array([0.3, 1.2, 2.5], { dtype: "float32" });
  assert.deepEqual(vmap(SP.exp1)(ex).tolist(), SP.exp1(ex).tolist());
  assert.deepEqual(
    vmap((v: Array) => SP.expn(3, v))(ex).tolist(),
    SP.expn(array([3, 3, 3], { dtype: "float32" }), ex).tolist(),
  );
  const gj = jit(grad((v: Array) => sum(SP.expi(v))) as (v: Array) => Array)(ex).tolist() as number[];
  gj.forEach((g, i) => {
    const v = Math.fround([0.3, 1.2, 2.5][i]);
    assert.ok(close(g, Math.exp(v) / v, 1e-6, 0), `jit(grad(expi))(${v}) = ${g}`);
  });
  // a rank-0 a broadcasts against x
  assert.deepEqual(
    SP.gammainc(2, x).tolist(),
    SP.gammainc(array([2, 2, 2, 2], { dtype: "float32" }).reshape([2, 2]), x).tolist(),
  );
  assert.throws(() => SP.zeta(2), /zeta: the Riemann zeta function is not implemented; pass q/);
  assert.throws(() => SP.factorial(3, { exact: true }), /factorial: exact=true is not supported/);
  assert.throws(
    () => lax.igamma(array([1], { dtype: "float32" }), array([1], { dtype: "int32" })),
    /igamma\(a, x\) requires operands of one floating dtype, got f32\[1\], i32\[1\]/,
  );
  assert.throws(
    () => lax.betainc(array([1, 2], { dtype: "float32" }), array([1, 2, 3], { dtype: "float32" }), array(0.5)),
    /regularized_incomplete_beta\(a, b, x\) requires operands of the same shape \(or rank 0\)/,
  );
});
