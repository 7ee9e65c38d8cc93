/** @file jax.scipy.linalg against SciPy fixtures (test/fixtures/scipy-linalg.json, scripts/fixtures/gen-scipy-linalg.py): eager and jit in float64, float32, vmap, gradients vs finite differences, errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as SL from "../../src/scipy/linalg.js";
import { jit, vmap } from "../../src/transforms/api.js";
import { checkGrad } from "../helpers/finite-diff.js";
import { assertClose, decode, type FixArray, loadFixture } from "../helpers/fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Case {
  fn: string;
  in: FixArray[];
  opts: Record<string, unknown>;
  out: FixArray[];
}
const fx = loadFixture<{ linalg: Case[] }>("scipy-linalg.json");

const absA = (x: Array): Array => ops.abs(x);
/** Runs one fixture case; outputs that are unique only up to signs come back in the fixture's form (|R|, s, w). */
function run(c: Case, xs: Array[]): Array[] {
  const o = c.opts as never;
  switch (c.fn) {
    case "cholesky":
      return [SL.cholesky(xs[0], o)];
    case "choSolve":
      return [SL.choSolve(SL.choFactor(xs[0], c.opts.lower as boolean), xs[1])];
    case "lu":
      return SL.lu(xs[0], o);
    case "luFactor":
      return SL.luFactor(xs[0]);
    case "luSolve":
      return [SL.luSolve(SL.luFactor(xs[0]), xs[1], o)];
    case "solveTriangular":
      return [SL.solveTriangular(xs[0], xs[1], o)];
    case "solve":
      return [SL.solve(xs[0], xs[1], o)];
    case "inv":
      return [SL.inv(xs[0])];
    case "det":
      return [SL.det(xs[0])];
    case "qr": {
      const r = SL.qr(xs[0], o);
      return [absA(r[r.length - 1])];
    }
    case "svd":
      return [SL.svd(xs[0], { computeUv: false }) as Array];
    case "eigh":
      return [SL.eigh(xs[0], { ...c.opts, eigvalsOnly: true }) as Array];
    case "eighTridiagonal":
      return [SL.eighTridiagonal(xs[0], xs[1], o)];
    case "expm":
      return [SL.expm(xs[0])];
    case "expmFrechet":
      return SL.expmFrechet(xs[0], xs[1]) as [Array, Array];
    case "toeplitz":
      return [xs.length > 1 ? SL.toeplitz(xs[0], xs[1]) : SL.toeplitz(xs[0])];
    case "hilbert":
      return [SL.hilbert(c.opts.n as number)];
    case "polar":
      return SL.polar(xs[0], o);
    case "blockDiag":
      return [SL.blockDiag(...xs)];
    default:
      throw new Error(`no runner for ${c.fn}`);
  }
}
const label = (c: Case, i: number): string => `${c.fn}#${i} ${JSON.stringify(c.opts)}`;
const tol = { rtol: 1e-9, atol: 1e-10 };

test("scipy.linalg matches SciPy in float64 (eager)", () => {
  withX64(() => {
    fx.linalg.forEach((c, i) => {
      const outs = run(c, c.in.map(decode));
      assert.equal(outs.length, c.out.length, `${label(c, i)}: number of outputs`);
      outs.forEach((y, k) =>
        assertClose(y, c.out[k], { ...tol, checkDtype: c.fn !== "luFactor", msg: `${label(c, i)} out ${k}` }),
      );
    });
  });
});

test("scipy.linalg under jit matches SciPy (float64)", () => {
  withX64(() => {
    fx.linalg.forEach((c, i) => {
      if (c.fn === "hilbert") return;
      const outs = jit((...xs: Array[]) => run(c, xs))(...c.in.map(decode));
      outs.forEach((y, k) =>
        assertClose(y, c.out[k], { ...tol, checkDtype: c.fn !== "luFactor", msg: `jit ${label(c, i)} out ${k}` }),
      );
    });
  });
});

test("scipy.linalg in float32 stays within float32 accuracy of SciPy", () => {
  withX64(false, () => {
    for (const c of fx.linalg) {
      if (c.fn === "luFactor" || c.fn === "hilbert" || c.fn === "blockDiag") continue;
      const xs = c.in.map((f) => ops.convert(decode(f), "float32"));
      run(c, xs).forEach((y, k) => {
        assert.equal(y.dtype, "float32", `${c.fn}: float32 in, float32 out`);
        const e = c.out[k];
        const scale = Math.max(1, ...e.data.map((v) => Math.abs(Number(v))));
        assertClose(y, { ...e, dtype: "float32" }, { rtol: 2e-4, atol: 2e-4 * scale, msg: `f32 ${c.fn}` });
      });
    }
  });
});

