/**
 * @file Collective primitives over named axes (psum, pmax, pmin, all_gather, ppermute, all_to_all, psum_scatter,
 * axis_index). Under vmap they reduce over the batch dimension of the matching axis name; shardMap/pmap add the
 * multi-device implementation. Outside any mapped axis they fail with an error naming the axis.
 */
import { Array } from "../core/array.js";
import { unflatten } from "../core/tree.js";
import { flattenArrays } from "../transforms/api-util.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { type AxisData, type BDim, Primitive, Zero } from "../core/primitive.js";
import { axisSizeOf, bind1 } from "../core/trace.js";
import * as ops from "../primitives/ops.js";

type AxisNames = string[];
const COLLECTIVE_LOWER =
  "collectives are eliminated by vmap's batching rules; per-device lowering comes with shardMap/pmap";
const unbound = (prim: string, axes: AxisNames) =>
  new Error(
    `${prim}: unbound axis name ${axes.map((a) => JSON.stringify(a)).join(", ")}. Collectives need an enclosing vmap/pmap/shardMap/xmap whose axisName is one of these`,
  );
const names = (x: string | string[]): AxisNames => (typeof x === "string" ? [x] : [...x]);

let axisSubst: ReadonlyMap<string, readonly string[]> | null = null;
/**
 * Runs f with each name in `subst` standing for its tuple of axis names in the public collectives (xmap's resources:
 * a named axis split over mesh axes, and over a local vmap when each device holds a block, is their row-major product).
 */
export function withAxisSubstitution<T>(subst: ReadonlyMap<string, readonly string[]>, f: () => T): T {
  const saved = axisSubst;
  axisSubst = subst;
  try {
    return f();
  } finally {
    axisSubst = saved;
  }
}
/** The caller's axis name(s) with the substitution applied once (internal calls pass substituted names through). */
function substNames(x: unknown): unknown {
  if (!axisSubst || (typeof x !== "string" && !globalThis.Array.isArray(x))) return x;
  const subst = axisSubst;
  const ns = names(x as string | string[]);
  return ns.some((n) => subst.has(n)) ? ns.flatMap((n) => subst.get(n) ?? [n]) : x;
}

let perDevice = 0;
/**
 * Runs f with psum transposing to psum (y_i = sum_j x_j, so ct_x_j = sum_i ct_y_i), the rule of a body transposed
 * as a per-device function, where each device's block is its own variable (shard_map's transpose).
 */
export function withPerDeviceTranspose<T>(f: () => T): T {
  perDevice++;
  try {
    return f();
  } finally {
    perDevice--;
  }
}

/** Reduction collectives: with the named batch axis, reduce it away (the result is the same for every member). */
function defReduceCollective(
  name: string,
  reduce: (x: Array, axes: number[]) => Array,
  linear: boolean,
): Primitive<{ axes: AxisNames; axis_index_groups: number[][] | null }> {
  type P = { axes: AxisNames; axis_index_groups: number[][] | null };
  const p: Primitive<P> = new Primitive<P>(
    name,
    {
      abstractEval([x]) {
        return [x];
      },
      impl(_args, { axes }) {
        throw unbound(name, axes);
      },
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
          if (!covered)
            throw new Error(
              `${name}: axis_index_groups ${JSON.stringify(groups)} must cover every index of axis ${axis.name} (size ${axis.size})`,
            );
          out = ops.concatenate(perMember, 0);
          const r = rest.length ? bind1(p, [out], { ...params, axes: rest }) : out;
          return [[r], [0]];
        }
        out = reduce(xb, [0]);
        return [[rest.length ? bind1(p, [out], { ...params, axes: rest }) : out], [null]];
      },
      jvp: linear
        ? ([x], [t], params) => {
            const y = bind1(p, [x], params);
            return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(p, [t], params)]];
          }
        : ([x], [t], params) => {
            // pmax/pmin: the tangent of the member(s) attaining the extremum, averaged over ties
            const y = bind1(p, [x], params);
            if (t instanceof Zero) return [[y], [new Zero(y.aval)]];
            const hit = ops.convert(ops.eq(x, y), x.dtype);
            return [[y], [ops.div(bind1(psumP, [ops.mul(t, hit)], params), bind1(psumP, [hit], params))]];
          },
      // psum's transpose (JAX's shard_map semantics with varying-axis tracking): a cotangent that varies over the
      // axis is summed (psum); an invariant one (the same on every member) flows back unchanged (pvary)
      // (shard_map's own transpose views every device's value as an independent variable: there psum transposes to psum)
      transpose: linear
        ? ([ct], _args, params) => [ct instanceof Zero ? ct : bind1(perDevice > 0 ? p : psumTransposeP, [ct], params)]
        : undefined,
      missing: { lower: COLLECTIVE_LOWER },
    },
    { collectiveAxisParam: "axes" },
  );
  return p;
}
export const psumP = defReduceCollective("psum", (x, a) => ops.reduceSum(x, a), true);

