/**
 * @file jnp indexing: getitem (NumPy basic + advanced indexing, as x[...] in JAX) and the at[] updater (x.at[...]).
 * The other index functions (take, takeAlongAxis, nonzero, ...) live in indexing-funcs.ts and are re-exported here.
 */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type AtIndexer, type Index, type NestedValue } from "../core/array.js";
import { isFloat, isInteger } from "../core/dtype.js";
import { ArrayImpl } from "../core/array-impl.js";
import { describe, evalTrace, withTrace } from "../core/trace.js";
import type { GatherMode, ScatterReduce } from "../primitives/indexing.js";
import * as ops from "../primitives/ops.js";
import { sliceBounds } from "./shape-pad.js";
import {
  JSArray,
  arr,
  bcast,
  broadcastShape,
  concreteOf,
  constInts,
  isPlainOptions,
  normalizeIndex,
  numbersOf,
  promoteInexact,
  range,
  shapeStr,
} from "./struct-util.js";

/** NumPy's IndexError. */
export class IndexError extends RangeError {
  constructor(msg: string) {
    super(msg);
    this.name = "IndexError";
  }
}
/** Raised for a boolean mask index whose value is not known (inside jit/vmap), like JAX's NonConcreteBooleanIndexError. */
export class NonConcreteBooleanIndexError extends TypeError {
  constructor(msg: string) {
    super(msg);
    this.name = "NonConcreteBooleanIndexError";
  }
}

type Entry =
  | { kind: "int"; value: number }
  | { kind: "slice"; start: number | null; stop: number | null; step: number | null }
  | { kind: "newaxis"; empty?: boolean }
  | { kind: "ellipsis" }
  | { kind: "array"; value: Array }
  | { kind: "bool"; value: Array };

function parseSliceString(fn: string, s: string): Entry {
  const parts = s.split(":");
  if (parts.length < 2 || parts.length > 3)
    throw new TypeError(
      `${fn}: invalid index string ${JSON.stringify(s)}; expected "start:stop", "start:stop:step" or "..."`,
    );
  const num = (p: string): number | null => {
    const t = p.trim();
    if (t === "") return null;
    const v = Number(t);
    if (!Number.isInteger(v))
      throw new TypeError(`${fn}: invalid slice ${JSON.stringify(s)}: ${JSON.stringify(p)} is not an integer`);
    return v;
  };
  return { kind: "slice", start: num(parts[0]), stop: num(parts[1]), step: parts.length === 3 ? num(parts[2]) : null };
}
function isSliceObject(x: unknown): x is { start?: number | null; stop?: number | null; step?: number | null } {
  return isPlainOptions(x) && Object.keys(x as object).every((k) => k === "start" || k === "stop" || k === "step");
}
function nestedIsBool(v: unknown): boolean {
  while (JSArray.isArray(v) && v.length > 0) v = v[0];
  return typeof v === "boolean";
}
function parseEntry(fn: string, e: unknown): Entry {
  if (e === null) return { kind: "newaxis" };
  if (typeof e === "number") {
    if (!Number.isInteger(e))
      throw new IndexError(
        `${fn}: only integers, slices, "...", null (newaxis) and integer or boolean arrays are valid indices; got ${e}`,
      );
    return { kind: "int", value: e };
  }
  if (typeof e === "bigint") return { kind: "int", value: Number(e) };
  if (typeof e === "boolean") return { kind: "bool", value: arr(fn, e) };
  if (typeof e === "string") return e.trim() === "..." ? { kind: "ellipsis" } : parseSliceString(fn, e);
  if (e instanceof Array) {
    if (e.dtype === "bool") return { kind: "bool", value: e };
    if (!isInteger(e.dtype))
      throw new IndexError(`${fn}: index arrays must have an integer or boolean dtype, got ${e.aval.str()}`);
    return { kind: "array", value: e };
  }
  if (JSArray.isArray(e)) {
    if (e.length === 0) return { kind: "array", value: ops.full([0], 0, "int32") };
    const a = arr(fn, e as NestedValue);
    if (nestedIsBool(e)) return { kind: "bool", value: a };
    if (!isInteger(a.dtype))
      throw new IndexError(`${fn}: index lists must hold integers or booleans, got ${describe(e)} (${a.aval.str()})`);
    return { kind: "array", value: a };
  }
  if (isSliceObject(e)) return { kind: "slice", start: e.start ?? null, stop: e.stop ?? null, step: e.step ?? null };
  throw new IndexError(
    `${fn}: unsupported index ${describe(e)}; expected an integer, a slice ("start:stop:step" or {start, stop, step}), "...", null, or an integer/boolean array`,
  );
}

