/** @file pmap (and shardMap with checkVma false) on the device runtime equals the emulation on 1, 2, 4 and 8 devices. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, devices, lax, makeMesh, numpy as jnp, pmap, shardMap, sharding } from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { flat, sameOnDevices, values } from "./device-compare.js";
const { P } = sharding;
const JSArray = globalThis.Array;

const skip = deviceRuntimeUnavailable() ?? false;
const SIZES = [1, 2, 4, 8];

/** g on the emulation and on the devices (see sameOnDevices), launched on the first n devices in rank order. */
const same = (what: string, n: number, g: () => Array): Array =>
  sameOnDevices(
    what,
    devices()
      .slice(0, n)
      .map((d) => d.id),
    g,
  );

for (const n of SIZES) {
  test(`pmap with psum, allGather, ppermute, outAxes null and static arguments on ${n} device(s)`, { skip }, () => {
    const xi = values([n, 3], "int32"),
      xf = values([n, 2, 3], "float32");
    const ps = same("psum", n, () => pmap((b: Array) => lax.psum(b, "i"), "i")(xi));
    // psum's replicated value is on every device: each row is the column sums of xi
    const colSums = [0, 1, 2].map((c) =>
      flat(xi.tolist())
        .filter((_, k) => k % 3 === c)
        .reduce((s, v) => s + v, 0),
    );
    assert.deepEqual(
      ps.tolist(),
      JSArray.from({ length: n }, () => colSums),
      "psum: column sums on every device",
    );
    same("psum float32, then used", n, () => pmap((b: Array) => jnp.subtract(b, lax.pmean(b, "i")), "i")(xf));
    same("allGather", n, () => pmap((b: Array) => lax.allGather(b, "i"), "i")(xi));
    same("allGather tiled, axis 1", n, () =>
      pmap((b: Array) => lax.allGather(b, "i", { axis: 1, tiled: true }), "i")(xf),
    );
    const perm = JSArray.from({ length: n }, (_, k) => [k, (k + 1) % n] as [number, number]);
    const rolled = same("ppermute (ring shift)", n, () => pmap((b: Array) => lax.ppermute(b, "i", perm), "i")(xi));
    const rows = xi.tolist() as number[][];
    assert.deepEqual(
      rolled.tolist(),
      rows.map((_, k) => rows[(k + n - 1) % n]),
      "ppermute: device k holds row k-1",
    );
    // outAxes null: a varying output is the first device's value (JAX's pmap takes it without a check)
    const first = same("outAxes null of a varying value", n, () =>
      pmap((b: Array) => jnp.multiply(b, 2), { axisName: "i", outAxes: null })(xi),
    );
    assert.deepEqual(
      first.tolist(),
      rows[0].map((v) => 2 * v),
      "outAxes null: device 0's block",
    );
    same("outAxes 1", n, () => pmap((b: Array) => jnp.add(b, lax.axisIndex("i")), { axisName: "i", outAxes: 1 })(xi));
    same("inAxes [0, null]", n, () =>
      pmap((b: Array, c: Array) => jnp.multiply(b, c), { axisName: "i", inAxes: [0, null] })(
        xf,
        jnp.array([1, 2, 3], { dtype: "float32" }),
      ),
    );
    const scaled = (b: Array, k: number, how: string) =>
      how === "sum" ? jnp.multiply(lax.psum(b, "i"), k) : jnp.multiply(b, k);
    for (const [k, how] of [
      [3, "sum"],
      [-2, "id"],
    ] as const) {
      same(`staticBroadcastedArgnums (${k}, ${how})`, n, () =>
        pmap(scaled, { axisName: "i", staticBroadcastedArgnums: [1, 2] })(xi, k, how),
      );
    }
  });
}

test(
  "shardMap with checkVma false on devices: an output unsharded over an axis is device 0's block along it",
  { skip },
  () => {
    const mesh = makeMesh([4, 2], ["x", "y"]);
    const x = values([8, 6], "float32"); // blocks [2, 3]
    const got = same("checkVma false, P()", 8, () =>
      shardMap((b: Array) => jnp.add(b, lax.axisIndex("x")), {
        mesh,
        inSpecs: P("x", "y"),
        outSpecs: P(),
        checkVma: false,
      })(x),
    );
    const rows = x.tolist() as number[][];
    assert.deepEqual(
      flat(got.tolist()),
      flat(rows.slice(0, 2).map((r) => r.slice(0, 3))),
      "P(): the block of device (0, 0)",
    );
    same("checkVma false, P(null, 'y')", 8, () =>
      shardMap((b: Array) => jnp.add(b, lax.axisIndex("x")), {
        mesh,
        inSpecs: P("x", "y"),
        outSpecs: P(null, "y"),
        checkVma: false,
      })(x),
    );
    // with the check on the same program is an error on devices too
    config.update("spmdRuntime", "devices");
    try {
      assert.throws(
        () => shardMap((b: Array) => jnp.add(b, lax.axisIndex("x")), { mesh, inSpecs: P("x", "y"), outSpecs: P() })(x),
        /shardMap: an output is declared replicated over mesh axis "y"/,
      );
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);

test(
  "pmap's repeated calls share one Mesh (the device path's per-call plan is kept for it) and one device program",
  { skip },
  () => {
    config.update("spmdRuntime", "devices");
    try {
      const pf = pmap((b: Array) => jnp.add(jnp.multiply(jnp.sin(b), 2), 1), "i");
      const x = values([2, 16], "float32");
      const [a, b] = [pf(x), pf(x)];
      const sa = a.sharding as unknown as { mesh: unknown },
        sb = b.sharding as unknown as { mesh: unknown };
      assert.equal(sa.mesh, sb.mesh, "the same Mesh object");
      assert.deepEqual(a.tolist(), b.tolist());
      const want = flat(x.tolist()).map((v) => Math.sin(v) * 2 + 1);
      flat(a.tolist()).forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= 1e-6 * (1 + Math.abs(want[i])), `${i}`));
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);
