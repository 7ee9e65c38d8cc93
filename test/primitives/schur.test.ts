/** @file The schur / hessenberg / triu_function / rsf2csf primitives: Schur identities on many seeded matrices (sizes 1..24, structured cases), vmap over a non-leading axis, jit, abstract-eval errors, no derivatives. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { complexOf } from "../../src/primitives/complex.js";
import { hessenberg, rsf2csf, schur, triuFunction } from "../../src/primitives/schur.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { seededUniform } from "../helpers/seeded-random.js";
import { withX64 } from "../helpers/x64.js";

const flat = (x: Array): number[] => (x.tolist() as unknown as number[]).flat(Infinity as 1) as number[];
const mat = (v: number[], n: number, dtype = "float64"): Array =>
  ops.reshape(array(v, { dtype: dtype as "float64" }), [n, n]);
/** max |Z T Z^T - A| for real n x n data. */
function residual(a: number[], t: number[], z: number[], n: number): number {
  let m = 0;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let k = 0; k < n; k++) for (let l = 0; l < n; l++) s += z[i * n + k] * t[k * n + l] * z[j * n + l];
      m = Math.max(m, Math.abs(s - a[i * n + j]));
    }
  return m;
}
/** Real Schur structure: zero below the subdiagonal, isolated standardized 2x2 blocks. */
function assertQuasiTriangular(t: number[], n: number, msg: string): void {
  for (let i = 0; i < n; i++) for (let j = 0; j < i - 1; j++) assert.equal(t[i * n + j], 0, `${msg}: T[${i}][${j}]`);
  for (let i = 0; i + 1 < n; i++) {
    if (t[(i + 1) * n + i] === 0) continue;
    assert.ok(i + 2 >= n || t[(i + 2) * n + i + 1] === 0, `${msg}: adjacent blocks at ${i}`);
    assert.equal(t[i * n + i], t[(i + 1) * n + i + 1], `${msg}: block ${i} diagonal`);
    assert.ok(t[i * n + i + 1] * t[(i + 1) * n + i] < 0, `${msg}: block ${i} off-diagonals`);
  }
}

test("schur primitive: seeded random and structured real matrices (n = 1..24) give A = Z T Z^T with standardized blocks", () =>
  withX64(() => {
    const cases: [string, number[], number][] = [];
    for (let n = 1; n <= 24; n += n < 6 ? 1 : 5) cases.push([`random ${n}`, seededUniform(n * n, 100 + n), n]);
    // companion matrix of (x - 1)^4: a defective quadruple eigenvalue
    cases.push(["companion (x-1)^4", [4, -6, 4, -1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0], 4]);
    // block diagonal rotations (equal complex pairs) and a symmetric matrix (real eigenvalues only)
    cases.push(["two rotations", [0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 0, 2, 0, 0, -2, 0], 4]);
    const s = seededUniform(36, 7);
    cases.push(["symmetric", s.map((v, k) => v + s[(k % 6) * 6 + Math.floor(k / 6)]), 6]);
    cases.push(["graded", seededUniform(25, 9).map((v, k) => v * 10 ** (-Math.floor(k / 5) - (k % 5))), 5]);
    for (const [name, a, n] of cases) {
      const [t, z] = schur(mat(a, n), true);
      const [tv, zv] = [flat(t), flat(z)];
      const scale = Math.max(1, ...a.map(Math.abs));
      assert.ok(residual(a, tv, zv, n) <= 1e-13 * n * scale, `${name}: residual ${residual(a, tv, zv, n)}`);
      const eye = tv.map((_, k) => (k % (n + 1) === 0 ? 1 : 0));
      assert.ok(residual(eye, eye, zv, n) <= 1e-13 * n, `${name}: Z orthogonal (Z Z^T = I)`);
      assertQuasiTriangular(tv, n, name);
      assert.equal(schur(mat(a, n), false).length, 1);
    }
  }));