/** The transpose of psum: psum of a varying (batched) cotangent, identity on an invariant (unbatched) one. */
export const psumTransposeP: Primitive<{ axes: AxisNames; axis_index_groups: number[][] | null }> = new Primitive<{
  axes: AxisNames;
  axis_index_groups: number[][] | null;
}>(
  "psum_transpose",
  {
    abstractEval([x]) {
      return [x];
    },
    impl(_a, { axes }) {
      throw unbound("psum_transpose", axes);
    },
    vmap(axis, [x], [d], params) {
      if (!axis.name || !params.axes.includes(axis.name)) return [[bind1(psumTransposeP, [x], params)], [d]];
      const rest = params.axes.filter((a) => a !== axis.name);
      const again = (v: Array) => (rest.length ? bind1(psumTransposeP, [v], { ...params, axes: rest }) : v);
      if (d === null) return [[again(x)], [null]];
      const [[y], [dy]] = psumP.rules.vmap!(axis, [x], [d], { ...params, axes: [axis.name] });
      return [[again(y)], [dy]];
    },
    jvp([x], [t], params) {
      const y = bind1(psumTransposeP, [x], params);
      return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(psumTransposeP, [t], params)]];
    },
    transpose([ct], _a, params) {
      return [ct instanceof Zero ? ct : bind1(psumP, [ct], params)];
    },
    missing: { lower: COLLECTIVE_LOWER },
  },
  { collectiveAxisParam: "axes" },
);
export const pmaxP = defReduceCollective("pmax", (x, a) => ops.reduceMax(x, a), false);
export const pminP = defReduceCollective("pmin", (x, a) => ops.reduceMin(x, a), false);

export const axisIndexP: Primitive<{ axis_name: string }> = new Primitive<{ axis_name: string }>(
  "axis_index",
  {
    abstractEval() {
      return [new ShapedArray([], "int32")];
    },
    impl(_a, { axis_name }) {
      throw unbound("axis_index", [axis_name]);
    },
    vmap(axis, _args, _dims, params) {
      if (axis.name !== params.axis_name) return [[bind1(axisIndexP, [], params)], [null]];
      return [[ops.iota("int32", [axis.size], 0)], [0]];
    },
    jvp(_p, _t, params) {
      const y = bind1(axisIndexP, [], params);
      return [[y], [new Zero(y.aval)]];
    },
    missing: { lower: COLLECTIVE_LOWER },
  },
  { cost: "move", collectiveAxisParam: "axis_name" },
);

type AGP = { axis_name: string; axis: number; tiled: boolean; axis_size: number; axis_index_groups: number[][] | null };
export const allGatherP: Primitive<AGP> = new Primitive<AGP>(
  "all_gather",
  {
    abstractEval([x], { axis, tiled, axis_size: n, axis_index_groups: g }) {
      const axis_size = g ? g[0].length : n;
      if (axis < 0 || axis > x.ndim - (tiled ? 1 : 0))
        throw new TypeError(`all_gather: axis ${axis} out of range for ${x.str()}`);
      const s = [...x.shape];
      if (tiled) s[axis] *= axis_size;
      else s.splice(axis, 0, axis_size);
      return [x.update({ shape: s })];
    },
    impl(_a, { axis_name }) {
      throw unbound("all_gather", [axis_name]);
    },
    vmap(axisD, [x], [d], p) {
      const { axis_name, axis, tiled, axis_index_groups: groups } = p;
      if (axisD.name !== axis_name) {
        // another (outer mesh or unnamed) axis: gather per batch element, the batch dim leading
        if (d === null) return [[bind1(allGatherP, [x], p)], [null]];
        return [[bind1(allGatherP, [ops.moveaxis(x, d, 0)], { ...p, axis: axis + 1 })], [0]];
      }
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
        const r = gather(
          ops.concatenate(
            g.map((i) => ops.sliceInDim(xb, i, i + 1, 1, 0)),
            0,
          ),
        );
        for (const i of g) per[i] = ops.reshape(r, [1, ...r.shape]);
      }
      if (per.some((v) => v === undefined))
        throw new Error(
          `all_gather: axis_index_groups ${JSON.stringify(groups)} must cover axis ${axis_name} of size ${axisD.size}`,
        );
      return [[ops.concatenate(per, 0)], [0]];
    },
    jvp([x], [t], p) {
      const y = bind1(allGatherP, [x], p);
      return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(allGatherP, [t], p)]];
    },
    // all_gather's transpose is psum_scatter along the gathered dimension (JAX's rule)
    transpose([ct], _a, p) {
      if (ct instanceof Zero) return [ct];
      return [
        psumScatter1(ct, p.axis_name, {
          scatterDimension: p.axis,
          tiled: p.tiled,
          axisIndexGroups: p.axis_index_groups ?? undefined,
        }),
      ];
    },
    missing: { lower: COLLECTIVE_LOWER },
  },
  { cost: "move", collectiveAxisParam: "axis_name" },
);

