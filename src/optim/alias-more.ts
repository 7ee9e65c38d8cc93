/** @file More optax optimizer aliases: lars, sm3, adamax, adamaxw, amsgrad, adadelta, novograd, optimisticGradientDescent, signSgd, signum, adan, fromage, rprop, noisySgd, polyakSgd and optimisticAdam(V2) (chains of transformations). */
import type { Array } from "../core/array.js";
import type { DType } from "../core/dtype.js";
import * as jnp from "../numpy/index.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import { type GradientTransformation, type ScalarOrSchedule, type Tree, chain, isSchedule, masked } from "./base.js";
import { ema } from "./factored.js";
import { polyakCore } from "./linesearch.js";
import {
  type ScaleByAdamOpts,
  adamCore,
  addDecayedWeights,
  scale,
  scaleByLearningRate,
  scaleByTrustRatio,
  trace,
} from "./transforms.js";
import {
  ADAN_NAMES,
  ADAMAX_NAMES,
  AMSGRAD_NAMES,
  type AdamaxPos,
  type AdanPos,
  RPROP_NAMES,
  type RpropPos,
  type ScaleByRpropOpts,
  rpropCore,
  type ScaleByAdanOpts,
  adanCore,
  type AmsgradPos,
  type ScaleByAdamaxOpts,
  type ScaleByAmsgradOpts,
  adamaxCore,
  addNoise,
  amsgradCore,
  novogradCore,
  optimisticCore,
  scaleByAdadelta,
  scaleBySign,
  sm3Core,
} from "./transforms-more.js";

type Hyper = number | Array;
/** A mask: a tree of booleans (a prefix of the parameters), or a function of the parameters that returns one. */
type MaskOrFn = Tree;

const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  x !== null && typeof x === "object" && Object.getPrototypeOf(x) === Object.prototype;

/**
 * parseArgs where some positional parameters are masks (plain objects that would otherwise be read as the options
 * object): a trailing plain object in a mask's position whose keys are not all option names is that mask.
 */
function parseArgsWithMasks<T extends object>(
  fn: string,
  args: readonly unknown[],
  names: readonly string[],
  maskNames: readonly string[],
): Partial<T> {
  let n = args.length;
  while (n > 0 && args[n - 1] === undefined) n--;
  const last = args[n - 1];
  const name = names[n - 1];
  if (n > 0 && maskNames.includes(name) && isPlainObject(last) && Object.keys(last).some((k) => !names.includes(k)))
    return parseArgs<T>(fn, [...args.slice(0, n - 1), { [name]: last }], names);
  return parseArgs<T>(fn, args.slice(0, n), names);
}

/** A learning rate that must be given (naming the alias when it is missing). */
function needLr(fn: string, lr: ScalarOrSchedule | undefined): ScalarOrSchedule {
  if (lr === undefined || lr === null)
    throw new TypeError(`${fn}: learningRate is required (a number, an Array or a schedule)`);
  return lr;
}

export interface LarsOpts {
  weightDecay?: ScalarOrSchedule;
  weightDecayMask?: MaskOrFn;
  trustCoefficient?: Hyper;
  eps?: Hyper;
  trustRatioMask?: MaskOrFn;
  momentum?: Hyper;
  nesterov?: boolean;
}
const LARS_NAMES = [
  "weightDecay",
  "weightDecayMask",
  "trustCoefficient",
  "eps",
  "trustRatioMask",
  "momentum",
  "nesterov",
] as const;
type LarsPos = [
  weightDecay: ScalarOrSchedule,
  weightDecayMask: MaskOrFn,
  trustCoefficient: Hyper,
  eps: Hyper,
  trustRatioMask: MaskOrFn,
  momentum: Hyper,
  nesterov: boolean,
];

