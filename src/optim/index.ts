/** @file jax-style optimizers (optax's API): gradient transformations, optimizer aliases, schedules and applyUpdates. */
export type {
  GradientTransformation,
  OptState,
  Schedule,
  ScalarOrSchedule,
  ShardBehaviour,
  UpdateExtraArgs,
} from "./base.js";
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
export {
  clipByBlockRms,
  decayRatePow,
  ema,
  factoredDims,
  scaleByFactoredRms,
  scaleByParamBlockNorm,
  scaleByParamBlockRms,
  adafactor,
} from "./factored.js";
export type { AdafactorOpts, DecayRateFn, EmaOpts, FactoredState, ScaleByFactoredRmsOpts } from "./factored.js";
export {
  addNoise,
  scaleByAdadelta,
  scaleByAdamax,
  scaleByAdan,
  scaleByAmsgrad,
  scaleByNovograd,
  scaleByOptimisticGradient,
  scaleByRprop,
  scaleBySign,
  scaleBySm3,
} from "./transforms-more.js";
export type {
  ScaleByAdamaxOpts,
  ScaleByAdanOpts,
  ScaleByAmsgradOpts,
  ScaleByNovogradOpts,
  ScaleByRpropOpts,
} from "./transforms-more.js";
export {
  adadelta,
  adamax,
  adamaxw,
  adan,
  amsgrad,
  fromage,
  lars,
  noisySgd,
  novograd,
  optimisticAdam,
  optimisticAdamV2,
  optimisticGradientDescent,
  polyakSgd,
  rprop,
  signSgd,
  signum,
  sm3,
} from "./alias-more.js";
export type {
  AdadeltaOpts,
  AdamaxwOpts,
  AdanOpts,
  LarsOpts,
  NovogradOpts,
  OptimisticAdamOpts,
  OptimisticAdamV2Opts,
  PolyakSgdOpts,
} from "./alias-more.js";
export { injectHyperparams } from "./inject-hyperparams.js";
export { flatten, multiTransform, partition } from "./partition.js";
export { lbfgs, scaleByLbfgs } from "./lbfgs.js";
export { scaleByZoomLinesearch } from "./zoom-linesearch.js";
export type { ScaleByZoomLinesearchState, ZoomLinesearchInfo, ZoomLinesearchOpts } from "./zoom-linesearch.js";
export { scaleByBacktrackingLinesearch, scaleByPolyak, valueAndGradFromState } from "./linesearch.js";
export type {
  BacktrackingLinesearchInfo,
  BacktrackingLinesearchOpts,
  ScaleByBacktrackingLinesearchState,
  ScaleByPolyakOpts,
} from "./linesearch.js";
export type { LbfgsOpts, ScaleByLbfgsState } from "./lbfgs.js";
export type { ParamLabels, PartitionState } from "./partition.js";
export type { InjectHyperparamsOpts, InjectHyperparamsState } from "./inject-hyperparams.js";
export { LookaheadParams, lookahead } from "./lookahead.js";
export type { LookaheadState } from "./lookahead.js";
export * as contrib from "./contrib.js";
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
