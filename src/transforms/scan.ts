/** @file lax.scan as a primitive (impl, jvp by splitting into a primal and a linear tangent scan, transpose, vmap), plus whileLoop, foriLoop and map. */
import { Array } from "../core/array.js";
import type { ArrayImpl } from "../core/array-impl.js";
import type { ShapedArray } from "../core/aval.js";
import { isInexact } from "../core/dtype.js";
import { Jaxpr, evalJaxpr } from "../core/jaxpr.js";
import { type MaybeZero, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { flatten, leafPaths, unflatten } from "../core/tree.js";
import { bind, describe, evalTrace, withTrace } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { flattenArrays } from "./api-util.js";
import { instantiateZero, jvpFlat } from "./jvp.js";
import { backwardPass } from "./linearize.js";
import { partialEvalJaxpr } from "./partial-eval.js";
import { vmapFlat } from "./vmap.js";
import { closeOver, whileLoopFlat } from "./control-flow.js";
import { checkCarryStructure, checkCarryTypes, promoteWeakCarry } from "./carry-check.js";
import { lowerScan } from "../compiler/lower-control.js";

type ScanP = {
  jaxpr: Jaxpr;
  num_consts: number;
  num_carry: number;
  length: number;
  reverse: boolean;
  unroll: number;
  linear: boolean[];
};

const sliceAt = (x: Array, i: number) => ops.reshape(ops.sliceInDim(x, i, i + 1, 1, 0), x.shape.slice(1));
const stack = (xs: Array[], aval: ShapedArray, n: number) =>
  n === 0
    ? ops.full([0, ...aval.shape], 0, aval.dtype)
    : ops.concatenate(
        xs.map((x) => ops.reshape(x, [1, ...x.shape])),
        0,
      );

/** Runs a scan body `length` times on the current trace (used by impl and by unrolled evaluation). */
function runScan(args: Array[], p: ScanP, body: (xs: Array[]) => Array[]): Array[] {
  const consts = args.slice(0, p.num_consts),
    xs = args.slice(p.num_consts + p.num_carry);
  let carry = args.slice(p.num_consts, p.num_consts + p.num_carry);
  const ysAvals = p.jaxpr.outAvals.slice(p.num_carry);
  const ys: Array[][] = ysAvals.map(() => new globalThis.Array<Array>(p.length));
  for (let k = 0; k < p.length; k++) {
    const i = p.reverse ? p.length - 1 - k : k;
    const out = body([...consts, ...carry, ...xs.map((x) => sliceAt(x, i))]);
    carry = out.slice(0, p.num_carry);
    out.slice(p.num_carry).forEach((y, j) => {
      ys[j][i] = y;
    });
  }
  return [...carry, ...ys.map((l, j) => stack(l, ysAvals[j], p.length))];
}

export const scanP: Primitive<ScanP> = new Primitive<ScanP>("scan", {
  abstractEval(avals, p) {
    const carry = avals.slice(p.num_consts, p.num_consts + p.num_carry);
    const xs = avals.slice(p.num_consts + p.num_carry);
    xs.forEach((x) => {
      if (x.ndim < 1 || x.shape[0] !== p.length)
        throw new TypeError(`scan: scanned-over input ${x.str()} must have leading dimension ${p.length}`);
    });
    const outs = p.jaxpr.outAvals;
    const co = outs.slice(0, p.num_carry);
    if (co.some((c, i) => !c.sameType(carry[i]))) {
      throw new TypeError(
        `scan: the body function carry output and input must have identical types; got (${co.map((c) => c.str())}) and (${carry.map((c) => c.str())})`,
      );
    }
    return [...carry, ...outs.slice(p.num_carry).map((y) => y.update({ shape: [p.length, ...y.shape] }))];
  },
  impl(args, p) {
    return withTrace(evalTrace, () => runScan(args, p, (a) => evalJaxpr(p.jaxpr, [], a))) as ArrayImpl[];
  },
  // jvp: differentiate the body, then split it into a primal scan (emitting residuals as ys) and a linear tangent scan
  jvp(primals, tangents, p) {
    const nc = p.num_consts,
      nk = p.num_carry;
    const floatIn = primals.map((x) => isInexact(x.dtype));
    // every float carry gets an (instantiated) tangent; consts/xs only when they have one
    const hasT = tangents.map((t, i) => floatIn[i] && (!(t instanceof Zero) || (i >= nc && i < nc + nk)));
    const ins = primals.map((x) => x.aval);
    const tIns = ins.filter((_, i) => hasT[i]).map((a) => a.strongly());
    const sliced = (a: ShapedArray, i: number) => (i >= nc + nk ? a.update({ shape: a.shape.slice(1) }) : a);
    const bodyAvals = [...ins.map(sliced), ...tIns.map((a, k) => sliced(a, tIdx(k)))];
    function tIdx(k: number): number {
      let c = -1;
      for (let i = 0; i < hasT.length; i++) if (hasT[i] && ++c === k) return i;
      return -1;
    }
    const nOut = p.jaxpr.outvars.length;
    const outFloat = p.jaxpr.outAvals.map((a) => isInexact(a.dtype));
    const jb = closeOver(
      (...zs) => {
        const prim = zs.slice(0, ins.length);
        const tz: MaybeZero[] = [];
        let k = ins.length;
        prim.forEach((x, i) => tz.push(hasT[i] ? zs[k++] : new Zero(x.aval)));
        const [po, to] = jvpFlat((...a) => evalJaxpr(p.jaxpr, [], a), prim, tz);
        return [...po, ...to.map((t, i) => (outFloat[i] ? instantiateZero(t) : ops.zerosLikeAval(po[i].aval)))];
      },
      bodyAvals,
      "jvp(scan body)",
    );
    if (jb.consts.length) throw new Error("scan jvp: unexpected closed-over values in the differentiated body");
    const unknownIns = [...ins.map(() => false), ...tIns.map(() => true)];
    const forceU = [...globalThis.Array(nOut).fill(false), ...globalThis.Array(nOut).fill(true)];
    const split = partialEvalJaxpr(jb.jaxpr, unknownIns, forceU);
    // primal scan: consts, carry, xs -> carry, ys, residuals (stacked as extra ys)
    const known = bind(scanP, primals, { ...p, jaxpr: split.known, linear: primals.map(() => false) });
    const primalOuts = known.slice(0, nOut);
    const residuals = known.slice(nOut);
    // tangent scan: consts = tangent consts; carry = tangent carry; xs = residuals + tangent xs
    const tArr = tangents.map((t, i) => (hasT[i] ? instantiateZero(t) : null));
    const tConsts = tArr.slice(0, nc).filter((t): t is Array => t !== null);
    const tCarry = tArr.slice(nc, nc + nk).filter((t): t is Array => t !== null);
    const tXs = tArr.slice(nc + nk).filter((t): t is Array => t !== null);
    // reorder unknown body invars [res, tconsts, tcarry, txs] -> scan layout [tconsts, tcarry, res, txs]
    const u = split.unknown,
      nr = split.numResiduals;
    const uj = new Jaxpr(
      [],
      [
        ...u.invars.slice(nr, nr + tConsts.length + tCarry.length),
        ...u.invars.slice(0, nr),
        ...u.invars.slice(nr + tConsts.length + tCarry.length),
      ],
      u.outvars,
      u.eqns,
    );
    const linear = [
      ...tConsts.map(() => true),
      ...tCarry.map(() => true),
      ...residuals.map(() => false),
      ...tXs.map(() => true),
    ];
    const tOuts = bind(scanP, [...tConsts, ...tCarry, ...residuals, ...tXs], {
      ...p,
      jaxpr: uj,
      num_consts: tConsts.length,
      num_carry: tCarry.length,
      linear,
    });
    return [primalOuts, tOuts.map((t, i) => (outFloat[i] ? t : new Zero(primalOuts[i].aval)))];
  },
  // transpose of a linear scan: [consts (lin), carry (lin), xs (residuals known, then lin)] -> a reverse scan
  transpose(cts, args, p) {
    const nc = p.num_consts,
      nk = p.num_carry;
    // layout from the jvp split: linear consts, linear carry, residual xs (non-linear), linear xs
    const xsArgs = args.slice(nc + nk);
    const nres = p.linear.slice(nc + nk).filter((l) => !l).length;
    const resArgs = xsArgs.slice(0, nres) as Array[];
    if (
      p.linear.slice(0, nc + nk).some((l) => !l) ||
      resArgs.some((a) => a instanceof UndefinedPrimal) ||
      p.linear.slice(nc + nk + nres).some((l) => !l)
    ) {
      throw new Error("scan transpose: only the linear tangent scans produced by scan's jvp can be transposed");
    }
    const avalOf = (a: Array | UndefinedPrimal) => (a instanceof UndefinedPrimal ? a.aval : a.aval);
    const b = p.jaxpr;
    // body as a linear map with residual slices as known constvars
    const resVars = b.invars.slice(nc + nk, nc + nk + nres);
    const lin = new Jaxpr(
      resVars,
      [...b.invars.slice(0, nc + nk), ...b.invars.slice(nc + nk + nres)],
      b.outvars,
      b.eqns,
    );
    const cAvals = args.slice(0, nc).map(avalOf);
    const ctCarry = cts.slice(0, nk).map((c, i) => instantiateZero(c instanceof Zero ? new Zero(b.outAvals[i]) : c));
    const ctYs = cts
      .slice(nk)
      .map((c, i) =>
        instantiateZero(
          c instanceof Zero
            ? new Zero(b.outAvals[nk + i].update({ shape: [p.length, ...b.outAvals[nk + i].shape] }))
            : c,
        ),
      );
    const ctConsts0 = cAvals.map((a) => ops.zerosLikeAval(a));
    const avalsT = [
      ...ctConsts0.map((c) => c.aval),
      ...ctCarry.map((c) => c.aval),
      ...resArgs.map((r) => r.aval.update({ shape: r.shape.slice(1) })),
      ...ctYs.map((c) => c.aval.update({ shape: c.shape.slice(1) })),
    ];
    const bt = closeOver(
      (...zs) => {
        const accC = zs.slice(0, nc),
          ctc = zs.slice(nc, nc + nk),
          res = zs.slice(nc + nk, nc + nk + nres),
          cty = zs.slice(nc + nk + nres);
        const inCts = backwardPass(lin, res, [...ctc, ...cty]);
        const full = inCts.map((c, i) => instantiateZero(c instanceof Zero ? new Zero(lin.invars[i].aval) : c));
        return [...accC.map((a, i) => ops.add(a, full[i])), ...full.slice(nc, nc + nk), ...full.slice(nc + nk)];
      },
      avalsT,
      "transpose(scan body)",
    );
    const outs = bind(scanP, [...bt.consts, ...ctConsts0, ...ctCarry, ...resArgs, ...ctYs], {
      ...p,
      jaxpr: bt.jaxpr,
      num_consts: bt.consts.length,
      num_carry: nc + nk,
      reverse: !p.reverse,
      linear: [
        ...bt.consts.map(() => false),
        ...ctConsts0.map(() => true),
        ...ctCarry.map(() => true),
        ...resArgs.map(() => false),
        ...ctYs.map(() => true),
      ],
    });
    const ctC = outs.slice(0, nc),
      ctInit = outs.slice(nc, nc + nk),
      ctXs = outs.slice(nc + nk);
    return [...ctC, ...ctInit, ...resArgs.map(() => null), ...ctXs];
  },
  lower: lowerScan,
  lowerComplex: lowerScan,
  vmap(axis, args, dims, p) {
    const nc = p.num_consts,
      nk = p.num_carry;
    const consts = args.slice(0, nc).map((x, i) => (dims[i] === null ? x : ops.moveaxis(x, dims[i]!, 0)));
    const cdims = dims.slice(0, nc).map((d) => (d === null ? null : 0));
    const carry = args
      .slice(nc, nc + nk)
      .map((x, i) => (dims[nc + i] === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, dims[nc + i]!, 0)));
    const xs = args
      .slice(nc + nk)
      .map((x, i) => (dims[nc + nk + i] === null ? x : ops.moveaxis(x, dims[nc + nk + i]!, 1)));
    const xdims = dims.slice(nc + nk).map((d) => (d === null ? null : 0));
    const avals = [
      ...consts.map((c, i) => (cdims[i] === null ? c.aval : c.aval.update({ shape: c.shape.slice(1) }))),
      ...carry.map((c) => c.aval.update({ shape: c.shape.slice(1) })),
      ...xs.map((x) => x.aval.update({ shape: x.shape.slice(1) })),
    ];
    void avals;
    const inner = closeOver(
      (...zs) =>
        vmapFlat(
          (...a) => evalJaxpr(p.jaxpr, [], a),
          zs,
          [...cdims.map((d) => d), ...carry.map(() => 0), ...xdims],
          () => 0,
          axis,
        ),
      [
        ...consts.map((c) => c.aval),
        ...carry.map((c) => c.aval),
        ...xs.map((x) => x.aval.update({ shape: x.shape.slice(1) })),
      ],
      "vmap(scan body)",
    );
    const outs = bind(scanP, [...inner.consts, ...consts, ...carry, ...xs], {
      ...p,
      jaxpr: inner.jaxpr,
      num_consts: inner.consts.length + nc,
      linear: [...inner.consts.map(() => false), ...p.linear],
    });
    return [outs, outs.map((_, i) => (i < nk ? 0 : 1))];
  },
});

