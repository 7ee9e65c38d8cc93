/** @file optim core (optax base/combine/update): GradientTransformation, identity, chain, masked, applyUpdates and pytree helpers. */
import { checkArity } from "../core/check-args.js";
import { Array } from "../core/array.js";
import { type DType, intRange, isBigInt, isFloat, isInteger, finfo } from "../core/dtype.js";
import type { Tangent } from "../core/pytree-types.js";
import * as tree from "../core/tree.js";
import * as jnp from "../numpy/index.js";
import * as ops from "../primitives/ops.js";
import { parseArgs } from "../numpy/elementwise-util.js";

/** A pytree of Arrays as the implementations handle it (nested JS arrays / plain objects / registered classes). */
export type Tree = unknown;
/**
 * Optimizer state: a pytree of Arrays (so it can cross jit boundaries and be checkpointed). Left `unknown` on purpose:
 * its layout is each transformation's own (read it with a cast), and callers only pass it back to `update`.
 */
export type OptState = unknown;
/** A schedule maps the step count (an int32 Array, or a JS number) to a value. */
export type Schedule = (count: Array | number) => Array | number;
/** A learning rate (or other hyperparameter) given as a constant or as a schedule of the step count. */
export type ScalarOrSchedule = number | Array | Schedule;

/**
 * optax's GradientTransformation: `init(params)` builds the state; `update(updates, state, params?)`
 * returns the transformed updates and the new state. Both are pure and work under jit/vmap.
 */
export interface GradientTransformation {
  init<P>(params: P): OptState;
  /**
   * updates and params share one structure (updates are gradients of the params, or transformed ones). `extra`
   * (optax's extra args) carries what linesearches need: the loss value and gradient at params and the loss function;
   * wrappers pass it on, other transformations ignore it.
   */
  update<U>(updates: U, state: OptState, params?: NoInfer<U> | null, extra?: UpdateExtraArgs): [U, OptState];
  /**
   * Whether the update is the same when it is handed flat, zero-padded 1/n slices of every leaf (ZeRO stages 1-3):
   * exact when it is elementwise, or when what it reads across a leaf or across leaves (norms, mask functions) goes
   * through the ShardedUpdate context; otherwise the reason it is not. Absent (a hand-written transformation):
   * unknown, so sharded steps refuse it; set `{ exact: true }` on one whose update is elementwise and zero at zero.
   */
  readonly shards?: ShardBehaviour;
}

/** optax's extra args of update: the loss value and gradient at `params`, and the loss as a function of params. */
export interface UpdateExtraArgs {
  value?: Array | number;
  grad?: Tree;
  valueFn?: (params: Tree) => Array | number;
}

/** See GradientTransformation.shards. */
export type ShardBehaviour = { readonly exact: true } | { readonly exact: false; readonly reason: string };
/** The declaration of an elementwise transformation (zero updates where gradients and params are zero). */
export const EXACT_ON_SHARDS: ShardBehaviour = { exact: true };

/** Why `t` cannot run on flat shards, or null when it can (`what` names it in the message). */
export function shardRefusal(t: GradientTransformation, what = "the optimizer"): string | null {
  const s = t.shards;
  if (s === undefined)
    return `${what} does not declare how it behaves on shards (a hand-written GradientTransformation: set shards: { exact: true } on it if its update is elementwise and zero where the gradient and parameter are zero)`;
  return s.exact ? null : s.reason;
}

/**
 * The context of an update that runs on flat, zero-padded 1/n slices of the parameters (set by the ZeRO step while
 * it calls init/update): what a transformation needs to compute the full-parameter result from its slice.
 */
