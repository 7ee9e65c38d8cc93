/**
 * @file Lowering of the collective primitives to the jaxts.collectives custom ops of a per-device program, given
 * the mesh being lowered for (axis names and sizes -> groups of device ranks). Outside such a lowering (no mesh
 * set) a collective stays unlowerable, as before: vmap eliminates it.
 */
import type { ShapedArray } from "../core/aval.js";
import { type DType, isComplex, realDType } from "../core/dtype.js";
import { stridesOf } from "../core/shape.js";
import type { LoweringContext } from "../core/lowering-types.js";
import type { Primitive, PrimitiveRules } from "../core/primitive.js";
import { COLLECTIVES_DOMAIN } from "../compiler/async-collectives.js";
import { collectiveOverlapEnabled } from "./overlap-collectives.js";
import { allGatherP, allToAllP, axisIndexP, pmaxP, pminP, ppermuteP, psumP, psumScatterP } from "./collectives.js";

/** The mesh a per-device program is lowered for: ranks are row-major over `dims`. */
export interface SpmdMesh {
  readonly axisNames: readonly string[];
  readonly dims: readonly number[];
}

let current: SpmdMesh | null = null;
/** Runs f with collectives lowered for `mesh` (the device runtime's compile of a shardMap body). */
export function withSpmdMesh<T>(mesh: SpmdMesh, f: () => T): T {
  const saved = current;
  current = mesh;
  try {
    return f();
  } finally {
    current = saved;
  }
}

const NOT_SPMD = "collectives are eliminated by vmap's batching rules; per-device lowering comes with shardMap/pmap";
/** Element types the native collectives move (complex values lower to their float storage [..., 2] first). */
const MOVABLE: ReadonlySet<DType> = new Set<DType>([
  "float32",
  "float64",
  "float16",
  "bfloat16",
  "int32",
  "int64",
  "int16",
  "int8",
  "uint64",
  "uint32",
  "uint16",
  "uint8",
  "bool",
]);
// ONNX element types: a bfloat16 value is float32 in the graph and travels as bfloat16 (half the bytes; exact)
const ONNX_FLOAT32 = 1,
  ONNX_UINT8 = 2,
  ONNX_UINT16 = 4,
  ONNX_BFLOAT16 = 16;

function meshOf(ctx: LoweringContext): SpmdMesh {
  if (!current) ctx.unsupported(NOT_SPMD);
  return current;
}

/**
 * Groups of ranks for a collective over mesh axes `axes` (in that order: position in a group = the row-major
 * index over `axes`), one group per setting of the other axes; with `indexGroups` (single axis), each group splits
 * into those positions. Groups must have equal sizes (the native op's layout).
 */
export function collectiveGroups(
  mesh: SpmdMesh,
  axes: readonly string[],
  indexGroups: readonly (readonly number[])[] | null,
): number[][] {
  const pos = axes.map((a) => {
    const i = mesh.axisNames.indexOf(a);
    if (i < 0)
      throw new Error(`collective over axis ${JSON.stringify(a)}: the mesh has axes ${JSON.stringify(mesh.axisNames)}`);
    return i;
  });
  const strides = stridesOf(mesh.dims);
  const others = mesh.dims.map((_, i) => i).filter((i) => !pos.includes(i));
  const count = (ix: number[]) => ix.reduce((a, i) => a * mesh.dims[i], 1);
  // row-major enumeration of coordinates over the listed mesh dims
  const coordsOf = (ix: number[], k: number): number[] => {
    const c: number[] = new Array<number>(ix.length);
    for (let j = ix.length - 1; j >= 0; j--) {
      c[j] = k % mesh.dims[ix[j]];
      k = Math.floor(k / mesh.dims[ix[j]]);
    }
    return c;
  };
  const groups: number[][] = [];
  for (let o = 0; o < count(others); o++) {
    const oc = coordsOf(others, o);
    const base = others.reduce((r, d, j) => r + oc[j] * strides[d], 0);
    const members: number[] = [];
    for (let m = 0; m < count(pos); m++) {
      const mc = coordsOf(pos, m);
      members.push(base + pos.reduce((r, d, j) => r + mc[j] * strides[d], 0));
    }
    if (indexGroups) for (const g of indexGroups) groups.push(g.map((i) => members[i]));
    else groups.push(members);
  }
  return groups;
}

