/** @file Control-flow primitives: cond/switch, while_loop, scan (with jvp, transpose, vmap), and lax.foriLoop / lax.map on top. */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import type { ShapedArray } from "../core/aval.js";
import { isInexact } from "../core/dtype.js";
import { Jaxpr, Var, evalJaxpr } from "../core/jaxpr.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { type MaybeZero, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { bind, describe, evalTrace, withTrace } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { instantiateZero, jvpFlat } from "./jvp.js";
import { backwardPass } from "./linearize.js";
import { partialEvalJaxpr } from "./partial-eval.js";
import { vmapFlat, vmapFlatKeep } from "./vmap.js";
import { lowerCond, lowerWhile } from "../compiler/lower-control.js";
import { promoteWeakCarry } from "./carry-check.js";

/** Traces f at avals to a jaxpr whose constvars become leading invars; returns it with the consts. */
export function closeOver(
  f: (...xs: Array[]) => Array[],
  avals: ShapedArray[],
  name: string,
): { jaxpr: Jaxpr; consts: Array[] } {
  const { jaxpr, consts } = traceToJaxpr(f, avals, name);
  return { jaxpr: new Jaxpr([], [...jaxpr.constvars, ...jaxpr.invars], jaxpr.outvars, jaxpr.eqns), consts };
}
const evalEager = (j: Jaxpr, args: Array[]): Array[] => withTrace(evalTrace, () => evalJaxpr(j, [], args));
const checkSame = (fn: string, a: ShapedArray[], b: ShapedArray[], what: string) => {
  if (a.length !== b.length || a.some((x, i) => !x.sameType(b[i]))) {
    throw new TypeError(
      `${fn}: ${what} must have identical types; got (${a.map((x) => x.str()).join(", ")}) and (${b.map((x) => x.str()).join(", ")})`,
    );
  }
};

