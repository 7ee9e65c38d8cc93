/**
 * @file Collectives overlapped with compute (jaxts.async CollectiveStart/CollectiveDone from withCollectiveOverlap):
 * the same values as the synchronous collectives for every kind, float32 and int32, on 2 and 4 devices, under scan,
 * grad and remat; the Start runs in program order before the compute it overlaps; faults end in errors, not hangs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { withEnv } from "../helpers/env.js";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, checkpoint, grad, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import { GraphBuilder } from "../../src/backends/onnx/graph-builder.js";
import {
  DeviceBuffer,
  deviceProgram,
  deviceRuntimeUnavailable,
  failNextLaunch,
  launchSync,
  openRendezvous,
  runtimeDevice,
  setLaunchObserver,
  synchronize,
  type LaunchRecord,
} from "../../src/runtime/index.js";
import {
  asyncScheduleOptions,
  collectiveOverlapKey,
  withCollectiveOverlap,
} from "../../src/parallel/overlap-collectives.js";
import { values } from "./device-compare.js";
import { setDeviceProgramObserver } from "../../src/parallel/shard-map-devices.js";
import { compileOptions } from "../../src/compiler/compile.js";
import { nativeGemmKernel } from "../../src/backends/onnx/ort-runtime.js";
import type { Mesh } from "../../src/parallel/mesh.js";
const { P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;

/** How a run executes its collectives: sync on the devices, overlapped (mailbox or communication thread), or the emulation. */
type Mode = "off" | "mailbox" | "thread" | "emulation";
const MODES: readonly Mode[] = ["off", "mailbox", "thread", "emulation"];

/** Runs f under JAXTS_ASYNC_COLLECTIVES=thread (the native ops read it at each CollectiveStart), then restores it. */
function withThreadMode<T>(f: () => T): T {
  return withEnv("JAXTS_ASYNC_COLLECTIVES", "thread", () => {
    const r = f();
    synchronize();
    return r;
  });
}

/** Runs f under JAXTS_ASYNC_SELECT=every (the pass splits every collective; read when a program is staged). */
function withEverySplit<T>(f: () => T): T {
  return withEnv("JAXTS_ASYNC_SELECT", "every", f);
}

/** f's outputs in each mode (`modes`), and the collectives each device launch recorded, per mode. */
function runModes(
  f: () => Array | Array[],
  modes: readonly Mode[] = MODES,
): { outs: Map<Mode, Float64Array[]>; recs: Map<Mode, LaunchRecord[]> } {
  const saved = config.spmdRuntime;
  const outs = new Map<Mode, Float64Array[]>(),
    recs = new Map<Mode, LaunchRecord[]>();
  try {
    for (const mode of modes) {
      config.update("spmdRuntime", mode === "emulation" ? "emulation" : "devices");
      const rs: LaunchRecord[] = [];
      const prev = setLaunchObserver((r) => rs.push(r));
      try {
        // every collective asynchronous (JAXTS_ASYNC_SELECT=every): these runs test the native async ops, not the
        // pass's cost model (which keeps large mailbox all-reduces synchronous)
        const call = () => withEverySplit(() => withCollectiveOverlap(mode === "mailbox" || mode === "thread", f));
        const r = mode === "thread" ? withThreadMode(call) : call();
        outs.set(
          mode,
          (globalThis.Array.isArray(r) ? r : [r]).map((a) => Float64Array.from(a.dataSync() as Float32Array)),
        );
        synchronize();
      } finally {
        setLaunchObserver(prev);
      }
      recs.set(mode, rs);
    }
  } finally {
    config.update("spmdRuntime", saved);
  }
  return { outs, recs };
}

/**
 * Bit-identical outputs in every mode (the emulation's too; `emulation` false: not run), the overlapped runs'
 * collectives all asynchronous (0 <= wait <= end - start, ready by the end) and the off-run's synchronous.
 */
