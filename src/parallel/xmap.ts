/**
 * @file jax.xmap: a named-axis map. Arguments name some of their dimensions (["batch", "...", "model"] or { 0: "batch" });
 * f sees the arrays without those dimensions and can run collectives over the names; outAxes put the named
 * dimensions back. Runs as nested named vmaps (one per axis name); axisResources are validated against the mesh.
 * On the device runtime (config spmdRuntime "devices", or "auto" with the addon), named axes whose axisResources give them one mesh axis of their size run as a
 * shardMap over that mesh (its axis renamed to the named axis, one element per device); the other names stay vmaps
 * inside the per-device body. Other resource layouts run the emulation.
 */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array } from "../core/array.js";
import { resolvedSpmdRuntime } from "../runtime/index.js";
import { spmdFallbackNote } from "../runtime/spmd-runtime.js";
import { flatten, unflatten, type TreeDef } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { flattenArrays } from "../transforms/api-util.js";
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
    for (const [n, r] of Object.entries(opts.axisResources ?? {})) {
      if (!mesh)
        throw new Error(
          `${fn}: axisResources map ${JSON.stringify(n)} to mesh axes but no mesh is set (pass { mesh } or call setMesh)`,
        );
      for (const ax of typeof r === "string" ? [r] : r)
        if (!mesh.axisNames.includes(ax))
          throw new Error(
            `${fn}: axis resource ${JSON.stringify(ax)} for ${JSON.stringify(n)} is not an axis of ${mesh}`,
          );
    }
    // named dims first, in the global name order
    const moved = leaves.map((x, k) => {
      const front = names.filter((n) => named[k].has(n)).map((n) => named[k].get(n)!);
      return ops.transpose(x, [...front, ...[...x.shape.keys()].filter((d) => !front.includes(d))]);
    });
    let outDef: TreeDef | null = null;
    let outEntries: AxisSpecEntry[] = [];
    let outNamed: Map<string, number>[] = [];
    // the names mapped onto mesh axes on the device runtime (empty: all names are vmaps)
    const onMesh =
      resolvedSpmdRuntime() === "devices" && mesh ? meshPlan(mesh, names, sizes, opts.axisResources ?? {}) : null;
    if (!onMesh && mesh && Object.keys(opts.axisResources ?? {}).length && resolvedSpmdRuntime() === "devices")
      spmdFallbackNote(
        "xmap",
        "its axisResources do not map each named axis to one mesh axis of its size (or a mesh axis shares a name)",
      );
    const vmapped = onMesh ? names.filter((n) => !onMesh.names.includes(n)) : names;
    const level =
      (a: number) =>
      (...xs: Array[]): Array[] => {
        if (a === vmapped.length) {
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
        const n = vmapped[a];
        const inDims = xs.map((_, k) => (named[k].has(n) ? 0 : null));
        try {
          return vmapFlat(level(a + 1), xs, inDims, (i) => (outNamed[i]?.has(n) ? 0 : null), {
            size: sizes.get(n)!,
            name: n,
          });
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

interface MeshPlan {
  mesh: Mesh;
  names: string[];
}

/**
 * The mesh to run on: every axis with a resource renamed to the xmap name it serves (one mesh axis per name, of the
 * named axis's size); null when the resources do not have that layout (the emulation runs).
 */
function meshPlan(
  mesh: Mesh,
  names: readonly string[],
  sizes: ReadonlyMap<string, number>,
  resources: Readonly<Record<string, string | string[]>>,
): MeshPlan | null {
  const rename = new Map<string, string>();
  for (const [n, r] of Object.entries(resources)) {
    const axes = typeof r === "string" ? [r] : r;
    if (!names.includes(n) || axes.length !== 1 || rename.has(axes[0]) || mesh.axisSize(axes[0]) !== sizes.get(n))
      return null;
    rename.set(axes[0], n);
  }
  if (!rename.size) return null;
  const axisNames = mesh.axisNames.map((a) => rename.get(a) ?? a);
  if (new Set(axisNames).size !== axisNames.length || mesh.axisNames.some((a) => !rename.has(a) && names.includes(a)))
    return null;
  return { mesh: new Mesh(mesh.devices, axisNames), names: [...rename.values()] };
}

/**
 * xmap's nested vmaps (`inner`, over the names that stay vmaps) as the body of a shardMap over the plan's mesh: each
 * device gets element i of the mapped names (a block of size 1 there, squeezed), and outputs get it back.
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
  const specOf = (ns: string[]) => new PartitionSpecImpl(...ns.map((n) => (plan.names.includes(n) ? n : null)));
  const inSpecs = moved.map((_, k) => specOf(lead((n) => named[k].has(n))));
  const body = (...blocks: Array[]): Array[] => {
    const xs = blocks.map((b, k) => {
      const ns = lead((n) => named[k].has(n));
      const drop = ns.map((n, i) => (plan.names.includes(n) ? i : -1)).filter((i) => i >= 0);
      return drop.length ? ops.squeeze(b, drop) : b;
    });
    // outputs lead with their vmapped names (in name order); the mesh-mapped ones go back as size-1 dims
    return inner(...xs).map((y, k) => {
      const ns = lead((n) => outNamed()[k].has(n));
      const add = ns.map((n, i) => (plan.names.includes(n) ? i : -1)).filter((i) => i >= 0);
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
    const m = e instanceof Error ? /declared replicated over mesh axis ("[^"]*")/.exec(e.message) : null;
    if (m) throw new Error(`xmap: an output varies over named axis ${m[1]} but its outAxes do not place it`);
    throw e;
  }
}
