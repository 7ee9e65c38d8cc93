/** @file fuse-graph's grouping (incremental topological order) gives the same partition as rescanning everything upstream at each join, on random DAGs and long chains. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { GraphNode } from "../../src/backends/onnx/graph-builder.js";
import { groupFusible } from "../../src/compiler/fuse-graph.js";

type Shape = readonly number[];
const A: Shape = [4],
  B: Shape = [2, 2];
const same = (s: Shape, t: Shape): boolean => s.length === t.length && s.every((d, i) => d === t[i]);

interface Dag {
  nodes: GraphNode[];
  shape: (Shape | null)[];
}

/** A seeded random DAG: node k reads 1-3 earlier values (or the inputs), is fusible of shape A or B, or not fusible. */
function randomDag(seed: number, n: number, locality: number): Dag {
  let s = seed >>> 0;
  const rand = (m: number): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % m;
  };
  const nodes: GraphNode[] = [],
    shape: (Shape | null)[] = [];
  for (let k = 0; k < n; k++) {
    const ins = Array.from({ length: 1 + rand(3) }, () => {
      const j = k - 1 - rand(Math.min(k, locality) + 1);
      return j < 0 ? `in${rand(2)}` : `v${j}`;
    });
    nodes.push({ opType: "Op", domain: "", name: `n${k}`, inputs: ins, outputs: [`v${k}`], attrs: [] });
    const r = rand(5);
    shape.push(r < 2 ? A : r < 4 ? B : null);
  }
  return { nodes, shape };
}

/** The partition found by the pass under test, as sorted member lists. */
function partition(d: Dag): number[][] {
  const producer = new Map<string, number>(),
    consumers = new Map<string, number[]>();
  d.nodes.forEach((n, i) => producer.set(n.outputs[0], i));
  const reads = d.nodes.map((n) => [...new Set(n.inputs)]);
  reads.forEach((r, i) => r.forEach((x) => consumers.set(x, [...(consumers.get(x) ?? []), i])));
  const index = new Map(d.nodes.map((n, i) => [n, i]));
  const { members } = groupFusible(d.nodes, reads, producer, consumers, (n) => d.shape[index.get(n)!]);
  return members.filter((m) => m.length).map((m) => [...m].sort((p, q) => p - q));
}

/** Reference: the same greedy joins, each checked by walking every value upstream of the joining groups' inputs. */
function referencePartition(d: Dag): number[][] {
  const n = d.nodes.length;
  const producer = new Map<string, number>();
  d.nodes.forEach((nd, i) => producer.set(nd.outputs[0], i));
  const reads = d.nodes.map((nd) => nd.inputs);
  const group = new Array<number>(n).fill(-1);
  const members: number[][] = [],
    gShape: Shape[] = [];
  // does a node outside groups gi and other, upstream of other's inputs, read from gi?
  const between = (gi: number, other: number): boolean => {
    const seen = new Set<number>();
    const stack = members[other].flatMap((q) =>
      reads[q].map((x) => producer.get(x)).filter((p) => p !== undefined && group[p] !== gi && group[p] !== other),
    );
    while (stack.length) {
      const p = stack.pop()!;
      if (seen.has(p)) continue;
      seen.add(p);
      if (group[p] === gi) return true;
      for (const q of group[p] >= 0 ? members[group[p]] : [p])
        for (const x of reads[q]) {
          const r = producer.get(x);
          if (r !== undefined) stack.push(r);
        }
    }
    return false;
  };
  d.nodes.forEach((nd, i) => {
    const s = d.shape[i];
    if (!s) return;
    group[i] = members.length;
    members.push([i]);
    gShape.push(s);
    for (const x of nd.inputs) {
      const p = producer.get(x);
      if (p === undefined || group[p] < 0 || group[p] === group[i] || !same(gShape[group[p]], s)) continue;
      const a = group[p],
        b = group[i];
      if (between(a, b) || between(b, a)) continue;
      for (const q of members[b]) {
        group[q] = a;
        members[a].push(q);
      }
      members[b] = [];
    }
  });
  return members.filter((m) => m.length).map((m) => [...m].sort((p, q) => p - q));
}

test("fusion groups of random DAGs match the upstream-rescan reference", () => {
  let joined = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const d = randomDag(seed, 10 + (seed % 60), 1 + (seed % 9));
    const got = partition(d),
      want = referencePartition(d);
    assert.deepEqual(got, want, `seed ${seed}`);
    joined += want.filter((m) => m.length > 1).length;
  }
  // the cases exercise real joins (and refusals: see the next assertion)
  assert.ok(joined > 300, `only ${joined} multi-node groups`);
});

test("a join that would put an outside node between two groups is refused, as in the reference", () => {
  // g1 = f(in0) [A]; u = h(g1) [not fusible]; g2 = f(g1, u) [A]: g2 may not join g1 (u sits between)
  const d: Dag = {
    nodes: [
      { opType: "Op", domain: "", name: "n0", inputs: ["in0"], outputs: ["v0"], attrs: [] },
      { opType: "Op", domain: "", name: "n1", inputs: ["v0"], outputs: ["v1"], attrs: [] },
      { opType: "Op", domain: "", name: "n2", inputs: ["v0", "v1"], outputs: ["v2"], attrs: [] },
      { opType: "Op", domain: "", name: "n3", inputs: ["v2", "in1"], outputs: ["v3"], attrs: [] },
    ],
    shape: [A, null, A, A],
  };
  assert.deepEqual(partition(d), [[0], [2, 3]]);
  assert.deepEqual(referencePartition(d), [[0], [2, 3]]);
});

test("a long chain with a loop-invariant operand groups each step's pair (x = h(x) + z * c)", () => {
  const nodes: GraphNode[] = [],
    shape: (Shape | null)[] = [];
  let x = "in0";
  for (let k = 0; k < 400; k++) {
    const base = 3 * k;
    nodes.push({ opType: "Op", domain: "", name: `s${k}`, inputs: [x], outputs: [`v${base}`], attrs: [] });
    nodes.push({ opType: "Op", domain: "", name: `m${k}`, inputs: ["in1"], outputs: [`v${base + 1}`], attrs: [] });
    nodes.push({
      opType: "Op",
      domain: "",
      name: `a${k}`,
      inputs: [`v${base}`, `v${base + 1}`],
      outputs: [`v${base + 2}`],
      attrs: [],
    });
    shape.push(null, A, A);
    x = `v${base + 2}`;
  }
  const d = { nodes, shape };
  const got = partition(d);
  assert.deepEqual(got, referencePartition(d));
  assert.equal(got.length, 400);
  got.forEach((m, k) => assert.deepEqual(m, [3 * k + 1, 3 * k + 2]));
});
