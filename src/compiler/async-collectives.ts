/**
 * @file Communication overlapped with compute: a rewrite of a lowered per-device program that splits each
 * jaxts.collectives node into jaxts.async CollectiveStart (issued as early as its input allows; in communication-thread
 * mode also no earlier than its kind's previous collective) and CollectiveDone (awaited at the first use), so a device posts its input early and
 * pulls its result late (one-sided, over shared memory) or a communication thread moves bytes, while the device
 * thread computes (native/async-collective-ops.cc). The device runtime's shardMap applies it under
 * withCollectiveOverlap (src/parallel/overlap-collectives.ts).
 */
import type { GraphBuilder, GraphNode, TaggedAttr } from "../backends/onnx/graph-builder.js";
import { intAttr, readsOf } from "./optimize-graph.js";
import { isDType, itemsize } from "../core/dtype.js";
import { nodeDependencies, orderNodes } from "./node-order.js";

/** The domain of the synchronous collective ops (src/parallel/lower-collectives.ts lowers to it). */
/** The domain of the synchronous collective custom ops (src/parallel/lower-collectives.ts lowers to it). */
export const COLLECTIVES_DOMAIN = "jaxts.collectives";
export const ASYNC_DOMAIN = "jaxts.async";
/** The collective ops that have an asynchronous form, with their kind code (native/async-collective-ops.cc). */
const KINDS: ReadonlyMap<string, number> = new Map([
  ["AllReduce", 0],
  ["AllGather", 1],
  ["ReduceScatter", 2],
  ["AllToAll", 3],
  ["CollectivePermute", 4],
]);

interface Split {
  node: GraphNode;
  /** Slot of the Start and of the Done: inserted just before the original node of that index (n = at the end). */
  start: number;
  done: number;
  /** Whether the Done sits right before its first reader (it gates compute), or earlier (bounded in flight). */
  gating: boolean;
  token: string;
  doneToken: string;
  /** Ordering-only inputs of the Done: tokens of Starts (and done tokens of Dones) that must run before it. */
  extra: string[];
  /**
   * The Start reads another collective's result that its Done yields in this same slot: it is emitted after that
   * slot's Dones, and its token may only feed a Done of a later slot (feeding one of this slot would close a cycle).
   */
  late: boolean;
}

/** How the native ops run the collectives the pass splits (native/mailbox-collectives.h, MailboxModeEnabled). */
export interface AsyncScheduleOptions {
  /**
   * true (mailbox mode: a Start only copies its input into a mailbox, the result exists from its Done): the wide
   * schedule, every Start right after its input's producer and every Done right before its first reader. false
   * (communication-thread mode: a Start materializes the whole output in staging): one all-gather prefetched at a
   * time and each Done no later than the next collective of its kind (bounded staging memory). Default false.
   */
  wide?: boolean;
  /**
   * true: every collective of the top-level list gets the asynchronous form (the native ops' tests). false (default):
   * only those whose asynchronous form can pay (asyncFormPays); the others stay synchronous nodes.
   */
  every?: boolean;
  /**
   * Wide schedule only. k >= 1 (default DEFAULT_UPDATE_LAG): what reads a reduce-scatter's result and feeds no collective (ZeRO's
   * optimizer update of one layer's shard) runs k reduce-scatters later, right after the input of the k-th next
   * reduce-scatter is made, so that reduce-scatter's Done is awaited k layers after its Start instead of at the end of
   * the step. 0: those readers keep their program position (the updates all after the whole backward;
   * JAXTS_ASYNC_UPDATE=late, the A/B).
   */
  updateLag?: number;
}

/**
 * How many reduce-scatters after its own a reduce-scatter's readers (ZeRO's per-layer optimizer update) run in the
 * wide schedule (AsyncScheduleOptions.updateLag). 2, not 1: with 4 device threads on 2 cores a peer is often more than
 * a layer behind, and a Done one layer after its Start then blocks mid-backward and pays a wake-up (the reduce-scatters'
 * "pulling" time rose 3-10x at lag 1); notes/training-parallel.md "z3ovl".
 */
export const DEFAULT_UPDATE_LAG = 2;

