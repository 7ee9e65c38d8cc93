/** @file whileLoopCompat: the one place where jax.random's data-dependent loops meet lax.whileLoop (or, until it lands, a concrete JS loop with JAX's batched-while semantics). */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ConcretizationTypeError, Tracer } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { JVPTracer } from "../transforms/jvp.js";
import { BatchTracer } from "../transforms/vmap.js";

/** The loop carry: a flat list of arrays. */
export type Carry = Array[];
type WhileLoopFn = (cond: (c: Carry) => Array, body: (c: Carry) => Carry, init: Carry) => Carry;

/**
 * lax.whileLoop when the control-flow module provides it (looked up once at load time, so the
 * switch needs no edit here), else null. Tests may override it with setWhileLoopImpl.
 */
let laxWhileLoop: WhileLoopFn | null = await (async () => {
  const spec = "../transforms/control-flow.js";
  try {
    const m = (await import(spec)) as Record<string, unknown>;
    const f = m.whileLoop ?? m.while_loop;
    return typeof f === "function" ? (f as WhileLoopFn) : null;
  } catch {
    return null;
  }
})();

/** Installs (or, with null, removes) the lax.whileLoop implementation used by the samplers. */
export function setWhileLoopImpl(f: WhileLoopFn | null): void { laxWhileLoop = f; }
/** Whether a traced (jit-compatible) while loop is available. */
export const hasLaxWhileLoop = (): boolean => laxWhileLoop !== null;

/** The concrete value underneath a value of eager transformations (vmap, jvp), if there is one; batched values give the whole batch. */
function peek(x: Array): ArrayImpl | null {
  if (x instanceof ArrayImpl) return x;
  if (x instanceof BatchTracer) return peek(x.val);
  if (x instanceof JVPTracer) return peek(x.primal);
  if (x instanceof Tracer) {
    const c = x.concreteValue();
    if (c !== null && c !== x) return peek(c);
    const f = x.fullLower();
    if (f !== null && f !== x) return peek(f);
  }
  return null;
}

/**
 * `lax.while_loop(cond, body, init)` on a flat carry. `cond` returns a scalar bool (per example
 * under vmap). Without lax.whileLoop the loop runs in JS: it needs the predicate's value, which
 * exists eagerly and under vmap/jvp of concrete values, but not under jit.
 *
 * Batched semantics (as JAX's while batching rule): while any example's predicate holds, every
 * example runs the body, and examples whose predicate is false keep their carry.
 */
export function whileLoopCompat(cond: (c: Carry) => Array, body: (c: Carry) => Carry, init: Carry, what = "jax.random"): Carry {
  if (laxWhileLoop) return laxWhileLoop(cond, body, init);
  let carry = init;
  for (;;) {
    const p = cond(carry);
    const pv = peek(p);
    if (pv === null) {
      throw new ConcretizationTypeError(
        `${what}: this sampler runs a data-dependent while loop, which needs lax.whileLoop under jit ` +
          `(src/transforms/control-flow.ts is not available yet); call it eagerly or under vmap/grad instead.`,
      );
    }
    const vals = pv.buffer;
    let any = false;
    for (let i = 0; i < vals.length; i++) if (vals[i]) { any = true; break; }
    if (!any) return carry;
    const next = body(carry);
    if (p instanceof ArrayImpl) { carry = next; continue; }
    // a batched (or traced) predicate: finished examples keep their state
    carry = next.map((n, i) => ops.select(p.ndim === n.ndim ? p : ops.broadcastInDim(p, n.shape, []), n, carry[i]));
  }
}
