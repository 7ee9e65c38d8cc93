/** @file How inner transformations see the parameters: optax.partition (and its older name multi_transform: a transformation per labelled group) and optax.flatten (one flat vector). */
import { Array } from "../core/array.js";
import * as tree from "../core/tree.js";
import * as jnp from "../numpy/index.js";
import * as ops from "../primitives/ops.js";
import {
  type GradientTransformation,
  type OptState,
  type ShardBehaviour,
  type Tree,
  type UpdateExtraArgs,
  masked,
  shardRefusal,
} from "./base.js";

/** optax.PartitionState: each label's (masked) inner state. */
export interface PartitionState {
  innerStates: Record<string, OptState>;
}

/** Labels: a tree (or prefix) of label strings structured like the params, or a function of the params giving one. */
export type ParamLabels = Tree | ((params: Tree) => Tree);

/**
 * optax.partition: applies `transforms[label]` to the parameters labelled `label` (each through optim.masked with
 * the mask label === that label), e.g. partition({ w: adam(1e-3), b: sgd(1e-2) }, { w: "w", b: "b" }). paramLabels
 * is a tree of strings (it may be a prefix of the params) or a function of the params (under ZeRO it sees their
 * full shapes, as masked's mask functions do). Every label must have a transformation. Exact on ZeRO shards when
 * every transformation is.
 */
export function partition(
  transforms: Record<string, GradientTransformation>,
  paramLabels: ParamLabels,
): GradientTransformation {
  const fn = "optim.partition";
  if (transforms === null || typeof transforms !== "object")
    throw new TypeError(`${fn}: transforms must be an object of label -> GradientTransformation`);
  const groups = Object.keys(transforms);
  for (const g of groups) {
    const t = transforms[g];
    if (!t || typeof t.init !== "function" || typeof t.update !== "function")
      throw new TypeError(`${fn}: transforms["${g}"] is not a GradientTransformation (an object with init and update)`);
  }
  const labelsOf = (p: Tree): Tree =>
    typeof paramLabels === "function" ? (paramLabels as (q: Tree) => Tree)(p) : paramLabels;
  const checkLabels = (labels: Tree): void => {
    for (const l of tree.leaves(labels)) {
      if (typeof l !== "string" || !groups.includes(l))
        throw new Error(
          `${fn}: some parameters have no transformation: label ${JSON.stringify(l)} is not one of the transforms' keys [${groups.join(", ")}]`,
        );
    }
  };
  // a label function becomes a mask function (masked hands it the full shapes under ZeRO); a label tree, a mask tree
  const maskFor = (group: string): Tree =>
    typeof paramLabels === "function"
      ? (p: Tree) => tree.map((l) => l === group, labelsOf(p))
      : tree.map((l) => l === group, paramLabels);
  // the masked wrappers are built once: a label function is called on the params (or their full shapes) each time
  const inner = Object.fromEntries(groups.map((g) => [g, masked(transforms[g], maskFor(g))]));
  let shards: ShardBehaviour = { exact: true };
  for (const g of groups) {
    const r = shardRefusal(transforms[g], `${fn}'s transformation "${g}"`);
    if (r !== null) {
      shards = { exact: false, reason: r };
      break;
    }
  }
  if (typeof paramLabels !== "function") checkLabels(paramLabels);
  const init = <P>(params: P): OptState => {
    checkLabels(labelsOf(params));
    const st: PartitionState = { innerStates: Object.fromEntries(groups.map((g) => [g, inner[g].init(params)])) };
    return st;
  };
  const update = <U>(updates: U, state: OptState, params?: U | null, extra?: UpdateExtraArgs): [U, OptState] => {
    const s = state as PartitionState;
    if (!s || typeof s.innerStates !== "object" || groups.some((g) => !(g in s.innerStates)))
      throw new Error(`${fn}: expected the state from its init ({ innerStates } with one entry per label)`);
    let u: Tree = updates;
    const next: Record<string, OptState> = {};
    for (const g of groups) [u, next[g]] = inner[g].update(u, s.innerStates[g], params as Tree, extra);
    return [u as U, { innerStates: next } satisfies PartitionState];
  };
  return { init, update, shards };
}

/** optax.multi_transform: the older name of optim.partition. */
export const multiTransform = partition;

/** All leaves of `t` raveled and concatenated (naming `fn` for a leaf that is not an Array). */
function flatVector(fn: string, t: Tree): Array {
  const ls = tree.leaves(t);
  ls.forEach((l) => {
    if (!(l instanceof Array)) throw new TypeError(`${fn}: every leaf must be an Array, got ${typeof l}`);
  });
  const flat = (ls as Array[]).map((x) => jnp.reshape(x, [x.size]));
  return flat.length === 1 ? flat[0] : jnp.concatenate(flat);
}

/**
 * optax.flatten: `inner` sees one flat vector of all the leaves (raveled and concatenated in leaf order) instead of
 * the tree, which saves per-leaf overhead; its updates are split back into the tree's shapes and dtypes. The inner
 * state is that of the vector. Per-leaf transformations (trust ratios, block norms) then act on the whole vector.
 * Refused on ZeRO shards: one vector is not the parameters' structure, which the sharded step lays state out by.
 */
export function flatten(inner: GradientTransformation): GradientTransformation {
  const fn = "optim.flatten";
  if (!inner || typeof inner.init !== "function" || typeof inner.update !== "function")
    throw new TypeError(`${fn}: inner must be a GradientTransformation (an object with init and update)`);
  const init = <P>(params: P): OptState => inner.init(flatVector(fn, params));
  const update = <U>(updates: U, state: OptState, params?: U | null, extra?: UpdateExtraArgs): [U, OptState] => {
    const [ul, def] = tree.flatten(updates);
    const flatP = params === undefined || params === null ? null : flatVector(fn, params);
    const [flatU, ns] = inner.update(flatVector(fn, updates), state, flatP, extra);
    let at = 0;
    const out = (ul as Array[]).map((x) => {
      const piece = ops.sliceInDim(flatU, at, at + x.size, 1, 0);
      at += x.size;
      return jnp.astype(jnp.reshape(piece, x.shape), x.dtype);
    });
    return [tree.unflatten(def, out) as U, ns];
  };
  return {
    init,
    update,
    shards: {
      exact: false,
      reason: `${fn}: its inner transformation sees one vector of all the parameters, not their tree, which ZeRO lays the state out by; use stage 0`,
    },
  };
}
