/**
 * @file Donation (JAX's donate_argnums): which inputs of a jit call are donated, reusing a donated input's storage
 * for a fused kernel's output, and invalidating donated inputs after the call.
 */
import type { ArrayImpl } from "../../core/array-impl.js";
import type { Params } from "../../core/primitive.js";
import { ownsStorage } from "./buffer-pool.js";

export { disposeDonated } from "../../core/donate.js";

/**
 * The donated inputs of a pjit equation: only for a call dispatched by jit on concrete arrays (a pjit equation
 * evaluated inside another program must leave its inputs alone: they may be read again).
 */
export function donationAtDispatch(params: Params): readonly boolean[] | undefined {
  return params.donate_at_dispatch === true ? (params.donated_invars as readonly boolean[] | undefined) : undefined;
}

/**
 * A donated input whose storage nothing else shares, not yet `taken`, to become a fused kernel's output (same size,
 * read before written); `isArray(i)` says whether input i is an array operand (not a scalar parameter).
 */
export function donatedOutput(
  inputs: readonly ArrayImpl[],
  donate: readonly boolean[] | undefined,
  taken: Set<number>,
  isArray: (i: number) => boolean,
): Float32Array | undefined {
  if (!donate) return undefined;
  for (let i = 0; i < inputs.length; i++) {
    if (donate[i] && !taken.has(i) && isArray(i) && ownsStorage(inputs[i])) {
      taken.add(i);
      return inputs[i].buffer as Float32Array;
    }
  }
  return undefined;
}
