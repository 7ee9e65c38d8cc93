/** @file Primitive: one definition per primitive holding all of its rules (abstract eval, impl, jvp, transpose, vmap, lowering) and facts. */
import type { ShapedArray } from "./aval.js";
import type { Array } from "./array.js";
import type { ArrayImpl } from "./array-impl.js";
import type { LoweringContext } from "./lowering-types.js";

/** Params are plain data (numbers, strings, arrays, jaxprs, functions) printed in jaxprs. */
export type Params = Record<string, unknown>;

/** Symbolic zero tangent/cotangent (JAX's ad_util.Zero): carries only the aval. */
export class Zero {
  constructor(readonly aval: ShapedArray) {}
}
export type MaybeZero = Array | Zero;

/** Marks a linear (unknown) input during transposition. */
export class UndefinedPrimal {
  constructor(readonly aval: ShapedArray) {}
}

/** Identifies the mapped axis of a vmap/pmap (size and optional name) for batching rules. */
export interface AxisData {
  size: number;
  name: string | null;
  /** mesh axes this vmap is spmd over (spmdAxisName); null if none */
  spmdAxisName?: string | string[] | null;
}
/** Batch dimension of a value under vmap: a non-negative axis, or null when unbatched. */
export type BDim = number | null;

export interface PrimitiveRules<P extends Params = Params> {
  /** Output avals from input avals; throws a clear error naming the primitive on bad input. */
  abstractEval(avals: ShapedArray[], params: P): ShapedArray[];
  /** The reference implementation on concrete host arrays (the test oracle). */
  impl?: (args: ArrayImpl[], params: P, outAvals: ShapedArray[]) => ArrayImpl[];
  /** Forward-mode rule: returns primal and tangent outputs. */
  jvp?: (primals: Array[], tangents: MaybeZero[], params: P) => [Array[], MaybeZero[]];
  /** Transpose rule for linear primitives: cotangents for each UndefinedPrimal input (null for others). */
  transpose?: (cts: MaybeZero[], args: (Array | UndefinedPrimal)[], params: P) => (MaybeZero | null)[];
  /** Batching rule. */
  vmap?: (axis: AxisData, args: Array[], dims: BDim[], params: P) => [Array[], BDim[]];
  /**
   * ONNX lowering: node names of outputs, given input value names. ONNX is jaxts's one IR (as tinygrad has one UOp
   * IR): every compiled path (eager sessions, jit programs, per-device shardMap programs, exportOnnx) consumes the
   * same ONNX graph, so there is one lowering slot, not one per platform; a backend that is not ONNX Runtime either
   * runs ONNX models or interprets jaxprs (the "interpreter" backend runs `impl`). Lowerings written as jaxts programs
   * (qr, eigh, ..., see src/lowerings/index.ts) fill this slot from one table the ONNX backend installs.
   */
  lower?: (
    ctx: LoweringContext,
    inputs: string[],
    params: P,
    inAvals: ShapedArray[],
    outAvals: ShapedArray[],
  ) => string[];
  /**
   * ONNX lowering of an equation with a complex operand or result: each complex value is its storage as a float
   * tensor [..., 2] (complex64 -> float32, complex128 -> float64; notes/complex.md). Absent: a host step.
   */
  lowerComplex?: PrimitiveRules<P>["lower"];
  /** Why a rule is absent (the coverage test accepts a written reason). */
  missing?: Partial<Record<"jvp" | "transpose" | "vmap" | "lower", string>>;
}

/**
 * Facts about a primitive that the transforms, the compiler and the backends consult (declared with its definition,
 * never in name lists elsewhere).
 */
export interface PrimitiveFacts {
  /** Returns a list of outputs (else exactly one). */
  multipleResults?: boolean;
  /** Linear in its operands (its transpose rule applies). */
  linear?: boolean;
  /** Has effects: vmap binds it even when no operand is batched. */
  effectful?: boolean;
  /**
   * A collective over named axes: the param holding its axis name or names (a string or string[]). vmap batches it
   * whenever it names the vmapped axis, even with unbatched operands.
   */
  collectiveAxisParam?: "axes" | "axis_name";
  /**
   * A call primitive: the param holding the jaxpr (or ClosedJaxpr) it calls. Without a `lower` rule the compiler
   * inlines that jaxpr, and the eager ONNX path runs `impl` (which evaluates the jaxpr equation by equation).
   */
  callJaxprParam?: "jaxpr" | "call_jaxpr";
  /**
   * Its impl dispatches its own work (shard_map on the device runtime): the eager ONNX path calls it directly, with no
   * per-call cache key and no eager cache entry holding its params.
   */
  dispatchesItself?: boolean;
  /**
   * Its lowering does not depend on operand shapes (only dtypes and ranks): an eager ONNX session declares unknown
   * dimensions, so one session serves every shape.
   */
  shapePolymorphic?: boolean;
  /**
   * Its ONNX lowering and reference impl agree bit for bit (exactly rounded arithmetic, data movement, integer ops):
   * only these may run on the reference impl when every operand and result has at most one element (the scalar
   * shortcut), so eager, vmapped and jitted results agree.
   */
  exactOnScalars?: boolean;
  /**
   * What cost models (the partitioner's costAnalysis, autoShard) count for it: "view" (reshape, broadcast, copy: fused
   * into its consumer, no FLOPs and no run time), "move" (data movement: no FLOPs, its bytes still count),
   * "transcendental" (exp, log, tanh, ...: weighted as several FLOPs per element); absent: one FLOP per element.
   */
  cost?: "view" | "move" | "transcendental";
}

const REGISTRY = new Map<string, Primitive>();

/**
 * A primitive: its rules and facts in one definition (checklist: notes/adding-a-primitive.md). Its one lowering slot
 * targets ONNX, jaxts's single IR below jaxprs (no per-platform lowerings: every backend that compiles runs ONNX).
 */
export class Primitive<P extends Params = Params> {
  readonly rules: PrimitiveRules<P>;
  constructor(
    readonly name: string,
    rules: PrimitiveRules<P>,
    readonly opts: PrimitiveFacts = {},
  ) {
    if (REGISTRY.has(name)) throw new Error(`Primitive ${name} is defined twice`);
    this.rules = rules;
    REGISTRY.set(name, this as unknown as Primitive);
  }
  get multipleResults(): boolean {
    return this.opts.multipleResults === true;
  }
  /** A collective over named axes (see PrimitiveFacts.collectiveAxisParam). */
  get collective(): boolean {
    return this.opts.collectiveAxisParam !== undefined;
  }
  toString(): string {
    return this.name;
  }
}

export function allPrimitives(): Primitive[] {
  return [...REGISTRY.values()];
}
export function getPrimitive(name: string): Primitive {
  const p = REGISTRY.get(name);
  if (!p) throw new Error(`unknown primitive ${name}`);
  return p;
}
