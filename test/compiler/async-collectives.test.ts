/** @file The schedule of scheduleAsyncCollectives on hand-made graphs: where each CollectiveStart/CollectiveDone lands and which tokens order them. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { GraphBuilder, type GraphNode } from "../../src/backends/onnx/graph-builder.js";
import {
  asyncFormPays,
  DEFAULT_UPDATE_LAG,
  MAILBOX_ALL_REDUCE_SYNC_BYTES,
  scheduleAsyncCollectives,
} from "../../src/compiler/async-collectives.js";
import { combineCollectives } from "../../src/compiler/combine-collectives.js";

const GATHER = { groups: [0, 1], group_size: 2, label: "all_gather", axes: "mesh axis 'x'" };
/** A short label per node: the op, and for async ops which collective (by its input's name). */
function trace(g: GraphBuilder): string[] {
  return g.nodeList.map((n: GraphNode) => (n.domain === "jaxts.async" ? `${n.opType}(${n.inputs[0]})` : n.opType));
}

/** Lookups by the collective's input: its Start's token and its Done node. */
function asyncNodes(nodes: readonly GraphNode[]): { tokenOf: (x: string) => string; doneOf: (x: string) => GraphNode } {
  return {
    tokenOf: (x) => nodes.find((n) => n.opType === "CollectiveStart" && n.inputs[0] === x)!.outputs[0],
    doneOf: (x) => nodes.find((n) => n.opType === "CollectiveDone" && n.inputs[0] === x)!,
  };
}

test("three layers of gathered weights: each gather starts before the previous layer and is awaited after it", () => {
  const g = new GraphBuilder("layers");
  let h = g.addInput("h", "float32", [2, 2]);
  for (const w of ["w0", "w1", "w2"]) {
    g.addInput(w, "float32", [1, 2]);
    const full = g.addNode("AllGather", [w], 1, GATHER, "jaxts.collectives")[0];
    h = g.op("Tanh", [g.op("MatMul", [h, g.op("Reshape", [full, g.int64s([2, 2])])])]);
  }
  g.addOutput(h, "float32", [2, 2]);
  assert.equal(scheduleAsyncCollectives(g), 3);
  // w1 is prefetched at the top and w2 at layer 0's end; w0's Done reads w1's token and w1's Done reads w2's (through
  // a Concat), so ORT must start each gather before the layer that runs between it and its own Done
  assert.deepEqual(trace(g), [
    "CollectiveStart(w0)",
    "CollectiveStart(w1)",
    "Concat",
    "CollectiveDone(w0)",
    "Reshape",
    "MatMul",
    "Tanh",
    "CollectiveStart(w2)",
    "Concat",
    "CollectiveDone(w1)",
    "Reshape",
    "MatMul",
    "Tanh",
    "CollectiveDone(w2)",
    "Reshape",
    "MatMul",
    "Tanh",
  ]);
  const nodes = g.nodeList;
  const { tokenOf, doneOf } = asyncNodes(nodes);
  const concatOf = (w: string) => nodes.find((n) => n.outputs[0] === doneOf(w).inputs[1])!;
  assert.deepEqual(concatOf("w0").inputs, [tokenOf("w0"), tokenOf("w1")]);
  assert.deepEqual(concatOf("w1").inputs, [tokenOf("w1"), tokenOf("w2")]);
  assert.deepEqual(doneOf("w2").inputs, ["w2", tokenOf("w2")]);
  // the ids pair each Start with its Done
  const id = (n: GraphNode) => n.attrs.find(([k]) => k === "id")![1];
  for (const w of ["w0", "w1", "w2"])
    assert.deepEqual(id(doneOf(w)), id(nodes.find((n) => n.opType === "CollectiveStart" && n.inputs[0] === w)!));
});

