/** @file jaxpr -> executable plan: maximal runs of lowerable equations become ONNX models; an equation without a lowering runs on its reference impl between them. */
import { DEFAULT_OPSET, GraphBuilder, type DType as GDType } from "../backends/onnx/graph-builder.js";
import type { ArrayImpl } from "../core/array-impl.js";
import type { ShapedArray } from "../core/aval.js";
import type { DType } from "../core/dtype.js";
import { type Jaxpr, type JaxprEqn, Literal, type Var } from "../core/jaxpr.js";
import { LoweringUnsupportedError } from "../core/lowering-types.js";
import { OnnxLoweringContext } from "./context.js";
import { ONNX_TYPE } from "./lower-util.js";
import { nativeGemmKernel, nativeLinalgOps } from "../backends/onnx/ort-runtime.js";
import { fuseGraphElementwise } from "./fuse-graph.js";
import { optimizeGraph } from "./optimize-graph.js";

/** How a host step's reason starts when a lowering rule threw (non-strict): a failure, not a declared gap. */
export const LOWERING_FAILED = "its lowering failed";

/** Tunables (tests and benchmarks switch them). */
export const compileOptions = {
  /** Fuse float32 elementwise nodes of ONNX programs into jaxts.Fused nodes (native runner only). */
  fuseInGraph: true,
  /**
   * Let the device runtime fuse an all-reduce with the replicated elementwise update that reads it (one
   * AllReduceEpilogue node; see collective-epilogues.ts).
   */
  collectiveEpilogues: true,
};

/** A value read by a step: a slot of the environment or a literal. */
export type Operand = number | ArrayImpl;

/** An ONNX model computing a run of equations. */
export interface OnnxStep {
  readonly kind: "onnx";
  readonly model: Uint8Array;
  readonly inputs: readonly number[];
  readonly inputNames: readonly string[];
  /** dtypes of the graph inputs (jaxts dtypes: bfloat16 travels as float32). */
  readonly inputDTypes: readonly DType[];
  readonly outputs: readonly number[];
  readonly outputNames: readonly string[];
  readonly outAvals: readonly ShapedArray[];
  readonly nodeCount: number;
  /** Rough element-operations count (chooses the thread count). */
  readonly work: number;
}

/** One equation run by its primitive's reference implementation. */
export interface HostStep {
  readonly kind: "host";
  readonly eqn: JaxprEqn;
  readonly inputs: readonly Operand[];
  readonly outputs: readonly number[];
  readonly reason: string;
}

export interface Program {
  readonly name: string;
  readonly steps: readonly (OnnxStep | HostStep)[];
  readonly numSlots: number;
  /** Slots of the jaxpr's constvars then invars. */
  readonly inSlots: readonly number[];
  readonly outs: readonly Operand[];
  readonly outAvals: readonly ShapedArray[];
  /** One line per equation that runs on the interpreter, naming the primitive and why. */
  readonly notes: readonly string[];
}

export interface CompileOptions {
  name?: string;
  opset?: number;
  /** Rethrow bugs in lowering rules instead of running that equation on the interpreter (tests). */
  strict?: boolean;
  /** Declare graph inputs/outputs with unknown dimensions (one session serves every shape of the same ranks). */
  dynamicShapes?: boolean;
  /** Standard ONNX operators only (exportOnnx): no jaxts custom ops, which only jaxts's native runner provides. */
  portable?: boolean;
  /** A last rewrite of each lowered graph before it is serialized (e.g. the device runtime's asynchronous collectives). */
  rewriteGraph?: (
    g: GraphBuilder,
    shapes: ReadonlyMap<string, readonly number[]>,
    dtypes: ReadonlyMap<string, string>,
    /** The jaxpr value a graph value holds (graph inputs and equation results that survived the optimizations). */
    valueVar: (name: string) => Var | undefined,
  ) => void;
  /**
   * bfloat16 graph inputs and outputs as ONNX bfloat16 tensors (the device runtime's storage: raw bits), cast to and
   * from the float32 the graph computes bfloat16 in; without it they travel as float32 (the host backend's wire).
   */
  bfloat16Bits?: boolean;
}

