/** @file ONNX lowerings (jaxts programs, installed from src/lowerings/index.ts) of igamma, igammac, igamma_grad_a, regularized_incomplete_beta, bessel_i0e, bessel_i1e and zeta, mirroring their float64 references in src/primitives/special-math-incomplete.ts. */
import type { Array } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import {
  BESSEL_ASYMPTOTIC_TERMS,
  BESSEL_SERIES_TERMS,
  BESSEL_SPLIT,
  BETA_MAX_TERMS,
  ZETA_SHIFT,
  ZETA_TAIL,
} from "../primitives/special-math-incomplete.js";
import { whileLoopFlat } from "../transforms/control-flow.js";
import { contFrac, seriesSum } from "./special.js";
import { F64, anyTrue, isNan } from "./util.js";

const k64 = (like: Array, v: number): Array => ops.full(like.shape, v, F64);
const or = (...bs: Array[]): Array => bs.reduce((p, b) => ops.or(p, b));
const and = (...bs: Array[]): Array => bs.reduce((p, b) => ops.and(p, b));

/** The operands in float64, broadcast to the output shape (rank-0 operands broadcast, as the primitives allow). */
function operands64(xs: Array[]): Array[] {
  const shape = (xs.find((x) => x.ndim !== 0) ?? xs[0]).shape;
  return xs.map((x) => ops.broadcastInDim(ops.convert(x, F64), shape, x.ndim === 0 ? [] : shape.map((_, i) => i)));
}
/** The float64 result rounded to the operands' dtype (weak when every operand is). */
const back = (r: Array, xs: Array[]): Array =>
  ops.convert(
    r,
    xs[0].dtype,
    xs.every((x) => x.weakType),
  );

// ---------------------------------------------------------------- incomplete gamma
/**
 * The shared kernel on valid elements (a > 0, 0 < x < inf, a < inf): P and dP/da from the dual series where
 * x < a + 1, Q and dQ/da from the dual continued fraction elsewhere (random_gamma_grad's loops, src/lowerings/special.ts).
 */
function igammaKernel(a: Array, x: Array, valid: Array): { series: Array; value: Array; grad: Array } {
  const as = ops.select(valid, a, k64(a, 1)),
    xs = ops.select(valid, x, k64(a, 1));
  const series = ops.lt(xs, ops.add(as, 1));
  const lp = ops.sub(ops.sub(ops.mul(as, ops.log(xs)), xs), ops.lgamma(as));
  const dlp = ops.sub(ops.log(xs), ops.digamma(as));
  const pre = ops.exp(lp);
  const [s0, s1] = seriesSum(as, xs, ops.and(valid, series));
  const [h0, h1] = contFrac(as, xs, ops.and(valid, ops.not(series)));
  const v0 = ops.select(series, s0, h0),
    v1 = ops.select(series, s1, h1);
  return { series, value: ops.mul(v0, pre), grad: ops.mul(ops.add(v1, ops.mul(v0, dlp)), pre) };
}

function igammaCommon(a: Array, x: Array) {
  const nan = or(isNan(a), isNan(x), ops.lt(x, 0), ops.lt(a, 0));
  const domain = or(nan, and(ops.eq(a, 0), ops.eq(x, 0)), and(ops.eq(a, Infinity), ops.eq(x, Infinity)));
  const xZero = ops.eq(x, 0),
    xInf = ops.eq(x, Infinity),
    aInf = ops.eq(a, Infinity),
    aZero = ops.eq(a, 0);
  const valid = ops.not(or(domain, xZero, xInf, aInf, aZero));
  return { domain, xZero, xInf, aInf, aZero, valid };
}

function igammaOrC(upper: boolean, [a0, x0]: Array[]): Array[] {
  const [a, x] = operands64([a0, x0]);
  const e = igammaCommon(a, x);
  const k = igammaKernel(a, x, e.valid);
  const lo = upper ? 0 : 1; // the value at x = inf / a = 0 (P: 1, Q: 0)
  const own = upper ? ops.not(k.series) : k.series;
  let r = ops.select(own, k.value, ops.sub(1, k.value));
  r = ops.select(e.aZero, k64(a, lo), r);
  r = ops.select(e.aInf, k64(a, 1 - lo), r);
  r = ops.select(e.xInf, k64(a, lo), r);
  r = ops.select(e.xZero, k64(a, 1 - lo), r);
  r = ops.select(e.domain, k64(a, NaN), r);
  return [back(r, [a0, x0])];
}

export const igammaLowering = (xs: Array[]): Array[] => igammaOrC(false, xs);
export const igammacLowering = (xs: Array[]): Array[] => igammaOrC(true, xs);

