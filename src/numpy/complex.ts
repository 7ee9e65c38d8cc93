/** @file jnp functions for complex numbers that have no real-only counterpart: angle, and complex (jaxts's constructor). */
import type { Array } from "../core/array.js";
import { complexDType, isComplex, isFloat } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { asArrayArg, promoteArgsInexact } from "./core.js";
import type { ArrayInput } from "./elementwise-util.js";

/** Angle of a complex number in radians (or degrees): atan2(imag, real). */
export const angle = (z: ArrayInput, deg = false): Array => {
  if (typeof deg !== "boolean")
    throw new TypeError(`angle: deg must be a boolean, got ${JSON.stringify(deg)}; accepted form: jnp.angle(z, deg?)`);
  const a = asArrayArg("angle", z);
  const re = isComplex(a.dtype) ? ops.real(a) : isFloat(a.dtype) ? a : ops.convert(a, "float32");
  const im = isComplex(a.dtype) ? ops.imag(a) : ops.fullLike(re, 0);
  const t = ops.atan2(im, re);
  return deg ? ops.mul(t, ops.scalarLike(t, 180 / Math.PI)) : t;
};
/**
 * jaxts's way to build complex arrays (JS has no complex literal): re + i*im, broadcast and promoted to
 * complex64 (complex128 for float64 parts under x64). lax.complex is the strict primitive form.
 */
export const complex = (re: ArrayInput, im: ArrayInput = 0): Array => {
  let [a, b] = promoteArgsInexact("complex", re, im);
  if (isComplex(a.dtype)) throw new TypeError(`complex: the real and imaginary parts must be real, got ${a.dtype}`);
  const part = complexDType(a.dtype) === "complex128" ? "float64" : "float32";
  if (a.dtype !== part) {
    a = ops.convert(a, part, false);
    b = ops.convert(b, part, false);
  }
  return ops.complexOf(a, b);
};
