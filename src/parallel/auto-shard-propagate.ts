/**
 * @file autoShard's sharding propagation: walks a jaxpr forward from chosen input shardings with simple rules
 * (elementwise, broadcast, reshape, transpose, dot_general, reductions, gather) and records the collectives, FLOPs
 * and live bytes per device the partitioned program would need. Anything without a rule is replicated first.
 */
import { ClosedJaxpr, Jaxpr, type JaxprEqn, Literal, type Var, type Atom } from "../core/jaxpr.js";
import { itemsize } from "../core/dtype.js";
import {
  type CollectiveEstimate,
  type CollectiveKind,
  type MachineModel,
  collectiveSeconds,
  eqnFlops,
  eqnSeconds,
} from "./auto-shard-cost.js";

/** The shape and dtype of an operand. */
type Aval = { readonly shape: readonly number[]; readonly dtype: string };

/** Sharding of one array: mesh axes per dimension (major first) and the axes it is an unreduced partial sum over. */
export interface Sh {
  dims: string[][];
  partial: string[];
}

export const replicatedSh = (rank: number): Sh => ({ dims: Array.from({ length: rank }, () => []), partial: [] });
const cloneSh = (s: Sh): Sh => ({ dims: s.dims.map((d) => [...d]), partial: [...s.partial] });
const prod = (xs: readonly number[]): number => xs.reduce((a, b) => a * b, 1);
const usedAxes = (s: Sh): string[] => [...s.dims.flat(), ...s.partial];

/** Primitives computed element by element: an operand's sharding passes to the result unchanged. */
const ELEMENTWISE = new Set(
  (
    "add sub mul div rem pow max min atan2 nextafter and or xor shift_left shift_right_logical shift_right_arithmetic " +
    "eq ne lt le gt ge neg sign floor ceil round is_finite exp exp2 log log1p expm1 tanh logistic sin cos tan asin " +
    "acos atan sinh cosh asinh acosh atanh sqrt rsqrt cbrt abs erf erfc erf_inv lgamma digamma polygamma integer_pow " +
    "not population_count clz copy convert_element_type bitcast_convert_type select_n clamp real imag conj complex " +
    "stop_gradient name"
  ).split(" "),
);
/** Elementwise primitives linear in every operand (a partial sum stays partial when all operands are). */
const ADDITIVE = new Set(["add", "sub"]);
/** Unary primitives linear in their operand: a partial sum stays partial. */
const LINEAR_UNARY = new Set(["neg", "convert_element_type", "copy", "stop_gradient", "name", "real", "imag", "conj"]);
/** Reductions whose partial results combine with a collective of the same kind. */
const REDUCE_COLLECTIVE: Record<string, CollectiveKind> = {
  reduce_max: "pmax",
  reduce_min: "pmin",
  reduce_prod: "psum",
  reduce_and: "pmin",
  reduce_or: "pmax",
  reduce_xor: "psum",
};

/** What one walk of a jaxpr under one choice of input shardings costs per device. */
export interface WalkResult {
  computeSeconds: number;
  flops: number;
  collectives: CollectiveEstimate[];
  /** Peak bytes of intermediates (not the inputs) live at once on one device. */
  peakTempBytes: number;
  outShardings: Sh[];
}

/** Output targets: the sharding an output must end in (null: whatever propagation gives, partial sums reduced). */
export type OutTarget = Sh | null;

export class ShardingWalker {
  private collectives: CollectiveEstimate[] = [];
  /** Results of broadcast_in_dim: resharding one reshards (and costs) its smaller operand, then broadcasts again. */
  private bcast = new Map<Var, { aval: Aval; sh: Sh; dims: number[] }>();
  private flops = 0;
  private compute = 0;
  constructor(
    private readonly axisSizes: ReadonlyMap<string, number>,
    private readonly machine: MachineModel,
  ) {}

