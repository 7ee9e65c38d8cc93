/** @file lax.stopGradient: identity on values, zero tangent (JAX implements it with a custom jvp; we use a primitive). */
import type { Array } from "../core/array.js";
import { Primitive, Zero } from "../core/primitive.js";
import { bind1 } from "../core/trace.js";

export const stopGradientP: Primitive = new Primitive(
  "stop_gradient",
  {
    abstractEval([x]) {
      return [x];
    },
    impl([x]) {
      return [x];
    },
    jvp([x]) {
      const y = bind1(stopGradientP, [x]);
      return [[y], [new Zero(y.aval)]];
    },
    vmap(_a, [x], [d]) {
      return [[bind1(stopGradientP, [x])], [d]];
    },
    lower(_ctx, inputs) {
      return inputs;
    },
  },
  { cost: "view", exactOnScalars: true, shapePolymorphic: true },
);

export function stopGradient<T>(x: T): T {
  if (x === null || typeof x !== "object" || !("aval" in (x as object))) return x;
  return bind1(stopGradientP, [x as unknown as Array]) as unknown as T;
}
