/** @file Elementwise primitives (unary and binary): abstract eval, reference impl, jvp, transpose and vmap rules. */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { wrapInt } from "../core/convert.js";
import { type DType, isBigInt, isBool, isFloat, isInteger, isUnsigned } from "../core/dtype.js";
import {
  type AxisData,
  type BDim,
  type MaybeZero,
  type Params,
  Primitive,
  type PrimitiveRules,
  UndefinedPrimal,
  Zero,
} from "../core/primitive.js";
import { shapesEqual } from "../core/shape.js";
import { bigs, fromBigs, fromNums, nums } from "./ref-util.js";
import {
  digamma,
  erf,
  erfc,
  erfinv,
  lgamma,
  nextafterF32,
  nextafterF64,
  polygamma as polygammaScalar,
} from "./special-math.js";
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
import { mathDtype, minMax, opIn } from "../compiler/lower-util.js";
import * as LM from "../compiler/lower-math.js";
import * as LE from "../compiler/lower-elementwise.js";

type Kinds = "float" | "int" | "bool" | "num" | "intbool" | "any";
function kindOk(k: Kinds, d: DType): boolean {
  switch (k) {
    case "float":
      return isFloat(d);
    case "int":
      return isInteger(d);
    case "bool":
      return isBool(d);
    case "num":
      return isFloat(d) || isInteger(d);
    case "intbool":
      return isInteger(d) || isBool(d);
    case "any":
      return true;
  }
}
const kindText: Record<Kinds, string> = {
  float: "a floating dtype",
  int: "an integer dtype",
  bool: "bool",
  num: "a numeric (non-bool) dtype",
  intbool: "an integer or bool dtype",
  any: "any dtype",
};

/** Batching rule shared by elementwise primitives: move batch dims to 0 and broadcast unbatched operands. */
export function vmapElementwise<P extends Params>(prim: Primitive<P>) {
  return (axis: AxisData, args: Array[], dims: BDim[], params: P): [Array[], BDim[]] => {
    // per-example shape: the largest unbatched rank (rank-0 operands broadcast, as in the primitive itself)
    const exShapes = args.map((a, i) => (dims[i] === null ? a.shape : a.shape.filter((_, k) => k !== dims[i])));
    const ex = exShapes.reduce((m, s) => (s.length > m.length ? s : m), [] as number[]);
    const xs = args.map((a, i) => {
      if (dims[i] === null) return a.ndim === 0 ? a : ops.broadcastBatch(a, axis.size, 0);
      const m = ops.moveaxis(a, dims[i]!, 0);
      return m.ndim - 1 === ex.length ? m : ops.broadcastInDim(m, [axis.size, ...ex], [0]);
    });
    const outs = ops.bindN(prim, xs, params);
    return [outs, outs.map(() => 0)];
  };
}

