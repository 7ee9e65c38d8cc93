/** @file optax.contrib: the schedule-free optimizers (Defazio et al. 2024: scheduleFree, scheduleFreeSgd, scheduleFreeAdamw, scheduleFreeEvalParams) AdEMAMix (scaleByAdemamix, ademamix) and ADOPT (scaleByAdopt, adopt). */
import { Array } from "../core/array.js";
import { checkArity } from "../core/check-args.js";
import { type DType, isFloat } from "../core/dtype.js";
import * as tree from "../core/tree.js";
import * as jnp from "../numpy/index.js";
import { type Args, parseArgs, userDType } from "../numpy/elementwise-util.js";
import { sgd } from "./alias.js";
import {
  type GradientTransformation,
  type OptState,
  type ScalarOrSchedule,
  type Tree,
  type UpdateExtraArgs,
  EXACT_ON_SHARDS,
  chain,
  isSchedule,
  makeTransformation,
  zeroCount,
  safeIncrement,
  shardRefusal,
  treeMap,
} from "./base.js";
import { warmupConstantSchedule } from "./schedules.js";
import {
  addDecayedWeights,
  biasCorrection,
  castTree,
  checkHyper,
  checkHypers,
  scaleByLearningRate,
  scaleByRms,
  updateMoment,
  zerosLikeTree,
} from "./transforms.js";

type Hyper = number | Array;

/** optax.contrib.ScheduleFreeState: b1, the sum of the step weights, the step count (from 1), the largest lr, z. */
export interface ScheduleFreeState {
  b1: Array;
  weightSum: Array;
  stepCount: Array;
  maxLr: Array;
  baseOptimizerState: OptState;
  /** The base optimizer's iterate (the params are y, the interpolation of x and z). */
  z: Tree;
}

export interface ScheduleFreeOpts {
  b1?: Hyper;
  weightLrPower?: Hyper;
  stateDtype?: DType | null;
}

/** The narrowest floating dtype among the leaves (float32 when there is none), as optax's tree.dtype(params, "lowest"). */
function lowestFloat(t: Tree): DType {
  const bits = (d: DType): number => (d === "float64" ? 64 : d === "float32" ? 32 : 16);
  let best: DType | null = null;
  for (const l of tree.leaves(t))
    if (l instanceof Array && isFloat(l.dtype) && (best === null || bits(l.dtype) < bits(best))) best = l.dtype;
  return best ?? "float32";
}

/**
 * optax.contrib.schedule_free: wraps a base optimizer (whose updates include its learning rate) so that the params
 * y interpolate between the base iterate z and the weighted average x: at each step, with weight = maxLr^weightLrPower
 * (maxLr the largest learning rate so far, learningRate evaluated at the step count from 1) and ck = weight / (sum
 * of weights), z += base update, x = (1 - ck) x + ck z, y = b1 x + (1 - b1) z. Evaluate with
 * scheduleFreeEvalParams(state, params) (x). b1 must be > 0. Exact on ZeRO shards when the base optimizer is (all of
 * it is elementwise).
 */
