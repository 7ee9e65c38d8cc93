/** @file Blocked (tree) float sums and prefix sums: long runs are cut into short blocks so ORT's naive float accumulation stays short. */
import type { DType } from "../core/dtype.js";
import type { LoweringContext } from "../core/lowering-types.js";
import { reshape, transpose } from "./lower-util.js";
import { slice } from "./lower-structural.js";

/**
 * ORT's float ReduceSum, CumSum and MatMul accumulate each output sequentially in float32,
 * so the rounding error of a run of n terms grows like n ulp (a 1e8-element sum was off by 17%). A run longer
 * than `maxRun` is reshaped into blocks of about `block` terms, reduced within blocks, and the block results
 * reduced again (recursively): error <= levels * block ulp with levels = log_block(n), i.e. O(log n).
 * `maxK`: contractions longer than this are split into blocks of at least `kBlock` terms (see splitMatMul).
 * Tunable; measured on this host (2 threads): see notes/features-numpy.md.
 */
export const blockedOptions = { maxRun: 1024, block: 64, maxK: 4096, kBlock: 256 };

/** A divisor of n in [block/4, 2*block], nearest `block` from below first (a reshape then needs no padding); 0 if none. */
export function divisorNear(n: number, block: number): number {
  for (let d = block; d >= Math.max(2, block >> 2); d--) if (n % d === 0) return d;
  for (let d = block + 1; d <= 2 * block; d++) if (n % d === 0) return d;
  return 0;
}

/** Shape [pre, m, (d,) post] with unit pre/post dropped, and the axis index of m. */
function runShape(pre: number, post: number, m: number, d?: number): [number[], number] {
  return [
    [...(pre > 1 ? [pre] : []), m, ...(d === undefined ? [] : [d]), ...(post > 1 ? [post] : [])],
    pre > 1 ? 1 : 0,
  ];
}

/** Pads axis `ax` of x (shape `shape`) at its end to length `m` with `v`. */
function padEnd(
  ctx: LoweringContext,
  x: string,
  shape: readonly number[],
  ax: number,
  m: number,
  v: number,
  cd: DType,
): string {
  const pads = [...shape, ...shape].map(() => 0);
  pads[shape.length + ax] = m - shape[ax];
  return ctx.op("Pad", [x, ctx.ints(pads), ctx.scalar(cd, v)], { mode: "constant" });
}

/** Sums x viewed as [pre, n, post] over n, blocking long runs; the result is [pre, post] (unit dims dropped). */
function reduceRun(ctx: LoweringContext, x: string, pre: number, n: number, post: number, cd: DType): string {
  const { maxRun, block } = blockedOptions;
  // ORT sums a contiguous run with several SIMD lanes (up to maxRun terms stay accurate); strided terms one by one
  const limit = post === 1 ? maxRun : block;
  let y = x;
  while (n > limit) {
    let d = divisorNear(n, block);
    if (d === 0) {
      // no block length divides n: pad the run with -0 (the exact identity: -0 + v = v) to a multiple of `block`
      d = block;
      const [s, ax] = runShape(pre, post, n);
      const m = Math.ceil(n / d) * d;
      y = padEnd(ctx, reshape(ctx, y, s), s, ax, m, -0, cd);
      n = m;
    }
    // a contiguous run (post = 1): sum consecutive blocks of d (ORT sums each short row with SIMD lanes);
    // else view the run as [d, n/d] and reduce the d strided terms of each output (ORT adds whole contiguous rows)
    const [s, ax] = post === 1 ? runShape(pre, 1, n / d, d) : runShape(pre, post * (n / d), d);
    y = ctx.op("ReduceSum", [reshape(ctx, y, s), ctx.ints([post === 1 ? ax + 1 : ax])], { keepdims: 0 });
    n /= d;
  }
  const [s, ax] = runShape(pre, post, n);
  return ctx.op("ReduceSum", [reshape(ctx, y, s), ctx.ints([ax])], { keepdims: 0 });
}

/**
 * Float ReduceSum of x (shape `shape`, already in compute dtype `cd`) over `axes`, blocked when more than
 * maxRun terms meet in one output (or `always`); undefined when the plain single op is accurate enough. The result is flat-shaped
 * (kept dims merged): the caller reshapes it to the output shape.
 */
