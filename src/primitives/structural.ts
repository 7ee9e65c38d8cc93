/** @file Shape and layout primitives: broadcast_in_dim, reshape, transpose, squeeze, rev, pad, concatenate, slice, convert, select_n, iota. */
import type { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { convertStorage } from "../core/convert.js";
import { type DType, allocate, isInexact, itemsize } from "../core/dtype.js";
import { type BDim, type MaybeZero, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { prod, shapeStr, stridesOf } from "../core/shape.js";
import { fromNums, nums, stridedGather } from "./ref-util.js";
import { vmapElementwise } from "./elementwise.js";
import * as ops from "./bind-ops.js";
import { cast, reshape as lowerReshape, transpose as lowerTranspose } from "../compiler/lower-util.js";
import * as LS from "../compiler/lower-structural.js";

const mapZ = (t: MaybeZero, f: (t: Array) => Array, aval: ShapedArray): MaybeZero =>
  t instanceof Zero ? new Zero(aval) : f(t);

// ---------------------------------------------------------------- broadcast_in_dim
export interface BroadcastParams {
  shape: number[];
  broadcast_dimensions: number[];
  [k: string]: unknown;
}
export const broadcastInDimP = new Primitive<BroadcastParams>(
  "broadcast_in_dim",
  {
    lower: (ctx, [x], p, [a]) => [LS.broadcastInDim(ctx, x, a, p.shape, p.broadcast_dimensions)],
    abstractEval([x], { shape, broadcast_dimensions: bd }) {
      if (bd.length !== x.ndim)
        throw new TypeError(
          `broadcast_in_dim: broadcast_dimensions ${shapeStr(bd)} must have one entry per operand dimension of ${x.str()}`,
        );
      bd.forEach((d, i) => {
        if (d < 0 || d >= shape.length)
          throw new TypeError(`broadcast_in_dim: dimension ${d} out of range for target shape ${shapeStr(shape)}`);
        if (i > 0 && d <= bd[i - 1])
          throw new TypeError(`broadcast_in_dim: broadcast_dimensions ${shapeStr(bd)} must be strictly increasing`);
        if (x.shape[i] !== 1 && x.shape[i] !== shape[d])
          throw new TypeError(
            `broadcast_in_dim: operand ${x.str()} dimension ${i} (${x.shape[i]}) is incompatible with target ${shapeStr(shape)} dimension ${d}`,
          );
      });
      return [new ShapedArray(shape, x.dtype, x.weakType)];
    },
    impl([x], { shape, broadcast_dimensions: bd }, [out]) {
      const xs = stridesOf(x.shape);
      const st = new globalThis.Array<number>(shape.length).fill(0);
      bd.forEach((d, i) => {
        st[d] = x.shape[i] === 1 ? 0 : xs[i];
      });
      const o = allocate(out.dtype, out.size);
      stridedGather(x.buffer, shape, st, 0, o);
      return [new ArrayImpl(out, o)];
    },
    jvp([x], [t], p) {
      const y = ops.broadcastInDim(x, p.shape, p.broadcast_dimensions);
      return [[y], [mapZ(t, (t) => ops.broadcastInDim(t, p.shape, p.broadcast_dimensions), y.aval)]];
    },
    transpose([ct], [x], { shape, broadcast_dimensions: bd }) {
      const aval = (x as UndefinedPrimal).aval;
      if (ct instanceof Zero) return [new Zero(aval)];
      // sum over the new dims and over dims broadcast from size 1
      const newDims = [...shape.keys()].filter((d) => !bd.includes(d));
      const onesDims = bd.filter((d, i) => aval.shape[i] === 1 && shape[d] !== 1);
      let r = ops.reduceSum(
        ct,
        [...newDims, ...onesDims].sort((a, b) => a - b),
      );
      if (onesDims.length) r = ops.reshape(r, aval.shape);
      return [r];
    },
    vmap(axis, [x], [d], { shape, broadcast_dimensions: bd }) {
      // move the batch dim to the front; it becomes output dim 0
      const newShape = [axis.size, ...shape];
      return [[ops.broadcastInDim(ops.moveaxis(x, d!, 0), newShape, [0, ...bd.map((b) => b + 1)])], [0]];
    },
  },
  { cost: "view", exactOnScalars: true },
);

// ---------------------------------------------------------------- reshape
export const reshapeP = new Primitive<{ new_sizes: number[]; dimensions: null }>(
  "reshape",
  {
    lower: (ctx, [x], p) => [lowerReshape(ctx, x, p.new_sizes)],
    abstractEval([x], { new_sizes }) {
      if (prod(new_sizes) !== x.size)
        throw new TypeError(`reshape: cannot reshape ${x.str()} (size ${x.size}) into shape ${shapeStr(new_sizes)}`);
      return [new ShapedArray(new_sizes, x.dtype, x.weakType)];
    },
    impl([x], _p, [out]) {
      return [new ArrayImpl(out, x.buffer.slice())];
    },
    jvp([x], [t], p) {
      const y = ops.reshape(x, p.new_sizes);
      return [[y], [mapZ(t, (t) => ops.reshape(t, p.new_sizes), y.aval)]];
    },
    transpose([ct], [x]) {
      const a = (x as UndefinedPrimal).aval;
      return [ct instanceof Zero ? new Zero(a) : ops.reshape(ct, a.shape)];
    },
    vmap(axis, [x], [d], { new_sizes }) {
      return [[ops.reshape(ops.moveaxis(x, d!, 0), [axis.size, ...new_sizes])], [0]];
    },
  },
  { cost: "view", exactOnScalars: true },
);

// ---------------------------------------------------------------- transpose
export const transposeP = new Primitive<{ permutation: number[] }>(
  "transpose",
  {
    lower: (ctx, [x], p) => [lowerTranspose(ctx, x, p.permutation)],
    abstractEval([x], { permutation: p }) {
      if (p.length !== x.ndim || [...p].sort((a, b) => a - b).some((v, i) => v !== i))
        throw new TypeError(`transpose: permutation ${shapeStr(p)} is not a permutation of the dims of ${x.str()}`);
      return [
        new ShapedArray(
          p.map((i) => x.shape[i]),
          x.dtype,
          x.weakType,
        ),
      ];
    },
    impl([x], { permutation: p }, [out]) {
      const xs = stridesOf(x.shape);
      const o = allocate(out.dtype, out.size);
      stridedGather(
        x.buffer,
        out.shape,
        p.map((i) => xs[i]),
        0,
        o,
      );
      return [new ArrayImpl(out, o)];
    },
    jvp([x], [t], { permutation }) {
      const y = ops.transpose(x, permutation);
      return [[y], [mapZ(t, (t) => ops.transpose(t, permutation), y.aval)]];
    },
    transpose([ct], [x], { permutation }) {
      const inv = permutation.map((_, i) => permutation.indexOf(i));
      return [ct instanceof Zero ? new Zero((x as UndefinedPrimal).aval) : ops.transpose(ct, inv)];
    },
    vmap(_axis, [x], [d], { permutation }) {
      const perm = [d!, ...permutation.map((p) => (p >= d! ? p + 1 : p))];
      return [[ops.transpose(x, perm)], [0]];
    },
  },
  { cost: "move", exactOnScalars: true },
);

// ---------------------------------------------------------------- squeeze
export const squeezeP = new Primitive<{ dimensions: number[] }>(
  "squeeze",
  {
    lower: (ctx, [x], _p, _a, [o]) => [lowerReshape(ctx, x, o.shape)],
    abstractEval([x], { dimensions }) {
      for (const d of dimensions)
        if (d < 0 || d >= x.ndim || x.shape[d] !== 1)
          throw new TypeError(`squeeze: cannot squeeze dimension ${d} of ${x.str()}; it must have size 1`);
      return [
        new ShapedArray(
          x.shape.filter((_, i) => !dimensions.includes(i)),
          x.dtype,
          x.weakType,
        ),
      ];
    },
    impl([x], _p, [out]) {
      return [new ArrayImpl(out, x.buffer.slice())];
    },
    jvp([x], [t], p) {
      const y = ops.squeeze(x, p.dimensions);
      return [[y], [mapZ(t, (t) => ops.squeeze(t, p.dimensions), y.aval)]];
    },
    transpose([ct], [x]) {
      const a = (x as UndefinedPrimal).aval;
      return [ct instanceof Zero ? new Zero(a) : ops.reshape(ct, a.shape)];
    },
    vmap(_axis, [x], [d], { dimensions }) {
      return [
        [
          ops.squeeze(
            ops.moveaxis(x, d!, 0),
            dimensions.map((q) => q + 1),
          ),
        ],
        [0],
      ];
    },
  },
  { cost: "view", exactOnScalars: true },
);

// ---------------------------------------------------------------- rev
export const revP = new Primitive<{ dimensions: number[] }>(
  "rev",
  {
    lower: (ctx, [x], p) => [LS.rev(ctx, x, p.dimensions)],
    abstractEval([x], { dimensions }) {
      for (const d of dimensions)
        if (d < 0 || d >= x.ndim) throw new TypeError(`rev: dimension ${d} out of range for ${x.str()}`);
      return [x];
    },
    impl([x], { dimensions }, [out]) {
      const xs = stridesOf(x.shape);
      let off = 0;
      const st = xs.map((s, i) => {
        if (dimensions.includes(i)) {
          off += s * (x.shape[i] - 1);
          return -s;
        }
        return s;
      });
      const o = allocate(out.dtype, out.size);
      if (out.size) stridedGather(x.buffer, x.shape, st, off, o);
      return [new ArrayImpl(out, o)];
    },
    jvp([x], [t], p) {
      const y = ops.rev(x, p.dimensions);
      return [[y], [mapZ(t, (t) => ops.rev(t, p.dimensions), y.aval)]];
    },
    transpose([ct], [x], p) {
      return [ct instanceof Zero ? new Zero((x as UndefinedPrimal).aval) : ops.rev(ct, p.dimensions)];
    },
    vmap(_axis, [x], [d], { dimensions }) {
      return [
        [
          ops.rev(
            x,
            dimensions.map((q) => (q >= d! ? q + 1 : q)),
          ),
        ],
        [d],
      ];
    },
  },
  { cost: "move", exactOnScalars: true },
);

// ---------------------------------------------------------------- pad (lo, hi, interior per dim; negative lo/hi crop)
export const padP = new Primitive<{ padding_config: [number, number, number][] }>(
  "pad",
  {
    lower: (ctx, [x, v], p, [a]) => [LS.pad(ctx, x, v, a, p.padding_config)],
    abstractEval([x, v], { padding_config: pc }) {
      if (v.ndim !== 0 || v.dtype !== x.dtype)
        throw new TypeError(`pad: padding value must be a scalar of ${x.dtype}, got ${v.str()}`);
      if (pc.length !== x.ndim) throw new TypeError(`pad: padding_config has ${pc.length} entries for ${x.str()}`);
      const shape = x.shape.map((n, i) => {
        const [lo, hi, int] = pc[i];
        if (int < 0) throw new TypeError(`pad: interior padding must be non-negative, got ${int}`);
        const s = lo + hi + n + Math.max(0, n - 1) * int;
        if (s < 0) throw new TypeError(`pad: dimension ${i} of ${x.str()} would have negative size ${s}`);
        return s;
      });
      return [new ShapedArray(shape, x.dtype, x.weakType)];
    },
    impl([x, v], { padding_config: pc }, [out]) {
      const o = allocate(out.dtype, out.size);
      const fill = v.buffer[0];
      (o as Float64Array).fill(fill as number);
      const xs = x.shape,
        os = stridesOf(out.shape);
      const n = x.size,
        idx = new globalThis.Array<number>(x.ndim).fill(0);
      for (let k = 0; k < n; k++) {
        let off = 0,
          ok = true;
        for (let d = 0; d < x.ndim; d++) {
          const p = pc[d][0] + idx[d] * (pc[d][2] + 1);
          if (p < 0 || p >= out.shape[d]) {
            ok = false;
            break;
          }
          off += p * os[d];
        }
        if (ok) (o as Float64Array)[off] = (x.buffer as Float64Array)[k];
        for (let d = x.ndim - 1; d >= 0; d--) {
          if (++idx[d] < xs[d]) break;
          idx[d] = 0;
        }
      }
      return [new ArrayImpl(out, o)];
    },
    jvp([x, v], [tx, tv], p) {
      const y = ops.pad(x, v, p.padding_config);
      if (tx instanceof Zero && tv instanceof Zero) return [[y], [new Zero(y.aval)]];
      const txa = tx instanceof Zero ? ops.zerosLikeArray(x) : tx;
      const tva = tv instanceof Zero ? ops.zerosLikeArray(v) : tv;
      return [[y], [ops.pad(txa, tva, p.padding_config)]];
    },
    transpose([ct], [x, v], { padding_config: pc }) {
      const ax = x instanceof UndefinedPrimal ? x.aval : (x as Array).aval;
      if (ct instanceof Zero) return [new Zero(ax), v instanceof UndefinedPrimal ? new Zero(v.aval) : null];
      // undo: crop lo/hi (negative padding) then take every (interior+1)-th element
      const unpadded = ops.pad(
        ct,
        ops.scalarLike(ct, 0),
        pc.map(([lo, hi]) => [-lo, -hi, 0] as [number, number, number]),
      );
      const tx = ops.slice(
        unpadded,
        ax.shape.map(() => 0),
        unpadded.shape,
        pc.map(([, , i]) => i + 1),
      );
      const tv =
        v instanceof UndefinedPrimal
          ? ops.sub(ops.reduceSum(ct, [...ct.shape.keys()]), ops.reduceSum(tx, [...tx.shape.keys()]))
          : null;
      return [x instanceof UndefinedPrimal ? tx : null, tv];
    },
    vmap(axis, [x, v], [dx, dv], { padding_config: pc }) {
      if (dv !== null) {
        // batched padding value: pad with zero then select the padding region
        const xb = dx === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, dx, 0);
        const padded = ops.pad(xb, ops.scalarLike(x, 0), [[0, 0, 0], ...pc]);
        const mask = ops.pad(ops.fullLike(xb, true, "bool"), ops.scalarLike(ops.fullLike(xb, true, "bool"), false), [
          [0, 0, 0],
          ...pc,
        ]);
        const vb = ops.broadcastInDim(ops.moveaxis(v, dv, 0), padded.shape, [0]);
        return [[ops.select(mask, padded, vb)], [0]];
      }
      const cfg = [...pc];
      cfg.splice(dx!, 0, [0, 0, 0]);
      return [[ops.pad(x, v, cfg)], [dx]];
    },
  },
  { cost: "move", exactOnScalars: true },
);

// ---------------------------------------------------------------- concatenate
export const concatenateP = new Primitive<{ dimension: number }>(
  "concatenate",
  {
    lower: (ctx, xs, p) => [xs.length === 1 ? xs[0] : ctx.op("Concat", xs, { axis: p.dimension })],
    abstractEval(xs, { dimension: d }) {
      if (xs.length === 0) throw new TypeError("concatenate: needs at least one operand");
      const r = xs[0];
      if (d < 0 || d >= r.ndim) throw new TypeError(`concatenate: dimension ${d} out of range for ${r.str()}`);
      for (const x of xs) {
        if (x.dtype !== r.dtype || x.ndim !== r.ndim || x.shape.some((n, i) => i !== d && n !== r.shape[i])) {
          throw new TypeError(
            `concatenate: operands must agree in dtype and in all dimensions except ${d}; got ${xs.map((a) => a.str()).join(", ")}`,
          );
        }
      }
      const shape = [...r.shape];
      shape[d] = xs.reduce((a, x) => a + x.shape[d], 0);
      return [
        new ShapedArray(
          shape,
          r.dtype,
          xs.every((x) => x.weakType),
        ),
      ];
    },
    impl(xs, { dimension: d }, [out]) {
      const o = allocate(out.dtype, out.size);
      const outer = prod(out.shape.slice(0, d)),
        inner = prod(out.shape.slice(d + 1));
      let off = 0;
      for (const x of xs) {
        const w = x.shape[d] * inner;
        for (let i = 0; i < outer; i++)
          (o as Float64Array).set(
            (x.buffer as Float64Array).subarray(i * w, (i + 1) * w),
            i * out.shape[d] * inner + off,
          );
        off += w;
      }
      return [new ArrayImpl(out, o)];
    },
    jvp(xs, ts, p) {
      const y = ops.concatenate(xs, p.dimension);
      if (ts.every((t) => t instanceof Zero) as boolean) return [[y], [new Zero(y.aval)]];
      return [
        [y],
        [
          ops.concatenate(
            ts.map((t, i) => (t instanceof Zero ? ops.zerosLikeArray(xs[i]) : t)),
            p.dimension,
          ),
        ],
      ];
    },
    transpose([ct], xs, { dimension: d }) {
      let start = 0;
      return xs.map((x) => {
        const a = x instanceof UndefinedPrimal ? x.aval : (x as Array).aval;
        const s = start;
        start += a.shape[d];
        if (!(x instanceof UndefinedPrimal)) return null;
        if (ct instanceof Zero) return new Zero(a);
        const st = a.shape.map(() => 0);
        st[d] = s;
        const lim = [...ct.shape];
        lim[d] = s + a.shape[d];
        return ops.slice(ct, st, lim);
      });
    },
    vmap(axis, xs, dims, { dimension }) {
      const ys = xs.map((x, i) =>
        dims[i] === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, dims[i]!, 0),
      );
      return [[ops.concatenate(ys, dimension + 1)], [0]];
    },
  },
  { cost: "move", exactOnScalars: true },
);

