/** @file Binary elementwise primitives (add ... ge): abstract eval, reference impl, jvp, transpose, vmap and ONNX lowering. */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { wrapInt } from "../core/convert.js";
import { type DType, isBigInt, isFloat, isUnsigned } from "../core/dtype.js";
import {
  type MaybeZero,
  type Params,
  Primitive,
  type PrimitiveFacts,
  type PrimitiveRules,
  UndefinedPrimal,
  Zero,
} from "../core/primitive.js";
import { shapesEqual } from "../core/shape.js";
import { bigs, fromBigs, fromNums, nums } from "./ref-util.js";
import { nextafterF32, nextafterF64 } from "./special-math.js";
import * as ops from "./bind-ops.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { mathDtype, minMax, opIn } from "../compiler/lower-util.js";
import * as LM from "../compiler/lower-math.js";
import * as LE from "../compiler/lower-elementwise.js";

import { type Kinds, kindOk, kindText, vmapElementwise } from "./elementwise-kinds.js";

// ------------------------------------------------------------------ binary
interface BinarySpec {
  /** PrimitiveFacts.cost: what cost models count for it (default: one FLOP per element). */
  cost?: PrimitiveFacts["cost"];
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
  const p = new Primitive(name, rules, {
    cost: s.cost,
    shapePolymorphic: true,
    exactOnScalars: s.exactOnScalars,
  });
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
  cost: "transcendental",
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
