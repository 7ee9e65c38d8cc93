/** @file Tracing a function to a Jaxpr (JAX's DynamicJaxprTrace): the trace behind jit, makeJaxpr and control flow. */
import { Array } from "./array.js";
import { ArrayImpl } from "./array-impl.js";
import { ShapedArray } from "./aval.js";
import { config } from "./config.js";
import { type Atom, Jaxpr, type JaxprEqn, Literal, Var, typecheckJaxpr } from "./jaxpr.js";
import type { Params, Primitive } from "./primitive.js";
import { Trace, Tracer, abstractEval, leakedError, withTrace } from "./trace.js";
import { userSite } from "./source-site.js";

export class JaxprTracer extends Tracer {
  constructor(
    readonly trace: JaxprTrace,
    readonly aval: ShapedArray,
  ) {
    super();
    if (trace.recordSites) this.creationSite = new Error().stack?.split("\n").slice(3, 9).join("\n");
  }
}

export class JaxprTrace extends Trace {
  readonly eqns: JaxprEqn[] = [];
  readonly tracerVars = new Map<JaxprTracer, Var>();
  readonly constVars = new Map<Array, Var>();
  recordSites = true;
  constructor(name = "Jaxpr", parent?: Trace | null) {
    super(name, parent);
  }

  newArg(aval: ShapedArray): JaxprTracer {
    const t = new JaxprTracer(this, aval);
    this.tracerVars.set(t, new Var(aval));
    return t;
  }

  /** The jaxpr atom for a value seen by this trace: its own tracer's var, a literal, or a constvar. */
  getAtom(x: Array, user: string): Atom {
    if (x instanceof JaxprTracer && x.trace === this) {
      const v = this.tracerVars.get(x);
      if (!v) throw new Error(`internal: tracer without var in ${this.name}`);
      return v;
    }
    if (x instanceof Tracer && !this.isAncestorOrSelf(x.trace)) throw leakedError(x, user);
    if (x instanceof ArrayImpl && x.ndim === 0 && !x.isDisposed) return new Literal(x);
    let v = this.constVars.get(x);
    if (!v) {
      v = new Var(x.aval);
      this.constVars.set(x, v);
    }
    return v;
  }

  processPrimitive(prim: Primitive, args: Array[], params: Params): Array[] {
    const inputs = args.map((a) => this.getAtom(a, prim.name));
    const outAvals = abstractEval(
      prim,
      inputs.map((a) => a.aval),
      params,
    );
    const outs = outAvals.map((a) => new JaxprTracer(this, a));
    const outVars = outs.map((t) => {
      const v = new Var(t.aval);
      this.tracerVars.set(t, v);
      return v;
    });
    const eqn: JaxprEqn = { primitive: prim, inputs, params, outVars };
    // source locations for FloatingPointError messages cost a stack capture per equation, so only when asked
    if (config.debugNans || config.debugInfs) eqn.site = userSite();
    this.eqns.push(eqn);
    return outs;
  }

  /** Finishes tracing: the jaxpr (with constvars) and the const values to bind to them. */
  finish(inTracers: JaxprTracer[], outs: Array[]): { jaxpr: Jaxpr; consts: Array[] } {
    const outAtoms = outs.map((o) => this.getAtom(o, "output"));
    const invars = inTracers.map((t) => this.tracerVars.get(t)!);
    const constvars = [...this.constVars.values()];
    const consts = [...this.constVars.keys()];
    const jaxpr = new Jaxpr(constvars, invars, outAtoms, this.eqns);
    this.invalid = true;
    if (config.checkJaxprs) typecheckJaxpr(jaxpr, this.name);
    return { jaxpr, consts };
  }
}

/**
 * Traces f on abstract inputs of the given avals. f receives tracers and returns Arrays.
 * Returns a jaxpr whose constvars bind to `consts` (concrete arrays or tracers of enclosing traces).
 */
export function traceToJaxpr(
  f: (...args: Array[]) => Array[],
  inAvals: ShapedArray[],
  name = "Jaxpr",
): { jaxpr: Jaxpr; consts: Array[] } {
  const trace = new JaxprTrace(name);
  const ins = inAvals.map((a) => trace.newArg(a));
  let outs: Array[];
  try {
    outs = withTrace(trace, () => f(...ins));
  } catch (e) {
    trace.invalid = true;
    throw e;
  }
  return trace.finish(ins, outs);
}