/** A normalized index: one entry per operand dimension or new axis, bool masks expanded to integer arrays. */
interface Plan {
  entries: Entry[];
  /** a scalar boolean index (x[true] / x[false]) adds an axis of size 1 / 0 */
  scalarBool: boolean | null;
}
function boolToArrays(fn: string, mask: Array, dimShape: readonly number[], axis0: number): Array[] {
  if (mask.shape.join() !== dimShape.join()) {
    const k = mask.shape.findIndex((d, i) => d !== dimShape[i]);
    throw new IndexError(
      `${fn}: boolean index of shape ${shapeStr(mask.shape)} did not match the indexed array along axis ${axis0 + Math.max(k, 0)}: expected a mask of shape ${shapeStr(dimShape)} (the array's axes ${axis0}..${axis0 + dimShape.length - 1})`,
    );
  }
  const c = concreteOf(mask);
  if (!c) {
    throw new NonConcreteBooleanIndexError(
      `${fn}: array boolean indices must be concrete; got a traced ${mask.aval.str()} mask. Inside jit/vmap the number of selected ` +
        `elements is unknown, so the result shape cannot be known. Use jnp.where(mask, x, fill) or x.at(mask).set(v) with a scalar v, ` +
        `or nonzero(mask, { size }) to index with a static size (see JAX's NonConcreteBooleanIndexError).`,
    );
  }
  const v = numbersOf(c),
    nd = dimShape.length;
  const cols: number[][] = range(nd).map(() => []);
  const st = dimShape.map((_, i) => dimShape.slice(i + 1).reduce((p, q) => p * q, 1));
  v.forEach((b, flat) => {
    if (b) for (let d = 0; d < nd; d++) cols[d].push(Math.floor(flat / st[d]) % dimShape[d]);
  });
  return cols.map((c2) => constInts(c2, [c2.length]));
}
function plan(fn: string, shape: readonly number[], idx: readonly unknown[]): Plan {
  let entries = idx.map((e) => parseEntry(fn, e));
  let scalarBool: boolean | null = null;
  const sb = entries.filter((e) => e.kind === "bool" && e.value.ndim === 0);
  if (sb.length) {
    if (sb.length > 1 || entries.some((e) => e.kind === "array" || (e.kind === "bool" && e.value.ndim > 0)))
      throw new IndexError(`${fn}: a scalar boolean index cannot be combined with other array indices`);
    const c = concreteOf((sb[0] as { value: Array }).value);
    if (!c)
      throw new NonConcreteBooleanIndexError(
        `${fn}: a scalar boolean index must be concrete; got a traced ${(sb[0] as { value: Array }).value.aval.str()}`,
      );
    scalarBool = Boolean(c.item());
    entries = entries.map((e): Entry =>
      e.kind === "bool" && e.value.ndim === 0 ? { kind: "newaxis", empty: !scalarBool } : e,
    );
  }
  const ell = entries.filter((e) => e.kind === "ellipsis").length;
  if (ell > 1) throw new IndexError(`${fn}: an index can only have a single ellipsis ("...")`);
  const consumed = entries.reduce(
    (n, e) => n + (e.kind === "newaxis" || e.kind === "ellipsis" ? 0 : e.kind === "bool" ? e.value.ndim : 1),
    0,
  );
  if (consumed > shape.length)
    throw new IndexError(
      `${fn}: too many indices for array: array is ${shape.length}-dimensional, but ${consumed} were indexed (shape ${shapeStr(shape)})`,
    );
  const fill = (): Entry[] =>
    range(shape.length - consumed).map(() => ({ kind: "slice", start: null, stop: null, step: null }));
  const ei = entries.findIndex((e) => e.kind === "ellipsis");
  entries = ei >= 0 ? [...entries.slice(0, ei), ...fill(), ...entries.slice(ei + 1)] : [...entries, ...fill()];
  // expand boolean masks into one integer array per masked axis
  const out: Entry[] = [];
  let dim = 0;
  for (const e of entries) {
    if (e.kind === "bool") {
      const k = e.value.ndim;
      for (const a of boolToArrays(fn, e.value, shape.slice(dim, dim + k), dim)) out.push({ kind: "array", value: a });
      dim += k;
    } else {
      out.push(e);
      if (e.kind !== "newaxis") dim++;
    }
  }
  return { entries: out, scalarBool };
}

