/** @file The few jnp-style operations the samplers need (NumPy broadcasting and JAX dtype promotion, weak JS scalars), built on lax ops so they trace under every transformation. */
import type { Array } from "../core/array.js";
import { broadcastArrays, promoteArgs, promoteDtypes } from "../numpy/core.js";
import * as ops from "../primitives/ops.js";
import type { Param } from "./util.js";

type Bin = (x: Array, y: Array) => Array;
const jbin = (name: string, f: Bin) => (x: Param, y: Param): Array => {
  const [a, b] = promoteArgs(name, x as never, y as never);
  return f(a, b);
};

/** jnp.add / subtract / multiply / divide / power / maximum / minimum with promotion and broadcasting. */
export const jadd = jbin("add", ops.add);
export const jsub = jbin("subtract", ops.sub);
export const jmul = jbin("multiply", ops.mul);
export const jdiv = jbin("divide", ops.div);
export const jpow = jbin("power", ops.pow);
export const jmax = jbin("maximum", ops.max);
export const jmin = jbin("minimum", ops.min);
export const jlt = jbin("less", ops.lt);
export const jle = jbin("less_equal", ops.le);
export const jgt = jbin("greater", ops.gt);
export const jge = jbin("greater_equal", ops.ge);
export const jeq = jbin("equal", ops.eq);
export const jand = jbin("bitwise_and", ops.and);
export const jor = jbin("bitwise_or", ops.or);

/** jnp.where(c, x, y) with broadcasting of all three (c must be bool). */
export function jwhere(c: Array, x: Param, y: Param): Array {
  const [a, b] = promoteDtypes("where", [x as never, y as never]);
  const [cc, aa, bb] = broadcastArrays("where", [c, a, b]);
  return ops.select(cc, aa, bb);
}
