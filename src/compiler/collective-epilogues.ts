/**
 * @file All-reduces with an elementwise epilogue: a float32 AllReduce whose result only a jaxts.Fused node reads,
 * with every other operand of that node replicated over the all-reduce's group (an optimizer update
 * `w - lr * psum(g)`), becomes one jaxts.collectives AllReduceEpilogue node: each rank reduces its share, applies the
 * fused program there once and writes the updated values into every peer's outputs (native/shm-communicator.cc).
 * Exact: the same reduction fold and the same float32 program, once per element instead of once per rank.
 */
import type { GraphBuilder, GraphNode, TaggedAttr } from "../backends/onnx/graph-builder.js";
import { COLLECTIVES_DOMAIN } from "./async-collectives.js";
import { intAttr, readsOf } from "./optimize-graph.js";

/** Attributes of the AllReduce kept on the fused node (the group, the reduction and the names for errors). */
const KEPT = new Set(["groups", "group_size", "reduce", "label", "axes"]);

/** Whether a (non-constant) value of the graph holds the same bytes on every rank of each of `groups`. */
export type ReplicatedIn = (name: string, groups: readonly (readonly number[])[]) => boolean;

const attr = (n: GraphNode, name: string): TaggedAttr | undefined => n.attrs.find(([k]) => k === name)?.[1];

/** Groups of ranks of a collective node's `groups` / `group_size` attributes. */
function groupsOf(n: GraphNode): number[][] | null {
  const flat = attr(n, "groups"),
    size = intAttr(n, "group_size", -1);
  if (flat?.kind !== "ints" || size <= 0 || flat.value.length % size) return null;
  const out: number[][] = [];
  for (let i = 0; i < flat.value.length; i += size) out.push(flat.value.slice(i, i + size));
  return out;
}

/**
 * Rewrites the matching AllReduce + jaxts.Fused pairs of `g`'s top-level nodes in place (see the file comment);
 * returns how many it fused. `replicated` decides the operands that are not constants.
 */
export function fuseCollectiveEpilogues(
  g: GraphBuilder,
  dtypes: ReadonlyMap<string, string>,
  replicated: ReplicatedIn,
): number {
  const nodes = g.nodeList;
  const readers = new Map<string, number[]>();
  nodes.forEach((n, i) => {
    const r = new Set<string>();
    readsOf(n, r);
    for (const x of r) readers.set(x, [...(readers.get(x) ?? []), i]);
  });
  const outputs = new Set(g.outputNames);
  const replaced = new Map<number, GraphNode>(),
    dropped = new Set<number>();
  nodes.forEach((ar, i) => {
    if (ar.domain !== COLLECTIVES_DOMAIN || ar.opType !== "AllReduce" || ar.inputs.length !== 1) return;
    const y = ar.outputs[0],
      groups = groupsOf(ar);
    if (!groups || dtypes.get(ar.inputs[0]) !== "float32" || outputs.has(y)) return;
    const rs = readers.get(y) ?? [];
    if (rs.length !== 1 || dropped.has(rs[0]) || replaced.has(rs[0])) return;
    const f = nodes[rs[0]];
    const program = attr(f, "program"),
      ni = intAttr(f, "num_inputs", -1),
      ns = intAttr(f, "num_scalars", -1);
    if (f.domain !== "jaxts" || f.opType !== "Fused" || program?.kind !== "ints" || ni < 1 || ns < 0) return;
    if (f.inputs.length !== ni + ns || f.inputs.slice(ni).includes(y) || !f.inputs.slice(0, ni).includes(y)) return;
    // every other operand: a constant or replicated over the group, so one rank's result serves them all
    const others = f.inputs.filter((x) => x !== y);
    if (!others.every((x) => g.constantValue(x) !== undefined || replicated(x, groups))) return;
    // the program's inputs renumbered: the reduced value first, then the other tensors in their order
    const tensors = f.inputs.slice(0, ni).filter((x) => x !== y);
    const index = f.inputs.slice(0, ni).map((x) => (x === y ? 0 : 1 + tensors.indexOf(x)));
    const code = [...program.value];
    for (let v = 0; v < code[0]; v++) if (code[2 + 5 * v] === 0) code[3 + 5 * v] = index[code[3 + 5 * v]];
    replaced.set(rs[0], {
      opType: "AllReduceEpilogue",
      domain: COLLECTIVES_DOMAIN,
      name: g.fresh("n_AllReduceEpilogue"),
      inputs: [ar.inputs[0], ...tensors, ...f.inputs.slice(ni)],
      outputs: f.outputs,
      attrs: [
        ...ar.attrs.filter(([k]) => KEPT.has(k)),
        ["program", { kind: "ints", value: code }],
        ["num_inputs", { kind: "int", value: 1 + tensors.length }],
        ["num_scalars", { kind: "int", value: ns }],
      ],
    });
    dropped.add(i);
  });
  if (!replaced.size) return 0;
  // the fused node takes the epilogue's place: its operands and the all-reduce's input are all defined before it
  g.setNodes(nodes.flatMap((n, i) => (dropped.has(i) ? [] : [replaced.get(i) ?? n])));
  return replaced.size;
}