// ================================================================ cond
type CondP = { branches: Jaxpr[] };
export const condP: Primitive<CondP> = new Primitive<CondP>("cond", {
  abstractEval([idx, ...xs], { branches }) {
    if (idx.ndim !== 0 || idx.dtype !== "int32")
      throw new TypeError(`cond: index must be an int32 scalar, got ${idx.str()}`);
    branches.forEach((b) => checkSame("cond", b.inAvals, xs, "branch inputs and operands"));
    branches.forEach((b) => checkSame("cond", b.outAvals, branches[0].outAvals, "branch outputs"));
    return branches[0].outAvals;
  },
  impl([idx, ...xs], { branches }) {
    const i = Math.min(Math.max(Number(idx.item()), 0), branches.length - 1);
    return evalEager(branches[i], xs) as ArrayImpl[];
  },
  jvp([idx, ...xs], [, ...ts], { branches }) {
    if (idx instanceof ArrayImpl) {
      const i = Math.min(Math.max(Number(idx.item()), 0), branches.length - 1);
      return jvpFlat((...ys) => evalJaxpr(branches[i], [], ys), xs, ts);
    }
    // index unknown at trace time: differentiate every branch and select (what vmap of cond does in JAX)
    const all = branches.map((b) => jvpFlat((...ys) => evalJaxpr(b, [], ys), xs, ts));
    const sel = (k: number, which: 0 | 1) =>
      ops.selectN(
        clampIdx(idx, branches.length),
        all.map((r) => instantiateZero(r[which][k])),
      );
    const n = branches[0].outvars.length;
    return [
      [...globalThis.Array(n).keys()].map((k) => sel(k, 0)),
      [...globalThis.Array(n).keys()].map((k) => sel(k, 1)),
    ];
  },
  vmap(axis, [idx, ...xs], [di, ...dxs], { branches }) {
    if (di === null) {
      // an output that no branch makes depend on the batch stays unbatched (JAX's switch with unused varying operands)
      const batched = branches[0].outvars.map(() => false);
      for (const b of branches) {
        closeOver(
          (...ys) => {
            const r = vmapFlatKeep((...zs) => evalJaxpr(b, [], zs), ys, dxs, axis);
            r.dims.forEach((d, k) => {
              if (d !== null) batched[k] = true;
            });
            return r.outs;
          },
          xs.map((x) => x.aval),
          "vmap(cond)",
        );
      }
      const outDim = (k: number) => (batched[k] ? 0 : null);
      const bs = branches.map((b) =>
        closeOver(
          (...ys) => vmapFlat((...zs) => evalJaxpr(b, [], zs), ys, dxs, outDim, axis),
          xs.map((x) => x.aval),
          "vmap(cond)",
        ),
      );
      const consts = bs.flatMap((b) => b.consts);
      let off = 0;
      const unified = bs.map((b) => {
        const j = padConsts(b.jaxpr, b.consts.length, off, consts);
        off += b.consts.length;
        return j;
      });
      const outs = bind(condP, [idx, ...consts, ...xs], { branches: unified });
      return [outs, outs.map((_, k) => outDim(k))];
    }
    const ib = ops.moveaxis(idx, di, 0);
    const res = branches.map((b) =>
      vmapFlat(
        (...zs) => evalJaxpr(b, [], zs),
        xs,
        dxs,
        () => 0,
        axis,
      ),
    );
    const outs = res[0].map((_, k) => {
      const cases = res.map((r) => r[k]);
      const p = ops.broadcastInDim(clampIdx(ib, branches.length), cases[0].shape, [0]);
      return ops.selectN(p, cases);
    });
    return [outs, outs.map(() => 0)];
  },
  lower: lowerCond,
  lowerComplex: lowerCond,
  missing: {
    transpose:
      "cond is differentiated by inlining the taken branch or selecting among all branches, so linear jaxprs never contain it",
  },
});
function clampIdx(idx: Array, n: number): Array {
  return ops.clamp(0, ops.convert(idx, "int32"), n - 1);
}
/** Gives a branch jaxpr (consts first) the full list of all branches' consts as leading invars. */
function padConsts(j: Jaxpr, mine: number, off: number, all: Array[]): Jaxpr {
  const before = all.slice(0, off).map((c) => new Var(c.aval));
  const after = all.slice(off + mine).map((c) => new Var(c.aval));
  return new Jaxpr([], [...before, ...j.invars.slice(0, mine), ...after, ...j.invars.slice(mine)], j.outvars, j.eqns);
}

/** lax.cond(pred, trueFun, falseFun, ...operands). */
export function cond(
  pred: Array | boolean,
  trueFun: (...xs: Array[]) => Array | Array[],
  falseFun: (...xs: Array[]) => Array | Array[],
  ...operands: Array[]
): Array | Array[] {
  const p = typeof pred === "boolean" ? ops.full([], pred, "bool") : pred;
  if (p.ndim !== 0) throw new TypeError(`lax.cond: pred must be a scalar, got shape [${p.shape}]`);
  const idx = ops.convert(p.dtype === "bool" ? p : ops.ne(p, ops.scalarLike(p, 0)), "int32");
  return switchImpl("lax.cond", idx, [falseFun, trueFun], operands);
}
/** lax.switch(index, branches, ...operands): index clamped into range. */
export function switch_(
  index: Array | number,
  branches: ((...xs: Array[]) => Array | Array[])[],
  ...operands: Array[]
): Array | Array[] {
  if (!globalThis.Array.isArray(branches) || branches.length === 0)
    throw new TypeError(
      `lax.switch: branches must be a non-empty list of functions, got ${globalThis.Array.isArray(branches) ? "an empty list" : describe(branches)}`,
    );
  branches.forEach((b, k) => {
    if (typeof b !== "function") throw new TypeError(`lax.switch: branch ${k} is ${describe(b)}, expected a function`);
  });
  if (typeof index !== "number" && !(index instanceof Array))
    throw new TypeError(
      `lax.switch: index must be an integer scalar (a JS number or a 0-d Array), got ${describe(index)}`,
    );
  if (index instanceof Array && index.ndim !== 0)
    throw new TypeError(`lax.switch: index must be a scalar, got an Array of shape [${index.shape}]`);
  const i = typeof index === "number" ? ops.full([], index, "int32") : ops.convert(index, "int32");
  return switchImpl("lax.switch", clampIdx(i, branches.length), branches, operands);
}
function switchImpl(
  fn: string,
  idx: Array,
  fns: ((...xs: Array[]) => Array | Array[])[],
  operands: Array[],
): Array | Array[] {
  let single = false;
  const traced = fns.map((f) =>
    closeOver(
      (...xs) => {
        const r = f(...xs);
        single = !globalThis.Array.isArray(r);
        return single ? [r as Array] : (r as Array[]);
      },
      operands.map((o) => o.aval),
      fn,
    ),
  );
  traced.forEach((t) =>
    checkSame(fn, t.jaxpr.outAvals, traced[0].jaxpr.outAvals, "branch outputs (true_fun and false_fun output)"),
  );
  const consts = traced.flatMap((t) => t.consts);
  let off = 0;
  const branches = traced.map((t) => {
    const j = padConsts(t.jaxpr, t.consts.length, off, consts);
    off += t.consts.length;
    return j;
  });
  const outs = bind(condP, [idx, ...consts, ...operands], { branches });
  return single ? outs[0] : outs;
}