/** Elements touched by an equation (outputs, plus contraction work for dot_general). */
function eqnWork(e: JaxprEqn): number {
  let w = 0;
  for (const v of e.outVars) w += v.aval.size;
  if (e.primitive.name === "dot_general") {
    const [[lc]] = e.params.dimension_numbers as [[number[], number[]], unknown];
    const a = e.inputs[0].aval;
    w *= lc.reduce((k, d) => k * a.shape[d], 1);
  }
  for (const p of Object.values(e.params)) {
    const j = p as { eqns?: JaxprEqn[]; jaxpr?: { eqns?: JaxprEqn[] } };
    const eqns = j?.eqns ?? j?.jaxpr?.eqns;
    if (Array.isArray(eqns)) for (const s of eqns) w += eqnWork(s);
  }
  return w;
}

/** Compiles a jaxpr into steps; equations that cannot be lowered run on the interpreter. */
export function compileJaxpr(jaxpr: Jaxpr, opts: CompileOptions = {}): Program {
  const host = new Map<number, string>();
  for (;;) {
    try {
      return build(jaxpr, host, opts);
    } catch (e) {
      if (!(e instanceof LoweringUnsupportedError) || !("eqnIndex" in e)) throw e;
      host.set((e as LoweringUnsupportedError & { eqnIndex: number }).eqnIndex, e.message);
    }
  }
}

function build(jaxpr: Jaxpr, host: Map<number, string>, opts: CompileOptions): Program {
  const name = opts.name ?? "jaxpr";
  const slots = new Map<Var, number>();
  const slotOf = (v: Var): number => {
    let s = slots.get(v);
    if (s === undefined) {
      s = slots.size;
      slots.set(v, s);
    }
    return s;
  };
  const inSlots = [...jaxpr.constvars, ...jaxpr.invars].map(slotOf);
  const eqns = jaxpr.eqns;
  // last equation index reading each var (outvars count as +infinity)
  const lastUse = new Map<Var, number>();
  eqns.forEach((e, i) => {
    for (const a of e.inputs) if (!(a instanceof Literal)) lastUse.set(a, i);
  });
  for (const a of jaxpr.outvars) if (!(a instanceof Literal)) lastUse.set(a, Infinity);
  const operand = (a: Var | Literal): Operand => (a instanceof Literal ? a.value : slotOf(a));

  const steps: (OnnxStep | HostStep)[] = [];
  const notes: string[] = [];
  let i = 0;
  while (i < eqns.length) {
    if (host.has(i)) {
      const e = eqns[i];
      steps.push({
        kind: "host",
        eqn: e,
        inputs: e.inputs.map(operand),
        outputs: e.outVars.map(slotOf),
        reason: host.get(i)!,
      });
      notes.push(`${e.primitive.name} runs on the interpreter: ${host.get(i)}`);
      i++;
      continue;
    }
    let j = i;
    while (j < eqns.length && !host.has(j)) j++;
    const seg = buildSegment(eqns, i, j, lastUse, slotOf, `${name}${steps.length ? `_${steps.length}` : ""}`, opts);
    if (seg.outputs.length) steps.push(seg);
    i = j;
  }
  return {
    name,
    steps,
    numSlots: slots.size,
    inSlots,
    outs: jaxpr.outvars.map(operand),
    outAvals: jaxpr.outvars.map((a) => a.aval),
    notes,
  };
}

