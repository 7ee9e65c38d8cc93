/**
 * @file Training-parallelism benchmark (`node dist/bench/training.js [--quick]`, also run by `npm run bench`): tokens/s
 * of a small Transformer training step (adamw) on 1 device, 2-way data parallel, 2x2 data x tensor and ZeRO-3 on 4
 * devices, side by side (interleaved rounds, medians), each step's time split per device into compute, communication
 * and idle from the runtime's own launch records (setLaunchObserver: per-rank spans and per-collective times); and
 * the ZeRO-3 and data-parallel steps with communication overlapped with compute (makeZeroTrainStep's overlap) vs not,
 * on 4 and on 2 devices, with the default one-sided (mailbox) asynchronous collectives: the step time on vs off and
 * the share of the communication it could hide that it hid. Both sides of an overlap pair are one program but for
 * where communication waits: the same collectives, bucketed at OVERLAP_BUCKET_BYTES (per-layer buckets stay apart).
 */
import { otherThreadsNs } from "./schedstat.js";
import { availableParallelism, loadavg } from "node:os";
import { config } from "../src/core/config.js";

const quick = process.argv.includes("--quick");
config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
const { jit, makeMesh } = await import("../src/index.js");
const rt = await import("../src/runtime/index.js");
const tr = await import("../src/models/transformer.js");
const zero = await import("../src/models/zero.js");

const why = rt.deviceRuntimeUnavailable();
if (why) {
  console.log(`training parallelism: skipped (${why})`);
  process.exit(0);
}

const { BATCH, asLayered, cfg, layered, opt, p0, targets, tokens } = await import("./transformer-problem.js");
const tokensPerStep = BATCH * cfg.seq;
/**
 * The ZeRO steps donate their state (makeZeroTrainStep's donate: the old state's device buffers are reused for the
 * next step's outputs); JAXTS_BENCH_DONATE=0 keeps every state (fresh output buffers each step, the A/B).
 */
const DONATE = process.env.JAXTS_BENCH_DONATE !== "0";

interface Case {
  name: string;
  devices: number;
  step: () => void;
}
/**
 * overlap "mailbox": the default one-sided asynchronous collectives (post at Start, pull at Done) with the wide
 * schedule; "narrow": mailboxes with the communication thread's schedule (JAXTS_ASYNC_SCHEDULE=narrow: the A/B of
 * the wide schedule); "thread": the communication thread per device (JAXTS_ASYNC_COLLECTIVES=thread, read by the
 * native ops at each Start and by the graph pass when it compiles).
 */
