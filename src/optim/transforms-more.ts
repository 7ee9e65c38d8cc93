/** @file More optax gradient transformations: scaleByAdamax, scaleByAmsgrad, scaleByAdan, scaleByAdadelta, scaleByNovograd, scaleBySm3, scaleByOptimisticGradient, scaleByRprop, scaleBySign and addNoise. */
import { Array } from "../core/array.js";
import { checkArity } from "../core/check-args.js";
import type { DType } from "../core/dtype.js";
import * as tree from "../core/tree.js";
import * as jnp from "../numpy/index.js";
import * as ops from "../primitives/ops.js";
import * as random from "../random/index.js";
import { type Args, parseArgs, userDType } from "../numpy/elementwise-util.js";
import {
  type GradientTransformation,
  type Tree,
  EXACT_ON_SHARDS,
  NO_PARAMS_MSG,
  emptyState,
  makeTransformation,
  oneMinus,
  perLeafSums,
  safeIncrement,
  treeMap,
  zeroCount,
} from "./base.js";
import { biasCorrection, castLikeTree, castTree, checkHypers, updateMoment, zerosLikeTree } from "./transforms.js";

type Hyper = number | Array;

// ---------------------------------------------------------------- Adamax and AMSGrad

export interface ScaleByAdamaxOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
}
export const ADAMAX_NAMES = ["b1", "b2", "eps"] as const;
export type AdamaxPos = [b1: Hyper, b2: Hyper, eps: Hyper];

/**
 * optax.scale_by_adamax (Kingma & Ba 2015, sec. 7): mu_hat / nu with mu Adam's first moment (bias-corrected) and nu
 * the infinity norm max(|g| + eps, b2 nu) (no bias correction). Elementwise and zero at zero: exact on ZeRO shards.
 */
export function scaleByAdamax(...args: Args<AdamaxPos, ScaleByAdamaxOpts>): GradientTransformation {
  const fn = "optim.scaleByAdamax";
  return adamaxCore(fn, parseArgs<ScaleByAdamaxOpts>(fn, args, ADAMAX_NAMES));
}

export function adamaxCore(fn: string, o: ScaleByAdamaxOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.999,
    eps = o.eps ?? 1e-8;
  checkHypers(fn, { b1, b2, eps });
  return makeTransformation(
    (params) => ({ count: zeroCount(), mu: zerosLikeTree(params), nu: zerosLikeTree(params) }),
    (updates, state) => {
      const s = state as { count: Array; mu: Tree; nu: Tree };
      const count = safeIncrement(s.count);
      const mu = updateMoment(updates, s.mu, b1, 1);
      const nu = treeMap((g, v) => jnp.maximum(jnp.add(jnp.abs(g), eps), jnp.multiply(b2, v)), updates, s.nu);
      const out = treeMap((m, v) => jnp.divide(m, v), biasCorrection(mu, b1, count), nu);
      return [out, { count, mu: castLikeTree(mu, s.mu), nu: castLikeTree(nu, s.nu) }];
    },
    EXACT_ON_SHARDS,
  );
}

export interface ScaleByAmsgradOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  muDtype?: DType | null;
  biasCorrectionMu?: boolean;
  biasCorrectionNu?: boolean;
}
export const AMSGRAD_NAMES = ["b1", "b2", "eps", "epsRoot", "muDtype", "biasCorrectionMu", "biasCorrectionNu"] as const;
export type AmsgradPos = [
  b1: Hyper,
  b2: Hyper,
  eps: Hyper,
  epsRoot: Hyper,
  muDtype: DType | null,
  biasCorrectionMu: boolean,
  biasCorrectionNu: boolean,
];

/**
 * optax.scale_by_amsgrad (Reddi et al. 2018): Adam whose denominator uses nuMax, the running maximum of the
 * (bias-corrected) second moment: mu_hat / (sqrt(nuMax + epsRoot) + eps). Elementwise: exact on ZeRO shards.
 */
export function scaleByAmsgrad(...args: Args<AmsgradPos, ScaleByAmsgradOpts>): GradientTransformation {
  const fn = "optim.scaleByAmsgrad";
  return amsgradCore(fn, parseArgs<ScaleByAmsgradOpts>(fn, args, AMSGRAD_NAMES));
}

