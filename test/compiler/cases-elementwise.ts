/** @file Case tables for the elementwise primitives (run by elementwise.test.ts; also read by the coverage test). */
import type { DType } from "../../src/core/dtype.js";
import { getPrimitive } from "../../src/core/primitive.js";
import "../../src/primitives/ops.js";
import { type Case, FLOATS, INTS, arr, vec } from "./harness.js";

const GENERAL = [-3.5, -1, -0.5, -0, 0, 0.3, 1, 2.5, 10, NaN, Infinity, -Infinity];
const POSITIVE = [1e-30, 1e-5, 0.5, 1, 2, 100, 1e30, 0, -1, NaN, Infinity];
const UNIT = [-1, -0.99, -0.5, 0, 1e-8, 0.3, 0.9999, 1, 1.5, -2, NaN];
const DOMAINS: Record<string, number[]> = {
  neg: GENERAL,
  sign: GENERAL,
  floor: [-2.5, -0.5, 0.5, 1.5, 3, NaN, Infinity],
  ceil: [-2.5, -0.5, 0.5, 1.5, 3, NaN, -Infinity],
  round: [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.7, 3.2, NaN, Infinity, 0],
  is_finite: GENERAL,
  exp: [-100, -10, -1, 0, 0.5, 1, 10, 80, NaN, Infinity, -Infinity],
  exp2: [-20, -1.5, 0, 0.5, 3, 10.25, 100, NaN],
  log: POSITIVE,
  log1p: [-1, -0.5, -1e-10, 0, 1e-10, 1e-5, 0.5, 3, 1e10, Infinity, -2, NaN],
  expm1: [-50, -1, -1e-6, -1e-12, 0, 1e-12, 1e-6, 0.1, 1, 10, 100, Infinity, -Infinity, NaN],
  tanh: [-20, -3, -0.5, -1e-3, 0, 1e-5, 0.5, 1, 3, 20, NaN, Infinity],
  logistic: [-100, -30, -10, -1, 0, 0.5, 2, 10, 30, 100, NaN, Infinity, -Infinity],
  sin: [-10, -3, -1, -1e-4, 0, 0.5, 1, 2, 3, 6, 100, NaN],
  cos: [-10, -3, -1, 0, 0.5, 1, 1.5, 2, 3, 6, 100, NaN],
  tan: [-1.5, -1, -0.3, 0, 1e-5, 0.5, 1, 1.4, 3, NaN],
  asin: UNIT,
  acos: UNIT,
  atan: [-1e10, -5, -1, -0.5, 0, 1e-8, 0.2, 0.9, 1.1, 3, 1e10, Infinity, -Infinity, NaN],
  sinh: [-10, -2, -0.5, -1e-6, 0, 1e-8, 0.1, 1, 3, 20, NaN, Infinity],
  cosh: [-10, -2, -0.5, 0, 0.1, 1, 3, 20, NaN, -Infinity],
  asinh: [-1e10, -5, -1, -1e-6, 0, 1e-9, 0.5, 2, 100, 1e10, NaN, Infinity],
  acosh: [1, 1.0001, 1.5, 2, 10, 1e5, 1e10, 0.5, NaN, Infinity],
  atanh: [-1, -0.999, -0.5, -1e-7, 0, 1e-9, 0.3, 0.9, 0.99999, 1, 1.5, NaN],
  sqrt: POSITIVE,
  rsqrt: POSITIVE,
  cbrt: [-1000, -8, -1e-20, -0, 0, 1e-30, 0.001, 2, 27, 1e20, NaN, Infinity, -Infinity],
  abs: GENERAL,
  erf: [-5, -2.6, -2.5, -1, -0.1, 0, 1e-9, 0.3, 1, 2, 2.4, 3.5, 6, NaN, Infinity, -Infinity],
  erfc: [-5, -2.6, -2.5, -1, -0.1, 0, 1e-9, 0.3, 1, 2, 2.4, 2.5, 3.5, 6, 10, 27.5, NaN, Infinity, -Infinity],
  erf_inv: [-1, -0.999, -0.9, -0.5, 0, 1e-7, 0.3, 0.95, 0.99999, 1, 1.2, NaN],
  lgamma: [-2.5, -1.5, -0.5, 0.1, 0.5, 1, 1.5, 2, 3.7, 10, 100, 1e5, 0, -1, NaN, Infinity],
  digamma: [-2.5, -1.5, -0.5, 0.1, 0.5, 1, 1.5, 2, 3.7, 10, 100, 1e5, 0, -1, NaN],
  copy: GENERAL,
};

