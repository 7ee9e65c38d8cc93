/** @file float16 and bfloat16 bit conversions by hand (Node 20 has no Float16Array). */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Round-to-nearest-even conversion of a JS number to IEEE binary16 bits. */
export function toFloat16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a === Infinity) return sign | 0x7c00;
  if (a >= 65520) return sign | 0x7c00; // rounds past the largest finite half (65504)
  if (a < 2 ** -24 * 0.5) return sign; // underflows to zero (ties go to even = 0)
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  if (2 ** (e + 1) <= a) e += 1;
  if (e < -14) {
    // subnormal: value = m * 2^-24
    const m = roundEven(a / 2 ** -24);
    return sign | m; // m may reach 1024 which correctly becomes the smallest normal
  }
  let m = roundEven((a / 2 ** e - 1) * 1024);
  if (m === 1024) {
    m = 0;
    e += 1;
  }
  if (e > 15) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | m;
}

function roundEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

export function fromFloat16Bits(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Round-to-nearest-even conversion to bfloat16 bits (the top half of a float32), rounding the double once. */
export function toBFloat16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7fc0;
  f32[0] = x;
  // round to odd in float32 (an inexact even result steps one ulp toward x) so the 16-bit rounding below is the only one
  if (f32[0] !== x && (u32[0] & 1) === 0) u32[0] += Math.abs(f32[0]) < Math.abs(x) ? 1 : -1;
  const b = u32[0];
  const lsb = (b >>> 16) & 1;
  return ((b + 0x7fff + lsb) >>> 16) & 0xffff;
}

export function fromBFloat16Bits(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0];
}
