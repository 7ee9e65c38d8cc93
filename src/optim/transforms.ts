/** @file optax gradient transformations: scale*, scaleByLion, scaleByBelief, scaleByYogi, scaleByRadam, trace, addDecayedWeights, clip, clipByGlobalNorm and globalNorm, with optax's numerics. */
import { Array } from "../core/array.js";
import { type DType } from "../core/dtype.js";
import * as tree from "../core/tree.js";
import * as jnp from "../numpy/index.js";
import * as ops from "../primitives/ops.js";
import { type Args, parseArgs, userDType } from "../numpy/elementwise-util.js";
import {
  type GradientTransformation,
  type Tree,
  type ScalarOrSchedule,
  type Schedule,
  NO_PARAMS_MSG,
  EXACT_ON_SHARDS,
  emptyState,
  shardedUpdate,
  parseArgsWithMask,
  identity,
  isSchedule,
  makeTransformation,
  masked,
  oneMinus,
  safeIncrement,
  sumOverLeaves,
  treeMap,
  zeroCount,
} from "./base.js";

type Hyper = number | Array;

// ---------------------------------------------------------------- tree math (optax.tree)

/** (1 - decay) * g**order + decay * t: the EMA of the order-th moment (order 1 or 2). */
export function updateMoment(updates: Tree, moments: Tree, decay: Hyper, order: 1 | 2): Tree {
  return treeMap(
    (g, t) => jnp.add(jnp.multiply(oneMinus(decay), order === 1 ? g : jnp.square(g)), jnp.multiply(decay, t)),
    updates,
    moments,
  );
}

/** t / (1 - decay**count), with the correction computed in float and cast to each moment's dtype. */
export function biasCorrection(moments: Tree, decay: Hyper, count: Array): Tree {
  const bc = jnp.subtract(1, jnp.power(decay, count));
  return treeMap((t) => jnp.divide(t, jnp.astype(bc, t.dtype)), moments);
}

export const zerosLikeTree = (t: Tree, dtype?: DType): Tree => treeMap((x) => jnp.zerosLike(x, dtype ?? null), t);
const fullLikeTree = (t: Tree, v: Hyper): Tree => treeMap((x) => jnp.fullLike(x, v), t);
export const castTree = (t: Tree, dtype?: DType): Tree => (dtype ? treeMap((x) => jnp.astype(x, dtype), t) : t);
export const castLikeTree = (t: Tree, like: Tree): Tree => treeMap((x, l) => jnp.astype(x, l.dtype), t, like);

/** optax.global_norm / optax.tree.norm: sqrt of the sum over leaves of sum(x * x). */
export function globalNorm(updates: Tree): Array {
  return jnp.sqrt(sumOverLeaves("optim.globalNorm", updates, (x) => jnp.sum(jnp.square(x))));
}

export function checkHyper(fn: string, name: string, v: unknown, allowSchedule = false): void {
  if (typeof v === "number" || v instanceof Array || (allowSchedule && typeof v === "function")) return;
  throw new TypeError(
    `${fn}: ${name} must be a number${allowSchedule ? ", an Array or a schedule function" : " or an Array"}, got ${v === null ? "null" : typeof v}`,
  );
}

// ---------------------------------------------------------------- scaling

/** optax.scale: updates * stepSize. */
export function scale(stepSize: Hyper): GradientTransformation {
  checkHyper("optim.scale", "stepSize", stepSize);
  return makeTransformation(
    () => emptyState(),
    (updates, state) => [treeMap((g) => jnp.multiply(stepSize, g), updates), state],
    EXACT_ON_SHARDS,
  );
}

