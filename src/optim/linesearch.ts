/** @file Step sizes from the loss (update's extra args): optax.scale_by_backtracking_linesearch (Armijo backtracking with value, grad, valueFn) and scale_by_polyak / polyak_sgd (with value). */
import { Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import { cond, whileLoop } from "../lax/index.js";
import * as tree from "../core/tree.js";
import { grad as gradOf, valueAndGrad } from "../transforms/api.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import {
  type GradientTransformation,
  type Tree,
  type UpdateExtraArgs,
  NO_PARAMS_MSG,
  makeTransformation,
  sumOverLeaves,
  treeMap,
} from "./base.js";
import { checkHypers } from "./transforms.js";

type Hyper = number | Array;

/** A linesearch update's params and extra args { value, grad, valueFn }, checked (the error names fn). */
export function linesearchArgs(
  fn: string,
  params: Tree | undefined | null,
  extra: UpdateExtraArgs | undefined,
): { value: Array | number; grad: Tree; valueFn: (p: Tree) => Array } {
  if (params === undefined || params === null) throw new Error(`${fn}: ${NO_PARAMS_MSG}`);
  const { value, grad, valueFn } = extra ?? {};
  if (value === undefined || grad === undefined || typeof valueFn !== "function")
    throw new Error(
      `${fn}: update needs the extra args { value, grad, valueFn } (the loss and its gradient at params, and the loss function): opt.update(grads, state, params, { value, grad: grads, valueFn })`,
    );
  return { value: value as Array | number, grad: grad as Tree, valueFn: valueFn as (p: Tree) => Array };
}

/** optax.BacktrackingLinesearchInfo: the steps the last search took and its final decrease error. */
export interface BacktrackingLinesearchInfo {
  numLinesearchSteps: Array;
  decreaseError: Array;
}
/** optax.ScaleByBacktrackingLinesearchState: the accepted step, the loss (and with storeGrad its gradient) there, info. */
export interface ScaleByBacktrackingLinesearchState {
  learningRate: Array;
  value: Array;
  /** With storeGrad: the gradient at the new params (zeros before the first step). */
  grad?: Tree;
  info: BacktrackingLinesearchInfo;
}

export interface BacktrackingLinesearchOpts {
  /** Keep the gradient at the accepted point in the state (for valueAndGradFromState). */
  storeGrad?: boolean;
  slopeRtol?: Hyper;
  decreaseFactor?: Hyper;
  increaseFactor?: Hyper;
  maxLearningRate?: Hyper;
  atol?: Hyper;
  rtol?: Hyper;
}
const NAMES = ["slopeRtol", "decreaseFactor", "increaseFactor", "maxLearningRate", "atol", "rtol"] as const;
type Pos = [
  slopeRtol: Hyper,
  decreaseFactor: Hyper,
  increaseFactor: Hyper,
  maxLearningRate: Hyper,
  atol: Hyper,
  rtol: Hyper,
];

/**
 * optax.scale_by_backtracking_linesearch: starting from min(increaseFactor * the last accepted step,
 * maxLearningRate), multiplies the step by decreaseFactor until valueFn(params + step * updates) <= (1 + rtol) value
 * + slopeRtol * step * (updates . grad) + atol, for at most maxBacktrackingSteps reductions; the update is step *
 * updates (step 0 when every tried value was NaN or infinite). `update` needs the extra args { value, grad,
 * valueFn } (the loss and its gradient at params, and the loss function); it runs under jit (a lax.whileLoop).
 * storeGrad keeps the gradient at the new params in the state for valueAndGradFromState; optax's verbose is not
 * implemented. Refused on ZeRO shards: valueFn takes full parameters.
 */
