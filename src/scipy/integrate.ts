/** @file jax.scipy.integrate: trapezoid (the trapezoidal rule of jnp.trapezoid). */
import type { Array } from "../core/array.js";
import type { ArrayInput, Args } from "../numpy/elementwise-util.js";
import { trapezoid as jnpTrapezoid } from "../numpy/elementwise-misc.js";

/** scipy.integrate.trapezoid(y, x=null, dx=1.0, axis=-1): sum(d * (y[1:] + y[:-1]) / 2) with d = diff(x) or dx. */
export function trapezoid(
  y: ArrayInput,
  ...args: Args<[x: ArrayInput | null, dx: number, axis: number], { x?: ArrayInput | null; dx?: number; axis?: number }>
): Array {
  return jnpTrapezoid(y, ...args);
}
