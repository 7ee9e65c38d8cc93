/** @file checkScheduleValues: a schedule's values at given step counts against NumPy's, as an int32 Array, under jit and as JS numbers. */
import assert from "node:assert/strict";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import type { Schedule } from "../../src/optim/public.js";
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