test("a gradient reduce-scatter packed late starts right after its input exists, tied into the next compute", () => {
  const g = new GraphBuilder("grads");
  const x = g.addInput("x", "float32", [2, 2]);
  // grad of "layer 1" (a), then a long "layer 0" backward (b, c), then the packed collective of a, in program order
  const a = g.op("Sin", [x]);
  const b = g.op("Cos", [x]);
  const c = g.op("Exp", [b]);
  const rs = g.addNode("ReduceScatter", [g.op("Neg", [a])], 1, { ...GATHER, reduce: 0 }, "jaxts.collectives")[0];
  g.addOutput(rs, "float32", [2]);
  g.addOutput(c, "float32", [2, 2]);
  assert.equal(
    scheduleAsyncCollectives(
      g,
      new Map([
        [x, [2, 2]],
        [b, [2, 2]],
      ]),
    ),
    1,
  );
  // the Neg feeding it moves up to right after Sin; its Start is tied (Cast, Squeeze, Where) into the Cos that follows
  assert.deepEqual(trace(g), [
    "Sin",
    "Neg",
    "CollectiveStart(neg_0)".replace("neg_0", g.nodeList.find((n) => n.opType === "Neg")!.outputs[0]),
    "Cast",
    "Squeeze",
    "Where",
    "Cos",
    "Exp",
    "CollectiveDone(".concat(g.nodeList.find((n) => n.opType === "Neg")!.outputs[0], ")"),
  ]);
  const where = g.nodeList.find((n) => n.opType === "Where")!;
  assert.deepEqual(where.inputs.slice(1), [x, x]);
  assert.equal(g.nodeList.find((n) => n.opType === "Cos")!.inputs[0], where.outputs[0]);
});

test("a graph without collectives is left alone", () => {
  const g = new GraphBuilder("plain");
  const x = g.addInput("x", "float32", [2]);
  g.addOutput(g.op("Sin", [x]), "float32", [2]);
  assert.equal(scheduleAsyncCollectives(g), 0);
  assert.deepEqual(trace(g), ["Sin"]);
});

/** Three gathered layers (the graph of the first test): h -> tanh(h @ reshape(all_gather(w_k))). */
function gatheredLayers(): GraphBuilder {
  const g = new GraphBuilder("layers");
  let h = g.addInput("h", "float32", [2, 2]);
  for (const w of ["w0", "w1", "w2"]) {
    g.addInput(w, "float32", [1, 2]);
    const full = g.addNode("AllGather", [w], 1, GATHER, "jaxts.collectives")[0];
    h = g.op("Tanh", [g.op("MatMul", [h, g.op("Reshape", [full, g.int64s([2, 2])])])]);
  }
  g.addOutput(h, "float32", [2, 2]);
  return g;
}

test("wide schedule (mailbox mode): every gather of a program input starts at the top, each Done right before its reader", () => {
  const g = gatheredLayers();
  assert.equal(scheduleAsyncCollectives(g, new Map(), { wide: true }), 3);
  assert.deepEqual(trace(g), [
    "CollectiveStart(w0)",
    "CollectiveStart(w1)",
    "CollectiveStart(w2)",
    "Concat",
    "CollectiveDone(w0)",
    "Reshape",
    "MatMul",
    "Tanh",
    "CollectiveDone(w1)",
    "Reshape",
    "MatMul",
    "Tanh",
    "CollectiveDone(w2)",
    "Reshape",
    "MatMul",
    "Tanh",
  ]);
  const nodes = g.nodeList;
  const { tokenOf, doneOf } = asyncNodes(nodes);
  // ORT orders by data only: each Start reads the previous one's token (its `after` input) and the first Done reads
  // the last one's, so all three post before layer 0 computes
  const startOf = (w: string) => nodes.find((n) => n.opType === "CollectiveStart" && n.inputs[0] === w)!;
  assert.equal(startOf("w1").inputs[1], tokenOf("w0"));
  assert.equal(startOf("w2").inputs[1], tokenOf("w1"));
  const concat = nodes.find((n) => n.outputs[0] === doneOf("w0").inputs[1])!;
  assert.deepEqual(concat.inputs, [tokenOf("w0"), tokenOf("w2")]);
  assert.deepEqual(doneOf("w1").inputs, ["w1", tokenOf("w1")]);
  assert.deepEqual(doneOf("w2").inputs, ["w2", tokenOf("w2")]);
  // each Done's gathered output is read by the node right after it
  nodes.forEach((n, i) => {
    if (n.opType === "CollectiveDone") assert.ok(nodes[i + 1].inputs.includes(n.outputs[0]), `${n.name} -> its reader`);
  });
  // the default (communication-thread mode) keeps the one-ahead prefetch of the first test
  const narrow = gatheredLayers();
  scheduleAsyncCollectives(narrow);
  assert.deepEqual(trace(narrow).slice(0, 4), [
    "CollectiveStart(w0)",
    "CollectiveStart(w1)",
    "Concat",
    "CollectiveDone(w0)",
  ]);
});

