/**
 * @file Priority-driven topological orders of a graph's node list (Kahn's algorithm with a binary heap of the ready
 * nodes), shared by the graph passes that re-order nodes (async-collectives.ts, combine-collectives.ts).
 */
import type { GraphNode } from "../backends/onnx/graph-builder.js";
import { readsOf } from "./optimize-graph.js";

/** For each node, the indices of the nodes (in `nodes`) whose outputs it reads, subgraph bodies' outer reads included. */
export function nodeDependencies(nodes: readonly GraphNode[]): number[][] {
  const producer = new Map<string, number>();
  nodes.forEach((nd, i) => nd.outputs.forEach((o) => o && producer.set(o, i)));
  return nodes.map((nd, i) => {
    const reads = new Set<string>();
    readsOf(nd, reads);
    const ds = new Set<number>();
    for (const r of reads) {
      const j = producer.get(r);
      if (j !== undefined && j !== i) ds.add(j);
    }
    return [...ds];
  });
}

/**
 * The nodes in a topological order that always takes the ready node that is least by `less` (a strict order on node
 * indices). Throws `${who}: ...` if the graph has a cycle.
 */
export function orderNodes(
  nodes: readonly GraphNode[],
  deps: readonly (readonly number[])[],
  less: (a: number, b: number) => boolean,
  who: string,
): GraphNode[] {
  const users: number[][] = nodes.map(() => []);
  const missing = deps.map((d, i) => {
    for (const j of d) users[j].push(i);
    return d.length;
  });
  const heap: number[] = [];
  const push = (i: number) => {
    heap.push(i);
    for (let k = heap.length - 1; k > 0;) {
      const p = (k - 1) >> 1;
      if (!less(heap[k], heap[p])) break;
      [heap[k], heap[p]] = [heap[p], heap[k]];
      k = p;
    }
  };
  const pop = (): number => {
    const top = heap[0],
      last = heap.pop()!;
    if (heap.length) {
      heap[0] = last;
      for (let k = 0; ;) {
        const l = 2 * k + 1,
          r = l + 1;
        let m = k;
        if (l < heap.length && less(heap[l], heap[m])) m = l;
        if (r < heap.length && less(heap[r], heap[m])) m = r;
        if (m === k) break;
        [heap[k], heap[m]] = [heap[m], heap[k]];
        k = m;
      }
    }
    return top;
  };
  missing.forEach((m, i) => m === 0 && push(i));
  const out: GraphNode[] = [];
  while (heap.length) {
    const i = pop();
    out.push(nodes[i]);
    for (const u of users[i]) if (--missing[u] === 0) push(u);
  }
  if (out.length !== nodes.length) throw new Error(`${who}: the graph has a cycle`);
  return out;
}