function unaryCases(name: string, dtypes: readonly DType[], values: readonly number[], params = {}): Case[] {
  const prim = getPrimitive(name);
  const cases: Case[] = [];
  for (const d of dtypes) {
    cases.push({ prim, args: [vec(d, values)], params });
    cases.push({ prim, args: [arr(d, [], [values[1]])], params });
    cases.push({ prim, args: [arr(d, [0, 3], [])], params });
    cases.push({ prim, args: [arr(d, [2, 3], values.slice(0, 6))], params });
  }
  return cases;
}

const INT_VALUES: Record<DType, (number | bigint)[]> = {
  int8: [-128, -100, -1, 0, 1, 7, 100, 127],
  uint8: [0, 1, 7, 100, 128, 200, 255, 3],
  int16: [-32768, -1000, -1, 0, 1, 7, 1000, 32767],
  uint16: [0, 1, 7, 1000, 32768, 50000, 65535, 3],
  int32: [-2147483648, -100000, -1, 0, 1, 7, 100000, 2147483647],
  uint32: [0, 1, 7, 100000, 2147483648, 3000000000, 4294967295, 3],
  int64: [-(2n ** 63n), -(2n ** 40n), -1n, 0n, 1n, 7n, 2n ** 40n, 2n ** 63n - 1n],
  uint64: [0n, 1n, 7n, 2n ** 40n, 2n ** 63n, 2n ** 64n - 1n, 3n, 100n],
  bool: [],
  float16: [],
  bfloat16: [],
  float32: [],
  float64: [],
  complex64: [],
  complex128: [],
};

const FB = [-3, -1.5, -0, 0, 0.25, 1, 2.5, 7, NaN, Infinity, -Infinity, 1e-3];
const FB2 = [2, -0.5, 0, -0, 3, -1, 0.5, -7, 1, Infinity, 2, 1e3];

/** unary float primitives match the interpreter (f32, f16, bf16, f64; special values; 0-d and empty) */
export function unaryFloatCases(): Case[] {
  const cases: Case[] = [];
  for (const [name, values] of Object.entries(DOMAINS)) {
    cases.push(...unaryCases(name, FLOATS, values, name === "round" ? { rounding_method: 0 } : {}));
  }
  cases.push(...unaryCases("round", FLOATS, DOMAINS.round, { rounding_method: 1 }));
  const PG = [-2.5, 1e-3, -1, -0, 0, 0.5, 1, 2.5, 14.9, 15, 100, 1e5, NaN, Infinity, -Infinity];
  for (const m of [0, 1, 2, 4]) cases.push(...unaryCases("polygamma", FLOATS, PG, { m }));
  for (const y of [0, 1, 2, 3, 5, -1, -2, 7])
    cases.push(...unaryCases("integer_pow", FLOATS, [-2, -0.5, 0, 0.3, 1, 1.7, 3, 10, NaN], { y }));
  return cases;
}

/** unary integer primitives match the interpreter (wrap-around, every integer dtype) */
export function unaryIntCases(): Case[] {
  const cases: Case[] = [];
  for (const name of ["neg", "sign", "abs", "not", "copy", "population_count", "clz"]) {
    // the interpreter's population_count/clz treat 64-bit values as plain numbers; compare 8..32-bit types
    const dts = name === "population_count" || name === "clz" ? INTS.filter((d) => !d.endsWith("64")) : INTS;
    for (const d of dts) {
      const prim = getPrimitive(name);
      cases.push(
        { prim, args: [vec(d, INT_VALUES[d])] },
        { prim, args: [arr(d, [], [INT_VALUES[d][2]])] },
        { prim, args: [arr(d, [0], [])] },
      );
    }
  }
  for (const y of [0, 1, 2, 3, 5])
    for (const d of INTS)
      cases.push({ prim: getPrimitive("integer_pow"), args: [vec(d, INT_VALUES[d].slice(1, 7))], params: { y } });
  for (const d of ["int32", "uint8"] as DType[])
    cases.push({ prim: getPrimitive("integer_pow"), args: [vec(d, [2, 3])], params: { y: -1 } });
  for (const name of ["not", "copy"])
    cases.push({ prim: getPrimitive(name), args: [vec("bool", [true, false, true])] });
  return cases;
}

