/** @file The reference interpreter's outputs for a jaxpr (config.backend switched to "interpreter" for the call). */
import type { ArrayImpl } from "../../src/core/array-impl.js";
import { config } from "../../src/core/config.js";
import { type Jaxpr, evalJaxpr } from "../../src/core/jaxpr.js";
import { evalTrace, withTrace } from "../../src/core/trace.js";

/** evalJaxpr(jaxpr, consts, args) on the reference interpreter, whatever backend is configured. */
export function interpreterOutputs(jaxpr: Jaxpr, consts: ArrayImpl[], args: ArrayImpl[]): ArrayImpl[] {
  const prev = config.backend;
  config.update("backend", "interpreter");
  try {
    return withTrace(evalTrace, () => evalJaxpr(jaxpr, consts, args)) as ArrayImpl[];
  } finally {
    config.update("backend", prev);
  }
}
