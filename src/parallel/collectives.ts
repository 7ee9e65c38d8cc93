/**
 * @file Collective primitives over named axes (psum, pmax, pmin, all_gather, ppermute, all_to_all, psum_scatter,
 * axis_index). Under vmap they reduce over the batch dimension of the matching axis name; shardMap/pmap add the
 * multi-device implementation. Outside any mapped axis they fail with an error naming the axis.
 */
import type { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { type AxisData, type BDim, Primitive, Zero } from "../core/primitive.js";
import { axisSizeOf, bind, bind1 } from "../core/trace.js";
import * as ops from "../primitives/ops.js";

type AxisNames = string[];
const COLLECTIVE_LOWER = "collectives are eliminated by vmap's batching rules; per-device lowering comes with shardMap/pmap";
const unbound = (prim: string, axes: AxisNames) =>
  new Error(`${prim}: unbound axis name ${axes.map((a) => JSON.stringify(a)).join(", ")}. Collectives need an enclosing vmap/pmap/shardMap/xmap whose axisName is one of these`);
const names = (x: string | string[]): AxisNames => (typeof x === "string" ? [x] : [...x]);

/** Reduction collectives: with the named batch axis, reduce it away (the result is the same for every member). */
function defReduceCollective(name: string, reduce: (x: Array, axes: number[]) => Array, linear: boolean): Primitive<{ axes: AxisNames; axis_index_groups: number[][] | null }> {
  type P = { axes: AxisNames; axis_index_groups: number[][] | null };
  const p: Primitive<P> = new Primitive<P>(name, {
    abstractEval([x]) { return [x]; },
    impl(_args, { axes }) { throw unbound(name, axes); },
    vmap(axis: AxisData, [x]: Array[], [d]: BDim[], params: P): [Array[], BDim[]] {
      if (!axis.name || !params.axes.includes(axis.name)) return [[bind1(p, [x], params)], [d]];
      const rest = params.axes.filter((a) => a !== axis.name);
      let out: Array;
      const groups = params.axis_index_groups;
      const xb = d === null ? ops.broadcastBatch(x, axis.size, 0) : ops.moveaxis(x, d, 0);
      if (groups) {
        // reduce within each group; members get their group's result
        const perMember: Array[] = new globalThis.Array(axis.size);
        for (const g of groups) {
          const parts = g.map((i) => ops.sliceInDim(xb, i, i + 1, 1, 0));
          const red = reduce(ops.concatenate(parts, 0), [0]);
          for (const i of g) perMember[i] = ops.reshape(red, [1, ...red.shape]);
        }
        const covered = perMember.every((v) => v !== undefined);
        if (!covered) throw new Error(`${name}: axis_index_groups ${JSON.stringify(groups)} must cover every index of axis ${axis.name} (size ${axis.size})`);
        out = ops.concatenate(perMember, 0);
        const r = rest.length ? bind1(p, [out], { ...params, axes: rest }) : out;
        return [[r], [0]];
      }
      out = reduce(xb, [0]);
      return [[rest.length ? bind1(p, [out], { ...params, axes: rest }) : out], [null]];
    },
    jvp: linear
      ? ([x], [t], params) => { const y = bind1(p, [x], params); return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(p, [t], params)]]; }
      : ([x], [t], params) => {
        // pmax/pmin: the tangent of the member(s) attaining the extremum, averaged over ties
        const y = bind1(p, [x], params);
        if (t instanceof Zero) return [[y], [new Zero(y.aval)]];
        const hit = ops.convert(ops.eq(x, y), x.dtype);
        return [[y], [ops.div(bind1(psumP, [ops.mul(t, hit)], params), bind1(psumP, [hit], params))]];
      },
    // psum's transpose (JAX's shard_map semantics with varying-axis tracking): a cotangent that varies over the
    // axis is summed (psum); an invariant one (the same on every member) flows back unchanged (pvary)
    transpose: linear ? ([ct], _args, params) => [ct instanceof Zero ? ct : bind1(psumTransposeP, [ct], params)] : undefined,
    missing: { lower: COLLECTIVE_LOWER },
  }, { collective: true });
  return p;
}
export const psumP = defReduceCollective("psum", (x, a) => ops.reduceSum(x, a), true);

