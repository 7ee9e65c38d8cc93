/**
 * @file The default SPMD runtime: spmdRuntime "auto" resolves to the devices when the native addon is loaded (to the
 * emulation without it or on the interpreter backend), the parallel API then launches device programs, and every case
 * the device runtime cannot run falls back per call to the emulation with the same values, noted only under
 * JAXTS_DEBUG_SPMD=1.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 4);
import {
  type Array,
  devicePut,
  jit,
  lax,
  makeMesh,
  numpy as jnp,
  pmap,
  shardMap,
  sharding,
  xmap,
} from "../../src/index.js";
import {
  deviceRuntimeUnavailable,
  launchCount,
  resolvedSpmdRuntime,
  spmdRuntimeInfo,
  synchronize,
} from "../../src/runtime/index.js";
import { shardedStorage } from "../../src/parallel/device-arrays.js";
import { devicesReport } from "../../src/parallel/devices-report.js";
import { flat, values } from "./device-compare.js";
const { P, NamedSharding } = sharding;

const noAddon = deviceRuntimeUnavailable();
const skip = noAddon ?? false;
/** The compiled tree (dist/), where the children run. */
const root = fileURLToPath(new URL("../..", import.meta.url));

/** g under spmdRuntime `rt` (restored afterwards) and the device launches it made. */
function under<T>(rt: "auto" | "emulation" | "devices", g: () => T): { value: T; launches: number } {
  config.update("spmdRuntime", rt);
  try {
    const before = launchCount();
    const value = g();
    synchronize();
    return { value, launches: launchCount() - before };
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
}

/** g under "auto" equals g on the emulation (exactly for integers, within float32 rounding); returns auto's launches. */
function sameAsEmulation(what: string, g: () => Array | Array[]): number {
  const want = under("emulation", g);
  assert.equal(want.launches, 0, `${what}: the emulation launched nothing`);
  const got = under("auto", g);
  const ws = [want.value].flat(),
    gs = [got.value].flat();
  assert.equal(gs.length, ws.length, `${what}: outputs`);
  gs.forEach((y, k) => {
    assert.deepEqual(y.shape, ws[k].shape, `${what}[${k}]: shape`);
    assert.equal(y.dtype, ws[k].dtype, `${what}[${k}]: dtype`);
    const a = flat(y.tolist()).map(Number),
      b = flat(ws[k].tolist()).map(Number);
    if (y.dtype.startsWith("int")) assert.deepEqual(a, b, what);
    else
      a.forEach((v, i) =>
        assert.ok(Math.abs(v - b[i]) <= 1e-5 * Math.max(1, Math.abs(b[i])), `${what}: ${v} vs ${b[i]}`),
      );
  });
  return got.launches;
}

test("spmdRuntime is 'auto' unless JAXTS_SPMD_RUNTIME chose another; config accepts auto, emulation and devices", () => {
  const env = process.env.JAXTS_SPMD_RUNTIME?.trim();
  assert.equal(INITIAL_SPMD_RUNTIME, env ? env : "auto");
  assert.throws(
    () => config.update("spmdRuntime", "device" as "devices"),
    /config.update: spmdRuntime must be "auto" or "emulation" or "devices", got "device"/,
  );
  const res = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `await import(${JSON.stringify(new URL("../../src/core/config.js", import.meta.url).href)});`,
    ],
    { encoding: "utf8", env: { ...process.env, JAXTS_SPMD_RUNTIME: "gpu" } },
  );
  assert.notEqual(res.status, 0);
  assert.match(
    res.stderr,
    /environment variable JAXTS_SPMD_RUNTIME="gpu" must be one of "auto", "emulation", "devices"/,
  );
});

