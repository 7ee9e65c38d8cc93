/**
 * @file Gradient bucketing: a rewrite of a lowered per-device program that combines collectives of the same kind,
 * groups, reduction and element type with no data dependence between them into one collective on the concatenation
 * of their flattened inputs (XLA's all-reduce / reduce-scatter / all-gather combiners, PyTorch DDP's buckets), up to
 * a byte threshold. It runs before the asynchronous-collectives pass, so each bucket becomes one Start/Done.
 */
import type { GraphBuilder, GraphNode, TaggedAttr } from "../backends/onnx/graph-builder.js";
import { intAttr, readsOf } from "./optimize-graph.js";
import { nodeDependencies, orderNodes } from "./node-order.js";
import { COLLECTIVES_DOMAIN } from "./async-collectives.js";
import { isDType, itemsize } from "../core/dtype.js";

/**
 * The kinds combined. The native ops move leading-axis blocks only (native/collective-ops.cc), so every layout
 * splits exactly: AllReduce x -> y (same shape), AllGather x -> [n, ...x], ReduceScatter [n, ...r] -> r.
 */
const COMBINABLE = new Set(["AllReduce", "AllGather", "ReduceScatter"]);

export interface CombineOptions {
  /** Largest bucket in bytes (the larger of a member's input and output, summed); 0 disables the pass. */
  thresholdBytes: number;
}

interface Member {
  node: GraphNode;
  /** Position in the node list. */
  at: number;
  inShape: readonly number[];
  outShape: readonly number[];
  bytes: number;
}
interface Bucket {
  key: string;
  members: Member[];
  bytes: number;
  /** Buckets whose members some member's input (transitively) reads. */
  deps: Set<number>;
  open: boolean;
}

const size = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
/** The attributes that decide whether two collectives can be one (the label only names it in errors). */
const keyOf = (nd: GraphNode, dtype: string): string =>
  JSON.stringify([nd.opType, dtype, nd.attrs.filter(([k]) => k !== "label").map(([k, a]) => [k, attrText(a)])]);
const attrText = (a: TaggedAttr): unknown => (a.kind === "graph" || a.kind === "graphs" ? null : a.value);

/**
 * Rewrites the top-level node list of `g` in place (subgraphs keep their collectives). Collectives are visited in
 * program order; each joins the first open bucket of its key (kind, groups, reduction, dtype) that it does not
 * (transitively, through other buckets too) depend on and that stays within the threshold, else opens a new one;
 * a bucket that overflows is closed (later collectives start a new one: buckets follow the backward's order, as
 * DDP's do). A bucket of k > 1 members becomes: each input reshaped to one row (ReduceScatter: [n, size/n]), one
 * Concat, one collective, and per member a Slice and a Reshape that produce the member's original output name, so
 * its readers are unchanged. The node list is then re-sorted topologically (stable; a bucket's nodes take its last
 * member's position). Values are bit-identical: every reduction is elementwise, and gathers/scatters move the same
 * blocks. Collectives of unknown static shapes or types, or of zero size, are left alone. Returns how many
 * collectives were removed (members combined minus buckets made).
 */
export function combineCollectives(
  g: GraphBuilder,
  shapes: ReadonlyMap<string, readonly number[]>,
  dtypes: ReadonlyMap<string, string>,
  opts: CombineOptions,
): number {
  if (!(opts.thresholdBytes > 0)) return 0;
  const nodes = g.nodeList;
  const candidates: number[] = [];
  nodes.forEach((nd, i) => {
    if (nd.domain === COLLECTIVES_DOMAIN && COMBINABLE.has(nd.opType) && nd.inputs.length === 1) candidates.push(i);
  });
  if (candidates.length < 2) return 0;
  const producer = new Map<string, number>();
  const deps = nodes.map((nd, i) => {
    for (const o of nd.outputs) if (o) producer.set(o, i);
    const reads = new Set<string>();
    readsOf(nd, reads);
    return reads;
  });
  const bucketOf = new Map<number, number>(); // node index -> bucket id
  const buckets: Bucket[] = [];
  /** The buckets the value `x` depends on, closed over the buckets' own dependencies. */
  const bucketsBehind = (x: string): Set<number> => {
    const seen = new Set<number>(),
      found = new Set<number>();
    const stack = [producer.get(x)].filter((j): j is number => j !== undefined);
    while (stack.length) {
      const j = stack.pop()!;
      if (seen.has(j)) continue;
      seen.add(j);
      const b = bucketOf.get(j);
      if (b !== undefined) found.add(b);
      for (const r of deps[j]) {
        const p = producer.get(r);
        if (p !== undefined && !seen.has(p)) stack.push(p);
      }
    }
    const closed = new Set<number>();
    const more = [...found];
    while (more.length) {
      const b = more.pop()!;
      if (closed.has(b)) continue;
      closed.add(b);
      more.push(...buckets[b].deps);
    }
    return closed;
  };
  for (const i of candidates) {
    const nd = nodes[i];
    const x = nd.inputs[0],
      y = nd.outputs[0];
    // the lowering's own reshapes and transposes around a collective may have no recorded shape: the native ops'
    // shape rules (AllGather x -> [n, ...x], ReduceScatter [n, ...r] -> r) give one side from the other
    const n = groupSize(nd);
    let inShape = shapes.get(x),
      outShape = shapes.get(y);
    if (nd.opType === "AllReduce") inShape ??= outShape;
    if (nd.opType === "AllReduce") outShape ??= inShape;
    if (nd.opType === "AllGather") outShape ??= inShape && [n, ...inShape];
    if (nd.opType === "AllGather") inShape ??= outShape?.[0] === n ? outShape.slice(1) : undefined;
    if (nd.opType === "ReduceScatter") inShape ??= outShape && [n, ...outShape];
    if (nd.opType === "ReduceScatter") outShape ??= inShape?.[0] === n ? inShape.slice(1) : undefined;
    const dtype = dtypes.get(x) ?? dtypes.get(y);
    const w = isDType(dtype) ? itemsize(dtype) : undefined;
    if (!inShape || !outShape || !w || !(n > 0) || size(inShape) === 0) continue;
    if (nd.opType === "ReduceScatter" && (inShape[0] !== n || size(inShape) !== n * size(outShape))) continue;
    if (nd.opType === "AllGather" && (outShape[0] !== n || size(outShape) !== n * size(inShape))) continue;
    const bytes = Math.max(size(inShape), size(outShape)) * w;
    const key = keyOf(nd, dtype!);
    const behind = bucketsBehind(x);
    const m: Member = { node: nd, at: i, inShape, outShape, bytes };
    let b = buckets.findIndex((k, j) => k.open && k.key === key && !behind.has(j));
    if (b >= 0 && buckets[b].bytes + bytes > opts.thresholdBytes) {
      buckets[b].open = false; // full: its successors start a new bucket
      b = -1;
    }
    if (b < 0) {
      b = buckets.length;
      buckets.push({ key, members: [], bytes: 0, deps: new Set(), open: bytes < opts.thresholdBytes });
    }
    const k = buckets[b];
    k.members.push(m);
    k.bytes += bytes;
    for (const d of behind) k.deps.add(d);
    bucketOf.set(i, b);
  }
  const combined = buckets.filter((k) => k.members.length > 1);
  if (!combined.length) return 0;
  // the rewritten list with a position per node (a bucket's nodes at its last member's), then a stable topological sort
  const removed = new Set(combined.flatMap((k) => k.members.map((m) => m.at)));
  const placed: { node: GraphNode; pos: number }[] = [];
  nodes.forEach((nd, i) => removed.has(i) || placed.push({ node: nd, pos: i }));
  for (const k of combined) {
    const pos = Math.max(...k.members.map((m) => m.at));
    for (const node of bucketNodes(g, k.members)) placed.push({ node, pos });
  }
  g.setNodes(stableTopologicalOrder(placed));
  return combined.reduce((a, k) => a + k.members.length - 1, 0);
}

