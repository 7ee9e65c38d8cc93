/** @file jax.scipy.signal against SciPy fixtures (test/fixtures/scipy-linalg.json): eager and jit, float32, complex, vmap, gradients, errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as SS from "../../src/scipy/signal.js";
import { jit, vmap } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { assertClose, decode, type FixArray, loadFixture } from "../helpers/fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Case {
  fn: string;
  in: FixArray[];
  opts: Record<string, unknown>;
  out: FixArray[];
}
const fx = loadFixture<{ signal: Case[] }>("scipy-linalg.json");

function run(c: Case, x: Array, y: Array): Array {
  const o = c.opts as never;
  switch (c.fn) {
    case "convolve":
      return SS.convolve(x, y, o);
    case "correlate":
      return SS.correlate(x, y, o);
    case "convolve2d":
      return SS.convolve2d(x, y, o);
    case "correlate2d":
      return SS.correlate2d(x, y, o);
    case "fftconvolve":
      return SS.fftconvolve(x, y, o);
    case "detrend":
      return SS.detrend(x, o);
    default:
      throw new Error(`no runner for ${c.fn}`);
  }
}
const label = (c: Case, i: number): string =>
  `${c.fn}#${i} ${c.in.map((f) => `(${f.shape.join(",")})`).join(" ")} ${JSON.stringify(c.opts)}`;

test("scipy.signal matches SciPy in float64, eager and under jit", () => {
  withX64(() => {
    fx.signal.forEach((c, i) => {
      const xs = c.in.map(decode);
      const eager = run(c, xs[0], xs[1]);
      assertClose(eager, c.out[0], { rtol: 1e-10, atol: 1e-10, msg: label(c, i) });
      if (i % 3 === 0) {
        const j = jit((a: Array, b: Array) => run(c, a, b))(xs[0], xs[1] ?? xs[0]);
        assertClose(j, c.out[0], { rtol: 1e-10, atol: 1e-10, msg: `jit ${label(c, i)}` });
      }
    });
  });
});

test("scipy.signal in float32", () => {
  withX64(false, () => {
    for (const c of fx.signal.filter((_, i) => i % 2 === 0)) {
      const xs = c.in.map((f) => ops.convert(decode(f), "float32"));
      const y = run(c, xs[0], xs[1]);
      assert.equal(y.dtype, "float32");
      assertClose(y, { ...c.out[0], dtype: "float32" }, { rtol: 1e-4, atol: 1e-4, msg: `f32 ${c.fn}` });
    }
  });
});

test("complex convolve / correlate / fftconvolve match the four real products", () => {
  withX64(() => {
    const re = array([1, -2, 0.5, 3, 1.5], { dtype: "float64" }),
      im = array([0.3, 1, -1, 0.2, 0.7], { dtype: "float64" });
    const kr = array([0.5, -1, 2], { dtype: "float64" }),
      ki = array([1, 0.25, -0.5], { dtype: "float64" });
    const x = ops.complexOf(re, im),
      k = ops.complexOf(kr, ki);
    for (const mode of ["full", "same", "valid"] as const) {
      const c = SS.convolve(x, k, mode);
      const cre = ops.sub(SS.convolve(re, kr, mode), SS.convolve(im, ki, mode));
      const cim = ops.add(SS.convolve(re, ki, mode), SS.convolve(im, kr, mode));
      assertClose(ops.real(c), cre, { msg: `convolve re ${mode}` });
      assertClose(ops.imag(c), cim, { msg: `convolve im ${mode}` });
      const f = SS.fftconvolve(x, k, mode);
      assertClose(ops.real(f), cre, { rtol: 1e-12, atol: 1e-12, msg: `fftconvolve re ${mode}` });
      // correlate(x, k) = convolve(x, reversed conj(k))
      const r = SS.correlate(x, k, mode);
      const kc = ops.rev(ops.conj(k), [0]);
      const ref = SS.convolve(x, kc, mode);
      assertClose(ops.real(r), ops.real(ref), { msg: `correlate re ${mode}` });
      assertClose(ops.imag(r), ops.imag(ref), { msg: `correlate im ${mode}` });
    }
  });
});

test("scipy.signal under vmap and grad", () => {
  withX64(() => {
    const xs = array(
      [
        [1, 2, 3, 4, 5],
        [0, -1, 2, 0.5, 1],
      ],
      { dtype: "float64" },
    );
    const k = array([1, -0.5, 0.25], { dtype: "float64" });
    const b = vmap((x: Array) => SS.convolve(x, k, "same"))(xs);
    const row1 = SS.convolve(ops.squeeze(ops.sliceInDim(xs, 1, 2, 1, 0), [0]), k, "same");
    assertClose(ops.squeeze(ops.sliceInDim(b, 1, 2, 1, 0), [0]), row1, { msg: "vmap convolve" });
    const d = vmap((x: Array) => SS.detrend(x))(xs);
    assertClose(ops.squeeze(ops.sliceInDim(d, 0, 1, 1, 0), [0]), SS.detrend([1, 2, 3, 4, 5]), {
      atol: 1e-12,
      msg: "vmap detrend",
    });
    const w = array([0.3, -1.2, 0.8, 2, -0.4, 1.1, 0.6], { dtype: "float64" });
    const dot = (v: Array): Array => ops.reduceSum(ops.mul(v, w), [0]);
    checkGrad("convolve d/in1", (x) => dot(SS.convolve(x, k)), [1, 2, 3, 4, 5]);
    checkGrad(
      "correlate d/in2",
      (kk) => dot(SS.correlate(array([1, 2, 3, 4, 5], { dtype: "float64" }), kk)),
      [1, -0.5, 0.25],
    );
    checkGrad("fftconvolve d/in1", (x) => dot(SS.fftconvolve(x, k)), [1, 2, 3, 4, 5]);
    checkGrad(
      "detrend",
      (x) => ops.reduceSum(ops.mul(SS.detrend(x, { bp: [2] }), ops.sliceInDim(w, 0, 5, 1, 0)), [0]),
      [1, 2, 4, 3, 7],
    );
  });
});

test("scipy.signal raises JAX's errors", () => {
  assert.throws(
    () => SS.convolve([1, 2], [[1, 2]]),
    /scipy\.signal\.convolve: in1 and in2 must have the same number of dimensions/,
  );
  assert.throws(() => SS.convolve(1, 2), /zero-dimensional arrays is not supported/);
  assert.throws(
    () => SS.convolve([[1, 2, 3]], [[1], [2]], "valid"),
    /scipy\.signal\.convolve: for "valid" mode, one must be at least as large as the other in every dimension/,
  );
  assert.throws(() => SS.convolve([1, 2], [1], "middle" as never), /mode must be one of "full", "same", "valid"/);
  assert.throws(
    () => SS.convolve([1, 2], [1], { method: "magic" as never }),
    /method must be "auto", "direct" or "fft"/,
  );
  assert.throws(() => SS.convolve2d([1, 2], [1]), /scipy\.signal\.convolve2d: inputs must be 2-D/);
  assert.throws(
    () => SS.correlate2d([[1, 2]], [[1]], { boundary: "wrap" }),
    /scipy\.signal\.correlate2d: only boundary="fill" with fillvalue=0 is supported/,
  );
  assert.throws(
    () => SS.fftconvolve([[1, 2]], [[1]], { axes: [2] }),
    /scipy\.signal\.fftconvolve: axis 2 is out of bounds/,
  );
  assert.throws(
    () =>
      SS.fftconvolve(
        [
          [1, 2],
          [3, 4],
        ],
        [[1], [2], [3]],
        { axes: 1 },
      ),
    /must match or be 1/,
  );
  assert.throws(
    () => SS.detrend([1, 2, 3], { type: "quadratic" as never }),
    /trend type must be "linear" or "constant"/,
  );
  assert.throws(() => SS.detrend([1, 2, 3], { overwriteData: true }), /overwriteData argument is not implemented/);
  assert.throws(() => SS.detrend([1, 2, 3], { bp: [5] }), /breakpoints must be static integers in \[0, 3\]/);
});
