/** @file Holomorphic differentiation (grad / jacfwd / jacrev / hessian with holomorphic: true): JAX's documented values, finite differences and JAX's dtype errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as np from "../../src/numpy/index.js";
import { grad, hessian, jacfwd, jacrev, jit, valueAndGrad } from "../../src/transforms/api.js";
import { assertCloseC, partsOfArray } from "../helpers/complex-fixtures.js";
import { withX64 } from "../helpers/x64.js";

type F = (z: Array) => Array;
const G = (f: F) => grad(f, { holomorphic: true }) as unknown as F;
const c128 = (re: number[], im: number[]): Array =>
  np.complex(np.array(re, "float64"), np.array(im, "float64")) as Array;
/** Central difference of a holomorphic f along direction d (1 or i): (f(z + hd) - f(z - hd)) / (2hd). */
function fd(f: F, z: Array, dir: "re" | "im"): Array {
  const h = 1e-6;
  const step = dir === "re" ? c128([h], [0]).reshape([]) : c128([0], [h]).reshape([]);
  return np.divide(np.subtract(f(np.add(z, step)), f(np.subtract(z, step))), np.multiply(step, 2));
}

test("grad(z**2, holomorphic) at 3+4j is 6+8j (JAX's autodiff cookbook); grad(sin) is cos", () =>
  withX64(() => {
    const z = c128([3], [4]).reshape([]);
    assertCloseC(G((w) => np.multiply(w, w))(z), c128([6], [8]).reshape([]));
    assertCloseC(G((w) => np.square(w))(z), c128([6], [8]).reshape([]));
    const zs = c128([0.3, -1.2, 2], [0.5, 0.1, -1.5]);
    for (let i = 0; i < 3; i++) {
      const zi = zs.get(i);
      assertCloseC(G(np.sin)(zi), np.cos(zi), { msg: `sin at ${i}` });
      assertCloseC(G(np.exp)(zi), np.exp(zi), { msg: `exp at ${i}` });
      assertCloseC(G(np.log)(zi), np.reciprocal(zi), { msg: `log at ${i}` });
    }
    // complex64 too, and under jit
    const z64 = np.complex(np.array(3, "float32"), np.array(4, "float32"));
    assert.equal(z64.dtype, "complex64");
    assertCloseC(jit(G((w) => np.multiply(w, w)))(z64), np.complex(np.array(6, "float32"), np.array(8, "float32")));
  }));

test("holomorphic grad matches finite differences along 1 and i (Cauchy-Riemann)", () =>
  withX64(() => {
    const fs: [string, F][] = [
      ["exp(z) z", (w) => np.multiply(np.exp(w), w)],
      ["tanh(z)/(1+z^2)", (w) => np.divide(np.tanh(w), np.add(np.square(w), 1))],
      ["sqrt(z) + z^3", (w) => np.add(np.sqrt(w), np.power(w, 3))],
    ];
    const z = c128([0.7], [-0.4]).reshape([]);
    for (const [name, f] of fs) {
      const g = G(f)(z);
      assertCloseC(g, fd(f, z, "re"), { rtol: 1e-7, atol: 1e-8, msg: `${name} along 1` });
      assertCloseC(g, fd(f, z, "im"), { rtol: 1e-7, atol: 1e-8, msg: `${name} along i` });
    }
    // valueAndGrad and argnums carry holomorphic through
    const [v, g] = valueAndGrad((a: Array, b: Array) => np.multiply(a, np.exp(b)), {
      argnums: 1,
      holomorphic: true,
    })(z, z) as [Array, Array];
    assertCloseC(v, np.multiply(z, np.exp(z)));
    assertCloseC(g, np.multiply(z, np.exp(z)));
  }));

test("jacfwd / jacrev / hessian with holomorphic: true give df/dz", () =>
  withX64(() => {
    const z = c128([0.5, -1, 2], [1, 0.25, -0.5]);
    // f(z)_i = z_i^3 + z_0 z_{i}: J = diag(3 z^2 + z_0) + e_0 column z
    const f = (w: Array): Array => np.add(np.power(w, 3), np.multiply(w.get(0), w));
    const jf = jacfwd(f, { holomorphic: true })(z) as Array;
    const jr = jacrev(f, { holomorphic: true })(z) as Array;
    const [zr, zi] = partsOfArray(z);
    const re: number[] = [],
      im: number[] = [];
    for (let i = 0; i < 3; i++)
      for (let j = 0; j < 3; j++) {
        // d/dz_j of z_i^3 + z_0 z_i
        let a = 0,
          b = 0;
        if (i === j) {
          a += 3 * (zr[i] * zr[i] - zi[i] * zi[i]) + zr[0];
          b += 6 * zr[i] * zi[i] + zi[0];
        }
        if (j === 0) {
          a += zr[i];
          b += zi[i];
        }
        re.push(a);
        im.push(b);
      }
    const want = c128(re, im).reshape([3, 3]);
    assertCloseC(jf, want, { msg: "jacfwd" });
    assertCloseC(jr, want, { msg: "jacrev" });
    // the second derivative of z^3 is 6z
    const s = z.get(1);
    assertCloseC(hessian((w: Array) => np.power(w, 3), { holomorphic: true })(s) as Array, np.multiply(s, 6));
  }));

test("holomorphic differentiation refuses real inputs or outputs with JAX's errors", () => {
  const x = np.array(1.5, "float32"),
    z = np.complex(1, 2);
  assert.throws(() => G(np.sin)(x), /grad with holomorphic=true requires inputs with complex dtype, but got float32/);
  assert.throws(
    () => G((w) => np.abs(w))(z),
    /grad with holomorphic=true requires outputs with complex dtype, but got float32/,
  );
  assert.throws(
    () => jacfwd(np.sin, { holomorphic: true })(x),
    /jacfwd with holomorphic=true requires inputs with complex dtype, but got float32/,
  );
  assert.throws(
    () => jacrev((w: Array) => np.real(w), { holomorphic: true })(z),
    /jacrev with holomorphic=true requires outputs with complex dtype, but got float32/,
  );
  // without it, a complex output names the option
  assert.throws(() => (grad(np.sin) as unknown as F)(z), /real-valued outputs.*pass \{ holomorphic: true \}/);
  assert.throws(() => (jacfwd(np.sin) as unknown as F)(z), /jacfwd requires real-valued inputs.*holomorphic/);
  assert.throws(() => grad(np.sin, { holomorfic: true } as never), /grad: unknown option "holomorfic"/);
});