  private parts(axes: readonly string[]): number {
    return axes.reduce((a, n) => a * (this.axisSizes.get(n) ?? 1), 1);
  }
  /** The per-device block shape of an array of global shape `shape` under s. */
  localShape(shape: readonly number[], s: Sh): number[] {
    return shape.map((n, d) => Math.ceil(n / this.parts(s.dims[d] ?? [])));
  }
  localBytes(a: Aval, s: Sh): number {
    return prod(this.localShape(a.shape, s)) * itemsize(a.dtype as never);
  }
  private record(kind: CollectiveKind, axes: string[], bytes: number, reason: string): void {
    const n = this.parts(axes);
    if (n <= 1 || bytes === 0) return;
    this.collectives.push({ kind, axes, bytes, seconds: collectiveSeconds(kind, bytes, n, this.machine), reason });
  }

  /** Reduces a partial sum (all-reduce over its partial axes). */
  resolve(a: Aval, s: Sh, reason: string): Sh {
    if (s.partial.length === 0) return s;
    this.record("psum", [...s.partial], this.localBytes(a, s), reason);
    return { dims: s.dims.map((d) => [...d]), partial: [] };
  }

  /** Gathers dimension d (all-gather over its axes, or all-to-all when every axis moves to another dimension). */
  gatherDim(a: Aval, s: Sh, d: number, reason: string, moveTo?: Sh): Sh {
    if (s.dims[d].length === 0) return s;
    const axes = s.dims[d];
    const moved = moveTo && axes.every((ax) => moveTo.dims.some((t, e) => e !== d && t.includes(ax)));
    this.record(moved ? "all_to_all" : "all_gather", [...axes], this.localBytes(a, s), reason);
    const out = cloneSh(s);
    out.dims[d] = [];
    return out;
  }

  /**
   * Brings s to target's layout (partial sums reduced first; a replicated dimension is sliced for free, a
   * differently sharded one gathered). With `scatter`, a partial sum over exactly the axes of unsharded target
   * dimensions is reduce-scattered instead.
   */
  reshard(a: Aval, s: Sh, target: Sh, reason: string, scatter = false): Sh {
    let cur = s;
    if (cur.partial.length) {
      const newAxes = target.dims.flatMap((t, d) => (cur.dims[d].length === 0 ? t : []));
      const p = [...cur.partial].sort().join(),
        q = [...newAxes].sort().join();
      if (scatter && p === q && !target.partial.length) {
        this.record("psum_scatter", [...cur.partial], this.localBytes(a, cur), reason);
        cur = { dims: target.dims.map((t, d) => (cur.dims[d].length === 0 ? [...t] : [...cur.dims[d]])), partial: [] };
      } else if (target.partial.join() !== cur.partial.join()) cur = this.resolve(a, cur, reason);
    }
    for (let d = 0; d < cur.dims.length; d++) {
      if (cur.dims[d].join() === target.dims[d].join()) continue;
      if (cur.dims[d].length) cur = this.gatherDim(a, cur, d, reason, target);
    }
    // every remaining difference is a free local slice of a replicated dimension
    return { dims: target.dims.map((t) => [...t]), partial: [...cur.partial] };
  }

  /** Walks a closed jaxpr from input shardings; outputs are brought to their targets (null: partial sums reduced). */
  walk(cj: ClosedJaxpr | Jaxpr, inSh: Sh[], targets: OutTarget[] | null, scatterOutputs: boolean): WalkResult {
    this.collectives = [];
    this.flops = 0;
    this.compute = 0;
    const j = cj instanceof ClosedJaxpr ? cj.jaxpr : cj;
    const { outs, peak } = this.walkJaxpr(j, [...j.constvars.map((v) => replicatedSh(v.aval.ndim)), ...inSh]);
    const outShardings = j.outvars.map((v, k) => {
      const t = targets?.[k] ?? null;
      const reason = `output ${k}`;
      if (t) return this.reshard(v.aval, outs[k], t, reason, scatterOutputs);
      return this.resolve(v.aval, outs[k], reason);
    });
    return {
      computeSeconds: this.compute,
      flops: this.flops,
      collectives: this.collectives,
      peakTempBytes: peak,
      outShardings,
    };
  }

