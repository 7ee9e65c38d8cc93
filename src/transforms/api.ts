/** @file Public transformations: jvp, linearize, vjp, grad, valueAndGrad, jacfwd, jacrev, hessian, vmap, makeJaxpr, evalShape (jit: ./api-jit.ts, re-exported). */
import { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { type DType, isInexact } from "../core/dtype.js";
import { ClosedJaxpr, evalJaxpr } from "../core/jaxpr.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { type MaybeZero, Zero } from "../core/primitive.js";
import { describe } from "../core/trace.js";
import { checkArity, checkOptions, isPlainObject } from "../core/check-args.js";
import type { Tangent } from "../core/pytree-types.js";
import type { TreeDef } from "../core/tree.js";
import * as ops from "../primitives/ops.js";
import { checkDiffDType, flatOut, flatten, flattenArrays, normalizeArgnums, unflatten } from "./api-util.js";
import type { Argnums, DiffArgs, GradOf, GradOptsAux, GradOptsNoAux, Jacobian } from "./api-types.js";
import { instantiateZero, jvpFlat } from "./jvp.js";
import { backwardPass, linearizeFlat } from "./linearize.js";
import { vmapFlat } from "./vmap.js";
export * from "./api-jit.js";

/** Any function of arrays/pytrees. */
export type Fn<A extends unknown[] = unknown[], R = unknown> = (...args: A) => R;
const JSArray = globalThis.Array;

// ---------------------------------------------------------------- jvp / linearize
/** jvp(f, primals, tangents) -> [f(...primals), the directional derivative along tangents]. */
export function jvp<A extends unknown[], R>(
  f: (...args: A) => R,
  primals: DiffArgs<A>,
  tangents: DiffArgs<A>,
): [Tangent<R>, Tangent<R>];
export function jvp(f: (...args: never[]) => unknown, primals: unknown[], tangents: unknown[]): [unknown, unknown] {
  checkArity(
    "jvp",
    arguments,
    3,
    "jvp(f, primals, tangents) with primals and tangents JS arrays (tuples) of arguments",
  );
  if (!JSArray.isArray(primals) || !JSArray.isArray(tangents))
    throw new TypeError("jvp: primals and tangents must be arrays (tuples) of arguments");
  const [pl, pdef] = flattenArrays("jvp", primals, "primal", true);
  const [tl, tdef] = flattenArrays("jvp", tangents, "tangent", true);
  if (!pdef.equals(tdef))
    throw new TypeError(`jvp: primal and tangent arguments must have the same tree structure; got ${pdef} and ${tdef}`);
  pl.forEach((p, i) => {
    if (!p.aval.sameType(tl[i].aval) && isInexact(p.dtype))
      throw new TypeError(
        `jvp: primal ${p.aval.str()} and tangent ${tl[i].aval.str()} (leaf ${i}) must have the same shape and dtype`,
      );
  });
  const store: { def?: TreeDef } = {};
  const [po, to] = jvpFlat(
    (...xs) => flatOut("jvp", (f as Fn)(...(unflatten(pdef, xs) as unknown[])), store),
    pl,
    tl.map((t, i) => (isInexact(pl[i].dtype) ? t : new Zero(pl[i].aval))),
  );
  return [unflatten(store.def!, po), unflatten(store.def!, to.map(instantiateZero))];
}

/** linearize(f, ...primals) -> [f(...primals), the linear map tangents -> jvp output, evaluated without retracing f]. */
export function linearize<A extends unknown[], R>(
  f: (...args: A) => R,
  ...primals: DiffArgs<A>
): [Tangent<R>, (...tangents: DiffArgs<A>) => Tangent<R>];
export function linearize(
  f: (...args: never[]) => unknown,
  ...primals: unknown[]
): [unknown, (...tangents: unknown[]) => unknown] {
  const [pl, pdef] = flattenArrays("linearize", primals, "primal", true);
  const store: { def?: TreeDef } = {};
  const lin = linearizeFlat(
    (...xs) => flatOut("linearize", (f as Fn)(...(unflatten(pdef, xs) as unknown[])), store),
    pl,
  );
  const fJvp = (...tangents: unknown[]): unknown => {
    // JS numbers are float tangents here, as in jvp and vjp
    const [tl, tdef] = flattenArrays("linearize", tangents, "tangent", true);
    if (!tdef.equals(pdef))
      throw new TypeError(`linearize: tangents must have the primals' structure ${pdef}, got ${tdef}`);
    return unflatten(store.def!, evalJaxpr(lin.jaxpr, lin.residuals, tl));
  };
  return [unflatten(store.def!, lin.primalsOut), fJvp];
}

// ---------------------------------------------------------------- vjp / grad
/** Options of vjp, passed after the primals. */
export interface VjpOpts {
  hasAux: boolean;
}
/**
 * A trailing options object of vjp: a plain object none of whose leaves is an Array or a JS number (a primal pytree
 * has at least one array leaf), or one with a hasAux-like key. Its keys are checked (only hasAux is accepted).
 */
function isVjpOpts(x: unknown): x is VjpOpts {
  if (!isPlainObject(x)) return false;
  const keys = Object.keys(x);
  if (keys.some((k) => k.toLowerCase().replace(/_/g, "") === "hasaux")) return true;
  return keys.length > 0 && flatten(x)[0].every((l) => !(l instanceof Array) && typeof l !== "number");
}
/** vjp(f, ...primals, { hasAux }?) -> [out, vjpFn] (with hasAux: f returns [out, aux] and vjp returns [out, vjpFn, aux]). */
export function vjp<A extends unknown[], R, Aux>(
  f: (...args: A) => readonly [R, Aux],
  ...primalsAndOpts: [...DiffArgs<A>, { hasAux: true }]
): [Tangent<R>, (ct: Tangent<R>) => Tangent<A>, Aux];
export function vjp<A extends unknown[], R>(
  f: (...args: A) => R,
  ...primalsAndOpts: [...DiffArgs<A>, { hasAux: false }]
): [Tangent<R>, (ct: Tangent<R>) => Tangent<A>];
/** vjp(f, ...primals) -> [f(...primals), pullback]; pullback(ct) returns one cotangent per primal, shaped like it. */
export function vjp<A extends unknown[], R>(
  f: (...args: A) => R,
  ...primals: DiffArgs<A>
): [Tangent<R>, (ct: Tangent<R>) => Tangent<A>];
export function vjp(
  f: (...args: never[]) => unknown,
  ...args: unknown[]
): [unknown, (ct: unknown) => unknown[]] | [unknown, (ct: unknown) => unknown[], unknown] {
  const vjpForms = "vjp(f, ...primals) or vjp(f, ...primals, { hasAux })";
  if (typeof f !== "function")
    throw new TypeError(`vjp: expected a function to differentiate, got ${describe(f)}; accepted forms: ${vjpForms}`);
  const hasOpts = args.length > 0 && isVjpOpts(args[args.length - 1]);
  if (hasOpts) checkOptions("vjp", args[args.length - 1], ["hasAux"], vjpForms);
  const hasAux = hasOpts && (args[args.length - 1] as VjpOpts).hasAux;
  if (hasOpts && typeof hasAux !== "boolean")
    throw new TypeError(`vjp: hasAux must be a boolean, got ${describe(hasAux)}`);
  const primals = hasOpts ? args.slice(0, -1) : args;
  const [pl, pdef] = flattenArrays("vjp", primals, "primal", true);
  const store: { def?: TreeDef } = {};
  let auxDef: TreeDef | null = null;
  let nOut = 0;
  // aux leaves ride along as extra outputs (as in valueAndGrad) and get zero cotangents
  const body = (...xs: Array[]): Array[] => {
    const out = (f as Fn)(...(unflatten(pdef, xs) as unknown[]));
    if (!hasAux) {
      const l = flatOut("vjp", out, store);
      nOut = l.length;
      return l;
    }
    if (!JSArray.isArray(out) || out.length !== 2)
      throw new TypeError("vjp: with hasAux the function must return a pair [output, aux]");
    const l = flatOut("vjp", out[0], store);
    nOut = l.length;
    const [auxLeaves, adef] = flattenArrays("vjp", out[1], "aux");
    auxDef = adef;
    return [...l, ...auxLeaves];
  };
  const lin = linearizeFlat(body, pl);
  const outs = lin.primalsOut.slice(0, nOut);
  const vjpFn = (ct: unknown): unknown[] => {
    const [cl, cdef] = flattenArrays("vjp", ct, "cotangent");
    if (!cdef.equals(store.def!))
      throw new TypeError(`vjp: cotangent structure ${cdef} does not match the output structure ${store.def}`);
    cl.forEach((c, i) => {
      const o = outs[i];
      if (c.shape.join() !== o.shape.join())
        throw new TypeError(`vjp: cotangent leaf ${i} has shape [${c.shape}] but the output has shape [${o.shape}]`);
    });
    const cts: MaybeZero[] = lin.primalsOut.map((o, i) =>
      i < nOut && isInexact(o.dtype) ? ops.convert(cl[i], o.dtype) : new Zero(o.aval),
    );
    const res = backwardPass(lin.jaxpr, lin.residuals, cts);
    return unflatten(
      pdef,
      res.map((c, i) => (c instanceof Zero ? ops.zerosLikeAval(pl[i].aval.strongly()) : c)),
    ) as unknown[];
  };
  const primalOut = unflatten(store.def!, outs);
  if (!hasAux) return [primalOut, vjpFn];
  return [primalOut, vjpFn, unflatten(auxDef!, lin.primalsOut.slice(nOut))];
}

export interface GradOpts {
  argnums?: Argnums;
  hasAux?: boolean;
  /** f is holomorphic (complex inputs and output): the gradient is df/dz, JAX's holomorphic=True. */
  holomorphic?: boolean;
}
const GRAD_KEYS = ["argnums", "hasAux", "holomorphic"] as const;
/** JAX's grad(fun, argnums=0, has_aux=False): the options object, or argnums / hasAux given positionally. */
function gradOptsOf(fn: string, args: IArguments): GradOpts {
  const forms = `${fn}(f, argnums?, hasAux?) or ${fn}(f, { argnums, hasAux })`;
  if (typeof args[0] !== "function")
    throw new TypeError(
      `${fn}: expected a function to differentiate, got ${describe(args[0])}; accepted forms: ${forms}`,
    );
  const a1 = args[1];
  if (a1 === undefined || isPlainObject(a1)) {
    checkArity(fn, args, 2, forms);
    checkOptions(fn, a1, GRAD_KEYS, forms);
    return (a1 ?? {}) as GradOpts;
  }
  checkArity(fn, args, 3, forms);
  if (args[2] !== undefined && typeof args[2] !== "boolean")
    throw new TypeError(`${fn}: hasAux must be a boolean, got ${describe(args[2])}; accepted forms: ${forms}`);
  return { argnums: a1 as Argnums, hasAux: args[2] as boolean | undefined };
}

/** valueAndGrad(f)(...args) -> [value, grads] (with hasAux: [[value, aux], grads]). */
export function valueAndGrad<A extends unknown[], V, X, const N extends Argnums = 0>(
  f: (...args: A) => readonly [V, X],
  opts: GradOptsAux<N>,
): (...args: DiffArgs<A>) => [[Tangent<V>, Tangent<X>], GradOf<A, N>];
export function valueAndGrad<A extends unknown[], R, const N extends Argnums = 0>(
  f: (...args: A) => R,
  opts?: GradOptsNoAux<N>,
): (...args: DiffArgs<A>) => [Tangent<R>, GradOf<A, N>];
export function valueAndGrad(
  f: (...args: never[]) => unknown,
  _opts: GradOpts = {},
): (...args: unknown[]) => [unknown, unknown] {
  const name = "valueAndGrad";
  const opts = gradOptsOf(name, arguments);
  return (...args: unknown[]): [unknown, unknown] => {
    const argnums = normalizeArgnums(name, opts.argnums as number | number[] | undefined, args.length);
    const diffArgs = argnums.map((i) => args[i]);
    const [dl, ddef] = flattenArrays(name, diffArgs, "differentiated argument", true);
    dl.forEach((x) => checkDiffDType("grad", "inputs", x.dtype, opts.holomorphic, true));
    let auxDef: TreeDef | null = null;
    const fFlat = (...xs: Array[]): Array[] => {
      const pieces = unflatten(ddef, xs) as unknown[];
      const full = [...args];
      argnums.forEach((a, k) => {
        full[a] = pieces[k];
      });
      let out = (f as Fn)(...full);
      let auxLeaves: Array[] = [];
      if (opts.hasAux) {
        if (!JSArray.isArray(out) || out.length !== 2)
          throw new TypeError(`${name}: with hasAux the function must return [output, aux]`);
        const [aux, adef] = flatten(out[1]);
        auxDef = adef;
        auxLeaves = aux as Array[];
        out = out[0];
      }
      if (!(out instanceof Array) && typeof out !== "number")
        throw new TypeError(`grad: function must return a scalar Array, got ${typeof out}`);
      const o = out instanceof Array ? out : ops.full([], out as number, "float32");
      if (o.ndim !== 0)
        throw new TypeError(
          `grad requires scalar outputs; the function returned an array of shape [${o.shape}]. Use vjp or jacrev for non-scalar outputs.`,
        );
      checkDiffDType("grad", "outputs", o.dtype, opts.holomorphic, false);
      return [o, ...auxLeaves.map((a) => (a instanceof Array ? a : ops.full([], a as number, "float32")))];
    };
    const lin = linearizeFlat(fFlat, dl);
    const [value, ...aux] = lin.primalsOut;
    const cts: MaybeZero[] = lin.primalsOut.map((o, i) => (i === 0 ? ops.full([], 1, o.dtype) : new Zero(o.aval)));
    const g = backwardPass(lin.jaxpr, lin.residuals, cts).map((c, i) =>
      c instanceof Zero ? ops.zerosLikeAval(dl[i].aval.strongly()) : c,
    );
    const gt = unflatten(ddef, g) as unknown[];
    const grads = typeof opts.argnums === "object" ? gt : gt[0];
    const v = opts.hasAux ? [value, unflatten(auxDef!, aux)] : value;
    return [v, grads];
  };
}

/** grad(f)(...args): the gradient, shaped like the differentiated argument(s) (with hasAux: [gradient, aux]). */
export function grad<A extends unknown[], X, const N extends Argnums = 0>(
  f: (...args: A) => readonly [unknown, X],
  opts: GradOptsAux<N>,
): (...args: DiffArgs<A>) => [GradOf<A, N>, Tangent<X>];
export function grad<A extends unknown[], const N extends Argnums = 0>(
  f: (...args: A) => unknown,
  opts?: GradOptsNoAux<N>,
): (...args: DiffArgs<A>) => GradOf<A, N>;
export function grad(f: (...args: never[]) => unknown, _opts: GradOpts = {}): (...args: unknown[]) => unknown {
  const opts = gradOptsOf("grad", arguments);
  const vg = valueAndGrad(f as (...args: unknown[]) => unknown, opts as GradOptsNoAux<Argnums>) as (
    ...args: unknown[]
  ) => [unknown, unknown];
  return (...args: unknown[]): unknown => {
    const [v, g] = vg(...args);
    return opts.hasAux ? [g, (v as unknown[])[1]] : g;
  };
}

// ---------------------------------------------------------------- vmap
export type AxisSpec = number | null | AxisSpec[] | { [k: string]: AxisSpec };
export interface VmapOpts {
  inAxes?: AxisSpec;
  outAxes?: AxisSpec;
  axisName?: string;
  axisSize?: number;
  spmdAxisName?: string | string[];
}

/** Broadcasts an axis-spec prefix tree onto the leaves of a value tree. */
function specLeaves(fn: string, spec: AxisSpec | undefined, tree: unknown, dflt: number | null): (number | null)[] {
  const [leaves, def] = flatten(tree);
  if (spec === undefined) return leaves.map(() => dflt);
  if (spec === null || typeof spec === "number") return leaves.map(() => spec);
  const out: (number | null)[] = [];
  const rec = (s: AxisSpec, t: unknown): void => {
    if (s === null || typeof s === "number") {
      flatten(t)[0].forEach(() => out.push(s));
      return;
    }
    if (JSArray.isArray(s)) {
      if (!JSArray.isArray(t) || t.length !== s.length)
        throw new TypeError(
          `${fn}: axis specification ${JSON.stringify(s)} does not match the argument structure (${JSArray.isArray(t) ? `length ${t.length}` : typeof t})`,
        );
      s.forEach((si, i) => rec(si, t[i]));
      return;
    }
    if (typeof t !== "object" || t === null)
      throw new TypeError(`${fn}: axis specification ${JSON.stringify(s)} does not match argument ${typeof t}`);
    for (const k of Object.keys(t as object).sort())
      rec((s as Record<string, AxisSpec>)[k] ?? null, (t as Record<string, unknown>)[k]);
  };
  rec(spec, tree);
  void def;
  return out;
}

const VMAP_KEYS = ["inAxes", "outAxes", "axisName", "axisSize", "spmdAxisName"] as const;
const VMAP_FORMS =
  "vmap(f, inAxes?, outAxes?, axisName?, axisSize?, spmdAxisName?) or vmap(f, { inAxes, outAxes, axisName, axisSize, spmdAxisName })";
/** JAX's vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None): positional or one options object. */
function vmapOptsOf(args: IArguments): VmapOpts {
  if (typeof args[0] !== "function")
    throw new TypeError(
      `vmap: expected a function to vectorize, got ${describe(args[0])}; accepted forms: ${VMAP_FORMS}`,
    );
  const a1 = args[1];
  if (a1 === undefined || isPlainObject(a1)) {
    checkArity("vmap", args, 2, VMAP_FORMS);
    checkOptions("vmap", a1, VMAP_KEYS, VMAP_FORMS);
    return (a1 ?? {}) as VmapOpts;
  }
  checkArity("vmap", args, 6, VMAP_FORMS);
  const o: Record<string, unknown> = {};
  VMAP_KEYS.forEach((k, i) => {
    if (args[i + 1] !== undefined) o[k] = args[i + 1];
  });
  return o as VmapOpts;
}

/** vmap(f, inAxes?, outAxes?, ...) or vmap(f, { inAxes, outAxes, axisName, axisSize, spmdAxisName }): f vectorized over the mapped axes. */
export function vmap<A extends unknown[], R>(f: (...args: A) => R, opts?: VmapOpts): (...args: A) => R;
export function vmap<A extends unknown[], R>(
  f: (...args: A) => R,
  inAxes: AxisSpec,
  outAxes?: AxisSpec,
  axisName?: string | null,
  axisSize?: number | null,
  spmdAxisName?: string | string[] | null,
): (...args: A) => R;
export function vmap<A extends unknown[], R>(f: (...args: A) => R): (...args: A) => R {
  const opts = vmapOptsOf(arguments);
  return (...args: A): R => {
    const inSpec = opts.inAxes === undefined ? 0 : opts.inAxes;
    if (JSArray.isArray(inSpec) && inSpec.length !== args.length) {
      throw new TypeError(
        `vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed to the function, but got len(in_axes)=${inSpec.length}, len(args)=${args.length}`,
      );
    }
    const [leaves, def] = flattenArrays("vmap", args, "argument");
    const axes = specLeaves(
      "vmap",
      JSArray.isArray(inSpec) ? inSpec : inSpec,
      JSArray.isArray(inSpec) ? args : args,
      0,
    ).map((a, i) => (a === null ? null : a < 0 ? a + leaves[i].ndim : a));
    axes.forEach((a, i) => {
      if (a !== null && (a < 0 || a >= leaves[i].ndim))
        throw new RangeError(
          `vmap was requested to map its argument along axis ${a}, which implies that its rank should be at least ${a + 1}, but is only ${leaves[i].ndim} (its shape is [${leaves[i].shape}])`,
        );
    });
    const sizes = new Set(leaves.map((l, i) => (axes[i] === null ? -1 : l.shape[axes[i]!])).filter((s) => s >= 0));
    if (opts.axisSize !== undefined) sizes.add(opts.axisSize);
    if (sizes.size === 0)
      throw new TypeError("vmap must have at least one non-None value in in_axes (or pass axisSize)");
    if (sizes.size > 1) {
      const detail = leaves
        .map((l, i) =>
          axes[i] === null
            ? null
            : `arg leaf ${i} of shape [${l.shape}] has size ${l.shape[axes[i]!]} along axis ${axes[i]}`,
        )
        .filter(Boolean)
        .join("; ");
      throw new TypeError(`vmap got inconsistent sizes for the array axes to be mapped: ${detail}`);
    }
    const size = [...sizes][0];
    const store: { def?: TreeDef; out?: unknown } = {};
    const outs = vmapFlat(
      (...xs) => {
        const out = f(...(unflatten(def, xs) as A));
        store.out = out;
        return flatOut("vmap", out, store);
      },
      leaves,
      axes,
      (i) => outAxesFor(i),
      { size, name: opts.axisName ?? null, spmdAxisName: opts.spmdAxisName ?? null },
    );
    function outAxesFor(i: number): number | null {
      const spec = opts.outAxes === undefined ? 0 : opts.outAxes;
      const l = specLeaves("vmap", spec, store.out, 0);
      return l[i];
    }
    return unflatten(store.def!, outs) as R;
  };
}

export function makeJaxpr(
  f: (...args: never[]) => unknown,
): (...args: unknown[]) => ClosedJaxpr & { outTree: TreeDef } {
  checkArity("makeJaxpr", arguments, 1, "makeJaxpr(f)(...args)");
  return (...args: unknown[]) => {
    const [leaves, def] = flattenArrays("makeJaxpr", args, "argument");
    const store: { def?: TreeDef } = {};
    const { jaxpr, consts } = traceToJaxpr(
      (...xs) => flatOut("makeJaxpr", (f as Fn)(...(unflatten(def, xs) as unknown[])), store),
      leaves.map((l) => l.aval),
      "makeJaxpr",
    );
    const cj = new ClosedJaxpr(jaxpr, consts) as ClosedJaxpr & { outTree: TreeDef };
    cj.outTree = store.def!;
    return cj;
  };
}

export class ShapeDtypeStruct {
  constructor(
    readonly shape: number[],
    readonly dtype: DType,
    readonly weakType = false,
  ) {}
  get ndim(): number {
    return this.shape.length;
  }
  get size(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }
  toString(): string {
    return `ShapeDtypeStruct(shape=(${this.shape.join(", ")}${this.shape.length === 1 ? "," : ""}), dtype=${this.dtype})`;
  }
}

export function evalShape(f: (...args: never[]) => unknown, ...args: unknown[]): unknown {
  const [leaves, def] = flatten(args, (x) => x instanceof ShapeDtypeStruct);
  const avals = leaves.map((l, i) => {
    if (l instanceof ShapeDtypeStruct) return new ShapedArray(l.shape, l.dtype, l.weakType);
    if (l instanceof Array) return l.aval;
    if (typeof l === "number")
      return ops.full([], l, Number.isInteger(l) ? "int32" : "float32").aval.update({ weakType: true });
    throw new TypeError(`evalShape: argument leaf ${i} is not an Array or ShapeDtypeStruct`);
  });
  const store: { def?: TreeDef } = {};
  const { jaxpr } = traceToJaxpr(
    (...xs) => flatOut("evalShape", (f as Fn)(...(unflatten(def, xs) as unknown[])), store),
    avals,
    "evalShape",
  );
  return unflatten(
    store.def!,
    jaxpr.outAvals.map((a) => new ShapeDtypeStruct([...a.shape], a.dtype, a.weakType)),
  );
}

// ---------------------------------------------------------------- jacobians
/** Identity basis for a leaf: n one-hot tangents shaped like the leaf, stacked along a new leading axis. */
function basis(aval: ShapedArray): Array {
  const n = aval.size;
  return ops.reshape(ops.convert(ops.eq(ops.iota("int32", [n, n], 0), ops.iota("int32", [n, n], 1)), aval.dtype), [
    n,
    ...aval.shape,
  ]);
}
type JacOpts = { argnums?: Argnums; holomorphic?: boolean };
/** jacfwd/jacrev/hessian(fun, argnums=0): the options object or argnums given positionally. */
function jacOptsOf(fn: string, args: IArguments): JacOpts {
  const forms = `${fn}(f, argnums?) or ${fn}(f, { argnums })`;
  if (typeof args[0] !== "function")
    throw new TypeError(`${fn}: expected a function, got ${describe(args[0])}; accepted forms: ${forms}`);
  checkArity(fn, args, 2, forms);
  const a1 = args[1];
  if (a1 === undefined || isPlainObject(a1)) {
    checkOptions(fn, a1, ["argnums", "holomorphic"], forms);
    return (a1 ?? {}) as JacOpts;
  }
  return { argnums: a1 as Argnums };
}

/** With holomorphic: true, every output must be complex (JAX's check); the outputs pass through. */
function holoOut(fn: string, outs: Array[], opts: JacOpts): Array[] {
  if (opts.holomorphic) for (const o of outs) checkDiffDType(fn, "outputs", o.dtype, true, false);
  return outs;
}

/** Splits f's arguments into differentiated leaves and a rebuild function, as grad does. */
function diffSetup(fn: string, args: unknown[], argnums: Argnums | undefined, holomorphic?: boolean) {
  const an = normalizeArgnums(fn, argnums as number | number[] | undefined, args.length);
  const [leaves, def] = flattenArrays(
    fn,
    an.map((i) => args[i]),
    "differentiated argument",
    true,
  );
  leaves.forEach((x) => checkDiffDType(fn, "inputs", x.dtype, holomorphic, false));
  const rebuild = (xs: Array[]) => {
    const d = unflatten(def, xs) as unknown[];
    const full = [...args];
    an.forEach((a, k) => {
      full[a] = d[k];
    });
    return full;
  };
  const wrapIn = (perLeaf: Array[]) => {
    const t = unflatten(def, perLeaf) as unknown[];
    return typeof argnums === "object" ? t : t[0];
  };
  return { leaves, rebuild, wrapIn };
}

/** jacfwd: forward-mode Jacobian by pushing forward an identity basis with vmap; result[out][in] has shape out.shape + in.shape. */
/** The result has f's output structure with each output leaf replaced by the gradient structure of the argnums. */
export function jacfwd<A extends unknown[], R, const N extends Argnums = 0>(
  f: (...args: A) => R,
  opts?: { argnums?: N; holomorphic?: boolean },
): (...args: DiffArgs<A>) => Jacobian<R, GradOf<A, N>>;
export function jacfwd(f: (...args: never[]) => unknown, _opts: JacOpts = {}): (...args: unknown[]) => unknown {
  const opts = jacOptsOf("jacfwd", arguments);
  return (...args: unknown[]): unknown => {
    const { leaves, rebuild, wrapIn } = diffSetup("jacfwd", args, opts.argnums, opts.holomorphic);
    const store: { def?: TreeDef } = {};
    const g = (...xs: Array[]) => holoOut("jacfwd", flatOut("jacfwd", (f as Fn)(...rebuild(xs)), store), opts);
    // one vmapped jvp per input leaf: [n_in, ...out] for every output leaf
    const perIn = leaves.map(
      (x, k) =>
        vmap((t: Array) =>
          jvpFlat(
            g,
            leaves,
            leaves.map((l, j) => (j === k ? t : new Zero(l.aval.strongly()))),
          )[1].map(instantiateZero),
        )(basis(x.aval)) as Array[],
    );
    const outs = perIn[0].map((_, o) =>
      leaves.map((x, k) => {
        const jt = perIn[k][o]; // [n_in, ...out]
        const moved = ops.transpose(jt, [...JSArray.from({ length: jt.ndim - 1 }, (_, i) => i + 1), 0]);
        return ops.reshape(moved, [...jt.shape.slice(1), ...x.shape]);
      }),
    );
    return unflatten(store.def!, outs.map(wrapIn));
  };
}

/** jacrev: reverse-mode Jacobian by pulling back an identity basis with vmap. */
export function jacrev<A extends unknown[], R, const N extends Argnums = 0>(
  f: (...args: A) => R,
  opts?: { argnums?: N; holomorphic?: boolean },
): (...args: DiffArgs<A>) => Jacobian<R, GradOf<A, N>>;
export function jacrev(f: (...args: never[]) => unknown, _opts: JacOpts = {}): (...args: unknown[]) => unknown {
  const opts = jacOptsOf("jacrev", arguments);
  return (...args: unknown[]): unknown => {
    const { leaves, rebuild, wrapIn } = diffSetup("jacrev", args, opts.argnums, opts.holomorphic);
    const store: { def?: TreeDef } = {};
    const lin = linearizeFlat(
      (...xs) => holoOut("jacrev", flatOut("jacrev", (f as Fn)(...rebuild(xs)), store), opts),
      leaves,
    );
    const ys = lin.primalsOut;
    const outs = ys.map((y, o) => {
      const rows = vmap((ct: Array) =>
        backwardPass(
          lin.jaxpr,
          lin.residuals,
          ys.map((yy, j) => (j === o ? ct : new Zero(yy.aval))),
        ).map((c, i) => (c instanceof Zero ? ops.zerosLikeAval(leaves[i].aval.strongly()) : c)),
      )(basis(y.aval)) as Array[];
      return wrapIn(rows.map((r, k) => ops.reshape(r, [...y.shape, ...leaves[k].shape])));
    });
    return unflatten(store.def!, outs);
  };
}
/** hessian = jacfwd(jacrev(f)): the Jacobian of the Jacobian with respect to the same argnums. */
export function hessian<A extends unknown[], R, const N extends Argnums = 0>(
  f: (...args: A) => R,
  opts?: { argnums?: N; holomorphic?: boolean },
): (...args: DiffArgs<A>) => Jacobian<Jacobian<R, GradOf<A, N>>, GradOf<A, N>>;
export function hessian(f: (...args: never[]) => unknown, _opts: JacOpts = {}): (...args: unknown[]) => unknown {
  const opts = jacOptsOf("hessian", arguments);
  return jacfwd(jacrev(f as (...args: unknown[]) => unknown, opts), opts);
}