test("factorizations reconstruct their input: qr, svd, eigh, lu, polar", () => {
  withX64(() => {
    const a = array(
      [
        [2, -1, 0.5, 3],
        [1, 4, -2, 0],
        [0.3, 0.2, 5, 1],
      ],
      { dtype: "float64" },
    );
    const [q, r] = SL.qr(a) as [Array, Array];
    assert.deepEqual(
      [q.shape, r.shape],
      [
        [3, 3],
        [3, 4],
      ],
    );
    assertClose(q.matmul(r), a, { rtol: 1e-12, atol: 1e-12, msg: "q r" });
    const [qe, re] = SL.qr(ops.transpose(a, [1, 0]), { mode: "economic" }) as [Array, Array];
    assert.deepEqual(
      [qe.shape, re.shape],
      [
        [4, 3],
        [3, 3],
      ],
    );
    const [u, s, vh] = SL.svd(a, { fullMatrices: false }) as [Array, Array, Array];
    assertClose(u.matmul(ops.mul(ops.broadcastInDim(s, vh.shape, [0]), vh)), a, {
      rtol: 1e-12,
      atol: 1e-12,
      msg: "svd",
    });
    const sym = a.matmul(ops.transpose(a, [1, 0]));
    const [w, v] = SL.eigh(sym) as [Array, Array];
    assertClose(sym.matmul(v), ops.mul(v, ops.broadcastInDim(w, [3, 3], [1])), {
      rtol: 1e-10,
      atol: 1e-10,
      msg: "eigh",
    });
    const [p, l, uu] = SL.lu(a) as [Array, Array, Array];
    assertClose(p.matmul(l).matmul(uu), a, { rtol: 1e-12, atol: 1e-12, msg: "lu" });
    const [pu, pp] = SL.polar(ops.sliceInDim(a, 0, 3, 1, 1));
    assertClose(pu.matmul(pp), ops.sliceInDim(a, 0, 3, 1, 1), { rtol: 1e-12, atol: 1e-12, msg: "polar" });
  });
});

test("scipy.linalg batches: vmap and leading batch dimensions agree with the per-matrix results", () => {
  withX64(() => {
    const as = array(
      [
        [
          [4, 1, 0],
          [1, 3, 1],
          [0, 1, 2],
        ],
        [
          [5, 2, 1],
          [2, 6, 0],
          [1, 0, 4],
        ],
      ],
      { dtype: "float64" },
    );
    const bs = array(
      [
        [1, 2, 3],
        [-1, 0, 2],
      ],
      { dtype: "float64" },
    );
    const one = (i: number) => [
      ops.squeeze(ops.sliceInDim(as, i, i + 1, 1, 0), [0]),
      ops.squeeze(ops.sliceInDim(bs, i, i + 1, 1, 0), [0]),
    ];
    const fns: [string, (a: Array, b: Array) => Array][] = [
      ["solve pos", (a, b) => SL.solve(a, b, { assumeA: "pos" })],
      ["choSolve", (a, b) => SL.choSolve(SL.choFactor(a), b)],
      ["luSolve", (a, b) => SL.luSolve(SL.luFactor(a), b, { trans: 1 })],
      ["solveTriangular", (a, b) => SL.solveTriangular(a, b, { lower: true })],
      ["expm", (a, b) => SL.expm(ops.mul(a, ops.full([], 0.3, "float64"))).matmul(b)],
    ];
    for (const [name, f] of fns) {
      const batched = vmap(f)(as, bs);
      const each = [0, 1].map((i) => f(...(one(i) as [Array, Array])));
      [0, 1].forEach((i) =>
        assertClose(ops.squeeze(ops.sliceInDim(batched, i, i + 1, 1, 0), [0]), each[i], {
          rtol: 1e-12,
          atol: 1e-12,
          msg: `vmap ${name} [${i}]`,
        }),
      );
    }
    // leading batch dims without vmap; b [B, n] with a [B, n, n] is a batch of vectors (JAX's b.ndim == a.ndim - 1)
    const sb = SL.solveTriangular(as, bs, { lower: true });
    assert.deepEqual(sb.shape, [2, 3]);
    assertClose(
      ops.squeeze(ops.sliceInDim(sb, 1, 2, 1, 0), [0]),
      SL.solveTriangular(one(1)[0], one(1)[1], { lower: true }),
      {
        msg: "batched vector solveTriangular",
      },
    );
    assertClose(
      ops.squeeze(ops.sliceInDim(SL.solve(as, bs, { assumeA: "pos" }), 0, 1, 1, 0), [0]),
      SL.solve(one(0)[0], one(0)[1]),
      {
        rtol: 1e-12,
        atol: 1e-12,
        msg: "batched vector solve pos",
      },
    );
    assert.deepEqual(SL.luSolve(SL.luFactor(as), bs).shape, [2, 3]);
    assert.deepEqual(SL.choSolve(SL.choFactor(as), bs).shape, [2, 3]);
    const [pb, lb, ub] = SL.lu(as) as [Array, Array, Array];
    assert.deepEqual(
      [pb.shape, lb.shape, ub.shape],
      [
        [2, 3, 3],
        [2, 3, 3],
        [2, 3, 3],
      ],
    );
    assertClose(pb.matmul(lb).matmul(ub), as, { rtol: 1e-12, atol: 1e-12, msg: "batched lu" });
    const e = SL.expm(as);
    assertClose(ops.squeeze(ops.sliceInDim(e, 1, 2, 1, 0), [0]), SL.expm(one(1)[0]), { msg: "batched expm" });
    const t = SL.toeplitz(
      array(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        { dtype: "float64" },
      ),
    );
    assert.deepEqual(t.shape, [2, 3, 3]);
    assert.deepEqual(ops.squeeze(ops.sliceInDim(t, 1, 2, 1, 0), [0]).tolist(), [
      [4, 5, 6],
      [5, 4, 5],
      [6, 5, 4],
    ]);
  });
});

