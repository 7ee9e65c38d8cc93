/** @file jnp gradient / interp / where(condition) / piecewise options against NumPy (test/fixtures/numpy-gaps.json), eager and jit, with gradients. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { complex } from "../../src/numpy/complex.js";
import { array } from "../../src/numpy/core.js";
import * as E from "../../src/numpy/elementwise.js";
import * as R from "../../src/numpy/reductions.js";
import * as ops from "../../src/primitives/ops.js";
import { jit } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runGapCases } from "./gaps-cases.js";
import { assertThrowsWith } from "./math-cases.js";

type Fn = (...a: unknown[]) => unknown;
/** The JS functions the fixture's piecewise cases name (the generator's lambdas). */
const PIECES: Record<string, (x: Array, a: Array | number, b: Array | number) => Array> = {
  affine: (x, a, b) => E.add(E.multiply(a, x), b),
  square: (x, _a, b) => E.subtract(E.multiply(x, x), b),
};
const fns: Record<string, unknown> = {
  gradient: E.gradient,
  interp: E.interp,
  where: E.where,
  piecewise: (x: Array, conds: Array[], funcs: (string | number)[], ...rest: unknown[]) =>
    (E.piecewise as Fn)(
      x,
      conds,
      funcs.map((f) => (typeof f === "string" ? PIECES[f] : f)),
      ...rest,
    ),
  interpComplex: (x: Array, xp: Array, re: Array, im: Array, opts?: object) => {
    const r = (E.interp as Fn)(x, xp, complex(re, im), ...(opts ? [opts] : [])) as Array;
    assert.equal(r.dtype, "complex64");
    return [E.real(r), E.imag(r)];
  },
};
const cases = runGapCases(fns, ["gradient", "interp", "interpComplex", "where", "piecewise"]);

test("the gaps fixture covers each function and option this file tests", () => {
  const by = (fn: string) => cases.filter((c) => c.fn === fn);
  assert.ok(by("gradient").some((c) => c.kwargs.edgeOrder === 2));
  assert.ok(by("gradient").some((c) => globalThis.Array.isArray(c.kwargs.axis)));
  assert.ok(by("interp").some((c) => c.kwargs.period !== undefined));
  assert.ok(by("interpComplex").length >= 2);
  assert.ok(by("where").some((c) => c.kwargs.size !== undefined));
  assert.ok(by("piecewise").length >= 3);
});

const w = (y: Array): Array =>
  R.sum(
    ops.mul(
      y,
      ops.reshape(
        array(
          globalThis.Array.from({ length: y.size }, (_, i) => Math.cos(0.7 * i) + 1.5),
          { dtype: y.dtype },
        ),
        y.shape,
      ),
    ),
  );

test("grad of gradient (coordinates, edgeOrder 2) matches finite differences, in f and in the coordinates", () => {
  const f0 = [1, -0.5, 2, 3.5, 0.25, -1];
  const xs = [0, 0.4, 1.5, 1.9, 3, 4.2];
  checkGrad("d/df", (f) => w(E.gradient(f, array(xs, { dtype: "float64" }), { edgeOrder: 2 }) as Array), f0);
  checkGrad("d/dx", (x) => w(E.gradient(array(f0, { dtype: "float64" }), x, { edgeOrder: 2 }) as Array), xs);
  checkGrad("d/dx edgeOrder 1", (x) => w(E.gradient(array(f0, { dtype: "float64" }), x) as Array), xs);
});

test("grad of interp with period matches finite differences in x and fp", () => {
  const xp = [3, 0.5, 4, 1.5],
    fp = [1, -2, 0.5, 3];
  const x = [-7.3, -1.1, 0.2, 2.2, 3.7, 4.9, 12.3];
  checkGrad(
    "d/dx",
    (v) => w(E.interp(v, array(xp, { dtype: "float64" }), array(fp, { dtype: "float64" }), { period: 5 })),
    x,
  );
  checkGrad(
    "d/dfp",
    (v) => w(E.interp(array(x, { dtype: "float64" }), array(xp, { dtype: "float64" }), v, { period: 5 })),
    fp,
  );
});

