/** @file Test harness for the ONNX compiler: runs a primitive (or a jaxpr) on the reference interpreter and on the ONNX backend and compares. */
import assert from "node:assert/strict";
import { interpreterBackend } from "../../src/backends/interpreter/interpreter.js";
import { onnxBackend, onnxBackendOptions } from "../../src/backends/onnx/onnx-backend.js";
import { ArrayImpl } from "../../src/core/array-impl.js";
import { ShapedArray } from "../../src/core/aval.js";
import { fromBigInts, fromNumbers } from "../../src/core/convert.js";
import { type DType, isBigInt, isFloat } from "../../src/core/dtype.js";
import type { Params, Primitive } from "../../src/core/primitive.js";
import type { Array as JaxArray } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import { type Jaxpr, evalJaxpr } from "../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { evalTrace, withTrace } from "../../src/core/trace.js";

// tests exercise the ONNX lowering itself: no scalar shortcut, and lowering bugs must surface
onnxBackendOptions.strict = true;
onnxBackendOptions.scalarFastPath = false;

export const FLOATS: readonly DType[] = ["float32", "float16", "bfloat16", "float64"];
export const INTS: readonly DType[] = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"];

/** A concrete array from JS values (converted like convert_element_type; bigints for 64-bit ints allowed). */
export function arr(
  dtype: DType,
  shape: readonly number[],
  values: readonly (number | bigint | boolean)[],
  weak = false,
): ArrayImpl {
  const n = shape.reduce((a, b) => a * b, 1);
  const vals = shape.length === 0 && values.length === 0 ? [0] : values;
  const full = Array.from({ length: n }, (_, i) => vals[i % Math.max(vals.length, 1)]);
  const aval = new ShapedArray(shape, dtype, weak);
  if (isBigInt(dtype))
    return new ArrayImpl(
      aval,
      fromBigInts(
        full.map((v) => (typeof v === "bigint" ? v : BigInt(Math.trunc(Number(v))))),
        dtype,
      ),
    );
  return new ArrayImpl(
    aval,
    fromNumbers(
      full.map((v) => Number(v)),
      dtype,
    ),
  );
}
export const vec = (dtype: DType, values: readonly (number | bigint | boolean)[]): ArrayImpl =>
  arr(dtype, [values.length], values);

export function tolerance(d: DType): { rtol: number; atol: number } {
  switch (d) {
    case "float64":
      return { rtol: 1e-12, atol: 1e-14 };
    case "float32":
      return { rtol: 2e-6, atol: 1e-6 };
    case "float16":
      return { rtol: 2e-3, atol: 1e-3 };
    case "bfloat16":
      return { rtol: 1.6e-2, atol: 1e-2 };
    default:
      return { rtol: 0, atol: 0 };
  }
}

/** Asserts same dtype, shape, weak type and values (exact for ints/bools; NaN matches NaN). */
export function assertSame(
  actual: ArrayImpl,
  expected: ArrayImpl,
  label: string,
  tol?: { rtol?: number; atol?: number; anyZeroSign?: boolean },
): void {
  assert.equal(actual.dtype, expected.dtype, `${label}: dtype`);
  assert.deepEqual([...actual.shape], [...expected.shape], `${label}: shape`);
  assert.equal(actual.weakType, expected.weakType, `${label}: weak type`);
  const d = expected.dtype;
  const t = tolerance(d);
  if (tol?.rtol !== undefined) t.rtol = tol.rtol;
  if (tol?.atol !== undefined) t.atol = tol.atol;
  for (let i = 0; i < expected.size; i++) {
    const a = actual.elementAt(i),
      e = expected.elementAt(i);
    if (!isFloat(d)) {
      if (a !== e) assert.fail(`${label}: element ${i}: got ${a}, expected ${e}`);
      continue;
    }
    const an = a as number,
      en = e as number;
    if (Number.isNaN(en)) {
      if (!Number.isNaN(an)) assert.fail(`${label}: element ${i}: got ${an}, expected NaN`);
      continue;
    }
    if (!Number.isFinite(en)) {
      if (an !== en) assert.fail(`${label}: element ${i}: got ${an}, expected ${en}`);
      continue;
    }
    if (en === 0 && an === 0 && !tol?.anyZeroSign && Object.is(an, -0) !== Object.is(en, -0))
      assert.fail(
        `${label}: element ${i}: got ${Object.is(an, -0) ? "-0" : "+0"}, expected ${Object.is(en, -0) ? "-0" : "+0"}`,
      );
    if (!(Math.abs(an - en) <= t.atol + t.rtol * Math.abs(en)))
      assert.fail(`${label}: element ${i}: got ${an}, expected ${en} (rtol ${t.rtol}, atol ${t.atol})`);
  }
}

