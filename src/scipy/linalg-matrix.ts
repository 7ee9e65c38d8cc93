/** @file jax.scipy.linalg matrix functions and constructors: expm (Pade + scaling and squaring), polar (via svd), toeplitz, hilbert, blockDiag. */
import type { Array, ArrayLike, NestedValue } from "../core/array.js";
import { checkArity } from "../core/check-args.js";
import { defaultFloatDType, isComplex, isInexact } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import * as lax from "../lax/linalg.js";
import { promoteArgsInexact, promoteDtypes } from "../numpy/core.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import * as jla from "../numpy/linalg.js";
import { shapeStr } from "../numpy/struct-util.js";
import { jvp } from "../transforms/api.js";

type AL = ArrayLike | NestedValue;

/** Operands promoted to one dtype without broadcasting (ints and bools to the default float when inexact). */
export function promoteNoBroadcast(fn: string, inexactOnly: boolean, ...xs: AL[]): Array[] {
  const ys = promoteDtypes(fn, xs);
  return inexactOnly && ys.length && !isInexact(ys[0].dtype)
    ? ys.map((y) => ops.convert(y, defaultFloatDType(), y.weakType))
    : ys;
}
/** One inexact operand (float16 / bfloat16 widen to float32, as the decompositions need). */
export function inexact(fn: string, a: AL): Array {
  let x = promoteArgsInexact(fn, a)[0];
  if (x.dtype === "float16" || x.dtype === "bfloat16") x = ops.convert(x, "float32");
  return x.weakType ? ops.convert(x, x.dtype) : x;
}
/** A (batch of) square matrix (exactly 2-D when not batched), named in the error with its shape. */
export function squareArg(fn: string, a: AL, batched = true): Array {
  const x = inexact(fn, a);
  if (x.ndim < 2 || (!batched && x.ndim !== 2) || x.shape[x.ndim - 1] !== x.shape[x.ndim - 2])
    throw new Error(
      `${fn}: expected a ${batched ? "(batch of) " : ""}square matrix (${batched ? "at least 2-D" : "2-D"}, last two dimensions equal), got shape ${shapeStr(x.shape)}`,
    );
  return x;
}

// ---------------------------------------------------------------- expm
// Pade approximant coefficients b_0..b_m of exp for orders 3, 5, 7, 9, 13 and the 1-norm thresholds below which each
// order is accurate to unit roundoff: Higham, "The scaling and squaring method for the matrix exponential revisited"
// (SIAM J. Matrix Anal. Appl. 26(4), 2005), Table 2.3 / Algorithm 2.3, which scipy and JAX both follow.
const PADE: Record<number, number[]> = {
  3: [120, 60, 12, 1],
  5: [30240, 15120, 3360, 420, 30, 1],
  7: [17297280, 8648640, 1995840, 277200, 25200, 1512, 56, 1],
  9: [17643225600, 8821612800, 2075673600, 302702400, 30270240, 2162160, 110880, 3960, 90, 1],
  13: [
    64764752532480000, 32382376266240000, 7771770303897600, 1187353796428800, 129060195264000, 10559470521600,
    670442572800, 33522128640, 1323241920, 40840800, 960960, 16380, 182, 1,
  ],
};
const THETA64 = {
  orders: [3, 5, 7, 9, 13],
  conds: [0.01495585217958292, 0.253939833006323, 0.9504178996162932, 2.097847961257068],
  maxnorm: 5.371920351148152,
};
const THETA32 = { orders: [3, 5, 7], conds: [0.4258730016922831, 1.880152677804762], maxnorm: 3.92572478313866 };