  /** Walks one jaxpr (constvars first, then invars); returns its outputs' shardings and its peak intermediate bytes. */
  private walkJaxpr(j: Jaxpr, inSh: Sh[]): { outs: Sh[]; peak: number } {
    const env = new Map<Var, Sh>();
    [...j.constvars, ...j.invars].forEach((v, i) => env.set(v, inSh[i]));
    const get = (a: Atom): Sh => (a instanceof Literal ? replicatedSh(a.aval.ndim) : env.get(a)!);
    // dead code elimination: only equations feeding an output run
    const needed = new Set<Var>(j.outvars.filter((v): v is Var => !(v instanceof Literal)));
    const live: boolean[] = new Array<boolean>(j.eqns.length).fill(false);
    for (let i = j.eqns.length - 1; i >= 0; i--) {
      const e = j.eqns[i];
      if (!e.outVars.some((v) => needed.has(v)) && e.primitive.name !== "debug_callback") continue;
      live[i] = true;
      for (const a of e.inputs) if (!(a instanceof Literal)) needed.add(a);
    }
    // liveness: an intermediate is freed after its last use (outputs live to the end)
    const lastUse = new Map<Var, number>();
    j.eqns.forEach((e, i) => {
      if (live[i]) for (const a of e.inputs) if (!(a instanceof Literal)) lastUse.set(a, i);
    });
    for (const v of j.outvars) if (!(v instanceof Literal)) lastUse.set(v, Infinity);
    const owned = new Set<Var>();
    let liveBytes = 0,
      peak = 0;
    j.eqns.forEach((e, i) => {
      if (!live[i]) return;
      const { outs, tempBytes } = this.eqn(e, e.inputs.map(get));
      const a = e.inputs[0];
      if (e.primitive.name === "broadcast_in_dim" && !(a instanceof Literal))
        this.bcast.set(e.outVars[0], { aval: a.aval, sh: get(a), dims: e.params.broadcast_dimensions as number[] });
      e.outVars.forEach((v, k) => {
        env.set(v, outs[k]);
        owned.add(v);
        liveBytes += this.localBytes(v.aval, outs[k]);
      });
      peak = Math.max(peak, liveBytes + tempBytes);
      for (const v of [...e.inputs, ...e.outVars])
        if (!(v instanceof Literal) && owned.has(v) && (lastUse.get(v) ?? -1) <= i) {
          owned.delete(v);
          liveBytes -= this.localBytes(v.aval, env.get(v)!);
        }
    });
    return { outs: j.outvars.map(get), peak };
  }

  /** One equation: its operands' shardings in, its results' shardings out, with the collectives it needs recorded. */
  private eqn(e: JaxprEqn, ins: Sh[]): { outs: Sh[]; tempBytes: number } {
    const name = e.primitive.name;
    const avals = e.inputs.map((a) => a.aval);
    const why = (s: string) => `${name}: ${s}`;
    let opnds = ins.map(cloneSh);
    let outs: Sh[];
    const sub = subJaxpr(e);
    if (sub) {
      const r = this.walkJaxpr(sub.jaxpr, [...sub.consts.map((c) => replicatedSh(c.ndim)), ...opnds]);
      this.count(e, opnds, r.outs);
      return { outs: r.outs, tempBytes: r.peak };
    }
    if (ELEMENTWISE.has(name) && e.outVars.length === 1) outs = [this.elementwise(e, opnds, avals)];
    else if (name === "broadcast_in_dim") {
      const bd = e.params.broadcast_dimensions as number[];
      const shape = e.outVars[0].aval.shape;
      const dims: string[][] = shape.map(() => []);
      bd.forEach((o, i) => {
        if (avals[0].shape[i] === shape[o]) dims[o] = [...opnds[0].dims[i]];
      });
      outs = [{ dims, partial: [...opnds[0].partial] }];
    } else if (name === "transpose") {
      const perm = e.params.permutation as number[];
      outs = [{ dims: perm.map((p) => [...opnds[0].dims[p]]), partial: [...opnds[0].partial] }];
    } else if (name === "reshape" || name === "squeeze") {
      const r = this.reshape(avals[0].shape, e.outVars[0].aval.shape, opnds[0], avals[0], why);
      opnds = [r.src];
      outs = [r.out];
    } else if (name === "reduce_sum" || name in REDUCE_COLLECTIVE) {
      const axes = e.params.axes as number[];
      let s = opnds[0];
      if (name !== "reduce_sum") s = this.resolve(avals[0], s, why("a partial sum feeds a non-additive reduction"));
      opnds = [s];
      const over = axes.flatMap((d) => s.dims[d]);
      const out: Sh = { dims: s.dims.filter((_, d) => !axes.includes(d)).map((x) => [...x]), partial: [...s.partial] };
      if (name === "reduce_sum") out.partial.push(...over);
      else {
        const o = e.outVars[0].aval;
        this.record(REDUCE_COLLECTIVE[name], over, this.localBytes(o, out), why("reduction over a sharded dimension"));
      }
      outs = [out];
    } else if (name === "dot_general") {
      const r = this.dot(e, opnds, avals, why);
      opnds = r.opnds;
      outs = [r.out];
    } else if (name === "gather") {
      const r = this.gather(e, opnds, avals, why);
      opnds = r.opnds;
      outs = [r.out];
    } else {
      // no rule: operands replicated (partial sums reduced, sharded dimensions gathered), results replicated
      opnds = opnds.map((s, k) =>
        this.reshard(avals[k], s, replicatedSh(avals[k].shape.length), why("no sharding rule")),
      );
      outs = e.outVars.map((v) => replicatedSh(v.aval.ndim));
    }
    const tempBytes = opnds.reduce(
      (t, s, k) => t + (s.dims.flat().join() !== ins[k].dims.flat().join() ? this.localBytes(avals[k], s) : 0),
      0,
    );
    this.count(e, opnds, outs);
    return { outs, tempBytes };
  }

