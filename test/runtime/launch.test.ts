/** @file The device runtime: launches across devices (async and blocking), stream order, concurrency from the runtime's own timestamps, dispatch and the caller-runs rule, executor spinning, memory accounting. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import v8 from "node:v8";
import vm from "node:vm";
import { deviceAddon } from "../../src/backends/onnx/ort-addon.js";
import {
  DeviceBuffer,
  dispatch,
  lastLaunchStamps,
  launch,
  launchSync,
  openRendezvous,
  runtimeDevice,
  setExecutorSpinUs,
} from "../../src/runtime/index.js";
import { setCallerRunsMode, setInlineRunUs } from "../../src/runtime/launch.js";
import { allReduceProgram, filled, ids, skip } from "./launch-helpers.js";

test(
  "launches resolve asynchronously, run in submission order on each device, and overlap across devices on distinct threads",
  { skip },
  async () => {
    for (const n of [2, 4, 8]) {
      const p = allReduceProgram(n, "float32", 64, 0, 2);
      const inputs = ids(n).map((r) => [
        filled(
          r,
          "float32",
          ids(64).map((i) => (i % 5) - r),
        ),
      ]);
      const pa = launch(p, ids(n), inputs);
      const pb = launch(p, ids(n), inputs); // queued behind pa on every device's stream
      assert.ok(pa instanceof Promise);
      const [a, b] = await Promise.all([pa, pb]);
      for (const res of [a, b]) {
        // the AllReduce holds every rank until all arrived: each run starts before any ends
        const lastStart = Math.max(...res.timeline.map((t) => t.start));
        const firstEnd = Math.min(...res.timeline.map((t) => t.end));
        assert.ok(
          lastStart <= firstEnd,
          `n=${n}: runs overlap in time (last start ${lastStart} <= first end ${firstEnd})`,
        );
        assert.equal(new Set(res.timeline.map((t) => t.thread)).size, n, `n=${n}: each device runs on its own thread`);
        const want = ids(64).map((i) => ids(n).reduce((s, r) => s + (i % 5) - r, 0));
        res.outputs.forEach((os) => assert.deepEqual(Array.from(os[0].data as Float32Array), want));
      }
      a.timeline.forEach((t, r) => {
        assert.ok(
          b.timeline[r].start >= t.end,
          `device ${r}: the second launch starts after the first ended (a stream)`,
        );
        assert.equal(b.timeline[r].thread, t.thread, `device ${r}: the same executor thread`);
      });
      for (const res of [a, b]) res.outputs.flat().forEach((o) => o.free());
      inputs.flat().forEach((x) => x.free());
    }
  },
);

test(
  "launchSync runs rank 0 on the calling thread when its stream is idle, else queues it behind the stream's work; the launch's stamps are ordered",
  { skip },
  async () => {
    const n = 2;
    const p = allReduceProgram(n, "float32", 64, 0, 2);
    const inputs = ids(n).map((r) => [
      filled(
        r,
        "float32",
        ids(64).map((i) => (i % 5) - r),
      ),
    ]);
    const want = ids(64).map((i) => ids(n).reduce((s, r) => s + (i % 5) - r, 0));
    // device 0's executor may still be releasing the previous test's last launch (it idles after that): the stream
    // is idle again within a few yields, and then the caller runs rank 0
    let idle = launchSync(p, ids(n), inputs);
    for (let k = 0; k < 200 && idle.stamps!.callerRank !== 0; k++) {
      idle.outputs.flat().forEach((o) => o.free());
      await new Promise((r) => setTimeout(r, 1));
      idle = launchSync(p, ids(n), inputs);
    }
    const st = idle.stamps!;
    assert.equal(st.callerRank, 0, "an idle stream: the caller ran rank 0");
    assert.notEqual(idle.timeline[0].thread, idle.timeline[1].thread, "rank 1 ran on its executor");
    assert.ok(
      st.enter <= st.submitted && st.submitted <= idle.timeline[0].start,
      "rank 0 starts after the others were submitted",
    );
    assert.ok(
      Math.max(...idle.timeline.map((t) => t.end)) <= st.complete && st.complete <= st.woke,
      "complete after every end, woke after complete",
    );
    assert.ok(Math.min(...idle.timeline.map((t) => t.start)) >= st.enter);
    // device 0 busy with an async launch (a few 512x512 products, milliseconds of work): the blocking one queues behind
    // it on every stream. On a loaded host the executor may finish before launchSync looks; then the caller may run
    // rank 0, but only after the async launch ended on device 0. Retry until the busy case is seen.
    const slow = allReduceProgram(n, "float32", 512, 0, 4);
    const slowIn = ids(n).map((r) => [
      filled(
        r,
        "float32",
        ids(512).map((i) => ((i % 7) - 3 - r) / 32),
      ),
    ]);
    const slowWant = ids(512).map((i) => ids(n).reduce((s, r) => s + ((i % 7) - 3 - r) / 32, 0));
    let busy: typeof idle | undefined;
    for (let k = 0; k < 10 && busy === undefined; k++) {
      const pa = launch(slow, ids(n), slowIn);
      const res = launchSync(p, ids(n), inputs);
      const a = await pa;
      a.timeline.forEach((t, r) => assert.ok(res.timeline[r].start >= t.end, `device ${r}: stream order kept`));
      a.outputs.forEach((os) => {
        assert.deepEqual(Array.from(os[0].data as Float32Array), slowWant);
        os[0].free();
      });
      if (res.stamps!.callerRank === -1) {
        assert.equal(res.timeline[0].thread, a.timeline[0].thread, "rank 0 ran on device 0's executor");
        busy = res;
      } else {
        assert.equal(res.stamps!.callerRank, 0);
        assert.ok(res.stamps!.submitted >= a.timeline[0].end, "the caller ran rank 0 only on an idle stream");
        res.outputs.forEach((os) => os[0].free());
      }
    }
    assert.ok(busy, "a launch queued behind a busy stream ran on the executor (10 tries)");
    for (const res of [idle, busy])
      res.outputs.forEach((os) => {
        assert.deepEqual(Array.from(os[0].data as Float32Array), want);
        os[0].free();
      });
    inputs.flat().forEach((x) => x.free());
    slowIn.flat().forEach((x) => x.free());
    assert.equal(openRendezvous(), 0);
  },
);

test("memoryStats counts each device's buffers: allocations, bytes in use, peak, release", { skip }, () => {
  const dev = runtimeDevice(6),
    other = runtimeDevice(5);
  const s0 = dev.memoryStats(),
    o0 = other.memoryStats();
  const a = DeviceBuffer.alloc(dev, "float32", [1024, 256]); // 1 MiB
  const b = DeviceBuffer.alloc(dev, "int32", [1000]);
  let s = dev.memoryStats();
  assert.equal(s.bytesInUse - s0.bytesInUse, (1 << 20) + 4000);
  assert.equal(s.numAllocs - s0.numAllocs, 2);
  assert.ok(s.peakBytesInUse >= s0.bytesInUse + (1 << 20) + 4000);
  assert.equal(s.largestAllocSize >= 1 << 20, true);
  assert.deepEqual(other.memoryStats(), o0, "another device's counters do not move");
  a.free();
  a.free(); // idempotent
  s = dev.memoryStats();
  assert.equal(s.bytesInUse - s0.bytesInUse, 4000);
  assert.throws(() => a.data, /freed buffer \(float32\[1024,256\] on device 6\)/);
  b.free();
  assert.equal(dev.memoryStats().bytesInUse, s0.bytesInUse);
  // freed storage is reused (no fresh pages); alloc still hands out zeros, and the counters treat it as a new buffer
  const c = DeviceBuffer.uninitialized(dev, "int32", [1000]);
  (c.data as Int32Array).fill(7);
  const cData = c.data;
  c.free();
  const d = DeviceBuffer.alloc(dev, "int32", [1000]);
  assert.equal(d.data, cData, "the device reused the freed storage");
  assert.ok(
    (d.data as Int32Array).every((v) => v === 0),
    "alloc zero-fills reused storage",
  );
  assert.equal(dev.memoryStats().bytesInUse - s0.bytesInUse, 4000);
  d.free();
  // a launch's outputs are allocated on their devices
  const p = allReduceProgram(2, "float64", 1000);
  const ins = [0, 1].map((r) => [filled(r + 5, "float64", ids(1000))]);
  const before = [5, 6].map((id) => runtimeDevice(id).memoryStats().bytesInUse);
  const res = launchSync(p, [5, 6], ins);
  [5, 6].forEach((id, r) =>
    assert.equal(
      runtimeDevice(id).memoryStats().bytesInUse - before[r],
      8000,
      `device ${id}: one float64[1000] output`,
    ),
  );
  res.outputs.flat().forEach((o) => o.free());
  ins.flat().forEach((o) => o.free());
  assert.throws(() => launchSync(p, [5, 6], [[ins[0][0]], [ins[1][0]]]), /freed buffer/);
});

test(
  "dispatch runs rank 0 of a program whose last run was cheap on the calling thread (device 0's stream idle); a costly or new one goes to the executors",
  { skip },
  () => {
    const n = 2;
    const p = allReduceProgram(n, "float32", 48);
    const inputs = ids(n).map((r) => [
      filled(
        r,
        "float32",
        ids(48).map((i) => i * (r + 1)),
      ),
    ]);
    const want = ids(48).map((i) => 3 * i);
    const saved = setInlineRunUs(1e9); // every settled program counts as cheap (a loaded host stretches the runs)
    try {
      assert.equal(p.lastRunUs, Infinity, "never run: its cost is unknown");
      const first = dispatch(p, ids(n), inputs);
      first.wait();
      assert.equal(first.stamps!.callerRank, -1, "a program never run goes to the executors");
      assert.deepEqual(lastLaunchStamps(), first.stamps, "a dispatched launch's stamps are the latest once settled");
      assert.ok(Number.isFinite(p.lastRunUs) && p.lastRunUs >= 0, "its longest rank run is recorded");
      // Device 0's executor marks itself idle just after it signals the run's completion, so right after wait() its
      // stream can still look busy (then rank 0 goes to the executor, correctly): retry until the stream is idle.
      let cheap = dispatch(p, ids(n), inputs);
      cheap.wait();
      for (let tries = 0; cheap.stamps!.callerRank !== 0 && tries < 100; tries++) {
        cheap.outputs.forEach((os) => {
          assert.deepEqual(Array.from(os[0].data as Float32Array), want);
          os[0].free();
        });
        const until = Date.now() + 2;
        while (Date.now() < until); // a moment for the executor to go idle
        cheap = dispatch(p, ids(n), inputs);
        cheap.wait();
      }
      assert.equal(cheap.stamps!.callerRank, 0, "cheap: the caller ran rank 0");
      assert.notEqual(cheap.timeline[0].thread, first.timeline[0].thread, "not on device 0's executor");
      assert.equal(cheap.timeline[1].thread, first.timeline[1].thread, "rank 1 on its executor");
      setInlineRunUs(0);
      // (the synchronous-loop rule would run rank 0 of a costly program here too: see the next test)
      const mode = setCallerRunsMode("never");
      const costly = dispatch(p, ids(n), inputs);
      costly.wait();
      setCallerRunsMode(mode);
      assert.equal(costly.stamps!.callerRank, -1, "above the threshold: every rank on its executor");
      assert.equal(costly.timeline[0].thread, first.timeline[0].thread);
      for (const l of [first, cheap, costly])
        l.outputs.forEach((os) => {
          assert.deepEqual(Array.from(os[0].data as Float32Array), want);
          os[0].free();
        });
    } finally {
      setInlineRunUs(saved);
      inputs.flat().forEach((x) => x.free());
    }
    assert.equal(openRendezvous(), 0);
  },
);

test(
  "dispatch of a costly program on as many devices as cores runs rank 0 on the caller only in a synchronous loop; pipelined and awaited launches stay on the executors; values unchanged",
  { skip: skip || availableParallelism() > 8 },
  async () => {
    const n = Math.max(2, availableParallelism());
    const p = allReduceProgram(n, "float32", 40); // a program of its own (programs are cached by model)
    const inputs = ids(n).map((r) => [
      filled(
        r,
        "float32",
        ids(40).map((i) => i + r),
      ),
    ]);
    const want = ids(40).map((i) => n * i + (n * (n - 1)) / 2);
    const savedRun = setInlineRunUs(0); // every program counts as costly
    const savedMode = setCallerRunsMode("auto");
    const check = (l: ReturnType<typeof dispatch>) =>
      l.outputs.forEach((os) => {
        assert.deepEqual(Array.from(os[0].data as Float32Array), want);
        os[0].free();
      });
    /** Waits until device 0's executor went idle (it marks itself idle just after signalling completion). */
    const idle = () => {
      const until = Date.now() + 2;
      while (Date.now() < until);
    };
    try {
      const first = dispatch(p, ids(n), inputs);
      first.wait();
      assert.equal(first.stamps!.callerRank, -1, "a program never waited for in a loop goes to the executors");
      let sync = dispatch(p, ids(n), inputs);
      sync.wait();
      for (let tries = 0; sync.stamps!.callerRank !== 0 && tries < 100; tries++) {
        check(sync);
        idle();
        sync = dispatch(p, ids(n), inputs);
        sync.wait();
      }
      assert.equal(sync.stamps!.callerRank, 0, "waited for before the next dispatch: the caller runs rank 0");
      // pipelined: a second dispatch before the first one's wait; the next dispatch goes to the executors again
      idle();
      const a = dispatch(p, ids(n), inputs),
        b = dispatch(p, ids(n), inputs);
      b.wait();
      a.wait();
      idle();
      const afterPipe = dispatch(p, ids(n), inputs);
      afterPipe.wait();
      assert.equal(afterPipe.stamps!.callerRank, -1, "after a pipelined dispatch: every rank on its executor");
      // awaited: the completion callback settles it, so the next dispatch stays asynchronous
      idle();
      const awaited = dispatch(p, ids(n), inputs);
      await awaited.ready();
      idle();
      const afterAwait = dispatch(p, ids(n), inputs);
      afterAwait.wait();
      assert.equal(afterAwait.stamps!.callerRank, -1, "after an awaited launch: every rank on its executor");
      setCallerRunsMode("never");
      idle();
      const never = dispatch(p, ids(n), inputs);
      never.wait();
      assert.equal(never.stamps!.callerRank, -1, '"never": every rank on its executor');
      for (const l of [first, sync, a, b, afterPipe, awaited, afterAwait, never]) check(l);
      assert.throws(
        () => setCallerRunsMode("sometimes" as "auto"),
        /setCallerRunsMode: mode must be one of auto, always, never, got sometimes/,
      );
    } finally {
      setInlineRunUs(savedRun);
      setCallerRunsMode(savedMode);
      inputs.flat().forEach((x) => x.free());
    }
    assert.equal(openRendezvous(), 0);
  },
);