/** The transpose of psum: psum of a varying (batched) cotangent, identity on an invariant (unbatched) one. */
export const psumTransposeP: Primitive<{ axes: AxisNames; axis_index_groups: number[][] | null }> = new Primitive<{ axes: AxisNames; axis_index_groups: number[][] | null }>("psum_transpose", {
  abstractEval([x]) { return [x]; },
  impl(_a, { axes }) { throw unbound("psum_transpose", axes); },
  vmap(axis, [x], [d], params) {
    if (!axis.name || !params.axes.includes(axis.name)) return [[bind1(psumTransposeP, [x], params)], [d]];
    const rest = params.axes.filter((a) => a !== axis.name);
    const again = (v: Array) => (rest.length ? bind1(psumTransposeP, [v], { ...params, axes: rest }) : v);
    if (d === null) return [[again(x)], [null]];
    const [[y], [dy]] = psumP.rules.vmap!(axis, [x], [d], { ...params, axes: [axis.name] });
    return [[again(y)], [dy]];
  },
  jvp([x], [t], params) { const y = bind1(psumTransposeP, [x], params); return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(psumTransposeP, [t], params)]]; },
  transpose([ct], _a, params) { return [ct instanceof Zero ? ct : bind1(psumP, [ct], params)]; },
  missing: { lower: COLLECTIVE_LOWER },
}, { collective: true });
export const pmaxP = defReduceCollective("pmax", (x, a) => ops.reduceMax(x, a), false);
export const pminP = defReduceCollective("pmin", (x, a) => ops.reduceMin(x, a), false);

export const axisIndexP: Primitive<{ axis_name: string }> = new Primitive<{ axis_name: string }>("axis_index", {
  abstractEval() { return [new ShapedArray([], "int32")]; },
  impl(_a, { axis_name }) { throw unbound("axis_index", [axis_name]); },
  vmap(axis, _args, _dims, params) {
    if (axis.name !== params.axis_name) return [[bind1(axisIndexP, [], params)], [null]];
    return [[ops.iota("int32", [axis.size], 0)], [0]];
  },
  jvp(_p, _t, params) { const y = bind1(axisIndexP, [], params); return [[y], [new Zero(y.aval)]]; },
  missing: { lower: COLLECTIVE_LOWER },
}, { collective: true });

type AGP = { axis_name: string; axis: number; tiled: boolean; axis_size: number; axis_index_groups: number[][] | null };
export const allGatherP: Primitive<AGP> = new Primitive<AGP>("all_gather", {
  abstractEval([x], { axis, tiled, axis_size: n, axis_index_groups: g }) {
    const axis_size = g ? g[0].length : n;
    if (axis < 0 || axis > x.ndim - (tiled ? 1 : 0)) throw new TypeError(`all_gather: axis ${axis} out of range for ${x.str()}`);
    const s = [...x.shape];
    if (tiled) s[axis] *= axis_size; else s.splice(axis, 0, axis_size);
    return [x.update({ shape: s })];
  },
  impl(_a, { axis_name }) { throw unbound("all_gather", [axis_name]); },
  vmap(axisD, [x], [d], { axis_name, axis, tiled, axis_index_groups: groups }) {
    if (axisD.name !== axis_name) throw new Error(`all_gather over ${axis_name} inside a vmap over ${axisD.name ?? "an unnamed axis"}: nested named axes are supported by shardMap, not vmap`);
    const xb = d === null ? ops.broadcastBatch(x, axisD.size, 0) : ops.moveaxis(x, d, 0);
    const gather = (v: Array) => {
      let out = ops.moveaxis(v, 0, axis);
      if (tiled) {
        const s = [...out.shape];
        s.splice(axis, 2, s[axis] * s[axis + 1]);
        out = ops.reshape(out, s);
      }
      return out;
    };
    if (!groups) return [[gather(xb)], [null]];
    // each member receives the stack of its group, in the group's member order
    const per: Array[] = new globalThis.Array(axisD.size);
    for (const g of groups) {
      const r = gather(ops.concatenate(g.map((i) => ops.sliceInDim(xb, i, i + 1, 1, 0)), 0));
      for (const i of g) per[i] = ops.reshape(r, [1, ...r.shape]);
    }
    if (per.some((v) => v === undefined)) throw new Error(`all_gather: axis_index_groups ${JSON.stringify(groups)} must cover axis ${axis_name} of size ${axisD.size}`);
    return [[ops.concatenate(per, 0)], [0]];
  },
  jvp([x], [t], p) { const y = bind1(allGatherP, [x], p); return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(allGatherP, [t], p)]]; },
  missing: { lower: COLLECTIVE_LOWER },
}, { collective: true });

/** lax.psum(x, axisName, { axisIndexGroups }) over a pytree leaf. */
export const psum = (x: Array, axisName: string | string[], opts: { axisIndexGroups?: number[][] } = {}): Array =>
  bind1(psumP, [x], { axes: names(axisName), axis_index_groups: opts.axisIndexGroups ?? null });
export const pmax = (x: Array, axisName: string | string[], opts: { axisIndexGroups?: number[][] } = {}): Array =>
  bind1(pmaxP, [x], { axes: names(axisName), axis_index_groups: opts.axisIndexGroups ?? null });
