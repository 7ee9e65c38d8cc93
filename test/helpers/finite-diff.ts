/** @file Test helper: directional derivatives of grad(f) against central finite differences, in float64 under x64. */
import assert from "node:assert/strict";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { grad } from "../../src/transforms/api.js";

/**
 * Checks <grad f(x), d> = (f(x + eps d) - f(x - eps d)) / (2 eps) for a scalar f of one float64 array built from `x`,
 * with a fixed pseudo-random direction d; x64 is on for the call and restored afterwards.
 */
export function checkGrad(
  name: string,
  f: (x: Array) => Array,
  x: number[] | number[][],
  opts: { eps?: number; rtol?: number; atol?: number } = {},
): void {
  const saved = config.enableX64;
  config.update("enableX64", true);
  try {
    const xa = array(x, { dtype: "float64" });
    const n = xa.size;
    const d = ops.reshape(
      array(
        globalThis.Array.from({ length: n }, (_, i) => Math.sin(1.7 * i + 0.3) + 0.5 * Math.cos(0.9 * i)),
        { dtype: "float64" },
      ),
      xa.shape,
    );
    const g = (grad(f) as (x: Array) => Array)(xa);
    const an = Number(ops.reduceSum(ops.mul(g, d), [...xa.shape.keys()]).item());
    const eps = opts.eps ?? 1e-6;
    const at = (s: number): number => Number(f(ops.add(xa, ops.mul(d, ops.full(d.shape, s * eps, "float64")))).item());
    const fd = (at(1) - at(-1)) / (2 * eps);
    assert.ok(Number.isFinite(an), `${name}: the gradient is not finite (${an})`);
    assert.ok(
      Math.abs(an - fd) <= (opts.atol ?? 1e-6) + (opts.rtol ?? 1e-5) * Math.abs(fd),
      `${name}: analytic ${an} vs finite difference ${fd}`,
    );
  } finally {
    config.update("enableX64", saved);
  }
}
