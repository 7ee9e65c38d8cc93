/**
 * @file jax.pmap as JAX implements it today: jit of a shardMap over a one-axis mesh of the first n devices, with
 * in/out axes turned into PartitionSpecs, no replication check (out_axes null takes the first device's value),
 * static broadcasted arguments closed over, and outputs carrying NamedSharding(mesh, P(..., axisName)).
 */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array } from "../core/array.js";
import type { Device } from "../core/array-impl.js";
import { flatten, type TreeDef, unflatten } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { flattenArrays } from "../transforms/api-util.js";
import { jit } from "../transforms/api.js";
import { devicePut } from "./device-put.js";
import { devices as allDevices, Mesh } from "./mesh.js";
import { shardMap } from "./shard-map.js";
import { NamedShardingImpl, PartitionSpecImpl } from "./sharding.js";

type Axes = number | null | readonly Axes[] | { readonly [k: string]: Axes };
export interface PmapOpts {
  axisName?: string;
  inAxes?: Axes;
  outAxes?: Axes;
  /** Positional arguments passed through as static JS values (numbers, strings, shapes, objects): one compile per value. */
  staticBroadcastedArgnums?: number | number[];
  devices?: readonly Device[];
  /** The expected size of the mapped axis (must match the arguments' mapped dimension). */
  axisSize?: number;
}

const JSArray = globalThis.Array;
const INTERNAL_AXIS = "_internal_pmap_axis_name";
/** Sizes of the pmaps being traced, outermost first: nested pmaps need their product of devices. */
const enclosing: number[] = [];
/** The devices of the outermost pmap being traced: nested pmaps run within them. */
let outerPool: readonly Device[] | null = null;
const isDevice = (d: unknown): d is Device => !!d && typeof d === "object" && "platform" in d && "id" in d;

/** Per-leaf axes from a prefix tree of ints/nulls (vmap's in_axes rule). */
function axesFor(fn: string, what: string, spec: Axes, tree: unknown): (number | null)[] {
  const out: (number | null)[] = [];
  const rec = (s: Axes, t: unknown): void => {
    if (s === null || typeof s === "number") {
      flatten(t)[0].forEach(() => out.push(s));
      return;
    }
    if (JSArray.isArray(s)) {
      if (!JSArray.isArray(t) || t.length !== s.length)
        throw new TypeError(
          `${fn}: ${what} ${JSON.stringify(s)} does not match the structure of the values (${JSArray.isArray(t) ? `a list of ${t.length}` : typeof t})`,
        );
      s.forEach((si, i) => rec(si, t[i]));
      return;
    }
    if (typeof s !== "object" || typeof t !== "object" || t === null)
      throw new TypeError(
        `${fn}: ${what} must be an int, null or a tree of them matching the values, got ${JSON.stringify(s)}`,
      );
    for (const k of Object.keys(t).sort())
      rec((s as Record<string, Axes>)[k] ?? null, (t as Record<string, unknown>)[k]);
  };
  rec(spec, tree);
  return out;
}
const specOf = (name: string, a: number | null) =>
  a === null ? new PartitionSpecImpl() : new PartitionSpecImpl(...JSArray<null>(a).fill(null), name);

/**
 * jax.pmap(f, axisName?, opts): maps f over the leading (or inAxes) dimension, one device per element.
 * `pmap(f, "i")` and `pmap(f, { axisName: "i" })` are the same.
 */
