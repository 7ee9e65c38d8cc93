/** @file Donated jit arguments (JAX's donate_argnums) are invalid after the call: each one that is not itself an output is disposed. */
import type { Array } from "./array.js";

/** Disposes every donated argument (donate[i]) that is not itself one of the outputs (its storage or buffers pooled). */
export function disposeDonated(
  args: readonly Array[],
  outs: readonly Array[],
  donate: readonly boolean[] | undefined,
): void {
  if (!donate) return;
  for (let i = 0; i < args.length; i++) {
    if (donate[i] && !outs.includes(args[i])) args[i].dispose();
  }
}