/** lax.scan(f, init, xs, { length, reverse, unroll }) -> [carry, ys]; f(carry, x) -> [carry, y]. */
export function scan<C, X, Y>(
  f: (carry: C, x: X) => [C, Y],
  init: C,
  xs: X | null = null,
  opts: { length?: number; reverse?: boolean; unroll?: number } = {},
): [C, Y] {
  return scanImpl("lax.scan", "scan body", f, init, xs, opts);
}

function scanImpl<C, X, Y>(
  fn: string,
  what: string,
  f: (carry: C, x: X) => [C, Y],
  init: C,
  xs: X | null,
  opts: { length?: number; reverse?: boolean; unroll?: number },
): [C, Y] {
  if (typeof f !== "function")
    throw new TypeError(`${fn}: expected a body function f(carry, x) => [carry, y], got ${describe(f)}`);
  let [cl, cdef] = flattenArrays(fn, init, "carry");
  const [xl, xdef] = flattenArrays(fn, xs, "xs");
  xl.forEach((x, i) => {
    if (x.ndim === 0)
      throw new TypeError(
        `${fn}: xs leaf ${i} is a 0-d array ${x.aval.str()}; scan needs xs leaves with a leading axis to iterate over`,
      );
  });
  const lens = new Set(xl.map((x) => x.shape[0]));
  if (opts.length !== undefined) lens.add(opts.length);
  if (lens.size === 0) throw new TypeError(`${fn}: got no xs to scan over and no length argument`);
  if (lens.size > 1)
    throw new TypeError(
      `${fn} got values with different leading axis sizes: ${xl.map((x) => x.shape[0]).join(", ")}${opts.length !== undefined ? ` and length=${opts.length}` : ""}`,
    );
  const length = [...lens][0];
  let ydef: ReturnType<typeof flatten>[1] | null = null;
  let outWeak: boolean[] = [];
  const trace = (cAvals: ShapedArray[]) =>
    closeOver(
      (...zs) => {
        const c = unflatten(cdef, zs.slice(0, cl.length)) as C;
        const x = unflatten(xdef, zs.slice(cl.length)) as X;
        const r = f(c, x) as unknown;
        if (!globalThis.Array.isArray(r) || r.length !== 2)
          throw new TypeError(`${fn}: ${what} output must be a pair [carry, y], got ${describe(r)}`);
        const [c2l, c2def] = flattenArrays(fn, r[0], "carry output");
        checkCarryStructure(fn, what, cdef, c2def);
        const [yl, yd] = flattenArrays(fn, r[1], "y output");
        ydef = yd;
        // only the weak type may differ from the input carry (checked below); the loop carries strong types
        outWeak = c2l.map((v) => v.aval.weakType);
        return [...c2l.map((v) => (v.aval.weakType ? ops.convert(v, v.dtype, false) : v)), ...yl];
      },
      [...cAvals, ...xl.map((x) => x.aval.update({ shape: x.shape.slice(1) }))],
      what,
    );
  let body = trace(cl.map((c) => c.aval));
  const promoted = promoteWeakCarry(cl, body.jaxpr.outAvals.slice(0, cl.length));
  if (promoted) {
    cl = promoted;
    body = trace(cl.map((c) => c.aval));
  }
  checkCarryTypes(
    fn,
    what,
    leafPaths(cdef, "carry"),
    cl.map((c) => c.aval),
    body.jaxpr.outAvals.slice(0, cl.length),
  );
  const cS = cl.map((c) => (c.aval.weakType ? ops.convert(c, c.dtype, false) : c));
  const outs = bind(scanP, [...body.consts, ...cS, ...xl], {
    jaxpr: body.jaxpr,
    num_consts: body.consts.length,
    num_carry: cl.length,
    length,
    reverse: opts.reverse ?? false,
    unroll: opts.unroll ?? 1,
    linear: [...body.consts, ...cS, ...xl].map(() => false),
  });
  // as JAX, the final carry has the body output's weak types (a JS-number carry the body keeps weak stays weak)
  const carryOut = outs.slice(0, cl.length).map((o, i) => (outWeak[i] ? ops.convert(o, o.dtype, true) : o));
  return [unflatten(cdef, carryOut) as C, unflatten(ydef!, outs.slice(cl.length)) as Y];
}

