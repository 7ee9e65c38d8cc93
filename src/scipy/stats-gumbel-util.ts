/** @file Shared builders of jax.scipy.stats.gumbel_r / gumbel_l: functions of z = (x - loc)/scale, NaN where scale <= 0. */
import type { Array } from "../core/array.js";
import { type Param, c, maskTo, ops, promote, standardize } from "./stats-util.js";

type P = Param;
/** f(z) (minus log(scale) when `density`), NaN where scale <= 0. */
export const ofZ =
  (name: string, f: (z: Array) => Array, density = false) =>
  (x: P, loc: P = 0, scale: P = 1): Array => {
    const [v, l, s] = promote(name, x, loc, scale);
    const r = f(standardize(v, l, s));
    return maskTo(ops.le(s, c(s, 0)), NaN, density ? ops.sub(r, ops.log(s)) : r);
  };
/** loc + scale f(p), NaN unless 0 < p < 1 and scale > 0. */
export const quantile =
  (name: string, f: (p: Array) => Array) =>
  (q: P, loc: P = 0, scale: P = 1): Array => {
    const [p, l, s] = promote(name, q, loc, scale);
    const ok = ops.and(ops.and(ops.gt(p, c(p, 0)), ops.lt(p, c(p, 1))), ops.gt(s, c(s, 0)));
    return maskTo(ops.not(ok), NaN, ops.add(l, ops.mul(s, f(p))));
  };
