/** @file Wires the Array method forms (x.add, x.sum, x.reshape, x.at ...) to the numpy functions. */
import { Array, type ArrayMethodTable, registerArrayMethods } from "../core/array.js";
import { type DType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import * as np from "./index.js";
import { view } from "./view.js";

type AnyFn = (...a: never[]) => unknown;
const table: Record<string, AnyFn> = {};
// every jnp function whose first argument is the array can serve as a method
// (entries of a Record, not of the namespace: narrowing the union of every jnp export's type cost ~0.5 s per tsc run)
for (const [k, v] of Object.entries(np as Record<string, unknown>)) if (typeof v === "function") table[k] = v as AnyFn;
// NumPy-style snake aliases used by Array's method table
const alias: Record<string, string> = {
  not_equal: "notEqual",
  less_equal: "lessEqual",
  greater_equal: "greaterEqual",
  matrix_transpose: "matrixTranspose",
};
for (const [k, v] of Object.entries(alias)) if (table[v]) table[k] = table[v];
// structural fallbacks until every jnp function exists under its NumPy name
table.transpose ??= ((x: Array, axes: number[] | null) =>
  ops.transpose(x, axes ?? [...x.shape.keys()].reverse())) as AnyFn;
table.reshape ??= ((x: Array, s: number[]) => ops.reshape(x, s)) as AnyFn;
table.astype ??= ((x: Array, d: DType) => ops.convert(x, d)) as AnyFn;
table.copy ??= ((x: Array) => ops.copy(x)) as AnyFn;
table.view = view as AnyFn;
registerArrayMethods(table as unknown as ArrayMethodTable);
