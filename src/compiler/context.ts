/** @file The ONNX LoweringContext: wraps a GraphBuilder, dedupes constants, and lowers jaxpr equations through each primitive's `lower` rule. */
import {
  GraphBuilder,
  attr,
  type AttrValue,
  type DType as GDType,
  type GraphNode,
  type TensorLiteral,
} from "../backends/onnx/graph-builder.js";
import { ortSupports } from "../backends/onnx/ort-support.js";
import type { Array as JArray } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import type { ShapedArray } from "../core/aval.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { castNumber, bigOf } from "../core/convert.js";
import { type DType, isComplex, realDType } from "../core/dtype.js";
import { toBFloat16Bits, fromBFloat16Bits, toFloat16Bits } from "../core/float16.js";
import { ClosedJaxpr, Jaxpr, type JaxprEqn, Literal, type Var } from "../core/jaxpr.js";
import { type LoweringContext, LoweringUnsupportedError, type OnnxAttr } from "../core/lowering-types.js";

function toAttr(name: string, v: OnnxAttr): AttrValue {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "number" || typeof v === "string" || Array.isArray(v)) return v as AttrValue;
  if ("float" in v) return attr.float(v.float);
  if ("floats" in v) return attr.floats(v.floats);
  if ("tensor" in v)
    return {
      tensor: { dtype: v.tensor.dtype as GDType, shape: v.tensor.shape, data: v.tensor.data as ArrayLike<number> },
    };
  if ("graph" in v) {
    if (!(v.graph instanceof GraphBuilder))
      throw new Error(`compiler: attribute ${name} holds a graph not built by this compiler`);
    return v.graph;
  }
  throw new Error(`compiler: bad attribute ${name}`);
}

/** bfloat16 storage bits -> the float32 value that holds them in the graph. */
const bf16Value = (bits: number): number => fromBFloat16Bits(bits);

export class OnnxLoweringContext implements LoweringContext {
  readonly opset: number;
  /** Primitive whose rule is running (names ctx.unsupported errors). */
  current = "";
  /** The native runner's linalg custom ops may be emitted (see LoweringContext.nativeLinalg). */
  nativeLinalg = false;
  /** Values produced by nodes of this graph (other graph outputs need an Identity). */
  readonly produced = new Set<string>();
  /** Number of nodes emitted. */
  nodeCount = 0;
  /** Static shapes of named values where known (graph inputs and equation results; used by graph rewrites). */
  readonly shapes = new Map<string, readonly number[]>();
  /** ONNX element types (jaxts dtype names) of the values in `shapes`. */
  readonly dtypes = new Map<string, string>();
  private readonly consts = new Map<string, string>();
  private readonly producers = new Map<string, GraphNode>();

  constructor(
    readonly g: GraphBuilder,
    opset: number,
  ) {
    this.opset = opset;
  }

  node(op: string, inputs: string[], attrs: Record<string, OnnxAttr> = {}, numOutputs = 1, domain = ""): string[] {
    const a: Record<string, AttrValue> = {};
    for (const [k, v] of Object.entries(attrs)) a[k] = toAttr(k, v);
    const outs = this.g.addNode(op, inputs, numOutputs, a, domain);
    const n = this.g.nodeList[this.g.nodeList.length - 1];
    for (const o of outs) {
      this.produced.add(o);
      this.producers.set(o, n);
    }
    this.nodeCount++;
    return outs;
  }

  /** The node that produced `name` in this graph, if any. */
  producerOf(name: string): GraphNode | undefined {
    return this.producers.get(name);
  }

  /**
   * The value of `name` when it is a small constant, possibly reshaped or broadcast (Reshape/Expand/Unsqueeze
   * of a constant): its distinct element values, else undefined.
   */
  constantOf(name: string): TensorLiteral | undefined {
    for (let k = 0; k < 8; k++) {
      const c = this.g.constantValue(name);
      if (c) return c;
      const p = this.producers.get(name);
      if (!p || !(p.opType === "Expand" || p.opType === "Reshape" || p.opType === "Unsqueeze")) return undefined;
      name = p.inputs[0];
    }
    return undefined;
  }

