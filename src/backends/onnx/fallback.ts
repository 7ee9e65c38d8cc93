/**
 * @file The interpreter fallback: what stops using ONNX Runtime (a lowering rule that threw, a model ORT rejected, a
 * fused kernel that failed to build) is reported once per distinct message (a JAXTS_FALLBACK process warning), and a
 * rejected jit program is re-planned to run equation by equation.
 */
import type { ArrayImpl } from "../../core/array-impl.js";
import { type Jaxpr, Var } from "../../core/jaxpr.js";
import { type Program, LOWERING_FAILED } from "../../compiler/compile.js";

const warned = new Set<string>();
/** Reports a fallback (a program or primitive that stops using ONNX Runtime) once per distinct message. */
export function warnOnce(msg: string): void {
  if (warned.has(msg)) return;
  warned.add(msg);
  process.emitWarning(msg, { code: "JAXTS_FALLBACK" });
}
/** Warns once about each equation of `program` whose lowering rule threw and that therefore runs on the interpreter. */
export function warnFailedLowerings(program: Program, where: string): void {
  for (const s of program.steps) {
    if (s.kind === "host" && s.reason.includes(`(${LOWERING_FAILED}: `))
      warnOnce(`${where}: ${s.reason}; it runs on the reference interpreter instead`);
  }
}

/** The parts of a jaxpr an executable keeps to re-plan itself (not the Jaxpr object, which keys the jit cache). */
export type JaxprParts = Pick<Jaxpr, "constvars" | "invars" | "outvars" | "eqns">;

/** A program whose every equation runs through the eager path (used when ORT rejects a model). */
export function interpretedProgram(jaxpr: JaxprParts, p: Program, why: string): Program {
  const slots = new Map<Var, number>();
  const slotOf = (v: Var): number => {
    let s = slots.get(v);
    if (s === undefined) {
      s = slots.size;
      slots.set(v, s);
    }
    return s;
  };
  const inSlots = [...jaxpr.constvars, ...jaxpr.invars].map(slotOf);
  const op = (a: Var | { value: ArrayImpl }) => (a instanceof Var ? slotOf(a) : a.value);
  const steps = jaxpr.eqns.map((e) => ({
    kind: "host" as const,
    eqn: e,
    inputs: e.inputs.map(op),
    outputs: e.outVars.map(slotOf),
    reason: why,
  }));
  return {
    ...p,
    steps,
    numSlots: slots.size,
    inSlots,
    outs: jaxpr.outvars.map(op),
    notes: [`${why}; running equation by equation`],
  };
}
