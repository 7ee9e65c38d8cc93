/** @file The ONNX lowerings of cholesky, triangular_solve and lu (src/lowerings/linalg.ts): one ONNX graph, agreement with the interpreter, NumPy fixtures, identities, failure cases, gradients. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { repoPath } from "../helpers/repo-root.js";
import "../../src/index.js";
import { compiledFor, onnxBackend } from "../../src/backends/onnx/onnx-backend.js";
import type { ArrayImpl } from "../../src/core/array-impl.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import type { Jaxpr } from "../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import * as LA from "../../src/numpy/linalg.js";
import * as ops from "../../src/primitives/ops.js";
import * as P from "../../src/primitives/linalg.js";
import { grad, jit } from "../../src/transforms/api.js";
import { arr, checkProgram } from "../compiler/harness.js";
import { linalgNativeOptions } from "../../src/lowerings/linalg-native.js";
import { seededUniform, sizeOf } from "../helpers/seeded-random.js";
import { interpreterOutputs } from "../helpers/interpreter-reference.js";

// These tests are about the Loop lowerings (standard ONNX, what exportOnnx and the onnxruntime-node binding run);
// native sessions would take the custom ops instead (tested in linalg-native.test.ts).
linalgNativeOptions.enabled = false;

const rand = seededUniform,
  size = sizeOf;
const eye = (x: Array): Array => P.eyeLike(x.shape, x.dtype);
/** x x^T + n I: symmetric positive definite. */
const spd = (x: Array): Array => ops.add(P.mm(x, P.mT(x)), ops.mul(eye(x), ops.scalarLike(x, x.shape[x.ndim - 1])));

/** Largest |got - want| / max(1, |want|) over all outputs (NaN must match NaN, ints exactly), tracked per label. */
const measured = new Map<string, number>();
function record(label: string, err: number): void {
  measured.set(label, Math.max(measured.get(label) ?? 0, err));
}

/**
 * Traces f, asserts the compiled program is ONNX only, runs it on the interpreter and on ONNX and compares every
 * output but the last `residuals`: float elements within `tol` relative to max(1, |expected|), same NaN/Inf positions, integers exactly.
 */
function agree(
  f: (...xs: Array[]) => Array[],
  args: ArrayImpl[],
  label: string,
  tol: number,
  group = label,
  residuals = 0,
): ArrayImpl[] {
  const { jaxpr, consts } = traceToJaxpr(
    f,
    args.map((a) => a.aval),
    label,
  );
  assert.deepEqual(
    compiledFor(jaxpr as Jaxpr).program.steps.map((s) => s.kind),
    ["onnx"],
    `${label}: steps`,
  );
  const want = interpreterOutputs(jaxpr, consts as ArrayImpl[], args);
  const got = onnxBackend.executeJaxpr!(jaxpr, consts as ArrayImpl[], args, { name: label });
  assert.equal(got.length, want.length);
  got.forEach((g, o) => {
    if (o >= got.length - residuals) return; // identity residuals (checked by the caller against a bound)
    assert.equal(g.dtype, want[o].dtype, `${label} out ${o}: dtype`);
    assert.deepEqual([...g.shape], [...want[o].shape], `${label} out ${o}: shape`);
    const gv = g.dataSync(),
      wv = want[o].dataSync();
    let err = 0;
    for (let i = 0; i < wv.length; i++) {
      const a = Number(gv[i]),
        e = Number(wv[i]);
      if (!Number.isFinite(e) || g.dtype === "int32") {
        assert.ok(Object.is(a, e), `${label} out ${o}[${i}]: got ${a}, expected ${e}`);
        continue;
      }
      err = Math.max(err, Math.abs(a - e) / Math.max(1, Math.abs(e)));
    }
    record(group, err);
    assert.ok(err <= tol, `${label} out ${o}: max relative error ${err} > ${tol}`);
  });
  return got;
}
const TOL: Record<string, number> = { float32: 4e-6, float64: 1e-12 };
const DTYPES: DType[] = ["float32", "float64"];
const SIZES = [1, 2, 5, 17];
/** Max |x| of a concrete array. */
/** Runs fn with jax_enable_x64 on for float64 (jnp canonicalizes float64 to float32 otherwise). */
function withX64<T>(dt: DType, fn: () => T): T {
  const prev = config.enableX64;
  config.update("enableX64", dt === "float64");
  try {
    return fn();
  } finally {
    config.update("enableX64", prev);
  }
}
const maxAbs = (x: ArrayImpl): number => Math.max(...[...x.dataSync()].map((v) => Math.abs(Number(v))));