test("'auto' resolves to the devices with the addon on the onnx backend, else to the emulation, and says why", () => {
  const saved = config.backend;
  config.update("spmdRuntime", "auto");
  try {
    assert.equal(resolvedSpmdRuntime(), noAddon ? "emulation" : "devices");
    assert.deepEqual(
      spmdRuntimeInfo(),
      noAddon
        ? { setting: "auto", resolved: "emulation", reason: `the device runtime is unavailable (${noAddon})` }
        : { setting: "auto", resolved: "devices", reason: null },
    );
    config.update("backend", "interpreter");
    assert.deepEqual(spmdRuntimeInfo(), {
      setting: "auto",
      resolved: "emulation",
      reason: 'config.backend is "interpreter", not "onnx"',
    });
    config.update("backend", saved);
    config.update("spmdRuntime", "emulation");
    assert.equal(resolvedSpmdRuntime(), "emulation");
    assert.deepEqual(spmdRuntimeInfo(), {
      setting: "emulation",
      resolved: "emulation",
      reason: "chosen by config spmdRuntime",
    });
  } finally {
    config.update("backend", saved);
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
});

test(
  "under 'auto' shardMap, pmap, xmap and jit of a shardMap launch on the devices with the emulation's values",
  { skip },
  () => {
    const mesh = makeMesh([4], ["x"]);
    const x = values([8, 3], "float32"),
      xi = values([8, 3], "int32");
    const sm = shardMap((b: Array) => jnp.subtract(b, lax.pmean(b, "x")), { mesh, inSpecs: P("x"), outSpecs: P("x") });
    assert.ok(sameAsEmulation("shardMap", () => sm(x)) > 0, "shardMap launched");
    assert.ok(sameAsEmulation("jit(shardMap)", () => jit(sm)(x)) > 0, "jit(shardMap) launched");
    const pf = pmap((b: Array) => lax.psum(jnp.multiply(b, 3), "i"), "i");
    assert.ok(sameAsEmulation("pmap int32", () => pf(jnp.reshape(xi, [4, 6]))) > 0, "pmap launched");
    const xf = xmap((v: Array) => lax.psum(v, "b"), {
      mesh,
      inAxes: ["b", "..."],
      outAxes: {},
      axisResources: { b: "x" },
    });
    assert.ok(sameAsEmulation("xmap", () => xf(jnp.reshape(x, [4, 6]))) > 0, "xmap launched");
    // a jit staged on the devices and run after "auto" resolved to the emulation (the interpreter backend) runs the emulation
    const js = jit(sm);
    const want = under("emulation", () => js(x).tolist()).value;
    config.update("spmdRuntime", "auto");
    const saved = config.backend;
    try {
      js(x).blockUntilReady();
      config.update("backend", "interpreter");
      const before = launchCount();
      const got = js(x).tolist();
      synchronize();
      assert.equal(launchCount(), before, "no launch on the interpreter backend");
      flat(got).forEach((v, i) =>
        assert.ok(Math.abs(v - flat(want)[i]) <= 1e-5 * Math.max(1, Math.abs(flat(want)[i]))),
      );
    } finally {
      config.update("backend", saved);
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
    // devicePut of a NamedSharding holds real shards under "auto", host-backed metadata on the emulation
    const s = new NamedSharding(mesh, P("x"));
    assert.notEqual(under("auto", () => shardedStorage(devicePut(x, s))).value, null);
    assert.equal(under("emulation", () => shardedStorage(devicePut(x, s))).value, null);
  },
);

test(
  "what the device runtime cannot run falls back per call under 'auto' with the emulation's values",
  { skip },
  () => {
    const mesh = makeMesh([4], ["x"]);
    const mesh2 = makeMesh([2, 2], ["a", "b"]);
    const x = values([8, 2], "float32");
    const psum = (b: Array) => lax.psum(b, "x");
    // a body with a primitive that has no ONNX lowering (eig runs on the reference interpreter)
    const n = sameAsEmulation("a body needing the interpreter", () =>
      shardMap((b: Array) => jnp.sort(jnp.real(jnp.linalg.eigvals(jnp.diag(psum(b).reshape([-1]))))), {
        mesh,
        inSpecs: P("x"),
        outSpecs: P(),
      })(x),
    );
    assert.equal(n, 0, "a body needing the interpreter: no launch");
    // a nested shardMap: the outer one runs the emulation, the inner one inside it too
    sameAsEmulation("nested shardMap", () =>
      shardMap(
        (b: Array) =>
          shardMap((c: Array) => lax.psum(c, "b"), { mesh: mesh2, axisNames: ["b"], inSpecs: P("b"), outSpecs: P() })(
            b,
          ),
        { mesh: mesh2, axisNames: ["a"], inSpecs: P("a"), outSpecs: P("a") },
      )(x),
    );
    // partially manual (axisNames) and a null in_spec: the emulation's forms
    sameAsEmulation("axisNames and a null in_spec", () =>
      shardMap((b: Array, k: number) => jnp.multiply(lax.psum(b, "a"), k), {
        mesh: mesh2,
        axisNames: ["a"],
        inSpecs: [P("a"), null],
        outSpecs: P(),
      })(x, 3),
    );
    // xmap resources the device path does not map (one mesh axis serving two names)
    assert.equal(
      sameAsEmulation("xmap with a mesh axis shared by two names", () =>
        xmap((v: Array) => lax.psum(v, ["n", "m"]), {
          mesh: mesh2,
          inAxes: ["n", "m", "..."],
          outAxes: {},
          axisResources: { n: "a", m: "a" },
        })(jnp.reshape(x, [2, 2, 4])),
      ),
      0,
    );
    // shardMap inside a loop or branch body: the body compiles to one program there, so the emulation runs it (on the
    // devices every iteration would be a launch and the rest of the body would run on the interpreter)
    const step = shardMap((c: Array, b: Array) => jnp.add(c, lax.psum(b, "x")), {
      mesh,
      inSpecs: [P(), P("x")],
      outSpecs: P(),
    });
    const c0 = jnp.zeros([2, 2]);
    const xs = jnp.reshape(x, [2, 4, 2]);
    const forms: [string, () => Array][] = [
      ["scan", () => lax.scan((c: Array, b: Array) => [step(c, b), jnp.sum(c)], c0, xs)[0] as Array],
      ["map", () => lax.map((b: Array) => step(c0, b), xs) as Array],
      ["foriLoop", () => lax.foriLoop(0, 3, (_i: Array, c: Array) => step(c, x), c0) as Array],
      [
        "whileLoop",
        () =>
          (
            lax.whileLoop(
              ([i]: Array[]) => jnp.less(i, 2),
              ([i, c]: Array[]) => [jnp.add(i, 1), step(c, x)],
              [jnp.array(0), c0],
            ) as Array[]
          )[1],
      ],
      [
        "cond",
        () =>
          lax.cond(
            jnp.array(true),
            (c: Array, b: Array) => step(c, b),
            (c: Array) => jnp.negative(c),
            c0,
            x,
          ) as Array,
      ],
      [
        "switch",
        () =>
          lax.switch(jnp.array(1), [(c: Array) => jnp.negative(c), (c: Array, b: Array) => step(c, b)], c0, x) as Array,
      ],
    ];
    for (const [name, g] of forms) {
      assert.equal(sameAsEmulation(`shardMap in ${name}`, g), 0, `${name}: no launch`);
      assert.equal(
        sameAsEmulation(`shardMap in ${name} under jit`, () => jit(g)()),
        0,
        `jit ${name}: no launch`,
      );
    }
  },
);

/** Runs `script` (an ES module body) in a child process with `env` added; returns its status, stdout and stderr. */
function child(script: string, env: Record<string, string>) {
  const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, JAXTS_SPMD_RUNTIME: "", ...env },
    cwd: root,
  });
  return { status: res.status, out: res.stdout, err: res.stderr };
}
const FALLBACKS = `
  const { config } = await import(${JSON.stringify(new URL("../../src/core/config.js", import.meta.url).href)});
  config.update("numCpuDevices", 2);
  const { lax, makeMesh, numpy: jnp, shardMap, sharding } = await import(${JSON.stringify(new URL("../../src/index.js", import.meta.url).href)});
  const mesh = makeMesh([2], ["x"]);
  const f = shardMap((b) => lax.psum(b, "x"), { mesh, inSpecs: sharding.P("x"), outSpecs: sharding.P() });
  const x = jnp.arange(4, { dtype: "float32" });
  const g = shardMap((b) => jnp.sort(jnp.real(jnp.linalg.eigvals(jnp.diag(lax.psum(b, "x"))))), { mesh, inSpecs: sharding.P("x"), outSpecs: sharding.P() });
  const r = [f(x).tolist(), g(x).tolist(), g(x).tolist()];
  console.log(JSON.stringify(r));
`;

