/**
 * @file grad / jvp / vjp / linearize / vmap of shardMap on the device runtime (the shard_map primitive's rules in
 * src/parallel/shard-map-rules.ts): each derived shard_map runs on the devices, equals the emulation and agrees with
 * finite differences.
 */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import {
  type Array,
  grad,
  jit,
  jvp,
  lax,
  linearize,
  makeMesh,
  numpy as jnp,
  pmap,
  shardMap,
  sharding,
  vjp,
  vmap,
} from "../../src/index.js";
import { deviceRuntimeUnavailable, lastLaunchTimeline, openRendezvous } from "../../src/runtime/index.js";
import { sameOnDevices, values } from "./device-compare.js";
import type { Mesh } from "../../src/parallel/mesh.js";
const { P } = sharding;
const JSArray = globalThis.Array;

const skip = deviceRuntimeUnavailable() ?? false;
/** Transformed programs sum in another order than the emulation: equal within float32 rounding of those sums. */
const same = (what: string, mesh: Mesh, g: () => Array): Array => sameOnDevices(what, mesh.deviceIds, g, true, 1e-4);
const cat = (xs: Array[]): Array => jnp.concatenate(xs.map((x) => jnp.ravel(x)));

/** Counts the device launches made while f runs and the fallback notes it prints. */
function onDevices<T>(f: () => T): { value: T; launches: number; notes: string[] } {
  const notes: string[] = [];
  const warn = console.warn;
  console.warn = (...a: unknown[]) => {
    notes.push(a.map(String).join(" "));
  };
  config.update("spmdRuntime", "devices");
  let launches = 0,
    last = lastLaunchTimeline();
  const seen = () => {
    const t = lastLaunchTimeline();
    if (t !== last) {
      launches++;
      last = t;
    }
  };
  try {
    const value = f();
    seen();
    return { value, launches, notes };
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    console.warn = warn;
  }
}

