/** @file The few jnp-style operations the samplers need (NumPy broadcasting and JAX dtype promotion, weak JS scalars), built on lax ops so they trace under every transformation. */
import type { Array } from "../core/array.js";
import { promoteArgs } from "../numpy/core.js";
import { where } from "../numpy/index.js";
import * as ops from "../primitives/ops.js";
import type { Param } from "./util.js";

type Bin = (x: Array, y: Array) => Array;
const jbin =
  (name: string, f: Bin) =>
  (x: Param, y: Param): Array => {
    const [a, b] = promoteArgs(name, x as never, y as never);
    return f(a, b);
  };

/** jnp's own add/subtract/multiply/maximum/minimum, comparisons, bitwise and/or and where, under the samplers' names. */
export {
  add as jadd,
  subtract as jsub,
  multiply as jmul,
  maximum as jmax,
  minimum as jmin,
  less as jlt,
  lessEqual as jle,
  greater as jgt,
  greaterEqual as jge,
  equal as jeq,
  bitwiseAnd as jand,
  bitwiseOr as jor,
} from "../numpy/index.js";

/**
 * Promoting division and power on lax semantics: unlike jnp.divide/jnp.power, integer operands keep their integer
 * dtype (the samplers call these on floats, and on ints only where integer arithmetic is meant).
 */
export const jdiv = jbin("divide", ops.div);
export const jpow = jbin("power", ops.pow);

/** jnp.where(c, x, y) with broadcasting of all three (c must be bool). */
export function jwhere(c: Array, x: Param, y: Param): Array {
  return where(c, x as never, y as never);
}