/** Two layers' gradients reduce-scattered in backward order (layer 1, then layer 0), read by an update at the end. */
function twoGradients(): { g: GraphBuilder; g1: string; e: string; x: string } {
  const g = new GraphBuilder("grads2");
  const x = g.addInput("x", "float32", [2, 2]);
  const g1 = g.op("Sin", [x]);
  const r1 = g.addNode("ReduceScatter", [g1], 1, { ...GATHER, reduce: 0 }, "jaxts.collectives")[0];
  const e = g.op("Exp", [g.op("Cos", [x])]);
  const r0 = g.addNode("ReduceScatter", [e], 1, { ...GATHER, reduce: 0 }, "jaxts.collectives")[0];
  g.addOutput(g.op("Neg", [r1]), "float32", [2]);
  g.addOutput(g.op("Abs", [r0]), "float32", [2]);
  return { g, g1, e, x };
}

test("wide schedule: a gradient's reduce-scatter is awaited at its reader (the update), not at the next reduce-scatter", () => {
  const { g, g1, e, x } = twoGradients();
  // (early updates off: the next test covers the After that ends layer 1's update block with them on)
  assert.equal(scheduleAsyncCollectives(g, new Map([[x, [2, 2]]]), { wide: true, updateLag: 0 }), 2);
  assert.deepEqual(trace(g), [
    "Sin",
    `CollectiveStart(${g1})`,
    "Cast",
    "Squeeze",
    "Where",
    "Cos",
    "Exp",
    `CollectiveStart(${e})`,
    "Concat",
    `CollectiveDone(${g1})`,
    "Neg",
    `CollectiveDone(${e})`,
    "Abs",
  ]);
  // layer 1's Start is tied into layer 0's backward (Cos reads it through Where); layer 0's Start feeds the first Done
  const nodes = g.nodeList;
  const { tokenOf } = asyncNodes(nodes);
  const where = nodes.find((n) => n.opType === "Where")!;
  assert.equal(nodes.find((n) => n.opType === "Cos")!.inputs[0], where.outputs[0]);
  const done1 = nodes.find((n) => n.opType === "CollectiveDone" && n.inputs[0] === g1)!;
  assert.deepEqual(nodes.find((n) => n.outputs[0] === done1.inputs[1])!.inputs, [tokenOf(g1), tokenOf(e)]);
  // nothing else orders the Dones: layer 0's Done reads only its own token
  assert.deepEqual(nodes.find((n) => n.opType === "CollectiveDone" && n.inputs[0] === e)!.inputs, [e, tokenOf(e)]);
  // narrow (thread mode): layer 1's Done is bounded by layer 0's reduce-scatter (not gating), and its done token
  // feeds layer 0's Done, so ORT must run it before then
  const narrow = twoGradients();
  scheduleAsyncCollectives(narrow.g, new Map([[narrow.x, [2, 2]]]));
  const nn = narrow.g.nodeList;
  const d1 = nn.find((n) => n.opType === "CollectiveDone" && n.inputs[0] === narrow.g1)!;
  const d0 = nn.find((n) => n.opType === "CollectiveDone" && n.inputs[0] === narrow.e)!;
  assert.ok(nn.find((n) => n.outputs[0] === d0.inputs[1])!.inputs.includes(d1.outputs[1]), trace(narrow.g).join());
});