/**
 * All-reduces of more bytes than this stay synchronous in the wide (mailbox) schedule: see asyncFormPays. Small ones
 * (a loss, a norm) stay asynchronous: their pull costs nanoseconds and posting early still hides a barrier.
 */
export const MAILBOX_ALL_REDUCE_SYNC_BYTES = 16 << 10;

/**
 * The cost model of the split: whether collective `op` of `bytes` input bytes over `n` devices is worth its
 * asynchronous form. Wide (mailbox) schedule: the device thread itself moves the bytes at its Done, so the async form
 * hides only the wait for peers that are behind, never the transfer; an all-gather or reduce-scatter pull does the
 * sync op's share of the work plus the Start's copy of the input, so it stays asynchronous, but an all-reduce pull
 * reduces every peer's input whole: per device n * B reads + B for the Start's copy, against about 2 * B for the
 * synchronous op's shared reduce-scatter + all-gather (and the sync form can take a fused optimizer epilogue). Above
 * MAILBOX_ALL_REDUCE_SYNC_BYTES it stays synchronous (data parallelism's gradient buckets: every device runs the same
 * compute, so the wait it could hide is small; notes/training-parallel.md "dpovl"). Narrow (communication thread):
 * the thread moves the bytes while the device computes, so every collective is split. Unknown sizes split.
 */
export function asyncFormPays(op: string, bytes: number | undefined, n: number, wide: boolean): boolean {
  if (!wide || op !== "AllReduce" || bytes === undefined || n < 2) return true;
  return bytes <= MAILBOX_ALL_REDUCE_SYNC_BYTES;
}

/**
 * Input bytes of a collective node, when the pass knows its shape and type: from the recorded shapes, else through a
 * gradient bucket's construction (combineCollectives: a Concat of Reshapes to constant shapes, which have no recorded
 * shape), the element type from the bucket's members.
 */
function inputBytes(
  g: GraphBuilder,
  nd: GraphNode,
  shapes: ReadonlyMap<string, readonly number[]>,
  dtypes: ReadonlyMap<string, string> | undefined,
  producers: ReadonlyMap<string, GraphNode>,
): number | undefined {
  const elements = (x: string, depth: number): number | undefined => {
    const sh = shapes.get(x);
    if (sh) return sh.reduce((a, b) => a * b, 1);
    const p = producers.get(x);
    if (!p || depth > 2) return undefined;
    if (p.opType === "Reshape" && p.domain === "") {
      const to = g.constantValue(p.inputs[1])?.data;
      const dims = to ? globalThis.Array.from(to as ArrayLike<number | bigint>, Number) : [];
      return dims.length && dims.every((d) => d > 0) ? dims.reduce((a, b) => a * b, 1) : undefined;
    }
    if (p.opType === "Concat" && p.domain === "") {
      const parts = p.inputs.map((i) => elements(i, depth + 1));
      return parts.every((m) => m !== undefined) ? parts.reduce((a, b) => a! + b!, 0) : undefined;
    }
    return undefined;
  };
  const dtypeOf = (x: string, depth: number): string | undefined => {
    const d = dtypes?.get(x);
    if (d || depth > 2) return d;
    const p = producers.get(x);
    return p && (p.opType === "Reshape" || p.opType === "Concat") ? dtypeOf(p.inputs[0], depth + 1) : undefined;
  };
  const m = elements(nd.inputs[0], 0);
  const d = dtypeOf(nd.inputs[0], 0) ?? "float32";
  const w = isDType(d) ? itemsize(d) : undefined;
  return m !== undefined && w ? m * w : undefined;
}

