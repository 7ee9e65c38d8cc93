/** @file ONNX lowerings (jaxts programs, installed from src/lowerings/index.ts) of the iterative special functions polygamma and random_gamma_grad, mirroring their float64 reference kernels. */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import { whileLoopFlat } from "../transforms/control-flow.js";
import { F64, anyTrue, isNan } from "./util.js";

const full64 = (like: Array, v: number): Array => ops.full(like.shape, v, F64);

// ---------------------------------------------------------------- polygamma
// Mirrors special-math.ts polygamma: for m >= 1 shift x up to >= 15 with psi^(m)(x) = psi^(m)(x+1) + (-1)^(m+1) m!/x^(m+1)
// (at most 15 shifts for x > 0, so the loop unrolls statically), then the asymptotic series; NaN for x <= 0 or NaN.
const BERNOULLI_2K = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6];
const factorial = (n: number): number => {
  let r = 1;
  for (let i = 2; i <= n; i++) r *= i;
  return r;
};
const SHIFT_TO = 15;

export function polygammaLowering([x0]: Array[], { m }: { m: number }): Array[] {
  if (m === 0) return [ops.digamma(x0)]; // the reference's m = 0 case is digamma, which lowers itself
  const x = ops.convert(x0, F64);
  const bad = ops.or(isNan(x), ops.le(x, 0));
  let xs = ops.select(bad, full64(x, 1), x);
  const mf = factorial(m);
  let acc = full64(x, 0);
  // x + k >= k after k rounded additions, so x > 0 reaches 15 within 15 steps
  for (let k = 0; k < SHIFT_TO; k++) {
    const lo = ops.lt(xs, SHIFT_TO);
    acc = ops.select(lo, ops.add(acc, ops.div(mf, ops.pow(xs, m + 1))), acc);
    xs = ops.select(lo, ops.add(xs, 1), xs);
  }
  // (m-1)!/x^m + m!/(2 x^(m+1)) + sum_k B_2k (2k+m-1)! / ((2k)! x^(2k+m))
  let s = ops.add(ops.div(factorial(m - 1), ops.pow(xs, m)), ops.div(mf, ops.mul(2, ops.pow(xs, m + 1))));
  for (let k = 1; k <= BERNOULLI_2K.length; k++) {
    s = ops.add(
      s,
      ops.div(BERNOULLI_2K[k - 1] * factorial(2 * k + m - 1), ops.mul(factorial(2 * k), ops.pow(xs, 2 * k + m))),
    );
  }
  const r = ops.mul(m % 2 === 1 ? 1 : -1, ops.add(acc, s));
  return [ops.convert(ops.select(bad, full64(x, NaN), r), x0.dtype, x0.weakType)];
}

// ---------------------------------------------------------------- random_gamma_grad
// Mirrors random.ts gammaSampleGrad: dx/da = -(dP/da)/(dP/dx) with dP/da from dual numbers (value, d/da) through the
// series of P (x < a + 1) or the Lentz continued fraction of Q. Both run as vectorized while loops over all elements:
// an element that converged (or takes the other branch) is frozen, and the loop stops when none is active or at the
// reference's cap of 1e5 terms.
const EPS = 1e-16;
const FPMIN = 1e-300;
const MAX_TERMS = 100000;

/** seriesP's dual sum (sum, d sum/da) for every element (active elements only; the others keep their start values). */
export function seriesSum(a: Array, x: Array, active: Array): [Array, Array] {
  const del0 = ops.div(1, a),
    del1 = ops.div(-1, ops.mul(a, a));
  const n0 = ops.full([], 0, "int32");
  const out = whileLoopFlat(
    (n, done) => ops.and(ops.lt(n, MAX_TERMS), anyTrue(ops.not(done))),
    (n, done, ap, d0, d1, s0, s1) => {
      const ap1 = ops.add(ap, 1);
      // del *= x/ap, d(x/ap)/da = -x/ap^2
      const r = ops.div(x, ap1),
        dr = ops.div(ops.neg(x), ops.mul(ap1, ap1));
      const e0 = ops.mul(d0, r),
        e1 = ops.add(ops.mul(d1, r), ops.mul(d0, dr));
      const t0 = ops.add(s0, e0),
        t1 = ops.add(s1, e1);
      const conv = ops.and(
        ops.lt(ops.abs(e0), ops.mul(ops.abs(t0), EPS)),
        ops.le(ops.abs(e1), ops.mul(ops.abs(t1), EPS)),
      );
      // a state the update maps to itself stays there in the reference too (e.g. a = inf): stop it early
      const fixed = ops.and(
        ops.and(ops.and(ops.eq(ap1, ap), ops.eq(e0, d0)), ops.and(ops.eq(e1, d1), ops.eq(t0, s0))),
        ops.eq(t1, s1),
      );
      const keep = (nw: Array, old: Array) => ops.select(done, old, nw);
      return [
        ops.add(n, 1),
        ops.or(done, ops.or(conv, fixed)),
        keep(ap1, ap),
        keep(e0, d0),
        keep(e1, d1),
        keep(t0, s0),
        keep(t1, s1),
      ];
    },
    [n0, ops.not(active), a, del0, del1, del0, del1],
  );
  return [out[5], out[6]];
}