/** optax.scale_by_schedule: updates * stepSizeFn(count); count starts at 0 and increments after use. */
export function scaleBySchedule(stepSizeFn: Schedule): GradientTransformation {
  if (typeof stepSizeFn !== "function")
    throw new TypeError(
      `optim.scaleBySchedule: stepSizeFn must be a function of the step count, got ${typeof stepSizeFn}`,
    );
  return makeTransformation(
    () => ({ count: zeroCount() }),
    (updates, state) => {
      const { count } = state as { count: Array };
      const s = stepSizeFn(count);
      return [
        treeMap((g) => jnp.multiply(jnp.array(s, { dtype: g.dtype }), g), updates),
        { count: safeIncrement(count) },
      ];
    },
    EXACT_ON_SHARDS,
  );
}

/** optax.scale_by_learning_rate: scales by -learningRate (flipSign) with a constant or a schedule. */
export function scaleByLearningRate(
  learningRate: ScalarOrSchedule | null,
  ...args: Args<[], { flipSign?: boolean }>
): GradientTransformation {
  const o = parseArgs<{ flipSign: boolean }>("optim.scaleByLearningRate", args, [], ["flipSign"]);
  if (learningRate === null || learningRate === undefined) return identity();
  checkHyper("optim.scaleByLearningRate", "learningRate", learningRate, true);
  const m = o.flipSign === false ? 1 : -1;
  if (isSchedule(learningRate))
    return scaleBySchedule((count) => {
      const v = learningRate(count);
      return typeof v === "number" ? m * v : jnp.multiply(m, v);
    });
  return scale(typeof learningRate === "number" ? m * learningRate : jnp.multiply(m, learningRate));
}

export interface ScaleByAdamOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  muDtype?: DType | null;
  nesterov?: boolean;
}
const ADAM_NAMES = ["b1", "b2", "eps", "epsRoot", "muDtype"] as const;
type AdamPos = [b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper, muDtype: DType | null];

/** optax.scale_by_adam: mu_hat / (sqrt(nu_hat + epsRoot) + eps) with bias-corrected moments (nesterov: NAdam). */
export function scaleByAdam(...args: Args<AdamPos, ScaleByAdamOpts>): GradientTransformation {
  const o = parseArgs<ScaleByAdamOpts>("optim.scaleByAdam", args, ADAM_NAMES, ["nesterov"]);
  return adamCore("optim.scaleByAdam", o);
}

/** checkHyper for each named hyperparameter. */
export function checkHypers(fn: string, hs: Record<string, Hyper>): void {
  for (const [k, v] of Object.entries(hs)) checkHyper(fn, k, v);
}
/** Adam's bias-corrected first moment; with nesterov NAdam's look-ahead b1 * mu_hat(t+1) + (1 - b1) * g_hat(t). */
function firstMomentHat(mu: Tree, updates: Tree, b1: Hyper, countInc: Array, nesterov: boolean): Tree {
  return nesterov
    ? treeMap(
        (m, g) => jnp.add(jnp.multiply(b1, m), jnp.multiply(oneMinus(b1), g)),
        biasCorrection(mu, b1, safeIncrement(countInc)),
        biasCorrection(updates, b1, countInc),
      )
    : biasCorrection(mu, b1, countInc);
}

export function adamCore(fn: string, o: ScaleByAdamOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.999,
    eps = o.eps ?? 1e-8,
    epsRoot = o.epsRoot ?? 0;
  checkHypers(fn, { b1, b2, eps, epsRoot });
  const muDtype = userDType(fn, o.muDtype);
  const nesterov = o.nesterov ?? false;
  return makeTransformation(
    (params) => ({ count: zeroCount(), mu: zerosLikeTree(params, muDtype), nu: zerosLikeTree(params) }),
    (updates, state) => {
      const s = state as { count: Array; mu: Tree; nu: Tree };
      const mu = updateMoment(updates, s.mu, b1, 1);
      const nu = updateMoment(updates, s.nu, b2, 2);
      const countInc = safeIncrement(s.count);
      const muHat = firstMomentHat(mu, updates, b1, countInc, nesterov);
      const nuHat = biasCorrection(nu, b2, countInc);
      const out = treeMap((m, v) => jnp.divide(m, jnp.add(jnp.sqrt(jnp.add(v, epsRoot)), eps)), muHat, nuHat);
      return [out, { count: countInc, mu: castTree(mu, muDtype), nu: castLikeTree(nu, s.nu) }];
    },
    EXACT_ON_SHARDS,
  );
}

