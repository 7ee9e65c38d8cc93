/** @file The ONNX lowerings of qr, eigh and svd (src/lowerings/linalg-decomp.ts): one ONNX program, agreement with the reference interpreter, identities, degenerate inputs. */
import { after, test } from "node:test";
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
import { linalgNativeOptions } from "../../src/lowerings/linalg-native.js";

// These tests are about the Loop lowerings (standard ONNX, what exportOnnx and the onnxruntime-node binding run);
// native sessions would take the custom ops instead (tested in linalg-native.test.ts).
linalgNativeOptions.enabled = false;

/** Deterministic pseudo-random values in [-1, 1). */
function rand(n: number, seed: number): number[] {
  let s = seed >>> 0 || 1;
  return globalThis.Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}
function mat(dtype: DType, shape: number[], vals: number[]): ArrayImpl {
  return new ArrayImpl(new ShapedArray(shape, dtype), fromNumbers(vals, dtype));
}
const randMat = (dtype: DType, shape: number[], seed: number): ArrayImpl =>
  mat(
    dtype,
    shape,
    rand(
      shape.reduce((a, b) => a * b, 1),
      seed,
    ),
  );
const vals = (a: Array): number[] =>
  globalThis.Array.from({ length: (a as ArrayImpl).size }, (_, i) => Number((a as ArrayImpl).elementAt(i)));

interface Run {
  kinds: string[];
  onnx: ArrayImpl[];
  ref: ArrayImpl[];
}
/** Traces f, returns the compiled program's step kinds, its ONNX outputs and the interpreter's outputs. */
function run(f: (...xs: Array[]) => Array[], args: ArrayImpl[], label: string): Run {
  const { jaxpr, consts } = traceToJaxpr(
    f,
    args.map((a) => a.aval),
    label,
  );
  const cs = consts as ArrayImpl[];
  const kinds = compiledFor(jaxpr).program.steps.map((s) => s.kind);
  const prev = config.backend;
  config.update("backend", "interpreter");
  let ref: ArrayImpl[];
  try {
    ref = withTrace(evalTrace, () => evalJaxpr(jaxpr, cs, args)) as ArrayImpl[];
  } finally {
    config.update("backend", prev);
  }
  const onnx = onnxBackend.executeJaxpr!(jaxpr, cs, args, { name: label }) as ArrayImpl[];
  return { kinds, onnx, ref };
}
const tolFor = (d: DType): number => (d === "float64" ? 1e-10 : 2e-4);
/** Max |a - e| (NaN must match NaN); asserts it is within atol + rtol |e|. */
function close(a: ArrayImpl, e: ArrayImpl, label: string, tol = tolFor(e.dtype)): number {
  assert.equal(a.dtype, e.dtype, `${label}: dtype`);
  assert.deepEqual([...a.shape], [...e.shape], `${label}: shape`);
  const av = vals(a),
    ev = vals(e);
  let worst = 0;
  for (let i = 0; i < ev.length; i++) {
    if (Number.isNaN(ev[i])) {
      assert.ok(Number.isNaN(av[i]), `${label}[${i}]: got ${av[i]}, expected NaN`);
      continue;
    }
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
/**
 * eigh's ONNX lowering (non-native sessions, n <= 16) is cyclic Jacobi while the reference is Householder + tridiagonal
 * QR: eigenvalues agree to rounding, eigenvectors only up to sign / basis within a repeated eigenvalue (each test checks
 * A V = V diag(w) and V^T V = I on the ONNX outputs), so the eigenvalues (output wIndex) compare sorted, the vectors' NaNs by position.
 */
function agreeEigh(r: Run, label: string, wIndex: number): void {
  assert.deepEqual(r.kinds, ["onnx"], `${label}: program steps`);
  r.onnx.forEach((o, i) => {
    if (i !== wIndex) {
      const ov = vals(o);
      vals(r.ref[i]).forEach((x, j) =>
        assert.equal(Number.isNaN(ov[j]), Number.isNaN(x), `${label} out ${i}[${j}] NaN`),
      );
      return;
    }
    // unsorted eigenvalues come in each algorithm's own order: compare them sorted within each matrix
    const sorted = (x: ArrayImpl): ArrayImpl => {
      if (i !== wIndex) return x;
      const n = x.shape[x.ndim - 1],
        v = vals(x);
      const out: number[] = [];
      for (let t = 0; t < v.length; t += n) out.push(...v.slice(t, t + n).sort((p, q) => p - q));
      return mat(x.dtype, [...x.shape], out);
    };
    const e = close(sorted(o), sorted(r.ref[i]), `${label} out ${i}`);
    const key = `${label.split(" ")[0]} ${o.dtype}`;
    maxErr[key] = Math.max(maxErr[key] ?? 0, e);
  });
}
/** Batched matmul / transpose on concrete arrays (float64 math). */
function matmul(a: ArrayImpl, b: ArrayImpl): number[][] {
  const [m, k] = a.shape.slice(-2),
    n = b.shape[b.ndim - 1],
    av = vals(a),
    bv = vals(b),
    batch = av.length / (m * k);
  const out: number[][] = [];
  for (let t = 0; t < batch; t++) {
    const o = new globalThis.Array<number>(m * n).fill(0);
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let l = 0; l < k; l++) s += av[t * m * k + i * k + l] * bv[t * k * n + l * n + j];
        o[i * n + j] = s;
      }
    out.push(o);
  }
  return out;
}
function assertNear(got: number[], want: number[], tol: number, label: string): void {
  assert.equal(got.length, want.length, `${label}: length`);
  for (let i = 0; i < want.length; i++)
    assert.ok(
      Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])),
      `${label}[${i}]: got ${got[i]}, expected ${want[i]}`,
    );
}
const eyeVals = (batch: number, n: number): number[] =>
  globalThis.Array.from({ length: batch * n * n }, (_, i) => ((i % (n * n)) % (n + 1) === 0 ? 1 : 0));
