/** @file Shared checks of the optimizer fixture tests: runOptimizerSteps (an optimizer over a fixture's gradients, eager or jitted) and checkScheduleValues (a schedule against NumPy's values). */
import assert from "node:assert/strict";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import type { GradientTransformation, Schedule } from "../../src/optim/public.js";
import { applyUpdates } from "../../src/optim/public.js";
import { jit } from "../../src/transforms/api.js";
import { assertClose } from "../helpers/fixtures.js";

/** Asserts f(count) = values[i] for each counts[i] (rtol 1e-5, atol `atol`) through the three kinds of count. */
export function checkScheduleValues(name: string, f: Schedule, counts: number[], values: number[], atol: number): void {
  const c = jnp.array(counts, { dtype: "int32" });
  const want = jnp.array(values, { dtype: "float32" });
  const viaArray = f(c) as Array;
  assert.equal(viaArray.dtype, "float32", `${name}: a float32 value for an int32 count`);
  assertClose(viaArray, want, { rtol: 1e-5, atol, msg: `${name} (int32 Array)` });
  assertClose(jit((x: Array) => f(x) as Array)(c), want, { rtol: 1e-5, atol, msg: `${name} (jit)` });
  counts.forEach((n, i) => {
    const v = f(n);
    const x = typeof v === "number" ? v : (v.item() as number);
    assert.ok(Math.abs(x - values[i]) <= atol + 1e-5 * Math.abs(values[i]), `${name} at ${n}: ${x} vs ${values[i]}`);
  });
}

/** The fixtures' parameter tree: a matrix w and a vector b. */
export type WB = { w: Array; b: Array };

/** Applies opt to params0 over `grads`, one step per gradient (eagerly or with a jitted step): params and state after each. */
export function runOptimizerSteps(
  opt: GradientTransformation,
  params0: WB,
  grads: readonly WB[],
  useJit: boolean,
): { params: WB[]; states: unknown[] } {
  const step = (p: WB, s: unknown, g: WB): [WB, unknown] => {
    const [u, ns] = opt.update(g, s, p);
    return [applyUpdates(p, u) as WB, ns];
  };
  const f = useJit ? jit(step) : step;
  let p = params0,
    s = opt.init(p);
  const params: WB[] = [],
    states: unknown[] = [];
  for (const g of grads) {
    [p, s] = f(p, s, g);
    params.push(p);
    states.push(s);
  }
  return { params, states };
}
