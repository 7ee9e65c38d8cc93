/**
 * @file The program test/parallel/distributed.test.ts starts under `mpirun -np N` (N processes of `devs` devices):
 * (scenario "collectives": also 2-d meshes, an MLP grad step, a mismatch and an early exit; "basic": collectives only;
 * "faults": the mismatch and the failures only; "sigkill": the last process is SIGKILLed while the others wait for it
 * in a psum); every result carries the transport the cross-process collectives used (shared memory or MPI)
 * runs collectives over meshes spanning the processes on the device runtime and the same calls on the single-process
 * emulation, and writes its results as JSON to <outDir>/result-<processIndex>.json (or prints them without outDir).
 * Usage: node mpi-worker.js <scenario> <devicesPerProcess> [outDir].
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { config } from "../../src/core/config.js";
const [scenario = "collectives", devs = "1", outDir = ""] = process.argv.slice(2);
config.update("numCpuDevices", Number(devs));
import {
  type Array,
  devicePut,
  devices,
  distributed,
  grad,
  jit,
  lax,
  loadSharded,
  localDevices,
  makeArrayFromCallback,
  makeArrayFromProcessLocalData,
  makeArrayFromSingleDeviceArrays,
  makeMesh,
  multihostUtils,
  numpy as jnp,
  optim,
  pmap,
  processCount,
  processIndex,
  saveSharded,
  shardMap,
  sharding,
  tree,
} from "../../src/index.js";
import { Mesh } from "../../src/parallel/mesh.js";
import { exchangeBytes, transportInfo } from "../../src/parallel/distributed.js";
import { reshardCases, reshardPrograms } from "./mpi-reshard-cases.js";
import { failNextLaunch, lastLaunchTimeline, mpiAddon } from "../../src/runtime/index.js";
import {
  type TransformerConfig,
  initParams,
  makeShardedTrainStep,
  makeTrainStep,
} from "../../src/models/transformer.js";
import type { Case } from "./mpi-case.js";
const { P, NamedSharding } = sharding;
const JSArray = globalThis.Array;

/** Writes this process's results (once). */
function report(): void {
  const text = JSON.stringify({ ...out, cases, transport: transportInfo() });
  if (outDir) writeFileSync(join(outDir, `result-${processIndex()}.json`), text);
  else console.log(text);
}

// tests of the two-level transport on one machine: process r claims host "h<r mod k>" (JAXTS_HOST_ID, read at initialize)
if (process.env.JAXTS_TEST_HOST_MOD)
  process.env.JAXTS_HOST_ID = `h${Number(process.env.OMPI_COMM_WORLD_RANK ?? 0) % Number(process.env.JAXTS_TEST_HOST_MOD)}`;
distributed.initialize();
const me = processIndex();
const out: Record<string, unknown> = {
  processIndex: me,
  processCount: processCount(),
  devices: devices().map((d) => [d.id, d.processIndex]),
  localDevices: localDevices().map((d) => d.id),
};
const cases: Case[] = [];
const flat = (x: Array): number[] => [x.tolist()].flat(Infinity) as number[];
const values = (shape: number[], dtype: "float32" | "int32"): Array => {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = JSArray.from({ length: n }, (_, i) =>
    dtype === "int32" ? ((i * 7919) % 201) - 100 : Math.sin(i * 1.37) * 10 + i * 0.01,
  );
  return jnp.reshape(jnp.array(v, { dtype }), shape);
};

/** g on the device runtime (collectives across processes) and on the emulation (this process alone). */
function both(name: string, g: () => Array): void {
  config.update("spmdRuntime", "emulation");
  const want = g();
  config.update("spmdRuntime", "devices");
  const before = lastLaunchTimeline();
  const got = g();
  config.update("spmdRuntime", "emulation");
  const tl = lastLaunchTimeline();
  cases.push({
    name,
    dtype: got.dtype,
    shape: [...got.shape],
    got: flat(got),
    want: flat(want),
    ranOn: tl === before ? [] : tl.map((t) => t.device),
  });
}