const show = (a: ArrayImpl): string =>
  a.size <= 6
    ? `${a.aval.str()}${JSON.stringify(a.tolist(), (_k, v) => (typeof v === "bigint" ? String(v) : v))}`
    : a.aval.str();

export interface Case {
  prim: Primitive;
  args: ArrayImpl[];
  params?: Params;
  rtol?: number;
  atol?: number;
  label?: string;
  /** Accept +0 for -0 and vice versa (max/min on a signed-zero tie; see lower-util minMax). */
  anyZeroSign?: boolean;
}

/** Runs one primitive on both backends and compares every output. */
export function check(c: Case): void {
  const params = c.params ?? {};
  const label =
    c.label ??
    `${c.prim.name}(${c.args.map(show).join(", ")})${Object.keys(params).length ? ` ${JSON.stringify(params)}` : ""}`;
  const expected = interpreterBackend.execute(c.prim, c.args, params);
  let actual: ArrayImpl[];
  try {
    actual = onnxBackend.execute(c.prim, c.args, params);
  } catch (e) {
    throw new Error(`${label}: ONNX backend failed: ${(e as Error).message}`);
  }
  assert.equal(actual.length, expected.length, `${label}: number of outputs`);
  const anyZeroSign =
    c.anyZeroSign ??
    ["max", "min", "clamp", "reduce_max", "reduce_min", "cummax", "cummin", "scatter"].includes(c.prim.name);
  actual.forEach((a, i) =>
    assertSame(a, expected[i], `${label} out ${i}`, { rtol: c.rtol, atol: c.atol, anyZeroSign }),
  );
}

/** Runs every case, collecting failures so one test reports all of them. */
export function checkAll(cases: Case[]): void {
  const fails: string[] = [];
  for (const c of cases) {
    try {
      check(c);
    } catch (e) {
      fails.push((e as Error).message);
    }
  }
  if (fails.length) assert.fail(`${fails.length} of ${cases.length} cases failed:\n${fails.slice(0, 40).join("\n")}`);
}

/** Traces f at args, runs the jaxpr on the interpreter and as one compiled ONNX program, and compares the outputs. */
export function checkProgram(
  f: (...xs: JaxArray[]) => JaxArray[],
  args: ArrayImpl[],
  label: string,
  tol?: { rtol?: number; atol?: number },
): Jaxpr {
  const { jaxpr, consts } = traceToJaxpr(
    f,
    args.map((a) => a.aval),
    label,
  );
  const cs = consts as ArrayImpl[];
  const prev = config.backend;
  config.update("backend", "interpreter");
  let expected: ArrayImpl[];
  try {
    expected = withTrace(evalTrace, () => evalJaxpr(jaxpr, cs, args)) as ArrayImpl[];
  } finally {
    config.update("backend", prev);
  }
  const actual = onnxBackend.executeJaxpr!(jaxpr, cs, args, { name: label });
  assert.equal(actual.length, expected.length);
  actual.forEach((a, i) => assertSame(a, expected[i], `${label} out ${i}`, tol));
  return jaxpr;
}
