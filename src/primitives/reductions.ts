/** @file Reductions (sum/max/min/prod/and/or/xor, argmax/argmin), cumulative ops and dot_general. */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { wrapInt } from "../core/convert.js";
import { type DType, isBigInt, isBool, isFloat, isInteger, isUnsigned } from "../core/dtype.js";
import {
  type AxisData,
  type BDim,
  type MaybeZero,
  type Params,
  Primitive,
  UndefinedPrimal,
  Zero,
} from "../core/primitive.js";
import { prod, shapeStr, stridesOf } from "../core/shape.js";
import { bigs, fromBigs, fromNums, nums } from "./ref-util.js";
import * as ops from "./bind-ops.js";
import * as LR from "../compiler/lower-reduce.js";

type RP = { axes: number[]; out_sharding: null };
const reducedShape = (shape: readonly number[], axes: readonly number[]) => shape.filter((_, i) => !axes.includes(i));
function checkAxes(name: string, x: ShapedArray, axes: readonly number[]): void {
  for (const a of axes)
    if (!Number.isInteger(a) || a < 0 || a >= x.ndim)
      throw new TypeError(`${name}: axis ${a} out of range for ${x.str()}`);
  if (new Set(axes).size !== axes.length) throw new TypeError(`${name}: repeated axes ${shapeStr(axes)}`);
}
/** Maps each input flat index to its output flat index for a reduction over `axes`. */
function outIndexMap(shape: readonly number[], axes: readonly number[]): Int32Array {
  const n = prod(shape);
  const outShape = reducedShape(shape, axes);
  const os = stridesOf(outShape);
  const map = new Int32Array(n);
  const idx = new globalThis.Array<number>(shape.length).fill(0);
  const keep = shape.map((_, i) => !axes.includes(i));
  for (let k = 0; k < n; k++) {
    let o = 0,
      j = 0;
    for (let d = 0; d < shape.length; d++) if (keep[d]) o += idx[d] * os[j++];
    map[k] = o;
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return map;
}

/** Neumaier's compensated step: returns s + v and adds the rounding error of that addition to c[i]. */
function neumaier(s: number, v: number, c: Float64Array, i: number): number {
  const t = s + v;
  c[i] += Math.abs(s) >= Math.abs(v) ? s - t + v : v - t + s;
  return t;
}
/** A compensated sum's value: s corrected by c (s itself once it is infinite or NaN, or when c is 0: keeps -0). */
const compensated = (s: number, c: number): number => (c === 0 || !Number.isFinite(s) ? s : s + c);

/** Batching for reductions: shift axes past the batch dim; the output keeps the batch at the same place. */
function vmapReduce(p: Primitive) {
  return (_a: AxisData, [x]: Array[], [d]: BDim[], params: Params): [Array[], BDim[]] => {
    const axes = (params.axes as number[]).map((a) => (a >= d! ? a + 1 : a));
    const outD = d! - axes.filter((a) => a < d!).length;
    return [ops.bindN(p, [x], { ...params, axes }), [outD]];
  };
}

function defReduce(
  name: string,
  kinds: (d: DType) => boolean,
  init: (d: DType) => number,
  f: (a: number, b: number, d: DType) => number,
  fb: (a: bigint, b: bigint) => bigint,
  bigInit: (d: DType) => bigint,
): Primitive<RP> {
  const kind = name.slice("reduce_".length) as LR.ReduceKind;
  const p: Primitive<RP> = new Primitive<RP>(
    name,
    {
      lower: (ctx, [x], { axes }, [a], [o]) => [LR.reduce(ctx, kind, x, a, axes, o)],
      abstractEval([x], { axes }) {
        if (!kinds(x.dtype)) throw new TypeError(`${name}: unsupported dtype ${x.dtype}`);
        checkAxes(name, x, axes);
        return [new ShapedArray(reducedShape(x.shape, axes), x.dtype, x.weakType)];
      },
      impl([x], { axes }, [out]) {
        const map = outIndexMap(x.shape, axes);
        if (isBigInt(x.dtype)) {
          const r = new globalThis.Array<bigint>(out.size).fill(bigInit(x.dtype));
          const xb = bigs(x);
          for (let k = 0; k < map.length; k++) r[map[k]] = fb(r[map[k]], xb[k]);
          return [fromBigs(out, r)];
        }
        const r = new Float64Array(out.size).fill(init(x.dtype));
        const xs = nums(x);
        if (kind === "sum" && isFloat(x.dtype)) {
          // compensated: the float64 sum of float64 inputs is accurate to O(1) ulp, not O(n)
          const c = new Float64Array(out.size);
          for (let k = 0; k < map.length; k++) {
            const o = map[k];
            r[o] = neumaier(r[o], xs[k], c, o);
          }
          for (let o = 0; o < r.length; o++) r[o] = compensated(r[o], c[o]);
          return [fromNums(out, r)];
        }
        for (let k = 0; k < map.length; k++) r[map[k]] = f(r[map[k]], xs[k], x.dtype);
        return [fromNums(out, r)];
      },
    },
    { exactOnScalars: true },
  ); // on one element a reduction is its operand (or the identity)
  p.rules.vmap = vmapReduce(p as unknown as Primitive);
  return p;
}
const anyNum = (d: DType) => d !== "bool" || true;
const minOf = (d: DType) =>
  isFloat(d)
    ? -Infinity
    : isUnsigned(d) || isBool(d)
      ? 0
      : -(2 ** ({ int8: 7, int16: 15, int32: 31 } as Record<string, number>)[d]);
const maxOf = (d: DType) =>
  isFloat(d)
    ? Infinity
    : isBool(d)
      ? 1
      : (
          { int8: 127, uint8: 255, int16: 32767, uint16: 65535, int32: 2147483647, uint32: 4294967295 } as Record<
            string,
            number
          >
        )[d];
const nanMax = (a: number, b: number) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : a > b ? a : b);
const nanMin = (a: number, b: number) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : a < b ? a : b);