/**
 * optax.lars (You et al. 2017): + weightDecay * params where weightDecayMask (default all), the trust ratio
 * trustCoefficient ||p|| / (||u|| + eps) per leaf where trustRatioMask (default all), -learningRate, then
 * (nesterov) momentum. Masks are trees of booleans or functions of the params, as optim.masked takes. Exact on
 * ZeRO shards (the trust ratio sums each leaf's norms over the devices' slices).
 */
export function lars(learningRate: ScalarOrSchedule, ...args: Args<LarsPos, LarsOpts>): GradientTransformation {
  const fn = "optim.lars";
  const o = parseArgsWithMasks<LarsOpts>(fn, args, LARS_NAMES, ["weightDecayMask", "trustRatioMask"]);
  return chain(
    addDecayedWeights({ weightDecay: o.weightDecay ?? 0, mask: o.weightDecayMask ?? true }),
    masked(
      scaleByTrustRatio({ trustCoefficient: o.trustCoefficient ?? 0.001, eps: o.eps ?? 0 }),
      o.trustRatioMask ?? true,
    ),
    scaleByLearningRate(needLr(fn, learningRate)),
    trace(o.momentum ?? 0.9, { nesterov: o.nesterov ?? false }),
  );
}

/**
 * optax.sm3: scaleBySm3 with b1 = momentum (b2 1: accumulated squared gradients), then -learningRate (a constant,
 * as in optax). Refused on ZeRO shards (see scaleBySm3).
 */
export function sm3(
  learningRate: Hyper,
  ...args: Args<[momentum: Hyper], { momentum?: Hyper }>
): GradientTransformation {
  const fn = "optim.sm3";
  const o = parseArgs<{ momentum: Hyper }>(fn, args, ["momentum"]);
  if (typeof learningRate === "function")
    throw new TypeError(`${fn}: learningRate must be a number or an Array (optax's sm3 takes no schedule)`);
  const lr = needLr(fn, learningRate) as Hyper;
  return chain(sm3Core(fn, o.momentum ?? 0.9, 1, 1e-8), scale(typeof lr === "number" ? -lr : jnp.negative(lr)));
}

/** optax.adamax: scaleByAdamax (Adam with the infinity norm as the second moment) then -learningRate. */
export function adamax(
  learningRate: ScalarOrSchedule,
  ...args: Args<AdamaxPos, ScaleByAdamaxOpts>
): GradientTransformation {
  const fn = "optim.adamax";
  const o = parseArgs<ScaleByAdamaxOpts>(fn, args, ADAMAX_NAMES);
  return chain(adamaxCore(fn, o), scaleByLearningRate(needLr(fn, learningRate)));
}

export interface AdamaxwOpts extends ScaleByAdamaxOpts {
  weightDecay?: ScalarOrSchedule;
  mask?: MaskOrFn;
}
/** optax.adamaxw: scaleByAdamax, + weightDecay * params (decoupled, default 1e-4, optionally masked), then -learningRate. */
export function adamaxw(
  learningRate: ScalarOrSchedule,
  ...args: Args<[...AdamaxPos, weightDecay: ScalarOrSchedule, mask: MaskOrFn], AdamaxwOpts>
): GradientTransformation {
  const fn = "optim.adamaxw";
  const o = parseArgsWithMasks<AdamaxwOpts>(fn, args, [...ADAMAX_NAMES, "weightDecay", "mask"], ["mask"]);
  return chain(
    adamaxCore(fn, o),
    addDecayedWeights({ weightDecay: o.weightDecay ?? 1e-4, mask: o.mask ?? null }),
    scaleByLearningRate(needLr(fn, learningRate)),
  );
}

/** optax.amsgrad: scaleByAmsgrad (Adam with the running maximum of the second moment) then -learningRate. */
export function amsgrad(
  learningRate: ScalarOrSchedule,
  ...args: Args<AmsgradPos, ScaleByAmsgradOpts>
): GradientTransformation {
  const fn = "optim.amsgrad";
  const o = parseArgs<ScaleByAmsgradOpts>(fn, args, AMSGRAD_NAMES);
  return chain(amsgradCore(fn, o), scaleByLearningRate(needLr(fn, learningRate)));
}

