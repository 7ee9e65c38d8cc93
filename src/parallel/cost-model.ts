/** @file Per-device cost of a partitioned program: FLOPs, bytes accessed, collectives and peak memory (per primitive). */
import type { ShapedArray } from "../core/aval.js";
import { itemsize } from "../core/dtype.js";
import { ClosedJaxpr, Jaxpr, type JaxprEqn, Literal, type Var } from "../core/jaxpr.js";

/** One collective of a per-device program: its kind (psum, all_gather, psum_scatter, all_to_all, ppermute, pmax, pmin),
 * the mesh axes it runs over and the bytes of its per-device operand. */
export interface CollectiveCost {
  kind: string;
  axes: string[];
  bytes: number;
  /** The primitives whose bodies hold it, outermost first (e.g. ["scan"]: once per step); absent at top level. */
  within?: string[];
}

/** Cost of one device's program (what `jit(f).lower(...).compile().costAnalysis()` returns). */
export interface CostAnalysis {
  flops: number;
  bytesAccessed: number;
  collectives: CollectiveCost[];
  peakBytesPerDevice: number;
}

const size = (a: ShapedArray) => a.shape.reduce((x, y) => x * y, 1);
const bytesOf = (a: ShapedArray) => size(a) * itemsize(a.dtype);

/** FLOPs of one equation: 2 per multiply-add of a contraction, one per output element of elementwise work. */
type FlopRule = (ins: ShapedArray[], outs: ShapedArray[], params: Record<string, unknown>) => number;
const FLOPS: Record<string, FlopRule> = {
  // 2 * (output elements) * (contracted elements)
  dot_general: (ins, outs, p) => {
    const [[lc]] = p.dimension_numbers as [[number[], number[]], unknown];
    return 2 * size(outs[0]) * lc.reduce((a, d) => a * ins[0].shape[d], 1);
  },
  // one op per input element
  reduce_sum: (ins) => size(ins[0]),
  reduce_max: (ins) => size(ins[0]),
  reduce_min: (ins) => size(ins[0]),
  argmax: (ins) => size(ins[0]),
  argmin: (ins) => size(ins[0]),
  cumsum: (ins) => size(ins[0]),
  psum: (ins) => size(ins[0]),
  psum_scatter: (ins) => size(ins[0]),
};
export function eqnFlops(e: JaxprEqn): number {
  const ins = e.inputs.map((a) => a.aval),
    outs = e.outVars.map((v) => v.aval);
  const r = FLOPS[e.primitive.name];
  if (r) return r(ins, outs, e.params);
  // data movement and views (a fact of the primitive's definition): no arithmetic
  const c = e.primitive.opts.cost;
  if (c === "view" || c === "move") return 0;
  return outs.reduce((a, o) => a + size(o), 0);
}

/** The axes a collective equation runs over (its axes / axis_name param). */
function collectiveAxes(e: JaxprEqn): string[] {
  const k = e.primitive.opts.collectiveAxisParam;
  const v = k ? e.params[k] : undefined;
  return v === undefined || v === null ? [] : typeof v === "string" ? [v] : [...(v as string[])];
}

/**
 * Cost of one device's program: FLOPs and bytes read + written by every equation (nested jaxprs counted once per
 * call), each collective (operand bytes), and the peak of live bytes (arguments, then values until their last use).
 */
export function costOfJaxpr(j: Jaxpr): CostAnalysis {
  const out: CostAnalysis = { flops: 0, bytesAccessed: 0, collectives: [], peakBytesPerDevice: 0 };
  const walk = (jx: Jaxpr, within: string[]): void => {
    for (const e of jx.eqns) {
      if (e.primitive.collective && e.primitive.name !== "axis_index")
        out.collectives.push({
          kind: e.primitive.name,
          axes: collectiveAxes(e),
          bytes: e.inputs.reduce((a, x) => a + bytesOf(x.aval), 0),
          ...(within.length ? { within } : {}),
        });
      out.flops += eqnFlops(e);
      out.bytesAccessed +=
        e.inputs.reduce((a, x) => a + bytesOf(x.aval), 0) + e.outVars.reduce((a, v) => a + bytesOf(v.aval), 0);
      const inner = [...within, e.primitive.name];
      for (const p of Object.values(e.params)) {
        const ps = globalThis.Array.isArray(p) ? p : [p];
        for (const q of ps) {
          if (q instanceof Jaxpr) walk(q, inner);
          else if (q instanceof ClosedJaxpr) walk(q.jaxpr, inner);
        }
      }
    }
  };
  walk(j, []);
  // liveness: a value is live from its definition to its last use (outputs to the end)
  const last = new Map<Var, number>();
  j.eqns.forEach((e, i) => e.inputs.forEach((a) => !(a instanceof Literal) && last.set(a, i)));
  j.outvars.forEach((a) => !(a instanceof Literal) && last.set(a, j.eqns.length));
  let live = [...j.constvars, ...j.invars].reduce((a, v) => a + bytesOf(v.aval), 0);
  let peak = live;
  const dying = new Map<number, number>();
  for (const v of [...j.constvars, ...j.invars]) {
    const l = last.get(v) ?? -1;
    dying.set(l, (dying.get(l) ?? 0) + bytesOf(v.aval));
  }
  j.eqns.forEach((e, i) => {
    for (const v of e.outVars) {
      live += bytesOf(v.aval);
      const l = last.get(v) ?? i;
      dying.set(l, (dying.get(l) ?? 0) + bytesOf(v.aval));
    }
    peak = Math.max(peak, live);
    live -= dying.get(i) ?? 0;
  });
  out.peakBytesPerDevice = peak;
  return out;
}