test("grad of piecewise with extra arguments matches finite differences", () => {
  const x = [-2, -0.5, 0.3, 0.7, 2.5];
  checkGrad(
    "piecewise",
    (v) =>
      w(
        E.piecewise(
          v,
          [E.less(v, 0), E.greater(v, 1)],
          [
            (y: Array, a: number, _b: number) => E.multiply(y, a),
            (y: Array, a: number, b: number) => E.add(E.multiply(y, y), b),
            0.5,
          ],
          3,
          1.5,
        ),
      ),
    x,
  );
});

test("piecewise takes Array constants in funclist, as JAX", () => {
  const x = array([-1, 0.5, 2], { dtype: "float32" });
  const r = E.piecewise(x, [E.less(x, 0)], [array(7, { dtype: "float32" }), (v: Array) => E.multiply(v, 2)]);
  assert.deepEqual(r.tolist(), [7, 1, 4]);
});

test("where(condition) under jit needs a static size, and the error names where and size", () => {
  const cond = array([0, 1, 0, 2]);
  assertThrowsWith(() => jit((c: Array) => E.where(c))(cond), "where", "size");
  const [i] = jit((c: Array) => E.where(c, { size: 3, fillValue: -1 }))(cond);
  assert.deepEqual(i.tolist(), [1, 3, -1]);
  const [j] = E.where(cond, undefined, undefined, { size: 1 });
  assert.deepEqual(j.tolist(), [1]);
});

const f6 = () => array([1, 2, 4, 7, 11, 16], { dtype: "float32" });
const BAD: [string, () => unknown, string[]][] = [
  ["gradient edgeOrder 3", () => E.gradient(f6(), { edgeOrder: 3 }), ["gradient", "edgeOrder must be 1 or 2", "3"]],
  [
    "gradient too short for edgeOrder 2",
    () => E.gradient(array([1, 2]), { edgeOrder: 2 }),
    ["gradient", "at least edgeOrder + 1 = 3", "(2,)"],
  ],
  [
    "gradient coordinates of the wrong length",
    () => E.gradient(f6(), array([0, 1, 2])),
    ["gradient", "length 6", "(3,)"],
  ],
  ["gradient 2-D spacing", () => E.gradient(f6(), array([[0, 1, 2, 3, 4, 5]])), ["gradient", "(1, 6)"]],
  [
    "gradient spacing count",
    () => E.gradient(ops.reshape(f6(), [2, 3]), 1, 2, 3),
    ["gradient", "one spacing per axis (2)", "got 3"],
  ],
  [
    "gradient repeated axis",
    () => E.gradient(ops.reshape(f6(), [2, 3]), { axis: [0, -2] }),
    ["gradient", "repeated axis", "(2, 3)"],
  ],
  [
    "interp period 1-D",
    () => E.interp(f6(), f6(), f6(), { period: array([1, 2]) }),
    ["interp", "period must be a scalar", "(2,)"],
  ],
  ["interp period 0", () => E.interp(f6(), f6(), f6(), { period: 0 }), ["interp", "period must be a non-zero value"]],
  ["interp complex x", () => E.interp(complex(f6(), f6()), f6(), f6()), ["interp", "complex x", "complex64"]],
  ["where x without y", () => (E.where as Fn)(array([true]), 1), ["where", "both or neither"]],
  ["where size with x and y", () => (E.where as Fn)(array([true]), 1, 2, { size: 1 }), ["where", "one-argument form"]],
  ["where unknown option", () => E.where(array([true]), { sizes: 1 } as never), ["where", "sizes", "size"]],
  ["where 0-d one argument", () => E.where(array(true)), ["where", "0-d"]],
  [
    "piecewise function count",
    () => E.piecewise(f6(), [E.less(f6(), 3)], [1, 2, 3]),
    ["piecewise", "1 or 2 functions", "got 3"],
  ],
];
for (const [name, f, pats] of BAD) test(`bad input: ${name}`, () => assertThrowsWith(f, ...pats));
