/** @file Composite float formulas for lowering rules where ONNX has no op or ORT's kernel is missing/inaccurate (log1p, expm1, logistic, float64 inverse trig and hyperbolics, erf family, lgamma, digamma, nextafter). */
import type { DType } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { ONNX_TYPE, rawCast, select } from "./lower-util.js";

type V = string | number;

/** A tiny expression builder over one float dtype: numbers become constants of that dtype. */
export class F {
  constructor(
    readonly ctx: LoweringContext,
    readonly d: DType,
  ) {}
  c(v: number): string {
    return this.ctx.scalar(this.d, v);
  }
  v(x: V): string {
    return typeof x === "number" ? this.c(x) : x;
  }
  private bin(op: string, a: V, b: V): string {
    return this.ctx.op(op, [this.v(a), this.v(b)]);
  }
  add(a: V, b: V): string {
    return this.bin("Add", a, b);
  }
  sub(a: V, b: V): string {
    return this.bin("Sub", a, b);
  }
  mul(a: V, b: V): string {
    return this.bin("Mul", a, b);
  }
  div(a: V, b: V): string {
    return this.bin("Div", a, b);
  }
  pow(a: V, b: V): string {
    return this.bin("Pow", a, b);
  }
  max(a: V, b: V): string {
    return this.bin("Max", a, b);
  }
  min(a: V, b: V): string {
    return this.bin("Min", a, b);
  }
  lt(a: V, b: V): string {
    return this.bin("Less", a, b);
  }
  le(a: V, b: V): string {
    return this.bin("LessOrEqual", a, b);
  }
  gt(a: V, b: V): string {
    return this.bin("Greater", a, b);
  }
  ge(a: V, b: V): string {
    return this.bin("GreaterOrEqual", a, b);
  }
  eq(a: V, b: V): string {
    return this.bin("Equal", a, b);
  }
  and(a: string, b: string): string {
    return this.ctx.op("And", [a, b]);
  }
  or(a: string, b: string): string {
    return this.ctx.op("Or", [a, b]);
  }
  not(a: string): string {
    return this.ctx.op("Not", [a]);
  }
  un(op: string, a: V): string {
    return this.ctx.op(op, [this.v(a)]);
  }
  neg(a: V): string {
    return this.un("Neg", a);
  }
  abs(a: V): string {
    return this.un("Abs", a);
  }
  exp(a: V): string {
    return this.un("Exp", a);
  }
  /** Log; float32 goes through float64 (ORT's float32 Log differs between its vector and scalar paths). */
  log(a: V): string {
    return this.d === "float32" ? via64(this.ctx, "Log", this.v(a)) : this.un("Log", a);
  }
  sin(a: V): string {
    return this.d === "float32" ? via64(this.ctx, "Sin", this.v(a)) : this.un("Sin", a);
  }
  cos(a: V): string {
    return this.d === "float32" ? via64(this.ctx, "Cos", this.v(a)) : this.un("Cos", a);
  }
  sqrt(a: V): string {
    return this.un("Sqrt", a);
  }
  floor(a: V): string {
    return this.un("Floor", a);
  }
  isnan(a: V): string {
    return this.un("IsNaN", a);
  }
  isinf(a: V): string {
    return this.un("IsInf", a);
  }
  where(c: string, a: V, b: V): string {
    // ORT's float Where only mangles a -0 taken from its first value operand; a literal there is safe
    if (typeof a === "number" && !Object.is(a, -0) && this.d !== "float16")
      return this.ctx.op("Where", [c, this.c(a), this.v(b)]);
    return select(this.ctx, c, this.v(a), this.v(b), this.d);
  }
  /** sum_i coeffs[i] x^(n-1-i) by Horner's rule (highest degree first). */
  horner(x: string, coeffs: readonly number[]): string {
    let p = this.c(coeffs[0]);
    for (let i = 1; i < coeffs.length; i++) p = this.add(this.mul(p, x), coeffs[i]);
    return p;
  }
  /** copysign(mag, sign of s) for mag >= 0 (negative zero counts as negative). */
  withSignOf(mag: string, s: string): string {
    return this.where(this.isNegative(s), this.neg(mag), mag);
  }
  /** s < 0 or s is -0. */
  isNegative(s: string): string {
    return this.or(this.lt(s, 0), this.and(this.eq(s, 0), this.lt(this.div(1, s), 0)));
  }
}