test("cholesky: one ONNX graph agreeing with the interpreter (float32/64, [3,2,n,n], n = 1, 2, 5, 17); L L^T = A", () => {
  for (const dt of DTYPES) {
    for (const n of SIZES) {
      const sh = [3, 2, n, n];
      const a = arr(dt, sh, rand(size(sh), 11 * n + 1));
      const [l, resid] = agree(
        (x) => {
          const s = spd(x);
          const L = P.cholesky(s);
          return [L, ops.sub(P.mm(L, P.mT(L)), s)];
        },
        [a],
        `cholesky ${dt} n=${n}`,
        TOL[dt],
        `cholesky ${dt}`,
        1,
      );
      assert.ok(
        maxAbs(resid) < (dt === "float32" ? 1e-4 : 1e-12) * n,
        `L L^T = A (${dt} n=${n}): residual ${maxAbs(resid)}`,
      );
      assert.equal(maxAbs(ops.sub(l, P.triPart(l, true)) as ArrayImpl), 0, "zeros above the diagonal");
    }
  }
});

test("cholesky: reads only the lower triangle; non-PD, zero-pivot and NaN matrices are all NaN like the interpreter", () => {
  for (const dt of DTYPES) {
    // batch of 4: PD with junk (Inf) above the diagonal, indefinite, singular (zero pivot at step 2), NaN entry
    const vals = [
      4,
      Infinity,
      0,
      2,
      5,
      NaN,
      0,
      1,
      3,
      1,
      0,
      0,
      2,
      1,
      0,
      0,
      0,
      1,
      1,
      0,
      0,
      1,
      1,
      0,
      0,
      0,
      1,
      4,
      0,
      0,
      NaN,
      5,
      0,
      1,
      1,
      3,
    ];
    const got = agree((x) => [P.cholesky(x)], [arr(dt, [4, 3, 3], vals)], `cholesky special ${dt}`, TOL[dt]);
    const v = [...got[0].dataSync()];
    assert.deepEqual(
      v.slice(0, 9).map(Number.isNaN),
      globalThis.Array(9).fill(false),
      "PD matrix with junk above the diagonal factors",
    );
    assert.deepEqual(
      v.slice(0, 9).map((x) => Math.round(Number(x) * 1e6) / 1e6),
      [2, 0, 0, 1, 2, 0, 0, 0.5, Math.round(Math.sqrt(2.75) * 1e6) / 1e6],
    );
    assert.ok(v.slice(9).every(Number.isNaN), "indefinite, singular and NaN inputs give all-NaN factors");
    // 1x1: sqrt, and a negative entry is NaN
    const one = agree((x) => [P.cholesky(x)], [arr(dt, [3, 1, 1], [9, -1, 0])], `cholesky 1x1 ${dt}`, TOL[dt]);
    assert.deepEqual(
      [...one[0].dataSync()].map((x) => (Number.isNaN(x) ? "nan" : x)),
      [3, "nan", "nan"],
    );
  }
});

