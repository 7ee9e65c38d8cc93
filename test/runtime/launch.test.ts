/** @file The device runtime: launches across devices (async and blocking), stream order, concurrency from the runtime's own timestamps, faults, memory accounting. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import v8 from "node:v8";
import vm from "node:vm";
import { GraphBuilder, type DType as GDType } from "../../src/backends/onnx/graph-builder.js";
import { deviceAddon } from "../../src/backends/onnx/ort-addon.js";
import type { DType } from "../../src/core/dtype.js";
import {
  DeviceBuffer,
  deviceProgram,
  deviceRuntimeUnavailable,
  dispatch,
  lastLaunchStamps,
  launch,
  launchSync,
  openRendezvous,
  runtimeDevice,
  setExecutorSpinUs,
  type DeviceProgram,
} from "../../src/runtime/index.js";
import { setCallerRunsMode, setInlineRunUs } from "../../src/runtime/launch.js";

const skip = deviceRuntimeUnavailable() ?? false;
const DOMAIN = "jaxts.collectives";
const ids = (n: number) => [...Array(n).keys()];

/** y = AllReduce(x) over ranks 0..n-1 (x: dtype[len], len null = dynamic), after `work` matmuls of x's outer product. */
function allReduceProgram(n: number, dtype: DType, len: number | null, reduce = 0, work = 0): DeviceProgram {
  const name = `all_reduce_${n}_${dtype}_${len}_${reduce}_${work}`;
  const g = new GraphBuilder(name);
  const x = g.addInput("x", dtype as GDType, [len]);
  let v = x;
  if (work) {
    // a little compute before the collective: m = x x^T, then m m ... (values unused besides a zero-weight add)
    const col = g.op("Unsqueeze", [x, g.int64s([1])]);
    let m = g.op("MatMul", [col, g.op("Transpose", [col], { perm: [1, 0] })]);
    for (let i = 0; i < work; i++) m = g.op("MatMul", [m, m]);
    v = g.op("Add", [x, g.op("Mul", [g.op("ReduceSum", [m], { keepdims: 0 }), g.scalar("float32", 0)])]);
  }
  const y = g.addNode(
    "AllReduce",
    [v],
    1,
    { groups: ids(n), group_size: n, reduce, label: "psum", axes: "mesh axis 'x'" },
    DOMAIN,
  )[0];
  g.addOutput(g.op("Identity", [y]), dtype as GDType, [len]);
  const model = g.toModelBytes();
  return deviceProgram(
    model,
    {
      name,
      inputNames: ["x"],
      inputDTypes: [dtype],
      outputNames: g.outputNames,
      outputDTypes: [dtype],
      outputShapes: [[len ?? 0]],
    },
    n,
  );
}

function filled(device: number, dtype: DType, vals: number[], shape: number[] = [vals.length]): DeviceBuffer {
  const b = DeviceBuffer.alloc(runtimeDevice(device), dtype, shape);
  vals.forEach((v, i) => {
    (b.data as unknown as (number | bigint)[])[i] = dtype === "int64" ? BigInt(v) : v;
  });
  return b;
}

test(
  "AllReduce (sum, max, min) of float32, float64, int32, int64 and bool (max/min) on 1, 2, 4, 8 devices",
  { skip },
  () => {
    for (const n of [1, 2, 4, 8]) {
      for (const dtype of ["float32", "float64", "int32", "int64", "bool"] as DType[]) {
        for (const reduce of dtype === "bool" ? [1, 2] : [0, 1, 2]) {
          const p = allReduceProgram(n, dtype, 5, reduce);
          const vals = ids(n).map((r) =>
            ids(5).map((i) =>
              dtype === "bool"
                ? (r + i) % 3 === 0
                  ? 1
                  : 0
                : ((r * 7 + i * 3) % 11) - 5 + (dtype.startsWith("float") ? 0.25 * r : 0),
            ),
          );
          const ins = ids(n).map((r) => [filled(r, dtype, vals[r])]);
          const res = launchSync(p, ids(n), ins);
          const want = ids(5).map((i) => {
            const col = vals.map((v) => v[i]);
            return reduce === 0 ? col.reduce((a, b) => a + b, 0) : reduce === 1 ? Math.max(...col) : Math.min(...col);
          });
          for (let r = 0; r < n; r++) {
            const got = Array.from(res.outputs[r][0].data as ArrayLike<number | bigint>, Number);
            assert.deepEqual(got, want, `n=${n} ${dtype} reduce=${reduce} rank ${r}`);
            res.outputs[r][0].free();
            ins[r][0].free();
          }
        }
      }
    }
    assert.equal(openRendezvous(), 0);
  },
);