/** contFracQ's dual continued fraction (h, d h/da) for every element (active elements only). */
export function contFrac(a: Array, x: Array, active: Array): [Array, Array] {
  const b0 = ops.sub(ops.add(x, 1), a);
  const d0 = ops.div(1, b0),
    d1 = ops.div(1, ops.mul(b0, b0));
  const c0 = full64(x, 1 / FPMIN),
    c1 = full64(x, 0);
  const out = whileLoopFlat(
    (i, done) => ops.and(ops.lt(i, MAX_TERMS), anyTrue(ops.not(done))),
    (i, done, b, c0, c1, d0, d1, h0, h1) => {
      // a_i = -i (i - a), d a_i/da = i; b_i = b_{i-1} + 2 with d b/da = -1
      const an0 = ops.mul(ops.neg(i), ops.sub(i, a)),
        an1 = i;
      const bn = ops.add(b, 2);
      let e0 = ops.add(ops.mul(an0, d0), bn);
      let e1 = ops.add(ops.add(ops.mul(an1, d0), ops.mul(an0, d1)), -1);
      const tinyD = ops.lt(ops.abs(e0), FPMIN);
      e0 = ops.select(tinyD, full64(x, FPMIN), e0);
      e1 = ops.select(tinyD, full64(x, 0), e1);
      let f0 = ops.add(bn, ops.div(an0, c0));
      let f1 = ops.add(-1, ops.div(ops.sub(ops.mul(an1, c0), ops.mul(an0, c1)), ops.mul(c0, c0)));
      const tinyC = ops.lt(ops.abs(f0), FPMIN);
      f0 = ops.select(tinyC, full64(x, FPMIN), f0);
      f1 = ops.select(tinyC, full64(x, 0), f1);
      const g0 = ops.div(1, e0),
        g1 = ops.div(ops.neg(e1), ops.mul(e0, e0));
      const del0 = ops.mul(g0, f0),
        del1 = ops.add(ops.mul(g1, f0), ops.mul(g0, f1));
      const k0 = ops.mul(h0, del0),
        k1 = ops.add(ops.mul(h1, del0), ops.mul(h0, del1));
      const conv = ops.and(ops.lt(ops.abs(ops.sub(del0, 1)), EPS), ops.lt(ops.abs(del1), EPS));
      const keep = (nw: Array, old: Array) => ops.select(done, old, nw);
      return [
        ops.add(i, 1),
        ops.or(done, conv),
        keep(bn, b),
        keep(f0, c0),
        keep(f1, c1),
        keep(g0, d0),
        keep(g1, d1),
        keep(k0, h0),
        keep(k1, h1),
      ];
    },
    [ops.full([], 1, F64), ops.not(active), b0, c0, c1, d0, d1, d0, d1],
  );
  return [out[7], out[8]];
}

export function gammaGradLowering([a0, x0]: Array[]): Array[] {
  const shape = a0.ndim === 0 ? x0.shape : a0.shape;
  const a = ops.broadcastInDim(ops.convert(a0, F64), shape, a0.ndim === 0 ? [] : shape.map((_, i) => i));
  const x = ops.broadcastInDim(ops.convert(x0, F64), shape, x0.ndim === 0 ? [] : shape.map((_, i) => i));
  const nanOut = ops.or(ops.or(isNan(a), isNan(x)), ops.le(a, 0));
  const zeroOut = ops.le(x, 0),
    infOut = ops.eq(x, Infinity);
  const valid = ops.not(ops.or(nanOut, ops.or(zeroOut, infOut)));
  // the loops run on harmless stand-ins where the answer is fixed by the checks above
  const as = ops.select(valid, a, full64(a, 1)),
    xs = ops.select(valid, x, full64(a, 1));
  const series = ops.lt(xs, ops.add(as, 1));
  // log(x^a e^-x / Gamma(a)) and its a-derivative log x - psi(a)
  const lp = ops.sub(ops.sub(ops.mul(as, ops.log(xs)), xs), ops.lgamma(as));
  const dlp = ops.sub(ops.log(xs), ops.digamma(as));
  const pre = ops.exp(lp);
  const dPdx = ops.div(pre, xs);
  const [s0, s1] = seriesSum(as, xs, ops.and(valid, series));
  const [h0, h1] = contFrac(as, xs, ops.and(valid, ops.not(series)));
  const dSeries = ops.mul(ops.add(s1, ops.mul(s0, dlp)), pre);
  const dCf = ops.neg(ops.mul(ops.add(h1, ops.mul(h0, dlp)), pre));
  const dPda = ops.select(series, dSeries, dCf);
  const inf = full64(a, Infinity);
  const atZero = ops.select(ops.eq(dPda, 0), full64(a, 0), ops.select(ops.gt(dPda, 0), ops.neg(inf), inf));
  let r = ops.select(ops.eq(dPdx, 0), atZero, ops.div(ops.neg(dPda), dPdx));
  r = ops.select(infOut, inf, r);
  r = ops.select(zeroOut, full64(a, 0), r);
  r = ops.select(nanOut, full64(a, NaN), r);
  return [ops.convert(r, a0.dtype, a0.weakType && x0.weakType)];
}
