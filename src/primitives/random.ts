/** @file Random-number primitives: threefry2x32 (the Threefry-2x32 block function on uint32 arrays) and random_gamma_grad (d sample / d alpha of a Gamma(alpha) draw). */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { isFloat } from "../core/dtype.js";
import { type BDim, Primitive, Zero } from "../core/primitive.js";
import { broadcastShapes, prod, stridesOf } from "../core/shape.js";
import { bind } from "../core/trace.js";
import { threefry2x32Indexed } from "./threefry-kernel.js";
import { fromNums, nums } from "./ref-util.js";
import { contFracQ, logPrefactor, seriesP } from "./special-math-incomplete.js";
import { vmapElementwise } from "./elementwise.js";
import * as ops from "./ops.js";
import { threefry2x32 as lowerThreefry } from "../compiler/lower-sort.js";

/** Element strides of `shape` broadcast (NumPy rules, leading dims padded) into `out`: 0 along broadcast dims. */
function broadcastStrides(shape: readonly number[], out: readonly number[]): number[] {
  const st = stridesOf(shape);
  const off = out.length - shape.length;
  return out.map((_, i) => (i < off || shape[i - off] === 1 ? 0 : st[i - off]));
}

/** Flat source offsets of every element of `out` for an operand of `shape` broadcast into it. */
function broadcastOffsets(shape: readonly number[], out: readonly number[]): Int32Array | null | "first" {
  if (shape.length === out.length && shape.every((d, i) => d === out[i])) return null;
  if (prod(shape) === 1) return "first";
  const n = prod(out),
    st = broadcastStrides(shape, out),
    nd = out.length;
  const offs = new Int32Array(n);
  const idx = new globalThis.Array<number>(nd).fill(0);
  let o = 0;
  for (let k = 0; k < n; k++) {
    offs[k] = o;
    for (let d = nd - 1; d >= 0; d--) {
      idx[d]++;
      o += st[d];
      if (idx[d] < out[d]) break;
      o -= st[d] * out[d];
      idx[d] = 0;
    }
  }
  return offs;
}

/**
 * threefry2x32(k0, k1, x0, x1) -> (y0, y1): the 20-round Threefry-2x32 block function applied
 * elementwise with key (k0, k1) to the counter pairs (x0, x1). All operands are uint32 and
 * broadcast together with NumPy rules (JAX binds it with scalar key words and shaped counters).
 */
export const threefry2x32P: Primitive = new Primitive(
  "threefry2x32",
  {
    abstractEval(avals) {
      if (avals.length !== 4)
        throw new TypeError(`threefry2x32 takes 4 operands (k0, k1, x0, x1), got ${avals.length}`);
      const bad = avals.filter((a) => a.dtype !== "uint32");
      if (bad.length)
        throw new TypeError(
          `Arguments to threefry2x32 must have uint32 type, got ${avals.map((a) => a.str()).join(", ")}`,
        );
      const shape = broadcastShapes("threefry2x32", ...avals.map((a) => a.shape));
      const out = new ShapedArray(shape, "uint32", false);
      return [out, out];
    },
    impl(args, _params, [o0, o1]) {
      const offs = args.map((a) => broadcastOffsets(a.shape, o0.shape));
      const [k0, k1, x0, x1] = args.map((a) => a.buffer as Uint32Array);
      const [y0, y1] = threefry2x32Indexed(k0, k1, x0, x1, offs, o0.size);
      return [new ArrayImpl(o0, y0), new ArrayImpl(o1, y1)];
    },
    // integer outputs: the tangents are symbolic zeros
    jvp(primals) {
      const outs = bind(threefry2x32P, primals);
      return [outs, outs.map((o) => new Zero(o.aval))];
    },
    // elementwise with broadcasting: batched operands get their batch axis in front, padded to the output rank
    vmap(axis, args, dims) {
      const ex = args.map((a, i) => (dims[i] === null ? a.shape : a.shape.filter((_, k) => k !== dims[i])));
      const outEx = broadcastShapes("threefry2x32", ...ex);
      const xs = args.map((a, i) => {
        if (dims[i] === null) return a;
        const m = ops.moveaxis(a, dims[i]!, 0);
        return ops.reshape(m, [
          axis.size,
          ...new globalThis.Array<number>(outEx.length - ex[i].length).fill(1),
          ...ex[i],
        ]);
      });
      const outs = bind(threefry2x32P, xs);
      return [outs, outs.map((): BDim => 0)];
    },
    missing: {
      transpose: "threefry2x32 has integer operands and outputs, so it is never linear",
    },
    lower: (ctx, [k0, k1, x0, x1], _p, _a, [o]) => lowerThreefry(ctx, k0, k1, x0, x1, o),
  },
  { exactOnScalars: true, multipleResults: true },
);

