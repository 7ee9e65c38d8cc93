/** @file optax.scale_by_zoom_linesearch: a step satisfying the strong (or approximate) Wolfe conditions by bracketing then zooming with safeguarded cubic interpolation. */
import { Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import { whileLoop } from "../lax/index.js";
import { grad as gradOf, valueAndGrad } from "../transforms/api.js";
import {
  type GradientTransformation,
  type Tree,
  type UpdateExtraArgs,
  makeTransformation,
  sumOverLeaves,
  treeMap,
} from "./base.js";
import { checkHypers } from "./transforms.js";
import { linesearchArgs } from "./linesearch.js";
import { parseArgs } from "../numpy/elementwise-util.js";

/** optax's zoom-linesearch info: the steps taken, the final decrease and curvature errors. */
export interface ZoomLinesearchInfo {
  numLinesearchSteps: Array;
  decreaseError: Array;
  curvatureError: Array;
}
/** optax.ScaleByZoomLinesearchState: the accepted step, the loss and gradient at the new params, info. */
export interface ScaleByZoomLinesearchState {
  learningRate: Array;
  value: Array;
  grad: Tree;
  info: ZoomLinesearchInfo;
}
export interface ZoomLinesearchOpts {
  maxLinesearchSteps: number;
  maxStepsize?: number | null;
  tol?: number;
  increaseFactor?: number;
  slopeRtol?: number;
  curvRtol?: number;
  approxDecRtol?: number;
  stepsizePrecision?: number;
  initialGuessStrategy?: "one" | "keep";
  verbose?: boolean;
}

const OPTS = [
  "maxLinesearchSteps",
  "maxStepsize",
  "tol",
  "increaseFactor",
  "slopeRtol",
  "curvRtol",
  "approxDecRtol",
  "stepsizePrecision",
  "initialGuessStrategy",
  "verbose",
];
const f32 = (x: Array | number): Array => jnp.astype(jnp.asarray(x), "float32");
const finite = (x: Array): Array => jnp.logicalNot(jnp.logicalOr(jnp.isnan(x), jnp.isinf(x)));
const sel = (c: Array, a: Array, b: Array): Array => f32(jnp.where(c, a, b));

/**
 * The minimizer of the cubic through (a, fa, da) and (b, fb, db) (Nocedal & Wright eq. 3.59), kept inside
 * [lo + 0.1 d, hi - 0.1 d] of the interval (d its width), else the midpoint (also when the cubic has no minimizer).
 */
function safeCubic(a: Array, fa: Array, da: Array, b: Array, fb: Array, db: Array): Array {
  const d1 = jnp.subtract(jnp.add(da, db), jnp.multiply(3, jnp.divide(jnp.subtract(fa, fb), jnp.subtract(a, b))));
  const d2 = jnp.multiply(jnp.sign(jnp.subtract(b, a)), jnp.sqrt(jnp.subtract(jnp.square(d1), jnp.multiply(da, db))));
  const t = jnp.subtract(
    b,
    jnp.multiply(
      jnp.subtract(b, a),
      jnp.divide(jnp.subtract(jnp.add(db, d2), d1), jnp.add(jnp.subtract(db, da), jnp.multiply(2, d2))),
    ),
  );
  const lo = jnp.minimum(a, b),
    hi = jnp.maximum(a, b);
  const w = jnp.multiply(0.1, jnp.subtract(hi, lo));
  const ok = jnp.logicalAnd(
    finite(t),
    jnp.logicalAnd(jnp.greaterEqual(t, jnp.add(lo, w)), jnp.lessEqual(t, jnp.subtract(hi, w))),
  );
  return sel(ok, t, jnp.multiply(0.5, jnp.add(a, b)));
}

/**
 * optax.scale_by_zoom_linesearch (Nocedal & Wright Algorithms 3.5-3.6; the approximate Wolfe test from Hager &
 * Zhang): starting at 1 ("one") or the last accepted step ("keep"), grows the step by increaseFactor (capped at
 * maxStepsize) until it brackets a point with sufficient decrease f <= f0 + slopeRtol t f'0, then zooms the bracket
 * with safeguarded cubic interpolation until |f'(t)| <= curvRtol |f'0| (strong Wolfe) or the approximate Wolfe
 * conditions f <= f0 + approxDecRtol |f0| and (2 slopeRtol - 1) f'0 >= f'(t) >= curvRtol f'0 hold, for at most
 * maxLinesearchSteps evaluations; when none is accepted it takes the best safe step found (0 if none). The update
 * is step * updates; `update` needs the extra args { value, grad, valueFn }; it runs under jit (a lax.whileLoop).
 * The search stops unaccepted when the bracket is narrower than stepsizePrecision float32 epsilons relative to
 * its larger end. The state keeps the loss and gradient at the new params for valueAndGradFromState. optax's tol (early exit on a
 * small gradient) and verbose are accepted; verbose is not implemented.
 */
export function scaleByZoomLinesearch(opts: ZoomLinesearchOpts): GradientTransformation {
  const fn = "optim.scaleByZoomLinesearch";
  if (opts === null || typeof opts !== "object")
    throw new TypeError(`${fn}: expected an options object { maxLinesearchSteps, ... }, got ${typeof opts}`);
  parseArgs<ZoomLinesearchOpts>(fn, [opts], [], OPTS);
  const maxSteps = opts.maxLinesearchSteps;
  if (typeof maxSteps !== "number" || !Number.isInteger(maxSteps) || maxSteps < 1)
    throw new Error(`${fn}: maxLinesearchSteps must be an integer >= 1, got ${String(maxSteps)}`);
  const maxStep = opts.maxStepsize ?? Infinity,
    tol = opts.tol ?? 0,
    increase = opts.increaseFactor ?? 2,
    c1 = opts.slopeRtol ?? 1e-4,
    c2 = opts.curvRtol ?? 0.9,
    approxRtol = opts.approxDecRtol ?? 1e-6,
    precision = opts.stepsizePrecision ?? 1e5;
  checkHypers(fn, {
    maxStepsize: maxStep,
    tol,
    increaseFactor: increase,
    slopeRtol: c1,
    curvRtol: c2,
    approxDecRtol: approxRtol,
    stepsizePrecision: precision,
  });
  if (!(maxStep > 0)) throw new Error(`${fn}: maxStepsize must be > 0, got ${maxStep}`);
  if (!(increase > 1)) throw new Error(`${fn}: increaseFactor must be > 1, got ${increase}`);
  if (!(c1 > 0 && c1 < c2 && c2 < 1))
    throw new Error(`${fn}: expected 0 < slopeRtol < curvRtol < 1, got slopeRtol ${c1}, curvRtol ${c2}`);
  const guess = opts.initialGuessStrategy ?? "one";
  if (guess !== "one" && guess !== "keep")
    throw new Error(`${fn}: initialGuessStrategy must be "one" or "keep", got ${JSON.stringify(guess)}`);
  if (opts.verbose !== undefined && typeof opts.verbose !== "boolean")
    throw new TypeError(`${fn}: verbose must be a boolean, got ${typeof opts.verbose}`);
  return makeTransformation(
    (params) => {
      const st: ScaleByZoomLinesearchState = {
        learningRate: f32(1),
        value: f32(Infinity),
        grad: treeMap((p) => jnp.zerosLike(p), params),
        info: {
          numLinesearchSteps: jnp.zeros([], "int32"),
          decreaseError: f32(Infinity),
          curvatureError: f32(Infinity),
        },
      };
      return st;
    },
    (updates, state, params, extra?: UpdateExtraArgs) => {
      const { value, grad, valueFn } = linesearchArgs(fn, params, extra);
      const s = state as ScaleByZoomLinesearchState;
      const vfn = valueFn as (p: Tree) => Array;
      const vg = valueAndGrad(vfn) as (p: Tree) => [Array, Tree];
      const dot = (a: Tree, b: Tree): Array =>
        f32(
          sumOverLeaves(
            fn,
            treeMap((x, y) => jnp.multiply(x, y), a, b),
            (x) => jnp.astype(jnp.sum(x), "float32"),
          ),
        );
      const at = (t: Array): Tree =>
        treeMap((p, u) => jnp.astype(jnp.add(p, jnp.multiply(jnp.astype(t, u.dtype), u)), p.dtype), params, updates);
      const f0 = f32(value),
        s0 = dot(updates, grad as Tree);
      const decErr = (t: Array, f: Array): Array =>
        jnp.maximum(jnp.subtract(f, jnp.add(f0, jnp.multiply(jnp.multiply(c1, t), s0))), 0);
      const curvErr = (sl: Array): Array => jnp.maximum(jnp.subtract(jnp.abs(sl), jnp.multiply(c2, jnp.abs(s0))), 0);
      const start = f32(jnp.minimum(guess === "one" ? 1 : s.learningRate, maxStep));
      // the gradient is small enough already (optax's tol): take no step
      const small = jnp.lessEqual(jnp.sqrt(dot(grad as Tree, grad as Tree)), tol);
      // carry: iter, done, zoom phase, next bracketing trial, previous trial (t, f, f'), bracket lo and hi (t, f, f'),
      // accepted step, its value, its decrease and curvature errors
      type C = [
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
        Array,
      ];
      const z = f32(0);
      const init: C = [
        jnp.zeros([], "int32"),
        small,
        jnp.array(false),
        start,
        z,
        f0,
        s0,
        z,
        f0,
        s0,
        z,
        f0,
        s0,
        z,
        f0,
        z,
        z,
      ];
      const res = whileLoop<C>(
        (c) => jnp.logicalAnd(jnp.logicalNot(c[1]), jnp.less(c[0], maxSteps)),
        (c) => {
          const [it, , zoom, next, tp, fp, sp, lo, flo, slo, hi, fhi, shi] = c;
          const trial = sel(zoom, safeCubic(lo, flo, slo, hi, fhi, shi), next);
          const [fRaw, g] = vg(at(trial));
          const fv = f32(fRaw);
          const sl = dot(updates, g);
          const ok = finite(fv);
          const dec = jnp.logicalAnd(ok, jnp.lessEqual(decErr(trial, fv), 0));
          const curv = jnp.lessEqual(curvErr(sl), 0);
          const approx = jnp.logicalAnd(
            jnp.logicalAnd(ok, jnp.lessEqual(fv, jnp.add(f0, jnp.multiply(approxRtol, jnp.abs(f0))))),
            jnp.logicalAnd(
              jnp.greaterEqual(jnp.multiply(2 * c1 - 1, s0), sl),
              jnp.greaterEqual(sl, jnp.multiply(c2, s0)),
            ),
          );
          const accept = jnp.logicalOr(jnp.logicalAnd(dec, curv), approx);
          // bracketing: no decrease (or higher than the last trial) brackets [prev, trial]; an upward slope
          // brackets [trial, prev]; else grow the step
          const bA = jnp.logicalOr(jnp.logicalNot(dec), jnp.logicalAnd(jnp.greater(it, 0), jnp.greaterEqual(fv, fp)));
          const bB = jnp.logicalAnd(jnp.logicalNot(bA), jnp.greaterEqual(sl, 0));
          // zooming: no decrease or above lo replaces hi; else trial becomes lo (and hi the old lo if the slope
          // points past it)
          const zHi = jnp.logicalOr(jnp.logicalNot(dec), jnp.greaterEqual(fv, flo));
          const flip = jnp.logicalAnd(jnp.logicalNot(zHi), jnp.greaterEqual(jnp.multiply(sl, jnp.subtract(hi, lo)), 0));
          const bLo: [Array, Array, Array] = [sel(bA, tp, trial), sel(bA, fp, fv), sel(bA, sp, sl)];
          const bHi: [Array, Array, Array] = [sel(bA, trial, tp), sel(bA, fv, fp), sel(bA, sl, sp)];
          const zLo: [Array, Array, Array] = [sel(zHi, lo, trial), sel(zHi, flo, fv), sel(zHi, slo, sl)];
          const zHiV: [Array, Array, Array] = [
            sel(zHi, trial, sel(flip, lo, hi)),
            sel(zHi, fv, sel(flip, flo, fhi)),
            sel(zHi, sl, sel(flip, slo, shi)),
          ];
          const bracketed = jnp.logicalOr(bA, bB);
          const nLo = [0, 1, 2].map((i) => sel(zoom, zLo[i], sel(bracketed, bLo[i], lo)));
          const nHi = [0, 1, 2].map((i) => sel(zoom, zHiV[i], sel(bracketed, bHi[i], hi)));
          const nZoom = jnp.logicalOr(zoom, bracketed);
          const grow = jnp.logicalAnd(jnp.logicalNot(zoom), jnp.logicalNot(bracketed));
          const nNext = sel(grow, f32(jnp.minimum(jnp.multiply(trial, increase), maxStep)), next);
          // the safe step when the search ends unaccepted: lo while zooming, else the last trial with decrease
          const safeT = sel(nZoom, nLo[0], sel(dec, trial, tp)),
            safeF = sel(nZoom, nLo[1], sel(dec, fv, fp));
          // the bracket is narrower than stepsizePrecision float32 epsilons of its larger end: stop
          const width = jnp.abs(jnp.subtract(nHi[0], nLo[0]));
          const scaleT = jnp.maximum(jnp.abs(nHi[0]), jnp.abs(nLo[0]));
          const tooNarrow = jnp.logicalAnd(nZoom, jnp.less(width, jnp.multiply(precision * 1.1920929e-7, scaleT)));
          return [
            jnp.add(it, 1),
            jnp.logicalOr(accept, tooNarrow),
            nZoom,
            nNext,
            sel(grow, trial, tp),
            sel(grow, fv, fp),
            sel(grow, sl, sp),
            nLo[0],
            nLo[1],
            nLo[2],
            nHi[0],
            nHi[1],
            nHi[2],
            sel(accept, trial, safeT),
            sel(accept, fv, safeF),
            f32(decErr(trial, fv)),
            f32(curvErr(sl)),
          ] as C;
        },
        init,
      );
      const [iters, , , , , , , , , , , , , step, fNew, de, ce] = res;
      const out = treeMap((u) => jnp.multiply(jnp.astype(step, u.dtype), u), updates);
      // the gradient at the new params, taken once after the search (the loop carries no pytrees)
      const gNew = treeMap((x, l) => jnp.astype(x, l.dtype), gradOf(vfn)(at(step)) as Tree, s.grad);
      const ns: ScaleByZoomLinesearchState = {
        learningRate: step,
        value: fNew,
        grad: gNew,
        info: { numLinesearchSteps: iters, decreaseError: de, curvatureError: ce },
      };
      return [out, ns];
    },
    {
      exact: false,
      reason: `${fn}: its valueFn evaluates the loss at full parameters, which ZeRO's flat slices are not; use stage 0`,
    },
  );
}