test(
  "setExecutorSpinUs: idle executors poll or block; launches on 2 and 8 devices give the same sums either way",
  { skip },
  () => {
    const saved = setExecutorSpinUs(0);
    assert.ok(saved >= 0, "this addon can change the polling time");
    try {
      assert.equal(setExecutorSpinUs(250), 0, "returns the previous value");
      for (const n of [2, 8]) {
        const p = allReduceProgram(n, "int32", 5);
        const inputs = ids(n).map((r) => [filled(r, "int32", [r, 1, 2, 3, -r])]);
        const want = [(n * (n - 1)) / 2, n, 2 * n, 3 * n, -(n * (n - 1)) / 2];
        for (const spin of [0, 250, 0, 250]) {
          setExecutorSpinUs(spin);
          // back to back, as a loop of small launches runs them: the executors find the next launch while polling
          for (let k = 0; k < 20; k++) {
            const r = launchSync(p, ids(n), inputs);
            r.outputs.forEach((os) => {
              assert.deepEqual(Array.from(os[0].data as Int32Array), want, `${n} devices, spin ${spin} us`);
              os[0].free();
            });
          }
        }
        inputs.flat().forEach((x) => x.free());
      }
    } finally {
      setExecutorSpinUs(saved);
    }
    assert.equal(openRendezvous(), 0);
  },
);