/** Per-entry static description after resolving slices against the operand's dims. */
interface Resolved {
  /** entries with their operand dim (or -1 for newaxis) */
  items: { e: Entry; dim: number; lo: number; step: number; len: number }[];
  advanced: boolean;
  /** broadcast shape of the advanced indices, and the normalized index arrays (in entry order) */
  bShape: number[];
  advIdx: Array[];
  /** whether the advanced entries are adjacent (then their dims replace them in place) */
  adjacent: boolean;
  /** result shape */
  outShape: number[];
  /** for each result dim, which source it comes from: "B" (advanced block), a slice item index, or a newaxis */
  outSrc: ("B" | number)[];
}
function resolve(fn: string, shape: readonly number[], p: Plan, strict = true): Resolved {
  if (!strict) {
    // out-of-bound static ints become (dynamic) index arrays, handled by the gather/scatter mode
    let d = 0;
    p = {
      ...p,
      entries: p.entries.map((e): Entry => {
        if (e.kind === "newaxis") return e;
        const n = shape[d++];
        return e.kind === "int" && (e.value < -n || e.value >= n)
          ? { kind: "array", value: constInts([e.value], []) }
          : e;
      }),
    };
  }
  const advanced = p.entries.some((e) => e.kind === "array");
  const items: Resolved["items"] = [];
  let dim = 0;
  for (const e of p.entries) {
    if (e.kind === "newaxis") {
      items.push({ e, dim: -1, lo: 0, step: 1, len: 1 });
      continue;
    }
    const n = shape[dim];
    if (e.kind === "int") {
      if (e.value < -n || e.value >= n)
        throw new IndexError(
          `${fn}: index ${e.value} is out of bounds for axis ${dim} with size ${n} (array shape ${shapeStr(shape)})`,
        );
      items.push({ e, dim, lo: e.value < 0 ? e.value + n : e.value, step: 1, len: 1 });
    } else if (e.kind === "slice") {
      const step = e.step ?? 1;
      if (step === 0) throw new Error(`${fn}: slice step cannot be zero`);
      const [lo, hi] = sliceBounds(e.start, e.stop, step, n);
      const len = step > 0 ? Math.max(0, Math.ceil((hi - lo) / step)) : Math.max(0, Math.ceil((lo - hi) / -step));
      items.push({ e, dim, lo, step, len });
    } else if (e.kind === "array") {
      if (n === 0 && e.value.size > 0)
        throw new IndexError(`${fn}: index is out of bounds for axis ${dim} with size 0`);
      items.push({ e, dim, lo: 0, step: 1, len: n });
    } else throw new Error(`${fn}: internal: unexpected index entry ${e.kind}`);
    dim++;
  }
  const isAdv = (it: Resolved["items"][number]) => advanced && (it.e.kind === "array" || it.e.kind === "int");
  const advItems = items.filter(isAdv);
  const advIdx = advItems.map((it) =>
    it.e.kind === "int" ? constInts([it.lo], []) : normalizeIndex((it.e as { value: Array }).value, shape[it.dim]),
  );
  const bShape = advanced
    ? broadcastShape(
        advIdx.map((a) => a.shape),
        fn,
      )
    : [];
  const pos = items.map((it, i) => (isAdv(it) ? i : -1)).filter((i) => i >= 0);
  const adjacent = pos.length > 0 && pos[pos.length - 1] - pos[0] === pos.length - 1;
  const outShape: number[] = [];
  const outSrc: ("B" | number)[] = [];
  const pushB = () => {
    for (const d of bShape) {
      outShape.push(d);
      outSrc.push("B");
    }
  };
  if (advanced && !adjacent) pushB();
  items.forEach((it, i) => {
    if (isAdv(it)) {
      if (adjacent && i === pos[0]) pushB();
      return;
    }
    if (it.e.kind === "int") return;
    outShape.push(it.dim === -1 ? 1 : it.len);
    outSrc.push(i);
  });
  return { items, advanced, bShape, advIdx, adjacent, outShape, outSrc };
}