export interface AdadeltaOpts {
  learningRate?: ScalarOrSchedule | null;
  rho?: Hyper;
  eps?: Hyper;
  weightDecay?: ScalarOrSchedule;
  weightDecayMask?: MaskOrFn;
}
/**
 * optax.adadelta: + weightDecay * params (masked), scaleByAdadelta, then -learningRate. As in optax the learning
 * rate is optional, and without one the scaled update is returned as it is (optax's scale_by_learning_rate(None)
 * is the identity).
 */
export function adadelta(
  ...args: Args<
    [
      learningRate: ScalarOrSchedule | null,
      rho: Hyper,
      eps: Hyper,
      weightDecay: ScalarOrSchedule,
      weightDecayMask: MaskOrFn,
    ],
    AdadeltaOpts
  >
): GradientTransformation {
  const fn = "optim.adadelta";
  const o = parseArgsWithMasks<AdadeltaOpts>(
    fn,
    args,
    ["learningRate", "rho", "eps", "weightDecay", "weightDecayMask"],
    ["weightDecayMask"],
  );
  return chain(
    addDecayedWeights({ weightDecay: o.weightDecay ?? 0, mask: o.weightDecayMask ?? null }),
    scaleByAdadelta({ rho: o.rho ?? 0.9, eps: o.eps ?? 1e-6 }),
    scaleByLearningRate(o.learningRate ?? null),
  );
}

export interface NovogradOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  weightDecay?: Hyper;
}
/** optax.novograd: scaleByNovograd (layer-wise second moments, eps 1e-6) then -learningRate. */
export function novograd(
  learningRate: ScalarOrSchedule,
  ...args: Args<[b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper, weightDecay: Hyper], NovogradOpts>
): GradientTransformation {
  const fn = "optim.novograd";
  const o = parseArgs<NovogradOpts>(fn, args, ["b1", "b2", "eps", "epsRoot", "weightDecay"]);
  return chain(novogradCore(fn, { ...o, eps: o.eps ?? 1e-6 }), scaleByLearningRate(needLr(fn, learningRate)));
}

/** optax.optimistic_gradient_descent: scaleByOptimisticGradient(alpha, beta) then -learningRate. */
export function optimisticGradientDescent(
  learningRate: ScalarOrSchedule,
  ...args: Args<[alpha: Hyper, beta: Hyper], { alpha?: Hyper; beta?: Hyper }>
): GradientTransformation {
  const fn = "optim.optimisticGradientDescent";
  const o = parseArgs<{ alpha: Hyper; beta: Hyper }>(fn, args, ["alpha", "beta"]);
  return chain(optimisticCore(fn, o.alpha ?? 1, o.beta ?? 1), scaleByLearningRate(needLr(fn, learningRate)));
}

/** optax.sign_sgd: -learningRate * sign(g). */
export function signSgd(learningRate: ScalarOrSchedule): GradientTransformation {
  return chain(scaleBySign(), scaleByLearningRate(needLr("optim.signSgd", learningRate)));
}

/** optax.signum: -learningRate * sign(EMA of g with decay beta, not debiased), the EMA kept in accumulatorDtype. */
export function signum(
  learningRate: ScalarOrSchedule,
  ...args: Args<[beta: Hyper, accumulatorDtype: DType | null], { beta?: Hyper; accumulatorDtype?: DType | null }>
): GradientTransformation {
  const fn = "optim.signum";
  const o = parseArgs<{ beta: Hyper; accumulatorDtype: DType | null }>(fn, args, ["beta", "accumulatorDtype"]);
  return chain(
    ema(o.beta ?? 0.9, { debias: false, accumulatorDtype: o.accumulatorDtype ?? null }),
    scaleBySign(),
    scaleByLearningRate(needLr(fn, learningRate)),
  );
}

