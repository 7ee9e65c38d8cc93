/**
 * @file jit with shardings (GSPMD): the global jaxpr of a jitted function is partitioned (./gspmd-rules.ts) into one
 * per-device program with the collectives it needs, which runs as a shard_map (the device runtime or the emulation).
 */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { config } from "../core/config.js";
import type { ShapedArray } from "../core/aval.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { ClosedJaxpr, Jaxpr } from "../core/jaxpr.js";
import { withNamedAxis } from "../core/trace.js";
import { flatten, type TreeDef, unflatten } from "../core/tree.js";
import { type Lowered, registerShardedJit, type ShardedJitCall, type ShardedJitRequest } from "../transforms/api.js";
import { type CostAnalysis, costOfJaxpr } from "./cost-model.js";
import { type Dims, Partitioner, replicatedDims, type SV } from "./gspmd-rules.js";
import type { Mesh } from "./mesh.js";
import { type DeviceRepeat, latestDeviceCall, repeatDeviceCall, shardMap } from "./shard-map.js";
import { blockAvals } from "./shard-map-devices.js";
import { NamedShardingImpl, PartitionSpecImpl } from "./sharding.js";

const JSArray = globalThis.Array;
const isNamed = (s: unknown): s is NamedShardingImpl => s instanceof NamedShardingImpl;
const meshKey = (m: Mesh) => `${m}|${m.deviceIds.join(",")}`;

/** The sharding an array carries (a NamedSharding it was placed with), else null. */
function carried(x: unknown): NamedShardingImpl | null {
  return x instanceof ArrayImpl && isNamed(x.placement) ? x.placement : null;
}

/** Broadcasts a prefix tree of shardings onto the leaves of `tree` (null/undefined: unspecified for the subtree). */
function prefixLeaves(fn: string, what: string, prefix: unknown, tree: unknown): (NamedShardingImpl | null)[] {
  const out: (NamedShardingImpl | null)[] = [];
  const rec = (s: unknown, t: unknown, path: string): void => {
    const n = flatten(t)[0].length;
    if (s === null || s === undefined || isNamed(s) || (typeof s === "object" && "device" in s && "deviceSet" in s)) {
      for (let i = 0; i < n; i++) out.push(isNamed(s) ? s : null);
      return;
    }
    if (JSArray.isArray(s) && JSArray.isArray(t) && s.length === t.length) {
      s.forEach((si, i) => rec(si, t[i], `${path}[${i}]`));
      return;
    }
    if (typeof s === "object" && !JSArray.isArray(s) && t && typeof t === "object" && !(t instanceof Array)) {
      for (const k of Object.keys(t).sort())
        rec((s as Record<string, unknown>)[k], (t as Record<string, unknown>)[k], `${path}.${k}`);
      return;
    }
    throw new TypeError(
      `${fn}: ${what}${path} must be a NamedSharding, null or a tree of them that is a prefix of the ${what === "inShardings" ? "arguments" : "outputs"}, got ${JSArray.isArray(s) ? `a list of ${s.length}` : typeof s}${JSArray.isArray(t) ? ` where the values are a list of ${t.length}` : ""}`,
    );
  };
  rec(prefix, tree, "");
  return out;
}

const toDims = (s: NamedShardingImpl | null, rank: number): Dims =>
  s ? globalThis.Array.from({ length: rank }, (_, d) => s.spec.names(d)) : replicatedDims(rank);
function toSpec(dims: Dims): PartitionSpecImpl {
  const e = dims.map((t) => (t.length === 0 ? null : t.length === 1 ? t[0] : [...t]));
  while (e.length && e[e.length - 1] === null) e.pop();
  return new PartitionSpecImpl(...e);
}

/** One partitioned call signature of a jitted function. */
interface Entry {
  mesh: Mesh;
  inSpecs: PartitionSpecImpl[];
  jaxpr: Jaxpr;
  consts: Array[];
  outShardings: (NamedShardingImpl | null)[];
  /** The output specs, known once the per-device function has run (deterministic: fixed by the avals and specs). */
  outSpecs: PartitionSpecImpl[];
  perDevice: (...xs: Array[]) => Array[];
  run: (...xs: Array[]) => Array[];
  /** The shardMap run() calls (its latest device call is what a repeat of this signature runs again). */
  sm: object | null;
  avals: ShapedArray[];
}
const entries = new WeakMap<object, Map<string, Entry | null>>();

