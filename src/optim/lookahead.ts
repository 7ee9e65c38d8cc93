/** @file optax.lookahead (Zhang et al. 2019, "k steps forward, 1 step back"): a fast optimizer whose parameters are pulled towards slow ones every syncPeriod steps. */
import { Array } from "../core/array.js";
import { checkArity } from "../core/check-args.js";
import * as jnp from "../numpy/index.js";
import { type GradientTransformation, type OptState, type Tree, NO_PARAMS_MSG, shardRefusal, treeMap } from "./base.js";

/** optax.LookaheadParams: the fast parameters (those the gradients are taken at) and the slow ones. */
export interface LookaheadParams<P = Tree> {
  fast: P;
  slow: P;
}
/** optax.LookaheadParams.init_synced as `LookaheadParams.initSynced(params)`: fast and slow both `params`. */
export const LookaheadParams = {
  initSynced<P>(params: P): LookaheadParams<P> {
    checkArity("optim.LookaheadParams.initSynced", arguments, 1, "optim.LookaheadParams.initSynced(params)");
    return { fast: params, slow: params };
  },
};

/** optax.LookaheadState: the fast optimizer's state and the steps since the last synchronisation. */
export interface LookaheadState {
  fastState: OptState;
  stepsSinceSync: Array;
}

/**
 * optax.lookahead: `update(grads, state, params)` takes the gradients at params.fast and the LookaheadParams, and
 * returns LookaheadParams of updates (apply them with applyUpdates to the LookaheadParams). The fast parameters
 * follow fastOptimizer; on every syncPeriod-th step the slow ones move slowStepSize of the way to the fast ones,
 * and the fast ones are set to them (resetState: the fast optimizer's state is also re-initialized then).
 *
 * Not for ZeRO's flat shards: its gradients and parameters have different structures (the fast gradients vs the
 * fast and slow parameters), which the sharded steps do not handle.
 */
export function lookahead(
  fastOptimizer: GradientTransformation,
  syncPeriod: number,
  slowStepSize: number | Array,
  resetState = false,
): GradientTransformation {
  const fn = "optim.lookahead";
  if (!fastOptimizer || typeof fastOptimizer.init !== "function" || typeof fastOptimizer.update !== "function")
    throw new TypeError(`${fn}: fastOptimizer must be a GradientTransformation (an object with init and update)`);
  if (typeof syncPeriod !== "number" || !Number.isInteger(syncPeriod) || syncPeriod < 1)
    throw new Error(`${fn}: syncPeriod must be a positive integer, got ${String(syncPeriod)}`);
  if (typeof slowStepSize !== "number" && !(slowStepSize instanceof Array))
    throw new TypeError(`${fn}: slowStepSize must be a number or an Array, got ${typeof slowStepSize}`);
  if (typeof resetState !== "boolean")
    throw new TypeError(`${fn}: resetState must be a boolean, got ${typeof resetState}`);
  const fastOf = (p: unknown): Tree => {
    const lp = p as LookaheadParams | null;
    if (!lp || typeof lp !== "object" || !("fast" in lp) || !("slow" in lp))
      throw new TypeError(`${fn}: params must be LookaheadParams ({ fast, slow }; see LookaheadParams.initSynced)`);
    return lp.fast;
  };
  const init = <P>(params: P): OptState => {
    const st: LookaheadState = {
      fastState: fastOptimizer.init(fastOf(params)),
      stepsSinceSync: jnp.zeros([], "int32"),
    };
    return st;
  };
  const update = (updates: Tree, state: OptState, params?: Tree | null): [Tree, OptState] => {
    if (params === undefined || params === null) throw new Error(`${fn}: ${NO_PARAMS_MSG}`);
    const p = params as LookaheadParams;
    fastOf(p);
    const s = state as LookaheadState;
    if (!s || !(s.stepsSinceSync instanceof Array))
      throw new Error(`${fn}: expected the state from its init (fastState, stepsSinceSync)`);
    const [u, fastState] = fastOptimizer.update(updates, s.fastState, p.fast);
    const sync = jnp.equal(s.stepsSinceSync, syncPeriod - 1);
    // what the fast parameters would be minus the slow ones: the slow step's direction
    const diff = treeMap((f, du, sl) => jnp.subtract(jnp.add(f, du), sl), p.fast, u, p.slow);
    const syncF = (x: Array): Array => jnp.astype(sync, x.dtype);
    const slow = treeMap((d) => jnp.multiply(jnp.multiply(slowStepSize, syncF(d)), d), diff);
    // on a sync, fast + u - (1 - a) diff = slow + a diff: the new slow parameters
    const fast = treeMap(
      (du, d) => jnp.subtract(du, jnp.multiply(jnp.multiply(syncF(d), jnp.subtract(1, slowStepSize)), d)),
      u,
      diff,
    );
    const newFastState = resetState
      ? treeMap((cur, ini) => jnp.astype(jnp.where(sync, ini, cur), cur.dtype), fastState, fastOptimizer.init(p.fast))
      : fastState;
    const ns: LookaheadState = {
      fastState: newFastState,
      stepsSinceSync: jnp.remainder(jnp.add(s.stepsSinceSync, 1), syncPeriod),
    };
    return [{ fast, slow }, ns];
  };
  return {
    init,
    update: update as GradientTransformation["update"],
    shards: {
      exact: false,
      reason: `${fn}: its gradients (at the fast parameters) and its parameters ({ fast, slow }) have different structures, which ZeRO's sharded steps do not handle; use stage 0${shardRefusal(fastOptimizer) === null ? "" : ` (and its fast optimizer: ${shardRefusal(fastOptimizer)})`}`,
    },
  };
}
