/** @file ONNX lowerings of polygamma, random_gamma_grad and random_gamma: single ONNX programs that agree with the reference interpreter, known values and the implicit gamma derivative. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import { compiledFor, onnxBackend } from "../../src/backends/onnx/onnx-backend.js";
import type { ArrayImpl } from "../../src/core/array-impl.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import type { Params, Primitive } from "../../src/core/primitive.js";
import type { Jaxpr } from "../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import * as ops from "../../src/primitives/ops.js";
import { polygammaP } from "../../src/primitives/elementwise.js";
import { gammaSampleGrad, randomGammaGrad, randomGammaGradP } from "../../src/primitives/random.js";
import { lgamma, polygamma } from "../../src/primitives/special-math.js";
import { randomGammaP } from "../../src/random/gamma.js";
import * as random from "../../src/random/index.js";
import { grad, jit } from "../../src/transforms/api.js";
import { arr, checkProgram } from "../compiler/harness.js";

/** polygamma run eagerly on the ONNX backend (through its lowering). */
const pgOnnx = (args: ArrayImpl[], params: Params): ArrayImpl[] =>
  onnxBackend.execute(polygammaP as unknown as Primitive, args, params);
const kinds = (j: Jaxpr): string[] => compiledFor(j).program.steps.map((s) => s.kind);
const relErr = (a: number, e: number): number =>
  a === e || (Number.isNaN(a) && Number.isNaN(e)) ? 0 : Math.abs(a - e) / Math.max(Math.abs(e), 1e-300);

test("polygamma and random_gamma_grad have ONNX lowerings", () => {
  assert.ok(polygammaP.rules.lower && !polygammaP.rules.missing?.lower);
  assert.ok(randomGammaGradP.rules.lower && !randomGammaGradP.rules.missing?.lower);
  assert.ok(randomGammaP.rules.lower && !randomGammaP.rules.missing?.lower);
});

// positive, tiny, huge, near the poles, negative non-integers, integers <= 0, NaN, +-inf
const PG_VALUES = [
  1,
  0.5,
  2,
  1e-8,
  1e-3,
  0.1,
  3.7,
  14.999,
  15,
  15.5,
  40,
  1e3,
  1e8,
  -1 + 1e-9,
  -0.5,
  -2.5,
  -1e-10,
  0,
  -0,
  -1,
  -7,
  NaN,
  Infinity,
  -Infinity,
];

test("polygamma: jit is one ONNX step and matches the interpreter for m = 0..4 (float32, float64, batches, special values)", () => {
  for (const d of ["float32", "float64"] as DType[]) {
    for (let m = 0; m <= 4; m++) {
      const x = arr(d, [4, PG_VALUES.length / 4], PG_VALUES);
      const j = checkProgram((v) => [ops.polygamma(m, v)], [x], `polygamma(${m}) ${d}`);
      assert.deepEqual(kinds(j), ["onnx"], `polygamma(${m}) ${d}`);
      // rank 0 and a size-0 batch
      checkProgram((v) => [ops.polygamma(m, v)], [arr(d, [], [0.25])], `polygamma(${m}) ${d} scalar`);
      checkProgram((v) => [ops.polygamma(m, v)], [arr(d, [0, 3], [])], `polygamma(${m}) ${d} empty`);
    }
  }
  // float16 / bfloat16 compute in float64 inside the lowering, like the reference
  for (const d of ["float16", "bfloat16"] as DType[])
    checkProgram((v) => [ops.polygamma(2, v)], [arr(d, [6], [0.5, 1, 3, 20, -1, NaN])], `polygamma(2) ${d}`);
});

test("polygamma: float64 agreement with the interpreter on a dense grid is at the rounding level", () => {
  const xs = globalThis.Array.from({ length: 400 }, (_, i) => 10 ** (-6 + (i / 399) * 10));
  const x = arr("float64", [xs.length], xs);
  for (let m = 1; m <= 4; m++) {
    const got = pgOnnx([x], { m })[0].tolist() as number[];
    const want = xs.map((v) => polygamma(m, v));
    const worst = Math.max(...got.map((g, i) => relErr(g, want[i])));
    assert.ok(worst <= 1e-14, `polygamma(${m}): max rel error ${worst}`);
  }
});

