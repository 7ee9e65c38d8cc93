/** @file The session runners: jaxts's native ORT runner (outputs written into caller buffers, pooled jit outputs, errors) and the onnxruntime-node fallback computing the same results. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { repoRoot } from "../../helpers/repo-root.js";
import { GraphBuilder } from "../../../src/backends/onnx/graph-builder.js";
import { createSessionSync, fastRunner, runSessionSync, runnerKind } from "../../../src/backends/onnx/ort-runtime.js";
import { addonFiles } from "../../../src/backends/onnx/addon-files.js";
import { bufferPoolStats } from "../../../src/backends/onnx/buffer-pool.js";
import * as jax from "../../../src/index.js";
import { type Array, numpy as jnp } from "../../../src/index.js";

function matmulModel(m: number, k: number, n: number): Uint8Array {
  const g = new GraphBuilder("mm");
  g.addInput("a", "float32", [m, k]);
  g.addInput("b", "float32", [k, n]);
  g.addNode("MatMul", ["a", "b"], ["c"]);
  g.addOutput("c", "float32", [m, n]);
  return g.toModelBytes();
}
const seq = (n: number, f: (i: number) => number) => Float32Array.from({ length: n }, (_, i) => f(i));
function refMatmul(a: Float32Array, b: Float32Array, m: number, k: number, n: number): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let q = 0; q < k; q++) s += a[i * k + q] * b[q * n + j];
      c[i * n + j] = s;
    }
  return c;
}

/** Whether this host can have the addon: a C++ compiler for the source build (CI always has one) or a prebuild. */
function addonExpected(): string | null {
  const root = repoRoot();
  if (process.env.JAXTS_NATIVE === "0") return null;
  if (addonFiles(root).length > 0) return null;
  const cxx = process.env.CXX || "g++";
  const res = spawnSync(cxx, ["--version"], { encoding: "utf8" });
  return res.error || res.status !== 0
    ? `no C++ compiler (${cxx}) to build native/ort-addon.cc and no prebuilt addon for ${process.platform}-${process.arch}`
    : null;
}

test("the native runner is in use (npm run build compiles it with g++; JAXTS_NATIVE=0 disables it)", (t) => {
  const r = runnerKind();
  const cannot = addonExpected();
  if (cannot) {
    t.skip(`${cannot}: sessions run on onnxruntime-node's binding (${r.why})`);
    return;
  }
  if (process.env.JAXTS_NATIVE === "0") assert.equal(r.kind, "onnxruntime-node");
  else assert.equal(r.kind, "native", `native runner unavailable: ${r.why}`);
});

test("onnxruntime-node is pinned to exactly the ONNX Runtime the addon's C API slots were written for", () => {
  const root = pathToFileURL(`${repoRoot()}/`);
  const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as {
    dependencies: Record<string, string>;
  };
  const lock = JSON.parse(readFileSync(new URL("package-lock.json", root), "utf8")) as {
    packages: Record<string, { version?: string; dependencies?: Record<string, string> }>;
  };
  const header = readFileSync(new URL("native/ort-api.h", root), "utf8").match(/kOrtVersion = "([^"]+)"/);
  assert.ok(header, "native/ort-api.h declares kOrtVersion");
  const pinned = pkg.dependencies["onnxruntime-node"];
  assert.match(pinned, /^\d+\.\d+\.\d+$/, "an exact version, not a range");
  assert.equal(
    header[1],
    pinned,
    "bumping onnxruntime-node means re-checking native/ort-api.h's slots and gemm-op.cc's OrtCustomOp",
  );
  assert.equal(lock.packages[""].dependencies?.["onnxruntime-node"], pinned);
  assert.equal(lock.packages["node_modules/onnxruntime-node"].version, pinned);
});

