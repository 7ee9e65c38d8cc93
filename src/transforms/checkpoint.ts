/**
 * @file checkpoint / remat with JAX's policies: under differentiation the forward pass saves only the residuals the
 * policy allows; the backward pass recomputes the rest from the saved values and the inputs.
 */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array } from "../core/array.js";
import type { ArrayImpl } from "../core/array-impl.js";
import { type Atom, Jaxpr, type JaxprEqn, Var, evalJaxpr } from "../core/jaxpr.js";
import { type Params, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import type { TreeDef } from "../core/tree.js";
import { bind, bind1, evalTrace, withTrace } from "../core/trace.js";
import { checkArgnumsPassed, flattenArrays, unflatten } from "./api-util.js";
import { closeOver } from "./control-flow.js";
import { instantiateZero, jvpFlat } from "./jvp.js";
import { backwardPass } from "./linearize.js";
import { partialEvalJaxpr } from "./partial-eval.js";
import { vmapFlatKeep } from "./vmap.js";

/** A policy says whether the output of an equation may be saved for the backward pass. */
export type Policy = ((prim: Primitive, params: Params) => boolean) & { policyName?: string };
const named = (name: string, f: (prim: Primitive, params: Params) => boolean): Policy =>
  Object.assign(f, { policyName: name });

/** checkpointName(x, name): tags a value so saveOnlyTheseNames can save it. */
export const nameP: Primitive<{ name: string }> = new Primitive<{ name: string }>(
  "name",
  {
    abstractEval([x]) {
      return [x];
    },
    impl([x]) {
      return [x];
    },
    jvp([x], [t], p) {
      return [[bind1(nameP, [x], p)], [t]];
    },
    transpose([ct]) {
      return [ct];
    },
    vmap(_a, [x], [d], p) {
      return [[bind1(nameP, [x], p)], [d]];
    },
    lower(_ctx, inputs) {
      return inputs;
    },
  },
  { cost: "view" },
);
export const checkpointName = (x: Array, name: string): Array => bind1(nameP, [x], { name });

/** JAX's memory kinds an offloading policy may name; on the CPU, device memory and host memory are the same RAM. */
const MEMORY_KINDS = ["device", "pinned_host", "unpinned_host"];
function checkOffload(fn: string, src: unknown, dst: unknown): void {
  for (const [what, v] of [
    ["offloadSrc", src],
    ["offloadDst", dst],
  ] as const)
    if (typeof v !== "string" || !MEMORY_KINDS.includes(v))
      throw new Error(
        `checkpointPolicies.${fn}: ${what} must be one of ${MEMORY_KINDS.map((k) => JSON.stringify(k)).join(", ")}, got ${JSON.stringify(v)}`,
      );
}
const nameIn = (names: readonly string[]) => (p: Primitive, params: Params) =>
  p.name === "name" && names.includes(params.name as string);
const dotNoBatch = (p: Primitive, params: Params): boolean =>
  p.name === "dot_general" && (params.dimension_numbers as number[][][])[1][0].length === 0;

export const checkpointPolicies = {
  nothingSaveable: named("nothing_saveable", () => false),
  everythingSaveable: named("everything_saveable", () => true),
  dotsSaveable: named("dots_saveable", (p) => p.name === "dot_general"),
  checkpointDots: named("dots_saveable", (p) => p.name === "dot_general"),
  dotsWithNoBatchDimsSaveable: named("dots_with_no_batch_dims_saveable", dotNoBatch),
  checkpointDotsWithNoBatchDims: named("dots_with_no_batch_dims_saveable", dotNoBatch),
  saveOnlyTheseNames: (...names: string[]): Policy => named(`save_only_these_names(${names.join(",")})`, nameIn(names)),
  saveAnyNamesButTheseNames: (...names: string[]): Policy =>
    named(
      `save_any_names_but_these(${names.join(",")})`,
      (p, params) => p.name === "name" && !names.includes(params.name as string),
    ),
  /** Saves what either policy saves (save_from_both_policies). */
  saveFromBothPolicies: (policy1: Policy, policy2: Policy): Policy =>
    named(
      `save_from_both_policies(${policy1.policyName ?? "policy1"},${policy2.policyName ?? "policy2"})`,
      (p, params) => policy1(p, params) || policy2(p, params),
    ),
  /**
   * save_and_offload_only_these_names: names that may be saved stay in device memory, names that may be offloaded
   * move to offloadDst. On the CPU both are the same RAM, so both kinds are kept for the backward pass (JAX's
   * residuals; no copy between memories happens) and the rest is recomputed.
   */
  saveAndOffloadOnlyTheseNames: (opts: {
    namesWhichCanBeSaved: readonly string[];
    namesWhichCanBeOffloaded: readonly string[];
    offloadSrc: string;
    offloadDst: string;
  }): Policy => {
    checkOptions("checkpointPolicies.saveAndOffloadOnlyTheseNames", opts, [
      "namesWhichCanBeSaved",
      "namesWhichCanBeOffloaded",
      "offloadSrc",
      "offloadDst",
    ]);
    const saved = [...(opts.namesWhichCanBeSaved ?? [])],
      off = [...(opts.namesWhichCanBeOffloaded ?? [])];
    const both = saved.filter((n) => off.includes(n));
    if (both.length > 0)
      throw new Error(
        `checkpointPolicies.saveAndOffloadOnlyTheseNames: names may be saved or offloaded, not both: ${both.join(", ")}`,
      );
    checkOffload("saveAndOffloadOnlyTheseNames", opts.offloadSrc, opts.offloadDst);
    return named(`save_and_offload_only_these_names(${saved.join(",")};${off.join(",")})`, nameIn([...saved, ...off]));
  },
  /** offload_dot_with_no_batch_dims(offloadSrc, offloadDst): dots without batch dimensions are kept (on the CPU, in the same RAM). */
  offloadDotWithNoBatchDims: (offloadSrc: string, offloadDst: string): Policy => {
    checkOffload("offloadDotWithNoBatchDims", offloadSrc, offloadDst);
    return named(`offload_dot_with_no_batch_dims(${offloadSrc},${offloadDst})`, dotNoBatch);
  },
};

type CkP = { jaxpr: Jaxpr; policy: Policy; prevent_cse: boolean; num_saved_in: number; differentiated: boolean };

export const checkpointP: Primitive<CkP> = new Primitive<CkP>(
  "checkpoint",
  {
    abstractEval(_avals, { jaxpr }) {
      return jaxpr.outAvals;
    },
    impl(args, { jaxpr }) {
      return withTrace(evalTrace, () => evalJaxpr(jaxpr, [], args)) as ArrayImpl[];
    },
    jvp(primals, tangents, p) {
      if (p.differentiated) {
        // a recomputing tangent call differentiated again: inline
        return jvpFlat((...xs) => evalJaxpr(p.jaxpr, [], xs), primals, tangents);
      }
      const n = primals.length;
      // symbolic-zero tangents stay symbolic: only live tangents become inputs of the jvp program
      const tUnknown = tangents.map((t) => !(t instanceof Zero));
      const liveTs = tangents.filter((t): t is Array => !(t instanceof Zero));
      const jj = closeOver(
        (...zs) => {
          const tz: (Array | Zero)[] = [];
          let k = n;
          primals.forEach((x, i) => tz.push(tUnknown[i] ? zs[k++] : new Zero(x.aval)));
          const [po, to] = jvpFlat((...xs) => evalJaxpr(p.jaxpr, [], xs), zs.slice(0, n), tz);
          return [...po, ...to.map(instantiateZero)];
        },
        [...primals.map((x) => x.aval), ...liveTs.map((t) => t.aval)],
        "jvp(checkpoint)",
      );
      const nOut = p.jaxpr.outvars.length;
      const J = jj.jaxpr;
      const split = partialEvalJaxpr(
        J,
        [...jj.consts.map(() => false), ...primals.map(() => false), ...liveTs.map(() => true)],
        [...globalThis.Array(nOut).fill(false), ...globalThis.Array(nOut).fill(true)],
      );
      const K = split.known,
        U = split.unknown,
        nr = split.numResiduals;
      const resVars = K.outvars.slice(nOut) as Var[];
      const primalIn = new Set(K.invars);
      // walk back from the residuals the tangent program needs: saveable equations' outputs are saved, others recomputed
      const saved: Var[] = [];
      const need = new Set<Var>(resVars.filter((r) => !primalIn.has(r)));
      const recompute: JaxprEqn[] = [];
      for (let k = K.eqns.length - 1; k >= 0; k--) {
        const e = K.eqns[k];
        if (!e.outVars.some((v) => need.has(v))) continue;
        if (p.policy(e.primitive, e.params)) {
          for (const v of e.outVars) if (need.has(v) && !saved.includes(v)) saved.push(v);
          continue;
        }
        recompute.unshift(e);
        e.inputs.forEach((a) => {
          if (a instanceof Var && !primalIn.has(a)) need.add(a);
        });
      }
      // forward: primal outputs and the saved residuals
      const Kfwd = new Jaxpr([], K.invars, [...K.outvars.slice(0, nOut), ...saved], K.eqns);
      const fwd = bind(checkpointP, [...jj.consts, ...primals], { ...p, jaxpr: Kfwd, num_saved_in: 0 });
      // tangent program: [saved residuals, primal inputs, tangents] -> tangents, recomputing non-saved residuals
      const savedIn = saved.map((v) => new Var(v.aval));
      const rmap = new Map<Var, Var>(saved.map((v, i) => [v, savedIn[i]]));
      U.invars.slice(0, nr).forEach((uv, i) => rmap.set(uv, rmap.get(resVars[i]) ?? resVars[i]));
      const m = (a: Atom): Atom => (a instanceof Var && rmap.has(a) ? rmap.get(a)! : a);
      const recomputeM = recompute.map((e) => ({ ...e, inputs: e.inputs.map(m) }));
      const tanProg = new Jaxpr([], [...savedIn, ...K.invars, ...U.invars.slice(nr)], U.outvars.map(m), [
        ...recomputeM,
        ...U.eqns.map((e) => ({ ...e, inputs: e.inputs.map(m) })),
      ]);
      const tOut = bind(checkpointP, [...fwd.slice(nOut), ...jj.consts, ...primals, ...liveTs], {
        ...p,
        jaxpr: tanProg,
        num_saved_in: saved.length + K.invars.length,
        differentiated: true,
      });
      return [fwd.slice(0, nOut), tOut];
    },
    // transpose of the tangent program: the non-linear inputs (saved residuals, primals) are known; recomputation happens here
    transpose(cts, args, p) {
      const k = p.num_saved_in;
      const j = p.jaxpr;
      const lin = new Jaxpr(j.invars.slice(0, k), j.invars.slice(k), j.outvars, j.eqns);
      if (args.slice(0, k).some((a) => a instanceof UndefinedPrimal))
        throw new Error("checkpoint transpose: saved residuals and primals must be known");
      const r = backwardPass(lin, args.slice(0, k) as Array[], cts);
      return [...args.slice(0, k).map(() => null), ...r.map((c) => (c instanceof Zero ? c : c))];
    },
    vmap(axis, args, dims, p) {
      let outDims: (number | null)[] = [];
      const inner = closeOver(
        (...xs) => {
          const r = vmapFlatKeep((...ys) => evalJaxpr(p.jaxpr, [], ys), xs, dims, axis);
          outDims = r.dims;
          return r.outs;
        },
        args.map((a) => a.aval),
        "vmap(checkpoint)",
      );
      const outs = bind(checkpointP, [...inner.consts, ...args], {
        ...p,
        jaxpr: inner.jaxpr,
        num_saved_in: p.num_saved_in + inner.consts.length,
      });
      return [outs, outDims];
    },
    lower: (ctx, inputs, { jaxpr }) => ctx.inlineJaxpr(jaxpr, inputs),
  },
  { callJaxprParam: "jaxpr" },
);

/** jax.checkpoint / jax.remat. */
export function checkpoint<A extends unknown[], R>(
  f: (...args: A) => R,
  opts: { policy?: Policy; preventCse?: boolean; staticArgnums?: number[] } = {},
): (...args: A) => R {
  checkArity("checkpoint", arguments, 2, "checkpoint(f, { policy, preventCse, staticArgnums })");
  checkOptions(
    "checkpoint",
    opts,
    ["policy", "preventCse", "staticArgnums"],
    "checkpoint(f, { policy, preventCse, staticArgnums })",
  );
  const policy = opts.policy ?? checkpointPolicies.nothingSaveable;
  return (...args: A): R => {
    const stat = new Set(opts.staticArgnums ?? []);
    checkArgnumsPassed("checkpoint", "staticArgnums", [...stat], args.length);
    const dynIdx = args.map((_, i) => i).filter((i) => !stat.has(i));
    const [leaves, def] = flattenArrays(
      "checkpoint",
      dynIdx.map((i) => args[i]),
      "argument",
    );
    let outDef: TreeDef | null = null;
    const traced = closeOver(
      (...xs) => {
        const d = unflatten(def, xs) as unknown[];
        const full = args.map((a, i) => (stat.has(i) ? a : d[dynIdx.indexOf(i)])) as A;
        const [o, od] = flattenArrays("checkpoint", f(...full), "output");
        outDef = od;
        return o;
      },
      leaves.map((l) => l.aval),
      "checkpoint",
    );
    const outs = bind(checkpointP, [...traced.consts, ...leaves], {
      jaxpr: traced.jaxpr,
      policy,
      prevent_cse: opts.preventCse ?? true,
      num_saved_in: 0,
      differentiated: false,
    });
    return unflatten(outDef!, outs) as R;
  };
}
export const remat = checkpoint;
