/** @file optax's optimizer aliases: sgd, adam, nadam, adamw, nadamw, rmsprop, adagrad, lamb, lion, adabelief, yogi, radam (chains of transformations). */
import type { Array } from "../core/array.js";
import type { DType } from "../core/dtype.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import {
  type GradientTransformation,
  type Tree,
  type ScalarOrSchedule,
  chain,
  identity,
  parseArgsWithMask,
} from "./base.js";
import {
  RADAM_NAMES,
  type RadamPos,
  type ScaleByRadamOpts,
  adamCore,
  addDecayedWeights,
  beliefCore,
  lionCore,
  radamCore,
  scaleByLearningRate,
  scaleByRms,
  scaleByRss,
  scaleByStddev,
  scaleByTrustRatio,
  trace,
  yogiCore,
} from "./transforms.js";

type Hyper = number | Array;

/** optax.sgd: optional (nesterov) momentum, then -learningRate scaling. */
export function sgd(
  learningRate: ScalarOrSchedule,
  ...args: Args<
    [momentum: Hyper | null, nesterov: boolean, accumulatorDtype: DType | null],
    { momentum?: Hyper | null; nesterov?: boolean; accumulatorDtype?: DType | null }
  >
): GradientTransformation {
  const o = parseArgs<{ momentum: Hyper | null; nesterov: boolean; accumulatorDtype: DType | null }>(
    "optim.sgd",
    args,
    ["momentum", "nesterov", "accumulatorDtype"],
  );
  const m =
    o.momentum === undefined || o.momentum === null
      ? identity()
      : trace(o.momentum, { nesterov: o.nesterov ?? false, accumulatorDtype: o.accumulatorDtype ?? null });
  return chain(m, scaleByLearningRate(learningRate));
}

export interface AdamOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  muDtype?: DType | null;
  nesterov?: boolean;
}
type AdamPos = [b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper, muDtype: DType | null];
const ADAM_NAMES = ["b1", "b2", "eps", "epsRoot", "muDtype"];

/** optax.adam: scaleByAdam (mu_hat / (sqrt(nu_hat + epsRoot) + eps)) then -learningRate. */
export function adam(learningRate: ScalarOrSchedule, ...args: Args<AdamPos, AdamOpts>): GradientTransformation {
  const o = parseArgs<AdamOpts>("optim.adam", args, ADAM_NAMES, ["nesterov"]);
  return chain(adamCore("optim.adam", o), scaleByLearningRate(learningRate));
}
/** optax.nadam: adam with Nesterov momentum. */
export function nadam(
  learningRate: ScalarOrSchedule,
  ...args: Args<AdamPos, Omit<AdamOpts, "nesterov">>
): GradientTransformation {
  const o = parseArgs<AdamOpts>("optim.nadam", args, ADAM_NAMES);
  return chain(adamCore("optim.nadam", { ...o, nesterov: true }), scaleByLearningRate(learningRate));
}

export interface AdamWOpts extends AdamOpts {
  weightDecay?: ScalarOrSchedule;
  mask?: Tree;
}
type AdamWPos = [...AdamPos, weightDecay: ScalarOrSchedule, mask: Tree];
const ADAMW_NAMES = [...ADAM_NAMES, "weightDecay", "mask"];

/** optax.adamw: scaleByAdam, + weightDecay * params (decoupled, optionally masked), then -learningRate. */
export function adamw(learningRate: ScalarOrSchedule, ...args: Args<AdamWPos, AdamWOpts>): GradientTransformation {
  const o = parseArgsWithMask<AdamWOpts>("optim.adamw", args, ADAMW_NAMES, ["nesterov"]);
  return chain(
    adamCore("optim.adamw", o),
    addDecayedWeights({ weightDecay: o.weightDecay ?? 1e-4, mask: o.mask ?? null }),
    scaleByLearningRate(learningRate),
  );
}
/** optax.nadamw: adamw with Nesterov momentum. */
export function nadamw(
  learningRate: ScalarOrSchedule,
  ...args: Args<AdamWPos, Omit<AdamWOpts, "nesterov">>
): GradientTransformation {
  const o = parseArgsWithMask<AdamWOpts>("optim.nadamw", args, ADAMW_NAMES);
  return adamw(learningRate, { ...o, nesterov: true });
}

export interface RmspropOpts {
  decay?: Hyper;
  eps?: Hyper;
  initialScale?: Hyper;
  epsInSqrt?: boolean;
  centered?: boolean;
  momentum?: Hyper | null;
  nesterov?: boolean;
  biasCorrection?: boolean;
}
/** optax.rmsprop: scaleByRms (or scaleByStddev when centered), -learningRate, then optional momentum. */
export function rmsprop(
  learningRate: ScalarOrSchedule,
  ...args: Args<
    [
      decay: Hyper,
      eps: Hyper,
      initialScale: Hyper,
      epsInSqrt: boolean,
      centered: boolean,
      momentum: Hyper | null,
      nesterov: boolean,
      biasCorrection: boolean,
    ],
    RmspropOpts
  >
): GradientTransformation {
  const o = parseArgs<RmspropOpts>("optim.rmsprop", args, [
    "decay",
    "eps",
    "initialScale",
    "epsInSqrt",
    "centered",
    "momentum",
    "nesterov",
    "biasCorrection",
  ]);
  const inner = {
    decay: o.decay,
    eps: o.eps,
    initialScale: o.initialScale,
    epsInSqrt: o.epsInSqrt,
    biasCorrection: o.biasCorrection,
  };
  return chain(
    o.centered ? scaleByStddev(inner) : scaleByRms(inner),
    scaleByLearningRate(learningRate),
    o.momentum === undefined || o.momentum === null ? identity() : trace(o.momentum, { nesterov: o.nesterov ?? false }),
  );
}