  /** Adds an equation's FLOPs and roofline time on its local shapes. */
  private count(e: JaxprEqn, opnds: Sh[], outs: Sh[]): void {
    if (subJaxpr(e)) return; // counted equation by equation inside
    const inShapes = e.inputs.map((a, k) => this.localShape(a.aval.shape, opnds[k]));
    const outShapes = e.outVars.map((v, k) => this.localShape(v.aval.shape, outs[k]));
    const f = eqnFlops(e, inShapes, outShapes);
    const bytes =
      e.inputs.reduce((t, a, k) => t + this.localBytes(a.aval, opnds[k]), 0) +
      e.outVars.reduce((t, v, k) => t + this.localBytes(v.aval, outs[k]), 0);
    this.flops += f;
    // a view costs nothing; data movement costs its bytes (PrimitiveFacts.cost)
    this.compute += e.primitive.opts.cost === "view" ? 0 : eqnSeconds(f, bytes, this.machine);
  }

  /** Elementwise: each result dimension takes the first operand sharding of it; other operands are brought to it. */
  private elementwise(e: JaxprEqn, opnds: Sh[], avals: Aval[]): Sh {
    const name = e.primitive.name;
    const why = (s: string) => `${name}: ${s}`;
    const rank = e.outVars[0].aval.ndim;
    const arrays = opnds.map((_, k) => k).filter((k) => avals[k].shape.length === rank && rank > 0);
    // partial sums: kept through linear operations, reduced before anything else
    const partials = opnds.map((s) => s.partial.join());
    let keep: string | null = null;
    if (partials.some((p) => p)) {
      if (ADDITIVE.has(name) && partials.every((p) => p === partials[0])) keep = partials[0];
      else if (LINEAR_UNARY.has(name) && opnds.length === 1) keep = partials[0];
      else if ((name === "mul" || name === "div") && partials.filter((p) => p).length === 1) {
        const k = partials.findIndex((p) => p);
        if (name === "mul" || k === 0) keep = partials[k];
      }
      if (keep === null) opnds.forEach((s, k) => (opnds[k] = this.resolve(avals[k], s, why("partial sum operand"))));
    }
    const dims: string[][] = Array.from({ length: rank }, () => []);
    const taken = new Set<string>(keep ? keep.split(",") : []);
    for (let d = 0; d < rank; d++)
      for (const k of arrays) {
        const ax = opnds[k].dims[d];
        if (ax.length && ax.every((a) => !taken.has(a))) {
          dims[d] = [...ax];
          ax.forEach((a) => taken.add(a));
          break;
        }
      }
    const target: Sh = { dims, partial: keep ? keep.split(",") : [] };
    for (const k of arrays) {
      const src = this.bcast.get(e.inputs[k] as Var);
      if (src && opnds[k].dims.join("|") !== target.dims.join("|") && !opnds[k].partial.length) {
        // gather or slice the broadcast's operand, then broadcast it into the target layout
        const t: Sh = {
          dims: src.dims.map((o, i) => (src.aval.shape[i] === avals[k].shape[o] ? [...dims[o]] : [])),
          partial: [],
        };
        this.reshard(src.aval, src.sh, t, why("operands sharded differently (a broadcast operand)"));
        opnds[k] = cloneSh(target);
      } else opnds[k] = this.reshard(avals[k], opnds[k], target, why("operands sharded differently"));
    }
    return target;
  }

