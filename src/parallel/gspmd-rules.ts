/**
 * @file The SPMD partitioner's per-primitive rules: given each operand's local block and its sharding (mesh axes per
 * dimension, plus the axes over which it is still an unreduced partial sum), emit the per-device computation and
 * the collectives it needs, and return the outputs' shardings (forward propagation and partitioning in one pass).
 */
import type { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import { ClosedJaxpr, Jaxpr, Literal, type Atom, type JaxprEqn, type Var } from "../core/jaxpr.js";
import type { Params, Primitive } from "../core/primitive.js";
import { bind } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { allGather, allToAll, axisIndex, pmax, pmin, psum, psumScatter } from "./collectives.js";
import type { Mesh } from "./mesh.js";
import type { NamedShardingImpl } from "./sharding.js";
import { gatherRule, iotaRule, scatterRule } from "./gspmd-gather.js";
import { condRule, customJvpRule, customVjpRule, scanRule, whileRule } from "./gspmd-control.js";

/** Mesh axes splitting each dimension (the first axis major), [] = replicated along it. */
export type Dims = string[][];
/** One value of the per-device program: its local block, the sharding of that block and its pending partial sum. */
export interface SV {
  x: Array;
  /** The global shape. */
  shape: number[];
  dims: Dims;
  /** Mesh axes over which x is one addend of the true value (a psum over them is still owed). */
  partial: string[];
  /** Recomputes this value directly at another sharding (a broadcast: slicing its small operand beats slicing it). */
  remat?: (target: Dims) => SV;
  /** An integer value equal to its position along this dim (an iota, maybe reshaped or broadcast). */
  iota?: number;
  /** Per element of the last dim: the dim whose position it equals (an index tuple built from iotas), else null. */
  comps?: (number | null)[];
  /** Resharded versions already made (a value consumed twice at one sharding is communicated once). */
  memo?: Map<string, SV>;
}

const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((n, i) => n === b[i]);
const sameDims = (a: Dims, b: Dims) => a.length === b.length && a.every((d, i) => same(d, b[i]));
const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((n) => b.includes(n));
const prod = (xs: readonly number[]) => xs.reduce((a, b) => a * b, 1);
export const replicatedDims = (rank: number): Dims => globalThis.Array.from({ length: rank }, () => [] as string[]);

const warned = new Set<string>();
/** Says once per primitive that it runs replicated (every operand gathered), which is correct but communicates. */
function fallbackNote(name: string, why: string): void {
  if (warned.has(name) || !process.env.JAXTS_DEBUG_GSPMD) return;
  warned.add(name);
  process.stderr.write(`jaxts gspmd: ${name} runs replicated (${why}); its operands are all-gathered\n`);
}

/** The partitioner of one mesh: resharding of local blocks and the rule table. */
export class Partitioner {
  constructor(readonly mesh: Mesh) {}

  parts(axes: readonly string[]): number {
    return axes.reduce((a, n) => a * this.mesh.axisSize(n), 1);
  }
  localShape(shape: readonly number[], dims: Dims): number[] {
    return shape.map((n, d) => n / this.parts(dims[d] ?? []));
  }
  /** A value every device holds whole (a constant or literal). */
  replicated(x: Array): SV {
    return { x, shape: [...x.shape], dims: replicatedDims(x.ndim), partial: [] };
  }
  /** The sum owed over `partial` done now (psum). */
  resolve(v: SV): SV {
    if (!v.partial.length) return v;
    v.memo ??= new Map();
    let r = v.memo.get("resolved");
    if (!r) v.memo.set("resolved", (r = { ...v, x: psum(v.x, v.partial), partial: [], memo: undefined }));
    return r;
  }
  /** Local block of v under the sharding `target` (the collectives that change it: psum_scatter, all_gather, or a slice). */
  reshard(v: SV, target: Dims): SV {
    const key = JSON.stringify(target);
    v.memo ??= new Map();
    let r = v.memo.get(key);
    if (!r) v.memo.set(key, (r = this.reshardNow(v, target)));
    return r;
  }
  private reshardNow(v: SV, target: Dims): SV {
    if (v.remat && !v.partial.length) return v.remat(target);
    let { x } = v;
    const dims = v.dims.map((d) => [...d]);
    if (v.partial.length) {
      // a partial sum whose owed axes shard a dimension of the target: reduce-scatter instead of all-reduce then slice
      const d = target.findIndex((t, i) => t.length > 0 && sameSet(t, v.partial) && dims[i].length === 0);
      if (d >= 0 && v.shape[d] % this.parts(target[d]) === 0) {
        x = psumScatter(x, target[d], { scatterDimension: d, tiled: true });
        dims[d] = [...target[d]];
      } else x = psum(x, v.partial);
    }
    // a split moving from dim i to a dim j the target splits over the same axes: one all_to_all (not gather + slice)
    for (let i = 0; i < dims.length; i++) {
      const cur = dims[i];
      if (cur.length !== 1 || (target[i] ?? []).length) continue;
      const j = target.findIndex((t, k) => k !== i && same(t, cur) && dims[k].length === 0);
      if (j < 0 || x.shape[j] % this.parts(cur) !== 0) continue;
      x = allToAll(x, cur, j, i, { tiled: true });
      dims[j] = [...cur];
      dims[i] = [];
    }
    // gather every dimension whose axes are not a prefix of the target's (a prefix only needs a finer slice)
    for (let d = 0; d < dims.length; d++) {
      const cur = dims[d],
        t = target[d] ?? [];
      if (!cur.length || same(cur, t)) continue;
      if (t.length > cur.length && same(cur, t.slice(0, cur.length))) continue;
      x = allGather(x, cur, { axis: d, tiled: true });
      dims[d] = [];
    }
    // slice the dimensions the target splits further (free: no communication)
    let starts: Array[] | null = null;
    const sizes = [...x.shape];
    for (let d = 0; d < dims.length; d++) {
      const cur = dims[d],
        t = target[d] ?? [];
      if (same(cur, t)) continue;
      const extra = t.slice(cur.length);
      const n = this.parts(extra);
      sizes[d] = x.shape[d] / n;
      starts ??= x.shape.map(() => ops.full([], 0, "int32"));
      starts[d] = ops.mul(axisIndex(extra), ops.full([], sizes[d], "int32"));
      dims[d] = [...t];
    }
    if (starts) x = ops.dynamicSlice(x, starts, sizes);
    return { x, shape: v.shape, dims, partial: [], iota: v.iota, comps: v.comps };
  }
  gatherAll(v: SV): SV {
    return this.reshard(v, replicatedDims(v.shape.length));
  }

  /** Runs a global jaxpr on sharded local values, equation by equation. */
  run(j: Jaxpr, consts: readonly Array[], args: readonly SV[]): SV[] {
    const env = new Map<Var, SV>();
    j.constvars.forEach((v, i) => env.set(v, this.replicated(consts[i])));
    j.invars.forEach((v, i) => env.set(v, args[i]));
    const read = (a: Atom): SV => (a instanceof Literal ? this.replicated(a.value) : env.get(a)!);
    // a partial sum read more than once is reduced once, before its first use (not once per linear consumer)
    const uses = new Map<Var, number>();
    for (const a of [...j.eqns.flatMap((e) => e.inputs), ...j.outvars])
      if (!(a instanceof Literal)) uses.set(a, (uses.get(a) ?? 0) + 1);
    const readOnce = (a: Atom): SV => {
      const v = read(a);
      return v.partial.length && !(a instanceof Literal) && (uses.get(a) ?? 0) > 1 ? this.resolve(v) : v;
    };
    for (const e of j.eqns) {
      const outs = this.eqn(e, e.inputs.map(readOnce));
      e.outVars.forEach((v, i) => env.set(v, outs[i]));
    }
    return j.outvars.map(read);
  }

  private eqn(e: JaxprEqn, ins: SV[]): SV[] {
    const name = e.primitive.name;
    const rule = RULES[name];
    const outAvals = e.outVars.map((v) => v.aval);
    if (rule) {
      const r = rule(this, ins, e.params, outAvals, e.primitive);
      if (r) return r;
    } else if (isElementwise(e, ins)) return [this.elementwise(e.primitive, ins, e.params, outAvals[0])];
    const call = e.primitive.opts.callJaxprParam;
    if (call && !name.startsWith("custom")) {
      const inner = e.params[call] as Jaxpr | ClosedJaxpr;
      return inner instanceof ClosedJaxpr ? this.run(inner.jaxpr, inner.consts, ins) : this.run(inner, [], ins);
    }
    fallbackNote(name, "no sharding rule");
    return this.fallback(e.primitive, ins, e.params, outAvals);
  }

  /** Correct for any primitive: operands all-gathered, computed whole on every device. */
  fallback(p: Primitive, ins: SV[], params: Params, outAvals: ShapedArray[]): SV[] {
    const xs = ins.map((v) => this.gatherAll(v).x);
    const ys = bind(p, xs, params);
    return ys.map((y, i) => ({
      x: y,
      shape: [...outAvals[i].shape],
      dims: replicatedDims(outAvals[i].ndim),
      partial: [],
    }));
  }

  /** n-ary elementwise: each output dim takes the first operand sharding along it whose axes are still free. */
  elementwise(p: Primitive, ins: SV[], params: Params, out: ShapedArray): SV {
    const rank = out.ndim;
    const full = ins.filter((v) => v.shape.length === rank && v.shape.every((n, d) => n === out.shape[d]));
    // biggest operand first: the smaller ones are the ones resharded on a conflict
    const order = [...full].sort(
      (a, b) => prod(b.shape) - prod(a.shape) || b.dims.flat().length - a.dims.flat().length,
    );
    const used = new Set<string>();
    const dims: Dims = replicatedDims(rank);
    for (let d = 0; d < rank; d++) {
      for (const v of order) {
        const ax = v.dims[d];
        if (ax.length && ax.every((a) => !used.has(a))) {
          dims[d] = [...ax];
          ax.forEach((a) => used.add(a));
          break;
        }
      }
    }
    // linear in the partial operands: sums of equally partial values, scaling of one partial value
    const partials = ins.filter((v) => v.partial.length);
    let partial: string[] = [];
    const lin = LINEAR[p.name];
    if (partials.length && lin) {
      const ok =
        lin === "sum"
          ? ins.every((v) => v.partial.length && sameSet(v.partial, partials[0].partial))
          : lin === "unary"
            ? ins.length === 1
            : lin === "mul"
              ? partials.length === 1
              : partials.length === 1 && ins[0] === partials[0];
      // a block both split and owed a sum over one axis is no value: the sum is done first (psum of blocks of
      // different elements would add them up)
      if (ok && !partials[0].partial.some((a) => used.has(a))) partial = [...partials[0].partial];
    }
    const xs = ins.map((v) => {
      const w = partial.length && v.partial.length ? v : this.resolve(v);
      if (w.shape.length === 0) return w.x;
      const target = dims.map((t, d) => (w.shape[d] === out.shape[d] ? t : []));
      return (sameDims(w.dims, target) ? w : this.reshard({ ...w, partial: [], memo: undefined }, target)).x;
    });
    const [y] = bind(p, xs, params);
    return { x: y, shape: [...out.shape], dims, partial };
  }
}

/** How an elementwise primitive is linear in its partial operands. */
const LINEAR: Record<string, "sum" | "unary" | "mul" | "div"> = {
  add: "sum",
  sub: "sum",
  neg: "unary",
  convert_element_type: "unary",
  copy: "unary",
  stop_gradient: "unary",
  mul: "mul",
  div: "div",
};
const ELEMENTWISE_PARAMS = new Set(["new_dtype", "weak_type", "sharding", "accuracy", "y"]);
/** Structural test: one output whose shape every non-scalar operand has, and no params beyond dtype/power facts. */
function isElementwise(e: JaxprEqn, ins: SV[]): boolean {
  if (e.outVars.length !== 1 || e.primitive.multipleResults || e.primitive.collective || ins.length === 0) return false;
  if (!Object.keys(e.params).every((k) => ELEMENTWISE_PARAMS.has(k))) return false;
  const s = e.outVars[0].aval.shape;
  return ins.every((v) => v.shape.length === 0 || (v.shape.length === s.length && v.shape.every((n, d) => n === s[d])));
}

type Rule = (P: Partitioner, ins: SV[], params: Params, outs: ShapedArray[], prim: Primitive) => SV[] | null;
const bind1 = (p: Primitive, xs: Array[], params: Params): Array => bind(p, xs, params)[0];

/** Reshards v so that dims `gather` are whole (others kept), resolving any partial sum. */
function wholeAlong(P: Partitioner, v: SV, gather: readonly number[]): SV {
  const target = v.dims.map((t, d) => (gather.includes(d) ? [] : t));
  return sameDims(target, v.dims) && !v.partial.length ? v : P.reshard(v, target);
}

/** Groups of input dims and output dims of a reshape with equal products (size-1 dims joined to a neighbour). */
function reshapeGroups(a: readonly number[], b: readonly number[]): [number[], number[]][] | null {
  const groups: [number[], number[]][] = [];
  let i = 0,
    j = 0;
  while (i < a.length || j < b.length) {
    const gi: number[] = [],
      gj: number[] = [];
    let pa = 1,
      pb = 1;
    if (i < a.length) pa *= a[(gi.push(i), i++)];
    if (j < b.length) pb *= b[(gj.push(j), j++)];
    while (pa !== pb) {
      if (pa < pb && i < a.length) pa *= a[(gi.push(i), i++)];
      else if (pb < pa && j < b.length) pb *= b[(gj.push(j), j++)];
      else return null;
    }
    groups.push([gi, gj]);
  }
  return groups;
}

const RULES: Record<string, Rule> = {
  iota: iotaRule,
  sharding_constraint(P, [v], p) {
    const s = p.sharding as NamedShardingImpl;
    if (s.mesh.toString() !== P.mesh.toString() || s.mesh.deviceIds.join() !== P.mesh.deviceIds.join()) return [v];
    return [
      P.reshard(
        v,
        v.shape.map((_, d) => s.spec.names(d)),
      ),
    ];
  },
  gather: gatherRule,
  scatter: scatterRule,
  scan: scanRule,
  while: whileRule,
  cond: condRule,
  custom_jvp_call: customJvpRule,
  custom_vjp_call: customVjpRule,
  broadcast_in_dim(P, [v], p, [out], prim) {
    const bd = p.broadcast_dimensions as number[];
    const at = (dims: Dims): SV => {
      const keep = v.dims.map((_, i) => (v.shape[i] === out.shape[bd[i]] ? dims[bd[i]] : []));
      const w = sameDims(keep, v.dims) && !v.partial.length ? v : P.reshard(v, keep);
      const x = bind1(prim, [w.x], { ...p, shape: P.localShape(out.shape, dims) });
      const iota = v.iota !== undefined && v.shape[v.iota] === out.shape[bd[v.iota]] ? bd[v.iota] : undefined;
      return { x, shape: [...out.shape], dims, partial: [], remat: at, iota };
    };
    if (v.partial.length) {
      // linear: a broadcast partial sum stays partial
      const dims: Dims = replicatedDims(out.ndim);
      bd.forEach((o, i) => (dims[o] = v.shape[i] === out.shape[o] ? [...v.dims[i]] : []));
      const x = bind1(
        prim,
        [
          P.reshard(
            { ...v, partial: [], memo: undefined },
            v.dims.map((_, i) => dims[bd[i]]),
          ).x,
        ],
        {
          ...p,
          shape: P.localShape(out.shape, dims),
        },
      );
      return [{ x, shape: [...out.shape], dims, partial: v.partial }];
    }
    const dims: Dims = replicatedDims(out.ndim);
    bd.forEach((o, i) => (dims[o] = v.shape[i] === out.shape[o] ? [...v.dims[i]] : []));
    return [at(dims)];
  },
  reshape(P, [v], p, [out]) {
    if (p.dimensions !== null && p.dimensions !== undefined) return null;
    const groups = reshapeGroups(v.shape, out.shape);
    if (!groups) return null;
    // a group keeps the sharding of its major input dim when only that one is split and the major output dim divides
    const dims: Dims = replicatedDims(out.ndim);
    const target = v.dims.map((t) => [...t]);
    for (const [gi, gj] of groups) {
      const major = gi.find((i) => v.shape[i] !== 1) ?? gi[0];
      const oMajor = gj.find((j) => out.shape[j] !== 1) ?? gj[0];
      const rest = gi.filter((i) => i !== major);
      const ax = v.dims[major] ?? [];
      const ok =
        ax.length > 0 &&
        rest.every((i) => !v.dims[i].length) &&
        gi.every((i) => i === major || i > major || v.shape[i] === 1) &&
        gj.every((j) => j === oMajor || j > oMajor || out.shape[j] === 1) &&
        oMajor !== undefined &&
        out.shape[oMajor] % P.parts(ax) === 0;
      if (ok) dims[oMajor] = [...ax];
      else for (const i of gi) target[i] = [];
    }
    const w = sameDims(target, v.dims) ? v : P.reshard(v, target);
    const x = ops.reshape(w.x, P.localShape(out.shape, dims));
    // an iota's dim survives a reshape that only adds or drops size-1 dims around it
    let iota: number | undefined;
    const g = v.iota === undefined ? undefined : groups.find(([gi]) => gi.includes(v.iota!));
    if (g) {
      const big = g[1].filter((j) => out.shape[j] !== 1);
      if (
        big.length === 1 &&
        out.shape[big[0]] === v.shape[v.iota!] &&
        g[0].every((i) => i === v.iota || v.shape[i] === 1)
      )
        iota = big[0];
    }
    return [{ x, shape: [...out.shape], dims, partial: w === v ? v.partial : [], iota }];
  },
  transpose(P, [v], p, [out], prim) {
    const perm = p.permutation as number[];
    return [
      { x: bind1(prim, [v.x], p), shape: [...out.shape], dims: perm.map((i) => [...v.dims[i]]), partial: v.partial },
    ];
  },
  reduce_sum: reduce("sum"),
  reduce_max: reduce("max"),
  reduce_min: reduce("min"),
  argmax: reduce("gather"),
  argmin: reduce("gather"),
  reduce_prod: reduce("gather"),
  reduce_and: reduce("gather"),
  reduce_or: reduce("gather"),
  cumsum: alongAxis("axis"),
  cumprod: alongAxis("axis"),
  cummax: alongAxis("axis"),
  cummin: alongAxis("axis"),
  cumlogsumexp: alongAxis("axis"),
  sort(P, ins, p, outs, prim) {
    // the sorted dimension gathered (and the operands brought to one sharding); the others stay split
    const d = p.dimension as number;
    const w0 = wholeAlong(P, ins[0], [d]);
    const xs = ins.map((v) => (sameDims(v.dims, w0.dims) && !v.partial.length ? v : P.reshard(v, w0.dims)).x);
    const ys = bind(prim, xs, p);
    return ys.map((x, i) => ({ x, shape: [...outs[i].shape], dims: w0.dims.map((t) => [...t]), partial: [] }));
  },
  dot_general(P, [l, r], p, [out], prim) {
    const [[lc, rc], [lb, rb]] = p.dimension_numbers as [[number[], number[]], [number[], number[]]];
    let lv = P.resolve(l),
      rv = P.resolve(r);
    const used = new Set<string>();
    const lt = lv.dims.map(() => [] as string[]),
      rt = rv.dims.map(() => [] as string[]);
    const take = (ax: string[]): string[] => {
      if (!ax.length || ax.some((a) => used.has(a))) return [];
      ax.forEach((a) => used.add(a));
      return [...ax];
    };
    // batch and contracting pairs: the lhs's sharding wins (the rhs is resharded; a slice of a whole one is free)
    const pair = (li: number, ri: number) => {
      const ax = take(lv.dims[li].length ? lv.dims[li] : rv.dims[ri]);
      lt[li] = ax;
      rt[ri] = [...ax];
    };
    lb.forEach((li, k) => pair(li, rb[k]));
    lc.forEach((li, k) => pair(li, rc[k]));
    const contractAxes = lc.flatMap((li) => lt[li]);
    const lf = lv.dims.map((_, i) => i).filter((i) => !lb.includes(i) && !lc.includes(i));
    const rf = rv.dims.map((_, i) => i).filter((i) => !rb.includes(i) && !rc.includes(i));
    for (const i of lf) lt[i] = take(lv.dims[i]);
    for (const i of rf) rt[i] = take(rv.dims[i]);
    if (!sameDims(lt, lv.dims)) lv = P.reshard(lv, lt);
    if (!sameDims(rt, rv.dims)) rv = P.reshard(rv, rt);
    const dims: Dims = [...lb.map((i) => lt[i]), ...lf.map((i) => lt[i]), ...rf.map((i) => rt[i])].map((t) => [...t]);
    const x = bind1(prim, [lv.x, rv.x], p);
    return [{ x, shape: [...out.shape], dims, partial: contractAxes }];
  },
  slice(P, [v], p, [out], prim) {
    const st = p.start_indices as number[],
      lim = p.limit_indices as number[],
      strides = p.strides as number[] | null;
    const whole = v.shape.map((n, d) => st[d] === 0 && lim[d] === n && (!strides || strides[d] === 1));
    const w = wholeAlong(
      P,
      v,
      v.shape.map((_, d) => d).filter((d) => !whole[d]),
    );
    const loc = P.localShape(v.shape, w.dims);
    const x = bind1(prim, [w.x], { ...p, limit_indices: lim.map((l, d) => (whole[d] ? loc[d] : l)) });
    return [{ x, shape: [...out.shape], dims: w.dims, partial: [] }];
  },
  pad(P, [v, pv], p, [out], prim) {
    const cfg = p.padding_config as [number, number, number][];
    const w = wholeAlong(
      P,
      v,
      cfg.map((_, d) => d).filter((d) => cfg[d].some((c) => c !== 0)),
    );
    const x = bind1(prim, [w.x, P.gatherAll(pv).x], p);
    return [{ x, shape: [...out.shape], dims: w.dims, partial: [] }];
  },
  rev(P, [v], p, [out], prim) {
    // reversed dims whole, the others keep their split (each block reverses its own rows)
    const w = wholeAlong(P, v, p.dimensions as number[]);
    return [{ x: bind1(prim, [w.x], p), shape: [...out.shape], dims: w.dims, partial: [] }];
  },
  dynamic_slice(P, [v, ...starts], p, [out], prim) {
    // a dim taken whole (slice size = its size, so its start clamps to 0) keeps its split; the others are gathered
    const sizes = p.slice_sizes as number[];
    const w = wholeAlong(
      P,
      v,
      v.shape.map((_, d) => d).filter((d) => sizes[d] !== v.shape[d]),
    );
    const loc = P.localShape(v.shape, w.dims);
    const st = starts.map((s) => P.gatherAll(s).x);
    const x = bind1(prim, [w.x, ...st], { ...p, slice_sizes: sizes.map((n, d) => (n === v.shape[d] ? loc[d] : n)) });
    return [{ x, shape: [...out.shape], dims: w.dims, partial: [] }];
  },
  dynamic_update_slice(P, [v, u, ...starts], p, [out], prim) {
    // dims the update covers whole keep the operand's split (the update is split alike); the others are gathered
    const w = wholeAlong(
      P,
      v,
      v.shape.map((_, d) => d).filter((d) => u.shape[d] !== v.shape[d]),
    );
    const uw = sameDims(u.dims, w.dims) && !u.partial.length ? u : P.reshard(u, w.dims);
    const x = bind1(prim, [w.x, uw.x, ...starts.map((s) => P.gatherAll(s).x)], p);
    return [{ x, shape: [...out.shape], dims: w.dims, partial: [] }];
  },
  conv_general_dilated(P, [l, r], p, [out], prim) {
    // a split of the lhs batch dim carries through (each output sample reads only its own input sample)
    if ((p.batch_group_count as number) !== 1) return null;
    const dn = p.dimension_numbers as { lhs_spec: number[]; out_spec: number[] };
    const b = dn.lhs_spec[0];
    const lv = wholeAlong(
      P,
      l,
      l.shape.map((_, d) => d).filter((d) => d !== b),
    );
    const dims = replicatedDims(out.ndim);
    dims[dn.out_spec[0]] = [...lv.dims[b]];
    return [{ x: bind1(prim, [lv.x, P.gatherAll(r).x], p), shape: [...out.shape], dims, partial: [] }];
  },
  concatenate(P, ins, p, [out], prim) {
    const d = p.dimension as number;
    // the other dims take the first operand sharding along them whose axes are free (like elementwise)
    const used = new Set<string>();
    const dims: Dims = replicatedDims(out.ndim);
    for (let k = 0; k < out.ndim; k++)
      for (const v of ins) {
        const ax = v.dims[k];
        if (k !== d && ax.length && ax.every((a) => !used.has(a))) {
          dims[k] = [...ax];
          ax.forEach((a) => used.add(a));
          break;
        }
      }
    const first = { dims };
    const xs = ins.map((v) => (sameDims(v.dims, dims) && !v.partial.length ? v : P.reshard(v, dims)).x);
    // index tuples: which components are iotas
    let comps: (number | null)[] | undefined;
    if (d === out.ndim - 1)
      comps = ins.flatMap(
        (v) =>
          v.comps ??
          (v.iota !== undefined && v.iota !== d && v.shape[d] === 1
            ? [v.iota]
            : new globalThis.Array<number | null>(v.shape[d]).fill(null)),
      );
    return [{ x: bind1(prim, xs, p), shape: [...out.shape], dims: first.dims, partial: [], comps }];
  },
};

/** Reductions: local reduce, then psum (left owed as a partial sum), pmax/pmin over the axes of reduced dims. */
function reduce(kind: "sum" | "max" | "min" | "gather"): Rule {
  return (P, [v0], p, [out], prim) => {
    const axes = p.axes as number[];
    let v = kind === "sum" ? v0 : P.resolve(v0);
    if (kind === "gather") v = wholeAlong(P, v, axes);
    const owed = axes.flatMap((d) => v.dims[d]);
    const dims = v.dims.filter((_, d) => !axes.includes(d)).map((t) => [...t]);
    let x = bind1(prim, [v.x], p);
    let partial = v.partial;
    if (kind === "sum") partial = [...partial, ...owed];
    else if (owed.length) x = kind === "max" ? pmax(x, owed) : pmin(x, owed);
    return [{ x, shape: [...out.shape], dims, partial }];
  };
}
/** Scans along one axis: that dimension gathered, the others stay split. */
function alongAxis(param: string): Rule {
  return (P, [v], p, [out], prim) => {
    const w = wholeAlong(P, v, [p[param] as number]);
    return [{ x: bind1(prim, [w.x], p), shape: [...out.shape], dims: w.dims, partial: [] }];
  };
}