/** [U, V] of the order-m Pade approximant exp(A) ~ (V - U)^-1 (V + U): U holds the odd powers, V the even. */
function padeUV(A: Array, m: number): [Array, Array] {
  const b = PADE[m];
  const I = ops.broadcastInDim(eyeOf(A), A.shape, [A.ndim - 2, A.ndim - 1]);
  const s = (k: number, x: Array): Array => ops.mul(x, ops.full([], k, A.dtype));
  const mm = (x: Array, y: Array): Array => jla.matmul(x, y);
  const A2 = mm(A, A);
  if (m !== 13) {
    // powers A^0, A^2, A^4, ... up to A^(m-1)
    const pw: Array[] = [I, A2];
    while (pw.length < (m + 1) / 2) pw.push(mm(pw[pw.length - 1], A2));
    let uo = s(b[1], pw[0]),
      v = s(b[0], pw[0]);
    for (let k = 1; k < pw.length; k++) {
      uo = ops.add(uo, s(b[2 * k + 1], pw[k]));
      v = ops.add(v, s(b[2 * k], pw[k]));
    }
    return [mm(A, uo), v];
  }
  // order 13 as Higham's (10.4.3): A^6 factored out of the high terms so that only A2, A4, A6 are formed
  const A4 = mm(A2, A2),
    A6 = mm(A4, A2);
  const sum = (...ts: Array[]): Array => ts.reduce((p, q) => ops.add(p, q));
  const u1 = mm(A6, sum(s(b[13], A6), s(b[11], A4), s(b[9], A2)));
  const U = mm(A, sum(u1, s(b[7], A6), s(b[5], A4), s(b[3], A2), s(b[1], I)));
  const v1 = mm(A6, sum(s(b[12], A6), s(b[10], A4), s(b[8], A2)));
  const V = sum(v1, s(b[6], A6), s(b[4], A4), s(b[2], A2), s(b[0], I));
  return [U, V];
}
/** The n x n identity for a [..., n, n] operand. */
function eyeOf(A: Array): Array {
  const n = A.shape[A.ndim - 1];
  return ops.convert(ops.eq(ops.iota("int32", [n, n], 0), ops.iota("int32", [n, n], 1)), A.dtype);
}
/** Broadcasts a per-matrix value [...] over the matrix axes [..., n, n]. */
const perMatrix = (v: Array, shape: readonly number[]): Array => ops.broadcastInDim(v, shape, [...v.shape.keys()]);

/**
 * scipy.linalg.expm(A, upper_triangular=false, max_squarings=16): the matrix exponential by scaling and squaring
 * (Higham 2005, as JAX): A is scaled by 2^-s so its 1-norm is below the largest Pade order's threshold, the order
 * (3..13 in float64, 3..7 in float32) is picked per matrix by the 1-norm, and the result is squared s times (at most
 * maxSquarings). All branches are evaluated and selected elementwise, so it jits, vmaps and differentiates (autodiff
 * through the matmuls and the LU solve).
 */
export function expm(
  A: AL,
  ...args: Args<[upperTriangular: boolean, maxSquarings: number], { upperTriangular?: boolean; maxSquarings?: number }>
): Array {
  const fn = "scipy.linalg.expm";
  const o = parseArgs<{ upperTriangular: boolean; maxSquarings: number }>(fn, args, [
    "upperTriangular",
    "maxSquarings",
  ]);
  const maxSq = o.maxSquarings ?? 16;
  if (!Number.isInteger(maxSq) || maxSq < 0)
    throw new Error(`${fn}: maxSquarings must be a static non-negative integer, got ${maxSq}`);
  let a = promoteArgsInexact(fn, A)[0];
  if (a.dtype === "float16" || a.dtype === "bfloat16") a = ops.convert(a, "float32");
  if (a.weakType) a = ops.convert(a, a.dtype);
  if (a.ndim < 2 || a.shape[a.ndim - 1] !== a.shape[a.ndim - 2])
    throw new Error(`${fn}: expected a (batch of) square matrix, got shape ${shapeStr(a.shape)}`);
  const wide = a.dtype === "float64" || a.dtype === "complex128";
  const th = wide ? THETA64 : THETA32;
  const rdt = wide ? "float64" : "float32";
  const l1 = ops.reduceMax(ops.reduceSum(ops.abs(a), [a.ndim - 2]), [a.ndim - 2]);
  const nsq = ops.max(
    ops.full([], 0, rdt),
    ops.floor(ops.div(ops.log(ops.div(l1, ops.full([], th.maxnorm, rdt))), ops.full([], Math.LN2, rdt))),
  );
  const scale = ops.exp2(ops.neg(nsq));
  const As = ops.mul(a, perMatrix(ops.convert(scale, a.dtype), a.shape));
  // index of the Pade order: the number of thresholds <= ||A||_1 (jnp.digitize), per matrix
  let idx = ops.full(l1.shape, 0, "int32");
  for (const cnd of th.conds) idx = ops.add(idx, ops.convert(ops.ge(l1, ops.full([], cnd, rdt)), "int32"));
  let U: Array | null = null,
    V: Array | null = null;
  th.orders.forEach((m, k) => {
    const [u, v] = padeUV(As, m);
    if (U === null || V === null) {
      U = u;
      V = v;
      return;
    }
    const pick = perMatrix(ops.eq(idx, ops.full([], k, "int32")), a.shape);
    U = ops.select(pick, u, U);
    V = ops.select(pick, v, V);
  });
  const P = ops.add(U!, V!),
    Q = ops.sub(V!, U!);
  let R = jla.solve(Q, P);
  for (let i = 0; i < maxSq; i++) {
    const go = perMatrix(ops.lt(ops.full([], i, rdt), nsq), a.shape);
    R = ops.select(go, jla.matmul(R, R), R);
  }
  return R;
}

