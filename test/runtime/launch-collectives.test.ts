/** @file The device runtime's collectives across devices: AllReduce, ReduceScatter, AllGather, AllToAll and CollectivePermute values by dtype and device count, and their faults (a collective only some devices reach, disagreeing peers, a failing device). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { GraphBuilder, type DType as GDType } from "../../src/backends/onnx/graph-builder.js";
import type { DType } from "../../src/core/dtype.js";
import {
  DeviceBuffer,
  deviceProgram,
  launchSync,
  openRendezvous,
  runtimeDevice,
  type DeviceProgram,
} from "../../src/runtime/index.js";
import { allReduceProgram, DOMAIN, filled, ids, psumNode, skip } from "./launch-helpers.js";

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

/** y = If(flag, AllReduce(x), x): a collective only the ranks given flag = true reach. */
function divergentProgram(n: number): DeviceProgram {
  const g = new GraphBuilder("divergent");
  const x = g.addInput("x", "float32", [4]);
  const flag = g.addInput("flag", "bool", []);
  const thenG = g.subgraph("then");
  const r = psumNode(thenG, x, n);
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
    const y = psumNode(g, x, n);
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
