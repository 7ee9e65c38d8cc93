/**
 * @file Complex numbers: the real/imag/conj/complex primitives, and the complex rules of existing primitives
 * (interleaved (re, im) storage; structural and additive primitives run on the two planes, the rest on complex kernels).
 */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { fromNumbers, joinComplex, splitComplex, toFloat64 } from "../core/convert.js";
import { type DType, allocate, complexDType, isComplex, isFloat, realDType } from "../core/dtype.js";
import { type Params, Primitive, type PrimitiveRules, UndefinedPrimal, Zero, getPrimitive } from "../core/primitive.js";
import { shapesEqual } from "../core/shape.js";
import * as ops from "./bind-ops.js";
import { vmapElementwise } from "./elementwise.js";
import * as K from "./complex-kernels.js";

const LOWER_NOTE = "its operands are complex: lowered by its lowerComplex rule (complex-lower.ts)";

/** Real and imaginary parts of any numeric array as float64 (a real array has zero imaginary parts). */
export function partsOf(a: ArrayImpl): [Float64Array, Float64Array] {
  if (!isComplex(a.dtype)) return [toFloat64(a.buffer, a.dtype), new Float64Array(a.size)];
  const b = a.buffer as Float64Array,
    n = a.size;
  const re = new Float64Array(n),
    im = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    re[i] = b[2 * i];
    im[i] = b[2 * i + 1];
  }
  return [re, im];
}
export const fromParts = (aval: ShapedArray, re: ArrayLike<number>, im: ArrayLike<number>): ArrayImpl =>
  new ArrayImpl(aval, joinComplex(re, im, aval.dtype));
const partAval = (a: ShapedArray): ShapedArray => (isComplex(a.dtype) ? a.update({ dtype: realDType(a.dtype) }) : a);
/** The real (0) or imaginary (1) plane of a complex array as an array of its part dtype. */
function plane(a: ArrayImpl, which: 0 | 1): ArrayImpl {
  return new ArrayImpl(partAval(a.aval), splitComplex(a.buffer, a.dtype)[which]);
}
const anyComplex = (avals: readonly { dtype: DType }[]): boolean => avals.some((a) => isComplex(a.dtype));

// ------------------------------------------------------------------ real, imag, conj, complex
function linearUnary(
  name: string,
  abstractEval: PrimitiveRules["abstractEval"],
  impl: NonNullable<PrimitiveRules["impl"]>,
  transpose: (ct: Array, x: UndefinedPrimal) => Array,
): Primitive {
  const p: Primitive = new Primitive(name, {
    abstractEval,
    impl,
    jvp: ([x], [t]) => {
      const y = ops.bindN(p, [x])[0];
      return [[y], [t instanceof Zero ? new Zero(y.aval) : ops.bindN(p, [t])[0]]];
    },
    transpose: ([ct], [x]) => [
      ct instanceof Zero ? new Zero((x as UndefinedPrimal).aval) : transpose(ct, x as UndefinedPrimal),
    ],
    missing: { lower: LOWER_NOTE },
  });
  p.rules.vmap = vmapElementwise(p);
  return p;
}
const needComplex =
  (name: string) =>
  ([x]: ShapedArray[]): ShapedArray[] => {
    if (!isComplex(x.dtype))
      throw new TypeError(`${name} requires a complex operand (complex64 or complex128), got ${x.str()}`);
    return [x.update({ dtype: name === "conj" ? x.dtype : realDType(x.dtype) })];
  };
// real(z) is linear over R; its transpose maps a real cotangent c to c + 0i
export const realP = linearUnary(
  "real",
  needComplex("real"),
  ([x], _p, [o]) => [new ArrayImpl(o, splitComplex(x.buffer, x.dtype)[0])],
  (ct) => complexOf(ct, ops.zerosLikeArray(ct)),
);
// imag(z) = Re(-i z), so its transpose maps c to -i c = 0 - c i
export const imagP = linearUnary(
  "imag",
  needComplex("imag"),
  ([x], _p, [o]) => [new ArrayImpl(o, splitComplex(x.buffer, x.dtype)[1])],
  (ct) => complexOf(ops.zerosLikeArray(ct), ops.neg(ct)),
);
export const conjP = linearUnary(
  "conj",
  needComplex("conj"),
  ([x], _p, [o]) => {
    const [re, im] = partsOf(x);
    return [
      fromParts(
        o,
        re,
        im.map((v) => -v),
      ),
    ];
  },
  (ct) => conj(ct),
);

