/** @file The compiler-agnostic interface lowering rules use to emit ONNX nodes (implemented by the ONNX compiler in src/compiler). */
import type { DType } from "./dtype.js";

/** An ONNX attribute value: ints, int lists, strings, tagged floats, tensors or subgraphs. */
export type OnnxAttr =
  | number
  | boolean
  | string
  | number[]
  | string[]
  | { float: number }
  | { floats: number[] }
  | { tensor: { dtype: DType; shape: number[]; data: ArrayLike<number | bigint> } }
  | { graph: unknown };

/** Thrown by a lowering rule (via ctx.unsupported) when it cannot lower these params/dtypes; the compiler then runs the equation on the interpreter. */
export class LoweringUnsupportedError extends Error {
  constructor(
    readonly primitive: string,
    readonly reason: string,
  ) {
    super(`${primitive}: no ONNX lowering (${reason})`);
    this.name = "LoweringUnsupportedError";
  }
}

/**
 * What lowering rules see. Values are ONNX value names. A jaxts value of dtype d is held in
 * the graph as `repr(d)` (bfloat16 is held as float32 rounded to bfloat16, since ONNX Runtime
 * has almost no bfloat16 kernels); every other dtype is held as itself.
 */
export interface LoweringContext {
  /** Opset of the ai.onnx domain the graph targets. */
  readonly opset: number;
  /**
   * Whether the graph runs in a session of jaxts's native runner, whose "jaxts" domain holds the float64 linalg
   * custom ops (jaxts.Lu, TriangularSolve, Cholesky, Qr); false or absent: standard ONNX only.
   */
  readonly nativeLinalg?: boolean;
  /** Emits one ONNX node (of operator-set `domain`, default ai.onnx) and returns its output value names. */
  node(op: string, inputs: string[], attrs?: Record<string, OnnxAttr>, numOutputs?: number, domain?: string): string[];
  /** Emits a single-output ONNX node. */
  op(op: string, inputs: string[], attrs?: Record<string, OnnxAttr>): string;
  /** A constant tensor from jaxts storage data (float16/bfloat16 as raw bits, bool as 0/1). */
  constant(dtype: DType, shape: readonly number[], data: ArrayLike<number | bigint>): string;
  /** A rank-0 constant of dtype holding the JS value (converted like convert_element_type). */
  scalar(dtype: DType, value: number | bigint | boolean): string;
  /** An int64 1-D constant (shapes, axes, pads). */
  ints(values: readonly number[]): string;
  /** The ONNX element type that holds values of dtype d (bfloat16 -> float32). */
  repr(d: DType): DType;
  /** Whether ONNX Runtime's CPU provider has a kernel for `op` (a key of ort-support, e.g. "ReduceSum", "Mod(fmod=1)") at this ONNX dtype. */
  supports(op: string, d: DType): boolean;
  /** Aborts lowering of the current equation; the compiler falls back to the reference implementation. */
  unsupported(reason: string): never;
  /** Lowers a nested jaxpr inline (pjit, control-flow bodies) and returns its output value names. */
  inlineJaxpr(jaxpr: unknown, inputs: string[]): string[];
  /**
   * Builds an ONNX subgraph (If/Loop/Scan bodies): `inputs` type its formal inputs, `build` emits its
   * nodes on a nested context (outer values stay visible by name) and returns its output names, which
   * `outputs` type. The result is usable as a `{ graph }` attribute.
   */
  subgraph(
    name: string,
    inputs: readonly { dtype: DType; shape: readonly (number | null)[] | null }[],
    outputs: readonly { dtype: DType; shape: readonly (number | null)[] | null }[],
    build: (sub: LoweringContext, inputNames: string[]) => string[],
  ): { graph: unknown };
}
