/** @file jax.scipy.optimize.minimize (BFGS) against SciPy's minima (test/fixtures/scipy-linalg.json): eager, jit, vmap, args, float32, result fields, errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { minimize, OptimizeResults } from "../../src/scipy/optimize.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface OCase {
  name: string;
  x0: number[];
  x: number[];
  fun: number;
  Q?: number[][];
  q?: number[];
}
const fx = loadFixture<{ optimize: OCase[] }>("scipy-linalg.json");

const s = (x: Array, v: number): Array => ops.full([], v, x.dtype);
/** Rosenbrock: sum(100 (x[1:] - x[:-1]^2)^2 + (1 - x[:-1])^2). */
function rosen(x: Array): Array {
  const n = x.shape[0];
  const hi = ops.sliceInDim(x, 1, n, 1, 0),
    lo = ops.sliceInDim(x, 0, n - 1, 1, 0);
  const t = ops.sub(hi, ops.mul(lo, lo)),
    u = ops.sub(s(x, 1), lo);
  return ops.reduceSum(ops.add(ops.mul(s(x, 100), ops.mul(t, t)), ops.mul(u, u)), [0]);
}
/** 0.5 x^T Q x - q^T x + sum(x^4) / 4, with Q and q passed through minimize's args. */
function quartic(x: Array, Q: Array, q: Array): Array {
  const Qx = ops.dotGeneral(Q, x, [
    [[1], [0]],
    [[], []],
  ]);
  const x2 = ops.mul(x, x);
  return ops.add(
    ops.sub(ops.mul(s(x, 0.5), ops.reduceSum(ops.mul(x, Qx), [0])), ops.reduceSum(ops.mul(q, x), [0])),
    ops.mul(s(x, 0.25), ops.reduceSum(ops.mul(x2, x2), [0])),
  );
}
const close = (a: number[], b: number[], tol: number, msg: string): void =>
  a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) <= tol, `${msg}[${i}]: ${v} vs ${b[i]}`));
function solveCase(c: OCase, x0: Array): OptimizeResults {
  if (c.name === "quartic") {
    const Q = array(c.Q!, { dtype: x0.dtype }),
      q = array(c.q!, { dtype: x0.dtype });
    return minimize(quartic as never, x0, [Q, q], { method: "BFGS" });
  }
  return minimize(rosen, x0, [], { method: "BFGS" });
}

test("minimize(BFGS) reaches SciPy's minima in float64, eager and under jit", () => {
  withX64(() => {
    for (const c of fx.optimize) {
      const x0 = array(c.x0, { dtype: "float64" });
      const r = solveCase(c, x0);
      assert.ok(r.success.item(), `${c.name}: success (status ${String(r.status.item())})`);
      assert.equal(r.status.item(), 0, `${c.name}: status`);
      close(r.x.tolist() as number[], c.x, 1e-5, `${c.name} x`);
      assert.ok(Math.abs(Number(r.fun.item()) - c.fun) < 1e-9, `${c.name}: fun ${String(r.fun.item())} vs ${c.fun}`);
      // jac is the gradient at x, hessInv an SPD approximation of the inverse Hessian
      const g = (grad(c.name === "quartic" ? (x: Array) => solveCaseFun(c, x) : rosen) as (x: Array) => Array)(r.x);
      close(r.jac.tolist() as number[], g.tolist() as number[], 1e-12, `${c.name} jac`);
      assert.ok(
        (g.tolist() as number[]).every((v) => Math.abs(v) < 1e-5),
        `${c.name}: gradient below gtol`,
      );
      assert.deepEqual(r.hessInv.shape, [c.x0.length, c.x0.length]);
      assert.ok(Number(r.nit.item()) > 1 && Number(r.nfev.item()) >= Number(r.nit.item()), `${c.name}: counts`);
      assert.equal(r.njev.item(), r.nfev.item());
      const j = jit((x: Array) => solveCase(c, x))(x0);
      close(j.x.tolist() as number[], r.x.tolist() as number[], 1e-10, `${c.name} jit x`);
      assert.equal(j.nit.item(), r.nit.item(), `${c.name}: jit iterations`);
    }
  });
});
function solveCaseFun(c: OCase, x: Array): Array {
  return quartic(x, array(c.Q!, { dtype: x.dtype }), array(c.q!, { dtype: x.dtype }));
}

