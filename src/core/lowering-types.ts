/** @file The compiler-agnostic interface lowering rules use to emit ONNX nodes (implemented by the ONNX compiler). */
import type { DType } from "./dtype.js";

export type OnnxAttr = number | string | number[] | string[] | { tensor: { dtype: DType; shape: number[]; data: ArrayLike<number | bigint> } } | { graph: unknown };

export interface LoweringContext {
  /** Emits one ONNX node and returns its output value names. */
  node(op: string, inputs: string[], attrs?: Record<string, OnnxAttr>, numOutputs?: number): string[];
  /** A constant tensor value name. */
  constant(dtype: DType, shape: number[], data: ArrayLike<number | bigint>): string;
  /** An int64 1-D constant (shapes, axes). */
  ints(values: number[]): string;
  /** Lowers a nested jaxpr inline (control flow bodies, pjit). */
  inlineJaxpr(jaxpr: unknown, inputs: string[]): string[];
  /** Builds an ONNX subgraph (If/Loop/Scan bodies) from a jaxpr. */
  subgraph(jaxpr: unknown, name: string, extraInputs?: { name: string; dtype: DType; shape: (number | null)[] }[]): unknown;
}