test(
  "native runner: ORT writes outputs into the caller's buffer in place, every call",
  { skip: runnerKind().kind !== "native" },
  () => {
    const [m, k, n] = [5, 7, 3];
    const s = createSessionSync(matmulModel(m, k, n), { intraOpNumThreads: 1 });
    assert.ok(s.isNative);
    assert.deepEqual(
      s.inputs.map((i) => [i.name, i.dtype, i.shape]),
      [
        ["a", "float32", [m, k]],
        ["b", "float32", [k, n]],
      ],
    );
    const run = fastRunner(
      s,
      [
        { name: "a", dtype: "float32" },
        { name: "b", dtype: "float32" },
      ],
      [{ name: "c", dtype: "float32" }],
    )!;
    assert.ok(run.writesOutputs);
    const out = new Float32Array(m * n).fill(NaN);
    for (let trial = 0; trial < 3; trial++) {
      const a = seq(m * k, (i) => Math.sin(i + trial)),
        b = seq(k * n, (i) => Math.cos(2 * i - trial));
      const [c] = run.run(
        [a, b],
        [
          [m, k],
          [k, n],
        ],
        [out],
        [[m, n]],
      );
      assert.equal(c, out, "the returned array is the caller's buffer");
      const want = refMatmul(a, b, m, k, n);
      for (let i = 0; i < want.length; i++)
        assert.ok(Math.abs(out[i] - want[i]) < 1e-5, `c[${i}] = ${out[i]}, want ${want[i]}`);
    }
    // without a buffer, ORT allocates and the runner returns a fresh array with the same values
    const a = seq(m * k, (i) => i / 10),
      b = seq(k * n, (i) => 1 - i / 20);
    const [fresh] = run.run(
      [a, b],
      [
        [m, k],
        [k, n],
      ],
    );
    assert.ok(fresh instanceof Float32Array && fresh.length === m * n);
    const want = refMatmul(a, b, m, k, n);
    for (let i = 0; i < want.length; i++) assert.ok(Math.abs(fresh[i] - want[i]) < 1e-5);
    // runSessionSync with a preallocated output goes through the same binding
    const pre = { dtype: "float32" as const, shape: [m, n], data: new Float32Array(m * n) };
    const [t] = runSessionSync(
      s,
      { a: { dtype: "float32", shape: [m, k], data: a }, b: { dtype: "float32", shape: [k, n], data: b } },
      ["c"],
      { preallocated: { c: pre } },
    );
    assert.equal(t.data, pre.data);
    assert.deepEqual(globalThis.Array.from(t.data as Float32Array), globalThis.Array.from(fresh as Float32Array));
    s.dispose();
    assert.throws(
      () =>
        run.run(
          [a, b],
          [
            [m, k],
            [k, n],
          ],
        ),
      /released/,
    );
  },
);