export function blockedSum(
  ctx: LoweringContext,
  x: string,
  shape: readonly number[],
  axes: readonly number[],
  cd: DType,
  always = false,
): string | undefined {
  const n = axes.reduce((p, i) => p * shape[i], 1);
  if (n <= blockedOptions.maxRun && !always) return undefined;
  // merge adjacent dims of the same kind (kept/reduced), dropping unit dims: [K, R, K, R, ...]
  const dims: number[] = [],
    red: boolean[] = [];
  shape.forEach((s, i) => {
    if (s === 1) return;
    const r = axes.includes(i);
    if (red.length && red[red.length - 1] === r) dims[dims.length - 1] *= s;
    else {
      dims.push(s);
      red.push(r);
    }
  });
  let y = x;
  // reduce the runs from last to first, so earlier dims keep their positions
  for (let i = dims.length - 1; i >= 0; i--) {
    if (!red[i]) continue;
    const pre = dims.slice(0, i).reduce((p, v) => p * v, 1),
      post = dims.slice(i + 1).reduce((p, v) => p * v, 1);
    y = reduceRun(ctx, y, pre, dims[i], post, cd);
    dims.splice(i, 1);
    red.splice(i, 1);
  }
  return y;
}

/**
 * Inclusive scan of x viewed as [pre, n, post] along n, optionally from the end; result shaped runShape(pre, post, n).
 * Long runs (top level: more than maxRun; then down to `block`): scan within blocks, scan the block totals
 * (recursively), shift those by one block (-0 first: -0 + v = v for every v, -0 included) and add.
 */
function scanRun(
  ctx: LoweringContext,
  x: string,
  pre: number,
  n: number,
  post: number,
  reverse: boolean,
  limit: number,
  cd: DType,
): string {
  const { block } = blockedOptions;
  const [s, ax] = runShape(pre, post, n);
  const scan = (v: string, axis: number) =>
    ctx.op("CumSum", [v, ctx.scalar("int64", axis)], { exclusive: 0, reverse: reverse ? 1 : 0 });
  if (n <= limit) return scan(reshape(ctx, x, s), ax);
  let d = divisorNear(n, block),
    m = n,
    y = reshape(ctx, x, s);
  if (d === 0) {
    // identity padding at the end changes no prefix (forward) or suffix (reverse) of the real elements
    d = block;
    m = Math.ceil(n / d) * d;
    y = padEnd(ctx, y, s, ax, m, -0, cd);
  }
  const nb = m / d;
  // ORT's CumSum pays per slice (the elements after the axis, one here for a contiguous run): scan such blocks
  // transposed, [.., d, nb] along d, whose slices hold nb elements; the totals are then one contiguous row.
  // (With post > 1 the transposes of 3-D blocks cost more than they save: those scan in place.)
  const tr = post === 1;
  const [sb] = runShape(pre, post, nb, d);
  const perm = sb.map((_, i) => (i === ax ? ax + 1 : i === ax + 1 ? ax : i));
  const bx = tr ? ax : ax + 1;
  const blocks = reshape(ctx, y, sb);
  const within = scan(tr ? transpose(ctx, blocks, perm) : blocks, bx);
  // each block's total is its inclusive scan at the last (first, when reversed) element
  const at = reverse ? 0 : d - 1;
  const totals = scanRun(ctx, slice(ctx, within, [at], [at + 1], [bx]), pre, nb, post, reverse, block, cd);
  // block b is offset by the combined totals of the blocks before (after, when reversed) it
  const [sf] = runShape(pre, post, 1);
  const fill = ctx.op("Expand", [ctx.scalar(cd, -0), ctx.ints(sf)]);
  const offs = reverse
    ? ctx.op("Concat", [slice(ctx, totals, [1], [nb], [ax]), fill], { axis: ax })
    : ctx.op("Concat", [fill, slice(ctx, totals, [0], [nb - 1], [ax])], { axis: ax });
  const os = runShape(pre, post, nb, 1)[0];
  if (tr) [os[ax], os[ax + 1]] = [os[ax + 1], os[ax]];
  const sum = ctx.op("Add", [within, reshape(ctx, offs, os)]);
  const r = reshape(ctx, tr ? transpose(ctx, sum, perm) : sum, runShape(pre, post, m)[0]);
  return m === n ? r : slice(ctx, r, [0], [n], [ax]);
}

/**
 * Float CumSum of x (shape `shape`, in compute dtype `cd`) along `axis`, blocked when the axis is longer than
 * maxRun (error O(log n) ulp instead of O(n)); undefined when the plain op is accurate enough. The result is
 * shaped [pre, n, post]-like: the caller reshapes it back to `shape`.
 */
export function blockedCumsum(
  ctx: LoweringContext,
  x: string,
  shape: readonly number[],
  axis: number,
  reverse: boolean,
  cd: DType,
): string | undefined {
  const n = shape[axis];
  if (n <= blockedOptions.maxRun) return undefined;
  const pre = shape.slice(0, axis).reduce((p, v) => p * v, 1),
    post = shape.slice(axis + 1).reduce((p, v) => p * v, 1);
  return scanRun(ctx, x, pre, n, post, reverse, blockedOptions.maxRun, cd);
}
