/** @file The nonzero family's shared work (static size, padded positions), used by jnp.nonzero and where(condition). */
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import * as ops from "../primitives/ops.js";
import { JSArray, arr, concreteOf, indexDType, numbersOf, staticInt } from "./struct-util.js";

type AL = ArrayLike | NestedValue;
export interface NonzeroOpts {
  size: number;
  fillValue: number | number[];
}
/** Flat positions of the true entries of a 1-D bool mask, padded to `size` (traceable): [positions, count]. */
export function flatNonzero(mask: Array, size: number): [Array, Array] {
  const n = mask.shape[0];
  const m = ops.convert(mask, "int32");
  const count = ops.reduceSum(m, [0]);
  if (n === 0 || size === 0) return [ops.full([size], 0, "int32"), count];
  // slot of each true entry = its rank among the trues; false entries go past the end and are dropped
  const rank = ops.sub(ops.cumulative("cumsum", m, 0), ops.full([], 1, "int32"));
  const slot = ops.select(mask, rank, ops.full([n], size, "int32"));
  const pos = ops.scatter(
    ops.full([size], 0, "int32"),
    ops.reshape(slot, [n, 1]),
    ops.iota("int32", [n], 0),
    [0],
    "none",
    "drop",
  );
  return [pos, count];
}
export function staticSize(fn: string, mask: Array, size: number | undefined): number {
  if (size !== undefined && size !== null) return staticInt(fn, size, "size");
  const c = concreteOf(mask);
  if (!c)
    throw new Error(
      `${fn}: the size argument must be given statically to use ${fn} inside jit/vmap (the number of nonzero elements is not known while tracing); e.g. ${fn}(x, { size: 3 })`,
    );
  return numbersOf(c).filter((v) => v !== 0).length;
}
/** nonzero's work for `fn` (nonzero, or where's one-argument form), which its errors name. */
export function nonzeroOf(fn: string, a: AL, opts: Partial<NonzeroOpts>): Array[] {
  const x = arr(fn, a);
  if (x.ndim === 0) throw new Error(`${fn}: calling nonzero on 0-d arrays is not allowed; use atleast1d(x) first`);
  const mask = ops.reshape(x.dtype === "bool" ? x : ops.ne(x, ops.scalarLike(x, 0)), [x.size]);
  const size = staticSize(fn, mask, opts.size);
  const [pos, count] = flatNonzero(mask, size);
  const valid = ops.lt(ops.iota("int32", [size], 0), count);
  const fills =
    opts.fillValue === undefined
      ? x.shape.map(() => 0)
      : typeof opts.fillValue === "number"
        ? x.shape.map(() => opts.fillValue as number)
        : opts.fillValue;
  if (fills.length !== x.ndim)
    throw new Error(
      `${fn}: fillValue must be a scalar or have one entry per dimension (${x.ndim}), got ${JSON.stringify(opts.fillValue)}`,
    );
  let rest = pos;
  const out: Array[] = new JSArray(x.ndim);
  for (let d = x.ndim - 1; d >= 0; d--) {
    const n = ops.full([], Math.max(x.shape[d], 1), "int32");
    out[d] = ops.convert(ops.select(valid, ops.rem(rest, n), ops.full([size], fills[d], "int32")), indexDType());
    rest = ops.div(rest, n);
  }
  return out;
}