export function amsgradCore(fn: string, o: ScaleByAmsgradOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.999,
    eps = o.eps ?? 1e-8,
    epsRoot = o.epsRoot ?? 0;
  checkHypers(fn, { b1, b2, eps, epsRoot });
  for (const k of ["biasCorrectionMu", "biasCorrectionNu"] as const)
    if (o[k] !== undefined && typeof o[k] !== "boolean")
      throw new TypeError(`${fn}: ${k} must be a boolean, got ${typeof o[k]}`);
  const muDtype = userDType(fn, o.muDtype);
  return makeTransformation(
    (params) => ({
      count: zeroCount(),
      mu: zerosLikeTree(params, muDtype),
      nu: zerosLikeTree(params),
      nuMax: zerosLikeTree(params),
    }),
    (updates, state) => {
      const s = state as { count: Array; mu: Tree; nu: Tree; nuMax: Tree };
      const mu = updateMoment(updates, s.mu, b1, 1);
      const nu = updateMoment(updates, s.nu, b2, 2);
      const count = safeIncrement(s.count);
      const muHat = o.biasCorrectionMu === false ? mu : biasCorrection(mu, b1, count);
      const nuEff = o.biasCorrectionNu === false ? nu : biasCorrection(nu, b2, count);
      const nuMax = castLikeTree(
        treeMap((a, b) => jnp.maximum(a, b), s.nuMax, nuEff),
        s.nuMax,
      );
      const out = treeMap((m, v) => jnp.divide(m, jnp.add(jnp.sqrt(jnp.add(v, epsRoot)), eps)), muHat, nuMax);
      return [out, { count, mu: castTree(mu, muDtype), nu: castLikeTree(nu, s.nu), nuMax }];
    },
    EXACT_ON_SHARDS,
  );
}

export interface ScaleByAdanOpts {
  b1?: Hyper;
  b2?: Hyper;
  b3?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
}
export const ADAN_NAMES = ["b1", "b2", "b3", "eps", "epsRoot"] as const;
export type AdanPos = [b1: Hyper, b2: Hyper, b3: Hyper, eps: Hyper, epsRoot: Hyper];

/**
 * optax.scale_by_adan (Xie et al. 2022, Algorithm 1): with d = g - g_prev (0 at the first step), bias-corrected
 * EMAs m of g (b1), v of d (b2) and n of (g + (1 - b2) d)^2 (b3): (m + (1 - b2) v) / (sqrt(n + epsRoot) + eps).
 * The state (m, v, n, g, t) is optax's. Elementwise and zero at zero: exact on ZeRO shards.
 */
export function scaleByAdan(...args: Args<AdanPos, ScaleByAdanOpts>): GradientTransformation {
  const fn = "optim.scaleByAdan";
  return adanCore(fn, parseArgs<ScaleByAdanOpts>(fn, args, ADAN_NAMES));
}

export function adanCore(fn: string, o: ScaleByAdanOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.98,
    b2 = o.b2 ?? 0.92,
    b3 = o.b3 ?? 0.99,
    eps = o.eps ?? 1e-8,
    epsRoot = o.epsRoot ?? 0;
  checkHypers(fn, { b1, b2, b3, eps, epsRoot });
  return makeTransformation(
    (params) => ({
      m: zerosLikeTree(params),
      v: zerosLikeTree(params),
      n: zerosLikeTree(params),
      g: zerosLikeTree(params),
      t: zeroCount(),
    }),
    (updates, state) => {
      const s = state as { m: Tree; v: Tree; n: Tree; g: Tree; t: Array };
      const first = jnp.equal(s.t, 0);
      const diff = treeMap((g, prev) => jnp.where(first, jnp.zerosLike(g), jnp.subtract(g, prev)), updates, s.g);
      const m = updateMoment(updates, s.m, b1, 1);
      const v = updateMoment(diff, s.v, b2, 1);
      const n = updateMoment(
        treeMap((g, d) => jnp.add(g, jnp.multiply(oneMinus(b2), d)), updates, diff),
        s.n,
        b3,
        2,
      );
      const t = safeIncrement(s.t);
      const out = treeMap(
        (mh, vh, nh) =>
          jnp.divide(jnp.add(mh, jnp.multiply(oneMinus(b2), vh)), jnp.add(jnp.sqrt(jnp.add(nh, epsRoot)), eps)),
        biasCorrection(m, b1, t),
        biasCorrection(v, b2, t),
        biasCorrection(n, b3, t),
      );
      return [
        out,
        {
          m: castLikeTree(m, s.m),
          v: castLikeTree(v, s.v),
          n: castLikeTree(n, s.n),
          g: castLikeTree(updates, s.g),
          t,
        },
      ];
    },
    EXACT_ON_SHARDS,
  );
}

