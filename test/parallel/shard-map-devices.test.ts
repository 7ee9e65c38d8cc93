/** @file shardMap on the device runtime (spmdRuntime "devices") equals the emulation on 1, 2, 4 and 8 devices, for every collective, in loops too. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, grad, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import {
  deviceRuntimeUnavailable,
  lastLaunchTimeline,
  openRendezvous,
  runtimeDevice,
} from "../../src/runtime/index.js";
import { sameOnDevices, values } from "./device-compare.js";
import type { Mesh } from "../../src/parallel/mesh.js";
const { P } = sharding;
const JSArray = globalThis.Array;

const skip = deviceRuntimeUnavailable() ?? false;
const SIZES = [1, 2, 4, 8];

/** g on the emulation and on the mesh's devices (see sameOnDevices). */
const same = (what: string, mesh: Mesh, g: () => Array, launches = true): void => {
  sameOnDevices(what, mesh.deviceIds, g, launches);
};

for (const n of SIZES) {
  test(`reductions (psum, pmax, pmin, pmean) of float32 and int32 on ${n} device(s)`, { skip }, () => {
    const mesh = makeMesh([n], ["x"]);
    for (const dt of ["float32", "int32"] as const) {
      const x = values([2 * n, 3], dt);
      for (const [name, red] of [
        ["psum", lax.psum],
        ["pmax", lax.pmax],
        ["pmin", lax.pmin],
      ] as const) {
        same(`${name} ${dt}`, mesh, () =>
          shardMap((b: Array) => red(b, "x"), { mesh, inSpecs: P("x"), outSpecs: P() })(x),
        );
      }
      // reduced and then used: the replicated result feeds more code
      same(`x - pmean ${dt}`, mesh, () =>
        shardMap((b: Array) => jnp.subtract(jnp.astype(b, "float32"), lax.pmean(jnp.astype(b, "float32"), "x")), {
          mesh,
          inSpecs: P("x"),
          outSpecs: P("x"),
        })(x),
      );
    }
    same("psum of a constant (axis size)", mesh, () =>
      shardMap(() => lax.psum(jnp.array(1), "x"), { mesh, inSpecs: [], outSpecs: P() })(),
    );
  });

  test(`all_gather, psum_scatter, all_to_all, ppermute and axis_index on ${n} device(s)`, { skip }, () => {
    const mesh = makeMesh([n], ["x"]);
    const sm =
      (f: (b: Array) => Array, inSpec: sharding.PartitionSpec, outSpec: sharding.PartitionSpec, x: Array) => () =>
        shardMap(f, { mesh, inSpecs: inSpec, outSpecs: outSpec })(x);
    const x = values([2 * n, 3], "int32");
    same(
      "all_gather axis 0",
      mesh,
      sm((b) => lax.allGather(b, "x"), P("x"), P(), x),
    );
    same(
      "all_gather axis 1",
      mesh,
      sm((b) => lax.allGather(b, "x", { axis: 1 }), P("x"), P(), x),
    );
    same(
      "all_gather axis 1 tiled",
      mesh,
      sm((b) => lax.allGather(b, "x", { axis: 1, tiled: true }), P("x"), P(), x),
    );
    same(
      "all_gather float32 tiled",
      mesh,
      sm((b) => lax.allGather(b, "x", { tiled: true }), P("x"), P(), values([2 * n, 3], "float32")),
    );
    const y = values([n, 2 * n], "int32"); // blocks [n, 2]
    same(
      "psum_scatter",
      mesh,
      sm((b) => lax.psumScatter(b, "x"), P(null, "x"), P("x"), y),
    );
    const z = values([2 * n, 4 * n], "float32"); // blocks [2n, 4]
    same(
      "psum_scatter tiled",
      mesh,
      sm((b) => lax.psumScatter(b, "x", { tiled: true }), P(null, "x"), P("x"), z),
    );
    same(
      "psum_scatter tiled, dimension 1",
      mesh,
      sm(
        (b) => lax.psumScatter(jnp.tile(b, [1, n]), "x", { scatterDimension: 1, tiled: true }),
        P(null, "x"),
        P(null, "x"),
        z,
      ),
    );
    const w = values([n, 3 * n], "int32"); // blocks [n, 3]
    same(
      "all_to_all",
      mesh,
      sm((b) => lax.allToAll(b, "x", 0, 1), P(null, "x"), P("x"), w),
    );
    same(
      "all_to_all tiled",
      mesh,
      sm((b) => lax.allToAll(b, "x", 0, 1, { tiled: true }), P(null, "x"), P("x"), z),
    );
    same(
      "all_to_all tiled 1 -> 0",
      mesh,
      sm((b) => lax.allToAll(b, "x", 1, 0, { tiled: true }), P("x"), P("x"), values([4 * n, 2 * n], "int32")),
    );
    const shift = JSArray.from({ length: n }, (_, i) => [i, (i + 1) % n] as [number, number]);
    same(
      "ppermute (cyclic shift)",
      mesh,
      sm((b) => lax.ppermute(b, "x", shift), P("x"), P("x"), x),
    );
    if (n > 1)
      same(
        "ppermute (partial: members without a source get zeros)",
        mesh,
        sm((b) => lax.ppermute(b, "x", [[0, n - 1]]), P("x"), P("x"), x),
      );
    same("axis_index", mesh, () =>
      shardMap(() => jnp.reshape(lax.axisIndex("x"), [1]), { mesh, inSpecs: [], outSpecs: P("x") })(),
    );
  });

  test(`collectives inside lax.scan and foriLoop bodies on ${n} device(s)`, { skip }, () => {
    const mesh = makeMesh([n], ["x"]);
    const x = values([2 * n, 3], "float32");
    same("psum in scan", mesh, () =>
      shardMap(
        (b: Array) => {
          const [c, ys] = lax.scan(
            (carry: Array, row: Array) => {
              const s = lax.psum(jnp.multiply(row, carry), "x");
              return [jnp.add(carry, jnp.multiply(s, 0.01)), s];
            },
            jnp.ones([3], { dtype: "float32" }),
            b,
          );
          return jnp.concatenate([jnp.reshape(c, [1, 3]), ys], 0);
        },
        { mesh, inSpecs: P("x"), outSpecs: P("x") },
      )(x),
    );
    same("ppermute ring in foriLoop", mesh, () =>
      shardMap(
        (b: Array) =>
          lax.foriLoop(
            0,
            n + 1,
            (_i: Array, acc: Array) => {
              const passed = lax.ppermute(
                acc,
                "x",
                JSArray.from({ length: n }, (_, i) => [i, (i + 1) % n] as [number, number]),
              );
              return jnp.add(b, jnp.multiply(passed, 0.5));
            },
            b,
          ),
        { mesh, inSpecs: P("x"), outSpecs: P("x") },
      )(x),
    );
    assert.equal(openRendezvous(), 0, "every rendezvous closed");
  });
}