function sameAsync(what: string, f: () => Array | Array[], expectAsync = true, emulation = true): void {
  const { outs, recs } = runModes(f, emulation ? MODES : ["off", "mailbox", "thread"]);
  const off = outs.get("off")!;
  for (const mode of emulation ? (["mailbox", "thread", "emulation"] as const) : (["mailbox", "thread"] as const)) {
    const got = outs.get(mode)!;
    assert.equal(got.length, off.length, `${what} (${mode})`);
    off.forEach((o, i) => assert.deepEqual(got[i], o, `${what} (${mode}): output ${i}`));
  }
  const colls = (m: Mode) => recs.get(m)!.flatMap((r) => r.collectives.flat());
  const collsOff = colls("off");
  assert.ok(collsOff.length > 0, `${what}: the program ran collectives on the devices`);
  assert.ok(
    collsOff.every((c) => c.wait === -1),
    `${what}: synchronous without overlap`,
  );
  if (expectAsync)
    for (const mode of ["mailbox", "thread"] as const) {
      const collsOn = colls(mode);
      assert.ok(
        collsOn.length === collsOff.length &&
          collsOn.every((c) => c.wait >= 0 && c.wait <= c.end - c.start + 1e-3 && c.ready <= c.end + 1e-3),
        `${what}: asynchronous with overlap (${mode}): ${collsOn.map((c) => `${c.kind}:${c.wait}`).join(" ")}`,
      );
    }
}

for (const n of [2, 3, 4]) {
  test(
    `every collective kind, float32 and int32, gives the same values asynchronously on ${n} devices (mailbox, thread, emulation)`,
    { skip },
    () => {
      const mesh = makeMesh([n], ["x"]);
      const sm = (f: (b: Array) => Array[], outSpecs: sharding.PartitionSpec[], x: Array) => () =>
        shardMap(f, { mesh, inSpecs: P("x"), outSpecs })(x) as Array[];
      for (const dt of ["float32", "int32"] as const) {
        const x = values([2 * n, 3], dt);
        sameAsync(
          `reductions ${dt}`,
          sm((b) => [lax.psum(b, "x"), lax.pmax(b, "x"), lax.pmin(jnp.multiply(b, 3), "x")], [P(), P(), P()], x),
        );
        sameAsync(
          `all_gather ${dt}`,
          sm(
            (b) => [lax.allGather(b, "x", { tiled: true }), lax.allGather(jnp.add(b, 1), "x", { axis: 1 })],
            [P(), P()],
            x,
          ),
        );
        sameAsync(
          `psum_scatter ${dt}`,
          sm((b) => [lax.psumScatter(jnp.tile(b, [n, 1]), "x", { tiled: true })], [P("x")], x),
        );
        sameAsync(
          `all_to_all and ppermute ${dt}`,
          sm(
            (b) => [
              lax.allToAll(jnp.tile(b, [n, 1]), "x", 0, 0, { tiled: true }),
              lax.ppermute(
                b,
                "x",
                globalThis.Array.from({ length: n }, (_, i): [number, number] => [i, (i + 1) % n]),
              ),
            ],
            [P("x"), P("x")],
            x,
          ),
        );
      }
    },
  );
}

/** Two-layer sharded-parameter loss: each layer's weight all-gathered before use (the ZeRO-3 pattern). */
function gatheredLoss(mesh: Mesh, remat: boolean) {
  const layer = (w: Array, h: Array): Array => jnp.tanh(jnp.matmul(h, lax.allGather(w, "x", { tiled: true })));
  const f = remat ? checkpoint(layer) : layer;
  return shardMap(
    (w1: Array, w2: Array, x: Array) =>
      grad((ws: Array[]) => lax.psum(jnp.sum(f(ws[1], f(ws[0], x))), "x"))([w1, w2]) as unknown as Array[],
    { mesh, inSpecs: [P("x"), P("x"), P("x")], outSpecs: [P("x"), P("x")] },
  );
}

test("grad through gathered layers, with and without remat, on 2 and 4 devices: the same gradients", { skip }, () => {
  for (const n of [2, 4]) {
    const mesh = makeMesh([n], ["x"]);
    const w1 = jnp.multiply(values([4, 4], "float32"), 0.05),
      w2 = jnp.multiply(values([4, 4], "float32"), -0.03),
      x = jnp.multiply(values([2 * n, 4], "float32"), 0.1);
    for (const remat of [false, true])
      sameAsync(`grad on ${n}, remat ${remat}`, () => gatheredLoss(mesh, remat)(w1, w2, x) as unknown as Array[]);
  }
});

test("collectives inside scan keep their values (scan bodies stay synchronous)", { skip }, () => {
  const mesh = makeMesh([4], ["x"]);
  const x = values([8, 3], "float32");
  const body = (b: Array) =>
    lax.scan((c: Array, _: Array) => [jnp.add(c, lax.psum(c, "x")), lax.allGather(c, "x", { tiled: true })], b, null, {
      length: 3,
    }) as unknown as Array[];
  sameAsync("scan", () => shardMap(body, { mesh, inSpecs: P("x"), outSpecs: [P("x"), P("x")] })(x) as Array[], false);
});

