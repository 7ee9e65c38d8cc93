/** @file Shape utilities: sizes, strides, axis normalization, broadcasting, with errors that name the caller. */

export type Shape = readonly number[];

export const prod = (s: Shape): number => s.reduce((a, b) => a * b, 1);

export function stridesOf(shape: Shape): number[] {
  const st = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= shape[i];
  }
  return st;
}

export const shapeStr = (s: Shape): string => `(${s.join(", ")}${s.length === 1 ? "," : ""})`;

export function shapesEqual(a: Shape, b: Shape): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Normalizes a possibly negative axis against rank; throws naming fn when out of range. */
export function normalizeAxis(fn: string, axis: number, ndim: number): number {
  if (!Number.isInteger(axis)) throw new TypeError(`${fn}: axis must be an integer, got ${axis}`);
  if (axis < -ndim || axis >= ndim) {
    throw new RangeError(`${fn}: axis ${axis} is out of bounds for array of dimension ${ndim}`);
  }
  return axis < 0 ? axis + ndim : axis;
}

/** NumPy broadcasting of several shapes. */
export function broadcastShapes(fn: string, ...shapes: Shape[]): number[] {
  const nd = Math.max(0, ...shapes.map((s) => s.length));
  const out = new Array<number>(nd).fill(1);
  for (const s of shapes) {
    for (let i = 0; i < s.length; i++) {
      const o = nd - s.length + i;
      const d = s[i];
      if (out[o] === 1) out[o] = d;
      else if (d !== 1 && d !== out[o]) {
        throw new Error(
          `${fn}: shapes ${shapes.map(shapeStr).join(", ")} cannot be broadcast together (dimension ${o}: ${out[o]} vs ${d})`,
        );
      }
    }
  }
  return out;
}

export function checkShape(fn: string, shape: unknown): number[] {
  const arr = typeof shape === "number" ? [shape] : shape;
  if (!Array.isArray(arr) || !arr.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new TypeError(
      `${fn}: shape must be a non-negative integer or an array of them, got ${JSON.stringify(shape)}`,
    );
  }
  return arr as number[];
}

/** The most elements one array can hold: a JS typed array's length limit. */
export const MAX_ELEMENTS = 2 ** 32;
/** Raises when an array of `shape` could never be allocated (more elements than a typed array can hold). */
export function checkAllocatable(fn: string, shape: readonly number[]): void {
  const n = shape.reduce((a, b) => a * b, 1);
  if (n > MAX_ELEMENTS) {
    throw new RangeError(
      `${fn}: shape ${shapeStr(shape)} has ${n} elements, more than an array can hold (at most ${MAX_ELEMENTS} = 2^32, the JS typed-array length limit)`,
    );
  }
}