/** Binds threefry2x32 on (k0, k1, x0, x1): returns [y0, y1] of the broadcast shape. */
export function threefry2x32(k0: Array, k1: Array, x0: Array, x1: Array): [Array, Array] {
  const [y0, y1] = bind(threefry2x32P, [k0, k1, x0, x1]);
  return [y0, y1];
}

// ---------------------------------------------------------------- random_gamma_grad
// d sample / d alpha for sample ~ Gamma(alpha, 1), by implicit differentiation of the CDF
// P(alpha, x) = u held fixed: dx/dalpha = -(dP/dalpha) / (dP/dx), with dP/dx = x^(alpha-1) e^-x / Gamma(alpha).
// dP/dalpha is computed in float64 by forward-mode dual numbers through the series of P (x < alpha + 1)
// or the Lentz continued fraction of Q = 1 - P (otherwise).

/** d x / d a for x a Gamma(a, 1) sample (float64 scalar math). */
export function gammaSampleGrad(a: number, x: number): number {
  if (Number.isNaN(a) || Number.isNaN(x) || a <= 0) return NaN;
  if (x <= 0) return 0;
  if (x === Infinity) return Infinity;
  const [lp] = logPrefactor(a, x);
  const dPdx = Math.exp(lp) / x; // x^(a-1) e^-x / Gamma(a)
  let dPda: number;
  if (x < a + 1) dPda = seriesP(a, x)[1];
  else dPda = -contFracQ(a, x)[1];
  if (dPdx === 0) return dPda === 0 ? 0 : dPda > 0 ? -Infinity : Infinity;
  return -dPda / dPdx;
}

/** random_gamma_grad(a, x): d x / d a of Gamma(a, 1) samples x, elementwise (lax.random_gamma_grad). */
export const randomGammaGradP: Primitive = new Primitive("random_gamma_grad", {
  abstractEval([a, x]) {
    if (a.dtype !== x.dtype || !isFloat(a.dtype))
      throw new TypeError(
        `random_gamma_grad requires two operands of the same floating dtype, got ${a.str()} and ${x.str()}`,
      );
    if (a.shape.join() !== x.shape.join() && a.ndim !== 0 && x.ndim !== 0)
      throw new TypeError(`random_gamma_grad requires operands of the same shape, got ${a.str()} and ${x.str()}`);
    return [new ShapedArray(a.ndim === 0 ? x.shape : a.shape, a.dtype, a.weakType && x.weakType)];
  },
  impl([a, x], _p, [out]) {
    let av = nums(a),
      xv = nums(x);
    if (av.length !== out.size) av = new Float64Array(out.size).fill(av[0]);
    if (xv.length !== out.size) xv = new Float64Array(out.size).fill(xv[0]);
    const r = new Float64Array(out.size);
    for (let i = 0; i < r.length; i++) r[i] = gammaSampleGrad(av[i], xv[i]);
    return [fromNums(out, r)];
  },
  missing: {
    jvp: "JAX defines no derivative of random_gamma_grad either (second derivatives of gamma samples)",
    transpose: "not linear",
    lower:
      "iterative series / continued fraction with data-dependent trip counts (up to 1e5 terms); runs on the reference interpreter",
  },
});
randomGammaGradP.rules.vmap = vmapElementwise(randomGammaGradP);

/** lax.random_gamma_grad(a, x). */
export function randomGammaGrad(a: Array, x: Array): Array {
  return bind(randomGammaGradP, [a, x])[0];
}