test(
  "the pass posts every gather before the first layer (mailbox) or one ahead (thread), values unchanged",
  { skip },
  () => {
    const mesh = makeMesh([2], ["x"]);
    const w = values([4, 4], "float32"),
      x = values([4, 4], "float32");
    const three = shardMap(
      (a: Array, b: Array, c: Array, h: Array) => {
        for (const p of [a, b, c]) h = jnp.tanh(jnp.matmul(h, lax.allGather(p, "x", { tiled: true })));
        return h;
      },
      { mesh, inSpecs: [P("x"), P("x"), P("x"), P("x")], outSpecs: P("x") },
    );
    // the three gathers stay three (gradient bucketing would combine them: the subject here is their schedule)
    const savedCombine = config.collectiveCombineBytes;
    config.update("collectiveCombineBytes", 0);
    let ran: ReturnType<typeof runModes>;
    try {
      ran = runModes(
        () => three(w, jnp.multiply(w, 0.5), jnp.multiply(w, 0.25), jnp.multiply(x, 0.1)),
        ["off", "mailbox", "thread"],
      );
    } finally {
      config.update("collectiveCombineBytes", savedCombine);
    }
    const { outs, recs } = ran;
    for (const m of ["mailbox", "thread"] as const) assert.deepEqual(outs.get(m), outs.get("off"), m);
    // records come in Done order; start = when its CollectiveStart ran, end - wait ~ when its Done was reached
    for (const rank of recs.get("mailbox")![0].collectives) {
      assert.equal(rank.length, 3);
      // the wide schedule: all three posted before layer 0 computes (before gather 0's Done is reached)
      for (let k = 1; k < 3; k++)
        assert.ok(
          rank[k].start <= rank[0].end - rank[0].wait,
          `mailbox: gather ${k} posts before gather 0's Done: ${rank[k].start} vs ${rank[0].end - rank[0].wait}`,
        );
    }
    for (const rank of recs.get("thread")![0].collectives) {
      assert.equal(rank.length, 3);
      // one gather prefetched: gather k + 1 starts before gather k's Done, gather 2 only after gather 0 ended
      for (let k = 0; k + 1 < rank.length; k++)
        assert.ok(
          rank[k + 1].start <= rank[k].end - rank[k].wait,
          `thread: gather ${k + 1} starts before gather ${k}'s Done (prefetch): ${rank[k + 1].start} vs ${rank[k].end - rank[k].wait}`,
        );
      assert.ok(
        rank[2].start >= rank[0].end,
        `thread: gather 2 waits for gather 0: ${rank[2].start} vs ${rank[0].end}`,
      );
    }
  },
);

test(
  "8 devices on this host's cores: asynchronous collectives finish (no livelock) with the same values",
  { skip },
  () => {
    const mesh = makeMesh([8], ["x"]);
    const x = values([16, 5], "float32");
    sameAsync(
      "8 devices",
      () =>
        shardMap(
          (b: Array) => {
            let h = b;
            for (let i = 0; i < 4; i++) h = jnp.add(jnp.sin(h), lax.psum(h, "x"));
            return [h, lax.allGather(h, "x", { tiled: true })];
          },
          { mesh, inSpecs: P("x"), outSpecs: [P("x"), P()] },
        )(x) as Array[],
    );
  },
);

test(
  "a peer that never reaches the collective fails the launch within the timeout, and the next call works",
  { skip },
  () => {
    const mesh = makeMesh([4], ["x"]);
    const x = values([8, 3], "float32");
    const f = shardMap((b: Array) => lax.allGather(jnp.sin(lax.psum(b, "x")), "x"), {
      mesh,
      inSpecs: P("x"),
      outSpecs: P(),
    });
    const saved = [config.spmdRuntime, config.collectiveTimeoutMs] as const;
    config.update("spmdRuntime", "devices");
    config.update("collectiveTimeoutMs", 500);
    try {
      withCollectiveOverlap(true, () => {
        f(x).blockUntilReady(); // compiled
        failNextLaunch(2);
        assert.throws(() => f(x).blockUntilReady(), /device 2 \(rank 2\)[^]*failure injected/);
        assert.equal(openRendezvous(), 0);
        assert.deepEqual(f(x).blockUntilReady().shape, [4, 2, 3]);
      });
    } finally {
      config.update("spmdRuntime", saved[0]);
      config.update("collectiveTimeoutMs", saved[1]);
    }
  },
);

