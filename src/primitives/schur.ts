/** @file The schur, hessenberg, rsf2csf and triu_function primitives (lax.linalg.schur; scipy.linalg.hessenberg's H and Q; sqrtm / funm recurrences): batched, real or complex; no derivative (as JAX). */
import type { Array } from "../core/array.js";
import type { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { complexDType, isComplex, realDType } from "../core/dtype.js";
import { Primitive } from "../core/primitive.js";
import {
  complexSchur,
  hessenbergQ,
  realSchur,
  realToComplexSchur,
  triuFunction as triuKernel,
} from "../backends/interpreter/schur-kernels.js";
import * as ops from "./bind-ops.js";
import { fromParts, partsOf } from "./complex.js";
import { fromNums } from "./ref-util.js";

export interface SchurParams {
  compute_schur_vectors: boolean;
  [k: string]: unknown;
}

/** Checks for a (batch of) square float / complex matrix; names the primitive and the operand. */
function squareAval(name: string, x: ShapedArray): void {
  if (x.dtype !== "float32" && x.dtype !== "float64" && !isComplex(x.dtype))
    throw new TypeError(`${name}: requires a float32, float64, complex64 or complex128 matrix, got ${x.str()}`);
  if (x.ndim < 2 || x.shape[x.ndim - 1] !== x.shape[x.ndim - 2])
    throw new TypeError(`${name}: requires square matrices [..., n, n], got ${x.str()}`);
}

/** Runs a per-matrix kernel over the batch; each kernel result is a list of (re, im) n x n planes. */
function perMatrix(
  x: ArrayImpl,
  outs: ShapedArray[],
  kernel: (re: Float64Array, im: Float64Array, n: number) => [Float64Array, Float64Array][],
): ArrayImpl[] {
  const n = x.shape[x.ndim - 1],
    nn = n * n,
    batch = nn === 0 ? 0 : x.size / nn;
  const [re, im] = partsOf(x);
  const planes = outs.map(() => [new Float64Array(batch * nn), new Float64Array(batch * nn)]);
  for (let b = 0; b < batch; b++) {
    const r = kernel(re.slice(b * nn, (b + 1) * nn), im.slice(b * nn, (b + 1) * nn), n);
    r.forEach(([pr, pi], k) => {
      planes[k][0].set(pr, b * nn);
      planes[k][1].set(pi, b * nn);
    });
  }
  return outs.map((o, k) =>
    isComplex(o.dtype) ? fromParts(o, planes[k][0], planes[k][1]) : fromNums(o, planes[k][0]),
  );
}

/** Operands with their vmapped axis moved first (an unbatched one broadcast along it). */
function batchFront(args: Array[], dims: (number | null | undefined)[]): Array[] {
  const k = dims.findIndex((d) => d != null);
  const size = args[k].shape[dims[k]!];
  return args.map((x, i) => {
    const ax = dims[i];
    return ax != null
      ? ops.moveaxis(x, ax, 0)
      : ops.broadcastInDim(
          x,
          [size, ...x.shape],
          x.shape.map((_, j) => j + 1),
        );
  });
}

/**
 * The shared rules of these interpreter-only primitives: vmap moves the batch axis first (their impls batch over
 * leading axes), and they take complex operands themselves (so the generic complex guard stays off).
 */
function batchedOverLeadingAxis<P extends Record<string, unknown>>(prim: Primitive<P>): void {
  (prim.rules as { complexGuarded?: boolean }).complexGuarded = true;
  prim.rules.vmap = (_axis, args, dims, params) => {
    const outs = ops.bindN(prim, batchFront(args, dims), params);
    return [outs, outs.map(() => 0)];
  };
}

const noDerivative = (name: string) => (): never => {
  throw new Error(
    `${name}: the Schur / Hessenberg decomposition has no derivative rule (JAX defines none either); do not differentiate through it`,
  );
};

export const schurP: Primitive<SchurParams> = new Primitive<SchurParams>(
  "schur",
  {
    abstractEval([x], { compute_schur_vectors: vecs }) {
      squareAval("schur", x);
      const o = new ShapedArray(x.shape, x.dtype);
      return vecs ? [o, o] : [o];
    },
    impl([x], { compute_schur_vectors: vecs }, outs) {
      const cplx = isComplex(x.dtype);
      return perMatrix(x, outs, (re, im, n) => {
        if (cplx) {
          const { t, z } = complexSchur({ re, im }, n);
          return [
            [t.re, t.im],
            [z.re, z.im],
          ].slice(0, vecs ? 2 : 1) as [Float64Array, Float64Array][];
        }
        const { t, z } = realSchur(re, n);
        return [
          [t, im],
          [z, im],
        ].slice(0, vecs ? 2 : 1) as [Float64Array, Float64Array][];
      });
    },
    jvp: noDerivative("schur"),
    missing: {
      lower: "runs on the reference interpreter (no ONNX kernel; the QR iteration is data-dependent)",
      transpose: "not linear",
    },
  },
  { multipleResults: true },
);
batchedOverLeadingAxis(schurP);

export const hessenbergP: Primitive<Record<string, unknown>> = new Primitive<Record<string, unknown>>(
  "hessenberg",
  {
    abstractEval([x]) {
      squareAval("hessenberg", x);
      const o = new ShapedArray(x.shape, x.dtype);
      return [o, o];
    },
    impl([x], _p, outs) {
      return perMatrix(x, outs, (re, im, n) => {
        const { h, q } = hessenbergQ({ re, im }, n);
        return [
          [h.re, h.im],
          [q.re, q.im],
        ];
      });
    },
    jvp: noDerivative("hessenberg"),
    missing: { lower: "runs on the reference interpreter (no ONNX kernel)", transpose: "not linear" },
  },
  { multipleResults: true },
);
batchedOverLeadingAxis(hessenbergP);

/** lax.linalg.schur(x, computeSchurVectors): [T, Z] with x = Z T Z^H (real Schur form for real x), or [T]. */
export function schur(x: Array, computeSchurVectors = true): Array[] {
  return ops.bindN(schurP, [x], { compute_schur_vectors: computeSchurVectors });
}
/** The Hessenberg form and its unitary: [H, Q] with x = Q H Q^H. */
export function hessenberg(x: Array): Array[] {
  return ops.bindN(hessenbergP, [x], {});
}

export interface TriuFunctionParams {
  kind: "sqrt" | "parlett";
  [k: string]: unknown;
}
/**
 * f of a (batch of) complex upper-triangular T given f on its diagonal [..., n] (sqrtm's and funm's recurrences):
 * [F, minden] with minden the smallest |denominator| per matrix (funm's error estimate).
 */
export const triuFunctionP: Primitive<TriuFunctionParams> = new Primitive<TriuFunctionParams>(
  "triu_function",
  {
    abstractEval([t, d]) {
      squareAval("triu_function", t);
      if (!isComplex(t.dtype) || d.dtype !== t.dtype || d.shape.join() !== t.shape.slice(0, -1).join())
        throw new TypeError(
          `triu_function: expected complex T [..., n, n] and its diagonal values [..., n] of the same dtype, got ${t.str()} and ${d.str()}`,
        );
      return [new ShapedArray(t.shape, t.dtype), new ShapedArray(t.shape.slice(0, -2), realDType(t.dtype))];
    },
    impl([t, d], { kind }, [fo, mo]) {
      const n = t.shape[t.ndim - 1],
        nn = n * n,
        batch = mo.size;
      const [tr, ti] = partsOf(t),
        [dr, di] = partsOf(d);
      const fr = new Float64Array(batch * nn),
        fi = new Float64Array(batch * nn),
        md = new Float64Array(batch);
      for (let b = 0; b < batch; b++) {
        const r = triuKernel(
          { re: tr.subarray(b * nn, (b + 1) * nn), im: ti.subarray(b * nn, (b + 1) * nn) },
          { re: dr.subarray(b * n, (b + 1) * n), im: di.subarray(b * n, (b + 1) * n) },
          n,
          kind,
        );
        fr.set(r.f.re, b * nn);
        fi.set(r.f.im, b * nn);
        md[b] = r.minden;
      }
      return [fromParts(fo, fr, fi), fromNums(mo, md)];
    },
    jvp: noDerivative("triu_function (sqrtm / funm)"),
    missing: {
      lower: "runs on the reference interpreter (complex outputs, a sequential recurrence)",
      transpose: "not linear",
    },
  },
  { multipleResults: true },
);
batchedOverLeadingAxis(triuFunctionP);
/** [F, minden]: f(T) for upper-triangular complex T from f's values on T's diagonal (kind "sqrt" or "parlett"). */
export function triuFunction(t: Array, diagValues: Array, kind: "sqrt" | "parlett"): Array[] {
  return ops.bindN(triuFunctionP, [t, diagValues], { kind });
}

/** scipy.linalg.rsf2csf's transformation: (T, Z) real Schur pair -> complex Schur pair (complex outputs). */
export const rsf2csfP: Primitive<Record<string, unknown>> = new Primitive<Record<string, unknown>>(
  "rsf2csf",
  {
    abstractEval([t, z]) {
      squareAval("rsf2csf", t);
      if (z.dtype !== t.dtype || z.shape.join() !== t.shape.join())
        throw new TypeError(`rsf2csf: T and Z must have the same shape and dtype, got ${t.str()} and ${z.str()}`);
      const o = new ShapedArray(t.shape, complexDType(t.dtype));
      return [o, o];
    },
    impl([t, z], _p, outs) {
      const n = t.shape[t.ndim - 1],
        nn = n * n,
        batch = nn === 0 ? 0 : t.size / nn;
      const [tr, ti] = partsOf(t),
        [zr, zi] = partsOf(z);
      const res = [0, 1].map(() => [new Float64Array(batch * nn), new Float64Array(batch * nn)]);
      for (let b = 0; b < batch; b++) {
        const sl = (a: Float64Array): Float64Array => a.slice(b * nn, (b + 1) * nn);
        const r = realToComplexSchur({ re: sl(tr), im: sl(ti) }, { re: sl(zr), im: sl(zi) }, n);
        [r.t, r.z].forEach((m, k) => {
          res[k][0].set(m.re, b * nn);
          res[k][1].set(m.im, b * nn);
        });
      }
      return outs.map((o, k) => fromParts(o, res[k][0], res[k][1]));
    },
    jvp: noDerivative("rsf2csf"),
    missing: {
      lower: "runs on the reference interpreter (complex outputs, data-dependent rotations)",
      transpose: "not linear",
    },
  },
  { multipleResults: true },
);
batchedOverLeadingAxis(rsf2csfP);
/** [T, Z] in complex Schur form from a real Schur pair. */
export function rsf2csf(t: Array, z: Array): Array[] {
  return ops.bindN(rsf2csfP, [t, z], {});
}
