/** @file jax.scipy.optimize: minimize with method "BFGS" (a strong-Wolfe line search, Nocedal and Wright Alg. 3.5 / 3.6, as JAX's), jit-able through lax.whileLoop. */
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { type DType, finfo } from "../core/dtype.js";
import { registerNode } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { promoteArgsInexact } from "../numpy/core.js";
import { shapeStr } from "../numpy/struct-util.js";
import { whileLoop } from "../transforms/scan.js";
import { valueAndGrad } from "../transforms/api.js";

type AL = ArrayLike | NestedValue;
type Fn = (x: Array) => Array;

/** jax.scipy.optimize.OptimizeResults: the fields of JAX's named tuple (hessInv is JAX's hess_inv). */
export class OptimizeResults {
  constructor(
    /** the final solution */
    readonly x: Array,
    /** true when the gradient norm fell below gtol without a line-search failure */
    readonly success: Array,
    /** 0 converged, 1 maxiter reached, 2 + line-search status on a line-search failure, -1 otherwise (as JAX) */
    readonly status: Array,
    /** the final objective value */
    readonly fun: Array,
    /** the final gradient */
    readonly jac: Array,
    /** the final inverse-Hessian estimate */
    readonly hessInv: Array,
    /** function evaluations */
    readonly nfev: Array,
    /** gradient evaluations */
    readonly njev: Array,
    /** iterations */
    readonly nit: Array,
  ) {}
}
registerNode(OptimizeResults, {
  flatten: (r) => [[r.x, r.success, r.status, r.fun, r.jac, r.hessInv, r.nfev, r.njev, r.nit], null],
  unflatten: (_a, c) =>
    new OptimizeResults(
      c[0] as Array,
      c[1] as Array,
      c[2] as Array,
      c[3] as Array,
      c[4] as Array,
      c[5] as Array,
      c[6] as Array,
      c[7] as Array,
      c[8] as Array,
    ),
});

// ---------------------------------------------------------------- scalar helpers
const I32 = (v: number): Array => ops.full([], v, "int32");
const B = (v: boolean): Array => ops.full([], v, "bool");
/** where(c, a, b) with a scalar condition broadcast over a. */
const pick = (c: Array, a: Array, b: Array): Array => ops.select(a.ndim ? ops.broadcastInDim(c, a.shape, []) : c, a, b);
const dot = (a: Array, b: Array): Array =>
  ops.dotGeneral(a, b, [
    [[0], [0]],
    [[], []],
  ]);
/** Replaces the fields `upd` of state s where c holds. */
function replaceWhere<S extends Record<string, Array>>(c: Array, s: S, upd: Partial<S>): S {
  const out: Record<string, Array> = { ...s };
  for (const [k, v] of Object.entries(upd)) out[k] = pick(c, v as Array, s[k]);
  return out as S;
}

// ---------------------------------------------------------------- line search (strong Wolfe)
interface LineEnv {
  phiDphiG: (t: Array) => [Array, Array, Array];
  wolfeOne: (a: Array, phi: Array) => Array;
  wolfeTwo: (dphi: Array) => Array;
  S: (v: number) => Array;
  dtype: DType;
}
type ZoomState = Record<
  | "done"
  | "failed"
  | "j"
  | "aLo"
  | "phiLo"
  | "dphiLo"
  | "aHi"
  | "phiHi"
  | "dphiHi"
  | "aRec"
  | "phiRec"
  | "aStar"
  | "phiStar"
  | "dphiStar"
  | "gStar"
  | "nfev"
  | "ngev",
  Array
