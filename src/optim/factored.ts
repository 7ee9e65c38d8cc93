/** @file optax's Adafactor and its pieces: scaleByFactoredRms (factored second moments), clipByBlockRms, scaleByParamBlockRms / scaleByParamBlockNorm, ema, and the adafactor alias. */
import { Array } from "../core/array.js";
import type { DType } from "../core/dtype.js";
import * as tree from "../core/tree.js";
import * as jnp from "../numpy/index.js";
import * as ops from "../primitives/ops.js";
import { type Args, parseArgs, userDType } from "../numpy/elementwise-util.js";
import {
  type GradientTransformation,
  type ScalarOrSchedule,
  type ShardBehaviour,
  type Tree,
  EXACT_ON_SHARDS,
  NO_PARAMS_MSG,
  chain,
  emptyState,
  leafSizes,
  makeTransformation,
  perLeafSums,
  safeIncrement,
  zeroCount,
} from "./base.js";
import {
  addDecayedWeights,
  biasCorrection,
  castTree,
  checkHyper,
  checkHypers,
  scale,
  scaleByLearningRate,
  updateMoment,
  zerosLikeTree,
} from "./transforms.js";

type Hyper = number | Array;

/** Adafactor's decay schedule of the second moments: (step - stepOffset, decayRate) to the decay at that step. */
export type DecayRateFn = (step: Array, decayRate: Hyper) => Array;

/** Adafactor's default decay (Shazeer & Stern 2018): 1 - (step + 1)^-decayRate, in float32. */
export const decayRatePow: DecayRateFn = (step, exponent) => {
  const t = jnp.astype(jnp.add(step, 1), "float32");
  return jnp.subtract(1, jnp.power(t, typeof exponent === "number" ? -exponent : jnp.negative(exponent)));
};

/**
 * The dims a leaf's second moment is factored over: [second largest, largest] by size (ties in index order, as a
 * stable argsort), or null when `factored` is off, the rank is below 2 or the second largest dim is below minDim.
 */
export function factoredDims(shape: readonly number[], factored: boolean, minDim: number): [number, number] | null {
  if (!factored || shape.length < 2) return null;
  const order = [...shape.keys()].sort((a, b) => shape[a] - shape[b]);
  const d1 = order[order.length - 2],
    d0 = order[order.length - 1];
  return shape[d1] < minDim ? null : [d1, d0];
}

/** optax.FactoredState: the step count and, per leaf, row/column statistics (factored) or a full one (v). */
export interface FactoredState {
  count: Array;
  /** Per leaf: the EMA of the squared gradient's mean over the largest dim (factored leaves; else a [1] placeholder). */
  vRow: Tree;
  /** Per leaf: the EMA of the squared gradient's mean over the second largest dim (factored leaves; else [1]). */
  vCol: Tree;
  /** Per leaf: the EMA of the squared gradient (unfactored leaves; else a [1] placeholder). */
  v: Tree;
}

export interface ScaleByFactoredRmsOpts {
  factored?: boolean;
  decayRate?: Hyper;
  stepOffset?: Hyper;
  minDimSizeToFactor?: number;
  epsilon?: Hyper;
  decayRateFn?: DecayRateFn;
}
const FACTORED_NAMES = ["factored", "decayRate", "stepOffset", "minDimSizeToFactor", "epsilon", "decayRateFn"] as const;
type FactoredPos = [
  factored: boolean,
  decayRate: Hyper,
  stepOffset: Hyper,
  minDimSizeToFactor: number,
  epsilon: Hyper,
  decayRateFn: DecayRateFn,
];

/**
 * optax.scale_by_factored_rms (Adafactor's core): g scaled by the inverse root of an EMA of g^2 + epsilon, with the
 * EMA's decay decayRateFn(count - stepOffset, decayRate). A leaf whose two largest dims are >= minDimSizeToFactor
 * keeps only the row and column means of that EMA (over its largest, resp. second largest, dim), and scales by
 * (row / mean(row))^-1/2 col^-1/2, broadcast back; the others keep the full EMA.
 *
 * On ZeRO's flat shards: exact with factored=false (then elementwise, zero at zero); factored statistics need the
 * leaves' rows and columns, which flat slices do not have, so it refuses.
 */
export function scaleByFactoredRms(...args: Args<FactoredPos, ScaleByFactoredRmsOpts>): GradientTransformation {
  const fn = "optim.scaleByFactoredRms";
  return factoredCore(fn, parseArgs<ScaleByFactoredRmsOpts>(fn, args, FACTORED_NAMES));
}