test(
  "AllReduce and ReduceScatter over many blocks: float32 sums round as a left fold in rank order, NaN propagates in max, int32 wraps; shares split unevenly and outputs past the streaming-store size (4 MiB)",
  { skip },
  () => {
    // 5003 elements: a partial last block and shares that are no multiple of a cache line; 1.05M float32 (4.2 MB):
    // outputs written with streaming stores on x86, a 64-byte line at a time (3 ranks: the fold order holds there too)
    for (const [n, len] of [
      [2, 5003],
      [3, 5003],
      [2, 1_050_007],
      [3, 1_050_001],
    ]) {
      const scale = [0.01, 1, 100, 0.1, 10];
      const vals = ids(n).map((r) => {
        const v = new Float32Array(len);
        for (let i = 0; i < len; i++) v[i] = (((i * 7919 + r * 104729) % 2003) - 1001) * 0.3137 * scale[(i + r) % 5];
        return v;
      });
      // float32 left fold in rank order: ((x0 + x1) + x2), each sum rounded to float32
      const want = Float32Array.from(vals[0]);
      for (let r = 1; r < n; r++) for (let i = 0; i < len; i++) want[i] = Math.fround(want[i] + vals[r][i]);
      const p = allReduceProgram(n, "float32", len);
      const ins = ids(n).map((r) => {
        const b = DeviceBuffer.uninitialized(runtimeDevice(r), "float32", [len]);
        (b.data as Float32Array).set(vals[r]);
        return [b];
      });
      const res = launchSync(p, ids(n), ins);
      for (let r = 0; r < n; r++) {
        const got = res.outputs[r][0].data as Float32Array;
        let bad = -1;
        for (let i = 0; i < len && bad < 0; i++) if (got[i] !== want[i]) bad = i;
        assert.equal(bad, -1, `n=${n} len=${len} rank ${r}: element ${bad} is ${got[bad]}, want ${want[bad]}`);
        res.outputs[r][0].free();
      }
      // max with a NaN on one rank: NaN wins at that element only
      (ins[n - 1][0].data as Float32Array)[len - 2] = NaN;
      const pm = allReduceProgram(n, "float32", len, 1);
      const rm = launchSync(pm, ids(n), ins);
      for (let r = 0; r < n; r++) {
        const got = rm.outputs[r][0].data as Float32Array;
        assert.ok(Number.isNaN(got[len - 2]), `max n=${n} rank ${r}: NaN propagates`);
        for (const i of [0, 1, 4096, len >> 1, len - 3, len - 1])
          assert.equal(got[i], Math.max(...vals.map((v) => v[i])), `max n=${n} len=${len} element ${i}`);
        rm.outputs[r][0].free();
      }
      ins.flat().forEach((b) => b.free());
    }
    // int32 sums wrap (two's complement) across block and share boundaries
    const n = 2,
      len = 70_001;
    const ins = ids(n).map((r) => [
      filled(
        r,
        "int32",
        ids(len).map((i) => (i % 3 === 0 ? 2_000_000_000 : -(i * 7919 + r))),
      ),
    ]);
    const res = launchSync(allReduceProgram(n, "int32", len), ids(n), ins);
    for (let r = 0; r < n; r++) {
      const got = res.outputs[r][0].data as Int32Array;
      for (let i = 0; i < len; i++) {
        const w = (i % 3 === 0 ? 4_000_000_000 : -(i * 7919) * 2 - 1) | 0;
        if (got[i] !== w) assert.fail(`int32 sum rank ${r} element ${i}: ${got[i]}, want ${w}`);
      }
      res.outputs[r][0].free();
    }
    ins.flat().forEach((b) => b.free());
    // ReduceScatter of [n, m] float32 with m * 4 bytes past the streaming size: chunk r of the left-fold sum
    const m = 1_050_011;
    const rsVals = ids(n).map((r) => {
      const v = new Float32Array(n * m);
      for (let i = 0; i < n * m; i++) v[i] = ((i * 31 + r * 7) % 1009) * 0.0173 - 8.5;
      return v;
    });
    const g = new GraphBuilder(`reduce_scatter_big_${m}`);
    const x = g.addInput("x", "float32", [n, m]);
    g.addOutput(
      g.addNode(
        "ReduceScatter",
        [x],
        1,
        { groups: ids(n), group_size: n, reduce: 0, label: "psum_scatter", axes: "mesh axis 'x'" },
        DOMAIN,
      )[0],
      "float32",
      [m],
    );
    const prs = deviceProgram(
      g.toModelBytes(),
      {
        name: "reduce_scatter_big",
        inputNames: ["x"],
        inputDTypes: ["float32"],
        outputNames: g.outputNames,
        outputDTypes: ["float32"],
        outputShapes: [[m]],
      },
      n,
    );
    const rsIns = ids(n).map((r) => {
      const b = DeviceBuffer.uninitialized(runtimeDevice(r), "float32", [n, m]);
      (b.data as Float32Array).set(rsVals[r]);
      return [b];
    });
    const rs = launchSync(prs, ids(n), rsIns);
    for (let r = 0; r < n; r++) {
      const got = rs.outputs[r][0].data as Float32Array;
      for (let i = 0; i < m; i++) {
        const w = Math.fround(rsVals[0][r * m + i] + rsVals[1][r * m + i]);
        if (got[i] !== w) assert.fail(`ReduceScatter rank ${r} element ${i}: ${got[i]}, want ${w}`);
      }
      rs.outputs[r][0].free();
    }
    rsIns.flat().forEach((b) => b.free());
    assert.equal(openRendezvous(), 0);
  },
);