function collectives(mesh: Mesh, ax: string, tag: string): void {
  const n = mesh.axisSize(ax);
  const sm = (f: (b: Array) => Array, i: sharding.PartitionSpec, o: sharding.PartitionSpec, x: Array) => () =>
    shardMap(f, { mesh, inSpecs: i, outSpecs: o })(x);
  // every collective on int32 (exact) and float32 (the reductions equal within rounding, the moves exactly)
  for (const dt of ["float32", "int32"] as const) {
    const x = values([2 * n, 3], dt);
    both(
      `${tag} psum ${dt}`,
      sm((b) => lax.psum(b, ax), P(ax), P(), x),
    );
    both(
      `${tag} pmax ${dt}`,
      sm((b) => lax.pmax(b, ax), P(ax), P(), x),
    );
    both(
      `${tag} psumScatter ${dt}`,
      sm((b) => lax.psumScatter(b, ax, { tiled: true }), P(null, ax), P(ax), values([2 * n, 4 * n], dt)),
    );
    both(
      `${tag} allGather ${dt}`,
      sm((b) => lax.allGather(b, ax, { tiled: true }), P(ax), P(), x),
    );
    both(
      `${tag} allToAll ${dt}`,
      sm((b) => lax.allToAll(b, ax, 0, 1), P(null, ax), P(ax), values([n, 3 * n], dt)),
    );
    const shift = JSArray.from({ length: n }, (_, i) => [i, (i + 1) % n] as [number, number]);
    both(
      `${tag} ppermute ${dt}`,
      sm((b) => lax.ppermute(b, ax, shift), P(ax), P(ax), x),
    );
  }
  // mixed precision: float16 / bfloat16 sums (float32 accumulation, one rounding, on every transport) and an int16
  // gather, each exact
  for (const dt of ["float16", "bfloat16"] as const)
    both(
      `${tag} psum ${dt}`,
      sm((b) => lax.psum(b, ax), P(ax), P(), jnp.astype(values([2 * n, 3], "float32"), dt)),
    );
  both(
    `${tag} allGather int16`,
    sm((b) => lax.allGather(b, ax, { tiled: true }), P(ax), P(), jnp.astype(values([2 * n, 3], "int32"), "int16")),
  );
  // a psum read only by a replicated update: one AllReduceEpilogue (the cross-process communicator's default: reduce,
  // then the update on every process)
  both(`${tag} psum + SGD update float32`, () =>
    shardMap((w: Array, b: Array) => jnp.subtract(w, jnp.multiply(lax.psum(b, ax), 0.5)), {
      mesh,
      inSpecs: [P(), P(ax)],
      outSpecs: P(),
    })(values([2, 3], "float32"), values([2 * n, 3], "float32")),
  );
}

/**
 * jit with shardings (GSPMD) over a mesh spanning processes: host inputs (every process holds the global values; the
 * outputs are assembled) and global arrays (the jit takes the shardings they carry; the outputs stay global), each
 * against the same function run unsharded in this process.
 */
function jitSharded(mesh: Mesh, ax: string): void {
  const n = mesh.axisSize(ax);
  const f = (x: Array, w: Array): Array[] => {
    const h = jnp.tanh(jnp.matmul(x, w));
    return [jnp.sum(h, 0), jnp.multiply(h, 2)];
  };
  const x = values([2 * n, 3], "float32"),
    w = jnp.multiply(values([3, 4], "float32"), 0.1);
  const want = f(x, w);
  const row = new NamedSharding(mesh, P(ax)),
    rep = new NamedSharding(mesh, P());
  const jf = jit(f, { inShardings: [row, rep], outShardings: [rep, row] });
  config.update("spmdRuntime", "devices");
  const before = lastLaunchTimeline();
  const got = jf(x, w) as Array[];
  const ranOn = lastLaunchTimeline() === before ? [] : lastLaunchTimeline().map((t) => t.device);
  // global arrays: this process's rows (its devices' blocks) and the replicated w
  const mine = localDevices()
    .map((d) => mesh.deviceIds.indexOf(d.id))
    .filter((k) => k >= 0);
  const gx = makeArrayFromProcessLocalData(row, lax.sliceInDim(x, 2 * mine[0], 2 * (mine[mine.length - 1] + 1), 1, 0));
  const gw = makeArrayFromProcessLocalData(rep, w);
  const gb = lastLaunchTimeline();
  const gy = jit(f)(gx, gw) as Array[];
  const gRanOn = lastLaunchTimeline() === gb ? [] : lastLaunchTimeline().map((t) => t.device);
  config.update("spmdRuntime", "emulation");
  got.forEach((g, k) =>
    cases.push({
      name: `jit sharded out ${k}`,
      dtype: g.dtype,
      shape: [...g.shape],
      got: flat(g),
      want: flat(want[k]),
      ranOn,
    }),
  );
  gy.forEach((g, k) => {
    const all = multihostUtils.processAllgather(g) as Array;
    cases.push({
      name: `global jit sharded out ${k}`,
      dtype: all.dtype,
      shape: [...all.shape],
      got: flat(all),
      want: flat(want[k]),
      ranOn: gRanOn,
      spans: spans(g),
    });
  });
}

