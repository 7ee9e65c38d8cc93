/** @file Unary elementwise primitives (neg ... copy): abstract eval, reference impl, jvp, transpose, vmap and ONNX lowering; the binary ones are re-exported from elementwise-binary.ts. */
import type { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { wrapInt } from "../core/convert.js";
import { type DType, isBigInt, isFloat, isUnsigned } from "../core/dtype.js";
import { type Params, Primitive, type PrimitiveFacts, type PrimitiveRules, Zero } from "../core/primitive.js";
import { fromBigs, fromNums, nums } from "./ref-util.js";
import { digamma, erf, erfc, erfinv, lgamma, polygamma as polygammaScalar } from "./special-math.js";
import * as ops from "./bind-ops.js";
import {
  ERF_INV_F32_W_GE_5,
  ERF_INV_F32_W_LT_5,
  ERF_INV_F64_W_GE_16,
  ERF_INV_F64_W_LT_16,
  ERF_INV_F64_W_LT_6_25,
  erfInvF32,
  erfInvF64,
} from "./erf-inv.js";
const ERF_INV_COEFFICIENTS = {
  f32Lt5: ERF_INV_F32_W_LT_5,
  f32Ge5: ERF_INV_F32_W_GE_5,
  f64Lt625: ERF_INV_F64_W_LT_6_25,
  f64Lt16: ERF_INV_F64_W_LT_16,
  f64Ge16: ERF_INV_F64_W_GE_16,
};
import type { LoweringContext } from "../core/lowering-types.js";
import { mathDtype, opIn } from "../compiler/lower-util.js";
import * as LM from "../compiler/lower-math.js";
import * as LE from "../compiler/lower-elementwise.js";

import { type Kinds, kindOk, kindText, vmapElementwise } from "./elementwise-kinds.js";

export { vmapElementwise };
export * from "./elementwise-binary.js";

// ------------------------------------------------------------------ unary
interface UnarySpec {
  /** PrimitiveFacts.cost: what cost models count for it (default: one FLOP per element). */
  cost?: PrimitiveFacts["cost"];
  kinds: Kinds;
  /** PrimitiveFacts.exactOnScalars: the lowering rounds exactly like f (default false). */
  exactOnScalars?: boolean;
  /** PrimitiveFacts.shapePolymorphic (default true: an elementwise lowering sees only dtypes and ranks). */
  shapePolymorphic?: boolean;
  f: (x: number) => number;
  /** int/bool implementation (default: f then wrap) */
  fi?: (x: number, d: DType) => number;
  fb?: (x: bigint, d: DType) => bigint;
  outDtype?: (d: DType) => DType;
  jvp?: (x: Array, y: Array, t: Array, params: Params) => Array;
  linear?: boolean;
  zeroJvp?: boolean;
  params?: (p: Params) => Params;
  fp?: (x: number, p: Params) => number;
  /** ONNX lowering: an op name (emitted at a dtype ORT has a kernel for) or a function of the operand's value name. */
  onnx?: string | ((ctx: LoweringContext, x: string, d: DType, params: Params, out: ShapedArray) => string);
}

function defUnary(name: string, s: UnarySpec): Primitive {
  const rules: PrimitiveRules = {
    abstractEval([x], _params) {
      if (!kindOk(s.kinds, x.dtype)) throw new TypeError(`${name} requires ${kindText[s.kinds]}, got ${x.str()}`);
      return [new ShapedArray(x.shape, s.outDtype ? s.outDtype(x.dtype) : x.dtype, x.weakType && !s.outDtype)];
    },
    impl([x], params, [out]) {
      if (isBigInt(x.dtype) && !isBigInt(out.dtype)) {
        const xb = x.buffer as BigInt64Array;
        return [
          fromNums(
            out,
            globalThis.Array.from(xb, (v) => s.f(Number(v))),
          ),
        ];
      }
      if (isBigInt(x.dtype)) {
        const xb = x.buffer as BigInt64Array;
        const fb = s.fb ?? ((v: bigint) => BigInt(Math.trunc(s.f(Number(v)))));
        return [
          fromBigs(
            out,
            globalThis.Array.from(xb, (v) => fb(v, x.dtype)),
          ),
        ];
      }
      const xs = nums(x);
      const r = new Float64Array(xs.length);
      const d = x.dtype;
      if (s.fp) for (let i = 0; i < xs.length; i++) r[i] = s.fp(xs[i], params);
      else if (!isFloat(d) && s.fi) for (let i = 0; i < xs.length; i++) r[i] = s.fi(xs[i], d);
      else if (!isFloat(d) && !s.outDtype) for (let i = 0; i < xs.length; i++) r[i] = wrapInt(s.f(xs[i]), d);
      else for (let i = 0; i < xs.length; i++) r[i] = s.f(xs[i]);
      return [fromNums(out, r)];
    },
    vmap: undefined,
  };
  if (s.zeroJvp || s.outDtype) {
    rules.jvp = (primals, tangents, params) => {
      const y = ops.bindN(p, primals, params)[0];
      return [[y], [new Zero(y.aval)]];
    };
  } else if (s.jvp) {
    const jr = s.jvp;
    rules.jvp = ([x], [t], params) => {
      const y = ops.bindN(p, [x], params)[0];
      return [[y], [t instanceof Zero ? new Zero(y.aval) : jr(x, y, t, params)]];
    };
  }
  if (s.linear) rules.transpose = ([ct], _args, params) => [ct instanceof Zero ? ct : ops.bindN(p, [ct], params)[0]];
  if (s.onnx) {
    const lo = s.onnx;
    rules.lower = (ctx, [x], params, [a], [o]) => [
      typeof lo === "string" ? opIn(ctx, lo, a.dtype, [x]) : lo(ctx, x, a.dtype, params, o),
    ];
  }
  const p = new Primitive(name, rules, {
    cost: s.cost,
    shapePolymorphic: s.shapePolymorphic ?? true,
    exactOnScalars: s.exactOnScalars,
  });
  rules.vmap = vmapElementwise(p);
  return p;
}

const roundHalfEven = (x: number): number => {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
};
const roundAway = (x: number): number => Math.sign(x) * Math.round(Math.abs(x));
const popcount = (x: number, d: DType): number => {
  let v = x < 0 ? wrapInt(x, d === "int8" ? "uint8" : d === "int16" ? "uint16" : "uint32") : x;
  let c = 0;
  while (v) {
    c += v & 1;
    v = Math.floor(v / 2);
  }
  return c;
};
const bitsOf = (d: DType): number => (d === "int8" || d === "uint8" ? 8 : d === "int16" || d === "uint16" ? 16 : 32);

export const neg = defUnary("neg", {
  exactOnScalars: true,
  onnx: (c, x, d) => LE.neg(c, x, d),
  kinds: "num",
  f: (x) => -x,
  fb: (x) => -x,
  jvp: (_x, _y, t) => ops.neg(t),
  linear: true,
});
export const sign = defUnary("sign", {
  exactOnScalars: true,
  onnx: (c, x, d) => (isFloat(d) ? LE.floatSign(c, x, d) : opIn(c, "Sign", d, [x])),
  kinds: "num",
  f: (x) => (Number.isNaN(x) ? NaN : x > 0 ? 1 : x < 0 ? -1 : x),
  fb: (x) => (x > 0n ? 1n : x < 0n ? -1n : 0n),
  zeroJvp: true,
});
export const floor = defUnary("floor", {
  exactOnScalars: true,
  onnx: "Floor",
  kinds: "float",
  f: Math.floor,
  zeroJvp: true,
});
export const ceil = defUnary("ceil", {
  exactOnScalars: true,
  onnx: "Ceil",
  kinds: "float",
  f: Math.ceil,
  zeroJvp: true,
});
export const round = defUnary("round", {
  exactOnScalars: true,
  onnx: (c, x, d, p) =>
    p.rounding_method === 1
      ? opIn(c, "Round", d, [x])
      : LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => LM.roundAway(m, v)),
  kinds: "float",
  f: roundAway,
  fp: (x, p) => (p.rounding_method === 1 ? roundHalfEven(x) : roundAway(x)),
  zeroJvp: true,
});
export const isFinite = defUnary("is_finite", {
  exactOnScalars: true,
  onnx: (c, x) => c.op("Not", [c.op("Or", [c.op("IsNaN", [x]), c.op("IsInf", [x])])]),
  kinds: "float",
  f: (x) => (Number.isFinite(x) ? 1 : 0),
  outDtype: () => "bool",
});
export const exp = defUnary("exp", {
  cost: "transcendental",
  onnx: "Exp",
  kinds: "float",
  f: Math.exp,
  jvp: (_x, y, t) => ops.mul(t, y),
});
export const exp2 = defUnary("exp2", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => m.pow(2, v)),
  kinds: "float",
  f: (x) => 2 ** x,
  jvp: (_x, y, t) => ops.mul(t, ops.mul(y, ops.scalarLike(y, Math.LN2))),
});
export const log = defUnary("log", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.stableUnary(c, "Log", x, d),
  kinds: "float",
  f: Math.log,
  jvp: (x, _y, t) => ops.div(t, x),
});
export const log1p = defUnary("log1p", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => LM.log1p(m, v)),
  kinds: "float",
  f: Math.log1p,
  jvp: (x, _y, t) => ops.div(t, ops.add(x, ops.scalarLike(x, 1))),
});
export const expm1 = defUnary("expm1", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => LM.expm1(m, v)),
  kinds: "float",
  f: Math.expm1,
  jvp: (_x, y, t) => ops.mul(t, ops.add(y, ops.scalarLike(y, 1))),
});
export const tanh = defUnary("tanh", {
  cost: "transcendental",
  onnx: "Tanh",
  kinds: "float",
  f: Math.tanh,
  jvp: (_x, y, t) => ops.mul(t, ops.sub(ops.scalarLike(y, 1), ops.mul(y, y))),
});
export const logistic = defUnary("logistic", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => LM.logistic(m, v)),
  kinds: "float",
  f: (x) => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x))),
  jvp: (_x, y, t) => ops.mul(t, ops.mul(y, ops.sub(ops.scalarLike(y, 1), y))),
});
export const sin = defUnary("sin", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.stableUnary(c, "Sin", x, d),
  kinds: "float",
  f: Math.sin,
  jvp: (x, _y, t) => ops.mul(t, ops.cos(x)),
});
export const cos = defUnary("cos", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.stableUnary(c, "Cos", x, d),
  kinds: "float",
  f: Math.cos,
  jvp: (x, _y, t) => ops.neg(ops.mul(t, ops.sin(x))),
});
export const tan = defUnary("tan", {
  cost: "transcendental",
  onnx: (c, x, d) => LE.kernelOr(c, "Tan", x, d, LM.tan64),
  kinds: "float",
  f: Math.tan,
  jvp: (_x, y, t) => ops.mul(t, ops.add(ops.scalarLike(y, 1), ops.mul(y, y))),
});
const oneMinusSq = (x: Array) => ops.sub(ops.scalarLike(x, 1), ops.mul(x, x));
export const asin = defUnary("asin", {
  onnx: (c, x, d) => LM.stableUnary(c, "Asin", x, d),
  kinds: "float",
  f: Math.asin,
  jvp: (x, _y, t) => ops.mul(t, ops.rsqrt(oneMinusSq(x))),
});
export const acos = defUnary("acos", {
  onnx: (c, x, d) => LM.stableUnary(c, "Acos", x, d),
  kinds: "float",
  f: Math.acos,
  jvp: (x, _y, t) => ops.neg(ops.mul(t, ops.rsqrt(oneMinusSq(x)))),
});
export const atan = defUnary("atan", {
  onnx: (c, x, d) => LM.stableUnary(c, "Atan", x, d),
  kinds: "float",
  f: Math.atan,
  jvp: (x, _y, t) => ops.div(t, ops.add(ops.scalarLike(x, 1), ops.mul(x, x))),
});
export const sinh = defUnary("sinh", {
  onnx: (c, x, d) => LE.kernelOr(c, "Sinh", x, d, LM.sinh64),
  kinds: "float",
  f: Math.sinh,
  jvp: (x, _y, t) => ops.mul(t, ops.cosh(x)),
});
export const cosh = defUnary("cosh", {
  onnx: (c, x, d) => LE.kernelOr(c, "Cosh", x, d, LM.cosh64),
  kinds: "float",
  f: Math.cosh,
  jvp: (x, _y, t) => ops.mul(t, ops.sinh(x)),
});
export const asinh = defUnary("asinh", {
  onnx: (c, x, d) => LE.kernelOr(c, "Asinh", x, d, LM.asinh64),
  kinds: "float",
  f: Math.asinh,
  jvp: (x, _y, t) => ops.mul(t, ops.rsqrt(ops.add(ops.mul(x, x), ops.scalarLike(x, 1)))),
});
// d/dx acosh(x) = 1/(sqrt(x-1) sqrt(x+1))
export const acosh = defUnary("acosh", {
  onnx: (c, x, d) => LE.kernelOr(c, "Acosh", x, d, LM.acosh64),
  kinds: "float",
  f: Math.acosh,
  jvp: (x, _y, t) =>
    ops.div(t, ops.mul(ops.sqrt(ops.sub(x, ops.scalarLike(x, 1))), ops.sqrt(ops.add(x, ops.scalarLike(x, 1))))),
});
export const atanh = defUnary("atanh", {
  onnx: (c, x, d) => LE.kernelOr(c, "Atanh", x, d, LM.atanh64),
  kinds: "float",
  f: Math.atanh,
  jvp: (x, _y, t) => ops.div(t, oneMinusSq(x)),
});
export const sqrt = defUnary("sqrt", {
  cost: "transcendental",
  exactOnScalars: true,
  onnx: "Sqrt",
  kinds: "float",
  f: Math.sqrt,
  jvp: (_x, y, t) => ops.div(t, ops.mul(y, ops.scalarLike(y, 2))),
});
// d rsqrt(x) = -0.5 * rsqrt(x) / x
export const rsqrt = defUnary("rsqrt", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => m.div(1, m.sqrt(v))),
  kinds: "float",
  f: (x) => 1 / Math.sqrt(x),
  jvp: (x, y, t) => ops.mul(t, ops.mul(ops.div(y, x), ops.scalarLike(y, -0.5))),
});
// d cbrt(x) = 1 / (3 cbrt(x)^2)
export const cbrt = defUnary("cbrt", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, "float64", (m, [v]) => LM.cbrt(m, v)),
  kinds: "float",
  f: Math.cbrt,
  jvp: (_x, y, t) => ops.div(t, ops.mul(ops.mul(y, y), ops.scalarLike(y, 3))),
});
export const abs = defUnary("abs", {
  exactOnScalars: true,
  onnx: "Abs",
  kinds: "num",
  f: Math.abs,
  fi: (x, d) => (isUnsigned(d) ? x : wrapInt(Math.abs(x), d)),
  fb: (x, d) => (d === "uint64" || x >= 0n ? x : BigInt.asIntN(64, -x)),
  // d|x| = t where x >= 0, else -t: JAX's rule, so the derivative at 0 is 1 (t * sign(x) gave 0)
  jvp: (x, _y, t) => ops.select(ops.ge(x, ops.scalarLike(x, 0)), t, ops.neg(t)),
});
export const erfP = defUnary("erf", {
  cost: "transcendental",
  onnx: (c, x, d) => LE.kernelOr(c, "Erf", x, d, LM.erf64),
  kinds: "float",
  f: erf,
  jvp: (x, _y, t) => ops.mul(t, ops.mul(ops.scalarLike(x, 2 / Math.sqrt(Math.PI)), ops.exp(ops.neg(ops.mul(x, x))))),
});
export const erfcP = defUnary("erfc", {
  cost: "transcendental",
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, "float64", (m, [v]) => LM.erfc64(m, v)),
  kinds: "float",
  f: erfc,
  jvp: (x, _y, t) => ops.mul(t, ops.mul(ops.scalarLike(x, -2 / Math.sqrt(Math.PI)), ops.exp(ops.neg(ops.mul(x, x))))),
});
// d erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)^2)
export const erfInvP = defUnary("erf_inv", {
  cost: "transcendental",
  onnx: (c, x, d) =>
    LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) =>
      LM.erfInvXla(c, v, m.d as "float32" | "float64", ERF_INV_COEFFICIENTS),
    ),
  kinds: "float",
  f: erfinv,
  jvp: (_x, y, t) => ops.mul(t, ops.mul(ops.scalarLike(y, Math.sqrt(Math.PI) / 2), ops.exp(ops.mul(y, y)))),
});
// erf_inv replays XLA's float32/float64 expansion so jax.random.normal is bit-exact with JAX
erfInvP.rules.impl = ([x], _p, [out]) => {
  const f = x.dtype === "float64" ? erfInvF64 : erfInvF32;
  return [
    fromNums(
      out,
      globalThis.Array.from(nums(x), (v) => f(v)),
    ),
  ];
};
export const lgammaP = defUnary("lgamma", {
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, "float64", (m, [v]) => LM.lgamma64(m, v)),
  kinds: "float",
  f: lgamma,
  jvp: (x, _y, t) => ops.mul(t, ops.digamma(x)),
});
export const digammaP = defUnary("digamma", {
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, "float64", (m, [v]) => LM.digamma64(m, v)),
  kinds: "float",
  f: digamma,
});
/** polygamma(m, x) with a static order m (the operand x only, as JAX differentiates it); d/dx psi^(m) = psi^(m+1). */
export const polygammaP: Primitive<{ m: number }> = new Primitive<{ m: number }>("polygamma", {
  abstractEval([x], { m }) {
    if (!isFloat(x.dtype)) throw new TypeError(`polygamma requires a floating dtype, got ${x.str()}`);
    if (!Number.isInteger(m) || m < 0)
      throw new TypeError(`polygamma: the order m must be a non-negative integer, got ${m}`);
    return [x];
  },
  impl([x], { m }, [out]) {
    return [
      fromNums(
        out,
        globalThis.Array.from(nums(x), (v) => polygammaScalar(m, v)),
      ),
    ];
  },
  jvp([x], [t], { m }) {
    const y = ops.bindN(polygammaP, [x], { m })[0];
    return [[y], [t instanceof Zero ? new Zero(y.aval) : ops.mul(t, ops.bindN(polygammaP, [x], { m: m + 1 })[0])]];
  },
  missing: { lower: "series evaluation with a data-dependent shift; runs on the interpreter between ONNX segments" },
});
polygammaP.rules.vmap = vmapElementwise(polygammaP);
// d digamma(x) = polygamma(1, x)
digammaP.rules.jvp = ([x], [t]) => {
  const y = ops.digamma(x);
  return [[y], [t instanceof Zero ? new Zero(y.aval) : ops.mul(t, ops.bindN(polygammaP, [x], { m: 1 })[0])]];
};
export const integerPow = defUnary("integer_pow", {
  shapePolymorphic: false,
  onnx: (c, x, d, p, o) => LE.integerPow(c, x, d, p.y as number, o.shape),
  kinds: "num",
  f: (x) => x,
  fp: () => NaN,
  jvp: (x, _y, t, p) => {
    const y = p.y as number;
    if (y === 0) return ops.mul(t, ops.scalarLike(t, 0));
    return ops.mul(t, ops.mul(ops.scalarLike(x, y), ops.integerPow(x, y - 1)));
  },
});
// integer_pow's impl depends on its parameter: x^y by repeated squaring (wrapping for ints)
integerPow.rules.impl = ([x], params, [out]) => {
  const y = params.y as number;
  if (isBigInt(x.dtype)) {
    return [
      fromBigs(
        out,
        globalThis.Array.from(x.buffer as BigInt64Array, (v) => BigInt.asIntN(64, y >= 0 ? v ** BigInt(y) : 0n)),
      ),
    ];
  }
  const xs = nums(x);
  const r = new Float64Array(xs.length);
  const f = isFloat(x.dtype);
  for (let i = 0; i < xs.length; i++) {
    if (f) {
      r[i] = y < 0 ? 1 / xs[i] ** -y : xs[i] ** y;
      continue;
    }
    let acc = 1,
      b = xs[i],
      e = y;
    while (e > 0) {
      if (e & 1) acc = wrapInt(Math.imul(acc, b), x.dtype);
      b = wrapInt(Math.imul(b, b), x.dtype);
      e >>= 1;
    }
    r[i] = acc;
  }
  return [fromNums(out, r)];
};
export const not = defUnary("not", {
  exactOnScalars: true,
  onnx: (c, x, d) => LE.logical(c, "Not", [x], d),
  kinds: "intbool",
  f: (x) => (x ? 0 : 1),
  fi: (x, d) => (d === "bool" ? (x ? 0 : 1) : wrapInt(~x, d)),
  fb: (x, d) => (d === "int64" ? BigInt.asIntN(64, ~x) : BigInt.asUintN(64, ~x)),
  zeroJvp: true,
});
export const populationCount = defUnary("population_count", {
  exactOnScalars: true,
  onnx: (c, x, d) => LE.populationCount(c, x, d),
  kinds: "int",
  f: (x) => x,
  fi: popcount,
  fb: (x) => {
    let v = BigInt.asUintN(64, x),
      c = 0n;
    while (v) {
      c += v & 1n;
      v >>= 1n;
    }
    return c;
  },
  zeroJvp: true,
});
export const clz = defUnary("clz", {
  exactOnScalars: true,
  onnx: (c, x, d) => LE.clz(c, x, d),
  kinds: "int",
  f: (x) => x,
  fi: (x, d) => {
    const b = bitsOf(d);
    const u = x < 0 ? x + 2 ** b : x;
    return u === 0 ? b : b - 1 - Math.floor(Math.log2(u));
  },
  fb: (x) => {
    const v = BigInt.asUintN(64, x);
    return v === 0n ? 64n : BigInt(64 - v.toString(2).length);
  },
  zeroJvp: true,
});
export const copyP = defUnary("copy", {
  cost: "view",
  exactOnScalars: true,
  onnx: "Identity",
  kinds: "any",
  f: (x) => x,
  fi: (x) => x,
  fb: (x) => x,
  jvp: (_x, _y, t) => ops.copy(t),
  linear: true,
});