/** y = op(x) over ranks 0..n-1 for a movement/scatter collective (x: dtype[n, 3]). */
function collectiveProgram(
  op: string,
  n: number,
  dtype: DType,
  attrs: Record<string, number | number[]> = {},
): { p: DeviceProgram; outShape: number[] } {
  const g = new GraphBuilder(`${op}_${n}_${dtype}`);
  const x = g.addInput("x", dtype as GDType, [n, 3]);
  const outShape = op === "AllGather" ? [n, n, 3] : op === "ReduceScatter" ? [3] : [n, 3];
  const y = g.addNode(
    op,
    [x],
    1,
    { groups: ids(n), group_size: n, label: op, axes: "mesh axis 'x'", ...attrs },
    DOMAIN,
  )[0];
  g.addOutput(g.op("Identity", [y]), dtype as GDType, outShape);
  const p = deviceProgram(
    g.toModelBytes(),
    {
      name: `${op}_${dtype}`,
      inputNames: ["x"],
      inputDTypes: [dtype],
      outputNames: g.outputNames,
      outputDTypes: [dtype],
      outputShapes: [outShape],
    },
    n,
  );
  return { p, outShape };
}

test(
  "AllGather, ReduceScatter, AllToAll and CollectivePermute of float64, int64 and bool on 4 devices",
  { skip },
  () => {
    const n = 4;
    // rank r's x[j][k] = 100 r + 10 j + k (bool: parity)
    const val = (r: number, j: number, k: number) => 100 * r + 10 * j + k;
    for (const dtype of ["float64", "int64", "bool"] as DType[]) {
      const conv = (v: number) => (dtype === "bool" ? v % 2 : v);
      const ins = ids(n).map((r) => [
        filled(
          r,
          dtype,
          ids(n).flatMap((j) => ids(3).map((k) => conv(val(r, j, k)))),
          [n, 3],
        ),
      ]);
      const read = (b: DeviceBuffer) => Array.from(b.data as ArrayLike<number | bigint>, Number);
      const cases: [string, Record<string, number | number[]>, (r: number) => number[]][] = [
        ["AllGather", {}, () => ids(n).flatMap((q) => ids(n).flatMap((j) => ids(3).map((k) => conv(val(q, j, k)))))],
        ["AllToAll", {}, (r) => ids(n).flatMap((q) => ids(3).map((k) => conv(val(q, r, k))))],
        // pairs 0 -> 1, 1 -> 2, 2 -> 0: rank r receives rank [2, 0, 1][r]'s input; rank 3 is no destination (zeros)
        [
          "CollectivePermute",
          { pairs: [0, 1, 1, 2, 2, 0] },
          (r) =>
            r === 3 ? ids(n * 3).map(() => 0) : ids(n).flatMap((j) => ids(3).map((k) => conv(val([2, 0, 1][r], j, k)))),
        ],
      ];
      if (dtype !== "bool")
        cases.push([
          "ReduceScatter",
          { reduce: 0 },
          (r) => ids(3).map((k) => ids(n).reduce((a, q) => a + val(q, r, k), 0)),
        ]);
      for (const [op, attrs, want] of cases) {
        const { p } = collectiveProgram(op, n, dtype, attrs);
        const res = launchSync(p, ids(n), ins);
        res.outputs.forEach((os, r) => {
          assert.deepEqual(read(os[0]), want(r), `${op} ${dtype} rank ${r}`);
          os[0].free();
        });
      }
      ins.flat().forEach((b) => b.free());
    }
    assert.equal(openRendezvous(), 0);
  },
);

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

