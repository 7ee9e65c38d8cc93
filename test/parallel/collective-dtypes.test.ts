/** @file Collectives of float16, bfloat16, int16, uint16, uint32, uint64 and complex64 on the device runtime equal the emulation on 2, 3 and 4 devices; complex arguments and results crossing launches (with derivatives); and a bfloat16 data-parallel MLP grad step. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import {
  type Array,
  devicePut,
  grad,
  jvp,
  lax,
  makeMesh,
  nn,
  numpy as jnp,
  pmap,
  shardMap,
  sharding,
  vjp,
} from "../../src/index.js";
import { shardedStorage } from "../../src/parallel/device-arrays.js";
import { deviceRuntimeUnavailable, lastLaunchTimeline } from "../../src/runtime/index.js";
import { onDevices } from "../helpers/spmd-runtime.js";
import { withCollectiveOverlap } from "../../src/parallel/overlap-collectives.js";
import { flat, sameOnDevices } from "./device-compare.js";
const { NamedSharding, P } = sharding;
const JSArray = globalThis.Array;

const skip = deviceRuntimeUnavailable() ?? false;
const DTYPES = ["float16", "bfloat16", "int16", "uint16", "uint32", "uint64"] as const;

/**
 * Deterministic values of `dtype`: integers spread over the whole range (sums wrap), floats of distinct magnitudes
 * with a NaN, an infinity and a -0 among them (NaN propagation and signed zeros cross the devices too).
 */
function valuesOf(shape: number[], dtype: (typeof DTYPES)[number]): Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const idx = JSArray.from({ length: n }, (_, i) => i);
  let x: Array;
  if (dtype === "uint64") {
    // near 2^64: every sum of two wraps
    x = jnp.array(
      idx.map((i) => BigInt.asUintN(64, 18446744073709551000n + BigInt(i) * 7919n * 1000003n)),
      { dtype },
    );
  } else if (dtype === "float16" || dtype === "bfloat16") {
    const v = idx.map((i) => Math.sin(i * 1.37) * 10 + i * 0.01);
    if (n > 7) [v[3], v[5], v[7]] = [NaN, -0, Infinity];
    x = jnp.astype(jnp.array(v, { dtype: "float32" }), dtype);
  } else {
    const span = { int16: 65536, uint16: 65536, uint32: 2 ** 32 }[dtype];
    const lo = dtype === "int16" ? -32768 : 0;
    x = jnp.array(
      idx.map((i) => ((i * 2654435761) % span) + lo),
      { dtype },
    );
  }
  return jnp.reshape(x, shape);
}

for (const n of [2, 3, 4]) {
  test(
    `every collective of float16, bfloat16, int16, uint16, uint32, uint64 on ${n} devices equals the emulation`,
    { skip },
    () => {
      const mesh = makeMesh([n], ["x"]);
      const shift = JSArray.from({ length: n }, (_, i) => [i, (i + 1) % n] as [number, number]);
      for (const dt of DTYPES) {
        // uint64 stays uint64 only with x64 (else it canonicalizes to uint32, as JAX does)
        config.update("enableX64", dt === "uint64");
        const sm =
          (f: (b: Array) => Array, inSpec: sharding.PartitionSpec, outSpec: sharding.PartitionSpec, x: Array) => () =>
            shardMap(f, { mesh, inSpecs: inSpec, outSpecs: outSpec })(x);
        const x = valuesOf([2 * n, 3], dt); // blocks [2, 3]
        const z = valuesOf([2 * n, 4 * n], dt); // blocks [2n, 4]
        const same = (what: string, g: () => Array) => {
          const got = sameOnDevices(`${what} of ${dt} on ${n} devices`, mesh.deviceIds, g);
          assert.equal(got.dtype, dt);
        };
        same(
          "psum",
          sm((b) => lax.psum(b, "x"), P("x"), P(), x),
        );
        same(
          "pmax",
          sm((b) => lax.pmax(b, "x"), P("x"), P(), x),
        );
        same(
          "pmin",
          sm((b) => lax.pmin(b, "x"), P("x"), P(), x),
        );
        same(
          "all_gather",
          sm((b) => lax.allGather(b, "x"), P("x"), P(), x),
        );
        same(
          "all_gather axis 1 tiled",
          sm((b) => lax.allGather(b, "x", { axis: 1, tiled: true }), P("x"), P(), x),
        );
        same(
          "psum_scatter tiled",
          sm((b) => lax.psumScatter(b, "x", { tiled: true }), P(null, "x"), P("x"), z),
        );
        same(
          "all_to_all tiled",
          sm((b) => lax.allToAll(b, "x", 0, 1, { tiled: true }), P(null, "x"), P("x"), z),
        );
        same(
          "ppermute (cyclic shift)",
          sm((b) => lax.ppermute(b, "x", shift), P("x"), P("x"), x),
        );
      }
      config.update("enableX64", false);
    },
  );
}