function factoredCore(fn: string, o: ScaleByFactoredRmsOpts): GradientTransformation {
  const factored = o.factored ?? true,
    decayRate = o.decayRate ?? 0.8,
    stepOffset = o.stepOffset ?? 0,
    minDim = o.minDimSizeToFactor ?? 128,
    eps = o.epsilon ?? 1e-30,
    decayFn = o.decayRateFn ?? decayRatePow;
  if (typeof factored !== "boolean") throw new TypeError(`${fn}: factored must be a boolean, got ${typeof factored}`);
  if (typeof minDim !== "number" || !Number.isInteger(minDim) || minDim < 0)
    throw new TypeError(`${fn}: minDimSizeToFactor must be a non-negative integer, got ${String(minDim)}`);
  if (typeof decayFn !== "function")
    throw new TypeError(`${fn}: decayRateFn must be a function (step, decayRate) => decay, got ${typeof decayFn}`);
  checkHypers(fn, { decayRate, stepOffset, epsilon: eps });
  const placeholder = (dtype: DType): Array => jnp.zeros([1], dtype);
  const shards: ShardBehaviour = factored
    ? {
        exact: false,
        reason: `${fn}: its factored second moments keep row and column statistics of each parameter, which ZeRO's flat 1/n slices do not have; use stage 0, or factored: false (then it is elementwise)`,
      }
    : EXACT_ON_SHARDS;
  return makeTransformation(
    (params) => {
      const [pl, def] = tree.flatten(params);
      const rows: Array[] = [],
        cols: Array[] = [],
        vs: Array[] = [];
      for (const l of pl) {
        const p = l as Array;
        const fd = factoredDims(p.shape, factored, minDim);
        if (fd) {
          const [d1, d0] = fd;
          rows.push(
            jnp.zeros(
              p.shape.filter((_, i) => i !== d0),
              p.dtype,
            ),
          );
          cols.push(
            jnp.zeros(
              p.shape.filter((_, i) => i !== d1),
              p.dtype,
            ),
          );
          vs.push(placeholder(p.dtype));
        } else {
          rows.push(placeholder(p.dtype));
          cols.push(placeholder(p.dtype));
          vs.push(jnp.zerosLike(p));
        }
      }
      const st: FactoredState = {
        count: zeroCount(),
        vRow: tree.unflatten(def, rows),
        vCol: tree.unflatten(def, cols),
        v: tree.unflatten(def, vs),
      };
      return st;
    },
    (updates, state, params) => {
      if (params === undefined || params === null) throw new Error(`${fn}: ${NO_PARAMS_MSG}`);
      const s = state as FactoredState;
      const d = decayFn(jnp.subtract(s.count, stepOffset), decayRate);
      const oneMinusD = jnp.subtract(1, d);
      const [gl, def] = tree.flatten(updates);
      const [rl, cl, vl, pl] = [s.vRow, s.vCol, s.v, params].map((t) => tree.leaves(t) as Array[]);
      const out: Array[] = [],
        rows: Array[] = [],
        cols: Array[] = [],
        vs: Array[] = [];
      const ema = (old: Array, x: Array, dtype: DType): Array =>
        jnp.astype(jnp.add(jnp.multiply(d, old), jnp.multiply(oneMinusD, x)), dtype);
      gl.forEach((l, i) => {
        const g = l as Array,
          p = pl[i],
          dtype = p.dtype;
        const g2 = jnp.add(jnp.square(g), eps);
        const fd = factoredDims(p.shape, factored, minDim);
        if (fd) {
          const [d1, d0] = fd;
          const r = ema(rl[i], jnp.mean(g2, { axis: d0 }), dtype);
          const c = ema(cl[i], jnp.mean(g2, { axis: d1 }), dtype);
          // r has lost dim d0, so d1 moved down by one when it came after d0
          const rowColMean = jnp.mean(r, { axis: d1 > d0 ? d1 - 1 : d1, keepdims: true });
          const rowFactor = ops.rsqrt(jnp.divide(r, rowColMean));
          const colFactor = ops.rsqrt(c);
          out.push(jnp.multiply(jnp.multiply(g, jnp.expandDims(rowFactor, d0)), jnp.expandDims(colFactor, d1)));
          rows.push(r);
          cols.push(c);
          vs.push(placeholder(dtype));
        } else {
          const v = ema(vl[i], g2, dtype);
          out.push(jnp.multiply(g, ops.rsqrt(v)));
          rows.push(placeholder(dtype));
          cols.push(placeholder(dtype));
          vs.push(v);
        }
      });
      const ns: FactoredState = {
        count: safeIncrement(s.count),
        vRow: tree.unflatten(def, rows),
        vCol: tree.unflatten(def, cols),
        v: tree.unflatten(def, vs),
      };
      return [tree.unflatten(def, out), ns];
    },
    shards,
  );
}

