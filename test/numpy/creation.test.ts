/** @file jnp creation functions against NumPy fixtures (test/fixtures/numpy-math-creation.json), plus bad inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { array } from "../../src/numpy/core.js";
import * as C from "../../src/numpy/creation.js";
import * as E from "../../src/numpy/elementwise.js";
import * as R from "../../src/numpy/reductions.js";
import { assertThrowsWith, runFixture } from "./math-cases.js";
import { runParityCases } from "./parity-cases.js";

const cases = runFixture("numpy-math-creation.json", C as unknown as Record<string, unknown>);

test("fixture covers every exported creation function", () => {
  const covered = new Set([...cases.map((c) => c.fn), "fromfunction"]);
  const untested = Object.keys(C).filter(
    (k) => typeof (C as Record<string, unknown>)[k] === "function" && !covered.has(k),
  );
  assert.deepEqual(untested, []);
});

test("fromfunction calls fn with index grids", () => {
  const r = C.fromfunction((i, j) => E.add(i, E.multiply(j, 10)), [2, 3]);
  assert.equal(r.dtype, "float32");
  assert.deepEqual(r.tolist(), [
    [0, 10, 20],
    [1, 11, 21],
  ]);
});

const BAD: [string, () => unknown, (string | RegExp)[]][] = [
  ["zeros negative shape", () => C.zeros([2, -1]), ["zeros", "-1"]],
  [
    "zeros beyond the typed-array limit",
    () => C.zeros([1e12]),
    ["zeros: shape (1000000000000,) has 1000000000000 elements, more than an array can hold (at most 4294967296"],
  ],
  [
    "ones beyond the typed-array limit",
    () => C.ones([1e6, 1e6], "int8"),
    ["ones: shape (1000000, 1000000) has 1000000000000 elements"],
  ],
  [
    "full beyond the typed-array limit",
    () => C.full([65536, 65537], 1),
    ["full: shape (65536, 65537) has 4295032832 elements"],
  ],
  [
    "arange too long to allocate",
    // 1e12 is past int32, so it is a float literal (numberLiteralDType) and the range is float32
    () => C.arange(1e12),
    ["iota: out of memory: allocating 4000000000000 bytes", "f32[1000000000000]"],
  ],
  ["ones bad dtype", () => C.ones([2], "float8" as never), ["ones", "float8"]],
  ["full shape mismatch", () => C.full([2, 2], array([1, 2, 3])), ["full", "(3,)", "(2, 2)"]],
  ["arange zero step", () => C.arange(0, 5, 0), ["arange", "step"]],
  ["arange non-scalar", () => C.arange(array([1, 2])), ["arange", "(2,)"]],
  ["linspace negative num", () => C.linspace(0, 1, -2), ["linspace", "-2"]],
  ["linspace bounds mismatch", () => C.linspace(array([0, 1]), array([1, 2, 3]), 4), ["linspace", "(2,)", "(3,)"]],
  ["eye non-integer N", () => C.eye(2.5), ["eye", "N"]],
  ["tril 1-d", () => C.tril(array([1, 2, 3])), ["tril", "(3,)"]],
  ["diag 3-d", () => C.diag(array([[[1]]])), ["diag", "(1, 1, 1)"]],
  [
    "diagonal same axes",
    () =>
      C.diagonal(
        array([
          [1, 2],
          [3, 4],
        ]),
        0,
        1,
        1,
      ),
    ["diagonal", "(2, 2)"],
  ],
  [
    "diagonal bad axis",
    () =>
      C.diagonal(
        array([
          [1, 2],
          [3, 4],
        ]),
        0,
        0,
        2,
      ),
    ["diagonal", "axis 2", "(2, 2)"],
  ],
  ["meshgrid 2-d input", () => C.meshgrid(array([[1, 2]])), ["meshgrid", "(1, 2)"]],
  ["meshgrid bad indexing", () => C.meshgrid(array([1]), { indexing: "xz" as never }), ["meshgrid", "xz"]],
];
for (const [name, f, pats] of BAD) test(`bad input: ${name}`, () => assertThrowsWith(f, ...pats));

// ---------------------------------------------------------------- parity fixes (test/fixtures/numpy-parity.json)
runParityCases(C as unknown as Record<string, unknown>, ["geomspace", "indices"]);

test("fromfunction maps fn over scalar indices with vmap, as JAX does", () => {
  // fn sees 0-d indices: a reduction over an index is the index itself, and the output has the full shape
  const seen: number[][] = [];
  const r = C.fromfunction(
    (i, j) => {
      seen.push(i.shape, j.shape);
      return E.add(R.sum(i), E.multiply(R.sum(j), 2));
    },
    [2, 3],
  );
  assert.deepEqual(seen, [[], []]);
  assert.deepEqual(r.tolist(), [
    [0, 2, 4],
    [1, 3, 5],
  ]);
  assert.deepEqual(C.fromfunction((i) => E.multiply(i, i), [4], { dtype: "int32" }).tolist(), [0, 1, 4, 9]);
});

test("jnp.array of a JS scalar is weakly typed, of a list strong (JAX: weak_type = dtype is None and the input is weak)", () => {
  assert.equal(array(5).weakType, true);
  assert.equal(array(5).dtype, "int32");
  assert.equal(array(2.5).weakType, true);
  assert.equal(array(true).weakType, false);
  assert.equal(array(5, { dtype: "int32" }).weakType, false);
  assert.equal(array([5]).weakType, false);
  // a weak Array stays weak through jnp.array (asarray is a no-op on it); a dtype makes it strong
  assert.equal(array(array(5)).weakType, true);
  assert.equal(array(array(5), { dtype: "int32" }).weakType, false);
  // weak: int8 + jnp.array(5) stays int8, as in JAX
  assert.equal(E.add(array([1], { dtype: "int8" }), array(5)).dtype, "int8");
  // -0 is a float literal (JS cannot tell 0.0 from 0, but -0 exists only as a float)
  assert.equal(array(-0).dtype, "float32");
  assert.equal(array([-0, 1]).dtype, "float32");
});

test("geomspace with an integer dtype snaps float rounding of exact powers before truncating", () => {
  // NumPy's float64 progression gives 7.999999999999998 for 8 here (so astype(int) yields 7); jaxts snaps values within
  // 1e-5 relative of an integer, then truncates toward zero like JAX's convert_element_type
  assert.deepEqual(C.geomspace(1, 256, 9, { dtype: "int32" }).tolist(), [1, 2, 4, 8, 16, 32, 64, 128, 256]);
  assert.deepEqual(C.logspace(0, 3, 4, { dtype: "int32" }).tolist(), [1, 10, 100, 1000]);
  assert.deepEqual(C.geomspace(-1, -5, 3, { dtype: "int32" }).tolist(), [-1, -2, -5]);
});