export interface GetOpts {
  mode?: GatherMode;
  fillValue?: number;
  indicesAreSorted?: boolean;
  uniqueIndices?: boolean;
}

/** x[idx] with NumPy semantics (JAX's x[...]): ints, slices, null, "...", integer and (concrete) boolean arrays. */
export function getitem(x: ArrayLike | NestedValue, idx: Index[] | Index, opts: GetOpts = {}): Array {
  const fn = "getitem";
  checkArity(fn, arguments, 3, "getitem(x, index, { mode, fillValue, indicesAreSorted, uniqueIndices })");
  checkOptions(
    fn,
    opts,
    ["mode", "fillValue", "indicesAreSorted", "uniqueIndices"],
    "getitem(x, index, { mode, fillValue, indicesAreSorted, uniqueIndices })",
  );
  const a = arr(fn, x);
  const list = JSArray.isArray(idx) ? (idx as unknown[]) : [idx];
  const p = plan(fn, a.shape, list);
  const r = resolve(fn, a.shape, p, opts.mode === undefined || opts.mode === "promise_in_bounds");
  // 1) static slicing (negative steps via rev), keeping a dim for every consuming entry
  const nd = a.ndim;
  const starts = new JSArray<number>(nd).fill(0),
    limits = [...a.shape],
    strides = new JSArray<number>(nd).fill(1);
  const revDims: number[] = [],
    squeezeDims: number[] = [];
  for (const it of r.items) {
    if (it.dim < 0 || it.e.kind === "array") continue;
    if (it.e.kind === "int") {
      if (r.advanced) continue;
      starts[it.dim] = it.lo;
      limits[it.dim] = it.lo + 1;
      squeezeDims.push(it.dim);
      continue;
    }
    const n = a.shape[it.dim];
    if (it.step < 0) {
      revDims.push(it.dim);
      const s = n - 1 - it.lo;
      starts[it.dim] = it.len ? s : 0;
      limits[it.dim] = it.len ? s + (it.len - 1) * -it.step + 1 : 0;
      strides[it.dim] = -it.step;
    } else {
      starts[it.dim] = it.len ? it.lo : 0;
      limits[it.dim] = it.len ? it.lo + (it.len - 1) * it.step + 1 : 0;
      strides[it.dim] = it.step;
    }
  }
  let y = ops.slice(ops.rev(a, revDims), starts, limits, strides);
  if (!r.advanced) {
    y = ops.reshape(y, r.outShape);
  } else {
    // 2) gather the advanced dims: result [...B, remaining dims in order]
    const advDims = r.items
      .filter((it) => it.dim >= 0 && (it.e.kind === "array" || it.e.kind === "int"))
      .map((it) => it.dim);
    const stacked = constFold(r.advIdx, () => {
      const idxs = r.advIdx.map((v) => ops.reshape(bcast(ops.convert(v, "int32"), r.bShape), [...r.bShape, 1]));
      return idxs.length === 1 ? idxs[0] : ops.concatenate(idxs, r.bShape.length);
    });
    const mode = opts.mode === "promise_in_bounds" || opts.mode === undefined ? "clip" : opts.mode;
    y = ops.gather(y, stacked, advDims, mode, opts.fillValue ?? null);
    // 3) move the block to its NumPy position and insert new axes
    const nb = r.bShape.length;
    const restItems = r.items.map((it, i) => ({ it, i })).filter(({ it }) => it.dim >= 0 && !advDims.includes(it.dim));
    const srcPos = new Map<number, number>(restItems.map(({ i }, k) => [i, nb + k]));
    const perm: number[] = [];
    let bDone = false;
    for (const s of r.outSrc) {
      if (s === "B") {
        if (!bDone) {
          perm.push(...range(nb));
          bDone = true;
        }
        continue;
      }
      const q = srcPos.get(s);
      if (q !== undefined) perm.push(q);
    }
    y = ops.reshape(ops.transpose(y, perm), r.outShape);
  }
  if (p.scalarBool === false) {
    const k = r.outSrc.findIndex(
      (s) => s !== "B" && r.items[s].e.kind === "newaxis" && (r.items[s].e as { empty?: boolean }).empty === true,
    );
    y = ops.sliceInDim(y, 0, 0, 1, k);
  }
  return y;
}