const tr = (a: ArrayImpl): ArrayImpl => P.mT(a) as ArrayImpl;

// ---------------------------------------------------------------- qr
const QR_SHAPES: number[][] = [
  [1, 1],
  [2, 2],
  [5, 5],
  [12, 12],
  [5, 3],
  [3, 5],
  [2, 4, 3],
  [2, 3, 4],
  [2, 2, 12, 7],
];
test("qr lowers to one ONNX program and agrees with the interpreter (float32/float64, batched, tall/wide, full/reduced)", () => {
  for (const dtype of ["float32", "float64"] as DType[]) {
    for (const [si, shape] of QR_SHAPES.entries()) {
      for (const full of [false, true]) {
        const a = randMat(dtype, shape, 7 + si);
        const r = run((x) => P.qr(x, full), [a], `qr ${dtype} ${shape} full=${full}`);
        agree(r, `qr ${dtype} [${shape}] full=${full}`);
        // identities: Q R = A, Q^T Q = I
        const [q, rr] = r.onnx;
        const m = shape[shape.length - 2],
          c = q.shape[q.ndim - 1],
          batch = a.size / (m * shape[shape.length - 1]);
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
      for (const full of [false, true])
        agree(
          run((x) => P.qr(x, full), [a], `qr ${name}`),
          `qr ${name} ${dtype} full=${full}`,
        );
    }
  }
});

test("jnp.linalg.qr runs as one ONNX program", () => {
  const a = randMat("float32", [4, 3], 3);
  agree(
    run(
      (x) => {
        const o = jnp.linalg.qr(x) as { Q: Array; R: Array };
        return [o.Q, o.R];
      },
      [a],
      "jnp qr",
    ),
    "jnp.qr float32",
  );
  agree(
    run(
      (x) => {
        const o = jnp.linalg.qr(x, "complete") as { Q: Array; R: Array };
        return [o.Q, o.R];
      },
      [a],
      "jnp qr complete",
    ),
    "jnp.qr float32",
  );
});

// ---------------------------------------------------------------- eigh
/** Symmetric (a + a^T) / 2 of a concrete batch. */
function symm(a: ArrayImpl): ArrayImpl {
  const n = a.shape[a.ndim - 1],
    v = vals(a),
    o = v.slice();
  for (let t = 0; t < v.length; t += n * n)
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) o[t + i * n + j] = 0.5 * (v[t + i * n + j] + v[t + j * n + i]);
  return mat(a.dtype, [...a.shape], o);
}
/** Checks A V = V diag(w) and V^T V = I for symmetric A (batched). */
function checkEigh(a: ArrayImpl, v: ArrayImpl, w: ArrayImpl, tol: number, label: string): void {
  const n = a.shape[a.ndim - 1],
    batch = a.size / (n * n),
    wv = vals(w),
    vv = vals(v);
  const av = matmul(a, v).flat();
  const vd = vv.map((x, i) => x * wv[Math.floor(i / (n * n)) * n + (i % n)]);
  const scale = Math.max(1, ...wv.map(Math.abs));
  assertNear(
    av.map((x) => x / scale),
    vd.map((x) => x / scale),
    tol,
    `${label} AV=VW`,
  );
  assertNear(matmul(tr(v), v).flat(), eyeVals(batch, n), tol, `${label} VtV=I`);
}
const EIGH_SHAPES: number[][] = [
  [1, 1],
  [2, 2],
  [5, 5],
  [12, 12],
  [3, 4, 4],
  [2, 2, 5, 5],
];
test("eigh lowers to one ONNX program and agrees with the interpreter (float32/float64, batched, lower/upper, sorted/unsorted)", () => {
  for (const dtype of ["float32", "float64"] as DType[]) {
    for (const [si, shape] of EIGH_SHAPES.entries()) {
      const a = randMat(dtype, shape, 101 + si); // not symmetric: `lower` picks the triangle
      for (const lower of [true, false]) {
        for (const sort of [true, false]) {
          const r = run((x) => P.eigh(x, lower, sort), [a], `eigh ${dtype} ${shape}`);
          agreeEigh(r, `eigh ${dtype} [${shape}] lower=${lower} sort=${sort}`, 1);
          const [v, w] = r.onnx;
          const n = shape[shape.length - 1],
            av = vals(a),
            sv = av.slice();
          for (let t = 0; t < av.length; t += n * n)
            for (let i = 0; i < n; i++)
              for (let j = 0; j < n; j++) {
                const useIJ = lower ? i >= j : i <= j;
                sv[t + i * n + j] = useIJ ? av[t + i * n + j] : av[t + j * n + i];
              }
          checkEigh(mat("float64", [...shape], sv), v, w, dtype === "float64" ? 1e-12 : 2e-5, `eigh ${shape}`);
          if (sort) {
            const wv = vals(w);
            for (let i = 1; i < wv.length; i++) if (i % n !== 0) assert.ok(wv[i - 1] <= wv[i], "ascending eigenvalues");
          }
        }
      }
    }
  }
});

