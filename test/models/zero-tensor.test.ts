/**
 * @file ZeRO x tensor parallelism's layout on a 2x2 (data x model) mesh of devices: stage 3 holds a quarter of the
 * parameter and optimizer bytes per device (Device.memoryStats, exact to the padding), stage 1 the tensor blocks plus a
 * quarter of the optimizer state; parameters and optimizer state convert to full shapes and back exactly; bad options
 * are refused naming the fix.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
config.update("spmdRuntime", "devices");
import { type Array, makeMesh, numpy as jnp, optim, random, tree } from "../../src/index.js";
import { P } from "../../src/parallel/sharding.js";
import type { SpecTree } from "../../src/parallel/shard-map.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { zeroMemoryReport } from "../../src/models/zero.js";
import {
  zeroTensorFullOptState,
  zeroTensorGatherParams,
  zeroTensorRestore,
  zeroTensorShardState,
} from "../../src/models/zero-tensor.js";

const skip = deviceRuntimeUnavailable() ?? false;

// a split over 'model' on dim 1, b replicated, c split on dim 0: sizes chosen so that some leaves need padding
const params = () => {
  const [k1, k2, k3] = random.split(random.PRNGKey(3), 3) as unknown as Array[];
  return { a: random.normal(k1, [64, 32]), b: random.normal(k2, [101]), c: random.normal(k3, [8, 6, 5]) };
};
const specs = { a: P(null, "model"), b: P(), c: P("model") } as unknown as SpecTree;
const sizes = { a: 64 * 32, b: 101, c: 8 * 6 * 5 };

test(
  "ZeRO-3 x tensor parallel on 2x2 holds a quarter of the parameter and optimizer bytes per device",
  { skip },
  () => {
    const mesh = makeMesh([2, 2], ["data", "model"]);
    const o = optim.adam(0.01);
    const bytes = (stage: 1 | 3): number[] => {
      const before = zeroMemoryReport(mesh);
      const st = zeroTensorShardState(params(), o, mesh, { stage, tensorSpecs: specs });
      const d = zeroMemoryReport(mesh).map((r, i) => r.bytesInUse - before[i].bytesInUse);
      tree.leaves([st.params, st.optState]).forEach((x) => (x as Array).dispose());
      return d;
    };
    // per device: a's and c's tensor blocks split over 2 data shards, b over all 4 devices (padded up)
    const k = Math.ceil(sizes.a / 2 / 2) + Math.ceil(sizes.b / 4) + Math.ceil(sizes.c / 2 / 2);
    const m = sizes.a + sizes.b + sizes.c;
    const full = 3 * m * 4 + 4; // params + adam's mu and nu in float32 + the int32 count, unsharded
    bytes(3).forEach((b, i) => {
      assert.equal(b, 3 * k * 4 + 4, `stage 3 bytes on device ${i}`);
      assert.ok(Math.abs(b / full - 0.25) < 0.005, `stage 3 ratio ${b / full}`);
    });
    // stage 1: parameters as tensor blocks (a, c halved; b whole), optimizer state a quarter
    const p1 = sizes.a / 2 + sizes.b + sizes.c / 2;
    bytes(1).forEach((b, i) => assert.equal(b, p1 * 4 + 2 * k * 4 + 4, `stage 1 bytes on device ${i}`));
  },
);

test("parameters and optimizer state convert to full shapes and back exactly (stages 1-3)", { skip }, () => {
  const mesh = makeMesh([2, 2], ["data", "model"]);
  const o = optim.adam(0.01);
  const p = params();
  // an optimizer state with distinct values everywhere (mu = p, nu = p^2, count 7)
  const s0 = o.init(p) as unknown as { count: Array; mu: typeof p; nu: typeof p }[];
  const full = [
    {
      ...s0[0],
      count: jnp.array(7, { dtype: "int32" }),
      mu: p,
      nu: tree.map((x) => jnp.square(x as Array), p) as typeof p,
    },
    ...s0.slice(1),
  ] as unknown as optim.OptState;
  for (const stage of [1, 2, 3] as const) {
    const st = zeroTensorShardState(p, o, mesh, { stage, tensorSpecs: specs });
    const back = zeroTensorRestore(st.layout, p, full);
    const gp = zeroTensorGatherParams(back);
    for (const key of ["a", "b", "c"] as const)
      assert.deepEqual(gp[key].tolist(), p[key].tolist(), `stage ${stage} param ${key}`);
    const fo = zeroTensorFullOptState(back);
    assert.deepEqual(
      tree.leaves(fo).map((x) => (x as Array).tolist()),
      tree.leaves(full).map((x) => (x as Array).tolist()),
      `stage ${stage} optimizer state`,
    );
  }
});

test("bad ZeRO x tensor options are refused naming the fix", { skip }, () => {
  const mesh = makeMesh([2, 2], ["data", "model"]);
  const o = optim.adam(0.01);
  assert.throws(
    () => zeroTensorShardState(params(), o, mesh, { stage: 3, tensorSpecs: { ...specs, b: P("data") } as SpecTree }),
    /zeroTensorShardState: tensorSpecs of parameter leaf 1 names mesh axis "data"; only the tensor axis "model"/,
  );
  assert.throws(
    () => zeroTensorShardState(params(), o, mesh, { stage: 0 as 1, tensorSpecs: specs }),
    /stage must be 1, 2 or 3, got 0/,
  );
  assert.throws(
    () => zeroTensorShardState(params(), o, mesh, { stage: 2, tensorAxis: "tp", tensorSpecs: specs }),
    /tensorAxis "tp" is not an axis of/,
  );
});