// ---------------------------------------------------------------- ppermute, psum_scatter, all_to_all
type PPP = { axis_name: string; perm: [number, number][] };
export const ppermuteP: Primitive<PPP> = new Primitive<PPP>(
  "ppermute",
  {
    abstractEval([x], { perm }) {
      const srcs = new Set(perm.map((p) => p[0])),
        dsts = new Set(perm.map((p) => p[1]));
      if (srcs.size !== perm.length || dsts.size !== perm.length)
        throw new TypeError(`ppermute: perm ${JSON.stringify(perm)} must not repeat a source or a destination`);
      return [x];
    },
    impl(_a, { axis_name }) {
      throw unbound("ppermute", [axis_name]);
    },
    vmap(axisD, [x], [d], p) {
      if (axisD.name !== p.axis_name) return [[bind1(ppermuteP, [x], p)], [d]];
      const xb = d === null ? ops.broadcastBatch(x, axisD.size, 0) : ops.moveaxis(x, d, 0);
      for (const [a, b] of p.perm)
        if (a < 0 || b < 0 || a >= axisD.size || b >= axisD.size)
          throw new RangeError(
            `ppermute: perm entry ${JSON.stringify([a, b])} out of range for axis ${p.axis_name} of size ${axisD.size}`,
          );
      // member dst receives member src's value; members that receive nothing get zeros
      const zero = ops.zerosLikeArray(ops.sliceInDim(xb, 0, 1, 1, 0));
      const parts = [...globalThis.Array(axisD.size).keys()].map((dst) => {
        const pr = p.perm.find((q) => q[1] === dst);
        return pr ? ops.sliceInDim(xb, pr[0], pr[0] + 1, 1, 0) : zero;
      });
      return [[ops.concatenate(parts, 0)], [0]];
    },
    jvp([x], [t], p) {
      const y = bind1(ppermuteP, [x], p);
      return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(ppermuteP, [t], p)]];
    },
    // the transpose of a permutation is the inverse permutation
    transpose([ct], _a, p) {
      return [
        ct instanceof Zero
          ? ct
          : bind1(ppermuteP, [ct], { ...p, perm: p.perm.map(([a, b]) => [b, a] as [number, number]) }),
      ];
    },
    missing: { lower: COLLECTIVE_LOWER },
  },
  { cost: "move", collectiveAxisParam: "axis_name" },
);

