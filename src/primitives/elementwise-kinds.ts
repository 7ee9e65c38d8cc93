/** @file What elementwise primitives share: dtype kinds they accept (with their error text) and the batching rule. */
import type { Array } from "../core/array.js";
import { type DType, isBool, isFloat, isInteger } from "../core/dtype.js";
import { type AxisData, type BDim, type Params, Primitive } from "../core/primitive.js";
import * as ops from "./bind-ops.js";

export type Kinds = "float" | "int" | "bool" | "num" | "intbool" | "any";
export function kindOk(k: Kinds, d: DType): boolean {
  switch (k) {
    case "float":
      return isFloat(d);
    case "int":
      return isInteger(d);
    case "bool":
      return isBool(d);
    case "num":
      return isFloat(d) || isInteger(d);
    case "intbool":
      return isInteger(d) || isBool(d);
    case "any":
      return true;
  }
}
export const kindText: Record<Kinds, string> = {
  float: "a floating dtype",
  int: "an integer dtype",
  bool: "bool",
  num: "a numeric (non-bool) dtype",
  intbool: "an integer or bool dtype",
  any: "any dtype",
};

/** Batching rule shared by elementwise primitives: move batch dims to 0 and broadcast unbatched operands. */
export function vmapElementwise<P extends Params>(prim: Primitive<P>) {
  return (axis: AxisData, args: Array[], dims: BDim[], params: P): [Array[], BDim[]] => {
    // per-example shape: the largest unbatched rank (rank-0 operands broadcast, as in the primitive itself)
    const exShapes = args.map((a, i) => (dims[i] === null ? a.shape : a.shape.filter((_, k) => k !== dims[i])));
    const ex = exShapes.reduce((m, s) => (s.length > m.length ? s : m), [] as number[]);
    const xs = args.map((a, i) => {
      if (dims[i] === null) return a.ndim === 0 ? a : ops.broadcastBatch(a, axis.size, 0);
      const m = ops.moveaxis(a, dims[i]!, 0);
      return m.ndim - 1 === ex.length ? m : ops.broadcastInDim(m, [axis.size, ...ex], [0]);
    });
    const outs = ops.bindN(prim, xs, params);
    return [outs, outs.map(() => 0)];
  };
}
