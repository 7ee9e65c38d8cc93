/** @file jnp.fft against NumPy fixtures (eager, jit, vmap), gradients against finite differences, linearity rules, bad input. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as np from "../../src/numpy/index.js";
import * as lax from "../../src/lax/index.js";
import { grad, jit, vjp, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { type CFix, assertCloseC, decodeC, partsOfArray } from "../helpers/complex-fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Case {
  name: string;
  fn: string;
  arg: CFix;
  kwargs: Record<string, unknown>;
  out: CFix;
  x64: boolean;
}
const fx = loadFixture<{
  cases: Case[];
  freqs: { fn: string; n: number; d: number; out: number[] }[];
  shifts: { fn: string; arg: unknown; axes: number | number[] | null; out: unknown }[];
}>("fft.json");
type Fn = (a: Array, opts?: Record<string, unknown>) => Array;
const F = np.fft as unknown as Record<string, Fn>;
const tolOf = (c: Case) => {
  const vals = [...(c.out.re ?? c.out.data ?? []), ...(c.out.im ?? [])].map(Number);
  const mag = Math.max(1, ...vals.map(Math.abs));
  return c.x64 ? { rtol: 1e-12, atol: 1e-12 * mag } : { rtol: 1e-5, atol: 2e-6 * mag };
};

for (const c of fx.cases) {
  test(`fft ${c.name}: eager, jit and vmap match NumPy`, () =>
    withX64(c.x64, () => {
      const f = (a: Array) => F[c.fn](a, c.kwargs),
        x = decodeC(c.arg),
        tol = tolOf(c);
      assertCloseC(f(x), c.out, { ...tol, msg: "eager" });
      assertCloseC(jit(f)(x), c.out, { ...tol, msg: "jit" });
      // vmap over a new leading axis of two copies (x and 2x) agrees with the per-slice transforms (all are linear)
      const both = vmap(f)(np.stack([x, np.multiply(x, 2)]));
      assertCloseC(both.get(0), c.out, { ...tol, msg: "vmap slice 0" });
      assertCloseC(both.get(1), np.multiply(f(x), 2), { ...tol, msg: "vmap slice 1" });
    }));
}

test("fftfreq / rfftfreq match NumPy", () =>
  withX64(true, () => {
    for (const h of fx.freqs)
      assertCloseC(F[h.fn](h.n as never, h.d as never), np.array(h.out, "float64"), { msg: `${h.fn}(${h.n}, ${h.d})` });
    assert.equal(np.fft.fftfreq(4, 1, "float32").dtype, "float32");
  }));

test("fftshift / ifftshift match NumPy", () => {
  for (const s of fx.shifts)
    assert.deepEqual(
      (F[s.fn] as unknown as (x: unknown, a: unknown) => Array)(np.array(s.arg as number[]), s.axes).tolist(),
      s.out,
      `${s.fn} axes=${JSON.stringify(s.axes)}`,
    );
});

test("ifft(fft(x)) and irfft(rfft(x), n) round-trip for lengths with and without power-of-two size", () =>
  withX64(true, () => {
    for (const n of [3, 16, 17, 30]) {
      const x = np.sin(np.multiply(np.arange(n, { dtype: "float64" }), 0.37));
      assertCloseC(np.real(np.fft.ifft(np.fft.fft(x))), x, { atol: 1e-13 });
      assertCloseC(np.fft.irfft(np.fft.rfft(x), n), x, { atol: 1e-13 });
    }
  }));

/** Directional derivative of a real scalar f of a real vector against central differences (float64). */
function fdCheck(name: string, f: (x: Array) => Array, n: number): void {
  const x = np.cos(np.multiply(np.arange(n, { dtype: "float64" }), 1.3));
  const d = np.sin(np.add(np.multiply(np.arange(n, { dtype: "float64" }), 0.7), 0.2));
  const g = (grad(f) as (x: Array) => Array)(x);
  const an = Number(np.sum(np.multiply(g, d)).item()),
    h = 1e-6;
  const num =
    (Number(f(np.add(x, np.multiply(d, h))).item()) - Number(f(np.subtract(x, np.multiply(d, h))).item())) / (2 * h);
  assert.ok(Math.abs(an - num) < 1e-6 * (1 + Math.abs(num)), `${name}: grad.d ${an} vs finite difference ${num}`);
}

