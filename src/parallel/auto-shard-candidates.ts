/**
 * @file autoShard's candidate plans: per-leaf roles, the families it tries (replicated, data parallel, Megatron tensor
 * parallel, data x tensor, ZeRO/FSDP parameter sharding) over every split of the mesh axes, and each leaf's legal specs.
 */
import { type Jaxpr, Literal, type Var } from "../core/jaxpr.js";

/** A leaf's sharding: mesh axes per dimension (and axes it is an unreduced partial sum over, for outputs). */
export interface Sh {
  dims: string[][];
  partial: string[];
}
export const replicatedSh = (rank: number): Sh => ({
  dims: globalThis.Array.from({ length: rank }, () => []),
  partial: [],
});

/** What an argument is: trained parameters, per-example data (split along dimension 0), or kept replicated. */
export type ArgRole = "params" | "data" | "replicated";

export interface LeafInfo {
  path: string;
  shape: readonly number[];
  dtype: string;
  role: ArgRole;
}

export interface Candidate {
  strategy: string;
  shardings: Sh[];
}

const prod = (xs: readonly number[]): number => xs.reduce((a, b) => a * b, 1);

/** Every subset of the mesh axes (each in mesh order), the empty set first. */
function subsets(axes: readonly string[]): string[][] {
  const out: string[][] = [[]];
  for (const a of axes) out.push(...out.map((s) => [...s, a]));
  return out.sort((p, q) => p.length - q.length);
}

/**
 * How each rank-2 parameter would be split in a Megatron MLP: weights in order of their first use by a dot_general
 * alternate column-parallel (a free dimension split) and row-parallel (a contracted dimension split), so the first
 * matmul's output stays sharded into the second and only the second's partial sum needs one reduction.
 */
export function megatronRoles(
  j: Jaxpr,
  leaves: readonly LeafInfo[],
): Map<number, { free: number; contracted: number }> {
  // var -> [input leaf index, permutation from the var's dims to the leaf's dims]
  const src = new Map<Var, [number, number[]]>();
  j.invars.forEach((v, i) => src.set(v, [i, v.aval.shape.map((_, d) => d)]));
  const out = new Map<number, { free: number; contracted: number }>();
  for (const e of j.eqns) {
    const a = e.inputs[0];
    const s = a instanceof Literal ? undefined : src.get(a);
    if (s && e.primitive.name === "transpose") {
      const perm = e.params.permutation as number[];
      src.set(e.outVars[0], [s[0], perm.map((p) => s[1][p])]);
    } else if (s && ["convert_element_type", "copy", "stop_gradient"].includes(e.primitive.name))
      src.set(e.outVars[0], s);
    if (e.primitive.name !== "dot_general") continue;
    const [[lc, rc], [lb, rb]] = e.params.dimension_numbers as [[number[], number[]], [number[], number[]]];
    e.inputs.forEach((x, side) => {
      const m = x instanceof Literal ? undefined : src.get(x);
      if (!m || leaves[m[0]]?.role !== "params" || out.has(m[0]) || x.aval.ndim !== 2) return;
      const [c, b] = side === 0 ? [lc, lb] : [rc, rb];
      const free = [0, 1].filter((d) => !c.includes(d) && !b.includes(d));
      if (c.length !== 1 || free.length !== 1) return;
      out.set(m[0], { free: m[1][free[0]], contracted: m[1][c[0]] });
    });
  }
  return out;
}

/** Splits dimension d of a leaf over axes when it divides evenly and no axis is used yet. */
function trySplit(sh: Sh, shape: readonly number[], d: number, axes: string[], size: (a: string[]) => number): boolean {
  if (!axes.length || d < 0 || d >= shape.length || sh.dims[d].length) return false;
  if (shape[d] % size(axes) !== 0 || axes.some((a) => sh.dims.flat().includes(a))) return false;
  sh.dims[d] = [...axes];
  return true;
}

/** The candidate families over every split of the mesh axes into data axes D and tensor axes M (disjoint). */
export function familyCandidates(
  leaves: readonly LeafInfo[],
  mega: Map<number, { free: number; contracted: number }>,
  axes: readonly string[],
  size: (a: string[]) => number,
): Candidate[] {
  const out: Candidate[] = [];
  const firstUse = [...mega.keys()]; // insertion order = order of first use
  const build = (D: string[], M: string[], zero: boolean): Sh[] =>
    leaves.map((l, i) => {
      const sh = replicatedSh(l.shape.length);
      if (l.role === "data" && l.shape.length) trySplit(sh, l.shape, 0, D, size);
      if (l.role !== "params") return sh;
      const m = mega.get(i);
      if (M.length && m) {
        const col = firstUse.indexOf(i) % 2 === 0;
        const [first, second] = col ? [m.free, m.contracted] : [m.contracted, m.free];
        if (!trySplit(sh, l.shape, first, M, size)) trySplit(sh, l.shape, second, M, size);
      }
      if (zero) {
        // ZeRO-3 / FSDP: the parameter's largest dimension that divides evenly is split over the data axes
        const dims = l.shape.map((_, d) => d).sort((p, q) => l.shape[q] - l.shape[p] || p - q);
        for (const d of dims) if (trySplit(sh, l.shape, d, D, size)) break;
      }
      return sh;
    });
  const name = (D: string[]) => (D.length === 1 ? `"${D[0]}"` : `(${D.map((a) => `"${a}"`).join(", ")})`);
  for (const D of subsets(axes))
    for (const M of subsets(axes.filter((a) => !D.includes(a)))) {
      if (!D.length && !M.length) out.push({ strategy: "replicated", shardings: build(D, M, false) });
      else if (!M.length) {
        out.push({ strategy: `data parallel over ${name(D)}`, shardings: build(D, M, false) });
        out.push({ strategy: `ZeRO/FSDP over ${name(D)}`, shardings: build(D, M, true) });
      } else if (!D.length) out.push({ strategy: `tensor parallel over ${name(M)}`, shardings: build(D, M, false) });
      else {
        out.push({ strategy: `data ${name(D)} x tensor ${name(M)} parallel`, shardings: build(D, M, false) });
        out.push({ strategy: `ZeRO/FSDP ${name(D)} x tensor ${name(M)}`, shardings: build(D, M, true) });
      }
    }
  // the same specs reached twice (axes of size 1, nothing divisible) are tried once
  const seen = new Set<string>();
  return out.filter((c) => {
    const k = JSON.stringify(c.shardings.map((s) => s.dims));
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * Every legal sharding of one leaf: each mesh axis on at most one dimension (several axes on a dimension in mesh
 * order), and a dimension split only when its size divides evenly by the product of its axes' sizes.
 */
export function leafOptions(shape: readonly number[], axes: readonly string[], size: (a: string[]) => number): Sh[] {
  let opts: string[][][] = [shape.map(() => [])];
  for (const a of axes) {
    const next: string[][][] = [];
    for (const o of opts) {
      next.push(o);
      shape.forEach((_, d) => next.push(o.map((x, e) => (e === d ? [...x, a] : x))));
    }
    opts = next;
  }
  return opts
    .filter((o) => o.every((x, d) => shape[d] % size(x) === 0 && shape[d] >= size(x)))
    .map((dims) => ({ dims, partial: [] }));
}

/** Bytes of one leaf on one device under sh. */
export const leafLocalElems = (shape: readonly number[], sh: Sh, size: (a: string[]) => number): number =>
  prod(shape.map((n, d) => n / size(sh.dims[d])));
