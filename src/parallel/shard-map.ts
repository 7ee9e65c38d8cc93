/**
 * @file shardMap with JAX's semantics. Each device's block is a slice of a nested vmap over the manual mesh axes
 * (axis names bound, so collectives reduce across blocks); this single-process emulation gives JAX's results and
 * shapes and is the oracle of the per-device runtime (config spmdRuntime "devices", ./shard-map-devices.ts).
 */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { flatten, unflatten, type TreeDef } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { flattenArrays } from "../transforms/api-util.js";
import { vmapFlat } from "../transforms/vmap.js";
import { devicePut } from "./device-put.js";
import { shardedStorage } from "./device-arrays.js";
import { globalStorage } from "./global-arrays.js";
import { Mesh } from "./mesh.js";
import { NamedShardingImpl, type PartitionSpec, PartitionSpecImpl } from "./sharding.js";
import { getMesh } from "./context-mesh.js";
import { type RepeatCall, repeatOnDevices, shardMapOnDevices } from "./shard-map-devices.js";
import { installShardMapRules } from "./shard-map-rules.js";

type Spec = PartitionSpecImpl;
const JSArray = globalThis.Array;

/**
 * Broadcasts a spec prefix tree onto the leaves of a value tree (a single spec applies to a whole subtree).
 * A null spec marks its subtree static when `nullIsStatic` (JAX's in_specs None), else replicated (P()).
 */
function specsFor(fn: string, specs: unknown, tree: unknown, what: string, nullIsStatic = false): (Spec | null)[] {
  const out: (Spec | null)[] = [];
  const rec = (s: unknown, t: unknown, path: string): void => {
    const n = flatten(t)[0].length;
    if (s instanceof PartitionSpecImpl) {
      for (let i = 0; i < n; i++) out.push(s);
      return;
    }
    if (s === null || s === undefined) {
      for (let i = 0; i < n; i++) out.push(nullIsStatic ? null : new PartitionSpecImpl());
      return;
    }
    if (JSArray.isArray(s)) {
      if (!JSArray.isArray(t) || t.length !== s.length)
        throw new TypeError(
          `${fn}: ${what}${path} is a list of ${s.length} specs but the values there are ${JSArray.isArray(t) ? `a list of ${t.length}` : typeof t}; ${what} must be a prefix of the values' tree`,
        );
      s.forEach((si, i) => rec(si, t[i], `${path}[${i}]`));
      return;
    }
    if (typeof s === "object" && t && typeof t === "object" && !(t instanceof Array)) {
      for (const k of Object.keys(t).sort())
        rec((s as Record<string, unknown>)[k], (t as Record<string, unknown>)[k], `${path}.${k}`);
      return;
    }
    throw new TypeError(
      `${fn}: ${what}${path} must be a PartitionSpec (P(...))${nullIsStatic ? ", null" : ""} or a tree of them matching the values, got ${typeof s === "object" ? "an object" : JSON.stringify(s)}`,
    );
  };
  rec(specs, tree, "");
  return out;
}

/**
 * Whether y is a concrete array placed with exactly NamedSharding(mesh, spec) (the same objects: nothing to check),
 * resident on this process's devices or a global array over processes.
 */
function placedAs(y: Array, mesh: Mesh, spec: Spec): boolean {
  const s = y instanceof ArrayImpl ? y.placement : null;
  return (
    s instanceof NamedShardingImpl &&
    s.mesh === mesh &&
    s.spec === spec &&
    (shardedStorage(y as ArrayImpl) !== null || globalStorage(y) !== null)
  );
}

/** x's leaves when its structure is exactly `def` and every leaf is an Array, else null (a registered class: null). */
function leavesLike(def: TreeDef, x: unknown): Array[] | null {
  const out: Array[] = [];
  const rec = (d: TreeDef, v: unknown): boolean => {
    switch (d.kind) {
      case "leaf":
        if (!(v instanceof Array)) return false;
        out.push(v);
        return true;
      case "null":
        return v === null;
      case "undefined":
        return v === undefined;
      case "array": {
        if (!JSArray.isArray(v) || v.length !== d.children.length) return false;
        for (let i = 0; i < v.length; i++) if (!rec(d.children[i], v[i])) return false;
        return true;
      }
      case "object": {
        if (v === null || typeof v !== "object" || JSArray.isArray(v)) return false;
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) return false;
        const keys = d.aux as string[];
        if (Object.keys(v).length !== keys.length) return false;
        for (let i = 0; i < keys.length; i++)
          if (!Object.hasOwn(v, keys[i]) || !rec(d.children[i], (v as Record<string, unknown>)[keys[i]])) return false;
        return true;
      }
      default:
        return false;
    }
  };
  return rec(def, x) ? out : null;
}

