/**
 * @file jnp.fft under jit: the native jaxts.Fft op vs ORT's DFT lowering (JAXTS_NATIVE_FFT=0's path) vs NumPy.
 * `node dist/bench/fft.js [--quick] [--no-numpy]` (complex128's off path is the interpreter's host step); NumPy's
 * column needs python3 with numpy (else it is left out).
 */
import { spawnSync } from "node:child_process";

interface Case {
  name: string;
  fn: "fft" | "rfft" | "fft2";
  shape: number[];
  dtype: "complex64" | "complex128" | "float32";
}
const CASES: Case[] = [
  { name: "fft c64[64,1024]", fn: "fft", shape: [64, 1024], dtype: "complex64" },
  { name: "fft c64[64,1000]", fn: "fft", shape: [64, 1000], dtype: "complex64" },
  { name: "fft c64[200000]", fn: "fft", shape: [200000], dtype: "complex64" },
  { name: "fft c128[64,1024]", fn: "fft", shape: [64, 1024], dtype: "complex128" },
  { name: "rfft f32[64,4096]", fn: "rfft", shape: [64, 4096], dtype: "float32" },
  { name: "fft2 c64[512,512]", fn: "fft2", shape: [512, 512], dtype: "complex64" },
];

/** NumPy's median ms per case, or null without python3 + numpy. */
function numpyTimes(): number[] | null {
  const script = `
import numpy as np, time, json
cases = ${JSON.stringify(CASES)}
out = []
for c in cases:
    x = np.random.default_rng(0).standard_normal(c["shape"]).astype(np.float64)
    x = x.astype(np.float32) if c["dtype"] == "float32" else (x + 1j * x).astype(c["dtype"])
    f = getattr(np.fft, c["fn"])
    f(x)
    ts = []
    for _ in range(15):
        t = time.perf_counter(); f(x); ts.append((time.perf_counter() - t) * 1e3)
    out.append(sorted(ts)[len(ts) // 2])
print(json.dumps(out))
`;
  const r = spawnSync("python3", ["-c", script], { encoding: "utf8", timeout: 120_000 });
  return r.status === 0 ? (JSON.parse(r.stdout) as number[]) : null;
}

async function main(): Promise<void> {
  const { jit, numpy: jnp } = await import("../src/index.js");
  // after src/index.js: the primitives register in its import order
  const { fftNativeOptions } = await import("../src/primitives/complex-lower.js");
  const { config } = await import("../src/core/config.js");
  config.update("enableX64", true);
  const reps = process.argv.includes("--quick") ? 3 : 15;
  const np = process.argv.includes("--no-numpy") ? null : numpyTimes();
  /** Median ms of a fresh jit of the case (compiled with the current native switch). */
  const time = (c: Case): number => {
    const n = c.shape.reduce((a, b) => a * b, 1);
    const v = Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) + 0.1 * (i % 7));
    const re = jnp.array(v, c.dtype === "complex128" ? "float64" : "float32").reshape(c.shape);
    const x = c.dtype === "float32" ? re : jnp.astype(re, c.dtype);
    const f = jit((a: typeof x) => jnp.fft[c.fn](a));
    f(x).dataSync();
    const ts: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t = performance.now();
      f(x).dataSync();
      ts.push(performance.now() - t);
    }
    return ts.sort((a, b) => a - b)[reps >> 1];
  };
  console.log(
    `${"case".padEnd(20)}${"native".padStart(10)}${"ORT DFT".padStart(10)}${"ratio".padStart(8)}${np ? "    numpy  native/numpy" : ""}`,
  );
  CASES.forEach((c, i) => {
    fftNativeOptions.enabled = true;
    const a = time(c);
    fftNativeOptions.enabled = false;
    const b = time(c);
    fftNativeOptions.enabled = true;
    const row = `${c.name.padEnd(20)}${a.toFixed(2).padStart(10)}${b.toFixed(2).padStart(10)}${(b / a).toFixed(1).padStart(8)}`;
    console.log(np ? `${row}${np[i].toFixed(2).padStart(9)}${(a / np[i]).toFixed(2).padStart(14)}` : row);
  });
}

await main();