function zeroCase(
  name: string,
  n: number,
  stage: 0 | 3,
  overlap: false | "mailbox" | "narrow" | "thread" = false,
  combineBytes = config.collectiveCombineBytes,
  spin?: string,
  select?: "every",
  update?: string,
): Case {
  const mesh = makeMesh([n], ["data"]);
  // the case's own parameters (p0's values, made again): its step donates the state, and a placement may keep an
  // array that is already where it belongs instead of copying it
  let state = zero.zeroShardState(asLayered(tr.initParams(cfg, 0)), opt, mesh, { stage });
  const step = zero.makeZeroTrainStep(layered, opt, mesh, { stage, overlap: overlap !== false, donate: DONATE });
  return {
    name,
    devices: n,
    step: () => {
      // the switches this case sets (JAXTS_ASYNC_SELECT=every: every collective asynchronous, the cost model off)
      const envs: [string, string][] = [];
      if (spin !== undefined) envs.push(["JAXTS_MAILBOX_SPIN", spin]);
      if (overlap === "thread") envs.push(["JAXTS_ASYNC_COLLECTIVES", "thread"]);
      if (overlap === "narrow") envs.push(["JAXTS_ASYNC_SCHEDULE", "narrow"]);
      if (select) envs.push(["JAXTS_ASYNC_SELECT", select]);
      if (update) envs.push(["JAXTS_ASYNC_UPDATE", update]);
      const switched = envs.length > 0;
      const saved = envs.map(([k]) => process.env[k]);
      if (switched) {
        rt.synchronize(); // no launch in flight reads the environment while it changes
        for (const [k, v] of envs) process.env[k] = v;
      }
      const savedCombine = config.collectiveCombineBytes;
      config.update("collectiveCombineBytes", combineBytes); // read when the step is staged (part of its key)
      try {
        const [l, next] = step(state, tokens, targets);
        l.item();
        state = next;
        if (switched) rt.synchronize(); // every Start of the step ran under the switch
      } finally {
        config.update("collectiveCombineBytes", savedCombine);
        envs.forEach(([k], j) => {
          if (saved[j] === undefined) delete process.env[k];
          else process.env[k] = saved[j];
        });
      }
    },
  };
}
function tensorCase(): Case {
  const mesh = makeMesh([2, 2], ["data", "model"]);
  // one jit for the step, as examples/train-transformer.ts and the training job do (eagerly it is many launches)
  const step = jit(tr.makeShardedTrainStep(cfg, opt, mesh));
  let params = p0,
    st = opt.init(p0);
  return {
    name: "2x2 data x tensor",
    devices: 4,
    step: () => {
      const [l, p, s] = step(params, st, tokens, targets);
      l.item();
      params = p;
      st = s;
    },
  };
}
/**
 * Gradient bucketing's threshold for both sides of the overlap pairs: a layer's gradients (about 200 KB here) or
 * gathered parameters stay a bucket of their own, so communication can overlap the next layer's compute (at the
 * default 4 MiB every bucket of this model combines into one, awaited after the whole backward).
 */