/** A float32 value through a float64 kernel, rounded back once (position-independent and nearly always correctly rounded). */
function via64(ctx: LoweringContext, op: string, x: string): string {
  return ctx.op("Cast", [ctx.op(op, [ctx.op("Cast", [x], { to: ONNX_TYPE.float64 })])], { to: ONNX_TYPE.float32 });
}

/**
 * Float ops whose ORT float32 kernels give different bits for the same input depending on its position
 * (vectorized body vs scalar tail): Log, Sin, Cos, Asin, Acos, Atan. For float32/16 inputs they run in float64
 * (kernel or composite) and round once, so eager, vmapped and jitted results agree.
 */
export function stableUnary(
  ctx: LoweringContext,
  op: "Log" | "Sin" | "Cos" | "Asin" | "Acos" | "Atan",
  x: string,
  d: DType,
): string {
  const composite = op === "Asin" ? asin64 : op === "Acos" ? acos64 : op === "Atan" ? atan64 : null;
  return viaDtype(ctx, [x], d, "float64", (m, [v]) => (composite ? composite(m, v) : m.un(op, v)));
}

/** Runs f on x cast to the compute dtype cd, casting the result back to d (rounding half precision once). */
export function viaDtype(
  ctx: LoweringContext,
  x: string[],
  d: DType,
  cd: DType,
  f: (m: F, xs: string[]) => string,
): string {
  const xs = x.map((v) => rawCast(ctx, v, d, cd));
  const y = f(new F(ctx, cd), xs);
  if (cd === ctx.repr(d)) return y;
  if (d === "bfloat16")
    return ctx.op("Cast", [ctx.op("Cast", [y], { to: ONNX_TYPE.bfloat16 })], { to: ONNX_TYPE.float32 });
  return ctx.op("Cast", [y], { to: ONNX_TYPE[d] });
}

// log1p(x) = x * log(u) / (u - 1) with u = 1 + x (Goldberg's trick; exact when u rounds to 1)
export function log1p(m: F, x: string): string {
  const u = m.add(x, 1);
  const r = m.where(m.eq(u, 1), x, m.mul(m.log(u), m.div(x, m.sub(u, 1))));
  return m.where(m.eq(u, Infinity), u, r);
}

// expm1(x) = (u - 1) * x / log(u) with u = exp(x) (Kahan's trick)
export function expm1(m: F, x: string): string {
  const u = m.exp(x),
    um1 = m.sub(u, 1);
  const r = m.where(m.eq(u, 1), x, m.where(m.eq(um1, -1), -1, m.div(m.mul(um1, x), m.log(u))));
  return m.where(m.eq(u, Infinity), u, r);
}

/** logistic(x) = 1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise (ORT's Sigmoid is a low-accuracy approximation). */
export function logistic(m: F, x: string): string {
  const e = m.exp(m.neg(m.abs(x)));
  const den = m.add(e, 1);
  return m.where(m.ge(x, 0), m.div(1, den), m.div(e, den));
}

/** Round half away from zero. */
export function roundAway(m: F, x: string): string {
  const a = m.abs(x),
    t = m.floor(a);
  const r = m.add(t, m.where(m.ge(m.sub(a, t), 0.5), 1, 0));
  return m.withSignOf(r, x);
}

/** cbrt(x) = sign(x) |x|^(1/3), refined by one Newton step y -= (y - a/y^2)/3. */
export function cbrt(m: F, x: string): string {
  const a = m.abs(x);
  const y0 = m.pow(a, 1 / 3);
  const y1 = m.sub(y0, m.div(m.sub(y0, m.div(a, m.mul(y0, y0))), 3));
  const special = m.or(m.eq(a, 0), m.isinf(a));
  return m.withSignOf(m.where(special, a, y1), x);
}

// atan for float64: fold |x| > 1 via atan(x) = pi/2 - atan(1/x), halve the angle three times with
// atan(t) = 2 atan(t / (1 + sqrt(1 + t^2))), then a Taylor series (|t| <= tan(pi/32) ~ 0.0985).
const ATAN_TERMS = 11;
export function atan64(m: F, x: string): string {
  const a = m.abs(x);
  const big = m.gt(a, 1);
  let t = m.where(big, m.div(1, a), a);
  for (let k = 0; k < 3; k++) t = m.div(t, m.add(1, m.sqrt(m.add(1, m.mul(t, t)))));
  const t2 = m.mul(t, t);
  const coeffs: number[] = [];
  for (let n = ATAN_TERMS - 1; n >= 0; n--) coeffs.push((n % 2 ? -1 : 1) / (2 * n + 1));
  const r = m.mul(m.mul(t, m.horner(t2, coeffs)), 8);
  const full = m.where(big, m.sub(Math.PI / 2, r), r);
  return m.where(m.isnan(x), x, m.withSignOf(full, x));
}