// ---------------------------------------------------------------- slice
export interface SliceParams {
  start_indices: number[];
  limit_indices: number[];
  strides: number[] | null;
  [k: string]: unknown;
}
export const sliceP = new Primitive<SliceParams>(
  "slice",
  {
    lower: (ctx, [x], p, [a]) => [
      LS.slice(ctx, x, p.start_indices, p.limit_indices, [...a.shape.keys()], p.strides ?? undefined),
    ],
    abstractEval([x], { start_indices: s, limit_indices: l, strides }) {
      if (s.length !== x.ndim || l.length !== x.ndim)
        throw new TypeError(
          `slice: start_indices ${shapeStr(s)} and limit_indices ${shapeStr(l)} must have one entry per dimension of ${x.str()}`,
        );
      const shape = x.shape.map((n, i) => {
        const st = strides ? strides[i] : 1;
        if (s[i] < 0 || l[i] > n || s[i] > l[i] || st < 1)
          throw new TypeError(
            `slice: invalid start ${s[i]}, limit ${l[i]}, stride ${st} for dimension ${i} of ${x.str()}`,
          );
        return Math.ceil((l[i] - s[i]) / st);
      });
      return [new ShapedArray(shape, x.dtype, x.weakType)];
    },
    impl([x], { start_indices: s, strides }, [out]) {
      const xs = stridesOf(x.shape);
      const o = allocate(out.dtype, out.size);
      const off = s.reduce((a, v, i) => a + v * xs[i], 0);
      stridedGather(
        x.buffer,
        out.shape,
        xs.map((v, i) => v * (strides ? strides[i] : 1)),
        off,
        o,
      );
      return [new ArrayImpl(out, o)];
    },
    jvp([x], [t], p) {
      const y = ops.slice(x, p.start_indices, p.limit_indices, p.strides);
      return [[y], [mapZ(t, (t) => ops.slice(t, p.start_indices, p.limit_indices, p.strides), y.aval)]];
    },
    transpose([ct], [x], { start_indices: s, strides }) {
      const a = (x as UndefinedPrimal).aval;
      if (ct instanceof Zero) return [new Zero(a)];
      // pad back: lo = start, interior = stride-1, hi = what remains
      const cfg = a.shape.map((n, i): [number, number, number] => {
        const st = strides ? strides[i] : 1;
        const used = ct.shape[i] === 0 ? 0 : s[i] + (ct.shape[i] - 1) * st + 1;
        return [s[i], n - used - (ct.shape[i] === 0 ? s[i] : 0), st - 1];
      });
      return [ops.pad(ct, ops.scalarLike(ct, 0), cfg)];
    },
    vmap(axis, [x], [d], { start_indices: s, limit_indices: l, strides }) {
      const xm = ops.moveaxis(x, d!, 0);
      return [[ops.slice(xm, [0, ...s], [axis.size, ...l], strides ? [1, ...strides] : null)], [0]];
    },
  },
  { cost: "move", exactOnScalars: true },
);

