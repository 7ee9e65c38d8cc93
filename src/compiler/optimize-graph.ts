/**
 * @file Rewrites of a lowered ONNX graph before it is serialized: broadcasts folded into the broadcasting ops
 * that read them, transposed matrix products and scaled/biased products folded into one Gemm, dead nodes dropped.
 */
import type { GraphBuilder, GraphNode, TaggedAttr } from "../backends/onnx/graph-builder.js";

/** ONNX ops with multidirectional (numpy) broadcasting of all their inputs. */
const BROADCASTING: ReadonlySet<string> = new Set([
  "Add",
  "Sub",
  "Mul",
  "Div",
  "Pow",
  "Max",
  "Min",
  "Mod",
  "Equal",
  "Less",
  "LessOrEqual",
  "Greater",
  "GreaterOrEqual",
  "And",
  "Or",
  "Xor",
  "BitwiseAnd",
  "BitwiseOr",
  "BitwiseXor",
  "BitShift",
  "Where",
  "Sum",
  "Mean",
  "PRelu",
]);
/** Unary ops whose output has their first input's shape. */
const SAME_SHAPE: ReadonlySet<string> = new Set([
  "Neg",
  "Abs",
  "Exp",
  "Log",
  "Tanh",
  "Sqrt",
  "Sigmoid",
  "Relu",
  "Cast",
  "Not",
  "IsNaN",
  "IsInf",
  "Identity",
  "BitCast",
  "Floor",
  "Ceil",
  "Round",
  "Sign",
  "Reciprocal",
  "Erf",
  "Sin",
  "Cos",
  "Tan",
  "Asin",
  "Acos",
  "Atan",
  "Sinh",
  "Cosh",
  "Asinh",
  "Acosh",
  "Atanh",
  "Softplus",
  "BitwiseNot",
  "CumSum",
  "CumProd",
  "Softmax",
  "LogSoftmax",
]);

type Shape = readonly number[];

function broadcastShapes(shapes: readonly Shape[]): Shape | undefined {
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out: number[] = new Array(rank).fill(1);
  for (const s of shapes) {
    for (let i = 0; i < s.length; i++) {
      const k = rank - s.length + i,
        d = s[i];
      if (d === out[k] || d === 1) continue;
      if (out[k] !== 1) return undefined;
      out[k] = d;
    }
  }
  return out;
}
export const sameShape = (a: Shape | undefined, b: Shape | undefined): boolean =>
  !!a && !!b && a.length === b.length && a.every((v, i) => v === b[i]);

/** A node's int attribute, or `dflt` when it has none of that name and kind. */
export function intAttr(n: GraphNode, name: string, dflt: number): number {
  const a = n.attrs.find(([k]) => k === name)?.[1];
  return a && a.kind === "int" ? a.value : dflt;
}
function floatAttr(n: GraphNode, name: string, dflt: number): number {
  const a = n.attrs.find(([k]) => k === name)?.[1];
  return a && (a.kind === "float" || a.kind === "int") ? a.value : dflt;
}
function setAttr(n: GraphNode, name: string, v: TaggedAttr): void {
  const i = n.attrs.findIndex(([k]) => k === name);
  if (i >= 0) n.attrs[i] = [name, v];
  else n.attrs.push([name, v]);
}

/** Every value name a node reads, including outer values its subgraphs (If/Loop bodies) read. */
export function readsOf(n: GraphNode, out: Set<string>): void {
  for (const i of n.inputs) if (i) out.add(i);
  for (const [, a] of n.attrs) {
    const gs = a.kind === "graph" ? [a.value] : a.kind === "graphs" ? a.value : [];
    for (const g of gs) for (const m of g.nodeList) readsOf(m, out);
  }
}