export interface ShardedUpdate {
  /** For messages: e.g. "ZeRO stage 2 over mesh axis \"data\"". */
  readonly where: string;
  /** Sums per-device partials (of any shape) over the devices holding the slices: padding is zero, so sums are exact. */
  sum(partial: Array): Array;
  /**
   * Stand-ins with the full shapes and dtypes (ShapeDtypeStruct) for a tree of slices structured like the
   * parameters; raises (naming `fn`) for any other structure.
   */
  fullShapes(t: Tree, fn: string): Tree;
}
let currentSharded: ShardedUpdate | null = null;
/** Runs `f` with `ctx` as the sharded-update context (restored after, also on a throw). */
export function withShardedUpdate<R>(ctx: ShardedUpdate, f: () => R): R {
  const prev = currentSharded;
  currentSharded = ctx;
  try {
    return f();
  } finally {
    currentSharded = prev;
  }
}
/** Runs `f` with no sharded-update context (restored after): for local work such as building a state's layout. */
export function withoutShardedUpdate<R>(f: () => R): R {
  const prev = currentSharded;
  currentSharded = null;
  try {
    return f();
  } finally {
    currentSharded = prev;
  }
}
/** The sharded-update context in effect, or null for an ordinary (full-parameter) update. */
export const shardedUpdate = (): ShardedUpdate | null => currentSharded;

/**
 * The sum over the leaves of `perLeaf(leaf)` (a scalar each; 0 for a tree without leaves; `what` names a leaf in
 * the error for one that is not an Array); under a sharded update,
 * over every device's slices (the devices' partial sums add up because the zero padding adds nothing).
 */
export function sumOverLeaves(fn: string, t: Tree, perLeaf: (x: Array) => Array, what = "leaf"): Array | number {
  let acc: Array | number = 0;
  for (const leaf of tree.leaves(t)) {
    if (!(leaf instanceof Array)) throw new TypeError(`${fn}: every ${what} must be an Array, got ${typeof leaf}`);
    acc = jnp.add(acc, perLeaf(leaf));
  }
  const ctx = shardedUpdate();
  return ctx && acc instanceof Array ? ctx.sum(acc) : acc;
}

/**
 * Each leaf's sum of `perLeaf(leaf)` (a scalar per leaf, in the leaf's dtype); under a sharded update, every
 * device's slices' partial sums added up (in float32, all leaves in one collective), as a per-leaf norm needs.
 */
export function perLeafSums(leaves: readonly Array[], perLeaf: (x: Array) => Array): Array[] {
  const parts = leaves.map((x) => jnp.sum(perLeaf(x)));
  const ctx = shardedUpdate();
  if (!ctx || parts.length === 0) return parts;
  const all = ctx.sum(jnp.stack(parts.map((p) => jnp.astype(p, "float32"))));
  return parts.map((p, i) => jnp.astype(jnp.reshape(ops.sliceInDim(all, i, i + 1, 1, 0), []), p.dtype));
}

/** Each leaf's element count: of the full parameter under a sharded update (the slices' stand-ins name it). */
export function leafSizes(fn: string, t: Tree): number[] {
  const ctx = shardedUpdate();
  const ls = tree.leaves(ctx ? ctx.fullShapes(t, fn) : t) as { shape: readonly number[] }[];
  return ls.map((l) => l.shape.reduce((a, b) => a * b, 1));
}

export const NO_PARAMS_MSG =
  "this transformation requires the current value of the parameters, but `params` was not passed to `update`";

/** Builds a GradientTransformation from untyped init/update functions. */
export function makeTransformation(
  init: (params: Tree) => Tree,
  update: (updates: Tree, state: Tree, params?: Tree, extra?: UpdateExtraArgs) => [Tree, Tree],
  shards: ShardBehaviour,
): GradientTransformation {
  return { init: init as GradientTransformation["init"], update: update as GradientTransformation["update"], shards };
}

/** optax.EmptyState: a state with no leaves. */
export const emptyState = (): Tree => ({});

/** optax.identity: leaves updates unchanged. */
export function identity(): GradientTransformation {
  return makeTransformation(
    () => emptyState(),
    (u, s) => [u, s],
    EXACT_ON_SHARDS,
  );
}

/** optax.chain: applies the transformations in order; the state is the JS array of their states. */
export function chain(...transforms: GradientTransformation[]): GradientTransformation {
  transforms.forEach((t, i) => {
    if (!t || typeof t.init !== "function" || typeof t.update !== "function") {
      throw new TypeError(
        `optim.chain: argument ${i} is not a GradientTransformation (an object with init and update)`,
      );
    }
  });
  return makeTransformation(
    (params) => transforms.map((t) => t.init(params)),
    (updates, state, params, extra) => {
      if (!globalThis.Array.isArray(state) || state.length !== transforms.length) {
        throw new Error(
          `optim.chain: expected a state with ${transforms.length} entries (one per transformation); make sure you called init first`,
        );
      }
      const newState: OptState[] = [];
      let u = updates;
      transforms.forEach((t, i) => {
        const [nu, ns] = t.update(u, state[i], params, extra);
        u = nu;
        newState.push(ns);
      });
      return [u, newState];
    },
    chainShards(transforms),
  );
}