/** The device path's outputs kept where already placed per their out_specs, else put there (devicePut). */
function placeOutputs(outs: unknown[], mesh: Mesh, specs: Spec[]): unknown[] {
  const placed = new JSArray<unknown>(outs.length);
  for (let k = 0; k < outs.length; k++) {
    const y = outs[k];
    placed[k] =
      !(y instanceof Array) || placedAs(y, mesh, specs[k]) ? y : devicePut(y, new NamedShardingImpl(mesh, specs[k]));
  }
  return placed;
}

/**
 * A shardMap closure's last device-path call, for the next call with the same mesh, options, argument structure and
 * avals (a monomorphic cache: spec resolution, flatten, the call-signature key and out_specs are skipped).
 */
interface LastCall extends DeviceRepeat {
  inSpecs: unknown;
  outSpecs: unknown;
  axisNames: unknown;
  def: TreeDef;
  outDef: TreeDef;
}

/** What repeats a shardMap call on the devices: its mesh, its resolved out_specs and the staged entry with its avals. */
export interface DeviceRepeat {
  readonly mesh: Mesh;
  readonly outSpecsFlat: Spec[];
  readonly again: RepeatCall;
}
/** Per shardMap closure: its latest call when that call ran on the devices, else null. */
const latestCalls = new WeakMap<object, () => DeviceRepeat | null>();

/**
 * @internal The latest call of a shardMap closure if it ran on the devices (null: none yet, or it took another path).
 * jit with shardings (gspmd.ts) repeats its partitioned call with it: that shardMap's out_specs are a function, which
 * the closure's own fast path does not trust, but gspmd's resolve to the same specs for the same staged entry.
 */
export function latestDeviceCall(sm: object): DeviceRepeat | null {
  return latestCalls.get(sm)?.() ?? null;
}

/**
 * @internal Runs a recorded device call again on flat leaves whose structure, avals and shardings the caller matched:
 * the outputs placed per its out_specs, or null when an aval or a config flag of the entry's key changed (the caller
 * then takes the full path).
 */
export function repeatDeviceCall(r: DeviceRepeat, leaves: Array[]): unknown[] | null {
  const outs = repeatOnDevices(r.again, leaves);
  return outs && placeOutputs(outs, r.mesh, r.outSpecsFlat);
}

/** Every axis a spec names must be a manual mesh axis (JAX: "must refer to an axis marked as manual"). */
function checkSpecAxes(fn: string, what: string, specs: (Spec | null)[], manual: readonly string[], mesh: Mesh): void {
  specs.forEach((s, k) => {
    if (!s) return;
    for (let d = 0; d < s.length; d++)
      for (const nm of s.names(d)) {
        if (!manual.includes(nm)) {
          const why = mesh.axisNames.includes(nm)
            ? `which is not a manual axis (axisNames: ${manual.join(", ")})`
            : `which is not an axis of ${mesh}`;
          throw new Error(`${fn}: ${what}[${k}] ${s} refers to axis ${JSON.stringify(nm)}, ${why}`);
        }
      }
  });
}

/** Whether spec `sp` splits some dimension over mesh axis `name`. */
const usesAxis = (sp: Spec | undefined, name: string) => !!sp && sp.entries.some((_, d) => sp.names(d).includes(name));

/** Moves each mesh-split part of x's dims to the front, one leading dim per used mesh axis, in mesh order. */
function splitToMesh(fn: string, x: Array, spec: Spec, mesh: Mesh, k: number): Array {
  if (spec.length > x.ndim)
    throw new Error(
      `${fn}: in_specs[${k}] ${spec} has ${spec.length} entries but the argument has rank ${x.ndim} (shape (${x.shape.join(", ")}))`,
    );
  let y = x;
  // split dim d of size N into (s_n1, ..., s_nk, N / prod)
  const shape: number[] = [];
  const meshDimPos = new Map<string, number>();
  x.shape.forEach((n, d) => {
    const names = spec.names(d);
    const parts = names.reduce((a, nm) => a * mesh.axisSize(nm), 1);
    if (n % parts !== 0)
      throw new Error(
        `${fn}: argument ${k} of shape (${x.shape.join(", ")}) dimension ${d} (size ${n}) is not divisible by ${parts}, the size of mesh axes ${names.join(", ")} in ${spec}`,
      );
    for (const nm of names) {
      meshDimPos.set(nm, shape.length);
      shape.push(mesh.axisSize(nm));
    }
    shape.push(n / parts);
  });
  y = ops.reshape(y, shape);
  const used = mesh.axisNames.filter((nm) => meshDimPos.has(nm));
  const front = used.map((nm) => meshDimPos.get(nm)!);
  const rest = [...shape.keys()].filter((i) => !front.includes(i));
  return ops.transpose(y, [...front, ...rest]);
}

