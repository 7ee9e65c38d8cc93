/** @file float64 -> float16/bfloat16 rounds once (to nearest even) on the host, the interpreter and ORT, against NumPy (test/fixtures/half-conversions.json). */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { config } from "../../src/core/config.js";
import { fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from "../../src/core/float16.js";
import { jit } from "../../src/transforms/api.js";
import { array } from "../../src/numpy/core.js";
import * as jnp from "../../src/numpy/index.js";
import type { Array } from "../../src/core/array.js";
import { loadFixture } from "../helpers/fixtures.js";

interface Row {
  x: number | string;
  f16: number;
  bf16: number;
}
const rows = loadFixture<{ cases: Row[] }>("half-conversions.json").cases;
const xs = rows.map((r) => (typeof r.x === "string" ? Number(r.x) : r.x));
const want16 = rows.map((r) => fromFloat16Bits(r.f16));
const wantBf = rows.map((r) => fromBFloat16Bits(r.bf16));

test("the fixture holds the reported case and double-rounding traps", () => {
  assert.equal(xs[0], -31.273436809650644);
  assert.equal(want16[0], -31.265625);
  // float32 rounding of these doubles lands on a half-precision tie: a conversion through float32 gets them wrong
  const f32 = new Float32Array(xs);
  const viaF32 = xs.filter((x, i) => toFloat16Bits(f32[i]) !== rows[i].f16 && !Number.isNaN(x)).length;
  assert.ok(viaF32 >= 40, `expected many double-rounding traps, got ${viaF32}`);
  assert.ok(rows.length > 400);
});

test("host conversions round a double once, like NumPy", () => {
  rows.forEach((r, i) => {
    const x = xs[i];
    if (Number.isNaN(x)) {
      assert.ok(Number.isNaN(fromFloat16Bits(toFloat16Bits(x))) && Number.isNaN(fromBFloat16Bits(toBFloat16Bits(x))));
      return;
    }
    assert.equal(toFloat16Bits(x), r.f16, `float16(${x})`);
    assert.equal(toBFloat16Bits(x), r.bf16, `bfloat16(${x})`);
  });
});

function checkBackend(backend: "onnx" | "interpreter"): void {
  const prev = config.backend;
  config.update("backend", backend);
  try {
    // a Float64Array of several elements (the path that rounded through float32 on ORT)
    assert.deepEqual(array(new Float64Array(xs), { dtype: "float16" }).tolist(), want16);
    assert.deepEqual(array(new Float64Array(xs), { dtype: "bfloat16" }).tolist(), wantBf);
    // JS numbers, one by one and nested
    assert.deepEqual(
      xs.slice(0, 40).map((x) => array(x, { dtype: "float16" }).item()),
      want16.slice(0, 40),
    );
    assert.deepEqual(array(xs, { dtype: "float16" }).tolist(), want16);
    // weak JS-number (non-integer: integers are int literals) scalars meeting float16/bfloat16 arrays convert from the double too (JAX converts Python floats once)
    const some = xs
      .map((x, i) => [x, i] as const)
      .filter(([x]) => Number.isFinite(x) && !Number.isInteger(x))
      .slice(0, 60);
    const z16 = jnp.zeros([1], "float16"),
      zbf = jnp.zeros([1], "bfloat16");
    assert.deepEqual(
      some.map(([x]) => (jnp.subtract(x, z16).tolist() as number[])[0]),
      some.map(([, i]) => want16[i]),
    );
    assert.deepEqual(
      some.map(([x]) => (jnp.full([1], x, "float16").tolist() as number[])[0]),
      some.map(([, i]) => want16[i]),
    );
    assert.deepEqual(
      some.map(([x]) => (jnp.subtract(x, zbf).tolist() as number[])[0]),
      some.map(([, i]) => wantBf[i]),
    );
    // float64 arrays (x64) converted eagerly and inside a jitted program
    config.update("enableX64", true);
    try {
      const x64 = array(new Float64Array(xs), { dtype: "float64" });
      assert.equal(x64.dtype, "float64");
      assert.deepEqual(jnp.astype(x64, "float16").tolist(), want16);
      assert.deepEqual((jit((a: Array) => jnp.astype(jnp.multiply(a, 1), "float16"))(x64) as Array).tolist(), want16);
      assert.deepEqual((jit((a: Array) => jnp.astype(a, "bfloat16"))(x64) as Array).tolist(), wantBf);
    } finally {
      config.update("enableX64", false);
    }
  } finally {
    config.update("backend", prev);
  }
}

test("ONNX Runtime: float64 -> float16/bfloat16 rounds once", () => checkBackend("onnx"));
test("interpreter: float64 -> float16/bfloat16 rounds once", () => checkBackend("interpreter"));