test("eigh lowering: repeated eigenvalues, zero, diagonal, 2x2 with tiny off-diagonal and NaN inputs agree with the interpreter", () => {
  for (const dtype of ["float32", "float64"] as DType[]) {
    // Q diag(1, 1, 2, 2, 2) Q^T with Q from a qr of a random matrix
    const q = vals(run((x) => [P.qr(x)[0]], [randMat("float64", [5, 5], 5)], "q").ref[0]);
    const d = [1, 1, 2, 2, 2],
      rep = new globalThis.Array<number>(25).fill(0);
    for (let i = 0; i < 5; i++)
      for (let j = 0; j < 5; j++) for (let l = 0; l < 5; l++) rep[i * 5 + j] += q[i * 5 + l] * d[l] * q[j * 5 + l];
    const cases: [string, ArrayImpl][] = [
      ["repeated", mat(dtype, [5, 5], rep)],
      ["identity", mat(dtype, [4, 4], eyeVals(1, 4))],
      ["zero", mat(dtype, [3, 3], new globalThis.Array(9).fill(0))],
      ["diagonal", mat(dtype, [3, 3], [3, 0, 0, 0, -1, 0, 0, 0, 2])],
      ["tiny off-diagonal", mat(dtype, [2, 2], [1, 1e-20, 1e-20, 1])],
      ["nan", mat(dtype, [2, 3, 3], [NaN, 1, 2, 1, 4, 5, 2, 5, 8, 1, 2, 3, 2, 5, 6, 3, 6, 10])],
      ["inf", mat(dtype, [2, 2], [Infinity, 1, 1, 2])],
    ];
    for (const [name, a] of cases) {
      const r = run((x) => P.eigh(x), [a], `eigh ${name}`);
      agreeEigh(r, `eigh ${name} ${dtype}`, 1);
      if (name !== "nan" && name !== "inf")
        checkEigh(symm(a), r.onnx[0], r.onnx[1], dtype === "float64" ? 1e-12 : 2e-5, `eigh ${name}`);
    }
  }
});