/** binary float primitives match the interpreter (incl. rank-0 broadcasting) */
export function binaryFloatCases(): Case[] {
  const cases: Case[] = [];
  const names = [
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "pow",
    "max",
    "min",
    "atan2",
    "nextafter",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
  ];
  for (const name of names) {
    const prim = getPrimitive(name);
    for (const d of FLOATS) {
      cases.push({ prim, args: [vec(d, FB), vec(d, FB2)] });
      cases.push({ prim, args: [vec(d, FB), arr(d, [], [2.5])] });
      cases.push({ prim, args: [arr(d, [], [-1.5]), vec(d, FB2)] });
      cases.push({ prim, args: [arr(d, [], [0.5]), arr(d, [], [3])] });
      cases.push({ prim, args: [arr(d, [0], []), arr(d, [0], [])] });
    }
  }
  // atan2 quadrants and signed zeros
  const ys = [0, -0, 0, -0, 1, -1, 1, -1, Infinity, -Infinity, Infinity, 3, 0];
  const xs = [0, 0, -0, -0, Infinity, Infinity, -Infinity, -Infinity, Infinity, -Infinity, 2, 0, -5];
  for (const d of FLOATS) cases.push({ prim: getPrimitive("atan2"), args: [vec(d, ys), vec(d, xs)] });
  // weak types combine like the primitive says
  cases.push({
    prim: getPrimitive("add"),
    args: [arr("float32", [3], [1, 2, 3], true), arr("float32", [], [2], true)],
  });
  return cases;
}

/** binary integer and bool primitives match the interpreter (wrap, x/0, shifts past the width) */
export function binaryIntCases(): Case[] {
  const cases: Case[] = [];
  const names = [
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "pow",
    "max",
    "min",
    "and",
    "or",
    "xor",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
  ];
  for (const name of names) {
    const prim = getPrimitive(name);
    for (const d of INTS) {
      const a = INT_VALUES[d];
      const small: (number | bigint)[] = d.endsWith("64") ? [3n, 0n, 1n, 2n, 5n, 7n, 1n, 0n] : [3, 0, 1, 2, 5, 7, 1, 0];
      // the interpreter multiplies 64-bit values exactly only as bigints and powers small numbers; keep pow/mul operands in range
      const lhs = name === "pow" ? (d.endsWith("64") ? [2n, 3n, 0n, 1n, 5n, 2n, 7n, 1n] : [2, 3, 0, 1, 5, 2, 7, 1]) : a;
      const rhs = name.startsWith("shift")
        ? d.startsWith("u")
          ? small.map((v, i) => (i === 6 ? (d.endsWith("64") ? 64n : 40) : v))
          : [3, 0, -1, 2, 40, 7, 1, 0].map((v) => (d.endsWith("64") ? BigInt(v) : v))
        : name === "pow"
          ? small.map((v, i) => (i === 7 ? (d.startsWith("u") ? v : d.endsWith("64") ? -1n : -1) : v))
          : name === "div" || name === "rem"
            ? d.startsWith("u")
              ? small
              : [3, 0, -1, 2, -5, 7, 1, -1].map((v) => (d.endsWith("64") ? BigInt(v) : v))
            : [...a].reverse();
      if (d.endsWith("64") && (name === "mul" || name === "pow")) continue;
      cases.push({ prim, args: [vec(d, lhs), vec(d, rhs)] });
      cases.push({ prim, args: [vec(d, lhs), arr(d, [], [rhs[0]])] });
      cases.push({ prim, args: [arr(d, [], [lhs[1]]), arr(d, [], [rhs[3]])] });
    }
  }
  for (const d of ["int64", "uint64"] as DType[]) {
    cases.push({
      prim: getPrimitive("mul"),
      args: [vec(d, [3n, 2n ** 40n, 2n ** 62n, 7n]), vec(d, [5n, 2n ** 30n, 4n, 2n ** 61n])],
    });
  }
  for (const name of ["add", "mul", "max", "min", "and", "or", "xor", "eq", "ne", "lt", "le", "gt", "ge"]) {
    const t = [true, true, false, false],
      f = [true, false, true, false];
    cases.push({ prim: getPrimitive(name), args: [vec("bool", t), vec("bool", f)] });
    cases.push({ prim: getPrimitive(name), args: [vec("bool", t), arr("bool", [], [true])] });
  }
  return cases;
}
