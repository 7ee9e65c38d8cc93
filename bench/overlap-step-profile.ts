/**
 * @file ORT's per-node profile of the overlap-off and overlap-on per-device programs of bench/training.ts's overlap
 * pairs (`node dist/bench/overlap-step-profile.js [--reps=N] [--case=zero4|zero2|dp2]`): each program as shardMap
 * compiles it (256 KiB buckets, overlap off / on), its collectives replaced by local stand-ins of the same shapes
 * (so one ORT session runs it without the device runtime), run single-threaded as the device runtime runs it,
 * interleaved; prints node counts, where the Starts/Dones sit, and per-node p10 kernel times on vs off (which compute
 * the overlap program does differently). Stand-in nodes are named `standin_*` and excluded from the compute sums.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { config } from "../src/core/config.js";
import { createSessionSync, fastRunner } from "../src/backends/onnx/ort-runtime.js";
import type { DType } from "../src/backends/onnx/graph-builder.js";
import {
  decodeModel,
  encodeModel,
  type ModelProto,
  type NodeProto,
  type ValueInfoProto,
} from "../src/backends/onnx/onnx-proto.js";

config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
const { makeMesh } = await import("../src/index.js");
const zero = await import("../src/models/zero.js");
const smd = await import("../src/parallel/shard-map-devices.js");

const reps = Number(process.argv.find((a) => a.startsWith("--reps="))?.slice(7) ?? 100);
const only = process.argv.find((a) => a.startsWith("--case="))?.slice(7);
const { asLayered, layered, opt, p0, targets, tokens } = await import("./transformer-problem.js");

/** The per-device model one step of this case compiles (the largest one, should there be several). */
function programOf(n: number, stage: 0 | 3, overlap: boolean): Uint8Array {
  const mesh = makeMesh([n], ["data"]);
  const state = zero.zeroShardState(asLayered(p0), opt, mesh, { stage });
  const step = zero.makeZeroTrainStep(layered, opt, mesh, { stage, overlap });
  const got: Uint8Array[] = [];
  const prev = smd.setDeviceProgramObserver((p) => got.push(p.model));
  const saved = config.collectiveCombineBytes;
  config.update("collectiveCombineBytes", 256 << 10);
  try {
    const [l] = step(state, tokens, targets);
    l.item();
  } finally {
    config.update("collectiveCombineBytes", saved);
    smd.setDeviceProgramObserver(prev);
  }
  if (!got.length) throw new Error("no per-device program was compiled");
  return got.sort((a, b) => b.length - a.length)[0];
}

const int64Const = (name: string, xs: number[]): NodeProto => ({
  opType: "Constant",
  input: [],
  output: [name],
  name,
  attribute: [{ name: "value", type: 4, t: { dims: [xs.length], dataType: 7, int64Data: xs } }],
});
/** y = the local stand-in of collective `op` (group size n) on x: the output shape of the native op, no exchange. */
function standinOf(op: string, kind: number | undefined, n: number, x: string, y: string, tag: string): NodeProto[] {
  const k = kind ?? ["AllReduce", "AllGather", "ReduceScatter", "AllToAll", "CollectivePermute"].indexOf(op);
  if (k === 1) {
    // all-gather: [n, ...x]
    const u = `standin_${tag}_u`;
    return [
      { opType: "Unsqueeze", input: [x, `standin_${tag}_ax`], output: [u], name: `standin_${tag}_unsq` },
      int64Const(`standin_${tag}_ax`, [0]),
      { opType: "Concat", input: Array<string>(n).fill(u), output: [y], name: `standin_${tag}_cat`, attribute: [] },
    ].map((nd) => (nd.opType === "Concat" ? { ...nd, attribute: [{ name: "axis", type: 2, i: 0 }] } : nd));
  }
  if (k === 2)
    // reduce-scatter: block 0 of the leading axis (size n)
    return [
      int64Const(`standin_${tag}_i`, [0]),
      { opType: "Gather", input: [x, `standin_${tag}_i`], output: [`standin_${tag}_g`], name: `standin_${tag}_gat` },
      { opType: "Squeeze", input: [`standin_${tag}_g`, `standin_${tag}_ax`], output: [y], name: `standin_${tag}_sq` },
      int64Const(`standin_${tag}_ax`, [0]),
    ];
  return [{ opType: "Identity", input: [x], output: [y], name: `standin_${tag}_id` }];
}
const attrI = (nd: NodeProto, name: string) => nd.attribute?.find((a) => a.name === name)?.i;