export function scaleByBacktrackingLinesearch(
  maxBacktrackingSteps: number,
  ...args: Args<Pos, BacktrackingLinesearchOpts>
): GradientTransformation {
  const fn = "optim.scaleByBacktrackingLinesearch";
  const o = parseArgs<BacktrackingLinesearchOpts>(fn, args, NAMES, ["storeGrad"]);
  if (o.storeGrad !== undefined && typeof o.storeGrad !== "boolean")
    throw new TypeError(`${fn}: storeGrad must be a boolean, got ${typeof o.storeGrad}`);
  const storeGrad = o.storeGrad ?? false;
  if (typeof maxBacktrackingSteps !== "number" || !Number.isInteger(maxBacktrackingSteps) || maxBacktrackingSteps < 0)
    throw new Error(`${fn}: maxBacktrackingSteps must be a non-negative integer, got ${String(maxBacktrackingSteps)}`);
  const slopeRtol = o.slopeRtol ?? 1e-4,
    decrease = o.decreaseFactor ?? 0.8,
    increase = o.increaseFactor ?? 1.5,
    maxLr = o.maxLearningRate ?? 1.0,
    atol = o.atol ?? 0,
    rtol = o.rtol ?? 0;
  checkHypers(fn, {
    slopeRtol,
    decreaseFactor: decrease,
    increaseFactor: increase,
    maxLearningRate: maxLr,
    atol,
    rtol,
  });
  const f32 = (x: Array | number): Array => jnp.astype(jnp.asarray(x), "float32");
  return makeTransformation(
    (params) => {
      const st: ScaleByBacktrackingLinesearchState = {
        learningRate: jnp.array(1, { dtype: "float32" }),
        value: jnp.array(Infinity, { dtype: "float32" }),
        info: { numLinesearchSteps: jnp.zeros([], "int32"), decreaseError: jnp.array(Infinity, { dtype: "float32" }) },
      };
      if (storeGrad) st.grad = treeMap((p) => jnp.zerosLike(p), params);
      return st;
    },
    (updates, state, params, extra?: UpdateExtraArgs) => {
      const { value, grad, valueFn } = linesearchArgs(fn, params, extra);
      const s = state as ScaleByBacktrackingLinesearchState;
      const v0 = f32(value);
      const slope = f32(
        sumOverLeaves(
          fn,
          treeMap((u, g) => jnp.multiply(u, g), updates, grad as Tree),
          (x) => jnp.sum(x),
        ),
      );
      const decreaseError = (step: Array, newValue: Array): Array => {
        const e = jnp.subtract(
          jnp.subtract(newValue, jnp.multiply(jnp.add(1, rtol), v0)),
          jnp.multiply(jnp.multiply(step, slopeRtol), slope),
        );
        return jnp.maximum(jnp.where(jnp.isnan(e), Infinity, e), 0);
      };
      type Search = [lr: Array, newValue: Array, err: Array, iter: Array];
      const start: Search = [
        f32(jnp.minimum(jnp.multiply(increase, s.learningRate), maxLr)),
        v0,
        jnp.array(Infinity, { dtype: "float32" }),
        jnp.zeros([], "int32"),
      ];
      const [lr, newValue, err, iters] = whileLoop<Search>(
        ([, , e, it]) =>
          jnp.logicalAnd(jnp.logicalNot(jnp.lessEqual(e, atol)), jnp.lessEqual(it, maxBacktrackingSteps)),
        ([step, , , it]) => {
          // the first try is the starting step; each later one decreaseFactor times the previous
          const tryStep = f32(jnp.where(jnp.greater(it, 0), jnp.multiply(decrease, step), step));
          const newParams = treeMap(
            (p, u) => jnp.astype(jnp.add(p, jnp.multiply(jnp.astype(tryStep, u.dtype), u)), p.dtype),
            params,
            updates,
          );
          const nv = f32(valueFn(newParams));
          return [tryStep, nv, f32(decreaseError(tryStep, nv)), jnp.add(it, 1)];
        },
        start,
      );
      const accepted = f32(jnp.where(jnp.isinf(err), 0, lr));
      const out = treeMap((u) => jnp.multiply(jnp.astype(accepted, u.dtype), u), updates);
      const ns: ScaleByBacktrackingLinesearchState = {
        learningRate: accepted,
        value: newValue,
        info: { numLinesearchSteps: iters, decreaseError: err },
      };
      // the gradient at the last tried point (the new params unless every try failed: then the stored value is not
      // finite and valueAndGradFromState recomputes), taken once after the search
      if (storeGrad) {
        const at = treeMap(
          (p, u) => jnp.astype(jnp.add(p, jnp.multiply(jnp.astype(lr, u.dtype), u)), p.dtype),
          params,
          updates,
        );
        ns.grad = castLike(gradOf(valueFn as (p: Tree) => Array)(at) as Tree, s.grad as Tree);
      }
      return [out, ns];
    },
    {
      exact: false,
      reason: `${fn}: its valueFn evaluates the loss at full parameters, which ZeRO's flat slices are not; use stage 0`,
    },
  );
}

export interface ScaleByPolyakOpts {
  fMin?: Hyper;
  maxLearningRate?: Hyper;
  eps?: Hyper;
  variant?: "sps" | "sps+";
}

/**
 * optax.scale_by_polyak (Loizou et al. 2021, stochastic Polyak step): u * min((value - fMin) / (||u||^2 + eps),
 * maxLearningRate), 0 when ||u||^2 + eps is below float64's epsilon; variant "sps+" clips value - fMin at 0. Reads
 * the loss `value` from update's extra args. Refused on ZeRO shards (the ZeRO step passes no loss value).
 */