>;
/** The minimizer of the cubic through (a, fa) with slope fpa at a, (b, fb) and (c, fc). */
function cubicmin(E: LineEnv, a: Array, fa: Array, fpa: Array, b: Array, fb: Array, c: Array, fc: Array): Array {
  const db = ops.sub(b, a),
    dc = ops.sub(c, a);
  const denom = ops.mul(ops.square(ops.mul(db, dc)), ops.sub(db, dc));
  const d0 = ops.sub(ops.sub(fb, fa), ops.mul(fpa, db)),
    d1 = ops.sub(ops.sub(fc, fa), ops.mul(fpa, dc));
  const A = ops.div(ops.sub(ops.mul(ops.square(dc), d0), ops.mul(ops.square(db), d1)), denom);
  const Bc = ops.div(
    ops.add(ops.neg(ops.mul(ops.mul(ops.square(dc), dc), d0)), ops.mul(ops.mul(ops.square(db), db), d1)),
    denom,
  );
  const radical = ops.sub(ops.mul(Bc, Bc), ops.mul(E.S(3), ops.mul(A, fpa)));
  return ops.add(a, ops.div(ops.add(ops.neg(Bc), ops.sqrt(radical)), ops.mul(E.S(3), A)));
}
/** The minimizer of the quadratic through (a, fa) with slope fpa at a and (b, fb). */
function quadmin(E: LineEnv, a: Array, fa: Array, fpa: Array, b: Array, fb: Array): Array {
  const db = ops.sub(b, a);
  const Bq = ops.div(ops.sub(ops.sub(fb, fa), ops.mul(fpa, db)), ops.square(db));
  return ops.sub(a, ops.div(fpa, ops.mul(E.S(2), Bq)));
}
/** Zoom (Nocedal and Wright Alg. 3.6): cubic, then quadratic, then bisection steps inside [aLo, aHi]; skipped when passThrough. */
function zoom(
  E: LineEnv,
  lo: [Array, Array, Array],
  hi: [Array, Array, Array],
  g0: Array,
  passThrough: Array,
): ZoomState {
  const S = E.S;
  const init: ZoomState = {
    done: B(false),
    failed: B(false),
    j: I32(0),
    aLo: lo[0],
    phiLo: lo[1],
    dphiLo: lo[2],
    aHi: hi[0],
    phiHi: hi[1],
    dphiHi: hi[2],
    aRec: ops.div(ops.add(lo[0], hi[0]), S(2)),
    phiRec: ops.div(ops.add(lo[1], hi[1]), S(2)),
    aStar: S(1),
    phiStar: lo[1],
    dphiStar: lo[2],
    gStar: g0,
    nfev: I32(0),
    ngev: I32(0),
  };
  const threshold = finfo(E.dtype).bits < 64 ? 1e-5 : 1e-10;
  const body = (s0: ZoomState): ZoomState => {
    let s = s0;
    // the bracket's width: aHi may lie below aLo (after a hi-to-lo swap, and in the second zoom of lineSearch), so
    // unlike JAX's signed aHi - aLo (which declares such a zoom failed at once and stalls BFGS on Rosenbrock from
    // [-1.2, 1] after 8 steps) the test is on |aHi - aLo|, as Nocedal and Wright's interval length
    const dalpha = ops.abs(ops.sub(s.aHi, s.aLo));
    const a = ops.min(s.aHi, s.aLo),
      b = ops.max(s.aHi, s.aLo);
    const cchk = ops.mul(S(0.2), dalpha),
      qchk = ops.mul(S(0.1), dalpha);
    s = { ...s, failed: ops.or(s.failed, ops.le(dalpha, S(threshold))) };
    const aCubic = cubicmin(E, s.aLo, s.phiLo, s.dphiLo, s.aHi, s.phiHi, s.aRec, s.phiRec);
    const useCubic = ops.and(
      ops.and(ops.gt(s.j, I32(0)), ops.gt(aCubic, ops.add(a, cchk))),
      ops.lt(aCubic, ops.sub(b, cchk)),
    );
    const aQuad = quadmin(E, s.aLo, s.phiLo, s.dphiLo, s.aHi, s.phiHi);
    const useQuad = ops.and(
      ops.and(ops.not(useCubic), ops.gt(aQuad, ops.add(a, qchk))),
      ops.lt(aQuad, ops.sub(b, qchk)),
    );
    const useBis = ops.and(ops.not(useCubic), ops.not(useQuad));
    let aj = pick(useCubic, aCubic, s.aRec);
    aj = pick(useQuad, aQuad, aj);
    aj = pick(useBis, ops.div(ops.add(s.aLo, s.aHi), S(2)), aj);
    const [phiJ, dphiJ, gJ] = E.phiDphiG(aj);
    s = { ...s, nfev: ops.add(s.nfev, I32(1)), ngev: ops.add(s.ngev, I32(1)) };
    const hiToJ = ops.or(E.wolfeOne(aj, phiJ), ops.ge(phiJ, s.phiLo));
    const starToJ = ops.and(E.wolfeTwo(dphiJ), ops.not(hiToJ));
    const hiToLo = ops.and(
      ops.and(ops.ge(ops.mul(dphiJ, ops.sub(s.aHi, s.aLo)), S(0)), ops.not(hiToJ)),
      ops.not(starToJ),
    );
    const loToJ = ops.and(ops.not(hiToJ), ops.not(starToJ));
    s = replaceWhere(hiToJ, s, { aHi: aj, phiHi: phiJ, dphiHi: dphiJ, aRec: s.aHi, phiRec: s.phiHi });
    s = { ...s, done: ops.or(starToJ, s.done) };
    s = replaceWhere(starToJ, s, { aStar: aj, phiStar: phiJ, dphiStar: dphiJ, gStar: gJ });
    s = replaceWhere(hiToLo, s, { aHi: s.aLo, phiHi: s.phiLo, dphiHi: s.dphiLo, aRec: s.aHi, phiRec: s.phiHi });
    s = replaceWhere(ops.and(loToJ, ops.not(hiToLo)), s, { aRec: s.aLo, phiRec: s.phiLo });
    s = replaceWhere(loToJ, s, { aLo: aj, phiLo: phiJ, dphiLo: dphiJ });
    const j = ops.add(s.j, I32(1));
    // a higher cap than scipy's 10, as JAX (its float32 zooms take longer)
    return { ...s, j, failed: ops.or(s.failed, ops.ge(j, I32(30))) };
  };
  return whileLoop(
    (s: ZoomState) => ops.and(ops.and(ops.not(s.done), ops.not(passThrough)), ops.not(s.failed)),
    body,
    init,
  );
}
/** The line search's results (JAX's _LineSearchResults fields that BFGS reads). */
interface LineSearchResults {
  failed: Array;
  nfev: Array;
  ngev: Array;
  aK: Array;
  fK: Array;
  gK: Array;
  status: Array;
}
/**
 * Inexact line search for a step along pk satisfying the strong Wolfe conditions (c1, c2), Nocedal and Wright
 * Alg. 3.5: the trial step doubles until a bracket is found, then zoom. As JAX (and not scipy) it starts at i = 1,
 * with the first trial min(1, 1.01 * 2 (f - f_prev) / slope).
 */
