/** @file Float digits: exact expansions, half-even rounding, shortest round-trip digits per dtype, C's %g. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { exactDecimal, formatG, roundKeep, shortestDecimal } from "../../src/core/float-digits.js";

test("float digits: exact expansion, half-even rounding, float32 and float16 shortest, %g", () => {
  assert.deepEqual(exactDecimal(0.1), { digits: "1000000000000000055511151231257827021181583404541015625", exp: -1 });
  assert.deepEqual(exactDecimal(2 ** -9), { digits: "1953125", exp: -3 });
  assert.deepEqual(roundKeep(exactDecimal(2 ** -9), 6), { digits: "195312", exp: -3 }); // tie: 2 is even
  assert.deepEqual(roundKeep(exactDecimal(3 * 2 ** -9), 6), { digits: "585938", exp: -3 }); // tie: 7 is odd
  assert.deepEqual(roundKeep(exactDecimal(0.96), 1), { digits: "1", exp: 0 }); // carry into a new digit
  assert.deepEqual(shortestDecimal(Math.fround(0.1), "float32"), { digits: "1", exp: -1 });
  assert.deepEqual(shortestDecimal(Math.fround(16777216), "float32"), { digits: "16777216", exp: 7 });
  assert.deepEqual(shortestDecimal(0.0999755859375, "float16"), { digits: "1", exp: -1 });
  assert.deepEqual(shortestDecimal(0.1, "float64"), { digits: "1", exp: -1 });
  assert.equal(formatG(13 / 128), "0.101562");
  assert.equal(formatG(0.10009765625), "0.100098");
  assert.equal(formatG(1236992), "1.23699e+06");
  assert.equal(formatG(-0), "-0");
});
