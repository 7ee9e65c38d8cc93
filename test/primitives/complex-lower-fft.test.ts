/** @file The native jaxts.Fft / jaxts.Fft64 lowering of lax.fft: graph contents, values against the float64 interpreter kernel and ORT's DFT, eager vs jit, grads and vmap. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import { compiledFor, onnxBackend } from "../../src/backends/onnx/onnx-backend.js";
import { nativeLinalgOps } from "../../src/backends/onnx/ort-runtime.js";
import { type GraphProto, decodeModel } from "../../src/backends/onnx/onnx-proto.js";
import type { ArrayImpl } from "../../src/core/array-impl.js";
import type { Array } from "../../src/core/array.js";
import type { DType } from "../../src/core/dtype.js";
import type { Jaxpr } from "../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { fftNativeOptions } from "../../src/primitives/complex-lower.js";
import { complexOf, imag, real } from "../../src/primitives/complex.js";
import { type FftType, fft } from "../../src/primitives/fft.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import * as np from "../../src/numpy/index.js";
import { arr } from "../compiler/harness.js";
import { loadFixture } from "../helpers/fixtures.js";
import { interpreterOutputs } from "../helpers/interpreter-reference.js";
import { seededUniform, sizeOf } from "../helpers/seeded-random.js";
import { withX64 } from "../helpers/x64.js";

const skip = nativeLinalgOps() ? false : "the native runner's custom ops are unavailable (no addon)";

/** "domain.opType" of every node of a graph. */
function opsOf(g: GraphProto | undefined, out: Set<string> = new Set()): Set<string> {
  for (const n of g?.node ?? []) out.add(`${n.domain ?? ""}.${n.opType ?? ""}`);
  return out;
}

/** lax.fft of (re, im) (or of re for RFFT), returning its real and imaginary parts (IRFFT: the real output twice). */
function fftParts(t: FftType, L: number[]) {
  return (re: Array, im: Array): Array[] => {
    const y = t === "RFFT" ? fft(re, t, L) : fft(complexOf(re, im), t, L);
    return t === "IRFFT" ? [y, y] : [real(y), imag(y)];
  };
}

/** Relative max error of got vs want, scaled by the largest |want| (at least 1). */
function relErr(got: ArrayImpl[], want: ArrayImpl[]): number {
  let err = 0,
    mag = 1;
  got.forEach((g, o) => {
    const gv = g.dataSync(),
      wv = want[o].dataSync();
    assert.equal(gv.length, wv.length);
    for (let i = 0; i < gv.length; i++) {
      err = Math.max(err, Math.abs(Number(gv[i]) - Number(wv[i])));
      mag = Math.max(mag, Math.abs(Number(wv[i])));
    }
  });
  return err / mag;
}

/**
 * Compiles lax.fft(fftType, L) on seeded inputs of `shape` (the complex shape; IRFFT's last axis is L's last / 2 + 1),
 * asserts the graph holds the native op (or ORT's DFT with native off) and no host step; returns the ONNX outputs and
 * the interpreter's.
 */
function run(dt: DType, t: FftType, shape: number[], L: number[], seed: number, native = true): ArrayImpl[][] {
  const re = arr(dt, shape, seededUniform(sizeOf(shape), seed)),
    im = arr(dt, shape, seededUniform(sizeOf(shape), seed + 1));
  const prev = fftNativeOptions.enabled;
  fftNativeOptions.enabled = native;
  try {
    const { jaxpr, consts } = traceToJaxpr(fftParts(t, L), [re.aval, im.aval], `fft ${t}`);
    const steps = compiledFor(jaxpr as Jaxpr).program.steps;
    const got0 = new Set<string>();
    for (const s of steps) {
      assert.equal(s.kind, "onnx", `fft ${t} ${dt} ${shape}: every step is ONNX`);
      if (s.kind === "onnx") opsOf(decodeModel(s.model).graph, got0);
    }
    const op = native ? (dt === "float32" ? "jaxts.Fft" : "jaxts.Fft64") : ".DFT";
    assert.ok(got0.has(op), `fft ${t} ${dt} ${shape}: the graph holds ${op}: ${[...got0]}`);
    const want = native ? interpreterOutputs(jaxpr as Jaxpr, consts as ArrayImpl[], [re, im]) : [];
    const got = onnxBackend.executeJaxpr!(jaxpr as Jaxpr, consts as ArrayImpl[], [re, im], { name: "fft" });
    return [got, want];
  } finally {
    fftNativeOptions.enabled = prev;
  }
}
/** The relative error of the native lowering against the interpreter. */
function check(dt: DType, t: FftType, shape: number[], L: number[], seed: number): number {
  const [got, want] = run(dt, t, shape, L, seed);
  return relErr(got, want);
}

const LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 30, 64, 97, 100, 128, 210, 256, 1000, 1024, 4096, 4099];
const TYPES: FftType[] = ["FFT", "IFFT", "RFFT", "IRFFT"];
// float32: a few ulps times log2(n) relative to the largest output; float64: the ~1e-13 the task asks
const TOL: Record<string, number> = { float32: 3e-6, float64: 1e-13 };

test(
  "jaxts.Fft / Fft64 match the float64 interpreter for every fft type at mixed-radix and prime lengths",
  { skip },
  () => {
    fftNativeOptions.enabled = true;
    for (const dt of ["float32", "float64"] as DType[])
      withX64(dt === "float64", () => {
        for (const n of LENGTHS)
          for (const t of TYPES) {
            const shape = t === "IRFFT" ? [3, Math.floor(n / 2) + 1] : [3, n];
            const e = check(dt, t, shape, [n], n * 7 + TYPES.indexOf(t));
            assert.ok(e < TOL[dt], `${t} ${dt} n=${n}: relative error ${e}`);
          }
      });
  },
);

test("jaxts.Fft: multi-axis transforms (2 and 3 axes, strided inner axes) match the interpreter", { skip }, () => {
  fftNativeOptions.enabled = true;
  for (const dt of ["float32", "float64"] as DType[])
    withX64(dt === "float64", () => {
      const cases: [FftType, number[], number[]][] = [
        ["FFT", [2, 6, 10], [6, 10]],
        ["IFFT", [4, 5, 12], [4, 5, 12]],
        ["RFFT", [3, 7, 16], [7, 16]],
        ["IRFFT", [2, 9, 5, 9], [9, 5, 16]],
        ["IRFFT", [8, 9], [8, 17]],
      ];
      cases.forEach(([t, shape, L], i) => {
        const e = check(dt, t, shape, L, 100 + i);
        assert.ok(e < TOL[dt], `${t} ${dt} ${shape} over ${L}: relative error ${e}`);
      });
    });
});

test(
  "jaxts.Fft64 at a large length (65536, and 49153 = 13 * 19 * 199 through Bluestein) stays within 1e-13 of the interpreter",
  { skip },
  () => {
    fftNativeOptions.enabled = true;
    withX64(true, () => {
      for (const n of [65536, 49153]) {
        const e = check("float64", "FFT", [n], [n], n);
        assert.ok(e < 1e-12, `FFT float64 n=${n}: relative error ${e}`);
      }
    });
  },
);

test("jaxts.Fft equals ORT's DFT lowering on complex64 (JAXTS_NATIVE_FFT=0's path)", { skip }, () => {
  for (const t of TYPES)
    for (const n of [100, 128, 97]) {
      const shape = t === "IRFFT" ? [6, Math.floor(n / 2) + 1] : [6, n];
      const [a] = run("float32", t, shape, [n], 9 + n),
        [b] = run("float32", t, shape, [n], 9 + n, false);
      const e = relErr(a, b);
      // ORT's float32 DFT of a non-power-of-two length is the less accurate side (1.5e-5 measured at n = 100)
      assert.ok(e < 5e-5, `${t} n=${n}: native vs ORT DFT relative difference ${e}`);
    }
});