export function igammaGradALowering([a0, x0]: Array[]): Array[] {
  const [a, x] = operands64([a0, x0]);
  const nan = or(isNan(a), isNan(x), ops.le(a, 0), ops.lt(x, 0));
  const zero = or(ops.eq(x, 0), ops.eq(x, Infinity), ops.eq(a, Infinity));
  const k = igammaKernel(a, x, ops.not(ops.or(nan, zero)));
  let r = ops.select(k.series, k.grad, ops.neg(k.grad));
  r = ops.select(zero, k64(a, 0), r);
  r = ops.select(nan, k64(a, NaN), r);
  return [back(r, [a0, x0])];
}

// ---------------------------------------------------------------- regularized incomplete beta
const BETA_EPS = 1e-16,
  BETA_TINY = 1e-300;

/** betaContFrac's modified Lentz loop for every element at once; converged (or inactive) elements are frozen. */
function betaContFracProgram(a: Array, b: Array, x: Array, active: Array): Array {
  const fix = (v: Array): Array => ops.select(ops.lt(ops.abs(v), BETA_TINY), k64(v, BETA_TINY), v);
  const d0 = ops.div(1, fix(ops.sub(1, ops.div(ops.mul(ops.add(a, b), x), ops.add(a, 1)))));
  const out = whileLoopFlat(
    (m, done) => ops.and(ops.le(m, BETA_MAX_TERMS), anyTrue(ops.not(done))),
    (m, done, c, d, h) => {
      const m2 = ops.mul(m, 2);
      let aa = ops.div(ops.mul(ops.mul(m, ops.sub(b, m)), x), ops.mul(ops.sub(ops.add(a, m2), 1), ops.add(a, m2)));
      let dn = ops.div(1, fix(ops.add(1, ops.mul(aa, d))));
      let cn = fix(ops.add(1, ops.div(aa, c)));
      let hn = ops.mul(h, ops.mul(dn, cn));
      aa = ops.div(
        ops.mul(ops.mul(ops.neg(ops.add(a, m)), ops.add(ops.add(a, b), m)), x),
        ops.mul(ops.add(a, m2), ops.add(ops.add(a, m2), 1)),
      );
      dn = ops.div(1, fix(ops.add(1, ops.mul(aa, dn))));
      cn = fix(ops.add(1, ops.div(aa, cn)));
      const del = ops.mul(dn, cn);
      hn = ops.mul(hn, del);
      const conv = ops.lt(ops.abs(ops.sub(del, 1)), BETA_EPS);
      const keep = (nw: Array, old: Array) => ops.select(done, old, nw);
      return [ops.add(m, 1), ops.or(done, conv), keep(cn, c), keep(dn, d), keep(hn, h)];
    },
    [ops.full([], 1, F64), ops.not(active), k64(x, 1), d0, d0],
  );
  return out[4];
}

export function betaincLowering([a0, b0, x0]: Array[]): Array[] {
  const [a, b, x] = operands64([a0, b0, x0]);
  const aZero = ops.or(ops.eq(a, 0), ops.eq(b, Infinity)),
    bZero = ops.or(ops.eq(b, 0), ops.eq(a, Infinity));
  const nan = or(
    isNan(a),
    isNan(b),
    isNan(x),
    ops.lt(a, 0),
    ops.lt(b, 0),
    ops.lt(x, 0),
    ops.gt(x, 1),
    ops.and(aZero, bZero),
  );
  const one = ops.or(ops.and(aZero, ops.ne(x, 0)), ops.and(bZero, ops.eq(x, 1)));
  const zero = ops.or(ops.and(bZero, ops.ne(x, 1)), ops.and(aZero, ops.eq(x, 0)));
  const valid = ops.not(or(nan, one, zero));
  const as = ops.select(valid, a, k64(a, 1)),
    bs = ops.select(valid, b, k64(a, 1)),
    xs = ops.select(valid, x, k64(a, 0.5));
  const direct = ops.lt(xs, ops.div(ops.add(as, 1), ops.add(ops.add(as, bs), 2)));
  const p = ops.select(direct, as, bs),
    q = ops.select(direct, bs, as),
    y = ops.select(direct, xs, ops.sub(1, xs));
  const lbeta = ops.sub(ops.add(ops.lgamma(p), ops.lgamma(q)), ops.lgamma(ops.add(p, q)));
  const pre = ops.div(ops.exp(ops.sub(ops.add(ops.mul(p, ops.log(y)), ops.mul(q, ops.log1p(ops.neg(y)))), lbeta)), p);
  const r0 = ops.mul(pre, betaContFracProgram(p, q, y, valid));
  let r = ops.select(direct, r0, ops.sub(1, r0));
  r = ops.select(zero, k64(a, 0), r);
  r = ops.select(one, k64(a, 1), r);
  r = ops.select(nan, k64(a, NaN), r);
  return [back(r, [a0, b0, x0])];
}