/** atan from basic ops (ORT's float32 Atan kernel is position-dependent and there is no float64 one). */
export const atan = atan64;

/** atan2(y, x) with the quadrant rules of Math.atan2 (signed zeros, infinities). */
export function atan2(m: F, y: string, x: string): string {
  const ay = m.abs(y),
    ax = m.abs(x);
  let base = atan(m, m.div(ay, ax));
  base = m.where(m.and(m.eq(ay, 0), m.eq(ax, 0)), 0, base);
  base = m.where(m.and(m.isinf(ay), m.isinf(ax)), Math.PI / 4, base);
  const left = m.isNegative(x);
  base = m.where(left, m.sub(Math.PI, base), base);
  const r = m.withSignOf(base, y);
  return m.where(m.or(m.isnan(x), m.isnan(y)), m.add(x, y), r);
}

export function asin64(m: F, x: string): string {
  return atan2(m, x, m.sqrt(m.mul(m.sub(1, x), m.add(1, x))));
}
export function acos64(m: F, x: string): string {
  return atan2(m, m.sqrt(m.mul(m.sub(1, x), m.add(1, x))), x);
}
export function tan64(m: F, x: string): string {
  return m.div(m.sin(x), m.cos(x));
}
export function sinh64(m: F, x: string): string {
  return m.mul(m.sub(expm1(m, x), expm1(m, m.neg(x))), 0.5);
}
export function cosh64(m: F, x: string): string {
  const e = m.exp(m.abs(x));
  return m.mul(m.add(e, m.div(1, e)), 0.5);
}
const LN2 = Math.LN2;
// asinh(x) = sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2))), or log(a) + ln 2 for huge a
export function asinh64(m: F, x: string): string {
  const a = m.abs(x);
  const huge = m.gt(a, 2 ** 28);
  const as = m.where(huge, 1, a);
  const small = log1p(m, m.add(as, m.div(m.mul(as, as), m.add(1, m.sqrt(m.add(1, m.mul(as, as)))))));
  const r = m.where(huge, m.add(m.log(a), LN2), small);
  return m.where(m.isnan(x), x, m.withSignOf(r, x));
}
// acosh(x) = log1p(t + sqrt(2t + t^2)) with t = x - 1, or log(x) + ln 2 for huge x
export function acosh64(m: F, x: string): string {
  const huge = m.gt(x, 2 ** 28);
  const t = m.sub(m.where(huge, 1, x), 1);
  const small = log1p(m, m.add(t, m.sqrt(m.add(m.mul(t, 2), m.mul(t, t)))));
  return m.where(huge, m.add(m.log(x), LN2), small);
}
// atanh(x) = sign(x) 0.5 log1p(2a / (1 - a))
export function atanh64(m: F, x: string): string {
  const a = m.abs(x);
  const r = m.mul(log1p(m, m.div(m.mul(a, 2), m.sub(1, a))), 0.5);
  return m.where(m.isnan(x), x, m.withSignOf(r, x));
}

// ---------------------------------------------------------------- erf family (float64)
const TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI);
const SQRT_PI = Math.sqrt(Math.PI);
const ERF_SERIES_TERMS = 43;
const ERFC_CF_DEPTH = 36;
const ERF_SERIES: number[] = (() => {
  // erf(x) = 2/sqrt(pi) x sum_n (-1)^n x^(2n) / (n! (2n+1)), highest degree first for Horner
  const c: number[] = [];
  let f = 1;
  for (let n = 0; n < ERF_SERIES_TERMS; n++) {
    if (n > 0) f *= n;
    c.push((n % 2 ? -1 : 1) / (f * (2 * n + 1)));
  }
  return c.reverse();
})();