test("profileFilePrefix records ORT's per-node timings, written when the session is released", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-prof-"));
  try {
    const s = createSessionSync(matmulModel(4, 6, 3), { intraOpNumThreads: 1, profileFilePrefix: join(dir, "mm") });
    const a = seq(24, (i) => i),
      b = seq(18, (i) => -i);
    for (let i = 0; i < 3; i++)
      runSessionSync(
        s,
        { a: { dtype: "float32", shape: [4, 6], data: a }, b: { dtype: "float32", shape: [6, 3], data: b } },
        ["c"],
      );
    s.dispose();
    const files = readdirSync(dir).filter((f) => f.startsWith("mm") && f.endsWith(".json"));
    assert.equal(files.length, 1, `one profile: ${files.join(", ")}`);
    const events = JSON.parse(readFileSync(join(dir, files[0]), "utf8")) as {
      name: string;
      cat: string;
      args?: { op_name?: string };
    }[];
    assert.equal(events.filter((e) => e.name === "model_run").length, 3, "one model_run per run");
    assert.ok(
      events.some((e) => e.cat === "Node" && e.args?.op_name === "MatMul"),
      "per-node events name the op",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(
  "native runner: bad feeds and outputs are errors naming the value, not crashes",
  { skip: runnerKind().kind !== "native" },
  () => {
    const s = createSessionSync(matmulModel(2, 3, 4), { intraOpNumThreads: 1 });
    const run = fastRunner(
      s,
      [
        { name: "a", dtype: "float32" },
        { name: "b", dtype: "float32" },
      ],
      [{ name: "c", dtype: "float32" }],
    )!;
    const a = new Float32Array(6),
      b = new Float32Array(12);
    // an output buffer with the wrong shape
    assert.throws(
      () =>
        run.run(
          [a, b],
          [
            [2, 3],
            [3, 4],
          ],
          [new Float32Array(6)],
          [[2, 3]],
        ),
      /Run:.*(shape|dimension|size)/i,
    );
    // an input whose shape does not match the model
    assert.throws(
      () =>
        run.run(
          [a, new Float32Array(8)],
          [
            [2, 3],
            [2, 4],
          ],
        ),
      /Run:.*(dimension|shape|Got invalid)/i,
    );
    // a name the model does not have
    assert.throws(
      () => fastRunner(s, [{ name: "zz", dtype: "float32" }], [{ name: "c", dtype: "float32" }]),
      /no value named 'zz'/,
    );
    // still usable afterwards
    const [c] = run.run(
      [Float32Array.from([1, 2, 3, 4, 5, 6]), new Float32Array(12).fill(1)],
      [
        [2, 3],
        [3, 4],
      ],
    );
    assert.deepEqual(globalThis.Array.from(c as Float32Array), [6, 6, 6, 6, 15, 15, 15, 15]);
    s.dispose();
  },
);

test(
  "jitted outputs are written into pooled buffers: a disposed result's storage holds the next result",
  { skip: runnerKind().kind !== "native" },
  () => {
    const f = jax.jit((x: Array, y: Array) => jnp.matmul(x, y));
    const x = jnp.reshape(jnp.arange(64 * 32, undefined, undefined, "float32"), [64, 32]),
      y = jnp.ones([32, 48]);
    const first = f(x, y);
    const want = first.tolist();
    const buf = (first as unknown as { buffer: Float32Array }).buffer;
    first.dispose();
    const before = bufferPoolStats().reused;
    const second = f(x, y);
    assert.equal(
      (second as unknown as { buffer: Float32Array }).buffer,
      buf,
      "the disposed result's buffer was reused",
    );
    assert.equal(bufferPoolStats().reused, before + 1);
    assert.deepEqual(second.tolist(), want);
    assert.equal((want as number[][])[1][0], 32 * 32 + (31 * 32) / 2);
  },
);

test("the onnxruntime-node fallback (JAXTS_NATIVE=0) computes the same MLP step as the native runner", () => {
  const script = `
    const jax = await import(${JSON.stringify(new URL("../../../src/index.js", import.meta.url).href)});
    const rt = await import(${JSON.stringify(new URL("../../../src/backends/onnx/ort-runtime.js", import.meta.url).href)});
    const { numpy: jnp, nn } = jax;
    const r = (shape, seed) => jnp.reshape(jnp.array(Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(i * 1.7 + seed) * 0.3)), shape);
    const loss = (p, x) => jnp.sum(jnp.square(jnp.matmul(nn.relu(jnp.add(jnp.matmul(x, p.w1), p.b1)), p.w2)));
    const step = jax.jit((p, x) => { const [l, g] = jax.valueAndGrad(loss)(p, x); return [l, jax.tree.map((w, gw) => jnp.subtract(w, jnp.multiply(gw, 0.01)), p, g)]; });
    let p = { w1: r([40, 24], 1), b1: r([24], 2), w2: r([24, 6], 3) };
    const x = r([16, 40], 4);
    const losses = [];
    for (let i = 0; i < 3; i++) { const [l, q] = step(p, x); losses.push(l.item()); p = q; }
    console.log(JSON.stringify({ runner: rt.runnerKind().kind, losses, w2: p.w2.tolist() }));
  `;
  const run = (native: boolean, extra: Record<string, string> = {}) => {
    const env = { ...process.env, JAXTS_NATIVE: native ? "1" : "0", ...extra };
    const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      env,
      cwd: fileURLToPath(new URL("../../..", import.meta.url)),
    });
    assert.equal(res.status, 0, res.stderr);
    return {
      ...(JSON.parse(res.stdout.trim().split("\n").pop()!) as { runner: string; losses: number[]; w2: number[][] }),
      stderr: res.stderr,
    };
  };
  const fallback = run(false);
  assert.equal(fallback.runner, "onnxruntime-node");
  assert.doesNotMatch(
    fallback.stderr,
    /native ONNX Runtime runner unavailable/,
    "JAXTS_NATIVE=0 is a choice: no warning",
  );
  const native = run(true);
  if (runnerKind().kind === "native") assert.equal(native.runner, "native");
  assert.ok(fallback.losses[2] < fallback.losses[0], "the loss decreases");
  for (let i = 0; i < 3; i++)
    assert.ok(Math.abs(native.losses[i] - fallback.losses[i]) <= 1e-5 * Math.abs(fallback.losses[i]), `loss ${i}`);
  native.w2.flat().forEach((v, i) => assert.ok(Math.abs(v - fallback.w2.flat()[i]) < 1e-5, `w2[${i}]`));
  if (runnerKind().kind !== "native") return;
  // an ONNX Runtime other than the one the addon was written for (JAXTS_TEST_ORT_VERSION stands in for its version
  // string): the addon refuses it, jaxts says so in one line and computes the same step on the binding
  const other = run(true, { JAXTS_TEST_ORT_VERSION: "1.31.2" });
  assert.equal(other.runner, "onnxruntime-node");
  const lines = other.stderr.split("\n").filter((l) => l.includes("jaxts: native ONNX Runtime runner unavailable"));
  assert.equal(lines.length, 1, other.stderr);
  assert.match(
    lines[0],
    /built for ONNX Runtime 1\.30\.0 .* is ONNX Runtime 1\.31\.2; install onnxruntime-node@1\.30\.0/,
  );
  assert.deepEqual(other.losses, fallback.losses);
});