test(
  "the native launch keeps its typed arrays alive until it is waited for, then lets them go; many launches leave no bytes",
  { skip },
  async () => {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const tick = () => new Promise((r) => setImmediate(r));
    const a = deviceAddon().api;
    assert.ok(a);
    const p = allReduceProgram(2, "float32", 3);
    // fresh arrays only the launch holds (no pool, no DeviceBuffer): WeakRefs tell when the addon released them
    const start = (): { h: object; refs: WeakRef<Float32Array>[] } => {
      const ins = [[Float32Array.of(1, 2, 3)], [Float32Array.of(10, 20, 30)]];
      const outs = [[new Float32Array(3)], [new Float32Array(3)]];
      const h = a.devLaunch(p.handle, [3, 4], ins, [[[3]], [[3]]], outs, [[[3]], [[3]]], { timeoutMs: 30000 });
      return { h, refs: [...ins.flat(), ...outs.flat()].map((x) => new WeakRef(x)) };
    };
    const { h, refs } = start();
    for (let i = 0; i < 3; i++) {
      await tick();
      gc();
    }
    // not yet waited for (whether or not the devices finished): every array is still there, and the outputs are right
    assert.ok(
      refs.every((r) => r.deref() !== undefined),
      "arrays of a launch not yet waited for stay alive",
    );
    const r = a.devWait(h);
    assert.deepEqual(r.errors, [null, null]);
    assert.deepEqual(Array.from(refs[2].deref() ?? []), [11, 22, 33]);
    assert.deepEqual(Array.from(refs[3].deref() ?? []), [11, 22, 33]);
    assert.equal(typeof r.enter, "number");
    assert.ok(
      (r.complete ?? 0) >= (r.enter ?? Infinity) && (r.woke ?? 0) >= (r.complete ?? Infinity),
      "stamps in order",
    );
    for (let i = 0; i < 3; i++) {
      await tick();
      gc();
    }
    assert.ok(
      refs.every((x) => x.deref() === undefined),
      "a waited launch holds none of its arrays",
    );
    // many launches through the runtime: every output right, device bytes back to where they started
    const before = [3, 4].map((id) => runtimeDevice(id).memoryStats().bytesInUse);
    const inputs = [[filled(3, "float32", [1, 2, 3])], [filled(4, "float32", [4, 5, 6])]];
    for (let k = 0; k < 200; k++) {
      let outputs: DeviceBuffer[][];
      if (k % 2) outputs = launchSync(p, [3, 4], inputs).outputs;
      else {
        const pl = dispatch(p, [3, 4], inputs);
        pl.wait();
        outputs = pl.outputs;
      }
      outputs.forEach((os) => {
        assert.deepEqual(Array.from(os[0].data as Float32Array), [5, 7, 9]);
        os[0].free();
      });
    }
    inputs.flat().forEach((x) => x.free());
    assert.deepEqual(
      [3, 4].map((id) => runtimeDevice(id).memoryStats().bytesInUse),
      before,
    );
    assert.equal(openRendezvous(), 0);
  },
);