/**
 * scipy.linalg.expm_frechet(A, E, method=null, compute_expm=true): the Frechet derivative of expm at A in direction E,
 * `[expm(A), L(A, E)]` (or L alone when computeExpm is false). Computed as the forward-mode derivative (jvp) of expm's
 * scaling-and-squaring evaluation, which is the Frechet derivative of that approximant.
 */
export function expmFrechet(
  A: AL,
  E: AL,
  ...args: Args<[method: string | null, computeExpm: boolean], { method?: string | null; computeExpm?: boolean }>
): [Array, Array] | Array {
  const fn = "scipy.linalg.expmFrechet";
  const o = parseArgs<{ method: string | null; computeExpm: boolean }>(fn, args, ["method", "computeExpm"]);
  if (o.method !== undefined && o.method !== null && o.method !== "SPS" && o.method !== "blockEnlarge")
    throw new Error(`${fn}: unknown method ${JSON.stringify(o.method)} (expected "SPS" or "blockEnlarge")`);
  let [a, e] = promoteNoBroadcast(fn, true, A, E);
  if (a.dtype === "float16" || a.dtype === "bfloat16") [a, e] = [ops.convert(a, "float32"), ops.convert(e, "float32")];
  if (
    a.ndim !== 2 ||
    a.shape[0] !== a.shape[1] ||
    e.ndim !== 2 ||
    e.shape[0] !== e.shape[1] ||
    e.shape[0] !== a.shape[0]
  )
    throw new Error(
      `${fn}: expected A and E to be square matrices of the same shape, got ${shapeStr(a.shape)} and ${shapeStr(e.shape)}`,
    );
  const [ex, l] = jvp((x: Array) => expm(x), [a], [e]);
  return o.computeExpm === false ? l : [ex, l];
}

// ---------------------------------------------------------------- polar
/**
 * scipy.linalg.polar(a, side="right", method): `[u, p]` with a = u p (right) or a = p u (left), u unitary and p
 * Hermitian positive semi-definite. Both methods ("qdwh", JAX's default, and "svd") are computed from the SVD here.
 */
export function polar(
  a: AL,
  ...args: Args<
    [side: "right" | "left", method: "qdwh" | "svd"],
    { side?: "right" | "left"; method?: "qdwh" | "svd"; eps?: number | null; maxIterations?: number | null }
  >
): [Array, Array] {
  const fn = "scipy.linalg.polar";
  const o = parseArgs<{ side: string; method: string }>(fn, args, ["side", "method"], ["eps", "maxIterations"]);
  const side = o.side ?? "right",
    method = o.method ?? "qdwh";
  if (side !== "right" && side !== "left")
    throw new Error(`${fn}: side must be "right" or "left", got ${JSON.stringify(side)}`);
  if (method !== "qdwh" && method !== "svd")
    throw new Error(`${fn}: method must be "qdwh" or "svd", got ${JSON.stringify(method)}`);
  let x = promoteArgsInexact(fn, a)[0];
  if (x.weakType || x.dtype === "float16" || x.dtype === "bfloat16")
    x = ops.convert(x, x.dtype === "float16" || x.dtype === "bfloat16" ? "float32" : x.dtype);
  if (x.ndim !== 2) throw new Error(`${fn}: the input must be a 2-D matrix, got shape ${shapeStr(x.shape)}`);
  const [u, s, vh] = lax.svd(x, { fullMatrices: false, computeUv: true });
  const ct = (m: Array): Array => {
    const t = ops.transpose(m, [1, 0]);
    return isComplex(m.dtype) ? ops.conj(t) : t;
  };
  const unitary = jla.matmul(u, vh);
  const sc = ops.convert(s, x.dtype);
  const p =
    side === "right"
      ? jla.matmul(ct(vh), ops.mul(ops.broadcastInDim(sc, vh.shape, [0]), vh))
      : jla.matmul(ops.mul(u, ops.broadcastInDim(sc, u.shape, [1])), ct(u));
  return [unitary, p];
}

// ---------------------------------------------------------------- constructors
/**
 * scipy.linalg.toeplitz(c, r=conj(c)): t[..., i, j] = c[..., i - j] for i >= j, r[..., j - i] above (r[0] is ignored).
 * c [..., m] and r [..., n] may carry broadcastable batch dimensions, as in JAX.
 */