test("gradients of expm, solve, choSolve, luSolve, solveTriangular, det agree with finite differences", () => {
  withX64(() => {
    const A = [
      [0.3, -0.2, 0.5],
      [0.1, 0.4, -0.3],
      [0.2, 0.6, -0.1],
    ];
    const W = array(
      [
        [0.7, -1.1, 0.4],
        [0.2, 0.9, -0.5],
        [1.3, -0.6, 0.8],
      ],
      { dtype: "float64" },
    );
    const sum = (x: Array): Array => ops.reduceSum(x, [...x.shape.keys()]);
    const wsum = (x: Array): Array => sum(ops.mul(x, W));
    const pd = (a: Array): Array =>
      ops.add(
        a.matmul(ops.transpose(a, [1, 0])),
        ops.mul(
          ops.convert(ops.eq(ops.iota("int32", [3, 3], 0), ops.iota("int32", [3, 3], 1)), "float64"),
          ops.full([], 2, "float64"),
        ),
      );
    checkGrad("expm", (a) => wsum(SL.expm(a)), A);
    checkGrad("expm (squaring)", (a) => wsum(SL.expm(ops.mul(a, ops.full([], 20, "float64")))), A, { rtol: 1e-4 });
    checkGrad("solve gen", (a) => wsum(SL.solve(ops.add(a, pd(W)), W)), A);
    checkGrad("solve pos", (a) => wsum(SL.solve(pd(a), W, { assumeA: "pos" })), A, { rtol: 1e-4 });
    checkGrad("choSolve", (a) => wsum(SL.choSolve(SL.choFactor(pd(a), true), W)), A, { rtol: 1e-4 });
    checkGrad("luSolve", (a) => wsum(SL.luSolve(SL.luFactor(ops.add(a, pd(W))), W, { trans: 1 })), A, { rtol: 1e-4 });
    checkGrad("solveTriangular", (a) => wsum(SL.solveTriangular(ops.add(a, pd(W)), W, { lower: true })), A);
    checkGrad("det", (a) => SL.det(ops.add(a, W)), A);
    checkGrad("polar", (a) => wsum(SL.polar(ops.add(a, pd(W)), { method: "svd" })[1]), A, { rtol: 1e-4 });
  });
});

