/** @file jnp elementwise functions against NumPy fixtures (test/fixtures/numpy-math-elementwise.json), plus bad inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import type { Array } from "../../src/core/array.js";
import { ShapedArray } from "../../src/core/aval.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { typecheckJaxpr } from "../../src/core/jaxpr.js";
import { array } from "../../src/numpy/core.js";
import * as E from "../../src/numpy/elementwise.js";
import { assertThrowsWith, runFixture } from "./math-cases.js";
import { runParityCases } from "./parity-cases.js";

const cases = runFixture("numpy-math-elementwise.json", E as unknown as Record<string, unknown>);

test("fixture covers every exported elementwise function", () => {
  const covered = new Set(cases.map((c) => c.fn));
  const untested = Object.keys(E).filter(
    (k) => typeof (E as Record<string, unknown>)[k] === "function" && !covered.has(k),
  );
  assert.deepEqual(untested, []);
});

const x23 = () =>
  array(
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
    { dtype: "float32" },
  );
const BAD: [string, () => unknown, (string | RegExp)[]][] = [
  ["add shape mismatch", () => E.add(x23(), array([1, 2], { dtype: "float32" })), ["add", "(2, 3)", "(2,)"]],
  [
    "clip string min",
    () => E.clip(x23(), "a" as never),
    ["clip: min must be an Array, a JS number, a nested list or null, got string a"],
  ],
  ["clip string max (options)", () => E.clip(x23(), { max: "b" as never }), ["clip: max must be", "got string b"]],
  [
    "arctan2 shape mismatch",
    () =>
      E.arctan2(
        x23(),
        array([
          [1, 2],
          [3, 4],
        ]),
      ),
    ["arctan2", "(2, 3)", "(2, 2)"],
  ],
  ["where shape mismatch", () => E.where(array([true, false, true, false]), x23(), 0), ["where", "(4,)", "(2, 3)"]],
  ["astype bad dtype", () => E.astype(x23(), "float128" as never), ["astype", "float128"]],
  ["subtract bools", () => E.subtract(array([true]), array([false])), ["subtract", "bool"]],
  ["bitwiseAnd floats", () => E.bitwiseAnd(x23(), x23()), ["bitwise_and", "float32"]],
  ["gcd floats", () => E.gcd(x23(), x23()), ["gcd", "float32", "(2, 3)"]],
  ["diff bad axis", () => E.diff(x23(), 1, 2), ["diff", "axis 2", "(2, 3)"]],
  ["diff 0-d", () => E.diff(array(1)), ["diff", "()"]],
  ["convolve 2-d", () => E.convolve(x23(), array([1, 2])), ["convolve", "(2, 3)"]],
  ["convolve bad mode", () => E.convolve(array([1, 2]), array([1]), "circular" as never), ["convolve", "circular"]],
  ["cross bad dim", () => E.cross(array([1, 2, 3, 4]), array([1, 2, 3, 4])), ["cross", "(4,)"]],
  ["interp xp/fp mismatch", () => E.interp(array([1]), array([1, 2]), array([1, 2, 3])), ["interp", "(2,)", "(3,)"]],
  ["round unknown option", () => E.round(x23(), { decimal: 2 } as never), ["round", "decimal"]],
  ["clip too many args", () => (E.clip as (...a: unknown[]) => unknown)(x23(), 0, 1, 2), ["clip", "at most 2"]],
  ["power negative int exponent", () => E.power(array([2, 3]), -1), ["power", "negative"]],
  ["ldexp float exponent", () => E.ldexp(x23(), x23()), ["ldexp", "float32"]],
];
for (const [name, f, pats] of BAD) test(`bad input: ${name}`, () => assertThrowsWith(f, ...pats));

test("elementwise functions trace abstractly (no concrete values needed under jit)", () => {
  const f32 = (...s: number[]) => new ShapedArray(s, "float32");
  const i32 = (...s: number[]) => new ShapedArray(s, "int32");
  const traced: [string, (...a: Array[]) => Array, ShapedArray[]][] = [
    ["floorDivide", (x, y) => E.floorDivide(x, y), [f32(3), f32(3)]],
    ["mod", (x, y) => E.mod(x, y), [i32(3), i32(3)]],
    ["power int", (x, y) => E.power(x, y), [i32(3), i32(3)]],
    ["frexp", (x) => E.frexp(x)[1], [f32(3)]],
    ["ldexp", (x, y) => E.ldexp(x, y), [f32(3), i32(3)]],
    ["gcd", (x, y) => E.gcd(x, y), [i32(3), i32(3)]],
    ["round", (x) => E.round(x, 2), [f32(3)]],
    ["interp", (x, y) => E.interp(x, y, y), [f32(3), f32(4)]],
    ["convolve", (x, y) => E.convolve(x, y, "same"), [f32(5), f32(3)]],
    ["cross", (x, y) => E.cross(x, y), [f32(2, 3), f32(3)]],
    ["select", (x) => E.select([E.less(x, 0)], [x], 1), [f32(3)]],
  ];
  for (const [name, f, avals] of traced) {
    const { jaxpr } = traceToJaxpr((...a) => [f(...a)], avals);
    typecheckJaxpr(jaxpr);
    assert.ok(jaxpr.eqns.length > 0, name);
  }
});

// ---------------------------------------------------------------- parity fixes (test/fixtures/numpy-parity.json)
runParityCases(E as unknown as Record<string, unknown>, ["diff", "trapezoid", "signbit"]);

test("signbit(-0) is true for a JS -0 and a float -0.0 array; copysign follows it", () => {
  assert.equal(E.signbit(-0).item(), true);
  assert.equal(E.signbit(0).item(), false);
  assert.deepEqual(
    E.copysign(array([1, 2], { dtype: "float32" }), array([-0, 0], { dtype: "float32" })).tolist(),
    [-1, 2],
  );
});

test("convolve / correlate of long inputs run as one convolution: O(n + m) memory, values, gradient, complex", async () => {
  const { grad, jit, numpy: jnp } = await import("../../src/index.js");
  // 300,000 x 3,000: the Toeplitz gather it replaced built a 9e8-element window matrix (3.6 GB)
  const n = 300_000,
    m = 3_000;
  const full = E.convolve(jnp.ones([n]), jnp.ones([m])) as Array;
  assert.deepEqual(full.shape, [n + m - 1]);
  // ones * ones: a ramp 1..m, a plateau of m, a ramp down
  const v = full.tolist() as number[];
  for (const k of [0, 1, m - 2, m - 1, 150_000, n - 1, n + m - 3, n + m - 2])
    assert.equal(v[k], Math.min(k + 1, m, n + m - 1 - k), `full[${k}]`);
  const valid = jit((a: Array, b: Array) => E.correlate(a, b))(jnp.arange(n).astype("float32"), jnp.ones([m]));
  assert.deepEqual(valid.shape, [n - m + 1]);
  // sum of m consecutive integers starting at k
  const w = valid.tolist() as number[];
  // (float32 sums of up to ~9e8: within float32 rounding)
  for (const k of [0, 1, 5000, n - m]) {
    const want = m * k + (m * (m - 1)) / 2;
    assert.ok(Math.abs(w[k] - want) <= 1e-6 * want, `valid[${k}] = ${w[k]}, want ${want}`);
  }
  // d/dx sum(convolve(x, y)) = sum(y) for every x (full mode)
  const g = grad((x: Array) => jnp.sum(E.convolve(x, array([1, 2, 3.5])) as Array))(
    array([1, -1, 2, 0], { dtype: "float32" }),
  );
  assert.deepEqual(g.tolist(), [6.5, 6.5, 6.5, 6.5]);
  // complex operands keep the dot path: NumPy's np.convolve([1+1j, 2], [1j, 1]) = [-1+1j, 1+3j, 2]
  const cz = E.convolve(jnp.complex(array([1, 2]), array([1, 0])), jnp.complex(array([0, 1]), array([1, 0]))) as Array;
  assert.deepEqual(jnp.real(cz).tolist(), [-1, 1, 2]);
  assert.deepEqual(jnp.imag(cz).tolist(), [1, 3, 0]);
});