test("triangular_solve: every (left_side, lower, transpose_a, unit_diagonal, conjugate_a) combination agrees and solves op(A) X = B", () => {
  for (const dt of DTYPES) {
    let seed = 100;
    for (const leftSide of [true, false])
      for (const lower of [true, false])
        for (const transposeA of [true, false])
          for (const unitDiagonal of [true, false]) {
            for (const conjugateA of [false, true]) {
              const k = 5,
                r = 3,
                B = [3, 2];
              const aSh = [...B, k, k],
                bSh = leftSide ? [...B, k, r] : [...B, r, k];
              const opts = { leftSide, lower, transposeA, unitDiagonal, conjugateA };
              const label = `triangular_solve ${dt} ${JSON.stringify(opts)}`;
              const got = agree(
                (a, b) => {
                  // well conditioned in the read triangle; junk (NaN) in the other triangle must not be read
                  const tri = P.triPart(ops.add(a, ops.mul(eye(a), ops.scalarLike(a, 3))), lower);
                  const junk = ops.select(ops.eq(tri, ops.scalarLike(tri, 0)), ops.fullLike(tri, NaN), tri);
                  const x = P.triangularSolve(junk, b, opts);
                  let op = unitDiagonal ? ops.add(P.triPart(tri, lower, lower ? -1 : 1), eye(tri)) : tri;
                  if (transposeA) op = P.mT(op);
                  return [x, ops.sub(leftSide ? P.mm(op, x) : P.mm(x, op), b)];
                },
                [arr(dt, aSh, rand(size(aSh), seed++)), arr(dt, bSh, rand(size(bSh), seed++))],
                label,
                TOL[dt],
                `triangular_solve ${dt}`,
                1,
              );
              assert.ok(maxAbs(got[1]) < (dt === "float32" ? 1e-5 : 1e-13), `${label}: residual ${maxAbs(got[1])}`);
            }
          }
    for (const n of SIZES) {
      const aSh = [3, 2, n, n],
        bSh = [3, 2, n, 4];
      agree(
        (a, b) => [
          P.triangularSolve(ops.add(a, ops.mul(eye(a), ops.scalarLike(a, 4))), b, { leftSide: true, lower: true }),
        ],
        [arr(dt, aSh, rand(size(aSh), n)), arr(dt, bSh, rand(size(bSh), n + 50))],
        `triangular_solve ${dt} n=${n}`,
        TOL[dt],
        `triangular_solve ${dt}`,
      );
    }
    // a zero on the diagonal gives the same Inf/NaN as the interpreter's substitution
    agree(
      (a, b) => [P.triangularSolve(a, b, { leftSide: true, lower: false })],
      [arr(dt, [2, 2], [0, 1, 0, 2]), arr(dt, [2, 2], [1, 0, 2, -1])],
      `triangular_solve singular ${dt}`,
      TOL[dt],
    );
  }
});

test("lu: square, tall and wide batches agree (pivots and permutation exactly); P A = L U", () => {
  for (const dt of DTYPES) {
    const shapes = [...SIZES.map((n) => [3, 2, n, n]), [2, 5, 3], [2, 3, 5], [17, 4], [1, 6]];
    for (const sh of shapes) {
      const m = sh[sh.length - 2],
        n = sh[sh.length - 1],
        k = Math.min(m, n),
        B = sh.slice(0, -2);
      const label = `lu ${dt} [${sh}]`;
      const got = agree(
        (a) => {
          const [lu, piv, perm] = P.lu(a);
          const zero = B.map(() => 0);
          const L = ops.add(
            P.triPart(ops.slice(lu, [...zero, 0, 0], [...B, m, k]), true, -1),
            P.eyeLike([...B, m, k], a.dtype),
          );
          const U = P.triPart(ops.slice(lu, [...zero, 0, 0], [...B, k, n]), false);
          // P A: rows of A gathered by perm, as a one-hot matrix product
          const permMat = ops.convert(
            ops.eq(
              ops.broadcastInDim(perm, [...B, m, m], [...globalThis.Array(B.length + 1).keys()]),
              ops.iota("int32", [...B, m, m], B.length + 1),
            ),
            a.dtype,
          );
          return [lu, piv, perm, ops.sub(P.mm(permMat, a), P.mm(L, U))];
        },
        [arr(dt, sh, rand(size(sh), m * 31 + n))],
        label,
        TOL[dt],
        `lu ${dt}`,
        1,
      );
      assert.ok(
        maxAbs(got[3]) < (dt === "float32" ? 1e-5 : 1e-13) * k,
        `${label}: P A - L U residual ${maxAbs(got[3])}`,
      );
    }
  }
});

test("lu: ties, zero pivots, singular matrices and NaN entries match the interpreter", () => {
  for (const dt of DTYPES) {
    const vals = [
      1,
      2,
      3,
      -1,
      5,
      6,
      1,
      0,
      2, // |1| tie in column 0: the first row wins (no swap)
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0, // zero matrix: no swaps, nothing scaled
      0,
      1,
      2,
      0,
      3,
      4,
      0,
      5,
      6, // zero first column: pivot 0 left unscaled
      1,
      2,
      3,
      2,
      4,
      6,
      3,
      6,
      9, // rank 1: zero pivots after the first step
      NaN,
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8, // NaN on the diagonal keeps the row
      1,
      2,
      3,
      NaN,
      4,
      5,
      2,
      7,
      8, // NaN below the diagonal is never the pivot
      -2,
      1,
      0,
      2,
      3,
      1,
      -2,
      0,
      4, // |-2| = |2| = |-2|: first wins
    ];
    const got = agree((a) => P.lu(a), [arr(dt, [7, 3, 3], vals)], `lu special ${dt}`, TOL[dt]);
    const piv = [...got[1].dataSync()];
    assert.deepEqual(piv.slice(0, 3), [0, 1, 2], "tie keeps the first row");
    assert.deepEqual(piv.slice(3, 6), [0, 1, 2], "zero matrix");
    assert.deepEqual(piv.slice(12, 13), [0], "NaN diagonal keeps the row");
    assert.deepEqual(piv.slice(15, 16), [2], "NaN below the diagonal skipped: |2| at row 2 wins over |1|");
    assert.deepEqual(piv.slice(18, 19), [0], "equal magnitudes: first row");
  }
});

