/** @file Tests the Householder + tridiagonal-QR eigh reference kernel: NumPy eigenvalues (test/fixtures/eigh-tridiagonal.json), residuals and orthogonality on hard inputs up to n = 200. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { repoPath } from "../../helpers/repo-root.js";
import { seededUniform } from "../../helpers/seeded-random.js";
import { eigh } from "../../../src/backends/interpreter/linalg-kernels.js";

interface Case {
  name: string;
  n: number;
  a: number[];
  w: number[];
}
const fixture = JSON.parse(readFileSync(repoPath("test/fixtures/eigh-tridiagonal.json"), "utf8")) as { cases: Case[] };

/** ||A V - V diag(w)||_F / ||A||_F and ||V^T V - I||_F of one n x n problem. */
function residuals(a: ArrayLike<number>, v: Float64Array, w: Float64Array, n: number): [number, number] {
  let res = 0,
    an = 0,
    orth = 0,
    mx = 0;
  for (let i = 0; i < n * n; i++) mx = Math.max(mx, Math.abs(a[i]));
  mx = mx || 1; // entries are divided by max|a| so that 1e+-200 scales neither overflow nor underflow
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      let s = 0,
        g = 0;
      for (let k = 0; k < n; k++) {
        s += (a[i * n + k] / mx) * v[k * n + j];
        g += v[k * n + i] * v[k * n + j];
      }
      res += (s - v[i * n + j] * (w[j] / mx)) ** 2;
      an += (a[i * n + j] / mx) ** 2;
      orth += (g - (i === j ? 1 : 0)) ** 2;
    }
  return [Math.sqrt(res) / Math.max(Math.sqrt(an), Number.MIN_VALUE), Math.sqrt(orth)];
}

test("eigh matches NumPy's eigenvalues (random, graded, clustered, identity + rank-1, rank-deficient, Wilkinson, 1e+-200 scales)", () => {
  for (const c of fixture.cases) {
    const { v, w } = eigh(Float64Array.from(c.a), 1, c.n);
    const scale = Math.max(...c.w.map(Math.abs));
    for (let i = 0; i < c.n; i++)
      assert.ok(Math.abs(w[i] - c.w[i]) <= 1e-13 * scale, `${c.name} w[${i}]: ${w[i]} vs numpy ${c.w[i]}`);
    const [res, orth] = residuals(c.a, v, w, c.n);
    assert.ok(res <= 1e-14 * Math.max(1, Math.sqrt(c.n)), `${c.name}: residual ${res}`);
    assert.ok(orth <= 1e-14 * Math.max(1, c.n), `${c.name}: orthogonality ${orth}`);
  }
});

const uniform = (count: number, seed: number): Float64Array => Float64Array.from(seededUniform(count, seed));

/** The hard families at size n, full symmetric storage. */
function families(n: number): [string, Float64Array][] {
  const r = uniform(n * n, 7 * n + 1),
    x = uniform(n, 3 * n + 2),
    b = uniform(n * Math.max(1, n >> 2), 5 * n + 3),
    k = Math.max(1, n >> 2);
  const rand = new Float64Array(n * n),
    rank1 = new Float64Array(n * n),
    lowRank = new Float64Array(n * n),
    wilk = new Float64Array(n * n),
    graded = new Float64Array(n * n);
  const m = (n - 1) / 2;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      rand[i * n + j] = 0.5 * (r[i * n + j] + r[j * n + i]);
      rank1[i * n + j] = (i === j ? 1 : 0) + x[i] * x[j];
      let s = 0;
      for (let l = 0; l < k; l++) s += b[i * k + l] * b[j * k + l];
      lowRank[i * n + j] = s;
      wilk[i * n + j] = i === j ? Math.abs(m - i) : Math.abs(i - j) === 1 ? 1 : 0;
      graded[i * n + j] = rand[i * n + j] * 10 ** (-(i + j) / 8); // entries shrink down the diagonal
    }
  return [
    ["random", rand],
    ["identity + rank-1", rank1],
    ["rank-deficient", lowRank],
    ["wilkinson", wilk],
    ["graded", graded],
  ];
}

test("eigh residual ||AV - VW|| / ||A|| and ||V^T V - I|| stay at rounding level for n = 1, 2, 3, 10, 50, 200", () => {
  for (const n of [1, 2, 3, 10, 50, 200])
    for (const [name, a] of families(n)) {
      const { v, w } = eigh(a, 1, n);
      const [res, orth] = residuals(a, v, w, n);
      assert.ok(res <= 1e-14 * Math.sqrt(n) + 1e-15, `${name} n=${n}: residual ${res}`);
      assert.ok(orth <= 1e-14 * n + 1e-15, `${name} n=${n}: orthogonality ${orth}`);
      for (let i = 1; i < n; i++) assert.ok(w[i - 1] <= w[i], `${name} n=${n}: ascending`);
    }
});

test("eigh on a batch equals eigh of each matrix alone; unsorted output is a permutation of the sorted one", () => {
  const n = 30;
  const fam = families(n).map(([, a]) => a);
  const all = new Float64Array(fam.length * n * n);
  fam.forEach((a, i) => all.set(a, i * n * n));
  const batched = eigh(all, fam.length, n);
  const unsorted = eigh(all, fam.length, n, { sortEigenvalues: false });
  fam.forEach((a, i) => {
    const one = eigh(a, 1, n);
    assert.deepEqual(batched.w.subarray(i * n, i * n + n), one.w, `matrix ${i} w`);
    assert.deepEqual(batched.v.subarray(i * n * n, (i + 1) * n * n), one.v, `matrix ${i} v`);
    const u = Array.from(unsorted.w.subarray(i * n, i * n + n)).sort((p, q) => p - q);
    assert.deepEqual(u, Array.from(one.w), `matrix ${i} unsorted`);
  });
});
