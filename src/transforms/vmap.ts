/** @file Vectorizing map: the batch trace, batching of every primitive through its vmap rule, and vmap(). */
import { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import { ClosedJaxpr, Jaxpr } from "../core/jaxpr.js";
import { type AxisData, type BDim, type Params, Primitive } from "../core/primitive.js";
import { Trace, Tracer, bind, withNamedAxis, withTrace } from "../core/trace.js";
import * as ops from "../primitives/ops.js";

export class BatchTracer extends Tracer {
  readonly aval: ShapedArray;
  constructor(
    readonly trace: BatchTrace,
    readonly val: Array,
    readonly bdim: BDim,
  ) {
    super();
    // the per-example aval: the value's aval without the batch dimension
    this.aval = bdim === null ? val.aval : val.aval.update({ shape: val.shape.filter((_, i) => i !== bdim) });
  }
  override fullLower(): Array | null {
    return this.bdim === null ? this.val : null;
  }
}

export class BatchTrace extends Trace {
  constructor(
    readonly axis: AxisData,
    parent?: Trace,
  ) {
    super("Batch", parent);
  }
  unpack(x: Array): [Array, BDim] {
    if (x instanceof BatchTracer && x.trace === this) return [x.val, x.bdim];
    return [x, null];
  }
  processPrimitive(prim: Primitive, args: Array[], params: Params): Array[] {
    const vd = args.map((a) => this.unpack(a));
    const vals = vd.map((v) => v[0]),
      dims = vd.map((v) => v[1]);
    const parent = this.parent!;
    // collectives over this trace's axis name must see the mapped axis even when their operands are unbatched
    const mine = this.axis.name !== null && usesAxis(prim, params, this.axis.name);
    if (dims.every((d) => d === null) && !prim.opts.effectful && !mine)
      return withTrace(parent, () => bind(prim, vals, params));
    const rule = prim.rules.vmap;
    if (!rule)
      throw new Error(`Batching rule for '${prim.name}' not implemented (vmap over axis of size ${this.axis.size})`);
    const [outs, outDims] = withTrace(parent, () => rule(this.axis, vals, dims, params));
    return outs.map((o, i) => (outDims[i] === null ? o : new BatchTracer(this, o, outDims[i])));
  }
}

/** Whether a primitive (or a call primitive's jaxpr, recursively) runs a collective over axis `name`. */
function usesAxis(prim: Primitive, params: Params, name: string): boolean {
  const axisParam = prim.opts.collectiveAxisParam;
  if (axisParam) return namesOf(params[axisParam]).includes(name);
  for (const v of Object.values(params)) {
    const js =
      v instanceof Jaxpr
        ? [v]
        : v instanceof ClosedJaxpr
          ? [v.jaxpr]
          : globalThis.Array.isArray(v)
            ? v.filter((x): x is Jaxpr => x instanceof Jaxpr)
            : [];
    for (const j of js) if (j.eqns.some((e) => usesAxis(e.primitive, e.params, name))) return true;
  }
  return false;
}
function namesOf(a: unknown): string[] {
  return typeof a === "string" ? [a] : globalThis.Array.isArray(a) ? (a as string[]) : [];
}

/** Moves (or creates, by broadcasting) the batch dimension of a batched value to `to`. */
export function moveBatchAxis(x: Array, from: BDim, to: number | null, size: number): Array {
  if (to === null) {
    if (from === null) return x;
    throw new Error(`vmap: an output batched along its mapped axis cannot have outAxes=null`);
  }
  // the output has the per-example rank plus the mapped axis: outAxes must index into that
  const rank = from === null ? x.ndim + 1 : x.ndim;
  if (!Number.isInteger(to) || to < -rank || to >= rank) {
    const per = from === null ? x.shape : x.shape.filter((_, i) => i !== from);
    throw new RangeError(
      `vmap: outAxes=${to} is out of range for a mapped output of rank ${rank} (per-example shape [${per.join(", ")}]); expected an integer in [${-rank}, ${rank - 1}] or null`,
    );
  }
  if (from === null) return ops.broadcastBatch(x, size, to < 0 ? to + x.ndim + 1 : to);
  const t = to < 0 ? to + x.ndim : to;
  return ops.moveaxis(x, from, t);
}

/** Runs f under a fresh batch trace (its axis name bound) and returns each output's value and batch dim. */
function runBatched(f: (...xs: Array[]) => Array[], args: Array[], inDims: BDim[], axis: AxisData): [Array, BDim][] {
  const trace = new BatchTrace(axis);
  const ins = args.map((a, i) => (inDims[i] === null ? a : new BatchTracer(trace, a, inDims[i])));
  try {
    const outs = withNamedAxis(axis.name ? { name: axis.name, size: axis.size } : null, () =>
      withTrace(trace, () => f(...ins)),
    );
    return outs.map((o) => trace.unpack(o));
  } finally {
    trace.invalid = true;
  }
}

/** Flat vmap: inputs batched along inDims (null = unbatched); outputs moved to outDims. */
export function vmapFlat(
  f: (...xs: Array[]) => Array[],
  args: Array[],
  inDims: BDim[],
  outDims: (number | null)[] | ((i: number) => number | null),
  axis: AxisData,
): Array[] {
  return runBatched(f, args, inDims, axis).map(([v, d], i) =>
    moveBatchAxis(v, d, typeof outDims === "function" ? outDims(i) : outDims[i], axis.size),
  );
}

/**
 * Like vmapFlat, but outputs that do not depend on the mapped axis stay unbatched (their dim is null) and batched
 * ones move to axis 0; returns the outputs with their dims. Call-like primitives use it so replication survives.
 */
export function vmapFlatKeep(
  f: (...xs: Array[]) => Array[],
  args: Array[],
  inDims: BDim[],
  axis: AxisData,
): { outs: Array[]; dims: BDim[] } {
  const pairs = runBatched(f, args, inDims, axis);
  return {
    outs: pairs.map(([v, d]) => (d === null ? v : ops.moveaxis(v, d, 0))),
    dims: pairs.map(([, d]) => (d === null ? null : 0)),
  };
}