// ---------------------------------------------------------------- AdaDelta and NovoGrad

/**
 * optax.scale_by_adadelta (Zeiler 2012): u = sqrt(eX + eps) / sqrt(eG + eps) g with eG the EMA of g^2 (updated
 * first) and eX the EMA of u^2 (updated after). Elementwise and zero at zero: exact on ZeRO shards.
 */
export function scaleByAdadelta(
  ...args: Args<[rho: Hyper, eps: Hyper], { rho?: Hyper; eps?: Hyper }>
): GradientTransformation {
  const fn = "optim.scaleByAdadelta";
  const o = parseArgs<{ rho: Hyper; eps: Hyper }>(fn, args, ["rho", "eps"]);
  const rho = o.rho ?? 0.9,
    eps = o.eps ?? 1e-6;
  checkHypers(fn, { rho, eps });
  return makeTransformation(
    (params) => ({ eG: zerosLikeTree(params), eX: zerosLikeTree(params) }),
    (updates, state) => {
      const s = state as { eG: Tree; eX: Tree };
      const eG = updateMoment(updates, s.eG, rho, 2);
      const out = treeMap(
        (g, cur, prev) => jnp.multiply(jnp.divide(jnp.sqrt(jnp.add(prev, eps)), jnp.sqrt(jnp.add(cur, eps))), g),
        updates,
        eG,
        s.eX,
      );
      const eX = updateMoment(out, s.eX, rho, 2);
      return [out, { eG: castLikeTree(eG, s.eG), eX: castLikeTree(eX, s.eX) }];
    },
    EXACT_ON_SHARDS,
  );
}

export interface ScaleByNovogradOpts {
  b1?: Hyper;
  b2?: Hyper;
  eps?: Hyper;
  epsRoot?: Hyper;
  weightDecay?: Hyper;
  muDtype?: DType | null;
}
export const NOVOGRAD_NAMES = ["b1", "b2", "eps", "epsRoot", "weightDecay", "muDtype"] as const;
export type NovogradPos = [b1: Hyper, b2: Hyper, eps: Hyper, epsRoot: Hyper, weightDecay: Hyper, muDtype: DType | null];

/**
 * optax.scale_by_novograd (Ginsburg et al. 2019): per leaf a scalar second moment nu of ||g||^2 (nu = ||g||^2 at
 * the first step, then an EMA with b2), and mu = b1 mu + g / (sqrt(nu + epsRoot) + eps) + weightDecay p (no b1 at
 * the first step). Exact on ZeRO shards: each leaf's ||g||^2 adds up over the devices' slices.
 */
export function scaleByNovograd(...args: Args<NovogradPos, ScaleByNovogradOpts>): GradientTransformation {
  const fn = "optim.scaleByNovograd";
  return novogradCore(fn, parseArgs<ScaleByNovogradOpts>(fn, args, NOVOGRAD_NAMES));
}

export function novogradCore(fn: string, o: ScaleByNovogradOpts): GradientTransformation {
  const b1 = o.b1 ?? 0.9,
    b2 = o.b2 ?? 0.25,
    eps = o.eps ?? 1e-8,
    epsRoot = o.epsRoot ?? 0,
    wd = o.weightDecay ?? 0;
  checkHypers(fn, { b1, b2, eps, epsRoot, weightDecay: wd });
  const muDtype = userDType(fn, o.muDtype);
  return makeTransformation(
    (params) => ({
      count: zeroCount(),
      mu: zerosLikeTree(params, muDtype),
      nu: treeMap((p) => jnp.zeros([], p.dtype), params),
    }),
    (updates, state, params) => {
      if (params === undefined || params === null) throw new Error(`${fn}: ${NO_PARAMS_MSG}`);
      const s = state as { count: Array; mu: Tree; nu: Tree };
      const count = safeIncrement(s.count);
      const first = jnp.equal(count, 1);
      const [gl, def] = tree.flatten(updates);
      const [pl, ml, nl] = [params, s.mu, s.nu].map((t) => tree.leaves(t) as Array[]);
      const sq = perLeafSums(gl as Array[], (g) => jnp.square(g));
      const nu: Array[] = [],
        mu: Array[] = [];
      gl.forEach((l, i) => {
        const g = l as Array;
        const n2 = jnp.astype(sq[i], nl[i].dtype);
        const n = jnp.astype(
          jnp.where(first, n2, jnp.add(jnp.multiply(oneMinus(b2), n2), jnp.multiply(b2, nl[i]))),
          nl[i].dtype,
        );
        const add = jnp.add(
          jnp.divide(g, jnp.astype(jnp.add(jnp.sqrt(jnp.add(n, epsRoot)), eps), g.dtype)),
          jnp.multiply(wd, pl[i]),
        );
        const m = jnp.where(first, add, jnp.add(jnp.multiply(b1, ml[i]), add));
        nu.push(n);
        mu.push(muDtype ? jnp.astype(m, muDtype) : jnp.astype(m, ml[i].dtype));
      });
      const muTree = tree.unflatten(def, mu);
      return [muTree, { count, mu: muTree, nu: tree.unflatten(def, nu) }];
    },
    EXACT_ON_SHARDS,
  );
}