export interface ScaleByRmsOpts {
  decay?: Hyper;
  eps?: Hyper;
  initialScale?: Hyper;
  epsInSqrt?: boolean;
  biasCorrection?: boolean;
}
const RMS_NAMES = ["decay", "eps", "initialScale", "epsInSqrt", "biasCorrection"] as const;
type RmsPos = [decay: Hyper, eps: Hyper, initialScale: Hyper, epsInSqrt: boolean, biasCorrection: boolean];

function rmsCore(fn: string, o: ScaleByRmsOpts, centered: boolean): GradientTransformation {
  const decay = o.decay ?? 0.9,
    eps = o.eps ?? 1e-8,
    init = o.initialScale ?? 0;
  for (const [k, v] of [
    ["decay", decay],
    ["eps", eps],
    ["initialScale", init],
  ] as const)
    checkHyper(fn, k, v);
  const inSqrt = o.epsInSqrt ?? true,
    bc = o.biasCorrection ?? false;
  return makeTransformation(
    (params) => {
      const st: Record<string, Tree> = { nu: fullLikeTree(params, init) };
      if (centered) st.mu = zerosLikeTree(params);
      if (bc) st.count = zeroCount();
      return st;
    },
    (updates, state) => {
      const s = state as { nu: Tree; mu?: Tree; count?: Array };
      const nu = updateMoment(updates, s.nu, decay, 2);
      const mu = centered ? updateMoment(updates, s.mu, decay, 1) : null;
      const countInc = bc ? safeIncrement(s.count!) : null;
      const nuHat = bc ? biasCorrection(nu, decay, countInc!) : nu;
      const muHat = centered ? (bc ? biasCorrection(mu, decay, countInc!) : mu) : null;
      // variance estimate: nu (scaleByRms) or nu - mu^2 (scaleByStddev)
      const variance = centered ? treeMap((m, n) => jnp.subtract(n, jnp.square(m)), muHat, nuHat) : nuHat;
      const scaling = treeMap(
        (n) => (inSqrt ? ops.rsqrt(jnp.add(n, eps)) : jnp.divide(1, jnp.add(jnp.sqrt(n), eps))),
        variance,
      );
      const out = treeMap((sc, g) => jnp.multiply(sc, g), scaling, updates);
      const ns: Record<string, Tree> = { nu };
      if (centered) ns.mu = mu;
      if (bc) ns.count = countInc;
      return [out, ns];
    },
    EXACT_ON_SHARDS,
  );
}

/** optax.scale_by_rms: updates / sqrt(EMA of squared updates + eps) (eps outside the sqrt with epsInSqrt=false). */
export function scaleByRms(...args: Args<RmsPos, ScaleByRmsOpts>): GradientTransformation {
  return rmsCore("optim.scaleByRms", parseArgs<ScaleByRmsOpts>("optim.scaleByRms", args, RMS_NAMES), false);
}
/** optax.scale_by_stddev: like scaleByRms, centered by the EMA of the updates (nu - mu^2). */
export function scaleByStddev(...args: Args<RmsPos, ScaleByRmsOpts>): GradientTransformation {
  return rmsCore("optim.scaleByStddev", parseArgs<ScaleByRmsOpts>("optim.scaleByStddev", args, RMS_NAMES), true);
}