test("polygamma on ONNX at known values (zeta identities)", () => {
  const zeta3 = 1.2020569031595942;
  const cases: [number, number, number][] = [
    [1, 1, Math.PI ** 2 / 6],
    [2, 1, -2 * zeta3],
    [2, 1, -2.4041138063191885],
    [3, 1, Math.PI ** 4 / 15],
    [1, 0.5, Math.PI ** 2 / 2],
    [2, 0.5, -14 * zeta3],
    [1, 2, Math.PI ** 2 / 6 - 1],
    [4, 1, -24 * 1.03692775514337],
    [0, 1, -0.5772156649015329],
    [1, 0.25, Math.PI ** 2 + 8 * 0.915965594177219],
  ];
  for (const [m, x, want] of cases) {
    const got = pgOnnx([arr("float64", [], [x])], { m })[0].elementAt(0) as number;
    assert.ok(relErr(got, want) < 1e-13, `polygamma(${m}, ${x}) = ${got}, expected ${want}`);
  }
  const f32 = pgOnnx([arr("float32", [2], [1, 0.5])], { m: 1 })[0].tolist() as number[];
  assert.deepEqual(f32, [Math.fround(Math.PI ** 2 / 6), Math.fround(Math.PI ** 2 / 2)]);
  // psi^(m)(x) for x <= 0 is NaN (as in JAX); +inf gives (-1)^(m+1) 0
  const sp = pgOnnx([arr("float64", [4], [-0.5, 0, NaN, Infinity])], { m: 2 })[0].tolist() as number[];
  assert.ok(Number.isNaN(sp[0]) && Number.isNaN(sp[1]) && Number.isNaN(sp[2]));
  assert.ok(Object.is(sp[3], -0));
});

// shapes a in [1e-4, 1e4] against x at quantile-like multiples of a, plus absolute points and special values
function gammaGrid(): [number[], number[]] {
  const as: number[] = [],
    xs: number[] = [];
  for (const a of [1e-4, 0.01, 0.3, 1, 2.5, 10, 100, 1e4]) {
    for (const r of [1e-3, 0.1, 0.5, 0.9, 1, 1.2, 2, 4]) {
      as.push(a);
      xs.push(a * r);
    }
    for (const x of [1e-30, 1e-5, 0.5, 3, 50]) {
      as.push(a);
      xs.push(x);
    }
  }
  const special: [number, number][] = [
    [NaN, 1],
    [1, NaN],
    [-1, 1],
    [0, 1],
    [2, 0],
    [2, -1],
    [2, Infinity],
    [2, -Infinity],
    [Infinity, 2],
    [NaN, 0],
  ];
  for (const [a, x] of special) {
    as.push(a);
    xs.push(x);
  }
  return [as, xs];
}

test("random_gamma_grad: jit is one ONNX step and matches the interpreter on an (a, x) grid incl. tiny/huge a and special values", () => {
  const [as, xs] = gammaGrid();
  for (const d of ["float64", "float32"] as DType[]) {
    const a = arr(d, [as.length], as),
      x = arr(d, [xs.length], xs);
    const j = checkProgram(
      (p, q) => [randomGammaGrad(p, q)],
      [a, x],
      `random_gamma_grad ${d}`,
      d === "float64" ? { rtol: 1e-11 } : undefined,
    );
    assert.deepEqual(kinds(j), ["onnx"]);
  }
  // rank-0 a or x broadcasts against the other operand; batches of any rank
  checkProgram(
    (p, q) => [randomGammaGrad(p, q)],
    [arr("float64", [], [2.5]), arr("float64", [2, 3], [0.1, 1, 2, 3.5, 9, 40])],
    "scalar a",
  );
  checkProgram(
    (p, q) => [randomGammaGrad(p, q)],
    [arr("float32", [2, 2], [0.2, 1, 5, 50]), arr("float32", [], [3])],
    "scalar x",
  );
  checkProgram(
    (p, q) => [randomGammaGrad(p, q)],
    [arr("float16", [3], [0.5, 2, 8]), arr("float16", [3], [0.4, 2.5, 6])],
    "float16",
  );
  checkProgram((p, q) => [randomGammaGrad(p, q)], [arr("float32", [0], []), arr("float32", [0], [])], "empty");
});