export const reduceSumP = defReduce(
  "reduce_sum",
  (d) => d !== "bool",
  () => 0,
  (a, b, d) => (isInteger(d) ? wrapInt(a + b, d) : a + b),
  (a, b) => a + b,
  () => 0n,
);
export const reduceMaxP = defReduce(
  "reduce_max",
  anyNum,
  minOf,
  nanMax,
  (a, b) => (a > b ? a : b),
  (d) => (d === "int64" ? -(2n ** 63n) : 0n),
);
export const reduceMinP = defReduce(
  "reduce_min",
  anyNum,
  maxOf,
  nanMin,
  (a, b) => (a < b ? a : b),
  (d) => (d === "int64" ? 2n ** 63n - 1n : 2n ** 64n - 1n),
);
export const reduceProdP = defReduce(
  "reduce_prod",
  (d) => d !== "bool",
  () => 1,
  (a, b, d) => (isInteger(d) ? wrapInt(Math.imul(a, b), d) : a * b),
  (a, b) => a * b,
  () => 1n,
);
export const reduceAndP = defReduce(
  "reduce_and",
  (d) => isBool(d) || isInteger(d),
  (d) => (isBool(d) ? 1 : -1),
  (a, b, d) => (isBool(d) ? a & b : wrapInt(a & b, d)),
  (a, b) => a & b,
  () => -1n,
);
export const reduceOrP = defReduce(
  "reduce_or",
  (d) => isBool(d) || isInteger(d),
  () => 0,
  (a, b, d) => (isBool(d) ? a | b : wrapInt(a | b, d)),
  (a, b) => a | b,
  () => 0n,
);
export const reduceXorP = defReduce(
  "reduce_xor",
  (d) => isBool(d) || isInteger(d),
  () => 0,
  (a, b, d) => (isBool(d) ? a ^ b : wrapInt(a ^ b, d)),
  (a, b) => a ^ b,
  () => 0n,
);