export function pmap<A extends unknown[], R>(
  f: (...args: A) => R,
  axisNameOrOpts?: string | PmapOpts,
  more: PmapOpts = {},
): (...args: A) => R {
  const fn = "pmap";
  const pmapKeys = ["axisName", "inAxes", "outAxes", "staticBroadcastedArgnums", "devices", "axisSize"];
  const pmapForms =
    "pmap(f, axisName?, { inAxes, outAxes, staticBroadcastedArgnums, devices, axisSize }) or pmap(f, { axisName, inAxes, ... })";
  checkArity(fn, arguments, 3, pmapForms);
  if (typeof axisNameOrOpts !== "string") checkOptions(fn, axisNameOrOpts, pmapKeys, pmapForms);
  checkOptions(fn, more, pmapKeys, pmapForms);
  const opts: PmapOpts =
    typeof axisNameOrOpts === "string" ? { ...more, axisName: axisNameOrOpts } : { ...(axisNameOrOpts ?? {}), ...more };
  if (opts.devices !== undefined) {
    if (!JSArray.isArray(opts.devices) || opts.devices.length === 0)
      throw new Error(`${fn}: the 'devices' option must be a non-empty list of devices (from devices()), or omitted`);
    const known = allDevices();
    opts.devices.forEach((d, i) => {
      if (!isDevice(d) || !known.some((k) => k.id === d.id))
        throw new TypeError(
          `${fn}: devices[${i}] is ${isDevice(d) ? `${d}, which is not one of devices()` : `${typeof d} ${JSON.stringify(d)}`}; expected Device objects from devices()`,
        );
    });
  }
  const name = opts.axisName ?? INTERNAL_AXIS;
  const statics =
    opts.staticBroadcastedArgnums === undefined
      ? []
      : typeof opts.staticBroadcastedArgnums === "number"
        ? [opts.staticBroadcastedArgnums]
        : [...opts.staticBroadcastedArgnums];
  const pool = (): readonly Device[] => opts.devices ?? allDevices();
  let meshMemo: Mesh | null = null;
  /** Validates the call and finds the mapped size (eagerly on every call, so errors do not depend on the jit cache). */
  const prepare = (args: unknown[], checkNesting: boolean) => {
    const n = args.length;
    const stat = new Set(statics.map((i) => (i < 0 ? i + n : i)));
    for (const i of stat)
      if (!Number.isInteger(i) || i < 0 || i >= n)
        throw new RangeError(
          `${fn}: staticBroadcastedArgnums ${JSON.stringify(statics)} is out of range for a call with ${n} positional arguments`,
        );
    const dynPos = args.map((_, i) => i).filter((i) => !stat.has(i));
    const dyn = dynPos.map((i) => args[i]);
    // inAxes given for every positional argument (statics included) keep only the dynamic ones, as JAX does
    const inSpec: Axes =
      opts.inAxes === undefined
        ? 0
        : JSArray.isArray(opts.inAxes) && opts.inAxes.length === n && n !== dyn.length
          ? dynPos.map((i) => (opts.inAxes as readonly Axes[])[i])
          : opts.inAxes;
    const [leaves, def] = flattenArrays(fn, dyn, "argument");
    const inAxes = axesFor(fn, "inAxes", inSpec, dyn).map((a, k) => (a !== null && a < 0 ? a + leaves[k].ndim : a));
    inAxes.forEach((a, k) => {
      if (a !== null && (!Number.isInteger(a) || a < 0 || a >= leaves[k].ndim))
        throw new RangeError(
          `${fn}: inAxes ${a} is out of range for argument leaf ${k} of shape (${leaves[k].shape.join(", ")})`,
        );
    });
    const first = inAxes.findIndex((a) => a !== null);
    if (first < 0) throw new Error(`${fn}: requires at least one argument with a mapped axis (inAxes are all null)`);
    const size = leaves[first].shape[inAxes[first]!];
    leaves.forEach((l, k) => {
      const a = inAxes[k];
      if (a !== null && l.shape[a] !== size)
        throw new Error(
          `${fn}: inconsistent sizes of the mapped axes: argument leaf ${first} has ${size} along axis ${inAxes[first]}, leaf ${k} of shape (${l.shape.join(", ")}) has ${l.shape[a]} along axis ${a}`,
        );
    });
    if (opts.axisSize !== undefined && opts.axisSize !== size)
      throw new Error(
        `${fn}: specified axisSize ${opts.axisSize} doesn't match the received axis size ${size} (dimension ${inAxes[first]} of argument leaf ${first}, shape (${leaves[first].shape.join(", ")}))`,
      );
    const p = checkNesting && outerPool ? outerPool : pool();
    const need = checkNesting ? enclosing.reduce((a, b) => a * b, size) : size;
    if (need > p.length) {
      throw new Error(
        checkNesting && enclosing.length
          ? `${fn}: pmapped function requires ${need} devices to run due to nested pmaps (sizes ${[...enclosing, size].join(" x ")}), but only ${p.length} are available`
          : `${fn}: compiling computation that requires ${size} logical devices, but only ${p.length} devices are available (set config numCpuDevices or JAXTS_NUM_CPU_DEVICES, or map fewer elements)`,
      );
    }
    // one Mesh object while the devices are the same ones: the device path keys its per-call plan on it
    const m = meshMemo;
    if (!m || m.size !== size || m.flatDevices.some((d, i) => d !== p[i]))
      meshMemo = new Mesh([...p.slice(0, size)], [name]);
    return { dynPos, leaves, def, inAxes, size, mesh: meshMemo! };
  };
  const outAxesOf = (out: unknown) => axesFor(fn, "outAxes", opts.outAxes === undefined ? 0 : opts.outAxes, out);
  // one trace per static value (jit keys on them); inside, shardMap over the mesh of the first `size` devices
  const run = jit(
    (...args: unknown[]): unknown => {
      const { dynPos, leaves, def, inAxes, mesh } = prepare(args, false);
      let outTree: unknown = null;
      let pos: (number | null)[] = [];
      const body = (...ls: Array[]): Array[] => {
        const blocks = ls.map((l, k) => (inAxes[k] === null ? l : ops.squeeze(l, [inAxes[k]!])));
        const full = [...args];
        (unflatten(def, blocks) as unknown[]).forEach((v, k) => {
          full[dynPos[k]] = v;
        });
        const out = f(...(full as A));
        const [ol, od] = flattenArrays(fn, out, "output");
        outTree = od;
        const oa = outAxesOf(out);
        pos = ol.map((y, k) => {
          const a = oa[k];
          if (a !== null && (!Number.isInteger(a) || a < -(y.ndim + 1) || a > y.ndim))
            throw new RangeError(
              `${fn}: outAxes ${a} is out of range for output leaf ${k} of shape (${y.shape.join(", ")})`,
            );
          return a === null ? null : a < 0 ? a + y.ndim + 1 : a;
        });
        return ol.map((y, k) => (pos[k] === null ? y : ops.expandDims(y, [pos[k]!])));
      };
      const flatOut = shardMap(body, {
        mesh,
        inSpecs: leaves.map((_, k) => specOf(name, inAxes[k])),
        checkVma: false,
        outSpecs: () => pos.map((a) => specOf(name, a)),
      })(...leaves);
      return unflatten(outTree as unknown as TreeDef, flatOut);
    },
    { staticArgnums: statics },
  );
  return (...args: A): R => {
    const { size, mesh } = prepare(args, true);
    enclosing.push(size);
    const savedPool = outerPool;
    outerPool ??= pool();
    let out: unknown;
    try {
      out = run(...args);
    } finally {
      enclosing.pop();
      outerPool = savedPool;
    }
    // outputs carry their sharding: NamedSharding(mesh, P(None x outAxis, axisName)) or replicated for outAxes null
    const [ls, d] = flatten(out);
    const oa = outAxesOf(out);
    return unflatten(
      d,
      ls.map((l, k) =>
        l instanceof Array
          ? devicePut(
              l,
              new NamedShardingImpl(mesh, specOf(name, oa[k] !== null && oa[k]! < 0 ? oa[k]! + l.ndim : oa[k])),
            )
          : l,
      ),
    ) as R;
  };
}