// ---------------------------------------------------------------- per-block scaling

/** The leaves of `t` as Arrays (naming `fn` for any other leaf). */
function arrayLeaves(fn: string, t: Tree, what: string): [Array[], tree.TreeDef] {
  const [ls, def] = tree.flatten(t);
  ls.forEach((l) => {
    if (!(l instanceof Array)) throw new TypeError(`${fn}: every ${what} leaf must be an Array, got ${typeof l}`);
  });
  return [ls as Array[], def];
}

/** Each leaf's root mean square (over its full parameter under a sharded update). */
function blockRms(fn: string, t: Tree, what: string): Array[] {
  const [ls] = arrayLeaves(fn, t, what);
  const sizes = leafSizes(fn, t);
  return perLeafSums(ls, (x) => jnp.square(x)).map((s, i) => jnp.sqrt(jnp.divide(s, sizes[i])));
}

/**
 * optax.clip_by_block_rms: each leaf divided by max(1, rms(leaf) / threshold), so no leaf's root mean square exceeds
 * threshold. Exact on ZeRO's flat shards: each leaf's sum of squares adds up over the devices' slices.
 */
export function clipByBlockRms(threshold: Hyper): GradientTransformation {
  const fn = "optim.clipByBlockRms";
  checkHyper(fn, "threshold", threshold);
  return makeTransformation(
    () => emptyState(),
    (updates, state) => {
      const [ls, def] = arrayLeaves(fn, updates, "update");
      const r = blockRms(fn, updates, "update");
      const out = ls.map((u, i) => jnp.divide(u, jnp.astype(jnp.maximum(1, jnp.divide(r[i], threshold)), u.dtype)));
      return [tree.unflatten(def, out), state];
    },
    EXACT_ON_SHARDS,
  );
}

/** u * max(block(p), minScale) per leaf, `block` the leaf's rms or norm. */
function scaleByParamBlock(fn: string, minScale: Hyper, rms: boolean): GradientTransformation {
  checkHyper(fn, "minScale", minScale);
  return makeTransformation(
    () => emptyState(),
    (updates, state, params) => {
      if (params === undefined || params === null) throw new Error(`${fn}: ${NO_PARAMS_MSG}`);
      const [ls, def] = arrayLeaves(fn, updates, "update");
      const [pl] = arrayLeaves(fn, params, "parameter");
      const blocks = rms
        ? blockRms(fn, params, "parameter")
        : perLeafSums(pl, (x) => jnp.square(x)).map((s) => jnp.sqrt(s));
      const out = ls.map((u, i) => jnp.multiply(u, jnp.astype(jnp.maximum(blocks[i], minScale), u.dtype)));
      return [tree.unflatten(def, out), state];
    },
    EXACT_ON_SHARDS,
  );
}

/** optax.scale_by_param_block_rms: each update leaf times max(rms(its parameter), minScale) (exact on ZeRO shards). */
export function scaleByParamBlockRms(minScale: Hyper = 1e-3): GradientTransformation {
  return scaleByParamBlock("optim.scaleByParamBlockRms", minScale, true);
}

/** optax.scale_by_param_block_norm: each update leaf times max(||its parameter||, minScale) (exact on ZeRO shards). */
export function scaleByParamBlockNorm(minScale: Hyper = 1e-3): GradientTransformation {
  return scaleByParamBlock("optim.scaleByParamBlockNorm", minScale, false);
}

export interface EmaOpts {
  debias?: boolean;
  accumulatorDtype?: DType | null;
}

/**
 * optax.ema: the exponential moving average (1 - decay) g + decay ema as the update, divided by 1 - decay^count when
 * debias (the default); the average is kept in accumulatorDtype. Elementwise, so exact on ZeRO shards.
 */