const restoreDims = (y: Array, shape: readonly number[], axes: readonly number[]) =>
  ops.broadcastInDim(
    y,
    shape,
    [...shape.keys()].filter((i) => !axes.includes(i)),
  );

reduceSumP.rules.jvp = ([x], [t], { axes }) => {
  const y = ops.reduceSum(x, axes);
  return [[y], [t instanceof Zero ? new Zero(y.aval) : ops.reduceSum(t, axes)]];
};
reduceSumP.rules.transpose = ([ct], [x], { axes }) => {
  const a = (x as UndefinedPrimal).aval;
  return [ct instanceof Zero ? new Zero(a) : restoreDims(ct, a.shape, axes)];
};
// max/min: the tangent is averaged over the positions that attain the extremum (JAX's chooser rule)
const chooserJvp =
  (f: (x: Array, axes: number[]) => Array) =>
  ([x]: Array[], [t]: MaybeZero[], { axes }: RP): [Array[], MaybeZero[]] => {
    const y = f(x, axes);
    if (t instanceof Zero || !isFloat(x.dtype)) return [[y], [new Zero(y.aval)]];
    const loc = ops.convert(ops.eq(x, restoreDims(y, x.shape, axes)), x.dtype);
    const counts = ops.reduceSum(loc, axes);
    return [[y], [ops.div(ops.reduceSum(ops.mul(t, loc), axes), counts)]];
  };
reduceMaxP.rules.jvp = chooserJvp((x, a) => ops.reduceMax(x, a));
reduceMinP.rules.jvp = chooserJvp((x, a) => ops.reduceMin(x, a));
// prod: pairwise tree of products carrying (primal, tangent), so zeros are handled exactly
reduceProdP.rules.jvp = ([x], [t], { axes }) => {
  const y = ops.reduceProd(x, axes);
  if (t instanceof Zero) return [[y], [new Zero(y.aval)]];
  const keep = [...x.shape.keys()].filter((i) => !axes.includes(i));
  const perm = [...axes, ...keep];
  const n = prod(axes.map((a) => x.shape[a]));
  const rest = keep.map((k) => x.shape[k]);
  let p = ops.reshape(ops.transpose(x, perm), [n, ...rest]);
  let tt = ops.reshape(ops.transpose(t, perm), [n, ...rest]);
  while (p.shape[0] > 1) {
    const m = p.shape[0];
    if (m % 2 === 1) {
      const cfg: [number, number, number][] = [[0, 1, 0], ...rest.map((): [number, number, number] => [0, 0, 0])];
      p = ops.pad(p, ops.scalarLike(p, 1), cfg);
      tt = ops.pad(tt, ops.scalarLike(tt, 0), cfg);
    }
    const h = p.shape[0] / 2;
    const lo = (v: Array) => ops.sliceInDim(v, 0, h, 1, 0),
      hi = (v: Array) => ops.sliceInDim(v, h, 2 * h, 1, 0);
    const [pa, pb, ta, tb] = [lo(p), hi(p), lo(tt), hi(tt)];
    p = ops.mul(pa, pb);
    tt = ops.add(ops.mul(ta, pb), ops.mul(pa, tb));
  }
  return [[y], [ops.reshape(tt, y.shape)]];
};
for (const p of [reduceAndP, reduceOrP, reduceXorP]) {
  p.rules.jvp = ([x], _t, params) => {
    const y = ops.bindN(p as unknown as Primitive, [x], params)[0];
    return [[y], [new Zero(y.aval)]];
  };
}

