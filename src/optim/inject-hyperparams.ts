/** @file optax.inject_hyperparams: an optimizer whose numeric hyperparameters (constants or schedules of the step count) live in its state, so they can be read and changed between steps, also under jit. */
import { Array } from "../core/array.js";
import { type DType, isFloat } from "../core/dtype.js";
import { unwrap } from "../core/check-args.js";
import * as tree from "../core/tree.js";
import * as jnp from "../numpy/index.js";
import { parseArgs, userDType } from "../numpy/elementwise-util.js";
import {
  type GradientTransformation,
  type OptState,
  type Schedule,
  type ShardBehaviour,
  type Tree,
  type UpdateExtraArgs,
  isSchedule,
  safeIncrement,
  shardRefusal,
  zeroCount,
} from "./base.js";
import * as alias from "./alias.js";
import * as aliasMore from "./alias-more.js";
import * as factored from "./factored.js";
import * as lbfgsMod from "./lbfgs.js";
import * as tr from "./transforms.js";

/** optax.InjectHyperparamsState: the step count, the hyperparameters of the last step and the inner state. */
export interface InjectHyperparamsState {
  count: Array;
  /**
   * The numeric hyperparameters as Arrays: the values the last update used (at init: those the first will use).
   * Set a constant one between steps to change it (a JS number is converted); scheduled ones are recomputed from
   * `count` at every step, so setting them has no effect, as in optax.
   */
  hyperparams: Record<string, Array | number>;
  innerState: OptState;
}

export interface InjectHyperparamsOpts {
  /** Hyperparameters passed to the factory as they are, never made state (functions that are not schedules). */
  staticArgs?: string | readonly string[];
  /** The dtype of the floating hyperparameters; default the widest floating dtype of the parameters (else float32). */
  hyperparamDtype?: DType | null;
  /**
   * The hyperparameters the factory takes positionally, in order, before an options object with the rest. Known
   * for this library's optimizers (e.g. ["learningRate"] for optim.adam, ["decay"] for optim.trace); otherwise []:
   * the factory is called with one object of all the hyperparameters (e.g. optim.scaleByAdam, or your own
   * `(h) => optim.chain(...)`).
   */
  positional?: readonly string[];
}

/** The positional parameters of this library's factories (the rest go in their options object). */
const POSITIONAL = new Map<unknown, readonly string[]>();
for (const f of [
  alias.sgd,
  alias.adam,
  alias.nadam,
  alias.adamw,
  alias.nadamw,
  alias.rmsprop,
  alias.adagrad,
  alias.lamb,
  alias.lion,
  alias.adabelief,
  alias.yogi,
  alias.radam,
  aliasMore.lars,
  aliasMore.sm3,
  aliasMore.adamax,
  aliasMore.adamaxw,
  aliasMore.amsgrad,
  aliasMore.novograd,
  aliasMore.optimisticGradientDescent,
  aliasMore.signSgd,
  aliasMore.signum,
  aliasMore.adan,
  aliasMore.fromage,
  aliasMore.rprop,
  aliasMore.noisySgd,
  aliasMore.optimisticAdam,
  aliasMore.optimisticAdamV2,
  tr.scaleByLearningRate,
])
  POSITIONAL.set(f, ["learningRate"]);
POSITIONAL.set(tr.trace, ["decay"]);
POSITIONAL.set(factored.ema, ["decay"]);
POSITIONAL.set(tr.scale, ["stepSize"]);
POSITIONAL.set(tr.clip, ["maxDelta"]);
POSITIONAL.set(tr.clipByGlobalNorm, ["maxNorm"]);
POSITIONAL.set(factored.clipByBlockRms, ["threshold"]);
POSITIONAL.set(factored.scaleByParamBlockRms, ["minScale"]);
POSITIONAL.set(factored.scaleByParamBlockNorm, ["minScale"]);

/** Any function that returns a GradientTransformation (its parameters are not constrained). */
/**
 * Numeric parameters of this library's factories that shape the computation (integers compared in JS, thresholds
 * taken as JS numbers): passed as they are, like optax's static_args, so they need not be named in staticArgs.
 */
const STATIC = new Map<unknown, readonly string[]>([
  [factored.adafactor, ["minDimSizeToFactor"]],
  [factored.scaleByFactoredRms, ["minDimSizeToFactor"]],
  [alias.radam, ["threshold"]],
  [lbfgsMod.lbfgs, ["memorySize"]],
  [lbfgsMod.scaleByLbfgs, ["memorySize"]],
  [tr.scaleByRadam, ["threshold"]],
]);

type Factory = (...args: never) => GradientTransformation;

/** The widest floating dtype among the leaves of `t` (float32 when there is none). */
function floatDtypeOf(t: Tree): DType {
  let best: DType | null = null;
  const bits = (d: DType): number => (d === "float64" ? 64 : d === "float32" ? 32 : 16);
  for (const l of tree.leaves(t)) {
    const d = l instanceof Array ? l.dtype : null;
    if (d && isFloat(d) && (best === null || bits(d) > bits(best))) best = d;
  }
  return best ?? "float32";
}

/** optax's _convert_floats: a JS number or floating Array in `dtype`; other values (integer Arrays) as they are. */
function convertFloat(v: unknown, dtype: DType, fn: string, name: string): Array {
  if (typeof v === "number") return jnp.array(v, { dtype });
  if (v instanceof Array) return isFloat(v.dtype) ? jnp.astype(v, dtype) : v;
  throw new TypeError(
    `${fn}: hyperparameter "${name}" must be a number or an Array (or its schedule must return one), got ${v === null ? "null" : typeof v}`,
  );
}