/** Inverse of splitToMesh for outputs: leading dims (the used mesh axes, in mesh order) merge back into their dims. */
function mergeFromMesh(fn: string, y: Array, spec: Spec, mesh: Mesh, k: number): Array {
  const used = mesh.axisNames.filter((nm) => usesAxis(spec, nm));
  const block = y.shape.slice(used.length);
  if (spec.length > block.length)
    throw new Error(
      `${fn}: out_specs[${k}] ${spec} has ${spec.length} entries but the output block has rank ${block.length} (shape (${block.join(", ")}))`,
    );
  // target order: for each block dim d, the mesh dims of its names (in spec order), then the block dim
  const perm: number[] = [];
  const outShape: number[] = [];
  block.forEach((b, d) => {
    let n = b;
    for (const nm of spec.names(d)) {
      perm.push(used.indexOf(nm));
      n *= mesh.axisSize(nm);
    }
    perm.push(used.length + d);
    outShape.push(n);
  });
  return ops.reshape(ops.transpose(y, perm), outShape);
}

/** A prefix tree of PartitionSpecs (null/undefined: static for in_specs, replicated for out_specs). */
export type SpecTree = PartitionSpec | null | undefined | readonly SpecTree[] | { readonly [key: string]: SpecTree };

export interface ShardMapOpts {
  /** The mesh; defaults to the one set with setMesh (JAX's context mesh). */
  mesh?: Mesh;
  /** A prefix tree of PartitionSpecs over the arguments; a null entry passes that argument through unchanged (static). */
  inSpecs: SpecTree;
  /** A prefix tree of PartitionSpecs over the outputs (or a function returning one, as pmap uses). */
  outSpecs: SpecTree | (() => SpecTree);
  /** false: no replication check; an output unsharded over an axis is the first device's value along it. */
  checkVma?: boolean;
  /** The older name of checkVma. */
  checkRep?: boolean;
  /** The manual mesh axes (default: all); the others stay automatic, i.e. f sees whole data along them. */
  axisNames?: Iterable<string>;
}

// the shard_map primitive's jvp, transpose and vmap are shard_maps of the transformed body
installShardMapRules(shardMap as unknown as Parameters<typeof installShardMapRules>[0]);