// ---------------------------------------------------------------- SM3

/**
 * optax.scale_by_sm3 (Anil et al. 2019, memory-efficient adaptive optimization): per leaf one accumulator vector
 * per dim; acc = c g^2 + b2 min_i(v_i broadcast) (c = 1 - b2, or 1 when b2 is 1; a rank-1 leaf's single vector is
 * its full accumulator), the step g / sqrt(acc + eps) (0 where acc is 0) is averaged with momentum b1, and each v_i
 * becomes the max of acc over the other dims. The state is { mu: a list of vectors per leaf, nu: the momentum }. A
 * scalar leaf keeps one scalar accumulator (optax rejects scalars).
 *
 * On ZeRO's flat shards it refuses: a slice is rank 1, so a matrix would get a full (diagonal) accumulator instead
 * of its row and column maxima.
 */
export function scaleBySm3(
  ...args: Args<[b1: Hyper, b2: Hyper, eps: Hyper], { b1?: Hyper; b2?: Hyper; eps?: Hyper }>
): GradientTransformation {
  const fn = "optim.scaleBySm3";
  const o = parseArgs<{ b1: Hyper; b2: Hyper; eps: Hyper }>(fn, args, ["b1", "b2", "eps"]);
  return sm3Core(fn, o.b1 ?? 0.9, o.b2 ?? 1.0, o.eps ?? 1e-8);
}

export function sm3Core(fn: string, b1: Hyper, b2: Hyper, eps: Hyper): GradientTransformation {
  checkHypers(fn, { b1, b2, eps });
  // optax: the new-gradient coefficient is 1 - b2, or 1 when b2 is exactly 1 (a plain sum, as AdaGrad)
  const c0 = typeof b2 === "number" ? (b2 === 1 ? 1 : 1 - b2) : jnp.where(jnp.equal(b2, 1), 1, jnp.subtract(1, b2));
  const vectorsOf = (p: Array): Array[] =>
    p.ndim === 0 ? [jnp.zeros([], p.dtype)] : p.shape.map((n) => jnp.zeros([n], p.dtype));
  return makeTransformation(
    (params) => {
      const [pl, def] = tree.flatten(params);
      return { mu: tree.unflatten(def, (pl as Array[]).map(vectorsOf)), nu: zerosLikeTree(params) };
    },
    (updates, state) => {
      const s = state as { mu: Tree; nu: Tree };
      const [gl, def] = tree.flatten(updates);
      const flatMu = tree.leaves(s.mu) as Array[];
      let at = 0;
      const acc: Array[] = [],
        mu: Array[][] = [],
        muDtypes: DType[] = [];
      for (const l of gl) {
        const g = l as Array,
          nd = g.ndim;
        const vs = flatMu.slice(at, at + Math.max(nd, 1));
        at += Math.max(nd, 1);
        muDtypes.push(vs[0]?.dtype ?? g.dtype);
        if (vs.length !== Math.max(nd, 1) || vs.some((v, i) => v.size !== (nd === 0 ? 1 : g.shape[i])))
          throw new Error(`${fn}: the state's accumulators do not match an update of shape (${g.shape.join(", ")})`);
        let prev: Array;
        if (nd < 2) prev = vs[0];
        else {
          const shaped = vs.map((v, i) =>
            jnp.reshape(
              v,
              g.shape.map((n, j) => (j === i ? n : 1)),
            ),
          );
          prev = shaped.reduce((a, b) => jnp.minimum(a, b));
        }
        const a = jnp.add(jnp.multiply(c0, jnp.square(g)), jnp.multiply(b2, prev));
        acc.push(a);
        mu.push(
          nd < 2 ? [a] : g.shape.map((_, i) => jnp.max(a, { axis: g.shape.map((_n, j) => j).filter((j) => j !== i) })),
        );
      }
      const up = gl.map((l, i) => {
        const g = l as Array,
          a = acc[i];
        return jnp.multiply(g, jnp.where(jnp.greater(a, 0), ops.rsqrt(jnp.add(a, eps)), 0));
      });
      const nu = castLikeTree(updateMoment(tree.unflatten(def, up), s.nu, b1, 1), s.nu);
      const muState = tree.unflatten(
        def,
        mu.map((vs, i) => vs.map((v) => jnp.astype(v, muDtypes[i]))),
      );
      return [nu, { mu: muState, nu }];
    },
    {
      exact: false,
      reason: `${fn}: its accumulators are per-dim maxima of each parameter's rows and columns, which ZeRO's flat 1/n slices do not have (a slice would get a full diagonal accumulator instead); use stage 0`,
    },
  );
}

