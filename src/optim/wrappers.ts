/** @file optax's optimizer wrappers: MultiSteps (gradient accumulation over k steps) and applyIfFinite (skips non-finite updates). */
import { Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import {
  type GradientTransformation,
  type OptState,
  type ShardBehaviour,
  type Tree,
  type UpdateExtraArgs,
  shardRefusal,
  safeIncrement,
  sumOverLeaves,
  withoutShardedUpdate,
  treeMap,
} from "./base.js";

/** The number of mini-steps to accumulate: a positive integer, or a function of the gradient step count. */
export type EveryKSchedule = number | ((gradientStep: Array) => Array | number);

/**
 * optax's ShouldSkipUpdateFunction: from a mini-step's updates, the gradient step count and the params, whether to
 * skip that mini-step (a bool scalar) and a pytree of Arrays kept in MultiSteps' state as `skipState`.
 */
export type ShouldSkipUpdateFn = (updates: Tree, gradientStep: Array, params: Tree | undefined) => [Array, Tree];

/** optax.MultiStepsState: the mini-step within the current accumulation, the count of emitted steps, and so on. */
export interface MultiStepsState {
  miniStep: Array;
  gradientStep: Array;
  innerOptState: OptState;
  accGrads: Tree;
  /** What shouldSkipUpdateFn returned last ({} without one). */
  skipState: Tree;
}

export interface MultiStepsOpts {
  useGradMean?: boolean;
  shouldSkipUpdateFn?: ShouldSkipUpdateFn | null;
}

/** The float32 sum over the update leaves of sum(f(leaf)), over all devices' slices under a sharded update. */
function sumF32(fn: string, updates: Tree, f: (x: Array) => Array): Array {
  return jnp.asarray(
    sumOverLeaves(fn, updates, (x) => jnp.astype(jnp.sum(f(x)), "float32")),
    "float32",
  );
}

/** optax.skip_not_finite: skip a mini-step whose updates hold a NaN/Inf; skipState { shouldSkip, numNotFinite }. */
export function skipNotFinite(updates: Tree, gradientStep: Array, params?: Tree): [Array, Tree] {
  void gradientStep;
  void params;
  const n = sumF32("optim.skipNotFinite", updates, (x) => jnp.logicalNot(jnp.isfinite(x)));
  const shouldSkip = jnp.greater(n, 0);
  return [shouldSkip, { shouldSkip, numNotFinite: jnp.astype(n, "int32") }];
}

/**
 * optax.skip_large_updates: skip a mini-step whose squared global norm is not below maxSquaredNorm (NaN included);
 * skipState { shouldSkip, normSquared }. Pass it as (u, s, p) => skipLargeUpdates(u, s, p, max).
 */
export function skipLargeUpdates(
  updates: Tree,
  gradientStep: Array,
  params: Tree,
  maxSquaredNorm: number,
): [Array, Tree] {
  void gradientStep;
  void params;
  if (typeof maxSquaredNorm !== "number" || Number.isNaN(maxSquaredNorm))
    throw new TypeError(`optim.skipLargeUpdates: maxSquaredNorm must be a number, got ${String(maxSquaredNorm)}`);
  const normSquared = sumF32("optim.skipLargeUpdates", updates, (x) => jnp.square(x));
  const shouldSkip = jnp.logicalNot(jnp.less(normSquared, maxSquaredNorm));
  return [shouldSkip, { shouldSkip, normSquared }];
}

/** Checks that `t` is a GradientTransformation (naming `fn` and `what`). */
function checkTransformation(fn: string, what: string, t: unknown): GradientTransformation {
  const g = t as GradientTransformation | null;
  if (!g || typeof g.init !== "function" || typeof g.update !== "function")
    throw new TypeError(`${fn}: ${what} must be a GradientTransformation (an object with init and update)`);
  return g;
}

/** Leafwise select between two trees of one structure (`pred` a scalar bool), cast to the `b` side's dtypes. */
const selectTree = (pred: Array, a: Tree, b: Tree): Tree =>
  treeMap((x, y) => jnp.astype(jnp.where(pred, x, y), y.dtype), a, b);

/** The same exactness as the wrapped transformation (naming the wrapper in a refusal). */
function innerShards(inner: GradientTransformation, what: string): ShardBehaviour {
  const r = shardRefusal(inner, what);
  return r === null ? { exact: true } : { exact: false, reason: r };
}

/**
 * optax.MultiSteps: accumulates the gradients of k mini-steps (their running mean, or their sum without
 * useGradMean) and hands them to `opt` on the k-th; the other mini-steps return zero updates and leave `opt`'s
 * state as it was. k is `everyKSchedule` or its value at the gradient step count. Its state is a pytree of Arrays,
 * so the step works under jit: both outcomes are computed and the right one selected leaf by leaf.
 *
 * With shouldSkipUpdateFn, a mini-step it flags returns zero updates and leaves the state as it was (only skipState
 * changes).
 *
 * On ZeRO's flat shards it is exact when `opt` is: the accumulation is elementwise (zero where the gradients are),
 * the counters are replicated scalars that every device advances alike, and `opt` sees the accumulated slices. A
 * shouldSkipUpdateFn other than skipNotFinite is refused there: it would see slices, and nothing says it sums them
 * (skipLargeUpdates does, but is handed over inside a closure this library cannot inspect).
 */
export class MultiSteps implements GradientTransformation {
  readonly opt: GradientTransformation;
  readonly everyKSchedule: EveryKSchedule;
  readonly useGradMean: boolean;
  readonly shouldSkipUpdateFn: ShouldSkipUpdateFn | null;
  readonly shards: ShardBehaviour;

  constructor(
    opt: GradientTransformation,
    everyKSchedule: EveryKSchedule,
    ...args: Args<[useGradMean: boolean], MultiStepsOpts>
  ) {
    const fn = "optim.MultiSteps";
    const o = parseArgs<MultiStepsOpts>(fn, args, ["useGradMean"], ["shouldSkipUpdateFn"]);
    this.opt = checkTransformation(fn, "opt", opt);
    if (typeof everyKSchedule === "number") {
      if (!Number.isInteger(everyKSchedule) || everyKSchedule < 1)
        throw new Error(`${fn}: everyKSchedule must be a positive integer or a schedule, got ${everyKSchedule}`);
    } else if (typeof everyKSchedule !== "function")
      throw new TypeError(
        `${fn}: everyKSchedule must be a positive integer or a function of the gradient step, got ${everyKSchedule === null ? "null" : typeof everyKSchedule}`,
      );
    if (o.useGradMean !== undefined && typeof o.useGradMean !== "boolean")
      throw new TypeError(`${fn}: useGradMean must be a boolean, got ${typeof o.useGradMean}`);
    const skip = o.shouldSkipUpdateFn ?? null;
    if (skip !== null && typeof skip !== "function")
      throw new TypeError(`${fn}: shouldSkipUpdateFn must be a function or null, got ${typeof skip}`);
    this.everyKSchedule = everyKSchedule;
    this.useGradMean = o.useGradMean ?? true;
    this.shouldSkipUpdateFn = skip;
    this.shards =
      skip === null || skip === skipNotFinite
        ? innerShards(this.opt, "optim.MultiSteps's inner optimizer")
        : {
            exact: false,
            reason: `${fn}: its shouldSkipUpdateFn would see flat 1/n slices of the updates and is not known to sum across them (only optim.skipNotFinite is); use stage 0`,
          };
    // init/update are handed around detached (chain, masked, the ZeRO step): bind them once
    this.init = this.init.bind(this) as GradientTransformation["init"];
    this.update = this.update.bind(this) as GradientTransformation["update"];
  }

  init<P>(params: P): OptState {
    const state: MultiStepsState = {
      miniStep: jnp.zeros([], "int32"),
      gradientStep: jnp.zeros([], "int32"),
      innerOptState: this.opt.init(params),
      accGrads: treeMap((p) => jnp.zerosLike(p), params),
      skipState: {},
    };
    // the skip state's layout (zeros of it, like optax): the function's result for zero updates at step 0, computed
    // locally (under ZeRO the context's sums belong to update; init runs no collectives)
    const skip = this.shouldSkipUpdateFn;
    if (skip)
      state.skipState = treeMap(
        (x) => jnp.zerosLike(x),
        withoutShardedUpdate(() => skip(state.accGrads, state.gradientStep, params)[1]),
      );
    return state;
  }

  update<U>(updates: U, state: OptState, params?: U | null, extra?: UpdateExtraArgs): [U, OptState] {
    const s = state as MultiStepsState;
    if (!s || !(s.miniStep instanceof Array) || !(s.gradientStep instanceof Array))
      throw new Error(
        "optim.MultiSteps.update: expected the state from this MultiSteps' init (miniStep, gradientStep, innerOptState, accGrads)",
      );
    const k = typeof this.everyKSchedule === "number" ? this.everyKSchedule : this.everyKSchedule(s.gradientStep);
    // the running mean acc + (g - acc) / (n + 1) over the n mini-steps so far, or the plain sum
    const acc = treeMap(
      (g, a) =>
        this.useGradMean
          ? jnp.add(a, jnp.divide(jnp.subtract(g, a), jnp.astype(jnp.add(s.miniStep, 1), a.dtype)))
          : jnp.add(a, g),
      updates,
      s.accGrads,
    );
    const emit = jnp.equal(s.miniStep, jnp.subtract(k, 1));
    const [innerUpdates, innerState] = this.opt.update(acc, s.innerOptState, params as Tree, extra);
    const zeros = treeMap((g) => jnp.zerosLike(g), updates);
    const out = selectTree(emit, innerUpdates, zeros) as U;
    // the counters, inner state and accumulator after this mini-step (skipState is handled below)
    const next: Omit<MultiStepsState, "skipState"> = {
      miniStep: jnp.where(emit, jnp.zeros([], "int32"), safeIncrement(s.miniStep)),
      gradientStep: jnp.where(emit, safeIncrement(s.gradientStep), s.gradientStep),
      innerOptState: selectTree(emit, innerState, s.innerOptState),
      accGrads: selectTree(
        emit,
        treeMap((a) => jnp.zerosLike(a), acc),
        acc,
      ),
    };
    if (!this.shouldSkipUpdateFn) return [out, { ...next, skipState: s.skipState ?? {} }];
    // a skipped mini-step: zero updates and the state as it was, but for skipState
    const [skip, skipState] = this.shouldSkipUpdateFn(updates, s.gradientStep, params as Tree);
    const prev: Omit<MultiStepsState, "skipState"> = {
      miniStep: s.miniStep,
      gradientStep: s.gradientStep,
      innerOptState: s.innerOptState,
      accGrads: s.accGrads,
    };
    const kept = selectTree(skip, prev, next) as Omit<MultiStepsState, "skipState">;
    return [selectTree(skip, zeros, out) as U, { ...kept, skipState }];
  }

  /** optax's MultiSteps.has_updated: whether the last update emitted `opt`'s step (a bool scalar Array). */
  hasUpdated(state: OptState): Array {
    const s = state as MultiStepsState;
    return jnp.logicalAnd(jnp.equal(s.miniStep, 0), jnp.greater(s.gradientStep, 0));
  }

  /** optax's MultiSteps.gradient_transformation: this wrapper as a plain GradientTransformation. */
  gradientTransformation(): GradientTransformation {
    return { init: this.init, update: this.update, shards: this.shards };
  }
}

/** optax.ApplyIfFiniteState. */
export interface ApplyIfFiniteState {
  notfiniteCount: Array;
  lastFinite: Array;
  totalNotfinite: Array;
  innerState: OptState;
}

/** Whether every element of every leaf is finite (a bool scalar); on ZeRO slices, over all devices' slices. */
function allFinite(updates: Tree): Array {
  // the devices' counts of non-finite elements add up (the zero padding is finite)
  const bad = sumOverLeaves(
    "optim.applyIfFinite",
    updates,
    (x) => jnp.sum(jnp.astype(jnp.logicalNot(jnp.isfinite(x)), "float32")),
    "update leaf",
  );
  return jnp.equal(bad, 0);
}

/**
 * optax.apply_if_finite: runs `inner` only when every gradient element is finite; otherwise returns zero updates,
 * keeps `inner`'s state and counts the failure. After more than maxConsecutiveErrors failures in a row it applies
 * the update anyway (the NaN/Inf then reach the parameters, as in optax).
 *
 * On ZeRO's flat shards it is exact when `inner` is: the finiteness test is summed over the devices' slices
 * (through the sharded-update context), so every device takes the same decision.
 */
export function applyIfFinite(inner: GradientTransformation, maxConsecutiveErrors: number): GradientTransformation {
  const fn = "optim.applyIfFinite";
  checkTransformation(fn, "inner", inner);
  if (typeof maxConsecutiveErrors !== "number" || !Number.isInteger(maxConsecutiveErrors) || maxConsecutiveErrors < 0)
    throw new Error(`${fn}: maxConsecutiveErrors must be a non-negative integer, got ${String(maxConsecutiveErrors)}`);
  const init = <P>(params: P): OptState => {
    const st: ApplyIfFiniteState = {
      notfiniteCount: jnp.zeros([], "int32"),
      lastFinite: jnp.array(true),
      totalNotfinite: jnp.zeros([], "int32"),
      innerState: inner.init(params),
    };
    return st;
  };
  const update = <U>(updates: U, state: OptState, params?: U | null, extra?: UpdateExtraArgs): [U, OptState] => {
    const s = state as ApplyIfFiniteState;
    if (!s || !(s.notfiniteCount instanceof Array))
      throw new Error(
        `${fn}: expected the state from its init (notfiniteCount, lastFinite, totalNotfinite, innerState)`,
      );
    const finite = allFinite(updates);
    const notfiniteCount = jnp.where(finite, jnp.zeros([], "int32"), safeIncrement(s.notfiniteCount));
    // apply when finite, or when the run of failures has gone past maxConsecutiveErrors
    const apply = jnp.logicalOr(finite, jnp.greater(notfiniteCount, maxConsecutiveErrors));
    const [u, innerState] = inner.update(updates, s.innerState, params, extra);
    const zeros = treeMap((g) => jnp.zerosLike(g), updates);
    const newState: ApplyIfFiniteState = {
      notfiniteCount,
      lastFinite: finite,
      totalNotfinite: jnp.where(finite, s.totalNotfinite, safeIncrement(s.totalNotfinite)),
      innerState: selectTree(apply, innerState, s.innerState),
    };
    return [selectTree(apply, u, zeros) as U, newState];
  };
  return { init, update, shards: innerShards(inner, "optim.applyIfFinite's inner transformation") };
}