  op(op: string, inputs: string[], attrs: Record<string, OnnxAttr> = {}): string {
    return this.node(op, inputs, attrs, 1)[0];
  }

  constant(dtype: DType, shape: readonly number[], data: ArrayLike<number | bigint>): string {
    if (shape.length <= 1 && data.length <= 8) {
      const key = `${dtype}|${shape.length}|${Array.from(data as ArrayLike<number>, (v) => (Object.is(v, -0) ? "-0" : String(v))).join(",")}`;
      const hit = this.consts.get(key);
      if (hit) return hit;
      const name = this.emitConstant(dtype, shape, data);
      this.consts.set(key, name);
      return name;
    }
    return this.emitConstant(dtype, shape, data);
  }

  private emitConstant(dtype: DType, shape: readonly number[], data: ArrayLike<number | bigint>): string {
    if (dtype === "bfloat16") {
      const f = new Float32Array(data.length);
      for (let i = 0; i < f.length; i++) f[i] = bf16Value(Number(data[i]));
      return this.g.constant("float32", shape, f);
    }
    return this.g.constant(dtype as GDType, shape, data as ArrayLike<number>);
  }

  scalar(dtype: DType, value: number | bigint | boolean): string {
    let v: number | bigint;
    if (dtype === "int64" || dtype === "uint64") v = bigOf(value, dtype);
    else {
      const n = typeof value === "boolean" ? (value ? 1 : 0) : Number(value);
      if (dtype === "float16") v = toFloat16Bits(n);
      else if (dtype === "bfloat16") v = toBFloat16Bits(n);
      else v = castNumber(n, dtype);
    }
    return this.constant(dtype, [], [v] as ArrayLike<number | bigint>);
  }

  ints(values: readonly number[]): string {
    return this.constant(
      "int64",
      [values.length],
      values.map((v) => BigInt(v)),
    );
  }

  repr(d: DType): DType {
    return d === "bfloat16" ? "float32" : d;
  }

  /** The ONNX element type and shape a value of `aval` travels as (a complex value is its float storage [..., 2]). */
  wire(d: DType, shape: readonly (number | null)[]): { dtype: DType; shape: readonly (number | null)[] } {
    return isComplex(d) ? { dtype: realDType(d), shape: [...shape, 2] } : { dtype: this.repr(d), shape };
  }

  supports(op: string, d: DType): boolean {
    return ortSupports(op, d as GDType) ?? true;
  }

  unsupported(reason: string): never {
    throw new LoweringUnsupportedError(this.current || "lowering", reason);
  }

  /** The constant for a jaxpr literal or closed-over array. */
  arrayConstant(a: ArrayImpl): string {
    const data = a.buffer as ArrayLike<number | bigint>;
    if (isComplex(a.dtype)) return this.constant(realDType(a.dtype), [...a.shape, 2], data);
    return this.constant(a.dtype, a.shape, data);
  }

  inlineJaxpr(jaxpr: unknown, inputs: string[]): string[] {
    if (jaxpr instanceof ClosedJaxpr) {
      const consts = jaxpr.consts.map((c) => {
        if (!(c instanceof ArrayImpl)) this.unsupported("a closed-over traced value in a nested jaxpr");
        return this.arrayConstant(c);
      });
      return lowerJaxprInto(this, jaxpr.jaxpr, [...consts, ...inputs]);
    }
    if (jaxpr instanceof Jaxpr) return lowerJaxprInto(this, jaxpr, inputs);
    throw new Error("compiler: inlineJaxpr expects a Jaxpr or ClosedJaxpr");
  }

  subgraph(
    name: string,
    inputs: readonly { dtype: DType; shape: readonly (number | null)[] | null }[],
    outputs: readonly { dtype: DType; shape: readonly (number | null)[] | null }[],
    build: (sub: LoweringContext, inputNames: string[]) => string[],
  ): { graph: unknown } {
    const sg = this.g.subgraph(name);
    const sub = new OnnxLoweringContext(sg, this.opset);
    sub.current = this.current;
    sub.nativeLinalg = this.nativeLinalg;
    const names = inputs.map((i) => sg.addInput(sg.fresh(`${name}_in`), this.repr(i.dtype) as GDType, i.shape));
    const outs = build(sub, names);
    if (outs.length !== outputs.length)
      throw new Error(`compiler: subgraph ${name} built ${outs.length} outputs, expected ${outputs.length}`);
    outs.forEach((o, i) => {
      // subgraph outputs must be produced inside the subgraph under their own names
      const id = sg.op("Identity", [o]);
      sg.addOutput(id, this.repr(outputs[i].dtype) as GDType, outputs[i].shape);
    });
    return { graph: sg };
  }

