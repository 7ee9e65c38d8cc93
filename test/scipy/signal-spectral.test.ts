/** @file jax.scipy.signal stft / csd / welch against SciPy (test/fixtures/scipy-linalg.json "spectral"): eager, jit, float32, errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as ops from "../../src/primitives/ops.js";
import * as SS from "../../src/scipy/signal.js";
import { jit } from "../../src/transforms/api.js";
import { type CFix, decodeC } from "../helpers/complex-fixtures.js";
import { assertClose, decode, type FixArray, loadFixture } from "../helpers/fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Case {
  fn: "stft" | "istft" | "welch" | "csd";
  in: FixArray[];
  opts: Record<string, unknown>;
  out: FixArray[];
}
const fx = loadFixture<{ spectral: Case[] }>("scipy-linalg.json");

function run(c: Case, xs: Array[]): Array[] {
  const o = { ...c.opts };
  if (o.window !== undefined && typeof o.window === "object") o.window = decode(o.window as FixArray);
  if (c.fn === "stft") return SS.stft(xs[0], o as SS.StftOptions);
  if (c.fn === "istft") return SS.istft(xs[0], o as SS.IstftOptions);
  if (c.fn === "welch") return SS.welch(xs[0], o as SS.CsdOptions);
  return SS.csd(xs[0], xs[1], o as SS.CsdOptions);
}
/** Compares real and imaginary parts (fixtures store complex as re / im). */
function close(y: Array, e: FixArray & { re?: number[]; im?: number[] }, tol: number, msg: string): void {
  if (e.re) {
    const sh = { dtype: (y.dtype === "complex64" ? "float32" : "float64") as FixArray["dtype"], shape: e.shape };
    assertClose(ops.real(y), { ...sh, data: e.re }, { rtol: tol, atol: tol, msg: `${msg} re` });
    assertClose(ops.imag(y), { ...sh, data: e.im! }, { rtol: tol, atol: tol, msg: `${msg} im` });
  } else assertClose(y, { ...e, dtype: y.dtype }, { rtol: tol, atol: tol, msg });
}

test("stft / welch / csd match SciPy in float64, eager and under jit", () => {
  withX64(() => {
    fx.spectral.forEach((c, i) => {
      const xs = c.in.map((f) => decodeC(f as CFix));
      const label = `${c.fn}#${i} ${JSON.stringify(c.opts)}`;
      const outs = run(c, xs);
      assert.equal(outs.length, c.out.length, label);
      outs.forEach((y, k) => close(y, c.out[k], 1e-10, `${label} out ${k}`));
      const j = jit((...a: Array[]) => run(c, a))(...xs);
      j.forEach((y, k) => close(y, c.out[k], 1e-10, `jit ${label} out ${k}`));
    });
  });
});

test("stft / welch in float32 give float32 / complex64 within float32 accuracy", () => {
  withX64(false, () => {
    for (const c of fx.spectral.filter((k) => k.fn === "stft" || k.fn === "welch")) {
      const xs = c.in.map((f) => ops.convert(decode(f), "float32"));
      const outs = run(c, xs);
      assert.equal(outs[outs.length - 1].dtype, c.fn === "stft" ? "complex64" : "float32");
      outs.forEach((y, k) => close(y, c.out[k], 1e-4, `f32 ${c.fn} out ${k}`));
    }
  });
});

test("spectral estimates raise errors naming the function and the bad value", () => {
  const x = globalThis.Array.from({ length: 32 }, (_, i) => Math.sin(i));
  assert.throws(
    () => SS.stft(x, { nperseg: 8, noverlap: 8 }),
    /scipy\.signal\.stft: noverlap must be less than nperseg \(8 >= 8\)/,
  );
  assert.throws(
    () => SS.welch(x, { nperseg: 8, nfft: 4 }),
    /scipy\.signal\.welch: nfft must be greater than or equal to nperseg/,
  );
  assert.throws(() => SS.welch(x, { window: "kaiser" as never }), /scipy\.signal\.welch: unknown window "kaiser"/);
  assert.throws(() => SS.csd(x, x, { average: "mode" as never }), /average must be "mean" or "median"/);
  assert.throws(() => SS.stft(x, { boundary: "wrap" as never }), /unknown boundary option "wrap"/);
  assert.throws(() => SS.welch(x, { scaling: "power" as never }), /unknown scaling "power"/);
  assert.throws(
    () => SS.welch(x, { nperseg: 4, window: [1, 1, 1] }),
    /nperseg \(4\) differs from the window's length 3/,
  );
  assert.throws(
    () => SS.csd([x, x], x),
    /scipy\.signal\.csd: x and y must have the same rank, got shapes \(2, 32\) and \(32,\)/,
  );
  assert.throws(
    () => SS.istft([1, 2, 3]),
    /scipy\.signal\.istft: the input stft must be at least 2-D, got shape \(3,\)/,
  );
  assert.throws(
    () =>
      SS.istft(
        [
          [1, 2],
          [3, 4],
        ],
        { timeAxis: 0, freqAxis: -2 },
      ),
    /timeAxis and freqAxis must differ/,
  );
  assert.throws(() => SS.stft(x, 100 as never), /scipy\.signal\.stft: expected an options object/);
  assert.throws(
    () => (SS.welch as (...a: unknown[]) => unknown)(x, {}, 3),
    /scipy\.signal\.welch: takes at most 2 arguments/,
  );
  assert.throws(() => SS.stft(x, { npersegs: 4 } as never), /scipy\.signal\.stft: unexpected option "npersegs"/);
});