export interface AdanOpts extends ScaleByAdanOpts {
  weightDecay?: ScalarOrSchedule;
  mask?: MaskOrFn;
}
/** optax.adan: scaleByAdan (epsRoot 1e-8 here, as optax's alias), + weightDecay * params (masked), then -learningRate. */
export function adan(
  learningRate: ScalarOrSchedule,
  ...args: Args<[...AdanPos, weightDecay: ScalarOrSchedule, mask: MaskOrFn], AdanOpts>
): GradientTransformation {
  const fn = "optim.adan";
  const o = parseArgsWithMasks<AdanOpts>(fn, args, [...ADAN_NAMES, "weightDecay", "mask"], ["mask"]);
  return chain(
    adanCore(fn, { ...o, epsRoot: o.epsRoot ?? 1e-8 }),
    addDecayedWeights({ weightDecay: o.weightDecay ?? 0, mask: o.mask ?? null }),
    scaleByLearningRate(needLr(fn, learningRate)),
  );
}

/**
 * optax.fromage (Bernstein et al. 2020): with mult = 1 / sqrt(1 + lr^2), the trust ratio ||p|| / ||g|| (norms at
 * least minNorm), -lr * mult, then + (mult - 1) * params; a scheduled lr gives scheduled factors. Exact on ZeRO
 * shards (the trust ratio sums each leaf's norms over the slices).
 */
export function fromage(
  learningRate: ScalarOrSchedule,
  ...args: Args<[minNorm: Hyper], { minNorm?: Hyper }>
): GradientTransformation {
  const fn = "optim.fromage";
  const o = parseArgs<{ minNorm: Hyper }>(fn, args, ["minNorm"]);
  const lr = needLr(fn, learningRate);
  const multOf = (v: Hyper): Hyper =>
    typeof v === "number" ? 1 / Math.sqrt(1 + v * v) : jnp.divide(1, jnp.sqrt(jnp.add(1, jnp.square(v))));
  const trust = scaleByTrustRatio({ minNorm: o.minNorm ?? 1e-6 });
  if (isSchedule(lr)) {
    const at = (c: Array | number): Hyper => lr(c);
    return chain(
      trust,
      scaleByLearningRate((c) => jnp.multiply(multOf(at(c)), at(c))),
      addDecayedWeights((c: Array | number) => jnp.subtract(multOf(at(c)), 1)),
    );
  }
  const mult = multOf(lr);
  return chain(
    trust,
    scaleByLearningRate(typeof lr === "number" && typeof mult === "number" ? lr * mult : jnp.multiply(lr, mult)),
    addDecayedWeights(typeof mult === "number" ? mult - 1 : jnp.subtract(mult, 1)),
  );
}

/** optax.rprop: scaleByRprop(learningRate, ...) then -1 (see scaleByRprop: the current step, as torch.optim.Rprop). */
export function rprop(learningRate: Hyper, ...args: Args<RpropPos, ScaleByRpropOpts>): GradientTransformation {
  const fn = "optim.rprop";
  if (typeof learningRate === "function")
    throw new TypeError(`${fn}: learningRate must be a number or an Array (the initial step size; no schedule)`);
  const o = parseArgs<ScaleByRpropOpts>(fn, args, RPROP_NAMES);
  return chain(rpropCore(fn, needLr(fn, learningRate) as Hyper, o), scale(-1));
}

/**
 * optax.noisy_sgd: addNoise(eta 0.01, gamma 0.55, key) then -learningRate: SGD with annealed Gaussian gradient noise.
 * key: an integer seed (default 0, as optax) or a raw PRNGKey.
 */
export function noisySgd(
  learningRate: ScalarOrSchedule,
  ...args: Args<[eta: Hyper, gamma: Hyper, key: number | Array], { eta?: Hyper; gamma?: Hyper; key?: number | Array }>
): GradientTransformation {
  const fn = "optim.noisySgd";
  const o = parseArgs<{ eta: Hyper; gamma: Hyper; key: number | Array }>(fn, args, ["eta", "gamma", "key"]);
  return chain(addNoise(o.eta ?? 0.01, o.gamma ?? 0.55, o.key ?? 0), scaleByLearningRate(needLr(fn, learningRate)));
}

