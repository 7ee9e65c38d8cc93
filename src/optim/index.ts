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
  scaleByRadam,
  scaleByRms,
  scaleByRss,
  scaleBySchedule,
  scaleByStddev,
  scaleByTrustRatio,
  scaleByYogi,
  trace,
} from "./transforms.js";
export type {
  ScaleByAdamOpts,
  ScaleByBeliefOpts,
  ScaleByLionOpts,
  ScaleByRadamOpts,
  ScaleByRmsOpts,
  ScaleByYogiOpts,
} from "./transforms.js";
export { adabelief, adagrad, adam, adamw, lamb, lion, nadam, nadamw, radam, rmsprop, sgd, yogi } from "./alias.js";
export type {
  AdabeliefOpts,
  AdamOpts,
  AdamWOpts,
  LambOpts,
  LionOpts,
  RadamOpts,
  RmspropOpts,
  YogiOpts,
} from "./alias.js";
export { MultiSteps, applyIfFinite, skipLargeUpdates, skipNotFinite } from "./wrappers.js";
export type {
  ApplyIfFiniteState,
  EveryKSchedule,
  MultiStepsOpts,
  MultiStepsState,
  ShouldSkipUpdateFn,
} from "./wrappers.js";
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
  sgdrSchedule,
  warmupConstantSchedule,
  warmupCosineDecaySchedule,
  warmupExponentialDecaySchedule,
} from "./schedules.js";
export type { CosineOnecycleOpts, ExponentialDecayOpts, LinearOnecycleOpts, SgdrCycle } from "./schedules.js";
