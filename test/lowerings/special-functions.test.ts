/** @file ONNX lowerings of igamma, igammac, igamma_grad_a, regularized_incomplete_beta, bessel_i0e, bessel_i1e and zeta: one ONNX program each that agrees with the reference interpreter (edge values, every float dtype, rank 0, empty, dense float64 grids). */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import { compiledFor } from "../../src/backends/onnx/onnx-backend.js";
import type { Array } from "../../src/core/array.js";
import type { DType } from "../../src/core/dtype.js";
import type { Jaxpr } from "../../src/core/jaxpr.js";
import type { Primitive } from "../../src/core/primitive.js";
import * as ops from "../../src/primitives/ops.js";
import {
  besselI0eP,
  besselI1eP,
  betaincP,
  igammaGradAP,
  igammaP,
  igammacP,
  zetaP,
} from "../../src/primitives/special.js";
import { arr, checkProgram } from "../compiler/harness.js";

const kinds = (j: Jaxpr): string[] => compiledFor(j).program.steps.map((s) => s.kind);
const PRIMS: Primitive[] = [igammaP, igammacP, igammaGradAP, betaincP, besselI0eP, besselI1eP, zetaP];

test("the special-function primitives have program lowerings installed", () => {
  for (const p of PRIMS) assert.ok(p.rules.lower && !p.rules.missing?.lower, p.name);
});

// (a, x) pairs: interior on both branches (series x < a + 1, continued fraction), tiny / huge, and every edge
const GA = [0.5, 2.5, 10, 3, 1e-3, 100, 100, 1e3, 0, 0, 2, -1, 2, NaN, Infinity, Infinity, 1.5, 5];
const GX = [0.3, 1.5, 11.5, 8, 0.5, 90, 110, 1030, 0, 2, 0, 1, -1, 1, 2, Infinity, Infinity, 1e-300];
// (a, b, x) for betainc
const BA = [0.5, 2, 5, 0.1, 30, 1e-3, 0, 0, 2, 2, -1, 2, NaN, Infinity, 2, 2];
const BB = [0.5, 3, 1, 2, 20, 2, 3, 0, 0, 3, 1, Infinity, 1, 2, 3, 3];
const BX = [0.3, 0.2, 0.99, 0.01, 0.62, 0.5, 0.5, 0.5, 0.5, 1, 0.5, 0.5, 0.5, 0.5, 0, 1.5];
const IX = [0, -0, 1e-10, 0.5, -2.5, 8, 24.9, 25, 25.1, -30, 1e4, 1e8, Infinity, -Infinity, NaN, 3];
// (x, q) for zeta
const ZX = [2, 3, 1.5, 1.0001, 4.5, 30, 2, 2, 1, 0.5, 2, 2, 2.5, NaN, Infinity, 3];
const ZQ = [1, 1, 1, 1, 0.5, 1.2, 1e-3, -0.5, 1, 1, 0, -2, -0.5, 1, 1, 1e5];

type Prog = (...xs: Array[]) => Array[];
const CASES: [string, Prog, number[][]][] = [
  ["igamma", (a, x) => [ops.igamma(a, x)], [GA, GX]],
  ["igammac", (a, x) => [ops.igammac(a, x)], [GA, GX]],
  ["igamma_grad_a", (a, x) => [ops.igammaGradA(a, x)], [GA, GX]],
  ["regularized_incomplete_beta", (a, b, x) => [ops.betainc(a, b, x)], [BA, BB, BX]],
  ["bessel_i0e", (x) => [ops.besselI0e(x)], [IX]],
  ["bessel_i1e", (x) => [ops.besselI1e(x)], [IX]],
  ["zeta", (x, q) => [ops.zeta(x, q)], [ZX, ZQ]],
];

for (const [name, f, vals] of CASES) {
  test(`${name}: jit is one ONNX step matching the interpreter (float32, float64, edges, rank 0, empty, float16)`, () => {
    for (const d of ["float32", "float64"] as DType[]) {
      const n = vals[0].length;
      const j = checkProgram(
        f,
        vals.map((v) => arr(d, [2, n / 2], v)),
        `${name} ${d}`,
      );
      assert.deepEqual(kinds(j), ["onnx"], `${name} ${d}`);
      // rank-0 operands (the first broadcast against the rest when there are several), and an empty batch
      checkProgram(
        f,
        vals.map((v, i) => (i === 0 && vals.length > 1 ? arr(d, [], [v[1]]) : arr(d, [3], v.slice(0, 3)))),
        `${name} ${d} rank 0`,
      );
      checkProgram(
        f,
        vals.map(() => arr(d, [0, 2], [])),
        `${name} ${d} empty`,
      );
    }
    checkProgram(
      f,
      vals.map((v) => arr("float16", [4], v.slice(0, 4))),
      `${name} float16`,
    );
  });
}

test("float64 agreement with the interpreter on dense grids is at the rounding level", () => {
  const grid = (n: number, lo: number, hi: number): number[] =>
    globalThis.Array.from({ length: n }, (_, i) => lo * (hi / lo) ** (i / (n - 1)));
  const a = grid(40, 1e-2, 300),
    x = grid(40, 1e-3, 400);
  const A = a.flatMap((v) => x.map(() => v)),
    X = a.flatMap(() => x);
  // 1e-12: exp(lp) with |lp| up to ~700 turns a 1-ulp difference of lp (ONNX vs JS log/lgamma) into ~1e-13 relative
  const tol = { rtol: 1e-12, atol: 1e-300 };
  checkProgram(
    (p, q) => [ops.igamma(p, q)],
    [arr("float64", [A.length], A), arr("float64", [X.length], X)],
    "igamma grid",
    tol,
  );
  checkProgram(
    (p, q) => [ops.igammaGradA(p, q)],
    [arr("float64", [A.length], A), arr("float64", [X.length], X)],
    "igamma_grad_a grid",
    tol,
  );
  const t = grid(30, 1e-3, 1 - 1e-3);
  const B = t.flatMap((v) => t.map(() => 1 / v));
  const T = t.flatMap(() => t);
  const Aa = t.flatMap((v) => t.map(() => 20 * v));
  checkProgram(
    (p, q, r) => [ops.betainc(p, q, r)],
    [arr("float64", [Aa.length], Aa), arr("float64", [B.length], B), arr("float64", [T.length], T)],
    "betainc grid",
    tol,
  );
  const ix = grid(400, 1e-6, 1e6);
  checkProgram((v) => [ops.besselI0e(v), ops.besselI1e(v)], [arr("float64", [ix.length], ix)], "bessel grid", tol);
  const zx = grid(40, 1.001, 60),
    zq = grid(40, 1e-3, 1e4);
  const ZXs = zx.flatMap((v) => zq.map(() => v)),
    ZQs = zx.flatMap(() => zq);
  checkProgram(
    (p, q) => [ops.zeta(p, q)],
    [arr("float64", [ZXs.length], ZXs), arr("float64", [ZQs.length], ZQs)],
    "zeta grid",
    tol,
  );
});
