/** @file lax.linalg.svd's JAX signature: (u, s, vh), fullMatrices and computeUv options. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as L from "../../src/lax/linalg.js";
import { array } from "../../src/numpy/core.js";

const A = array(
  [
    [1.5, 2],
    [3, 4.5],
    [5, 6.5],
  ],
  { dtype: "float32" },
);
const rows = (x: Array): number[][] => x.tolist() as number[][];

test("lax.linalg.svd returns [u, s, vh] with u s vh = a", () => {
  const [u, s, vh] = L.svd(A, { fullMatrices: false });
  assert.deepEqual([u.shape, s.shape, vh.shape], [[3, 2], [2], [2, 2]]);
  const U = rows(u),
    S = s.tolist() as number[],
    V = rows(vh);
  const a = rows(A);
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 2; j++) {
      const r = U[i][0] * S[0] * V[0][j] + U[i][1] * S[1] * V[1][j];
      assert.ok(Math.abs(r - a[i][j]) < 1e-4, `(${i}, ${j}): ${r} vs ${a[i][j]}`);
    }
  assert.ok(S[0] >= S[1] && S[1] > 0);
});

test("lax.linalg.svd defaults to full matrices; computeUv false gives s alone", () => {
  const [u, s, vh] = L.svd(A);
  assert.deepEqual([u.shape, s.shape, vh.shape], [[3, 3], [2], [2, 2]]);
  const s2 = L.svd(A, { computeUv: false });
  assert.deepEqual(s2.shape, [2]);
  // the singular values of [[1.5, 2], [3, 4.5], [5, 6.5]] (numpy.linalg.svd)
  const expected = [10.13194159, 0.30620177];
  (s2.tolist() as number[]).forEach((v, i) => assert.ok(Math.abs(v - expected[i]) < 1e-3, `s[${i}] = ${v}`));
  assert.throws(
    () => L.svd(A, { fullMatrix: true } as never),
    /lax.linalg.svd: unknown option "fullMatrix"; accepted options: fullMatrices, computeUv/,
  );
  assert.throws(
    () =>
      L.svd(
        array([
          [1, 2],
          [3, 4],
        ]),
      ),
    /lax.linalg.svd: the operand must be a float or complex matrix/,
  );
});
