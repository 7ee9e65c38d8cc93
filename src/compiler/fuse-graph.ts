/**
 * @file Loop fusion inside ONNX programs: connected float32 elementwise nodes of one shape become one jaxts.Fused
 * node that native/fused.cc evaluates in a single pass (only with jaxts's native runner; exports never do this).
 */
import type { GraphBuilder, GraphNode } from "../backends/onnx/graph-builder.js";
import { encodeFused } from "../backends/onnx/native-fused.js";
import type { FusedOp, FusedSpec, FusedValue } from "./fuse-elementwise.js";
import { readsOf, sameShape } from "./optimize-graph.js";

type Shape = readonly number[];

/**
 * ONNX operators fused, with the fused operation computing them. Only exactly rounded operations (IEEE arithmetic,
 * comparisons, selects): a fused program gives bit for bit what ORT's kernels give. The one difference: Max/Min
 * of -0 and +0, where ORT returns either zero (operand order, vector or scalar path) and fused programs follow lax.
 */
const FUSIBLE: Readonly<Record<string, FusedOp>> = {
  Add: "add",
  Sub: "sub",
  Mul: "mul",
  Div: "div",
  Neg: "neg",
  Abs: "abs",
  Sqrt: "sqrt",
  Floor: "floor",
  Ceil: "ceil",
  Max: "max",
  Min: "min",
  Less: "lt",
  LessOrEqual: "le",
  Greater: "gt",
  GreaterOrEqual: "ge",
  Equal: "eq",
  And: "and",
  Or: "or",
  Not: "not",
  Where: "select",
};
/** BitCast between float32 and int32 (a bitwise select's operands) is free inside a program: lanes are bits. */
const BITCAST = "BitCast";
/** Operators whose outputs are masks (bool); their float inputs are compared. */
const MASK_OUT = new Set(["Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal", "And", "Or", "Not"]);
/** ONNX element type codes of the types inferred here. */
const ONNX_TYPES: Readonly<Record<number, string>> = { 1: "float32", 6: "int32", 7: "int64", 9: "bool", 11: "float64" };
/** Operators whose output has their first input's element type. */
const SAME_TYPE = new Set([
  "Add",
  "Sub",
  "Mul",
  "Div",
  "Neg",
  "Abs",
  "Sqrt",
  "Floor",
  "Ceil",
  "Max",
  "Min",
  "Reshape",
  "Expand",
  "Identity",
  "Transpose",
  "Squeeze",
  "Unsqueeze",
]);
/** Worth a node of its own even alone: ORT's Where broadcasts through a slow general path. */
const ALONE = new Set(["Where"]);

const isScalarShape = (s: Shape | undefined, rank: number): boolean =>
  !!s && s.length <= rank && s.every((d) => d === 1);