test(
  "gradients through psum inside the body (psum_transpose: psum of varying cotangents, identity of invariant ones)",
  { skip },
  () => {
    for (const n of [2, 4]) {
      const mesh = makeMesh([n], ["model"]);
      const x = values([3, 4], "float32");
      const w1 = jnp.multiply(values([4, 2 * n], "float32"), 0.05),
        w2 = jnp.multiply(values([2 * n, 2], "float32"), -0.1);
      // tensor parallel: a sharded hidden layer, partial outputs summed with psum
      const lossShard = (a: Array, b: Array) =>
        jnp.sum(jnp.square(lax.psum(jnp.matmul(jnp.tanh(jnp.matmul(x, a)), b), "model")));
      const tp = () =>
        shardMap(
          (a: Array, b: Array) =>
            jnp.concatenate(
              (grad(lossShard, { argnums: [0, 1] })(a, b) as unknown as Array[]).map((g) => jnp.ravel(g)),
            ),
          { mesh, inSpecs: [P(null, "model"), P("model", null)], outSpecs: P("model") },
        )(w1, w2);
      same(`tensor-parallel grads, ${n} devices`, mesh, tp);
      // data parallel: the loss is a psum of per-device losses; the weight is replicated
      const xs = values([2 * n, 4], "float32");
      const dp = () =>
        shardMap(
          (w: Array, xb: Array) => grad((v: Array) => lax.psum(jnp.sum(jnp.square(jnp.matmul(xb, v))), "model"))(w),
          { mesh, inSpecs: [P(), P("model")], outSpecs: P("model") },
        )(jnp.multiply(values([4, 2], "float32"), 0.1), xs);
      same(`data-parallel grads of a psum'd loss, ${n} devices`, mesh, dp);
      // a cotangent that varies over the axis: psum_transpose sums it (the value feeding psum is scaled by a varying block)
      const vc = () =>
        shardMap(
          (w: Array, b: Array) =>
            grad((v: Array) => jnp.sum(jnp.multiply(lax.psum(jnp.multiply(b, v), "model"), b)))(w),
          { mesh, inSpecs: [P(), P("model")], outSpecs: P("model") },
        )(values([3], "float32"), values([n, 3], "float32"));
      same(`grads through psum with a varying cotangent, ${n} devices`, mesh, vc);
    }
  },
);