/** Three layers' gradients reduce-scattered in backward order, every update (Neg, Floor, Ceil) after all of them. */
function threeGradients(): { g: GraphBuilder; x: string; gs: string[]; rs: string[] } {
  const g = new GraphBuilder("grads3");
  const x = g.addInput("x", "float32", [2, 2]);
  const gs = [g.op("Sin", [x]), g.op("Exp", [g.op("Cos", [x])]), g.op("Tanh", [g.op("Sigmoid", [x])])];
  const rs = gs.map((v) => g.addNode("ReduceScatter", [v], 1, { ...GATHER, reduce: 0 }, "jaxts.collectives")[0]);
  ["Neg", "Floor", "Ceil"].forEach((op, k) => g.addOutput(g.op(op, [rs[k]]), "float32", [2]));
  return { g, x, gs, rs };
}

test("wide schedule: a layer's update runs k reduce-scatters later, not at the end, and an After holds it there", () => {
  const { g, x, gs } = threeGradients();
  assert.equal(scheduleAsyncCollectives(g, new Map([[x, [2, 2]]]), { wide: true, updateLag: 1 }), 3);
  // layer 2's update (Neg) right after layer 1's Start, layer 1's (Floor) right after layer 0's: each Done a layer
  // after its Start instead of all three after the whole backward
  assert.deepEqual(trace(g), [
    "Sin",
    `CollectiveStart(${gs[0]})`,
    "Cast",
    "Squeeze",
    "Where",
    "Cos",
    "Exp",
    `CollectiveStart(${gs[1]})`,
    "Concat",
    `CollectiveDone(${gs[0]})`,
    "Neg",
    "After(neg_0)",
    "Cast",
    "Squeeze",
    "Where",
    "Sigmoid",
    "Tanh",
    `CollectiveStart(${gs[2]})`,
    "Concat",
    `CollectiveDone(${gs[1]})`,
    "Floor",
    "After(floor_0)",
    "Concat",
    `CollectiveDone(${gs[2]})`,
    "Ceil",
  ]);
  // the After of Neg is tied into layer 0's backward (Sigmoid reads x through a Where on its token), the After of
  // Floor feeds the last Done: ORT cannot leave either update to the end with the graph's outputs
  const nodes = g.nodeList;
  const afters = nodes.filter((n) => n.opType === "After");
  assert.deepEqual(
    afters.map((n) => n.inputs),
    [["neg_0"], ["floor_0"]],
  );
  const cast = nodes.find((n) => n.opType === "Cast" && n.inputs[0] === afters[0].outputs[0])!;
  const squeeze = nodes.find((n) => n.inputs[0] === cast.outputs[0])!;
  const where = nodes.find((n) => n.opType === "Where" && n.inputs[0] === squeeze.outputs[0])!;
  assert.equal(nodes.find((n) => n.opType === "Sigmoid")!.inputs[0], where.outputs[0]);
  const lastDone = nodes.find((n) => n.opType === "CollectiveDone" && n.inputs[0] === gs[2])!;
  assert.ok(nodes.find((n) => n.outputs[0] === lastDone.inputs[1])!.inputs.includes(afters[1].outputs[0]));
  // off (JAXTS_ASYNC_UPDATE=late): the updates stay after every Start, no After
  const late = threeGradients();
  scheduleAsyncCollectives(late.g, new Map([[late.x, [2, 2]]]), { wide: true, updateLag: 0 });
  const t = trace(late.g);
  assert.ok(!t.some((op) => op.startsWith("After")), t.join());
  assert.ok(t.indexOf("Neg") > t.indexOf(`CollectiveStart(${late.gs[2]})`), t.join());
  // lag 2 (the default): layer 2's update after layer 0's Start, layer 1's (no second reduce-scatter after it) at
  // the end
  assert.equal(DEFAULT_UPDATE_LAG, 2);
  const lag2 = threeGradients();
  scheduleAsyncCollectives(lag2.g, new Map([[lag2.x, [2, 2]]]), { wide: true });
  const t2 = trace(lag2.g);
  assert.deepEqual(t2.slice(t2.indexOf(`CollectiveStart(${lag2.gs[2]})`)), [
    `CollectiveStart(${lag2.gs[2]})`,
    "Concat",
    `CollectiveDone(${lag2.gs[0]})`,
    "Neg",
    "After(neg_0)",
    "Concat",
    `CollectiveDone(${lag2.gs[1]})`,
    "Floor",
    `CollectiveDone(${lag2.gs[2]})`,
    "Ceil",
  ]);
  // narrow (thread mode) ignores updateLag: no After either
  const narrow = threeGradients();
  scheduleAsyncCollectives(narrow.g, new Map([[narrow.x, [2, 2]]]));
  assert.ok(!trace(narrow.g).some((op) => op.startsWith("After")));
});