// ---------------------------------------------------------------- optimistic gradient and sign

/**
 * optax.scale_by_optimistic_gradient (Daskalakis et al. 2018): (alpha + beta) g - beta g_prev, g_prev the previous
 * step's gradient (the current one at the first step). Elementwise: exact on ZeRO shards.
 */
export function scaleByOptimisticGradient(
  ...args: Args<[alpha: Hyper, beta: Hyper], { alpha?: Hyper; beta?: Hyper }>
): GradientTransformation {
  const fn = "optim.scaleByOptimisticGradient";
  const o = parseArgs<{ alpha: Hyper; beta: Hyper }>(fn, args, ["alpha", "beta"]);
  return optimisticCore(fn, o.alpha ?? 1, o.beta ?? 1);
}

export function optimisticCore(fn: string, alpha: Hyper, beta: Hyper): GradientTransformation {
  checkHypers(fn, { alpha, beta });
  const ab = typeof alpha === "number" && typeof beta === "number" ? alpha + beta : jnp.add(alpha, beta);
  return makeTransformation(
    (params) => ({ isInitialStep: jnp.array(true), previousGradient: zerosLikeTree(params) }),
    (updates, state) => {
      const s = state as { isInitialStep: Array; previousGradient: Tree };
      const out = treeMap(
        (g, prev) => jnp.subtract(jnp.multiply(ab, g), jnp.multiply(beta, jnp.where(s.isInitialStep, g, prev))),
        updates,
        s.previousGradient,
      );
      return [out, { isInitialStep: jnp.array(false), previousGradient: castLikeTree(updates, s.previousGradient) }];
    },
    EXACT_ON_SHARDS,
  );
}

export interface ScaleByRpropOpts {
  etaMinus?: Hyper;
  etaPlus?: Hyper;
  minStepSize?: Hyper;
  maxStepSize?: Hyper;
}
export const RPROP_NAMES = ["etaMinus", "etaPlus", "minStepSize", "maxStepSize"] as const;
export type RpropPos = [etaMinus: Hyper, etaPlus: Hyper, minStepSize: Hyper, maxStepSize: Hyper];

/**
 * optax.scale_by_rprop (Riedmiller & Braun 1993): per element a step size, starting at learningRate, times etaPlus
 * while the gradient keeps its sign and etaMinus when it flips (clipped to [minStepSize, maxStepSize]); the update
 * is step * sign(g), or 0 right after a flip (which also resets the sign memory). The state is optax's (stepSizes,
 * prevUpdates). Unlike optax 2edbcbe, which emits the update computed one step earlier (zeros at the first step;
 * google-deepmind/optax PR #1725), this emits the current one, as torch.optim.Rprop. Exact on ZeRO shards.
 */
export function scaleByRprop(learningRate: Hyper, ...args: Args<RpropPos, ScaleByRpropOpts>): GradientTransformation {
  const fn = "optim.scaleByRprop";
  return rpropCore(fn, learningRate, parseArgs<ScaleByRpropOpts>(fn, args, RPROP_NAMES));
}

