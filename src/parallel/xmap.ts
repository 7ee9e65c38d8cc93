/**
 * @file jax.xmap: a named-axis map. Arguments name some of their dimensions (["batch", "...", "model"] or { 0: "batch" });
 * f sees the arrays without those dimensions and can run collectives over the names; outAxes put the named
 * dimensions back. Runs as nested named vmaps (one per axis name); axisResources are validated against the mesh.
 * On the device runtime (config spmdRuntime "devices", or "auto" with the addon), named axes with axisResources run as
 * a shardMap over the mesh, split over the product of their mesh axes (a block of several elements per device is a
 * vmap inside it); collectives over such a name are over its mesh axes (and local vmap). The other names stay vmaps
 * inside the per-device body. A mesh axis serving two names runs the emulation.
 */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array } from "../core/array.js";
import { resolvedSpmdRuntime } from "../runtime/index.js";
import { spmdFallbackNote } from "../runtime/spmd-runtime.js";
import { flatten, unflatten, type TreeDef } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { flattenArrays } from "../transforms/api-util.js";
import { withAxisSubstitution } from "./collectives.js";
import { vmapFlat } from "../transforms/vmap.js";
import { getMesh } from "./context-mesh.js";
import { Mesh } from "./mesh.js";
import { shardMap } from "./shard-map.js";
import { PartitionSpecImpl } from "./sharding.js";

export type AxisSpecEntry = readonly (string | null)[] | Readonly<Record<number, string>>;
export interface XmapOpts {
  inAxes: unknown;
  outAxes: unknown;
  axisResources?: Readonly<Record<string, string | string[]>>;
  mesh?: Mesh;
}

export { getMesh, setMesh } from "./context-mesh.js";

const isEntry = (x: unknown): x is AxisSpecEntry =>
  (globalThis.Array.isArray(x) && x.every((e) => e === null || typeof e === "string")) ||
  (x !== null &&
    typeof x === "object" &&
    !globalThis.Array.isArray(x) &&
    !(x instanceof Array) &&
    Object.keys(x).every((k) => /^-?\d+$/.test(k)));

/** Named dimensions of an array of rank `nd`: name -> dim index. "..." stands for the unnamed middle. */
function namedDims(fn: string, e: AxisSpecEntry, nd: number, what: string): Map<string, number> {
  const m = new Map<string, number>();
  if (globalThis.Array.isArray(e)) {
    const list = e as readonly (string | null)[];
    const ell = list.indexOf("...");
    const before = ell < 0 ? list : list.slice(0, ell);
    const after = ell < 0 ? [] : list.slice(ell + 1);
    if (ell < 0 && list.length !== nd)
      throw new Error(
        `${fn}: ${what} ${JSON.stringify(list)} names ${list.length} dimensions but the array has rank ${nd} (use "..." for the rest)`,
      );
    before.forEach((n, i) => {
      if (n !== null) m.set(n, i);
    });
    after.forEach((n, i) => {
      if (n !== null) m.set(n, nd - after.length + i);
    });
  } else {
    for (const [k, n] of Object.entries(e as Record<string, string>)) {
      const d = Number(k) < 0 ? Number(k) + nd : Number(k);
      if (d < 0 || d >= nd) throw new Error(`${fn}: ${what} dimension ${k} is out of range for rank ${nd}`);
      m.set(n, d);
    }
  }
  if (new Set(m.keys()).size !== m.size) throw new Error(`${fn}: ${what} repeats an axis name`);
  return m;
}

/** Broadcasts an axis-spec prefix tree onto value leaves. */
function entriesFor(fn: string, spec: unknown, tree: unknown, what: string): AxisSpecEntry[] {
  const out: AxisSpecEntry[] = [];
  const rec = (s: unknown, t: unknown): void => {
    // a list of names/nulls (or a {dim: name} object) applies to every leaf below it
    if (isEntry(s)) {
      flatten(t)[0].forEach(() => out.push(s));
      return;
    }
    if (globalThis.Array.isArray(s) && globalThis.Array.isArray(t) && s.length === t.length) {
      s.forEach((si, i) => rec(si, t[i]));
      return;
    }
    if (s && typeof s === "object" && t && typeof t === "object") {
      for (const k of Object.keys(t).sort())
        rec((s as Record<string, unknown>)[k] ?? [], (t as Record<string, unknown>)[k]);
      return;
    }
    throw new TypeError(`${fn}: ${what} do not match the structure of the values`);
  };
  rec(spec, tree);
  return out;
}

