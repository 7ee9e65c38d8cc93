/** @file Partial evaluation of a jaxpr as a dataflow pass: split into a known part (emitting residuals) and an unknown part. */
import { Array } from "../core/array.js";
import { type Atom, Jaxpr, Var } from "../core/jaxpr.js";

export interface SplitJaxpr {
  /** known: [known invars] -> [known outvars..., residuals...] */
  known: Jaxpr;
  /** unknown: [residuals..., unknown invars] -> [unknown outvars] */
  unknown: Jaxpr;
  numResiduals: number;
  outUnknown: boolean[];
}

/**
 * Splits j given which invars are unknown. An equation is unknown when any input is; known values used by unknown
 * equations (or returned as unknown outputs' sources) become residuals. `forceUnknownOuts` marks outputs that must be
 * produced by the unknown part (their known values are passed through as residuals).
 */
export function partialEvalJaxpr(j: Jaxpr, unknownIns: boolean[], forceUnknownOuts?: boolean[]): SplitJaxpr {
  if (j.constvars.length) throw new Error("partialEvalJaxpr: convert constvars to invars first");
  const unknown = new Set<Var>();
  j.invars.forEach((v, i) => {
    if (unknownIns[i]) unknown.add(v);
  });
  const isU = (a: Atom) => a instanceof Var && unknown.has(a);
  const knownEqns = [],
    unknownEqns = [];
  for (const e of j.eqns) {
    if (e.inputs.some(isU)) {
      unknownEqns.push(e);
      e.outVars.forEach((v) => unknown.add(v));
    } else knownEqns.push(e);
  }
  const outUnknown = j.outvars.map((a, i) => isU(a) || (forceUnknownOuts?.[i] ?? false));
  // residuals: known vars consumed by unknown equations or forwarded to forced-unknown outputs
  const residuals: Var[] = [];
  const seen = new Set<Var>();
  const addRes = (a: Atom) => {
    if (a instanceof Var && !unknown.has(a) && !seen.has(a)) {
      seen.add(a);
      residuals.push(a);
    }
  };
  for (const e of unknownEqns) e.inputs.forEach(addRes);
  j.outvars.forEach((a, i) => {
    if (outUnknown[i]) addRes(a);
  });
  const known = new Jaxpr(
    [],
    j.invars.filter((_, i) => !unknownIns[i]),
    [...j.outvars.filter((_, i) => !outUnknown[i]), ...residuals],
    knownEqns,
  );
  // the unknown jaxpr rebinds residuals as fresh invars
  const resIn = residuals.map((r) => new Var(r.aval));
  const sub = new Map<Var, Var>(residuals.map((r, i) => [r, resIn[i]]));
  const m = (a: Atom): Atom => (a instanceof Var && sub.has(a) ? sub.get(a)! : a);
  const ueqns = unknownEqns.map((e) => ({ ...e, inputs: e.inputs.map(m) }));
  const unknownJ = new Jaxpr(
    [],
    [...resIn, ...j.invars.filter((_, i) => unknownIns[i])],
    j.outvars.filter((_, i) => outUnknown[i]).map(m),
    ueqns,
  );
  return { known, unknown: unknownJ, numResiduals: residuals.length, outUnknown };
}

export type { Array };