// ================================================================ while_loop
type WhileP = { cond_jaxpr: Jaxpr; body_jaxpr: Jaxpr; cond_nconsts: number; body_nconsts: number };
export const whileP: Primitive<WhileP> = new Primitive<WhileP>("while", {
  abstractEval(avals, { cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts }) {
    const init = avals.slice(cond_nconsts + body_nconsts);
    checkSame("while_loop", body_jaxpr.outAvals, init, "body_fun output and input (the loop carry)");
    const c = cond_jaxpr.outAvals;
    if (c.length !== 1 || c[0].dtype !== "bool" || c[0].ndim !== 0)
      throw new TypeError(`while_loop: cond_fun must return a boolean scalar, got ${c.map((a) => a.str()).join(", ")}`);
    return init;
  },
  impl(args, { cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts }) {
    const cc = args.slice(0, cond_nconsts),
      bc = args.slice(cond_nconsts, cond_nconsts + body_nconsts);
    let carry: Array[] = args.slice(cond_nconsts + body_nconsts);
    while (evalEager(cond_jaxpr, [...cc, ...carry])[0].item()) carry = evalEager(body_jaxpr, [...bc, ...carry]);
    return carry as ArrayImpl[];
  },
  jvp(primals, tangents, p) {
    const { cond_nconsts: cn, body_nconsts: bn } = p;
    const carryP = primals.slice(cn + bn),
      carryT = tangents.slice(cn + bn).map((t, i) => (isInexact(carryP[i].dtype) ? instantiateZero(t) : t));
    const bcT = tangents.slice(cn, cn + bn);
    const nc = carryP.length;
    const diff = carryT.map((t) => !(t instanceof Zero));
    const res = whileLoopFlat(
      (...c: Array[]) => evalJaxpr(p.cond_jaxpr, [], [...primals.slice(0, cn), ...c.slice(0, nc)])[0],
      (...c: Array[]) => {
        const pc = c.slice(0, nc);
        const tc: MaybeZero[] = [];
        let k = nc;
        diff.forEach((d, i) => tc.push(d ? c[k++] : new Zero(pc[i].aval)));
        const [po, to] = jvpFlat(
          (...xs) => evalJaxpr(p.body_jaxpr, [], xs),
          [...primals.slice(cn, cn + bn), ...pc],
          [...bcT, ...tc],
        );
        return [...po, ...to.filter((_, i) => diff[i]).map(instantiateZero)];
      },
      [...carryP, ...(carryT.filter((t) => !(t instanceof Zero)) as Array[])],
    );
    const outT: MaybeZero[] = [];
    let k = nc;
    diff.forEach((d, i) => outT.push(d ? res[k++] : new Zero(carryP[i].aval)));
    return [res.slice(0, nc), outT];
  },
  vmap(axis, args, dims, p) {
    const { cond_nconsts: cn, body_nconsts: bn } = p;
    const cc = args.slice(0, cn),
      bc = args.slice(cn, cn + bn),
      init = args.slice(cn + bn);
    const dcc = dims.slice(0, cn),
      dbc = dims.slice(cn, cn + bn);
    // batch every carry (simple and always valid), then run while any example's predicate holds
    const initB = init.map((x, i) =>
      dims[cn + bn + i] === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, dims[cn + bn + i]!, 0),
    );
    const predOf = (c: Array[]) =>
      vmapFlat(
        (...zs) => evalJaxpr(p.cond_jaxpr, [], zs),
        [...cc, ...c],
        [...dcc, ...c.map(() => 0)],
        () => 0,
        axis,
      )[0];
    const out = whileLoopFlat(
      (...c) => ops.reduceOr(predOf(c), [0]),
      (...c) => {
        const pred = predOf(c);
        const nw = vmapFlat(
          (...zs) => evalJaxpr(p.body_jaxpr, [], zs),
          [...bc, ...c],
          [...dbc, ...c.map(() => 0)],
          () => 0,
          axis,
        );
        return nw.map((v, i) => ops.select(ops.broadcastInDim(pred, v.shape, [0]), v, c[i]));
      },
      initB,
    );
    return [out, out.map(() => 0)];
  },
  lower: lowerWhile,
  lowerComplex: lowerWhile,
  missing: {
    transpose:
      "reverse-mode differentiation of while_loop is not supported (as in JAX); use lax.scan or foriLoop with static bounds",
  },
});