test("the lowerings match the NumPy fixtures (test/fixtures/linalg-kernels.json)", () => {
  type Num = number | string;
  const fx = JSON.parse(readFileSync(repoPath("test", "fixtures", "linalg-kernels.json"), "utf8")) as {
    cholesky: { name: string; batch: number; n: number; tol: number; a: Num[]; l: Num[] | null }[];
    triangularSolve: {
      batch: number;
      m: number;
      n: number;
      tol: number;
      a: Num[];
      b: Num[];
      x: Num[];
      leftSide: boolean;
      lower: boolean;
      transposeA: boolean;
      unitDiagonal: boolean;
    }[];
    lu: {
      name: string;
      batch: number;
      m: number;
      n: number;
      tol: number;
      a: Num[];
      lu: Num[];
      pivots: number[];
      permutation: number[];
    }[];
  };
  const num = (xs: Num[]): number[] => xs.map(Number);
  const close = (got: ArrayImpl, want: number[], tol: number, label: string): void => {
    const g = [...got.dataSync()].map(Number);
    const scale = Math.max(1, ...want.filter(Number.isFinite).map(Math.abs));
    want.forEach((w, i) =>
      assert.ok(
        Number.isNaN(w) ? Number.isNaN(g[i]) : Math.abs(g[i] - w) <= Math.max(tol, 1e-13) * scale,
        `${label}[${i}]: got ${g[i]}, expected ${w}`,
      ),
    );
  };
  for (const c of fx.cholesky) {
    const [l] = agree(
      (a) => [P.cholesky(a)],
      [arr("float64", [c.batch, c.n, c.n], num(c.a))],
      `fixture cholesky ${c.name}`,
      1e-12,
      "cholesky float64",
    );
    if (c.l === null) assert.ok([...l.dataSync()].every(Number.isNaN), `${c.name}: all NaN`);
    else close(l, num(c.l), c.tol, `fixture cholesky ${c.name}`);
  }
  for (const c of fx.triangularSolve) {
    const k = c.leftSide ? c.m : c.n;
    const opts = { leftSide: c.leftSide, lower: c.lower, transposeA: c.transposeA, unitDiagonal: c.unitDiagonal };
    const [x] = agree(
      (a, b) => [P.triangularSolve(a, b, opts)],
      [arr("float64", [c.batch, k, k], num(c.a)), arr("float64", [c.batch, c.m, c.n], num(c.b))],
      `fixture triangular_solve ${JSON.stringify(opts)}`,
      1e-12,
      "triangular_solve float64",
    );
    close(x, num(c.x), c.tol, `fixture triangular_solve ${JSON.stringify(opts)}`);
  }
  for (const c of fx.lu) {
    const [lu, piv, perm] = agree(
      (a) => P.lu(a),
      [arr("float64", [c.batch, c.m, c.n], num(c.a))],
      `fixture lu ${c.name}`,
      1e-12,
      "lu float64",
    );
    close(lu, num(c.lu), c.tol, `fixture lu ${c.name}`);
    assert.deepEqual([...piv.dataSync()], c.pivots, `fixture lu ${c.name}: pivots`);
    assert.deepEqual([...perm.dataSync()], c.permutation, `fixture lu ${c.name}: permutation`);
  }
});

