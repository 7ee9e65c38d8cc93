/** @file The jaxts.Gemm custom op (native/gemm-op.cc over native/sgemm.cc): ONNX Gemm semantics against ORT's own Gemm, thread splits, errors, and where the graph optimizer uses it (large jitted GEMMs only, never in exports). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { GraphBuilder } from "../../../src/backends/onnx/graph-builder.js";
import { decodeModel } from "../../../src/backends/onnx/onnx-proto.js";
import { createSessionSync, fastRunner, nativeGemmKernel } from "../../../src/backends/onnx/ort-runtime.js";
import * as jax from "../../../src/index.js";
import { type Array, numpy as jnp } from "../../../src/index.js";
import { toOnnx } from "../../../src/io/export-onnx.js";

const kernel = nativeGemmKernel();
const skip = kernel === null ? "no jaxts.Gemm (native addon not built or no AVX2/AVX-512)" : false;

let seed = 7;
const rnd = (n: number): Float32Array =>
  Float32Array.from({ length: n }, () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32 - 0.5;
  });

interface Case {
  M: number;
  N: number;
  K: number;
  tA: number;
  tB: number;
  alpha: number;
  beta: number;
  c: number[] | null;
  threads: number;
}

/** Runs one Gemm node in `domain` ("" = ORT's Gemm, "jaxts" = the custom op) on the given operands. */
function runGemm(domain: string, k: Case, a: Float32Array, b: Float32Array, c: Float32Array | null): Float32Array {
  const g = new GraphBuilder("gemm");
  const as = k.tA ? [k.K, k.M] : [k.M, k.K],
    bs = k.tB ? [k.N, k.K] : [k.K, k.N];
  g.addInput("a", "float32", as);
  g.addInput("b", "float32", bs);
  const ins = ["a", "b"];
  if (k.c) {
    g.addInput("c", "float32", k.c);
    ins.push("c");
  }
  g.addNode("Gemm", ins, ["y"], { transA: k.tA, transB: k.tB, alpha: k.alpha, beta: k.beta }, domain);
  g.addOutput("y", "float32", [k.M, k.N]);
  const s = createSessionSync(g.toModelBytes(), { intraOpNumThreads: k.threads });
  try {
    const r = fastRunner(
      s,
      ins.map((name) => ({ name, dtype: "float32" as const })),
      [{ name: "y", dtype: "float32" }],
    )!;
    const data = c ? [a, b, c] : [a, b],
      shapes = c ? [as, bs, k.c!] : [as, bs];
    return r.run(data, shapes)[0] as Float32Array;
  } finally {
    s.dispose();
  }
}

test(
  "jaxts.Gemm computes ONNX Gemm: transposes, alpha/beta, every broadcast of C, odd and empty sizes, one and two threads",
  { skip },
  () => {
    const cases: Case[] = [];
    const base = { alpha: 1, beta: 1, c: null, threads: 1 };
    for (const [M, N, K] of [
      [1, 1, 1],
      [13, 37, 5],
      [14, 32, 512],
      [29, 65, 513],
      [100, 3, 70],
      [7, 40, 0],
      [300, 700, 520],
      [700, 300, 260],
    ])
      for (const tA of [0, 1])
        for (const tB of [0, 1]) cases.push({ ...base, M, N, K, tA, tB, threads: M * N * K > 1e6 ? 2 : 1 });
    for (const c of [[], [1], [45], [1, 45], [33, 1], [33, 45]])
      cases.push(
        { M: 33, N: 45, K: 27, tA: 1, tB: 0, alpha: -0.01, beta: 1, c, threads: 1 },
        { M: 33, N: 45, K: 27, tA: 0, tB: 1, alpha: 2.5, beta: -0.5, c, threads: 1 },
      );
    cases.push({ M: 600, N: 520, K: 530, tA: 0, tB: 0, alpha: 0.25, beta: 2, c: [520], threads: 2 });
    cases.push({ M: 20, N: 30, K: 10, tA: 0, tB: 0, alpha: 1, beta: 0, c: [20, 30], threads: 1 });
    cases.push(
      { M: 5, N: 6, K: 0, tA: 0, tB: 1, alpha: 1, beta: 2, c: [6], threads: 1 },
      { M: 784, N: 512, K: 128, tA: 1, tB: 0, alpha: -0.01, beta: 1, c: [784, 512], threads: 2 },
    );
    for (const k of cases) {
      const a = rnd(k.M * k.K),
        b = rnd(k.K * k.N),
        c = k.c ? rnd(k.c.reduce((p, q) => p * q, 1)) : null;
      // an empty sum is beta * C by the ONNX spec (ORT 1.30's own Gemm returns C unscaled there)
      const want =
        k.K === 0 && c
          ? Float32Array.from({ length: k.M * k.N }, (_, i) => k.beta * c[c.length === k.N ? i % k.N : 0])
          : runGemm("", k, a, b, c);
      const got = runGemm("jaxts", k, a, b, c);
      assert.equal(got.length, k.M * k.N);
      // float32 sums in a different order: within a few ulps of the sum of |terms|
      const tol = 4e-7 * (k.K + 4);
      for (let i = 0; i < got.length; i++) {
        if (!(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i]))))
          assert.fail(`${JSON.stringify(k)}: y[${i}] = ${got[i]}, ORT's Gemm gives ${want[i]}`);
      }
    }
  },
);