test("minimize(BFGS) under vmap over starting points, and in float32", () => {
  withX64(() => {
    const x0s = array(
      [
        [-1.2, 1],
        [0.5, -0.3],
        [2, 2],
      ],
      { dtype: "float64" },
    );
    const r = vmap((x: Array) => minimize(rosen, x, [], { method: "bfgs" }))(x0s);
    assert.deepEqual(r.x.shape, [3, 2]);
    (r.x.tolist() as number[][]).forEach((row, i) => close(row, [1, 1], 1e-5, `vmap start ${i}`));
    // each lane ran its own iteration count
    const each = [0, 1, 2].map((i) =>
      minimize(rosen, ops.squeeze(ops.sliceInDim(x0s, i, i + 1, 1, 0), [0]), [], { method: "BFGS" }),
    );
    assert.deepEqual(
      r.nit.tolist(),
      each.map((e) => e.nit.item()),
    );
  });
  withX64(false, () => {
    const c = fx.optimize.find((k) => k.name === "quartic")!;
    const r = solveCase(c, array(c.x0, { dtype: "float32" }));
    assert.equal(r.x.dtype, "float32");
    close(r.x.tolist() as number[], c.x, 1e-3, "float32 quartic");
  });
});

test("minimize takes traced args: jit over the problem data, vmap over a batch of targets", () => {
  withX64(() => {
    const c = fx.optimize.find((k) => k.name === "quartic")!;
    const Q = array(c.Q!, { dtype: "float64" }),
      q = array(c.q!, { dtype: "float64" });
    const x0 = array(c.x0, { dtype: "float64" });
    const j = jit((QQ: Array, qq: Array) => minimize(quartic as never, x0, [QQ, qq], { method: "BFGS" }).x)(Q, q);
    close(j.tolist() as number[], c.x, 1e-5, "jit with traced args");
    const qs = ops.concatenate([ops.reshape(q, [1, 3]), ops.reshape(ops.neg(q), [1, 3])], 0);
    const xs = vmap((qq: Array) => minimize(quartic as never, x0, [Q, qq], { method: "BFGS" }).x)(qs);
    close((xs.tolist() as number[][])[0], c.x, 1e-5, "vmap over q, lane 0");
    // the objective is even in (x, q) -> (-x, -q), so the second lane's minimum is the negated first
    close(
      (xs.tolist() as number[][])[1],
      c.x.map((v) => -v),
      1e-5,
      "vmap over q, lane 1",
    );
  });
});

test("minimize reports maxiter (status 1) and a converged start (nit 0), as JAX", () => {
  withX64(() => {
    const r = minimize(rosen, [-1.2, 1], [], { method: "BFGS", options: { maxiter: 3 } });
    assert.equal(r.status.item(), 1);
    assert.equal(r.success.item(), false);
    assert.equal(r.nit.item(), 3);
    const z = minimize(rosen, [1, 1], [], { method: "BFGS" });
    assert.equal(z.nit.item(), 0);
    assert.equal(z.status.item(), 0);
    assert.deepEqual(z.x.tolist(), [1, 1]);
  });
});

test("minimize raises errors naming the problem", () => {
  assert.throws(
    () => minimize(rosen, [[1, 2]], [], { method: "BFGS" }),
    /scipy\.optimize\.minimize: x0 must be a 1-D array, got shape \(1, 2\)/,
  );
  assert.throws(() => minimize(rosen, [1, 2], [], { method: "Nelder-Mead" }), /method "Nelder-Mead" not recognized/);
  assert.throws(() => minimize(rosen, [1, 2]), /a method is required/);
  assert.throws(
    () => minimize(rosen, [1, 2], [], { method: "BFGS", options: { gtol: 1e-3, c3: 1 } as never }),
    /unexpected BFGS option "c3"/,
  );
  assert.throws(() => minimize(rosen, [1, 2], 3 as never, { method: "BFGS" }), /args must be an array/);
});