export const pmin = (x: Array, axisName: string | string[], opts: { axisIndexGroups?: number[][] } = {}): Array =>
  bind1(pminP, [x], { axes: names(axisName), axis_index_groups: opts.axisIndexGroups ?? null });
/** lax.axisSize(name): psum of 1 over the axis, as JAX computes it. */
export const axisSize = (axisName: string | string[]): Array => psum(ops.full([], 1, "int32"), axisName);
export const pmean = (x: Array, axisName: string | string[], opts: { axisIndexGroups?: number[][] } = {}): Array => {
  const n = psum(ops.fullLike(x, 1), axisName, opts);
  return ops.div(psum(x, axisName, opts), n);
};
/** lax.axisIndex(name | names): over several axes the index is row-major, sum_k idx(a_k) * prod(size(a_{k+1..})). */
export const axisIndex = (axisName: string | string[]): Array => {
  const ns = names(axisName);
  let r: Array = bind1(axisIndexP, [], { axis_name: ns[0] });
  for (const n of ns.slice(1)) r = ops.add(ops.mul(r, axisSizeOf("axis_index", n)), bind1(axisIndexP, [], { axis_name: n }));
  return r;
};
export const allGather = (x: Array, axisName: string, opts: { axis?: number; tiled?: boolean; axisIndexGroups?: number[][] } = {}): Array =>
  bind(allGatherP, [x], { axis_name: axisName, axis: opts.axis ?? 0, tiled: opts.tiled ?? false, axis_size: axisSizeOf("all_gather", axisName), axis_index_groups: opts.axisIndexGroups ?? null })[0];

// ---------------------------------------------------------------- ppermute, psum_scatter, all_to_all
type PPP = { axis_name: string; perm: [number, number][] };
export const ppermuteP: Primitive<PPP> = new Primitive<PPP>("ppermute", {
  abstractEval([x], { perm }) {
    const srcs = new Set(perm.map((p) => p[0])), dsts = new Set(perm.map((p) => p[1]));
    if (srcs.size !== perm.length || dsts.size !== perm.length) throw new TypeError(`ppermute: perm ${JSON.stringify(perm)} must not repeat a source or a destination`);
    return [x];
  },
  impl(_a, { axis_name }) { throw unbound("ppermute", [axis_name]); },
  vmap(axisD, [x], [d], p) {
    if (axisD.name !== p.axis_name) return [[bind1(ppermuteP, [x], p)], [d]];
    const xb = d === null ? ops.broadcastBatch(x, axisD.size, 0) : ops.moveaxis(x, d, 0);
    for (const [a, b] of p.perm) if (a < 0 || b < 0 || a >= axisD.size || b >= axisD.size) throw new RangeError(`ppermute: perm entry ${JSON.stringify([a, b])} out of range for axis ${p.axis_name} of size ${axisD.size}`);
    // member dst receives member src's value; members that receive nothing get zeros
    const zero = ops.zerosLikeArray(ops.sliceInDim(xb, 0, 1, 1, 0));
    const parts = [...globalThis.Array(axisD.size).keys()].map((dst) => {
      const pr = p.perm.find((q) => q[1] === dst);
      return pr ? ops.sliceInDim(xb, pr[0], pr[0] + 1, 1, 0) : zero;
    });
    return [[ops.concatenate(parts, 0)], [0]];
  },
  jvp([x], [t], p) { const y = bind1(ppermuteP, [x], p); return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(ppermuteP, [t], p)]]; },
  // the transpose of a permutation is the inverse permutation
  transpose([ct], _a, p) { return [ct instanceof Zero ? ct : bind1(ppermuteP, [ct], { ...p, perm: p.perm.map(([a, b]) => [b, a] as [number, number]) })]; },
  missing: { lower: COLLECTIVE_LOWER },
}, { collective: true });

type PSP = { axis_name: string; scatter_dimension: number; tiled: boolean; axis_size: number };
export const psumScatterP: Primitive<PSP> = new Primitive<PSP>("reduce_scatter", {
  abstractEval([x], { scatter_dimension: sd, tiled, axis_size: n }) {
    const s = [...x.shape];
    if (tiled) { if (s[sd] % n) throw new TypeError(`psum_scatter: dimension ${sd} of ${x.str()} must be divisible by the axis size ${n}`); s[sd] /= n; }
    else { if (s[sd] !== n) throw new TypeError(`psum_scatter: dimension ${sd} of ${x.str()} must equal the axis size ${n} (or use tiled)`); s.splice(sd, 1); }
    return [x.update({ shape: s })];
  },
  impl(_a, { axis_name }) { throw unbound("psum_scatter", [axis_name]); },
  vmap(axisD, [x], [d], p) {
    if (axisD.name !== p.axis_name) return [[bind1(psumScatterP, [x], p)], [d]];
    const xb = d === null ? ops.broadcastBatch(x, axisD.size, 0) : ops.moveaxis(x, d, 0);
    const total = ops.reduceSum(xb, [0]);
    const n = axisD.size, sd = p.scatter_dimension;
    const sh = [...total.shape];
    const split = p.tiled ? [...sh.slice(0, sd), n, sh[sd] / n, ...sh.slice(sd + 1)] : sh;
    return [[ops.moveaxis(ops.reshape(total, split), sd, 0)], [0]];
  },
  jvp([x], [t], p) { const y = bind1(psumScatterP, [x], p); return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(psumScatterP, [t], p)]]; },
  missing: { lower: COLLECTIVE_LOWER },
}, { collective: true });

