/** @file customJvp and customVjp: user-defined derivative rules carried by call primitives (JAX's custom_jvp_call / custom_vjp_call). */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array } from "../core/array.js";
import type { ArrayImpl } from "../core/array-impl.js";
import type { ShapedArray } from "../core/aval.js";
import type { Tangent } from "../core/pytree-types.js";
import { isInexact } from "../core/dtype.js";
import { type Jaxpr, evalJaxpr } from "../core/jaxpr.js";
import { type MaybeZero, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import type { TreeDef } from "../core/tree.js";
import { bind, evalTrace, withTrace } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { checkArgnumsPassed, flattenArrays, unflatten } from "./api-util.js";
import { closeOver } from "./control-flow.js";
import { instantiateZero } from "./jvp.js";
import { moveBatchAxis, vmapFlat } from "./vmap.js";

type FlatFn = (...xs: Array[]) => Array[];
type JvpP = { call_jaxpr: Jaxpr; jvp: (primals: Array[], tangents: Array[]) => [Array[], Array[]]; num_consts: number };

export const customJvpCallP: Primitive<JvpP> = new Primitive<JvpP>(
  "custom_jvp_call",
  {
    abstractEval(_avals, { call_jaxpr }) {
      return call_jaxpr.outAvals;
    },
    impl(args, { call_jaxpr }) {
      return withTrace(evalTrace, () => evalJaxpr(call_jaxpr, [], args)) as ArrayImpl[];
    },
    jvp(primals, tangents, { jvp, num_consts }) {
      // consts (closed-over values of f) are not differentiated by the custom rule, as in JAX
      const [po, to] = jvp(primals.slice(num_consts), tangents.slice(num_consts).map(instantiateZero));
      return [po, to];
    },
    vmap(axis, args, dims, { call_jaxpr, jvp, num_consts }) {
      const inner = closeOver(
        (...xs) =>
          vmapFlat(
            (...ys) => evalJaxpr(call_jaxpr, [], ys),
            xs,
            dims,
            () => 0,
            axis,
          ),
        args.map((a) => a.aval),
        "vmap(custom_jvp)",
      );
      const pd = dims.slice(num_consts);
      const bjvp = (ps: Array[], ts: Array[]): [Array[], Array[]] => {
        const n = ps.length;
        const outs = vmapFlat(
          (...zs) => {
            const [a, b] = jvp(zs.slice(0, n), zs.slice(n));
            return [...a, ...b];
          },
          [...ps, ...ts],
          [...pd, ...pd],
          () => 0,
          axis,
        );
        return [outs.slice(0, outs.length / 2), outs.slice(outs.length / 2)];
      };
      const outs = bind(customJvpCallP, [...inner.consts, ...args], {
        call_jaxpr: inner.jaxpr,
        jvp: bjvp,
        num_consts: inner.consts.length + num_consts,
      });
      return [outs, outs.map(() => 0)];
    },
    lower: (ctx, inputs, { call_jaxpr }) => ctx.inlineJaxpr(call_jaxpr, inputs),
    missing: { transpose: "custom_jvp_call is differentiated through its custom rule, never transposed" },
  },
  { callJaxprParam: "call_jaxpr" },
);

export interface CustomJvpFn<A extends unknown[], R> {
  (...args: A): R;
  /** rule(primals, tangents) -> [output, output tangent]; nondiff arguments appear unchanged in both lists. */
  defjvp(rule: (primals: A, tangents: A) => [R, Tangent<R>]): CustomJvpFn<A, R>;
}

/** jax.custom_jvp: `const f = customJvp(fn); f.defjvp((primals, tangents) => [out, tangentOut])`. */
export function customJvp<A extends unknown[], R>(
  fn: (...args: A) => R,
  opts: { nondiffArgnums?: readonly number[] } = {},
): CustomJvpFn<A, R> {
  checkArity("customJvp", arguments, 2, "customJvp(f, { nondiffArgnums })");
  checkOptions("customJvp", opts, ["nondiffArgnums"], "customJvp(f, { nondiffArgnums })");
  let rule: ((primals: A, tangents: A) => [R, Tangent<R>]) | null = null;
  const nondiff = new Set(opts.nondiffArgnums ?? []);
  const wrapped = ((...args: A): R => {
    if (!rule) throw new Error(`customJvp(${fn.name || "fn"}): no jvp rule defined; call .defjvp(rule) first`);
    checkArgnumsPassed(`customJvp(${fn.name || "fn"})`, "nondiffArgnums", [...nondiff], args.length);
    const diffIdx = args.map((_, i) => i).filter((i) => !nondiff.has(i));
    const [leaves, def] = flattenArrays(
      "custom_jvp",
      diffIdx.map((i) => args[i]),
      "argument",
      true,
    );
    const rebuild = (xs: Array[]): A => {
      const d = unflatten(def, xs) as unknown[];
      return args.map((a, i) => (nondiff.has(i) ? a : d[diffIdx.indexOf(i)])) as A;
    };
    let outDef: TreeDef | null = null;
    const flatF: FlatFn = (...xs) => {
      const [o, od] = flattenArrays("custom_jvp", fn(...rebuild(xs)), "output");
      outDef = od;
      return o;
    };
    const traced = closeOver(
      flatF,
      leaves.map((l) => l.aval),
      "custom_jvp",
    );
    const r = rule;
    const flatJvp = (ps: Array[], ts: Array[]): [Array[], Array[]] => {
      const [po, to] = r(rebuild(ps), rebuild(ts));
      const [pl] = flattenArrays("custom_jvp rule", po, "primal output");
      const [tl] = flattenArrays("custom_jvp rule", to, "tangent output");
      if (pl.length !== tl.length)
        throw new TypeError(
          `custom_jvp rule for ${fn.name || "fn"} returned ${pl.length} primal outputs but ${tl.length} tangent outputs`,
        );
      pl.forEach((p, i) => {
        if (isInexact(p.dtype) && p.shape.join() !== tl[i].shape.join())
          throw new TypeError(
            `custom_jvp rule: tangent output ${i} has shape [${tl[i].shape}] but the primal output has shape [${p.shape}]`,
          );
      });
      return [pl, tl.map((t, i) => (t.dtype === pl[i].dtype ? t : ops.convert(t, pl[i].dtype)))];
    };
    const outs = bind(customJvpCallP, [...traced.consts, ...leaves], {
      call_jaxpr: traced.jaxpr,
      jvp: flatJvp,
      num_consts: traced.consts.length,
    });
    return unflatten(outDef!, outs) as R;
  }) as CustomJvpFn<A, R>;
  wrapped.defjvp = (r) => {
    rule = r;
    return wrapped;
  };
  return wrapped;
}

// ---------------------------------------------------------------- custom_vjp
type VjpP = {
  call_jaxpr: Jaxpr;
  fwd: (xs: Array[]) => [Array[], Array[]];
  bwd: (res: Array[], cts: Array[]) => Array[];
  num_consts: number;
  out_avals: ShapedArray[];
};
type LinP = { bwd: (res: Array[], cts: Array[]) => Array[]; num_res: number; out_avals: ShapedArray[] };

/** The linear part of a custom_vjp: transposing it calls the user's bwd with the saved residuals. */
export const customLinP: Primitive<LinP> = new Primitive<LinP>("custom_lin", {
  abstractEval(_avals, { out_avals }) {
    return out_avals;
  },
  impl() {
    throw new TypeError(
      "can't apply forward-mode autodiff (jvp) to a customVjp function; use customJvp or reverse mode (grad/vjp)",
    );
  },
  transpose(cts, args, { bwd, num_res, out_avals }) {
    const res = args.slice(0, num_res) as Array[];
    const ctsIn = bwd(
      res,
      cts.map((c, i) => instantiateZero(c instanceof Zero ? new Zero(out_avals[i]) : c)),
    );
    const lin = args.slice(num_res);
    if (ctsIn.length !== lin.length)
      throw new TypeError(`customVjp bwd returned ${ctsIn.length} cotangents for ${lin.length} differentiable inputs`);
    return [
      ...res.map(() => null),
      ...ctsIn.map((c, i) => {
        const a = (lin[i] as UndefinedPrimal).aval;
        if (c.shape.join() !== a.shape.join())
          throw new TypeError(
            `customVjp bwd: cotangent ${i} has shape [${c.shape}] but the input has shape [${a.shape}]`,
          );
        return c.dtype === a.dtype ? c : ops.convert(c, a.dtype);
      }),
    ] as (MaybeZero | null)[];
  },
  // batched residuals and tangents (batch axis first): the bwd of the batch is the vmapped user bwd
  vmap(axis, args, dims, { bwd, num_res, out_avals }) {
    const xs = args.map((x, i) => moveBatchAxis(x, dims[i], 0, axis.size));
    const bbwd = (res: Array[], cts: Array[]): Array[] =>
      vmapFlat(
        (...zs) => bwd(zs.slice(0, res.length), zs.slice(res.length)),
        [...res, ...cts],
        [...res.map(() => 0), ...cts.map(() => 0)],
        () => 0,
        axis,
      );
    const outs = bind(customLinP, xs, {
      bwd: bbwd,
      num_res,
      out_avals: out_avals.map((a) => a.update({ shape: [axis.size, ...a.shape] })),
    });
    return [outs, outs.map(() => 0)];
  },
  missing: {
    jvp: "forward-mode of a custom_vjp function is not defined (as in JAX)",
    lower: "never executed, only transposed",
  },
});

export const customVjpCallP: Primitive<VjpP> = new Primitive<VjpP>(
  "custom_vjp_call",
  {
    abstractEval(_avals, { out_avals }) {
      return out_avals;
    },
    impl(args, { call_jaxpr }) {
      return withTrace(evalTrace, () => evalJaxpr(call_jaxpr, [], args)) as ArrayImpl[];
    },
    jvp(primals, tangents, { fwd, bwd, num_consts, out_avals }) {
      const [out, res] = fwd(primals.slice(num_consts));
      const ts = tangents.slice(num_consts).map(instantiateZero);
      const tOut = bind(customLinP, [...res, ...ts], {
        bwd,
        num_res: res.length,
        out_avals: out_avals.map((a) => a.strongly()),
      });
      return [out, tOut];
    },
    vmap(axis, args, dims, p) {
      const inner = closeOver(
        (...xs) =>
          vmapFlat(
            (...ys) => evalJaxpr(p.call_jaxpr, [], ys),
            xs,
            dims,
            () => 0,
            axis,
          ),
        args.map((a) => a.aval),
        "vmap(custom_vjp)",
      );
      const pd = dims.slice(p.num_consts);
      let nOut = 0;
      const bfwd = (xs: Array[]): [Array[], Array[]] => {
        const outs = vmapFlat(
          (...zs) => {
            const [o, r] = p.fwd(zs);
            nOut = o.length;
            return [...o, ...r];
          },
          xs,
          pd,
          () => 0,
          axis,
        );
        return [outs.slice(0, nOut), outs.slice(nOut)];
      };
      const bbwd = (res: Array[], cts: Array[]): Array[] =>
        vmapFlat(
          (...zs) => p.bwd(zs.slice(0, res.length), zs.slice(res.length)),
          [...res, ...cts],
          [...res.map(() => 0), ...cts.map(() => 0)],
          () => 0,
          axis,
        );
      const outs = bind(customVjpCallP, [...inner.consts, ...args], {
        ...p,
        call_jaxpr: inner.jaxpr,
        fwd: bfwd,
        bwd: bbwd,
        num_consts: inner.consts.length + p.num_consts,
        out_avals: inner.jaxpr.outAvals,
      });
      return [outs, outs.map(() => 0)];
    },
    lower: (ctx, inputs, { call_jaxpr }) => ctx.inlineJaxpr(call_jaxpr, inputs),
    missing: { transpose: "differentiated through fwd/bwd, never transposed" },
  },
  { callJaxprParam: "call_jaxpr" },
);

/** C: what bwd returns, one cotangent per differentiable argument (every argument's, without nondiffArgnums). */
export interface CustomVjpFn<A extends unknown[], R, C = Tangent<A>> {
  (...args: A): R;
  defvjp<Res>(fwd: (...args: A) => [R, Res], bwd: (res: Res, ct: Tangent<R>) => C): CustomVjpFn<A, R, C>;
}

/** jax.custom_vjp: `f.defvjp(fwd, bwd)`; fwd returns [out, residuals]; bwd(residuals, ct) returns one cotangent per argument. */
export function customVjp<A extends unknown[], R>(
  fn: (...args: A) => R,
  opts?: { nondiffArgnums?: [] },
): CustomVjpFn<A, R>;
export function customVjp<A extends unknown[], R>(
  fn: (...args: A) => R,
  opts: { nondiffArgnums: readonly number[] },
): CustomVjpFn<A, R, unknown[]>;
export function customVjp<A extends unknown[], R>(
  fn: (...args: A) => R,
  opts: { nondiffArgnums?: readonly number[] } = {},
): CustomVjpFn<A, R, unknown[]> {
  checkArity("customVjp", arguments, 2, "customVjp(f, { nondiffArgnums })");
  checkOptions("customVjp", opts, ["nondiffArgnums"], "customVjp(f, { nondiffArgnums })");
  let fwdU: ((...args: A) => [R, unknown]) | null = null;
  let bwdU: ((res: unknown, ct: Tangent<R>) => readonly unknown[]) | null = null;
  const nondiff = new Set(opts.nondiffArgnums ?? []);
  const wrapped = ((...args: A): R => {
    if (!fwdU || !bwdU) throw new Error(`customVjp(${fn.name || "fn"}): call .defvjp(fwd, bwd) first`);
    checkArgnumsPassed(`customVjp(${fn.name || "fn"})`, "nondiffArgnums", [...nondiff], args.length);
    const diffIdx = args.map((_, i) => i).filter((i) => !nondiff.has(i));
    const diffArgs = diffIdx.map((i) => args[i]);
    const [leaves, def] = flattenArrays("custom_vjp", diffArgs, "argument", true);
    const rebuild = (xs: Array[]): A => {
      const d = unflatten(def, xs) as unknown[];
      return args.map((a, i) => (nondiff.has(i) ? a : d[diffIdx.indexOf(i)])) as A;
    };
    let outDef: TreeDef | null = null;
    const traced = closeOver(
      (...xs) => {
        const [o, od] = flattenArrays("custom_vjp", fn(...rebuild(xs)), "output");
        outDef = od;
        return o;
      },
      leaves.map((l) => l.aval),
      "custom_vjp",
    );
    const f = fwdU,
      b = bwdU;
    let resDef: TreeDef | null = null;
    const flatFwd = (xs: Array[]): [Array[], Array[]] => {
      const [o, r] = f(...rebuild(xs));
      const [ol] = flattenArrays("custom_vjp fwd", o, "primal output");
      const [rl, rd] = flattenArrays("custom_vjp fwd", r, "residual");
      resDef = rd;
      return [ol, rl];
    };
    const flatBwd = (res: Array[], cts: Array[]): Array[] => {
      const got = b(unflatten(resDef!, res), unflatten(outDef!, cts) as Tangent<R>);
      if (!globalThis.Array.isArray(got) || got.length !== diffArgs.length)
        throw new TypeError(
          `customVjp bwd must return an array with one cotangent per differentiable argument (${diffArgs.length}), got ${globalThis.Array.isArray(got) ? got.length : typeof got}`,
        );
      return flattenArrays("custom_vjp bwd", got, "cotangent")[0];
    };
    const outs = bind(customVjpCallP, [...traced.consts, ...leaves], {
      call_jaxpr: traced.jaxpr,
      fwd: flatFwd,
      bwd: flatBwd,
      num_consts: traced.consts.length,
      out_avals: traced.jaxpr.outAvals,
    });
    return unflatten(outDef!, outs) as R;
  }) as CustomVjpFn<A, R, unknown[]>;
  wrapped.defvjp = <Res>(fwd: (...args: A) => [R, Res], bwd: (res: Res, ct: Tangent<R>) => unknown[]) => {
    fwdU = fwd;
    bwdU = bwd as (res: unknown, ct: Tangent<R>) => unknown[];
    return wrapped;
  };
  return wrapped;
}
