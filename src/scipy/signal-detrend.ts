/** @file jax.scipy.signal.detrend: subtracts the mean or a least-squares line (per breakpoint segment) along an axis. */
import type { Array, ArrayLike, NestedValue } from "../core/array.js";
import { realDType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { promoteArgsInexact } from "../numpy/core.js";
import { type Args, parseArgs } from "../numpy/elementwise-util.js";
import { shapeStr } from "../numpy/struct-util.js";

type AL = ArrayLike | NestedValue;

/**
 * scipy.signal.detrend(data, axis=-1, type="linear", bp=0): subtracts the mean ("constant") or a least-squares line
 * ("linear") along axis; with breakpoints bp (static indices) each segment between them gets its own line, as scipy.
 */
export function detrend(
  data: AL,
  ...args: Args<
    [axis: number, type: "linear" | "constant", bp: number | number[], overwriteData: unknown],
    { axis?: number; type?: "linear" | "constant"; bp?: number | number[]; overwriteData?: unknown }
  >
): Array {
  const fn = "scipy.signal.detrend";
  const o = parseArgs<{ axis: number; type: string; bp: number | number[]; overwriteData: unknown }>(fn, args, [
    "axis",
    "type",
    "bp",
    "overwriteData",
  ]);
  if (o.overwriteData !== undefined && o.overwriteData !== null)
    throw new Error(`${fn}: the overwriteData argument is not implemented (as JAX)`);
  const type = o.type ?? "linear";
  if (!["linear", "l", "constant", "c"].includes(type))
    throw new Error(`${fn}: trend type must be "linear" or "constant", got ${JSON.stringify(type)}`);
  let x = promoteArgsInexact(fn, data)[0];
  x = ops.convert(x, x.dtype);
  if (x.ndim === 0) throw new Error(`${fn}: data must be at least 1-D, got a scalar`);
  const ax0 = o.axis ?? -1;
  if (!Number.isInteger(ax0) || ax0 < -x.ndim || ax0 >= x.ndim)
    throw new Error(`${fn}: axis ${ax0} is out of bounds for data of shape ${shapeStr(x.shape)}`);
  const ax = ax0 < 0 ? ax0 + x.ndim : ax0;
  const N = x.shape[ax];
  const mean = (v: Array): Array => ops.div(ops.reduceSum(v, [ax]), ops.full([], v.shape[ax], v.dtype));
  const keep = (v: Array, like: Array): Array =>
    ops.broadcastInDim(
      v,
      like.shape,
      [...like.shape.keys()].filter((d) => d !== ax),
    );
  if (type === "constant" || type === "c") return ops.sub(x, keep(mean(x), x));
  const bps = (typeof o.bp === "number" || o.bp === undefined ? [o.bp ?? 0] : o.bp).map((b) => {
    if (!Number.isInteger(b) || b < 0 || b > N)
      throw new Error(`${fn}: breakpoints must be static integers in [0, ${N}], got ${JSON.stringify(o.bp)}`);
    return b;
  });
  const edges = [...new Set([0, ...bps, N])].sort((a, b) => a - b);
  const parts: Array[] = [];
  const rdt = realDType(x.dtype);
  for (let m = 0; m + 1 < edges.length; m++) {
    const seg = ops.sliceInDim(x, edges[m], edges[m + 1], 1, ax);
    const L = edges[m + 1] - edges[m];
    if (L < 2) {
      parts.push(ops.sub(seg, seg));
      continue;
    }
    // least squares y ~ a t + b on t = 1..L (centered): a = sum(tc (y - ym)) / sum(tc^2)
    const tc = ops.convert(ops.sub(ops.iota(rdt, seg.shape, ax), ops.full(seg.shape, (L - 1) / 2, rdt)), x.dtype);
    const ym = keep(mean(seg), seg);
    const den = ((L - 1) * L * (L + 1)) / 12;
    const slope = ops.div(ops.reduceSum(ops.mul(tc, ops.sub(seg, ym)), [ax]), ops.full([], den, x.dtype));
    parts.push(ops.sub(ops.sub(seg, ym), ops.mul(keep(slope, seg), tc)));
  }
  return parts.length === 1 ? parts[0] : ops.concatenate(parts, ax);
}