/** optax.scale_by_rss (AdaGrad): updates * rsqrt(sum of squares + eps), or 0 where the sum is 0. */
export function scaleByRss(
  ...args: Args<[initialAccumulatorValue: Hyper, eps: Hyper], { initialAccumulatorValue?: Hyper; eps?: Hyper }>
): GradientTransformation {
  const o = parseArgs<{ initialAccumulatorValue: Hyper; eps: Hyper }>("optim.scaleByRss", args, [
    "initialAccumulatorValue",
    "eps",
  ]);
  const init = o.initialAccumulatorValue ?? 0.1,
    eps = o.eps ?? 1e-7;
  checkHyper("optim.scaleByRss", "initialAccumulatorValue", init);
  checkHyper("optim.scaleByRss", "eps", eps);
  return makeTransformation(
    (params) => ({ sumOfSquares: fullLikeTree(params, init) }),
    (updates, state) => {
      const sos = treeMap((g, t) => jnp.add(jnp.square(g), t), updates, (state as { sumOfSquares: Tree }).sumOfSquares);
      const inv = treeMap((t) => jnp.where(jnp.greater(t, 0), ops.rsqrt(jnp.add(t, eps)), 0), sos);
      return [treeMap((sc, g) => jnp.multiply(sc, g), inv, updates), { sumOfSquares: sos }];
    },
    EXACT_ON_SHARDS,
  );
}

/** optax.safe_norm(x, minNorm): the 2-norm of all elements, or minNorm when the norm is <= minNorm. */
export function safeNorm(x: Array, minNorm: Hyper): Array {
  const n = jnp.linalg.norm(x);
  const masked = jnp.where(jnp.lessEqual(n, minNorm), jnp.onesLike(x), x);
  return jnp.where(jnp.lessEqual(n, minNorm), minNorm, jnp.linalg.norm(masked));
}

/** optax.scale_by_trust_ratio (LARS/LAMB): update * trustCoefficient * ||param|| / (||update|| + eps), 1 where a norm is 0. */
export function scaleByTrustRatio(
  ...args: Args<
    [minNorm: Hyper, trustCoefficient: Hyper, eps: Hyper],
    { minNorm?: Hyper; trustCoefficient?: Hyper; eps?: Hyper }
  >
): GradientTransformation {
  const o = parseArgs<{ minNorm: Hyper; trustCoefficient: Hyper; eps: Hyper }>("optim.scaleByTrustRatio", args, [
    "minNorm",
    "trustCoefficient",
    "eps",
  ]);
  const minNorm = o.minNorm ?? 0,
    tc = o.trustCoefficient ?? 1,
    eps = o.eps ?? 0;
  return makeTransformation(
    () => emptyState(),
    (updates, state, params) => {
      if (params === undefined || params === null) throw new Error(`optim.scaleByTrustRatio: ${NO_PARAMS_MSG}`);
      const ctx = shardedUpdate();
      if (ctx) return [shardedTrustRatio(ctx.sum.bind(ctx), updates, params, minNorm, tc, eps), state];
      const out = treeMap(
        (u, p) => {
          const pn = safeNorm(p, minNorm),
            un = safeNorm(u, minNorm);
          const ratio = jnp.divide(jnp.multiply(tc, pn), jnp.add(un, eps));
          const zero = jnp.logicalOr(jnp.equal(pn, 0), jnp.equal(un, 0));
          return jnp.multiply(u, jnp.where(zero, jnp.array(1, { dtype: p.dtype }), ratio));
        },
        updates,
        params,
      );
      return [out, state];
    },
    EXACT_ON_SHARDS,
  );
}

/**
 * scaleByTrustRatio on slices: each leaf's ||p||^2 and ||u||^2 from its devices' partial sums (all leaves' partials
 * summed in one collective), then the same ratio per leaf as on full parameters.
 */