/** complex(x, y) = x + iy for float32/float64 parts of equal dtype (a rank-0 operand broadcasts). */
export const complexP: Primitive = new Primitive("complex", {
  abstractEval([a, b]) {
    if (a.dtype !== b.dtype || (a.dtype !== "float32" && a.dtype !== "float64")) {
      throw new TypeError(`complex requires float32 or float64 operands of one dtype, got ${a.str()} and ${b.str()}`);
    }
    if (!shapesEqual(a.shape, b.shape) && a.ndim !== 0 && b.ndim !== 0)
      throw new TypeError(`complex requires operands of the same shape, got ${a.str()} and ${b.str()}`);
    return [new ShapedArray(a.ndim === 0 ? b.shape : a.shape, complexDType(a.dtype), a.weakType && b.weakType)];
  },
  impl([a, b], _p, [o]) {
    const re = toFloat64(a.buffer, a.dtype),
      im = toFloat64(b.buffer, b.dtype);
    return [
      fromParts(
        o,
        re.length === o.size ? re : new Float64Array(o.size).fill(re[0]),
        im.length === o.size ? im : new Float64Array(o.size).fill(im[0]),
      ),
    ];
  },
  jvp([a, b], [ta, tb]) {
    const y = complexOf(a, b);
    if (ta instanceof Zero && tb instanceof Zero) return [[y], [new Zero(y.aval)]];
    const za = ta instanceof Zero ? ops.zerosLikeArray(a) : ta,
      zb = tb instanceof Zero ? ops.zerosLikeArray(b) : tb;
    const t = complexOf(za, zb);
    return [[y], [t.ndim === y.ndim ? t : ops.broadcastInDim(t, y.shape, [])]];
  },
  // <ct, x + iy> = Re(ct) x - Im(ct) y
  transpose([ct], [a, b]) {
    const un = (c: Array, arg: Array | UndefinedPrimal): Array | Zero | null => {
      if (!(arg instanceof UndefinedPrimal)) return null;
      return arg.aval.ndim === 0 && c.ndim !== 0 ? ops.reduceSum(c, [...c.shape.keys()]) : c;
    };
    if (ct instanceof Zero)
      return [
        a instanceof UndefinedPrimal ? new Zero(a.aval) : null,
        b instanceof UndefinedPrimal ? new Zero(b.aval) : null,
      ];
    return [un(real(ct), a), un(ops.neg(imag(ct)), b)];
  },
  missing: { lower: LOWER_NOTE },
});
complexP.rules.vmap = vmapElementwise(complexP);

export const real = (x: Array): Array => ops.bindN(realP, [x])[0];
export const imag = (x: Array): Array => ops.bindN(imagP, [x])[0];
export const conj = (x: Array): Array => ops.bindN(conjP, [x])[0];
export const complexOf = (x: Array, y: Array): Array => ops.bindN(complexP, [x, y])[0];

// ------------------------------------------------------------------ complex rules for existing primitives
/** Wraps a primitive's rules so complex operands take `c` and everything else the original rule. */
function extend(
  name: string,
  c: { abstractEval?: PrimitiveRules["abstractEval"]; impl?: PrimitiveRules["impl"]; jvp?: PrimitiveRules["jvp"] },
): void {
  const p = getPrimitive(name),
    r = p.rules;
  const ae = r.abstractEval,
    impl = r.impl,
    jvp = r.jvp;
  if (c.abstractEval) {
    const f = c.abstractEval;
    r.abstractEval = (avals, params) => (anyComplex(avals) ? f(avals, params) : ae(avals, params));
  }
  if (c.impl && impl) {
    const f = c.impl;
    r.impl = (args, params, outs) =>
      anyComplex(args) || anyComplex(outs) ? f(args, params, outs) : impl(args, params, outs);
  }
  if (c.jvp && jvp) {
    const f = c.jvp;
    r.jvp = (primals, tangents, params) =>
      anyComplex(primals) ? f(primals, tangents, params) : jvp(primals, tangents, params);
  }
}

/**
 * Primitives that act on the real and imaginary planes independently (structural moves, sums): a complex
 * operand's planes go through the real rule one after the other; integer/bool operands (indices, predicates) are shared.
 */