/** Replaces fusible groups of `g`'s top-level nodes by jaxts.Fused nodes; returns how many groups it made. */
export function fuseGraphElementwise(
  g: GraphBuilder,
  shapes: ReadonlyMap<string, Shape>,
  dtypes: ReadonlyMap<string, string>,
): number {
  const nodes = g.nodeList;
  const reads = nodes.map(readsOfNode);
  const producer = new Map<string, number>();
  nodes.forEach((n, i) => n.outputs.forEach((o) => producer.set(o, i)));
  const consumers = new Map<string, number[]>();
  // consumers include nodes reading a value inside their subgraphs (If/Loop bodies)
  reads.forEach((r, i) =>
    r.forEach((x) => {
      if (x) {
        const c = consumers.get(x) ?? [];
        c.push(i);
        consumers.set(x, c);
      }
    }),
  );
  const outputs = new Set(g.outputNames);
  const shapeOf = (x: string): Shape | undefined => shapes.get(x) ?? g.constantValue(x)?.shape;
  // element types: the lowering records those of jaxpr values; infer the ones of nodes lowerings add
  const types = new Map(dtypes);
  const dtypeOf = (x: string): string | undefined => types.get(x) ?? g.constantValue(x)?.dtype;
  for (const n of nodes) {
    if (n.outputs.length !== 1 || types.has(n.outputs[0])) continue;
    const to = n.attrs.find(([k]) => k === "to")?.[1];
    const t =
      MASK_OUT.has(n.opType) || n.opType === "IsNaN" || n.opType === "IsInf"
        ? "bool"
        : (n.opType === "BitCast" || n.opType === "Cast") && to?.kind === "int"
          ? ONNX_TYPES[to.value]
          : n.opType === "Where"
            ? dtypeOf(n.inputs[1])
            : SAME_TYPE.has(n.opType)
              ? dtypeOf(n.inputs[0])
              : undefined;
    if (t) types.set(n.outputs[0], t);
  }

  // the common shape a node works on, or null when it is not fusible
  const fusibleShape = (n: GraphNode): Shape | null => {
    if (n.domain !== "" || n.outputs.length !== 1) return null;
    const s = shapeOf(n.outputs[0]);
    if (!s || s.length === 0) return null;
    const outType = dtypeOf(n.outputs[0]);
    if (n.opType === BITCAST) {
      const to = n.attrs.find(([k]) => k === "to")?.[1],
        inType = dtypeOf(n.inputs[0]);
      const ok =
        to?.kind === "int" && ((to.value === 6 && inType === "float32") || (to.value === 1 && inType === "int32"));
      return ok && sameShape(shapeOf(n.inputs[0]), s) ? s : null;
    }
    if (!(n.opType in FUSIBLE) || n.attrs.length) return null;
    // lanes are float32 bits; a Where may select int32 bit patterns (of BitCasts)
    const lane = n.opType === "Where" && outType === "int32" ? "int32" : "float32";
    if (outType !== (MASK_OUT.has(n.opType) ? "bool" : lane)) return null;
    for (const [k, x] of n.inputs.entries()) {
      if (!x) return null;
      const xs = shapeOf(x),
        xt = dtypeOf(x);
      const wantBool =
        n.opType === "And" || n.opType === "Or" || n.opType === "Not" || (n.opType === "Where" && k === 0);
      if (xt !== (wantBool ? "bool" : lane)) return null;
      if (!sameShape(xs, s) && !(isScalarShape(xs, s.length) && !wantBool && lane === "float32")) return null;
    }
    return s;
  };

  const { members, groupShape } = groupFusible(nodes, reads, producer, consumers, fusibleShape);

  let made = 0;
  const replaced = new Map<number, GraphNode>(); // last member -> fused node; other members dropped
  const dropped = new Set<number>();
  members.forEach((m, gi) => {
    m.sort((p, q) => p - q);
    if (m.length === 0 || (m.length < 2 && !ALONE.has(nodes[m[0]].opType))) return;
    const inGroup = new Set(m);
    const s = groupShape[gi];
    const values: FusedValue[] = [];
    const index = new Map<string, number>();
    const fullInputs: string[] = [],
      scalarInputs: string[] = [];
    // a one-element float32 constant, possibly reshaped or expanded (a broadcast literal) on the way
    const constOf = (x: string): number | undefined => {
      for (let y = x, hops = 0; hops < 4; hops++) {
        const c = g.constantValue(y);
        if (c) return c.data.length === 1 && c.dtype === "float32" ? Number(c.data[0]) : undefined;
        const p = producer.get(y);
        if (p === undefined || (nodes[p].opType !== "Expand" && nodes[p].opType !== "Reshape")) return undefined;
        y = nodes[p].inputs[0];
      }
      return undefined;
    };
    const valueOf = (x: string): number => {
      const known = index.get(x);
      if (known !== undefined) return known;
      const k = constOf(x);
      if (k !== undefined) values.push({ kind: "const", value: k });
      else if (sameShape(shapeOf(x), s)) values.push({ kind: "input", index: fullInputs.push(x) - 1 });
      else values.push({ kind: "scalar", index: scalarInputs.push(x) - 1 });
      index.set(x, values.length - 1);
      return values.length - 1;
    };
    for (const i of m) {
      const n = nodes[i];
      if (n.opType === BITCAST) {
        index.set(n.outputs[0], valueOf(n.inputs[0]));
        continue;
      }
      const args = n.inputs.map(valueOf);
      // Where(cond, a, b) = select_n(cond, b, a)
      values.push({
        kind: "op",
        op: FUSIBLE[n.opType],
        args: n.opType === "Where" ? [args[0], args[2], args[1]] : args,
      });
      index.set(n.outputs[0], values.length - 1);
    }
    // results read outside the group (or graph outputs); masks must stay inside
    const escaping = m
      .map((i) => nodes[i].outputs[0])
      .filter((o) => outputs.has(o) || (consumers.get(o) ?? []).some((c) => !inGroup.has(c)));
    // the op reads and writes float32 only: masks from outside (or escaping) keep the group unfused
    const io = [...fullInputs, ...scalarInputs, ...escaping];
    if (escaping.length === 0 || fullInputs.length === 0 || io.some((x) => dtypeOf(x) !== "float32")) return;
    const spec: FusedSpec = {
      values,
      outputs: escaping.map((o) => index.get(o)!),
      params: [],
      numInputs: fullInputs.length,
      numScalars: scalarInputs.length,
      shape: s,
    };
    const last = m[m.length - 1];
    replaced.set(last, {
      opType: "Fused",
      domain: "jaxts",
      name: g.fresh("n_Fused"),
      inputs: [...fullInputs, ...scalarInputs],
      outputs: escaping,
      attrs: [
        ["program", { kind: "ints", value: Array.from(encodeFused(spec)) }],
        ["num_inputs", { kind: "int", value: fullInputs.length }],
        ["num_scalars", { kind: "int", value: scalarInputs.length }],
      ],
    });
    for (const i of m) if (i !== last) dropped.add(i);
    made++;
  });
  if (made === 0) return 0;
  const next: GraphNode[] = [];
  nodes.forEach((n, i) => {
    if (!dropped.has(i)) next.push(replaced.get(i) ?? n);
  });
  // a fused node sits at its last member: readers of earlier members' results may now come before it. Groups grow
  // one node at a time, so a later join can still close a loop through two groups: then leave the graph unfused
  let ordered: GraphNode[];
  try {
    ordered = topoOrder(next);
  } catch {
    return 0;
  }
  g.useDomain("jaxts", 1);
  g.setNodes(ordered);
  return made;
}

