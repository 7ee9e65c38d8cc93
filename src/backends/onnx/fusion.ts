/** @file Fusion choice: a jitted pure float32 elementwise program runs as one fused kernel (native vectors, else WebAssembly SIMD) instead of ONNX Runtime sessions. */
import type { Jaxpr } from "../../core/jaxpr.js";
import { type FusedSpec, fuseElementwise } from "../../compiler/fuse-elementwise.js";
import { onnxBackendOptions } from "./backend-options.js";
import { warnOnce } from "./fallback.js";
import { ParallelKernel } from "./fused-workers.js";
import { NativeFusedKernel } from "./native-fused.js";

/** A pure elementwise program's fused kernel. */
export interface Fused {
  readonly spec: FusedSpec;
  readonly kernel: ParallelKernel | NativeFusedKernel;
}

/** The fused kernel of a pure float32 elementwise program (null: not one, disabled, or neither the native addon nor WebAssembly SIMD). */
export function fusedFor(jaxpr: Jaxpr): Fused | null {
  if (!onnxBackendOptions.fuseElementwise) return null;
  const spec = fuseElementwise(jaxpr);
  if (!spec) return null;
  try {
    const kernel =
      (onnxBackendOptions.nativeFused ? NativeFusedKernel.create(spec) : null) ?? ParallelKernel.create(spec);
    return kernel ? { spec, kernel } : null;
  } catch (e) {
    if (onnxBackendOptions.strict) throw e;
    warnOnce(
      `fused elementwise kernel: creating it failed (${(e as Error).message}); the program runs through ONNX Runtime instead`,
    );
    return null;
  }
}