test("gradients through every transform match finite differences (float64)", () =>
  withX64(true, () => {
    const w = (k: number) =>
      np.complex(
        np.cos(np.arange(k, { dtype: "float64" })),
        np.sin(np.multiply(np.arange(k, { dtype: "float64" }), 2)),
      );
    const re2 = (z: Array) => np.sum(np.add(np.square(np.real(z)), np.multiply(np.imag(z), 0.3)));
    fdCheck("fft", (x) => re2(np.multiply(np.fft.fft(x), w(6))), 6);
    fdCheck("ifft (ortho, n=8)", (x) => re2(np.fft.ifft(x, 8, -1, "ortho")), 6);
    fdCheck("rfft", (x) => re2(np.multiply(np.fft.rfft(x), w(4))), 7);
    fdCheck("rfft even", (x) => re2(np.multiply(np.fft.rfft(x), w(4))), 6);
    fdCheck(
      "irfft odd",
      (x) =>
        np.sum(np.multiply(np.fft.irfft(np.multiply(np.fft.rfft(x), w(4)), 7), np.arange(7, { dtype: "float64" }))),
      7,
    );
    fdCheck("irfft even", (x) => np.sum(np.square(np.fft.irfft(np.multiply(np.fft.rfft(x), w(4)), 6))), 6);
    fdCheck(
      "hfft / ihfft",
      (x) => np.sum(np.square(np.fft.hfft(np.multiply(np.fft.ihfft(x), w(4)), 6, -1, "forward"))),
      6,
    );
    fdCheck("fft2", (x) => re2(np.fft.fft2(np.reshape(x, [2, 3]))), 6);
    fdCheck(
      "rfftn / irfftn",
      (x) =>
        np.sum(
          np.square(np.fft.irfftn(np.multiply(np.fft.rfftn(np.reshape(x, [3, 4])), np.reshape(w(9), [3, 3])), [3, 4])),
        ),
      12,
    );
  }));

test("lax.fft is linear: its transposes agree with vjp of the naive DFT matrix", () =>
  withX64(true, () => {
    const n = 5;
    const k = np.arange(n, { dtype: "float64" });
    const ang = np.multiply(np.outer(k, k), (-2 * Math.PI) / n);
    const dft = np.complex(np.cos(ang), np.sin(ang));
    const ct = np.complex(np.array([1, -2, 0.5, 3, 1], "float64"), np.array([0.2, 1, -1, 0, 2], "float64"));
    const [, pull] = vjp((z: Array) => lax.fft(z, "FFT", [n]), np.complex(k, k)) as unknown as [
      Array,
      (c: Array) => Array[],
    ];
    assertCloseC(pull(ct)[0], np.matmul(np.transpose(dft), ct), { atol: 1e-12 });
    // RFFT's transpose is the real part of the transposed truncated DFT
    const ct3 = ct.get("0:3");
    const [, pullR] = vjp((x: Array) => lax.fft(x, "RFFT", [n]), k) as unknown as [Array, (c: Array) => Array[]];
    assertCloseC(pullR(ct3)[0], np.real(np.matmul(np.transpose(dft.get("0:3")), ct3)), { atol: 1e-12 });
    const [, pullI] = vjp((z: Array) => lax.fft(z, "IFFT", [n]), np.complex(k, k)) as unknown as [
      Array,
      (c: Array) => Array[],
    ];
    assertCloseC(pullI(ct)[0], np.divide(np.matmul(np.transpose(np.conj(dft)), ct), n), { atol: 1e-12 });
  }));

test("fft of bad input names the function and what it expected", () => {
  const x = np.array([1, 2, 3], "float32");
  assert.throws(
    () => np.fft.fft(x, { nn: 3 } as never),
    /fft\.fft: unknown option "nn" \(did you mean "n"\?\); accepted options: n, axis, norm/,
  );
  assert.throws(
    () => np.fft.fft(x, { norm: "both" } as never),
    /fft\.fft: norm must be "backward", "ortho" or "forward"/,
  );
  assert.throws(() => np.fft.fft(x, 0), /fft\.fft: invalid number of data points 0/);
  assert.throws(() => np.fft.rfft(np.complex(x, x)), /fft\.rfft: requires a real operand, got complex64/);
  assert.throws(() => np.fft.fft(x, { axis: 1 }), /fft\.fft.*axis 1/);
  assert.throws(() => lax.fft(np.complex(x, x), "FFT", [4]), /fft: the trailing dimensions must equal fft_lengths/);
  // complex64 transforms run ORT's float32 DFT: exact zeros up to float32 rounding of the twiddle factors
  const [re, im] = partsOfArray(np.fft.fft(np.array([1, 1, 1, 1])));
  [4, 0, 0, 0].forEach((e, i) => assert.ok(Math.abs(re[i] - e) < 1e-6 && Math.abs(im[i]) < 1e-6, `bin ${i}`));
});
