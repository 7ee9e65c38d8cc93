/**
 * @file Transformation rules of the shard_map primitive (device runtime), as JAX's shard_map has them: the jvp of a
 * shard_map is a shard_map of the body's jvp, split by partial evaluation into a known shard_map (primal outputs and
 * residuals) and an unknown one (the linear tangent map); the transpose of a shard_map is a shard_map of the body's
 * transpose; vmap of a shard_map is a shard_map of the vmapped body with the batch dimension added to the specs.
 * Each derived shard_map runs on the devices like any other (or on the emulation where that cannot).
 */
import type { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import { isInexact } from "../core/dtype.js";
import { Jaxpr, evalJaxpr } from "../core/jaxpr.js";
import { type AxisData, type BDim, type MaybeZero, UndefinedPrimal, Zero } from "../core/primitive.js";
import { withNamedAxis } from "../core/trace.js";
import * as ops from "../primitives/ops.js";
import { closeOver } from "../transforms/control-flow.js";
import { instantiateZero, jvpFlat } from "../transforms/jvp.js";
import { backwardPass } from "../transforms/linearize.js";
import { partialEvalJaxpr } from "../transforms/partial-eval.js";
import { vmapFlat } from "../transforms/vmap.js";
import { axisIndex, psum, withPerDeviceTranspose } from "./collectives.js";
import type { Mesh } from "./mesh.js";
import type { ShardMapOpts } from "./shard-map.js";
import { type SMP, type TracedBody, jvpByEmulation, shardMapP, vmapByEmulation } from "./shard-map-devices.js";
import { PartitionSpecImpl } from "./sharding.js";
import { containsPsumTranspose } from "./varying.js";

type Spec = PartitionSpecImpl;
type Flat = (...xs: Array[]) => Array[];
type ShardMapFn = (f: Flat, opts: ShardMapOpts) => Flat;

const usesAxis = (sp: Spec, name: string) => sp.entries.some((_, d) => sp.names(d).includes(name));
/** Mesh axes a spec does not split over (the value is replicated over them). */
const unnamedAxes = (mesh: Mesh, sp: Spec) => mesh.axisNames.filter((a) => !usesAxis(sp, a));

/** Traces f at per-device avals with every mesh axis bound; constvars become leading invars (closeOver). */
function traceBound(mesh: Mesh, f: Flat, avals: ShapedArray[], name: string): { jaxpr: Jaxpr; consts: Array[] } {
  const go = mesh.axisNames.reduceRight<() => { jaxpr: Jaxpr; consts: Array[] }>(
    (inner, nm, a) => () => withNamedAxis({ name: nm, size: mesh.dims[a] }, inner),
    () => closeOver(f, avals, name),
  );
  return go();
}

/** The body, or null where a rule cannot use it (then the emulation's rule runs). */
function usable(p: SMP): TracedBody | null {
  const b = p.body();
  // a gradient taken inside the body already: its psum_transposes depend on varying-axis types the derived bodies
  // (residuals split over every axis) would not preserve
  return typeof b === "string" || containsPsumTranspose(b.jaxpr) ? null : b;
}

/** Per-params caches of derived shard_maps (stable functions, so each is traced and compiled once). */
const derived = new WeakMap<SMP, Map<string, unknown>>();
function cached<T>(p: SMP, key: string, make: () => T): T {
  let m = derived.get(p);
  if (!m) {
    m = new Map();
    derived.set(p, m);
  }
  if (!m.has(key)) m.set(key, make());
  return m.get(key) as T;
}

interface JvpParts {
  known: Flat;
  tangent: Flat;
  nOut: number;
  outFloat: boolean[];
}

/** jvp of a shard_map: the known shard_map (primal outputs and residuals) and the unknown one (tangents). */
function jvpParts(sm: ShardMapFn, p: SMP, b: TracedBody, live: boolean[]): JvpParts {
  const { mesh } = p;
  const n = b.blockAvals.length,
    nOut = b.jaxpr.outvars.length;
  const outFloat = b.jaxpr.outvars.map((v) => isInexact(v.aval.dtype)); // float or complex: has tangents
  const tAvals = b.blockAvals.filter((_, i) => live[i]).map((a) => a.strongly());
  const J = traceBound(
    mesh,
    (...zs) => {
      const tz: MaybeZero[] = [];
      let k = n;
      for (let i = 0; i < n; i++) tz.push(live[i] ? zs[k++] : new Zero(b.blockAvals[i]));
      const [po, to] = jvpFlat((...xs) => evalJaxpr(b.jaxpr, b.consts, xs), zs.slice(0, n), tz);
      return [...po, ...to.map((t, i) => (outFloat[i] ? instantiateZero(t) : ops.zerosLikeAval(po[i].aval)))];
    },
    [...b.blockAvals, ...tAvals],
    "jvp(shard_map body)",
  );
  const split = partialEvalJaxpr(
    J.jaxpr,
    [...J.consts.map(() => false), ...b.blockAvals.map(() => false), ...tAvals.map(() => true)],
    [...globalThis.Array(nOut).fill(false), ...globalThis.Array(nOut).fill(true)],
  );
  const nr = split.numResiduals;
  // residuals are per-device values: a leading dim of 1 split over every mesh axis (global [devices, ...block])
  const resSpec = new PartitionSpecImpl(mesh.axisNames);
  const inSpecs = p.in_specs,
    outSpecs = b.outSpecs;
  const known = sm(
    (...xs) => {
      const o = evalJaxpr(split.known, [], [...J.consts, ...xs]);
      return [...o.slice(0, nOut), ...o.slice(nOut).map((r) => ops.reshape(r, [1, ...r.shape]))];
    },
    {
      mesh,
      inSpecs: [...inSpecs],
      outSpecs: [...outSpecs, ...globalThis.Array(nr).fill(resSpec)],
      checkVma: p.check_vma,
    },
  );
  // the tangents of outputs replicated over an axis are replicated too (the primal passed the check): taken from
  // the first device along it, as checkVma false does
  const tangent = sm(
    (...zs) => {
      const res = zs.slice(0, nr).map((r) => ops.reshape(r, r.shape.slice(1)));
      return evalJaxpr(split.unknown, [], [...res, ...zs.slice(nr)]);
    },
    {
      mesh,
      inSpecs: [...globalThis.Array(nr).fill(resSpec), ...inSpecs.filter((_, i) => live[i])],
      outSpecs: [...outSpecs],
      checkVma: false,
    },
  );
  return { known, tangent, nOut, outFloat };
}

function jvpRule(sm: ShardMapFn, primals: Array[], tangents: MaybeZero[], p: SMP): [Array[], MaybeZero[]] {
  const b = usable(p);
  if (!b) return jvpByEmulation(primals, tangents, p);
  const live = tangents.map((t, i) => !(t instanceof Zero) && isInexact(primals[i].dtype));
  const parts = cached(p, `jvp:${live.map(Number).join("")}`, () => jvpParts(sm, p, b, live));
  const k = parts.known(...primals);
  const primalOut = k.slice(0, parts.nOut);
  const liveTs = tangents.filter((_, i) => live[i]) as Array[];
  if (!liveTs.length) return [primalOut, primalOut.map((y) => new Zero(y.aval))];
  const t = parts.tangent(...k.slice(parts.nOut), ...liveTs);
  return [primalOut, t.map((x, i) => (parts.outFloat[i] ? x : new Zero(primalOut[i].aval)))];
}

/**
 * The transpose of a shard_map linear in its undefined inputs, seen per device (each device's block its own
 * variable): an output replicated over axes U is the mean of its copies (checkVma) or the first device's copy along
 * them, so its cotangent is divided over them (or given to that device); the per-device body transposes with psum's
 * transpose being psum; an input replicated over axes V was one value fed to every device along V, so its
 * cotangent is the psum over V.
 */
function transposeRule(
  sm: ShardMapFn,
  cts: MaybeZero[],
  args: (Array | UndefinedPrimal)[],
  p: SMP,
): (MaybeZero | null)[] {
  const b = usable(p);
  if (!b)
    throw new Error(
      `shard_map transpose: the body cannot be transposed per device (${typeof p.body() === "string" ? p.body() : "it holds a gradient through psum already"}); differentiate it inside the shardMap instead`,
    );
  const { mesh } = p;
  const lin = args.map((a) => a instanceof UndefinedPrimal);
  const liveCt = cts.map((c) => !(c instanceof Zero));
  if (!liveCt.some(Boolean)) return args.map((a) => (a instanceof UndefinedPrimal ? new Zero(a.aval) : null));
  const key = `T:${lin.map(Number).join("")}:${liveCt.map(Number).join("")}`;
  const T = cached(p, key, () => {
    const J = b.jaxpr;
    const L = new Jaxpr(
      [...J.constvars, ...J.invars.filter((_, i) => !lin[i])],
      J.invars.filter((_, i) => lin[i]),
      J.outvars,
      J.eqns,
    );
    const nKnown = lin.filter((l) => !l).length;
    const linIdx = lin.map((l, i) => (l ? i : -1)).filter((i) => i >= 0);
    const outSpecs = b.outSpecs;
    return sm(
      (...zs) => {
        const known = zs.slice(0, nKnown),
          given = zs.slice(nKnown);
        let k = 0;
        const ctIn: MaybeZero[] = J.outvars.map((v, i) => {
          if (!liveCt[i]) return new Zero(v.aval);
          const c = given[k++];
          const U = unnamedAxes(mesh, outSpecs[i]);
          if (!U.length) return c;
          if (p.check_vma) return ops.mul(c, ops.full([], 1 / U.reduce((s, a) => s * mesh.axisSize(a), 1), c.dtype));
          const first = U.map((a) => ops.eq(axisIndex(a), ops.full([], 0, "int32"))).reduce((x, y) => ops.and(x, y));
          return ops.mul(c, ops.convert(first, c.dtype));
        });
        const r = withPerDeviceTranspose(() => backwardPass(L, [...b.consts, ...known], ctIn));
        return r.map((c, j) => {
          const v = instantiateZero(c instanceof Zero ? new Zero(L.invars[j].aval) : c);
          const V = unnamedAxes(mesh, p.in_specs[linIdx[j]]);
          return V.length ? psum(v, V) : v;
        });
      },
      {
        mesh,
        checkVma: false,
        inSpecs: [...p.in_specs.filter((_, i) => !lin[i]), ...outSpecs.filter((_, i) => liveCt[i])],
        outSpecs: linIdx.map((i) => p.in_specs[i]),
      },
    );
  });
  const outs = T(
    ...(args.filter((a) => !(a instanceof UndefinedPrimal)) as Array[]),
    ...(cts.filter((c) => !(c instanceof Zero)) as Array[]),
  );
  let k = 0;
  return args.map((a) => (a instanceof UndefinedPrimal ? outs[k++] : null));
}

/**
 * vmap of a shard_map: the vmapped body, the batch dimension leading in every spec: unsplit, or split over the mesh
 * axes of spmdAxisName (each device then maps its share of the batch).
 */
function vmapRule(sm: ShardMapFn, axis: AxisData, args: Array[], dims: BDim[], p: SMP): [Array[], BDim[]] {
  const b = p.body();
  if (typeof b === "string") return vmapByEmulation(axis, args, dims, p);
  const spmd =
    axis.spmdAxisName == null
      ? []
      : typeof axis.spmdAxisName === "string"
        ? [axis.spmdAxisName]
        : [...axis.spmdAxisName];
  const parts = spmd.reduce((s, a) => s * (p.mesh.axisNames.includes(a) ? p.mesh.axisSize(a) : NaN), 1);
  if (
    spmd.length &&
    (!(axis.size % parts === 0) || [...p.in_specs, ...b.outSpecs].some((sp) => spmd.some((a) => usesAxis(sp, a))))
  ) {
    return vmapByEmulation(
      axis,
      args,
      dims,
      p,
      `vmap of a shardMap with spmdAxisName ${JSON.stringify(axis.spmdAxisName)} that does not divide the batch or names an axis the specs use runs its emulation`,
    );
  }
  const batched = dims.map((d) => d !== null);
  const key = `V:${axis.size}:${axis.name}:${spmd.join(",")}:${batched.map(Number).join("")}`;
  const V = cached(p, key, () => {
    const lead = (s: Spec) => new PartitionSpecImpl(spmd.length ? spmd : null, ...s.entries);
    const inner: AxisData = { size: axis.size / parts, name: axis.name };
    return sm(
      (...zs) =>
        vmapFlat(
          (...xs) => evalJaxpr(b.jaxpr, b.consts, xs),
          zs,
          batched.map((x) => (x ? 0 : null)),
          () => 0,
          inner,
        ),
      {
        mesh: p.mesh,
        checkVma: p.check_vma,
        inSpecs: p.in_specs.map((s, i) => (batched[i] ? lead(s) : s)),
        outSpecs: b.outSpecs.map(lead),
      },
    );
  });
  const outs = V(...args.map((x, i) => (dims[i] === null ? x : ops.moveaxis(x, dims[i]!, 0))));
  return [outs, outs.map(() => 0)];
}

/** Installs the rules on shardMapP; `sm` is shardMap itself (passed in to keep the import graph acyclic). */
export function installShardMapRules(sm: ShardMapFn): void {
  shardMapP.rules.jvp = (primals, tangents, p) => jvpRule(sm, primals, tangents, p);
  shardMapP.rules.transpose = (cts, args, p) => transposeRule(sm, cts, args, p);
  shardMapP.rules.vmap = (axis, args, dims, p) => vmapRule(sm, axis, args, dims, p);
}