/** A chain is exact on shards when every link is; otherwise the first link's reason. */
function chainShards(transforms: readonly GradientTransformation[]): ShardBehaviour {
  for (let i = 0; i < transforms.length; i++) {
    const r = shardRefusal(transforms[i], `optim.chain's transformation ${i}`);
    if (r !== null) return { exact: false, reason: r };
  }
  return EXACT_ON_SHARDS;
}

/** tree.map over pytrees with the same structure (null subtrees are empty nodes, as MaskedNode/None in optax). */
export function treeMap(f: (...xs: Array[]) => Array, first: Tree, ...rest: Tree[]): Tree {
  return tree.map(f as (...xs: never[]) => unknown, first, ...rest);
}

/** The dtype of an Array or JS scalar leaf. */
export function leafDType(x: unknown): DType {
  if (x instanceof Array) return x.dtype;
  return jnp.asarray(x as number).dtype;
}

/** optax.apply_updates: params + updates, cast back to each param's dtype. */
export function applyUpdates<P>(params: P, updates: NoInfer<Tangent<P>>): P {
  checkArity("optim.applyUpdates", arguments, 2, "optim.applyUpdates(params, updates)");
  return tree.map(
    ((p: Array, u: Array) => jnp.astype(jnp.add(p, u), leafDType(p))) as (...xs: never[]) => unknown,
    params,
    updates,
  ) as P;
}

/** optax numerics.safe_increment: count + 1, saturating at the dtype's maximum. */
export function safeIncrement(count: Array): Array {
  const d = count.dtype;
  let max: Array;
  if (isBigInt(d)) max = jnp.array(d === "int64" ? (1n << 63n) - 1n : (1n << 64n) - 1n, { dtype: d });
  else if (isInteger(d)) max = jnp.array(intRange(d)[1], { dtype: d });
  else if (isFloat(d)) max = jnp.array(finfo(d).max, { dtype: d });
  else
    throw new TypeError(
      `optim.safeIncrement: cannot increment a count of dtype ${d}; expected an integer or floating dtype`,
    );
  const one = jnp.array(isBigInt(d) ? 1n : 1, { dtype: d });
  return jnp.where(jnp.less(count, max), jnp.add(count, one), max);
}

/** A zero int32 step counter (optax's `count`). */
export const zeroCount = (): Array => jnp.zeros([], "int32");

/** 1 - d for a number or Array hyperparameter (kept as a JS number when possible, i.e. a weak scalar). */
export const oneMinus = (d: number | Array): number | Array => (typeof d === "number" ? 1 - d : jnp.subtract(1, d));

/**
 * Python-style argument parsing where the last positional parameter is a pytree `mask` (which may itself be a
 * plain object): an object in the mask's position whose keys are not all option names is the mask.
 */
export function parseArgsWithMask<T extends object>(
  fn: string,
  args: readonly unknown[],
  names: readonly string[],
  optionOnly: readonly string[] = [],
): Partial<T> {
  const last = args[args.length - 1];
  const known = new Set([...names, ...optionOnly]);
  if (
    args.length === names.length &&
    names[names.length - 1] === "mask" &&
    last !== null &&
    typeof last === "object" &&
    !(last instanceof Array) &&
    Object.keys(last).some((k) => !known.has(k))
  ) {
    return parseArgs<T>(fn, [...args.slice(0, -1), { mask: last }], names, optionOnly);
  }
  return parseArgs<T>(fn, args, names, optionOnly);
}

/** Whether a hyperparameter is a schedule (a function of the step count). */
export const isSchedule = (x: unknown): x is Schedule => typeof x === "function";

// ---------------------------------------------------------------- masking

type MaskTree = Tree;
type MaskArg = MaskTree | ((params: Tree) => MaskTree);