test("pytree arguments and outputs: pass-through blocks, constants, unused inputs, mixed out_specs", { skip }, () => {
  const mesh = makeMesh([4], ["x"]);
  const x = values([8, 3], "float32"),
    y = values([4, 2], "int32");
  same(
    "pass-through block",
    mesh,
    () => shardMap((a: Array) => a, { mesh, inSpecs: P("x"), outSpecs: P("x") })(x),
    false,
  );
  same("constant output", mesh, () =>
    shardMap(() => jnp.full([2], 3, { dtype: "float32" }), { mesh, inSpecs: [], outSpecs: P() })(),
  );
  const tree = () => {
    const out = shardMap(
      (d: { a: Array; b: Array }, unused: Array) => {
        void unused;
        return { s: lax.psum(d.a, "x"), t: jnp.multiply(d.b, 2), u: d.a };
      },
      { mesh, inSpecs: [{ a: P("x"), b: P("x") }, P()], outSpecs: { s: P(), t: P("x"), u: P("x") } },
    )({ a: x, b: y }, jnp.ones([5])) as { s: Array; t: Array; u: Array };
    return jnp.concatenate([jnp.ravel(out.s), jnp.ravel(jnp.astype(out.t, "float32")), jnp.ravel(out.u)]);
  };
  same("dict in, dict out", mesh, tree);
});

test("2-D meshes (2x2, 4x2): collectives over one axis, both axes, and axis index groups", { skip }, () => {
  for (const [dims, names] of [
    [
      [2, 2],
      ["a", "b"],
    ],
    [
      [4, 2],
      ["a", "b"],
    ],
  ] as [number[], string[]][]) {
    const mesh = makeMesh(dims, names);
    const x = values([dims[0] * 2, dims[1] * 3], "int32");
    const sm = (f: (b: Array) => Array, o: sharding.PartitionSpec) => () =>
      shardMap(f, { mesh, inSpecs: P("a", "b"), outSpecs: o })(x);
    same(
      `psum a ${dims}`,
      mesh,
      sm((b) => lax.psum(b, "a"), P(null, "b")),
    );
    same(
      `psum b ${dims}`,
      mesh,
      sm((b) => lax.psum(b, "b"), P("a", null)),
    );
    same(
      `psum (a, b) ${dims}`,
      mesh,
      sm((b) => lax.psum(b, ["a", "b"]), P()),
    );
    same(
      `pmax (b, a) ${dims}`,
      mesh,
      sm((b) => lax.pmax(b, ["b", "a"]), P()),
    );
    same(
      `all_gather b ${dims}`,
      mesh,
      sm((b) => lax.allGather(b, "b", { axis: 1, tiled: true }), P("a", null)),
    );
    same(
      `ppermute b ${dims}`,
      mesh,
      sm(
        (b) =>
          lax.ppermute(b, "b", [
            [0, 1],
            [1, 0],
          ]),
        P("a", "b"),
      ),
    );
    same(`axis_index (a, b) ${dims}`, mesh, () =>
      shardMap(() => jnp.reshape(lax.axisIndex(["a", "b"]), [1, 1]), { mesh, inSpecs: [], outSpecs: P("a", "b") })(),
    );
  }
  const m4 = makeMesh([4], ["i"]);
  const y = values([4, 2], "int32");
  for (const groups of [
    [
      [0, 1],
      [2, 3],
    ],
    [
      [0, 2],
      [1, 3],
    ],
    [
      [3, 1],
      [0, 2],
    ],
  ]) {
    same(`psum with axis_index_groups ${JSON.stringify(groups)}`, m4, () =>
      shardMap((b: Array) => lax.psum(b, "i", { axisIndexGroups: groups }), {
        mesh: m4,
        inSpecs: P("i"),
        outSpecs: P("i"),
      })(y),
    );
    same(`pmin with axis_index_groups ${JSON.stringify(groups)}`, m4, () =>
      shardMap((b: Array) => lax.pmin(b, "i", { axisIndexGroups: groups }), {
        mesh: m4,
        inSpecs: P("i"),
        outSpecs: P("i"),
      })(y),
    );
    same(`all_gather with axis_index_groups ${JSON.stringify(groups)}`, m4, () =>
      shardMap((b: Array) => lax.allGather(b, "i", { axisIndexGroups: groups }), {
        mesh: m4,
        inSpecs: P("i"),
        outSpecs: P("i"),
      })(y),
    );
  }
});

