/** @file The eig primitive (lax.linalg.eig for real or complex matrices): complex eigenvalues and right eigenvectors; jvp of eigenvalues only, as JAX. */
import type { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { complexDType, isComplex } from "../core/dtype.js";
import { Primitive, Zero } from "../core/primitive.js";
import { cinverse, eigenvalues, eigenvectors } from "../backends/interpreter/eig-kernels.js";
import * as ops from "./bind-ops.js";
import { fromParts, partsOf } from "./complex.js";

export interface EigParams {
  compute_right_eigenvectors: boolean;
  with_inverse: boolean;
  [k: string]: unknown;
}

export const eigP: Primitive<EigParams> = new Primitive<EigParams>(
  "eig",
  {
    abstractEval([x], { compute_right_eigenvectors: right, with_inverse: inv }) {
      if (x.dtype !== "float32" && x.dtype !== "float64" && !isComplex(x.dtype))
        throw new TypeError(`eig: requires a float32, float64, complex64 or complex128 matrix, got ${x.str()}`);
      if (x.ndim < 2 || x.shape[x.ndim - 1] !== x.shape[x.ndim - 2])
        throw new TypeError(`eig: requires square matrices [..., n, n], got ${x.str()}`);
      const c = complexDType(x.dtype),
        lead = x.shape.slice(0, -1);
      const outs = [new ShapedArray(lead, c)];
      if (right || inv) outs.push(new ShapedArray(x.shape, c));
      if (inv) outs.push(new ShapedArray(x.shape, c));
      return outs;
    },
    impl([x], { compute_right_eigenvectors: right, with_inverse: inv }, outs) {
      const n = x.shape[x.ndim - 1],
        batch = x.size / (n * n || 1);
      const [a, aIm] = partsOf(x);
      const cplx = isComplex(x.dtype);
      const w = [new Float64Array(batch * n), new Float64Array(batch * n)];
      const v = [new Float64Array(batch * n * n), new Float64Array(batch * n * n)],
        vi = [new Float64Array(batch * n * n), new Float64Array(batch * n * n)];
      for (let b = 0; b < batch; b++) {
        const m = a.slice(b * n * n, (b + 1) * n * n),
          mi = cplx ? aIm.slice(b * n * n, (b + 1) * n * n) : undefined;
        const e = eigenvalues(m, n, mi);
        w[0].set(e.re, b * n);
        w[1].set(e.im, b * n);
        if (right || inv) {
          const vec = eigenvectors(m, n, e.re, e.im, mi);
          v[0].set(vec.re, b * n * n);
          v[1].set(vec.im, b * n * n);
          if (inv) {
            const r = cinverse(vec.re, vec.im, n);
            vi[0].set(r.re, b * n * n);
            vi[1].set(r.im, b * n * n);
          }
        }
      }
      const res = [fromParts(outs[0], w[0], w[1])];
      if (outs.length > 1) res.push(fromParts(outs[1], v[0], v[1]));
      if (outs.length > 2) res.push(fromParts(outs[2], vi[0], vi[1]));
      return res;
    },
    // dw_i = (V^-1 dA V)_ii (eigenvalues only; JAX does not differentiate eig's eigenvectors either)
    jvp([x], [t], p) {
      if (p.compute_right_eigenvectors || p.with_inverse) {
        throw new Error(
          "eig: the derivatives of eigenvectors are not implemented, only eigenvalues (as in JAX); use linalg.eigvals under differentiation",
        );
      }
      const [w, v, vinv] = ops.bindN(eigP, [x], { compute_right_eigenvectors: false, with_inverse: true });
      if (t instanceof Zero) return [[w], [new Zero(w.aval)]];
      const nd = x.ndim,
        batch = [...globalThis.Array(nd - 2).keys()];
      const da = ops.convert(t, w.dtype);
      const m = ops.dotGeneral(vinv, da, [
        [[nd - 1], [nd - 2]],
        [batch, batch],
      ]);
      const perm = [...batch, nd - 1, nd - 2];
      return [[w], [ops.reduceSum(ops.mul(m, ops.transpose(v, perm)), [nd - 1])]];
    },
    missing: { lower: "complex outputs run on the reference interpreter (notes/complex.md)", transpose: "not linear" },
  },
  { multipleResults: true },
);
eigP.rules.vmap = (_axis, [x], [d], p) => {
  const outs = ops.bindN(eigP, [ops.moveaxis(x, d!, 0)], p);
  return [outs, outs.map(() => 0)];
};

/** lax.linalg.eig(x, {computeRightEigenvectors}): [w] or [w, v] (right eigenvectors as columns). */
export function eig(x: Array, computeRightEigenvectors = true): Array[] {
  return ops.bindN(eigP, [x], { compute_right_eigenvectors: computeRightEigenvectors, with_inverse: false });
}