// ------------------------------------------------------------------ unary
interface UnarySpec {
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
export const exp = defUnary("exp", { onnx: "Exp", kinds: "float", f: Math.exp, jvp: (_x, y, t) => ops.mul(t, y) });
export const exp2 = defUnary("exp2", {
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => m.pow(2, v)),
  kinds: "float",
  f: (x) => 2 ** x,
  jvp: (_x, y, t) => ops.mul(t, ops.mul(y, ops.scalarLike(y, Math.LN2))),
});
export const log = defUnary("log", {
  onnx: (c, x, d) => LM.stableUnary(c, "Log", x, d),
  kinds: "float",
  f: Math.log,
  jvp: (x, _y, t) => ops.div(t, x),
});
export const log1p = defUnary("log1p", {
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => LM.log1p(m, v)),
  kinds: "float",
  f: Math.log1p,
  jvp: (x, _y, t) => ops.div(t, ops.add(x, ops.scalarLike(x, 1))),
});
export const expm1 = defUnary("expm1", {
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => LM.expm1(m, v)),
  kinds: "float",
  f: Math.expm1,
  jvp: (_x, y, t) => ops.mul(t, ops.add(y, ops.scalarLike(y, 1))),
});
export const tanh = defUnary("tanh", {
  onnx: "Tanh",
  kinds: "float",
  f: Math.tanh,
  jvp: (_x, y, t) => ops.mul(t, ops.sub(ops.scalarLike(y, 1), ops.mul(y, y))),
});
export const logistic = defUnary("logistic", {
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => LM.logistic(m, v)),
  kinds: "float",
  f: (x) => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x))),
  jvp: (_x, y, t) => ops.mul(t, ops.mul(y, ops.sub(ops.scalarLike(y, 1), y))),
});
export const sin = defUnary("sin", {
  onnx: (c, x, d) => LM.stableUnary(c, "Sin", x, d),
  kinds: "float",
  f: Math.sin,
  jvp: (x, _y, t) => ops.mul(t, ops.cos(x)),
});
export const cos = defUnary("cos", {
  onnx: (c, x, d) => LM.stableUnary(c, "Cos", x, d),
  kinds: "float",
  f: Math.cos,
  jvp: (x, _y, t) => ops.neg(ops.mul(t, ops.sin(x))),
});
export const tan = defUnary("tan", {
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
  exactOnScalars: true,
  onnx: "Sqrt",
  kinds: "float",
  f: Math.sqrt,
  jvp: (_x, y, t) => ops.div(t, ops.mul(y, ops.scalarLike(y, 2))),
});
// d rsqrt(x) = -0.5 * rsqrt(x) / x
export const rsqrt = defUnary("rsqrt", {
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, mathDtype(d), (m, [v]) => m.div(1, m.sqrt(v))),
  kinds: "float",
  f: (x) => 1 / Math.sqrt(x),
  jvp: (x, y, t) => ops.mul(t, ops.mul(ops.div(y, x), ops.scalarLike(y, -0.5))),
});
// d cbrt(x) = 1 / (3 cbrt(x)^2)
export const cbrt = defUnary("cbrt", {
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
  jvp: (x, _y, t) => ops.mul(t, ops.sign(x)),
});
export const erfP = defUnary("erf", {
  onnx: (c, x, d) => LE.kernelOr(c, "Erf", x, d, LM.erf64),
  kinds: "float",
  f: erf,
  jvp: (x, _y, t) => ops.mul(t, ops.mul(ops.scalarLike(x, 2 / Math.sqrt(Math.PI)), ops.exp(ops.neg(ops.mul(x, x))))),
});
export const erfcP = defUnary("erfc", {
  onnx: (c, x, d) => LM.viaDtype(c, [x], d, "float64", (m, [v]) => LM.erfc64(m, v)),
  kinds: "float",
  f: erfc,
  jvp: (x, _y, t) => ops.mul(t, ops.mul(ops.scalarLike(x, -2 / Math.sqrt(Math.PI)), ops.exp(ops.neg(ops.mul(x, x))))),
});
// d erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)^2)
export const erfInvP = defUnary("erf_inv", {
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
  exactOnScalars: true,
  onnx: "Identity",
  kinds: "any",
  f: (x) => x,
  fi: (x) => x,
  fb: (x) => x,
  jvp: (_x, _y, t) => ops.copy(t),
  linear: true,
});

// ------------------------------------------------------------------ binary
interface BinarySpec {
  kinds: Kinds;
  /** PrimitiveFacts.exactOnScalars: the lowering rounds exactly like f (default false). */
  exactOnScalars?: boolean;
  f: (a: number, b: number) => number;
  fi?: (a: number, b: number, d: DType) => number;
  fb?: (a: bigint, b: bigint, d: DType) => bigint;
  compare?: boolean;
  jvp?: (a: Array, b: Array, ta: MaybeZero, tb: MaybeZero, y: Array) => MaybeZero;
  transpose?: PrimitiveRules["transpose"];
  /** ONNX lowering: an op name (emitted at a dtype ORT has a kernel for) or a function of the operands' value names. */
  onnx?: string | ((ctx: LoweringContext, a: string, b: string, d: DType, params: Params, out: ShapedArray) => string);
}