// ---------------------------------------------------------------- convert_element_type
export const convertElementTypeP = new Primitive<{ new_dtype: DType; weak_type: boolean; sharding: null }>(
  "convert_element_type",
  {
    lower: (ctx, [x], p, [a]) => [cast(ctx, x, a.dtype, p.new_dtype)],
    abstractEval([x], { new_dtype, weak_type }) {
      return [new ShapedArray(x.shape, new_dtype, weak_type)];
    },
    impl([x], { new_dtype }, [out]) {
      return [new ArrayImpl(out, convertStorage(x.buffer, x.dtype, new_dtype))];
    },
    jvp([x], [t], p) {
      const y = ops.convert(x, p.new_dtype, p.weak_type);
      if (t instanceof Zero || !isInexact(p.new_dtype) || !isInexact(x.dtype)) return [[y], [new Zero(y.aval)]];
      return [[y], [ops.convert(t, p.new_dtype, p.weak_type)]];
    },
    transpose([ct], [x]) {
      const a = (x as UndefinedPrimal).aval;
      return [ct instanceof Zero ? new Zero(a) : ops.convert(ct, a.dtype, a.weakType)];
    },
    vmap: undefined,
  },
  { cost: "move", exactOnScalars: true, shapePolymorphic: true },
);
convertElementTypeP.rules.vmap = vmapElementwise(convertElementTypeP);

