/** @file Array.toString against JAX's repr as NumPy/ml_dtypes print it (test/fixtures/repr-cases.json, scripts/gen-repr-fixtures.py). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ArrayImpl } from "../../src/core/array-impl.js";
import { type DType, type TypedArray, isBigInt } from "../../src/core/dtype.js";
import { fromBigInts, fromNumbers } from "../../src/core/convert.js";
import { array2string, formatArray } from "../../src/core/format.js";

type Value = number | boolean | string;
interface Case {
  name: string;
  dtype: DType;
  shape: number[];
  weak: boolean;
  data: Value[];
  array2string: string;
  repr: string;
}
interface StrCase {
  name: string;
  dtype: DType;
  shape: number[];
  data: Value[];
  str: string;
}
interface ScalarSet {
  dtype: DType;
  data: Value[];
  repr: string[];
}
const fixture = JSON.parse(readFileSync("test/fixtures/repr-cases.json", "utf8")) as {
  cases: Case[];
  strs: StrCase[];
  scalars: ScalarSet[];
};

const num = (v: Value): number => (v === "nan" ? NaN : v === "inf" ? Infinity : v === "-inf" ? -Infinity : Number(v));

/** The fixture's values as the storage of an Array of that dtype (every value is exact in it). */
function storage(dtype: DType, data: Value[]): TypedArray {
  if (dtype === "bool") return Uint8Array.from(data, (v) => (v ? 1 : 0));
  if (isBigInt(dtype))
    return fromBigInts(
      data.map((v) => BigInt(v as string)),
      dtype,
    );
  return fromNumbers(data.map(num), dtype);
}

const arrayOf = (dtype: DType, shape: number[], data: Value[], weak = false): ArrayImpl =>
  ArrayImpl.of(shape, dtype, storage(dtype, data), weak);

test("the fixture stores every value exactly in its dtype", () => {
  for (const c of fixture.cases) {
    if (c.dtype === "bool" || isBigInt(c.dtype)) continue;
    const a = arrayOf(c.dtype, c.shape, c.data);
    c.data.forEach((v, i) => assert.ok(Object.is(a.elementAt(i), num(v)), `${c.name}[${i}]: ${v} is not a ${c.dtype}`));
  }
});

for (const c of fixture.cases) {
  test(`repr: ${c.name} (${c.dtype}[${c.shape}])`, () => {
    assert.equal(arrayOf(c.dtype, c.shape, c.data, c.weak).toString(), c.repr);
  });
}

test("str (np.array2string defaults, as PRNG keys print their data)", () => {
  for (const c of fixture.strs) {
    const a = arrayOf(c.dtype, c.shape, c.data);
    assert.equal(
      array2string(c.shape, c.dtype, (i) => a.elementAt(i), { separator: " ", prefix: "", suffix: "" }),
      c.str,
      c.name,
    );
  }
});

test("str of empty arrays is [] whatever the shape, as in NumPy", () => {
  for (const shape of [[0], [2, 0], [0, 3, 1]])
    assert.equal(
      array2string(shape, "int32", () => 0, { separator: " ", prefix: "", suffix: "" }),
      "[]",
    );
});

test("repr of single values shows each dtype's own shortest digits", () => {
  for (const set of fixture.scalars) {
    const wrong: string[] = [];
    set.data.forEach((v, i) => {
      const got = arrayOf(set.dtype, [], [v]).toString();
      if (got !== set.repr[i]) wrong.push(`${v}: got ${got}, want ${set.repr[i]}`);
    });
    assert.deepEqual(wrong, [], `${set.dtype}: ${wrong.length} of ${set.data.length} differ`);
  }
});

test("the README tour's gradient prints as in JAX", () => {
  const g = arrayOf("float32", [2, 3], [0.8399486541748047, 0.005364418029785156, 0, 0, 0, 0]);
  assert.equal(
    String(g),
    "Array([[0.83994865, 0.00536442, 0.        ],\n       [0.        , 0.        , 0.        ]], dtype=float32)",
  );
});

test("printing a large array reads only the printed corners", () => {
  let reads = 0;
  const s = formatArray(
    [1000, 1000],
    "float32",
    false,
    (i) => {
      reads++;
      return i % 7;
    },
    1e6,
  );
  // 6 x 6 corner elements, read once to size the columns and once to print them
  assert.equal(reads, 2 * 36);
  assert.equal(s.split("\n").length, 7);
  assert.match(s, /^Array\(\[\[0\., 1\., 2\., \.\.\., 3\., 4\., 5\.\],\n {7}\[6\., 0\., 1\., \.\.\., 2\., 3\., 4\.\],/);
});
