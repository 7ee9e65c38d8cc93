/**
 * @file Casts to bool are x != 0 everywhere (the reference interpreter, eager ORT ops, jit programs): NaN is nonzero,
 * so it casts to true, as NumPy's astype(bool) and JAX's convert_element_type (a NE compare with 0) give.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { jit, lax, numpy as jnp } from "../../src/index.js";
import { castNumber, convertStorage } from "../../src/core/convert.js";
import type { DType } from "../../src/core/dtype.js";

// NumPy: np.array([nan, 0.0, -0.0, inf, -inf, 1e-40, -2.5], dtype).astype(bool)
const values = [NaN, 0, -0, Infinity, -Infinity, 1e-40, -2.5];
const want = [true, false, false, true, true, true, true];
// float16 rounds 1e-40 to zero (np.float16(1e-40) == 0); bfloat16 has float32's exponent range and keeps it
const wantHalf = [true, false, false, true, true, false, true];

test("castNumber and convertStorage: float -> bool is x != 0 (NaN -> true)", () => {
  assert.deepEqual(
    values.map((v) => castNumber(v, "bool")),
    want.map(Number),
  );
  const f64 = Float64Array.from(values);
  assert.deepEqual([...convertStorage(f64, "float64", "bool")], want.map(Number));
  assert.deepEqual([...convertStorage(Float32Array.from(values), "float32", "bool")], want.map(Number));
});

for (const dtype of ["float32", "float64", "float16", "bfloat16"] as DType[]) {
  const expect = dtype === "float16" ? wantHalf : want;
  test(`astype(bool) of ${dtype} NaN, zeros, infinities: eager, jit and lax.convertElementType agree with NumPy`, () => {
    const x = jnp.array(values, dtype);
    assert.deepEqual(x.astype("bool").tolist(), expect, "eager astype");
    assert.deepEqual(lax.convertElementType(x, "bool").tolist(), expect, "eager convertElementType");
    assert.deepEqual(jit((a: typeof x) => a.astype("bool"))(x).tolist(), expect, "jit");
    // inside a larger program: the cast feeds a select
    const sel = jit((a: typeof x) => jnp.where(a.astype("bool"), 1, 0))(x).tolist();
    assert.deepEqual(
      sel,
      expect.map((b) => (b ? 1 : 0)),
      "jit where",
    );
  });
}

test("jnp.array(NaN, 'bool') is true, as np.array(nan, bool)", () => {
  assert.equal(jnp.array(NaN, "bool").item(), true);
  assert.deepEqual(jnp.array([NaN, 0], "bool").tolist(), [true, false]);
});