// ---------------------------------------------------------------- bitcast_convert_type (equal widths)
export const bitcastConvertTypeP = new Primitive<{ new_dtype: DType }>(
  "bitcast_convert_type",
  {
    lower: (ctx, [x], p, [a]) => [LS.bitcast(ctx, x, a.dtype, p.new_dtype)],
    abstractEval([x], { new_dtype }) {
      if (itemsize(x.dtype) !== itemsize(new_dtype))
        throw new TypeError(
          `bitcast_convert_type: ${x.dtype} and ${new_dtype} differ in width (only equal widths are supported)`,
        );
      return [new ShapedArray(x.shape, new_dtype, false)];
    },
    impl([x], { new_dtype }, [out]) {
      const o = allocate(new_dtype, out.size);
      new Uint8Array(o.buffer, o.byteOffset, o.byteLength).set(
        new Uint8Array(x.buffer.buffer, x.buffer.byteOffset, x.buffer.byteLength),
      );
      return [new ArrayImpl(out, o)];
    },
    jvp([x], _t, p) {
      const y = ops.bitcast(x, p.new_dtype);
      return [[y], [new Zero(y.aval)]];
    },
  },
  { cost: "view", exactOnScalars: true, shapePolymorphic: true },
);
bitcastConvertTypeP.rules.vmap = vmapElementwise(bitcastConvertTypeP);

