/** @file Deterministic test data: uniform values from a seeded mulberry32 stream, and the element count of a shape. */

/** n deterministic uniform values in [lo, hi) from `seed` (mulberry32). */
export function seededUniform(n: number, seed: number, lo = -1, hi = 1): number[] {
  let s = seed >>> 0;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out.push(lo + (hi - lo) * (((t ^ (t >>> 14)) >>> 0) / 4294967296));
  }
  return out;
}

/** The number of elements of an array of shape s. */
export const sizeOf = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