function shardedTrustRatio(
  sum: (x: Array) => Array,
  updates: Tree,
  params: Tree,
  minNorm: Hyper,
  tc: Hyper,
  eps: Hyper,
): Tree {
  const [ul, udef] = tree.flatten(updates);
  const pl = tree.leaves(params);
  if (ul.length === 0) return updates;
  const sq = (x: unknown): Array => jnp.astype(jnp.sum(jnp.square(x as Array)), "float32");
  const sums = sum(jnp.stack(ul.flatMap((u, i) => [sq(pl[i]), sq(u)])));
  const at = (v: Array, k: number): Array => jnp.reshape(ops.sliceInDim(v, k, k + 1, 1, 0), []);
  // safe_norm: minNorm where the norm is <= minNorm
  const safe = (n2: Array): Array => {
    const n = jnp.sqrt(n2);
    return jnp.where(jnp.lessEqual(n, minNorm), minNorm, n);
  };
  const out = ul.map((l, i) => {
    const u = l as Array;
    const pn = jnp.astype(safe(at(sums, 2 * i)), u.dtype),
      un = jnp.astype(safe(at(sums, 2 * i + 1)), u.dtype);
    const ratio = jnp.divide(jnp.multiply(tc, pn), jnp.add(un, eps));
    const zero = jnp.logicalOr(jnp.equal(pn, 0), jnp.equal(un, 0));
    return jnp.multiply(u, jnp.where(zero, jnp.array(1, { dtype: u.dtype }), ratio));
  });
  return tree.unflatten(udef, out);
}

// ---------------------------------------------------------------- momentum, weight decay, clipping

/** optax.trace (momentum): t = g + decay * t; the update is t, or g + decay * t with nesterov. */
export function trace(
  decay: Hyper,
  ...args: Args<
    [nesterov: boolean, accumulatorDtype: DType | null],
    { nesterov?: boolean; accumulatorDtype?: DType | null }
  >
): GradientTransformation {
  const o = parseArgs<{ nesterov: boolean; accumulatorDtype: DType | null }>("optim.trace", args, [
    "nesterov",
    "accumulatorDtype",
  ]);
  checkHyper("optim.trace", "decay", decay);
  const accDtype = userDType("optim.trace", o.accumulatorDtype);
  const f = (g: Array, t: Array): Array => jnp.add(g, jnp.multiply(decay, t));
  return makeTransformation(
    (params) => ({ trace: zerosLikeTree(params, accDtype) }),
    (updates, state) => {
      const newTrace = treeMap(f, updates, (state as { trace: Tree }).trace);
      const out = o.nesterov ? treeMap(f, updates, newTrace) : newTrace;
      return [out, { trace: castTree(newTrace, accDtype) }];
    },
    EXACT_ON_SHARDS,
  );
}

/** optax.add_decayed_weights: updates + weightDecay * params (weightDecay may be a schedule), optionally masked. */
export function addDecayedWeights(
  ...args: Args<[weightDecay: ScalarOrSchedule, mask: Tree], { weightDecay?: ScalarOrSchedule; mask?: Tree }>
): GradientTransformation {
  const o = parseArgsWithMask<{ weightDecay: ScalarOrSchedule; mask: Tree }>("optim.addDecayedWeights", args, [
    "weightDecay",
    "mask",
  ]);
  const wd = o.weightDecay ?? 0;
  checkHyper("optim.addDecayedWeights", "weightDecay", wd, true);
  const t = makeTransformation(
    () => (isSchedule(wd) ? { count: zeroCount() } : emptyState()),
    (updates, state, params) => {
      if (params === undefined || params === null) throw new Error(`optim.addDecayedWeights: ${NO_PARAMS_MSG}`);
      const newState: Tree = isSchedule(wd) ? { count: safeIncrement((state as { count: Array }).count) } : state;
      if (typeof wd === "number" && wd === 0) return [updates, newState];
      const s = isSchedule(wd) ? wd((state as { count: Array }).count) : wd;
      return [treeMap((g, p) => jnp.add(g, jnp.multiply(s, p)), updates, params), newState];
    },
    EXACT_ON_SHARDS,
  );
  return o.mask === undefined || o.mask === null ? t : masked(t, o.mask);
}

