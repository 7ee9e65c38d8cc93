/** @file jax.scipy.stats.geom: the geometric distribution (trials to the first success, k >= 1): logpmf and pmf with p and loc. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote } from "./stats-util.js";
import { xlog1py } from "./special.js";

/** geom.logpmf(k, p, loc=0) = xlog1py(y - 1, -p) + log(p), y = k - loc; -inf for y <= 0. */
export function logpmf(k: Param, p: Param, loc: Param = 0): Array {
  const [kk, pp, l] = promote("geom.logpmf", k, p, loc);
  const y = ops.sub(kk, l);
  return maskTo(ops.le(y, c(y, 0)), -Infinity, ops.add(xlog1py(ops.sub(y, c(y, 1)), ops.neg(pp)), ops.log(pp)));
}
/** geom.pmf(k, p, loc=0) = exp(logpmf). */
export const pmf = (k: Param, p: Param, loc: Param = 0): Array => ops.exp(logpmf(k, p, loc));