export function ema(
  decay: Hyper,
  ...args: Args<[debias: boolean, accumulatorDtype: DType | null], EmaOpts>
): GradientTransformation {
  const fn = "optim.ema";
  const o = parseArgs<EmaOpts>(fn, args, ["debias", "accumulatorDtype"]);
  checkHyper(fn, "decay", decay);
  if (o.debias !== undefined && typeof o.debias !== "boolean")
    throw new TypeError(`${fn}: debias must be a boolean, got ${typeof o.debias}`);
  const debias = o.debias ?? true;
  const accDtype = userDType(fn, o.accumulatorDtype);
  return makeTransformation(
    (params) => ({ count: zeroCount(), ema: zerosLikeTree(params, accDtype) }),
    (updates, state) => {
      const s = state as { count: Array; ema: Tree };
      const next = updateMoment(updates, s.ema, decay, 1);
      const count = safeIncrement(s.count);
      return [debias ? biasCorrection(next, decay, count) : next, { count, ema: castTree(next, accDtype) }];
    },
    EXACT_ON_SHARDS,
  );
}

// ---------------------------------------------------------------- the adafactor alias

export interface AdafactorOpts {
  learningRate?: ScalarOrSchedule | null;
  minDimSizeToFactor?: number;
  decayRate?: Hyper;
  decayOffset?: Hyper;
  multiplyByParameterScale?: boolean;
  clippingThreshold?: Hyper | null;
  momentum?: Hyper | null;
  dtypeMomentum?: DType;
  weightDecayRate?: ScalarOrSchedule | null;
  eps?: Hyper;
  factored?: boolean;
  weightDecayMask?: Tree;
}
const ADAFACTOR_NAMES = [
  "learningRate",
  "minDimSizeToFactor",
  "decayRate",
  "decayOffset",
  "multiplyByParameterScale",
  "clippingThreshold",
  "momentum",
  "dtypeMomentum",
  "weightDecayRate",
  "eps",
  "factored",
  "weightDecayMask",
] as const;
type AdafactorPos = [
  learningRate: ScalarOrSchedule | null,
  minDimSizeToFactor: number,
  decayRate: Hyper,
  decayOffset: Hyper,
  multiplyByParameterScale: boolean,
  clippingThreshold: Hyper | null,
  momentum: Hyper | null,
  dtypeMomentum: DType,
  weightDecayRate: ScalarOrSchedule | null,
  eps: Hyper,
  factored: boolean,
  weightDecayMask: Tree,
];

/**
 * optax.adafactor (Shazeer & Stern 2018): scaleByFactoredRms, then (each optional) clipByBlockRms(clippingThreshold),
 * learningRate scaling, scaleByParamBlockRms (multiplyByParameterScale), momentum as an un-debiased ema kept in
 * dtypeMomentum, decoupled weight decay (weightDecayRate, weightDecayMask), and finally -1. Defaults as optax: no
 * learning rate (the parameter scale sets the step), minDimSizeToFactor 128, decayRate 0.8, clipping 1.0, eps 1e-30.
 * On ZeRO's flat shards it refuses unless factored is false (see scaleByFactoredRms).
 */
export function adafactor(...args: Args<AdafactorPos, AdafactorOpts>): GradientTransformation {
  const fn = "optim.adafactor";
  const o = parseArgs<AdafactorOpts>(fn, args, ADAFACTOR_NAMES);
  if (o.multiplyByParameterScale !== undefined && typeof o.multiplyByParameterScale !== "boolean")
    throw new TypeError(`${fn}: multiplyByParameterScale must be a boolean, got ${typeof o.multiplyByParameterScale}`);
  const txs: GradientTransformation[] = [
    factoredCore(fn, {
      factored: o.factored,
      decayRate: o.decayRate,
      stepOffset: o.decayOffset,
      minDimSizeToFactor: o.minDimSizeToFactor,
      epsilon: o.eps,
    }),
  ];
  const clipAt = o.clippingThreshold === undefined ? 1.0 : o.clippingThreshold;
  if (clipAt !== null) txs.push(clipByBlockRms(clipAt));
  if (o.learningRate !== undefined && o.learningRate !== null)
    txs.push(scaleByLearningRate(o.learningRate, { flipSign: false }));
  if (o.multiplyByParameterScale ?? true) txs.push(scaleByParamBlockRms());
  if (o.momentum !== undefined && o.momentum !== null)
    txs.push(ema(o.momentum, { debias: false, accumulatorDtype: o.dtypeMomentum ?? "float32" }));
  if (o.weightDecayRate !== undefined && o.weightDecayRate !== null)
    txs.push(addDecayedWeights({ weightDecay: o.weightDecayRate, mask: o.weightDecayMask ?? null }));
  txs.push(scale(-1));
  return chain(...txs);
}
