/**
 * @file Recognizes jitted programs that are pure float32 elementwise chains (every array value has one shape,
 * rank-0 values broadcast) and turns them into a small dataflow program that one fused kernel evaluates in a
 * single pass over memory (see backends/onnx/wasm-kernel.ts). Anything else is left to ONNX Runtime.
 */
import type { Jaxpr, JaxprEqn } from "../core/jaxpr.js";
import { Literal, type Var } from "../core/jaxpr.js";

import type { FusedOp, FusedSpec, FusedValue } from "../backends/onnx/fused-spec.js";
export type { FusedOp, FusedSpec, FusedValue };

const UNARY: Readonly<Record<string, FusedOp>> = {
  neg: "neg",
  abs: "abs",
  sqrt: "sqrt",
  rsqrt: "rsqrt",
  floor: "floor",
  ceil: "ceil",
  sign: "sign",
  exp: "exp",
  log: "log",
  tanh: "tanh",
  logistic: "logistic",
};
const BINARY: Readonly<Record<string, FusedOp>> = {
  add: "add",
  sub: "sub",
  mul: "mul",
  div: "div",
  max: "max",
  min: "min",
};
const COMPARE: Readonly<Record<string, FusedOp>> = { eq: "eq", ne: "ne", lt: "lt", le: "le", gt: "gt", ge: "ge" };
const LOGIC: Readonly<Record<string, FusedOp>> = { and: "and", or: "or", not: "not" };

const sameShape = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((v, i) => v === b[i]);

/** The fused form of `jaxpr` (constvars already converted to invars), or null when it is not a pure float32 elementwise chain. */
export function fuseElementwise(jaxpr: Jaxpr): FusedSpec | null {
  if (jaxpr.constvars.length || jaxpr.eqns.length === 0) return null;
  let shape: readonly number[] | null = null;
  // every value is float32 (bool for masks) and has the common shape or rank 0
  const okAval = (a: { dtype: string; shape: readonly number[] }, bool: boolean): boolean => {
    if (a.dtype !== (bool ? "bool" : "float32")) return false;
    if (a.shape.length === 0) return true;
    if (shape === null) shape = a.shape;
    return sameShape(shape, a.shape);
  };
  const values: FusedValue[] = [];
  const isMask: boolean[] = [];
  const env = new Map<Var, number>();
  const push = (v: FusedValue, mask = false): number => {
    values.push(v);
    isMask.push(mask);
    return values.length - 1;
  };
  const params: (readonly ["input" | "scalar", number])[] = [];
  let numInputs = 0,
    numScalars = 0;
  for (const v of jaxpr.invars) {
    if (!okAval(v.aval, false)) return null;
    if (v.aval.shape.length === 0) {
      params.push(["scalar", numScalars]);
      env.set(v, push({ kind: "scalar", index: numScalars++ }));
    } else {
      params.push(["input", numInputs]);
      env.set(v, push({ kind: "input", index: numInputs++ }));
    }
  }
  const consts = new Map<string, number>();
  const read = (a: Var | Literal, mask: boolean): number | null => {
    if (a instanceof Literal) {
      if (mask || a.aval.dtype !== "float32" || a.aval.shape.length !== 0) return null;
      const x = Number(a.value.elementAt(0));
      const key = Object.is(x, -0) ? "-0" : String(x);
      let id = consts.get(key);
      if (id === undefined) consts.set(key, (id = push({ kind: "const", value: x })));
      return id;
    }
    const id = env.get(a);
    return id === undefined || isMask[id] !== mask ? null : id;
  };
  for (const e of jaxpr.eqns) {
    const r = fuseEqn(e, read, push, okAval);
    if (r === null) return null;
    env.set(e.outVars[0], r);
  }
  if (shape === null) return null;
  const outputs: number[] = [];
  for (const o of jaxpr.outvars) {
    if (o instanceof Literal || !sameShape(o.aval.shape, shape) || o.aval.dtype !== "float32") return null;
    const id = env.get(o);
    if (id === undefined || isMask[id]) return null;
    outputs.push(id);
  }
  return { values, outputs, params, numInputs, numScalars, shape };
}

function fuseEqn(
  e: JaxprEqn,
  read: (a: Var | Literal, mask: boolean) => number | null,
  push: (v: FusedValue, mask?: boolean) => number,
  okAval: (a: { dtype: string; shape: readonly number[] }, bool: boolean) => boolean,
): number | null {
  const name = e.primitive.name;
  if (e.outVars.length !== 1) return null;
  const out = e.outVars[0].aval;
  const args = (mask: boolean): number[] | null => {
    const r: number[] = [];
    for (const a of e.inputs) {
      const id = read(a, mask);
      if (id === null) return null;
      r.push(id);
    }
    return r;
  };
  if (name in UNARY || name in BINARY) {
    if (!okAval(out, false) || !e.inputs.every((a) => okAval(a.aval, false))) return null;
    const xs = args(false);
    return xs && push({ kind: "op", op: UNARY[name] ?? BINARY[name], args: xs });
  }
  if (name in COMPARE) {
    if (!okAval(out, true) || !e.inputs.every((a) => okAval(a.aval, false))) return null;
    const xs = args(false);
    return xs && push({ kind: "op", op: COMPARE[name], args: xs }, true);
  }
  if (name in LOGIC) {
    if (!okAval(out, true) || !e.inputs.every((a) => okAval(a.aval, true))) return null;
    const xs = args(true);
    return xs && push({ kind: "op", op: LOGIC[name], args: xs }, true);
  }
  if (name === "select_n") {
    // select_n(pred, case0, case1): case1 where pred
    if (e.inputs.length !== 3 || !okAval(e.inputs[0].aval, true) || !okAval(out, false)) return null;
    if (!okAval(e.inputs[1].aval, false) || !okAval(e.inputs[2].aval, false)) return null;
    const p = read(e.inputs[0], true),
      c0 = read(e.inputs[1], false),
      c1 = read(e.inputs[2], false);
    return p === null || c0 === null || c1 === null ? null : push({ kind: "op", op: "select", args: [p, c0, c1] });
  }
  if (name === "integer_pow") {
    if (!okAval(out, false) || !okAval(e.inputs[0].aval, false)) return null;
    const x = read(e.inputs[0], false),
      y = e.params.y as number;
    if (x === null || !Number.isInteger(y) || Math.abs(y) > 64) return null;
    return integerPow(x, y, push);
  }
  if (name === "copy" || name === "convert_element_type" || name === "broadcast_in_dim" || name === "reshape") {
    // data-preserving: same dtype, and either the common shape or a rank-0 value spread over it
    const a = e.inputs[0].aval;
    if (e.inputs.length !== 1 || !okAval(out, false) || !okAval(a, false)) return null;
    if (name === "reshape" && a.shape.length !== 0 && !sameShape(a.shape, out.shape)) return null;
    return read(e.inputs[0], false);
  }
  return null;
}

/** x^y by repeated squaring (y < 0: 1 / x^-y), as the interpreter's float integer_pow up to rounding. */
function integerPow(x: number, y: number, push: (v: FusedValue) => number): number {
  if (y === 0) return push({ kind: "const", value: 1 });
  let n = Math.abs(y),
    base = x,
    acc: number | null = null;
  while (n > 0) {
    if (n & 1) acc = acc === null ? base : push({ kind: "op", op: "mul", args: [acc, base] });
    n >>= 1;
    if (n > 0) base = push({ kind: "op", op: "mul", args: [base, base] });
  }
  return y < 0 ? push({ kind: "op", op: "div", args: [push({ kind: "const", value: 1 }), acc!] }) : acc!;
}
