#!/usr/bin/env node
// Measures the numbers behind notes/complex.md: complex programs on the reference interpreter (every complex equation
// a host step, the state before the ONNX lowering) against the ONNX backend (complex values as float tensors
// [..., 2], ORT's DFT for complex64 fft), eagerly and under jit.
// Run after `npm run build`:  node scripts/measure-complex.mjs
import * as jax from "../dist/src/index.js";
import { config } from "../dist/src/core/config.js";

const np = jax.numpy;
/** The fastest of `reps` calls (the development host is shared and loaded: the minimum is the least noisy). */
const time = (f, reps) => {
  f();
  let best = Infinity;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
};
/** ms per call on the interpreter and on ONNX Runtime. */
function both(name, f, args, reps = 10) {
  const run = () => {
    const y = f(...args);
    y.dataSync();
    y.dispose();
  };
  const saved = config.backend;
  config.update("backend", "interpreter");
  const before = time(run, reps);
  config.update("backend", saved);
  const after = time(run, 4 * reps);
  console.log(`| ${name} | ${before.toFixed(2)} ms | ${after.toFixed(2)} ms | ${(before / after).toFixed(1)}x |`);
}
const c = (shape) => {
  const n = shape.reduce((a, b) => a * b, 1);
  const k = np.reshape(np.arange(n, { dtype: "float32" }), shape);
  return np.complex(np.sin(k), np.cos(np.multiply(k, 0.5)));
};

console.log("| case | interpreter (before) | ONNX Runtime (after) | speed-up |");
console.log("| --- | --- | --- | --- |");
for (const s of [
  [1, 4096],
  [64, 1024],
  [64, 1000],
])
  both(`eager fft c64[${s}]`, (x) => np.fft.fft(x), [c(s)]);
const big = c([1 << 20]),
  big2 = c([1 << 20]).mul(0.5);
both("eager mul c64[1M]", (x, y) => np.multiply(x, y), [big, big2], 5);
both("eager exp c64[1M]", (x) => np.exp(x), [big], 5);
const prog = jax.jit((x, y, z) => np.add(np.multiply(x, y), np.exp(z)));
both("jit x*y + exp(z) c64[1M]", prog, [big, big2, big], 5);
both("jit matmul c64[256,256]", jax.jit(np.matmul), [c([256, 256]), c([256, 256])], 5);
both(
  "jit abs(fft(x)) c64[64,1024]",
  jax.jit((x) => np.abs(np.fft.fft(x))),
  [c([64, 1024])],
);
const f = np.sin(np.arange(1 << 20, { dtype: "float32" }));
both("eager mul f32[1M] (for scale)", (x) => np.multiply(x, x), [f], 5);
