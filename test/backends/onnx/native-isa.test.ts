/** @file The native kernels' AVX2, SSE2 and portable paths on this machine: JAXTS_CPU caps the level in a child process (the addon reads it once), where the fused kernel must equal the WebAssembly kernel bit for bit and GEMMs must stay exact to float32 rounding. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { nativeFusedApi } from "../../../src/backends/onnx/ort-runtime.js";

const LEVELS = ["portable", "sse2", "avx2", "avx512"];
const best = nativeFusedApi()?.isa() ?? null;
const child = fileURLToPath(new URL("./native-isa-child.js", import.meta.url));

interface Report {
  runner: string;
  isa: string | null;
  gemmKernel: string | null;
  mismatches: string[];
  gemmError: number;
}
function runAt(level: string | null): { status: number | null; report: Report | null; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (level === null) delete env.JAXTS_CPU;
  else env.JAXTS_CPU = level;
  const res = spawnSync(process.execPath, [child], { encoding: "utf8", env });
  const line = res.stdout.trim().split("\n").pop() ?? "";
  return { status: res.status, report: line.startsWith("{") ? (JSON.parse(line) as Report) : null, stderr: res.stderr };
}

for (const level of ["avx2", "sse2", "portable"]) {
  test(`JAXTS_CPU=${level}: the fused kernel equals the WebAssembly kernel bit for bit; GEMMs ${level === "avx2" ? "run jaxts.Gemm's AVX2 micro-kernel" : "stay with ORT"}`, (t) => {
    if (best === null) {
      t.skip("native addon not built (npm run build compiles it with g++)");
      return;
    }
    const { status, report, stderr } = runAt(level);
    assert.equal(status, 0, stderr);
    assert.ok(report, stderr);
    // a cap: a CPU below the requested level keeps its own
    const want = LEVELS[Math.min(LEVELS.indexOf(level), LEVELS.indexOf(best))];
    assert.equal(report.runner, "native");
    assert.equal(report.isa, want);
    assert.deepEqual(report.mismatches, []);
    assert.equal(report.gemmKernel, want === "avx2" ? "avx2" : null, "jaxts.Gemm exists from AVX2 up");
    assert.ok(report.gemmError < 1e-5, `GEMM error ${report.gemmError} (relative to the sum of |terms|)`);
  });
}

test("JAXTS_CPU with an unknown level: the native runner refuses it by name and jaxts falls back to onnxruntime-node", (t) => {
  if (best === null) {
    t.skip("native addon not built (npm run build compiles it with g++)");
    return;
  }
  const { status, report, stderr } = runAt("avx9000");
  assert.equal(status, 0, stderr);
  assert.equal(report?.runner, "onnxruntime-node");
  assert.equal(report.isa, null, "no native fused kernel either");
  assert.match(stderr, /JAXTS_CPU=avx9000: expected avx512, avx2, sse2 or portable/);
  assert.equal(stderr.match(/^jaxts: native ONNX Runtime runner unavailable/gm)?.length, 1, "one line");
  assert.ok(report!.gemmError < 1e-5, "GEMMs still compute through the binding");
});
