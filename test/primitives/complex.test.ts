/** @file Complex dtypes end to end: NumPy-fixture values eager, under jit and under vmap; promotion; printing; JAX's grad convention. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { promoteTypes, resultType } from "../../src/core/dtype.js";
import * as np from "../../src/numpy/index.js";
import * as lax from "../../src/lax/index.js";
import { grad, jit, jvp, vjp, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { type CFix, assertCloseC, decodeC, partsOfArray } from "../helpers/complex-fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Case {
  name: string;
  fn: string;
  args: CFix[];
  out: CFix;
  rtol: number;
  atol: number;
  x64: boolean;
  kwargs?: Record<string, unknown>;
}
const fx = loadFixture<{ cases: Case[]; reprs: { name: string; value: CFix; repr: string }[] }>("complex.json");
const camel = (s: string): string => s.replace(/_(.)/g, (_, c: string) => c.toUpperCase());
type Fn = (...a: unknown[]) => Array;
const fnOf = (c: Case): ((...a: Array[]) => Array) => {
  const f = (np as unknown as Record<string, Fn>)[camel(c.fn)];
  assert.ok(f, `jnp.${camel(c.fn)} exists`);
  return (...a) => (c.kwargs ? f(...a, c.kwargs) : f(...a));
};

for (const c of fx.cases) {
  test(`complex ${c.name}: eager, jit and vmap match NumPy`, () =>
    withX64(c.x64, () => {
      const f = fnOf(c),
        args = c.args.map(decodeC),
        tol = { rtol: c.rtol, atol: c.atol };
      assertCloseC(f(...args), c.out, { ...tol, msg: "eager" });
      assertCloseC(jit(f)(...args), c.out, { ...tol, msg: "jit" });
      // elementwise cases: vmap over the leading axis agrees with the whole-array result
      if (
        !c.kwargs &&
        c.out.shape.length > 0 &&
        args.every((a) => a.shape[0] === c.out.shape[0] && a.ndim === c.out.shape.length)
      ) {
        assertCloseC(vmap(f)(...args), c.out, { ...tol, msg: "vmap" });
      }
    }));
}

test("complex reprs match jax.Array.__repr__ (NumPy's ComplexFloatingFormat)", () =>
  withX64(true, () => {
    for (const r of fx.reprs) assert.equal(String(decodeC(r.value)), r.repr, r.name);
  }));

test("promotion: JAX's lattice with complex nodes, x64 canonicalization, weak complex", () => {
  withX64(true, () => {
    assert.equal(resultType("complex64", "float64"), "complex128");
    assert.equal(resultType("complex64", "float32"), "complex64");
    assert.equal(resultType("complex64", "int64"), "complex64");
    assert.equal(resultType("float16", "complex64"), "complex64");
    assert.equal(resultType("complex64", "complex128"), "complex128");
    // a weak complex (Python complex literal) with float16 gives complex64, with float64 complex128
    assert.deepEqual(promoteTypes({ dtype: "complex128", weakType: true }, { dtype: "float16", weakType: false }), {
      dtype: "complex64",
      weakType: false,
    });
    assert.deepEqual(promoteTypes({ dtype: "complex128", weakType: true }, { dtype: "float64", weakType: false }), {
      dtype: "complex128",
      weakType: false,
    });
    assert.deepEqual(promoteTypes({ dtype: "complex128", weakType: true }, { dtype: "int32", weakType: false }), {
      dtype: "complex128",
      weakType: true,
    });
  });
  withX64(false, () => {
    assert.equal(resultType("complex64", "float64"), "complex64");
    assert.equal(resultType("complex128"), "complex64");
    assert.equal(np.complex(np.array([1], "float64"), 0).dtype, "complex64");
  });
});

test("grad of a real function of a complex input follows JAX's convention: grad(|z|^2)(3+4j) = 6-8j", () => {
  // JAX's autodiff cookbook: grad(f)(3. + 4j) == 6 - 8j for f(z) = x^2 + y^2
  const z = np.complex(3, 4);
  assertCloseC((grad((w: Array) => np.square(np.abs(w))) as Fn)(z), np.complex(6, -8), { rtol: 1e-6 });
  assertCloseC((grad((w: Array) => np.add(np.square(np.real(w)), np.square(np.imag(w)))) as Fn)(z), np.complex(6, -8), {
    rtol: 1e-6,
  });
});

test("grad of real functions of complex inputs = df/dx - i df/dy (finite differences, float64)", () =>
  withX64(true, () => {
    const fs: [string, (w: Array) => Array][] = [
      ["re(exp(z) * sin(z))", (w) => np.real(np.multiply(np.exp(w), np.sin(w)))],
      ["im(log(z)^2 / z)", (w) => np.imag(np.divide(np.square(np.log(w)), w))],
      ["|sqrt(z) + tanh(z)|", (w) => np.abs(np.add(np.sqrt(w), np.tanh(w)))],
      ["angle(z conj(z) + z^3)", (w) => np.angle(np.add(np.multiply(w, np.conj(w)), np.power(w, 3)))],
      [
        "re(z^(1.5+0.5i)) + re(expm1(z)) + im(log1p(z))",
        (w) => np.add(np.add(np.real(np.power(w, np.complex(1.5, 0.5))), np.real(np.expm1(w))), np.imag(np.log1p(w))),
      ],
      ["sum|z|^2 via vdot", (w) => np.real(np.vdot(w, w))],
      [
        "re(sum(cos z * sinh z / cosh z))",
        (w) => np.real(np.sum(np.divide(np.multiply(np.cos(w), np.sinh(w)), np.cosh(w)))),
      ],
    ];
    const zs: [number, number][] = [
      [0.7, -0.4],
      [1.3, 0.9],
    ];
    for (const [name, f] of fs) {
      for (const [x, y] of zs) {
        const z = np.complex(np.array(x, "float64"), np.array(y, "float64"));
        const g = (grad((w: Array) => np.sum(f(w))) as Fn)(z);
        const h = 1e-6;
        const at = (a: number, b: number): number =>
          Number(np.sum(f(np.complex(np.array(a, "float64"), np.array(b, "float64")))).item());
        const dx = (at(x + h, y) - at(x - h, y)) / (2 * h),
          dy = (at(x, y + h) - at(x, y - h)) / (2 * h);
        const [[gr], [gi]] = partsOfArray(g);
        assert.ok(Math.abs(gr - dx) < 1e-6 * (1 + Math.abs(dx)), `${name} at ${x}+${y}i: re ${gr} vs ${dx}`);
        assert.ok(Math.abs(gi + dy) < 1e-6 * (1 + Math.abs(dy)), `${name} at ${x}+${y}i: im ${gi} vs ${-dy}`);
      }
    }
  }));

test("jvp of holomorphic functions is f'(z) t; vjp transposes without conjugation, as JAX", () =>
  withX64(true, () => {
    const z = np.complex(np.array([0.3, -1.2], "float64"), np.array([0.8, 0.4], "float64"));
    const t = np.complex(np.array([1, 0.5], "float64"), np.array([-0.25, 2], "float64"));
    const [y, ty] = jvp((w: Array) => np.multiply(np.sin(w), w), [z], [t]) as unknown as [Array, Array];
    assertCloseC(y, np.multiply(np.sin(z), z));
    assertCloseC(ty, np.multiply(np.add(np.multiply(np.cos(z), z), np.sin(z)), t));
    const [, pull] = vjp((w: Array) => np.exp(w), z) as unknown as [Array, (ct: Array) => Array[]];
    assertCloseC(pull(t)[0], np.multiply(t, np.exp(z)));
  }));

test("lax.complex / real / imag / conj round-trip, and vmap of lax.complex", () => {
  const re = np.array([1, -2, 3], "float32"),
    im = np.array([0.5, 0, -4], "float32");
  const z = lax.complex(re, im);
  assert.equal(z.dtype, "complex64");
  assert.deepEqual(z.tolist(), [
    { re: 1, im: 0.5 },
    { re: -2, im: 0 },
    { re: 3, im: -4 },
  ]);
  assertCloseC(lax.real(z), re);
  assertCloseC(lax.imag(lax.conj(z)), np.negative(im));
  assertCloseC(vmap((a: Array, b: Array) => lax.complex(a, b))(re, im), z);
  assert.throws(() => lax.real(re), /real requires a complex operand/);
  assert.throws(() => lax.complex(re, np.array([1, 2, 3], "int32")), /complex requires float32 or float64/);
});

test("complex operands are refused clearly where JAX has no complex rule (floor, lt), and real-only grads refuse complex outputs", () => {
  const z = np.complex([1, 2], [3, 4]);
  assert.throws(() => lax.lt(z, z), /lt does not support complex operands/);
  assert.throws(() => lax.floor(z), /floor/);
  assert.throws(() => Number(np.sum(z)), /complex array .* has no JS number value/);
  assert.throws(() => (grad((w: Array) => np.sum(w)) as Fn)(z), /grad requires real-valued outputs/);
  assert.deepEqual(np.sum(z).item(), { re: 3, im: 7 });
});

test("structural ops move complex elements intact (transpose, slice, concatenate, gather, where, pad)", () => {
  const z = np.reshape(np.complex(np.arange(6), np.multiply(np.arange(6), -1)), [2, 3]);
  const [tr, ti] = partsOfArray(np.transpose(z));
  assert.deepEqual(tr, [0, 3, 1, 4, 2, 5]);
  assert.deepEqual(ti, [0, -3, -1, -4, -2, -5]);
  assert.deepEqual(partsOfArray(np.concatenate([z.get(0), z.get(1, "1:")]))[1], [0, -1, -2, -4, -5]);
  assert.deepEqual(partsOfArray(np.take(np.ravel(z), np.array([5, 0])))[0], [5, 0]);
  assert.deepEqual(partsOfArray(np.where(np.array([true, false, true]), z.get(0), z.get(1)))[1], [0, -4, -2]);
  assert.deepEqual(partsOfArray(np.pad(z.get(0), 1))[0], [0, 0, 1, 2, 0]);
  assert.deepEqual(partsOfArray(jit((a: Array) => np.flip(np.cumsum(a)))(z.get(1)))[1], [-12, -7, -3]);
});

test("control flow carries complex values: scan and foriLoop agree eagerly, under jit, and with the Python-style loop", async () => {
  const { scan, foriLoop } = await import("../../src/transforms/scan.js");
  const xs = np.complex([1, 0.5, -1], [0.5, 1, 0]);
  const step = (c: Array, x: Array): [Array, Array] => {
    const n = np.add(np.multiply(c, x), 1);
    return [n, np.real(n)];
  };
  const run = (z: Array) => scan(step, z, xs);
  const z0 = np.complex(0.25, -0.5);
  let c = z0;
  const ys: Array[] = [];
  for (let i = 0; i < 3; i++) {
    [c] = step(c, xs.get(i));
    ys.push(np.real(c));
  }
  const [ce, ye] = run(z0),
    [cj, yj] = jit(run)(z0) as unknown as [Array, Array];
  assertCloseC(ce, c);
  assertCloseC(cj, c);
  assertCloseC(ye, np.stack(ys));
  assertCloseC(yj, np.stack(ys));
  const loop = (z: Array) => foriLoop(0, 4, (_i: Array, w: Array) => np.add(np.multiply(w, w), z), z);
  assertCloseC(jit(loop)(z0), loop(z0));
});
