/** @file nn.dotProductAttention against NumPy references (test/fixtures/nn-attention.json: MHA, GQA, MQA, unbatched, mask, bias, causal, padding, window, float16), gradients vs finite differences, jit vs eager, vmap, bad inputs. */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import * as nn from "../../src/nn/index.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { assertClose } from "../helpers/fixtures.js";
import { assertThrowsWith, runFixture } from "../numpy/math-cases.js";

const saved = config.enableX64;
after(() => config.update("enableX64", saved));

runFixture("nn-attention.json", nn as unknown as Record<string, unknown>);

/** A deterministic pseudo-random array (no dependence on jax.random). */
function det(shape: number[], seed: number, dtype: DType = "float32"): Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const vals = globalThis.Array.from({ length: n }, (_, i) => Math.sin(seed * 12.9898 + i * 78.233) * 1.5);
  return ops.reshape(array(vals, { dtype }), shape);
}
/** x[i] along the leading axis. */
const at0 = (x: Array, i: number): Array => ops.reshape(ops.sliceInDim(x, i, i + 1, 1, 0), x.shape.slice(1));
const flatten = (v: unknown): number[] => (globalThis.Array.isArray(v) ? v.flatMap(flatten) : [Number(v)]);
/** A (t, s) boolean mask keeping key 0 for every query, so no row is fully masked (in float64 JAX's masked rows are NaN). */
const causalMask = (t: number, s: number) =>
  array(
    globalThis.Array.from({ length: t }, (_, i) =>
      globalThis.Array.from({ length: s }, (_, j) => j === 0 || (i * 7 + j * 3) % 5 !== 0),
    ),
    { dtype: "bool" },
  );

describe("gradients vs central finite differences (float64 inputs under x64)", () => {
  // f(q, k, v, bias) = sum(attention(...) * w): GQA (N 4, K 2), causal, mask and bias together.
  // JAX runs the softmax in float32 even for float64 inputs, so the finite differences carry ~1e-7 relative noise.
  it("d/d query, key, value and bias agree with (f(x + eps d) - f(x - eps d)) / 2 eps", () => {
    config.update("enableX64", true);
    try {
      const q = det([2, 3, 4, 3], 1, "float64"),
        k = det([2, 5, 2, 3], 2, "float64"),
        v = det([2, 5, 2, 3], 3, "float64");
      const bias = det([1, 4, 3, 5], 4, "float64"),
        w = det([2, 3, 4, 3], 5, "float64"),
        mask = causalMask(3, 5);
      const f = (qq: Array, kk: Array, vv: Array, bb: Array): Array =>
        ops.reduceSum(ops.mul(nn.dotProductAttention(qq, kk, vv, { bias: bb, mask, isCausal: true }), w), [0, 1, 2, 3]);
      const grads = grad(f, { argnums: [0, 1, 2, 3] })(q, k, v, bias) as unknown as Array[];
      const xs = [q, k, v, bias];
      const eps = 1e-3;
      xs.forEach((x, i) => {
        const d = det(x.shape, 10 + i, "float64");
        const shift = (sgn: number) =>
          xs.map((y, j) => (j === i ? ops.add(y, ops.mul(d, ops.full(d.shape, sgn * eps, "float64"))) : y));
        const [p, m] = [shift(1), shift(-1)].map((a) => Number(f(a[0], a[1], a[2], a[3]).item()));
        const fd = (p - m) / (2 * eps);
        const an = flatten(grads[i].tolist()).reduce((s, g, j) => s + g * flatten(d.tolist())[j], 0);
        assert.ok(
          Math.abs(an - fd) <= 1e-4 + 1e-3 * Math.abs(fd),
          `argument ${i}: analytic ${an} vs finite difference ${fd}`,
        );
        assert.ok(Math.abs(fd) > 1e-3, `argument ${i}: the directional derivative should not vanish (${fd})`);
      });
    } finally {
      config.update("enableX64", saved);
    }
  });
  it("masked-out key positions get exactly zero gradient", () => {
    const q = det([1, 2, 1, 3], 1),
      k = det([1, 4, 1, 3], 2),
      v = det([1, 4, 1, 3], 3);
    const mask = array(
      [
        [true, true, false, false],
        [true, false, true, false],
      ],
      { dtype: "bool" },
    );
    const gk = grad((kk: Array) => ops.reduceSum(nn.dotProductAttention(q, kk, v, { mask }), [0, 1, 2, 3]))(k);
    const rows = (gk.tolist() as number[][][][])[0];
    assert.deepEqual(rows[3][0], [0, 0, 0]); // key 3 is masked for both queries
    assert.ok(rows[0][0].some((x) => x !== 0));
  });
});

