/** @file jnp.linalg against NumPy fixtures (decompositions by invariants), plus errors, result types and gradients. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import type { Array } from "../../src/core/array.js";
import { ShapedArray } from "../../src/core/aval.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { array } from "../../src/numpy/core.js";
import * as LA from "../../src/numpy/linalg.js";
import * as ops from "../../src/primitives/ops.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { runGapCases } from "./gaps-cases.js";
import { fixtureCases, js, runCase } from "./struct-fixtures.js";

const fns: Record<string, unknown> = {};
for (const [k, v] of Object.entries(LA)) fns[`linalg.${k}`] = v;
for (const c of fixtureCases("numpy-struct-linalg.json")) test(`linalg fixture: ${c.name}`, () => runCase(fns, c));

const a23 = ops.full([2, 3], 1, "float32"),
  a33 = array(
    [
      [4, 1, 0],
      [1, 3, 1],
      [0, 1, 2],
    ],
    { dtype: "float32" },
  );
const BAD: [string, () => unknown, RegExp][] = [
  [
    "inv non-square",
    () => LA.inv(a23),
    /linalg\.inv: expected a \(batch of\) square matrix \(last two dimensions equal\), got shape \(2, 3\)/,
  ],
  [
    "det 1-d",
    () => LA.det(array([1, 2])),
    /linalg\.det: expected a \(batch of\) square matrix with at least 2 dimensions, got shape \(2,\)/,
  ],
  [
    "solve mismatch",
    () => LA.solve(a33, array([1, 2])),
    /linalg\.solve: a has shape \(3, 3\) but b has shape \(2,\); expected b\.shape\[0\] to equal 3/,
  ],
  [
    "solve matrix mismatch",
    () => LA.solve(a33, ops.full([2, 2], 1, "float32")),
    /linalg\.solve: a has shape \(3, 3\) but b has shape \(2, 2\); expected b\.shape\[-2\] to equal 3/,
  ],
  ["cholesky non-square", () => LA.cholesky(a23), /linalg\.cholesky: expected a \(batch of\) square matrix/],
  ["qr bad mode", () => LA.qr(a23, "raw" as never), /linalg\.qr: unsupported mode "raw"/],
  ["eigh bad UPLO", () => LA.eigh(a33, "X" as never), /linalg\.eigh: UPLO must be "L" or "U", got "X"/],
  ["norm bad vector ord", () => LA.norm(array([1, 2]), "fro"), /linalg\.norm: invalid order "fro" for a vector norm/],
  ["norm bad matrix ord", () => LA.norm(a33, 3), /linalg\.norm: invalid order 3 for a matrix norm/],
  [
    "norm 3 axes",
    () => LA.norm(ops.full([2, 2, 2], 1, "float32"), null, [0, 1, 2]),
    /linalg\.norm: improper number of axes: expected 1 \(vector norm\) or 2 \(matrix norm\)/,
  ],
  [
    "norm ord with 3-d",
    () => LA.norm(ops.full([2, 2, 2], 1, "float32"), 2),
    /linalg\.norm: improper number of dimensions to norm: ord=2 with axis=null needs a 1-D or 2-D array, got shape \(2, 2, 2\)/,
  ],
  [
    "matrixPower non-integer",
    () => LA.matrixPower(a33, 1.5),
    /linalg\.matrixPower: exponent must be an integer, got 1\.5/,
  ],
  [
    "cross size",
    () => LA.cross(array([1, 2]), array([1, 2])),
    /linalg\.cross: both inputs must have size 3 along axis -1, got shapes \(2,\) and \(2,\)/,
  ],
  [
    "triangularSolve mismatch",
    () => LA.triangularSolve(a33, a23, { leftSide: true }),
    /triangularSolve: a has shape \(3, 3\) but b has shape \(2, 3\); expected b\.shape\[-2\] to equal 3 \(leftSide=true\)/,
  ],
  [
    "multiDot 3-d",
    () => LA.multiDot([a33, ops.full([3, 3, 3], 1, "float32")]),
    /linalg\.multiDot: array 1 has shape \(3, 3, 3\)/,
  ],
];
for (const [name, f, re] of BAD) test(`linalg bad input: ${name}`, () => assert.throws(f, re));

test("slogdet / eigh / qr / svd results are objects and iterables", () => {
  const r = LA.slogdet(
    array(
      [
        [0, 2],
        [3, 0],
      ],
      { dtype: "float32" },
    ),
  );
  assert.deepEqual(
    [r.sign.item(), r.logabsdet.item()].map((v) => Math.round(Number(v) * 1e5) / 1e5),
    [-1, Math.round(Math.log(6) * 1e5) / 1e5],
  );
  const [sign, logabsdet] = r;
  assert.equal(sign, r.sign);
  assert.equal(logabsdet, r.logabsdet);
  const { eigenvalues, eigenvectors } = LA.eigh(a33);
  assert.deepEqual(eigenvalues.shape, [3]);
  assert.deepEqual(eigenvectors.shape, [3, 3]);
  const { Q, R } = LA.qr(a23) as LA.QRResult;
  assert.deepEqual(
    [Q.shape, R.shape],
    [
      [2, 2],
      [2, 3],
    ],
  );
  const [U, S, Vh] = LA.svd(a23, false) as LA.SVDResult;
  assert.deepEqual([U.shape, S.shape, Vh.shape], [[2, 2], [2], [2, 3]]);
  // results pass through jit as pytrees
  const j = jit((a: Array) => LA.slogdet(a));
  assert.ok(Math.abs(Number(j(a33).logabsdet.item()) - Math.log(18)) < 1e-5);
});

test("linalg functions differentiate like JAX (analytic gradients)", () => {
  const A = a33;
  // d log|det A| / dA = A^{-T}
  const g = grad((a: Array) => LA.slogdet(a).logabsdet) as (a: Array) => Array;
  const invT = ops.transpose(LA.inv(A), [1, 0]);
  js(g(A)).forEach((v, i) => assert.ok(Math.abs(v - js(invT)[i]) < 1e-5, `slogdet grad ${i}`));
  // d det / dA = det(A) A^{-T}
  const gd = grad((a: Array) => LA.det(a)) as (a: Array) => Array;
  js(gd(A)).forEach((v, i) => assert.ok(Math.abs(v - 18 * js(invT)[i]) < 1e-3, `det grad ${i}`));
  // d sum(solve(A, b)) / db = A^{-T} 1
  const b = array([1, 2, 3], { dtype: "float32" });
  const gb = grad((v: Array) => ops.reduceSum(LA.solve(A, v), [0])) as (v: Array) => Array;
  const expect = js(ops.reduceSum(LA.inv(A), [0]));
  js(gb(b)).forEach((v, i) => assert.ok(Math.abs(v - expect[i]) < 1e-5, `solve grad ${i}`));
  // d sum(eigvalsh(A)) / dA = I (trace); d ||A||_F / dA = A / ||A||_F
  const ge = grad((a: Array) => ops.reduceSum(LA.eigvalsh(a), [0])) as (a: Array) => Array;
  js(ge(A)).forEach((v, i) => assert.ok(Math.abs(v - (i % 4 === 0 ? 1 : 0)) < 1e-4, `eigvalsh grad ${i}`));
  const gn = grad((a: Array) => LA.norm(a)) as (a: Array) => Array;
  const fro = Math.sqrt(js(A).reduce((s, v) => s + v * v, 0));
  js(gn(A)).forEach((v, i) => assert.ok(Math.abs(v - js(A)[i] / fro) < 1e-5, `norm grad ${i}`));
  // d sum(svdvals) / dA = U V^T for a full-rank square matrix
  const gs = grad((a: Array) => ops.reduceSum(LA.svdvals(a), [0])) as (a: Array) => Array;
  const [U, , Vh] = LA.svd(A) as LA.SVDResult;
  const uvt = js(
    ops.dotGeneral(U, Vh, [
      [[1], [0]],
      [[], []],
    ]),
  );
  js(gs(A)).forEach((v, i) => assert.ok(Math.abs(v - uvt[i]) < 1e-4, `svd grad ${i}`));
});

test("linalg functions batch under vmap", () => {
  const As = ops.concatenate(
    [ops.reshape(a33, [1, 3, 3]), ops.reshape(ops.mul(a33, ops.scalarLike(a33, 2)), [1, 3, 3])],
    0,
  );
  const d = vmap((a: Array) => LA.det(a))(As);
  js(d).forEach((v, i) => assert.ok(Math.abs(v - [18, 144][i]) < 1e-3));
  const L = vmap((a: Array) => LA.cholesky(a))(As);
  assert.deepEqual(L.shape, [2, 3, 3]);
  const x = vmap((a: Array) => LA.solve(a, array([1, 0, 0], { dtype: "float32" })))(As);
  const inv0 = js(LA.inv(a33));
  js(x)
    .slice(0, 3)
    .forEach((v, i) => assert.ok(Math.abs(v - inv0[i * 3]) < 1e-5));
});

test('linalg.norm accepts JAX\'s "f" spelling of the Frobenius norm', () => {
  const m = array(
    [
      [1, 2],
      [3, 4],
    ],
    { dtype: "float32" },
  );
  assert.ok(Math.abs(Number(LA.norm(m, "f").item()) - Math.sqrt(30)) < 1e-6);
  assert.equal(LA.norm(m, "f").item(), LA.norm(m, "fro").item());
  assert.deepEqual(LA.norm(ops.reshape(ops.concatenate([m, m], 0), [2, 2, 2]), "f", [1, 2]).shape, [2]);
});

test("linalg.tensorinv / tensorsolve against NumPy's values, and their shape errors", () => {
  // values from numpy.linalg.tensorinv / tensorsolve (NumPy 2.x, float64) on M = (arange(36) % 7 reshaped 6x6) + 6 I
  const M = [
    [6, 1, 2, 3, 4, 5],
    [6, 6, 1, 2, 3, 4],
    [5, 6, 6, 1, 2, 3],
    [4, 5, 6, 6, 1, 2],
    [3, 4, 5, 6, 6, 1],
    [2, 3, 4, 5, 6, 6],
  ];
  const invRows = [
    [0.1778012, 0.0109712, 0.0119514, 0.00607, 0.0413588, -0.170374],
    [-0.1903182, 0.1708264, 0.0039587, 0.0051651, -0.0020736, 0.0413588],
    [0.0377017, -0.1891494, 0.1719575, 0.0053159, 0.0051651, 0.00607],
    [-0.0003016, 0.0375132, -0.1893757, 0.1719575, 0.0039587, 0.0119514],
    [0.0060323, -0.0002639, 0.0375132, -0.1891494, 0.1708264, 0.0109712],
    [0.0049766, 0.0060323, -0.0003016, 0.0377017, -0.1903182, 0.1778012],
  ];
  const m = array(M, { dtype: "float32" });
  const near = (got: Array, want: number[], what: string) => {
    const g = (got.tolist() as number[] | number[][]).flat(3) as number[];
    assert.equal(g.length, want.length, what);
    g.forEach((v, i) => assert.ok(Math.abs(v - want[i]) < 2e-5, `${what}[${i}]: ${v} vs ${want[i]}`));
  };
  const inv2 = LA.tensorinv(ops.reshape(m, [2, 3, 6]));
  assert.deepEqual(inv2.shape, [6, 2, 3]);
  near(inv2, invRows.flat(), "tensorinv ind=2");
  const inv1 = LA.tensorinv(ops.reshape(m, [6, 2, 3]), 1);
  assert.deepEqual(inv1.shape, [2, 3, 6]);
  near(inv1, invRows.flat(), "tensorinv ind=1");
  const b = array(
    [
      [0, 1, 2],
      [3, 4, 5],
    ],
    { dtype: "float32" },
  );
  const a4 = ops.reshape(m, [2, 3, 2, 3]);
  const x = LA.tensorsolve(a4, b);
  assert.deepEqual(x.shape, [2, 3]);
  near(x, [-0.6333509, 0.3927387, 0.2217237, 0.2502262, 0.2454758, 0.2462675], "tensorsolve");
  // axes move those axes of a to the end: a with its axis 2 moved to the front, axes [0], gives x transposed
  const x2 = LA.tensorsolve(ops.moveaxis(a4, 2, 0), b, [0]);
  assert.deepEqual(x2.shape, [3, 2]);
  near(x2, [-0.6333509, 0.2502262, 0.3927387, 0.2454758, 0.2217237, 0.2462675], "tensorsolve axes");
  assert.throws(
    () => LA.tensorinv(ops.reshape(m, [4, 9])),
    /linalg\.tensorinv: a of shape \(4, 9\) with ind=2 is not square: prod\(a.shape\[:2\]\) = 36 but prod\(a.shape\[2:\]\) = 1/,
  );
  assert.throws(
    () => LA.tensorinv(m, 0),
    /linalg\.tensorinv: ind must be a positive integer at most a.ndim = 2, got 0/,
  );
  assert.throws(
    () => LA.tensorsolve(a4, array([1, 2, 3], { dtype: "float32" })),
    /linalg\.tensorsolve: a of shape \(2, 3, 2, 3\) must be b.shape \+ x.shape with prod\(x.shape\) = b.size; b has shape \(3,\)/,
  );
});

/** The cofactor matrix of a small square matrix from its minors (an oracle independent of LU): d det / d a = C. */
function cofactors(m: number[][]): number[][] {
  const det = (x: number[][]): number =>
    x.length === 0 ? 1 : x[0].reduce((s, v, j) => s + (j % 2 ? -1 : 1) * v * det(minor(x, 0, j)), 0);
  const minor = (x: number[][], i: number, j: number) =>
    x.filter((_, r) => r !== i).map((row) => row.filter((_, c) => c !== j));
  return m.map((row, i) => row.map((_, j) => ((i + j) % 2 ? -1 : 1) * det(minor(m, i, j))));
}

