/** @file jnp products (matmul, dot, tensordot, einsum, kron, ...) against NumPy fixtures, plus errors and transformations. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as Li from "../../src/numpy/linear.js";
import * as ops from "../../src/primitives/ops.js";
import { grad, vmap } from "../../src/transforms/api.js";
import { fixtureCases, runCase } from "./struct-fixtures.js";

const fns = Li as unknown as Record<string, unknown>;
for (const c of fixtureCases("numpy-struct-linear.json")) test(`linear fixture: ${c.name}`, () => runCase(fns, c));

const a23 = ops.full([2, 3], 1, "float32"),
  a43 = ops.full([4, 3], 1, "float32");
const BAD: [string, () => unknown, RegExp][] = [
  [
    "matmul mismatch",
    () => Li.matmul(a23, a43),
    /matmul: contracting dimensions do not match for shapes \(2, 3\) and \(4, 3\): a\.shape\[-1\] \(3\) must equal b\.shape\[-2\] \(4\)/,
  ],
  [
    "matmul scalar",
    () => Li.matmul(a23, 2),
    /matmul: operands must be at least 1-dimensional.*got shapes \(2, 3\) and \(\)/,
  ],
  [
    "matmul batch mismatch",
    () => Li.matmul(ops.full([2, 2, 3], 1, "float32"), ops.full([3, 3, 1], 1, "float32")),
    /matmul: shapes \(2,\), \(3,\) cannot be broadcast together/,
  ],
  [
    "dot not aligned",
    () => Li.dot(a23, a43),
    /dot: shapes \(2, 3\) and \(4, 3\) not aligned: 3 \(dim 1\) != 4 \(dim 0\)/,
  ],
  [
    "vdot sizes",
    () => Li.vdot(a23, a43),
    /vdot: arrays must have the same number of elements, got shapes \(2, 3\) and \(4, 3\)/,
  ],
  [
    "inner last dims",
    () => Li.inner(a23, ops.full([2], 1, "float32")),
    /inner: shapes \(2, 3\) and \(2,\) have different last dimensions \(3 vs 2\)/,
  ],
  [
    "tensordot mismatch",
    () => Li.tensordot(a23, a43, [[1], [0]]),
    /tensordot: shape mismatch for contracted axes: a\.shape\[1\] = 3 but b\.shape\[0\] = 4/,
  ],
  [
    "einsum operand count",
    () => Li.einsum("ij,jk->ik", a23),
    /einsum: subscripts "ij,jk->ik" name 2 operand\(s\) but 1 operand\(s\) were given/,
  ],
  [
    "einsum rank mismatch",
    () => Li.einsum("ijk->i", a23),
    /einsum: operand 0 has shape \(2, 3\) \(2 dimensions\) but its subscripts "ijk" name 3 dimensions/,
  ],
  [
    "einsum size conflict",
    () => Li.einsum("ij,ij->i", a23, a43),
    /einsum: size of label 'i' is 2 in operand 0 but 4 in operand 1 \(subscripts "ij,ij->i", operand shapes: \(2, 3\), \(4, 3\)\)/,
  ],
  [
    "einsum bad output label",
    () => Li.einsum("ij->k", a23),
    /einsum: output subscript 'k' in "ij->k" does not appear in the input subscripts/,
  ],
  ["einsum repeated output", () => Li.einsum("ij->ii", a23), /einsum: output subscript 'i' appears more than once/],
  ["einsum bad char", () => Li.einsum("i1->i", a23), /einsum: invalid character "1" in subscripts "i1->i"/],
  [
    "einsum repeated label sizes",
    () => Li.einsum("ii->i", a23),
    /einsum: repeated label 'i' in operand 0 \("ii"\) needs equal sizes, got 2 and 3/,
  ],
  [
    "einsum missing ellipsis in output",
    () => Li.einsum("...i->i", a23),
    /einsum: output subscripts "i" must include "\.\.\."/,
  ],
  [
    "vecdot sizes",
    () => Li.vecdot(a23, ops.full([2], 1, "float32")),
    /vecdot: x1 and x2 must have the same size along axis -1, got shapes \(2, 3\) and \(2,\)/,
  ],
];
for (const [name, f, re] of BAD) test(`linear bad input: ${name}`, () => assert.throws(f, re));

test("matmul / einsum gradients and batching", () => {
  const A = array(
      [
        [1, 2],
        [3, 4],
      ],
      { dtype: "float32" },
    ),
    B = array(
      [
        [5, 6],
        [7, 8],
      ],
      { dtype: "float32" },
    );
  const gA = grad((a: Array) => ops.reduceSum(Li.matmul(a, B), [0, 1])) as (a: Array) => Array;
  assert.deepEqual(gA(A).tolist(), [
    [11, 15],
    [11, 15],
  ]);
  const gE = grad((a: Array) => Li.einsum("ij,ij->", a, a)) as (a: Array) => Array;
  assert.deepEqual(gE(A).tolist(), [
    [2, 4],
    [6, 8],
  ]);
  const gT = grad((a: Array) => Li.einsum("ii", a)) as (a: Array) => Array;
  assert.deepEqual(gT(A).tolist(), [
    [1, 0],
    [0, 1],
  ]);
  const vm = vmap((a: Array) => Li.einsum("ij,jk->ik", a, B))(ops.broadcastInDim(A, [3, 2, 2], [1, 2]));
  assert.deepEqual(vm.tolist(), [
    [
      [19, 22],
      [43, 50],
    ],
    [
      [19, 22],
      [43, 50],
    ],
    [
      [19, 22],
      [43, 50],
    ],
  ]);
  assert.equal(Li.matmul(A, B, { preferredElementType: "float32" }).dtype, "float32");
});

test("einsum's interleaved form einsum(op0, sublist0, op1, sublist1, ..., [out]) equals the subscripts form", () => {
  const A = array(
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      { dtype: "float32" },
    ),
    B = array(
      [
        [1, 0],
        [2, 1],
        [0, 3],
      ],
      { dtype: "float32" },
    );
  // np.einsum(A, [0, 1], B, [1, 2], [0, 2]) == A @ B
  assert.deepEqual(Li.einsum(A, [0, 1], B, [1, 2], [0, 2]).tolist(), [
    [5, 11],
    [14, 23],
  ]);
  // implicit output (labels appearing once, in order) and a trace
  assert.deepEqual(Li.einsum(A, [0, 1], B, [1, 2]).tolist(), Li.einsum("ij,jk", A, B).tolist());
  assert.equal(
    Li.einsum(
      array([
        [1, 2],
        [3, 4],
      ]),
      [0, 0],
    ).item(),
    5,
  );
  // ellipsis and labels above 25 (uppercase letters)
  assert.deepEqual(Li.einsum(A, ["...", 30], [30, "..."]).tolist(), Li.einsum("...i->i...", A).tolist());
  assert.deepEqual(Li.einsum(A, [0, 1], B, [1, 2], [0, 2], { preferredElementType: "float32" }).dtype, "float32");
  assert.throws(
    () => Li.einsum(A, [0, 60]),
    /einsum: operand 0's sublist entries must be integers in \[0, 52\) or "\.\.\.", got 60/,
  );
  assert.throws(
    () => Li.einsum(A, B as never),
    /einsum: in the interleaved form every operand must be followed by a sublist/,
  );
});