/** Whether a jaxpr already holds manual SPMD code (a shard_map, or collectives over bound axes): jit leaves it whole. */
function manual(j: Jaxpr): boolean {
  return j.eqns.some(
    (e) =>
      e.primitive.collective ||
      e.primitive.name === "shard_map" ||
      Object.values(e.params).some((p) =>
        p instanceof ClosedJaxpr ? manual(p.jaxpr) : p instanceof Jaxpr && manual(p),
      ),
  );
}

/** The partitioned call signature of a call, or null when nothing in it is sharded over more than one device. */
function plan(req: ShardedJitRequest): Entry | null {
  return planWith(req, prefixLeaves(`jit(${req.name})`, "inShardings", req.opts.inShardings, req.dyn));
}
/** plan() given the call's in shardings per leaf (null: unspecified, the leaf's own sharding decides). */
function planWith(req: ShardedJitRequest, inS: (NamedShardingImpl | null)[]): Entry | null {
  const fn = `jit(${req.name})`;
  const given = inS.map((s, i) => s ?? carried(req.leaves[i]));
  const named = given.filter(isNamed);
  const outPrefix = req.opts.outShardings;
  const outNamed = outPrefix === undefined || outPrefix === null ? [] : flatten(outPrefix, isNamed)[0].filter(isNamed);
  const mesh = [...named, ...outNamed].find((s) => s.mesh.size > 1)?.mesh ?? (req.constraintMesh as Mesh | undefined);
  if (!mesh) return null;
  for (const [k, s] of given.entries()) {
    if (s && meshKey(s.mesh) !== meshKey(mesh)) {
      if (inS[k])
        throw new Error(
          `${fn}: inShardings leaf ${k} is over ${s.mesh} but others are over ${mesh}; one jit runs over one mesh`,
        );
      given[k] = null; // an argument placed elsewhere is moved onto the mesh replicated
    }
  }
  const inSpecs = given.map((s, k) => {
    s?.shardShape(req.leaves[k].shape);
    return toSpec(toDims(s, req.leaves[k].ndim));
  });
  // the runtime changes the trace (the emulation stages a shardMap as vmaps, the devices as a shard_map equation)
  const key = `${req.key}#${config.spmdRuntime}#${meshKey(mesh)}#${inSpecs.map(String).join(";")}`;
  let perFn = entries.get(req.owner);
  if (!perFn) entries.set(req.owner, (perFn = new Map()));
  const hit = perFn.get(key);
  if (hit !== undefined) return hit;
  const avals = req.leaves.map((l) => l.aval);
  const { jaxpr, consts } = traceToJaxpr(req.flatF, avals, `jit_${req.name}`);
  // manual SPMD code, or every argument replicated with no out sharding or constraint: the ordinary jit runs it
  const replicated =
    inSpecs.every((s) => s.length === 0) &&
    outNamed.length === 0 &&
    !jaxpr.eqns.some((e) => e.primitive.name === "sharding_constraint");
  if (replicated || manual(jaxpr)) {
    perFn.set(key, null);
    return null;
  }
  const outDef = req.outDef();
  const outShardings =
    outPrefix === undefined || outPrefix === null
      ? jaxpr.outvars.map(() => null)
      : prefixLeaves(
          fn,
          "outShardings",
          outPrefix,
          unflatten(
            outDef as TreeDef,
            jaxpr.outvars.map(() => 0),
          ),
        );
  outShardings.forEach((s, k) => {
    if (s && meshKey(s.mesh) !== meshKey(mesh))
      throw new Error(`${fn}: outShardings leaf ${k} is over ${s.mesh} but the computation runs over ${mesh}`);
    s?.shardShape(jaxpr.outvars[k].aval.shape);
  });
  const e = newEntry(mesh, inSpecs, given, jaxpr, consts, outShardings, avals);
  perFn.set(key, e);
  return e;
}

/**
 * A partitioned signature's entry. Its closures live in this scope, apart from plan()'s: a closure there reads the
 * request, and closures of one scope share its context, so the entry would keep the first call's arguments alive.
 */