test("jaxts.Fft: eager equals jit, grads under jit match eager, vmap equals a loop of slices", { skip }, () => {
  fftNativeOptions.enabled = true;
  withX64(true, () => {
    const x = complexOf(
      np.array(seededUniform(4 * 30, 3), "float64").reshape([4, 30]),
      np.array(seededUniform(4 * 30, 4), "float64").reshape([4, 30]),
    );
    const f = (z: Array) => np.fft.fft(z);
    const close = (a: Array, b: Array, tol: number, msg: string) => {
      const e = relErr([real(a) as ArrayImpl, imag(a) as ArrayImpl], [real(b) as ArrayImpl, imag(b) as ArrayImpl]);
      assert.ok(e < tol, `${msg}: relative difference ${e}`);
    };
    close(jit(f)(x), f(x), 1e-13, "eager vs jit");
    const v = vmap(f)(x);
    for (let i = 0; i < 4; i++) close(v.get(i), f(x.get(i)), 1e-13, `vmap slice ${i}`);
    // a real loss through rfft: its gradient under jit equals the eager gradient and central differences
    const r = np.array(seededUniform(24, 8), "float64");
    const loss = (y: Array) => np.sum(np.abs(np.multiply(np.fft.rfft(y), np.arange(13))));
    const gj = (jit(grad(loss))(r) as ArrayImpl).dataSync(),
      ge = (grad(loss)(r) as ArrayImpl).dataSync();
    const rv = [...(r as ArrayImpl).dataSync()].map(Number),
      h = 1e-6;
    for (let i = 0; i < 24; i++) {
      assert.ok(Math.abs(Number(gj[i]) - Number(ge[i])) < 1e-10, `grad ${i}: jit ${gj[i]} eager ${ge[i]}`);
      const up = rv.slice(),
        dn = rv.slice();
      up[i] += h;
      dn[i] -= h;
      const fd =
        (Number((loss(np.array(up, "float64")) as ArrayImpl).dataSync()[0]) -
          Number((loss(np.array(dn, "float64")) as ArrayImpl).dataSync()[0])) /
        (2 * h);
      assert.ok(Math.abs(fd - Number(gj[i])) < 1e-5 * Math.max(1, Math.abs(fd)), `grad ${i}: ${gj[i]} vs fd ${fd}`);
    }
  });
});

interface NpCase {
  fn: string;
  shape: number[];
  complex: boolean;
  kwargs: Record<string, unknown>;
  out: { shape: number[]; re?: number[]; im?: number[]; data?: number[] };
}
const npFx = loadFixture<{ cases: NpCase[] }>("fft-native.json");
const NP_FFT = np.fft as unknown as Record<string, (a: Array, opts?: Record<string, unknown>) => Array>;

test(
  "jnp.fft on the native op matches NumPy (24 lengths, n-D, all norms; complex128 1e-13, complex64 3e-6)",
  { skip },
  () => {
    fftNativeOptions.enabled = true;
    for (const c of npFx.cases)
      for (const x64 of [true, false])
        withX64(x64, () => {
          const size = sizeOf(c.shape);
          const re: number[] = [],
            im: number[] = [];
          for (let k = 0; k < size; k++) {
            re.push(Math.sin(0.37 * k + 0.1));
            im.push(Math.cos(0.71 * k + 0.2));
          }
          const rdt = x64 ? "float64" : "float32";
          const r = np.array(re, rdt).reshape(c.shape);
          const x = c.complex ? complexOf(r, np.array(im, rdt).reshape(c.shape)) : r;
          const f = (a: Array) => NP_FFT[c.fn](a, c.kwargs);
          const wantParts = [c.out.re ?? c.out.data ?? [], c.out.im ?? []];
          const mag = Math.max(1e-300, ...wantParts.flat().map(Math.abs));
          const tol = x64 ? 1e-13 : 3e-6;
          for (const [mode, y] of [
            ["eager", f(x)],
            ["jit", jit(f)(x)],
          ] as const) {
            assert.deepEqual([...y.shape], c.out.shape, `${c.fn} ${JSON.stringify(c.kwargs)} ${mode}: shape`);
            const gotParts = c.out.re ? [real(y), imag(y)] : [y];
            gotParts.forEach((g, p) => {
              const gv = (g as ArrayImpl).dataSync();
              let err = 0;
              for (let i = 0; i < gv.length; i++) err = Math.max(err, Math.abs(Number(gv[i]) - wantParts[p][i]));
              assert.ok(
                err / mag < tol,
                `${c.fn} n=${c.shape} ${JSON.stringify(c.kwargs)} x64=${x64} ${mode}: rel err ${err / mag}`,
              );
            });
          }
        });
  },
);
