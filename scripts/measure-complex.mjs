#!/usr/bin/env node
// Measures the numbers behind notes/complex.md: the interpreter's complex arithmetic and FFT against ONNX Runtime's DFT
// (on float tensors with a trailing (re, im) axis), and the cost of splitting/joining interleaved storage.
// Run after `npm run build`:  node scripts/measure-complex.mjs
import ort from "onnxruntime-node";
import * as jax from "../dist/src/index.js";
import { GraphBuilder } from "../dist/src/backends/onnx/graph-builder.js";
import { splitComplex, joinComplex } from "../dist/src/core/convert.js";

const np = jax.numpy;
const time = (f, reps = 20) => {
  f();
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) f();
  return (performance.now() - t0) / reps;
};
const row = (name, ms) => console.log(`${name.padEnd(58)} ${ms.toFixed(3)} ms`);

for (const [batch, n] of [
  [1, 4096],
  [64, 1024],
  [64, 1000],
]) {
  const x = np.complex(
    np.sin(np.reshape(np.arange(batch * n), [batch, n])),
    np.cos(np.reshape(np.arange(batch * n), [batch, n])),
  );
  row(
    `interpreter fft  c64[${batch},${n}]`,
    time(() => np.fft.fft(x).dispose()),
  );
  // ORT DFT (opset 20): input float32 [batch, n, 2], dft_length n, axis 1
  const g = new GraphBuilder("dft");
  const inp = g.addInput("x", "float32", [batch, n, 2]);
  const axis = g.scalar("int64", 1n);
  const out = g.op("DFT", [inp, "", axis], {});
  g.addOutput(out, "float32", [batch, n, 2]);
  const bytes = g.toModelBytes({ opset: 20 });
  const sess = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  const data = new Float32Array(batch * n * 2).map((_, i) => Math.sin(i));
  const feeds = { x: new ort.Tensor("float32", data, [batch, n, 2]) };
  await sess.run(feeds);
  const t0 = performance.now();
  for (let i = 0; i < 20; i++) await sess.run(feeds);
  row(`ORT DFT (opset 20, 1 thread) f32[${batch},${n},2]`, (performance.now() - t0) / 20);
}
const big = np.complex(np.sin(np.arange(1 << 20)), np.cos(np.arange(1 << 20)));
row(
  "interpreter mul  c64[1M]",
  time(() => np.multiply(big, big).dispose(), 5),
);
row(
  "interpreter exp  c64[1M]",
  time(() => np.exp(big).dispose(), 5),
);
const f = np.sin(np.arange(1 << 20));
row(
  "interpreter mul  f32[1M] (ONNX Runtime eager, for scale)",
  time(() => np.multiply(f, f).dispose(), 5),
);
const buf = big.dataSync();
row(
  "split + join interleaved c64[1M] (planes for a graph)",
  time(() => {
    const [re, im] = splitComplex(buf, "complex64");
    joinComplex(re, im, "complex64");
  }, 5),
);
