/**
 * @file Lowering rules written as jaxts programs (JAX's `mlir.lower_fun`): a primitive without an ONNX operator
 * (matrix decompositions, iterative special functions) lowers by tracing an implementation made of lowerable
 * primitives (elementwise ops, dot_general, while/scan loops) and inlining that jaxpr into the ONNX graph.
 */
import type { ShapedArray } from "../core/aval.js";
import type { Array } from "../core/array.js";
import { ClosedJaxpr, type Jaxpr } from "../core/jaxpr.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { LoweringUnsupportedError } from "../core/lowering-types.js";
import { paramsKey } from "../core/static-key.js";
import type { Primitive, PrimitiveRules } from "../core/primitive.js";

type Lower = NonNullable<PrimitiveRules["lower"]>;

/** A lowering written as a jaxts program: the primitive's outputs from its inputs (tracers) and params. */
export type LoweringProgram<P> = (inputs: Array[], params: P) => Array[];

/**
 * `exporting` is true while jax.exportOnnx compiles: lowerings that jit leaves to the interpreter for speed at large
 * sizes (see `tooSlowOnOnnx`) must then lower at any size, since the model has to be standalone.
 */
export const lowerFunOptions = { exporting: false };

/**
 * Throws LoweringUnsupportedError (so jit runs the equation on the interpreter between ONNX segments) when `big`
 * and not exporting: for algorithms whose ONNX form is much slower than the reference kernel at that size.
 */
export function tooSlowOnOnnx(prim: string, big: boolean, why: string): void {
  if (big && !lowerFunOptions.exporting) throw new LoweringUnsupportedError(prim, why);
}

/** The traced implementation of one (params, input avals) instance, cached (params keyed exactly: Infinity is not -Infinity). */
function cacheKey(params: Record<string, unknown>, avals: readonly ShapedArray[]): string {
  return paramsKey(params) + "|" + avals.map((a) => `${a.dtype}[${a.shape.join(",")}]`).join(";");
}

/**
 * A lowering rule from `impl`, a function of the primitive's inputs (tracers) and params returning its outputs.
 * `impl` must only use primitives that lower to ONNX themselves (it may use lax loops); its outputs must match the
 * primitive's output avals exactly.
 */
export function lowerFun<P extends Record<string, unknown>>(name: string, impl: LoweringProgram<P>): Lower {
  const cache = new Map<string, { jaxpr: Jaxpr; consts: Array[] }>();
  return (ctx, inputs, params, inAvals, outAvals) => {
    const key = cacheKey(params, inAvals);
    let t = cache.get(key);
    if (!t) {
      t = traceToJaxpr((...xs) => impl(xs, params as P), [...inAvals], `${name}_lowering`);
      const got = t.jaxpr.outAvals;
      if (
        got.length !== outAvals.length ||
        got.some((a, i) => a.dtype !== outAvals[i].dtype || a.shape.join() !== outAvals[i].shape.join())
      ) {
        throw new Error(
          `${name} lowering: the implementation returned ${got.map((a) => a.str()).join(", ")}, expected ${outAvals.map((a) => a.str()).join(", ")}`,
        );
      }
      cache.set(key, t);
    }
    return ctx.inlineJaxpr(t.consts.length ? new ClosedJaxpr(t.jaxpr, t.consts) : t.jaxpr, inputs);
  };
}

/** Installs `impl` as `prim`'s ONNX lowering (and drops the recorded reason it had none). */
export function setLowering<P extends Record<string, unknown>>(prim: Primitive<P>, impl: LoweringProgram<P>): void {
  prim.rules.lower = lowerFun(prim.name, impl) as PrimitiveRules<P>["lower"];
  if (prim.rules.missing) delete (prim.rules.missing as { lower?: string }).lower;
}