/** The message f throws, or "no error". */
function catchMessage(f: () => unknown): string {
  try {
    f();
    return "no error";
  } catch (e) {
    return (e as Error).message;
  }
}

/** Whether reading x's value is refused (a global array spanning processes). */
function spans(x: Array): boolean {
  try {
    x.tolist();
    return false;
  } catch {
    return true;
  }
}

/**
 * A function of global arrays on the device runtime, gathered with processAllgather, vs the same function of the
 * global values on the emulation (this process alone).
 */
function bothGlobal(name: string, onDevices: () => Array, onEmulation: () => Array): void {
  config.update("spmdRuntime", "emulation");
  const want = onEmulation();
  config.update("spmdRuntime", "devices");
  const before = lastLaunchTimeline();
  const y = onDevices();
  const tl = lastLaunchTimeline();
  config.update("spmdRuntime", "emulation");
  const got = multihostUtils.processAllgather(y) as Array;
  cases.push({
    name,
    dtype: got.dtype,
    shape: [...got.shape],
    got: flat(got),
    want: flat(want),
    ranOn: tl === before ? [] : tl.map((t) => t.device),
    spans: spans(y),
  });
}

/** Global arrays with process-local shards: built three ways, inspected, gathered, and fed to shardMap and pmap. */
function globalArrays(): Record<string, unknown> {
  const all = devices(),
    n = all.length,
    k = localDevices().length;
  const res: Record<string, unknown> = {};
  const mesh = makeMesh([n], ["i"]);
  const full = values([2 * n, 3], "float32");
  // this process's devices are contiguous in the mesh: its rows of the global value
  const lo = 2 * all.findIndex((d) => d.processIndex === me);
  const x = makeArrayFromProcessLocalData(new NamedSharding(mesh, P("i")), lax.sliceInDim(full, lo, lo + 2 * k, 1, 0));
  res.shape = [...x.shape];
  res.shards = (x.addressableShards as { device: { id: number }; index: [number, number][]; data: Array }[]).map(
    (sh) => [sh.device.id, sh.index, flat(sh.data)],
  );
  res.full = flat(full);
  res.gathered = flat(multihostUtils.processAllgather(x) as Array);
  try {
    x.tolist();
    res.readError = "no error";
  } catch (e) {
    res.readError = (e as Error).message;
  }
  const sm = shardMap((b: Array) => [jnp.multiply(jnp.sin(b), 2), lax.psum(b, "i")], {
    mesh,
    inSpecs: P("i"),
    outSpecs: [P("i"), P()],
  });
  const outs = (v: Array) => sm(v) as Array[];
  bothGlobal(
    "global shardMap sin",
    () => outs(x)[0],
    () => outs(full)[0],
  );
  bothGlobal(
    "global shardMap psum",
    () => outs(x)[1],
    () => outs(full)[1],
  );
  // pmap over the rows of a global [n, 3]
  const rows = values([n, 3], "int32");
  const xr = makeArrayFromProcessLocalData(
    new NamedSharding(mesh, P("i")),
    lax.sliceInDim(rows, lo / 2, lo / 2 + k, 1, 0),
  );
  const pm = pmap((b: Array) => lax.psum(b, "i"), { axisName: "i" });
  bothGlobal(
    "global pmap psum",
    () => pm(xr) as Array,
    () => pm(rows) as Array,
  );
  // a 2-d mesh (processes x local devices): blocks given per device, or made by a callback on this process only
  const m2 = makeMesh([processCount(), k], ["p", "d"]);
  const s2 = new NamedSharding(m2, P("p", "d"));
  const full2 = values([2 * processCount(), 2 * k], "float32");
  const blockAt = (ix: [number, number][]) =>
    lax.sliceInDim(lax.sliceInDim(full2, ix[0][0], ix[0][1], 1, 0), ix[1][0], ix[1][1], 1, 1);
  const idx = [...s2.devicesIndicesMap(full2.shape).entries()].filter(([d]) => d.processIndex === me);
  const x2 = makeArrayFromSingleDeviceArrays(
    full2.shape,
    s2,
    idx.map(([, ix]) => blockAt(ix)),
  );
  let calls = 0;
  const x3 = makeArrayFromCallback(full2.shape, s2, (ix) => {
    calls++;
    return blockAt(ix);
  });
  res.callbackCalls = calls;
  res.gathered2 = [
    flat(multihostUtils.processAllgather(x2) as Array),
    flat(multihostUtils.processAllgather(x3) as Array),
  ];
  res.full2 = flat(full2);
  const psumD = shardMap((b: Array) => lax.psum(b, "d"), { mesh: m2, inSpecs: P("p", "d"), outSpecs: P("p") });
  bothGlobal(
    "global 2-d psum over d",
    () => psumD(x2) as Array,
    () => psumD(full2) as Array,
  );
  const psumPD = shardMap((b: Array) => lax.psum(b, ["p", "d"]), { mesh: m2, inSpecs: P("p", "d"), outSpecs: P() });
  bothGlobal(
    "global 2-d psum over p+d",
    () => psumPD(x3) as Array,
    () => psumPD(full2) as Array,
  );
  // a training-like loop: one closure fed its own global outputs (a repeated call reuses its call plan and keeps the
  // outputs as placed), once with an argument laid out otherwise (replicated: resharded for that call only)
  const upd = shardMap((w: Array, b: Array) => [jnp.add(w, lax.psum(b, "i")), jnp.multiply(b, 0.5)], {
    mesh,
    inSpecs: [P(), P("i")],
    outSpecs: [P(), P("i")],
  });
  const loop = (w0: Array, b0: Array, bOther: Array): Array => {
    let [w, b] = [w0, b0];
    for (let i = 0; i < 3; i++) [w, b] = upd(w, b) as Array[];
    [w] = upd(w, bOther) as Array[];
    for (let i = 0; i < 2; i++) [w, b] = upd(w, b) as Array[];
    return w;
  };
  const w0 = values([2, 3], "float32");
  bothGlobal(
    "global shardMap psum, repeated calls",
    () =>
      loop(
        makeArrayFromProcessLocalData(new NamedSharding(mesh, P()), w0),
        x,
        makeArrayFromProcessLocalData(new NamedSharding(mesh, P()), full),
      ),
    () => loop(w0, full, full),
  );
  // a global array laid out otherwise than the in_specs ask: its blocks move between processes first
  const rep = shardMap((b: Array) => jnp.sin(b), { mesh, inSpecs: P(), outSpecs: P() });
  bothGlobal(
    "global shardMap resharded",
    () => rep(x) as Array,
    () => rep(full) as Array,
  );
  return res;
}

