/** @file lax special-function primitives igamma, igammac, igamma_grad_a, regularized_incomplete_beta, bessel_i0e, bessel_i1e and zeta: abstract eval, float64 reference impl, jvp (JAX's rules), vmap. */
import type { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { isFloat } from "../core/dtype.js";
import { type MaybeZero, Primitive, type PrimitiveRules, Zero } from "../core/primitive.js";
import { bind } from "../core/trace.js";
import * as ops from "./bind-ops.js";
import { vmapElementwise } from "./elementwise-kinds.js";
import { fromNums, nums } from "./ref-util.js";
import { betainc, besselI0e, besselI1e, igamma, igammaGradA, igammac, zeta } from "./special-math-incomplete.js";

type Jvp = NonNullable<PrimitiveRules["jvp"]>;
const LOWERED_BY_PROGRAM =
  "a series / continued fraction written as a jaxts program (src/lowerings/special-functions.ts), installed with the program lowerings";

/**
 * An elementwise float primitive of `arity` operands of one dtype: equal shapes, or rank-0 operands broadcast
 * against the others (as JAX's scalar literals). The reference runs `f` in float64 and rounds to the dtype.
 */
function defSpecial(
  name: string,
  signature: string,
  f: (...v: number[]) => number,
  rules: Partial<PrimitiveRules> = {},
): Primitive {
  const p: Primitive = new Primitive(name, {
    abstractEval(avals) {
      const d = avals[0].dtype;
      if (!isFloat(d) || avals.some((a) => a.dtype !== d))
        throw new TypeError(
          `${name}${signature} requires operands of one floating dtype, got ${avals.map((a) => a.str()).join(", ")}`,
        );
      const full = avals.find((a) => a.ndim !== 0) ?? avals[0];
      if (avals.some((a) => a.ndim !== 0 && a.shape.join() !== full.shape.join()))
        throw new TypeError(
          `${name}${signature} requires operands of the same shape (or rank 0), got ${avals.map((a) => a.str()).join(", ")}`,
        );
      return [
        new ShapedArray(
          full.shape,
          d,
          avals.every((a) => a.weakType),
        ),
      ];
    },
    impl(args, _params, [out]) {
      const vs = args.map((a) => {
        const v = nums(a);
        return v.length === out.size ? v : new Float64Array(out.size).fill(v[0]);
      });
      const r = new Float64Array(out.size);
      for (let i = 0; i < r.length; i++) r[i] = f(...vs.map((v) => v[i]));
      return [fromNums(out, r)];
    },
    missing: { transpose: "not linear", lower: LOWERED_BY_PROGRAM },
    ...rules,
  });
  p.rules.vmap = vmapElementwise(p);
  return p;
}

const bind1 = (p: Primitive, args: Array[]): Array => bind(p, args)[0];
/** Sum of t_i * d_i over the tangents that are not symbolic zeros (d_i computed only when needed). */
function tangentSum(y: Array, parts: [MaybeZero, () => Array][]): MaybeZero {
  let acc: Array | null = null;
  for (const [t, d] of parts) {
    if (t instanceof Zero) continue;
    const term = ops.mul(t, d());
    acc = acc === null ? term : ops.add(acc, term);
  }
  if (acc === null) return new Zero(y.aval);
  // a rank-0 tangent times a rank-0 derivative stays rank 0 where the output is broadcast
  return acc.shape.join() === y.shape.join() ? acc : ops.broadcastInDim(acc, y.shape, []);
}

/** d P(a, x)/dx = x^(a-1) e^-x / Gamma(a), as JAX's igamma_gradx. */
const igammaDx = (a: Array, x: Array): Array =>
  ops.exp(ops.sub(ops.sub(ops.mul(ops.sub(a, ops.scalarLike(a, 1)), ops.log(x)), x), ops.lgamma(a)));

const igammaJvp =
  (sign: 1 | -1): Jvp =>
  ([a, x], [ta, tx]) => {
    const y = bind1(sign === 1 ? igammaP : igammacP, [a, x]);
    const s = (v: Array): Array => (sign === 1 ? v : ops.neg(v));
    return [
      [y],
      [
        tangentSum(y, [
          [ta, () => s(bind1(igammaGradAP, [a, x]))],
          [tx, () => s(igammaDx(a, x))],
        ]),
      ],
    ];
  };

/** lax.igamma(a, x): the regularized lower incomplete gamma function P(a, x). */
export const igammaP: Primitive = defSpecial("igamma", "(a, x)", igamma, { jvp: (...r) => igammaJvp(1)(...r) });
/** lax.igammac(a, x): Q(a, x) = 1 - P(a, x). */
export const igammacP: Primitive = defSpecial("igammac", "(a, x)", igammac, { jvp: (...r) => igammaJvp(-1)(...r) });
/** lax.igamma_grad_a(a, x): dP(a, x)/da. */
export const igammaGradAP: Primitive = defSpecial("igamma_grad_a", "(a, x)", igammaGradA, {
  missing: {
    jvp: "JAX defines no derivative of igamma_grad_a (second derivatives of igamma in a)",
    transpose: "not linear",
    lower: LOWERED_BY_PROGRAM,
  },
});

/** lax.regularized_incomplete_beta(a, b, x) (betainc): differentiable in x only, as in JAX. */
export const betaincP: Primitive = defSpecial("regularized_incomplete_beta", "(a, b, x)", betainc, {
  jvp([a, b, x], [ta, tb, tx]) {
    if (!(ta instanceof Zero) || !(tb instanceof Zero))
      throw new Error(
        `regularized_incomplete_beta (betainc): the gradient with respect to a and b is not supported (as in JAX); got a ${a.aval.str()}, b ${b.aval.str()} with nonzero tangents`,
      );
    const y = bind1(betaincP, [a, b, x]);
    // dI/dx = x^(a-1) (1-x)^(b-1) / B(a, b)
    const one = ops.scalarLike(x, 1);
    const lbeta = ops.sub(ops.add(ops.lgamma(a), ops.lgamma(b)), ops.lgamma(ops.add(a, b)));
    const dx = () =>
      ops.exp(
        ops.sub(ops.add(ops.mul(ops.sub(b, one), ops.log1p(ops.neg(x))), ops.mul(ops.sub(a, one), ops.log(x))), lbeta),
      );
    return [[y], [tangentSum(y, [[tx, dx]])]];
  },
});

/** lax.bessel_i0e(x) = e^-|x| I0(x); d/dx = i1e(x) - sign(x) i0e(x). */
export const besselI0eP: Primitive = defSpecial("bessel_i0e", "(x)", besselI0e, {
  jvp([x], [t]) {
    const y = bind1(besselI0eP, [x]);
    return [[y], [tangentSum(y, [[t, () => ops.sub(bind1(besselI1eP, [x]), ops.mul(ops.sign(x), y))]])]];
  },
});

/** lax.bessel_i1e(x) = e^-|x| I1(x); d/dx = i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at x = 0 (JAX's rule). */
export const besselI1eP: Primitive = defSpecial("bessel_i1e", "(x)", besselI1e, {
  jvp([x], [t]) {
    const y = bind1(besselI1eP, [x]);
    const d = () => {
      const eps = x.dtype === "float64" ? 2 ** -52 : 2 ** -23;
      const notTiny = ops.gt(ops.abs(x), ops.scalarLike(x, eps));
      const sx = ops.select(notTiny, x, ops.fullLike(x, eps));
      const dy = ops.sub(bind1(besselI0eP, [sx]), ops.mul(y, ops.add(ops.sign(sx), ops.div(ops.scalarLike(x, 1), sx))));
      return ops.select(notTiny, dy, ops.fullLike(x, 0.5));
    };
    return [[y], [tangentSum(y, [[t, d]])]];
  },
});

/** lax.zeta(x, q): the Hurwitz zeta function (JAX defines no derivative). */
export const zetaP: Primitive = defSpecial("zeta", "(x, q)", zeta, {
  missing: {
    jvp: "JAX defines no derivative of zeta",
    transpose: "not linear",
    lower: LOWERED_BY_PROGRAM,
  },
});

export const igammaOp = (a: Array, x: Array): Array => bind1(igammaP, [a, x]);
export const igammacOp = (a: Array, x: Array): Array => bind1(igammacP, [a, x]);
export const igammaGradAOp = (a: Array, x: Array): Array => bind1(igammaGradAP, [a, x]);
export const betaincOp = (a: Array, b: Array, x: Array): Array => bind1(betaincP, [a, b, x]);
export const besselI0eOp = (x: Array): Array => bind1(besselI0eP, [x]);
export const besselI1eOp = (x: Array): Array => bind1(besselI1eP, [x]);
export const zetaOp = (x: Array, q: Array): Array => bind1(zetaP, [x, q]);
