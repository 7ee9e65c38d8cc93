/** @file Shared runner for the NumPy-fixture tables of jnp math (test/fixtures/numpy-math-*.json). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { type FixArray, assertClose, decode, loadFixture } from "../helpers/fixtures.js";

export interface MathCase {
  name: string;
  fn: string;
  args: unknown[];
  kwargs?: Record<string, unknown>;
  out: FixArray | FixArray[] | { pybool: boolean };
  rtol?: number;
  atol?: number;
  weak?: boolean;
}
const isFix = (v: unknown): v is FixArray =>
  typeof v === "object" && v !== null && "dtype" in v && "shape" in v && "data" in v;
const numOf = (s: string | number): number =>
  s === "nan" ? NaN : s === "inf" ? Infinity : s === "-inf" ? -Infinity : Number(s);

/** Decodes a fixture array, including empty shapes (built without the Array method table). */
export function decodeArr(f: FixArray): Array {
  if (f.shape.includes(0)) return ops.reshape(array([], { dtype: f.dtype }), f.shape);
  return decode(f);
}
export function decodeArg(a: unknown): unknown {
  if (a === null || typeof a !== "object") return a;
  if (globalThis.Array.isArray(a)) return a.map(decodeArg);
  if (isFix(a)) return decodeArr(a);
  if ("num" in a) return numOf((a as { num: string }).num);
  return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, decodeArg(v)]));
}

/** Checks one result against the case's expected output (arrays, tuples of arrays, or a JS boolean). */
export function checkCase(c: MathCase, got: unknown): void {
  const tol = { rtol: c.rtol, atol: c.atol };
  if (globalThis.Array.isArray(c.out)) {
    assert.ok(globalThis.Array.isArray(got), `${c.name}: expected a list of ${c.out.length} arrays`);
    assert.equal((got as unknown[]).length, c.out.length, `${c.name}: number of outputs`);
    c.out.forEach((o, i) => assertClose((got as Array[])[i], o, { ...tol, msg: `${c.name} output ${i}` }));
    return;
  }
  if ("pybool" in c.out) {
    assert.equal(got, c.out.pybool, c.name);
    return;
  }
  assert.ok(got instanceof Array, `${c.name}: expected an Array, got ${String(got)}`);
  assertClose(got, c.out, { ...tol, msg: c.name });
  if (c.weak !== undefined) assert.equal(got.weakType, c.weak, `${c.name}: weak type`);
}

type Fn = (...args: unknown[]) => unknown;
/**
 * Registers one node:test per fixture case, calling ns[case.fn](...args, kwargs?).
 * `todo` maps case names to the reason they are known to fail (reported as TODO, not failures).
 */
export function runFixture(file: string, ns: Record<string, unknown>, todo: Record<string, string> = {}): MathCase[] {
  const { cases } = loadFixture<{ cases: MathCase[] }>(file);
  for (const c of cases) {
    test(`${c.fn}: ${c.name}`, { todo: todo[c.name] }, () => {
      const f = ns[c.fn];
      assert.equal(typeof f, "function", `no function ${c.fn}`);
      const args = c.args.map(decodeArg);
      if (c.kwargs) args.push(decodeArg(c.kwargs));
      checkCase(c, (f as Fn)(...args));
    });
  }
  return cases;
}

/** Asserts fn throws and its message matches every pattern (function name, shapes ...). */
export function assertThrowsWith(fn: () => unknown, ...patterns: (string | RegExp)[]): void {
  let err: unknown = null;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof Error, `expected an error matching ${patterns.join(", ")}`);
  for (const p of patterns) {
    if (typeof p === "string")
      assert.ok(
        err.message.includes(p),
        `error message ${JSON.stringify(err.message)} should include ${JSON.stringify(p)}`,
      );
    else assert.match(err.message, p);
  }
}