  /** Lowers one equation given its input value names. */
  lowerEqn(eqn: JaxprEqn, inputs: string[]): string[] {
    const prim = eqn.primitive;
    // a complex value is its storage as a float tensor [..., 2]; its equations take the primitive's complex rule, and
    // without one run on the reference interpreter (notes/complex.md)
    const cplx = eqn.inputs.some((a) => isComplex(a.aval.dtype)) || eqn.outVars.some((v) => isComplex(v.aval.dtype));
    const rule = cplx ? prim.rules.lowerComplex : prim.rules.lower;
    if (cplx && !rule && prim.opts.callJaxprParam === undefined)
      throw new LoweringUnsupportedError(prim.name, "no ONNX lowering for complex operands (notes/complex.md)");
    if (!rule) {
      // a call primitive (PrimitiveFacts.callJaxprParam) without its own rule: inline the jaxpr it calls
      const param = prim.opts.callJaxprParam;
      const j = param === undefined ? undefined : eqn.params[param];
      if (j instanceof Jaxpr || j instanceof ClosedJaxpr) return this.inlineJaxpr(j, inputs);
      throw new LoweringUnsupportedError(prim.name, prim.rules.missing?.lower ?? "no lower rule");
    }
    const saved = this.current;
    this.current = prim.name;
    try {
      const outs = rule(
        this,
        inputs,
        eqn.params,
        eqn.inputs.map((a) => a.aval),
        eqn.outVars.map((v) => v.aval),
      );
      if (outs.length !== eqn.outVars.length)
        throw new Error(
          `compiler: ${prim.name} lowering returned ${outs.length} values for ${eqn.outVars.length} outputs`,
        );
      return outs;
    } finally {
      this.current = saved;
    }
  }
}

/** Lowers a jaxpr's equations into ctx; `inputs` bind constvars then invars. Returns the outvars' value names. */
export function lowerJaxprInto(
  ctx: OnnxLoweringContext,
  jaxpr: Jaxpr,
  inputs: string[],
  onEqn?: (i: number) => void,
): string[] {
  const binders = [...jaxpr.constvars, ...jaxpr.invars];
  if (binders.length !== inputs.length)
    throw new Error(`compiler: jaxpr takes ${binders.length} inputs, got ${inputs.length}`);
  const env = new Map<Var, string>();
  binders.forEach((v, i) => env.set(v, inputs[i]));
  const read = (a: Var | Literal): string => {
    if (a instanceof Literal) return ctx.arrayConstant(a.value);
    const n = env.get(a);
    if (n === undefined) throw new Error(`compiler: unbound variable ${a.aval.str()}`);
    return n;
  };
  jaxpr.eqns.forEach((e, i) => {
    onEqn?.(i);
    const outs = ctx.lowerEqn(e, e.inputs.map(read));
    e.outVars.forEach((v, k) => env.set(v, outs[k]));
  });
  return jaxpr.outvars.map(read);
}

/**
 * Lowers a primitive by tracing a JS function of lax-level ops (JAX's mlir.lower_fun): `f` is traced at
 * `inAvals` and its jaxpr inlined on `inputs`. Use it in a `lower` rule whose impl is written with ops.
 */
export function lowerFun(
  ctx: LoweringContext,
  f: (...xs: JArray[]) => JArray[],
  inAvals: readonly ShapedArray[],
  inputs: string[],
): string[] {
  const { jaxpr, consts } = traceToJaxpr(f, [...inAvals], "lower_fun");
  return ctx.inlineJaxpr(new ClosedJaxpr(jaxpr, consts), inputs);
}