describe("transforms", () => {
  const q = det([2, 4, 4, 3], 1),
    k = det([2, 6, 2, 3], 2),
    v = det([2, 6, 2, 3], 3),
    bias = det([2, 1, 4, 6], 4);
  const opts = {
    bias,
    isCausal: true,
    keyValueSeqLengths: array([5, 6], { dtype: "int32" }),
    querySeqLengths: array([3, 4], { dtype: "int32" }),
  };
  it("jit (one ONNX program) equals eager", () => {
    const eager = nn.dotProductAttention(q, k, v, opts);
    const jitted = jit((a: Array, b: Array, c: Array) => nn.dotProductAttention(a, b, c, opts))(q, k, v);
    assertClose(jitted, eager, { rtol: 1e-5, atol: 1e-6 });
  });
  it("vmap over a leading axis equals the per-example calls", () => {
    const qs = det([3, 4, 2, 3], 5),
      ks = det([3, 5, 1, 3], 6),
      vs = det([3, 5, 1, 3], 7);
    const batched = vmap((a: Array, b: Array, c: Array) => nn.dotProductAttention(a, b, c, { isCausal: true }))(
      qs,
      ks,
      vs,
    );
    for (let i = 0; i < 3; i++) {
      const one = nn.dotProductAttention(at0(qs, i), at0(ks, i), at0(vs, i), { isCausal: true });
      assertClose(at0(batched, i), one, { rtol: 1e-6, atol: 1e-7 });
    }
  });
  it("padding: query rows past querySeqLengths are zero with both lengths given", () => {
    const out = nn.dotProductAttention(q, k, v, opts).tolist() as number[][][][];
    assert.ok(out[0][3].flat().every((x) => x === 0));
    assert.ok(out[0][2].flat().some((x) => x !== 0));
  });
  it("bias and mask may be passed positionally, as in JAX", () => {
    const m = causalMask(4, 6);
    assertClose(nn.dotProductAttention(q, k, v, bias, m), nn.dotProductAttention(q, k, v, { bias, mask: m }), {
      rtol: 0,
      atol: 0,
    });
  });
});

describe("bad inputs", () => {
  const q = det([1, 2, 4, 3], 1),
    k = det([1, 5, 3, 3], 2),
    k2 = det([1, 5, 2, 3], 2);
  const BAD: [string, () => unknown, (string | RegExp)[]][] = [
    [
      "heads not a multiple",
      () => nn.dotProductAttention(q, k, k),
      ["dot_product_attention", "multiple", "N = 4", "K = 3"],
    ],
    [
      "head dim",
      () => nn.dotProductAttention(det([1, 2, 4, 2], 1), k2, k2),
      ["dot_product_attention", "query", "H = 3", "(1, 2, 4, 2)"],
    ],
    [
      "value shape",
      () => nn.dotProductAttention(q, k2, det([1, 4, 2, 3], 3)),
      ["dot_product_attention", "value", "(1, 5, 2, 3)", "(1, 4, 2, 3)"],
    ],
    [
      "dtype mismatch",
      () => nn.dotProductAttention(q, k2, det([1, 5, 2, 3], 3, "float16")),
      ["dot_product_attention", "value", "float16", "float32"],
    ],
    [
      "integer inputs",
      () =>
        nn.dotProductAttention(
          array([[[[1]]]], { dtype: "int32" }),
          array([[[[1]]]], { dtype: "int32" }),
          array([[[[1]]]], { dtype: "int32" }),
        ),
      ["dot_product_attention", "floating", "int32"],
    ],
    [
      "5-D query",
      () => nn.dotProductAttention(ops.reshape(q, [1, 1, 2, 4, 3]), k2, k2),
      ["dot_product_attention", "query", "at most 4", "(1, 1, 2, 4, 3)"],
    ],
    [
      "non-boolean mask",
      () => nn.dotProductAttention(q, k2, k2, { mask: det([2, 5], 1) }),
      ["dot_product_attention", "mask", "boolean", "float32"],
    ],
    [
      "mask on K heads",
      () => nn.dotProductAttention(q, k2, k2, { mask: array([[[[true]], [[false]]]], { dtype: "bool" }) }),
      ["dot_product_attention", "mask", "(1, 2, 1, 1)", "(1, 4, 2, 5)"],
    ],
    [
      "bias shape",
      () => nn.dotProductAttention(q, k2, k2, { bias: det([2, 4], 1) }),
      ["dot_product_attention", "bias", "(1, 1, 2, 4)", "(1, 4, 2, 5)"],
    ],
    [
      "seq lengths dtype",
      () => nn.dotProductAttention(q, k2, k2, { keyValueSeqLengths: array([3], { dtype: "float32" }) }),
      ["dot_product_attention", "keyValueSeqLengths", "int32", "(1,)"],
    ],
    [
      "window",
      () => nn.dotProductAttention(q, k2, k2, { localWindowSize: [1, 2, 3] as unknown as [number, number] }),
      ["dot_product_attention", "localWindowSize"],
    ],
    [
      "cudnn",
      () => nn.dotProductAttention(q, k2, k2, { implementation: "cudnn" }),
      ["dot_product_attention", "cudnn", "not available"],
    ],
    [
      "unknown implementation",
      () => nn.dotProductAttention(q, k2, k2, { implementation: "flash" as "xla" }),
      ["dot_product_attention", "flash"],
    ],
    [
      "unknown option",
      () => nn.dotProductAttention(q, k2, k2, { causal: true } as unknown as nn.DotProductAttentionOptions),
      ["dot_product_attention", "causal"],
    ],
  ];
  for (const [name, f, pats] of BAD) it(name, () => assertThrowsWith(f, ...pats));
});