/**
 * Rewrites the top-level node list of `g` in place (subgraphs keep synchronous collectives). Collective c with
 * input x (made by node p) at index i:
 * - narrow (thread mode): Start at max(p + 1, previous collective of c's op type) (one collective of a kind
 *   prefetched: a layer's parameters gather while the previous layer computes), Done at min(first reader of c's
 *   output, next collective of c's op type) (a layer's gradient reduce-scatters while the next one computes);
 * - wide (mailbox mode): Start at p + 1 (ZeRO-3's parameter gathers, forward and rematerialized backward, all at the
 *   top: each posts only this device's shard), Done at the first reader (a gradient's reduce-scatter is awaited
 *   where the optimizer reads it).
 * ORT's sequential executor orders nodes by data dependencies only, so each Start's token also feeds the first
 * gating Done at or after its slot (the Start then runs before the compute that Done releases), and each
 * non-gating Done's done token feeds the next gating Done (its staging memory is released early). Returns how many
 * collectives were split.
 *
 * Deadlock freedom of the wide schedule (mailbox mode): every device runs this same graph in the same executor
 * order E (one deterministic order of one graph; collective sequence numbers are taken at Starts, in E). A Start
 * never blocks, and a Done (or a synchronous collective left in a subgraph) waits only for its own collective's
 * posts, which each peer makes at its Start, and that Start precedes the Done in E (the Done reads its token). Take
 * the device stalled at the earliest position d of E: every other device is stalled at a position >= d or finished,
 * so it has run every node before d, in particular d's Start: d's wait is satisfied, a contradiction. So no set of
 * devices waits forever; only a peer that never runs (a failed rank) stalls a Done, and the collective timeout ends
 * that wait. Posting early changes none of this: it only moves Starts earlier in E; nor do the early update blocks
 * (updateLag) and their After tokens: they move compute, and an After waits for no peer.
 */