test("scipy.linalg raises JAX's errors for bad shapes and options", () => {
  withX64(() => {
    const sq = array(
      [
        [2, 1],
        [1, 2],
      ],
      { dtype: "float64" },
    );
    assert.throws(
      () => SL.solve(sq, array([1, 2, 3], { dtype: "float64" })),
      /scipy\.linalg\.solve: incompatible shapes: a has shape \(2, 2\) and b has shape \(3,\)/,
    );
    assert.throws(
      () => SL.solve(sq, [1, 2], { assumeA: "tri" as never }),
      /scipy\.linalg\.solve: expected assumeA to be one of/,
    );
    assert.throws(
      () => SL.inv(array([[1, 2, 3]], { dtype: "float64" })),
      /scipy\.linalg\.inv: expected a \(batch of\) square matrix.*\(1, 3\)/,
    );
    assert.throws(
      () => SL.expm([1, 2]),
      /scipy\.linalg\.expm: expected a \(batch of\) square matrix, got shape \(2,\)/,
    );
    assert.throws(
      () => SL.solveTriangular(sq, [1, 2], { trans: 3 as never }),
      /scipy\.linalg\.solveTriangular: invalid trans argument 3/,
    );
    assert.throws(
      () => SL.luSolve(SL.luFactor(sq), [1, 2], { trans: 5 as never }),
      /scipy\.linalg\.luSolve: trans must be 0, 1 or 2/,
    );
    assert.throws(() => SL.qr(sq, { mode: "raw" as never }), /scipy\.linalg\.qr: unsupported mode "raw"/);
    assert.throws(() => SL.eigh(sq, sq), /scipy\.linalg\.eigh: only b=null is supported/);
    assert.throws(
      () => SL.eighTridiagonal([1, 2], [1]),
      /scipy\.linalg\.eighTridiagonal: calculation of eigenvectors is not implemented/,
    );
    assert.throws(() => SL.eighTridiagonal([1, 2], [1, 2], true), /expected d of shape \[n\] and e of shape \[n-1\]/);
    assert.throws(
      () => SL.blockDiag(ops.full([2, 2, 2], 1, "float64")),
      /scipy\.linalg\.blockDiag: arguments must have at most 2 dimensions, argument 0 has shape \(2, 2, 2\)/,
    );
    assert.throws(() => SL.polar(sq, { side: "up" as never }), /scipy\.linalg\.polar: side must be "right" or "left"/);
    assert.throws(() => SL.hilbert(-1), /scipy\.linalg\.hilbert: n must be a static non-negative integer/);
    assert.throws(
      () => SL.cholesky(sq, { upper: true } as never),
      /scipy\.linalg\.cholesky: unexpected option "upper"/,
    );
    assert.throws(
      () => SL.expmFrechet(sq, array([[1, 2, 3]], { dtype: "float64" })),
      /scipy\.linalg\.expmFrechet: expected A and E to be square matrices of the same shape, got \(2, 2\) and \(1, 3\)/,
    );
    assert.deepEqual(SL.blockDiag().shape, [1, 0]);
  });
});

test("eighTridiagonal bisects as JAX: its documented float32 values, an index range, complex input, jit, errors", () => {
  const d = array([1, 2, 3, 4], { dtype: "float32" }),
    e = array([1, 1, 1], { dtype: "float32" });
  // JAX's docstring: Array([0.2547188, 1.8227171, 3.1772828, 4.745281], dtype=float32), as float32 bits
  const want = [0.2547188, 1.8227171, 3.1772828, 4.745281].map(Math.fround);
  assert.deepEqual(SL.eighTridiagonal(d, e, true).tolist(), want);
  assert.deepEqual(
    SL.eighTridiagonal(d, e, { eigvalsOnly: true, select: "i", selectRange: [1, 2] }).tolist(),
    want.slice(1, 3),
  );
  assert.deepEqual(jit((a: Array, b: Array) => SL.eighTridiagonal(a, b, true))(d, e).tolist(), want);
  // a Hermitian tridiagonal matrix with complex off-diagonal has the eigenvalues of the one with |e|
  const ec = ops.complexOf(array([0.6, 0, -0.8], { dtype: "float32" }), array([0.8, 1, 0.6], { dtype: "float32" }));
  const dc = ops.complexOf(d, array([0, 0, 0, 0], { dtype: "float32" }));
  const wc = SL.eighTridiagonal(dc, ec, true);
  assert.equal(wc.dtype, "float32");
  (wc.tolist() as number[]).forEach((v, i) => assert.ok(Math.abs(v - want[i]) < 2e-6, `${i}: ${v} vs ${want[i]}`));
  // a tolerance looser than eps * ||T|| stops the bisection early: within tol of the answer, not at it
  const loose = SL.eighTridiagonal(d, e, { eigvalsOnly: true, tol: 1e-2 }).tolist() as number[];
  loose.forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= 1e-2, `${i}: ${v}`));
  assert.ok(loose.some((v, i) => v !== want[i]));
  assert.deepEqual(
    SL.eighTridiagonal(array([2.5], { dtype: "float32" }), array([], { dtype: "float32" }), true).tolist(),
    [2.5],
  );
  const fn = /scipy\.linalg\.eighTridiagonal/;
  assert.throws(() => SL.eighTridiagonal(d, e, { eigvalsOnly: true, select: "v" }), /select="v" is not implemented/);
  assert.throws(() => SL.eighTridiagonal(d, e, { eigvalsOnly: true, select: "i" }), /selectRange must be specified/);
  assert.throws(
    () => SL.eighTridiagonal(d, e, { eigvalsOnly: true, select: "i", selectRange: [2, 1] }),
    /empty index range/,
  );
  assert.throws(
    () => SL.eighTridiagonal(d, e, { eigvalsOnly: true, select: "i", selectRange: [0, 4] }),
    /outside the eigenvalue indices 0..3/,
  );
  assert.throws(() => SL.eighTridiagonal(d, e, { eigvalsOnly: true, select: "x" as never }), fn);
});