/** Runs f on the eval trace when every input is a constant, so constant index arithmetic is folded, not traced. */
function constFold<T>(inputs: readonly Array[], f: () => T): T {
  return inputs.every((a) => a instanceof ArrayImpl) ? withTrace(evalTrace, f) : f();
}

/** The operand coordinates of every element of x[idx]: int32 [...outShape, ndim] (for scatter). */
function coordinates(
  fn: string,
  shape: readonly number[],
  idx: readonly unknown[],
): { coords: Array; outShape: number[]; scalarBool: boolean | null } {
  const p = plan(fn, shape, idx);
  const r = resolve(fn, shape, p, false);
  return constFold(r.advIdx, () => coordinatesOf(r, p));
}
function coordinatesOf(r: Resolved, p: Plan): { coords: Array; outShape: number[]; scalarBool: boolean | null } {
  const R = r.outShape;
  const bPos = r.outSrc.map((s, i) => (s === "B" ? i : -1)).filter((i) => i >= 0);
  let advK = 0;
  const comps: Array[] = [];
  r.items.forEach((it, i) => {
    if (it.dim < 0) return;
    let c: Array;
    if (r.advanced && (it.e.kind === "array" || it.e.kind === "int")) {
      const v = bcast(ops.convert(r.advIdx[advK++], "int32"), r.bShape);
      c = ops.broadcastInDim(v, R, bPos);
    } else if (it.e.kind === "int") {
      c = ops.full(R, it.lo, "int32");
    } else {
      const od = r.outSrc.indexOf(i);
      c = ops.add(ops.mul(ops.iota("int32", R, od), ops.full([], it.step, "int32")), ops.full([], it.lo, "int32"));
    }
    comps.push(ops.reshape(c, [...R, 1]));
  });
  return { coords: ops.concatenate(comps, R.length), outShape: R, scalarBool: p.scalarBool };
}