/** The model with every jaxts.collectives / jaxts.async node replaced by stand-ins, and a description of it. */
function localize(bytes: Uint8Array): {
  model: Uint8Array;
  shape: string;
  counts: Map<string, number>;
  marks: Map<string, string>;
} {
  const m: ModelProto = decodeModel(bytes);
  const g = m.graph!;
  const out: NodeProto[] = [];
  // node name -> its letter in the executed order: s Start, d Done (r: a reduce-scatter's), u reads a reduce-scatter
  const marks = new Map<string, string>();
  const fromRs = new Set<string>();
  const counts = new Map<string, number>();
  const layout: string[] = [];
  let t = 0;
  (g.node ?? []).forEach((nd) => {
    const key = `${nd.domain ? nd.domain + "." : ""}${nd.opType}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const tag = `${t++}`;
    const n = Number(attrI(nd, "group_size") ?? 1);
    if (nd.domain === "jaxts.collectives") {
      layout.push(nd.opType === "AxisIndex" ? "" : (nd.opType ?? "?")[0]);
      if (nd.opType === "AxisIndex") {
        out.push({
          opType: "Constant",
          input: [],
          output: nd.output,
          name: `standin_${tag}_axis`,
          attribute: [{ name: "value", type: 4, t: { dims: [], dataType: 6, int32Data: [0] } }],
        });
        return;
      }
      out.push(...standinOf(nd.opType ?? "", undefined, n, nd.input![0], nd.output![0], tag));
      return;
    }
    if (nd.domain === "jaxts.async") {
      const kind = Number(attrI(nd, "kind") ?? 0);
      if (nd.opType === "After") {
        // a token that depends on every input (no data read): the largest Size
        layout.push("a");
        marks.set(`standin_${tag}_tok`, "a");
        const sizes = nd.input!.map((x, j) => `standin_${tag}_n${j}`);
        out.push(
          ...nd.input!.map((x, j) => ({
            opType: "Size",
            input: [x],
            output: [sizes[j]],
            name: `standin_${tag}_size${j}`,
          })),
          { opType: "Max", input: sizes, output: [`standin_${tag}_m`], name: `standin_${tag}_max` },
          int64Const(`standin_${tag}_ax`, [0]),
          {
            opType: "Unsqueeze",
            input: [`standin_${tag}_m`, `standin_${tag}_ax`],
            output: nd.output,
            name: `standin_${tag}_tok`,
          },
        );
        return;
      }
      if (nd.opType === "CollectiveStart") {
        layout.push("s");
        marks.set(`standin_${tag}_tok`, "s");
        // token [1] that depends on x (no data read): Size(x) -> Unsqueeze
        out.push(
          { opType: "Size", input: [nd.input![0]], output: [`standin_${tag}_n`], name: `standin_${tag}_size` },
          int64Const(`standin_${tag}_ax`, [0]),
          {
            opType: "Unsqueeze",
            input: [`standin_${tag}_n`, `standin_${tag}_ax`],
            output: [`standin_${tag}_t`],
            name: `standin_${tag}_unsq`,
          },
          // the Start's `after` input (the previous Start's token) orders it, as in the real program
          { opType: "Max", input: [`standin_${tag}_t`, nd.input![1]], output: nd.output, name: `standin_${tag}_tok` },
        );
        return;
      }
      layout.push("d");
      marks.set(`standin_${tag}_where`, kind === 2 ? "r" : "d");
      if (kind === 2) fromRs.add(nd.output![0]);
      // Done: y = stand-in(Where(any(tokens), x, x)) keeps the token order; done = a token of its own
      const cond = `standin_${tag}_c`;
      out.push(
        {
          opType: "ReduceMax",
          input: [nd.input![1]],
          output: [`standin_${tag}_m`],
          name: `standin_${tag}_max`,
          attribute: [{ name: "keepdims", type: 2, i: 0 }],
        },
        {
          opType: "Cast",
          input: [`standin_${tag}_m`],
          output: [cond],
          name: `standin_${tag}_cast`,
          attribute: [{ name: "to", type: 2, i: 9 }],
        },
        {
          opType: "Where",
          input: [cond, nd.input![0], nd.input![0]],
          output: [`standin_${tag}_x`],
          name: `standin_${tag}_where`,
        },
        ...standinOf("", kind, n, `standin_${tag}_x`, nd.output![0], `${tag}y`),
        { opType: "Identity", input: [`standin_${tag}_m`], output: [`standin_${tag}_m1`], name: `standin_${tag}_id1` },
        int64Const(`standin_${tag}_ax1`, [0]),
        {
          opType: "Unsqueeze",
          input: [`standin_${tag}_m1`, `standin_${tag}_ax1`],
          output: [nd.output![1]],
          name: `standin_${tag}_done`,
        },
      );
      return;
    }
    if (!nd.name) nd.name = `node_${tag}`;
    if ((nd.input ?? []).some((x) => fromRs.has(x))) {
      for (const o of nd.output ?? []) fromRs.add(o);
      marks.set(nd.name, "u");
    }
    layout.push(".");
    out.push(nd);
  });
  g.node = out;
  m.opsetImport = (m.opsetImport ?? []).filter((o) => o.domain !== "jaxts.collectives" && o.domain !== "jaxts.async");
  // compress the layout: runs of compute as their length
  const shape = layout
    .join("")
    .replace(/\.+/g, (r) => `(${r.length})`)
    .replace(/\(\d+\)$/, "");
  return { model: encodeModel(m), shape, counts, marks };
}

const TYPED: Record<number, [DType, (n: number) => ArrayLike<number> & { length: number }]> = {
  1: ["float32", (n) => Float32Array.from({ length: n }, (_, i) => ((i * 7919) % 1000) / 1000 - 0.5)],
  6: ["int32", (n) => new Int32Array(n)],
  7: ["int64", (n) => new Float64Array(n)],
  9: ["bool", (n) => new Uint8Array(n)],
};
const dimsOf = (v: ValueInfoProto) => (v.type?.tensorType?.shape?.dim ?? []).map((d) => Number(d.dimValue ?? 0));
const typeOf = (v: ValueInfoProto) => v.type?.tensorType?.elemType ?? 1;

function sessionOf(bytes: Uint8Array, dir: string, label: string) {
  const g = decodeModel(bytes).graph!;
  const session = createSessionSync(bytes, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: "all",
    profileFilePrefix: join(dir, label),
    configEntries: { "session.intra_op.allow_spinning": "0" },
  });
  const ins = g.input ?? [];
  for (const v of ins) if (!TYPED[typeOf(v)]) throw new Error(`input ${v.name}: element type ${typeOf(v)}`);
  const run = fastRunner(
    session,
    ins.map((v) => ({ name: v.name!, dtype: TYPED[typeOf(v)][0] })),
    (g.output ?? []).map((v) => ({ name: v.name!, dtype: (TYPED[typeOf(v)] ?? TYPED[1])[0] })),
  );
  if (!run) throw new Error("no fast runner");
  const data = ins.map((v) => TYPED[typeOf(v)][1](dimsOf(v).reduce((a, b) => a * b, 1)));
  const shapes = ins.map(dimsOf);
  return { session, go: () => run.run(data as never, shapes) };
}

interface Ev {
  cat: string;
  name: string;
  dur: number;
  args?: { op_name?: string };
}
/** Per node: [p10 kernel time us (skipping 10 warm-up runs), op]; plus the median whole-run time. */
function perNode(
  dir: string,
  prefix: string,
  marks: Map<string, string>,
): { nodes: Map<string, [number, string]>; run: number; order: string } {
  const f = readdirSync(dir).find((x) => x.startsWith(prefix));
  if (!f) throw new Error(`no profile written for ${prefix}`);
  const evs = JSON.parse(readFileSync(join(dir, f), "utf8")) as Ev[];
  const by = new Map<string, [number[], string]>();
  const runs: number[] = [];
  let order: string[] = [],
    cur: string[] = [];
  for (const e of evs) {
    // the executed order of the last run (a run's node events precede its model_run event)
    if (e.cat === "Session" && e.name === "model_run") [runs[runs.length], order, cur] = [e.dur, cur, []];
    if (e.cat !== "Node" || !e.name.endsWith("_kernel_time")) continue;
    const k = e.name.slice(0, -12);
    cur.push(marks.get(k) ?? (k.startsWith("standin_") ? "" : "."));
    const entry = by.get(k) ?? by.set(k, [[], e.args?.op_name ?? "?"]).get(k)!;
    entry[0].push(e.dur);
  }
  const p10 = (xs: number[]) => [...xs.slice(10)].sort((a, b) => a - b)[Math.floor((xs.length - 10) / 10)];
  const med = (xs: number[]) => [...xs.slice(10)].sort((a, b) => a - b)[Math.floor((xs.length - 10) / 2)];
  // the layout of the executed order: runs of compute as their length, of update nodes as u<length>
  const shape = order
    .join("")
    .replace(/\.+/g, (r) => `(${r.length})`)
    .replace(/u+/g, (r) => `u${r.length}`);
  return { nodes: new Map([...by].map(([k, [xs, op]]) => [k, [p10(xs), op]])), run: med(runs), order: shape };
}

const CASES: [string, number, 0 | 3][] = [
  ["zero4", 4, 3],
  ["zero2", 2, 3],
  ["dp2", 2, 0],
];
for (const [name, n, stage] of CASES) {
  if (only && only !== name) continue;
  const dir = mkdtempSync(join(tmpdir(), "ovl-prof-"));
  const progs = [false, true].map((ov) => localize(programOf(n, stage, ov)));
  const built = progs.map((p, k) => sessionOf(p.model, dir, k ? "on" : "off"));
  const cpu = built.map(() => [] as number[]);
  for (let i = 0; i < reps; i++)
    built.forEach((b, k) => {
      const u0 = process.cpuUsage();
      b.go();
      const u = process.cpuUsage(u0);
      cpu[k].push(u.user + u.system);
    });
  for (const b of built) b.session.dispose();
  const [off, on] = ["off", "on"].map((p, k) => perNode(dir, p, progs[k].marks));
  rmSync(dir, { recursive: true, force: true });
  const medOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(`\n== ${name}: ${n} devices, ZeRO stage ${stage}, 256 KiB buckets; ${reps} runs each, interleaved`);
  progs.forEach((p, k) => {
    const c = [...p.counts].filter(
      ([op]) => op.startsWith("jaxts") || ["Concat", "Where", "Cast", "Squeeze"].includes(op),
    );
    const total = [...p.counts.values()].reduce((a, b) => a + b, 0);
    console.log(`${k ? "on " : "off"}: ${total} nodes; ${c.map(([op, v]) => `${op} ${v}`).join(", ")}`);
    console.log(`     layout (s Start, d Done, A/R/G sync collective, (k) k compute nodes): ${p.shape}`);
  });
  console.log(
    `on, as ORT ran it (s Start, d Done, r a reduce-scatter's Done, uk k nodes reading one, a After, (k) k others): ${on.order}`,
  );
  const sum = (m: Map<string, [number, string]>) =>
    [...m].filter(([k]) => !k.startsWith("standin_")).reduce((a, [, [v]]) => a + v, 0);
  const standins = (m: Map<string, [number, string]>) =>
    [...m].filter(([k]) => k.startsWith("standin_")).reduce((a, [, [v]]) => a + v, 0);
  console.log(
    `whole run: process CPU median off ${medOf(cpu[0]).toFixed(0)} us, on ${medOf(cpu[1]).toFixed(0)} us; ` +
      `ORT model_run median off ${off.run} us, on ${on.run} us`,
  );
  console.log(
    `sum of p10 kernel times (compute nodes): off ${sum(off.nodes).toFixed(0)} us, on ${sum(on.nodes).toFixed(0)} us; ` +
      `stand-ins off ${standins(off.nodes).toFixed(0)}, on ${standins(on.nodes).toFixed(0)} us; ` +
      `executed nodes off ${off.nodes.size}, on ${on.nodes.size}`,
  );
  // by op type
  const byOp = (m: Map<string, [number, string]>) => {
    const r = new Map<string, [number, number]>();
    for (const [k, [v, op]] of m) {
      if (k.startsWith("standin_")) continue;
      const e = r.get(op) ?? [0, 0];
      r.set(op, [e[0] + v, e[1] + 1]);
    }
    return r;
  };
  const [bo, bn] = [byOp(off.nodes), byOp(on.nodes)];
  const ops = [...new Set([...bo.keys(), ...bn.keys()])].sort((a, b) => (bn.get(b)?.[0] ?? 0) - (bn.get(a)?.[0] ?? 0));
  console.log(`${"op".padEnd(28)} ${"off us (n)".padStart(14)} ${"on us (n)".padStart(14)}`);
  for (const op of ops) {
    const [a, na] = bo.get(op) ?? [0, 0],
      [b, nb] = bn.get(op) ?? [0, 0];
    if (Math.max(a, b) < 20 && na === nb) continue;
    console.log(`${op.padEnd(28)} ${`${a.toFixed(0)} (${na})`.padStart(14)} ${`${b.toFixed(0)} (${nb})`.padStart(14)}`);
  }
  // the nodes whose time changed most
  const diffs = [...new Set([...off.nodes.keys(), ...on.nodes.keys()])]
    .filter((k) => !k.startsWith("standin_"))
    .map((k) => [k, (on.nodes.get(k)?.[0] ?? 0) - (off.nodes.get(k)?.[0] ?? 0)] as const)
    .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]))
    .slice(0, 12);
  console.log("largest per-node differences (on - off, us):");
  for (const [k, d] of diffs)
    console.log(
      `  ${k.slice(0, 70).padEnd(70)} ${d.toFixed(0).padStart(6)}  (off ${off.nodes.get(k)?.[0] ?? "-"}, on ${on.nodes.get(k)?.[0] ?? "-"})`,
    );
}