export function scheduleAsyncCollectives(
  g: GraphBuilder,
  shapes: ReadonlyMap<string, readonly number[]> = new Map(),
  opts: AsyncScheduleOptions = {},
  dtypes?: ReadonlyMap<string, string>,
): number {
  const wide = opts.wide ?? false;
  // the collectives whose asynchronous form can pay (every one with opts.every); the rest stay synchronous nodes
  const producers = new Map<string, GraphNode>();
  for (const nd of g.nodeList) for (const o of nd.outputs) if (o) producers.set(o, nd);
  const chosen = new Set(
    g.nodeList.filter(
      (nd) =>
        isCollective(nd) &&
        (opts.every ||
          asyncFormPays(nd.opType, inputBytes(g, nd, shapes, dtypes, producers), intAttr(nd, "group_size", 0), wide)),
    ),
  );
  if (!chosen.size) return 0;
  const split = (nd: GraphNode) => chosen.has(nd);
  const { nodes, feedsGather, updates } = hoistCollectiveInputs(
    g.nodeList,
    wide,
    split,
    wide ? (opts.updateLag ?? DEFAULT_UPDATE_LAG) : 0,
  );
  const n = nodes.length;
  const producer = new Map<string, number>();
  const firstReader = new Map<string, number>();
  nodes.forEach((nd, i) => {
    for (const o of nd.outputs) if (o) producer.set(o, i);
    const reads = new Set<string>();
    readsOf(nd, reads); // subgraph bodies read outer values too
    for (const x of reads) if (!firstReader.has(x)) firstReader.set(x, i);
  });
  const coll = nodes.map((nd, i) => ({ nd, i })).filter(({ nd }) => split(nd));
  const splits = new Map<number, Split>();
  coll.forEach(({ nd, i }, k) => {
    const prev = coll
      .slice(0, k)
      .reverse()
      .find((c) => c.nd.opType === nd.opType);
    const next = coll.slice(k + 1).find((c) => c.nd.opType === nd.opType);
    // narrow: an all-gather's input is usually resident (parameters): prefetch one ahead only, which bounds the
    // gathered copies alive at once; other kinds start as soon as their input exists. wide: a Start stages only its
    // input, so every collective starts as soon as its input exists
    const bound = !wide && nd.opType === "AllGather" && prev ? prev.i : 0;
    const src = producer.get(nd.inputs[0]);
    // a collective's result exists only from its Done: a collective reading it starts no earlier than that slot
    const srcDone = src === undefined ? undefined : splits.get(src)?.done;
    const start = Math.max((src ?? -1) + 1, bound, srcDone ?? 0);
    const use = firstReader.get(nd.outputs[0]) ?? n;
    const done = wide ? use : Math.min(use, next ? next.i : n);
    splits.set(i, {
      node: nd,
      start,
      done,
      gating: done === use,
      token: g.fresh("async_token"),
      doneToken: g.fresh("async_done"),
      extra: [],
      late: srcDone === start,
    });
  });
  const all = [...splits.values()];
  const gatingAtOrAfter = (slot: number, not?: Split, strictly = false): Split | undefined =>
    all
      .filter((s) => s !== not && s.gating && (strictly ? s.done > slot : s.done >= slot))
      .sort((a, b) => a.done - b.done)[0];
  // the Starts in emitted order (by slot; a late Start after its slot's Dones), each reading the previous one's token
  // (its `after` input, ordering only): ORT then runs a run of Starts in this order, so only the last Start before
  // the compute that must follow them needs a tie (a tie on every Start put a Where into each next gather's input
  // chain, which kept ORT from merging the rematerialized backward's copy of it with the forward's)
  // slots whose node belongs to an early update block (a Done there is read by one)
  const inUpdate = new Set(updates.flat());
  const readByUpdate = new Set(nodes.flatMap((nd, i) => (inUpdate.has(nd) ? [i] : [])));
  const chain = [...all].sort((a, b) => a.start - b.start || Number(a.late) - Number(b.late));
  const after = new Map<Split, string>();
  chain.forEach((s, k) => k > 0 && after.set(s, chain[k - 1].token));
  // ties: original node index -> [input position, token] (the input becomes Where(token, input, input))
  const ties = new Map<number, [number, string][]>();
  // by the slot of which original node a Start has surely run: its tie's node, the gating Done fed its token, its Done
  const runBy = new Map<Split, number>();
  for (let k = chain.length - 1; k >= 0; k--) {
    const s = chain[k];
    const t = gatingAtOrAfter(s.start, s, s.late);
    const limit = Math.min(t?.done ?? n, s.done);
    const tie = tieTarget(nodes, splits, shapes, dtypes, s.start, limit);
    const own = tie ? tie[0] : t && t.done < s.done ? t.done : s.done;
    const next = k + 1 < chain.length ? runBy.get(chain[k + 1]) : undefined;
    // covered by the next Start (it reads this one's token) when that runs by this one's deadline and only the
    // preparation of gathers' inputs (slices of resident parameter shards, wide schedule) comes between
    if (
      next !== undefined &&
      (next <= own ||
        (next <= limit && nodes.slice(own, next).every((x, j) => splits.has(own + j) || feedsGather.has(x))))
    ) {
      runBy.set(s, next);
      continue;
    }
    runBy.set(s, own);
    if (tie) ties.set(tie[0], [...(ties.get(tie[0]) ?? []), [tie[1], s.token]]);
    // a Done that an early update block reads gets the token even when a tie precedes it: the tied node may be one
    // of that block's own inputs (its step count), which ORT's executor may run after the Done
    if ((!tie || readByUpdate.has(t?.done ?? -1)) && t && t.done < s.done) t.extra.push(s.token);
  }
  for (const s of all) if (!s.gating) gatingAtOrAfter(s.done, s)?.extra.push(s.doneToken);
  const push = (m: Map<number, GraphNode[]>, slot: number, x: GraphNode[]) =>
    m.set(slot, [...(m.get(slot) ?? []), ...x]);
  // each block of early updates (hoistCollectiveInputs) ends in an After of the values it leaves unread, whose token
  // is tied into the compute that follows the block, or fed to the next gating Done: ORT's executor would otherwise
  // run the block with the graph's outputs, after the whole backward
  const afterAt = new Map<number, GraphNode[]>();
  const pos = new Map(nodes.map((nd, i) => [nd, i]));
  for (const block of updates) {
    const inBlock = new Set(block);
    const read = new Set<string>();
    for (const nd of block) readsOf(nd, read);
    const sinks = block.flatMap((nd) => nd.outputs.filter((o) => o && !read.has(o)));
    const slot = Math.max(...block.map((nd) => pos.get(nd)!)) + 1;
    if (!sinks.length || slot >= n || [...inBlock].some((nd) => splits.has(pos.get(nd)!))) continue;
    const token = g.fresh("async_after");
    const t = gatingAtOrAfter(slot);
    const tie = tieTarget(nodes, splits, shapes, dtypes, slot, t?.done ?? n);
    if (tie) ties.set(tie[0], [...(ties.get(tie[0]) ?? []), [tie[1], token]]);
    else if (t) t.extra.push(token);
    else continue;
    push(afterAt, slot, [
      { opType: "After", inputs: sinks, outputs: [token], attrs: [], domain: ASYNC_DOMAIN, name: `${token}_after` },
    ]);
  }
  const noDeps = g.int64s([0]);
  const startsAt = new Map<number, GraphNode[]>(),
    lateStartsAt = new Map<number, GraphNode[]>(),
    donesAt = new Map<number, GraphNode[]>();
  let id = 0;
  for (const s of all) {
    const attrs: [string, TaggedAttr][] = [
      ...s.node.attrs,
      ["kind", { kind: "int", value: KINDS.get(s.node.opType)! }],
      ["id", { kind: "int", value: id }],
    ];
    const name = `${s.node.name}_${id++}`;
    push(s.late ? lateStartsAt : startsAt, s.start, [
      {
        opType: "CollectiveStart",
        inputs: [s.node.inputs[0], after.get(s) ?? noDeps],
        outputs: [s.token],
        attrs,
        domain: ASYNC_DOMAIN,
        name: `${name}_start`,
      },
    ]);
    const pre: GraphNode[] = [];
    let tokens = s.token;
    if (s.extra.length) {
      tokens = g.fresh("async_tokens");
      pre.push({
        opType: "Concat",
        inputs: [s.token, ...s.extra],
        outputs: [tokens],
        attrs: [["axis", { kind: "int", value: 0 }]],
        domain: "",
        name: `${name}_tokens`,
      });
    }
    const doneNode: GraphNode = {
      opType: "CollectiveDone",
      inputs: [s.node.inputs[0], tokens],
      outputs: [s.node.outputs[0], s.doneToken],
      attrs,
      domain: ASYNC_DOMAIN,
      name: `${name}_done`,
    };
    // within a slot: Starts, then non-gating Dones, then gating Dones (which read the former's tokens)
    push(donesAt, s.done * 2 + (s.gating ? 1 : 0), [...pre, doneNode]);
  }
  const out: GraphNode[] = [];
  for (let i = 0; i <= n; i++) {
    out.push(...(afterAt.get(i) ?? []));
    out.push(...(startsAt.get(i) ?? []), ...(donesAt.get(i * 2) ?? []), ...(donesAt.get(i * 2 + 1) ?? []));
    out.push(...(lateStartsAt.get(i) ?? []));
    if (i < n && !splits.has(i)) {
      for (const [k, token] of ties.get(i) ?? []) {
        // an exact identity of a small input that reads the token: the node cannot run before the Start
        const cond = g.fresh("async_cond"),
          flag = g.fresh("async_flag"),
          tied = g.fresh("async_tied");
        const x = nodes[i].inputs[k];
        out.push(
          {
            opType: "Cast",
            inputs: [token],
            outputs: [flag],
            attrs: [["to", { kind: "int", value: 9 }]],
            domain: "",
            name: `${tied}_cast`,
          },
          { opType: "Squeeze", inputs: [flag], outputs: [cond], attrs: [], domain: "", name: `${tied}_squeeze` },
          { opType: "Where", inputs: [cond, x, x], outputs: [tied], attrs: [], domain: "", name: `${tied}_where` },
        );
        nodes[i].inputs[k] = tied;
      }
      out.push(nodes[i]);
    }
  }
  g.setNodes(out);
  g.useDomain(ASYNC_DOMAIN, 1);
  return all.length;
}