const OVERLAP_BUCKET_BYTES = 256 << 10;
const B = OVERLAP_BUCKET_BYTES;
const allCases = [
  zeroCase("1 device", 1, 0),
  zeroCase("2-way data parallel", 2, 0),
  tensorCase(),
  zeroCase("ZeRO-3, 4 devices", 4, 3),
  zeroCase("ZeRO-3, 2 devices", 2, 3),
  zeroCase(`ZeRO-3, 4 devices, buckets ${B >> 10} KiB`, 4, 3, false, B),
  zeroCase(`ZeRO-3, 4 devices, buckets ${B >> 10} KiB, overlap`, 4, 3, "mailbox", B),
  zeroCase(`ZeRO-3, 2 devices, buckets ${B >> 10} KiB`, 2, 3, false, B),
  zeroCase(`ZeRO-3, 2 devices, buckets ${B >> 10} KiB, overlap`, 2, 3, "mailbox", B),
  zeroCase(`2-way data parallel, buckets ${B >> 10} KiB`, 2, 0, false, B),
  zeroCase(`2-way data parallel, buckets ${B >> 10} KiB, overlap`, 2, 0, "mailbox", B),
  // the Dones' previous wait (2000 polls, yielding after 64: JAXTS_MAILBOX_SPIN=y2000) against the default
  zeroCase(`ZeRO-3, 4 devices, buckets ${B >> 10} KiB, overlap, Done yields`, 4, 3, "mailbox", B, "y2000"),
  zeroCase(`ZeRO-3, 2 devices, buckets ${B >> 10} KiB, overlap, Done yields`, 2, 3, "mailbox", B, "y2000"),
  // the pass's previous choice (every collective asynchronous, JAXTS_ASYNC_SELECT=every) against its cost model
  zeroCase(
    `2-way data parallel, buckets ${B >> 10} KiB, overlap, every collective`,
    2,
    0,
    "mailbox",
    B,
    undefined,
    "every",
  ),
  // each layer's optimizer update at the end of the step (JAXTS_ASYNC_UPDATE=late), or one reduce-scatter after its
  // own (=1), against two (the default, DEFAULT_UPDATE_LAG)
  zeroCase(
    `ZeRO-3, 4 devices, buckets ${B >> 10} KiB, overlap, late updates`,
    4,
    3,
    "mailbox",
    B,
    undefined,
    undefined,
    "late",
  ),
  zeroCase(
    `ZeRO-3, 2 devices, buckets ${B >> 10} KiB, overlap, late updates`,
    2,
    3,
    "mailbox",
    B,
    undefined,
    undefined,
    "late",
  ),
  // the overlap-off case again (its own step and state, the same program): the pair "noise" is the host's spread
  // between two byte-identical programs, the floor under every hid above
  zeroCase(`ZeRO-3, 4 devices, buckets ${B >> 10} KiB, again`, 4, 3, false, B),
  zeroCase(
    `ZeRO-3, 4 devices, buckets ${B >> 10} KiB, overlap, updates 1 later`,
    4,
    3,
    "mailbox",
    B,
    undefined,
    undefined,
    "1",
  ),
];
/** [off, on, label] of the overlap comparisons (the same program and buckets, synchronous vs overlapped). */
const ALL_PAIRS: [number, number, string][] = [
  [5, 6, "overlap"],
  [7, 8, "overlap"],
  [9, 10, "overlap"],
  [5, 11, "overlap (Done yields)"],
  [7, 12, "overlap (Done yields)"],
  [9, 13, "overlap (every collective async)"],
  [5, 14, "overlap (late updates)"],
  [7, 15, "overlap (late updates)"],
  [5, 17, "overlap (updates 1 later)"],
  [5, 16, "noise (the off program twice)"],
];
// --only=<text>: only the cases whose name contains it (and the pairs of two such cases), for a quick A/B
const only = process.argv.find((a) => a.startsWith("--only="))?.slice(7);
// --skip=<text>: drop the cases whose name contains it (e.g. --skip=yields)
const skip = process.argv.find((a) => a.startsWith("--skip="))?.slice(7);
const keep = allCases.map((c) => (!only || c.name.includes(only)) && (!skip || !c.name.includes(skip)));
const cases = allCases.filter((_, k) => keep[k]);
const newIndex = (k: number) => keep.slice(0, k).filter(Boolean).length;
const PAIRS = ALL_PAIRS.filter(([a, b]) => keep[a] && keep[b]).map(
  ([a, b, l]) => [newIndex(a), newIndex(b), l] as [number, number, string],
);

/** Per step and device (means over the devices): ms of compute, communication (transfers) and idle (waits, gaps). */
interface Split {
  compute: number;
  comm: number;
  idle: number;
  /** The device thread's time inside collectives (synchronous: the whole call; overlapped: blocked in its Done). */
  blocked: number;
  /**
   * Overlapped collectives' Done time per device by kind: [waiting for the last peer's post, pulling after it]
   * (the pull is this device's copy / reduction; the wait is peers that had not reached their Start yet).
   */
  doneBy: Map<string, [number, number]>;
  /** ms of CPU the process's threads other than the JS thread ran (device threads, executors), and ms they waited runnable for a core; NaN off Linux. */
  cpu: number;
  runq: number;
  /** ms of CPU the JS (host) thread ran: the process's CPU time less the other threads'. */
  host: number;
}
function measure(c: Case, records: import("../src/runtime/index.js").LaunchRecord[]): { ms: number; split: Split } {
  records.length = 0;
  const s0 = otherThreadsNs();
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  c.step();
  rt.synchronize();
  const ms = performance.now() - t0;
  const u1 = process.cpuUsage(u0);
  const s1 = otherThreadsNs();
  let compute = 0,
    comm = 0,
    blocked = 0;
  const doneBy = new Map<string, [number, number]>();
  for (const r of records) {
    r.timeline.forEach((t, rank) => {
      const span = t.end - t.start;
      let inColl = 0,
        transfer = 0;
      for (const k of r.collectives[rank] ?? []) {
        if (k.wait >= 0) {
          // overlapped: only the time in its Done stalls the device (the communication thread's transfer, or the
          // mailbox's wait for the peers' posts and this device's pull)
          inColl += k.wait;
          transfer += k.wait;
          // the Done began at end - wait; the last post came at ready (mailbox)
          const peers = Math.min(k.wait, Math.max(0, k.ready - (k.end - k.wait)));
          const d = doneBy.get(k.kind) ?? [0, 0];
          doneBy.set(k.kind, [d[0] + peers, d[1] + k.wait - peers]);
          continue;
        }
        inColl += k.end - k.start;
        transfer += k.end - k.ready; // before `ready` the rank waits for its peers: idle, not communication
      }
      compute += span - inColl;
      comm += transfer;
      blocked += inColl;
    });
  }
  const per = (us: number) => us / 1000 / c.devices;
  const split = {
    compute: per(compute),
    comm: per(comm),
    idle: 0,
    blocked: per(blocked),
    doneBy: new Map([...doneBy].map(([kd, [a, b]]) => [kd, [per(a), per(b)] as [number, number]])),
    cpu: (s1[0] - s0[0]) / 1e6,
    runq: (s1[1] - s0[1]) / 1e6,
    host: (u1.user + u1.system) / 1000 - (s1[0] - s0[0]) / 1e6,
  };
  split.idle = Math.max(0, ms - split.compute - split.comm);
  return { ms, split };
}