  /** reshape: a sharded dimension maps to the result dimension starting at the same flat offset when it divides it. */
  private reshape(
    from: readonly number[],
    to: readonly number[],
    s0: Sh,
    aval: Aval,
    why: (s: string) => string,
  ): { src: Sh; out: Sh } {
    let src = s0;
    const dims: string[][] = to.map(() => []);
    const startsTo = new Map<number, number>();
    let acc = 1;
    to.forEach((n, j) => {
      if (!startsTo.has(acc) || n !== 1) startsTo.set(acc, j);
      acc *= n;
    });
    acc = 1;
    from.forEach((n, i) => {
      const ax = src.dims[i];
      const j = startsTo.get(acc);
      if (ax.length) {
        if (j !== undefined && to[j] % this.parts(ax) === 0 && dims[j].length === 0) dims[j] = [...ax];
        else src = this.gatherDim(aval, src, i, why("sharded dimension split or merged across a boundary"));
      }
      acc *= n;
    });
    return { src, out: { dims, partial: [...src.partial] } };
  }

  /**
   * dot_general: batch dimensions must agree, a contraction over dimensions sharded alike on both sides gives a
   * partial sum (over those axes), free dimensions keep their sharding; conflicts gather the smaller operand.
   */
  private dot(e: JaxprEqn, ins: Sh[], avals: Aval[], why: (s: string) => string): { opnds: Sh[]; out: Sh } {
    const [[lc, rc], [lb, rb]] = e.params.dimension_numbers as [[number[], number[]], [number[], number[]]];
    let [L, R] = ins;
    const bytes = (k: number, s: Sh) => this.localBytes(avals[k], s);
    if (L.partial.length && R.partial.length) {
      if (bytes(0, L) <= bytes(1, R)) L = this.resolve(avals[0], L, why("both operands partial sums"));
      else R = this.resolve(avals[1], R, why("both operands partial sums"));
    }
    /** Makes dimension pair (dl, dr) agree: equal, slice the replicated side, or gather the smaller side. */
    const agree = (dl: number, dr: number, what: string): void => {
      const a = L.dims[dl].join(),
        b = R.dims[dr].join();
      if (a === b) return;
      const freeIn = (s: Sh, axes: string[]) => axes.every((x) => !usedAxes(s).includes(x));
      if (!b && freeIn(R, L.dims[dl])) R.dims[dr] = [...L.dims[dl]];
      else if (!a && freeIn(L, R.dims[dr])) L.dims[dl] = [...R.dims[dr]];
      else if (bytes(0, L) <= bytes(1, R)) {
        L = this.gatherDim(avals[0], L, dl, why(what));
        if (R.dims[dr].length && freeIn(L, R.dims[dr])) L.dims[dl] = [...R.dims[dr]];
        else R = this.gatherDim(avals[1], R, dr, why(what));
      } else {
        R = this.gatherDim(avals[1], R, dr, why(what));
        if (L.dims[dl].length && freeIn(R, L.dims[dl])) R.dims[dr] = [...L.dims[dl]];
        else L = this.gatherDim(avals[0], L, dl, why(what));
      }
    };
    L = cloneSh(L);
    R = cloneSh(R);
    lb.forEach((d, i) => agree(d, rb[i], "batch dimensions sharded differently"));
    lc.forEach((d, i) => agree(d, rc[i], "contracting dimensions sharded differently"));
    const lf = L.dims.map((_, d) => d).filter((d) => !lc.includes(d) && !lb.includes(d));
    const rf = R.dims.map((_, d) => d).filter((d) => !rc.includes(d) && !rb.includes(d));
    // a mesh axis may appear once in the result: resolve clashes between free dims (and the partial sum)
    for (;;) {
      const seen = new Map<string, string>();
      const contracted = lc.flatMap((d) => L.dims[d]);
      for (const ax of [...lb.flatMap((d) => L.dims[d]), ...contracted, ...L.partial, ...R.partial])
        seen.set(ax, "fixed");
      let clash: [number, number] | null = null;
      for (const d of lf) for (const ax of L.dims[d]) if (seen.has(ax)) clash ??= [0, d];
      lf.forEach((d) => L.dims[d].forEach((ax) => seen.set(ax, "l")));
      for (const d of rf) for (const ax of R.dims[d]) if (seen.has(ax)) clash ??= [1, d];
      if (!clash) break;
      const [k, d] = clash;
      if (k === 0) L = this.gatherDim(avals[0], L, d, why("a mesh axis shards two result dimensions"));
      else R = this.gatherDim(avals[1], R, d, why("a mesh axis shards two result dimensions"));
    }
    const out: Sh = {
      dims: [...lb.map((d) => [...L.dims[d]]), ...lf.map((d) => [...L.dims[d]]), ...rf.map((d) => [...R.dims[d]])],
      partial: [...L.partial, ...R.partial, ...lc.flatMap((d) => L.dims[d])],
    };
    return { opnds: [L, R], out };
  }