class GraphView {
  readonly producer = new Map<string, GraphNode>();
  readonly consumers = new Map<string, GraphNode[]>();
  readonly outputs: ReadonlySet<string>;
  constructor(
    readonly g: GraphBuilder,
    readonly shapes: Map<string, Shape>,
    readonly dtypes: ReadonlyMap<string, string>,
  ) {
    this.outputs = new Set(g.outputNames);
    this.reindex();
  }
  reindex(): void {
    this.producer.clear();
    this.consumers.clear();
    for (const n of this.g.nodeList) {
      for (const o of n.outputs) this.producer.set(o, n);
      const reads = new Set<string>();
      readsOf(n, reads);
      for (const r of reads) {
        let c = this.consumers.get(r);
        if (!c) this.consumers.set(r, (c = []));
        c.push(n);
      }
    }
  }
  shape(name: string): Shape | undefined {
    const s = this.shapes.get(name);
    if (s) return s;
    const c = this.g.constantValue(name);
    return c ? c.shape : undefined;
  }
  ints(name: string): number[] | undefined {
    const c = this.g.constantValue(name);
    if (!c || c.dtype !== "int64") return undefined;
    return Array.from(c.data as ArrayLike<number | bigint>, (v) => Number(v));
  }
  scalarFloat(name: string): number | undefined {
    const c = this.g.constantValue(name);
    if (!c || (c.dtype !== "float32" && c.dtype !== "float64") || c.data.length !== 1 || c.shape.length > 1)
      return undefined;
    return Number(c.data[0]);
  }
  /** The single node reading `name`, when nothing else (graph outputs included) does. */
  soleConsumer(name: string): GraphNode | undefined {
    if (this.outputs.has(name)) return undefined;
    const c = this.consumers.get(name);
    return c && c.length === 1 ? c[0] : undefined;
  }
}

/** Infers static shapes of node outputs from known input shapes, in topological (node) order. */
function inferShapes(v: GraphView): void {
  for (const n of v.g.nodeList) {
    if (n.outputs.length !== 1 || v.shapes.has(n.outputs[0])) continue;
    const ins = n.inputs.map((i) => (i ? v.shape(i) : undefined));
    let s: Shape | undefined;
    if (BROADCASTING.has(n.opType)) s = ins.every((x) => x) ? broadcastShapes(ins as Shape[]) : undefined;
    else if (SAME_SHAPE.has(n.opType)) s = ins[0];
    else if (n.opType === "Expand") {
      const t = v.ints(n.inputs[1]);
      s = t && ins[0] ? broadcastShapes([ins[0], t]) : undefined;
    } else if (n.opType === "Reshape") {
      const t = v.ints(n.inputs[1]);
      s = t && t.every((d) => d >= 0) && intAttr(n, "allowzero", 0) === 1 ? t : undefined;
    } else if (n.opType === "Transpose" && ins[0]) {
      const p = n.attrs.find(([k]) => k === "perm")?.[1];
      s = p && p.kind === "ints" ? p.value.map((i) => ins[0]![i]) : [...ins[0]].reverse();
    } else if (n.opType === "Gemm" && ins[0] && ins[1]) {
      s = [ins[0][intAttr(n, "transA", 0) ? 1 : 0], ins[1][intAttr(n, "transB", 0) ? 0 : 1]];
    }
    if (s) v.shapes.set(n.outputs[0], s);
  }
}

/**
 * Broadcasting ops read the un-expanded value when that leaves their result shape unchanged (ORT then never
 * materializes the broadcast). Looks through Reshapes that only prepend unit dims (equivalent under numpy rules).
 */
function foldExpands(v: GraphView): boolean {
  let changed = false;
  for (const e of v.g.nodeList) {
    if (e.opType !== "Expand") continue;
    const y = e.outputs[0];
    let src = e.inputs[0];
    const r = v.producer.get(src);
    if (r && r.opType === "Reshape") {
      const s0 = v.shape(r.inputs[0]),
        s1 = v.shape(src);
      if (
        s0 &&
        s1 &&
        s1.length >= s0.length &&
        s1.slice(0, s1.length - s0.length).every((d) => d === 1) &&
        sameShape(s1.slice(s1.length - s0.length), s0)
      )
        src = r.inputs[0];
    }
    const srcShape = v.shape(src);
    if (!srcShape) continue;
    for (const c of v.consumers.get(y) ?? []) {
      if (!BROADCASTING.has(c.opType) || c.outputs.length !== 1) continue;
      const want = v.shape(c.outputs[0]);
      const shapes = c.inputs.map((i) => (i === y ? srcShape : i ? v.shape(i) : undefined));
      if (!want || !shapes.every((s) => s) || !sameShape(broadcastShapes(shapes as Shape[]), want)) continue;
      c.inputs = c.inputs.map((i) => (i === y ? src : i));
      changed = true;
    }
  }
  if (changed) v.reindex();
  return changed;
}