type PSP = { axis_name: string; scatter_dimension: number; tiled: boolean; axis_size: number };
export const psumScatterP: Primitive<PSP> = new Primitive<PSP>(
  "reduce_scatter",
  {
    abstractEval([x], { scatter_dimension: sd, tiled, axis_size: n }) {
      const s = [...x.shape];
      if (tiled) {
        if (s[sd] % n)
          throw new TypeError(`psum_scatter: dimension ${sd} of ${x.str()} must be divisible by the axis size ${n}`);
        s[sd] /= n;
      } else {
        if (s[sd] !== n)
          throw new TypeError(
            `psum_scatter: dimension ${sd} of ${x.str()} must equal the axis size ${n} (or use tiled)`,
          );
        s.splice(sd, 1);
      }
      return [x.update({ shape: s })];
    },
    impl(_a, { axis_name }) {
      throw unbound("psum_scatter", [axis_name]);
    },
    vmap(axisD, [x], [d], p) {
      if (axisD.name !== p.axis_name) {
        if (d === null) return [[bind1(psumScatterP, [x], p)], [null]];
        return [
          [bind1(psumScatterP, [ops.moveaxis(x, d, 0)], { ...p, scatter_dimension: p.scatter_dimension + 1 })],
          [0],
        ];
      }
      const xb = d === null ? ops.broadcastBatch(x, axisD.size, 0) : ops.moveaxis(x, d, 0);
      const total = ops.reduceSum(xb, [0]);
      const n = axisD.size,
        sd = p.scatter_dimension;
      const sh = [...total.shape];
      const split = p.tiled ? [...sh.slice(0, sd), n, sh[sd] / n, ...sh.slice(sd + 1)] : sh;
      return [[ops.moveaxis(ops.reshape(total, split), sd, 0)], [0]];
    },
    jvp([x], [t], p) {
      const y = bind1(psumScatterP, [x], p);
      return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(psumScatterP, [t], p)]];
    },
    // psum_scatter's transpose is all_gather into the scattered dimension (JAX's rule)
    transpose([ct], _a, p) {
      if (ct instanceof Zero) return [ct];
      return [
        bind1(allGatherP, [ct], {
          axis_name: p.axis_name,
          axis: p.scatter_dimension,
          tiled: p.tiled,
          axis_size: p.axis_size,
          axis_index_groups: null,
        }),
      ];
    },
    missing: { lower: COLLECTIVE_LOWER },
  },
  { collectiveAxisParam: "axis_name" },
);