test("grad of det is the cofactor matrix, finite at singular matrices (JAX's cofactor solve)", () => {
  const close = (got: number[][], want: number[][], what: string) =>
    got.forEach((row, i) =>
      row.forEach((v, j) =>
        assert.ok(
          Math.abs(v - want[i][j]) <= 1e-4 * (1 + Math.abs(want[i][j])),
          `${what}[${i}][${j}] = ${v}, want ${want[i][j]}`,
        ),
      ),
    );
  const g = grad((a: Array) => LA.det(a)) as (a: Array) => Array;
  const gj = jit(g);
  for (const [what, m] of [
    [
      "nonsingular",
      [
        [2, 1],
        [1, 3],
      ],
    ],
    [
      "rank 1 of 2",
      [
        [1, 2],
        [2, 4],
      ],
    ],
    [
      "rank 2 of 3",
      [
        [1, 2, 3],
        [4, 5, 6],
        [7, 8, 9],
      ],
    ],
    // JAX's own corank-1 and corank-2 test matrices (tests/linalg_test.py)
    [
      "JAX corank 1",
      [
        [50, -30, 45],
        [-30, 90, -81],
        [45, -81, 81],
      ],
    ],
    [
      "JAX corank 2",
      [
        [36, -42, 18],
        [-42, 49, -21],
        [18, -21, 9],
      ],
    ],
    [
      "zeros",
      [
        [0, 0, 0],
        [0, 0, 0],
        [0, 0, 0],
      ],
    ],
    ["1 x 1", [[5]]],
  ] as [string, number[][]][]) {
    const a = array(m, { dtype: "float32" });
    close(g(a).tolist() as number[][], cofactors(m), what);
    close(gj(a).tolist() as number[][], cofactors(m), `${what} (jit)`);
  }
  // batched, and under vmap
  const ab = array(
    [
      [
        [1, 2],
        [2, 4],
      ],
      [
        [2, 1],
        [1, 3],
      ],
    ],
    { dtype: "float32" },
  );
  const want = [
    cofactors([
      [1, 2],
      [2, 4],
    ]),
    cofactors([
      [2, 1],
      [1, 3],
    ]),
  ];
  assert.deepEqual((grad((a: Array) => ops.reduceSum(LA.det(a), [0])) as (a: Array) => Array)(ab).tolist(), want);
  assert.deepEqual((vmap(g) as (a: Array) => Array)(ab).tolist(), want);
});

// ---------------------------------------------------------------- multiDot's order (test/fixtures/numpy-gaps.json for values)
runGapCases(fns, ["linalg.multiDot"]);

test("multiDot multiplies in the cheapest order: right pair first for (3,40)(40,6)(6,2); 840 multiplications for a 4-chain", () => {
  const f32 = (...s: number[]) => new ShapedArray(s, "float32");
  const dots = (avals: ShapedArray[]) =>
    traceToJaxpr((...xs: Array[]) => [LA.multiDot(xs)], avals)
      .jaxpr.eqns.filter((e) => e.primitive.name === "dot_general")
      .map((e) => e.inputs.map((v) => v.aval.shape));
  const three = dots([f32(3, 40), f32(40, 6), f32(6, 2)]);
  assert.deepEqual(three[0], [
    [40, 6],
    [6, 2],
  ]);
  // (20,3)(3,40)(40,6)(6,2): left to right costs 7440 multiplications, the best order 840
  const mults = dots([f32(20, 3), f32(3, 40), f32(40, 6), f32(6, 2)]).reduce((s, [p, q]) => s + p[0] * p[1] * q[1], 0);
  assert.equal(mults, 840);
});