function collectiveNode(
  ctx: LoweringContext,
  op: string,
  x: string | null,
  dtype: DType,
  label: string,
  axes: readonly string[],
  groups: number[][],
  extra: Record<string, number | number[] | string> = {},
): string {
  if (!MOVABLE.has(dtype))
    ctx.unsupported(`${label} of ${dtype} (the device runtime moves ${[...MOVABLE].join(", ")})`);
  const size = groups[0]?.length ?? 0;
  if (groups.some((g) => g.length !== size))
    ctx.unsupported(`${label}: groups of unequal sizes ${JSON.stringify(groups)}`);
  const attrs = {
    groups: groups.flat(),
    group_size: size,
    label,
    axes: `mesh axis ${axes.map((a) => `'${a}'`).join(", ")}`,
    ...extra,
  };
  // overlapped float16 collectives stay on the emulation: ORT's float16 cast insertion (around its float16-less CPU
  // kernels) can move a CollectiveDone into float32 while its CollectiveStart stays float16 (wrong bytes), and
  // widening them instead lets ORT drop the float16 rounding of the result
  if (dtype === "float16" && collectiveOverlapEnabled())
    ctx.unsupported(`${label} of float16 with overlapped collectives (withCollectiveOverlap)`);
  // uint8 sums run in uint16 (the native kernels have no uint8 sum, shared with bool): (sum mod 2^16) mod 2^8 is the
  // wrapped uint8 sum, and ONNX's narrowing Cast wraps
  const u8sum = dtype === "uint8" && extra.reduce === 0 && (op === "AllReduce" || op === "ReduceScatter");
  const [wire, back] =
    x === null
      ? [0, 0]
      : dtype === "bfloat16"
        ? [ONNX_BFLOAT16, ONNX_FLOAT32]
        : u8sum
          ? [ONNX_UINT16, ONNX_UINT8]
          : [0, 0];
  const y = ctx.node(
    op,
    x === null ? [] : [wire ? ctx.op("Cast", [x], { to: wire }) : x],
    attrs,
    1,
    COLLECTIVES_DOMAIN,
  )[0];
  return back ? ctx.op("Cast", [y], { to: back }) : y;
}

const perm = (ctx: LoweringContext, x: string, p: number[]): string =>
  p.every((v, i) => v === i) ? x : ctx.op("Transpose", [x], { perm: p });
const reshape = (ctx: LoweringContext, x: string, shape: readonly number[]): string =>
  ctx.op("Reshape", [x, ctx.ints(shape)]);
/** The permutation moving axis `from` to position `to` (numpy.moveaxis). */
function moveaxis(rank: number, from: number, to: number): number[] {
  const rest = [...Array(rank).keys()].filter((i) => i !== from);
  rest.splice(to, 0, from);
  return rest;
}

type ReduceParams = { axes: string[]; axis_index_groups: number[][] | null };
function reduceRule(name: string, reduce: number): PrimitiveRules<ReduceParams>["lower"] {
  return (ctx, [x], { axes, axis_index_groups: aig }, [xa]) => {
    const mesh = meshOf(ctx);
    if (aig && axes.length !== 1) ctx.unsupported(`${name} with axis_index_groups over several axes`);
    if (reduce === 0 && xa.dtype === "bool") ctx.unsupported(`${name} of bool`);
    return [collectiveNode(ctx, "AllReduce", x, xa.dtype, name, axes, collectiveGroups(mesh, axes, aig), { reduce })];
  };
}

type AGP = { axis_name: string; axis: number; tiled: boolean; axis_size: number; axis_index_groups: number[][] | null };
const allGatherLower: PrimitiveRules<AGP>["lower"] = (ctx, [x], p, [xa]: ShapedArray[], [ya]: ShapedArray[]) => {
  const groups = collectiveGroups(meshOf(ctx), [p.axis_name], p.axis_index_groups);
  // the native op stacks along a new leading axis; move it to `axis` (and merge it into the next one when tiled)
  const stacked = collectiveNode(ctx, "AllGather", x, xa.dtype, "all_gather", [p.axis_name], groups);
  const moved = perm(ctx, stacked, moveaxis(xa.ndim + 1, 0, p.axis));
  return [p.tiled ? reshape(ctx, moved, ya.shape) : moved];
};

type PSP = { axis_name: string; scatter_dimension: number; tiled: boolean; axis_size: number };
const psumScatterLower: PrimitiveRules<PSP>["lower"] = (ctx, [x], p, [xa]: ShapedArray[], [ya]: ShapedArray[]) => {
  const groups = collectiveGroups(meshOf(ctx), [p.axis_name], null);
  const n = groups[0].length,
    sd = p.scatter_dimension;
  if (xa.dtype === "bool") ctx.unsupported("psum_scatter of bool");
  // bring the n scattered chunks to a leading axis: [n, ...]
  let lead = x;
  if (p.tiled) {
    const split = [...xa.shape.slice(0, sd), n, xa.shape[sd] / n, ...xa.shape.slice(sd + 1)];
    lead = perm(ctx, reshape(ctx, x, split), moveaxis(xa.ndim + 1, sd, 0));
  } else {
    lead = perm(ctx, x, moveaxis(xa.ndim, sd, 0));
  }
  const y = collectiveNode(ctx, "ReduceScatter", lead, xa.dtype, "psum_scatter", [p.axis_name], groups, { reduce: 0 });
  return [p.tiled ? y : reshape(ctx, y, ya.shape)];
};

