/**
 * @file Lowerings of the control-flow primitives cond / while / scan to ONNX If and Loop (used by their definitions in
 * src/transforms); complex carries, operands and outputs travel as their float storage [..., 2].
 */
import type { ShapedArray } from "../core/aval.js";
import { type DType, isComplex, realDType } from "../core/dtype.js";
import type { Jaxpr } from "../core/jaxpr.js";
import type { LoweringContext } from "../core/lowering-types.js";
import type { PrimitiveRules } from "../core/primitive.js";
import { filled, reshape } from "./lower-util.js";
import { rev } from "./lower-structural.js";

type Lower = NonNullable<PrimitiveRules["lower"]>;
/** The ONNX type a value travels as: a complex value is its float storage [..., 2] (notes/complex.md). */
const wire = (dtype: DType, shape: readonly number[]) =>
  isComplex(dtype) ? { dtype: realDType(dtype), shape: [...shape, 2] } : { dtype, shape };
const typeOf = (a: ShapedArray) => wire(a.dtype, a.shape);

/** cond(index, *operands): a chain of If nodes, branch k taken when index == k (index is clamped). */
export const lowerCond: Lower = (ctx, [idx, ...xs], params, _in, outAvals) => {
  const branches = params.branches as Jaxpr[];
  const outs = outAvals.map(typeOf);
  const build = (k: number, c: LoweringContext): string[] => {
    if (k === branches.length - 1) return c.inlineJaxpr(branches[k], xs);
    const pred = c.op("LessOrEqual", [idx, c.scalar("int32", k)]);
    const thenG = c.subgraph(`cond_b${k}`, [], outs, (s) => s.inlineJaxpr(branches[k], xs));
    const elseG = c.subgraph(`cond_r${k}`, [], outs, (s) => build(k + 1, s));
    return c.node("If", [pred], { then_branch: thenG, else_branch: elseG }, outs.length);
  };
  return build(0, ctx);
};

/** while(cond_consts, body_consts, *init): Loop with no trip count; the body recomputes the predicate. */
export const lowerWhile: Lower = (ctx, args, params, inAvals) => {
  const cj = params.cond_jaxpr as Jaxpr,
    bj = params.body_jaxpr as Jaxpr;
  const cn = params.cond_nconsts as number,
    bn = params.body_nconsts as number;
  const cc = args.slice(0, cn),
    bc = args.slice(cn, cn + bn),
    init = args.slice(cn + bn);
  const carryT = inAvals.slice(cn + bn).map(typeOf);
  const c0 = ctx.inlineJaxpr(cj, [...cc, ...init])[0];
  const scalar = (dtype: "int64" | "bool") => ({ dtype, shape: [] as number[] });
  const body = ctx.subgraph(
    "while_body",
    [scalar("int64"), scalar("bool"), ...carryT],
    [scalar("bool"), ...carryT],
    (s, [, , ...carry]) => {
      const next = s.inlineJaxpr(bj, [...bc, ...carry]);
      const c = s.inlineJaxpr(cj, [...cc, ...next])[0];
      return [c, ...next];
    },
  );
  return ctx.node("Loop", ["", c0, ...init], { body }, init.length);
};

/** scan(consts, init, xs): Loop with trip count `length`, slicing xs per step and stacking ys as scan outputs. */
export const lowerScan: Lower = (ctx, args, params, inAvals, outAvals) => {
  const j = params.jaxpr as Jaxpr;
  const nc = params.num_consts as number,
    nk = params.num_carry as number,
    n = params.length as number;
  const reverse = params.reverse as boolean;
  const consts = args.slice(0, nc),
    init = args.slice(nc, nc + nk),
    xs = args.slice(nc + nk);
  const carryT = inAvals.slice(nc, nc + nk).map(typeOf);
  const ysAvals = outAvals.slice(nk);
  if (n === 0)
    return [
      ...init,
      ...ysAvals.map((a) => {
        const w = typeOf(a);
        return filled(ctx, w.dtype, w.shape, 0);
      }),
    ];
  const yT = ysAvals.map((a) => wire(a.dtype, a.shape.slice(1)));
  const scalar = (dtype: "int64" | "bool") => ({ dtype, shape: [] as number[] });
  const body = ctx.subgraph(
    "scan_body",
    [scalar("int64"), scalar("bool"), ...carryT],
    [scalar("bool"), ...carryT, ...yT],
    (s, [i, c, ...carry]) => {
      const at = reverse ? s.op("Sub", [s.scalar("int64", n - 1), i]) : i;
      const xi = xs.map((x) => s.op("Gather", [x, at], { axis: 0 }));
      const outs = s.inlineJaxpr(j, [...consts, ...carry, ...xi]);
      return [c, ...outs];
    },
  );
  const res = ctx.node(
    "Loop",
    [ctx.scalar("int64", n), ctx.scalar("bool", true), ...init],
    { body },
    nk + ysAvals.length,
  );
  const ys = res.slice(nk).map((y, k) => {
    const r = reverse ? rev(ctx, y, [0]) : y;
    return reshape(ctx, r, typeOf(ysAvals[k]).shape);
  });
  return [...res.slice(0, nk), ...ys];
};

/** Lowerings for primitives defined outside the primitive files, by name. */