/** lax.whileLoop(condFun, bodyFun, initVal) over a pytree carry. */
export function whileLoop<C>(condFun: (c: C) => Array | boolean, bodyFun: (c: C) => C, init: C): C {
  if (typeof condFun !== "function" || typeof bodyFun !== "function")
    throw new TypeError(
      `lax.whileLoop: expected condFun and bodyFun functions, got ${describe(condFun)} and ${describe(bodyFun)}`,
    );
  const [cl, cdef] = flattenArrays("lax.whileLoop", init, "init_val");
  const out = whileLoopFlat(
    (...xs) => {
      const r = condFun(unflatten(cdef, xs) as C);
      return typeof r === "boolean" ? ops.full([], r, "bool") : r;
    },
    (...xs) => {
      const [o, odef] = flattenArrays("lax.whileLoop", bodyFun(unflatten(cdef, xs) as C), "body output");
      checkCarryStructure("lax.whileLoop", "while_loop body", cdef, odef);
      return o;
    },
    cl,
    (inAvals, outAvals) =>
      checkCarryTypes("lax.whileLoop", "while_loop body", leafPaths(cdef, "carry"), inAvals, outAvals),
  );
  return unflatten(cdef, out) as C;
}

/** lax.foriLoop(lower, upper, body(i, val), init): a scan when the bounds are static (so it is differentiable), else a while loop. */
export function foriLoop<C>(lower: number | Array, upper: number | Array, body: (i: Array, c: C) => C, init: C): C {
  if (typeof body !== "function")
    throw new TypeError(`lax.foriLoop: expected a body function body(i, carry) => carry, got ${describe(body)}`);
  if (typeof lower === "number" && typeof upper === "number") {
    const n = Math.max(0, upper - lower);
    const [c] = scanImpl(
      "lax.foriLoop",
      "fori_loop body",
      (carry: C, i: Array) => [body(i, carry), null] as [C, null],
      init,
      ops.add(ops.iota("int32", [n], 0), lower),
      {},
    );
    return c;
  }
  const lo = typeof lower === "number" ? ops.full([], lower, "int32") : ops.convert(lower, "int32");
  const hi = typeof upper === "number" ? ops.full([], upper, "int32") : ops.convert(upper, "int32");
  const [cl, cdef] = flattenArrays("lax.foriLoop", init, "init_val");
  const out = whileLoopFlat(
    (i, ..._c) => ops.lt(i, hi),
    (i, ...c) => {
      const [o, odef] = flattenArrays("lax.foriLoop", body(i, unflatten(cdef, c) as C), "body output");
      checkCarryStructure("lax.foriLoop", "fori_loop body", cdef, odef);
      return [ops.add(i, 1), ...o];
    },
    [lo, ...cl],
    (inAvals, outAvals) =>
      checkCarryTypes("lax.foriLoop", "fori_loop body", ["i", ...leafPaths(cdef, "carry")], inAvals, outAvals),
  );
  return unflatten(cdef, out.slice(1)) as C;
}

/** lax.map(f, xs): f applied to each leading slice (a scan with no carry). */
export function map<X, Y>(f: (x: X) => Y, xs: X): Y {
  if (typeof f !== "function") throw new TypeError(`lax.map: expected a function to map, got ${describe(f)}`);
  return scanImpl("lax.map", "map", (c: null, x: X) => [c, f(x)] as [null, Y], null, xs, {})[1];
}
export { flatten };
