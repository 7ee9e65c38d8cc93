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
  scaleByBelief,
  scaleByLearningRate,
  scaleByLion,
  scaleByRms,
  scaleByRss,
  scaleBySchedule,
  scaleByStddev,
  scaleByTrustRatio,
  trace,
} from "./transforms.js";
export type { ScaleByAdamOpts, ScaleByBeliefOpts, ScaleByLionOpts, ScaleByRmsOpts } from "./transforms.js";
export { adabelief, adagrad, adam, adamw, lamb, lion, nadam, nadamw, rmsprop, sgd } from "./alias.js";
export type { AdabeliefOpts, AdamOpts, AdamWOpts, LambOpts, LionOpts, RmspropOpts } from "./alias.js";
export {
  constantSchedule,
  cosineDecaySchedule,
  cosineOnecycleSchedule,
  exponentialDecay,
  joinSchedules,
  linearOnecycleSchedule,
  linearSchedule,
  piecewiseConstantSchedule,
  piecewiseInterpolateSchedule,
  polynomialSchedule,
  warmupConstantSchedule,
  warmupCosineDecaySchedule,
  warmupExponentialDecaySchedule,
} from "./schedules.js";
export type { CosineOnecycleOpts, ExponentialDecayOpts, LinearOnecycleOpts } from "./schedules.js";