const records: import("../src/runtime/index.js").LaunchRecord[] = [];
const prev = rt.setLaunchObserver((r) => records.push(r));
const load0 = loadavg()[0];
/**
 * Measured steps per case (`--rounds=N`, default 64; 3 with --quick). 64, not 12: at 12 the noise pair (the same
 * program twice) read -58% to +102% "hid" on this host, at 64 within +-6% (notes/training-parallel.md "z3ovl").
 */
const rounds = Number(process.argv.find((a) => a.startsWith("--rounds="))?.slice(9) ?? (quick ? 3 : 64));
/**
 * Steps a case runs back to back before the next case's turn (`--block=N` or JAXTS_BENCH_BLOCK, default 1: one step
 * of each case in turn). With blocks the order is reversed every other round (as bench/devices.ts's interleaved), so
 * every case still runs in every round and a load drift hits both sides of a pair; a block's steps find the caches
 * their own previous step left, as a training loop's do.
 */
const block = Math.max(
  1,
  Number(process.argv.find((a) => a.startsWith("--block="))?.slice(8) ?? process.env.JAXTS_BENCH_BLOCK ?? 1),
);
for (let w = 0; w < 2; w++) for (const c of cases) c.step();
const samples = cases.map(() => [] as { ms: number; split: Split }[]);
for (let i = 0, round = 0; i < rounds; i += block, round++) {
  const order = cases.map((_, k) => k);
  if (round % 2) order.reverse();
  for (const k of order) for (let j = 0; j < block && i + j < rounds; j++) samples[k].push(measure(cases[k], records));
}
rt.setLaunchObserver(prev);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** The sample with the median step time (its split adds up to its time). */
const mid = (s: { ms: number; split: Split }[]) => [...s].sort((a, b) => a.ms - b.ms)[Math.floor(s.length / 2)];
const rows = cases.map((c, k) => {
  const { ms, split } = mid(samples[k]);
  return [
    c.name,
    `${ms.toFixed(2)} ms/step`,
    `${((tokensPerStep / ms) * 1000).toFixed(0)} tokens/s`,
    `compute ${split.compute.toFixed(2)} / comm ${split.comm.toFixed(2)} / idle ${split.idle.toFixed(2)} ms per device; ` +
      `JS thread's CPU ${median(samples[k].map((x) => x.split.host)).toFixed(2)} ms/step (median)`,
  ];
});
/** The medians of the samples' Done time by kind, "kind a / b". */
function doneByKind(s: { split: Split }[]): string {
  const kinds = [...new Set(s.flatMap((x) => [...x.split.doneBy.keys()]))].sort();
  const at = (x: { split: Split }, kd: string, j: 0 | 1) => x.split.doneBy.get(kd)?.[j] ?? 0;
  return (
    kinds
      .map(
        (kd) =>
          `${kd} ${median(s.map((x) => at(x, kd, 0))).toFixed(2)} / ${median(s.map((x) => at(x, kd, 1))).toFixed(2)}`,
      )
      .join(", ") || "none"
  );
}
for (const [off, on, label] of PAIRS) {
  // exposed: the device threads' time inside collectives without overlap (what overlap could hide); judged: the
  // step time it saved over that; beside it, from the runtime's timestamps, the share of it no longer stalling the
  // device threads (1 - time still blocked in Dones with overlap / exposed)
  const tOff = median(samples[off].map((x) => x.ms)),
    tOn = median(samples[on].map((x) => x.ms));
  const hide = median(samples[off].map((x) => x.split.blocked)),
    left = median(samples[on].map((x) => x.split.blocked));
  // what the step's threads really ran (a device thread's "compute" above is wall time, descheduled time included)
  const [cpuOff, cpuOn, rqOff, rqOn, hostOff, hostOn] = [
    [off, "cpu"],
    [on, "cpu"],
    [off, "runq"],
    [on, "runq"],
    [off, "host"],
    [on, "host"],
  ].map(([k, f]) => median(samples[k as number].map((x) => x.split[f as "cpu" | "runq" | "host"])));
  // the step cannot be shorter than the CPU its threads need spread over every core: with that, hid is at most
  // (off - CPU_on / cores) / exposed (on a host with fewer cores than device threads the exposed time of the off
  // program is mostly time other device threads computed in, which no schedule turns into step time)
  const cores = availableParallelism();
  const busy = (cpu: number, t: number) => `${((cpu / (cores * t)) * 100).toFixed(0)}%`;
  const ceiling = `${(((tOff - (cpuOn + hostOn) / cores) / hide) * 100).toFixed(0)}%`;
  rows.push([
    `${label}: ${cases[off].name}`,
    `${tOff.toFixed(2)} -> ${tOn.toFixed(2)} ms/step`,
    `hid ${(((tOff - tOn) / hide) * 100).toFixed(0)}% (step time: (off - on) / exposed)`,
    `exposed ${hide.toFixed(2)} ms per device, still stalled ${left.toFixed(2)} ms ` +
      `(timestamps: 1 - stalled / exposed = ${((1 - left / hide) * 100).toFixed(0)}%); ` +
      `threads' CPU ${cpuOff.toFixed(2)} -> ${cpuOn.toFixed(2)} ms/step, waiting for a core ${rqOff.toFixed(2)} -> ${rqOn.toFixed(2)} ms, ` +
      `host thread's CPU ${hostOff.toFixed(2)} -> ${hostOn.toFixed(2)} ms; ` +
      `cores busy ${busy(cpuOff + hostOff, tOff)} -> ${busy(cpuOn + hostOn, tOn)}, ceiling hid <= ${ceiling}; ` +
      `stalled in Dones by kind (waiting for posts / pulling, ms per device): ${doneByKind(samples[on])}`,
  ]);
}
const widths = [0, 1, 2].map((j) => Math.max(...rows.map((r) => r[j].length)));
console.log(
  `training parallelism (Transformer d${cfg.dModel} L${cfg.layers} seq ${cfg.seq} batch ${BATCH}, adamw; ` +
    `${availableParallelism()} cores, load ${load0.toFixed(1)} -> ${loadavg()[0].toFixed(1)}; medians of ${rounds} steps per case, ` +
    `interleaved in blocks of ${block})`,
);
for (const r of rows) console.log(r.map((x, j) => (j < 3 ? x.padEnd(widths[j]) : x)).join("  "));
