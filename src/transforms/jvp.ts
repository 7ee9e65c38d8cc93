/** @file Forward-mode differentiation: the JVP trace, jvp() and symbolic-zero tangents. */
import { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import { type MaybeZero, type Params, Primitive, Zero } from "../core/primitive.js";
import { Trace, Tracer, bind, withTrace } from "../core/trace.js";
import * as ops from "../primitives/ops.js";

export class JVPTracer extends Tracer {
  constructor(
    readonly trace: JVPTrace,
    readonly primal: Array,
    readonly tangent: MaybeZero,
  ) {
    super();
  }
  get aval(): ShapedArray {
    return this.primal.aval;
  }
  override fullLower(): Array | null {
    return this.tangent instanceof Zero
      ? this.primal instanceof Tracer
        ? this.primal.fullLower()
        : this.primal
      : null;
  }
  /** Primal values under differentiation are concrete when the primal is (as in JAX's to_concrete_value). */
  override concreteValue(): Array | null {
    return this.primal instanceof Tracer ? this.primal.concreteValue() : this.primal;
  }
}

export class JVPTrace extends Trace {
  constructor(parent?: Trace) {
    super("JVP", parent);
  }
  unpack(x: Array): [Array, MaybeZero] {
    if (x instanceof JVPTracer && x.trace === this) return [x.primal, x.tangent];
    return [x, new Zero(x.aval)];
  }
  processPrimitive(prim: Primitive, args: Array[], params: Params): Array[] {
    const pts = args.map((a) => this.unpack(a));
    const primals = pts.map((p) => p[0]),
      tangents = pts.map((p) => p[1]);
    const parent = this.parent!;
    if (tangents.every((t) => t instanceof Zero)) return withTrace(parent, () => bind(prim, primals, params));
    const rule = prim.rules.jvp;
    if (!rule)
      throw new Error(
        `Differentiation rule for '${prim.name}' not implemented (jvp of ${prim.name} on ${primals.map((p) => p.aval.str()).join(", ")})`,
      );
    const [po, to] = withTrace(parent, () => rule(primals, tangents, params));
    return po.map((p, i) => (to[i] instanceof Zero ? p : new JVPTracer(this, p, to[i])));
  }
}

export function instantiateZero(t: MaybeZero): Array {
  return t instanceof Zero ? ops.zerosLikeAval(t.aval) : t;
}

/** Flat jvp: runs f under a fresh JVP trace; returns primal outs and (possibly symbolic-zero) tangent outs. */
export function jvpFlat(
  f: (...xs: Array[]) => Array[],
  primals: Array[],
  tangents: MaybeZero[],
): [Array[], MaybeZero[]] {
  const trace = new JVPTrace();
  const ins = primals.map((p, i) => (tangents[i] instanceof Zero ? p : new JVPTracer(trace, p, tangents[i])));
  let outs: Array[];
  try {
    outs = withTrace(trace, () => f(...ins));
  } finally {
    trace.invalid = true;
  }
  const res = outs.map((o) => trace.unpack(o));
  return [res.map((r) => r[0]), res.map((r) => r[1])];
}