/** jax.shard_map: f sees per-device blocks; collectives over mesh axis names combine them. */
export function shardMap<A extends unknown[], R>(f: (...args: A) => R, opts: ShardMapOpts): (...args: A) => R {
  const fn = "shardMap";
  if (!opts || typeof opts !== "object")
    throw new TypeError(`${fn}: expected options { mesh, inSpecs, outSpecs }, got ${String(opts)}`);
  const smForms = "shardMap(f, { mesh, inSpecs, outSpecs, axisNames, checkVma })";
  checkArity(fn, arguments, 2, smForms);
  checkOptions(fn, opts, ["mesh", "inSpecs", "outSpecs", "axisNames", "checkVma", "checkRep"], smForms);
  const checkVma = opts.checkVma ?? opts.checkRep ?? true;
  let last: LastCall | null = null;
  const wrapper = (...args: A): R => {
    const mesh = opts.mesh ?? getMesh();
    if (!(mesh instanceof Mesh)) {
      throw new TypeError(
        `${fn}: a Mesh is required: pass { mesh } (from makeMesh or new Mesh) or set one with setMesh(mesh); got ${mesh === null || mesh === undefined ? "no mesh" : String(mesh)}`,
      );
    }
    // the same call as the last one on the devices (mesh, options, structure; avals and flags checked by
    // repeatOnDevices): nothing below depends on anything else, so its checks passed already
    // (out_specs given as a function, as pmap's, are resolved on every call)
    const lc = last;
    if (
      lc &&
      lc.mesh === mesh &&
      lc.inSpecs === opts.inSpecs &&
      lc.outSpecs === opts.outSpecs &&
      typeof lc.outSpecs !== "function" &&
      lc.axisNames === opts.axisNames
    ) {
      const leaves = leavesLike(lc.def, args);
      const outs = leaves && repeatOnDevices(lc.again, leaves);
      if (outs) return unflatten(lc.outDef, placeOutputs(outs, mesh, lc.outSpecsFlat)) as R;
    }
    last = null;
    const manual = opts.axisNames === undefined ? [...mesh.axisNames] : [...new Set(opts.axisNames)];
    const unknown = manual.filter((a) => !mesh.axisNames.includes(a));
    if (unknown.length)
      throw new Error(
        `${fn}: axisNames [${manual.join(", ")}] must be a subset of the mesh axis names [${mesh.axisNames.join(", ")}]; unknown: ${unknown.join(", ")}`,
      );
    const axes = mesh.axisNames.filter((a) => manual.includes(a));
    // a bare spec is a prefix of the whole argument tuple (JAX broadcasts it to every argument)
    const inSpecs = specsFor(fn, opts.inSpecs, args, "in_specs", true);
    checkSpecAxes(fn, "in_specs", inSpecs, axes, mesh);
    const outSpecsOf = (out: unknown): Spec[] => {
      const specs = specsFor(
        fn,
        typeof opts.outSpecs === "function" ? (opts.outSpecs as () => unknown)() : opts.outSpecs,
        out,
        "out_specs",
      ) as Spec[];
      checkSpecAxes(fn, "out_specs", specs, axes, mesh);
      return specs;
    };
    // config spmdRuntime "devices": one program per device, run concurrently (null: run the emulation below); it takes
    // fully manual meshes with array arguments (checkVma false: unsharded outputs come from device 0 along the axis),
    // the emulation covers the rest
    if (axes.length === mesh.axisNames.length && inSpecs.every((sp) => sp !== null)) {
      const real = shardMapOnDevices(
        fn,
        f as (...a: never[]) => unknown,
        mesh,
        inSpecs as Spec[],
        outSpecsOf,
        args,
        (...a: unknown[]) => shardMap(f, opts)(...(a as A)),
        checkVma,
      );
      if (real) {
        const [outs, od] = flatten(real.value);
        const specs = outSpecsOf(real.value);
        last = {
          mesh,
          inSpecs: opts.inSpecs,
          outSpecs: opts.outSpecs,
          axisNames: opts.axisNames,
          def: flatten(args)[1],
          outDef: od,
          outSpecsFlat: specs,
          again: real.again,
        };
        // the device path's outputs are already placed per these specs (same mesh and spec objects): kept as they are
        return unflatten(od, placeOutputs(outs, mesh, specs)) as R;
      }
    }
    const [allLeaves, def] = flatten(args);
    const dynIdx = allLeaves.map((_, i) => i).filter((i) => inSpecs[i] !== null);
    const [leaves] = flattenArrays(
      fn,
      dynIdx.map((i) => allLeaves[i]),
      "argument",
    );
    const dynSpecs = dynIdx.map((i) => inSpecs[i]!);
    const split = leaves.map((x, k) => splitToMesh(fn, x, dynSpecs[k], mesh, k));
    let outDef: TreeDef | null = null;
    let outSpecs: Spec[] = [];
    // nested vmaps, outermost = first manual mesh axis; each binds its mesh axis name for collectives
    const level =
      (a: number) =>
      (...xs: Array[]): Array[] => {
        if (a === axes.length) {
          const full = [...allLeaves];
          dynIdx.forEach((i, k) => {
            full[i] = xs[k];
          });
          const out = f(...(unflatten(def, full) as A));
          const [ol, od] = flattenArrays(fn, out, "output");
          outDef = od;
          outSpecs = outSpecsOf(out);
          return ol;
        }
        const name = axes[a];
        const inAxes = xs.map((_, k) => (usesAxis(dynSpecs[k], name) ? 0 : null));
        return vmapOuts(level(a + 1), xs, inAxes, name, mesh.axisSize(name), () => outSpecs, checkVma);
      };
    const outs = level(0)(...split);
    const merged = outs.map((y, k) =>
      devicePut(mergeFromMesh(fn, y, outSpecs[k], mesh, k), new NamedShardingImpl(mesh, outSpecs[k])),
    );
    return unflatten(outDef!, merged) as R;
  };
  latestCalls.set(wrapper, () => last);
  return wrapper;
}

/**
 * vmap whose out axes are chosen after tracing: 0 for outputs whose spec uses this axis, else null (replicated).
 * Without the replication check (checkVma false) an unsharded output is the first member's value along the axis.
 */
function vmapOuts(
  f: (...xs: Array[]) => Array[],
  xs: Array[],
  inAxes: (number | null)[],
  name: string,
  size: number,
  specs: () => Spec[],
  checkVma: boolean,
): Array[] {
  if (!checkVma) {
    const outs = vmapFlat(f, xs, inAxes, () => 0, { size, name });
    return outs.map((y, i) => (usesAxis(specs()[i], name) ? y : ops.squeeze(ops.sliceInDim(y, 0, 1, 1, 0), [0])));
  }
  try {
    return vmapFlat(f, xs, inAxes, (i) => (usesAxis(specs()[i], name) ? 0 : null), { size, name });
  } catch (e) {
    if (e instanceof Error && /outAxes=null/.test(e.message)) {
      throw new Error(
        `shardMap: an output is declared replicated over mesh axis ${JSON.stringify(name)} by its out_specs, but it varies over that axis; use a collective (e.g. psum over ${JSON.stringify(name)}), name the axis in out_specs, or pass checkVma: false to take the first device's value`,
      );
    }
    throw e;
  }
}