/**
 * Groups fusible nodes: each joins the groups of its producers of the same shape unless a node outside both groups
 * sits between them (the contracted graph, where a group is one node reading every input of its members, stays
 * acyclic). The cycle check keeps a topological order `pos` of the contracted graph and repairs it after each join
 * (Pearce and Kelly's dynamic topological order, 2006): searches only visit nodes placed between the two groups, so
 * a long chain fuses in linear time where a rescan of everything upstream was quadratic. (Still quadratic: a group
 * that keeps growing while each join also reads a fresh outside value placed after the group's start: every such
 * join scans the group's readers to reorder.)
 */
export function groupFusible(
  nodes: readonly GraphNode[],
  reads: readonly string[][],
  producer: ReadonlyMap<string, number>,
  consumers: ReadonlyMap<string, number[]>,
  fusibleShape: (n: GraphNode) => Shape | null,
): { members: number[][]; groupShape: Shape[] } {
  const n = nodes.length;
  const group = new Array<number>(n).fill(-1);
  const members: number[][] = [];
  const groupShape: Shape[] = [];
  // contracted node ids: a node alone is its index, group gi is n + gi; pos[c] orders them topologically
  const pos: number[] = Array.from({ length: n }, (_, i) => i);
  const rep = (p: number): number => (group[p] >= 0 ? n + group[p] : p);
  const membersOf = (c: number): readonly number[] => (c >= n ? members[c - n] : [c]);
  const succ = (c: number): number[] =>
    membersOf(c).flatMap((q) => nodes[q].outputs.flatMap((o) => (consumers.get(o) ?? []).map(rep)));
  const pred = (c: number): number[] =>
    membersOf(c).flatMap((q) =>
      reads[q].flatMap((x) => {
        const p = producer.get(x);
        return p === undefined ? [] : [rep(p)];
      }),
    );
  // can contracted nodes u and v (pos[u] < pos[v]) join, with no path u -> w -> v through some other w? Every such w
  // lies between them in `pos`, so the search walks back from v only over nodes placed after u. On success the
  // joined group takes u's place: v's other ancestors there (if any) are moved before u's descendants.
  const canJoin = (u: number, v: number): boolean => {
    const lo = pos[u];
    const back = new Set<number>([v]),
      stack = [v];
    while (stack.length) {
      const c = stack.pop()!;
      for (const p of pred(c)) {
        if (p === u) {
          if (c !== v) return false;
          continue;
        }
        if (pos[p] > lo && !back.has(p)) {
          back.add(p);
          stack.push(p);
        }
      }
    }
    back.delete(v);
    if (back.size === 0) return true;
    // Pearce-Kelly's reorder: u's descendants placed before v's last other ancestor, then refill the slots of both
    // sets with the ancestors first, each set in its old order
    const hi = [...back].reduce((m, c) => Math.max(m, pos[c]), lo);
    const fwd = new Set<number>([u]);
    stack.push(u);
    while (stack.length) {
      const c = stack.pop()!;
      for (const q of succ(c))
        if (q !== v && pos[q] < hi && !fwd.has(q)) {
          fwd.add(q);
          stack.push(q);
        }
    }
    const byPos = (p: number, q: number): number => pos[p] - pos[q];
    const order = [...[...back].sort(byPos), ...[...fwd].sort(byPos)];
    const slots = order.map((c) => pos[c]).sort((p, q) => p - q);
    order.forEach((c, k) => (pos[c] = slots[k]));
    return true;
  };
  nodes.forEach((node, i) => {
    const s = fusibleShape(node);
    if (!s) return;
    group[i] = members.length;
    members.push([i]);
    groupShape.push(s);
    pos.push(pos[i]);
    for (const x of node.inputs) {
      const p = producer.get(x);
      if (p === undefined || group[p] < 0 || group[p] === group[i] || !sameShape(groupShape[group[p]], s)) continue;
      const a = group[p],
        b = group[i];
      const ca = n + a,
        cb = n + b;
      const [u, v] = pos[ca] < pos[cb] ? [ca, cb] : [cb, ca];
      if (!canJoin(u, v)) continue;
      pos[ca] = pos[u]; // the joined group takes u's place

      for (const q of members[b]) {
        group[q] = a;
        members[a].push(q);
      }
      members[b] = [];
    }
  });
  return { members, groupShape };
}

/** Every value a node reads, including those its subgraphs (If/Loop bodies, nested) read. */
function readsOfNode(n: GraphNode): string[] {
  const r = new Set<string>();
  readsOf(n, r);
  return [...r];
}

/** Stable topological order (nodes are already ordered except readers of fused results). */
function topoOrder(nodes: GraphNode[]): GraphNode[] {
  const producedBy = new Map<string, GraphNode>();
  for (const n of nodes) for (const o of n.outputs) producedBy.set(o, n);
  const done = new Set<GraphNode>(),
    out: GraphNode[] = [],
    visiting = new Set<GraphNode>();
  const reads = readsOfNode;
  const visit = (n: GraphNode): void => {
    if (done.has(n)) return;
    if (visiting.has(n)) throw new Error("fuse-graph: cycle");
    visiting.add(n);
    for (const x of reads(n)) {
      const p = producedBy.get(x);
      if (p && p !== n) visit(p);
    }
    visiting.delete(n);
    done.add(n);
    out.push(n);
  };
  for (const n of nodes) visit(n);
  return out;
}
