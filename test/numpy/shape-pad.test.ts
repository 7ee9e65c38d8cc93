/** @file jnp.pad's median mode and reflectType "odd" against NumPy (test/fixtures/numpy-gaps.json), eager and jit, with gradients. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as R from "../../src/numpy/reductions.js";
import * as SP from "../../src/numpy/shape-pad.js";
import * as ops from "../../src/primitives/ops.js";
import { jit } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { runGapCases } from "./gaps-cases.js";
import { assertThrowsWith } from "./math-cases.js";

/** The JS forms of the generator's callable modes (they return the slice, as JAX's protocol). */
const MODES: Record<string, SP.PadFunction> = {
  padWith: (v, [b, a], _ax, kw) => {
    const i = ops.iota("int32", v.shape, 0);
    const pads = ops.or(ops.lt(i, ops.scalarLike(i, b)), ops.ge(i, ops.scalarLike(i, v.shape[0] - a)));
    return ops.select(pads, ops.fullLike(v, Number(kw.padder ?? 10)), v);
  },
  edgePlusAxis: (v, [b, a], ax) => {
    const n = v.shape[0];
    const i = ops.iota("int32", v.shape, 0);
    const at = (k: number) =>
      ops.add(
        ops.broadcastInDim(ops.reshape(ops.sliceInDim(v, k, k + 1, 1, 0), []), v.shape, []),
        ops.fullLike(v, 100 * ax),
      );
    const r = ops.select(ops.lt(i, ops.scalarLike(i, b)), at(b), v);
    return ops.select(ops.ge(i, ops.scalarLike(i, n - a)), at(n - a - 1), r);
  },
};
const pad = (x: unknown, w: unknown, mode: string, ...rest: unknown[]) =>
  (SP.pad as (...a: unknown[]) => Array)(x, w, MODES[mode] ?? mode, ...rest);
const cases = runGapCases({ pad, insert: SP.insert, delete: SP.deleteItems, trimZeros: SP.trimZeros }, [
  "pad",
  "insert",
  "delete",
  "trimZeros",
]);

test("the gaps fixture has median and odd-reflection pad cases", () => {
  const kinds = new Set(cases.map((c) => `${String(c.args[2])}/${String(c.kwargs.reflectType ?? "")}`));
  for (const k of ["median/", "reflect/odd", "symmetric/odd", "padWith/", "edgePlusAxis/"]) assert.ok(kinds.has(k), k);
});

/** A fixed weighting so that the scalar loss depends on every padded entry differently. */
const weighted = (y: Array): Array => {
  const w = ops.reshape(
    array(
      globalThis.Array.from({ length: y.size }, (_, i) => 1 + 0.1 * i),
      { dtype: y.dtype },
    ),
    y.shape,
  );
  return R.sum(ops.mul(y, w));
};

test("grad of pad with reflectType odd (reflect and symmetric, long pads) matches finite differences", () => {
  for (const mode of ["reflect", "symmetric"] as const)
    checkGrad(`pad ${mode} odd`, (x) => weighted(SP.pad(x, [6, 4], mode, { reflectType: "odd" })), [1, 2.5, -1, 4]);
});

test("grad of pad median matches finite differences (distinct values)", () => {
  checkGrad("pad median", (x) => weighted(SP.pad(x, [2, 3], "median", { statLength: 3 })), [1, 4.5, -2, 3, 0.25]);
});

test("a callable mode gets pad's other options as kwargs, under jit too, and must return the slice", () => {
  const seen: Record<string, unknown>[] = [];
  const spy: SP.PadFunction = (v, _w, _ax, kw) => {
    seen.push(kw);
    return v;
  };
  SP.pad(array([1, 2], { dtype: "float32" }), 1, spy, { padder: 3, other: "x" });
  assert.deepEqual(seen, [{ padder: 3, other: "x" }]);
  const f = jit((x: Array) => SP.pad(x, [[1, 0]], MODES.padWith, { padder: -4 }));
  assert.deepEqual(f(array([5, 6], { dtype: "float32" })).tolist(), [-4, 5, 6]);
  assertThrowsWith(
    () => SP.pad(array([1, 2]), 1, () => array([0])),
    "pad: the mode function must return the padded 1-D slice of length 4 along axis 0",
    "(1,)",
  );
});

test("insert / delete with a traced obj: the fixture has jit cases, grads flow to the array and the values", () => {
  assert.ok(cases.filter((c) => c.fn === "insert").length >= 6);
  assert.ok(cases.filter((c) => c.fn === "delete").length >= 3);
  const obj = array([3, 0, 3], { dtype: "int32" });
  checkGrad(
    "insert traced",
    (x) => weighted(jit((y: Array, o: Array) => SP.insert(y, o, ops.mul(y, y)))(x, obj) as Array),
    [1, -2, 0.5],
  );
  checkGrad(
    "delete traced",
    (x) =>
      weighted(
        jit((y: Array, o: Array) => SP.deleteItems(y, o, { assumeUniqueIndices: true }))(
          x,
          array([1], { dtype: "int32" }),
        ),
      ),
    [1, -2, 0.5, 4],
  );
});

test("delete with a traced obj needs assumeUniqueIndices (as JAX), and the error says so", () => {
  assertThrowsWith(
    () => jit((y: Array, o: Array) => SP.deleteItems(y, o))(array([1, 2, 3]), array([0], { dtype: "int32" })),
    "delete",
    "assumeUniqueIndices: true",
    "i32[1]",
  );
});

test("trimZeros needs a concrete input under jit (its shape depends on the values), as JAX", () => {
  assertThrowsWith(
    () => jit((y: Array) => SP.trimZeros(y, { axis: 0 }))(array([0, 1, 0])),
    "trimZeros",
    "must be concrete",
    "depends on the values",
  );
});

test("bad input: pad reflectType names the accepted values", () => {
  assertThrowsWith(
    () => SP.pad(array([1, 2, 3]), 1, "reflect", { reflectType: "odds" as never }),
    "pad: reflectType must be",
    "odds",
  );
});
