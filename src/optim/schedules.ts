/** @file optax schedules: constant, polynomial, linear, cosine decay, exponential decay, piecewise constant/interpolate, one-cycle, join and warmup. */
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
/** Boundaries and scale factors: an object { step: scale }, a Map, or a list of [step, scale] pairs. */
export type BoundariesAndScales = Record<number, number> | Map<number, number> | [number, number][];

/** The (boundary, scale) pairs sorted by boundary; raises (naming `fn`) on a non-number boundary or a negative scale. */
function boundaryScalePairs(fn: string, bs: BoundariesAndScales | null | undefined): [number, number][] {
  let pairs: [number, number][] = [];
  if (bs instanceof Map) pairs = [...bs.entries()];
  else if (globalThis.Array.isArray(bs)) pairs = bs.map(([b, s]) => [Number(b), Number(s)]);
  else if (bs !== null && bs !== undefined) {
    if (typeof bs !== "object")
      throw new TypeError(
        `${fn}: boundariesAndScales must be an object, a Map or [step, scale] pairs, got ${typeof bs}`,
      );
    pairs = Object.entries(bs).map(([b, s]) => [Number(b), Number(s)]);
  }
  for (const [b, s] of pairs) {
    if (!Number.isFinite(b)) throw new TypeError(`${fn}: boundary ${b} is not a number`);
    if (!(s >= 0)) throw new Error(`${fn}: expects non-negative scale factors, got ${s} at boundary ${b}`);
  }
  return pairs.sort((a, b) => a[0] - b[0]);
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
  boundariesAndScales: BoundariesAndScales | null = null,
): Schedule {
  const pairs = boundaryScalePairs("optim.piecewiseConstantSchedule", boundariesAndScales);
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

/** Interpolation of one piece, from `start` (pct 0) to `end` (pct 1). */
const INTERPOLATE = {
  linear: (start: number, end: number, pct: Array): Array => jnp.add(jnp.multiply(end - start, pct), start),
  // half a cosine period: end + (start - end) / 2 * (cos(pi pct) + 1)
  cosine: (start: number, end: number, pct: Array): Array =>
    jnp.add(end, jnp.multiply((start - end) / 2, jnp.add(jnp.cos(jnp.multiply(Math.PI, pct)), 1))),
} as const;

/**
 * optax.piecewise_interpolate_schedule: the value at boundary b_i is initValue times the product of the scales of all
 * boundaries <= b_i, interpolated ("linear" or "cosine") between boundaries (the first piece starts at step 0); past
 * the last boundary it stays at the last value, and it is 0 before step 0. Boundaries must be >= 0. Unlike optax,
 * a boundary at 0 does not turn every value into NaN (an empty piece is skipped, not multiplied by 0).
 */
export function piecewiseInterpolateSchedule(
  interpolateType: "linear" | "cosine",
  initValue: number,
  boundariesAndScales: BoundariesAndScales | null = null,
): Schedule {
  const fn = "optim.piecewiseInterpolateSchedule";
  if (interpolateType !== "linear" && interpolateType !== "cosine")
    throw new Error(`${fn}: interpolateType must be "linear" or "cosine", got ${JSON.stringify(interpolateType)}`);
  checkSteps(fn, "initValue", initValue);
  const pairs = boundaryScalePairs(fn, boundariesAndScales);
  for (const [b] of pairs)
    if (b < 0) throw new Error(`${fn}: boundaries must be >= 0 (the first piece starts at 0), got ${b}`);
  const bounds = [0, ...pairs.map(([b]) => b)];
  const values = [initValue];
  for (const [, sc] of pairs) values.push(values[values.length - 1] * sc);
  const interp = INTERPOLATE[interpolateType];
  return (count: Count) => {
    const c = jnp.asarray(count);
    const last = bounds.length - 1;
    // past the last boundary (inclusive): the last value; before 0: 0
    let out: Array = jnp.where(jnp.greaterEqual(c, bounds[last]), values[last], jnp.zerosLike(c, "float32"));
    for (let i = 0; i < last; i++) {
      const size = bounds[i + 1] - bounds[i];
      if (size === 0) continue;
      const inside = jnp.logicalAnd(jnp.greaterEqual(c, bounds[i]), jnp.less(c, bounds[i + 1]));
      const pct = jnp.divide(jnp.subtract(c, bounds[i]), size);
      out = jnp.where(inside, interp(values[i], values[i + 1], pct), out);
    }
    return out;
  };
}

export interface LinearOnecycleOpts {
  pctStart?: number;
  pctFinal?: number;
  divFactor?: number;
  finalDivFactor?: number;
}
/**
 * optax.linear_onecycle_schedule: linear from peakValue / divFactor up to peakValue at trunc(pctStart * steps),
 * back down to peakValue / divFactor at trunc(pctFinal * steps), then to that / finalDivFactor at transitionSteps.
 */
export function linearOnecycleSchedule(
  transitionSteps: number,
  peakValue: number,
  ...args: Args<[pctStart: number, pctFinal: number, divFactor: number, finalDivFactor: number], LinearOnecycleOpts>
): Schedule {
  const fn = "optim.linearOnecycleSchedule";
  const o = parseArgs<LinearOnecycleOpts>(fn, args, ["pctStart", "pctFinal", "divFactor", "finalDivFactor"]);
  const steps = checkSteps(fn, "transitionSteps", transitionSteps);
  if (!(steps > 0)) throw new Error(`${fn}: requires a positive transitionSteps, got ${steps}`);
  const peak = checkSteps(fn, "peakValue", peakValue);
  const pctStart = checkSteps(fn, "pctStart", o.pctStart ?? 0.3),
    pctFinal = checkSteps(fn, "pctFinal", o.pctFinal ?? 0.85),
    div = checkSteps(fn, "divFactor", o.divFactor ?? 25),
    finalDiv = checkSteps(fn, "finalDivFactor", o.finalDivFactor ?? 1e4);
  // a later entry at the same step replaces an earlier one (optax builds a dict)
  const bs = new Map<number, number>([
    [Math.trunc(pctStart * steps), div],
    [Math.trunc(pctFinal * steps), 1 / div],
  ]);
  bs.set(steps, 1 / finalDiv);
  return piecewiseInterpolateSchedule("linear", peak / div, bs);
}

export interface CosineOnecycleOpts {
  pctStart?: number;
  divFactor?: number;
  finalDivFactor?: number;
}
/**
 * optax.cosine_onecycle_schedule: cosine from peakValue / divFactor up to peakValue at trunc(pctStart * steps), then
 * cosine down to peakValue / (divFactor * finalDivFactor) at transitionSteps.
 */
export function cosineOnecycleSchedule(
  transitionSteps: number,
  peakValue: number,
  ...args: Args<[pctStart: number, divFactor: number, finalDivFactor: number], CosineOnecycleOpts>
): Schedule {
  const fn = "optim.cosineOnecycleSchedule";
  const o = parseArgs<CosineOnecycleOpts>(fn, args, ["pctStart", "divFactor", "finalDivFactor"]);
  const steps = checkSteps(fn, "transitionSteps", transitionSteps);
  if (!(steps > 0)) throw new Error(`${fn}: requires a positive transitionSteps, got ${steps}`);
  const peak = checkSteps(fn, "peakValue", peakValue);
  const pctStart = checkSteps(fn, "pctStart", o.pctStart ?? 0.3),
    div = checkSteps(fn, "divFactor", o.divFactor ?? 25),
    finalDiv = checkSteps(fn, "finalDivFactor", o.finalDivFactor ?? 1e4);
  const bs = new Map<number, number>([[Math.trunc(pctStart * steps), div]]);
  bs.set(Math.trunc(steps), 1 / (div * finalDiv));
  return piecewiseInterpolateSchedule("cosine", peak / div, bs);
}

/** One cycle of sgdrSchedule: warmupCosineDecaySchedule's arguments (decaySteps counts the warmup too). */
export interface SgdrCycle {
  initValue: Hyper;
  peakValue: number;
  warmupSteps: number;
  decaySteps: number;
  endValue?: number;
  exponent?: Hyper;
}
const SGDR_KEYS = ["initValue", "peakValue", "warmupSteps", "decaySteps", "endValue", "exponent"];

/**
 * optax.sgdr_schedule (SGD with warm restarts): the cycles' warmup-cosine-decay schedules one after another, each
 * restarting its own count where the previous cycle's decaySteps end.
 */
export function sgdrSchedule(cosineKwargs: SgdrCycle[]): Schedule {
  const fn = "optim.sgdrSchedule";
  if (!globalThis.Array.isArray(cosineKwargs) || cosineKwargs.length === 0)
    throw new TypeError(`${fn}: cosineKwargs must be a non-empty list of cycle objects, got ${String(cosineKwargs)}`);
  const schedules: Schedule[] = [];
  const boundaries: number[] = [];
  let step = 0;
  cosineKwargs.forEach((c, i) => {
    if (c === null || typeof c !== "object")
      throw new TypeError(`${fn}: cycle ${i} must be an object, got ${c === null ? "null" : typeof c}`);
    for (const k of Object.keys(c))
      if (!SGDR_KEYS.includes(k))
        throw new TypeError(`${fn}: cycle ${i} has unexpected key "${k}" (expected ${SGDR_KEYS.join(", ")})`);
    for (const k of ["initValue", "peakValue", "warmupSteps", "decaySteps"] as const)
      if (c[k] === undefined) throw new TypeError(`${fn}: cycle ${i} is missing ${k}`);
    const warmup = checkSteps(`${fn} (cycle ${i})`, "warmupSteps", c.warmupSteps);
    const decay = checkSteps(`${fn} (cycle ${i})`, "decaySteps", c.decaySteps);
    checkSteps(`${fn} (cycle ${i})`, "peakValue", c.peakValue);
    if (!(decay > warmup))
      throw new Error(
        `${fn}: cycle ${i} needs decaySteps > warmupSteps, got decaySteps ${decay}, warmupSteps ${warmup}`,
      );
    schedules.push(
      warmupCosineDecaySchedule(c.initValue, c.peakValue, warmup, decay, {
        endValue: c.endValue ?? 0,
        exponent: c.exponent ?? 1,
      }),
    );
    step += decay;
    boundaries.push(step);
  });
  // the last cycle's end is no boundary: it keeps its end value from there on
  return joinSchedules(schedules, boundaries.slice(0, -1));
}