/** <grad f(x), v> against the central difference (f(x + e v) - f(x - e v)) / 2e, evaluated on the devices. */
function checkDirectional(
  what: string,
  f: (x: Array) => Array,
  x: Array,
  gx: Array,
  v: Array,
  eps = 1e-2,
  tol = 2e-2,
): void {
  config.update("spmdRuntime", "devices");
  try {
    const fd =
      (Number(f(jnp.add(x, jnp.multiply(v, eps))).item()) - Number(f(jnp.subtract(x, jnp.multiply(v, eps))).item())) /
      (2 * eps);
    const an = Number(jnp.sum(jnp.multiply(gx, v)).item());
    assert.ok(Math.abs(fd - an) <= tol * Math.max(1, Math.abs(fd)), `${what}: finite difference ${fd} vs grad ${an}`);
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
}

/** A data-parallel MLP loss: replicated parameters (flat), the batch split over "x", the loss averaged with pmean. */
function dpLoss(mesh: Mesh, xs: Array, ys: Array) {
  const body = (w: Array, xb: Array, yb: Array) => {
    const w1 = jnp.reshape(lax.slice(w, [0], [12]), [3, 4]),
      w2 = jnp.reshape(lax.slice(w, [12], [20]), [4, 2]);
    const h = jnp.tanh(jnp.matmul(xb, w1));
    return lax.pmean(jnp.mean(jnp.square(jnp.subtract(jnp.matmul(h, w2), yb))), "x");
  };
  const sm = shardMap(body, { mesh, inSpecs: [P(), P("x"), P("x")], outSpecs: P() });
  return (w: Array) => sm(w, xs, ys);
}

for (const n of [1, 2, 4, 8]) {
  test(
    `grad of a data-parallel loss (shardMap with pmean) runs forward and backward on ${n} device(s)`,
    { skip },
    () => {
      const mesh = makeMesh([n], ["x"]);
      const xs = values([2 * n, 3], "float32"),
        ys = jnp.multiply(values([2 * n, 2], "float32"), 0.1);
      const w = jnp.multiply(values([20], "float32"), 0.05);
      const loss = dpLoss(mesh, jnp.multiply(xs, 0.1), ys);
      const g = same("grad", mesh, () => grad(loss)(w));
      const run = onDevices(() => grad(loss)(w));
      assert.equal(run.launches, 1, "the last launch is the transposed shard_map");
      assert.deepEqual(run.notes, [], "no fallback to the emulation");
      checkDirectional("grad vs finite differences", loss, w, g, jnp.cos(jnp.arange(20, { dtype: "float32" })));
      assert.equal(openRendezvous(), 0);
    },
  );
}

test(
  "jvp, linearize and vjp of shardMaps with every collective (transposes of psum, all_gather, psum_scatter, all_to_all, ppermute)",
  { skip },
  () => {
    const mesh = makeMesh([4], ["x"]);
    const x = jnp.multiply(values([8, 4], "float32"), 0.1),
      t = jnp.cos(values([8, 4], "float32"));
    const shift = JSArray.from({ length: 4 }, (_, i) => [i, (i + 1) % 4] as [number, number]);
    const bodies: [string, (b: Array) => Array, sharding.PartitionSpec][] = [
      ["psum", (b) => jnp.sin(lax.psum(jnp.multiply(b, b), "x")), P()],
      ["psum then varying", (b) => jnp.multiply(b, lax.psum(jnp.mean(jnp.exp(jnp.multiply(b, 0.1))), "x")), P("x")],
      ["all_gather", (b) => jnp.tanh(lax.allGather(jnp.square(b), "x", { tiled: true })), P()],
      [
        "psum_scatter",
        (b) =>
          jnp.sin(lax.psumScatter(jnp.multiply(b, jnp.tile(b, [1, 1])), "x", { scatterDimension: 1, tiled: true })),
        P("x"),
      ],
      ["all_to_all", (b) => jnp.exp(lax.allToAll(jnp.multiply(b, 0.5), "x", 1, 0, { tiled: true })), P("x")],
      ["ppermute", (b) => jnp.multiply(lax.ppermute(jnp.sin(b), "x", shift), b), P("x")],
    ];
    for (const [name, body, outSpec] of bodies) {
      const f = (v: Array) => shardMap(body, { mesh, inSpecs: P("x"), outSpecs: outSpec })(v);
      const loss = (v: Array) => jnp.add(jnp.sum(jnp.multiply(f(v), 0.3)), jnp.sum(jnp.square(jnp.sin(f(v)))));
      same(`${name}: jvp`, mesh, () => (jvp(f, [x], [t]) as unknown as Array[])[1]);
      same(`${name}: linearize`, mesh, () => {
        const [, lin] = linearize(f, x);
        return (lin as (v: Array) => Array)(t);
      });
      same(`${name}: vjp`, mesh, () => {
        const [y, back] = vjp(f, x);
        return (back(jnp.cos(y as Array)) as Array[])[0];
      });
      const g = same(`${name}: grad`, mesh, () => grad(loss)(x));
      checkDirectional(`${name}: grad vs finite differences`, loss, x, g, t);
    }
  },
);

test(
  "grad of tensor-parallel and 2-D (data x model) shardMaps; replicated cotangents are psummed over the axes they were fed along",
  { skip },
  () => {
    const mesh = makeMesh([2, 2], ["data", "model"]);
    const x = jnp.multiply(values([4, 3], "float32"), 0.2);
    const w1 = jnp.multiply(values([3, 4], "float32"), 0.3),
      w2 = jnp.multiply(values([4, 2], "float32"), -0.2);
    const f = shardMap(
      (xb: Array, a: Array, b: Array) =>
        lax.pmean(jnp.sum(jnp.square(lax.psum(jnp.matmul(jnp.tanh(jnp.matmul(xb, a)), b), "model"))), "data"),
      { mesh, inSpecs: [P("data"), P(null, "model"), P("model", null)], outSpecs: P() },
    );
    const loss = (a: Array, b: Array) => f(x, a, b);
    const g = same("grads of both weights", mesh, () =>
      cat(grad(loss, { argnums: [0, 1] })(w1, w2) as unknown as Array[]),
    );
    const gw1 = jnp.reshape(lax.slice(g, [0], [12]), [3, 4]);
    checkDirectional("w1 vs finite differences", (a) => loss(a, w2), w1, gw1, jnp.sin(values([3, 4], "float32")));
    // an output replicated over "model" only (P("data")): its cotangent is split over the copies, not counted twice
    const h = shardMap((xb: Array, a: Array) => lax.psum(jnp.matmul(xb, a), "model"), {
      mesh,
      inSpecs: [P("data"), P(null, "model")],
      outSpecs: P("data"),
    });
    same("output replicated over one axis", mesh, () => grad((a: Array) => jnp.sum(jnp.sin(h(x, a))))(w1));
    // a weight replicated everywhere used without collectives: each device's cotangent is summed
    const k = shardMap((xb: Array, a: Array) => jnp.matmul(xb, a), {
      mesh,
      inSpecs: [P("data"), P()],
      outSpecs: P("data"),
    });
    same("replicated weight, sharded output", mesh, () => grad((a: Array) => jnp.sum(jnp.square(k(x, a))))(w1));
  },
);

test("grad through collectives inside lax.scan and foriLoop bodies on devices", { skip }, () => {
  const mesh = makeMesh([4], ["x"]);
  const x = jnp.multiply(values([8, 3], "float32"), 0.1);
  const f = shardMap(
    (b: Array) => {
      const [c, ys] = lax.scan(
        (carry: Array, row: Array) => {
          const s = lax.psum(jnp.multiply(row, carry), "x");
          return [jnp.tanh(jnp.add(carry, s)), s];
        },
        jnp.ones([3], { dtype: "float32" }),
        b,
      );
      return jnp.reshape(jnp.add(jnp.sum(c), jnp.sum(ys)), [1]);
    },
    { mesh, inSpecs: P("x"), outSpecs: P("x") },
  );
  const loss = (v: Array) => jnp.sum(jnp.sin(f(v)));
  const g = same("grad through psum in scan", mesh, () => grad(loss)(x));
  checkDirectional("scan: finite differences", loss, x, g, jnp.cos(values([8, 3], "float32")));
  const ring = shardMap(
    (b: Array) =>
      jnp.sum(
        lax.foriLoop(
          0,
          3,
          (_i: Array, acc: Array) =>
            jnp.sin(
              jnp.add(
                b,
                lax.ppermute(acc, "x", [
                  [0, 1],
                  [1, 2],
                  [2, 3],
                  [3, 0],
                ]),
              ),
            ),
          b,
        ),
        1,
      ),
    { mesh, inSpecs: P("x"), outSpecs: P("x") },
  );
  same("grad through ppermute in foriLoop", mesh, () => grad((v: Array) => jnp.sum(ring(v)))(x));
});

test(
  "grad of pmap (checkVma false: an unsharded output is the first device's) and jit(grad) of a shardMap",
  { skip },
  () => {
    const mesh = makeMesh([4], ["x"]);
    const x = jnp.multiply(values([4, 3], "float32"), 0.2);
    same("grad of sum(pmap)", mesh, () =>
      grad((v: Array) => jnp.sum(jnp.square(pmap((b: Array) => jnp.sin(lax.psum(b, "i")), "i")(v))))(x),
    );
    const first = same("grad through outAxes null", mesh, () =>
      grad((v: Array) => jnp.sum(pmap((b: Array) => jnp.sin(b), { axisName: "i", outAxes: null })(v)))(x),
    );
    // only device 0's block feeds the output: the other rows get zero gradient
    assert.deepEqual(
      (first.tolist() as number[][])
        .slice(1)
        .flat()
        .map((v) => v + 0),
      JSArray(9).fill(0),
    );
    const loss = dpLoss(mesh, values([8, 3], "float32"), jnp.zeros([8, 2]));
    same("jit(grad)", mesh, () => jit(grad(loss))(jnp.multiply(values([20], "float32"), 0.05)));
  },
);

test("vmap of shardMap: the batch dimension leads every spec (unsplit, or over spmdAxisName)", { skip }, () => {
  const mesh = makeMesh([2, 2], ["a", "b"]);
  const x = values([3, 4, 2], "float32"),
    w = values([2], "float32");
  const f = shardMap((blk: Array, v: Array) => jnp.add(lax.psum(jnp.multiply(blk, v), "a"), lax.axisIndex("b")), {
    mesh,
    inSpecs: [P("a", "b"), P()],
    outSpecs: P(null, "b"),
  });
  same("vmap over a sharded argument", mesh, () => vmap((u: Array) => f(u, w))(x));
  same("vmap over both, batch not leading", mesh, () =>
    vmap((u: Array, v: Array) => f(u, v), { inAxes: [2, 0] })(jnp.transpose(x, [1, 2, 0]), values([3, 2], "float32")),
  );
  same("vmap of grad of shardMap", mesh, () =>
    vmap((v: Array) => grad((u: Array) => jnp.sum(jnp.sin(f(jnp.multiply(values([4, 2], "float32"), 0.1), u))))(v))(
      values([3, 2], "float32"),
    ),
  );
  // spmdAxisName "a": the batch is split over mesh axis "a", each device maps its share
  const g = shardMap((blk: Array) => jnp.multiply(blk, lax.psum(jnp.sum(blk), "b")), {
    mesh,
    inSpecs: P("b"),
    outSpecs: P("b"),
  });
  const run = onDevices(() => vmap(g, { spmdAxisName: "a" })(values([4, 6], "float32")));
  assert.ok(run.launches >= 1);
  assert.deepEqual(run.notes, [], "no fallback to the emulation");
  same("vmap with spmdAxisName", mesh, () => vmap(g, { spmdAxisName: "a" })(values([4, 6], "float32")));
  same("vmap without spmdAxisName", mesh, () => vmap(g)(values([4, 6], "float32")));
});

test(
  "second order (hessian: jvp of the transposed shard_map) on devices; a body holding a gradient through psum keeps the emulation's rules",
  { skip },
  async () => {
    const { hessian } = await import("../../src/index.js");
    const mesh = makeMesh([4], ["x"]);
    const xs = jnp.multiply(values([8, 1], "float32"), 0.1);
    const f = shardMap((w: Array, b: Array) => lax.psum(jnp.sum(jnp.tanh(jnp.multiply(b, w))), "x"), {
      mesh,
      inSpecs: [P(), P("x")],
      outSpecs: P(),
    });
    const h = same("hessian", mesh, () =>
      hessian((v: Array) => f(v, xs))(jnp.array([0.5, -0.3], { dtype: "float32" })),
    );
    // the loss is a sum over w's entries: its hessian is diagonal
    const hl = h.tolist() as number[][];
    assert.ok(hl[0][1] === 0 && hl[1][0] === 0 && hl[0][0] !== 0, `diagonal hessian: ${JSON.stringify(hl)}`);
    // per-device partial gradients (a psum_transpose inside the body), differentiated again: through the emulation
    const inner = shardMap(
      (w: Array, b: Array) =>
        jnp.reshape(grad((v: Array) => lax.psum(jnp.sum(jnp.tanh(jnp.multiply(b, v))), "x"))(w), [1, 2]),
      { mesh, inSpecs: [P(), P("x")], outSpecs: P("x") },
    );
    sameOnDevices(
      "grad of a body with an inner grad",
      mesh.deviceIds,
      () => grad((v: Array) => jnp.sum(jnp.square(inner(v, xs))))(jnp.array([0.5, -0.3], { dtype: "float32" })),
      false,
      1e-4,
    );
  },
);