type ATA = { axis_name: string; split_axis: number; concat_axis: number; tiled: boolean; axis_size: number };
export const allToAllP: Primitive<ATA> = new Primitive<ATA>("all_to_all", {
  abstractEval([x], { split_axis: sa, concat_axis: ca, tiled, axis_size: n }) {
    const s = [...x.shape];
    if (tiled) {
      if (s[sa] % n) throw new TypeError(`all_to_all: split axis ${sa} of ${x.str()} must be divisible by the axis size ${n}`);
      s[sa] /= n; s[ca] *= n;
    } else {
      // np.insert(np.delete(shape, split_axis), concat_axis, axis_size)
      if (s[sa] !== n) throw new TypeError(`all_to_all: split axis ${sa} of ${x.str()} must equal the axis size ${n}`);
      s.splice(sa, 1);
      s.splice(ca, 0, n);
    }
    return [x.update({ shape: s })];
  },
  impl(_a, { axis_name }) { throw unbound("all_to_all", [axis_name]); },
  vmap(axisD, [x], [d], p) {
    if (axisD.name !== p.axis_name) return [[bind1(allToAllP, [x], p)], [d]];
    const n = axisD.size, { split_axis: sa, concat_axis: ca } = p;
    const xb = d === null ? ops.broadcastBatch(x, n, 0) : ops.moveaxis(x, d, 0); // [j, ...x]
    if (!p.tiled) {
      // out_i[..., j at ca, ...] = x_j[..., i at sa, ...]: swap the member axis with the split axis
      const y = ops.moveaxis(xb, 1 + sa, 0); // [i, j, rest]
      return [[ops.moveaxis(y, 1, 1 + ca)], [0]];
    }
    const xs = [...xb.shape];
    const chunk = xs[1 + sa] / n;
    const split = ops.reshape(xb, [...xs.slice(0, 1 + sa), n, chunk, ...xs.slice(2 + sa)]); // [j, .., i, c, ..]
    const y = ops.moveaxis(split, 1 + sa, 0); // [i, j, rest with c at sa]
    const moved = ops.moveaxis(y, 1, 1 + ca); // j just before the concat axis' elements
    const ms = [...moved.shape];
    ms.splice(1 + ca, 2, ms[1 + ca] * ms[2 + ca]);
    return [[ops.reshape(moved, ms)], [0]];
  },
  jvp([x], [t], p) { const y = bind1(allToAllP, [x], p); return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(allToAllP, [t], p)]]; },
  transpose([ct], _a, p) { return [ct instanceof Zero ? ct : bind1(allToAllP, [ct], { ...p, split_axis: p.concat_axis, concat_axis: p.split_axis })]; },
  missing: { lower: COLLECTIVE_LOWER },
}, { collective: true });

export const ppermute = (x: Array, axisName: string, perm: [number, number][]): Array => bind1(ppermuteP, [x], { axis_name: axisName, perm: perm.map(([a, b]) => [a, b] as [number, number]) });
/** lax.pshuffle(x, axisName, perm): member i receives member perm[i]'s value. */
export const pshuffle = (x: Array, axisName: string, perm: number[]): Array => ppermute(x, axisName, perm.map((src, dst) => [src, dst] as [number, number]));
export const psumScatter = (x: Array, axisName: string, opts: { scatterDimension?: number; tiled?: boolean } = {}): Array =>
  bind1(psumScatterP, [x], { axis_name: axisName, scatter_dimension: opts.scatterDimension ?? 0, tiled: opts.tiled ?? false, axis_size: axisSizeOf("psum_scatter", axisName) });
export const allToAll = (x: Array, axisName: string, splitAxis: number, concatAxis: number, opts: { tiled?: boolean } = {}): Array =>
  bind1(allToAllP, [x], { axis_name: axisName, split_axis: splitAxis, concat_axis: concatAxis, tiled: opts.tiled ?? false, axis_size: axisSizeOf("all_to_all", axisName) });