/** optax.adagrad: scaleByRss (accumulated squared gradients) then -learningRate. */
export function adagrad(
  learningRate: ScalarOrSchedule,
  ...args: Args<[initialAccumulatorValue: Hyper, eps: Hyper], { initialAccumulatorValue?: Hyper; eps?: Hyper }>
): GradientTransformation {
  const o = parseArgs<{ initialAccumulatorValue: Hyper; eps: Hyper }>("optim.adagrad", args, [
    "initialAccumulatorValue",
    "eps",
  ]);
  return chain(
    scaleByRss({ initialAccumulatorValue: o.initialAccumulatorValue ?? 0.1, eps: o.eps ?? 1e-7 }),
    scaleByLearningRate(learningRate),
  );
}

export interface LambOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  weightDecay?: ScalarOrSchedule;
  mask?: Tree;
}
/** optax.lamb: scaleByAdam (eps 1e-6), decoupled weight decay, trust ratio, then -learningRate. */
export function lamb(
  learningRate: ScalarOrSchedule,
  ...args: Args<[b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper, weightDecay: ScalarOrSchedule, mask: Tree], LambOpts>
): GradientTransformation {
  const o = parseArgsWithMask<LambOpts>("optim.lamb", args, ["b1", "b2", "eps", "epsRoot", "weightDecay", "mask"]);
  return chain(
    adamCore("optim.lamb", { b1: o.b1, b2: o.b2, eps: o.eps ?? 1e-6, epsRoot: o.epsRoot }),
    addDecayedWeights({ weightDecay: o.weightDecay ?? 0, mask: o.mask ?? null }),
    scaleByTrustRatio(),
    scaleByLearningRate(learningRate),
  );
}

export interface LionOpts {
  b1?: Hyper;
  b2?: Hyper;
  muDtype?: DType | null;
  weightDecay?: ScalarOrSchedule;
  mask?: Tree;
}
/** optax.lion: scaleByLion (sign of the b1-interpolated momentum), + weightDecay * params (decoupled), then -learningRate. */
export function lion(
  learningRate: ScalarOrSchedule,
  ...args: Args<[b1: Hyper, b2: Hyper, muDtype: DType | null, weightDecay: ScalarOrSchedule, mask: Tree], LionOpts>
): GradientTransformation {
  const o = parseArgsWithMask<LionOpts>("optim.lion", args, ["b1", "b2", "muDtype", "weightDecay", "mask"]);
  return chain(
    lionCore("optim.lion", { b1: o.b1, b2: o.b2, muDtype: o.muDtype }),
    addDecayedWeights({ weightDecay: o.weightDecay ?? 1e-3, mask: o.mask ?? null }),
    scaleByLearningRate(learningRate),
  );
}

export interface AdabeliefOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  nesterov?: boolean;
}
/** optax.adabelief: scaleByBelief (adam with the EMA of (g - mu)^2 as the second moment) then -learningRate. */
export function adabelief(
  learningRate: ScalarOrSchedule,
  ...args: Args<[b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper], AdabeliefOpts>
): GradientTransformation {
  const o = parseArgs<AdabeliefOpts>("optim.adabelief", args, ["b1", "b2", "eps", "epsRoot"], ["nesterov"]);
  return chain(beliefCore("optim.adabelief", o), scaleByLearningRate(learningRate));
}

export interface YogiOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
}
/** optax.yogi: scaleByYogi (additive second-moment updates, eps 1e-3) then -learningRate. */
export function yogi(
  learningRate: ScalarOrSchedule,
  ...args: Args<[b1: Hyper, b2: Hyper, eps: Hyper], YogiOpts>
): GradientTransformation {
  const o = parseArgs<YogiOpts>("optim.yogi", args, ["b1", "b2", "eps"]);
  return chain(yogiCore("optim.yogi", o), scaleByLearningRate(learningRate));
}

/** optim.radam's options: scaleByRadam's. */
export type RadamOpts = ScaleByRadamOpts;
/** optax.radam: scaleByRadam (adam with the variance rectification once rho_t >= threshold) then -learningRate. */
export function radam(learningRate: ScalarOrSchedule, ...args: Args<RadamPos, RadamOpts>): GradientTransformation {
  const o = parseArgs<RadamOpts>("optim.radam", args, RADAM_NAMES);
  return chain(radamCore("optim.radam", o), scaleByLearningRate(learningRate));
}