function defBinary(name: string, s: BinarySpec): Primitive {
  const rules: PrimitiveRules = {
    abstractEval([a, b]) {
      if (a.dtype !== b.dtype)
        throw new TypeError(`${name} requires arguments to have the same dtypes, got ${a.dtype}, ${b.dtype}`);
      if (!kindOk(s.kinds, a.dtype)) throw new TypeError(`${name} requires ${kindText[s.kinds]}, got ${a.str()}`);
      // like JAX, a rank-0 operand broadcasts against the other (so scalars print as literals)
      if (!shapesEqual(a.shape, b.shape) && a.ndim !== 0 && b.ndim !== 0)
        throw new TypeError(`${name} requires arguments to have the same shape, got ${a.str()} and ${b.str()}`);
      return [
        new ShapedArray(
          a.ndim === 0 ? b.shape : a.shape,
          s.compare ? "bool" : a.dtype,
          s.compare ? false : a.weakType && b.weakType,
        ),
      ];
    },
    impl([a, b], _params, [out]) {
      const d = a.dtype;
      if (isBigInt(d)) {
        let ab = bigs(a),
          bb = bigs(b);
        if (ab.length !== out.size) ab = new BigInt64Array(out.size).fill(ab[0]);
        if (bb.length !== out.size) bb = new BigInt64Array(out.size).fill(bb[0]);
        if (s.compare)
          return [
            fromNums(
              out,
              globalThis.Array.from(ab, (v, i) => s.f(v < bb[i] ? -1 : v > bb[i] ? 1 : 0, 0)),
            ),
          ];
        const fb = s.fb;
        if (!fb) throw new TypeError(`${name}: not supported for ${d}`);
        return [
          fromBigs(
            out,
            globalThis.Array.from(ab, (v, i) => fb(v, bb[i], d)),
          ),
        ];
      }
      let as = nums(a),
        bs = nums(b);
      if (as.length !== out.size) as = new Float64Array(out.size).fill(as[0]);
      if (bs.length !== out.size) bs = new Float64Array(out.size).fill(bs[0]);
      const r = new Float64Array(as.length);
      if (s.compare) for (let i = 0; i < as.length; i++) r[i] = s.f(as[i], bs[i]);
      else if (!isFloat(d) && s.fi) for (let i = 0; i < as.length; i++) r[i] = s.fi(as[i], bs[i], d);
      else if (!isFloat(d)) for (let i = 0; i < as.length; i++) r[i] = wrapInt(s.f(as[i], bs[i]), d);
      else for (let i = 0; i < as.length; i++) r[i] = s.f(as[i], bs[i]);
      return [fromNums(out, r)];
    },
  };
  if (s.onnx) {
    const lo = s.onnx;
    rules.lower = (ctx, [a, b], params, [x], [o]) => [
      typeof lo === "string" ? opIn(ctx, lo, x.dtype, [a, b]) : lo(ctx, a, b, x.dtype, params, o),
    ];
  }
  // a binary elementwise lowering sees only dtypes and ranks (a rank-0 operand broadcasts in ONNX too)
  const p = new Primitive(name, rules, { shapePolymorphic: true, exactOnScalars: s.exactOnScalars });
  if (s.compare || (s.kinds !== "float" && s.kinds !== "num" && !s.jvp)) {
    rules.jvp = (primals, _t, params) => {
      const y = ops.bindN(p, primals, params)[0];
      return [[y], [new Zero(y.aval)]];
    };
  } else if (s.jvp) {
    const jr = s.jvp;
    rules.jvp = ([a, b], [ta, tb], params) => {
      const y = ops.bindN(p, [a, b], params)[0];
      if (ta instanceof Zero && tb instanceof Zero) return [[y], [new Zero(y.aval)]];
      const t = jr(a, b, ta, tb, y);
      return [[y], [t instanceof Zero || t.ndim === y.ndim ? t : ops.broadcastInDim(t, y.shape, [])]];
    };
  }
  if (s.transpose) rules.transpose = s.transpose;
  rules.vmap = vmapElementwise(p);
  return p;
}