/** A gathered layer whose backward re-gathers the same pieces (remat), placed after the forward in program order. */
function rematGraph(): { g: GraphBuilder; first: string; again: string } {
  const g = new GraphBuilder("remat");
  const h = g.addInput("h", "float32", [2, 2]);
  const a = g.addInput("a", "float32", [1, 1]);
  const b = g.addInput("b", "float32", [1, 1]);
  const first = g.op("Concat", [a, b], { axis: 1 });
  const fwd = g.addNode("AllGather", [first], 1, GATHER, "jaxts.collectives")[0];
  const y = g.op("Tanh", [g.op("MatMul", [h, g.op("Reshape", [fwd, g.int64s([2, 2])])])]);
  const rs = g.addNode("ReduceScatter", [g.op("Sin", [y])], 1, { ...GATHER, reduce: 0 }, "jaxts.collectives")[0];
  const again = g.op("Concat", [a, b], { axis: 1 });
  const bwd = g.addNode("AllGather", [again], 1, GATHER, "jaxts.collectives")[0];
  g.addOutput(g.op("MatMul", [y, g.op("Reshape", [bwd, g.int64s([2, 2])])]), "float32", [2, 2]);
  g.addOutput(g.op("Neg", [rs]), "float32", [2]);
  return { g, first, again };
}

test("wide schedule: a rematerialized gather's input, computed after the forward in program order, moves to the top", () => {
  const { g, first, again } = rematGraph();
  assert.equal(scheduleAsyncCollectives(g, new Map(), { wide: true }), 3);
  const t = trace(g);
  // both gathers' pieces and Starts come before the forward's compute (the first gather's Done reads both tokens)
  assert.deepEqual(t.slice(0, 6), [
    "Concat",
    `CollectiveStart(${first})`,
    "Concat",
    `CollectiveStart(${again})`,
    "Concat",
    `CollectiveDone(${first})`,
  ]);
  // the narrow schedule (thread mode) computes the backward's pieces after the forward, so its Start comes later
  const narrow = rematGraph();
  scheduleAsyncCollectives(narrow.g);
  const u = trace(narrow.g);
  assert.ok(u.indexOf(`CollectiveStart(${narrow.again})`) > u.indexOf("MatMul"), u.join(", "));
});