test("random_gamma_grad: float64 max relative error against the scalar reference is tiny", () => {
  const [as, xs] = gammaGrid();
  const got = onnxBackend
    .execute(randomGammaGradP, [arr("float64", [as.length], as), arr("float64", [xs.length], xs)], {})[0]
    .tolist() as number[];
  const worst = Math.max(...got.map((g, i) => relErr(g, gammaSampleGrad(as[i], xs[i]))));
  assert.ok(worst < 1e-11, `max rel error ${worst}`);
});

/** Regularized lower incomplete gamma P(a, x) by composite Simpson quadrature of t^(a-1) e^-t / Gamma(a) (independent of the series). */
function gammaCdf(a: number, x: number, n = 20000): number {
  const h = x / n;
  const f = (t: number) => (t === 0 ? 0 : Math.exp((a - 1) * Math.log(t) - t - lgamma(a)));
  let s = f(0) + f(x);
  for (let i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * f(i * h);
  return (s * h) / 3;
}

test("random_gamma_grad on ONNX equals the implicit derivative -dP/da / dP/dx from central differences of the Gamma CDF", () => {
  const pts: [number, number][] = [
    [2, 0.5],
    [2, 2],
    [3.5, 1],
    [3.5, 6],
    [7, 4],
    [7, 12],
  ];
  const got = onnxBackend
    .execute(
      randomGammaGradP,
      [
        arr(
          "float64",
          [pts.length],
          pts.map((p) => p[0]),
        ),
        arr(
          "float64",
          [pts.length],
          pts.map((p) => p[1]),
        ),
      ],
      {},
    )[0]
    .tolist() as number[];
  pts.forEach(([a, x], i) => {
    const h = 1e-4;
    const dPda = (gammaCdf(a + h, x) - gammaCdf(a - h, x)) / (2 * h);
    const dPdx = Math.exp((a - 1) * Math.log(x) - x - lgamma(a));
    const want = -dPda / dPdx;
    assert.ok(relErr(got[i], want) < 1e-6, `dx/da at a=${a}, x=${x}: ${got[i]} vs finite difference ${want}`);
  });
});

test("jax.random.gamma's gradient in a under jit runs entirely in ONNX and matches the interpreter", () => {
  const key = random.key(0);
  const f = (a: Array): Array => ops.reduceSum(ops.mul(random.gamma(key, a), random.gamma(key, a)), [0]);
  const a = arr("float32", [6], [0.05, 0.3, 1, 2.5, 10, 100]);
  const { jaxpr } = traceToJaxpr((v) => [grad(f)(v)], [a.aval], "gamma_grad");
  assert.deepEqual(kinds(jaxpr), ["onnx"]);
  const got = (jit(grad(f))(a) as ArrayImpl).tolist() as number[];
  config.update("backend", "interpreter");
  let want: number[];
  try {
    want = (grad(f)(a) as ArrayImpl).tolist() as number[];
  } finally {
    config.update("backend", "onnx");
  }
  got.forEach((g, i) =>
    assert.ok(Math.abs(g - want[i]) <= 1e-5 * Math.abs(want[i]) + 1e-6, `element ${i}: ${g} vs ${want[i]}`),
  );
  assert.ok(
    got.every((g) => Number.isFinite(g) && g > 0),
    "d sample^2 / da is positive",
  );
  // log-space samples (random.loggamma) lower too
  checkProgram(
    (v) => [grad((b: Array) => ops.reduceSum(random.loggamma(key, b), [0]))(v)],
    [arr("float64", [3], [0.01, 1, 7])],
    "loggamma grad",
  );
});
