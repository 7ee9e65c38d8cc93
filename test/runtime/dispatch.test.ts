/** @file Async dispatch on the device runtime: pending outputs, stream-ordered chaining, errors at wait, no reuse of memory under a running program. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { GraphBuilder } from "../../src/backends/onnx/graph-builder.js";
import {
  DeviceBuffer,
  deviceProgram,
  deviceRuntimeUnavailable,
  dispatch,
  launchesInFlight,
  launchSync,
  runtimeDevice,
  synchronize,
  type DeviceProgram,
} from "../../src/runtime/index.js";

const skip = deviceRuntimeUnavailable() ?? false;
const ids = (n: number) => [...Array(n).keys()];

/** y = 2 x + 1 (x: float32[len]) on n ranks. */
function affine(n: number, len: number): DeviceProgram {
  const g = new GraphBuilder(`affine_${n}_${len}`);
  const x = g.addInput("x", "float32", [len]);
  g.addOutput(g.op("Add", [g.op("Mul", [x, g.scalar("float32", 2)]), g.scalar("float32", 1)]), "float32", [len]);
  return deviceProgram(
    g.toModelBytes(),
    {
      name: "affine",
      inputNames: ["x"],
      inputDTypes: ["float32"],
      outputNames: g.outputNames,
      outputDTypes: ["float32"],
      outputShapes: [[len]],
    },
    n,
  );
}
function filled(device: number, vals: number[]): DeviceBuffer {
  return DeviceBuffer.copyOf(runtimeDevice(device), "float32", [vals.length], Float32Array.from(vals));
}
const read = (b: DeviceBuffer) => Array.from(b.ready().data as Float32Array);

test(
  "dispatch returns pending outputs at once; a chain on the same devices runs in stream order without waits and equals launchSync",
  { skip },
  () => {
    synchronize();
    for (const n of [1, 2, 4]) {
      const p = affine(n, 4);
      const ins = ids(n).map((r) => [filled(r, [r, 1, 2, 3])]);
      const sync = launchSync(p, ids(n), ins);
      // three chained launches: each consumes the previous one's pending outputs
      const a = dispatch(p, ids(n), ins);
      const b = dispatch(p, ids(n), a.outputs);
      const c = dispatch(p, ids(n), b.outputs);
      assert.equal(launchesInFlight(), 3, "nothing waited: all three are in flight");
      assert.equal(c.outputs[0][0].writer, c, "the output's writer is its pending launch");
      ids(n).forEach((r) => {
        const x = [r, 1, 2, 3];
        assert.deepEqual(read(a.outputs[r][0]), read(sync.outputs[r][0]));
        assert.deepEqual(
          read(c.outputs[r][0]),
          x.map((v) => 8 * v + 7),
          `rank ${r}: 2 (2 (2 x + 1) + 1) + 1`,
        );
      });
      synchronize();
      assert.equal(launchesInFlight(), 0);
      assert.equal(c.outputs[0][0].writer, null, "settled");
      assert.equal(c.timeline.length, n);
      for (const l of [sync, a, b, c]) for (const os of l.outputs) for (const o of os) o.free();
      for (const i of ins) i[0].free();
    }
  },
);

test(
  "a device error is raised at wait naming the device and the program (every time), a consumer of the failed outputs fails with it, the next launch works",
  { skip },
  () => {
    const p = affine(2, 3);
    const ins = ids(2).map((r) => [filled(r, [1, 2, 3])]);
    const bad = dispatch(p, ids(2), ins, { failRank: 1 });
    const after = dispatch(p, ids(2), bad.outputs);
    assert.throws(
      () => bad.wait(),
      /program affine failed on devices \[0, 1\]: device 1 \(rank 1\): test hook: device failure injected/,
    );
    assert.throws(() => bad.outputs[1][0].ready(), /device 1 \(rank 1\)/, "raised again when read");
    assert.throws(
      () => after.wait(),
      /program affine on devices \[0, 1\] consumed an output of a failed launch: .*device 1 \(rank 1\)/,
    );
    const ok = dispatch(p, ids(2), ins);
    assert.deepEqual(read(ok.outputs[1][0]), [3, 5, 7]);
    for (const l of [bad, after, ok]) for (const os of l.outputs) for (const o of os) o.free();
    for (const i of ins) i[0].free();
  },
);

test(
  "freeing buffers a launch in flight reads or writes keeps their memory (accounted) until the launch settles",
  { skip },
  () => {
    synchronize();
    const len = 1 << 16;
    const p = affine(2, len);
    const base = ids(2).map((r) => runtimeDevice(r).memoryStats().bytesInUse);
    const ins = ids(2).map((r) => [
      filled(
        r,
        Array.from({ length: len }, (_, i) => i % 7),
      ),
    ]);
    const l = dispatch(p, ids(2), ins);
    // give everything back while the launch may still run: the launch holds its own references
    for (const i of ins) i[0].free();
    const out0 = l.outputs[0][0];
    assert.equal(launchesInFlight(), 1);
    ids(2).forEach((r) =>
      assert.equal(
        runtimeDevice(r).memoryStats().bytesInUse - base[r],
        2 * 4 * len,
        `device ${r}: input and output still held`,
      ),
    );
    assert.equal(read(out0)[len - 1], 2 * ((len - 1) % 7) + 1, "the output is intact");
    for (const os of l.outputs) for (const o of os) o.free();
    synchronize();
    ids(2).forEach((r) =>
      assert.equal(runtimeDevice(r).memoryStats().bytesInUse, base[r], `device ${r}: released once settled`),
    );
  },
);