test("fallbacks under 'auto' are silent, and noted once per reason with JAXTS_DEBUG_SPMD=1", { skip }, () => {
  const want = JSON.stringify([
    [2, 4],
    [2, 4],
    [2, 4],
  ]);
  const quiet = child(FALLBACKS, {});
  assert.equal(quiet.status, 0, quiet.err);
  assert.equal(quiet.out.trim(), want);
  assert.doesNotMatch(quiet.err, /runs on the emulation/);
  const noisy = child(FALLBACKS, { JAXTS_DEBUG_SPMD: "1" });
  assert.equal(noisy.status, 0, noisy.err);
  assert.equal(noisy.out.trim(), want);
  const notes = noisy.err.split("\n").filter((l) => l.includes("runs on the emulation"));
  assert.deepEqual(notes, [
    "jaxts: shardMap runs on the emulation (nested vmap), not the device runtime: the body needs the interpreter for eig runs on the interpreter: eig: no ONNX lowering (no ONNX lowering for complex operands (notes/complex.md))",
  ]);
});

test("without the addon 'auto' is the emulation, silently, with the same values", () => {
  const r = child(FALLBACKS, { JAXTS_NATIVE: "0" });
  assert.equal(r.status, 0, r.err);
  assert.equal(
    r.out.trim(),
    JSON.stringify([
      [2, 4],
      [2, 4],
      [2, 4],
    ]),
  );
  assert.doesNotMatch(r.err, /runs on the emulation/);
});

test("the device listing (jaxts devices) names the devices and the resolved runtime", () => {
  const report = devicesReport();
  assert.match(report, /^4 CPU device\(s\) \(numCpuDevices=4;/);
  assert.match(report, /CpuDevice\(id=3\) platform=cpu process=0: \d+ bytes in use/);
  assert.match(
    report,
    noAddon ? /spmdRuntime: auto -> emulation/ : /spmdRuntime: auto -> devices \(one executor thread per device/,
  );
  const cli = spawnSync(process.execPath, ["src/cli.js", "devices"], {
    encoding: "utf8",
    cwd: root,
    env: { ...process.env, JAXTS_SPMD_RUNTIME: "", JAXTS_NATIVE: "0", JAXTS_NUM_CPU_DEVICES: "2" },
  });
  assert.equal(cli.status, 0, cli.stderr);
  assert.match(cli.stdout, /^2 CPU device\(s\)/);
  assert.match(
    cli.stdout,
    /spmdRuntime: auto -> emulation \(nested named vmaps in one program\): the device runtime is unavailable \(disabled by JAXTS_NATIVE=0\)/,
  );
});