/** A collective whose shapes differ between processes (every process fails naming both sides), then one that works. */
function mismatch(all: ReturnType<typeof devices>): void {
  // a collective whose shapes differ between processes: every process fails naming the kinds and shapes
  const mesh = makeMesh([all.length], ["i"]);
  config.update("spmdRuntime", "devices");
  try {
    shardMap((b: Array) => lax.psum(me === 0 ? b : jnp.concatenate([b, b]), "i"), {
      mesh,
      inSpecs: P("i"),
      outSpecs: P(),
    })(values([2 * all.length, 3], "float32"));
    out.mismatch = "no error";
  } catch (e) {
    out.mismatch = (e as Error).message;
  }
  // the next collective works again
  out.after = flat(
    shardMap((b: Array) => lax.psum(b, "i"), { mesh, inSpecs: P("i"), outSpecs: P() })(
      jnp.ones([all.length, 2], { dtype: "int32" }),
    ),
  );
}

/**
 * A device failing on process 0, process 1 raising in its shardMap body, then process 1 leaving early: each fails
 * naming the process and ranks (at once, or within the 1500 ms timeout); the collective after the device failure works.
 */
function failures(all: ReturnType<typeof devices>): void {
  const mesh = makeMesh([all.length], ["i"]);
  config.update("spmdRuntime", "devices");
  // a device failing on process 0 (its rank 0, the leader there): every process fails at once, well before the
  // 60 s timeout, naming the failed device and rank; the next collective works
  config.update("collectiveTimeoutMs", 60_000);
  if (me === 0) failNextLaunch(0);
  const tf = Date.now();
  try {
    shardMap((b: Array) => lax.psum(b, "i"), { mesh, inSpecs: P("i"), outSpecs: P() })(jnp.ones([all.length, 2]));
    out.deviceFail = "no error";
  } catch (e) {
    out.deviceFail = (e as Error).message;
  }
  out.deviceFailMs = Date.now() - tf;
  out.afterFail = flat(
    shardMap((b: Array) => lax.psum(b, "i"), { mesh, inSpecs: P("i"), outSpecs: P() })(
      jnp.ones([all.length, 2], { dtype: "int32" }),
    ),
  );
  // process 1 raises (in its shardMap body) and never launches: process 0 fails at its timeout naming process 1
  config.update("collectiveTimeoutMs", 1500);
  const tr = Date.now();
  try {
    shardMap(
      (b: Array) => {
        if (me === 1) throw new Error("user error on process 1");
        return lax.psum(b, "i");
      },
      { mesh, inSpecs: P("i"), outSpecs: P() },
    )(jnp.ones([all.length, 2]));
    out.raised = "no error";
  } catch (e) {
    out.raised = (e as Error).message;
  }
  out.raisedMs = Date.now() - tr;
  // process 1 leaves early; the others' next collective fails naming it within the timeout
  if (me === 1) {
    report();
    process.exit(0);
  }
  config.update("collectiveTimeoutMs", 1500);
  const t0 = Date.now();
  try {
    shardMap((b: Array) => lax.psum(b, "i"), { mesh, inSpecs: P("i"), outSpecs: P() })(jnp.ones([all.length, 2]));
    out.early = "no error";
  } catch (e) {
    out.early = (e as Error).message;
  }
  out.earlyMs = Date.now() - t0;
  // resharding with process 1 gone: devicePut (its agreement step) and the point-to-point exchange itself fail at
  // the timeout naming process 1
  const gx = makeArrayFromCallback([2 * all.length, 3], new NamedSharding(mesh, P("i")), () => jnp.ones([2, 3]));
  const t1 = Date.now();
  out.reshardDead = [
    catchMessage(() => devicePut(gx, new NamedSharding(mesh, P()))),
    catchMessage(() => exchangeBytes([new Uint8Array(0), new Uint8Array(8)], [0, 8], "reshard exchange")),
  ];
  out.reshardDeadMs = Date.now() - t1;
}