// ---------------------------------------------------------------- select_n(pred, *cases)
export const selectNP = new Primitive(
  "select_n",
  {
    lower: (ctx, [p, ...cases], _p, [pa], [o]) => [LS.selectN(ctx, p, pa.dtype, cases, o.dtype)],
    abstractEval([p, ...cases]) {
      if (cases.length === 0) throw new TypeError("select_n: needs at least one case");
      const c0 = cases[0];
      if (p.dtype !== "bool" && p.dtype !== "int32")
        throw new TypeError(`select_n: predicate must be bool or int32, got ${p.str()}`);
      if (p.dtype === "bool" && cases.length > 2)
        throw new TypeError("select_n: a bool predicate selects between at most 2 cases");
      for (const c of cases)
        if (!c.sameType(c0))
          throw new TypeError(
            `select_n: cases must have the same shape and dtype, got ${cases.map((c) => c.str()).join(", ")}`,
          );
      if (p.ndim !== 0 && p.shape.join() !== c0.shape.join())
        throw new TypeError(`select_n: predicate ${p.str()} must be scalar or match the cases' shape ${c0.str()}`);
      return [
        new ShapedArray(
          c0.shape,
          c0.dtype,
          cases.every((c) => c.weakType),
        ),
      ];
    },
    impl([p, ...cases], _params, [out]) {
      const pv = nums(p);
      const o = allocate(out.dtype, out.size) as Float64Array;
      const cs = cases.map((c) => c.buffer as Float64Array);
      for (let i = 0; i < out.size; i++) o[i] = cs[pv.length === 1 ? pv[0] : pv[i]][i];
      return [new ArrayImpl(out, o)];
    },
    jvp([p, ...cases], [, ...ts]) {
      const y = ops.selectN(p, cases);
      if (ts.every((t) => t instanceof Zero) as boolean) return [[y], [new Zero(y.aval)]];
      return [
        [y],
        [
          ops.selectN(
            p,
            ts.map((t, i) => (t instanceof Zero ? ops.zerosLikeArray(cases[i]) : t)),
          ),
        ],
      ];
    },
    transpose([ct], [p, ...cases]) {
      if (p instanceof UndefinedPrimal) throw new Error("select_n transpose: the predicate cannot be linear");
      return [
        null,
        ...cases.map((c, i) => {
          if (!(c instanceof UndefinedPrimal)) return null;
          if (ct instanceof Zero) return new Zero(c.aval);
          const z = ops.zerosLikeArray(ct);
          return ops.selectN(
            p as Array,
            cases.map((_, j) => (j === i ? ct : z)),
          );
        }),
      ];
    },
    vmap(axis, [p, ...cases], [dp, ...dcs]) {
      const shape = dcs.some((d) => d !== null) ? cases[dcs.findIndex((d) => d !== null)] : p;
      void shape;
      const cs = cases.map((c, i) =>
        dcs[i] === null ? ops.broadcastBatch(c, axis.size, 0) : ops.moveaxis(c, dcs[i]!, 0),
      );
      let pp: Array;
      if (dp === null) pp = p.ndim === 0 ? p : ops.broadcastBatch(p, axis.size, 0);
      else pp = ops.broadcastInDim(ops.moveaxis(p, dp, 0), cs[0].shape, [...globalThis.Array(p.ndim).keys()]);
      return [[ops.selectN(pp, cs)], [0]];
    },
  },
  { exactOnScalars: true, shapePolymorphic: true },
);