test("jnp.linalg.eigh / eigvalsh run as one ONNX program", () => {
  const a = symm(randMat("float32", [2, 4, 4], 9));
  agreeEigh(
    run(
      (x) => {
        const o = jnp.linalg.eigh(x) as unknown as { eigenvalues: Array; eigenvectors: Array };
        return [o.eigenvalues, o.eigenvectors];
      },
      [a],
      "jnp eigh",
    ),
    "jnp.eigh float32",
    0,
  );
  const je = run(
    (x) => {
      const o = jnp.linalg.eigh(x) as unknown as { eigenvalues: Array; eigenvectors: Array };
      return [o.eigenvectors, o.eigenvalues];
    },
    [a],
    "jnp eigh vectors",
  );
  checkEigh(a, je.onnx[0], je.onnx[1], 2e-5, "jnp eigh");
  agree(
    run((x) => [jnp.linalg.eigvalsh(x) as Array], [a], "jnp eigvalsh"),
    "jnp.eigvalsh float32",
  );
});

// ---------------------------------------------------------------- svd
/** Checks U[:, :k] diag(s) Vt[:k, :] = A and the orthonormality of U's and Vt's columns / rows (batched). */
function checkSvd(a: ArrayImpl, s: ArrayImpl, u: ArrayImpl, vt: ArrayImpl, tol: number, label: string): void {
  const [m, n] = a.shape.slice(-2),
    k = Math.min(m, n),
    uc = u.shape[u.ndim - 1],
    vr = vt.shape[vt.ndim - 2];
  const batch = a.size / (m * n),
    sv = vals(s),
    uv = vals(u),
    vv = vals(vt),
    rec: number[] = [];
  for (let t = 0; t < batch; t++)
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let acc = 0;
        for (let l = 0; l < k; l++) acc += uv[t * m * uc + i * uc + l] * sv[t * k + l] * vv[t * vr * n + l * n + j];
        rec.push(acc);
      }
  assertNear(rec, vals(a), tol, `${label} USVt=A`);
  assertNear(matmul(tr(u), u).flat(), eyeVals(batch, uc), tol, `${label} UtU=I`);
  assertNear(matmul(vt, tr(vt)).flat(), eyeVals(batch, vr), tol, `${label} VtV=I`);
  for (let i = 0; i < sv.length; i++) {
    assert.ok(sv[i] >= 0, `${label}: s >= 0`);
    if (i % k !== 0) assert.ok(sv[i - 1] >= sv[i], `${label}: descending`);
  }
}
const SVD_SHAPES: number[][] = [
  [1, 1],
  [2, 2],
  [5, 5],
  [12, 12],
  [5, 3],
  [3, 5],
  [12, 5],
  [1, 4],
  [2, 4, 3],
  [2, 3, 4],
];
test("svd lowers to one ONNX program and agrees with the interpreter (float32/float64, batched, tall/wide, full/reduced, with/without u and vt)", () => {
  for (const dtype of ["float32", "float64"] as DType[]) {
    for (const [si, shape] of SVD_SHAPES.entries()) {
      const a = randMat(dtype, shape, 211 + si);
      for (const full of [false, true]) {
        const r = run((x) => P.svd(x, full, true), [a], `svd ${dtype} ${shape}`);
        agree(r, `svd ${dtype} [${shape}] full=${full}`);
        checkSvd(a, r.onnx[0], r.onnx[1], r.onnx[2], dtype === "float64" ? 1e-12 : 2e-5, `svd ${shape} full=${full}`);
      }
      agree(
        run((x) => P.svd(x, false, false), [a], `svd s ${dtype} ${shape}`),
        `svd ${dtype} [${shape}] s only`,
      );
    }
  }
});