test("jnp.linalg solve / inv / det / slogdet / cholesky run as one ONNX graph and agree with the interpreter", () => {
  for (const dt of DTYPES)
    withX64(dt, () => {
      for (const n of [1, 5, 17]) {
        const sh = [3, n, n];
        const a = arr(dt, sh, rand(size(sh), 7 * n)),
          b = arr(dt, [3, n, 2], rand(3 * n * 2, 9 * n));
        const tol = dt === "float32" ? 2e-5 : 1e-11;
        agree((x, y) => [LA.solve(x, y), LA.inv(x)], [a, b], `solve/inv ${dt} n=${n}`, tol, `jnp.linalg ${dt}`);
        agree(
          (x) => {
            const s = LA.slogdet(x);
            return [LA.det(x), s.sign, s.logabsdet, LA.cholesky(spd(x))];
          },
          [a],
          `det/slogdet/cholesky ${dt} n=${n}`,
          tol,
          `jnp.linalg ${dt}`,
        );
      }
      // singular: det 0, slogdet (0, -inf)
      const [d, s, l] = agree(
        (x) => {
          const r = LA.slogdet(x);
          return [LA.det(x), r.sign, r.logabsdet];
        },
        [arr(dt, [3, 3], [1, 2, 3, 2, 4, 6, 1, 1, 1])],
        `singular det ${dt}`,
        1e-12,
      );
      assert.equal(d.dtype, dt);
      assert.deepEqual(
        [d.dataSync()[0], s.dataSync()[0], l.dataSync()[0]].map((v) => Number(v) + 0),
        [0, 0, -Infinity],
      );
    });
});

test("grad through cholesky and solve under jit agrees with the interpreter", () => {
  for (const dt of DTYPES)
    withX64(dt, () => {
      const n = 4;
      const a = arr(dt, [n, n], rand(n * n, 77)),
        b = arr(dt, [n], rand(n, 78));
      const f = (x: Array): Array => ops.reduceSum(ops.mul(LA.cholesky(spd(x)), ops.iota(x.dtype, x.shape, 0)), [0, 1]);
      const g = (x: Array, y: Array): Array =>
        ops.reduceSum(ops.square(LA.solve(ops.add(x, ops.mul(eye(x), ops.scalarLike(x, 3))), y)), [0]);
      const tol = dt === "float32" ? 2e-5 : 1e-11;
      agree((x) => [grad(f)(x)], [a], `grad cholesky ${dt}`, tol, `grad ${dt}`);
      agree((x, y) => [grad(g)(x, y)], [a, b], `grad solve ${dt}`, tol, `grad ${dt}`);
      // the public jit path gives the same numbers as the eager interpreter
      const jg = jit(grad(f))(a) as ArrayImpl;
      const prev = config.backend;
      config.update("backend", "interpreter");
      let want: ArrayImpl;
      try {
        want = grad(f)(a) as ArrayImpl;
      } finally {
        config.update("backend", prev);
      }
      const gv = [...jg.dataSync()].map(Number),
        wv = [...want.dataSync()].map(Number);
      for (let i = 0; i < wv.length; i++)
        assert.ok(
          Math.abs(gv[i] - wv[i]) <= tol * Math.max(1, Math.abs(wv[i])),
          `jit(grad(cholesky)) ${dt}[${i}]: ${gv[i]} vs ${wv[i]}`,
        );
      assert.equal(jg.dtype, dt);
    });
});

test("measured agreement (reported when JAXTS_REPORT is set)", () => {
  assert.ok(measured.size > 0);
  if (process.env.JAXTS_REPORT) for (const [k, v] of measured) console.log(`${k}: max rel error ${v.toExponential(2)}`);
});

test("zero-size operands (empty batch, 0 x n, n x 0) agree with the interpreter", () => {
  checkProgram((x) => P.lu(x), [arr("float32", [0, 3, 3], [])], "lu empty batch");
  checkProgram((x) => P.lu(x), [arr("float64", [3, 0], [])], "lu 3x0");
  checkProgram((x) => P.lu(x), [arr("float64", [0, 3], [])], "lu 0x3");
  checkProgram((x) => [P.cholesky(x)], [arr("float32", [0, 2, 2], [])], "cholesky empty batch");
  checkProgram(
    (a, b) => [P.triangularSolve(a, b, { leftSide: true, lower: true })],
    [arr("float32", [2, 2], [1, 0, 1, 1]), arr("float32", [2, 0], [])],
    "triangular_solve 2x0",
  );
  const [, piv, perm] = onnxBackend.execute(P.luP, [arr("float32", [3, 0], [])], {});
  assert.deepEqual([piv.shape, [...perm.dataSync()]], [[0], [0, 1, 2]]);
});