/** Sums a cotangent down to a rank-0 operand that was implicitly broadcast. */
function unb(ct: MaybeZero, arg: Array | UndefinedPrimal): MaybeZero | null {
  const aval = arg instanceof UndefinedPrimal ? arg.aval : null;
  if (!aval) return null;
  if (ct instanceof Zero) return new Zero(aval);
  return aval.ndim === 0 && ct.ndim !== 0 ? ops.reduceSum(ct, [...ct.shape.keys()]) : ct;
}
const cmp = (f: (c: number) => boolean) => (a: number, b: number) =>
  Number.isNaN(a) || Number.isNaN(b) ? (f === ne_ ? 1 : 0) : f(a < b ? -1 : a > b ? 1 : 0) ? 1 : 0;
const ne_ = (c: number) => c !== 0;
const big = (d: DType, v: bigint) => (d === "int64" ? BigInt.asIntN(64, v) : BigInt.asUintN(64, v));
const addT = (ta: MaybeZero, tb: MaybeZero): MaybeZero =>
  ta instanceof Zero ? tb : tb instanceof Zero ? ta : ops.add(ta, tb);
const scaleT = (t: MaybeZero, s: Array): MaybeZero | null => (t instanceof Zero ? null : ops.mul(t, s));
const sumT = (...ts: (MaybeZero | null)[]): MaybeZero => {
  const live = ts.filter((t): t is Array => t !== null && !(t instanceof Zero));
  return live.length === 0 ? (ts.find((t) => t instanceof Zero) as Zero) : live.reduce((x, y) => ops.add(x, y));
};

export const add = defBinary("add", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => (d === "bool" ? c.op("Or", [a, b]) : opIn(c, "Add", d, [a, b])),
  kinds: "any",
  f: (a, b) => a + b,
  fi: (a, b, d) => (d === "bool" ? (a || b ? 1 : 0) : wrapInt(a + b, d)),
  fb: (a, b, d) => big(d, a + b),
  jvp: (_a, _b, ta, tb) => addT(ta, tb),
  transpose: ([ct], args) => [unb(ct, args[0]), unb(ct, args[1])],
});
export const sub = defBinary("sub", {
  exactOnScalars: true,
  onnx: "Sub",
  kinds: "num",
  f: (a, b) => a - b,
  fb: (a, b, d) => big(d, a - b),
  jvp: (_a, _b, ta, tb) => (tb instanceof Zero ? ta : ta instanceof Zero ? ops.neg(tb) : ops.sub(ta, tb)),
  transpose: ([ct], args) => [unb(ct, args[0]), unb(ct instanceof Zero ? ct : ops.neg(ct), args[1])],
});
export const mul = defBinary("mul", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => (d === "bool" ? c.op("And", [a, b]) : opIn(c, "Mul", d, [a, b])),
  kinds: "any",
  f: (a, b) => a * b,
  fi: (a, b, d) => (d === "bool" ? (a && b ? 1 : 0) : wrapInt(Math.imul(a, b), d)),
  fb: (a, b, d) => big(d, a * b),
  jvp: (a, b, ta, tb) => sumT(scaleT(ta, b), scaleT(tb, a)),
  transpose: ([ct], [a, b]) => {
    // mul is linear in whichever operand is the undefined (linear) one
    if (ct instanceof Zero) return [ct, ct];
    return [
      ops.isUndefined(a) ? unb(ops.mul(ct, b as Array), a) : null,
      ops.isUndefined(b) ? unb(ops.mul(a as Array, ct), b) : null,
    ];
  },
});
export const div = defBinary("div", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => (isFloat(d) ? opIn(c, "Div", d, [a, b]) : LE.intDiv(c, a, b, d)),
  kinds: "num",
  f: (a, b) => a / b,
  fi: (a, b, d) => (b === 0 ? (isUnsigned(d) ? wrapInt(-1, d) : -1) : wrapInt(Math.trunc(a / b), d)),
  fb: (a, b, d) => (b === 0n ? big(d, -1n) : big(d, a / b)),
  // d(a/b) = ta/b - tb * (a/b)/b
  jvp: (_a, b, ta, tb, y) =>
    sumT(ta instanceof Zero ? null : ops.div(ta, b), tb instanceof Zero ? null : ops.neg(ops.mul(tb, ops.div(y, b)))),
  transpose: ([ct], [a, b]) => {
    if (!ops.isUndefined(a) || ops.isUndefined(b)) throw new Error("div transpose: only the numerator may be linear");
    return [unb(ct instanceof Zero ? ct : ops.div(ct, b as Array), a), null];
  },
});
export const rem = defBinary("rem", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => (isFloat(d) ? opIn(c, "Mod", d, [a, b], { fmod: 1 }, d, "Mod(fmod=1)") : LE.intRem(c, a, b, d)),
  kinds: "num",
  f: (a, b) => a % b,
  fi: (a, b, d) => (b === 0 ? a : wrapInt(a % b, d)),
  fb: (a, b) => (b === 0n ? a : a % b),
  // d rem(a,b) = ta - tb * trunc(a/b)
  jvp: (a, b, ta, tb) =>
    sumT(ta instanceof Zero ? null : ta, tb instanceof Zero ? null : ops.neg(ops.mul(tb, ops.truncDiv(a, b)))),
});
export const pow = defBinary("pow", {
  onnx: (c, a, b, d) => (isFloat(d) ? opIn(c, "Pow", d, [a, b]) : LE.intPow(c, a, b, d)),
  kinds: "num",
  f: (a, b) => a ** b,
  fi: (a, b, d) => {
    let acc = 1;
    for (let i = 0; i < b; i++) acc = wrapInt(Math.imul(acc, a), d);
    return b < 0 ? 0 : acc;
  },
  fb: (a, b, d) => (b < 0n ? 0n : big(d, a ** b)),
  // d a^b = b a^(b-1) ta + log(a) a^b tb  (with 0 log 0 treated as 0)
  jvp: (a, b, ta, tb, y) =>
    sumT(
      ta instanceof Zero ? null : ops.mul(ta, ops.mul(b, ops.pow(a, ops.sub(b, ops.scalarLike(b, 1))))),
      tb instanceof Zero
        ? null
        : ops.mul(tb, ops.select(ops.eq(a, ops.scalarLike(a, 0)), ops.zerosLikeArray(y), ops.mul(ops.log(a), y))),
    ),
});
const maxMinJvp =
  (pick: (a: Array, b: Array) => Array) =>
  (a: Array, b: Array, ta: MaybeZero, tb: MaybeZero): MaybeZero => {
    // ties share the tangent equally, as JAX does
    const ga = ops.convert(pick(a, b), a.dtype);
    const tie = ops.mul(ops.convert(ops.eq(a, b), a.dtype), ops.scalarLike(a, 0.5));
    const wa = ops.add(ga, tie),
      wb = ops.sub(ops.sub(ops.scalarLike(a, 1), ga), tie);
    return sumT(scaleT(ta, wa), scaleT(tb, wb));
  };