export interface UpdateOpts {
  mode?: GatherMode;
  indicesAreSorted?: boolean;
  uniqueIndices?: boolean;
}
function scatterUpdate(
  fn: string,
  x: Array,
  idx: readonly unknown[],
  v: ArrayLike | NestedValue,
  reduce: ScatterReduce,
  opts: UpdateOpts,
  negate = false,
): Array {
  let vals = arr(fn, v);
  // a traced boolean mask covering the whole array with a scalar value: a select (works under jit)
  if (
    idx.length === 1 &&
    idx[0] instanceof Array &&
    idx[0].dtype === "bool" &&
    !concreteOf(idx[0]) &&
    idx[0].shape.join() === x.shape.join() &&
    vals.ndim === 0
  ) {
    const vv = ops.convert(negate ? ops.neg(vals) : vals, x.dtype);
    const upd =
      reduce === "none"
        ? bcast(vv, x.shape)
        : reduce === "add"
          ? ops.add(x, vv)
          : reduce === "mul"
            ? ops.mul(x, vv)
            : reduce === "min"
              ? ops.min(x, vv)
              : ops.max(x, vv);
    return ops.select(idx[0], bcast(upd, x.shape), x);
  }
  const base = x.ndim === 0 ? ops.reshape(x, [1]) : x;
  const { coords, outShape, scalarBool } = x.ndim === 0 ? zeroDimCoords(fn, idx) : coordinates(fn, x.shape, idx);
  const shapeOk =
    vals.ndim <= outShape.length &&
    vals.shape.every((d, i) => d === 1 || d === outShape[outShape.length - vals.ndim + i]);
  if (!shapeOk)
    throw new Error(
      `${fn}: cannot broadcast update values of shape ${shapeStr(vals.shape)} to the indexed shape ${shapeStr(outShape)} (array shape ${shapeStr(x.shape)})`,
    );
  vals = ops.convert(negate ? ops.neg(vals) : vals, x.dtype);
  let upd = bcast(vals, outShape),
    cs = coords;
  if (scalarBool === false) return x;
  const mode =
    opts.mode === undefined || opts.mode === "fill" ? "drop" : opts.mode === "promise_in_bounds" ? "clip" : opts.mode;
  // flatten the update grid so that repeated indices accumulate
  const n = outShape.reduce((p, q) => p * q, 1);
  upd = ops.reshape(upd, [n]);
  cs = ops.reshape(cs, [n, base.ndim]);
  const y = ops.scatter(base, cs, upd, range(base.ndim), reduce, mode);
  return x.ndim === 0 ? ops.reshape(y, []) : y;
}
function zeroDimCoords(
  fn: string,
  idx: readonly unknown[],
): { coords: Array; outShape: number[]; scalarBool: boolean | null } {
  const p = plan(fn, [], idx);
  const outShape = p.entries.map(() => 1);
  return { coords: ops.full([...outShape, 1], 0, "int32"), outShape, scalarBool: p.scalarBool };
}

/** x.at(...idx): JAX's functional index update helper. */
export function at(x: ArrayLike | NestedValue, idx: Index[] | Index): AtIndexer {
  const a = arr("at", x);
  const list = JSArray.isArray(idx) ? (idx as unknown[]) : [idx];
  const upd =
    (name: string, reduce: ScatterReduce, negate = false) =>
    (v: ArrayLike, o: UpdateOpts = {}) =>
      scatterUpdate(`at.${name}`, a, list, v, reduce, o, negate);
  const ratio =
    (name: string, op: (base: Array, m: Array) => Array) =>
    (v: ArrayLike, o: UpdateOpts = {}): Array => {
      // x op scatter_mul(ones, idx, v): the multiplicative update applied once per index occurrence
      const ones = ops.fullLike(a, 1);
      const m = scatterUpdate(`at.${name}`, ones, list, v, "mul", o);
      return op(a, m);
    };
  return {
    get: (o: GetOpts = {}) => getitem(a, list as Index[], o),
    set: upd("set", "none"),
    add: upd("add", "add"),
    subtract: upd("subtract", "add", true),
    multiply: upd("multiply", "mul"),
    divide: ratio("divide", (b, m) => {
      const [p, q] = promoteInexact("at.divide", [b, m]);
      return ops.convert(ops.div(p, q), isFloat(a.dtype) ? a.dtype : p.dtype);
    }),
    power: ratio("power", (b, m) => ops.pow(b, m)),
    min: upd("min", "min"),
    max: upd("max", "max"),
  };
}

export * from "./indexing-funcs.js";
