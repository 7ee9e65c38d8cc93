/** @file linalg.eig / eigvals: eigenvalues against NumPy (LAPACK) fixtures, eigenvector residuals, jit, vmap, eigenvalue gradients. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import type { DType } from "../../src/core/dtype.js";
import * as np from "../../src/numpy/index.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { partsOfArray } from "../helpers/complex-fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Case {
  name: string;
  dtype: DType;
  shape: number[];
  a: number[];
  re: number[];
  im: number[];
}
const fx = loadFixture<{ cases: Case[] }>("eig.json");
const matrix = (c: Case): Array => np.reshape(np.array(c.a, c.dtype), c.shape);
/** Eigenvalues of each matrix as sorted [re, im] pairs (an order-free comparison). */
function sortedPairs(re: number[], im: number[], n: number): [number, number][][] {
  const out: [number, number][][] = [];
  for (let b = 0; b < re.length / n; b++) {
    const p = re.slice(b * n, (b + 1) * n).map((r, i): [number, number] => [r, im[b * n + i]]);
    out.push(p.sort((x, y) => (Math.abs(x[0] - y[0]) > 1e-6 * (1 + Math.abs(x[0])) ? x[0] - y[0] : x[1] - y[1])));
  }
  return out;
}
function assertEigvals(w: Array, c: Case, tol: number, msg: string): void {
  const n = c.shape[c.shape.length - 1];
  const [gr, gi] = partsOfArray(w);
  const got = sortedPairs(gr, gi, n),
    want = sortedPairs(c.re, c.im, n);
  const scale = Math.max(1, ...c.a.map(Math.abs));
  got.forEach((g, b) =>
    g.forEach(([r, i], k) => {
      const [er, ei] = want[b][k];
      assert.ok(
        Math.abs(r - er) <= tol * scale && Math.abs(i - ei) <= tol * scale,
        `${msg} matrix ${b} eigenvalue ${k}: got ${r}${i >= 0 ? "+" : ""}${i}j, want ${er}${ei >= 0 ? "+" : ""}${ei}j`,
      );
    }),
  );
}

for (const c of fx.cases) {
  test(`eig ${c.name}: eigenvalues match LAPACK; A v = v diag(w) with unit columns; jit agrees`, () =>
    withX64(() => {
      const a = matrix(c),
        tol = c.dtype === "float32" ? 2e-5 : 1e-9;
      const { eigenvalues: w, eigenvectors: v } = np.linalg.eig(a);
      assert.equal(w.dtype, c.dtype === "float32" ? "complex64" : "complex128");
      assertEigvals(w, c, tol, "eig");
      assertEigvals(np.linalg.eigvals(a), c, tol, "eigvals");
      assertEigvals(jit((m: Array) => np.linalg.eigvals(m))(a), c, tol, "jit eigvals");
      // residual relative to ||A||, and unit-norm eigenvectors
      const ac = np.astype(a, w.dtype);
      const res = np.max(np.abs(np.subtract(np.matmul(ac, v), np.multiply(v, np.expandDims(w, -2)))));
      const scale = Math.max(1, ...c.a.map(Math.abs));
      assert.ok(Number(res.item()) <= 50 * tol * scale, `${c.name}: residual ${Number(res.item())}`);
      const norms = np.sqrt(np.sum(np.square(np.abs(v)), { axis: -2 }));
      for (const x of partsOfArray(norms)[0]) assert.ok(Math.abs(x - 1) < 10 * tol, `${c.name}: eigenvector norm ${x}`);
    }));
}

test("eigvals under vmap equals the per-matrix results", () =>
  withX64(() => {
    const c = fx.cases.find((k) => k.name === "batch")!;
    const a = matrix(c);
    const batched = vmap((m: Array) => np.linalg.eigvals(m))(a);
    for (let b = 0; b < 2; b++)
      assert.deepEqual(partsOfArray(batched.get(b)), partsOfArray(np.linalg.eigvals(a.get(b))));
  }));

test("eigenvalue gradients match finite differences; eigenvector gradients are refused like JAX", () =>
  withX64(() => {
    const a0 = [
      [1, 2, 0.5],
      [-3, 1, 4],
      [0.5, 2, -1],
    ];
    // order-free functions of the eigenvalues (two of them complex here)
    const fs: [string, (m: Array) => Array][] = [
      ["sum |w|^3", (m) => np.sum(np.power(np.abs(np.linalg.eigvals(m)), 3))],
      [
        "sum re(w^2) + im(w)^2",
        (m) => {
          const w = np.linalg.eigvals(m);
          return np.sum(np.add(np.real(np.square(w)), np.square(np.imag(w))));
        },
      ],
    ];
    const a = np.array(a0, "float64");
    const d = np.array(
      [
        [0.3, -0.2, 0.1],
        [0.5, 0.4, -0.6],
        [-0.1, 0.2, 0.7],
      ],
      "float64",
    );
    for (const [name, f] of fs) {
      const g = (grad(f) as (m: Array) => Array)(a);
      const an = Number(np.sum(np.multiply(g, d)).item()),
        h = 1e-6;
      const num =
        (Number(f(np.add(a, np.multiply(d, h))).item()) - Number(f(np.subtract(a, np.multiply(d, h))).item())) /
        (2 * h);
      assert.ok(Math.abs(an - num) < 1e-6 * (1 + Math.abs(num)), `${name}: ${an} vs ${num}`);
    }
    assert.throws(
      () => (grad((m: Array) => np.sum(np.abs(np.linalg.eig(m).eigenvectors))) as (m: Array) => Array)(a),
      /eig: the derivatives of eigenvectors are not implemented, only eigenvalues/,
    );
    assert.throws(() => np.linalg.eig(np.ones([2, 3])), /linalg\.eig: expected a \(batch of\) square matrix/);
  }));

test("lax.linalg.eig returns [w, vr] (or [w]) and names what it does not implement", async () => {
  const lax = await import("../../src/lax/index.js");
  const a = np.array(
    [
      [2, 1],
      [0, 3],
    ],
    "float32",
  );
  const [w, v] = lax.linalg.eig(a, { computeLeftEigenvectors: false });
  assert.deepEqual(partsOfArray(w)[0].sort(), [2, 3]);
  assert.deepEqual(v.shape, [2, 2]);
  assert.equal(lax.linalg.eig(a, { computeLeftEigenvectors: false, computeRightEigenvectors: false }).length, 1);
  assert.throws(() => lax.linalg.eig(a), /left eigenvectors are not implemented/);
  assert.throws(
    () => lax.linalg.eig(a, { computeLeftEigenvectors: false, right: true } as never),
    /lax\.linalg\.eig: unknown option "right"/,
  );
});