test(
  "overlapped (asynchronous, one-sided mailbox) collectives: bfloat16 on the devices, float16 on the emulation",
  { skip },
  () => {
    // (integer dtypes other than int32/int64/uint8 are not here: the overlap pass's ties pass an input through ORT's
    // Where, which has no int16/uint16/uint32/uint64 kernel; src/compiler/async-collectives.ts)
    const mesh = makeMesh([4], ["x"]);
    for (const dt of ["bfloat16", "float16"] as const) {
      const z = valuesOf([8, 16], dt); // blocks [8, 4]
      // a reduction, a reduce-scatter and a gather, each with compute after it to overlap
      const body = (b: Array) => {
        const s = lax.psum(b, "x");
        const r = lax.psumScatter(b, "x", { tiled: true });
        const g = lax.allGather(jnp.multiply(r, 2), "x", { tiled: true });
        return jnp.concatenate([jnp.add(s, b), jnp.multiply(g, b)], 0);
      };
      // float16: ORT's float16 cast insertion splits a Start/Done pair, so such a body keeps the emulation's values
      withCollectiveOverlap(true, () =>
        sameOnDevices(
          `overlapped collectives of ${dt}`,
          mesh.deviceIds,
          () => shardMap(body, { mesh, inSpecs: P(null, "x"), outSpecs: P(null, "x") })(z),
          dt === "bfloat16",
        ),
      );
    }
  },
);

test("uint8 sums (psum, psum_scatter) wrap on the devices as on the emulation", { skip }, () => {
  for (const n of [2, 4]) {
    const mesh = makeMesh([n], ["x"]);
    const x = jnp
      .array(
        JSArray.from({ length: 8 * n * n }, (_, i) => (i * 97 + 200) % 256),
        { dtype: "uint8" },
      )
      .reshape([2 * n, 4 * n]);
    sameOnDevices(`psum of uint8 on ${n} devices`, mesh.deviceIds, () =>
      shardMap((b: Array) => lax.psum(b, "x"), { mesh, inSpecs: P("x"), outSpecs: P() })(x),
    );
    sameOnDevices(`psum_scatter of uint8 on ${n} devices`, mesh.deviceIds, () =>
      shardMap((b: Array) => lax.psumScatter(b, "x", { tiled: true }), {
        mesh,
        inSpecs: P(null, "x"),
        outSpecs: P("x"),
      })(x),
    );
  }
});

test(
  "16-bit float sums round once: four float16 inputs whose float16 partial sums would round differently",
  { skip },
  () => {
    // 2048 + 1 + 1 + 1: float16 holds 2048..4096 in steps of 2, so a left fold rounding each step gives 2048 (ties to
    // even three times) while float32 accumulation then one rounding gives 2051 -> 2052
    const mesh = makeMesh([4], ["x"]);
    const x = jnp.array([2048, 1, 1, 1], { dtype: "float16" });
    const got = sameOnDevices("psum of float16 [2048, 1, 1, 1]", mesh.deviceIds, () =>
      shardMap((b: Array) => lax.psum(b, "x"), { mesh, inSpecs: P("x"), outSpecs: P() })(x),
    );
    assert.deepEqual(got.tolist(), [2052]);
  },
);