test("wide schedule: Starts with only gathers' input preparation between them are chained, not tied into it", () => {
  const { g, first, again } = rematGraph();
  scheduleAsyncCollectives(
    g,
    new Map([
      ["a", [1, 1]],
      ["b", [1, 1]],
      ["h", [2, 2]],
    ]),
    { wide: true },
  );
  const nodes = g.nodeList;
  const { tokenOf } = asyncNodes(nodes);
  // the backward's Concat(a, b) reads a and b themselves (a tie would make it Concat(Where(token, a, a), b), which
  // ORT could no longer merge with the forward's identical Concat): the second Start reads the first's token instead
  assert.equal(nodes.filter((n) => n.opType === "Where").length, 0, trace(g).join(", "));
  const concats = nodes.filter((n) => n.opType === "Concat" && n.inputs[0] === "a");
  assert.deepEqual(
    concats.map((n) => n.inputs),
    [
      ["a", "b"],
      ["a", "b"],
    ],
  );
  const startOf = (x: string) => nodes.find((n) => n.opType === "CollectiveStart" && n.inputs[0] === x)!;
  assert.equal(startOf(again).inputs[1], tokenOf(first));
  // the first Done still reads the last Start's token, so both post before the forward's compute
  const done = nodes.find((n) => n.opType === "CollectiveDone" && n.inputs[0] === first)!;
  assert.ok(nodes.find((n) => n.outputs[0] === done.inputs[1])!.inputs.includes(tokenOf(again)));
});

/** Gradients of two layers: a large all-reduce (64 KiB of float32), a small one (16 floats) and a reduce-scatter. */
function dataParallelGraph(bigElems: number): { g: GraphBuilder; big: string; small: string; rsIn: string } {
  const g = new GraphBuilder("dp");
  const x = g.addInput("x", "float32", [bigElems]);
  const w = g.addInput("w", "float32", [16]);
  const big = g.op("Sin", [x]);
  const ar = { ...GATHER, reduce: 0, label: "psum" };
  const bigSum = g.addNode("AllReduce", [big], 1, ar, "jaxts.collectives")[0];
  const small = g.op("Cos", [w]);
  const smallSum = g.addNode("AllReduce", [small], 1, ar, "jaxts.collectives")[0];
  const rsIn = g.op("Exp", [x]);
  const rs = g.addNode("ReduceScatter", [rsIn], 1, { ...ar, label: "psum_scatter" }, "jaxts.collectives")[0];
  g.addOutput(g.op("Neg", [bigSum]), "float32", [bigElems]);
  g.addOutput(g.op("Abs", [smallSum]), "float32", [16]);
  g.addOutput(g.op("Tanh", [rs]), "float32", [bigElems / 2]);
  return { g, big, small, rsIn };
}

test("cost model: asyncFormPays keeps mailbox all-reduces over 16 KiB synchronous, splits everything else", () => {
  const T = MAILBOX_ALL_REDUCE_SYNC_BYTES;
  assert.equal(T, 16384);
  assert.equal(asyncFormPays("AllReduce", T, 2, true), true);
  assert.equal(asyncFormPays("AllReduce", T + 4, 2, true), false);
  assert.equal(asyncFormPays("AllReduce", 1 << 20, 8, true), false);
  assert.equal(asyncFormPays("AllReduce", 1 << 20, 2, false), true); // the communication thread moves the bytes
  assert.equal(asyncFormPays("AllReduce", undefined, 2, true), true); // unknown size: split, as before
  for (const op of ["AllGather", "ReduceScatter", "AllToAll", "CollectivePermute"])
    assert.equal(asyncFormPays(op, 1 << 20, 4, true), true, op);
});

