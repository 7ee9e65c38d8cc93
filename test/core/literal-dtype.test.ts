/** @file JS number and bigint literals: which dtype they take (numberLiteralDType) and the errors for integers a dtype cannot hold, instead of wrapped or saturated values. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as jax from "../../src/index.js";
import { numpy as jnp } from "../../src/index.js";
import { type DType, numberLiteralDType } from "../../src/core/dtype.js";
import { withX64 } from "../helpers/x64.js";

test("numberLiteralDType: integer-valued numbers inside the default int range are ints, everything else floats", () => {
  withX64(false, () => {
    for (const x of [0, 5, -7, 2 ** 31 - 1, -(2 ** 31)]) assert.equal(numberLiteralDType(x), "int32", String(x));
    for (const x of [1.5, -0, 2 ** 31, -(2 ** 31) - 1, 3e9, 1e16, Infinity, NaN])
      assert.equal(numberLiteralDType(x), "float32", String(x));
  });
  withX64(true, () => {
    for (const x of [2 ** 31, 2 ** 40, -(2 ** 63), 2 ** 62]) assert.equal(numberLiteralDType(x), "int64", String(x));
    // 2^63 is not an int64 (the largest is 2^63 - 1, which has no double)
    for (const x of [2 ** 63, 1e300, 0.5]) assert.equal(numberLiteralDType(x), "float64", String(x));
  });
});

test("numbers past int32 keep their value in arithmetic (they were wrapped into int32 before promotion)", () => {
  withX64(false, () => {
    const ones = jnp.ones([2]);
    assert.deepEqual(jnp.multiply(ones, 3e9).tolist(), [3e9, 3e9]);
    // 2^40 + 2^17 is a float32 value (its spacing there is 2^17)
    assert.deepEqual(jnp.add(jnp.array([2 ** 17, 0], "float32"), 2 ** 40).tolist(), [2 ** 40 + 2 ** 17, 2 ** 40]);
    assert.deepEqual(
      jax
        .jit((x: jax.Array) => jnp.multiply(x, 2 ** 31))(ones)
        .tolist(),
      [2 ** 31, 2 ** 31],
    );
    const a = jnp.array(2 ** 40);
    assert.equal(a.dtype, "float32");
    assert.equal(a.weakType, true);
    assert.equal(a.item(), 2 ** 40);
    // a list is int32 only when every number is an int literal
    const l = jnp.array([1, 2 ** 31]);
    assert.equal(l.dtype, "float32");
    assert.deepEqual(l.tolist(), [1, 2 ** 31]);
    assert.equal(jnp.array([1, -(2 ** 31)]).dtype, "int32");
    assert.equal(jnp.resultType(2 ** 40), "float32");
    assert.equal(jnp.resultType(5), "int32");
    // int32 arrays meet such a literal as a weak float, as they meet 1.5
    assert.equal(jnp.add(jnp.array([1], "int32"), 2 ** 40).dtype, jnp.add(jnp.array([1], "int32"), 1.5).dtype);
  });
});

test("an integer a requested integer dtype cannot hold raises, naming the function, value, dtype and range", () => {
  withX64(false, () => {
    const cases: [() => unknown, string[]][] = [
      [() => jnp.array(300, "int8"), ["array: 300 is out of range for int8 [-128, 127]"]],
      [() => jnp.array(-1, "uint32"), ["array: -1 is out of range for uint32 [0, 4294967295]"]],
      [() => jnp.array([1, 256], "uint8"), ["array: 256 is out of range for uint8 [0, 255]"]],
      [() => jnp.array(1e10, "int32"), ["array: 10000000000 is out of range for int32"]],
      [
        () => jnp.array(2 ** 40, "int64"),
        ["out of range for int32", 'int64 is int32 unless config.update("enableX64", true)'],
      ],
      [() => jnp.array(2n ** 40n), ["the bigint 1099511627776 is out of range for int32", "enableX64"]],
      [() => jnp.array([1n, 2n ** 31n]), ["2147483648 is out of range for int32"]],
      [() => jnp.full([2], 2 ** 40, "int32"), ["full: 1099511627776 is out of range for int32"]],
      [() => jnp.fullLike(jnp.array([1], "int8"), 300), ["full_like: 300 is out of range for int8"]],
    ];
    for (const [f, parts] of cases)
      assert.throws(f, (e: unknown) => {
        assert.ok(e instanceof RangeError, String(e));
        for (const p of parts) assert.ok(e.message.includes(p), `${e.message} should include ${p}`);
        return true;
      });
    // the edges themselves are values
    assert.deepEqual(jnp.array([-128, 127], "int8").tolist(), [-128, 127]);
    assert.deepEqual(jnp.array([0, 4294967295], "uint32").tolist(), [0, 4294967295]);
    assert.deepEqual(jnp.full([2], -(2 ** 31), "int32").tolist(), [-(2 ** 31), -(2 ** 31)]);
    assert.deepEqual(jnp.fullLike(jnp.array([1], "int8"), 100).tolist(), [100]);
    // floats convert as before: truncated toward zero
    assert.deepEqual(jnp.array([1.5, -2.7], "int32").tolist(), [1, -2]);
  });
  withX64(true, () => {
    assert.deepEqual(jnp.array(2n ** 40n).tolist(), 2n ** 40n);
    assert.equal(jnp.array(2 ** 40).dtype, "int64");
    assert.equal(jnp.array(2 ** 40, "int64").item(), 2n ** 40n);
    assert.throws(() => jnp.array(2n ** 63n, "int64"), /array: 9223372036854775808 is out of range for int64/);
    assert.throws(() => jnp.array(-1n, "uint64"), /out of range for uint64 \[0, 18446744073709551615\]/);
  });
});

test("an integer-only op given a JS integer past int32 names the number and the fix (it is a float literal)", () => {
  withX64(false, () => {
    const u = jnp.array([5, 6], "uint32");
    assert.throws(
      () => jnp.bitwiseAnd(u, 0xffffffff),
      /bitwise_and: the JS number 4294967295 is past int32's range, so it is a float literal .* jnp\.array\(4294967295, "uint32"\)/,
    );
    assert.throws(() => jnp.leftShift(2 ** 40, 1), /left_shift: the JS number 1099511627776 .*enableX64/);
    assert.deepEqual(jnp.bitwiseAnd(u, jnp.array(0xfffffffe, "uint32")).tolist(), [4, 6]);
    assert.deepEqual(jnp.bitwiseAnd(u, 3).tolist(), [1, 2]);
  });
});

test("a JS integer past int32 given an integer dtype keeps its exact value (array, full, fullLike)", () => {
  withX64(false, () => {
    assert.equal(jnp.array(0xfffffffe, "uint32").item(), 0xfffffffe);
    assert.deepEqual(jnp.array([0xfffffffe, 1], "uint32").tolist(), [0xfffffffe, 1]);
    assert.deepEqual(jnp.full([2], 0xfffffffd, "uint32").tolist(), [0xfffffffd, 0xfffffffd]);
    assert.deepEqual(jnp.fullLike(jnp.array([1], "uint32"), 4294967293).tolist(), [4294967293]);
    assert.equal(jnp.array(2147483647, "int32").item(), 2147483647);
  });
});

test("explicit integer dtypes: NaN and infinities raise, other floats truncate toward zero and must fit (np.array's rule)", () => {
  // NumPy: np.array(nan, int32) ValueError, np.array(inf, int32) / np.array(300.5, uint8) / np.array(-1.7, uint8)
  // OverflowError; np.array(1.7, int32) == 1, np.array(-0.5, uint8) == 0, np.array(255.9, uint8) == 255
  for (const [v, d, msg] of [
    [NaN, "int32", /array: cannot convert NaN to int32/],
    [Infinity, "int32", /array: cannot convert Infinity to int32/],
    [-Infinity, "uint8", /cannot convert -Infinity to uint8/],
    [300.5, "uint8", /array: 300\.5 \(truncated to 300\) is out of range for uint8 \[0, 255\]/],
    [-1.7, "uint8", /-1\.7 \(truncated to -1\) is out of range for uint8/],
  ] as [number, DType, RegExp][]) {
    assert.throws(() => jnp.array(v, d), msg, `array(${v}, ${d})`);
    assert.throws(() => jnp.array([1, v], d), msg, `array([1, ${v}], ${d})`);
    assert.throws(() => jnp.full([2], v, d), RangeError, `full([2], ${v}, ${d})`);
  }
  assert.deepEqual(jnp.array([1.7, -0.5, -2.9], "int32").tolist(), [1, 0, -2]);
  assert.deepEqual(jnp.array([255.9, 0.2], "uint8").tolist(), [255, 0]);
  // a float dtype or bool takes them as they are
  assert.deepEqual(jnp.array([NaN, Infinity], "bool").tolist(), [true, true]);
  assert.ok(Number.isNaN(jnp.array(NaN, "float32").item() as number));
});