test("collectives of complex64 values inside the body run on the devices ([..., 2] float storage)", { skip }, () => {
  for (const n of [2, 4]) {
    const mesh = makeMesh([n], ["x"]);
    const x = jnp.reshape(jnp.arange(8 * n * n, { dtype: "float32" }), [2 * n, 4 * n]);
    const shift = JSArray.from({ length: n }, (_, i) => [i, (i + 1) % n] as [number, number]);
    // complex in, (re, im) stacked out: the arguments and results stay real (complex buffers do not cross launches)
    const body = (f: (z: Array) => Array) => (b: Array) => {
      const y = f(lax.complex(jnp.sin(b), jnp.multiply(b, 0.5)));
      return jnp.stack([jnp.real(y), jnp.imag(y)], -1);
    };
    const cases: [string, (z: Array) => Array, sharding.PartitionSpec][] = [
      ["psum", (z) => lax.psum(z, "x"), P()],
      ["all_gather", (z) => lax.allGather(z, "x", { axis: 1 }), P()],
      ["psum_scatter tiled", (z) => lax.psumScatter(z, "x", { scatterDimension: 1, tiled: true }), P(null, "x")],
      ["all_to_all tiled", (z) => lax.allToAll(z, "x", 1, 0, { tiled: true }), P("x")],
      ["ppermute", (z) => lax.ppermute(z, "x", shift), P(null, "x")],
    ];
    for (const [what, f, out] of cases)
      sameOnDevices(`${what} of complex64 on ${n} devices`, mesh.deviceIds, () =>
        shardMap(body(f), { mesh, inSpecs: P(null, "x"), outSpecs: out })(x),
      );
  }
});

test(
  "complex64 and complex128 arguments and results cross launches: chained shardMaps, pmap, shards, resharding",
  { skip },
  () => {
    const cplx = (shape: number[], seed: number) => {
      const re = jnp.sin(
        jnp.add(
          jnp.reshape(
            jnp.arange(
              shape.reduce((p, q) => p * q, 1),
              { dtype: "float32" },
            ),
            shape,
          ),
          seed,
        ),
      );
      return lax.complex(re, jnp.multiply(jnp.cos(re), 0.5));
    };
    for (const n of [2, 4]) {
      const mesh = makeMesh([n], ["x"]);
      const z = cplx([2 * n, 3], n);
      // psum(b) * b: the product mixes re and im, so a swapped or dropped lane changes every value
      const f = shardMap((b: Array) => jnp.multiply(lax.psum(b, "x"), b), { mesh, inSpecs: P("x"), outSpecs: P("x") });
      const y = sameOnDevices(`psum(b) * b of complex64 on ${n} devices`, mesh.deviceIds, () => f(z));
      assert.equal(y.dtype, "complex64");
      assert.notEqual(shardedStorage(y), null, "the complex result stays resident on the devices");
      // each shard holds its block's (re, im) pairs: rank r's shard is rows [2r, 2r + 2) of the global value
      const whole = y.tolist() as { re: number; im: number }[][];
      (y.addressableShards as { data: Array }[]).forEach((sh, r) =>
        assert.deepEqual(sh.data.tolist(), whole.slice(2 * r, 2 * r + 2), `shard ${r}`),
      );
      // the resident complex output feeds the next launch directly
      sameOnDevices(`a chain of two complex shardMaps on ${n} devices`, mesh.deviceIds, () => f(f(z)));
      // collectives whose results are complex
      sameOnDevices(`all_gather of complex64 on ${n} devices`, mesh.deviceIds, () =>
        shardMap((b: Array) => lax.allGather(b, "x", { axis: 1, tiled: true }), {
          mesh,
          inSpecs: P("x"),
          outSpecs: P("x"),
        })(z),
      );
      // resharding a resident complex array moves (re, im) pairs: rows split -> replicated -> columns split
      const zs = devicePut(z, new NamedSharding(mesh, P("x")));
      assert.deepEqual(devicePut(zs, new NamedSharding(mesh, P())).tolist(), z.tolist());
      const zt = devicePut(cplx([2 * n, 2 * n], 1), new NamedSharding(mesh, P(null, "x")));
      assert.deepEqual(devicePut(zt, new NamedSharding(mesh, P("x", null))).tolist(), cplx([2 * n, 2 * n], 1).tolist());
      // derivatives: the tangent of a complex output and the cotangent of a complex input are complex (not zero)
      const g = shardMap(
        (b: Array) => jnp.multiply(lax.psum(b, "x"), lax.complex(jnp.real(b), jnp.multiply(jnp.real(b), 2))),
        {
          mesh,
          inSpecs: P("x"),
          outSpecs: P("x"),
        },
      );
      sameOnDevices(
        `jvp of a complex shardMap on ${n} devices`,
        mesh.deviceIds,
        () => jvp(g, [z], [jnp.conj(z)])[1] as Array,
      );
      sameOnDevices(`vjp of a complex shardMap on ${n} devices`, mesh.deviceIds, () => {
        const [, pull] = vjp(g, z);
        return (pull(jnp.multiply(z, 0.5)) as Array[])[0];
      });
      const re = jnp.reshape(jnp.arange(2 * n * 3, { dtype: "float32" }), [2 * n, 3]);
      sameOnDevices(`grad through complex values of a shardMap on ${n} devices`, mesh.deviceIds, () =>
        grad((x: Array) => jnp.sum(jnp.abs(g(lax.complex(x, jnp.sin(x))))))(re),
      );
      // pmap of a complex function
      sameOnDevices(`pmap of complex64 on ${n} devices`, mesh.deviceIds, () =>
        pmap((b: Array) => jnp.multiply(lax.psum(b, "i"), jnp.conj(b)), { axisName: "i" })(cplx([n, 3], 2)),
      );
    }
    // complex128 (x64): exactly the emulation's values
    config.update("enableX64", true);
    try {
      const mesh = makeMesh([2], ["x"]);
      const z = jnp.astype(cplx([4, 2], 3), "complex128");
      const f = shardMap((b: Array) => jnp.multiply(lax.psum(b, "x"), b), { mesh, inSpecs: P("x"), outSpecs: P("x") });
      const y = sameOnDevices("psum(b) * b of complex128 on 2 devices", mesh.deviceIds, () => f(f(z)));
      assert.equal(y.dtype, "complex128");
    } finally {
      config.update("enableX64", false);
    }
  },
);

