/** @file The ONNX lowerings of qr, eigh and svd (src/lax/lower-linalg-decomp.ts): one ONNX program, agreement with the reference interpreter, identities, degenerate inputs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import { compiledFor, onnxBackend } from "../../src/backends/onnx/onnx-backend.js";
import { ArrayImpl } from "../../src/core/array-impl.js";
import type { Array } from "../../src/core/array.js";
import { ShapedArray } from "../../src/core/aval.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import { evalJaxpr } from "../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { fromNumbers } from "../../src/core/convert.js";
import { evalTrace, withTrace } from "../../src/core/trace.js";
import * as P from "../../src/primitives/linalg.js";
import * as jnp from "../../src/numpy/index.js";

/** Deterministic pseudo-random values in [-1, 1). */
function rand(n: number, seed: number): number[] {
  let s = seed >>> 0 || 1;
  return globalThis.Array.from({ length: n }, () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 2 ** 31 - 1; });
}
function mat(dtype: DType, shape: number[], vals: number[]): ArrayImpl {
  return new ArrayImpl(new ShapedArray(shape, dtype), fromNumbers(vals, dtype));
}
const randMat = (dtype: DType, shape: number[], seed: number): ArrayImpl => mat(dtype, shape, rand(shape.reduce((a, b) => a * b, 1), seed));
const vals = (a: Array): number[] => globalThis.Array.from({ length: (a as ArrayImpl).size }, (_, i) => Number((a as ArrayImpl).elementAt(i)));

interface Run { kinds: string[]; onnx: ArrayImpl[]; ref: ArrayImpl[] }
/** Traces f, returns the compiled program's step kinds, its ONNX outputs and the interpreter's outputs. */
function run(f: (...xs: Array[]) => Array[], args: ArrayImpl[], label: string): Run {
  const { jaxpr, consts } = traceToJaxpr(f, args.map((a) => a.aval), label);
  const cs = consts as ArrayImpl[];
  const kinds = compiledFor(jaxpr).program.steps.map((s) => s.kind);
  const prev = config.backend;
  config.update("backend", "interpreter");
  let ref: ArrayImpl[];
  try { ref = withTrace(evalTrace, () => evalJaxpr(jaxpr, cs, args)) as ArrayImpl[]; } finally { config.update("backend", prev); }
  const onnx = onnxBackend.executeJaxpr!(jaxpr, cs, args, { name: label }) as ArrayImpl[];
  return { kinds, onnx, ref };
}
const tolFor = (d: DType): number => (d === "float64" ? 1e-10 : 2e-4);
/** Max |a - e| (NaN must match NaN); asserts it is within atol + rtol |e|. */
function close(a: ArrayImpl, e: ArrayImpl, label: string, tol = tolFor(e.dtype)): number {
  assert.equal(a.dtype, e.dtype, `${label}: dtype`);
  assert.deepEqual([...a.shape], [...e.shape], `${label}: shape`);
  const av = vals(a), ev = vals(e);
  let worst = 0;
  for (let i = 0; i < ev.length; i++) {
    if (Number.isNaN(ev[i])) { assert.ok(Number.isNaN(av[i]), `${label}[${i}]: got ${av[i]}, expected NaN`); continue; }
    const d = Math.abs(av[i] - ev[i]);
    worst = Math.max(worst, d);
    assert.ok(d <= tol * (1 + Math.abs(ev[i])), `${label}[${i}]: got ${av[i]}, expected ${ev[i]} (diff ${d})`);
  }
  return worst;
}
export const maxErr: Record<string, number> = {};
function agree(r: Run, label: string, tol?: number): void {
  assert.deepEqual(r.kinds, ["onnx"], `${label}: program steps`);
  r.onnx.forEach((o, i) => {
    const e = close(o, r.ref[i], `${label} out ${i}`, tol);
    const key = `${label.split(" ")[0]} ${o.dtype}`;
    maxErr[key] = Math.max(maxErr[key] ?? 0, e);
  });
}
/** Batched matmul / transpose on concrete arrays (float64 math). */
function matmul(a: ArrayImpl, b: ArrayImpl): number[][] {
  const [m, k] = a.shape.slice(-2), n = b.shape[b.ndim - 1], av = vals(a), bv = vals(b), batch = av.length / (m * k);
  const out: number[][] = [];
  for (let t = 0; t < batch; t++) {
    const o = new globalThis.Array<number>(m * n).fill(0);
    for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) { let s = 0; for (let l = 0; l < k; l++) s += av[t * m * k + i * k + l] * bv[t * k * n + l * n + j]; o[i * n + j] = s; }
    out.push(o);
  }
  return out;
}
function assertNear(got: number[], want: number[], tol: number, label: string): void {
  assert.equal(got.length, want.length, `${label}: length`);
  for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])), `${label}[${i}]: got ${got[i]}, expected ${want[i]}`);
}
const eyeVals = (batch: number, n: number): number[] => globalThis.Array.from({ length: batch * n * n }, (_, i) => ((i % (n * n)) % (n + 1) === 0 ? 1 : 0));
const tr = (a: ArrayImpl): ArrayImpl => P.mT(a) as ArrayImpl;

