/** @file Smallest and largest of long number lists, in a loop: spreading ~100k+ values into Math.min / Math.max overflows the stack. */

/** [min, max] of xs, NaNs ignored ([Infinity, -Infinity] when none is a number). */
export function extent(xs: Iterable<number>): [number, number] {
  let lo = Infinity,
    hi = -Infinity;
  for (const x of xs) {
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  return [lo, hi];
}