test(
  "shardMap on devices: per-device memory is accounted and released; replicated outputs are checked",
  { skip },
  () => {
    const mesh = makeMesh([4], ["x"]);
    const x = values([4 * 1024, 2], "float32"); // blocks of 1024 x 2 float32 = 8 KiB
    const devs = mesh.deviceIds.map((id) => runtimeDevice(id));
    const before = devs.map((d) => d.memoryStats());
    config.update("spmdRuntime", "devices");
    try {
      const y = shardMap((b: Array) => jnp.multiply(b, 2), { mesh, inSpecs: P("x"), outSpecs: P("x") })(x);
      y.blockUntilReady(); // the launch settled: it released the input blocks it held
      devs.forEach((d, i) => {
        const s = d.memoryStats();
        assert.equal(s.numAllocs - before[i].numAllocs, 2, `device ${d.id}: one input block and one output block`);
        assert.equal(
          s.bytesInUse,
          before[i].bytesInUse + 8192,
          `device ${d.id}: the input block is freed, the output block stays resident`,
        );
        assert.ok(s.peakBytesInUse >= before[i].bytesInUse + 2 * 8192, `device ${d.id}: peak counts both blocks`);
        assert.ok(s.largestAllocSize >= 8192);
      });
      y.dispose();
      devs.forEach((d, i) =>
        assert.equal(
          d.memoryStats().bytesInUse,
          before[i].bytesInUse,
          `device ${d.id}: dispose frees the output blocks`,
        ),
      );
      // an output declared replicated (P()) that varies over the axis is an error, as on the emulation: a static
      // check (it fires even where the blocks happen to hold equal values)
      assert.throws(
        () => shardMap((b: Array) => b, { mesh, inSpecs: P("x"), outSpecs: P() })(x),
        /declared replicated over mesh axis "x"/,
      );
      assert.throws(
        () => shardMap((b: Array) => b, { mesh, inSpecs: P("x"), outSpecs: P() })(jnp.zeros([8])),
        /declared replicated over mesh axis "x"/,
      );
      // repeated calls reuse the compiled program and leave nothing behind on the devices
      const step = shardMap((b: Array) => lax.psum(jnp.multiply(b, b), "x"), { mesh, inSpecs: P("x"), outSpecs: P() });
      const mid = devs.map((d) => d.memoryStats());
      let last: Array | null = null;
      for (let i = 0; i < 200; i++) {
        last?.dispose();
        last = step(x);
      }
      assert.deepEqual(last!.shape, [1024, 2]);
      last!.dispose();
      const tl = lastLaunchTimeline(); // settles the launches in flight
      assert.equal(tl.length, 4, "ran on the devices");
      devs.forEach((d, i) => {
        const s = d.memoryStats();
        assert.equal(s.bytesInUse, mid[i].bytesInUse, `device ${d.id}: flat over 200 calls`);
        assert.equal(s.numAllocs - mid[i].numAllocs, 400, `device ${d.id}: one input and one output block per call`);
      });
      assert.equal(openRendezvous(), 0);
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);

test(
  "under jit shardMap is one staged equation run on the devices; grad and vmap of it run there too",
  { skip },
  async () => {
    const { jit, vmap } = await import("../../src/index.js");
    const mesh = makeMesh([4], ["x"]);
    const x = values([8, 2], "float32");
    const body = (b: Array) => lax.psum(jnp.sin(b), "x");
    same("jit(shardMap)", mesh, () =>
      jit((v: Array) => jnp.multiply(shardMap(body, { mesh, inSpecs: P("x"), outSpecs: P() })(jnp.add(v, 1)), 2))(x),
    );
    // transformations of a shardMap are shard_maps of the transformed body (test/parallel/shard-map-transforms.test.ts)
    const loss = (v: Array) => jnp.sum(jnp.square(shardMap(body, { mesh, inSpecs: P("x"), outSpecs: P() })(v)));
    sameOnDevices("grad(shardMap)", mesh.deviceIds, () => grad(loss)(x), true, 1e-4);
    same("vmap(shardMap)", mesh, () =>
      vmap((v: Array) => shardMap(body, { mesh, inSpecs: P("x"), outSpecs: P() })(v))(jnp.stack([x, jnp.negative(x)])),
    );
  },
);

test("without the native addon (JAXTS_NATIVE=0) spmdRuntime 'devices' runs the emulation, says so once, same results", () => {
  const script = `
    const { config } = await import(${JSON.stringify(new URL("../../src/core/config.js", import.meta.url).href)});
    config.update("numCpuDevices", 4);
    config.update("spmdRuntime", "devices");
    const { lax, makeMesh, numpy: jnp, shardMap, sharding } = await import(${JSON.stringify(new URL("../../src/index.js", import.meta.url).href)});
    const mesh = makeMesh([4], ["x"]);
    const f = shardMap((b) => lax.psum(jnp.multiply(b, b), "x"), { mesh, inSpecs: sharding.P("x"), outSpecs: sharding.P() });
    const x = jnp.reshape(jnp.arange(8, { dtype: "float32" }), [8, 1]);
    console.log(JSON.stringify([f(x).tolist(), f(jnp.add(x, 1)).tolist()]));
  `;
  const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, JAXTS_NATIVE: "0" },
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
  });
  assert.equal(res.status, 0, res.stderr);
  // blocks [2,1] per device; psum of the squares: [0+4+16+36, 1+9+25+49] and with x + 1: [1+9+25+49, 4+16+36+64]
  assert.deepEqual(JSON.parse(res.stdout.trim().split("\n").pop()!), [
    [[56], [84]],
    [[84], [120]],
  ]);
  const notes = res.stderr.split("\n").filter((l) => l.includes("shardMap runs on the emulation"));
  assert.equal(notes.length, 1, res.stderr);
  assert.match(notes[0], /device runtime is unavailable \(disabled by JAXTS_NATIVE=0\)/);
});