export function scheduleFree(
  baseOptimizer: GradientTransformation,
  learningRate: ScalarOrSchedule,
  opts: ScheduleFreeOpts = {},
): GradientTransformation {
  const fn = "optim.contrib.scheduleFree";
  if (!baseOptimizer || typeof baseOptimizer.init !== "function" || typeof baseOptimizer.update !== "function")
    throw new TypeError(`${fn}: baseOptimizer must be a GradientTransformation (an object with init and update)`);
  const o = parseArgs<ScheduleFreeOpts>(fn, [opts], [], ["b1", "weightLrPower", "stateDtype"]);
  const b1 = o.b1 ?? 0.9,
    power = o.weightLrPower ?? 2;
  checkHyper(fn, "learningRate", learningRate, true);
  checkHyper(fn, "b1", b1);
  checkHyper(fn, "weightLrPower", power);
  if (typeof b1 === "number" && !(b1 > 0)) throw new Error(`${fn}: b1 must be > 0, got ${b1}`);
  const stateDtype = userDType(fn, o.stateDtype);
  const r = shardRefusal(baseOptimizer, `${fn}'s base optimizer`);
  const init = <P>(params: P): OptState => {
    const dt = lowestFloat(params);
    const st: ScheduleFreeState = {
      b1: jnp.astype(jnp.asarray(b1), dt),
      weightSum: jnp.zeros([], dt),
      stepCount: jnp.ones([], "int32"),
      maxLr: jnp.zeros([], dt),
      baseOptimizerState: baseOptimizer.init(params),
      z: treeMap((p) => (stateDtype ? jnp.astype(p, stateDtype) : jnp.add(p, jnp.zerosLike(p))), params),
    };
    return st;
  };
  const update = <U>(grads: U, state: OptState, params?: U | null, extra?: UpdateExtraArgs): [U, OptState] => {
    if (params === undefined || params === null)
      throw new Error(`${fn}: the params (y) must be passed to update (the base iterate is recovered from them)`);
    const s = state as ScheduleFreeState;
    if (!s || !(s.stepCount instanceof Array)) throw new Error(`${fn}: expected the state from its init`);
    const dt = s.maxLr.dtype;
    const lr = jnp.astype(jnp.asarray(isSchedule(learningRate) ? learningRate(s.stepCount) : learningRate), dt);
    const maxLr = jnp.maximum(s.maxLr, lr);
    const weight = jnp.power(maxLr, power);
    const total = jnp.add(s.weightSum, weight);
    // weight / total, 0 for 0 / 0 (a zero learning rate so far), NaN when either is NaN
    const ratio = jnp.divide(weight, total);
    const nanIn = jnp.logicalOr(jnp.isnan(weight), jnp.isnan(total));
    const ck = jnp.where(nanIn, NaN, jnp.where(jnp.isnan(ratio), 0, ratio));
    const [base, nextBase] = baseOptimizer.update(grads, s.baseOptimizerState, params, extra);
    const z = treeMap((zi, u) => jnp.astype(jnp.add(zi, u), zi.dtype), s.z, base as Tree);
    const bb = s.b1;
    const prevX = treeMap(
      (y, zi) => jnp.divide(jnp.subtract(y, jnp.multiply(jnp.subtract(1, bb), zi)), bb),
      params,
      s.z,
    );
    const x = treeMap((xi, zi) => jnp.add(jnp.multiply(jnp.subtract(1, ck), xi), jnp.multiply(ck, zi)), prevX, z);
    const updates = treeMap(
      (xi, zi, y) =>
        jnp.astype(jnp.subtract(jnp.add(jnp.multiply(bb, xi), jnp.multiply(jnp.subtract(1, bb), zi)), y), y.dtype),
      x,
      z,
      params,
    );
    const ns: ScheduleFreeState = {
      b1: s.b1,
      weightSum: jnp.astype(total, dt),
      stepCount: safeIncrement(s.stepCount),
      maxLr: jnp.astype(maxLr, dt),
      baseOptimizerState: nextBase,
      z,
    };
    return [updates as U, ns];
  };
  return { init, update, shards: r === null ? { exact: true } : { exact: false, reason: r } };
}

/** optax.contrib.schedule_free_eval_params: the averaged iterate x = (y - (1 - b1) z) / b1, to evaluate the model at. */
export function scheduleFreeEvalParams<P>(state: OptState, params: P): P {
  checkArity(
    "optim.contrib.scheduleFreeEvalParams",
    arguments,
    2,
    "optim.contrib.scheduleFreeEvalParams(state, params)",
  );
  const s = state as ScheduleFreeState | null;
  if (!s || !(s.b1 instanceof Array) || s.z === undefined)
    throw new Error("optim.contrib.scheduleFreeEvalParams: the state must be a scheduleFree state (with b1 and z)");
  return treeMap(
    (y, zi) => jnp.divide(jnp.subtract(y, jnp.multiply(jnp.subtract(1, s.b1), zi)), s.b1),
    params,
    s.z,
  ) as P;
}

