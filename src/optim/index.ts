/** @file jax-style optimizers (optax's API): gradient transformations, optimizer aliases, schedules and applyUpdates. */
export type { GradientTransformation, OptState, Schedule, ScalarOrSchedule, ShardBehaviour } from "./base.js";
export type { PyTree } from "../core/pytree-types.js";
export { applyUpdates, chain, identity, masked, safeIncrement } from "./base.js";
export {
  addDecayedWeights,
  clip,
  clipByGlobalNorm,
  globalNorm,
  scale,
  scaleByAdam,
  scaleByLearningRate,
  scaleByRms,
  scaleByRss,
  scaleBySchedule,
  scaleByStddev,
  scaleByTrustRatio,
  trace,
} from "./transforms.js";
export type { ScaleByAdamOpts, ScaleByRmsOpts } from "./transforms.js";
export { adagrad, adam, adamw, lamb, nadam, nadamw, rmsprop, sgd } from "./alias.js";
export type { AdamOpts, AdamWOpts, LambOpts, RmspropOpts } from "./alias.js";
export {
  constantSchedule,
  cosineDecaySchedule,
  exponentialDecay,
  joinSchedules,
  linearSchedule,
  piecewiseConstantSchedule,
  polynomialSchedule,
  warmupConstantSchedule,
  warmupCosineDecaySchedule,
  warmupExponentialDecaySchedule,
} from "./schedules.js";
export type { ExponentialDecayOpts } from "./schedules.js";