// ---------------------------------------------------------------- argmax / argmin
type AP = { axes: number[]; index_dtype: DType };
function defArg(name: string, better: (a: number, b: number) => boolean): Primitive<AP> {
  const p: Primitive<AP> = new Primitive<AP>(
    name,
    {
      lower: (ctx, [x], { axes, index_dtype }, [a]) => [
        LR.argReduce(ctx, name === "argmax" ? "ArgMax" : "ArgMin", x, a, axes[0], index_dtype),
      ],
      abstractEval([x], { axes, index_dtype }) {
        checkAxes(name, x, axes);
        if (axes.length !== 1) throw new TypeError(`${name}: exactly one axis is supported, got ${shapeStr(axes)}`);
        if (x.shape[axes[0]] === 0)
          throw new TypeError(`${name}: attempt to get ${name} of an empty sequence (axis ${axes[0]} of ${x.str()})`);
        return [new ShapedArray(reducedShape(x.shape, axes), index_dtype, false)];
      },
      impl([x], { axes }, [out]) {
        const ax = axes[0];
        const xs = nums(x);
        const st = stridesOf(x.shape);
        const n = x.shape[ax];
        const outer = prod(x.shape.slice(0, ax)),
          inner = prod(x.shape.slice(ax + 1));
        const r = new Float64Array(out.size);
        for (let o = 0; o < outer; o++)
          for (let i = 0; i < inner; i++) {
            let best = 0,
              bv = xs[o * n * inner + i];
            for (let k = 1; k < n; k++) {
              const v = xs[o * n * inner + k * st[ax] + i];
              if (Number.isNaN(bv)) break;
              if (Number.isNaN(v) || better(v, bv)) {
                best = k;
                bv = v;
              }
            }
            r[o * inner + i] = best;
          }
        return [fromNums(out, r)];
      },
      jvp([x], _t, params) {
        const y = ops.bindN(p as unknown as Primitive, [x], params)[0];
        return [[y], [new Zero(y.aval)]];
      },
    },
    { exactOnScalars: true },
  );
  p.rules.vmap = vmapReduce(p as unknown as Primitive);
  return p;
}
export const argmaxP = defArg("argmax", (a, b) => a > b);
export const argminP = defArg("argmin", (a, b) => a < b);

// ---------------------------------------------------------------- cumulative ops
type CP = { axis: number; reverse: boolean };
function defCum(
  name: string,
  f: (acc: number, v: number, d: DType) => number,
  facts: { exactOnScalars: boolean },
): Primitive<CP> {
  const p: Primitive<CP> = new Primitive<CP>(
    name,
    {
      lower: (ctx, [x], { axis, reverse }, [a]) => [LR.cumulative(ctx, name as LR.CumKind, x, a, axis, reverse)],
      abstractEval([x], { axis }) {
        if (axis < 0 || axis >= x.ndim) throw new TypeError(`${name}: axis ${axis} out of range for ${x.str()}`);
        if (x.dtype === "bool") throw new TypeError(`${name}: bool operands are not supported; convert first`);
        return [x];
      },
      impl([x], { axis, reverse }, [out]) {
        const n = x.shape[axis],
          inner = prod(x.shape.slice(axis + 1)),
          outer = prod(x.shape.slice(0, axis));
        if (isBigInt(x.dtype)) {
          const xb = bigs(x),
            rb = new globalThis.Array<bigint>(xb.length);
          const fb = (acc: bigint, v: bigint): bigint =>
            name === "cumsum"
              ? acc + v
              : name === "cumprod"
                ? acc * v
                : name === "cummax"
                  ? v > acc
                    ? v
                    : acc
                  : name === "cummin"
                    ? v < acc
                      ? v
                      : acc
                    : acc;
          for (let o = 0; o < outer; o++)
            for (let i = 0; i < inner; i++) {
              let acc = 0n;
              for (let kk = 0; kk < n; kk++) {
                const j = o * n * inner + (reverse ? n - 1 - kk : kk) * inner + i;
                acc = kk === 0 ? xb[j] : fb(acc, xb[j]);
                rb[j] = acc;
              }
            }
          return [fromBigs(out, rb)];
        }
        const xs = nums(x);
        const r = new Float64Array(xs.length);
        const sum = name === "cumsum" && isFloat(x.dtype),
          c = new Float64Array(1);
        for (let o = 0; o < outer; o++)
          for (let i = 0; i < inner; i++) {
            let acc = NaN;
            c[0] = 0;
            for (let kk = 0; kk < n; kk++) {
              const k = reverse ? n - 1 - kk : kk;
              const j = o * n * inner + k * inner + i;
              // float cumsum: compensated running sum (error O(1) ulp of each prefix)
              acc = kk === 0 ? xs[j] : sum ? neumaier(acc, xs[j], c, 0) : f(acc, xs[j], x.dtype);
              r[j] = sum ? compensated(acc, c[0]) : acc;
            }
          }
        return [fromNums(out, r)];
      },
      vmap(_a, [x], [d], { axis, reverse }) {
        return [[ops.bindN(p as unknown as Primitive, [x], { axis: axis >= d! ? axis + 1 : axis, reverse })[0]], [d]];
      },
    },
    { exactOnScalars: facts.exactOnScalars },
  );
  return p;
}
export const cumsumP = defCum("cumsum", (a, v, d) => (isInteger(d) ? wrapInt(a + v, d) : a + v), {
  exactOnScalars: true,
});
export const cumprodP = defCum("cumprod", (a, v, d) => (isInteger(d) ? wrapInt(Math.imul(a, v), d) : a * v), {
  exactOnScalars: true,
});
export const cummaxP = defCum("cummax", nanMax, { exactOnScalars: true });
export const cumminP = defCum("cummin", nanMin, { exactOnScalars: true });
export const cumlogsumexpP = defCum(
  "cumlogsumexp",
  (a, v) => {
    const m = Math.max(a, v);
    return m === -Infinity ? -Infinity : m + Math.log(Math.exp(a - m) + Math.exp(v - m));
  },
  { exactOnScalars: false },
);
export const CUMULATIVE = {
  cumsum: cumsumP,
  cumprod: cumprodP,
  cummax: cummaxP,
  cummin: cumminP,
  cumlogsumexp: cumlogsumexpP,
};