// ---------------------------------------------------------------- bessel_i0e / bessel_i1e
/** scaledBesselI of the reference for x = |x0| >= 0, both branches unrolled (fixed term counts) and selected. */
function scaledBesselIProgram(nu: 0 | 1, x: Array): Array {
  const small = ops.le(x, BESSEL_SPLIT);
  const xs = ops.select(small, x, k64(x, 1)),
    xl = ops.select(small, k64(x, 2 * BESSEL_SPLIT), x);
  const q = ops.div(ops.mul(xs, xs), 4);
  let t = nu === 0 ? k64(x, 1) : ops.div(xs, 2);
  let s = t;
  for (let k = 1; k <= BESSEL_SERIES_TERMS; k++) {
    t = ops.mul(t, ops.div(q, k * (k + nu)));
    s = ops.add(s, t);
  }
  const series = ops.mul(s, ops.exp(ops.neg(xs)));
  let u = k64(x, 1),
    v = k64(x, 1);
  for (let k = 1; k <= BESSEL_ASYMPTOTIC_TERMS; k++) {
    u = ops.mul(u, ops.div(-(4 * nu * nu - (2 * k - 1) ** 2), ops.mul(8 * k, xl)));
    v = ops.add(v, u);
  }
  const asym = ops.div(v, ops.sqrt(ops.mul(2 * Math.PI, xl)));
  const r = ops.select(small, series, asym);
  return ops.select(ops.eq(x, Infinity), k64(x, 0), r);
}

export function besselI0eLowering([x0]: Array[]): Array[] {
  const x = ops.convert(x0, F64);
  const r = scaledBesselIProgram(0, ops.abs(x));
  return [ops.convert(ops.select(isNan(x), x, r), x0.dtype, x0.weakType)];
}

export function besselI1eLowering([x0]: Array[]): Array[] {
  const x = ops.convert(x0, F64);
  const r = scaledBesselIProgram(1, ops.abs(x));
  const signed = ops.select(ops.lt(x, 0), ops.neg(r), r);
  return [ops.convert(ops.select(isNan(x), x, signed), x0.dtype, x0.weakType)];
}

// ---------------------------------------------------------------- zeta
export function zetaLowering([x0, q0]: Array[]): Array[] {
  const [x, q] = operands64([x0, q0]);
  const qInt = ops.eq(q, ops.floor(q)),
    xInt = ops.eq(x, ops.floor(x));
  const nan = or(isNan(x), isNan(q), ops.lt(x, 1), and(ops.le(q, 0), ops.not(qInt), ops.not(xInt)));
  const pole = ops.or(ops.eq(x, 1), ops.and(ops.le(q, 0), qInt));
  const xInf = ops.eq(x, Infinity);
  const valid = ops.not(or(nan, pole, xInf));
  const xs = ops.select(valid, x, k64(x, 2)),
    qs = ops.select(valid, q, k64(x, ZETA_SHIFT));
  // sum (q + k)^-x while q + k < 9, element by element
  const nx = ops.neg(xs);
  const [, w, s0] = whileLoopFlat(
    (_i, w) => anyTrue(ops.lt(w, ZETA_SHIFT)),
    (i, w, s) => {
      const lo = ops.lt(w, ZETA_SHIFT);
      return [ops.add(i, 1), ops.select(lo, ops.add(w, 1), w), ops.select(lo, ops.add(s, ops.pow(w, nx)), s)];
    },
    [ops.full([], 0, "int32"), qs, k64(x, 0)],
  );
  let s = ops.add(ops.add(s0, ops.div(ops.pow(w, ops.sub(1, xs)), ops.sub(xs, 1))), ops.mul(0.5, ops.pow(w, nx)));
  let fac = ops.mul(xs, ops.pow(w, ops.sub(nx, 1)));
  const w2 = ops.mul(w, w);
  for (let j = 0; j < ZETA_TAIL.length; j++) {
    s = ops.add(s, ops.mul(ZETA_TAIL[j], fac));
    fac = ops.mul(fac, ops.div(ops.mul(ops.add(xs, 2 * j + 1), ops.add(xs, 2 * j + 2)), w2));
  }
  let r = s;
  const atInf = ops.select(ops.eq(q, 1), k64(x, 1), ops.select(ops.gt(q, 1), k64(x, 0), k64(x, Infinity)));
  r = ops.select(xInf, atInf, r);
  r = ops.select(pole, k64(x, Infinity), r);
  r = ops.select(nan, k64(x, NaN), r);
  return [back(r, [x0, q0])];
}
