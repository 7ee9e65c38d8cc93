/** @file optax.scale_by_lbfgs (the L-BFGS two-loop recursion) and optax.lbfgs (by default with the zoom linesearch). */
import { Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import {
  type GradientTransformation,
  type ScalarOrSchedule,
  type Tree,
  NO_PARAMS_MSG,
  chain,
  identity,
  makeTransformation,
  safeIncrement,
  sumOverLeaves,
  treeMap,
  zeroCount,
} from "./base.js";
import { scale, scaleByLearningRate } from "./transforms.js";
import { scaleByZoomLinesearch } from "./zoom-linesearch.js";

/** optax.ScaleByLBFGSState: the last params and updates, and the last memorySize differences with their weights. */
export interface ScaleByLbfgsState {
  count: Array;
  params: Tree;
  updates: Tree;
  /** Per leaf [memorySize, ...shape]: the parameter differences s_i. */
  diffParamsMemory: Tree;
  /** Per leaf [memorySize, ...shape]: the update (gradient) differences y_i. */
  diffUpdatesMemory: Tree;
  /** [memorySize] float32: rho_i = 1 / (y_i . s_i), 0 where that is 0. */
  weightsMemory: Array;
}

/** The sum over leaves of a . b (a float32 scalar; over every device's slices under a sharded update). */
function vdot(fn: string, a: Tree, b: Tree): Array {
  const prod = treeMap((x, y) => jnp.multiply(x, y), a, b);
  return jnp.asarray(
    sumOverLeaves(fn, prod, (x) => jnp.astype(jnp.sum(x), "float32")),
    "float32",
  );
}

/** The one-hot [m] mask of a traced index, shaped to broadcast against [m, ...shape]. */
const oneHot = (m: number, idx: Array, ndim: number): Array =>
  jnp.reshape(jnp.equal(jnp.arange(m), idx), [m, ...globalThis.Array<number>(ndim).fill(1)]);
/** Row `idx` (traced) of a stacked leaf [m, ...shape]. */
const rowOf = (x: Array, idx: Array): Array =>
  jnp.sum(jnp.where(oneHot(x.shape[0], idx, x.ndim - 1), x, jnp.zerosLike(x)), { axis: 0 });
/** x with row `idx` (traced) set to y. */
const setRow = (x: Array, idx: Array, y: Array): Array =>
  jnp.where(oneHot(x.shape[0], idx, x.ndim - 1), jnp.astype(jnp.broadcastTo(y, x.shape), x.dtype), x);

/**
 * optax.scale_by_lbfgs (Nocedal & Wright, Algorithm 7.4): the update preconditioned by the inverse-Hessian estimate
 * of the last memorySize pairs (s, y) = (params - previous params, updates - previous updates), with the initial
 * scaling y.s / y.y (scaleInitPrecond; at the first step min(1, 1 / ||g||)). It expects `updates` to be gradients
 * and `params` the point they were taken at. The state is optax's (memories stacked [memorySize, ...shape]).
 *
 * Refused on ZeRO's flat shards: its dot products would sum over the slices, but ZeRO splits only state leaves that
 * are flat per-parameter vectors, and the stacked memories are not (they would be replicated while they differ).
 */
export function scaleByLbfgs(
  ...args: Args<[memorySize: number, scaleInitPrecond: boolean], { memorySize?: number; scaleInitPrecond?: boolean }>
): GradientTransformation {
  const fn = "optim.scaleByLbfgs";
  const o = parseArgs<{ memorySize: number; scaleInitPrecond: boolean }>(fn, args, ["memorySize", "scaleInitPrecond"]);
  return lbfgsCore(fn, o.memorySize ?? 10, o.scaleInitPrecond ?? true);
}

function lbfgsCore(fn: string, m: number, scaleInit: boolean): GradientTransformation {
  if (typeof m !== "number" || !Number.isInteger(m) || m < 1)
    throw new Error(`${fn}: memorySize must be an integer >= 1, got ${String(m)}`);
  if (typeof scaleInit !== "boolean")
    throw new TypeError(`${fn}: scaleInitPrecond must be a boolean, got ${typeof scaleInit}`);
  const stacked = (params: Tree): Tree => treeMap((p) => jnp.zeros([m, ...p.shape], p.dtype), params);
  return makeTransformation(
    (params) => {
      const st: ScaleByLbfgsState = {
        count: zeroCount(),
        params: treeMap((p) => jnp.zerosLike(p), params),
        updates: treeMap((p) => jnp.zerosLike(p), params),
        diffParamsMemory: stacked(params),
        diffUpdatesMemory: stacked(params),
        weightsMemory: jnp.zeros([m], "float32"),
      };
      return st;
    },
    (updates, state, params) => {
      if (params === undefined || params === null) throw new Error(`${fn}: ${NO_PARAMS_MSG}`);
      const s = state as ScaleByLbfgsState;
      const started = jnp.greater(s.count, 0);
      const memIdx = jnp.remainder(s.count, m);
      const prevIdx = jnp.remainder(jnp.subtract(s.count, 1), m);
      const gate = (x: Array): Array => jnp.where(started, x, jnp.zerosLike(x));
      const dp = treeMap((p, q) => gate(jnp.subtract(p, q)), params, s.params);
      const du = treeMap((g, h) => gate(jnp.subtract(g, h)), updates, s.updates);
      const yDotS = vdot(fn, du, dp);
      const weight = gate(jnp.where(jnp.equal(yDotS, 0), 0, jnp.divide(1, yDotS)));
      const memP = treeMap((x, y) => setRow(x, prevIdx, y), s.diffParamsMemory, dp);
      const memU = treeMap((x, y) => setRow(x, prevIdx, y), s.diffUpdatesMemory, du);
      const rhos = setRow(s.weightsMemory, prevIdx, weight);
      let idScale: Array | number = 1;
      if (scaleInit) {
        const den = vdot(fn, du, du);
        const ratio = jnp.where(jnp.greater(den, 0), jnp.divide(yDotS, den), 1);
        const capped = jnp.minimum(1, jnp.divide(1, jnp.sqrt(vdot(fn, updates, updates))));
        idScale = jnp.where(started, ratio, capped);
      }
      // the two-loop recursion over the memory, oldest pair first ((memIdx + i) % m), unrolled: m is static
      const order = globalThis.Array.from({ length: m }, (_, i) => jnp.remainder(jnp.add(memIdx, i), m));
      const pairAt = (idx: Array): [Tree, Tree, Array] => [
        treeMap((x) => rowOf(x, idx), memP),
        treeMap((x) => rowOf(x, idx), memU),
        rowOf(rhos, idx),
      ];
      let vec: Tree = updates;
      const alphas: Array[] = [];
      for (let i = m - 1; i >= 0; i--) {
        const [si, yi, rho] = pairAt(order[i]);
        const alpha = jnp.multiply(rho, vdot(fn, si, vec));
        alphas[i] = alpha;
        vec = treeMap((v, y) => jnp.astype(jnp.subtract(v, jnp.multiply(alpha, y)), v.dtype), vec, yi);
      }
      vec = treeMap((v) => jnp.astype(jnp.multiply(idScale, v), v.dtype), vec);
      for (let i = 0; i < m; i++) {
        const [si, yi, rho] = pairAt(order[i]);
        const beta = jnp.multiply(rho, vdot(fn, yi, vec));
        vec = treeMap(
          (v, x) => jnp.astype(jnp.add(v, jnp.multiply(jnp.subtract(alphas[i], beta), x)), v.dtype),
          vec,
          si,
        );
      }
      const ns: ScaleByLbfgsState = {
        count: safeIncrement(s.count),
        params,
        updates,
        diffParamsMemory: memP,
        diffUpdatesMemory: memU,
        weightsMemory: rhos,
      };
      return [vec, ns];
    },
    {
      exact: false,
      reason: `${fn}: its memories are stacked [memorySize, ...shape] per parameter, which ZeRO's state layout (split only flat per-parameter vectors) would replicate although every device's slice differs; use stage 0`,
    },
  );
}

export interface LbfgsOpts {
  learningRate?: ScalarOrSchedule | null;
  memorySize?: number;
  scaleInitPrecond?: boolean;
  /** null: fixed steps; or a GradientTransformation run after the scaling; default the zoom linesearch (15 steps, "one"). */
  linesearch?: GradientTransformation | null;
}

/**
 * optax.lbfgs: scaleByLbfgs, then -learningRate (-1 without one), then the linesearch: by default optax's
 * scaleByZoomLinesearch({ maxLinesearchSteps: 15, initialGuessStrategy: "one" }), whose update (as any linesearch's)
 * needs the extra args { value, grad, valueFn } (use valueAndGradFromState to reuse the value and gradient it keeps);
 * `linesearch: null` gives fixed steps of learningRate (or 1).
 */
export function lbfgs(
  ...args: Args<
    [
      learningRate: ScalarOrSchedule | null,
      memorySize: number,
      scaleInitPrecond: boolean,
      linesearch: GradientTransformation | null,
    ],
    LbfgsOpts
  >
): GradientTransformation {
  const fn = "optim.lbfgs";
  const o = parseArgs<LbfgsOpts>(fn, args, ["learningRate", "memorySize", "scaleInitPrecond", "linesearch"]);
  const ls =
    o.linesearch === undefined
      ? scaleByZoomLinesearch({ maxLinesearchSteps: 15, initialGuessStrategy: "one" })
      : o.linesearch;
  if (ls !== null && (typeof ls !== "object" || typeof ls.init !== "function" || typeof ls.update !== "function"))
    throw new TypeError(`${fn}: linesearch must be null or a GradientTransformation`);
  const lr = o.learningRate ?? null;
  return chain(
    lbfgsCore(fn, o.memorySize ?? 10, o.scaleInitPrecond ?? true),
    lr === null ? scale(-1) : scaleByLearningRate(lr),
    ls ?? identity(),
  );
}