/** Largest input (elements) a tie copies: ties gate compute on a Start by passing one small input through Where. */
const TIE_MAX_ELEMENTS = 1 << 16;
/** Element types ORT's CPU Where kernel takes (it has none for 16-bit, uint32 or uint64 tensors). */
const TIE_DTYPES: ReadonlySet<string> = new Set(["float32", "float64", "int32", "int64", "uint8", "bool"]);

/**
 * The first original node in [from, before) (not a collective) with an input of known small size: [node index,
 * input position]; null when the Start needs no tie (a gating Done comes first) or none fits.
 */
function tieTarget(
  nodes: readonly GraphNode[],
  splits: ReadonlyMap<number, Split>,
  shapes: ReadonlyMap<string, readonly number[]>,
  dtypes: ReadonlyMap<string, string> | undefined,
  from: number,
  before: number,
): [number, number] | null {
  for (let i = from; i < before; i++) {
    if (splits.has(i)) continue;
    let best = -1,
      size = Infinity;
    nodes[i].inputs.forEach((x, k) => {
      const sh = x ? shapes.get(x) : undefined;
      const dt = x && dtypes ? dtypes.get(x) : undefined;
      if (dtypes && (dt === undefined || !TIE_DTYPES.has(dt))) return;
      const m = sh ? sh.reduce((a, b) => a * b, 1) : Infinity;
      if (m <= TIE_MAX_ELEMENTS && m < size) [best, size] = [k, m];
    });
    if (best >= 0) return [i, best];
  }
  return null;
}