/** The nodes of one bucket: rows of the inputs, their Concat, the collective, and a Slice + Reshape per member. */
function bucketNodes(g: GraphBuilder, members: readonly Member[]): GraphNode[] {
  const first = members[0].node;
  const op = first.opType;
  const out: GraphNode[] = [];
  const base = g.fresh(`bucket_${op.toLowerCase()}`);
  const add = (opType: string, inputs: string[], output: string, attrs: [string, TaggedAttr][] = []) =>
    out.push({ opType, inputs, outputs: [output], attrs, domain: "", name: g.fresh(`${base}_${opType}`) });
  // ReduceScatter's blocks are rows of [n, size/n]: concatenated along axis 1, block p of the bucket is the members'
  // blocks p side by side; the other kinds concatenate flat vectors
  const n = op === "ReduceScatter" ? members[0].inShape[0] : 1;
  const rows = members.map((m) => {
    const row = g.fresh(`${base}_row`);
    add(
      "Reshape",
      [m.node.inputs[0], g.int64s(op === "ReduceScatter" ? [n, size(m.inShape) / n] : [size(m.inShape)])],
      row,
    );
    return row;
  });
  const cat = g.fresh(`${base}_concat`);
  add("Concat", rows, cat, [["axis", { kind: "int", value: op === "ReduceScatter" ? 1 : 0 }]]);
  const y = g.fresh(`${base}_out`);
  const labels = [...new Set(members.map((m) => labelOf(m.node)))].join("+");
  out.push({
    opType: op,
    inputs: [cat],
    outputs: [y],
    attrs: first.attrs.map(([k, a]): [string, TaggedAttr] =>
      k === "label" ? [k, { kind: "string", value: `${labels} (${members.length} combined)` }] : [k, a],
    ),
    domain: COLLECTIVES_DOMAIN,
    name: g.fresh(`${base}_collective`),
  });
  // AllGather's output is [n, sum of sizes]: each member is a column range; the others a range of the flat result
  let off = 0;
  for (const m of members) {
    const len = op === "ReduceScatter" ? size(m.outShape) : size(m.inShape);
    const part = g.fresh(`${base}_part`);
    add("Slice", [y, g.int64s([off]), g.int64s([off + len]), g.int64s([op === "AllGather" ? 1 : 0])], part);
    add("Reshape", [part, g.int64s(m.outShape)], m.node.outputs[0]);
    off += len;
  }
  return out;
}

const groupSize = (nd: GraphNode): number => intAttr(nd, "group_size", 0);
const labelOf = (nd: GraphNode): string => {
  const a = nd.attrs.find(([k]) => k === "label")?.[1];
  return a?.kind === "string" ? a.value : nd.opType;
};

/** A topological order of the nodes, the smallest (position, insertion) first among the ready ones. */
function stableTopologicalOrder(placed: readonly { node: GraphNode; pos: number }[]): GraphNode[] {
  const nodes = placed.map((p) => p.node);
  const less = (a: number, b: number) => placed[a].pos < placed[b].pos || (placed[a].pos === placed[b].pos && a < b);
  return orderNodes(nodes, nodeDependencies(nodes), less, "combineCollectives (a bug: combining made a cycle)");
}