function lineSearch(
  f: Fn,
  xk: Array,
  pk: Array,
  oldFval: Array,
  oldOldFval: Array,
  gfk: Array,
  maxiter: number,
  c1 = 1e-4,
  c2 = 0.9,
): LineSearchResults {
  const dtype = xk.dtype;
  const S = (v: number): Array => ops.full([], v, dtype);
  const vg = valueAndGrad(f);
  const phiDphiG = (t: Array): [Array, Array, Array] => {
    const [phi, g] = vg(ops.add(xk, ops.mul(ops.broadcastInDim(t, pk.shape, []), pk))) as [Array, Array];
    return [ops.convert(phi, dtype), dot(g, pk), g];
  };
  const phi0 = oldFval,
    dphi0 = dot(gfk, pk);
  const cand = ops.div(ops.mul(S(1.01 * 2), ops.sub(phi0, oldOldFval)), dphi0);
  const start = pick(ops.gt(cand, S(1)), S(1), cand);
  const E: LineEnv = {
    phiDphiG,
    wolfeOne: (a, phi) => ops.gt(phi, ops.add(phi0, ops.mul(S(c1), ops.mul(a, dphi0)))),
    wolfeTwo: (dphi) => ops.le(ops.abs(dphi), ops.mul(S(-c2), dphi0)),
    S,
    dtype,
  };
  type LS = Record<
    "done" | "failed" | "i" | "a1" | "phi1" | "dphi1" | "nfev" | "ngev" | "aStar" | "phiStar" | "dphiStar" | "gStar",
    Array
  >;
  const init: LS = {
    done: B(false),
    failed: B(false),
    i: I32(1),
    a1: S(0),
    phi1: phi0,
    dphi1: dphi0,
    nfev: I32(0),
    ngev: I32(0),
    aStar: S(0),
    phiStar: phi0,
    dphiStar: dphi0,
    gStar: gfk,
  };
  const body = (s0: LS): LS => {
    let s = s0;
    const ai = pick(ops.eq(s.i, I32(1)), start, ops.mul(s.a1, S(2)));
    const [phiI, dphiI, gI] = phiDphiG(ai);
    s = { ...s, nfev: ops.add(s.nfev, I32(1)), ngev: ops.add(s.ngev, I32(1)) };
    const toZoom1 = ops.or(E.wolfeOne(ai, phiI), ops.and(ops.ge(phiI, s.phi1), ops.gt(s.i, I32(1))));
    const toI = ops.and(E.wolfeTwo(dphiI), ops.not(toZoom1));
    const toZoom2 = ops.and(ops.and(ops.ge(dphiI, S(0)), ops.not(toZoom1)), ops.not(toI));
    const z1 = zoom(E, [s.a1, s.phi1, s.dphi1], [ai, phiI, dphiI], gfk, ops.not(toZoom1));
    const z2 = zoom(E, [ai, phiI, dphiI], [s.a1, s.phi1, s.dphi1], gfk, ops.not(toZoom2));
    s = {
      ...s,
      nfev: ops.add(ops.add(s.nfev, z1.nfev), z2.nfev),
      ngev: ops.add(ops.add(s.ngev, z1.ngev), z2.ngev),
    };
    const star = (z: ZoomState) => ({ aStar: z.aStar, phiStar: z.phiStar, dphiStar: z.dphiStar, gStar: z.gStar });
    s = { ...s, done: ops.or(toZoom1, s.done), failed: ops.or(ops.and(toZoom1, z1.failed), s.failed) };
    s = replaceWhere(toZoom1, s, star(z1));
    s = { ...s, done: ops.or(toI, s.done) };
    s = replaceWhere(toI, s, { aStar: ai, phiStar: phiI, dphiStar: dphiI, gStar: gI });
    s = { ...s, done: ops.or(toZoom2, s.done), failed: ops.or(ops.and(toZoom2, z2.failed), s.failed) };
    s = replaceWhere(toZoom2, s, star(z2));
    return { ...s, i: ops.add(s.i, I32(1)), a1: ai, phi1: phiI, dphi1: dphiI };
  };
  const s = whileLoop(
    (st: LS) => ops.and(ops.and(ops.not(st.done), ops.le(st.i, I32(maxiter))), ops.not(st.failed)),
    body,
    init,
  );
  const status = pick(s.failed, I32(1), pick(ops.gt(s.i, I32(maxiter)), I32(3), I32(0)));
  // a floor on tiny steps below 64-bit precision, where they would stall the optimizer (as JAX)
  let aK = s.aStar;
  if (finfo(dtype).bits !== 64) aK = pick(ops.lt(ops.abs(aK), S(1e-8)), ops.mul(ops.sign(aK), S(1e-8)), aK);
  return {
    failed: ops.or(s.failed, ops.not(s.done)),
    nfev: s.nfev,
    ngev: s.ngev,
    aK,
    fK: s.phiStar,
    gK: s.gStar,
    status,
  };
}