// ---------------------------------------------------------------- qr
const QR_SHAPES: number[][] = [[1, 1], [2, 2], [5, 5], [12, 12], [5, 3], [3, 5], [2, 4, 3], [2, 3, 4], [2, 2, 12, 7]];
test("qr lowers to one ONNX program and agrees with the interpreter (float32/float64, batched, tall/wide, full/reduced)", () => {
  for (const dtype of ["float32", "float64"] as DType[]) {
    for (const [si, shape] of QR_SHAPES.entries()) {
      for (const full of [false, true]) {
        const a = randMat(dtype, shape, 7 + si);
        const r = run((x) => P.qr(x, full), [a], `qr ${dtype} ${shape} full=${full}`);
        agree(r, `qr ${dtype} [${shape}] full=${full}`);
        // identities: Q R = A, Q^T Q = I
        const [q, rr] = r.onnx;
        const m = shape[shape.length - 2], c = q.shape[q.ndim - 1], batch = a.size / (m * shape[shape.length - 1]);
        const tol = dtype === "float64" ? 1e-12 : 2e-5;
        assertNear(matmul(q, rr).flat(), vals(a), tol, `qr ${shape} QR=A`);
        assertNear(matmul(tr(q), q).flat(), eyeVals(batch, c), tol, `qr ${shape} QtQ=I`);
      }
    }
  }
});

test("qr lowering: degenerate inputs (zero, rank-deficient, zero column, negative zero, NaN) agree with the interpreter", () => {
  for (const dtype of ["float32", "float64"] as DType[]) {
    const cases: [string, ArrayImpl][] = [
      ["zero", mat(dtype, [3, 3], new globalThis.Array(9).fill(0))],
      ["rank1", mat(dtype, [3, 2], [1, 2, 2, 4, 3, 6])],
      ["zero column", mat(dtype, [3, 3], [0, 1, 2, 0, 3, 4, 0, 5, 6])],
      ["lower zero part", mat(dtype, [3, 3], [-0, 1, 2, 0, 3, 4, 0, 0, 6])],
      ["nan", mat(dtype, [2, 3, 3], [NaN, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 10])],
    ];
    for (const [name, a] of cases) {
      for (const full of [false, true]) agree(run((x) => P.qr(x, full), [a], `qr ${name}`), `qr ${name} ${dtype} full=${full}`);
    }
  }
});

test("jnp.linalg.qr runs as one ONNX program", () => {
  const a = randMat("float32", [4, 3], 3);
  agree(run((x) => { const o = jnp.linalg.qr(x) as { Q: Array; R: Array }; return [o.Q, o.R]; }, [a], "jnp qr"), "jnp.qr float32");
  agree(run((x) => { const o = jnp.linalg.qr(x, "complete") as { Q: Array; R: Array }; return [o.Q, o.R]; }, [a], "jnp qr complete"), "jnp.qr float32");
});

test("report", () => { console.log("max abs error vs interpreter:", JSON.stringify(maxErr)); });
