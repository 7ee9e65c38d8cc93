/** @file optax schedules: constant, polynomial, linear, cosine decay, exponential decay, piecewise constant, join and warmup schedules. */
import { Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import type { Schedule } from "./base.js";

type Hyper = number | Array;
type Count = Array | number;

function checkSteps(fn: string, name: string, v: unknown): number {
  if (typeof v !== "number" || !Number.isFinite(v))
    throw new TypeError(`${fn}: ${name} must be a finite number, got ${String(v)}`);
  return v;
}
const sub = (a: Hyper, b: Hyper): Hyper =>
  typeof a === "number" && typeof b === "number" ? a - b : jnp.subtract(a, b);

/** optax.constant_schedule: always `value`. */
export function constantSchedule(value: Hyper): Schedule {
  return () => value;
}

/** optax.polynomial_schedule: (init - end) * (1 - clip(count - begin, 0, steps) / steps)**power + end. */
export function polynomialSchedule(
  initValue: Hyper,
  endValue: Hyper,
  power: Hyper,
  transitionSteps: number,
  ...args: Args<[transitionBegin: number], { transitionBegin?: number }>
): Schedule {
  const o = parseArgs<{ transitionBegin: number }>("optim.polynomialSchedule", args, ["transitionBegin"]);
  checkSteps("optim.polynomialSchedule", "transitionSteps", transitionSteps);
  let begin = checkSteps("optim.polynomialSchedule", "transitionBegin", o.transitionBegin ?? 0);
  if (transitionSteps <= 0) return () => initValue; // optax: a constant schedule
  if (begin < 0) begin = 0;
  return (count: Count) => {
    const c = jnp.clip(jnp.subtract(count, begin), 0, transitionSteps);
    const frac = jnp.subtract(1, jnp.divide(c, transitionSteps));
    return jnp.add(jnp.multiply(sub(initValue, endValue), jnp.power(frac, power)), endValue);
  };
}

/** optax.linear_schedule: linear from initValue to endValue over transitionSteps, starting at transitionBegin. */
export function linearSchedule(
  initValue: Hyper,
  endValue: Hyper,
  transitionSteps: number,
  ...args: Args<[transitionBegin: number], { transitionBegin?: number }>
): Schedule {
  const o = parseArgs<{ transitionBegin: number }>("optim.linearSchedule", args, ["transitionBegin"]);
  return polynomialSchedule(initValue, endValue, 1, transitionSteps, o.transitionBegin ?? 0);
}

/** optax.cosine_decay_schedule: init * ((1 - alpha) * (0.5 (1 + cos(pi min(count, steps) / steps)))**exponent + alpha). */
export function cosineDecaySchedule(
  initValue: Hyper,
  decaySteps: number,
  ...args: Args<[alpha: Hyper, exponent: Hyper], { alpha?: Hyper; exponent?: Hyper }>
): Schedule {
  const o = parseArgs<{ alpha: Hyper; exponent: Hyper }>("optim.cosineDecaySchedule", args, ["alpha", "exponent"]);
  checkSteps("optim.cosineDecaySchedule", "decaySteps", decaySteps);
  if (!(decaySteps > 0)) throw new Error(`optim.cosineDecaySchedule: requires positive decaySteps, got ${decaySteps}`);
  const alpha = o.alpha ?? 0,
    exponent = o.exponent ?? 1;
  return (count: Count) => {
    const c = jnp.minimum(count, decaySteps);
    const cos = jnp.multiply(0.5, jnp.add(1, jnp.cos(jnp.divide(jnp.multiply(Math.PI, c), decaySteps))));
    const decayed = jnp.add(jnp.multiply(sub(1, alpha), jnp.power(cos, exponent)), alpha);
    return jnp.multiply(initValue, decayed);
  };
}

export interface ExponentialDecayOpts {
  transitionBegin?: number;
  staircase?: boolean;
  endValue?: Hyper | null;
}
/** optax.exponential_decay: init * decayRate**((count - begin) / steps) (floored with staircase), clipped at endValue. */
export function exponentialDecay(
  initValue: Hyper,
  transitionSteps: number,
  decayRate: number,
  ...args: Args<[transitionBegin: number, staircase: boolean, endValue: Hyper | null], ExponentialDecayOpts>
): Schedule {
  const o = parseArgs<ExponentialDecayOpts>("optim.exponentialDecay", args, [
    "transitionBegin",
    "staircase",
    "endValue",
  ]);
  checkSteps("optim.exponentialDecay", "transitionSteps", transitionSteps);
  checkSteps("optim.exponentialDecay", "decayRate", decayRate);
  let begin = checkSteps("optim.exponentialDecay", "transitionBegin", o.transitionBegin ?? 0);
  if (transitionSteps <= 0 || decayRate === 0) return () => initValue; // optax: a constant schedule
  if (begin < 0) begin = 0;
  const end = o.endValue ?? null;
  const clipFn = decayRate < 1 ? jnp.maximum : jnp.minimum;
  return (count: Count) => {
    const dc = jnp.subtract(count, begin);
    let p = jnp.divide(dc, transitionSteps);
    if (o.staircase) p = jnp.floor(p);
    const v = jnp.where(jnp.lessEqual(dc, 0), initValue, jnp.multiply(initValue, jnp.power(decayRate, p)));
    return end === null ? v : clipFn(v, end);
  };
}

/** optax.join_schedules: schedules[i + 1] takes over at boundaries[i], seeing the count minus that boundary. */
export function joinSchedules(schedules: Schedule[], boundaries: number[]): Schedule {
  if (
    !globalThis.Array.isArray(schedules) ||
    schedules.length === 0 ||
    schedules.some((s) => typeof s !== "function")
  ) {
    throw new TypeError("optim.joinSchedules: schedules must be a non-empty list of schedule functions");
  }
  if (!globalThis.Array.isArray(boundaries) || boundaries.length !== schedules.length - 1) {
    throw new Error(
      `optim.joinSchedules: expected ${schedules.length - 1} boundaries for ${schedules.length} schedules, got ${JSON.stringify(boundaries)}`,
    );
  }
  return (step: Count) => {
    let out = schedules[0](step);
    boundaries.forEach((b, i) => {
      out = jnp.where(jnp.less(step, b), out, schedules[i + 1](jnp.subtract(step, b)));
    });
    return out;
  };
}

/** optax.warmup_constant_schedule: linear warmup from initValue to peakValue, then constant. */
export function warmupConstantSchedule(initValue: Hyper, peakValue: Hyper, warmupSteps: number): Schedule {
  return linearSchedule(initValue, peakValue, warmupSteps);
}

/** optax.warmup_cosine_decay_schedule: linear warmup to peakValue, then cosine decay to endValue at decaySteps (total). */
export function warmupCosineDecaySchedule(
  initValue: Hyper,
  peakValue: number,
  warmupSteps: number,
  decaySteps: number,
  ...args: Args<[endValue: number, exponent: Hyper], { endValue?: number; exponent?: Hyper }>
): Schedule {
  const o = parseArgs<{ endValue: number; exponent: Hyper }>("optim.warmupCosineDecaySchedule", args, [
    "endValue",
    "exponent",
  ]);
  const end = o.endValue ?? 0;
  const alpha = peakValue === 0 ? 0 : end / peakValue;
  return joinSchedules(
    [
      linearSchedule(initValue, peakValue, warmupSteps),
      cosineDecaySchedule(peakValue, decaySteps - warmupSteps, alpha, o.exponent ?? 1),
    ],
    [warmupSteps],
  );
}

/** optax.warmup_exponential_decay_schedule: linear warmup to peakValue, then exponentialDecay from it. */
export function warmupExponentialDecaySchedule(
  initValue: Hyper,
  peakValue: Hyper,
  warmupSteps: number,
  transitionSteps: number,
  decayRate: number,
  ...args: Args<[transitionBegin: number, staircase: boolean, endValue: Hyper | null], ExponentialDecayOpts>
): Schedule {
  const o = parseArgs<ExponentialDecayOpts>("optim.warmupExponentialDecaySchedule", args, [
    "transitionBegin",
    "staircase",
    "endValue",
  ]);
  return joinSchedules(
    [linearSchedule(initValue, peakValue, warmupSteps), exponentialDecay(peakValue, transitionSteps, decayRate, o)],
    [warmupSteps],
  );
}

/**
 * optax.piecewise_constant_schedule: initValue multiplied by scale once count passes each boundary.
 * Boundaries and scales: an object { step: scale }, a Map, or a list of [step, scale] pairs.
 */
export function piecewiseConstantSchedule(
  initValue: Hyper,
  boundariesAndScales: Record<number, number> | Map<number, number> | [number, number][] | null = null,
): Schedule {
  let pairs: [number, number][] = [];
  if (boundariesAndScales instanceof Map) pairs = [...boundariesAndScales.entries()];
  else if (globalThis.Array.isArray(boundariesAndScales))
    pairs = boundariesAndScales.map(([b, s]) => [Number(b), Number(s)]);
  else if (boundariesAndScales !== null && boundariesAndScales !== undefined)
    pairs = Object.entries(boundariesAndScales).map(([b, s]) => [Number(b), Number(s)]);
  for (const [b, s] of pairs) {
    if (!Number.isFinite(b)) throw new TypeError(`optim.piecewiseConstantSchedule: boundary ${b} is not a number`);
    if (!(s >= 0))
      throw new Error(`optim.piecewiseConstantSchedule: expects non-negative scale factors, got ${s} at boundary ${b}`);
  }
  pairs.sort((a, b) => a[0] - b[0]);
  return (count: Count) => {
    let v: Hyper = initValue;
    for (const [threshold, s] of pairs) {
      // indicator is 1 before the boundary, 0 at and after it
      const ind = jnp.maximum(0, jnp.sign(jnp.subtract(threshold, count)));
      v = jnp.add(jnp.multiply(v, ind), jnp.multiply(jnp.multiply(jnp.subtract(1, ind), s), v));
    }
    return v;
  };
}