test("jaxts.Gemm with mismatched operands is an error naming the op and shapes, not a crash", { skip }, () => {
  const g = new GraphBuilder("bad");
  g.addInput("a", "float32", null); // unknown rank: only the op itself can object
  g.addInput("b", "float32", null);
  g.addNode("Gemm", ["a", "b"], ["y"], {}, "jaxts");
  g.addOutput("y", "float32", [null, null]);
  const s = createSessionSync(g.toModelBytes(), { intraOpNumThreads: 1 });
  const r = fastRunner(
    s,
    [
      { name: "a", dtype: "float32" },
      { name: "b", dtype: "float32" },
    ],
    [{ name: "y", dtype: "float32" }],
  )!;
  assert.throws(
    () =>
      r.run(
        [rnd(6), rnd(8)],
        [
          [2, 3],
          [4, 2],
        ],
      ),
    /jaxts\.Gemm: inner dimensions differ: A\[2,3\] B\[4,2\]/,
  );
  assert.throws(() => r.run([rnd(6), rnd(8)], [[6], [4, 2]]), /jaxts\.Gemm: A and B must be matrices/);
  s.dispose();
});

test(
  "jit hands large float32 matrix products to jaxts.Gemm, small ones to ORT's Gemm; exportOnnx keeps standard ops",
  { skip },
  () => {
    const big = jnp.reshape(jnp.array(rnd(640 * 520)), [640, 520]),
      w = jnp.reshape(jnp.array(rnd(520 * 512)), [520, 512]);
    const f = jax.jit((x: Array, y: Array) => jnp.matmul(x, y));
    assert.match(f.lower(big, w).asText(), /= jaxts\.Gemm/);
    const small = jnp.reshape(jnp.array(rnd(128 * 520)), [128, 520]);
    assert.doesNotMatch(f.lower(small, w).asText(), /jaxts\./);
    // same values as the interpreter's float64-accumulated product, within float32 rounding
    const got = f(big, w).dataSync() as Float32Array;
    const xs = big.dataSync() as Float32Array,
      ws = w.dataSync() as Float32Array;
    for (const [i, j] of [
      [0, 0],
      [639, 511],
      [300, 17],
      [5, 400],
    ]) {
      let s = 0;
      for (let k = 0; k < 520; k++) s += xs[i * 520 + k] * ws[k * 512 + j];
      assert.ok(Math.abs(got[i * 512 + j] - s) < 1e-4, `y[${i},${j}]`);
    }
    const m = decodeModel(toOnnx((x: Array, y: Array) => jnp.matmul(x, y), big, w).bytes);
    assert.deepEqual(
      (m.opsetImport ?? []).map((o) => o.domain || ""),
      [""],
      "an exported model imports only the standard domain",
    );
    assert.ok(
      (m.graph!.node ?? []).every((n) => !n.domain),
      "and has only standard nodes",
    );
  },
);

test(
  "the AVX2 micro-kernel (JAXTS_SGEMM=avx2; the fallback for CPUs without AVX-512) computes the same products",
  { skip },
  () => {
    const script = `
    const jax = await import(${JSON.stringify(new URL("../../../src/index.js", import.meta.url).href)});
    const rt = await import(${JSON.stringify(new URL("../../../src/backends/onnx/ort-runtime.js", import.meta.url).href)});
    const { numpy: jnp } = jax;
    const r = (shape, seed) => jnp.reshape(jnp.array(Float32Array.from({ length: shape[0] * shape[1] }, (_, i) => Math.sin(i * 0.37 + seed))), shape);
    const x = r([530, 515], 1), w = r([515, 777], 2);
    const f = jax.jit((a, b) => jnp.matmul(jnp.transpose(a), b));
    const y = f(r([515, 530], 3), w);
    console.log(JSON.stringify({ kernel: rt.nativeGemmKernel(), text: f.lower(r([515, 530], 3), w).asText().includes("jaxts.Gemm"), sample: [y.dataSync()[0], y.dataSync()[530 * 777 - 1], y.dataSync()[12345]] }));
  `;
    const run = (isa: string) => {
      const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        encoding: "utf8",
        env: { ...process.env, JAXTS_SGEMM: isa },
        cwd: fileURLToPath(new URL("../../..", import.meta.url)),
      });
      assert.equal(res.status, 0, res.stderr);
      return JSON.parse(res.stdout.trim().split("\n").pop()!) as {
        kernel: string | null;
        text: boolean;
        sample: number[];
      };
    };
    const avx2 = run("avx2"),
      none = run("none");
    assert.equal(avx2.kernel, "avx2");
    assert.ok(avx2.text, "the AVX2 kernel serves jit");
    assert.equal(none.kernel, null, "JAXTS_SGEMM=none leaves every GEMM to ORT");
    assert.ok(!none.text);
    avx2.sample.forEach((v, i) =>
      assert.ok(Math.abs(v - none.sample[i]) <= 2e-4 * (1 + Math.abs(v)), `sample ${i}: ${v} vs ORT ${none.sample[i]}`),
    );
  },
);