const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  x !== null &&
  typeof x === "object" &&
  !(x instanceof Array) &&
  !globalThis.Array.isArray(x) &&
  (Object.getPrototypeOf(x) === Object.prototype || Object.getPrototypeOf(x) === null);

function maskLeaf(m: unknown): boolean | null {
  if (typeof m === "boolean") return m;
  if (m instanceof Array && m.ndim === 0 && m.dtype === "bool") return Boolean(m.item());
  return null;
}

/**
 * Walks a mask (a prefix of `t` whose leaves are booleans) and calls `f(m, ...subtrees)` at each mask leaf.
 * Containers are JS arrays, plain objects, null/undefined; equal-structure trees of other node kinds also work.
 */
function mapMask(mask: MaskTree, trees: Tree[], f: (m: boolean, ...subs: Tree[]) => Tree, path = "mask"): Tree {
  const m = maskLeaf(mask);
  if (m !== null) return f(m, ...trees);
  if (mask === null || mask === undefined) return trees[0];
  if (globalThis.Array.isArray(mask)) {
    trees.forEach((t) => {
      if (!globalThis.Array.isArray(t) || t.length !== mask.length) {
        throw new Error(
          `optim.masked: ${path} is a list of length ${mask.length} but the updates there are ${tree.structure(t)}`,
        );
      }
    });
    return mask.map((mi, i) =>
      mapMask(
        mi,
        trees.map((t) => (t as unknown[])[i]),
        f,
        `${path}[${i}]`,
      ),
    );
  }
  if (isPlainObject(mask)) {
    const keys = Object.keys(mask).sort();
    trees.forEach((t) => {
      if (!isPlainObject(t) || Object.keys(t).sort().join("\u0000") !== keys.join("\u0000")) {
        throw new Error(
          `optim.masked: ${path} has keys [${keys.join(", ")}] but the updates there are ${tree.structure(t)}`,
        );
      }
    });
    const out: Record<string, unknown> = {};
    for (const k of keys)
      out[k] = mapMask(
        mask[k],
        trees.map((t) => (t as Record<string, unknown>)[k]),
        f,
        `${path}.${k}`,
      );
    return out;
  }
  // other node kinds: the mask must have exactly the structure of the tree
  const [ml, md] = tree.flatten(mask);
  const flats = trees.map((t) => tree.flatten(t));
  flats.forEach(([, d]) => {
    if (!d.equals(md)) throw new Error(`optim.masked: ${path} has structure ${md} but the updates there are ${d}`);
  });
  return tree.unflatten(
    md,
    ml.map((mv, i) => {
      const b = maskLeaf(mv);
      if (b === null) throw new TypeError(`optim.masked: mask leaves must be booleans, got ${String(mv)} in ${path}`);
      return f(b, ...flats.map(([l]) => l[i]));
    }),
  );
}

/** optax.masked: applies `inner` only where the mask is true; elsewhere updates pass through unchanged. */
export function masked(inner: GradientTransformation, mask: MaskArg): GradientTransformation {
  // a mask function sees full shapes: under a sharded update, stand-ins for the slices' full parameters
  const maskOf = (t: Tree): MaskTree => {
    if (typeof mask !== "function") return mask;
    const ctx = shardedUpdate();
    return (mask as (p: Tree) => MaskTree)(ctx ? ctx.fullShapes(t, "optim.masked's mask function") : t);
  };
  // masked-out subtrees become null (an empty node, like optax's MaskedNode)
  const maskTree = (m: MaskTree, t: Tree): Tree => mapMask(m, [t], (b, s) => (b ? s : null));
  return makeTransformation(
    (params) => ({ innerState: inner.init(maskTree(maskOf(params), params)) }),
    (updates, state, params, extra) => {
      const m = maskOf(updates);
      const inState = (state as { innerState: OptState }).innerState;
      const [newMasked, newInner] = inner.update(
        maskTree(m, updates),
        inState,
        params === undefined || params === null ? params : maskTree(m, params),
        extra,
      );
      const merged = mapMask(m, [newMasked, updates], (b, n, o) => (b ? n : o));
      return [merged, { innerState: newInner }];
    },
    inner.shards ?? { exact: false, reason: shardRefusal(inner, "optim.masked's inner transformation")! },
  );
}