cumsumP.rules.jvp = ([x], [t], p) => {
  const y = ops.cumulative("cumsum", x, p.axis, p.reverse);
  return [[y], [t instanceof Zero ? new Zero(y.aval) : ops.cumulative("cumsum", t, p.axis, p.reverse)]];
};
cumsumP.rules.transpose = ([ct], [x], p) => [
  ct instanceof Zero ? new Zero((x as UndefinedPrimal).aval) : ops.cumulative("cumsum", ct, p.axis, !p.reverse),
];
// cummax/cummin: the tangent follows the element that currently holds the running extremum
const cumChooser =
  (kind: "cummax" | "cummin") =>
  ([x]: Array[], [t]: MaybeZero[], p: CP): [Array[], MaybeZero[]] => {
    const y = ops.cumulative(kind, x, p.axis, p.reverse);
    if (t instanceof Zero) return [[y], [new Zero(y.aval)]];
    // index of the latest position attaining the running extremum, via cummax over (x == y) * position
    const pos = ops.iota("int32", x.shape, p.axis);
    const posF = p.reverse ? ops.sub(ops.scalarLike(pos, x.shape[p.axis] - 1), pos) : pos;
    const hit = ops.select(ops.eq(x, y), posF, ops.fullLike(posF, -1));
    const src = ops.cumulative("cummax", hit, p.axis, p.reverse);
    const srcIdx = p.reverse ? ops.sub(ops.scalarLike(src, x.shape[p.axis] - 1), src) : src;
    return [[y], [takeAlong(t, srcIdx, p.axis)]];
  };