/** optax.clip: clips every update element to [-maxDelta, maxDelta]. */
export function clip(maxDelta: Hyper): GradientTransformation {
  checkHyper("optim.clip", "maxDelta", maxDelta);
  const lo = typeof maxDelta === "number" ? -maxDelta : jnp.negative(maxDelta);
  return makeTransformation(
    () => emptyState(),
    (updates, state) => [treeMap((g) => jnp.clip(g, lo, maxDelta), updates), state],
    EXACT_ON_SHARDS,
  );
}

/** optax.clip_by_global_norm: rescales all updates by maxNorm / globalNorm when the global norm reaches maxNorm. */
export function clipByGlobalNorm(maxNorm: Hyper): GradientTransformation {
  checkHyper("optim.clipByGlobalNorm", "maxNorm", maxNorm);
  return makeTransformation(
    () => emptyState(),
    (updates, state) => {
      const gNorm = globalNorm(updates);
      const trigger = jnp.less(gNorm, maxNorm);
      if (trigger.ndim !== 0)
        throw new Error(`optim.clipByGlobalNorm: maxNorm must be a scalar, got shape (${trigger.shape.join(", ")})`);
      const out = treeMap(
        (t) => jnp.where(trigger, t, jnp.multiply(jnp.divide(t, jnp.astype(gNorm, t.dtype)), maxNorm)),
        updates,
      );
      return [out, state];
    },
    EXACT_ON_SHARDS,
  );
}

// ---------------------------------------------------------------- sign momentum (Lion) and AdaBelief

export interface ScaleByLionOpts {
  b1?: Hyper;
  b2?: Hyper;
  muDtype?: DType | null;
}
const LION_NAMES = ["b1", "b2", "muDtype"] as const;
type LionPos = [b1: Hyper, b2: Hyper, muDtype: DType | null];

/** optax.scale_by_lion: sign(b1 * mu + (1 - b1) * g), then mu = b2 * mu + (1 - b2) * g (mu kept in muDtype). */
export function scaleByLion(...args: Args<LionPos, ScaleByLionOpts>): GradientTransformation {
  return lionCore("optim.scaleByLion", parseArgs<ScaleByLionOpts>("optim.scaleByLion", args, LION_NAMES));
}

export function lionCore(fn: string, o: ScaleByLionOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.99;
  checkHyper(fn, "b1", b1);
  checkHyper(fn, "b2", b2);
  const muDtype = userDType(fn, o.muDtype);
  return makeTransformation(
    (params) => ({ count: zeroCount(), mu: zerosLikeTree(params, muDtype) }),
    (updates, state) => {
      const s = state as { count: Array; mu: Tree };
      // the step direction interpolates the old momentum and the gradient with b1; the stored momentum uses b2
      const out = treeMap(
        (g, m) => jnp.sign(jnp.add(jnp.multiply(oneMinus(b1), g), jnp.multiply(b1, m))),
        updates,
        s.mu,
      );
      const mu = castTree(updateMoment(updates, s.mu, b2, 1), muDtype);
      return [out, { count: safeIncrement(s.count), mu }];
    },
    EXACT_ON_SHARDS,
  );
}

export interface ScaleByBeliefOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  nesterov?: boolean;
}
const BELIEF_NAMES = ["b1", "b2", "eps", "epsRoot"] as const;
type BeliefPos = [b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper];

/** optax.scale_by_belief (AdaBelief): mu_hat / (sqrt(s_hat) + eps), s the EMA of (g - mu)^2 plus epsRoot. */
export function scaleByBelief(...args: Args<BeliefPos, ScaleByBeliefOpts>): GradientTransformation {
  const o = parseArgs<ScaleByBeliefOpts>("optim.scaleByBelief", args, BELIEF_NAMES, ["nesterov"]);
  return beliefCore("optim.scaleByBelief", o);
}