type ATA = { axis_name: string; split_axis: number; concat_axis: number; tiled: boolean; axis_size: number };
const allToAllLower: PrimitiveRules<ATA>["lower"] = (ctx, [x], p, [xa]: ShapedArray[], [ya]: ShapedArray[]) => {
  const groups = collectiveGroups(meshOf(ctx), [p.axis_name], null);
  const n = groups[0].length,
    { split_axis: sa, concat_axis: ca } = p;
  if (!p.tiled) {
    // y[j] = member j's x[.., p at sa, ..]; the member axis then goes to the concat position
    const y = collectiveNode(
      ctx,
      "AllToAll",
      perm(ctx, x, moveaxis(xa.ndim, sa, 0)),
      xa.dtype,
      "all_to_all",
      [p.axis_name],
      groups,
    );
    return [perm(ctx, y, moveaxis(xa.ndim, 0, ca))];
  }
  const split = [...xa.shape.slice(0, sa), n, xa.shape[sa] / n, ...xa.shape.slice(sa + 1)];
  const lead = perm(ctx, reshape(ctx, x, split), moveaxis(xa.ndim + 1, sa, 0));
  const y = collectiveNode(ctx, "AllToAll", lead, xa.dtype, "all_to_all", [p.axis_name], groups);
  // member axis just before the concat axis, then merged with it (member-major)
  return [reshape(ctx, perm(ctx, y, moveaxis(xa.ndim + 1, 0, ca)), ya.shape)];
};

type PPP = { axis_name: string; perm: [number, number][] };
const ppermuteLower: PrimitiveRules<PPP>["lower"] = (ctx, [x], p, [xa]) => {
  const groups = collectiveGroups(meshOf(ctx), [p.axis_name], null);
  const n = groups[0].length;
  for (const [a, b] of p.perm)
    if (a < 0 || b < 0 || a >= n || b >= n)
      ctx.unsupported(
        `ppermute: perm entry ${JSON.stringify([a, b])} out of range for axis ${p.axis_name} of size ${n}`,
      );
  return [
    collectiveNode(ctx, "CollectivePermute", x, xa.dtype, "ppermute", [p.axis_name], groups, { pairs: p.perm.flat() }),
  ];
};

const axisIndexLower: PrimitiveRules<{ axis_name: string }>["lower"] = (ctx, _ins, { axis_name }) => {
  const mesh = meshOf(ctx);
  const axis = mesh.axisNames.indexOf(axis_name);
  if (axis < 0)
    ctx.unsupported(
      `axis_index of ${JSON.stringify(axis_name)}, not an axis of the mesh ${JSON.stringify(mesh.axisNames)}`,
    );
  return [
    ctx.node(
      "AxisIndex",
      [],
      { dims: [...mesh.dims], axis, label: "axis_index", axes: `mesh axis '${axis_name}'` },
      1,
      COLLECTIVES_DOMAIN,
    )[0],
  ];
};

/** The real value a complex one travels as in the graph: its float storage with a trailing (re, im) axis. */
const storageAval = (a: ShapedArray): ShapedArray =>
  isComplex(a.dtype) ? a.update({ dtype: realDType(a.dtype), shape: [...a.shape, 2] }) : a;

function install<P extends Record<string, unknown>>(
  p: Primitive<P>,
  lower: PrimitiveRules<P>["lower"],
  complex = true,
): void {
  // the rule reads the mesh set by withSpmdMesh; without one it reports the old reason (see meshOf)
  const rules = p.rules as { lower?: PrimitiveRules<P>["lower"]; lowerComplex?: PrimitiveRules<P>["lower"] };
  rules.lower = lower;
  // complex: the same rule on the [..., 2] float storage (moves move it; a sum adds re and im componentwise); the
  // collectives' axes all precede the trailing lane axis, so their positions do not change
  if (!complex || !lower) return;
  rules.lowerComplex = (ctx, ins, params, inAvals, outAvals) =>
    lower(ctx, ins, params, inAvals.map(storageAval), outAvals.map(storageAval));
  // complex operands are fine (the emulation's batching rules already take them): no complex-operand guard
  // (guardComplexOperands, run when the package has loaded, skips a primitive marked guarded)
  (p.rules as { complexGuarded?: boolean }).complexGuarded = true;
}
install(psumP, reduceRule("psum", 0));
// pmax / pmin of complex (JAX: lexicographic on (re, im)) are not lowered: such a body runs on the emulation
install(pmaxP, reduceRule("pmax", 1), false);
install(pminP, reduceRule("pmin", 2), false);
install(allGatherP, allGatherLower);
install(psumScatterP, psumScatterLower);
install(allToAllP, allToAllLower);
install(ppermuteP, ppermuteLower);
install(axisIndexP, axisIndexLower);