/** Reshape of a Reshape reads the first one's input; a Reshape to the shape its input already has disappears. */
function foldReshapes(v: GraphView): boolean {
  let changed = false;
  const alias = new Map<string, string>();
  const resolve = (x: string): string => alias.get(x) ?? x;
  for (const n of v.g.nodeList) {
    n.inputs = n.inputs.map(resolve);
    if (n.opType !== "Reshape" || intAttr(n, "allowzero", 0) !== 1) continue;
    const inner = v.producer.get(n.inputs[0]);
    if (inner && inner.opType === "Reshape" && intAttr(inner, "allowzero", 0) === 1) {
      n.inputs = [inner.inputs[0], n.inputs[1]];
      changed = true;
    }
    const y = n.outputs[0];
    // an identity: readers use the input itself (unless y is a graph output or read inside a subgraph)
    if (
      sameShape(v.shape(n.inputs[0]), v.shape(y)) &&
      !v.outputs.has(y) &&
      (v.consumers.get(y) ?? []).every((c) => c.inputs.includes(y))
    ) {
      alias.set(y, n.inputs[0]);
      changed = true;
    }
  }
  if (changed) v.reindex();
  return changed;
}

const isGemm = (n: GraphNode | undefined): n is GraphNode => !!n && n.opType === "Gemm" && n.domain === "";

/** Transpose([1,0]) of a Gemm result -> the Gemm of the swapped, oppositely transposed operands: (AB)^T = B^T A^T. */
function foldTransposedGemms(v: GraphView): boolean {
  let changed = false;
  for (const t of v.g.nodeList) {
    if (t.opType !== "Transpose") continue;
    const p = t.attrs.find(([k]) => k === "perm")?.[1];
    if (!p || p.kind !== "ints" || p.value.length !== 2 || p.value[0] !== 1) continue;
    const gm = v.producer.get(t.inputs[0]);
    if (!isGemm(gm) || gm.inputs.length > 2 || v.soleConsumer(t.inputs[0]) !== t) continue;
    const tA = intAttr(gm, "transA", 0),
      tB = intAttr(gm, "transB", 0);
    gm.inputs = [gm.inputs[1], gm.inputs[0]];
    setAttr(gm, "transA", { kind: "int", value: tB ? 0 : 1 });
    setAttr(gm, "transB", { kind: "int", value: tA ? 0 : 1 });
    gm.outputs = [t.outputs[0]];
    t.opType = "";
    changed = true;
  }
  if (changed) {
    v.g.setNodes(v.g.nodeList.filter((n) => n.opType !== ""));
    v.reindex();
  }
  return changed;
}

/**
 * Epilogues folded into a Gemm whose result has one reader: a product with a scalar constant (alpha) and
 * an Add/Sub of a value broadcastable to the result (C, beta = ±1), as in `w - lr * (x^T g)`.
 */