try {
  const all = devices();
  if (scenario === "basic") {
    collectives(makeMesh([all.length], ["i"]), "i", "1-d");
    jitSharded(makeMesh([all.length], ["i"]), "i");
    // meshes over some processes only: the others take part in the output exchange (spanning) or compute alone
    const two = new Mesh(all.slice(0, 2), "s"),
      one = new Mesh(all.slice(0, 1), "s");
    both("psum over processes 0 and 1", () =>
      shardMap((b: Array) => lax.psum(b, "s"), { mesh: two, inSpecs: P("s"), outSpecs: P("s") })(
        values([4, 3], "int32"),
      ),
    );
    both("psum within process 0", () =>
      shardMap((b: Array) => lax.psum(b, "s"), { mesh: one, inSpecs: P("s"), outSpecs: P() })(values([2, 3], "int32")),
    );
    both("pmap psum int32", () =>
      pmap((b: Array) => lax.psum(b, "i"), { axisName: "i" })(values([all.length, 3], "int32")),
    );
    out.allgather = (multihostUtils.processAllgather(jnp.add(jnp.arange(3), me * 10)) as Array).tolist();
    multihostUtils.syncGlobalDevices("after collectives");
    out.global = globalArrays();
    out.reshard = { ...reshardCases(), programs: reshardPrograms() };
  } else if (scenario === "collectives") {
    collectives(makeMesh([all.length], ["i"]), "i", "1-d");
    jitSharded(makeMesh([all.length], ["i"]), "i");
    if (Number(devs) > 1) {
      // processes x local devices: 'p' crosses processes, 'd' stays within one, both is hierarchical
      const mesh = makeMesh([processCount(), Number(devs)], ["p", "d"]);
      const x = values([4 * processCount(), 3], "float32");
      for (const axes of [["p"], ["d"], ["p", "d"]]) {
        both(`2-d psum over ${axes.join("+")}`, () =>
          shardMap((b: Array) => lax.psum(b, axes), {
            mesh,
            inSpecs: P(["p", "d"]),
            outSpecs: P(axes.length === 2 ? null : axes[0] === "p" ? "d" : "p"),
          })(x),
        );
      }
    }
    // exchanges over the segment per psum across processes: a small one (<= 64 KiB) travels with its header (1), a
    // larger one that fits a mailbox takes the header and one direct exchange (2); both equal the emulation
    const m1 = makeMesh([all.length], ["i"]);
    out.psumExchanges = [6, 20000].map((k) => {
      const e0 = transportInfo().exchanges;
      both(`psum of ${k} float32 per device`, () =>
        shardMap((b: Array) => lax.psum(b, "i"), { mesh: m1, inSpecs: P("i"), outSpecs: P() })(
          values([all.length * k], "float32"),
        ),
      );
      return transportInfo().exchanges - e0;
    });
    // the direct all-reduce (past the small size, within a mailbox) with odd counts: shares at unaligned offsets;
    // float values on a 1/4 grid (every sum exact in any order) so the test compares bits
    for (const [name, k, dtype] of [
      ["direct psum", 20001, "float32"],
      ["direct pmax", 20001, "float32"],
      ["direct psum", 30001, "int32"],
    ] as const) {
      const v = values([all.length * k], dtype);
      const x = dtype === "float32" ? jnp.divide(jnp.round(jnp.multiply(v, 4)), 4) : v;
      both(`${name} of ${k} ${dtype} per device`, () =>
        shardMap((b: Array) => (name === "direct pmax" ? lax.pmax(b, "i") : lax.psum(b, "i")), {
          mesh: m1,
          inSpecs: P("i"),
          outSpecs: P(),
        })(x),
      );
    }
    // a psum past the small size read only by an SGD update (one AllReduceEpilogue): the update evaluated inside the
    // direct exchange's fold (each process on its own share) when the switch allows; values on a 1/4 grid and a
    // step of 0.5, so every result is exact and the test compares bits with the emulation (psum, then the update)
    {
      const k = 20001;
      const g = jnp.divide(jnp.round(jnp.multiply(values([all.length * k], "float32"), 4)), 4);
      const w = jnp.divide(jnp.round(jnp.multiply(jnp.flip(values([k], "float32"), 0), 4)), 4);
      const f0 = transportInfo().fusedEpilogues ?? 0,
        o0 = transportInfo().onePassEpilogues ?? 0;
      both(`direct psum + SGD update of ${k} float32 per device`, () =>
        shardMap((wv: Array, b: Array) => jnp.subtract(wv, jnp.multiply(lax.psum(b, "i"), 0.5)), {
          mesh: m1,
          inSpecs: [P(), P("i")],
          outSpecs: P(),
        })(w, g),
      );
      out.fusedEpilogues = (transportInfo().fusedEpilogues ?? 0) - f0;
      out.onePassEpilogues = (transportInfo().onePassEpilogues ?? 0) - o0;
      // again after a pause past JAXTS_MPI_SHM_NT_US (1 ms): the mailbox counts as cold, so the exchange streams (the
      // put, the update stored straight into the output and the mailbox, the take), with the same bits
      const streamed = () => mpiAddon().api?.mpiShmInfo().profile?.streamed ?? 0;
      const s0 = streamed();
      const until = performance.now() + 5;
      while (performance.now() < until);
      both(`direct psum + SGD update of ${k} float32 per device, streamed`, () =>
        shardMap((wv: Array, b: Array) => jnp.subtract(wv, jnp.multiply(lax.psum(b, "i"), 0.5)), {
          mesh: m1,
          inSpecs: [P(), P("i")],
          outSpecs: P(),
        })(w, g),
      );
      out.streamedExchanges = streamed() - s0;
      // the add form with the scale on the left (`w + 0.25 * psum`): the same one-pass kernel, other operand orders
      const o1 = transportInfo().onePassEpilogues ?? 0;
      both(`direct psum + update w + 0.25 * psum of ${k} float32 per device`, () =>
        shardMap((wv: Array, b: Array) => jnp.add(wv, jnp.multiply(0.25, lax.psum(b, "i"))), {
          mesh: m1,
          inSpecs: [P(), P("i")],
          outSpecs: P(),
        })(w, g),
      );
      out.onePassAddForm = (transportInfo().onePassEpilogues ?? 0) - o1;
    }
    // a bfloat16 psum past the small size (widened to float32 across processes: the reduce-scatter and all-gather)
    both("psum of 40000 bfloat16 per device", () =>
      shardMap((b: Array) => lax.psum(b, "i"), { mesh: m1, inSpecs: P("i"), outSpecs: P() })(
        jnp.astype(values([all.length * 40000], "int32"), "bfloat16"),
      ),
    );
    // data-parallel MLP grad step over one device per process vs the whole batch in this process
    const dp = new Mesh(
      JSArray.from({ length: processCount() }, (_, q) => all.find((d) => d.processIndex === q)!),
      "data",
    );
    const w1 = values([5, 8], "float32"),
      w2 = values([8, 2], "float32");
    const xb = values([4 * processCount(), 5], "float32"),
      yb = values([4 * processCount(), 2], "float32");
    const loss = (p: Array[], x: Array, y: Array): Array => {
      const h = jnp.tanh(jnp.matmul(x, jnp.multiply(p[0], 0.05)));
      return jnp.mean(jnp.square(jnp.subtract(jnp.matmul(h, jnp.multiply(p[1], 0.05)), jnp.multiply(y, 0.01))));
    };
    const step = shardMap((p: Array[], x: Array, y: Array) => grad(loss)(p, x, y).map((g) => lax.pmean(g, "data")), {
      mesh: dp,
      inSpecs: [P(), P("data"), P("data")],
      outSpecs: P(),
    });
    config.update("spmdRuntime", "devices");
    const before = lastLaunchTimeline();
    const gd = step([w1, w2], xb, yb) as Array[];
    const ranOn = lastLaunchTimeline() === before ? [] : lastLaunchTimeline().map((t) => t.device);
    config.update("spmdRuntime", "emulation");
    const g1 = grad(loss)([w1, w2], xb, yb);
    gd.forEach((g, k) =>
      cases.push({
        name: `mlp grad ${k}`,
        dtype: g.dtype,
        shape: [...g.shape],
        got: flat(g),
        want: flat(g1[k]),
        ranOn,
      }),
    );
    // the same step on a global batch (each process holds its 4 rows only): global grads, replicated
    const dsh = new NamedSharding(dp, P("data"));
    const xg = makeArrayFromProcessLocalData(dsh, lax.sliceInDim(xb, 4 * me, 4 * me + 4, 1, 0));
    const yg = makeArrayFromProcessLocalData(dsh, lax.sliceInDim(yb, 4 * me, 4 * me + 4, 1, 0));
    config.update("spmdRuntime", "devices");
    const beforeG = lastLaunchTimeline();
    const gg = step([w1, w2], xg, yg) as Array[];
    const ranOnG = lastLaunchTimeline() === beforeG ? [] : lastLaunchTimeline().map((t) => t.device);
    config.update("spmdRuntime", "emulation");
    gg.forEach((g, k) =>
      cases.push({
        name: `mlp global grad ${k}`,
        dtype: g.dtype,
        shape: [...g.shape],
        got: flat(multihostUtils.processAllgather(g) as Array),
        want: flat(g1[k]),
        ranOn: ranOnG,
        spans: spans(g),
      }),
    );
    out.allgather = (multihostUtils.processAllgather(jnp.add(jnp.arange(3), me * 10)) as Array).tolist();
    multihostUtils.syncGlobalDevices("after collectives");
    out.global = globalArrays();
    out.reshard = { ...reshardCases(), programs: reshardPrograms() };
    mismatch(all);
    // a data x tensor parallel Transformer step over a global (2, 2) mesh (data across the processes, model within
    // each) vs the single-device step in this process alone
    {
      const cfg: TransformerConfig = { vocab: 16, dModel: 16, heads: 2, layers: 2, seq: 8, ff: 32 };
      const toks = JSArray.from({ length: 4 }, (_, b) =>
        JSArray.from({ length: cfg.seq }, (_, i) => (b * 7 + i * 3 + 3) % cfg.vocab),
      );
      const tx = jnp.array(toks, { dtype: "int32" }),
        ty = jnp.array(
          toks.map((r) => r.map((_, i) => r[Math.max(0, i - 2)])),
          { dtype: "int32" },
        );
      const params = initParams(cfg, 2);
      const opt = optim.sgd(0.1);
      const [l1, p1] = makeTrainStep(cfg, opt, null)(params, opt.init(params), tx, ty);
      config.update("spmdRuntime", "devices");
      const before = lastLaunchTimeline();
      const m2 = makeMesh([2, 2], ["data", "model"]);
      const [l2, p2] = makeShardedTrainStep(cfg, opt, m2)(params, opt.init(params), tx, ty);
      const ranOnT = lastLaunchTimeline() === before ? [] : lastLaunchTimeline().map((t) => t.device);
      config.update("spmdRuntime", "emulation");
      const got = [l2, ...(tree.leaves(p2) as Array[])].flatMap(flat),
        want = [l1, ...(tree.leaves(p1) as Array[])].flatMap(flat);
      cases.push({ name: "transformer dxt step", dtype: "float32", shape: [got.length], got, want, ranOn: ranOnT });
      config.update("spmdRuntime", "devices");
    }
    failures(all);
  } else if (scenario === "faults") {
    mismatch(all);
    failures(all);
  } else if (scenario === "outofstep") {
    // process 0's program has two psums, process 1's one psum and then (a second shardMap) an allGather: process 0
    // waits at collective #1 of its launch, process 1 at collective #0 of the next launch. Both fail naming the
    // other side's position (and kind) well before the 20 s timeout, instead of timing out.
    config.update("spmdRuntime", "devices");
    config.update("collectiveTimeoutMs", 20_000);
    const mesh = makeMesh([all.length], ["i"]);
    // global-array inputs: the outputs stay global (no host-side assembly after a launch)
    const sh = new NamedSharding(mesh, P("i"));
    const x = makeArrayFromProcessLocalData(sh, jnp.ones([1, 2], { dtype: "int32" }));
    const y = makeArrayFromProcessLocalData(sh, jnp.ones([1, 3], { dtype: "float32" }));
    const t0 = Date.now();
    try {
      shardMap((b: Array) => (me === 0 ? lax.psum(lax.psum(b, "i"), "i") : lax.psum(b, "i")), {
        mesh,
        inSpecs: P("i"),
        outSpecs: P(),
      })(x);
      if (me !== 0)
        shardMap((b: Array) => lax.allGather(b, "i", { tiled: true }), { mesh, inSpecs: P("i"), outSpecs: P() })(y);
      out.outOfStep = "no error";
    } catch (e) {
      out.outOfStep = (e as Error).message;
    }
    out.outOfStepMs = Date.now() - t0;
  } else if (scenario === "sigkill") {
    // the last process is killed (SIGKILL, by a shell timer) while the others wait for it in a psum: they fail at
    // their 1500 ms timeout naming it and its rank, then a psum over the survivors still works
    config.update("spmdRuntime", "devices");
    const mesh = makeMesh([all.length], ["i"]);
    const psum = () =>
      (
        shardMap((b: Array) => lax.psum(b, "i"), { mesh, inSpecs: P("i"), outSpecs: P() })(
          jnp.ones([all.length, 2], { dtype: "int32" }),
        ) as Array
      ).tolist() as number[][];
    out.before = psum().flat();
    const last = processCount() - 1;
    if (me === last) {
      report();
      spawnSync("sh", ["-c", `kill -9 ${process.pid}`]);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30_000);
    }
    config.update("collectiveTimeoutMs", 1500);
    const t0 = Date.now();
    try {
      psum();
      out.killed = "no error";
    } catch (e) {
      out.killed = (e as Error).message;
    }
    out.killedMs = Date.now() - t0;
    // the survivors go on among themselves with global arrays (no exchange with the dead process)
    const survivors = new Mesh(all.slice(0, last), "s");
    const g = makeArrayFromProcessLocalData(
      new NamedSharding(survivors, P("s")),
      jnp.full([1, 2], me + 1, { dtype: "int32" }),
    );
    const sum = shardMap((b: Array) => lax.psum(b, "s"), { mesh: survivors, inSpecs: P("s"), outSpecs: P("s") })(g);
    out.afterKill = ((sum as Array).addressableShards as { data: Array }[])[0].data.tolist();
  } else if (scenario === "ckpt-save" || scenario === "ckpt-load") {
    // a sharded checkpoint saved by 2 processes (3 rows of w each) and loaded by 3 (2 rows each) or by 1
    const dir = process.env.JAXTS_TEST_CKPT_DIR!;
    const mesh = makeMesh([all.length], ["i"]);
    const w = values([6, 3], "float32");
    if (scenario === "ckpt-save") {
      const rows = 6 / all.length;
      saveSharded(dir, {
        w: makeArrayFromProcessLocalData(
          new NamedSharding(mesh, P("i")),
          lax.sliceInDim(w, rows * me, rows * me + rows, 1, 0),
        ),
        r: makeArrayFromProcessLocalData(new NamedSharding(mesh, P()), values([2, 2], "int32")),
        step: jnp.array([7], { dtype: "int32" }),
      });
      out.saved = true;
    } else {
      const got = loadSharded(dir, {
        w: new NamedSharding(mesh, P("i")),
        r: new NamedSharding(mesh, P()),
        step: jnp.zeros([1]),
      }) as { w: Array; r: Array; step: Array };
      out.loaded = {
        w: flat(multihostUtils.processAllgather(got.w) as Array),
        r: flat(multihostUtils.processAllgather(got.r) as Array),
        step: flat(got.step),
        wShards: (got.w.addressableShards as { device: { id: number }; index: [number, number][] }[]).map((sh) => [
          sh.device.id,
          sh.index,
        ]),
        spans: spans(got.w),
      };
    }
  } else {
    throw new Error(`mpi-worker: unknown scenario ${scenario}`);
  }
} catch (e) {
  out.error = (e as Error).stack ?? String(e);
}
report();