function takeAlong(t: Array, idx: Array, axis: number): Array {
  // one-hot contraction: out[..., k, ...] = sum_j t[..., j, ...] * (idx[..., k, ...] == j)
  const n = t.shape[axis];
  const tm = ops.moveaxis(t, axis, t.ndim - 1),
    im = ops.moveaxis(idx, axis, idx.ndim - 1);
  const oh = ops.convert(
    ops.eq(
      ops.broadcastInDim(im, [...im.shape, n], [...im.shape.keys()]),
      ops.iota("int32", [...im.shape, n], im.ndim),
    ),
    t.dtype,
  );
  const r = ops.reduceSum(
    ops.mul(
      oh,
      ops.broadcastInDim(
        tm,
        [...im.shape, n],
        [...tm.shape.keys()].map((k) => (k === tm.ndim - 1 ? im.ndim : k)),
      ),
    ),
    [im.ndim],
  );
  return ops.moveaxis(r, r.ndim - 1, axis);
}
cummaxP.rules.jvp = cumChooser("cummax");
cumminP.rules.jvp = cumChooser("cummin");
// cumlogsumexp: d y_k = sum_{j<=k} t_j exp(x_j - y_k)
cumlogsumexpP.rules.jvp = ([x], [t], p) => {
  const y = ops.cumulative("cumlogsumexp", x, p.axis, p.reverse);
  if (t instanceof Zero) return [[y], [new Zero(y.aval)]];
  const m = ops.reduceMax(x, [p.axis]);
  const mb = ops.broadcastInDim(
    m,
    x.shape,
    [...x.shape.keys()].filter((i) => i !== p.axis),
  );
  const s = ops.cumulative("cumsum", ops.mul(t, ops.exp(ops.sub(x, mb))), p.axis, p.reverse);
  return [[y], [ops.mul(s, ops.exp(ops.sub(mb, y)))]];
};
// cumprod: d y_k = sum_{j<=k} t_j prod_{i<=k, i!=j} x_i, computed as y_k * cumsum(t/x) where x != 0 and by
// the one-hot rule otherwise is costly; we use the exact exclusive-product form via log-free prefix/suffix products.
cumprodP.rules.jvp = ([x], [t], p) => {
  const y = ops.cumulative("cumprod", x, p.axis, p.reverse);
  if (t instanceof Zero) return [[y], [new Zero(y.aval)]];
  // jvp via unrolled sequence over the axis (exact with zeros): y_k = y_{k-1} x_k, dy_k = dy_{k-1} x_k + y_{k-1} t_k
  const n = x.shape[p.axis];
  const at = (v: Array, k: number) => ops.sliceInDim(v, k, k + 1, 1, p.axis);
  const order = [...globalThis.Array(n).keys()];
  if (p.reverse) order.reverse();
  const dys: Array[] = new globalThis.Array(n);
  let prevY: Array | null = null,
    prevD: Array | null = null;
  for (const k of order) {
    const xk = at(x, k),
      tk = at(t, k);
    const d: Array = prevY === null ? tk : ops.add(ops.mul(prevD!, xk), ops.mul(prevY, tk));
    prevY = at(y, k);
    prevD = d;
    dys[k] = d;
  }
  return [[y], [n === 0 ? new Zero(y.aval) : ops.concatenate(dys, p.axis)]];
};