test("an all-reduce over 1 MiB keeps the communication thread: the same values, still asynchronous", { skip }, () => {
  // 4 x 70000 float32 per device = 1.12 MB (> kMailboxAllReduceMaxBytes); the small all-gather after it is pulled.
  // Without the emulation (its values are checked on small inputs above)
  const mesh = makeMesh([2], ["x"]);
  const x = values([8, 70000], "float32");
  sameAsync(
    "large psum",
    () =>
      shardMap((b: Array) => [lax.psum(b, "x"), lax.allGather(jnp.sum(b, 1), "x")], {
        mesh,
        inSpecs: P("x"),
        outSpecs: [P(), P()],
      })(x) as Array[],
    true,
    false,
  );
});

/** A hand-made program: one all-gather of x ([3] float32) over `group`, started and awaited at once. */
function startDoneProgram(group: number[], launched: number) {
  const g = new GraphBuilder("start_done");
  const x = g.addInput("x", "float32", [3]);
  const attrs = { kind: 1, id: 0, groups: group, group_size: group.length, label: "all_gather", axes: "mesh axis 'x'" };
  const tok = g.addNode("CollectiveStart", [x, g.int64s([0])], 1, attrs, "jaxts.async")[0];
  const [y] = g.addNode("CollectiveDone", [x, tok], 2, attrs, "jaxts.async");
  g.addOutput(y, "float32", [group.length, 3]);
  return deviceProgram(
    g.toModelBytes(),
    {
      name: "start_done",
      inputNames: ["x"],
      inputDTypes: ["float32"],
      outputNames: g.outputNames,
      outputDTypes: ["float32"],
      outputShapes: [[group.length, 3]],
    },
    launched,
  );
}

test(
  "a peer that never posts fails the waiting Dones with the collective timeout, naming who posted; the next call works",
  { skip },
  () => {
    // the group names rank 2, but the launch has ranks 0 and 1 only: ranks 0 and 1 post, nobody posts for rank 2
    const ins = () => [0, 1].map((d) => [DeviceBuffer.alloc(runtimeDevice(d), "float32", [3])]);
    assert.throws(
      () => launchSync(startDoneProgram([0, 1, 2], 2), [0, 1], ins(), { timeoutMs: 300 }),
      /all_gather over mesh axis 'x' \(group of ranks \[0, 1, 2\]\) timed out after 300 ms waiting for its peers to post: ranks that posted \[0, 1\], missing \[2\]/,
    );
    assert.equal(openRendezvous(), 0, "no mailbox or rendezvous left behind");
    // the same kind of program over a group that is all there: it runs, and gathers every rank's input
    const p = startDoneProgram([0, 1], 2);
    const bufs = [0, 1].map((d) => [
      DeviceBuffer.copyOf(runtimeDevice(d), "float32", [3], Float32Array.from([d + 1, d + 2, d + 3])),
    ]);
    const { outputs } = launchSync(p, [0, 1], bufs, { timeoutMs: 300 });
    for (const o of outputs)
      assert.deepEqual(globalThis.Array.from(o[0].ready().data as Float32Array), [1, 2, 3, 2, 3, 4]);
    assert.equal(openRendezvous(), 0);
  },
);

test("a CollectiveStart whose CollectiveDone never runs fails its rank with an error naming it", { skip }, () => {
  // a hand-made program: an all-gather started on ranks 0..1; rank 1's program never awaits it (nor does rank 0's:
  // the same program), so each run ends with the collective in flight and reports it
  const g = new GraphBuilder("start_without_done");
  const x = g.addInput("x", "float32", [3]);
  const tok = g.addNode(
    "CollectiveStart",
    [x, g.int64s([0])],
    1,
    { kind: 1, id: 0, groups: [0, 1], group_size: 2, label: "all_gather", axes: "mesh axis 'x'" },
    "jaxts.async",
  )[0];
  g.addOutput(tok, "int64", [1]);
  const p = deviceProgram(
    g.toModelBytes(),
    {
      name: "start_without_done",
      inputNames: ["x"],
      inputDTypes: ["float32"],
      outputNames: g.outputNames,
      outputDTypes: ["int64"],
      outputShapes: [[1]],
    },
    2,
  );
  const ins = [0, 1].map((d) => [DeviceBuffer.alloc(runtimeDevice(d), "float32", [3])]);
  assert.throws(
    () => launchSync(p, [0, 1], ins, { timeoutMs: 500 }),
    /all_gather over mesh axis 'x' was started[^]*CollectiveDone never ran/,
  );
  assert.equal(openRendezvous(), 0);
});

