/**
 * @file Which mesh axes each value of a per-device jaxpr varies over (JAX's varying manual axes), as the emulation's
 * batching decides it, to resolve psum_transpose for the device runtime: over the axes its cotangent varies over
 * it is a psum, over the others the identity. Values computed by nested jaxprs (scan, cond, ...) are not analysed;
 * a psum_transpose that depends on one, or sits inside one, is reported as unsupported.
 */
import { ClosedJaxpr, Jaxpr, type JaxprEqn, Literal, type Var } from "../core/jaxpr.js";
import { psumP } from "./collectives.js";

type Axes = ReadonlySet<string>;
const union = (sets: Axes[]): Set<string> => new Set(sets.flatMap((s) => [...s]));
const minus = (s: Axes, drop: readonly string[]): Set<string> => new Set([...s].filter((a) => !drop.includes(a)));

function nestedJaxprs(e: JaxprEqn): Jaxpr[] {
  const out: Jaxpr[] = [];
  const visit = (v: unknown): void => {
    if (v instanceof Jaxpr) out.push(v);
    else if (v instanceof ClosedJaxpr) out.push(v.jaxpr);
    else if (Array.isArray(v)) v.forEach(visit);
  };
  Object.values(e.params).forEach(visit);
  return out;
}
/** Whether j (or a jaxpr nested in it) holds a psum_transpose, i.e. a gradient through psum taken inside it. */
export function containsPsumTranspose(j: Jaxpr): boolean {
  return j.eqns.some((e) => e.primitive.name === "psum_transpose" || nestedJaxprs(e).some(containsPsumTranspose));
}

/** Varying axes of a collective's output (the emulation's batching rules), or null for a non-collective. */
function collectiveOut(e: JaxprEqn, ins: Axes[]): Set<string> | null {
  const p = e.params as { axes?: string[]; axis_name?: string; axis_index_groups?: number[][] | null };
  const u = union(ins);
  switch (e.primitive.name) {
    case "psum":
    case "pmax":
    case "pmin":
    case "psum_transpose":
      // reduced over its axes: the same on every member, unless split into groups
      return p.axis_index_groups ? union([u, new Set(p.axes)]) : minus(u, p.axes ?? []);
    case "all_gather":
      return p.axis_index_groups ? union([u, new Set([p.axis_name!])]) : minus(u, [p.axis_name!]);
    case "ppermute":
    case "reduce_scatter":
    case "all_to_all":
      return union([u, new Set([p.axis_name!])]);
    case "axis_index":
      return new Set([p.axis_name!]);
    default:
      return null;
  }
}

/**
 * The jaxpr with every psum_transpose replaced by a psum over the axes its operand varies over (possibly none: a
 * copy), given the axes each invar varies over (constvars vary over none); or a string saying why it cannot.
 */
export function resolvePsumTranspose(jaxpr: Jaxpr, invarAxes: readonly Axes[]): Jaxpr | string {
  if (!jaxpr.eqns.some((e) => e.primitive.name === "psum_transpose" || nestedJaxprs(e).some(containsPsumTranspose)))
    return jaxpr;
  const vary = new Map<Var, Axes>();
  const exact = new Map<Var, boolean>();
  jaxpr.constvars.forEach((v) => {
    vary.set(v, new Set());
    exact.set(v, true);
  });
  jaxpr.invars.forEach((v, i) => {
    vary.set(v, invarAxes[i]);
    exact.set(v, true);
  });
  const axesOf = (a: Var | Literal): Axes => (a instanceof Literal ? new Set() : (vary.get(a) ?? new Set()));
  const isExact = (a: Var | Literal): boolean => a instanceof Literal || exact.get(a) === true;
  const eqns: JaxprEqn[] = [];
  for (const e of jaxpr.eqns) {
    const ins = e.inputs.map(axesOf);
    const nested = nestedJaxprs(e);
    if (nested.some(containsPsumTranspose))
      return "psum_transpose (a gradient through psum) inside a nested jaxpr (scan, cond, ...)";
    let eq = e;
    if (e.primitive.name === "psum_transpose") {
      if (!e.inputs.every(isExact)) return "psum_transpose of a value computed by a nested jaxpr (scan, cond, ...)";
      const axes = (e.params.axes as string[]).filter((a) => ins[0].has(a));
      eq = {
        primitive: psumP as unknown as JaxprEqn["primitive"],
        inputs: e.inputs,
        params: { ...e.params, axes },
        outVars: e.outVars,
      };
    }
    const out = collectiveOut(e, ins) ?? union(ins);
    const ok = nested.length === 0 && e.inputs.every(isExact);
    for (const v of e.outVars) {
      vary.set(v, out);
      exact.set(v, ok);
    }
    eqns.push(eq);
  }
  return new Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns);
}