export function toeplitz(c: AL, ...args: Args<[r: AL | null], { r?: AL | null }>): Array {
  const fn = "scipy.linalg.toeplitz";
  const o = parseArgs<{ r: AL | null }>(fn, args, ["r"]);
  let cc: Array, rr: Array;
  if (o.r === undefined || o.r === null) {
    cc = promoteNoBroadcast(fn, false, c)[0];
    rr = isComplex(cc.dtype) ? ops.conj(cc) : cc;
  } else [cc, rr] = promoteNoBroadcast(fn, false, c, o.r);
  if (cc.ndim === 0) cc = ops.reshape(cc, [1]);
  if (rr.ndim === 0) rr = ops.reshape(rr, [1]);
  const m = cc.shape[cc.ndim - 1],
    n = rr.shape[rr.ndim - 1];
  if (m === 0 || n === 0)
    throw new Error(`${fn}: c and r must be non-empty, got shapes ${shapeStr(cc.shape)}, ${shapeStr(rr.shape)}`);
  const bc = cc.shape.slice(0, -1),
    br = rr.shape.slice(0, -1);
  const nd = Math.max(bc.length, br.length);
  const batch = globalThis.Array.from({ length: nd }, (_, i) => {
    const u = bc[bc.length - nd + i] ?? 1,
      v = br[br.length - nd + i] ?? 1;
    if (u !== v && u !== 1 && v !== 1)
      throw new Error(
        `${fn}: batch dimensions of c ${shapeStr(cc.shape)} and r ${shapeStr(rr.shape)} do not broadcast`,
      );
    return Math.max(u, v);
  });
  const to = (x: Array, len: number): Array =>
    ops.broadcastInDim(
      x,
      [...batch, len],
      [...x.shape.keys()].map((i) => i + nd + 1 - x.ndim),
    );
  const vals = ops.concatenate(
    [ops.rev(to(cc, m), [nd]), ops.sliceInDim(to(rr, n), 1, n, 1, nd)].map((v) => ops.convert(v, cc.dtype, false)),
    nd,
  );
  // t[i, j] = vals[m - 1 - i + j]: a one-hot selection matrix [m, n, m + n - 1], contracted with vals
  const L = m + n - 1;
  const sel = ops.convert(
    ops.eq(
      ops.add(
        ops.sub(ops.full([m, n, L], m - 1, "int32"), ops.iota("int32", [m, n, L], 0)),
        ops.iota("int32", [m, n, L], 1),
      ),
      ops.iota("int32", [m, n, L], 2),
    ),
    vals.dtype,
  );
  const out = ops.dotGeneral(vals, sel, [
    [[nd], [2]],
    [[], []],
  ]);
  return out;
}
/** scipy.linalg.hilbert(n): h[i, j] = 1 / (i + j + 1), in the default float dtype. */
export function hilbert(n: number): Array {
  checkArity("scipy.linalg.hilbert", arguments, 1, "scipy.linalg.hilbert(n)");
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`scipy.linalg.hilbert: n must be a static non-negative integer, got ${n}`);
  const dt = defaultFloatDType();
  const ij = ops.add(ops.iota(dt, [n, n], 0), ops.iota(dt, [n, n], 1));
  return ops.div(ops.full([n, n], 1, dt), ops.add(ij, ops.full([n, n], 1, dt)));
}
/** scipy.linalg.block_diag(...arrs): the arrays (0-D as [1, 1], 1-D as one row) placed along the diagonal, zeros elsewhere. */
export function blockDiag(...arrs: AL[]): Array {
  const fn = "scipy.linalg.blockDiag";
  if (arrs.length === 0) return ops.full([1, 0], 0, defaultFloatDType());
  const xs = promoteNoBroadcast(fn, false, ...arrs).map((x, i) => {
    if (x.ndim > 2)
      throw new Error(`${fn}: arguments must have at most 2 dimensions, argument ${i} has shape ${shapeStr(x.shape)}`);
    const y = ops.convert(x, x.dtype, false);
    return x.ndim === 2 ? y : ops.reshape(y, [1, x.size]);
  });
  const cols = xs.reduce((s, x) => s + x.shape[1], 0);
  let off = 0;
  const rows = xs.map((x) => {
    const w = x.shape[1];
    const r = ops.pad(x, ops.full([], 0, x.dtype), [
      [0, 0, 0],
      [off, cols - off - w, 0],
    ]);
    off += w;
    return r;
  });
  return ops.concatenate(rows, 0);
}