export const SEPARABLE = [
  "broadcast_in_dim",
  "reshape",
  "transpose",
  "squeeze",
  "rev",
  "pad",
  "concatenate",
  "slice",
  "select_n",
  "copy",
  "gather",
  "scatter",
  "dynamic_slice",
  "dynamic_update_slice",
  "reduce_sum",
  "cumsum",
  "add",
  "sub",
  "neg",
];
function separable(name: string): void {
  const p = getPrimitive(name),
    ae = p.rules.abstractEval,
    impl = p.rules.impl!;
  const check = (avals: ShapedArray[], params: Params): void => {
    // a real float operand beside a complex one would pass the real rule once the complex one is split: refuse it here
    // (integer and bool operands are indices and predicates, which the real rule checks)
    if (avals.some((a) => isFloat(a.dtype)))
      throw new TypeError(`${name} requires arguments of one dtype, got ${avals.map((a) => a.str()).join(", ")}`);
    if (name === "scatter" && params.reduce !== "none" && params.reduce !== "add")
      throw new TypeError(
        `scatter: reduce=${String(params.reduce)} is not defined for complex operands (none and add are)`,
      );
  };
  extend(name, {
    abstractEval(avals, params) {
      check(avals, params);
      const part = avals.find((a) => isComplex(a.dtype))!.dtype;
      return ae(avals.map(partAval), params).map((o) => (o.dtype === realDType(part) ? o.update({ dtype: part }) : o));
    },
    impl(args, params, outs) {
      // split each complex operand once into its two planes
      const planes = args.map((a) =>
        isComplex(a.dtype) ? splitComplex(a.buffer, a.dtype).map((b) => new ArrayImpl(partAval(a.aval), b)) : [a, a],
      );
      const re = impl(
        planes.map((p) => p[0]),
        params,
        outs.map(partAval),
      );
      const im = impl(
        planes.map((p) => p[1]),
        params,
        outs.map(partAval),
      );
      return outs.map((o, k) =>
        isComplex(o.dtype)
          ? new ArrayImpl(
              o,
              joinComplex(toFloat64(re[k].buffer, re[k].dtype), toFloat64(im[k].buffer, im[k].dtype), o.dtype),
            )
          : re[k],
      );
    },
  });
}
for (const n of SEPARABLE) separable(n);

const sameAval = ([x]: ShapedArray[]): ShapedArray[] => [x];
/** Elementwise complex unary kernels (holomorphic: their real jvp rules carry over unchanged). */
const UNARY: Record<string, (x: number, y: number) => K.C> = {
  exp: K.cexp,
  log: K.clog,
  log1p: K.clog1p,
  expm1: K.cexpm1,
  sqrt: K.csqrt,
  rsqrt: K.crsqrt,
  sin: K.csin,
  cos: K.ccos,
  tan: K.ctan,
  tanh: K.ctanh,
  sinh: K.csinh,
  cosh: K.ccosh,
  logistic: K.clogistic,
  sign: K.csign,
};
function unaryImpl(f: (x: number, y: number) => K.C): NonNullable<PrimitiveRules["impl"]> {
  return ([x], _p, [o]) => {
    const b = x.buffer as Float64Array,
      out = allocate(o.dtype, o.size) as Float64Array;
    for (let k = 0; k < 2 * o.size; k += 2) {
      const c = f(b[k], b[k + 1]);
      out[k] = c[0];
      out[k + 1] = c[1];
    }
    return [new ArrayImpl(o, out)];
  };
}
for (const [n, f] of Object.entries(UNARY)) extend(n, { abstractEval: sameAval, impl: unaryImpl(f) });
extend("integer_pow", {
  abstractEval: sameAval,
  impl: (args, p, outs) => unaryImpl((x, y) => K.cipow(x, y, p.y as number))(args, p, outs),
});

