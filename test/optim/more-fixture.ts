/** @file Shared loading of test/fixtures/optim-adafactor-sm3-more.json (from scripts/fixtures/gen-optim-adafactor-sm3-more.py) and a runner over its three-leaf parameter tree { w (3, 4), b (4,), k (2, 3, 4) }. */
import { Array } from "../../src/core/array.js";
import type { GradientTransformation } from "../../src/optim/public.js";
import { applyUpdates } from "../../src/optim/public.js";
import { jit } from "../../src/transforms/api.js";
import { type FixArray, assertClose, decode, loadFixture } from "../helpers/fixtures.js";

export type Leaves = { w: FixArray; b: FixArray; k: FixArray };
export type P3 = { w: Array; b: Array; k: Array };
export interface MoreCase {
  name: string;
  fn: string;
  args: unknown[];
  lr?: number;
  params: Leaves[];
}
export interface MoreFixture {
  params0: Leaves;
  grads: Leaves[];
  optimizers: MoreCase[];
  lookahead: { name: string; resetState: boolean; steps: { fast: Leaves; slow: Leaves }[] }[];
}
export const MORE: MoreFixture = loadFixture<MoreFixture>("optim-adafactor-sm3-more.json");
export const KEYS = ["w", "b", "k"] as const;
export const dec3 = (l: Leaves): P3 => ({ w: decode(l.w), b: decode(l.b), k: decode(l.k) });

/** Steps `opt` over the fixture's gradients (eagerly or jitted); `between(i, state)` may replace the state before step i. */
export function runSteps(
  opt: GradientTransformation,
  useJit: boolean,
  between?: (i: number, state: unknown) => unknown,
): { params: P3[]; states: unknown[] } {
  const step = (p: P3, s: unknown, g: P3): [P3, unknown] => {
    const [u, ns] = opt.update(g, s, p);
    return [applyUpdates(p, u), ns];
  };
  const f = useJit ? jit(step) : step;
  let p = dec3(MORE.params0),
    s = opt.init(p);
  const params: P3[] = [],
    states: unknown[] = [];
  MORE.grads.forEach((gl, i) => {
    if (between) s = between(i, s);
    [p, s] = f(p, s, dec3(gl));
    params.push(p);
    states.push(s);
  });
  return { params, states };
}

/** Asserts each step's parameters against the case's NumPy values. */
export function checkParams(c: MoreCase, got: P3[], label: string, rtol = 1e-5, atol = 1e-6): void {
  got.forEach((p, i) => {
    for (const k of KEYS) assertClose(p[k], c.params[i][k], { rtol, atol, msg: `${label} step ${i} ${k}` });
  });
}