export function rpropCore(fn: string, learningRate: Hyper, o: ScaleByRpropOpts): GradientTransformation {
  const etaMinus = o.etaMinus ?? 0.5,
    etaPlus = o.etaPlus ?? 1.2,
    minStep = o.minStepSize ?? 1e-6,
    maxStep = o.maxStepSize ?? 50;
  checkHypers(fn, { learningRate, etaMinus, etaPlus, minStepSize: minStep, maxStepSize: maxStep });
  return makeTransformation(
    (params) => ({
      stepSizes: treeMap((p) => jnp.fullLike(p, learningRate), params),
      prevUpdates: zerosLikeTree(params),
    }),
    (updates, state) => {
      const s = state as { stepSizes: Tree; prevUpdates: Tree };
      const sg = treeMap((g, prev) => jnp.multiply(g, prev), updates, s.prevUpdates);
      const stepSizes = treeMap(
        (x, step) =>
          jnp.astype(
            jnp.where(
              jnp.equal(x, 0),
              step,
              jnp.clip(jnp.multiply(step, jnp.where(jnp.greater(x, 0), etaPlus, etaMinus)), minStep, maxStep),
            ),
            step.dtype,
          ),
        sg,
        s.stepSizes,
      );
      const out = treeMap(
        (x, g, step) => jnp.where(jnp.less(x, 0), jnp.zerosLike(g), jnp.multiply(step, jnp.sign(g))),
        sg,
        updates,
        stepSizes,
      );
      return [out, { stepSizes, prevUpdates: castLikeTree(out, s.prevUpdates) }];
    },
    EXACT_ON_SHARDS,
  );
}

/**
 * optax.add_noise (Neelakantan et al. 2015): g + sqrt(eta / count^gamma) * N(0, 1) noise (count from 1), the noise of
 * each leaf drawn with its own key split from the state's key, which is split afresh at every step (as optax, so
 * the draws are JAX's for the same key). `key` is a raw PRNGKey (uint32 [2]) or an integer seed (default 0, as
 * optax). Refused on ZeRO's flat shards: slices would draw other noise than full leaves, and the padding would move.
 */
export function addNoise(eta: Hyper, gamma: Hyper, key: number | Array = 0): GradientTransformation {
  const fn = "optim.addNoise";
  checkHypers(fn, { eta, gamma });
  const k0 = typeof key === "number" ? random.PRNGKey(key) : key;
  if (!(k0 instanceof Array) || k0.dtype !== "uint32" || k0.shape.length !== 1 || k0.shape[0] !== 2)
    throw new TypeError(
      `${fn}: key must be an integer seed or a raw PRNGKey (uint32 of shape (2,)), got ${String(key)}`,
    );
  const row = (keys: Array, i: number): Array => jnp.reshape(ops.sliceInDim(keys, i, i + 1, 1, 0), [2]);
  return makeTransformation(
    () => ({ count: zeroCount(), rngKey: k0 }),
    (updates, state) => {
      const s = state as { count: Array; rngKey: Array };
      const count = safeIncrement(s.count);
      const std = jnp.sqrt(jnp.divide(eta, jnp.power(jnp.astype(count, "float32"), gamma)));
      const two = random.split(s.rngKey) as Array;
      const [gl, def] = tree.flatten(updates);
      const keys = random.split(row(two, 1), gl.length) as Array;
      const out = gl.map((l, i) => {
        const g = l as Array;
        const noise = random.normal(row(keys, i), g.shape, g.dtype);
        return jnp.add(g, jnp.multiply(jnp.astype(std, g.dtype), noise));
      });
      return [tree.unflatten(def, out), { count, rngKey: row(two, 0) }];
    },
    {
      exact: false,
      reason: `${fn}: the noise of a flat 1/n slice is not the slice of a full leaf's noise, and its zero padding would get noise; use stage 0`,
    },
  );
}

/** optax.scale_by_sign: sign(g) elementwise (exact on ZeRO shards). */
export function scaleBySign(): GradientTransformation {
  checkArity("optim.scaleBySign", arguments, 0, "optim.scaleBySign()");
  return makeTransformation(
    () => emptyState(),
    (updates, state) => [treeMap((g) => jnp.sign(g), updates), state],
    EXACT_ON_SHARDS,
  );
}