type ATA = { axis_name: string; split_axis: number; concat_axis: number; tiled: boolean; axis_size: number };
export const allToAllP: Primitive<ATA> = new Primitive<ATA>(
  "all_to_all",
  {
    abstractEval([x], { split_axis: sa, concat_axis: ca, tiled, axis_size: n }) {
      const s = [...x.shape];
      if (tiled) {
        if (s[sa] % n)
          throw new TypeError(`all_to_all: split axis ${sa} of ${x.str()} must be divisible by the axis size ${n}`);
        s[sa] /= n;
        s[ca] *= n;
      } else {
        // np.insert(np.delete(shape, split_axis), concat_axis, axis_size)
        if (s[sa] !== n)
          throw new TypeError(`all_to_all: split axis ${sa} of ${x.str()} must equal the axis size ${n}`);
        s.splice(sa, 1);
        s.splice(ca, 0, n);
      }
      return [x.update({ shape: s })];
    },
    impl(_a, { axis_name }) {
      throw unbound("all_to_all", [axis_name]);
    },
    vmap(axisD, [x], [d], p) {
      if (axisD.name !== p.axis_name) {
        if (d === null) return [[bind1(allToAllP, [x], p)], [null]];
        return [
          [
            bind1(allToAllP, [ops.moveaxis(x, d, 0)], {
              ...p,
              split_axis: p.split_axis + 1,
              concat_axis: p.concat_axis + 1,
            }),
          ],
          [0],
        ];
      }
      const n = axisD.size,
        { split_axis: sa, concat_axis: ca } = p;
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
    jvp([x], [t], p) {
      const y = bind1(allToAllP, [x], p);
      return [[y], [t instanceof Zero ? new Zero(y.aval) : bind1(allToAllP, [t], p)]];
    },
    transpose([ct], _a, p) {
      if (ct instanceof Zero) return [ct];
      // untiled: the output has the new member axis at concat and lacks split; the inverse swaps the roles
      return [bind1(allToAllP, [ct], { ...p, split_axis: p.concat_axis, concat_axis: p.split_axis })];
    },
    missing: { lower: COLLECTIVE_LOWER },
  },
  { cost: "move", collectiveAxisParam: "axis_name" },
);

// ---------------------------------------------------------------- public wrappers (lax.*)
/** A collective on one array, or mapped over the leaves of a pytree as JAX does (JS numbers become arrays). */
export type TreeCollective<R extends unknown[]> = { (x: Array, ...rest: R): Array; <T>(x: T, ...rest: R): T };
function overLeaves<R extends unknown[]>(fn: string, one: (x: Array, ...rest: R) => Array): TreeCollective<R> {
  return ((x: unknown, ...given: R): unknown => {
    // every wrapped collective takes its axis name(s) first after the operand
    const rest = (axisSubst ? [substNames(given[0]), ...given.slice(1)] : given) as R;
    if (x instanceof Array) return one(x, ...rest);
    const [leaves, def] = flattenArrays(fn, x, "argument");
    return unflatten(
      def,
      leaves.map((l) => one(l, ...rest)),
    );
  }) as TreeCollective<R>;
}
export interface GroupOpts {
  axisIndexGroups?: number[][];
}
const str = (x: Array) => `${x.dtype}[${x.shape.join(",")}]`;
const nameStr = (ns: AxisNames) =>
  ns.length === 1 ? JSON.stringify(ns[0]) : `(${ns.map((n) => JSON.stringify(n)).join(", ")})`;
/** Size of the combined axis over several names (row-major, the first name major). */
const combinedSize = (fn: string, ns: AxisNames): number => ns.reduce((a, n) => a * axisSizeOf(fn, n), 1);
function canonAxis(fn: string, what: string, a: number, rank: number, x: Array): number {
  if (!Number.isInteger(a) || a < -rank || a >= rank)
    throw new RangeError(
      `${fn}: ${what} ${a} is out of range for an operand ${str(x)} (expected an integer in [${-rank}, ${rank}))`,
    );
  return a < 0 ? a + rank : a;
}
/** JAX's rule: groups cover every index of the (combined) axis exactly once; sameSize for gather/scatter/all_to_all. */
function checkGroups(fn: string, ns: AxisNames, groups: number[][] | undefined, sameSize: boolean): number[][] | null {
  if (groups === undefined || groups === null) return null;
  const n = combinedSize(fn, ns);
  const flat = groups.flat();
  const ok =
    globalThis.Array.isArray(groups) &&
    groups.every((g) => globalThis.Array.isArray(g) && g.length > 0) &&
    flat.length === n &&
    new Set(flat).size === n &&
    flat.every((i) => Number.isInteger(i) && i >= 0 && i < n);
  if (!ok)
    throw new Error(
      `${fn}: axisIndexGroups ${JSON.stringify(groups)} must cover every index of axis ${nameStr(ns)} (size ${n}) exactly once`,
    );
  if (sameSize && groups.some((g) => g.length !== groups[0].length))
    throw new Error(`${fn}: axisIndexGroups ${JSON.stringify(groups)} must all have the same size`);
  return groups.map((g) => [...g]);
}
const int32Const = (shape: number[], vals: number[]): Array =>
  new ArrayImpl(new ShapedArray(shape, "int32"), Int32Array.from(vals));
const scalarI32 = (v: number): Array => ops.full([], v, "int32");

/**
 * A member's view of a group collective over any axis names: `stack` holds every member's x, [N, ...x.shape]
 * (row-major over the names), and `col(table)` reads this member's row of a static [N, w] table as scalars.
 */
function memberView(
  fn: string,
  x: Array,
  ns: AxisNames,
): { stack: Array; n: number; col: (table: number[][]) => Array[] } {
  let g = x;
  for (const nm of [...ns].reverse())
    g = bind1(allGatherP, [g], {
      axis_name: nm,
      axis: 0,
      tiled: false,
      axis_size: axisSizeOf(fn, nm),
      axis_index_groups: null,
    });
  const n = combinedSize(fn, ns);
  const stack = ops.reshape(g, [n, ...x.shape]);
  const idx = axisIndex1(ns);
  const col = (table: number[][]): Array[] => {
    const w = table[0].length;
    const row = ops.dynamicSlice(int32Const([n, w], table.flat()), [idx, scalarI32(0)], [1, w]);
    return [...globalThis.Array(w).keys()].map((c) => ops.reshape(ops.sliceInDim(row, c, c + 1, 1, 1), []));
  };
  return { stack, n, col };
}
/** Row k (a traced scalar) of a stack [N, ...]. */
const pick = (stack: Array, k: Array): Array =>
  ops.reshape(
    ops.dynamicSlice(stack, [k, ...stack.shape.slice(1).map(() => scalarI32(0))], [1, ...stack.shape.slice(1)]),
    stack.shape.slice(1),
  );
/** Per member: the members of its group (in group order) and its position in the group. */
function groupTables(groups: number[][] | null, n: number): { members: number[][]; pos: number[][] } {
  const gs = groups ?? [[...globalThis.Array(n).keys()]];
  const members: number[][] = new globalThis.Array(n),
    pos: number[][] = new globalThis.Array(n);
  for (const g of gs)
    g.forEach((m, r) => {
      members[m] = g;
      pos[m] = [r];
    });
  return { members, pos };
}
/** The stack [G, ...x] of the values of this member's group. */
function groupStack(
  fn: string,
  x: Array,
  ns: AxisNames,
  groups: number[][] | null,
): { stacked: Array; pos: Array; size: number } {
  const v = memberView(fn, x, ns);
  if (!groups) return { stacked: v.stack, pos: axisIndex1(ns), size: v.n };
  const t = groupTables(groups, v.n);
  const ks = v.col(t.members);
  return {
    stacked: ops.concatenate(
      ks.map((k) => ops.expandDims(pick(v.stack, k), [0])),
      0,
    ),
    pos: v.col(t.pos)[0],
    size: ks.length,
  };
}

function reduceWrapper(
  fn: string,
  p: Primitive<{ axes: AxisNames; axis_index_groups: number[][] | null }>,
  red: (x: Array, axes: number[]) => Array,
) {
  return (x: Array, axisName: string | string[], opts: GroupOpts = {}): Array => {
    const ns = names(axisName);
    if (ns.length === 0) return x;
    // JAX sums booleans as int32 (psum of a mask counts it)
    const v = fn === "psum" && x.dtype === "bool" ? ops.convert(x, "int32") : x;
    const groups = opts.axisIndexGroups === undefined ? null : checkGroups(fn, ns, opts.axisIndexGroups, false);
    if (groups && ns.length > 1) {
      const { stacked } = groupStackUneven(fn, v, ns, groups);
      return red(stacked, [0]);
    }
    return bind1(p, [v], { axes: ns, axis_index_groups: groups });
  };
}
/** Like groupStack for reductions, whose groups may differ in size: pads each row with the reduction's own members. */
function groupStackUneven(fn: string, x: Array, ns: AxisNames, groups: number[][]): { stacked: Array } {
  const v = memberView(fn, x, ns);
  const w = Math.max(...groups.map((g) => g.length));
  // a smaller group's missing rows: zeros for psum, a repeat of its first member for pmax/pmin
  const t = groupTables(groups, v.n);
  const padded = t.members.map((g) => [...g, ...globalThis.Array(w - g.length).fill(-1)]);
  const ks = v.col(padded.map((r) => r.map((k) => Math.max(k, 0))));
  const valid = v.col(padded.map((r) => r.map((k) => (k < 0 ? 0 : 1))));
  const rows = ks.map((k, j) =>
    ops.expandDims(
      ops.select(
        ops.broadcastInDim(ops.eq(valid[j], scalarI32(1)), x.shape, []),
        pick(v.stack, k),
        fn === "psum" ? ops.zerosLikeArray(x) : pick(v.stack, ks[0]),
      ),
      [0],
    ),
  );
  return { stacked: ops.concatenate(rows, 0) };
}

/** lax.psum(x, axisName | axisNames, { axisIndexGroups }): the sum over the named axes (bool sums as int32). */
const psum1 = reduceWrapper("psum", psumP, (x, a) => ops.reduceSum(x, a));
export const psum = overLeaves("psum", psum1);
export const pmax = overLeaves(
  "pmax",
  reduceWrapper("pmax", pmaxP, (x, a) => ops.reduceMax(x, a)),
);
export const pmin = overLeaves(
  "pmin",
  reduceWrapper("pmin", pminP, (x, a) => ops.reduceMin(x, a)),
);
/** lax.axisSize(name | names): the (combined) size of bound axes as a static number, like JAX's Python int. */
export const axisSize = (axisName: string | string[]): number =>
  combinedSize("axis_size", names(substNames(axisName) as string | string[]));
export const pmean = overLeaves("pmean", (x: Array, axisName: string | string[], opts: GroupOpts = {}): Array => {
  const n = psum1(ops.fullLike(x, 1), axisName, opts);
  return ops.div(psum1(x, axisName, opts), n);
});
/** lax.axisIndex(name | names): over several axes the index is row-major, sum_k idx(a_k) * prod(size(a_{k+1..})). */
export const axisIndex = (axisName: string | string[]): Array => axisIndex1(substNames(axisName) as string | string[]);
function axisIndex1(axisName: string | string[]): Array {
  const ns = names(axisName);
  let r: Array = bind1(axisIndexP, [], { axis_name: ns[0] });
  for (const n of ns.slice(1))
    r = ops.add(ops.mul(r, axisSizeOf("axis_index", n)), bind1(axisIndexP, [], { axis_name: n }));
  return r;
}

/** lax.allGather(x, axisName | names, { axis, tiled, axisIndexGroups }): every member's x, stacked (or concatenated) at `axis`. */
function allGather1(
  x: Array,
  axisName: string | string[],
  opts: { axis?: number; tiled?: boolean; axisIndexGroups?: number[][] } = {},
): Array {
  const fn = "allGather",
    ns = names(axisName),
    tiled = opts.tiled ?? false;
  if (ns.length === 0) return x;
  // untiled: a new dimension, so axis ranges over rank + 1 positions (JAX canonicalizes against ndim + 1)
  const axis = canonAxis(fn, "axis", opts.axis ?? 0, tiled ? x.ndim : x.ndim + 1, x);
  const groups = checkGroups(fn, ns, opts.axisIndexGroups, true);
  if (ns.length === 1)
    return bind1(allGatherP, [x], {
      axis_name: ns[0],
      axis,
      tiled,
      axis_size: axisSizeOf(fn, ns[0]),
      axis_index_groups: groups,
    });
  const { stacked } = groupStack(fn, x, ns, groups);
  const moved = ops.moveaxis(stacked, 0, axis);
  if (!tiled) return moved;
  const s = [...moved.shape];
  s.splice(axis, 2, s[axis] * s[axis + 1]);
  return ops.reshape(moved, s);
}

/** lax.ppermute(x, axisName | names, perm): member dst receives member src's x for each [src, dst]; others get zeros. */
function ppermute1(x: Array, axisName: string | string[], perm: [number, number][]): Array {
  const fn = "ppermute",
    ns = names(axisName);
  if (
    !globalThis.Array.isArray(perm) ||
    !perm.every((q) => globalThis.Array.isArray(q) && q.length === 2 && q.every(Number.isInteger))
  ) {
    throw new TypeError(`${fn}: perm must be a list of [source, destination] index pairs, got ${JSON.stringify(perm)}`);
  }
  const n = combinedSize(fn, ns);
  for (const q of perm)
    if (q.some((i) => i < 0 || i >= n))
      throw new RangeError(
        `${fn}: perm entry ${JSON.stringify(q)} is out of range for axis ${nameStr(ns)} of size ${n}`,
      );
  const srcs = perm.map((q) => q[0]),
    dsts = perm.map((q) => q[1]);
  if (new Set(srcs).size !== srcs.length || new Set(dsts).size !== dsts.length) {
    throw new Error(
      `${fn}: sources and destinations must be unique, got perm ${JSON.stringify(perm)} over axis ${nameStr(ns)}`,
    );
  }
  const pr = perm.map(([a, b]) => [a, b] as [number, number]);
  if (ns.length === 1) return bind1(ppermuteP, [x], { axis_name: ns[0], perm: pr });
  // several axes: member dst reads row src of the stack of all members (or zeros)
  const v = memberView(fn, x, ns);
  const src = [...globalThis.Array(n).keys()].map((d) => [pr.find((q) => q[1] === d)?.[0] ?? -1]);
  const [k] = v.col(src.map(([s]) => [Math.max(s, 0)]));
  const [has] = v.col(src.map(([s]) => [s < 0 ? 0 : 1]));
  return ops.select(
    ops.broadcastInDim(ops.eq(has, scalarI32(1)), x.shape, []),
    pick(v.stack, k),
    ops.zerosLikeArray(x),
  );
}
/** lax.pshuffle(x, axisName, perm): member i receives member perm[i]'s value; perm must be a permutation of 0..n-1. */
function pshuffle1(x: Array, axisName: string | string[], perm: number[]): Array {
  const ok =
    globalThis.Array.isArray(perm) &&
    new Set(perm).size === perm.length &&
    perm.every((p) => Number.isInteger(p) && p >= 0 && p < perm.length);
  if (!ok)
    throw new Error(
      `pshuffle: perm ${JSON.stringify(perm)} does not represent a permutation of 0..${globalThis.Array.isArray(perm) ? perm.length - 1 : "n-1"} (axis ${nameStr(names(axisName))})`,
    );
  return ppermute1(
    x,
    axisName,
    perm.map((src, dst) => [src, dst] as [number, number]),
  );
}

/** lax.psumScatter(x, axisName | names, { scatterDimension, tiled, axisIndexGroups }): member r keeps block r of the group's sum. */
function psumScatter1(
  x: Array,
  axisName: string | string[],
  opts: { scatterDimension?: number; tiled?: boolean; axisIndexGroups?: number[][] } = {},
): Array {
  const fn = "psumScatter",
    ns = names(axisName),
    tiled = opts.tiled ?? false;
  if (ns.length === 0) return x;
  const sd = canonAxis(fn, "scatterDimension", opts.scatterDimension ?? 0, x.ndim, x);
  const groups = checkGroups(fn, ns, opts.axisIndexGroups, true);
  const n = groups ? groups[0].length : combinedSize(fn, ns);
  const s = x.shape[sd];
  if (tiled && s % n !== 0)
    throw new Error(
      `${fn}: dimension ${sd} (size ${s}) of ${str(x)} must be divisible by the size ${n} of axis ${nameStr(ns)}${groups ? " groups" : ""} (tiled)`,
    );
  if (!tiled && s !== n)
    throw new Error(
      `${fn}: dimension ${sd} (size ${s}) of ${str(x)} must equal the size ${n} of axis ${nameStr(ns)}${groups ? " groups" : ""} (or pass tiled: true)`,
    );
  if (ns.length === 1 && !groups)
    return bind1(psumScatterP, [x], { axis_name: ns[0], scatter_dimension: sd, tiled, axis_size: n });
  const { stacked, pos } = groupStack(fn, x, ns, groups);
  const total = ops.reduceSum(stacked, [0]);
  const c = tiled ? s / n : 1;
  const starts = x.shape.map((_, d) => (d === sd ? ops.mul(pos, scalarI32(c)) : scalarI32(0)));
  const blk = ops.dynamicSlice(
    total,
    starts,
    x.shape.map((m, d) => (d === sd ? c : m)),
  );
  return tiled ? blk : ops.squeeze(blk, [sd]);
}

/** lax.allToAll(x, axisName | names, splitAxis, concatAxis, { tiled, axisIndexGroups }): split x across the group, gather what others sent. */
function allToAll1(
  x: Array,
  axisName: string | string[],
  splitAxis: number,
  concatAxis: number,
  opts: { tiled?: boolean; axisIndexGroups?: number[][] } = {},
): Array {
  const fn = "allToAll",
    ns = names(axisName),
    tiled = opts.tiled ?? false;
  const sa = canonAxis(fn, "splitAxis", splitAxis, x.ndim, x);
  const ca = canonAxis(fn, "concatAxis", concatAxis, x.ndim, x);
  const groups = checkGroups(fn, ns, opts.axisIndexGroups, true);
  const n = groups ? groups[0].length : combinedSize(fn, ns);
  const s = x.shape[sa];
  if (tiled && s % n !== 0)
    throw new Error(
      `${fn}: splitAxis ${sa} (size ${s}) of ${str(x)} must be divisible by the size ${n} of axis ${nameStr(ns)}${groups ? " groups" : ""} (tiled)`,
    );
  if (!tiled && s !== n)
    throw new Error(
      `${fn}: splitAxis ${sa} (size ${s}) of ${str(x)} must equal the size ${n} of axis ${nameStr(ns)}${groups ? " groups" : ""} (or pass tiled: true)`,
    );
  if (ns.length === 1 && !groups)
    return bind1(allToAllP, [x], { axis_name: ns[0], split_axis: sa, concat_axis: ca, tiled, axis_size: n });
  // member at group position r receives block r (along splitAxis) of every group member's x, in group order
  const { stacked, pos } = groupStack(fn, x, ns, groups); // [G, ...x]
  const c = tiled ? s / n : 1;
  const starts = stacked.shape.map((_, d) => (d === sa + 1 ? ops.mul(pos, scalarI32(c)) : scalarI32(0)));
  let blk = ops.dynamicSlice(
    stacked,
    starts,
    stacked.shape.map((m, d) => (d === sa + 1 ? c : m)),
  ); // [G, ..., c at sa, ...]
  if (!tiled) return ops.moveaxis(ops.squeeze(blk, [sa + 1]), 0, ca);
  blk = ops.moveaxis(blk, 0, ca); // G just before the concat axis' elements
  const bs = [...blk.shape];
  bs.splice(ca, 2, bs[ca] * bs[ca + 1]);
  return ops.reshape(blk, bs);
}
/** lax.pswapaxes(x, axisName, axis): all_to_all with split and concat both at `axis` (the mapped axis swaps with it). */
export const pswapaxes = overLeaves(
  "pswapaxes",
  (x: Array, axisName: string | string[], axis: number, opts: GroupOpts = {}): Array =>
    allToAll1(x, axisName, axis, axis, opts),
);
export const allGather = overLeaves("allGather", allGather1);
export const ppermute = overLeaves("ppermute", ppermute1);
export const pshuffle = overLeaves("pshuffle", pshuffle1);
export const psumScatter = overLeaves("psumScatter", psumScatter1);
export const allToAll = overLeaves("allToAll", allToAll1);
