/**
 * @file Weight-update sharding for per-device programs (XLA's all-reduce decomposition, Xu et al. 2020): a psum whose
 * result feeds only elementwise ops whose other operands are replicated over the psum's axis (an optimizer update)
 * becomes one reduce-scatter of a bucket of all such psums, the elementwise update on each rank's 1/n of every tensor,
 * and one all-gather of the updated values. Exact: each element is reduced in the same rank order and then goes
 * through the same elementwise ops, only on one rank instead of all of them.
 */
import type { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import { isFloat } from "../core/dtype.js";
import { stridesOf } from "../core/shape.js";
import { ClosedJaxpr, Jaxpr, type JaxprEqn, Literal, type Atom, type Var } from "../core/jaxpr.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { ArrayImpl } from "../core/array-impl.js";
import { bind, bind1, withNamedAxis } from "../core/trace.js";
import * as ops from "../primitives/bind-ops.js";
import { allGatherP, axisIndexP, psumScatterP } from "./collectives.js";
import type { SpmdMesh } from "./lower-collectives.js";

type Axes = ReadonlySet<string>;

/** Elementwise primitives an update may use (outputs have the operands' shape; rank-0 operands broadcast). */
const ELEMENTWISE = new Set([
  "neg",
  "abs",
  "sqrt",
  "rsqrt",
  "exp",
  "log",
  "tanh",
  "logistic",
  "sign",
  "floor",
  "ceil",
  "integer_pow",
  "convert_element_type",
  "add",
  "sub",
  "mul",
  "div",
  "max",
  "min",
  "pow",
]);

/** Tensors of at least this many elements get collectives of their own instead of the shared bucket. */
const BUCKET_ELEMENTS = 1 << 16;

/** What the pass did to one program (for the summary and the tests). */
export interface UpdateShardingInfo {
  /** psum results turned into reduce-scatter + sharded update + all-gather. */
  psums: number;
  /** Elementwise equations now run on 1/n of their elements. */
  updateEqns: number;
  /** Reduce-scatter / all-gather buckets (one per (axis, dtype) each). */
  buckets: number;
  /** Elements reduce-scattered and gathered per rank (padded). */
  scatteredElements: number;
  gatheredElements: number;
}

function nested(e: JaxprEqn): boolean {
  const has = (v: unknown): boolean =>
    v instanceof Jaxpr || v instanceof ClosedJaxpr || (globalThis.Array.isArray(v) && v.some(has));
  return Object.values(e.params).some(has);
}

/** Axes each value varies over; outputs of equations with nested jaxprs conservatively vary over every mesh axis. */
function varying(j: Jaxpr, invarAxes: readonly Axes[], all: Axes): Map<Var, Axes> {
  const vary = new Map<Var, Axes>();
  j.constvars.forEach((v) => vary.set(v, new Set()));
  j.invars.forEach((v, i) => vary.set(v, invarAxes[i]));
  const of = (a: Atom): Axes => (a instanceof Literal ? new Set() : (vary.get(a) ?? all));
  for (const e of j.eqns) {
    const u = new Set(e.inputs.flatMap((a) => [...of(a)]));
    const p = e.params as { axes?: string[]; axis_name?: string; axis_index_groups?: unknown };
    let out: Axes;
    if (nested(e)) out = all;
    else if (["psum", "pmax", "pmin"].includes(e.primitive.name) && !p.axis_index_groups)
      out = new Set([...u].filter((a) => !(p.axes ?? []).includes(a)));
    else if (e.primitive.name === "axis_index") out = new Set([p.axis_name!]);
    else if (["psum", "pmax", "pmin", "all_gather"].includes(e.primitive.name) && p.axis_index_groups) out = all;
    else if (e.primitive.name === "all_gather") out = new Set([...u].filter((a) => a !== p.axis_name));
    else if (["ppermute", "reduce_scatter", "all_to_all"].includes(e.primitive.name))
      out = new Set([...u, p.axis_name!]);
    else out = u;
    for (const v of e.outVars) vary.set(v, out);
  }
  return vary;
}

/**
 * Whether the value of jaxpr variable `v` (of `j`, whose invars vary over `invarAxes`) holds the same bytes on every
 * rank of each group: no two members of a group differ in their coordinate along an axis the value varies over
 * (an unknown variable varies over every axis). For the all-reduce epilogues (compiler/collective-epilogues.ts).
 */
export function replicatedInGroups(
  j: Jaxpr,
  invarAxes: readonly Axes[],
  mesh: SpmdMesh,
): (v: Var | undefined, groups: readonly (readonly number[])[]) => boolean {
  const all = new Set(mesh.axisNames);
  const vary = varying(j, invarAxes, all);
  const stride = stridesOf(mesh.dims);
  const coord = (r: number, d: number): number => Math.floor(r / stride[d]) % mesh.dims[d];
  return (v, groups) => {
    const axes = [...((v && vary.get(v)) ?? all)].map((a) => mesh.axisNames.indexOf(a));
    return groups.every((g) => axes.every((d) => d < 0 || g.every((r) => coord(r, d) === coord(g[0], d))));
  };
}

const size = (a: ShapedArray): number => a.shape.reduce((x, y) => x * y, 1);

/**
 * The jaxpr with its shardable psums rewritten (see the file comment), its constants (the original ones first), and
 * what was done; the jaxpr itself when nothing applies. `invarAxes`: the mesh axes each invar varies over.
 */
export function shardWeightUpdates(
  jaxpr: Jaxpr,
  consts: readonly ArrayImpl[],
  invarAxes: readonly Axes[],
  mesh: SpmdMesh,
): { jaxpr: Jaxpr; consts: ArrayImpl[]; info: UpdateShardingInfo | null } {
  const unchanged = { jaxpr, consts: [...consts], info: null };
  const all = new Set(mesh.axisNames);
  const vary = varying(jaxpr, invarAxes, all);
  const axisSize = (a: string): number => mesh.dims[mesh.axisNames.indexOf(a)];
  // region: values derived from a seed psum's result over axis `axis` by elementwise ops, with the shape of the seed
  const grow = (banned: ReadonlySet<Var>) => {
    const region = new Map<Var, { axis: string; seed: Var }>();
    const seeds = new Map<Var, { axis: string; input: Atom; eqn: number }>();
    const dependsOnRegion = new Set<Var>();
    const regionEqns = new Set<number>();
    const seedUsed = new Set<Var>();
    const replicatedOver = (a: Atom, axis: string): boolean =>
      a instanceof Literal || (!dependsOnRegion.has(a) && !region.has(a) && !(vary.get(a) ?? all).has(axis));
    jaxpr.eqns.forEach((e, k) => {
      const p = e.params as { axes?: string[]; axis_index_groups?: unknown };
      const ins = e.inputs.filter((a): a is Var => !(a instanceof Literal));
      const touches = ins.some((v) => region.has(v) || dependsOnRegion.has(v));
      if (
        e.primitive.name === "psum" &&
        !touches &&
        !p.axis_index_groups &&
        p.axes?.length === 1 &&
        axisSize(p.axes[0]) > 1
      ) {
        e.outVars.forEach((v, i) => {
          if (banned.has(v)) return;
          if (isFloat(v.aval.dtype) && v.aval.ndim > 0 && size(v.aval) >= axisSize(p.axes![0])) {
            region.set(v, { axis: p.axes![0], seed: v });
            seeds.set(v, { axis: p.axes![0], input: e.inputs[i], eqn: k });
          }
        });
        return;
      }
      const inRegion = ins.filter((v) => region.has(v));
      if (inRegion.length && ELEMENTWISE.has(e.primitive.name) && e.outVars.length === 1 && !nested(e)) {
        const { axis } = region.get(inRegion[0])!;
        const shape = e.outVars[0].aval.shape;
        const same = (a: Atom) => a.aval.ndim === shape.length && a.aval.shape.every((s, d) => s === shape[d]);
        const ok =
          isFloat(e.outVars[0].aval.dtype) &&
          inRegion.every((v) => region.get(v)!.axis === axis && same(v)) &&
          e.inputs.every((a) =>
            a instanceof Literal || !region.has(a) ? replicatedOver(a, axis) && (a.aval.ndim === 0 || same(a)) : true,
          );
        if (ok) {
          regionEqns.add(k);
          region.set(e.outVars[0], { axis, seed: region.get(inRegion[0])!.seed });
          for (const v of inRegion) seedUsed.add(region.get(v)!.seed);
          return;
        }
      }
      if (touches) for (const v of e.outVars) dependsOnRegion.add(v);
    });
    return { region, seeds, regionEqns, seedUsed };
  };
  // a seed is sharded when update equations read it and nothing else does (else the reduced value itself would be
  // gathered: no saving); dropping one can shrink the others' regions, so repeat until none is dropped
  const banned = new Set<Var>();
  let grown = grow(banned);
  for (;;) {
    const readElsewhere = new Set<Var>(jaxpr.outvars.filter((a): a is Var => !(a instanceof Literal)));
    jaxpr.eqns.forEach((e, k) => {
      if (!grown.regionEqns.has(k)) for (const a of e.inputs) if (!(a instanceof Literal)) readElsewhere.add(a);
    });
    const drop = [...grown.seeds.keys()].filter((v) => !grown.seedUsed.has(v) || readElsewhere.has(v));
    if (drop.length === 0) break;
    drop.forEach((v) => banned.add(v));
    grown = grow(banned);
  }
  const { region, seeds, regionEqns } = grown;
  if (seeds.size === 0) return unchanged;
  // exits: region values read outside the region (other equations, outputs): gathered after the update
  const exits = new Set<Var>();
  jaxpr.eqns.forEach((e, k) => {
    if (regionEqns.has(k)) return;
    for (const a of e.inputs) if (!(a instanceof Literal) && region.has(a)) exits.add(a);
  });
  for (const a of jaxpr.outvars) if (!(a instanceof Literal) && region.has(a)) exits.add(a);
  const seedEqns = new Set([...seeds.values()].map((s) => s.eqn));
  const info: UpdateShardingInfo = {
    psums: seeds.size,
    updateEqns: regionEqns.size,
    buckets: 0,
    scatteredElements: 0,
    gatheredElements: 0,
  };

  // small tensors share one bucket (one collective each way); a large one has its own, so its [n, k] blocks are a
  // view of the gradient and its gathered [n, k] a view of the result (a shared bucket costs a copy in and out)
  const groupOf = (v: Var, axis: string): string =>
    size(v.aval) >= BUCKET_ELEMENTS ? `${axis}|${v.aval.dtype}|#${v.id}` : `${axis}|${v.aval.dtype}`;
  const nc = jaxpr.constvars.length;
  const fn = (...xs: Array[]): Array[] => {
    const env = new Map<Var, Array>();
    jaxpr.constvars.forEach((v, i) => env.set(v, xs[i]));
    jaxpr.invars.forEach((v, i) => env.set(v, xs[nc + i]));
    const read = (a: Atom): Array => (a instanceof Literal ? a.value : env.get(a)!);
    const deferred: JaxprEqn[] = [];
    const late = new Set<Var>();
    const run = (e: JaxprEqn): void => {
      const outs = bind(e.primitive, e.inputs.map(read), e.params);
      e.outVars.forEach((v, i) => env.set(v, outs[i]));
    };
    jaxpr.eqns.forEach((e, k) => {
      if (regionEqns.has(k)) return;
      const partial = e.primitive.name === "psum" && seedEqns.has(k);
      if (partial && e.outVars.every((v) => seeds.has(v))) return;
      // equations reading gathered values (or values computed from them) run after the all-gather
      if (e.inputs.some((a) => !(a instanceof Literal) && (exits.has(a) || late.has(a)))) {
        deferred.push(e);
        e.outVars.forEach((v) => late.add(v));
        return;
      }
      if (partial) {
        // a psum of several operands, some shardable: the others stay one psum
        const keep = e.outVars.map((v, i) => (seeds.has(v) ? -1 : i)).filter((i) => i >= 0);
        const outs = bind(
          e.primitive,
          keep.map((i) => read(e.inputs[i])),
          e.params,
        );
        keep.forEach((i, j) => env.set(e.outVars[i], outs[j]));
        return;
      }
      run(e);
    });
    // reduce-scatter: per (axis, dtype), every seed's padded flat value as [n, k] blocks side by side -> [K] per rank
    const piece = new Map<Var, Array>();
    const groups = new Map<string, Var[]>();
    for (const [v, s] of seeds) {
      const g = groupOf(v, s.axis);
      groups.set(g, [...(groups.get(g) ?? []), v]);
    }
    const blocks = (x: Array, n: number): Array => {
      const m = size(x.aval as ShapedArray),
        k = Math.ceil(m / n);
      const flat = ops.reshape(x, [m]);
      const padded = k * n === m ? flat : ops.pad(flat, ops.scalarLike(x, 0), [[0, k * n - m, 0]]);
      return ops.reshape(padded, [n, k]);
    };
    const rankOf = new Map<string, Array>();
    for (const vs of groups.values()) {
      const axis = seeds.get(vs[0])!.axis,
        n = axisSize(axis);
      const bucket = ops.concatenate(
        vs.map((v) => blocks(read(seeds.get(v)!.input), n)),
        1,
      );
      const shard = bind1(psumScatterP, [bucket], {
        axis_name: axis,
        scatter_dimension: 0,
        tiled: false,
        axis_size: n,
      });
      info.buckets++;
      info.scatteredElements += shard.size;
      let off = 0;
      for (const v of vs) {
        const k = Math.ceil(size(v.aval) / n);
        piece.set(v, ops.slice(shard, [off], [off + k]));
        off += k;
      }
      if (!rankOf.has(axis)) rankOf.set(axis, bind1(axisIndexP, [], { axis_name: axis }));
    }
    // the update on this rank's pieces; a replicated full-shape operand contributes its rank's block
    const mineOf = new Map<Var, Array>();
    const mine = (a: Atom, axis: string): Array => {
      const got = a instanceof Literal ? undefined : mineOf.get(a);
      if (got) return got;
      const r = block(read(a), axis);
      if (!(a instanceof Literal)) mineOf.set(a, r);
      return r;
    };
    const block = (x: Array, axis: string): Array => {
      const n = axisSize(axis),
        b = blocks(x, n);
      return ops.reshape(
        ops.dynamicSlice(b, [rankOf.get(axis)!, ops.scalarLike(rankOf.get(axis)!, 0)], [1, b.shape[1]]),
        [b.shape[1]],
      );
    };
    for (const k of [...regionEqns].sort((a, b) => a - b)) {
      const e = jaxpr.eqns[k];
      const { axis } = region.get(e.outVars[0])!;
      const args = e.inputs.map((a) =>
        !(a instanceof Literal) && region.has(a) ? piece.get(a)! : a.aval.ndim === 0 ? read(a) : mine(a, axis),
      );
      piece.set(e.outVars[0], bind1(e.primitive, args, e.params));
    }
    // all-gather the exits: per (axis, dtype) one bucket [K'] -> [n, K'] -> each exit's columns -> its shape
    const gathers = new Map<string, Var[]>();
    for (const v of exits) {
      const { axis, seed } = region.get(v)!;
      const g = `${groupOf(seed, axis)}|${v.aval.dtype}`;
      gathers.set(g, [...(gathers.get(g) ?? []), v]);
    }
    for (const vs of gathers.values()) {
      const axis = region.get(vs[0])!.axis,
        n = axisSize(axis);
      const bucket = ops.concatenate(
        vs.map((v) => piece.get(v)!),
        0,
      );
      const all = bind1(allGatherP, [bucket], {
        axis_name: axis,
        axis: 0,
        tiled: false,
        axis_size: n,
        axis_index_groups: null,
      });
      info.buckets++;
      info.gatheredElements += bucket.size;
      let off = 0;
      for (const v of vs) {
        const m = size(v.aval),
          k = Math.ceil(m / n);
        const cols = ops.slice(all, [0, off], [n, off + k]);
        const flat = ops.reshape(cols, [n * k]);
        env.set(v, ops.reshape(k * n === m ? flat : ops.slice(flat, [0], [m]), v.aval.shape));
        off += k;
      }
    }
    for (const e of deferred) run(e);
    return jaxpr.outvars.map(read);
  };
  const avals = [...jaxpr.constvars, ...jaxpr.invars].map((v) => v.aval);
  const bound = mesh.axisNames.reduceRight<() => ReturnType<typeof traceToJaxpr>>(
    (inner, name, a) => () => withNamedAxis({ name, size: mesh.dims[a] }, inner),
    () => traceToJaxpr(fn, avals, "shard_map"),
  );
  const t = bound();
  if (!t.consts.every((c) => c instanceof ArrayImpl)) return unchanged;
  return {
    jaxpr: new Jaxpr(
      [...t.jaxpr.invars.slice(0, nc), ...t.jaxpr.constvars],
      t.jaxpr.invars.slice(nc),
      t.jaxpr.outvars,
      t.jaxpr.eqns,
    ),
    consts: [...consts, ...(t.consts as ArrayImpl[])],
    info,
  };
}