test("the schedule that selects the compiled program follows the native switch (JAXTS_ASYNC_COLLECTIVES)", () => {
  const saved = [process.env.JAXTS_ASYNC_COLLECTIVES, process.env.JAXTS_ASYNC_SCHEDULE, process.env.JAXTS_ASYNC_UPDATE];
  try {
    delete process.env.JAXTS_ASYNC_COLLECTIVES;
    delete process.env.JAXTS_ASYNC_SCHEDULE;
    delete process.env.JAXTS_ASYNC_UPDATE;
    assert.equal(collectiveOverlapKey(), false);
    assert.equal(withCollectiveOverlap(true, collectiveOverlapKey), "wide");
    process.env.JAXTS_ASYNC_SCHEDULE = "narrow";
    assert.equal(withCollectiveOverlap(true, collectiveOverlapKey), "narrow");
    assert.equal(
      withEverySplit(() => withCollectiveOverlap(true, collectiveOverlapKey)),
      "narrow-every",
    );
    delete process.env.JAXTS_ASYNC_SCHEDULE;
    assert.equal(
      withEverySplit(() => withCollectiveOverlap(true, collectiveOverlapKey)),
      "wide-every",
    );
    // the update lag (wide only): late -> 0, a count, the default 2 has no suffix; nonsense is refused
    process.env.JAXTS_ASYNC_UPDATE = "late";
    assert.equal(withCollectiveOverlap(true, collectiveOverlapKey), "wide-lag0");
    assert.deepEqual(asyncScheduleOptions("wide-lag0"), { wide: true, every: false, updateLag: 0 });
    process.env.JAXTS_ASYNC_UPDATE = "1";
    assert.equal(withCollectiveOverlap(true, collectiveOverlapKey), "wide-lag1");
    process.env.JAXTS_ASYNC_UPDATE = "2";
    assert.equal(withCollectiveOverlap(true, collectiveOverlapKey), "wide");
    assert.deepEqual(asyncScheduleOptions("wide"), { wide: true, every: false, updateLag: 2 });
    process.env.JAXTS_ASYNC_UPDATE = "soon";
    assert.throws(
      () => withCollectiveOverlap(true, collectiveOverlapKey),
      /JAXTS_ASYNC_UPDATE must be "late" or a count >= 0, got "soon"/,
    );
    process.env.JAXTS_ASYNC_COLLECTIVES = "thread";
    assert.equal(withCollectiveOverlap(true, collectiveOverlapKey), "narrow");
    assert.equal(withCollectiveOverlap(false, collectiveOverlapKey), false);
  } finally {
    for (const [k, v] of [
      ["JAXTS_ASYNC_COLLECTIVES", saved[0]],
      ["JAXTS_ASYNC_SCHEDULE", saved[1]],
      ["JAXTS_ASYNC_UPDATE", saved[2]],
    ] as const)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
});

test(
  "a collective reading another's result directly, and int16 bodies (no Where kernel for ties): the same values with overlap",
  { skip },
  () => {
    for (const n of [2, 4]) {
      const mesh = makeMesh([n], ["x"]);
      // psum_scatter -> all_gather -> psum: each Start reads the previous Done's result (it used to close a cycle)
      const chain = shardMap(
        (a: Array) => lax.psum(lax.allGather(lax.psumScatter(a, "x", { tiled: true }), "x", { tiled: true }), "x"),
        { mesh, inSpecs: [P()], outSpecs: P(), checkVma: false },
      );
      const x = jnp.arange(8 * n).astype("float32");
      sameAsync(`chained collectives on ${n} devices`, () => chain(x));
      // compute between an int16 psum's Start and its Done: the tie that orders them must not be an int16 Where
      const mixed = shardMap(
        (a: Array) => jnp.add(lax.psum(a, "x"), jnp.add(jnp.multiply(a, a), jnp.ones([1, 16], "int16"))),
        { mesh, inSpecs: [P("x")], outSpecs: P("x"), checkVma: false },
      );
      const xi = jnp
        .arange(16 * n)
        .astype("int16")
        .reshape([n, 16]);
      sameAsync(`an int16 psum beside int16 compute on ${n} devices`, () => mixed(xi));
    }
  },
);

test(
  "every wait policy of a Done (JAXTS_MAILBOX_SPIN: poll briefly, block at once, the yielding loop) gives the same values on 8 devices",
  { skip },
  () => {
    const mesh = makeMesh([8], ["x"]);
    const x = values([128, 5], "float32");
    const f = () =>
      shardMap(
        (b: Array) => {
          let h = b;
          for (let i = 0; i < 4; i++) h = jnp.add(jnp.sin(h), lax.psum(h, "x"));
          return [h, lax.allGather(h, "x", { tiled: true }), lax.psumScatter(h, "x", { tiled: true })];
        },
        { mesh, inSpecs: P("x"), outSpecs: [P("x"), P(), P("x")] },
      )(x) as Array[];
    const want = runModes(f, ["off"]).outs.get("off")!;
    for (const spin of [undefined, "0", "1000000", "y2000", "y0"])
      // read by each Done
      withEnv("JAXTS_MAILBOX_SPIN", spin, () => {
        const { outs, recs } = runModes(f, ["mailbox"]);
        assert.deepEqual(outs.get("mailbox"), want, `JAXTS_MAILBOX_SPIN=${spin}`);
        const colls = recs.get("mailbox")!.flatMap((r) => r.collectives.flat());
        assert.ok(colls.length >= 8 * 6 && colls.every((c) => c.wait >= 0), `JAXTS_MAILBOX_SPIN=${spin}: asynchronous`);
      });
  },
);

test(
  "the cost model on a data-parallel SGD step: the 32 KiB gradient all-reduce stays synchronous (with its fused update), the scalar psum splits; values as without overlap",
  { skip },
  () => {
    const saved = config.spmdRuntime;
    config.update("spmdRuntime", "devices");
    try {
      const mesh = makeMesh([2], ["x"]);
      // per device: x [64, 128] float32 (32 KiB > MAILBOX_ALL_REDUCE_SYNC_BYTES), w replicated
      const f = shardMap(
        (w: Array, x: Array) => [
          jnp.subtract(w, jnp.multiply(lax.psum(jnp.multiply(x, 2), "x"), 0.05)),
          lax.psum(jnp.sum(x), "x"),
        ],
        { mesh, inSpecs: [P(), P("x")], outSpecs: [P(), P()] },
      ) as unknown as (...a: Array[]) => Array[];
      const args = [values([64, 128], "float32"), values([128, 128], "float32")];
      /** Outputs, [bytes, asynchronous] of rank 0's collectives, and whether the program has an AllReduceEpilogue. */
      const run = (on: boolean, every = false) => {
        const rs: LaunchRecord[] = [];
        const models: Uint8Array[] = [];
        const prevObs = setDeviceProgramObserver((p) => models.push(p.model));
        const prev = setLaunchObserver((r) => rs.push(r));
        try {
          const call = () => withCollectiveOverlap(on, () => f(...args));
          const outs = (every ? withEverySplit(call) : call()).map((o) =>
            Float64Array.from(o.dataSync() as Float32Array),
          );
          synchronize();
          const colls = rs.flatMap((r) => r.collectives[0] ?? []).map((c) => [c.bytes, c.wait >= 0] as const);
          return { outs, colls, fused: models.some((m) => Buffer.from(m).includes("AllReduceEpilogue")) };
        } finally {
          setLaunchObserver(prev);
          setDeviceProgramObserver(prevObs);
        }
      };
      const off = run(false),
        on = run(true),
        every = run(true, true);
      for (const r of [on, every]) r.outs.forEach((o, i) => assert.deepEqual(o, off.outs[i], `output ${i}`));
      const byBytes = (c: (readonly [number, boolean])[]) => [...c].sort((a, b) => a[0] - b[0]);
      assert.deepEqual(byBytes(off.colls), [
        [4, false],
        [32768, false],
      ]);
      assert.deepEqual(byBytes(on.colls), [
        [4, true],
        [32768, false],
      ]);
      assert.deepEqual(byBytes(every.colls), [
        [4, true],
        [32768, true],
      ]);
      // the update fuses into its all-reduce with overlap as without (where programs get jaxts.Fused nodes)
      const fusable = nativeGemmKernel() !== null && compileOptions.fuseInGraph;
      assert.equal(off.fused, fusable);
      assert.equal(on.fused, fusable);
      assert.equal(every.fused, false);
    } finally {
      config.update("spmdRuntime", saved);
    }
  },
);
