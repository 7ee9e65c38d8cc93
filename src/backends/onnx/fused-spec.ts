/** @file The program format of the fused elementwise kernels (native, WebAssembly, worker-parallel), built by compiler/fuse-elementwise.ts. */

/** Operations of a fused program: float32 lanes, except comparisons and logic which yield/take lane masks. */
export type FusedOp =
  | "neg"
  | "abs"
  | "sqrt"
  | "rsqrt"
  | "floor"
  | "ceil"
  | "sign"
  | "exp"
  | "log"
  | "tanh"
  | "logistic"
  | "add"
  | "sub"
  | "mul"
  | "div"
  | "max"
  | "min"
  | "eq"
  | "ne"
  | "lt"
  | "le"
  | "gt"
  | "ge"
  | "and"
  | "or"
  | "not"
  | "select";

/** A value of a fused program; `args` index earlier values. */
export type FusedValue =
  | { readonly kind: "input"; readonly index: number }
  | { readonly kind: "scalar"; readonly index: number }
  | { readonly kind: "const"; readonly value: number }
  | { readonly kind: "op"; readonly op: FusedOp; readonly args: readonly number[] };

export interface FusedSpec {
  /** Values in evaluation order. */
  readonly values: readonly FusedValue[];
  /** Value stored to each output (outputs have the common shape). */
  readonly outputs: readonly number[];
  /** Per jaxpr invar: ["input", k] (a full-shape array, region k) or ["scalar", k] (a rank-0 value). */
  readonly params: readonly (readonly ["input" | "scalar", number])[];
  readonly numInputs: number;
  readonly numScalars: number;
  /** The common shape of the array values. */
  readonly shape: readonly number[];
}