function newEntry(
  mesh: Mesh,
  inSpecs: PartitionSpecImpl[],
  given: (NamedShardingImpl | null)[],
  jaxpr: Jaxpr,
  consts: Array[],
  outShardings: (NamedShardingImpl | null)[],
  avals: ShapedArray[],
): Entry {
  const P = new Partitioner(mesh);
  const e: Entry = {
    mesh,
    inSpecs,
    jaxpr,
    consts,
    outShardings,
    outSpecs: [],
    avals,
    perDevice: (...xs: Array[]): Array[] => {
      const ins: SV[] = xs.map((x, k) => ({
        x,
        shape: [...avals[k].shape],
        dims: toDims(given[k], avals[k].ndim),
        partial: [],
      }));
      const outs = P.run(jaxpr, consts, ins).map((v, k) => {
        const want = outShardings[k];
        if (want) return P.reshard(v, toDims(want, v.shape.length));
        // unconstrained: keep the propagated sharding; a partial sum is reduced (all-reduce)
        return P.resolve(v);
      });
      e.outSpecs = outs.map((v) => toSpec(v.dims));
      return outs.map((v) => v.x);
    },
    run: (...xs) => xs,
    sm: null,
  };
  const sm = shardMap(e.perDevice, { mesh, inSpecs: e.inSpecs, outSpecs: () => e.outSpecs, checkVma: false });
  e.sm = sm;
  e.run = (...xs: Array[]) => sm(...xs);
  return e;
}

/** The per-device program of an entry: its jaxpr at block shapes with every mesh axis bound. */
function perDeviceJaxpr(e: Entry): Jaxpr {
  const bAvals = blockAvals(e.mesh, e.inSpecs, e.avals);
  const bound = e.mesh.axisNames.reduceRight<() => Jaxpr>(
    (inner, name, a) => () => withNamedAxis({ name, size: e.mesh.dims[a] }, inner),
    () => traceToJaxpr(e.perDevice, bAvals, "spmd").jaxpr,
  );
  return bound();
}

/**
 * The per-device program of a global jaxpr partitioned at the given input shardings (outputs brought to `outTargets`,
 * null: the propagated sharding with partial sums reduced), traced at block shapes with every mesh axis bound, with
 * its cost and the output shardings. autoShard prices its candidate plans with it.
 */
export function partitionedProgram(
  mesh: Mesh,
  cj: ClosedJaxpr,
  inDims: Dims[],
  outTargets: (Dims | null)[],
): { jaxpr: Jaxpr; cost: CostAnalysis; outDims: Dims[] } {
  const P = new Partitioner(mesh);
  const avals = cj.jaxpr.invars.map((v) => v.aval);
  let outDims: Dims[] = [];
  const body = (...xs: Array[]): Array[] => {
    const ins: SV[] = xs.map((x, k) => ({ x, shape: [...avals[k].shape], dims: inDims[k], partial: [] }));
    const outs = P.run(cj.jaxpr, cj.consts, ins).map((v, k) => {
      const t = outTargets[k];
      return t ? P.reshard(v, t) : P.resolve(v);
    });
    outDims = outs.map((v) => v.dims);
    return outs.map((v) => v.x);
  };
  const bAvals = blockAvals(mesh, inDims.map(toSpec), avals);
  const bound = mesh.axisNames.reduceRight<() => Jaxpr>(
    (inner, name, a) => () => withNamedAxis({ name, size: mesh.dims[a] }, inner),
    () => traceToJaxpr(body, bAvals, "spmd").jaxpr,
  );
  const jaxpr = bound();
  return { jaxpr, cost: costOfJaxpr(jaxpr), outDims };
}

/** One device's program as text: the per-device jaxpr, then its collectives with axes and bytes. */
function programText(name: string, e: Entry, j: Jaxpr, cost: CostAnalysis): string {
  const ins = e.inSpecs.map((s, k) => `  in ${k}: ${e.avals[k].str()} ${s}`).join("\n");
  const outs = e.outSpecs.map((s, k) => `  out ${k}: ${e.jaxpr.outvars[k].aval.str()} ${s}`).join("\n");
  const coll = cost.collectives.length
    ? cost.collectives
        .map(
          (c) =>
            `  ${c.kind} axes=(${c.axes.join(", ")}) bytes=${c.bytes}${c.within ? ` in ${c.within.join(" > ")}` : ""}`,
        )
        .join("\n")
    : "  (none)";
  return `module @jit_${name} (one device of ${e.mesh})\n${ins}\n${outs}\n${j.toString()}\ncollectives:\n${coll}\nflops=${cost.flops} bytesAccessed=${cost.bytesAccessed} peakBytesPerDevice=${cost.peakBytesPerDevice}`;
}