export interface ScheduleFreeSgdOpts extends ScheduleFreeOpts {
  learningRate?: Hyper;
  warmupSteps?: number | null;
  weightDecay?: Hyper | null;
}
/** The learning rate, or a linear warmup from 0 to it over warmupSteps (optax's warmup_constant_schedule). */
function warmedUp(lr: Hyper, warmupSteps: number | null | undefined): ScalarOrSchedule {
  return warmupSteps === undefined || warmupSteps === null ? lr : warmupConstantSchedule(0, lr, warmupSteps);
}

/** optax.contrib.schedule_free_sgd: scheduleFree over sgd(learningRate) (with weightDecay added first), lr default 1. */
export function scheduleFreeSgd(opts: ScheduleFreeSgdOpts = {}): GradientTransformation {
  const fn = "optim.contrib.scheduleFreeSgd";
  const o = parseArgs<ScheduleFreeSgdOpts>(
    fn,
    [opts],
    [],
    ["learningRate", "warmupSteps", "b1", "weightDecay", "weightLrPower", "stateDtype"],
  );
  const lr = warmedUp(o.learningRate ?? 1, o.warmupSteps);
  const opt =
    o.weightDecay === undefined || o.weightDecay === null
      ? sgd(lr)
      : chain(addDecayedWeights({ weightDecay: o.weightDecay }), sgd(lr));
  return scheduleFree(opt, lr, { b1: o.b1, weightLrPower: o.weightLrPower, stateDtype: o.stateDtype });
}

export interface ScheduleFreeAdamwOpts extends ScheduleFreeOpts {
  learningRate?: Hyper;
  warmupSteps?: number | null;
  b2?: Hyper;
  eps?: Hyper;
  weightDecay?: Hyper;
}
/**
 * optax.contrib.schedule_free_adamw: scheduleFree over adamw without its momentum (scaleByRms(b2, eps outside the
 * root, bias-corrected), + weightDecay * params, -learningRate); learningRate default 0.0025, optional warmup.
 */
export function scheduleFreeAdamw(opts: ScheduleFreeAdamwOpts = {}): GradientTransformation {
  const fn = "optim.contrib.scheduleFreeAdamw";
  const o = parseArgs<ScheduleFreeAdamwOpts>(
    fn,
    [opts],
    [],
    ["learningRate", "warmupSteps", "b1", "b2", "eps", "weightDecay", "weightLrPower", "stateDtype"],
  );
  const lr = warmedUp(o.learningRate ?? 0.0025, o.warmupSteps);
  const opt = chain(
    scaleByRms({ decay: o.b2 ?? 0.999, eps: o.eps ?? 1e-8, epsInSqrt: false, biasCorrection: true }),
    addDecayedWeights({ weightDecay: o.weightDecay ?? 0 }),
    scaleByLearningRate(lr),
  );
  return scheduleFree(opt, lr, { b1: o.b1, weightLrPower: o.weightLrPower, stateDtype: o.stateDtype });
}

// ---------------------------------------------------------------- AdEMAMix

export interface ScaleByAdemamixOpts {
  b1?: Hyper;
  b2?: Hyper;
  b3?: ScalarOrSchedule;
  alpha?: ScalarOrSchedule;
  eps?: Hyper;
  epsRoot?: Hyper;
  muDtype?: DType | null;
}
const ADEMAMIX_NAMES = ["b1", "b2", "b3", "alpha", "eps", "epsRoot", "muDtype"] as const;
type AdemamixPos = [
  b1: Hyper,
  b2: Hyper,
  b3: ScalarOrSchedule,
  alpha: ScalarOrSchedule,
  eps: Hyper,
  epsRoot: Hyper,
  muDtype: DType | null,
];