// ---------------------------------------------------------------- dot_general
type DP = { dimension_numbers: ops.DotDims; precision: null; preferred_element_type: DType | null; out_sharding: null };
function dotShapes(a: ShapedArray, b: ShapedArray, [[lc, rc], [lb, rb]]: ops.DotDims) {
  const lf = [...a.shape.keys()].filter((i) => !lc.includes(i) && !lb.includes(i));
  const rf = [...b.shape.keys()].filter((i) => !rc.includes(i) && !rb.includes(i));
  return { lf, rf, out: [...lb.map((i) => a.shape[i]), ...lf.map((i) => a.shape[i]), ...rf.map((i) => b.shape[i])] };
}
export const dotGeneralP = new Primitive<DP>("dot_general", {
  lower: (ctx, [l, r], p, [a, b], [o]) => [LR.dotGeneral(ctx, l, r, a, b, p.dimension_numbers, o)],
  abstractEval([a, b], { dimension_numbers: dn, preferred_element_type: pe }) {
    const [[lc, rc], [lb, rb]] = dn;
    const bad = (msg: string) =>
      new TypeError(`dot_general: ${msg}; lhs ${a.str()}, rhs ${b.str()}, dimension_numbers ${JSON.stringify(dn)}`);
    if (lc.length !== rc.length || lb.length !== rb.length)
      throw bad("contracting/batch dimension lists must have equal lengths");
    for (const [l, r] of [
      [lc, rc],
      [lb, rb],
    ] as const)
      l.forEach((d, i) => {
        if (d < 0 || d >= a.ndim || r[i] < 0 || r[i] >= b.ndim) throw bad("dimension out of range");
        if (a.shape[d] !== b.shape[r[i]])
          throw bad(`dimension ${d} of lhs (${a.shape[d]}) does not match dimension ${r[i]} of rhs (${b.shape[r[i]]})`);
      });
    if (a.dtype !== b.dtype) throw bad("operands must have the same dtype");
    return [new ShapedArray(dotShapes(a, b, dn).out, pe ?? a.dtype, pe ? false : a.weakType && b.weakType)];
  },
  impl([a, b], { dimension_numbers: dn }, [out]) {
    const [[lc, rc], [lb, rb]] = dn;
    const { lf, rf } = dotShapes(a.aval, b.aval, dn);
    const as = stridesOf(a.shape),
      bs = stridesOf(b.shape);
    const A = nums(a),
      B = nums(b);
    const sz = (s: readonly number[], d: number[]) => d.map((i) => s[i]);
    const nb = prod(sz(a.shape, lb)),
      nl = prod(sz(a.shape, lf)),
      nr = prod(sz(b.shape, rf)),
      nc = prod(sz(a.shape, lc));
    const offs = (shape: readonly number[], dims: number[], strides: number[], n: number) => {
      const o = new Float64Array(n);
      const ds = sz(shape, dims);
      const idx = new globalThis.Array<number>(dims.length).fill(0);
      for (let k = 0; k < n; k++) {
        o[k] = idx.reduce((acc, v, j) => acc + v * strides[dims[j]], 0);
        for (let j = dims.length - 1; j >= 0; j--) {
          if (++idx[j] < ds[j]) break;
          idx[j] = 0;
        }
      }
      return o;
    };
    const aB = offs(a.shape, lb, as, nb),
      aF = offs(a.shape, lf, as, nl),
      aC = offs(a.shape, lc, as, nc);
    const bB = offs(b.shape, rb, bs, nb),
      bF = offs(b.shape, rf, bs, nr),
      bC = offs(b.shape, rc, bs, nc);
    const r = new Float64Array(nb * nl * nr);
    if (isBigInt(out.dtype) || isBigInt(a.dtype)) {
      // 64-bit integers: exact two's-complement accumulation in bigint
      const Ab = bigs(a),
        Bb = bigs(b);
      const rb = new globalThis.Array<bigint>(nb * nl * nr);
      for (let q = 0; q < nb; q++)
        for (let i = 0; i < nl; i++)
          for (let j = 0; j < nr; j++) {
            let s = 0n;
            for (let c = 0; c < nc; c++) s += Ab[aB[q] + aF[i] + aC[c]] * Bb[bB[q] + bF[j] + bC[c]];
            rb[(q * nl + i) * nr + j] = s;
          }
      return [fromBigs(out, rb)];
    }
    const intMath = isInteger(out.dtype),
      comp = new Float64Array(1);
    for (let q = 0; q < nb; q++)
      for (let i = 0; i < nl; i++)
        for (let j = 0; j < nr; j++) {
          let s = 0;
          // narrower integers accumulate modulo 2^32 (exact wraparound, no double rounding)
          if (intMath)
            for (let c = 0; c < nc; c++) s = (s + Math.imul(A[aB[q] + aF[i] + aC[c]], B[bB[q] + bF[j] + bC[c]])) | 0;
          else {
            // floats: compensated sum of the (float64) products
            comp[0] = 0;
            for (let c = 0; c < nc; c++) s = neumaier(s, A[aB[q] + aF[i] + aC[c]] * B[bB[q] + bF[j] + bC[c]], comp, 0);
            s = compensated(s, comp[0]);
          }
          r[(q * nl + i) * nr + j] = intMath ? wrapInt(s, out.dtype) : s;
        }
    return [fromNums(out, r)];
  },
  jvp([a, b], [ta, tb], p) {
    const y = ops.dotGeneral(a, b, p.dimension_numbers, p.preferred_element_type);
    const parts: Array[] = [];
    if (!(ta instanceof Zero)) parts.push(ops.dotGeneral(ta, b, p.dimension_numbers, p.preferred_element_type));
    if (!(tb instanceof Zero)) parts.push(ops.dotGeneral(a, tb, p.dimension_numbers, p.preferred_element_type));
    return [[y], [parts.length ? parts.reduce((u, v) => ops.add(u, v)) : new Zero(y.aval)]];
  },
  transpose([ct], [a, b], p) {
    const [[lc, rc], [lb, rb]] = p.dimension_numbers;
    const aAval = a instanceof UndefinedPrimal ? a.aval : (a as Array).aval;
    const bAval = b instanceof UndefinedPrimal ? b.aval : (b as Array).aval;
    const { lf, rf } = dotShapes(aAval, bAval, p.dimension_numbers);
    const nb = lb.length;
    // ct dims: [batch..., lhs free..., rhs free...]
    const ctB = [...globalThis.Array(nb).keys()],
      ctL = lf.map((_, i) => nb + i),
      ctR = rf.map((_, i) => nb + lf.length + i);
    const res: (MaybeZero | null)[] = [null, null];
    if (a instanceof UndefinedPrimal) {
      if (ct instanceof Zero) res[0] = new Zero(aAval);
      else {
        // d a = ct . b over rhs free dims; result dims [batch, lhs free, contract(ordered as rc)]
        const r = ops.dotGeneral(
          ct,
          b as Array,
          [
            [ctR, rf],
            [ctB, rb],
          ],
          p.preferred_element_type ? aAval.dtype : null,
        );
        const srcOrder = [...lb, ...lf, ...lc];
        res[0] = ops.convert(
          ops.transpose(
            r,
            [...globalThis.Array(aAval.ndim).keys()].map((d) => srcOrder.indexOf(d)),
          ),
          aAval.dtype,
          aAval.weakType,
        );
      }
    }
    if (b instanceof UndefinedPrimal) {
      if (ct instanceof Zero) res[1] = new Zero(bAval);
      else {
        const r = ops.dotGeneral(
          ct,
          a as Array,
          [
            [ctL, lf],
            [ctB, lb],
          ],
          p.preferred_element_type ? bAval.dtype : null,
        );
        const srcOrder = [...rb, ...rf, ...rc];
        res[1] = ops.convert(
          ops.transpose(
            r,
            [...globalThis.Array(bAval.ndim).keys()].map((d) => srcOrder.indexOf(d)),
          ),
          bAval.dtype,
          bAval.weakType,
        );
      }
    }
    return res;
  },
  vmap(axis, [a, b], [da, db], p) {
    const [[lc, rc], [lb, rb]] = p.dimension_numbers;
    // move batch dims to 0 and add them as a new leading batch dimension pair
    const A = da === null ? ops.broadcastBatch(a, axis.size, 0) : ops.moveaxis(a, da, 0);
    const B = db === null ? ops.broadcastBatch(b, axis.size, 0) : ops.moveaxis(b, db, 0);
    const sh = (l: number[]) => l.map((x) => x + 1);
    const y = ops.dotGeneral(
      A,
      B,
      [
        [sh(lc), sh(rc)],
        [
          [0, ...sh(lb)],
          [0, ...sh(rb)],
        ],
      ],
      p.preferred_element_type,
    );
    return [[y], [0]];
  },
});

export { isBigInt, ArrayImpl, isUnsigned };
export type { BDim };
