/** @file Test helpers: decode NumPy fixture JSON and compare Arrays against expected values with tolerances. */
import assert from "node:assert/strict";
import { readFixtureJson } from "./repo-root.js";
import { Array } from "../../src/core/array.js";
import type { DType } from "../../src/core/dtype.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";

/** A fixture array: dtype, shape and flat data; non-finite floats are the strings "nan", "inf", "-inf". */
export interface FixArray {
  dtype: DType;
  shape: number[];
  data: (number | boolean | string)[];
}

export function loadFixture<T>(name: string): T {
  return readFixtureJson<T>(name);
}
const num = (v: number | boolean | string): number =>
  typeof v === "boolean"
    ? v
      ? 1
      : 0
    : v === "nan"
      ? NaN
      : v === "inf"
        ? Infinity
        : v === "-inf"
          ? -Infinity
          : Number(v);

export function decode(f: FixArray): Array {
  const vals = f.data.map(num);
  const nested = (shape: number[], off: number): unknown => {
    if (shape.length === 0) return vals[off];
    const step = shape.slice(1).reduce((a, b) => a * b, 1);
    return globalThis.Array.from({ length: shape[0] }, (_, i) => nested(shape.slice(1), off + i * step));
  };
  if (f.shape.includes(0)) {
    return ops.reshape(array([], { dtype: f.dtype }), f.shape);
  }
  if (f.dtype === "bool") return array(nested(f.shape, 0) as number[], { dtype: "bool" });
  return array(nested(f.shape, 0) as number[], { dtype: f.dtype });
}

function flatNumbers(x: Array): number[] {
  const l = x.tolist();
  const out: number[] = [];
  const rec = (v: unknown) => {
    if (globalThis.Array.isArray(v)) v.forEach(rec);
    else out.push(typeof v === "boolean" ? (v ? 1 : 0) : Number(v));
  };
  rec(l);
  return out;
}

/** Asserts dtype, shape and values (NaN matches NaN; |a-e| <= atol + rtol |e|). */
export function assertClose(
  actual: Array,
  expected: FixArray | Array,
  opts: { rtol?: number; atol?: number; checkDtype?: boolean; msg?: string } = {},
): void {
  const exp =
    expected instanceof Array
      ? { dtype: expected.dtype, shape: expected.shape, data: flatNumbers(expected) }
      : { ...expected, data: expected.data.map(num) };
  const msg = opts.msg ? `${opts.msg}: ` : "";
  if (opts.checkDtype !== false) assert.equal(actual.dtype, exp.dtype, `${msg}dtype`);
  assert.deepEqual(actual.shape, exp.shape, `${msg}shape`);
  const a = flatNumbers(actual);
  const lowp = actual.dtype === "float16" || actual.dtype === "bfloat16";
  const rtol = opts.rtol ?? (actual.dtype === "float64" ? 1e-12 : lowp ? 1e-2 : 2e-6);
  const atol = opts.atol ?? (actual.dtype === "float64" ? 1e-12 : lowp ? 1e-2 : 1e-6);
  for (let i = 0; i < a.length; i++) {
    const e = exp.data[i] as number;
    if (Number.isNaN(e)) {
      assert.ok(Number.isNaN(a[i]), `${msg}element ${i}: expected nan, got ${a[i]}`);
      continue;
    }
    if (!Number.isFinite(e)) {
      assert.equal(a[i], e, `${msg}element ${i}`);
      continue;
    }
    assert.ok(
      Math.abs(a[i] - e) <= atol + rtol * Math.abs(e),
      `${msg}element ${i}: got ${a[i]}, expected ${e} (rtol ${rtol}, atol ${atol})`,
    );
  }
}