/**
 * optax.contrib.scale_by_ademamix (Pagliardini et al. 2024): Adam's bias-corrected fast EMA m1 (b1) and second
 * moment (b2) plus alpha times a slow EMA m2 (b3, not bias-corrected): (m1_hat + alpha m2) / (sqrt(nu_hat + epsRoot)
 * + eps). b3 and alpha may be schedules of the slow EMA's count. Elementwise: exact on ZeRO shards.
 */
export function scaleByAdemamix(...args: Args<AdemamixPos, ScaleByAdemamixOpts>): GradientTransformation {
  const fn = "optim.contrib.scaleByAdemamix";
  return ademamixCore(fn, parseArgs<ScaleByAdemamixOpts>(fn, args, ADEMAMIX_NAMES), 6);
}

function ademamixCore(fn: string, o: ScaleByAdemamixOpts, defaultAlpha: number): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.999,
    b3 = o.b3 ?? 0.9999,
    alpha = o.alpha ?? defaultAlpha,
    eps = o.eps ?? 1e-8,
    epsRoot = o.epsRoot ?? 0;
  checkHypers(fn, { b1, b2, eps, epsRoot });
  checkHyper(fn, "b3", b3, true);
  checkHyper(fn, "alpha", alpha, true);
  const muDtype = userDType(fn, o.muDtype);
  return makeTransformation(
    (params) => ({
      count: zeroCount(),
      countM2: zeroCount(),
      m1: zerosLikeTree(params, muDtype),
      m2: zerosLikeTree(params, muDtype),
      nu: zerosLikeTree(params, muDtype),
    }),
    (updates, state) => {
      const s = state as { count: Array; countM2: Array; m1: Tree; m2: Tree; nu: Tree };
      const cb3 = isSchedule(b3) ? b3(s.countM2) : b3;
      const ca = isSchedule(alpha) ? alpha(s.countM2) : alpha;
      const m1 = updateMoment(updates, s.m1, b1, 1);
      const m2 = updateMoment(updates, s.m2, cb3, 1);
      const nu = updateMoment(updates, s.nu, b2, 2);
      const count = safeIncrement(s.count);
      const out = treeMap(
        (a, b, v) => jnp.divide(jnp.add(a, jnp.multiply(ca, b)), jnp.add(jnp.sqrt(jnp.add(v, epsRoot)), eps)),
        biasCorrection(m1, b1, count),
        m2,
        biasCorrection(nu, b2, count),
      );
      const ns = {
        count,
        countM2: safeIncrement(s.countM2),
        m1: castTree(m1, muDtype),
        m2: castTree(m2, muDtype),
        nu: castTree(nu, muDtype),
      };
      return [out, ns];
    },
    EXACT_ON_SHARDS,
  );
}

export interface AdemamixOpts extends ScaleByAdemamixOpts {
  weightDecay?: Hyper;
  mask?: Tree;
}
/** optax.contrib.ademamix: scaleByAdemamix (alpha 5 here, as optax's alias), + weightDecay * params (masked), -lr. */
export function ademamix(
  learningRate: ScalarOrSchedule,
  ...args: Args<[...AdemamixPos, weightDecay: Hyper, mask: Tree], AdemamixOpts>
): GradientTransformation {
  const fn = "optim.contrib.ademamix";
  const o = parseArgs<AdemamixOpts>(fn, args, [...ADEMAMIX_NAMES, "weightDecay", "mask"]);
  return chain(
    ademamixCore(fn, o, 5),
    addDecayedWeights({ weightDecay: o.weightDecay ?? 0, mask: o.mask ?? null }),
    scaleByLearningRate(learningRate),
  );
}

// ---------------------------------------------------------------- ADOPT

