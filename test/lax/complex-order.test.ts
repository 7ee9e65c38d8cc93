/** @file lax.max / lax.min on complex operands (JAX's lexicographic order) and jnp.lexsort with complex keys, against NumPy fixtures; jit, vmap and grads. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as lax from "../../src/lax/index.js";
import * as np from "../../src/numpy/index.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { type CFix, assertCloseC, decodeC, partsOfArray } from "../helpers/complex-fixtures.js";
import { withX64 } from "../helpers/x64.js";

const fx = loadFixture<{ order: Record<"x" | "y" | "max" | "min" | "k1" | "k2" | "lexsort", CFix> }>(
  "complex-decomp.json",
).order;

test("lax.max / lax.min order complex values lexicographically (NumPy's maximum / minimum); jit and vmap agree", () =>
  withX64(() => {
    const x = decodeC(fx.x),
      y = decodeC(fx.y);
    assertCloseC(lax.max(x, y), fx.max, { msg: "max" });
    assertCloseC(lax.min(x, y), fx.min, { msg: "min" });
    assertCloseC(jit((a: Array, b: Array) => lax.max(a, b))(x, y), fx.max, { msg: "jit max" });
    const xs = np.reshape(x, [2, 3]),
      ys = np.reshape(y, [2, 3]);
    assertCloseC(np.reshape(vmap((a: Array, b: Array) => lax.min(a, b))(xs, ys), [6]), fx.min, { msg: "vmap min" });
    // a rank-0 operand broadcasts, as for real lax.max
    const c = np.complex(1, 2.5);
    assertCloseC(
      lax.max(x, np.astype(c, "complex128")),
      np.where(np.greater(np.real(x), 1), x, np.astype(c, "complex128")),
      {
        msg: "rank-0",
      },
    );
    assert.throws(
      () => lax.max(x, np.real(x)),
      /max requires arguments to have the same dtypes, got complex128, float64/,
    );
  }));

test("lax.max on complex: grad follows the chosen operand (JAX's convention, finite differences), ties split 1/2", () =>
  withX64(() => {
    const x = decodeC(fx.x),
      y = decodeC(fx.y);
    const f = (z: Array): Array => np.sum(np.real(np.multiply(lax.max(z, y), np.conj(lax.max(z, y)))));
    const g = grad(f)(x);
    const [xr, xi] = partsOfArray(x),
      [yr, yi] = partsOfArray(y);
    const [gr, gi] = partsOfArray(g);
    for (let k = 0; k < xr.length; k++) {
      const tie = xr[k] === yr[k] && xi[k] === yi[k];
      const xWins = xr[k] > yr[k] || (xr[k] === yr[k] && xi[k] >= yi[k]);
      // f = |z|^2 where x is chosen: df/dx - i df/dy = 2 conj(z) (halved on a tie), 0 where y is
      const w = tie ? 1 : xWins ? 2 : 0;
      assert.ok(Math.abs(gr[k] - w * xr[k]) < 1e-12 && Math.abs(gi[k] + w * xi[k]) < 1e-12, `grad[${k}]`);
    }
    // finite differences along 1 and i at a point without ties
    const h = 1e-6,
      k = 1;
    const bump = (dr: number, di: number): number => {
      const re = xr.map((v, j) => (j === k ? v + dr : v)),
        im = xi.map((v, j) => (j === k ? v + di : v));
      return Number(f(decodeC({ dtype: "complex128", shape: [6], re, im })).item());
    };
    const dx = (bump(h, 0) - bump(-h, 0)) / (2 * h),
      dy = (bump(0, h) - bump(0, -h)) / (2 * h);
    assert.ok(Math.abs(gr[k] - dx) < 1e-6 && Math.abs(gi[k] + dy) < 1e-6, `fd: ${gr[k]}, ${gi[k]} vs ${dx}, ${-dy}`);
  }));

test("lexsort with a complex key sorts it lexicographically (NumPy's lexsort), the last key primary", () =>
  withX64(() => {
    const k1 = decodeC(fx.k1),
      k2 = decodeC(fx.k2);
    assert.deepEqual((np.lexsort([k2, k1]).tolist() as (number | bigint)[]).map(Number), fx.lexsort.data);
  }));