/** erf(x) by its Maclaurin series (accurate for |x| < 2.5). */
function erfSeries(m: F, x: string): string {
  return m.mul(m.mul(x, m.horner(m.mul(x, x), ERF_SERIES)), TWO_OVER_SQRT_PI);
}
// erfc(a) for a >= 2.5: exp(-a^2)/sqrt(pi) / K, K = a + (1/2)/(a + 1/(a + (3/2)/(a + ...))) evaluated bottom-up
function erfcFraction(m: F, a: string): string {
  let t = a;
  for (let n = ERFC_CF_DEPTH; n >= 1; n--) t = m.add(a, m.div(n / 2, t));
  return m.div(m.exp(m.neg(m.mul(a, a))), m.mul(t, SQRT_PI));
}
export function erf64(m: F, x: string): string {
  const a = m.abs(x);
  const inner = m.lt(a, 2.5);
  const s = erfSeries(m, m.where(inner, x, 0));
  const c = erfcFraction(m, m.max(a, 2.5));
  const outer = m.withSignOf(m.sub(1, c), x);
  return m.where(inner, s, m.where(m.isnan(x), x, outer));
}
export function erfc64(m: F, x: string): string {
  const a = m.abs(x);
  const inner = m.lt(a, 2.5);
  const s = m.sub(1, erfSeries(m, m.where(inner, x, 0)));
  const c = erfcFraction(m, m.max(a, 2.5));
  const outer = m.where(m.lt(x, 0), m.sub(2, c), c);
  return m.where(inner, s, m.where(m.isnan(x), x, outer));
}

// ---------------------------------------------------------------- lgamma / digamma (float64)
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];
const HALF_LOG_2PI = 0.5 * Math.log(2 * Math.PI);

/** True where x is a non-positive integer (a pole of Gamma). */
function atPole(m: F, x: string): string {
  return m.and(m.le(x, 0), m.eq(m.floor(x), x));
}

// lgamma by the Lanczos approximation (g = 7) with the reflection Gamma(x) Gamma(1-x) = pi / sin(pi x) for x < 0.5
export function lgamma64(m: F, x: string): string {
  const reflect = m.lt(x, 0.5);
  const z = m.sub(m.where(reflect, m.sub(1, x), x), 1);
  let a = m.c(LANCZOS[0]);
  for (let i = 1; i < 9; i++) a = m.add(a, m.div(LANCZOS[i], m.add(z, i)));
  const t = m.add(z, 7.5);
  const lg = m.add(m.sub(m.add(m.mul(m.add(z, 0.5), m.log(t)), HALF_LOG_2PI), t), m.log(a));
  const refl = m.sub(m.log(m.div(Math.PI, m.abs(m.sin(m.mul(x, Math.PI))))), lg);
  const r = m.where(reflect, refl, lg);
  return m.where(m.or(atPole(m, x), m.isinf(x)), Infinity, r);
}

// digamma: recurrence psi(x) = psi(x+1) - 1/x up to x >= 15 (the series is then exact to f64), the asymptotic series, reflection for x < 0
export function digamma64(m: F, x: string): string {
  const reflect = m.lt(x, 0);
  let xr = m.where(reflect, m.sub(1, x), x);
  let r = m.c(0);
  for (let k = 0; k < 15; k++) {
    const lo = m.lt(xr, 15);
    r = m.sub(r, m.where(lo, m.div(1, xr), 0));
    xr = m.where(lo, m.add(xr, 1), xr);
  }
  const f = m.div(1, m.mul(xr, xr));
  // psi(x) ~ ln x - 1/2x - f (1/12 - f (1/120 - f (1/252 - f (1/240 - f 5/660)))), f = 1/x^2
  let s = m.sub(1 / 240, m.mul(f, 5 / 660));
  s = m.sub(1 / 252, m.mul(f, s));
  s = m.sub(1 / 120, m.mul(f, s));
  s = m.sub(1 / 12, m.mul(f, s));
  const val = m.sub(m.sub(m.add(r, m.log(xr)), m.div(0.5, xr)), m.mul(f, s));
  const px = m.mul(x, Math.PI);
  const refl = m.sub(val, m.div(Math.PI, m.div(m.sin(px), m.cos(px))));
  const out = m.where(reflect, refl, val);
  return m.where(atPole(m, x), NaN, out);
}

// ---------------------------------------------------------------- nextafter
/** nextafter(a, b) on float32 or float64 values by stepping the integer bit pattern. */
export function nextafter(m: F, a: string, b: string): string {
  const ctx = m.ctx;
  const it: DType = m.d === "float64" ? "int64" : "int32";
  const one = ctx.scalar(it, 1);
  const bits = ctx.op("BitCast", [a], { to: ONNX_TYPE[it] });
  const up = m.eq(m.gt(b, a), m.gt(a, 0));
  const stepped = ctx.op("Where", [up, ctx.op("Add", [bits, one]), ctx.op("Sub", [bits, one])]);
  const moved = ctx.op("BitCast", [stepped], { to: ONNX_TYPE[m.d] });
  const tiny = m.d === "float64" ? 5e-324 : 1.401298464324817e-45;
  const fromZero = m.where(m.gt(b, 0), tiny, -tiny);
  let r = m.where(m.eq(a, 0), fromZero, moved);
  r = m.where(m.eq(a, b), b, r);
  return m.where(m.or(m.isnan(a), m.isnan(b)), NaN, r);
}