// |z| is real: abs(c64) -> f32; d|z| = Re(conj(z) dz) / |z| (0 at z = 0), JAX's rule
extend("abs", {
  abstractEval: ([x]) => [new ShapedArray(x.shape, realDType(x.dtype), x.weakType)],
  impl: ([x], _p, [o]) => {
    const [re, im] = partsOf(x);
    return [
      new ArrayImpl(
        o,
        fromNumbers(
          re.map((v, k) => Math.hypot(v, im[k])),
          o.dtype,
        ),
      ),
    ];
  },
  jvp: ([x], [t]) => {
    const y = ops.abs(x);
    if (t instanceof Zero) return [[y], [new Zero(y.aval)]];
    const safe = ops.select(ops.eq(y, ops.scalarLike(y, 0)), ops.fullLike(y, 1), y);
    const d = real(ops.mul(t, ops.div(conj(x), ops.convert(safe, x.dtype))));
    return [[y], [ops.select(ops.eq(y, ops.scalarLike(y, 0)), ops.zerosLikeArray(y), d)]];
  },
});

// ---- binary: same dtype, rank-0 operands broadcast
function binaryAval(name: string, compare: boolean) {
  return ([a, b]: ShapedArray[]): ShapedArray[] => {
    if (a.dtype !== b.dtype)
      throw new TypeError(`${name} requires arguments to have the same dtypes, got ${a.dtype}, ${b.dtype}`);
    if (!shapesEqual(a.shape, b.shape) && a.ndim !== 0 && b.ndim !== 0)
      throw new TypeError(`${name} requires arguments to have the same shape, got ${a.str()} and ${b.str()}`);
    return [
      new ShapedArray(
        a.ndim === 0 ? b.shape : a.shape,
        compare ? "bool" : a.dtype,
        compare ? false : a.weakType && b.weakType,
      ),
    ];
  };
}
function binaryImpl(f: (a: number, b: number, c: number, d: number) => K.C): NonNullable<PrimitiveRules["impl"]> {
  return ([x, y], _p, [o]) => {
    const xb = x.buffer as Float64Array,
      yb = y.buffer as Float64Array,
      n = o.size,
      out = allocate(o.dtype, n) as Float64Array;
    // a rank-0 operand broadcasts (stride 0)
    const sa = x.size === n ? 2 : 0,
      sb = y.size === n ? 2 : 0;
    for (let k = 0; k < n; k++) {
      const c = f(xb[k * sa], xb[k * sa + 1], yb[k * sb], yb[k * sb + 1]);
      out[2 * k] = c[0];
      out[2 * k + 1] = c[1];
    }
    return [new ArrayImpl(o, out)];
  };
}
// add/sub/neg are separable, but a direct interleaved loop avoids splitting and joining the planes
extend("add", { impl: binaryImpl((a, b, c, d) => [a + c, b + d]) });
extend("sub", { impl: binaryImpl((a, b, c, d) => [a - c, b - d]) });
extend("neg", { impl: unaryImpl((x, y) => [-x, -y]) });
extend("mul", { abstractEval: binaryAval("mul", false), impl: binaryImpl(K.cmul) });
extend("div", { abstractEval: binaryAval("div", false), impl: binaryImpl(K.cdiv) });
extend("pow", { abstractEval: binaryAval("pow", false), impl: binaryImpl(K.cpow) });
for (const [n, want] of [
  ["eq", true],
  ["ne", false],
] as const) {
  extend(n, {
    abstractEval: binaryAval(n, true),
    impl: ([x, y], _p, [o]) => {
      const [ar, ai] = partsOf(x),
        [br, bi] = partsOf(y),
        sz = o.size;
      const sa = ar.length === sz ? 1 : 0,
        sb = br.length === sz ? 1 : 0;
      const r = new Uint8Array(sz);
      for (let k = 0; k < sz; k++) r[k] = (ar[k * sa] === br[k * sb] && ai[k * sa] === bi[k * sb]) === want ? 1 : 0;
      return [new ArrayImpl(o, r)];
    },
  });
}

// max / min: lexicographic on (re, im), as JAX's lax.max / lax.min; jvp with JAX's balanced tie (half to each operand)
for (const n of ["max", "min"] as const) {
  const sgn = n === "max" ? 1 : -1;
  extend(n, {
    abstractEval: binaryAval(n, false),
    impl: binaryImpl((a, b, c, d) => {
      // keep (a, b) unless (c, d) is lexicographically beyond it in the direction of n
      const beyond = sgn * (c - a) > 0 || (c === a && sgn * (d - b) > 0);
      return beyond ? [c, d] : [a, b];
    }),
    jvp([x, y], [tx, ty]) {
      const ans = ops.bindN(getPrimitive(n), [x, y])[0];
      const full = (v: number): Array => ops.fullLike(ans, v);
      const wide = (u: Array): Array => (u.ndim === ans.ndim ? u : ops.broadcastInDim(u, ans.shape, []));
      // weight of x: 1 where it alone is the answer, 1/2 on a tie, 0 otherwise (and symmetrically for y)
      const bal = (u: Array, v: Array): Array =>
        ops.select(wide(ops.eq(u, ans)), ops.select(wide(ops.eq(v, ans)), full(0.5), full(1)), full(0));
      let t: Array | null = null;
      if (!(tx instanceof Zero)) t = ops.mul(wide(tx), bal(x, y));
      if (!(ty instanceof Zero)) {
        const ry = ops.mul(wide(ty), bal(y, x));
        t = t === null ? ry : ops.add(t, ry);
      }
      return [[ans], [t ?? new Zero(ans.aval)]];
    },
  });
}