function buildSegment(
  eqns: readonly JaxprEqn[],
  start: number,
  end: number,
  lastUse: Map<Var, number>,
  slotOf: (v: Var) => number,
  name: string,
  opts: CompileOptions,
): OnnxStep {
  const opset = opts.opset ?? DEFAULT_OPSET;
  const dims = (s: readonly number[]): readonly (number | null)[] => (opts.dynamicShapes ? s.map(() => null) : s);
  const g = new GraphBuilder(name);
  const ctx = new OnnxLoweringContext(g, opset);
  // the float64 linalg custom ops exist only in sessions jaxts's native runner creates (never in exported models)
  ctx.nativeLinalg = !opts.portable && nativeLinalgOps();
  const env = new Map<Var, string>();
  const inputs: number[] = [],
    inputNames: string[] = [],
    inputDTypes: DType[] = [];
  const defined = new Set<Var>();
  const read = (a: Var | Literal): string => {
    if (a instanceof Literal) return ctx.arrayConstant(a.value);
    const n = env.get(a);
    if (n !== undefined) return n;
    // a value from outside this segment becomes a graph input
    const w = ctx.wire(a.aval.dtype, dims(a.aval.shape));
    const bits = opts.bfloat16Bits === true && a.aval.dtype === "bfloat16";
    const nm = g.addInput(`in${inputs.length}`, bits ? "bfloat16" : (w.dtype as GDType), w.shape);
    const v = bits ? ctx.op("Cast", [nm], { to: ONNX_TYPE.float32 }) : nm;
    if (!opts.dynamicShapes) {
      ctx.shapes.set(nm, w.shape as number[]);
      ctx.dtypes.set(nm, bits ? "bfloat16" : w.dtype);
      ctx.shapes.set(v, w.shape as number[]);
      ctx.dtypes.set(v, w.dtype);
    }
    inputs.push(slotOf(a));
    inputNames.push(nm);
    inputDTypes.push(a.aval.dtype);
    env.set(a, v);
    return v;
  };
  let work = 0;
  for (let k = start; k < end; k++) {
    const e = eqns[k];
    work += eqnWork(e);
    let outs: string[];
    try {
      outs = ctx.lowerEqn(e, e.inputs.map(read));
    } catch (err) {
      if (err instanceof LoweringUnsupportedError) throw Object.assign(err, { eqnIndex: k });
      if (opts.strict || !(err instanceof Error)) throw err;
      throw Object.assign(new LoweringUnsupportedError(e.primitive.name, `${LOWERING_FAILED}: ${err.message}`), {
        eqnIndex: k,
      });
    }
    e.outVars.forEach((v, q) => {
      env.set(v, outs[q]);
      defined.add(v);
      if (!opts.dynamicShapes) {
        const w = ctx.wire(v.aval.dtype, v.aval.shape);
        ctx.shapes.set(outs[q], w.shape as number[]);
        ctx.dtypes.set(outs[q], w.dtype);
      }
    });
  }
  const outputs: number[] = [],
    outputNames: string[] = [],
    outAvals: ShapedArray[] = [];
  const used = new Set<string>();
  for (const v of defined) {
    if ((lastUse.get(v) ?? -1) < end) continue;
    let nm = env.get(v)!;
    const w = ctx.wire(v.aval.dtype, dims(v.aval.shape));
    const bits = opts.bfloat16Bits === true && v.aval.dtype === "bfloat16";
    if (bits) {
      nm = ctx.op("Cast", [nm], { to: ONNX_TYPE.bfloat16 });
      if (!opts.dynamicShapes) {
        ctx.shapes.set(nm, w.shape as number[]);
        ctx.dtypes.set(nm, "bfloat16");
      }
    } else if (!ctx.produced.has(nm) || used.has(nm) || inputNames.includes(nm)) nm = ctx.op("Identity", [nm]);
    used.add(nm);
    g.addOutput(nm, bits ? "bfloat16" : (w.dtype as GDType), w.shape);
    outputs.push(slotOf(v));
    outputNames.push(nm);
    outAvals.push(v.aval);
  }
  if (!opts.dynamicShapes) {
    // jaxts's custom ops (jaxts.Gemm, jaxts.Fused) exist only in sessions its native runner creates
    const native = !opts.portable && nativeGemmKernel() !== null;
    optimizeGraph(g, ctx.shapes, ctx.dtypes, { nativeGemm: native });
    if (native && compileOptions.fuseInGraph) fuseGraphElementwise(g, ctx.shapes, ctx.dtypes);
  }
  if (opts.rewriteGraph) {
    const vars = new Map<string, Var>();
    for (const [v, nm] of env) if (!vars.has(nm)) vars.set(nm, v);
    opts.rewriteGraph(g, ctx.shapes, ctx.dtypes, (nm) => vars.get(nm));
  }
  return {
    kind: "onnx",
    model: g.toModelBytes({ opset }),
    inputs,
    inputNames,
    inputDTypes,
    outputs,
    outputNames,
    outAvals,
    nodeCount: ctx.nodeCount,
    work,
  };
}