/**
 * optax.inject_hyperparams: `injectHyperparams(factory)(hyperparams)` is the optimizer `factory` builds from
 * `hyperparams`, with each numeric hyperparameter (a number, an Array, or a schedule of the step count) kept in the
 * state as `state.hyperparams[name]`. Each update rebuilds the inner optimizer from the state's current values
 * (schedules evaluated at the state's count), so a constant can be changed between steps by setting it in the
 * state, and everything is a pytree of Arrays, so the step works under jit. Booleans, null, strings, masks and the
 * names in staticArgs are passed as they are (so are the structural numbers of this library's factories:
 * adafactor's minDimSizeToFactor, radam's threshold, lbfgs's memorySize).
 *
 *   const opt = optim.injectHyperparams(optim.adam)({ learningRate: optim.linearSchedule(0.1, 0.01, 100), b1: 0.9 });
 *   let state = opt.init(params) as optim.InjectHyperparamsState;
 *   state.hyperparams.b1 = 0.8; // the next update uses b1 = 0.8
 *
 * Exact on ZeRO shards when the optimizer built from the initial values is.
 */
export function injectHyperparams(
  factory: Factory,
  opts: InjectHyperparamsOpts = {},
): (hyperparams: Record<string, unknown>) => GradientTransformation {
  const fn = "optim.injectHyperparams";
  if (typeof factory !== "function")
    throw new TypeError(
      `${fn}: factory must be a function that returns a GradientTransformation, got ${typeof factory}`,
    );
  if (opts === null || typeof opts !== "object") throw new TypeError(`${fn}: opts must be an object`);
  parseArgs<InjectHyperparamsOpts>(fn, [opts], [], ["staticArgs", "hyperparamDtype", "positional"]);
  const staticArgs = new Set([
    ...(typeof opts.staticArgs === "string" ? [opts.staticArgs] : (opts.staticArgs ?? [])),
    ...(STATIC.get(unwrap(factory)) ?? []),
  ]);
  const fixedDtype = userDType(fn, opts.hyperparamDtype);
  const positional = opts.positional ?? POSITIONAL.get(unwrap(factory)) ?? [];
  const build = (values: Record<string, unknown>): GradientTransformation => {
    const rest: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(values)) if (!positional.includes(k)) rest[k] = v;
    const args: unknown[] = positional.map((k) => values[k]);
    if (Object.keys(rest).length > 0) args.push(rest);
    const t = (factory as (...a: unknown[]) => GradientTransformation)(...args);
    if (!t || typeof t.init !== "function" || typeof t.update !== "function")
      throw new TypeError(
        `${fn}: the factory did not return a GradientTransformation (an object with init and update)`,
      );
    return t;
  };
  return (hyperparams: Record<string, unknown>): GradientTransformation => {
    if (hyperparams === null || typeof hyperparams !== "object" || hyperparams instanceof Array)
      throw new TypeError(`${fn}(factory)(hyperparams): hyperparams must be an object of named hyperparameters`);
    const other: Record<string, unknown> = {},
      numeric: Record<string, number | Array> = {},
      scheduled: Record<string, Schedule> = {};
    for (const [k, v] of Object.entries(hyperparams)) {
      if (staticArgs.has(k) || typeof v === "boolean") other[k] = v;
      else if (isSchedule(v)) scheduled[k] = v;
      else if (typeof v === "number" || v instanceof Array) numeric[k] = v;
      else other[k] = v;
    }
    const dtypeOf = (t: Tree): DType => fixedDtype ?? floatDtypeOf(t);
    const values = (given: Record<string, unknown>, count: Array | number, dtype: DType): Record<string, Array> => {
      const out: Record<string, Array> = {};
      for (const k of Object.keys(numeric)) out[k] = convertFloat(given[k], dtype, fn, k);
      for (const [k, f] of Object.entries(scheduled)) out[k] = convertFloat(f(count), dtype, fn, k);
      return out;
    };
    // the declaration on shards: that of the optimizer built from the initial values
    const initial: Record<string, unknown> = { ...other, ...numeric };
    for (const [k, f] of Object.entries(scheduled)) initial[k] = f(0);
    const r = shardRefusal(build(initial), `${fn}'s inner optimizer`);
    const shards: ShardBehaviour = r === null ? { exact: true } : { exact: false, reason: r };
    const init = <P>(params: P): OptState => {
      const count = zeroCount();
      const hp = values(numeric, count, dtypeOf(params));
      const st: InjectHyperparamsState = {
        count,
        hyperparams: hp,
        innerState: build({ ...other, ...hp }).init(params),
      };
      return st;
    };
    const update = <U>(updates: U, state: OptState, params?: U | null, extra?: UpdateExtraArgs): [U, OptState] => {
      const s = state as InjectHyperparamsState;
      if (!s || !(s.count instanceof Array) || s.hyperparams === null || typeof s.hyperparams !== "object")
        throw new Error(`${fn}: expected the state from its init (count, hyperparams, innerState)`);
      for (const k of Object.keys(numeric))
        if (!(k in s.hyperparams)) throw new Error(`${fn}: the state's hyperparams lack "${k}"`);
      const hp = values(s.hyperparams, s.count, dtypeOf(params ?? updates));
      const [u, innerState] = build({ ...other, ...hp }).update(updates, s.innerState, params, extra);
      const ns: InjectHyperparamsState = { count: safeIncrement(s.count), hyperparams: hp, innerState };
      return [u, ns];
    };
    return { init, update, shards };
  };
}