function foldGemmEpilogues(v: GraphView): boolean {
  let changed = false;
  for (const gm of v.g.nodeList) {
    if (!isGemm(gm) || gm.opType === "") continue;
    // ORT's Gemm returns C unscaled when the contraction is empty (K = 0): fold only nonempty products
    const as = v.shape(gm.inputs[0]);
    if (!as || as.length !== 2 || as[intAttr(gm, "transA", 0) ? 0 : 1] === 0) continue;
    for (;;) {
      const y = gm.outputs[0];
      const c = v.soleConsumer(y);
      if (
        !c ||
        c.opType === "" ||
        c.inputs.length !== 2 ||
        c.outputs.length !== 1 ||
        !sameShape(v.shape(c.outputs[0]), v.shape(y))
      )
        break;
      const other = c.inputs[0] === y ? c.inputs[1] : c.inputs[0];
      if (other === y) break;
      const alpha = floatAttr(gm, "alpha", 1),
        beta = floatAttr(gm, "beta", 1);
      if (c.opType === "Mul") {
        const s = v.scalarFloat(other);
        // alpha is a float32 attribute: fold only products that stay exact
        if (s === undefined || alpha !== 1 || (gm.inputs.length > 2 && beta !== 1) || Math.fround(s) !== s) break;
        setAttr(gm, "alpha", { kind: "float", value: s });
        if (gm.inputs.length > 2) setAttr(gm, "beta", { kind: "float", value: s });
      } else if (c.opType === "Add" || c.opType === "Sub") {
        const os = v.shape(other),
          ys = v.shape(y);
        if (gm.inputs.length > 2 || !os || !ys || os.length > 2 || !sameShape(broadcastShapes([os, ys]), ys)) break;
        const negY = c.opType === "Sub" && c.inputs[1] === y,
          negC = c.opType === "Sub" && c.inputs[0] === y;
        if (negY) setAttr(gm, "alpha", { kind: "float", value: -alpha });
        setAttr(gm, "beta", { kind: "float", value: negC ? -1 : 1 });
        gm.inputs = [...gm.inputs, other];
      } else break;
      gm.outputs = [c.outputs[0]];
      v.producer.set(c.outputs[0], gm);
      c.opType = "";
      changed = true;
    }
  }
  if (changed) {
    v.g.setNodes(v.g.nodeList.filter((n) => n.opType !== ""));
    v.reindex();
  }
  return changed;
}

export interface OptimizeOptions {
  /** Swap large float32 Gemms for the jaxts.Gemm custom op (only for sessions jaxts's native runner creates). */
  nativeGemm?: boolean;
}

/** Smallest M, N and K of a Gemm handed to jaxts's SGEMM (tunable; see nativeGemms for the measurements). */
export const nativeGemmOptions = { minM: 512, minN: 512, minK: 128 };

/**
 * Float32 Gemm -> jaxts.Gemm: the same operator (ONNX Gemm attributes and broadcasting of C) computed by jaxts's
 * packed AVX-512/AVX2 SGEMM (native/sgemm.cc). On this Zen 4 host, two threads, measured against ORT's MLAS Gemm
 * one session after the other: 1024^3 1.2-1.35x, 2048^3 1.15-1.2x, 512^3 ~1x, an MLP weight update
 * [784,128]^T x [128,512] + W 1.15x faster; with a short M (the MLP's [128,784] x [784,512]) it only ties, so
 * M and N must reach 512 and K 128.
 */
function nativeGemms(v: GraphView): void {
  let changed = false;
  for (const n of v.g.nodeList) {
    if (!isGemm(n)) continue;
    const a = v.shape(n.inputs[0]),
      b = v.shape(n.inputs[1]);
    if (!a || !b || a.length !== 2 || b.length !== 2) continue;
    if (v.dtypes.get(n.outputs[0]) !== "float32" && v.dtypes.get(n.inputs[0]) !== "float32") continue;
    const tA = intAttr(n, "transA", 0),
      tB = intAttr(n, "transB", 0);
    const M = a[tA ? 1 : 0],
      K = a[tA ? 0 : 1],
      N = b[tB ? 0 : 1];
    if (M < nativeGemmOptions.minM || N < nativeGemmOptions.minN || K < nativeGemmOptions.minK) continue;
    n.domain = "jaxts";
    changed = true;
  }
  if (changed) v.g.useDomain("jaxts", 1);
}

/** Smallest matrix whose leading-axis sum becomes a product with a ones row (smaller ones are not worth it). */
const SUM_AS_GEMM_MIN = 8192;
/** Longest sum rewritten as a product: MLAS accumulates along K in short register blocks, accurate up to a few thousand terms. */
const SUM_AS_GEMM_MAX_K = 4096;