// ---------------------------------------------------------------- clamp(min, x, max)
export const clampP = new Primitive(
  "clamp",
  {
    lower: (ctx, [lo, x, hi], _p, [, a]) => [LS.clamp(ctx, lo, x, hi, a.dtype)],
    abstractEval([lo, x, hi]) {
      for (const b of [lo, hi])
        if (b.dtype !== x.dtype || (b.ndim !== 0 && b.shape.join() !== x.shape.join()))
          throw new TypeError(
            `clamp: bounds must be scalars or match the operand; got min ${lo.str()}, x ${x.str()}, max ${hi.str()}`,
          );
      return [x];
    },
    impl([lo, x, hi], _p, [out]) {
      const l = nums(lo),
        xs = nums(x),
        h = nums(hi);
      return [
        fromNums(
          out,
          xs.map((v, i) => Math.min(Math.max(v, l.length === 1 ? l[0] : l[i]), h.length === 1 ? h[0] : h[i])),
        ),
      ];
    },
    jvp([lo, x, hi], [tl, tx, th]) {
      const y = ops.clamp(lo, x, hi);
      const pick = (t: MaybeZero, m: Array) => (t instanceof Zero ? null : ops.select(m, t, ops.zerosLikeArray(t)));
      const b = (v: Array) => (v.ndim === 0 ? ops.broadcastInDim(v, x.shape, []) : v);
      const parts = [
        pick(tx, ops.and(ops.ge(x, b(lo)), ops.le(x, b(hi)))),
        tl instanceof Zero ? null : pick(b(tl), ops.lt(x, b(lo))),
        th instanceof Zero ? null : pick(b(th), ops.gt(x, b(hi))),
      ].filter((v): v is Array => v !== null);
      return [[y], [parts.length ? parts.reduce((a, c) => ops.add(a, c)) : new Zero(y.aval)]];
    },
    vmap(axis, args, dims) {
      const xs = args.map((a, i) =>
        dims[i] === null
          ? a.ndim === 0 && i !== 1
            ? a
            : ops.broadcastBatch(a, axis.size, 0)
          : ops.moveaxis(a, dims[i]!, 0),
      );
      // per-example operand shape, then the batched full shape every operand broadcasts to
      const exShape = dims[1] === null ? args[1].shape : args[1].shape.filter((_, k) => k !== dims[1]);
      const shape = [axis.size, ...exShape];
      const full = xs.map((a) => (a.ndim === shape.length ? a : ops.broadcastInDim(a, shape, a.ndim === 0 ? [] : [0])));
      return [[ops.clamp(full[0], full[1], full[2])], [0]];
    },
  },
  { exactOnScalars: true, shapePolymorphic: true },
);

// ---------------------------------------------------------------- iota
export const iotaP = new Primitive<{ dtype: DType; shape: number[]; dimension: number; sharding: null }>(
  "iota",
  {
    lower: (ctx, _x, p) => [LS.iota(ctx, p.dtype, p.shape, p.dimension)],
    abstractEval(_a, { dtype, shape, dimension }) {
      if (dimension < 0 || dimension >= shape.length)
        throw new TypeError(`iota: dimension ${dimension} out of range for shape ${shapeStr(shape)}`);
      return [new ShapedArray(shape, dtype, false)];
    },
    impl(_a, { shape, dimension }, [out]) {
      const st = stridesOf(shape);
      const v = new Float64Array(out.size);
      for (let i = 0; i < v.length; i++) v[i] = Math.floor(i / st[dimension]) % shape[dimension];
      return [fromNums(out, v)];
    },
    jvp(_p, _t, params) {
      const y = ops.iota(params.dtype, params.shape, params.dimension);
      return [[y], [new Zero(y.aval)]];
    },
    missing: { vmap: "iota takes no operands, so it is never batched" },
  },
  { cost: "move", exactOnScalars: true },
);

export type { BDim };