/**
 * Flat while loop. Internal callers (jvp, vmap) get body outputs cast to the carry types; with `check` (the public
 * loops) the body may only change weak types: weak initial carries are promoted and the body retraced (as JAX's
 * _promote_weak_typed_inputs), then `check(inAvals, outAvals)` raises on any remaining dtype/shape difference.
 */
export function whileLoopFlat(
  condFn: (...c: Array[]) => Array,
  bodyFn: (...c: Array[]) => Array[],
  init: Array[],
  check?: (inAvals: ShapedArray[], outAvals: ShapedArray[]) => void,
): Array[] {
  let outWeak: boolean[] = [];
  const traceBody = (avals: ShapedArray[]) =>
    closeOver(
      (...xs) => {
        const ys = bodyFn(...xs);
        outWeak = ys.map((y) => y.aval.weakType);
        return ys.map((y, i) =>
          check ? (y.aval.weakType ? ops.convert(y, y.dtype, false) : y) : ops.convert(y, avals[i].dtype, false),
        );
      },
      avals,
      "while_loop body",
    );
  // the public loops trace the body with the initial carry's weak types, as JAX does (a weak int carry plus an int8 is int8)
  let avals = init.map((x) => (check ? x.aval : x.aval.strongly()));
  let b = traceBody(avals);
  if (check) {
    const promoted = promoteWeakCarry(init, b.jaxpr.outAvals);
    if (promoted) {
      init = promoted;
      avals = init.map((x) => x.aval);
      b = traceBody(avals);
    }
    check(
      init.map((x) => x.aval),
      b.jaxpr.outAvals,
    );
  }
  const initS = init.map((x, i) => ops.convert(x, avals[i].dtype, false));
  const c = closeOver((...xs) => [condFn(...xs)], avals, "while_loop cond");
  const outs = bind(whileP, [...c.consts, ...b.consts, ...initS], {
    cond_jaxpr: c.jaxpr,
    body_jaxpr: b.jaxpr,
    cond_nconsts: c.consts.length,
    body_nconsts: b.consts.length,
  });
  // as JAX, the public loops' results have the body output's weak types
  return check ? outs.map((o, i) => (outWeak[i] ? ops.convert(o, o.dtype, true) : o)) : outs;
}

export type { UndefinedPrimal, Zero };
export { backwardPass, partialEvalJaxpr };
