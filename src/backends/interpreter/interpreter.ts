/** @file The reference interpreter backend: runs each primitive's pure-TypeScript impl (the test oracle). */
import type { ArrayImpl } from "../../core/array-impl.js";
import type { Params, Primitive } from "../../core/primitive.js";
import { type Backend, abstractEval, registerBackend } from "../../core/trace.js";

export const interpreterBackend: Backend = {
  name: "interpreter",
  execute(prim: Primitive, args: ArrayImpl[], params: Params): ArrayImpl[] {
    const impl = prim.rules.impl;
    if (!impl) throw new Error(`${prim.name}: the reference interpreter has no implementation for this primitive`);
    const outAvals = abstractEval(
      prim,
      args.map((a) => a.aval),
      params,
    );
    return impl(args, params, outAvals);
  },
};
registerBackend(interpreterBackend);