export interface ScaleByAdoptOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  muDtype?: DType | null;
  nesterov?: boolean;
  useClipping?: boolean;
  /** The clipping bound as a function of the count (from 0); default count^0.25. */
  clipValueFn?: (count: Array) => Array | number;
}
const ADOPT_NAMES = ["b1", "b2", "eps", "muDtype"] as const;
const ADOPT_KEYWORDS = ["nesterov", "useClipping", "clipValueFn"] as const;
type AdoptPos = [b1: Hyper, b2: Hyper, eps: Hyper, muDtype: DType | null];

/**
 * optax.contrib.scale_by_adopt (Taniguchi et al. 2024): the gradient is normalised by the previous step's second
 * moment, g / max(sqrt(nu_prev), eps), clipped to +-clipValueFn(count) (useClipping), then averaged with b1 (nesterov:
 * one more b1 average); nu is the EMA of g^2 with b2. At the first step b1 is taken as 1 and b2 as 0, so the first
 * update is 0 and nu = g^2. Elementwise: exact on ZeRO shards.
 */
export function scaleByAdopt(...args: Args<AdoptPos, ScaleByAdoptOpts>): GradientTransformation {
  const fn = "optim.contrib.scaleByAdopt";
  return adoptCore(fn, parseArgs<ScaleByAdoptOpts>(fn, args, ADOPT_NAMES, ADOPT_KEYWORDS));
}

function adoptCore(fn: string, o: ScaleByAdoptOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.9999,
    eps = o.eps ?? 1e-6;
  checkHypers(fn, { b1, b2, eps });
  for (const k of ["nesterov", "useClipping"] as const)
    if (o[k] !== undefined && typeof o[k] !== "boolean")
      throw new TypeError(`${fn}: ${k} must be a boolean, got ${typeof o[k]}`);
  const clipFn = o.clipValueFn ?? ((c: Array) => jnp.power(jnp.astype(c, "float32"), 0.25));
  if (typeof clipFn !== "function") throw new TypeError(`${fn}: clipValueFn must be a function of the count`);
  const muDtype = userDType(fn, o.muDtype);
  const nesterov = o.nesterov ?? false,
    clipping = o.useClipping ?? true;
  return makeTransformation(
    (params) => ({ count: zeroCount(), mu: zerosLikeTree(params, muDtype), nu: zerosLikeTree(params) }),
    (updates, state) => {
      const s = state as { count: Array; mu: Tree; nu: Tree };
      const started = jnp.greater(s.count, 0);
      const bb1 = jnp.where(started, b1, 1),
        bb2 = jnp.where(started, b2, 0);
      const nu = updateMoment(updates, s.nu, bb2, 2);
      const c = clipping ? clipFn(s.count) : null;
      const m = treeMap(
        (g, v) => {
          const x = jnp.divide(g, jnp.maximum(jnp.sqrt(v), eps));
          return c === null ? x : jnp.clip(x, jnp.negative(c), c);
        },
        updates,
        s.nu,
      );
      const mu = updateMoment(m, s.mu, bb1, 1);
      const out = nesterov ? updateMoment(m, mu, bb1, 1) : mu;
      return [
        treeMap((x, g) => jnp.astype(x, g.dtype), out, updates),
        {
          count: safeIncrement(s.count),
          mu: castTree(mu, muDtype),
          nu: treeMap((x, v) => jnp.astype(x, v.dtype), nu, s.nu),
        },
      ];
    },
    EXACT_ON_SHARDS,
  );
}

/** optax.contrib.adopt: scaleByAdopt (b2 0.9999, eps 1e-6, clipping count^0.25) then -learningRate. */
export function adopt(
  learningRate: ScalarOrSchedule,
  ...args: Args<AdoptPos, ScaleByAdoptOpts>
): GradientTransformation {
  const fn = "optim.contrib.adopt";
  const o = parseArgs<ScaleByAdoptOpts>(fn, args, ADOPT_NAMES, ADOPT_KEYWORDS);
  return chain(adoptCore(fn, o), scaleByLearningRate(learningRate));
}