const isCollective = (nd: GraphNode): boolean => nd.domain === COLLECTIVES_DOMAIN && KINDS.has(nd.opType);

/**
 * The nodes re-ordered (a topological order) so that what an all-reduce or reduce-scatter reads is computed as early
 * as its own inputs allow: a node's priority is the position of the first such collective it feeds (then its own
 * position). A gradient bucket packed after the whole backward pass in program order then starts right after its
 * layer's gradients exist, while earlier layers' backward still runs. With `gathersToo` (the wide schedule) what an
 * all-gather reads comes before everything else its inputs allow: ZeRO-3's per-layer pieces of the parameter shard,
 * forward and rematerialized backward, then all precede layer 0. With `updateLag` k > 0, a node that feeds no
 * collective but reads (transitively) the result of reduce-scatter r comes right after what the k-th reduce-scatter
 * after the last such r reads (ZeRO-3, k = 1: layer i's update after layer i-1's backward), instead of after
 * everything else; with fewer than k reduce-scatters after r, at the end as before.
 */
function hoistCollectiveInputs(
  nodes: readonly GraphNode[],
  gathersToo: boolean,
  split: (nd: GraphNode) => boolean,
  updateLag = 0,
): { nodes: GraphNode[]; feedsGather: Set<GraphNode>; updates: GraphNode[][] } {
  const n = nodes.length;
  // the nodes of each block of early updates (by the key they run at)
  const blocks = new Map<number, GraphNode[]>();
  const deps = nodeDependencies(nodes);
  const key = new Array<number>(n).fill(Infinity);
  nodes.forEach((nd, c) => {
    if (!split(nd) || (nd.opType === "AllGather" && !gathersToo)) return;
    // wide: what a gather reads comes first of all (-1: before every bucket's inputs too), so a rematerialized
    // backward gather's input (the same parameter shard as the forward's) is not left behind the forward pass
    const prio = nd.opType === "AllGather" ? -1 : c;
    const stack = deps[c].slice();
    while (stack.length) {
      const j = stack.pop()!;
      if (key[j] <= prio) continue;
      key[j] = prio;
      stack.push(...deps[j]);
    }
  });
  if (updateLag > 0) {
    const scatters = nodes.flatMap((nd, c) => (split(nd) && nd.opType === "ReduceScatter" ? [c] : []));
    // the last split reduce-scatter each node reads through its inputs (-1: none); `nodes` is in topological order
    const last = new Array<number>(n).fill(-1);
    nodes.forEach((nd, j) => {
      for (const d of deps[j])
        last[j] = Math.max(last[j], last[d], split(nodes[d]) && nodes[d].opType === "ReduceScatter" ? d : -1);
    });
    for (let j = 0; j < n; j++) {
      if (key[j] !== Infinity || last[j] < 0) continue;
      const next = scatters[scatters.findIndex((c) => c > last[j]) + updateLag - 1];
      if (next === undefined || next <= last[j]) continue;
      // after the next reduce-scatter's inputs (key next), before what the one after it reads (key > next)
      const prio = next + 0.5;
      blocks.set(prio, [...(blocks.get(prio) ?? []), nodes[j]]);
      const stack = [j];
      while (stack.length) {
        const i = stack.pop()!;
        if (key[i] <= prio) continue;
        key[i] = prio;
        stack.push(...deps[i]);
      }
    }
  }
  // the ready nodes by (key, position)
  const less = (a: number, b: number) => key[a] < key[b] || (key[a] === key[b] && a < b);
  const feedsGather = new Set(nodes.filter((_, j) => key[j] === -1));
  return {
    nodes: orderNodes(nodes, deps, less, "scheduleAsyncCollectives (the lowered graph)"),
    feedsGather,
    updates: [...blocks.values()],
  };
}