// dot_general: (A + iB)(C + iD) = (AC - BD) + i(AD + BC), four real products (a real operand is promoted first)
{
  const p = getPrimitive("dot_general"),
    ae = p.rules.abstractEval,
    impl = p.rules.impl!;
  extend("dot_general", {
    abstractEval([a, b], params) {
      if (a.dtype !== b.dtype)
        throw new TypeError(`dot_general: operands must have the same dtype; lhs ${a.str()}, rhs ${b.str()}`);
      const pe = params.preferred_element_type as DType | null;
      const [o] = ae([partAval(a), partAval(b)], {
        ...params,
        preferred_element_type: pe && isComplex(pe) ? realDType(pe) : null,
      });
      return [o.update({ dtype: pe && isComplex(pe) ? pe : a.dtype })];
    },
    impl([a, b], params, [o]) {
      const q = { ...params, preferred_element_type: null },
        po = partAval(o);
      const mm = (x: ArrayImpl, y: ArrayImpl): Float64Array => toFloat64(impl([x, y], q, [po])[0].buffer, po.dtype);
      const ar = plane(a, 0),
        ai = plane(a, 1),
        br = plane(b, 0),
        bi = plane(b, 1);
      const ac = mm(ar, br),
        bd = mm(ai, bi),
        ad = mm(ar, bi),
        bc = mm(ai, br);
      return [
        fromParts(
          o,
          ac.map((v, k) => v - bd[k]),
          ad.map((v, k) => v + bc[k]),
        ),
      ];
    },
  });
}

// iota of a complex dtype counts in the real parts
{
  const p = getPrimitive("iota"),
    impl = p.rules.impl!;
  p.rules.impl = (args, params, [o]) => {
    if (!isComplex(o.dtype)) return impl(args, params, [o]);
    const [re] = impl(args, { ...params, dtype: realDType(o.dtype) }, [partAval(o)]);
    return [new ArrayImpl(o, joinComplex(toFloat64(re.buffer, re.dtype), new Float64Array(o.size), o.dtype))];
  };
}

/** Primitives that carry complex values through without looking at them (calls, control flow, stop_gradient). */
const PASS = new Set([
  "pjit",
  "cond",
  "while",
  "scan",
  "checkpoint",
  "custom_jvp_call",
  "custom_vjp_call",
  "custom_lin",
  "stop_gradient",
  "name",
  "convert_element_type",
  "real",
  "imag",
  "conj",
  "complex",
  ...SEPARABLE,
  ...Object.keys(UNARY),
  "integer_pow",
  "abs",
  "mul",
  "div",
  "pow",
  "eq",
  "ne",
  "dot_general",
  "fft",
  "eig",
  "lu",
  "triangular_solve",
  "cholesky",
  "max",
  "min",
  "qr",
  "eigh",
  "svd",
]);
/**
 * Every other primitive refuses complex operands with a clear error (instead of reading interleaved storage as reals).
 * Called once all primitives are registered (from the library's entry point).
 */
export function guardComplexOperands(prims: readonly Primitive[]): void {
  for (const p of prims) {
    if (PASS.has(p.name) || (p.rules as { complexGuarded?: boolean }).complexGuarded) continue;
    const ae = p.rules.abstractEval;
    p.rules.abstractEval = (avals, params) => {
      if (anyComplex(avals))
        throw new TypeError(`${p.name} does not support complex operands, got ${avals.map((a) => a.str()).join(", ")}`);
      return ae(avals, params);
    };
    (p.rules as { complexGuarded?: boolean }).complexGuarded = true;
  }
}
