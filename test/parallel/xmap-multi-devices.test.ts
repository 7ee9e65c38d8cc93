/** @file xmap with several mesh axes per name and blocks of several elements per device, on the device runtime. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, lax, makeMesh, numpy as jnp, xmap } from "../../src/index.js";
import type { Mesh } from "../../src/parallel/mesh.js";
import { deviceRuntimeUnavailable, launchCount } from "../../src/runtime/index.js";
import { sameOnDevices, values } from "./device-compare.js";

const skip = deviceRuntimeUnavailable() ?? false;
const rows = (a: Array) => a.tolist() as number[][];
const close = (what: string, got: unknown, want: number[] | number[][]) => {
  const g = (got as number[][]).flat(),
    w = want.flat();
  assert.equal(g.length, w.length, `${what}: size`);
  w.forEach((v, i) =>
    assert.ok(Math.abs(g[i] - v) <= 1e-5 * Math.max(1, Math.abs(v)), `${what}[${i}]: ${g[i]} vs ${v}`),
  );
};

/**
 * psum / pmean / allGather / axisIndex over a name of size n split over `axes`: equal to the emulation (launching on
 * every device of the mesh) and to a loop over the name's slices in plain JS.
 */
function collectivesOverName(label: string, mesh: Mesh, axes: string | string[], n: number): void {
  const ids = mesh.deviceIds;
  const opts = { mesh, axisResources: { batch: axes } };
  const x = values([n, 3], "float32"),
    xi = values([3, n], "int32");
  const xs = rows(x),
    xis = rows(xi);
  const before = launchCount();
  const centred = sameOnDevices(`${label}: v - pmean(v)`, ids, () =>
    xmap((v: Array) => jnp.subtract(v, lax.pmean(v, "batch")), {
      ...opts,
      inAxes: ["batch", "..."],
      outAxes: ["batch", "..."],
    })(x),
  );
  const mean = [0, 1, 2].map((c) => xs.reduce((a, r) => a + r[c], 0) / n);
  close(
    `${label}: v - pmean(v) vs the slices`,
    centred.tolist(),
    xs.map((r) => r.map((v, c) => v - mean[c])),
  );
  const scaled = sameOnDevices(`${label}: v * axisIndex (int32, named dim last)`, ids, () =>
    xmap((v: Array) => jnp.multiply(v, lax.axisIndex("batch")), {
      ...opts,
      inAxes: { 1: "batch" },
      outAxes: ["batch", "..."],
    })(xi),
  );
  assert.deepEqual(
    scaled.tolist(),
    [...globalThis.Array(n).keys()].map((i) => xis.map((r) => r[i] * i + 0)),
    `${label}: axisIndex is the global index (device block offset + local position)`,
  );
  const total = sameOnDevices(`${label}: psum, replicated result`, ids, () =>
    xmap((v: Array) => lax.psum(v, "batch"), { ...opts, inAxes: [null, "batch"], outAxes: {} })(xi),
  );
  assert.deepEqual(
    total.tolist(),
    xis.map((r) => r.reduce((a, b) => a + b, 0)),
    `${label}: psum vs the slices`,
  );
  const gathered = sameOnDevices(`${label}: allGather`, ids, () =>
    xmap((v: Array) => lax.allGather(v, "batch"), { ...opts, inAxes: ["batch", "..."], outAxes: {} })(x),
  );
  close(`${label}: allGather is every slice in index order`, gathered.tolist(), xs);
  const sized = sameOnDevices(`${label}: axisSize`, ids, () =>
    xmap((v: Array) => jnp.add(v, lax.axisSize("batch")), {
      ...opts,
      inAxes: [null, "batch"],
      outAxes: [null, "batch"],
    })(xi),
  );
  assert.deepEqual(
    sized.tolist(),
    xis.map((r) => r.map((v) => v + n)),
    `${label}: axisSize is the whole name`,
  );
  assert.ok(launchCount() > before, `${label}: the launch counter grew`);
}