// ---------------------------------------------------------------- BFGS
/** The BFGS options (JAX's minimize_bfgs keywords). */
export interface BFGSOptions {
  /** iteration cap (default 200 * x0.size) */
  maxiter?: number | null;
  /** the gradient norm's order for the convergence test (default Infinity) */
  norm?: number;
  /** converged when norm(gradient) < gtol (default 1e-5) */
  gtol?: number;
  /** the line search's iteration cap (default 10) */
  lineSearchMaxiter?: number;
}
const vnorm = (g: Array, ord: number): Array => {
  const a = ops.abs(g);
  if (ord === Infinity) return ops.reduceMax(a, [0]);
  if (ord === -Infinity) return ops.reduceMin(a, [0]);
  if (ord === 2) return ops.sqrt(ops.reduceSum(ops.mul(a, a), [0]));
  if (ord === 1) return ops.reduceSum(a, [0]);
  const p = ops.full([], ord, g.dtype);
  return ops.pow(ops.reduceSum(ops.pow(a, p), [0]), ops.div(ops.full([], 1, g.dtype), p));
};
function minimizeBfgs(f: Fn, x0: Array, o: BFGSOptions): OptimizeResults {
  const d = x0.shape[0];
  const maxiter = o.maxiter ?? d * 200;
  const ord = o.norm ?? Infinity,
    gtol = o.gtol ?? 1e-5,
    lsMax = o.lineSearchMaxiter ?? 10;
  const dtype = x0.dtype;
  const S = (v: number): Array => ops.full([], v, dtype);
  const eye = ops.convert(ops.eq(ops.iota("int32", [d, d], 0), ops.iota("int32", [d, d], 1)), dtype);
  const [f0, g0] = valueAndGrad(f)(x0) as [Array, Array];
  const fv0 = ops.convert(f0, dtype);
  type St = Record<
    "converged" | "failed" | "k" | "nfev" | "ngev" | "x" | "f" | "g" | "H" | "oldOld" | "lsStatus",
    Array
  >;
  const init: St = {
    converged: ops.lt(vnorm(g0, ord), S(gtol)),
    failed: B(false),
    k: I32(0),
    nfev: I32(1),
    ngev: I32(1),
    x: x0,
    f: fv0,
    g: g0,
    H: eye,
    oldOld: ops.add(fv0, ops.div(vnorm(g0, 2), S(2))),
    lsStatus: I32(0),
  };
  const outer = (a: Array, b: Array): Array =>
    ops.mul(ops.broadcastInDim(a, [d, d], [0]), ops.broadcastInDim(b, [d, d], [1]));
  const mm = (a: Array, b: Array): Array =>
    ops.dotGeneral(a, b, [
      [[1], [0]],
      [[], []],
    ]);
  const body = (s: St): St => {
    const p = ops.neg(mm(s.H, ops.reshape(s.g, [d, 1])));
    const pk = ops.reshape(p, [d]);
    const ls = lineSearch(f, s.x, pk, s.f, s.oldOld, s.g, lsMax);
    const sk = ops.mul(ops.broadcastInDim(ls.aK, [d], []), pk);
    const x1 = ops.add(s.x, sk);
    const yk = ops.sub(ls.gK, s.g);
    const rho = ops.div(S(1), dot(yk, sk));
    // H+ = (I - rho s y^T) H (I - rho y s^T) + rho s s^T, kept when 1 / (y . s) is not finite
    const w = ops.sub(eye, ops.mul(ops.broadcastInDim(rho, [d, d], []), outer(sk, yk)));
    const H1 = ops.add(
      mm(mm(w, s.H), ops.transpose(w, [1, 0])),
      ops.mul(ops.broadcastInDim(rho, [d, d], []), outer(sk, sk)),
    );
    return {
      converged: ops.lt(vnorm(ls.gK, ord), S(gtol)),
      failed: ls.failed,
      k: ops.add(s.k, I32(1)),
      nfev: ops.add(s.nfev, ls.nfev),
      ngev: ops.add(s.ngev, ls.ngev),
      x: x1,
      f: ls.fK,
      g: ls.gK,
      H: pick(ops.isFinite(rho), H1, s.H),
      oldOld: s.f,
      lsStatus: ls.status,
    };
  };
  const s = whileLoop(
    (st: St) => ops.and(ops.and(ops.not(st.converged), ops.not(st.failed)), ops.lt(st.k, I32(maxiter))),
    body,
    init,
  );
  const status = pick(
    s.converged,
    I32(0),
    pick(ops.eq(s.k, I32(maxiter)), I32(1), pick(s.failed, ops.add(I32(2), s.lsStatus), I32(-1))),
  );
  return new OptimizeResults(s.x, ops.and(s.converged, ops.not(s.failed)), status, s.f, s.g, s.H, s.nfev, s.ngev, s.k);
}