/** y = If(flag, AllReduce(x), x): a collective only the ranks given flag = true reach. */
function divergentProgram(n: number): DeviceProgram {
  const g = new GraphBuilder("divergent");
  const x = g.addInput("x", "float32", [4]);
  const flag = g.addInput("flag", "bool", []);
  const thenG = g.subgraph("then");
  const r = thenG.addNode(
    "AllReduce",
    [x],
    1,
    { groups: ids(n), group_size: n, reduce: 0, label: "psum", axes: "mesh axis 'x'" },
    DOMAIN,
  )[0];
  thenG.addOutput(r, "float32", [4]);
  const elseG = g.subgraph("else");
  elseG.addOutput(elseG.op("Identity", [x]), "float32", [4]);
  const y = g.op("If", [flag], { then_branch: thenG, else_branch: elseG });
  g.addOutput(y, "float32", [4]);
  return deviceProgram(
    g.toModelBytes(),
    {
      name: "divergent",
      inputNames: ["x", "flag"],
      inputDTypes: ["float32", "bool"],
      outputNames: [y],
      outputDTypes: ["float32"],
      outputShapes: [[4]],
    },
    n,
  );
}

test(
  "faults: a collective only some devices reach times out naming it and the ranks that arrived; the next launch works",
  { skip },
  () => {
    const n = 4;
    const p = divergentProgram(n);
    const xs = ids(n).map((r) => filled(r, "float32", [r, r, r, r]));
    const flags = (skipRank: number) =>
      ids(n).map((r) => {
        const f = DeviceBuffer.alloc(runtimeDevice(r), "bool", []);
        f.data[0] = r === skipRank ? 0 : 1;
        return f;
      });
    const bad = flags(2);
    assert.throws(
      () =>
        launchSync(
          p,
          ids(n),
          ids(n).map((r) => [xs[r], bad[r]]),
          { timeoutMs: 300 },
        ),
      (e: Error) =>
        /psum over mesh axis 'x' \(group of ranks \[0, 1, 2, 3\]\) timed out after 300 ms: ranks that arrived \[0, 1, 3\], missing \[2\]/.test(
          e.message,
        ),
    );
    assert.equal(openRendezvous(), 0, "the failed rendezvous is closed");
    const good = flags(-1);
    const res = launchSync(
      p,
      ids(n),
      ids(n).map((r) => [xs[r], good[r]]),
      { timeoutMs: 300 },
    );
    res.outputs.forEach((os) => assert.deepEqual(Array.from(os[0].data as Float32Array), [6, 6, 6, 6]));
  },
);

test(
  "faults: peers that disagree on a collective's shape fail together; a failing device releases the peers waiting for it",
  { skip },
  () => {
    const n = 4;
    // out = ReduceSum(AllReduce(x)) over a dynamic-length x: each rank's output is a scalar whatever its length
    const g = new GraphBuilder("mismatch");
    const x = g.addInput("x", "float32", [null]);
    const y = g.addNode(
      "AllReduce",
      [x],
      1,
      { groups: ids(n), group_size: n, reduce: 0, label: "psum", axes: "mesh axis 'x'" },
      DOMAIN,
    )[0];
    const out = g.op("ReduceSum", [y], { keepdims: 0 });
    g.addOutput(out, "float32", []);
    const prog = deviceProgram(
      g.toModelBytes(),
      {
        name: "mismatch",
        inputNames: ["x"],
        inputDTypes: ["float32"],
        outputNames: [out],
        outputDTypes: ["float32"],
        outputShapes: [[]],
      },
      n,
    );
    const lens = [3, 3, 5, 3];
    const ins = ids(n).map((r) => [
      filled(
        r,
        "float32",
        ids(lens[r]).map(() => 1),
      ),
    ]);
    assert.throws(
      () => launchSync(prog, ids(n), ins, { timeoutMs: 5000 }),
      /peers disagree: rank 2 called AllReduce of 5 elements/,
    );
    // a device-side failure (the test hook) releases peers blocked in the AllReduce long before their timeout
    const p = allReduceProgram(n, "float32", 3);
    const ok = ids(n).map((r) => [filled(r, "float32", [1, 2, 3])]);
    assert.throws(
      () => launchSync(p, ids(n), ok, { timeoutMs: 60000, failRank: 1 }),
      (e: Error) =>
        /^device runtime: program .* failed on devices \[0, 1, 2, 3\]: device 1 \(rank 1\): test hook/.test(
          e.message,
        ) && /released because the launch failed/.test(e.message),
    );
    // an ORT error on one device (an input of the wrong shape) does the same
    const wrong = ids(n).map((r) => [r === 3 ? filled(r, "float32", [1, 2, 3, 4]) : ok[r][0]]);
    assert.throws(
      () => launchSync(p, ids(n), wrong, { timeoutMs: 60000 }),
      /device 3 \(rank 3\): .*(dimension|shape)/i,
    );
    assert.equal(openRendezvous(), 0);
    const res = launchSync(p, ids(n), ok);
    res.outputs.forEach((os) => assert.deepEqual(Array.from(os[0].data as Float32Array), [4, 8, 12]));
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
