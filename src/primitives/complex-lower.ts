/**
 * @file ONNX lowerings of equations with complex values (each the float tensor [..., 2] of its storage): structural
 * and additive primitives run their real rule on the two lanes, products and conversions are a few real nodes, and the
 * transcendental functions are traced float64 programs of real ops mirroring complex-kernels.ts (notes/complex.md).
 */
import type { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import { type DType, isComplex, realDType } from "../core/dtype.js";
import { type PrimitiveRules, getPrimitive } from "../core/primitive.js";
import { lowerFun } from "../compiler/context.js";
import { joinLanes, lanes } from "../compiler/lower-complex.js";
import { cast, filled } from "../compiler/lower-util.js";
import * as ops from "./bind-ops.js";
import { SEPARABLE, complexOf, imag, real } from "./complex.js";

type Rule = NonNullable<PrimitiveRules["lower"]>;
const partAval = (a: ShapedArray): ShapedArray => (isComplex(a.dtype) ? a.update({ dtype: realDType(a.dtype) }) : a);

function setRule(name: string, rule: Rule): void {
  getPrimitive(name).rules.lowerComplex = rule;
}

/** Structural moves and sums act on each lane alone: the real rule runs on the real lanes, then on the imaginary. */
function separable(name: string): Rule {
  return (ctx, inputs, params, inAvals, outAvals) => {
    const realRule = getPrimitive(name).rules.lower;
    if (!realRule) return ctx.unsupported(`${name} has no real lowering to apply to the lanes`);
    const split = inputs.map((x, i) =>
      isComplex(inAvals[i].dtype) ? lanes(ctx, x, inAvals[i].ndim) : ([x, x] as const),
    );
    const pa = inAvals.map(partAval),
      po = outAvals.map(partAval);
    const re = realRule(
      ctx,
      split.map((s) => s[0]),
      params,
      pa,
      po,
    );
    const im = realRule(
      ctx,
      split.map((s) => s[1]),
      params,
      pa,
      po,
    );
    return outAvals.map((o, k) => (isComplex(o.dtype) ? joinLanes(ctx, re[k], im[k], o.ndim) : re[k]));
  };
}
// the primitives complex.ts runs plane by plane lower the same way, lane by lane (scatter stays a host step)
const LOWERED_SEPARABLE = SEPARABLE.filter((n) => !["scatter", "add", "sub", "neg"].includes(n));
for (const n of LOWERED_SEPARABLE) setRule(n, separable(n));
// add, sub, neg act on both lanes at once: one node on the [..., 2] tensors (a rank-0 operand [2] broadcasts)
setRule("add", (ctx, [x, y]) => [ctx.op("Add", [x, y])]);
setRule("sub", (ctx, [x, y]) => [ctx.op("Sub", [x, y])]);
setRule("neg", (ctx, [x]) => [ctx.op("Neg", [x])]);

// (a + ib)(c + id) = (ac - bd) + i(ad + bc)
setRule("mul", (ctx, [x, y], _p, [ax, ay], [o]) => {
  const [a, b] = lanes(ctx, x, ax.ndim),
    [c, d] = lanes(ctx, y, ay.ndim);
  const m = (p: string, q: string) => ctx.op("Mul", [p, q]);
  return [joinLanes(ctx, ctx.op("Sub", [m(a, c), m(b, d)]), ctx.op("Add", [m(a, d), m(b, c)]), o.ndim)];
});
setRule("dot_general", (ctx, [x, y], params, [ax, ay], [o]) => {
  const realRule = getPrimitive("dot_general").rules.lower!;
  const q = { ...params, preferred_element_type: null };
  const [a, b] = lanes(ctx, x, ax.ndim),
    [c, d] = lanes(ctx, y, ay.ndim);
  const mm = (p: string, r: string) => realRule(ctx, [p, r], q, [partAval(ax), partAval(ay)], [partAval(o)])[0];
  return [joinLanes(ctx, ctx.op("Sub", [mm(a, c), mm(b, d)]), ctx.op("Add", [mm(a, d), mm(b, c)]), o.ndim)];
});
setRule("real", (ctx, [x], _p, [a]) => [lanes(ctx, x, a.ndim)[0]]);
setRule("imag", (ctx, [x], _p, [a]) => [lanes(ctx, x, a.ndim)[1]]);
setRule("conj", (ctx, [x], _p, [v]) => {
  const [a, b] = lanes(ctx, x, v.ndim);
  return [joinLanes(ctx, a, ctx.op("Neg", [b]), v.ndim)];
});
setRule("complex", (ctx, [x, y], _p, [ax, ay], [o]) => {
  // a rank-0 part broadcasts to the other's shape
  const full = (v: string, a: ShapedArray) =>
    a.ndim === o.ndim ? v : ctx.op("Expand", [v, ctx.ints(o.shape as number[])]);
  return [joinLanes(ctx, full(x, ax), full(y, ay), o.ndim)];
});
for (const [n, neq] of [
  ["eq", false],
  ["ne", true],
] as const) {
  setRule(n, (ctx, [x, y], _p, [ax, ay]) => {
    const [a, b] = lanes(ctx, x, ax.ndim),
      [c, d] = lanes(ctx, y, ay.ndim);
    const same = ctx.op("And", [ctx.op("Equal", [a, c]), ctx.op("Equal", [b, d])]);
    return [neq ? ctx.op("Not", [same]) : same];
  });
}
// complex -> complex casts both lanes; real -> complex has a zero imaginary lane; complex -> real keeps the real part
setRule("convert_element_type", (ctx, [x], params, [a], [o]) => {
  const to = o.dtype,
    from = a.dtype;
  if (isComplex(from) && isComplex(to))
    return [from === to ? x : ctx.op("Cast", [x], { to: to === "complex64" ? 1 : 11 })];
  if (isComplex(to)) {
    const part = realDType(to);
    const re = cast(ctx, x, from, part);
    return [joinLanes(ctx, re, filled(ctx, part, o.shape, 0), o.ndim)];
  }
  void params;
  return [cast(ctx, lanes(ctx, x, a.ndim)[0], realDType(from), to)];
});

// ------------------------------------------------------------------ traced float64 programs (complex-kernels.ts)
type Parts = readonly [Array, Array];
const F64: DType = "float64";
/** Lowers an elementwise complex function given as a float64 program on the operands' (re, im) parts. */
function traced(f: (zs: Parts[], params: Record<string, unknown>) => Parts | Array): Rule {
  return (ctx, inputs, params, inAvals, [o]) =>
    lowerFun(
      ctx,
      (...zs) => {
        const parts = zs.map((z): Parts => {
          const p: Parts = isComplex(z.dtype)
            ? [ops.convert(real(z), F64), ops.convert(imag(z), F64)]
            : [ops.convert(z, F64), ops.zerosLikeAval(z.aval.update({ dtype: F64 }))];
          // a rank-0 operand broadcasts to the result's shape
          return z.ndim === o.ndim ? p : [ops.broadcastInDim(p[0], o.shape, []), ops.broadcastInDim(p[1], o.shape, [])];
        });
        const r = f(parts, params);
        if (!isComplex(o.dtype)) return [ops.convert(r as Array, o.dtype)];
        const [re, im] = r as Parts;
        return [complexOf(ops.convert(re, realDType(o.dtype)), ops.convert(im, realDType(o.dtype)))];
      },
      inAvals,
      inputs,
    );
}
const k = (x: Array, v: number): Array => ops.scalarLike(x, v);
const mul = (x: Array, v: Array | number): Array => ops.mul(x, typeof v === "number" ? k(x, v) : v);
const add = (x: Array, v: Array | number): Array => ops.add(x, typeof v === "number" ? k(x, v) : v);
const sub = (x: Array, v: Array | number): Array => ops.sub(x, typeof v === "number" ? k(x, v) : v);
const div = (x: Array, v: Array | number): Array => ops.div(x, typeof v === "number" ? k(x, v) : v);
const isZero = (x: Array): Array => ops.eq(x, k(x, 0));
const cmul = ([a, b]: Parts, [c, d]: Parts): Parts => [sub(mul(a, c), mul(b, d)), add(mul(a, d), mul(b, c))];
/** hypot(x, y) without overflow: m sqrt(1 + (n/m)^2), m = max(|x|, |y|) (0 at 0, inf when either is inf). */
function hypot(x: Array, y: Array): Array {
  const ax = ops.abs(x),
    ay = ops.abs(y);
  const m = ops.max(ax, ay),
    n = ops.min(ax, ay);
  const safe = ops.select(ops.or(isZero(m), ops.eq(m, k(m, Infinity))), ops.fullLike(m, 1), m);
  const q = div(n, safe);
  const r = mul(ops.sqrt(add(mul(q, q), 1)), m);
  return ops.select(ops.eq(m, k(m, Infinity)), m, ops.select(isZero(m), m, r));
}
/** (a+ib)/(c+id) by Smith's algorithm (cdiv). */
function cdiv([a, b]: Parts, [c, d]: Parts): Parts {
  const big = ops.ge(ops.abs(c), ops.abs(d));
  const cs = ops.select(isZero(c), ops.fullLike(c, 1), c),
    ds = ops.select(isZero(d), ops.fullLike(d, 1), d);
  const r1 = div(d, cs),
    den1 = add(c, mul(d, r1));
  const r2 = div(c, ds),
    den2 = add(mul(c, r2), d);
  const re = ops.select(big, div(add(a, mul(b, r1)), den1), div(add(mul(a, r2), b), den2));
  const im = ops.select(big, div(sub(b, mul(a, r1)), den1), div(sub(mul(b, r2), a), den2));
  const dz = isZero(d);
  return [ops.select(dz, div(a, c), re), ops.select(dz, div(b, c), im)];
}
function cexp([x, y]: Parts): Parts {
  const e = ops.exp(x);
  // exp(x + 0i) stays real even when exp(x) is infinite
  const yz = isZero(y);
  return [ops.select(yz, e, mul(e, ops.cos(y))), ops.select(yz, y, mul(e, ops.sin(y)))];
}
const clog = ([x, y]: Parts): Parts => [ops.log(hypot(x, y)), ops.atan2(y, x)];
function csqrt([x, y]: Parts): Parts {
  const r = hypot(x, y);
  const pos = ops.ge(x, k(x, 0));
  const t = ops.sqrt(div(ops.select(pos, add(r, x), sub(r, x)), 2));
  const t2 = mul(t, 2);
  const negY = ops.or(ops.lt(y, k(y, 0)), ops.lt(div(k(y, 1), y), k(y, 0))); // y < 0 or y = -0
  const re = ops.select(pos, t, div(ops.abs(y), t2));
  const im = ops.select(pos, div(y, t2), ops.select(negY, ops.neg(t), t));
  const zero = ops.and(isZero(x), isZero(y));
  return [ops.select(zero, x, re), ops.select(zero, y, im)];
}
function ctanh([x, y]: Parts): Parts {
  const x2 = mul(x, 2),
    y2 = mul(y, 2);
  const den = add(ops.cosh(x2), ops.cos(y2));
  const large = ops.gt(ops.abs(x), k(x, 20));
  // |x| > 20: tanh -> sign(x), Im = 4 sin y cos y e^(-2|x|)
  const imL = mul(mul(mul(ops.sin(y), ops.cos(y)), ops.exp(mul(ops.abs(x), -2))), 4);
  return [ops.select(large, ops.sign(x), div(ops.sinh(x2), den)), ops.select(large, imL, div(ops.sin(y2), den))];
}
const UNARY: Record<string, (z: Parts) => Parts> = {
  exp: cexp,
  log: clog,
  sqrt: csqrt,
  tanh: ctanh,
  // tan z = -i tanh(iz)
  tan: ([x, y]) => {
    const [a, b] = ctanh([ops.neg(y), x]);
    return [b, ops.neg(a)];
  },
  sin: ([x, y]) => [mul(ops.sin(x), ops.cosh(y)), mul(ops.cos(x), ops.sinh(y))],
  cos: ([x, y]) => [mul(ops.cos(x), ops.cosh(y)), ops.neg(mul(ops.sin(x), ops.sinh(y)))],
  sinh: ([x, y]) => [mul(ops.sinh(x), ops.cos(y)), mul(ops.cosh(x), ops.sin(y))],
  cosh: ([x, y]) => [mul(ops.cosh(x), ops.cos(y)), mul(ops.sinh(x), ops.sin(y))],
  // expm1 = (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y
  expm1: ([x, y]) => {
    const s = ops.sin(div(y, 2));
    return [sub(mul(ops.expm1(x), ops.cos(y)), mul(mul(s, s), 2)), mul(ops.exp(x), ops.sin(y))];
  },
  // log1p = log1p(2x + x^2 + y^2) / 2 + i atan2(y, 1 + x)
  log1p: ([x, y]) => [div(ops.log1p(add(mul(x, add(x, 2)), mul(y, y))), 2), ops.atan2(y, add(x, 1))],
  sign: ([x, y]) => {
    const r = hypot(x, y);
    const z = isZero(r),
      rs = ops.select(z, ops.fullLike(r, 1), r);
    return [ops.select(z, ops.zerosLikeArray(x), div(x, rs)), ops.select(z, ops.zerosLikeArray(y), div(y, rs))];
  },
  rsqrt: (z) => {
    const s = csqrt(z);
    return cdiv([ops.fullLike(s[0], 1), ops.zerosLikeArray(s[0])], s);
  },
  logistic: ([x, y]) => {
    const [a, b] = cexp([ops.neg(x), ops.neg(y)]);
    return cdiv([ops.fullLike(a, 1), ops.zerosLikeArray(a)], [add(a, 1), b]);
  },
};
for (const [n, f] of Object.entries(UNARY))
  setRule(
    n,
    traced(([z]) => f(z)),
  );
setRule(
  "abs",
  traced(([[x, y]]) => hypot(x, y)),
);
setRule(
  "div",
  traced(([a, b]) => cdiv(a, b)),
);
// z^n by repeated squaring; 1/z^-n for negative n (cipow)
setRule(
  "integer_pow",
  traced(([z], p) => {
    const n = p.y as number;
    let acc: Parts | null = null,
      base = z;
    for (let e = Math.abs(n); e > 0; e >>= 1) {
      if (e & 1) acc = acc ? cmul(acc, base) : base;
      if (e > 1) base = cmul(base, base);
    }
    const one: Parts = [ops.fullLike(z[0], 1), ops.zerosLikeArray(z[0])];
    if (!acc) return one;
    return n < 0 ? cdiv(one, acc) : acc;
  }),
);
// a^b = exp(b log a); 0^b = 0 for Re b > 0, 0^0 = 1, else NaN; a positive real base with a real exponent stays real
setRule(
  "pow",
  traced(([[a, b], [c, d]]) => {
    const [er, ei] = cexp(cmul([c, d], clog([a, b])));
    const az = ops.and(isZero(a), isZero(b));
    const bz = ops.and(isZero(c), isZero(d));
    const zr = ops.select(
      bz,
      ops.fullLike(a, 1),
      ops.select(ops.gt(c, k(c, 0)), ops.zerosLikeArray(a), ops.fullLike(a, NaN)),
    );
    const zi = ops.select(ops.or(bz, ops.gt(c, k(c, 0))), ops.zerosLikeArray(a), ops.fullLike(a, NaN));
    const realCase = ops.and(ops.and(isZero(d), isZero(b)), ops.gt(a, k(a, 0)));
    return [
      ops.select(az, zr, ops.select(realCase, ops.pow(a, c), er)),
      ops.select(az, zi, ops.select(realCase, ops.zerosLikeArray(a), ei)),
    ];
  }),
);

// ------------------------------------------------------------------ fft: the native jaxts.Fft op or ONNX DFT (opset 20)
/** Switch for the native runner's jaxts.Fft / jaxts.Fft64 custom ops (native/fft-ops.cc); JAXTS_NATIVE_FFT=0 keeps ONNX DFT. */
export const fftNativeOptions = { enabled: process.env.JAXTS_NATIVE_FFT !== "0" };

setRule("fft", (ctx, [x], params, [a], [o]) => {
  const t = params.fft_type as string,
    L = params.fft_lengths as number[];
  const nd = a.ndim,
    first = nd - L.length;
  const part = realDType(isComplex(a.dtype) ? a.dtype : o.dtype);
  // the custom ops exist only in the native runner's sessions; portable compiles keep ONNX's DFT
  const native = fftNativeOptions.enabled && ctx.nativeLinalg === true;
  if (!native && ctx.opset < 20)
    return ctx.unsupported(`fft needs ONNX opset 20 (DFT with an axis input), the graph targets ${ctx.opset}`);
  // measured: ORT 1.30's float64 DFT is only accurate to ~2e-8 relative (single-precision twiddles)
  if (!native && part !== "float32") return ctx.unsupported("ONNX Runtime's float64 DFT is accurate to ~2e-8 only");
  const onnxDft = (v: string, axis: number, inverse: boolean, onesided = false) =>
    ctx.op("DFT", [v, "", ctx.constant("int64", [], [BigInt(axis)])], {
      inverse: inverse ? 1 : 0,
      onesided: onesided ? 1 : 0,
    });
  // the native op takes a real [..., n, 1] operand (RFFT's last axis) and then returns the n/2 + 1 one-sided bins
  const nativeDft = (v: string, axis: number, inverse: boolean) =>
    ctx.node(part === "float32" ? "Fft" : "Fft64", [v], { axis, inverse: inverse ? 1 : 0 }, 1, "jaxts")[0];
  const dft = native ? nativeDft : onnxDft;
  if (t === "FFT" || t === "IFFT") {
    let v = x;
    for (let ax = first; ax < nd; ax++) v = dft(v, ax, t === "IFFT");
    return [v];
  }
  if (t === "RFFT") {
    // the real input as [..., n, 1]; one-sided transform of the last axis, full ones of the others
    let v = dft(ctx.op("Unsqueeze", [x, ctx.ints([-1])]), nd - 1, false, true);
    for (let ax = first; ax < nd - 1; ax++) v = dft(v, ax, false);
    return [v];
  }
  // IRFFT: inverse transforms of the leading axes, then the last axis's full spectrum from its Hermitian half:
  // X[k] = conj(X[n - k]) for k > n/2, so the missing n - m entries are conj of Y[1 .. n - m] reversed
  let v = x;
  for (let ax = first; ax < nd - 1; ax++) v = dft(v, ax, true);
  const n = L[L.length - 1],
    m = a.shape[nd - 1],
    extra = n - m;
  if (extra > 0) {
    const ax = ctx.ints([nd - 1]);
    const mid = ctx.op("Slice", [v, ctx.ints([extra]), ctx.ints([0]), ax, ctx.ints([-1])]);
    const flip = ctx.constant(part, [2], [1, -1]);
    v = ctx.op("Concat", [v, ctx.op("Mul", [mid, flip])], { axis: nd - 1 });
  } else if (extra < 0) {
    v = ctx.op("Slice", [v, ctx.ints([0]), ctx.ints([n]), ctx.ints([nd - 1])]);
  }
  return [lanes(ctx, dft(v, nd - 1, true), nd)[0]];
});