// ---------------------------------------------------------------- erf_inv, replaying XLA's expansion bit for bit
/** The erf_inv polynomials (XLA's chlo.erf_inv; same values as src/primitives/erf-inv.ts), highest degree first. */
export interface ErfInvCoefficients {
  f32Lt5: readonly number[];
  f32Ge5: readonly number[];
  f64Lt625: readonly number[];
  f64Lt16: readonly number[];
  f64Ge16: readonly number[];
}

/**
 * float32 fused multiply-add p*w + c, correctly rounded: p*w is exact in float64, the float64 sum's
 * rounding error is recovered (TwoSum) and used to break a float32 tie the float64 sum may have hit.
 */
function fmaF32(ctx: LoweringContext, p: string, w: string, c: string): string {
  const m = new F(ctx, "float64");
  const to32 = (v: string) => ctx.op("Cast", [v], { to: ONNX_TYPE.float32 });
  const to64 = (v: string) => ctx.op("Cast", [v], { to: ONNX_TYPE.float64 });
  const prod = m.mul(to64(p), to64(w)),
    c64 = to64(c);
  const s = m.add(prod, c64);
  const bb = m.sub(s, prod);
  const err = m.add(m.sub(prod, m.sub(s, bb)), m.sub(c64, bb));
  const r = to32(s),
    rr = to64(r);
  const other = to32(m.add(rr, m.mul(m.sub(s, rr), 2)));
  const o64 = to64(other);
  const tie = m.and(m.and(m.not(m.eq(err, 0)), m.not(m.eq(o64, rr))), m.eq(m.sub(s, rr), m.div(m.sub(o64, rr), 2)));
  const pickOther = m.eq(m.gt(err, 0), m.gt(o64, rr));
  return select(ctx, m.and(tie, pickOther), other, r, "float32");
}

/** erf_inv as XLA expands it: float32 with fused Horner steps, or float64 with three regimes; |x| == 1 gives x * inf. */
export function erfInvXla(ctx: LoweringContext, x: string, d: "float32" | "float64", k: ErfInvCoefficients): string {
  const m = new F(ctx, d);
  const m64 = new F(ctx, "float64");
  // w = -log1p(-x^2), log1p evaluated in float64 and rounded once (like Math.log1p rounded to the target precision)
  const mx2 = m.mul(x, m.neg(x));
  const l = log1p(m64, rawCast(ctx, mx2, d, "float64"));
  const w = m.neg(rawCast(ctx, l, "float64", d));
  const inf = m.where(m.eq(m.abs(x), 1), m.mul(x, Infinity), 0);
  const atOne = m.eq(m.abs(x), 1);
  if (d === "float32") {
    const lt = m.lt(w, 5);
    const ws = m.where(lt, m.sub(w, 2.5), m.sub(m.sqrt(w), 3));
    const coef = (i: number) => m.where(lt, k.f32Lt5[i], k.f32Ge5[i]);
    let p = coef(0);
    for (let i = 1; i < 9; i++) p = fmaF32(ctx, p, ws, coef(i));
    return m.where(atOne, inf, m.mul(p, x));
  }
  const lt625 = m.lt(w, 6.25),
    lt16 = m.lt(w, 16);
  const coef = (i: number) => {
    let c: string = m.c(k.f64Lt625[i]);
    if (i < 19) c = m.where(lt625, c, k.f64Lt16[i]);
    if (i < 17) c = m.where(lt16, c, k.f64Ge16[i]);
    return c;
  };
  const sq = m.sqrt(w);
  const ws = m.where(lt625, m.sub(w, 3.125), m.sub(sq, m.where(lt16, 3.25, 5)));
  let p = coef(0);
  for (let i = 1; i < 17; i++) p = m.add(coef(i), m.mul(p, ws));
  for (let i = 17; i < 19; i++) p = m.where(lt16, m.add(coef(i), m.mul(p, ws)), p);
  for (let i = 19; i < 23; i++) p = m.where(lt625, m.add(coef(i), m.mul(p, ws)), p);
  return m.where(atOne, inf, m.mul(p, x));
}