export interface PolyakSgdOpts {
  maxLearningRate?: Hyper;
  scaling?: ScalarOrSchedule;
  fMin?: Hyper;
  eps?: Hyper;
  variant?: "sps" | "sps+";
}
/**
 * optax.polyak_sgd: sgd(scaling) then scaleByPolyak (the step (loss - fMin) / ||u||^2, at most maxLearningRate);
 * update needs the loss: opt.update(grads, state, params, { value }).
 */
export function polyakSgd(
  ...args: Args<
    [maxLearningRate: Hyper, scaling: ScalarOrSchedule, fMin: Hyper, eps: Hyper, variant: "sps" | "sps+"],
    PolyakSgdOpts
  >
): GradientTransformation {
  const fn = "optim.polyakSgd";
  const o = parseArgs<PolyakSgdOpts>(fn, args, ["maxLearningRate", "scaling", "fMin", "eps", "variant"]);
  return chain(
    scaleByLearningRate(o.scaling ?? 1),
    polyakCore(fn, { fMin: o.fMin, maxLearningRate: o.maxLearningRate, eps: o.eps, variant: o.variant }),
  );
}

export interface OptimisticAdamV2Opts extends ScaleByAdamOpts {
  alpha?: Hyper;
  beta?: Hyper;
}
/**
 * optax.optimistic_adam_v2: scaleByAdam (nesterov by default), scaleByOptimisticGradient(alpha, beta), then
 * -learningRate (a constant or a schedule); the options are keyword-only, as in optax.
 */
export function optimisticAdamV2(
  learningRate: ScalarOrSchedule,
  opts: OptimisticAdamV2Opts = {},
): GradientTransformation {
  const fn = "optim.optimisticAdamV2";
  const o = parseArgs<OptimisticAdamV2Opts>(
    fn,
    [opts],
    [],
    ["alpha", "beta", "b1", "b2", "eps", "epsRoot", "muDtype", "nesterov"],
  );
  return chain(
    adamCore(fn, {
      b1: o.b1,
      b2: o.b2,
      eps: o.eps,
      epsRoot: o.epsRoot,
      muDtype: o.muDtype,
      nesterov: o.nesterov ?? true,
    }),
    optimisticCore(fn, o.alpha ?? 1, o.beta ?? 1),
    scaleByLearningRate(needLr(fn, learningRate)),
  );
}

export interface OptimisticAdamOpts {
  optimism?: Hyper | null;
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  muDtype?: DType | null;
  nesterov?: boolean;
}
/**
 * optax.optimistic_adam (deprecated there in favour of optimisticAdamV2): scaleByAdam (nesterov by default), then
 * scaleByOptimisticGradient(alpha = learningRate, beta = optimism, default learningRate), then -1; no schedules.
 */
export function optimisticAdam(
  learningRate: Hyper,
  ...args: Args<
    [optimism: Hyper | null, b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper, muDtype: DType | null],
    OptimisticAdamOpts
  >
): GradientTransformation {
  const fn = "optim.optimisticAdam";
  const o = parseArgs<OptimisticAdamOpts>(
    fn,
    args,
    ["optimism", "b1", "b2", "eps", "epsRoot", "muDtype"],
    ["nesterov"],
  );
  if (typeof learningRate === "function")
    throw new TypeError(`${fn}: learningRate must be a number or an Array (no schedules; optimisticAdamV2 takes them)`);
  const lr = needLr(fn, learningRate) as Hyper;
  return chain(
    adamCore(fn, {
      b1: o.b1,
      b2: o.b2,
      eps: o.eps,
      epsRoot: o.epsRoot,
      muDtype: o.muDtype,
      nesterov: o.nesterov ?? true,
    }),
    optimisticCore(fn, lr, o.optimism ?? lr),
    scale(-1),
  );
}