export const max = defBinary("max", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => minMax(c, "Max", a, b, d),
  kinds: "any",
  f: (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b)),
  fb: (a, b) => (a > b ? a : b),
  jvp: maxMinJvp((a, b) => ops.gt(a, b)),
});
export const min = defBinary("min", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => minMax(c, "Min", a, b, d),
  kinds: "any",
  f: (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b)),
  fb: (a, b) => (a < b ? a : b),
  jvp: maxMinJvp((a, b) => ops.lt(a, b)),
});
// d atan2(a, b) = (b ta - a tb) / (a^2 + b^2)
export const atan2 = defBinary("atan2", {
  onnx: (c, a, b, d) => LM.viaDtype(c, [a, b], d, "float64", (m, [y, x]) => LM.atan2(m, y, x)),
  kinds: "float",
  f: Math.atan2,
  jvp: (a, b, ta, tb) => {
    const den = ops.add(ops.mul(a, a), ops.mul(b, b));
    return sumT(
      ta instanceof Zero ? null : ops.mul(ta, ops.div(b, den)),
      tb instanceof Zero ? null : ops.neg(ops.mul(tb, ops.div(a, den))),
    );
  },
});
export const nextafter = defBinary("nextafter", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LM.viaDtype(c, [a, b], d, mathDtype(d), (m, [x, y]) => LM.nextafter(m, x, y)),
  kinds: "float",
  f: nextafterF64,
});
nextafter.rules.impl = ([a, b], _p, [out]) => {
  let as = nums(a),
    bs = nums(b);
  // a rank-0 operand broadcasts
  if (as.length !== out.size) as = new Float64Array(out.size).fill(as[0]);
  if (bs.length !== out.size) bs = new Float64Array(out.size).fill(bs[0]);
  const f = a.dtype === "float64" ? nextafterF64 : nextafterF32;
  return [
    fromNums(
      out,
      as.map((v, i) => f(v, bs[i])),
    ),
  ];
};
nextafter.rules.jvp = (primals, _t, params) => {
  const y = ops.bindN(nextafter, primals, params)[0];
  return [[y], [new Zero(y.aval)]];
};
export const and = defBinary("and", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.logical(c, "And", [a, b], d),
  kinds: "intbool",
  f: (a, b) => a & b,
  fi: (a, b, d) => wrapInt(a & b, d),
  fb: (a, b) => a & b,
});
export const or = defBinary("or", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.logical(c, "Or", [a, b], d),
  kinds: "intbool",
  f: (a, b) => a | b,
  fi: (a, b, d) => wrapInt(a | b, d),
  fb: (a, b) => a | b,
});
export const xor = defBinary("xor", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.logical(c, "Xor", [a, b], d),
  kinds: "intbool",
  f: (a, b) => a ^ b,
  fi: (a, b, d) => wrapInt(a ^ b, d),
  fb: (a, b) => a ^ b,
});
const bw = (d: DType) => (d.endsWith("8") ? 8 : d.endsWith("16") ? 16 : d.endsWith("32") ? 32 : 64);
export const shiftLeft = defBinary("shift_left", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.shift(c, "left", a, b, d),
  kinds: "int",
  f: (a) => a,
  fi: (a, b, d) => (b < 0 || b >= bw(d) ? 0 : wrapInt(a * 2 ** b, d)),
  fb: (a, b, d) => (b < 0n || b >= 64n ? 0n : big(d, a << b)),
});
export const shiftRightLogical = defBinary("shift_right_logical", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.shift(c, "logical", a, b, d),
  kinds: "int",
  f: (a) => a,
  fi: (a, b, d) => {
    const w = bw(d);
    if (b < 0 || b >= w) return 0;
    const u = a < 0 ? a + 2 ** w : a;
    return wrapInt(Math.floor(u / 2 ** b), d);
  },
  fb: (a, b, d) => (b < 0n || b >= 64n ? 0n : big(d, BigInt.asUintN(64, a) >> b)),
});
export const shiftRightArithmetic = defBinary("shift_right_arithmetic", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.shift(c, "arithmetic", a, b, d),
  kinds: "int",
  f: (a) => a,
  fi: (a, b, d) => {
    const w = bw(d);
    const s = b < 0 || b >= w ? w - 1 : b;
    const sv = isUnsigned(d) && a >= 2 ** (w - 1) ? a - 2 ** w : a;
    return wrapInt(Math.floor(sv / 2 ** s), d);
  },
  fb: (a, b, d) => {
    const s = b < 0n || b >= 64n ? 63n : b;
    return big(d, BigInt.asIntN(64, a) >> s);
  },
});
export const eq = defBinary("eq", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.compare(c, "Equal", a, b, d),
  kinds: "any",
  compare: true,
  f: cmp((c) => c === 0),
});
export const ne = defBinary("ne", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.compare(c, "NotEqual", a, b, d),
  kinds: "any",
  compare: true,
  f: cmp(ne_),
});
export const lt = defBinary("lt", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.compare(c, "Less", a, b, d),
  kinds: "any",
  compare: true,
  f: cmp((c) => c < 0),
});
export const le = defBinary("le", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.compare(c, "LessOrEqual", a, b, d),
  kinds: "any",
  compare: true,
  f: cmp((c) => c <= 0),
});
export const gt = defBinary("gt", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.compare(c, "Greater", a, b, d),
  kinds: "any",
  compare: true,
  f: cmp((c) => c > 0),
});
export const ge = defBinary("ge", {
  exactOnScalars: true,
  onnx: (c, a, b, d) => LE.compare(c, "GreaterOrEqual", a, b, d),
  kinds: "any",
  compare: true,
  f: cmp((c) => c >= 0),
});

export { ArrayImpl };