/**
 * ReduceSum of a float32 matrix over its leading axis -> ones[1,M] @ X (a bias gradient: sum over the batch).
 * ORT's ReduceSum over axis 0 gets ~5x slower with two intra-op threads (15 vs 76 µs at [128,512] here) while
 * the product runs as a fast MLAS GEMV; the summation order differs (both are float32 sums of the same terms).
 */
function leadingSumsAsGemm(v: GraphView): boolean {
  let changed = false;
  for (const n of v.g.nodeList) {
    if (n.opType !== "ReduceSum" || n.domain !== "" || n.inputs.length !== 2) continue;
    const x = n.inputs[0],
      s = v.shape(x),
      axes = v.ints(n.inputs[1]);
    // (at most SUM_AS_GEMM_MAX_K rows: longer sums are blocked by the lowering, which this must not undo)
    if (
      v.dtypes.get(x) !== "float32" ||
      !s ||
      s.length !== 2 ||
      s[0] < 8 ||
      s[0] > SUM_AS_GEMM_MAX_K ||
      s[0] * s[1] < SUM_AS_GEMM_MIN
    )
      continue;
    if (!axes || axes.length !== 1 || (axes[0] !== 0 && axes[0] !== -2)) continue;
    const keep = intAttr(n, "keepdims", 1) === 1,
      out = n.outputs[0];
    const ones = v.g.constant("float32", [1, s[0]], new Float32Array(s[0]).fill(1));
    n.opType = "Gemm";
    n.attrs = [];
    n.inputs = [ones, x];
    if (!keep) {
      // Gemm gives [1, N]: reshape to the [N] the ReduceSum produced
      const row = v.g.fresh("colsum");
      n.outputs = [row];
      v.g.addNode("Reshape", [row, v.g.int64s([s[1]])], [out]);
    }
    changed = true;
  }
  if (changed) v.reindex();
  return changed;
}

/** Restores topological order after rewrites moved results between nodes (stable: untouched graphs keep their order). */
function topoSort(v: GraphView): void {
  const nodes = v.g.nodeList;
  const produced = new Set<string>();
  const out: GraphNode[] = [];
  const pending = nodes.map((n) => {
    const r = new Set<string>();
    readsOf(n, r);
    return { n, reads: [...r].filter((x) => v.producer.has(x)) };
  });
  let rest = pending;
  while (rest.length) {
    const next: typeof rest = [];
    for (const p of rest) {
      if (p.reads.every((r) => produced.has(r))) {
        out.push(p.n);
        for (const o of p.n.outputs) produced.add(o);
      } else next.push(p);
    }
    if (next.length === rest.length) throw new Error("optimize-graph: cycle after rewrites");
    rest = next;
  }
  v.g.setNodes(out);
}

/** Drops nodes whose results nothing reads, and unread initializers. */
function eliminateDeadNodes(v: GraphView): void {
  const live = new Set<string>(v.g.outputNames);
  const nodes = v.g.nodeList;
  const keep: boolean[] = new Array(nodes.length).fill(false);
  for (let i = nodes.length - 1; i >= 0; i--) {
    const n = nodes[i];
    if (!n.outputs.some((o) => o && live.has(o))) continue;
    keep[i] = true;
    readsOf(n, live);
  }
  v.g.setNodes(nodes.filter((_, i) => keep[i]));
  v.g.pruneInitializers(live);
}

/**
 * Optimizes a top-level lowered graph in place. `shapes` holds the static shapes known from the jaxpr
 * (graph inputs and equation results); rewrites that need an unknown shape are skipped.
 */
export function optimizeGraph(
  g: GraphBuilder,
  shapes: Map<string, Shape>,
  dtypes: ReadonlyMap<string, string> = new Map(),
  opts: OptimizeOptions = {},
): void {
  const v = new GraphView(g, shapes, dtypes);
  inferShapes(v);
  foldExpands(v);
  foldReshapes(v);
  foldTransposedGemms(v);
  const moved = foldGemmEpilogues(v);
  if (leadingSumsAsGemm(v) || moved) topoSort(v);
  eliminateDeadNodes(v);
  if (opts.nativeGemm) nativeGemms(v);
}
