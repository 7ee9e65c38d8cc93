/** @file Test helpers for complex fixtures: decode {dtype, shape, re, im} arrays and compare complex results. */
import assert from "node:assert/strict";
import { Array } from "../../src/core/array.js";
import { ArrayImpl } from "../../src/core/array-impl.js";
import { ShapedArray } from "../../src/core/aval.js";
import { joinComplex } from "../../src/core/convert.js";
import { type DType, isComplex } from "../../src/core/dtype.js";
import { type FixArray, assertClose, decode } from "./fixtures.js";
import * as np from "../../src/numpy/index.js";
import { grad } from "../../src/transforms/api.js";

/** A fixture array: complex ones carry re/im, real ones data. */
export type CFix = {
  dtype: DType;
  shape: number[];
  re?: (number | string)[];
  im?: (number | string)[];
  data?: (number | boolean | string)[];
};
const num = (v: number | string): number =>
  v === "nan" ? NaN : v === "inf" ? Infinity : v === "-inf" ? -Infinity : Number(v);

export function decodeC(f: CFix): Array {
  if (!isComplex(f.dtype)) return decode(f as FixArray);
  return new ArrayImpl(new ShapedArray(f.shape, f.dtype), joinComplex(f.re!.map(num), f.im!.map(num), f.dtype));
}

/** Real and imaginary parts of a concrete array (imaginary zeros for real arrays). */
export function partsOfArray(x: Array): [number[], number[]] {
  const b = x.dataSync();
  if (!isComplex(x.dtype))
    return [globalThis.Array.from(b as Float32Array, Number), new globalThis.Array(x.size).fill(0)];
  const re: number[] = [],
    im: number[] = [];
  for (let i = 0; i < x.size; i++) {
    re.push((b as Float64Array)[2 * i]);
    im.push((b as Float64Array)[2 * i + 1]);
  }
  return [re, im];
}

/** Asserts dtype, shape and complex values: |a - e| <= atol + rtol |e| on each part (NaN matches NaN). */
export function assertCloseC(
  actual: Array,
  expected: CFix | Array,
  opts: { rtol?: number; atol?: number; msg?: string } = {},
): void {
  const exp = expected instanceof Array ? expected : decodeC(expected);
  const msg = opts.msg ? `${opts.msg}: ` : "";
  if (!isComplex(exp.dtype)) {
    assertClose(actual, exp, opts);
    return;
  }
  assert.equal(actual.dtype, exp.dtype, `${msg}dtype`);
  assert.deepEqual(actual.shape, exp.shape, `${msg}shape`);
  const [ar, ai] = partsOfArray(actual),
    [er, ei] = partsOfArray(exp);
  const rtol = opts.rtol ?? (actual.dtype === "complex128" ? 1e-12 : 2e-6),
    atol = opts.atol ?? (actual.dtype === "complex128" ? 1e-12 : 1e-6);
  // the tolerance scales with |e| (a part near 0 of a large complex value is only as exact as the value)
  for (let i = 0; i < er.length; i++) {
    for (const [a, e, part] of [
      [ar[i], er[i], "re"],
      [ai[i], ei[i], "im"],
    ] as const) {
      if (Number.isNaN(e)) {
        assert.ok(Number.isNaN(a), `${msg}element ${i}.${part}: expected nan, got ${a}`);
        continue;
      }
      if (!Number.isFinite(e)) {
        assert.equal(a, e, `${msg}element ${i}.${part}`);
        continue;
      }
      const mag = Math.hypot(er[i], ei[i]);
      assert.ok(
        Math.abs(a - e) <= atol + rtol * mag,
        `${msg}element ${i}.${part}: got ${a}, expected ${e} (rtol ${rtol}, atol ${atol})`,
      );
    }
  }
}

/** Complex128 array from parts. */
export const cx = (re: number[], im: number[], shape: number[]): Array =>
  decodeC({ dtype: "complex128", shape, re, im });
/** |z|^2 as a real array. */
export const abs2 = (z: Array): Array => np.real(np.multiply(z, np.conj(z)));
/**
 * Checks grad(f)(z) = df/dx - i df/dy (JAX's convention) entrywise against central differences along 1 and i,
 * within `rel` of 1 + |df/dx| + |df/dy|.
 */
export function checkGradFd(f: (z: Array) => Array, z: Array, msg: string, rel = 1e-6): void {
  const g = grad(f)(z);
  assert.equal(g.dtype, "complex128", `${msg}: grad dtype`);
  const [gr, gi] = partsOfArray(g);
  const [zr, zi] = partsOfArray(z);
  const h = 1e-6;
  const val = (re: number[], im: number[]): number => Number(f(cx(re, im, z.shape)).item());
  for (let k = 0; k < zr.length; k++) {
    const bump = (v: number[], d: number): number[] => v.map((x, j) => (j === k ? x + d : x));
    const dx = (val(bump(zr, h), zi) - val(bump(zr, -h), zi)) / (2 * h);
    const dy = (val(zr, bump(zi, h)) - val(zr, bump(zi, -h))) / (2 * h);
    const scale = 1 + Math.abs(dx) + Math.abs(dy);
    assert.ok(Math.abs(gr[k] - dx) <= rel * scale, `${msg}: Re grad[${k}] = ${gr[k]}, finite difference ${dx}`);
    assert.ok(Math.abs(gi[k] + dy) <= rel * scale, `${msg}: Im grad[${k}] = ${gi[k]}, finite difference ${-dy}`);
  }
}