export function xmap<A extends unknown[], R>(f: (...args: A) => R, opts: XmapOpts): (...args: A) => R {
  const fn = "xmap";
  checkArity(fn, arguments, 2, "xmap(f, { inAxes, outAxes, axisResources, mesh })");
  checkOptions(
    fn,
    opts,
    ["inAxes", "outAxes", "axisResources", "mesh"],
    "xmap(f, { inAxes, outAxes, axisResources, mesh })",
  );
  return (...args: A): R => {
    const [leaves, def] = flattenArrays(fn, args, "argument");
    const inEntries = entriesFor(fn, opts.inAxes, args, "inAxes");
    if (inEntries.length !== leaves.length)
      throw new TypeError(
        `${fn}: inAxes describe ${inEntries.length} array leaves but the arguments have ${leaves.length}`,
      );
    const named = leaves.map((x, k) => namedDims(fn, inEntries[k], x.ndim, `inAxes of argument leaf ${k}`));
    const names: string[] = [];
    named.forEach((m) => {
      for (const n of m.keys()) if (!names.includes(n)) names.push(n);
    });
    const sizes = new Map<string, number>();
    named.forEach((m, k) => {
      for (const [n, d] of m) {
        const s = leaves[k].shape[d];
        if (sizes.has(n) && sizes.get(n) !== s)
          throw new Error(`${fn}: axis ${JSON.stringify(n)} has inconsistent sizes ${sizes.get(n)} and ${s}`);
        sizes.set(n, s);
      }
    });
    const mesh = opts.mesh ?? getMesh();
    const resources = new Map<string, string[]>();
    for (const [n, r] of Object.entries(opts.axisResources ?? {})) {
      if (!mesh)
        throw new Error(
          `${fn}: axisResources map ${JSON.stringify(n)} to mesh axes but no mesh is set (pass { mesh } or call setMesh)`,
        );
      const axes = typeof r === "string" ? [r] : [...r];
      for (const ax of axes)
        if (!mesh.axisNames.includes(ax))
          throw new Error(
            `${fn}: axis resource ${JSON.stringify(ax)} for ${JSON.stringify(n)} is not an axis of ${mesh}`,
          );
      // JAX's rule: each device holds an equal block of the named axis
      const total = axes.reduce((a, ax) => a * mesh.axisSize(ax), 1);
      if (sizes.has(n) && sizes.get(n)! % total !== 0)
        throw new Error(
          `${fn}: size of axis ${JSON.stringify(n)} (${sizes.get(n)}) is not divisible by the total number of resources assigned to this axis (${JSON.stringify(axes)}, ${total} in total)`,
        );
      if (sizes.has(n) && axes.length) resources.set(n, axes);
    }
    // named dims first, in the global name order
    const moved = leaves.map((x, k) => {
      const front = names.filter((n) => named[k].has(n)).map((n) => named[k].get(n)!);
      return ops.transpose(x, [...front, ...[...x.shape.keys()].filter((d) => !front.includes(d))]);
    });
    let outDef: TreeDef | null = null;
    let outEntries: AxisSpecEntry[] = [];
    let outNamed: Map<string, number>[] = [];
    // the names split over mesh axes on the device runtime (null: every name is a vmap, on the emulation)
    const plan =
      resolvedSpmdRuntime() === "devices" && mesh && resources.size ? meshPlan(mesh, names, sizes, resources) : null;
    if (typeof plan === "string") spmdFallbackNote("xmap", plan);
    const onMesh = typeof plan === "string" ? null : plan;
    // the vmaps, outermost first: every name on the emulation; on the devices the names without resources and, for a
    // name whose devices hold blocks of several elements, a local vmap over the block
    const vmaps: VmapLevel[] = names.flatMap((n) => {
      if (!onMesh?.axes.has(n)) return [{ name: n, axisName: n, size: sizes.get(n)! }];
      const local = onMesh.local.get(n);
      return local ? [{ name: n, axisName: local, size: onMesh.block.get(n)! }] : [];
    });
    const level =
      (a: number) =>
      (...xs: Array[]): Array[] => {
        if (a === vmaps.length) {
          const out = f(...(unflatten(def, xs) as A));
          const [ol, od] = flattenArrays(fn, out, "output");
          outDef = od;
          outEntries = entriesFor(fn, opts.outAxes, out, "outAxes");
          // positions refer to the final output, which has the named dims added back
          outNamed = ol.map((y, k) => {
            const e = outEntries[k];
            const cnt = globalThis.Array.isArray(e)
              ? e.filter((n) => n !== null && n !== "...").length
              : Object.keys(e).length;
            return namedDims(fn, e, y.ndim + cnt, `outAxes of output leaf ${k}`);
          });
          return ol;
        }
        const { name: n, axisName, size } = vmaps[a];
        const inDims = xs.map((_, k) => (named[k].has(n) ? 0 : null));
        try {
          return vmapFlat(level(a + 1), xs, inDims, (i) => (outNamed[i]?.has(n) ? 0 : null), { size, name: axisName });
        } catch (e) {
          if (e instanceof Error && /outAxes=null/.test(e.message))
            throw new Error(
              `${fn}: an output varies over named axis ${JSON.stringify(n)} but its outAxes do not place it`,
            );
          throw e;
        }
      };
    const outs = onMesh ? onDevices(onMesh, moved, named, names, level(0), () => outNamed) : level(0)(...moved);
    const placed = outs.map((y, k) => {
      const m = outNamed[k];
      const lead = names.filter((n) => m.has(n));
      const rest = y.ndim - lead.length;
      const total = lead.length + rest;
      const perm: number[] = [];
      let r = lead.length;
      for (let pos = 0; pos < total; pos++) {
        const n = lead.find((nm) => m.get(nm) === pos);
        perm.push(n !== undefined ? lead.indexOf(n) : r++);
      }
      return ops.transpose(y, perm);
    });
    return unflatten(outDef!, placed) as R;
  };
}