test(
  "a bfloat16 data-parallel MLP grad step (psum of bfloat16 grads) on 2 devices equals the emulation",
  { skip },
  () => {
    const mesh = makeMesh([2], ["x"]);
    const bf = (shape: number[], seed: number) =>
      jnp.astype(
        jnp.reshape(
          jnp.array(
            JSArray.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i * 0.73 + seed) * 0.5),
            { dtype: "float32" },
          ),
          shape,
        ),
        "bfloat16",
      );
    const [w1, w2, xs, ys] = [bf([4, 8], 1), bf([8, 2], 2), bf([8, 4], 3), bf([8, 2], 4)];
    const loss = (a: Array, b: Array, x: Array, y: Array) =>
      jnp.mean(jnp.square(jnp.subtract(jnp.matmul(nn.relu(jnp.matmul(x, a)), b), y)));
    const step = (a: Array, b: Array, x: Array, y: Array) => {
      const [ga, gb] = grad(loss, { argnums: [0, 1] })(a, b, x, y) as [Array, Array];
      // the data-parallel update: grads summed over the batch shards, one SGD step in bfloat16
      return jnp.concatenate([
        jnp.ravel(jnp.subtract(a, jnp.multiply(lax.psum(ga, "x"), 0.1))),
        jnp.ravel(jnp.subtract(b, jnp.multiply(lax.psum(gb, "x"), 0.1))),
      ]);
    };
    const run = () => shardMap(step, { mesh, inSpecs: [P(), P(), P("x"), P("x")], outSpecs: P() })(w1, w2, xs, ys);
    config.update("spmdRuntime", "emulation");
    const want = run();
    const before = lastLaunchTimeline();
    const got = onDevices(run);
    assert.notEqual(lastLaunchTimeline(), before, "the grad step ran on the device runtime");
    assert.equal(got.dtype, "bfloat16");
    assert.deepEqual(got.shape, want.shape);
    const [a, b] = [flat(got.tolist()), flat(want.tolist())];
    // bfloat16 keeps 8 significant bits: the two programs may round an intermediate differently, one bfloat16 ulp
    a.forEach((v, i) =>
      assert.ok(Math.abs(v - b[i]) <= 2 ** -7 * Math.max(Math.abs(b[i]), 2 ** -4), `[${i}] ${v} vs ${b[i]}`),
    );
    // and the step moved the weights (the psummed grads are not zero)
    assert.ok(b.some((v, i) => v !== flat(jnp.concatenate([jnp.ravel(w1), jnp.ravel(w2)]).tolist())[i]));
  },
);
