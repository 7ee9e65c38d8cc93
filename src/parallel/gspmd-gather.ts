/**
 * @file The partitioner's indexing rules: iota (made locally with its offset), gather (index components that follow an
 * iota are local; a table split over its indexed rows is a masked local lookup owed as a partial sum) and scatter
 * (the transposed lookups: local where aligned, a partial sum of local scatter-adds otherwise).
 */
import type { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import type { Params, Primitive } from "../core/primitive.js";
import { bind } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { axisIndex } from "./collectives.js";
import type { Dims, Partitioner, SV } from "./gspmd-rules.js";

const i32 = (v: number) => ops.full([], v, "int32");
/** Global offset of this device's block along a dim of block size `blk` split over `axes` (int32 scalar). */
const offset = (axes: string[], blk: number): Array => (axes.length ? ops.mul(axisIndex(axes), i32(blk)) : i32(0));

export function iotaRule(P: Partitioner, _ins: SV[], p: Params, [out]: ShapedArray[], prim: Primitive): SV[] {
  const d = p.dimension as number;
  // iota at any sharding: the local iota plus this block's offset along its dimension
  const at = (dims: Dims): SV => {
    const shape = P.localShape(out.shape, dims);
    let x = bind(prim, [], { ...p, shape })[0];
    if (dims[d].length) x = ops.add(x, ops.convert(offset(dims[d], shape[d]), out.dtype));
    return { x, shape: [...out.shape], dims, partial: [], remat: at, iota: d };
  };
  return [at(out.shape.map(() => []))];
}

/** For each index component (last dim of idx), the idx dim whose position it equals (an iota), else null. */
function components(idx: SV): (number | null)[] {
  const k = idx.shape[idx.shape.length - 1];
  if (idx.comps) return idx.comps;
  if (idx.iota !== undefined && k === 1 && idx.iota !== idx.shape.length - 1) return [idx.iota];
  return new globalThis.Array<number | null>(k).fill(null);
}

interface Plan {
  /** Operand target sharding. */
  xt: Dims;
  /** Index target sharding. */
  it: Dims;
  /** Per component: aligned with an idx dim (local after subtracting the block offset), masked over axes, or whole. */
  kinds: ({ aligned: number } | { masked: string[] } | null)[];
}
/** Shardings for an indexing op on operand x (shape xs) by idx over `axes`; null when the rule does not apply. */
function plan(P: Partitioner, x: SV, idx: SV, axes: number[], allowMask: boolean): Plan {
  const r = idx.shape.length;
  const comps = components(idx);
  const it: Dims = idx.dims.map((t, d) => (d === r - 1 ? [] : [...t]));
  const used = new Set(it.flat());
  const xt: Dims = x.dims.map(() => []);
  const kinds: Plan["kinds"] = axes.map(() => null);
  axes.forEach((a, k) => {
    const j = comps[k];
    if (j !== null && j < r - 1 && x.shape[a] === idx.shape[j]) {
      xt[a] = [...it[j]];
      kinds[k] = { aligned: j };
    }
  });
  axes.forEach((a, k) => {
    if (kinds[k] || !allowMask) return;
    const ax = x.dims[a];
    if (ax.length && ax.every((n) => !used.has(n)) && !kinds.some((q) => q && "masked" in q)) {
      xt[a] = [...ax];
      ax.forEach((n) => used.add(n));
      kinds[k] = { masked: [...ax] };
    }
  });
  x.dims.forEach((t, d) => {
    if (axes.includes(d)) return;
    if (t.length && t.every((n) => !used.has(n))) {
      xt[d] = [...t];
      t.forEach((n) => used.add(n));
    }
  });
  return { xt, it, kinds };
}

/** The local index tuple: aligned components minus their block offset; masked ones minus theirs, -1 when elsewhere. */
function localIndex(
  P: Partitioner,
  pl: Plan,
  x: SV,
  idx: Array,
  axes: number[],
  clip: boolean,
): { idx: Array; keep: Array | null } {
  const r = idx.ndim;
  const xl = P.localShape(x.shape, pl.xt);
  let keep: Array | null = null;
  const parts = axes.map((a, k) => {
    let c = ops.sliceInDim(idx, k, k + 1, 1, r - 1);
    const kind = pl.kinds[k];
    if (!kind) return c;
    const off = ops.convert(offset(pl.xt[a], xl[a]), idx.dtype);
    if ("aligned" in kind) return ops.sub(c, off);
    if (clip) c = ops.clamp(ops.full([], 0, idx.dtype), c, ops.full([], x.shape[a] - 1, idx.dtype));
    const l = ops.sub(c, off);
    const here = ops.and(ops.ge(l, ops.full([], 0, idx.dtype)), ops.lt(l, ops.full([], xl[a], idx.dtype)));
    // an index outside the whole table is device 0's (it yields the fill value there, zero elsewhere)
    const outside = ops.or(ops.lt(c, ops.full([], 0, idx.dtype)), ops.ge(c, ops.full([], x.shape[a], idx.dtype)));
    const first = ops.eq(axisIndex(kind.masked), i32(0));
    keep = ops.or(here, ops.and(outside, ops.broadcastInDim(first, outside.shape, [])));
    return ops.select(here, l, ops.full(l.shape, -1, idx.dtype));
  });
  const li = parts.length === 1 ? parts[0] : ops.concatenate(parts, r - 1);
  return { idx: li, keep: keep ? ops.squeeze(keep, [r - 1]) : null };
}

const reshardTo = (P: Partitioner, v: SV, t: Dims): SV =>
  !v.partial.length && v.dims.every((d, i) => d.length === t[i].length && d.every((n, j) => n === t[i][j]))
    ? v
    : P.reshard(v, t);

export function gatherRule(
  P: Partitioner,
  [x0, i0]: SV[],
  p: Params,
  [out]: ShapedArray[],
  prim: Primitive,
): SV[] | null {
  const axes = p.axes as number[];
  const mode = p.mode as string;
  if (x0.x.dtype === "bool" || !["fill", "clip", "promise_in_bounds"].includes(mode)) return null;
  const x = P.resolve(x0),
    idx = P.resolve(i0);
  const pl = plan(P, x, idx, axes, true);
  const xv = reshardTo(P, x, pl.xt),
    iv = reshardTo(P, idx, pl.it);
  const { idx: li, keep } = localIndex(P, pl, x, iv.x, axes, mode !== "fill");
  let y = bind(prim, [xv.x, li], p)[0];
  const masked = pl.kinds.flatMap((k) => (k && "masked" in k ? k.masked : []));
  if (keep) y = ops.select(ops.broadcastInDim(keep, y.shape, [...keep.shape.keys()]), y, ops.zerosLikeArray(y));
  const dims: Dims = [...pl.it.slice(0, -1), ...pl.xt.filter((_, d) => !axes.includes(d))].map((t) => [...t]);
  return [{ x: y, shape: [...out.shape], dims, partial: masked }];
}

export function scatterRule(
  P: Partitioner,
  [x0, i0, u0]: SV[],
  p: Params,
  [out]: ShapedArray[],
  prim: Primitive,
): SV[] | null {
  const axes = p.axes as number[];
  const idx = P.resolve(i0);
  const x = P.resolve(x0);
  const pl = plan(P, x, idx, axes, false);
  // index tuples left sharded over axes the operand does not follow: each device adds its own updates (partial sum)
  const batchAxes = pl.it.slice(0, -1).flat();
  const followed = new Set(pl.xt.flat());
  const owed = batchAxes.filter((n) => !followed.has(n));
  if (owed.length && p.reduce !== "add") return null;
  const xv = reshardTo(P, x, pl.xt),
    iv = reshardTo(P, idx, pl.it);
  const ut: Dims = [...pl.it.slice(0, -1), ...pl.xt.filter((_, d) => !axes.includes(d))];
  const uv = reshardTo(P, P.resolve(u0), ut);
  const { idx: li } = localIndex(P, pl, x, iv.x, axes, false);
  let base = xv.x;
  if (owed.length) {
    // the operand is added once: on the first device along the owed axes, zeros elsewhere
    const first = ops.eq(axisIndex(owed), i32(0));
    base = ops.select(ops.broadcastInDim(first, base.shape, []), base, ops.zerosLikeArray(base));
  }
  const y = bind(prim, [base, li, uv.x], p)[0];
  return [{ x: y, shape: [...out.shape], dims: pl.xt.map((t) => [...t]), partial: owed }];
}