  /**
   * gather (jaxts's gather[axes]: operand indexed along `axes` by the last dimension of the indices): result = the
   * indices' batch dimensions (their sharding) then the operand's other dimensions (theirs); an operand sharded along
   * an indexed dimension gives a partial sum (a masked lookup per block, then one reduction).
   */
  private gather(e: JaxprEqn, ins: Sh[], avals: Aval[], why: (s: string) => string): { opnds: Sh[]; out: Sh } {
    const axes = e.params.axes as number[] | undefined;
    let [op, idx] = ins.map(cloneSh);
    const outRank = e.outVars[0].aval.ndim;
    const nb = avals[1].shape.length - 1;
    const rest = avals[0].shape.map((_, d) => d).filter((d) => !axes?.includes(d));
    if (!axes || nb + rest.length !== outRank || op.partial.length || idx.partial.length) {
      const rep = [0, 1].map((k) =>
        this.reshard(avals[k], ins[k], replicatedSh(avals[k].shape.length), why("no rule")),
      );
      return { opnds: rep, out: replicatedSh(outRank) };
    }
    idx = this.gatherDim(avals[1], idx, nb, why("index vector dimension sharded"));
    const partial = axes.flatMap((d) => op.dims[d]);
    const dims = [...idx.dims.slice(0, nb).map((x) => [...x]), ...rest.map((d) => [...op.dims[d]])];
    const all = [...dims.flat(), ...partial];
    if (new Set(all).size !== all.length) {
      // the indices and the operand use one mesh axis: gather the operand
      op = this.reshard(
        avals[0],
        op,
        replicatedSh(avals[0].shape.length),
        why("operand and indices share a mesh axis"),
      );
      return { opnds: [op, idx], out: { dims: [...idx.dims.slice(0, nb), ...rest.map(() => [])], partial: [] } };
    }
    return { opnds: [op, idx], out: { dims, partial } };
  }
}

/** A call-like equation's inner jaxpr (pjit, custom_jvp_call, checkpoint...) when its inputs map onto it one to one. */
function subJaxpr(e: JaxprEqn): { jaxpr: Jaxpr; consts: { ndim: number }[] } | null {
  if (["cond", "while", "scan", "shard_map"].includes(e.primitive.name)) return null;
  for (const v of Object.values(e.params)) {
    const j = v instanceof ClosedJaxpr ? v.jaxpr : v instanceof Jaxpr ? v : null;
    if (!j) continue;
    const consts = v instanceof ClosedJaxpr ? v.consts : [];
    if (j.constvars.length === consts.length && j.invars.length === e.inputs.length)
      if (j.outvars.length === e.outVars.length) return { jaxpr: j, consts: consts.map((c) => ({ ndim: c.ndim })) };
  }
  return null;
}