test(
  "one shardMap called with other avals, residency and meshes equals the emulation each time; eager calls hold no cache entry; a disposed argument is refused",
  { skip },
  async () => {
    const { eagerStats } = await import("../../src/backends/onnx/eager-cache.js");
    const { devicePut } = await import("../../src/index.js");
    const { NamedSharding } = sharding;
    const m2 = makeMesh([2], ["x"]),
      m2r = makeMesh([2], ["x"], { devices: [...m2.flatDevices].reverse() }),
      m4 = makeMesh([4], ["x"]);
    const f = (a: Array, b: Array) => jnp.add(lax.psum(jnp.multiply(a, b), "x"), b);
    const sm = (mesh: Mesh) => shardMap(f, { mesh, inSpecs: [P("x"), P()], outSpecs: P() });
    const calls: [string, Mesh, () => [Array, Array]][] = [
      ["f32 host arguments", m2, () => [values([4, 3], "float32"), values([2, 3], "float32")]],
      ["another shape", m2, () => [values([6, 2], "float32"), values([3, 2], "float32")]],
      ["int32", m2, () => [values([4, 3], "int32"), values([2, 3], "int32")]],
      [
        "arguments resident with the in_specs' shardings",
        m2,
        () => [
          devicePut(values([4, 3], "float32"), new NamedSharding(m2, P("x"))),
          devicePut(values([2, 3], "float32"), new NamedSharding(m2, P())),
        ],
      ],
      [
        "arguments resident with other shardings",
        m2,
        () => [
          devicePut(values([4, 3], "float32"), new NamedSharding(m2, P())),
          devicePut(values([2, 3], "float32"), new NamedSharding(m2, P("x"))),
        ],
      ],
      ["the same devices in reverse order", m2r, () => [values([4, 3], "float32"), values([2, 3], "float32")]],
      ["4 devices", m4, () => [values([8, 3], "float32"), values([2, 3], "float32")]],
    ];
    for (let round = 0; round < 2; round++)
      for (const [what, mesh, args] of calls) {
        const g = sm(mesh);
        same(`${what} (round ${round})`, mesh, () => g(...args()));
      }
    // a disposed argument is refused, not read (the check is not skipped by the per-call caches)
    config.update("spmdRuntime", "devices");
    try {
      // a body not called before: its first call on the devices must not add an eager cache entry either
      const g = shardMap((x: Array, y: Array) => f(x, y), { mesh: m2, inSpecs: [P("x"), P()], outSpecs: P() });
      const a = devicePut(values([4, 3], "float32"), new NamedSharding(m2, P("x")));
      const b = devicePut(values([2, 3], "float32"), new NamedSharding(m2, P()));
      const entries0 = eagerStats().eagerEntries;
      for (let k = 0; k < 3; k++) g(a, b).blockUntilReady();
      assert.equal(eagerStats().eagerEntries, entries0, "shard_map runs its impl with no eager cache entry");
      a.dispose();
      assert.throws(() => g(a, b).blockUntilReady(), /dispos|freed|deleted/i);
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);
