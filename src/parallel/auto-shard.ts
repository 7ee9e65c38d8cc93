/**
 * @file autoShard(f, mesh, ...exampleArgs): an automatic parallelism planner (beyond JAX). It traces f, tries data,
 * tensor (Megatron), data x tensor and ZeRO/FSDP shardings of its inputs (then refines leaf by leaf), estimates each
 * with an analytic per-device model of compute, communication and memory, and returns the fastest plan that fits.
 */
import { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { checkOptions, isPlainObject } from "../core/check-args.js";
import { type DType, itemsize } from "../core/dtype.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { ClosedJaxpr, Jaxpr } from "../core/jaxpr.js";
import type { PyTree } from "../core/pytree-types.js";
import { flatten, leafPaths, unflatten, type TreeDef } from "../core/tree.js";
import { flattenArrays } from "../transforms/api-util.js";
import { ShapeDtypeStruct } from "../transforms/api.js";
import {
  type CollectiveEstimate,
  type CollectiveKind,
  type MachineModel,
  collectiveSeconds,
  eqnFlops,
  eqnSeconds,
  machineFrom,
} from "./auto-shard-cost.js";
import { partitionedProgram } from "./gspmd.js";
import {
  type ArgRole,
  type Candidate,
  type LeafInfo,
  type Sh,
  familyCandidates,
  leafLocalElems,
  leafOptions,
  megatronRoles,
} from "./auto-shard-candidates.js";
import { Mesh } from "./mesh.js";
import { NamedShardingImpl, PartitionSpecImpl, type SpecEntry } from "./sharding.js";

export type { ArgRole } from "./auto-shard-candidates.js";
export type { CollectiveEstimate, MachineModel } from "./auto-shard-cost.js";

/** autoShard's options (pass them in place of the mesh: `autoShard(f, { mesh, ... }, ...args)`). */
export interface AutoShardOpts {
  mesh: Mesh;
  /** One role per positional argument (default: the first is "params", the others "data"; a lone argument "data"). */
  argRoles?: readonly ArgRole[];
  /** Per-device memory budget: plans whose estimated peak exceeds it are rejected. */
  memoryLimitBytes?: number;
  /** Parameter-sized optimizer buffers kept per parameter, sharded like it (SGD 0, momentum 1, Adam 2); default 0. */
  optimizerStateFactor?: number;
  /** Machine constants overriding the calibrated defaults (see calibrateAutoShard). */
  machine?: Partial<MachineModel>;
  /** Improve the best family plan leaf by leaf (coordinate descent over each leaf's legal specs); default true. */
  refine?: boolean;
}

/** The per-device estimate of one plan. */
export interface AutoShardEstimate {
  /** computeSeconds + commSeconds (no overlap assumed). */
  seconds: number;
  computeSeconds: number;
  commSeconds: number;
  /** FLOPs one device runs. */
  flops: number;
  /** Inputs + optimizer state + intermediates live at the peak, on one device. */
  peakBytesPerDevice: number;
  collectives: CollectiveEstimate[];
}

export interface AutoShardPlan {
  /** Which family the plan comes from (e.g. `data parallel over "data"`), "+ refined" when leaf search changed it. */
  strategy: string;
  /** NamedShardings with the structure of the arguments (a list with one tree per positional argument). */
  inShardings: PyTree<NamedShardingImpl>[];
  /** NamedShardings with the structure of f's output. */
  outShardings: PyTree<NamedShardingImpl>;
  estimate: AutoShardEstimate;
}

export interface AutoShardResult extends AutoShardPlan {
  /** The other plans tried, with why each lost (slower, or over the memory limit). */
  rejected: (AutoShardPlan & { reason: string })[];
}

const OPTS = ["mesh", "argRoles", "memoryLimitBytes", "optimizerStateFactor", "machine", "refine"];
const FORMS =
  "autoShard(f, mesh, ...exampleArgs) or autoShard(f, { mesh, argRoles, memoryLimitBytes, ... }, ...exampleArgs)";

/** One traced program and everything a plan's estimate needs. */
interface Problem {
  cj: ClosedJaxpr;
  outTree: TreeDef;
  argTree: TreeDef;
  leaves: LeafInfo[];
  mesh: Mesh;
  machine: MachineModel;
  limit: number;
  optFactor: number;
  size: (axes: string[]) => number;
  /** Output index -> the parameter leaf it mirrors (gradients, updated parameters) or -1. */
  mirror: number[];
}

/**
 * Chooses shardings for f's inputs and outputs on `mesh` (or `{ mesh, ...options }`) from example arguments (arrays
 * or ShapeDtypeStructs, in pytrees): tries replicated, data parallel, Megatron tensor parallel, data x tensor and
 * ZeRO/FSDP plans over every split of the mesh axes, estimates each per device (compute roofline, alpha-beta
 * collectives, peak memory), refines the best leaf by leaf and returns it with its estimate and the rejected plans.
 * Apply it with `devicePut(args, inShardings)` and `jit(f, { inShardings, outShardings })`.
 */
export function autoShard(
  f: (...args: never[]) => unknown,
  meshOrOpts: Mesh | AutoShardOpts,
  ...exampleArgs: unknown[]
): AutoShardResult {
  const fn = "autoShard";
  if (typeof f !== "function") throw new TypeError(`${fn}: f must be a function, got ${typeof f}; form: ${FORMS}`);
  const opts: AutoShardOpts =
    meshOrOpts instanceof Mesh ? { mesh: meshOrOpts } : (meshOrOpts as AutoShardOpts | undefined)!;
  if (!(meshOrOpts instanceof Mesh)) {
    if (!isPlainObject(meshOrOpts))
      throw new TypeError(`${fn}: the second argument must be a Mesh or an options object; form: ${FORMS}`);
    checkOptions(fn, meshOrOpts, OPTS, FORMS);
    if (!(opts.mesh instanceof Mesh)) throw new TypeError(`${fn}: options.mesh must be a Mesh (makeMesh(...))`);
  }
  if (opts.refine !== undefined && typeof opts.refine !== "boolean")
    throw new TypeError(`${fn}: refine must be a boolean, got ${String(opts.refine)}`);
  const p = problem(fn, f, opts, exampleArgs);
  const fams = familyCandidates(p.leaves, megatronRoles(p.cj.jaxpr, p.leaves), p.mesh.axisNames, p.size);
  const plans = fams.map((c) => ({ c, est: estimate(p, c.shardings) }));
  const fits = (e: AutoShardEstimate) => e.peakBytesPerDevice <= p.limit;
  const ok = plans.filter((x) => fits(x.est.estimate));
  if (!ok.length) {
    const least = plans.reduce((a, b) =>
      b.est.estimate.peakBytesPerDevice < a.est.estimate.peakBytesPerDevice ? b : a,
    );
    throw new Error(
      `${fn}: no plan fits memoryLimitBytes ${p.limit} on ${p.mesh}: the smallest, ${least.c.strategy}, needs ${least.est.estimate.peakBytesPerDevice} bytes per device`,
    );
  }
  let best = ok.reduce((a, b) => (b.est.estimate.seconds < a.est.estimate.seconds ? b : a));
  let chosen: Candidate = best.c;
  if (opts.refine !== false) {
    const r = refine(p, best.c, best.est.estimate.seconds);
    if (r) {
      chosen = r.c;
      best = { c: r.c, est: r.est };
    }
  }
  const rejected = plans
    .filter((x) => x.c !== chosen)
    .map((x) => ({
      ...plan(p, x.c, x.est),
      reason: !fits(x.est.estimate)
        ? `peak ${x.est.estimate.peakBytesPerDevice} bytes per device exceeds memoryLimitBytes ${p.limit}`
        : `slower: ${x.est.estimate.seconds.toExponential(3)} s vs ${best.est.estimate.seconds.toExponential(3)} s for ${chosen.strategy}`,
    }));
  return { ...plan(p, chosen, best.est), rejected };
}

/** Validates the call, traces f on the arguments' avals and records each leaf's role. */
function problem(fn: string, f: (...args: never[]) => unknown, opts: AutoShardOpts, args: unknown[]): Problem {
  const mesh = opts.mesh;
  if (!args.length) throw new TypeError(`${fn}: pass f's example arguments after the mesh; form: ${FORMS}`);
  const [leaves, argTree] = flatten(args, (x) => x instanceof ShapeDtypeStruct);
  const paths = leafPaths(argTree, "args");
  const avals = leaves.map((l, i) => {
    if (l instanceof Array) return new ShapedArray(l.shape, l.dtype);
    if (l instanceof ShapeDtypeStruct) return new ShapedArray(l.shape, l.dtype);
    throw new TypeError(
      `${fn}: argument leaf ${paths[i]} is ${l === null ? "null" : typeof l}; every leaf must be an Array or a ShapeDtypeStruct (shardings are chosen for arrays; close over other values)`,
    );
  });
  const roles = opts.argRoles ?? args.map((_, i) => (args.length > 1 && i === 0 ? "params" : "data"));
  if (!globalThis.Array.isArray(roles) || roles.length !== args.length)
    throw new TypeError(
      `${fn}: argRoles must list one role per argument (${args.length}), got ${JSON.stringify(roles)}`,
    );
  roles.forEach((r, i) => {
    if (!["params", "data", "replicated"].includes(r))
      throw new TypeError(`${fn}: argRoles[${i}] must be "params", "data" or "replicated", got ${JSON.stringify(r)}`);
  });
  const leafRole: ArgRole[] = [];
  args.forEach((a, i) => {
    const n = flatten(a, (x) => x instanceof ShapeDtypeStruct)[0].length;
    for (let k = 0; k < n; k++) leafRole.push(roles[i]);
  });
  const size = (axes: readonly string[]) => axes.reduce((t, a) => t * mesh.axisSize(a), 1);
  // an axis that divides no dimension of any argument can shard nothing
  for (const a of mesh.axisNames) {
    const n = mesh.axisSize(a);
    if (n > 1 && !avals.some((v) => v.shape.some((d) => d % n === 0)))
      throw new Error(
        `${fn}: mesh axis "${a}" of size ${n} divides no dimension of any argument (shapes ${avals.map((v, i) => `${paths[i]}: (${v.shape.join(", ")})`).join(", ")}); nothing can be sharded over it: pick a mesh whose axis sizes divide the batch or weight dimensions`,
      );
  }
  const store: { def?: TreeDef } = {};
  const { jaxpr, consts } = traceToJaxpr(
    (...xs) => {
      const [outs, def] = flattenArrays(
        fn,
        (f as (...a: unknown[]) => unknown)(...(unflatten(argTree, xs) as unknown[])),
        "output",
      );
      store.def = def;
      return outs;
    },
    avals,
    fn,
  );
  const limit = opts.memoryLimitBytes ?? Infinity;
  if (typeof limit !== "number" || !(limit > 0))
    throw new RangeError(`${fn}: memoryLimitBytes must be a positive number, got ${String(opts.memoryLimitBytes)}`);
  const optFactor = opts.optimizerStateFactor ?? 0;
  if (typeof optFactor !== "number" || !(optFactor >= 0))
    throw new RangeError(`${fn}: optimizerStateFactor must be a number >= 0, got ${String(opts.optimizerStateFactor)}`);
  const info: LeafInfo[] = avals.map((v, i) => ({ path: paths[i], shape: v.shape, dtype: v.dtype, role: leafRole[i] }));
  const cj = new ClosedJaxpr(jaxpr, consts);
  return {
    cj,
    outTree: store.def!,
    argTree,
    leaves: info,
    mesh,
    machine: machineFrom(fn, opts.machine),
    limit,
    optFactor,
    size,
    mirror: mirrorOutputs(cj, info),
  };
}

/**
 * Outputs that mirror the parameters (gradients or updated parameters, in parameter order, at the end of the output
 * list) end sharded like them, so a step's results feed the next step (ZeRO: gradients are reduce-scattered).
 */
function mirrorOutputs(cj: ClosedJaxpr, leaves: LeafInfo[]): number[] {
  const params = leaves.map((l, i) => i).filter((i) => leaves[i].role === "params");
  const outs = cj.jaxpr.outvars.map((v) => v.aval);
  const mirror = outs.map(() => -1);
  const o = outs.length - params.length;
  if (!params.length || o < 0) return mirror;
  const same = params.every((pi, k) => {
    const a = outs[o + k];
    return a.shape.join() === leaves[pi].shape.join() && a.dtype === leaves[pi].dtype;
  });
  if (same) params.forEach((pi, k) => (mirror[o + k] = pi));
  return mirror;
}

/** A collective of the per-device program under the cost model's names (reduce_scatter is JAX's psum_scatter). */
const KIND: Record<string, CollectiveKind> = {
  psum: "psum",
  pmax: "pmax",
  pmin: "pmin",
  all_gather: "all_gather",
  reduce_scatter: "psum_scatter",
  all_to_all: "all_to_all",
  ppermute: "all_to_all",
};

/** FLOPs and roofline seconds of a per-device program's computation (collectives are priced as communication). */
function computeOf(j: Jaxpr, m: MachineModel): { flops: number; seconds: number } {
  let flops = 0,
    seconds = 0;
  const bytes = (a: { shape: readonly number[]; dtype: string }) =>
    a.shape.reduce((t, n) => t * n, 1) * itemBytes(a.dtype);
  const walk = (jx: Jaxpr): void => {
    for (const e of jx.eqns) {
      const subs = Object.values(e.params)
        .flatMap((q) => (globalThis.Array.isArray(q) ? q : [q]))
        .filter((q): q is Jaxpr | ClosedJaxpr => q instanceof Jaxpr || q instanceof ClosedJaxpr);
      if (subs.length) {
        subs.forEach((q) => walk(q instanceof ClosedJaxpr ? q.jaxpr : q)); // counted equation by equation inside
        continue;
      }
      if (e.primitive.collective) continue;
      const f = eqnFlops(
        e,
        e.inputs.map((a) => a.aval.shape),
        e.outVars.map((v) => v.aval.shape),
      );
      const b = e.inputs.reduce((t, a) => t + bytes(a.aval), 0) + e.outVars.reduce((t, v) => t + bytes(v.aval), 0);
      flops += f;
      // a view costs nothing; data movement costs its bytes (PrimitiveFacts.cost)
      seconds += e.primitive.opts.cost === "view" ? 0 : eqnSeconds(f, b, m);
    }
  };
  walk(j);
  return { flops, seconds };
}

/**
 * The per-device estimate of one choice of input shardings: the plan is partitioned by the SPMD partitioner (the
 * program jit with these shardings runs) and priced from its per-device program and costAnalysis.
 */
function estimate(p: Problem, shardings: Sh[]): { estimate: AutoShardEstimate; outs: Sh[] } {
  const targets = p.mirror.map((m) => (m >= 0 ? shardings[m].dims : null));
  const prog = partitionedProgram(
    p.mesh,
    p.cj,
    shardings.map((s) => s.dims),
    targets,
  );
  const comp = computeOf(prog.jaxpr, p.machine);
  const collectives: CollectiveEstimate[] = prog.cost.collectives.map((c) => {
    const kind = KIND[c.kind] ?? "psum";
    return {
      kind,
      axes: c.axes,
      bytes: c.bytes,
      seconds: collectiveSeconds(kind, c.bytes, p.size(c.axes), p.machine),
      reason: `${c.kind} over (${c.axes.join(", ")}) in the partitioned program${c.within ? `, inside ${c.within.join(" > ")}` : ""}`,
    };
  });
  let state = 0;
  p.leaves.forEach((l, i) => {
    if (l.role === "params") state += p.optFactor * leafLocalElems(l.shape, shardings[i], p.size) * itemBytes(l.dtype);
  });
  const commSeconds = collectives.reduce((t, c) => t + c.seconds, 0);
  return {
    estimate: {
      seconds: comp.seconds + commSeconds,
      computeSeconds: comp.seconds,
      commSeconds,
      flops: comp.flops,
      peakBytesPerDevice: prog.cost.peakBytesPerDevice + state,
      collectives,
    },
    outs: prog.outDims.map((dims) => ({ dims, partial: [] })),
  };
}

const itemBytes = (dt: string): number => itemsize(dt as DType);

/** Coordinate descent from the best family plan: each leaf takes its legal spec that lowers the estimate most. */
function refine(
  p: Problem,
  start: Candidate,
  seconds: number,
): { c: Candidate; est: ReturnType<typeof estimate> } | null {
  let cur = start.shardings.map((s) => ({ dims: s.dims.map((d) => [...d]), partial: [] as string[] }));
  let best = seconds;
  let bestEst: ReturnType<typeof estimate> | null = null;
  const changed = new Set<string>();
  for (let sweep = 0; sweep < 2; sweep++) {
    let improved = false;
    p.leaves.forEach((l, i) => {
      if (l.role === "replicated") return;
      for (const o of leafOptions(l.shape, p.mesh.axisNames, p.size)) {
        const trial = cur.map((s, k) => (k === i ? o : s));
        const e = estimate(p, trial);
        // a change must win by more than 1% (ties keep the simpler family plan)
        if (e.estimate.peakBytesPerDevice <= p.limit && e.estimate.seconds < best * 0.99) {
          best = e.estimate.seconds;
          bestEst = e;
          cur = trial;
          changed.add(l.path);
          improved = true;
        }
      }
    });
    if (!improved) break;
  }
  if (!bestEst) return null;
  return { c: { strategy: `${start.strategy} + refined (${[...changed].join(", ")})`, shardings: cur }, est: bestEst };
}

/** A plan's public form: NamedShardings in the arguments' and output's tree structure. */
function plan(p: Problem, c: Candidate, est: ReturnType<typeof estimate>): AutoShardPlan {
  const named = (s: Sh) =>
    new NamedShardingImpl(
      p.mesh,
      new PartitionSpecImpl(
        ...trimSpec(s.dims.map((d): SpecEntry => (d.length === 0 ? null : d.length === 1 ? d[0] : d))),
      ),
    );
  return {
    strategy: c.strategy,
    inShardings: unflatten(p.argTree, c.shardings.map(named)) as PyTree<NamedShardingImpl>[],
    outShardings: unflatten(p.outTree, est.outs.map(named)) as PyTree<NamedShardingImpl>,
    estimate: est.estimate,
  };
}

/** Trailing unsharded entries dropped (P("data") rather than P("data", null)), as JAX users write specs. */
function trimSpec(e: SpecEntry[]): SpecEntry[] {
  let n = e.length;
  while (n > 0 && e[n - 1] === null) n--;
  return e.slice(0, n);
}