/** minimize's keyword arguments. */
export interface MinimizeOptions {
  /** "BFGS" (case-insensitive), the only method */
  method: string;
  /** accepted and ignored, as JAX's minimize (use options.gtol) */
  tol?: number | null;
  /** the method's options */
  options?: BFGSOptions | null;
}
/**
 * jax.scipy.optimize.minimize(fun, x0, args=[], {method: "BFGS", options}): minimizes the scalar fun(x, ...args) over a
 * 1-D x0 by BFGS; returns OptimizeResults. Traceable: it runs under jit and vmap (the loop is a lax.whileLoop).
 */
export function minimize(
  fun: (x: Array, ...args: never[]) => Array,
  x0: AL,
  args: readonly unknown[] = [],
  opts?: MinimizeOptions,
): OptimizeResults {
  const fn = "scipy.optimize.minimize";
  if (arguments.length > 4)
    throw new TypeError(`${fn}: takes (fun, x0, args, { method, tol, options }), got ${arguments.length} arguments`);
  if (typeof fun !== "function") throw new TypeError(`${fn}: fun must be a function`);
  if (!globalThis.Array.isArray(args))
    throw new TypeError(`${fn}: args must be an array (a tuple), got ${typeof args}`);
  if (opts === undefined || opts === null || typeof opts.method !== "string")
    throw new TypeError(`${fn}: a method is required, e.g. minimize(fun, x0, [], { method: "BFGS" })`);
  for (const k of Object.keys(opts))
    if (!["method", "tol", "options"].includes(k))
      throw new TypeError(`${fn}: unexpected option "${k}"; expected method, tol, options`);
  const o = opts.options ?? {};
  for (const k of Object.keys(o))
    if (!["maxiter", "norm", "gtol", "lineSearchMaxiter"].includes(k))
      throw new TypeError(`${fn}: unexpected BFGS option "${k}"; expected maxiter, norm, gtol, lineSearchMaxiter`);
  let x = promoteArgsInexact(fn, x0)[0];
  x = ops.convert(x, x.dtype);
  if (x.ndim !== 1) throw new Error(`${fn}: x0 must be a 1-D array, got shape ${shapeStr(x.shape)}`);
  const f: Fn = (v) => (fun as (x: Array, ...a: unknown[]) => Array)(v, ...args);
  if (opts.method.toLowerCase() === "bfgs") return minimizeBfgs(f, x, o);
  throw new Error(`${fn}: method ${JSON.stringify(opts.method)} not recognized (only "BFGS")`);
}