/**
 * A partitioned jit call that ran on the devices, for api-jit's per-call fast path (which matched the argument
 * structure and the leaves' avals against the same call): the options it read, the sharding each leaf carried where
 * its inShardings entry was unspecified (undefined: specified; that leaf's own sharding then changes nothing in the
 * plan), and the shardMap device call to run again. It holds no argument.
 */
interface Repeat {
  opts: ShardedJitRequest["opts"];
  inShardings: unknown;
  outShardings: unknown;
  carriedAt: (NamedShardingImpl | null | undefined)[];
  dev: DeviceRepeat;
}
/** The same carried sharding as far as plan() reads it: the same mesh and the same spec. */
function sameCarried(a: NamedShardingImpl | null, b: NamedShardingImpl | null): boolean {
  if (a === b) return true;
  return !!a && !!b && a.mesh === b.mesh && (a.spec === b.spec || String(a.spec) === String(b.spec));
}
let repeats = 0;
/** @internal How many jit calls with shardings repeated their last partitioned call (the fast path), for tests. */
export function gspmdRepeatCount(): number {
  return repeats;
}

/** Per traced program: the mesh of its first top-level sharding constraint (null: none over several devices). */
const constrainedMesh = new WeakMap<Jaxpr, Mesh | null>();

registerShardedJit({
  anySharded(args: unknown[]): boolean {
    return flatten(args)[0].some((x) => {
      const s = carried(x);
      return !!s && s.mesh.size > 1;
    });
  },
  call(req: ShardedJitRequest): ShardedJitCall | null {
    const inS = prefixLeaves(`jit(${req.name})`, "inShardings", req.opts.inShardings, req.dyn);
    const e = planWith(req, inS);
    if (!e) return null;
    const outs = e.run(...req.leaves);
    // the call ran on the devices: what a repeat with the same options, avals and shardings may run again
    const dev = e.sm && !req.constraintMesh ? latestDeviceCall(e.sm) : null;
    const again: Repeat | null = dev && {
      opts: req.opts,
      inShardings: req.opts.inShardings,
      outShardings: req.opts.outShardings,
      carriedAt: inS.map((s, k) => (s ? undefined : carried(req.leaves[k]))),
      dev,
    };
    return { outs, again };
  },
  repeat(again: object, leaves: Array[]): Array[] | null {
    const r = again as Repeat;
    if (r.opts.inShardings !== r.inShardings || r.opts.outShardings !== r.outShardings) return null;
    if (leaves.length !== r.carriedAt.length) return null;
    for (let k = 0; k < leaves.length; k++) {
      const x = leaves[k];
      // a disposed (or donated) argument: the full path raises its error
      if (!(x instanceof ArrayImpl) || x.isDisposed) return null;
      const was = r.carriedAt[k];
      if (was !== undefined && !sameCarried(carried(x), was)) return null;
    }
    const outs = repeatDeviceCall(r.dev, leaves) as Array[] | null;
    if (outs) repeats++;
    return outs;
  },
  constraintMesh(jaxpr: Jaxpr): Mesh | null {
    let m = constrainedMesh.get(jaxpr);
    if (m === undefined) {
      const eqn = jaxpr.eqns.find((e) => e.primitive.name === "sharding_constraint" && isNamed(e.params.sharding));
      const mesh = eqn ? (eqn.params.sharding as NamedShardingImpl).mesh : null;
      constrainedMesh.set(jaxpr, (m = mesh && mesh.size > 1 ? mesh : null));
    }
    return m;
  },
  lower(req: ShardedJitRequest): Lowered | null {
    const e = plan(req);
    if (!e) return null;
    let dev: { j: Jaxpr; cost: CostAnalysis } | null = null;
    const device = () => {
      if (!dev) {
        const j = perDeviceJaxpr(e);
        dev = { j, cost: costOfJaxpr(j) };
      }
      return dev;
    };
    const global = () => `module @jit_${req.name} (global, over ${e.mesh})\n${e.jaxpr.toString()}`;
    return {
      asText: global,
      jaxpr: new ClosedJaxpr(e.jaxpr, e.consts),
      compile: () => ({
        call: (...a: unknown[]) => {
          const [xs] = flatten(a);
          return e.run(...(xs as Array[]));
        },
        asText: () => programText(req.name, e, device().j, device().cost),
        costAnalysis: () => device().cost,
      }),
    };
  },
});