export function beliefCore(fn: string, o: ScaleByBeliefOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.999,
    eps = o.eps ?? 1e-16,
    epsRoot = o.epsRoot ?? 1e-16;
  checkHypers(fn, { b1, b2, eps, epsRoot });
  if (o.nesterov !== undefined && typeof o.nesterov !== "boolean")
    throw new TypeError(`${fn}: nesterov must be a boolean, got ${typeof o.nesterov}`);
  const nesterov = o.nesterov ?? false;
  return makeTransformation(
    (params) => ({ count: zeroCount(), mu: zerosLikeTree(params), nu: zerosLikeTree(params) }),
    (updates, state) => {
      const s = state as { count: Array; mu: Tree; nu: Tree };
      const mu = updateMoment(updates, s.mu, b1, 1);
      // the "belief": how far the gradient is from its new running mean
      const predictionError = treeMap((g, m) => jnp.subtract(g, m), updates, mu);
      const nu = treeMap((v) => jnp.add(v, epsRoot), updateMoment(predictionError, s.nu, b2, 2));
      const countInc = safeIncrement(s.count);
      const muHat = firstMomentHat(mu, updates, b1, countInc, nesterov);
      const nuHat = biasCorrection(nu, b2, countInc);
      const out = treeMap((m, v) => jnp.divide(m, jnp.add(jnp.sqrt(v), eps)), muHat, nuHat);
      return [out, { count: countInc, mu: castLikeTree(mu, s.mu), nu: castLikeTree(nu, s.nu) }];
    },
    EXACT_ON_SHARDS,
  );
}

// ---------------------------------------------------------------- Yogi and RAdam

export interface ScaleByYogiOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  initialAccumulatorValue?: Hyper;
}
const YOGI_NAMES = ["b1", "b2", "eps", "epsRoot", "initialAccumulatorValue"] as const;
type YogiPos = [b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper, initialAccumulatorValue: Hyper];

/** optax.scale_by_yogi: mu / (sqrt(nu + epsRoot) + eps), nu moved additively: nu - (1 - b2) sign(nu - g^2) g^2. */
export function scaleByYogi(...args: Args<YogiPos, ScaleByYogiOpts>): GradientTransformation {
  return yogiCore("optim.scaleByYogi", parseArgs<ScaleByYogiOpts>("optim.scaleByYogi", args, YOGI_NAMES));
}

export function yogiCore(fn: string, o: ScaleByYogiOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.999,
    eps = o.eps ?? 1e-3,
    epsRoot = o.epsRoot ?? 0,
    init = o.initialAccumulatorValue ?? 1e-6;
  checkHypers(fn, { b1, b2, eps, epsRoot, initialAccumulatorValue: init });
  // both moments start at initialAccumulatorValue and there is no bias correction, so a zero gradient on a zero
  // (padding) element still moves it unless that value is 0: only then is the update zero at zero
  const shards =
    init === 0
      ? EXACT_ON_SHARDS
      : {
          exact: false as const,
          reason: `${fn}: its moments start at initialAccumulatorValue (${typeof init === "number" ? init : "an Array"}), so the zero padding of flat ZeRO slices would get nonzero updates; to shard it, start them at 0: chain(scaleByYogi({ initialAccumulatorValue: 0 }), scaleByLearningRate(lr))`,
        };
  return makeTransformation(
    (params) => ({ count: zeroCount(), mu: fullLikeTree(params, init), nu: fullLikeTree(params, init) }),
    (updates, state) => {
      const s = state as { count: Array; mu: Tree; nu: Tree };
      const mu = updateMoment(updates, s.mu, b1, 1);
      const nu = treeMap(
        (g, v) => {
          const g2 = jnp.square(g);
          return jnp.subtract(v, jnp.multiply(jnp.multiply(oneMinus(b2), jnp.sign(jnp.subtract(v, g2))), g2));
        },
        updates,
        s.nu,
      );
      const out = treeMap((m, v) => jnp.divide(m, jnp.add(jnp.sqrt(jnp.add(v, epsRoot)), eps)), mu, nu);
      return [out, { count: safeIncrement(s.count), mu: castLikeTree(mu, s.mu), nu: castLikeTree(nu, s.nu) }];
    },
    shards,
  );
}