test("wide schedule: a 64 KiB all-reduce stays a synchronous node in place; the small one and the reduce-scatter split", () => {
  const { g, big, small, rsIn } = dataParallelGraph(16384);
  const shapes = new Map([
    [big, [16384]],
    [small, [16]],
    [rsIn, [16384]],
  ]);
  const dtypes = new Map([big, small, rsIn].map((x) => [x, "float32"]));
  assert.equal(scheduleAsyncCollectives(g, shapes, { wide: true }, dtypes), 2);
  const t = trace(g);
  // the large all-reduce keeps one synchronous node; both Starts post before it (the last one's token is tied into
  // its input: Where(token, big, big)), both Dones wait at their readers after it
  assert.deepEqual(t, [
    "Cos",
    `CollectiveStart(${small})`,
    "Exp",
    `CollectiveStart(${rsIn})`,
    "Sin",
    "Cast",
    "Squeeze",
    "Where",
    "AllReduce",
    "Neg",
    `CollectiveDone(${small})`,
    "Abs",
    `CollectiveDone(${rsIn})`,
    "Tanh",
  ]);
  const nodes = g.nodeList;
  const where = nodes.find((n) => n.opType === "Where")!;
  assert.deepEqual(where.inputs.slice(1), [big, big]);
  assert.equal(nodes.find((n) => n.opType === "AllReduce")!.inputs[0], where.outputs[0]);
  assert.equal(nodes.find((n) => n.opType === "AllReduce")!.domain, "jaxts.collectives");
  // every: true splits all three (the previous behaviour); narrow (thread mode) splits all three too
  for (const opts of [{ wide: true, every: true }, { wide: false }]) {
    const d = dataParallelGraph(16384);
    const sh = new Map([
      [d.big, [16384]],
      [d.small, [16]],
      [d.rsIn, [16384]],
    ]);
    assert.equal(scheduleAsyncCollectives(d.g, sh, opts, dtypes), 3, JSON.stringify(opts));
    assert.ok(!trace(d.g).includes("AllReduce"), trace(d.g).join());
  }
  // at the threshold (4096 float32 = 16 KiB) the all-reduce splits
  const edge = dataParallelGraph(4096);
  const es = new Map([
    [edge.big, [4096]],
    [edge.small, [16]],
    [edge.rsIn, [4096]],
  ]);
  assert.equal(scheduleAsyncCollectives(edge.g, es, { wide: true }), 3);
});

test("wide schedule: a program whose only collective is a large all-reduce is left alone", () => {
  const g = new GraphBuilder("one");
  const x = g.addInput("x", "float32", [8192]);
  const s = g.op("Sin", [x]);
  const y = g.addNode("AllReduce", [s], 1, { ...GATHER, reduce: 0 }, "jaxts.collectives")[0];
  g.addOutput(g.op("Neg", [y]), "float32", [8192]);
  const before = trace(g);
  assert.equal(scheduleAsyncCollectives(g, new Map([[s, [8192]]]), { wide: true }), 0);
  assert.deepEqual(trace(g), before);
});

test("wide schedule: a gradient bucket's size is read through its Concat of Reshapes (it has no recorded shape)", () => {
  // two layers' gradients of 3 x 4096 float32 (48 KiB each) bucketed into one 96 KiB all-reduce: synchronous; two
  // of 4 x 512 (2 KiB each) into one 4 KiB bucket: split
  const build = (rows: number, cols: number) => {
    const g = new GraphBuilder("bucket");
    const x = g.addInput("x", "float32", [rows, cols]);
    const ar = { ...GATHER, reduce: 0, label: "psum" };
    const a = g.op("Sin", [x]),
      b = g.op("Cos", [x]);
    const ya = g.addNode("AllReduce", [a], 1, ar, "jaxts.collectives")[0];
    const yb = g.addNode("AllReduce", [b], 1, ar, "jaxts.collectives")[0];
    g.addOutput(g.op("Add", [ya, yb]), "float32", [rows, cols]);
    const shapes = new Map([a, b, ya, yb].map((v) => [v, [rows, cols]]));
    const dtypes = new Map([a, b, ya, yb].map((v) => [v, "float32"]));
    assert.equal(combineCollectives(g, shapes, dtypes, { thresholdBytes: 1 << 20 }), 1);
    const bucket = g.nodeList.find((n) => n.opType === "AllReduce")!;
    assert.equal(shapes.has(bucket.inputs[0]), false, "the bucket's input has no recorded shape");
    return { g, shapes, dtypes };
  };
  const big = build(3, 4096);
  assert.equal(scheduleAsyncCollectives(big.g, big.shapes, { wide: true }, big.dtypes), 0);
  assert.equal(big.g.nodeList.filter((n) => n.opType === "AllReduce").length, 1);
  const small = build(4, 512);
  assert.equal(scheduleAsyncCollectives(small.g, small.shapes, { wide: true }, small.dtypes), 1);
  assert.ok(!small.g.nodeList.some((n) => n.opType === "AllReduce"));
});