/** One of xmap's nested vmaps: the named axis it serves, the vmap's own axis name and its size. */
interface VmapLevel {
  name: string;
  axisName: string;
  size: number;
}

interface MeshPlan {
  mesh: Mesh;
  /** name -> its mesh axes (the name's index is their row-major product, the first axis major, as in JAX) */
  axes: Map<string, string[]>;
  /** name -> elements per device (size / product of its mesh axes) */
  block: Map<string, number>;
  /** name -> the local vmap's axis name, for names whose blocks hold several elements */
  local: Map<string, string>;
  /** what a collective over each name is over: its mesh axes, then its local vmap */
  subst: Map<string, string[]>;
}

/**
 * How the names with resources map onto `mesh`, as JAX lowers xmap: a name over mesh axes (x, y) splits into blocks
 * of size / (|x| |y|) along x-major device order, and a collective over it is one over (x, y[, local vmap]). A string
 * says why the emulation runs instead (a layout this path does not take).
 */
function meshPlan(
  mesh: Mesh,
  names: readonly string[],
  sizes: ReadonlyMap<string, number>,
  resources: ReadonlyMap<string, string[]>,
): MeshPlan | string {
  const owner = new Map<string, string>();
  const plan: MeshPlan = { mesh, axes: new Map(), block: new Map(), local: new Map(), subst: new Map() };
  for (const [n, axes] of resources) {
    for (const ax of axes) {
      if (owner.has(ax))
        return `mesh axis ${JSON.stringify(ax)} is a resource of both ${JSON.stringify(owner.get(ax))} and ${JSON.stringify(n)}`;
      owner.set(ax, n);
    }
    const block = sizes.get(n)! / axes.reduce((a, ax) => a * mesh.axisSize(ax), 1);
    plan.axes.set(n, axes);
    plan.block.set(n, block);
    const local = `${n}(local block of xmap)`;
    if (block > 1) plan.local.set(n, local);
    const subst = block > 1 ? [...axes, local] : axes;
    if (subst.length !== 1 || subst[0] !== n) plan.subst.set(n, subst);
  }
  // a collective over a name must not be taken for one over a mesh axis of the same name
  const clash = mesh.axisNames.find((a) => names.includes(a) && owner.get(a) !== a);
  if (clash !== undefined)
    return `mesh axis ${JSON.stringify(clash)} has the name of a named axis it is not the only resource of`;
  return plan;
}

/**
 * xmap's nested vmaps (`inner`) as the body of a shardMap over the mesh: each device gets its block of the names
 * with resources (a single element is squeezed; a block of several is vmapped in `inner`), the collectives over
 * those names are substituted by their mesh axes (and local vmap), and outputs get the blocks back.
 */
function onDevices(
  plan: MeshPlan,
  moved: Array[],
  named: Map<string, number>[],
  names: readonly string[],
  inner: (...xs: Array[]) => Array[],
  outNamed: () => Map<string, number>[],
): Array[] {
  const lead = (has: (n: string) => boolean) => names.filter(has);
  const specOf = (ns: string[]) =>
    new PartitionSpecImpl(
      ...ns.map((n) => {
        const axes = plan.axes.get(n);
        return axes ? (axes.length === 1 ? axes[0] : axes) : null;
      }),
    );
  // positions (among an array's leading named dims) of the names whose device block is one element
  const single = (ns: string[]) => ns.map((n, i) => (plan.block.get(n) === 1 ? i : -1)).filter((i) => i >= 0);
  const inSpecs = moved.map((_, k) => specOf(lead((n) => named[k].has(n))));
  const body = (...blocks: Array[]): Array[] => {
    const xs = blocks.map((b, k) => {
      const drop = single(lead((n) => named[k].has(n)));
      return drop.length ? ops.squeeze(b, drop) : b;
    });
    const ys = plan.subst.size ? withAxisSubstitution(plan.subst, () => inner(...xs)) : inner(...xs);
    return ys.map((y, k) => {
      const add = single(lead((n) => outNamed()[k].has(n)));
      return add.length ? ops.expandDims(y, add) : y;
    });
  };
  try {
    return shardMap(body, {
      mesh: plan.mesh,
      inSpecs,
      outSpecs: () => outNamed().map((m) => specOf(lead((n) => m.has(n)))),
    })(...moved) as Array[];
  } catch (e) {
    const m = e instanceof Error ? /declared replicated over mesh axis "([^"]*)"/.exec(e.message) : null;
    const n = m ? [...plan.axes].find(([, axes]) => axes.includes(m[1]))?.[0] : undefined;
    if (n !== undefined)
      throw new Error(`xmap: an output varies over named axis ${JSON.stringify(n)} but its outAxes do not place it`);
    throw e;
  }
}