export function scaleByPolyak(
  ...args: Args<[fMin: Hyper, maxLearningRate: Hyper, eps: Hyper, variant: "sps" | "sps+"], ScaleByPolyakOpts>
): GradientTransformation {
  const fn = "optim.scaleByPolyak";
  const o = parseArgs<ScaleByPolyakOpts>(fn, args, ["fMin", "maxLearningRate", "eps", "variant"]);
  return polyakCore(fn, o);
}

export function polyakCore(fn: string, o: ScaleByPolyakOpts): GradientTransformation {
  const fMin = o.fMin ?? 0,
    maxLr = o.maxLearningRate ?? 1,
    eps = o.eps ?? 0,
    variant = o.variant ?? "sps";
  checkHypers(fn, { fMin, maxLearningRate: maxLr, eps });
  if (variant !== "sps" && variant !== "sps+")
    throw new Error(`${fn}: variant must be "sps" or "sps+", got ${JSON.stringify(variant)}`);
  return makeTransformation(
    () => ({}),
    (updates, state, _params, extra?: UpdateExtraArgs) => {
      if (extra?.value === undefined)
        throw new Error(
          `${fn}: update needs the loss value in its extra args: opt.update(grads, state, params, { value })`,
        );
      const sq = jnp.asarray(
        sumOverLeaves(fn, updates, (x) => jnp.astype(jnp.sum(jnp.square(x)), "float32")),
        "float32",
      );
      let gap = jnp.subtract(jnp.astype(jnp.asarray(extra.value), "float32"), fMin);
      if (variant === "sps+") gap = jnp.maximum(gap, 0);
      const denom = jnp.add(sq, eps);
      const step = jnp.where(
        jnp.lessEqual(denom, 2.220446049250313e-16),
        0,
        jnp.minimum(jnp.divide(gap, denom), maxLr),
      );
      return [treeMap((u) => jnp.multiply(jnp.astype(step, u.dtype), u), updates), state];
    },
    {
      exact: false,
      reason: `${fn}: it needs the loss value in update's extra args, which ZeRO's step does not pass; use stage 0`,
    },
  );
}

const castLike = (t: Tree, like: Tree): Tree => treeMap((x, l) => jnp.astype(x, l.dtype), t, like);

/** The one object in `state` (searched through objects and lists) holding both `value` and `grad`, or null. */
function findValueAndGrad(state: unknown): { value: Array; grad: Tree } | null {
  const found: { value: Array; grad: Tree }[] = [];
  const walk = (x: unknown): void => {
    if (x === null || typeof x !== "object" || x instanceof Array) return;
    if (globalThis.Array.isArray(x)) return x.forEach(walk);
    const o = x as Record<string, unknown>;
    if (o.value instanceof Array && "grad" in o && o.grad !== undefined && o.grad !== null)
      found.push({ value: o.value, grad: o.grad });
    Object.values(o).forEach(walk);
  };
  walk(state);
  return found.length === 1 ? found[0] : null;
}

/**
 * optax.value_and_grad_from_state: `valueAndGradFromState(valueFn)(params, state)` returns the loss and gradient a
 * linesearch with storeGrad kept in `state` when that value is finite (the params it was computed at are the
 * current ones after applying the update), else computes valueAndGrad(valueFn)(params). Works under jit (lax.cond).
 */
export function valueAndGradFromState<P>(valueFn: (params: P) => Array): (params: P, state: unknown) => [Array, P] {
  const fn = "optim.valueAndGradFromState";
  if (typeof valueFn !== "function") throw new TypeError(`${fn}: valueFn must be a function of the params`);
  const vg = valueAndGrad(valueFn as (p: Tree) => Array) as (p: Tree) => [Array, Tree];
  return (params: P, state: unknown): [Array, P] => {
    const stored = findValueAndGrad(state);
    if (stored === null)
      throw new Error(
        `${fn}: the state must hold exactly one { value, grad } (use scaleByZoomLinesearch, or scaleByBacktrackingLinesearch with storeGrad: true)`,
      );
    const [gl, def] = tree.flatten(stored.grad);
    const [pl] = tree.flatten(params);
    const v0 = jnp.astype(stored.value, "float32");
    const ok = jnp.logicalAnd(jnp.logicalNot(jnp.isinf(v0)), jnp.logicalNot(jnp.isnan(v0)));
    const res = cond(
      ok,
      (...xs: Array[]) => [xs[0], ...xs.slice(1, 1 + gl.length)],
      (...xs: Array[]) => {
        const p = tree.unflatten(tree.structure(params), xs.slice(1 + gl.length));
        const [v, g] = vg(p);
        return [
          jnp.astype(v, "float32"),
          ...(tree.leaves(g) as Array[]).map((x, i) => jnp.astype(x, (gl[i] as Array).dtype)),
        ];
      },
      v0,
      ...(gl as Array[]),
      ...(pl as Array[]),
    ) as Array[];
    return [res[0], tree.unflatten(def, res.slice(1)) as P];
  };
}
