/** @file conv_general_dilated: JAX's general convolution (dimension numbers, strides, padding, lhs/rhs dilation, feature and batch groups) with all its rules. */
import type { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { type DType, isFloat } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { type MaybeZero, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { prod, shapeStr, stridesOf } from "../core/shape.js";
import { bind1 } from "../core/trace.js";
import { fromNums, nums } from "./ref-util.js";
import * as ops from "./ops.js";
import { cast, roundTo, transpose as lowerTranspose } from "../compiler/lower-util.js";
import * as LS from "../compiler/lower-structural.js";
import { lowerFun } from "../compiler/context.js";

/** Dimension numbers as dim indices: lhs (batch, feature, spatial...), rhs (out feature, in feature, spatial...), out (batch, feature, spatial...). */
export interface ConvDims {
  lhs_spec: number[];
  rhs_spec: number[];
  out_spec: number[];
}
export type ConvArgs = {
  window_strides: number[];
  padding: [number, number][];
  lhs_dilation: number[];
  rhs_dilation: number[];
  dimension_numbers: ConvDims;
  feature_group_count: number;
  batch_group_count: number;
  preferred_element_type: DType | null;
};
export type ConvParams = ConvArgs & { precision: null };

/** Size of a dimension of n elements dilated by d (holes between elements): 0 stays 0. */
export const dilateDim = (n: number, d: number): number => (n === 0 ? 0 : 1 + d * (n - 1));

const specTranspose = (s: readonly number[]): number[] => [s[1], s[0], ...s.slice(2)];

/** Splits axis src of x into (size1, n / size1), size1 major (JAX's _reshape_axis_out_of). */
export function reshapeAxisOutOf(src: number, size1: number, x: Array): Array {
  const shape = [...x.shape];
  shape.splice(src, 1, size1, x.shape[src] / size1);
  return ops.reshape(x, shape);
}
/** Merges axis src into axis dst (dst indexes the array without src), src major (JAX's _reshape_axis_into). */
export function reshapeAxisInto(src: number, dst: number, x: Array): Array {
  const perm = [...x.shape.keys()].filter((i) => i !== src);
  perm.splice(dst, 0, src);
  const shape = x.shape.filter((_, i) => i !== src);
  shape[dst] *= x.shape[src];
  return ops.reshape(ops.transpose(x, perm), shape);
}

/** Binds conv_general_dilated (params already normalized to explicit pads and index dimension numbers). */
export function convGeneralDilatedRaw(lhs: Array, rhs: Array, p: ConvArgs): Array {
  return bind1(convGeneralDilatedP, [lhs, rhs], {
    window_strides: [...p.window_strides],
    padding: p.padding.map(([l, h]): [number, number] => [l, h]),
    lhs_dilation: [...p.lhs_dilation],
    rhs_dilation: [...p.rhs_dilation],
    dimension_numbers: {
      lhs_spec: [...p.dimension_numbers.lhs_spec],
      rhs_spec: [...p.dimension_numbers.rhs_spec],
      out_spec: [...p.dimension_numbers.out_spec],
    },
    feature_group_count: p.feature_group_count,
    batch_group_count: p.batch_group_count,
    precision: null,
    preferred_element_type: p.preferred_element_type,
  });
}
const conv = (lhs: Array, rhs: Array, p: ConvParams, over: Partial<ConvParams>): Array =>
  convGeneralDilatedRaw(lhs, rhs, { ...p, ...over });

function convShape(a: ShapedArray, b: ShapedArray, p: ConvParams): number[] {
  const { lhs_spec: ls, rhs_spec: rs, out_spec: os } = p.dimension_numbers;
  const nsp = a.ndim - 2;
  const ctx = `lhs ${a.str()}, rhs ${b.str()}, dimension_numbers ${JSON.stringify(p.dimension_numbers)}`;
  const bad = (m: string) => new TypeError(`conv_general_dilated: ${m}; ${ctx}`);
  if (a.ndim < 2 || b.ndim !== a.ndim) throw bad("lhs and rhs must have the same rank, at least 2");
  for (const [name, s] of [
    ["lhs_spec", ls],
    ["rhs_spec", rs],
    ["out_spec", os],
  ] as const) {
    if (s.length !== a.ndim || [...s].sort((x, y) => x - y).some((v, i) => v !== i))
      throw bad(`${name} ${shapeStr(s)} must be a permutation of 0..${a.ndim - 1}`);
  }
  for (const [name, v] of [
    ["window_strides", p.window_strides],
    ["lhs_dilation", p.lhs_dilation],
    ["rhs_dilation", p.rhs_dilation],
  ] as const) {
    if (v.length !== nsp || v.some((x) => !Number.isInteger(x) || x < 1))
      throw bad(`${name} ${shapeStr(v)} must hold ${nsp} positive integers`);
  }
  if (p.padding.length !== nsp) throw bad(`padding has ${p.padding.length} pairs, expected ${nsp}`);
  const G = p.feature_group_count,
    B = p.batch_group_count;
  if (!Number.isInteger(G) || G < 1 || !Number.isInteger(B) || B < 1)
    throw bad(`feature_group_count (${G}) and batch_group_count (${B}) must be positive integers`);
  if (G > 1 && B > 1) throw bad("at most one of feature_group_count and batch_group_count may be > 1");
  const N = a.shape[ls[0]],
    C = a.shape[ls[1]],
    O = b.shape[rs[0]],
    I = b.shape[rs[1]];
  if (C !== I * G)
    throw bad(
      `lhs feature dimension (${C}) must equal rhs input feature dimension (${I}) times feature_group_count (${G})`,
    );
  if (O % G !== 0) throw bad(`rhs output feature dimension (${O}) must be a multiple of feature_group_count (${G})`);
  if (N % B !== 0) throw bad(`lhs batch dimension (${N}) must be a multiple of batch_group_count (${B})`);
  if (O % B !== 0) throw bad(`rhs output feature dimension (${O}) must be a multiple of batch_group_count (${B})`);
  if (a.dtype !== b.dtype) throw bad(`lhs and rhs must have the same dtype, got ${a.dtype} and ${b.dtype}`);
  const out = new globalThis.Array<number>(a.ndim).fill(0);
  out[os[0]] = N / B;
  out[os[1]] = O;
  for (let i = 0; i < nsp; i++) {
    const padded = dilateDim(a.shape[ls[i + 2]], p.lhs_dilation[i]) + p.padding[i][0] + p.padding[i][1];
    const win = dilateDim(b.shape[rs[i + 2]], p.rhs_dilation[i]);
    // out = floor((padded - window) / stride) + 1, clamped at 0
    out[os[i + 2]] = padded < win || win === 0 ? 0 : Math.floor((padded - win) / p.window_strides[i]) + 1;
  }
  return out;
}

/** Reference convolution: out[n, o, y] = sum_{c, k} lhs[bg*Nout + n, g*Cg + c, (y*s + k*rd - lo) / ld] * rhs[o, c, k]. */
function convImpl(
  A: Float64Array,
  as: ShapedArray,
  W: Float64Array,
  bs: ShapedArray,
  p: ConvParams,
  outShape: number[],
): Float64Array {
  const { lhs_spec: ls, rhs_spec: rs, out_spec: os } = p.dimension_numbers;
  const nsp = as.ndim - 2;
  const lst = stridesOf(as.shape),
    rst = stridesOf(bs.shape),
    ost = stridesOf(outShape);
  const Nout = outShape[os[0]],
    O = outShape[os[1]],
    Cg = bs.shape[rs[1]];
  const Og = O / p.feature_group_count,
    Ob = O / p.batch_group_count;
  const outSp = os.slice(2).map((d) => outShape[d]),
    win = rs.slice(2).map((d) => bs.shape[d]),
    inSp = ls.slice(2).map((d) => as.shape[d]);
  const r = new Float64Array(prod(outShape));
  const nOut = prod(outSp),
    nWin = prod(win);
  const unravel = (k: number, dims: number[]) => {
    const idx = new globalThis.Array<number>(dims.length);
    for (let d = dims.length - 1; d >= 0; d--) {
      idx[d] = k % dims[d];
      k = Math.floor(k / dims[d]);
    }
    return idx;
  };
  const outIdx = globalThis.Array.from({ length: nOut }, (_, k) => unravel(k, outSp));
  const winIdx = globalThis.Array.from({ length: nWin }, (_, k) => unravel(k, win));
  for (let n = 0; n < Nout; n++)
    for (let o = 0; o < O; o++) {
      const g = Math.floor(o / Og),
        bg = Math.floor(o / Ob);
      const lBase = (bg * Nout + n) * lst[ls[0]],
        fBase = g * Cg;
      for (let q = 0; q < nOut; q++) {
        const y = outIdx[q];
        let s = 0;
        for (let w = 0; w < nWin; w++) {
          const k = winIdx[w];
          let lOff = lBase,
            rOff = o * rst[rs[0]],
            ok = true;
          for (let i = 0; i < nsp; i++) {
            const pos = y[i] * p.window_strides[i] + k[i] * p.rhs_dilation[i] - p.padding[i][0];
            if (pos < 0 || pos % p.lhs_dilation[i] !== 0) {
              ok = false;
              break;
            }
            const xi = pos / p.lhs_dilation[i];
            if (xi >= inSp[i]) {
              ok = false;
              break;
            }
            lOff += xi * lst[ls[i + 2]];
            rOff += k[i] * rst[rs[i + 2]];
          }
          if (!ok) continue;
          for (let c = 0; c < Cg; c++) s += A[lOff + (fBase + c) * lst[ls[1]]] * W[rOff + c * rst[rs[1]]];
        }
        let off = n * ost[os[0]] + o * ost[os[1]];
        for (let i = 0; i < nsp; i++) off += y[i] * ost[os[i + 2]];
        r[off] = s;
      }
    }
  return r;
}

/** Per spatial axis, the dilated sizes of the input, the window and the output (as seen by the transposed convolutions). */
function dilatedSizes(
  inSp: number[],
  winSp: number[],
  strides: number[],
  outSp: number[],
  ld: number[],
  rd: number[],
): { lhsD: number; rhsD: number; outD: number }[] {
  return inSp.map((n, i) => ({
    lhsD: dilateDim(n, ld[i]),
    rhsD: dilateDim(winSp[i], rd[i]),
    outD: dilateDim(outSp[i], strides[i]),
  }));
}
// JAX's _conv_general_vjp_lhs_padding / _rhs_padding: the padding of the transposed convolutions.
function vjpLhsPadding(
  inSp: number[],
  winSp: number[],
  strides: number[],
  outSp: number[],
  pad: [number, number][],
  ld: number[],
  rd: number[],
): [number, number][] {
  return dilatedSizes(inSp, winSp, strides, outSp, ld, rd).map(({ lhsD, rhsD, outD }, i) => {
    const before = rhsD - pad[i][0] - 1;
    return [before, lhsD + rhsD - 1 - outD - before];
  });
}
function vjpRhsPadding(
  inSp: number[],
  winSp: number[],
  strides: number[],
  outSp: number[],
  pad: [number, number][],
  ld: number[],
  rd: number[],
): [number, number][] {
  return dilatedSizes(inSp, winSp, strides, outSp, ld, rd).map(({ lhsD, rhsD, outD }, i) => [
    pad[i][0],
    outD - lhsD + rhsD - pad[i][0] - 1,
  ]);
}

function transposeLhs(g: Array, lhsAval: ShapedArray, rhs: Array, p: ConvParams): Array {
  const { lhs_spec: ls, rhs_spec: rs, out_spec: os } = p.dimension_numbers;
  let fgc = p.feature_group_count;
  const bgc = p.batch_group_count;
  let w = rhs;
  if (fgc > 1) {
    w = reshapeAxisInto(rs[0], rs[1], reshapeAxisOutOf(rs[0], fgc, w));
  } else if (bgc > 1) {
    w = reshapeAxisInto(rs[0], rs[1], reshapeAxisOutOf(rs[0], bgc, w));
    fgc = bgc;
  }
  const sp = (s: number[], shape: readonly number[]) => s.slice(2).map((d) => shape[d]);
  const padding = vjpLhsPadding(
    sp(ls, lhsAval.shape),
    sp(rs, w.shape),
    p.window_strides,
    sp(os, g.shape),
    p.padding,
    p.lhs_dilation,
    p.rhs_dilation,
  );
  let out = conv(g, ops.rev(w, rs.slice(2)), p, {
    window_strides: p.lhs_dilation,
    padding,
    lhs_dilation: p.window_strides,
    rhs_dilation: p.rhs_dilation,
    dimension_numbers: { lhs_spec: os, rhs_spec: specTranspose(rs), out_spec: ls },
    feature_group_count: fgc,
    batch_group_count: 1,
    preferred_element_type: p.preferred_element_type ? lhsAval.dtype : null,
  });
  if (bgc > 1) out = reshapeAxisInto(ls[1], ls[0], reshapeAxisOutOf(ls[1], bgc, out));
  return ops.convert(out, lhsAval.dtype, lhsAval.weakType);
}
function transposeRhs(g: Array, lhs: Array, rhsAval: ShapedArray, p: ConvParams): MaybeZero {
  if (g.size === 0) return new Zero(rhsAval);
  const { lhs_spec: ls, rhs_spec: rs, out_spec: os } = p.dimension_numbers;
  let fgc = p.feature_group_count,
    bgc = p.batch_group_count;
  if (bgc > 1) {
    fgc = bgc;
    bgc = 1;
  } else if (fgc > 1) {
    bgc = fgc;
    fgc = 1;
  }
  const sp = (s: number[], shape: readonly number[]) => s.slice(2).map((d) => shape[d]);
  const padding = vjpRhsPadding(
    sp(ls, lhs.shape),
    sp(rs, rhsAval.shape),
    p.window_strides,
    sp(os, g.shape),
    p.padding,
    p.lhs_dilation,
    p.rhs_dilation,
  );
  const out = conv(lhs, g, p, {
    window_strides: p.rhs_dilation,
    padding,
    lhs_dilation: p.lhs_dilation,
    rhs_dilation: p.window_strides,
    dimension_numbers: { lhs_spec: specTranspose(ls), rhs_spec: specTranspose(os), out_spec: specTranspose(rs) },
    feature_group_count: fgc,
    batch_group_count: bgc,
    preferred_element_type: p.preferred_element_type ? rhsAval.dtype : null,
  });
  return ops.convert(out, rhsAval.dtype, rhsAval.weakType);
}

/** ORT Conv on NC+spatial / OI+spatial layouts: transposes around it, explicit Pad for lhs dilation or negative padding. */
function lowerConv(
  ctx: LoweringContext,
  [l, r]: string[],
  p: ConvParams,
  [a, b]: ShapedArray[],
  [o]: ShapedArray[],
): string[] {
  const nsp = a.ndim - 2;
  if (p.batch_group_count > 1) {
    // batch groups become feature groups: lhs (B*Nb, C) -> (Nb, B*C), group b reading lhs rows b*Nb..
    const ls = p.dimension_numbers.lhs_spec;
    return lowerFun(
      ctx,
      (x, w) => [
        conv(reshapeAxisInto(ls[0], ls[1], reshapeAxisOutOf(ls[0], p.batch_group_count, x)), w, p, {
          feature_group_count: p.batch_group_count,
          batch_group_count: 1,
        }),
      ],
      [a, b],
      [l, r],
    );
  }
  const cd: DType = p.preferred_element_type && isFloat(p.preferred_element_type) ? p.preferred_element_type : a.dtype;
  if (nsp < 1 || nsp > 3) ctx.unsupported(`${nsp} spatial dimensions (ORT Conv takes 1 to 3)`);
  if (!isFloat(cd) || !ctx.supports("Conv", ctx.repr(cd)))
    ctx.unsupported(`dtype ${cd} (ORT Conv kernels: float32, float16)`);
  if (a.size === 0 || b.size === 0 || o.size === 0) ctx.unsupported("zero-size operand");
  const { lhs_spec: ls, rhs_spec: rs, out_spec: os } = p.dimension_numbers;
  let x = cast(ctx, lowerTranspose(ctx, l, ls), a.dtype, cd);
  const w = cast(ctx, lowerTranspose(ctx, r, rs), b.dtype, cd);
  const xShape = ls.map((d) => a.shape[d]);
  let pads = [...p.padding.map(([lo]) => lo), ...p.padding.map(([, hi]) => hi)];
  if (p.lhs_dilation.some((d) => d !== 1) || pads.some((v) => v < 0)) {
    const cfg: [number, number, number][] = [
      [0, 0, 0],
      [0, 0, 0],
      ...p.padding.map(([lo, hi], i): [number, number, number] => [lo, hi, p.lhs_dilation[i] - 1]),
    ];
    x = LS.pad(ctx, x, ctx.scalar(cd, 0), new ShapedArray(xShape, cd), cfg);
    pads = pads.map(() => 0);
  }
  const y = ctx.op("Conv", [x, w], {
    kernel_shape: rs.slice(2).map((d) => b.shape[d]),
    strides: p.window_strides,
    dilations: p.rhs_dilation,
    pads,
    group: p.feature_group_count,
  });
  const outPerm = [...o.shape.keys()].map((d) => os.indexOf(d));
  // bfloat16 is held as float32: round the float32 Conv result like every bfloat16 op
  return [cast(ctx, roundTo(ctx, lowerTranspose(ctx, y, outPerm), cd), cd, o.dtype)];
}

export const convGeneralDilatedP = new Primitive<ConvParams>("conv_general_dilated", {
  lower: lowerConv,
  abstractEval([a, b], p) {
    const pe = p.preferred_element_type;
    return [new ShapedArray(convShape(a, b, p), pe ?? a.dtype, pe ? false : a.weakType && b.weakType)];
  },
  impl([a, b], p, [out]) {
    return [fromNums(out, convImpl(nums(a), a.aval, nums(b), b.aval, p, out.shape as number[]))];
  },
  jvp([a, b], [ta, tb], p) {
    const y = convGeneralDilatedRaw(a, b, p);
    const parts: Array[] = [];
    if (!(ta instanceof Zero)) parts.push(convGeneralDilatedRaw(ta, b, p));
    if (!(tb instanceof Zero)) parts.push(convGeneralDilatedRaw(a, tb, p));
    return [[y], [parts.length ? parts.reduce((u, v) => ops.add(u, v)) : new Zero(y.aval)]];
  },
  transpose([ct], [a, b], p) {
    const res: (MaybeZero | null)[] = [null, null];
    if (a instanceof UndefinedPrimal)
      res[0] = ct instanceof Zero ? new Zero(a.aval) : transposeLhs(ct, a.aval, b as Array, p);
    if (b instanceof UndefinedPrimal)
      res[1] = ct instanceof Zero ? new Zero(b.aval) : transposeRhs(ct, a as Array, b.aval, p);
    return res;
  },
  // JAX's _conv_general_dilated_batch_rule: fold the vmapped axis into the batch or the feature groups.
  vmap(_axis, [lhs, rhs], [ld, rd], p) {
    const { lhs_spec: ls, rhs_spec: rs, out_spec: os } = p.dimension_numbers;
    let fgc = p.feature_group_count,
      bgc = p.batch_group_count;
    if (ld !== null && rd !== null) {
      const n = lhs.shape[ld];
      let newLhs: Array;
      if (bgc > 1) {
        newLhs = reshapeAxisInto(ld, ls[0], lhs);
        bgc *= n;
      } else {
        newLhs = reshapeAxisInto(ld, ls[1], lhs);
        fgc *= n;
      }
      const out = conv(newLhs, reshapeAxisInto(rd, rs[0], rhs), p, {
        feature_group_count: fgc,
        batch_group_count: bgc,
      });
      return [[reshapeAxisOutOf(os[1], n, out)], [os[1]]];
    }
    if (ld !== null) {
      const n = lhs.shape[ld];
      let newLhs: Array;
      if (bgc === 1) newLhs = reshapeAxisInto(ld, ls[0], lhs);
      else {
        newLhs = reshapeAxisOutOf(ls[0] + (ld <= ls[0] ? 1 : 0), bgc, lhs);
        newLhs = reshapeAxisInto(ld + (ls[0] < ld ? 1 : 0), ls[0] + 1, newLhs);
        newLhs = reshapeAxisInto(ls[0], ls[0], newLhs);
      }
      return [[reshapeAxisOutOf(os[0], n, conv(newLhs, rhs, p, {}))], [os[0]]];
    }
    const n = rhs.shape[rd!];
    if (fgc === 1 && bgc === 1)
      return [[reshapeAxisOutOf(os[1], n, conv(lhs, reshapeAxisInto(rd!, rs[0], rhs), p, {}))], [os[1]]];
    // groups stay outermost in the output feature dim: (groups, batch, O / groups)
    const gc = fgc > 1 ? fgc : bgc;
    let newRhs = reshapeAxisOutOf(rs[0] + (rd! <= rs[0] ? 1 : 0), gc, rhs);
    newRhs = reshapeAxisInto(rd! + (rs[0] < rd! ? 1 : 0), rs[0] + 1, newRhs);
    newRhs = reshapeAxisInto(rs[0], rs[0], newRhs);
    let out = reshapeAxisOutOf(os[1], gc, conv(lhs, newRhs, p, {}));
    out = reshapeAxisOutOf(os[1] + 1, n, out);
    out = reshapeAxisInto(os[1], os[1] + 1, out);
    return [[out], [os[1]]];
  },
});
