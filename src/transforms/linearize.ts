/**
 * @file Reverse mode as JAX does it: linearize (JVP over a partial-evaluation trace that stages only the
 * tangent computation into a linear jaxpr) and transpose (a backward pass over that jaxpr).
 */
import { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import { config } from "../core/config.js";
import { isInexact } from "../core/dtype.js";
import { type Atom, Jaxpr, Literal, Var, typecheckJaxpr } from "../core/jaxpr.js";
import { JaxprTrace, JaxprTracer } from "../core/jaxpr-trace.js";
import { type MaybeZero, type Params, Primitive, UndefinedPrimal, Zero } from "../core/primitive.js";
import { bind, withTrace } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { jvpFlat } from "./jvp.js";

/**
 * Partial evaluation: values that do not depend on its own tracers ("known") are computed by the parent
 * trace right away; equations touching an unknown value are staged into a jaxpr (JAX's pe.JaxprTrace).
 */
export class PartialEvalTrace extends JaxprTrace {
  constructor() {
    super("PartialEval");
    this.recordSites = false;
  }
  override processPrimitive(prim: Primitive, args: Array[], params: Params): Array[] {
    const unknown = args.some((a) => a instanceof JaxprTracer && a.trace === this);
    if (!unknown) return withTrace(this.parent!, () => bind(prim, args, params));
    return super.processPrimitive(prim, args, params);
  }
}

export interface Linearized {
  primalsOut: Array[];
  /** The linear map as a jaxpr: constvars bind to `residuals`, invars are tangent inputs. */
  jaxpr: Jaxpr;
  residuals: Array[];
  /** Output tangents that are symbolically zero or known (not staged). */
  outTangentKinds: ("staged" | "zero")[];
}

/** Linearizes a flat function at primals: primal outputs now, the tangent map as a linear jaxpr. */
export function linearizeFlat(f: (...xs: Array[]) => Array[], primals: Array[]): Linearized {
  const pe = new PartialEvalTrace();
  const tanIns = primals.map((p) => pe.newArg(p.aval.strongly()));
  // the JVP runs with the partial-evaluation trace as its parent; integer/bool inputs carry symbolic-zero (float0)
  // tangents, as in JAX
  const [primalsOut, tangentsOut] = withTrace(pe, () =>
    jvpFlat(
      f,
      primals,
      primals.map((p, i) => (isInexact(p.dtype) ? tanIns[i] : new Zero(p.aval))),
    ),
  );
  const kinds = tangentsOut.map((t) => (t instanceof Zero ? "zero" : "staged") as "staged" | "zero");
  // zero tangents become literal-free placeholder outputs: we stage zeros so the jaxpr has one output per primal
  const tanOuts = tangentsOut.map((t, i) =>
    t instanceof Zero ? withTrace(pe, () => ops.zerosLikeAval(primalsOut[i].aval)) : t,
  );
  const { jaxpr, consts } = pe.finish(tanIns, tanOuts);
  for (const pOut of primalsOut) {
    if (pOut instanceof JaxprTracer && pOut.trace === pe)
      throw new Error("linearize: internal error, a primal output depends on tangents");
  }
  if (config.checkJaxprs) typecheckJaxpr(jaxpr, "linearize");
  return { primalsOut, jaxpr, residuals: consts, outTangentKinds: kinds };
}

/** Evaluates the tangent map forward (jvp of a linearized function). */
export { evalJaxpr } from "../core/jaxpr.js";

/**
 * Transposes a linear jaxpr: given cotangents for its outputs, returns cotangents for its (linear) inputs.
 * Non-linear values (constvars bound to residuals, literals) are known; every equation is linear in its staged inputs.
 */
export function backwardPass(jaxpr: Jaxpr, residuals: readonly Array[], cts: MaybeZero[]): MaybeZero[] {
  const known = new Map<Var, Array>();
  jaxpr.constvars.forEach((v, i) => known.set(v, residuals[i]));
  const linear = new Set<Var>(jaxpr.invars);
  for (const e of jaxpr.eqns)
    if (e.inputs.some((a) => a instanceof Var && linear.has(a))) for (const v of e.outVars) linear.add(v);
  // forward-evaluate non-linear equations (e.g. zeros created inside the staged region)
  const readKnown = (a: Atom): Array => (a instanceof Literal ? a.value : known.get(a)!);
  for (const e of jaxpr.eqns) {
    if (e.outVars.some((v) => linear.has(v))) continue;
    const outs = bind(e.primitive, e.inputs.map(readKnown), e.params);
    e.outVars.forEach((v, i) => known.set(v, outs[i]));
  }
  const ctEnv = new Map<Var, Array>();
  const addCt = (v: Var, ct: MaybeZero) => {
    if (ct instanceof Zero || !linear.has(v)) return;
    const prev = ctEnv.get(v);
    ctEnv.set(v, prev ? ops.add(prev, ct) : ct);
  };
  jaxpr.outvars.forEach((a, i) => {
    if (a instanceof Var) addCt(a, cts[i]);
  });
  for (let k = jaxpr.eqns.length - 1; k >= 0; k--) {
    const e = jaxpr.eqns[k];
    if (!e.outVars.some((v) => linear.has(v))) continue;
    const outCts = e.outVars.map((v) => ctEnv.get(v) ?? new Zero(v.aval));
    e.outVars.forEach((v) => ctEnv.delete(v));
    if (outCts.every((c) => c instanceof Zero)) continue;
    const rule = e.primitive.rules.transpose;
    if (!rule)
      throw new Error(`Transpose rule (for reverse-mode differentiation) for '${e.primitive.name}' not implemented`);
    const args = e.inputs.map((a) => (a instanceof Var && linear.has(a) ? new UndefinedPrimal(a.aval) : readKnown(a)));
    const inCts = rule(outCts, args, e.params);
    e.inputs.forEach((a, i) => {
      const c = inCts[i];
      if (a instanceof Var && linear.has(a) && c !== null && c !== undefined) addCt(a, fitCt(c, a.aval));
    });
  }
  return jaxpr.invars.map((v) => ctEnv.get(v) ?? new Zero(v.aval));
}

/** Cotangents take the dtype of the value they belong to (weak types may differ). */
function fitCt(c: MaybeZero, aval: ShapedArray): MaybeZero {
  if (c instanceof Zero) return c;
  if (c.dtype !== aval.dtype) return ops.convert(c, aval.dtype, aval.weakType);
  return c;
}