test("svd lowering: zero, rank-deficient, repeated singular values, scaled and NaN inputs agree with the interpreter", () => {
  for (const dtype of ["float32", "float64"] as DType[]) {
    const cases: [string, ArrayImpl][] = [
      ["zero", mat(dtype, [3, 2], new globalThis.Array(6).fill(0))],
      ["rank1", mat(dtype, [4, 3], [1, 2, 3, 2, 4, 6, -1, -2, -3, 0.5, 1, 1.5])],
      ["rank1 wide", mat(dtype, [2, 4], [1, 2, 3, 4, 2, 4, 6, 8])],
      ["identity", mat(dtype, [3, 3], eyeVals(1, 3))],
      ["zero column", mat(dtype, [3, 3], [1, 0, 2, 3, 0, 4, 5, 0, 6])],
      ["large", mat(dtype, [2, 2], dtype === "float64" ? [1e200, 3e199, -2e200, 5e199] : [1e30, 3e29, -2e30, 5e29])],
      ["nan", mat(dtype, [2, 2, 3], [NaN, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 7])],
    ];
    for (const [name, a] of cases) {
      for (const full of [false, true]) {
        const r = run((x) => P.svd(x, full, true), [a], `svd ${name}`);
        agree(r, `svd ${name} ${dtype} full=${full}`);
        if (name !== "nan" && name !== "large")
          checkSvd(a, r.onnx[0], r.onnx[1], r.onnx[2], dtype === "float64" ? 1e-12 : 2e-5, `svd ${name}`);
      }
    }
  }
});

test("jnp.linalg.svd / svdvals / pinv / norm(ord=2) / matrixRank / cond run as one ONNX program", () => {
  const a = randMat("float32", [2, 5, 3], 17);
  agree(
    run(
      (x) => {
        const o = jnp.linalg.svd(x) as unknown as { U: Array; S: Array; Vh: Array };
        return [o.U, o.S, o.Vh];
      },
      [a],
      "jnp svd",
    ),
    "jnp.svd float32",
  );
  agree(
    run((x) => [jnp.linalg.svdvals(x)], [a], "jnp svdvals"),
    "jnp.svdvals float32",
  );
  agree(
    run((x) => [jnp.linalg.pinv(x)], [a], "jnp pinv"),
    "jnp.pinv float32",
  );
  agree(
    run((x) => [jnp.linalg.norm(x, 2, [-2, -1])], [a], "jnp norm2"),
    "jnp.norm2 float32",
  );
  agree(
    run((x) => [jnp.linalg.matrixRank(x)], [a], "jnp matrixRank"),
    "jnp.matrixRank float32",
  );
  agree(
    run((x) => [jnp.linalg.cond(x)], [a], "jnp cond"),
    "jnp.cond float32",
  );
});

after(() => {
  console.log("max abs error vs interpreter:", JSON.stringify(maxErr));
});

test("eigh/svd above the Jacobi size limit run as a host step under jit (same values) but still export as one ONNX graph", async () => {
  const { toOnnx } = await import("../../src/io/export-onnx.js");
  const { jacobiLoweringOptions } = await import("../../src/lowerings/linalg-decomp.js");
  const n = jacobiLoweringOptions.maxN + 2;
  const a = randMat("float32", [n, n], 91);
  const sym = (x: Array) => jnp.add(x, jnp.matrixTranspose(x));
  const e = run((x) => P.eigh(sym(x)), [a], "eigh_big");
  assert.ok(e.kinds.includes("host"), `eigh ${n}x${n} steps: ${e.kinds}`);
  e.onnx.forEach((o, i) => assert.deepEqual(vals(o), vals(e.ref[i])));
  const s = run((x) => P.svd(x, false), [randMat("float32", [n + 3, n], 92)], "svd_big");
  assert.ok(s.kinds.includes("host"), `svd steps: ${s.kinds}`);
  s.onnx.forEach((o, i) => vals(o).forEach((v, k) => assert.ok(Math.abs(v - vals(s.ref[i])[k]) < 1e-5)));
  // the size limit is a jit speed choice: export lowers any size (exportOnnx needs one standalone graph)
  const m = toOnnx((x: Array) => P.eigh(sym(x)), a);
  assert.ok(m.bytes.length > 0 && /Loop/.test(Buffer.from(m.bytes).toString("latin1")));
});