export interface ScaleByRadamOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  threshold?: number;
  nesterov?: boolean;
}
export const RADAM_NAMES = ["b1", "b2", "eps", "epsRoot", "threshold", "nesterov"] as const;
export type RadamPos = [b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper, threshold: number, nesterov: boolean];

/**
 * optax.scale_by_radam (Rectified Adam): with rho_inf = 2 / (1 - b2) - 1 and rho_t = rho_inf - 2 t b2^t / (1 - b2^t),
 * r mu_hat / (sqrt(nu_hat + epsRoot) + eps) once rho_t >= threshold (r the variance rectification), else mu_hat.
 */
export function scaleByRadam(...args: Args<RadamPos, ScaleByRadamOpts>): GradientTransformation {
  return radamCore("optim.scaleByRadam", parseArgs<ScaleByRadamOpts>("optim.scaleByRadam", args, RADAM_NAMES));
}

export function radamCore(fn: string, o: ScaleByRadamOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.999,
    eps = o.eps ?? 1e-8,
    epsRoot = o.epsRoot ?? 0,
    threshold = o.threshold ?? 5;
  checkHypers(fn, { b1, b2, eps, epsRoot });
  if (typeof threshold !== "number" || Number.isNaN(threshold))
    throw new TypeError(`${fn}: threshold must be a number, got ${String(threshold)}`);
  if (o.nesterov !== undefined && typeof o.nesterov !== "boolean")
    throw new TypeError(`${fn}: nesterov must be a boolean, got ${typeof o.nesterov}`);
  const nesterov = o.nesterov ?? false;
  // the length of the approximated simple moving average at t = infinity
  const roInf = jnp.subtract(jnp.divide(2, oneMinus(b2)), 1);
  return makeTransformation(
    (params) => ({ count: zeroCount(), mu: zerosLikeTree(params), nu: zerosLikeTree(params) }),
    (updates, state) => {
      const s = state as { count: Array; mu: Tree; nu: Tree };
      const mu = updateMoment(updates, s.mu, b1, 1);
      const nu = updateMoment(updates, s.nu, b2, 2);
      const countInc = safeIncrement(s.count);
      const b2t = jnp.power(b2, countInc);
      const ro = jnp.subtract(roInf, jnp.divide(jnp.multiply(jnp.multiply(2, countInc), b2t), jnp.subtract(1, b2t)));
      const rectify = jnp.greaterEqual(ro, threshold);
      // r = sqrt((ro - 4)(ro - 2) ro_inf / ((ro_inf - 4)(ro_inf - 2) ro)); ro_inf stands in where it is not used
      // (ro < 4 would make the square root NaN in the discarded branch)
      const roSafe = jnp.where(rectify, ro, roInf);
      const r = jnp.sqrt(
        jnp.divide(
          jnp.multiply(jnp.multiply(jnp.subtract(roSafe, 4), jnp.subtract(roSafe, 2)), roInf),
          jnp.multiply(jnp.multiply(jnp.subtract(roInf, 4), jnp.subtract(roInf, 2)), roSafe),
        ),
      );
      const muHat = firstMomentHat(mu, updates, b1, countInc, nesterov);
      const nuHat = biasCorrection(nu, b2, countInc);
      const out = treeMap(
        (m, v) => {
          const rect = jnp.divide(jnp.multiply(jnp.astype(r, m.dtype), m), jnp.add(jnp.sqrt(jnp.add(v, epsRoot)), eps));
          return jnp.where(rectify, rect, m);
        },
        muHat,
        nuHat,
      );
      return [out, { count: countInc, mu: castLikeTree(mu, s.mu), nu: castLikeTree(nu, s.nu) }];
    },
    EXACT_ON_SHARDS,
  );
}