test("schur / hessenberg / rsf2csf / triu_function primitives: vmap over axis 1 matches slices; jit matches eager", () =>
  withX64(() => {
    const stack = ops.reshape(array(seededUniform(2 * 3 * 3, 11), { dtype: "float64" }), [3, 2, 3]); // [n, batch, n]
    const mv = vmap((x: Array) => schur(x, true), { inAxes: 1 })(stack);
    const hv = vmap((x: Array) => hessenberg(x), { inAxes: 1 })(stack);
    for (let b = 0; b < 2; b++) {
      const one = ops.reshape(ops.slice(stack, [0, b, 0], [3, b + 1, 3]), [3, 3]);
      const [t, z] = schur(one, true);
      const pick = (x: Array): number[] => flat(ops.reshape(ops.slice(x, [b, 0, 0], [b + 1, 3, 3]), [3, 3]));
      assert.deepEqual(pick(mv[0]), flat(t), `vmap T [${b}]`);
      assert.deepEqual(pick(mv[1]), flat(z), `vmap Z [${b}]`);
      const [h, q] = hessenberg(one);
      assert.deepEqual(pick(hv[0]), flat(h), `vmap H [${b}]`);
      assert.deepEqual(pick(hv[1]), flat(q), `vmap Q [${b}]`);
    }
    const m = mat(seededUniform(16, 3), 4);
    const [h, q] = hessenberg(m);
    const [hj, qj] = jit((x: Array) => hessenberg(x))(m);
    assert.deepEqual(flat(hj), flat(h));
    assert.deepEqual(flat(qj), flat(q));
    const [t, z] = schur(m, true);
    // ONNX work on both sides of the interpreter step
    const mixed = jit((x: Array) => ops.add(schur(ops.mul(x, x), true)[0], x))(m);
    assert.deepEqual(flat(mixed), flat(ops.add(schur(ops.mul(m, m), true)[0], m)));
    const [tc] = rsf2csf(t, z);
    const [tcj] = jit((u: Array, v: Array) => rsf2csf(u, v))(t, z);
    assert.deepEqual(flat(ops.real(tcj)), flat(ops.real(tc)));
    // triu_function with an unbatched T and batched diagonal values under vmap (the diagonal is broadcast)
    const tri = complexOf(mat([1, 2, 0, 4], 2), mat([0, 0, 0, 0], 2));
    const diags = complexOf(
      ops.reshape(array([1, 2, 3, 4], { dtype: "float64" }), [2, 2]),
      ops.reshape(array([0, 0, 0, 0], { dtype: "float64" }), [2, 2]),
    );
    const [fv] = vmap((d: Array) => triuFunction(tri, d, "parlett"), { inAxes: 0 })(diags);
    // Parlett: F01 = T01 (F11 - F00) / (T11 - T00) = 2 (f1 - f0) / 3
    assert.deepEqual(flat(ops.real(fv)), [1, (2 * (2 - 1)) / 3, 0, 2, 3, (2 * (4 - 3)) / 3, 0, 4]);
  }));

test("primitive errors: non-square, integer, mismatched shapes; no derivative", () =>
  withX64(() => {
    assert.throws(
      () => schur(ops.reshape(array([1, 2, 3, 4, 5, 6], { dtype: "float64" }), [2, 3]), true),
      /schur: requires square matrices \[\.\.\., n, n\], got f64\[2,3\]/,
    );
    assert.throws(
      () => hessenberg(mat([1, 2, 3, 4], 2, "int32")),
      /hessenberg: requires a float32, float64, complex64 or complex128 matrix, got i32\[2,2\]/,
    );
    assert.throws(
      () => rsf2csf(mat([1, 2, 3, 4], 2), mat([1, 2, 3, 4, 5, 6, 7, 8, 9], 3)),
      /rsf2csf: T and Z must have the same shape and dtype/,
    );
    assert.throws(
      () => grad((x: Array) => ops.reduceSum(hessenberg(x)[0], [0, 1]))(mat([1, 2, 3, 4], 2)),
      /hessenberg: the Schur \/ Hessenberg decomposition has no derivative/,
    );
  }));