// a warning (spmdRuntime "devices" explicitly) names every fallback; these layouts must not fall back
const warned: string[] = [];
const warn = console.warn;
console.warn = (...a: unknown[]) => {
  warned.push(a.map(String).join(" "));
};
test.after(() => {
  console.warn = warn;
});

test("xmap with ('x', 'y') resources on a 2x2 mesh: one element per device, x-major", { skip }, () => {
  const mesh = makeMesh([2, 2], ["x", "y"]);
  collectivesOverName("(x, y), size 4", mesh, ["x", "y"], 4);
  collectivesOverName("(y, x), size 4", mesh, ["y", "x"], 4);
  assert.deepEqual(warned, [], "no fallback");
});

test("xmap with a named axis of size 8 on 2 and 4 devices: a block per device, vmapped inside", { skip }, () => {
  collectivesOverName("size 8 on 2 devices", makeMesh([2], ["dp"]), "dp", 8);
  collectivesOverName("size 8 on 4 devices", makeMesh([4], ["dp"]), "dp", 8);
  collectivesOverName("size 8 on (x, y) of a 2x2 mesh", makeMesh([2, 2], ["x", "y"]), ["x", "y"], 8);
  assert.deepEqual(warned, [], "no fallback");
});

test("xmap blocks with a second name: psum over a tuple of a block name and a vmap name", { skip }, () => {
  const mesh = makeMesh([2, 2], ["x", "y"]);
  const x = values([4, 3, 2], "float32"); // names b (4, a block of 2 on x), k (3, a vmap), m (2 on y)
  const f = xmap((v: Array) => jnp.add(lax.psum(v, ["b", "k"]), jnp.multiply(lax.axisIndex(["m", "b"]), v)), {
    mesh,
    inAxes: ["b", "k", "m"],
    outAxes: ["m", "b", "k"],
    axisResources: { b: "x", m: "y" },
  });
  const y = sameOnDevices("psum over (b, k), axisIndex over (m, b)", mesh.deviceIds, () => f(x));
  const xs = x.tolist() as number[][][];
  const want = [0, 1].map((m) =>
    [0, 1, 2, 3].map((b) =>
      [0, 1, 2].map((k) => {
        let s = 0;
        for (let bb = 0; bb < 4; bb++) for (let kk = 0; kk < 3; kk++) s += xs[bb][kk][m];
        return s + (m * 4 + b) * xs[b][k][m];
      }),
    ),
  );
  close("against the slices", (y.tolist() as number[][][]).flat(), want.flat());
  assert.deepEqual(warned, [], "no fallback");
});

test("xmap: a name whose size its resources do not divide gives JAX's error on both runtimes", () => {
  const mesh = makeMesh([2, 2], ["x", "y"]);
  for (const rt of ["emulation", "devices"] as const) {
    if (rt === "devices" && skip) continue;
    config.update("spmdRuntime", rt);
    try {
      assert.throws(
        () =>
          xmap((v: Array) => v, {
            mesh,
            inAxes: ["batch", "..."],
            outAxes: ["batch", "..."],
            axisResources: { batch: ["x", "y"] },
          })(jnp.ones([6, 2])),
        {
          message:
            'xmap: size of axis "batch" (6) is not divisible by the total number of resources assigned to this axis (["x","y"], 4 in total)',
        },
      );
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  }
});

test("xmap layouts still on the emulation say so once, naming the layout", { skip }, () => {
  const mesh = makeMesh([2, 2], ["x", "y"]);
  const x = values([2, 2, 3], "float32");
  warned.length = 0;
  for (let i = 0; i < 2; i++)
    sameOnDevices(
      "one mesh axis serving two names",
      mesh.deviceIds,
      () =>
        xmap((v: Array) => lax.psum(v, ["a", "b"]), {
          mesh,
          inAxes: ["a", "b", "..."],
          outAxes: {},
          axisResources: { a: "x", b: ["x"] },
        })(x),
      false,
    );
  assert.equal(warned.length, 1, "said once");
  assert.match(warned[0], /xmap runs on the emulation .*mesh axis "x" is a resource of both "a" and "b"/);
});
