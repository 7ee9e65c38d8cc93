/** @file jnp creation functions against NumPy fixtures (test/fixtures/numpy-math-creation.json), plus bad inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { array } from "../../src/numpy/core.js";
import * as C from "../../src/numpy/creation.js";
import * as E from "../../src/numpy/elementwise.js";
import { assertThrowsWith, runFixture } from "./math-cases.js";

const cases = runFixture("numpy-math-creation.json", C as unknown as Record<string, unknown>);

test("fixture covers every exported creation function", () => {
  const covered = new Set([...cases.map((c) => c.fn), "fromfunction"]);
  const untested = Object.keys(C).filter((k) => typeof (C as Record<string, unknown>)[k] === "function" && !covered.has(k));
  assert.deepEqual(untested, []);
});

test("fromfunction calls fn with index grids", () => {
  const r = C.fromfunction((i, j) => E.add(i, E.multiply(j, 10)), [2, 3]);
  assert.equal(r.dtype, "float32");
  assert.deepEqual(r.tolist(), [[0, 10, 20], [1, 11, 21]]);
});

const BAD: [string, () => unknown, (string | RegExp)[]][] = [
  ["zeros negative shape", () => C.zeros([2, -1]), ["zeros", "-1"]],
  ["zeros beyond the typed-array limit", () => C.zeros([1e12]), ["zeros: shape (1000000000000,) has 1000000000000 elements, more than an array can hold (at most 4294967296"]],
  ["ones beyond the typed-array limit", () => C.ones([1e6, 1e6], "int8"), ["ones: shape (1000000, 1000000) has 1000000000000 elements"]],
  ["full beyond the typed-array limit", () => C.full([65536, 65537], 1), ["full: shape (65536, 65537) has 4295032832 elements"]],
  ["arange too long to allocate", () => C.arange(1e12), ["iota: out of memory: allocating 4000000000000 bytes", "i32[1000000000000]"]],
  ["ones bad dtype", () => C.ones([2], "float8" as never), ["ones", "float8"]],
  ["full shape mismatch", () => C.full([2, 2], array([1, 2, 3])), ["full", "(3,)", "(2, 2)"]],
  ["arange zero step", () => C.arange(0, 5, 0), ["arange", "step"]],
  ["arange non-scalar", () => C.arange(array([1, 2])), ["arange", "(2,)"]],
  ["linspace negative num", () => C.linspace(0, 1, -2), ["linspace", "-2"]],
  ["linspace bounds mismatch", () => C.linspace(array([0, 1]), array([1, 2, 3]), 4), ["linspace", "(2,)", "(3,)"]],
  ["eye non-integer N", () => C.eye(2.5), ["eye", "N"]],
  ["tril 1-d", () => C.tril(array([1, 2, 3])), ["tril", "(3,)"]],
  ["diag 3-d", () => C.diag(array([[[1]]])), ["diag", "(1, 1, 1)"]],
  ["diagonal same axes", () => C.diagonal(array([[1, 2], [3, 4]]), 0, 1, 1), ["diagonal", "(2, 2)"]],
  ["diagonal bad axis", () => C.diagonal(array([[1, 2], [3, 4]]), 0, 0, 2), ["diagonal", "axis 2", "(2, 2)"]],
  ["meshgrid 2-d input", () => C.meshgrid(array([[1, 2]])), ["meshgrid", "(1, 2)"]],
  ["meshgrid bad indexing", () => C.meshgrid(array([1]), { indexing: "xz" as never }), ["meshgrid", "xz"]],
];
for (const [name, f, pats] of BAD) test(`bad input: ${name}`, () => assertThrowsWith(f, ...pats));
