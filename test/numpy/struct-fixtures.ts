/** @file Shared runner for the numpy-struct-*.json fixture cases (shape ops, indexing, sorting, products, linalg). */
import assert from "node:assert/strict";
import { Array } from "../../src/core/array.js";
import type { DType } from "../../src/core/dtype.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { type FixArray, assertClose, loadFixture } from "../helpers/fixtures.js";

export interface Case {
  name: string;
  fn: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
  out: unknown;
  check?: string;
  tol?: { rtol?: number; atol?: number };
  kth?: number;
  full?: boolean;
}
type Fn = (...a: unknown[]) => unknown;

const num = (v: number | boolean | string): number =>
  typeof v === "boolean"
    ? v
      ? 1
      : 0
    : v === "nan"
      ? NaN
      : v === "inf"
        ? Infinity
        : v === "-inf"
          ? -Infinity
          : Number(v);

/** A fixture array as an Array (empty shapes included, without the method table). */
export function dec(f: FixArray): Array {
  const vals = f.data.map(num);
  const flat =
    f.dtype === "bool"
      ? array(
          vals.map((v) => v !== 0),
          { dtype: "bool" },
        )
      : array(vals.length ? vals : [], { dtype: f.dtype as DType });
  return ops.reshape(flat, f.shape);
}
/** Decodes case arguments: {"a": fix} -> Array, {"list": [...]} -> JS array, "inf"/"-inf" -> numbers; the rest as is. */
export function decodeArg(v: unknown): unknown {
  if (v === "inf") return Infinity;
  if (v === "-inf") return -Infinity;
  if (globalThis.Array.isArray(v)) return v.map(decodeArg);
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if ("a" in o && Object.keys(o).length === 1) return dec(o.a as FixArray);
    if ("list" in o && Object.keys(o).length === 1) return (o.list as unknown[]).map(decodeArg);
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, decodeArg(x)]));
  }
  return v;
}

/** Nested JS numbers of an Array, as float64. */
export const js = (x: Array): number[] => {
  const out: number[] = [];
  const rec = (v: unknown): void => {
    if (globalThis.Array.isArray(v)) v.forEach(rec);
    else out.push(typeof v === "boolean" ? (v ? 1 : 0) : Number(v));
  };
  rec(x.tolist());
  return out;
};
/** Batched row-major matrices [b][r][c] of an Array with shape [..., r, c]. */
function mats(x: Array): number[][][] {
  const s = x.shape,
    r = s[s.length - 2],
    c = s[s.length - 1],
    d = js(x);
  const nb = d.length / Math.max(r * c, 1);
  return globalThis.Array.from({ length: r * c ? nb : 0 }, (_, b) =>
    globalThis.Array.from({ length: r }, (_, i) => d.slice(b * r * c + i * c, b * r * c + (i + 1) * c)),
  );
}
const matmulJs = (a: number[][], b: number[][]): number[][] =>
  a.map((row) => b[0].map((_, j) => row.reduce((s, v, k) => s + v * b[k][j], 0)));
const tr = (a: number[][]): number[][] => a[0].map((_, j) => a.map((row) => row[j]));
function near(a: number[][], b: number[][], tol: number, what: string): void {
  a.forEach((row, i) =>
    row.forEach((v, j) =>
      assert.ok(Math.abs(v - b[i][j]) <= tol * (1 + Math.abs(b[i][j])), `${what}: [${i},${j}] ${v} vs ${b[i][j]}`),
    ),
  );
}
const eye = (n: number): number[][] =>
  globalThis.Array.from({ length: n }, (_, i) => globalThis.Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));

function compare(actual: unknown, expected: unknown, c: Case, path: string): void {
  const tol = { ...c.tol, msg: `${c.name}${path}` };
  if (expected !== null && typeof expected === "object" && !globalThis.Array.isArray(expected)) {
    const e = expected as Record<string, unknown>;
    if ("a" in e) {
      assert.ok(actual instanceof Array, `${c.name}${path}: expected an Array, got ${String(actual)}`);
      assertClose(actual, e.a as FixArray, tol);
      return;
    }
    if ("list" in e) {
      const list = e.list as unknown[];
      const got = [...(actual as Iterable<unknown>)];
      assert.equal(got.length, list.length, `${c.name}${path}: number of results`);
      list.forEach((x, i) => compare(got[i], x, c, `${path}[${i}]`));
      return;
    }
  }
  assert.deepEqual(actual, expected, `${c.name}${path}`);
}

/** Runs one case's function (the "at" pseudo-function dispatches to x.at[idx].op). */
export function call(fns: Record<string, unknown>, c: Case): unknown {
  const args = c.args.map(decodeArg);
  const kw = decodeArg(c.kwargs) as Record<string, unknown>;
  if (c.fn === "at") {
    const [x, idx, op, v] = args as [Array, unknown[], string, unknown];
    const at = (fns.at as Fn)(x, idx) as Record<string, Fn>;
    return op === "get" ? at.get(v) : at[op](v);
  }
  const f = fns[c.fn] as Fn | undefined;
  if (typeof f !== "function") throw new Error(`fixture names unknown function ${c.fn}`);
  return Object.keys(kw).length ? f(...args, kw) : f(...args);
}

/** Checks that need more than an elementwise comparison (decompositions compare invariants, not signs). */
function special(c: Case, actual: unknown): void {
  const tol = c.tol?.atol ?? 2e-4;
  const expArr = (c.out as { a?: FixArray }).a;
  const input = decodeArg(c.args[0]) as Array;
  switch (c.check) {
    case "partition":
    case "argpartition": {
      const exp = expArr!.data.map(num);
      const kth = c.kth!;
      const vals = c.check === "partition" ? js(actual as Array) : js(actual as Array).map((i) => js(input)[i]);
      assert.equal(vals[kth], exp[kth], `${c.name}: the kth element`);
      vals.forEach((v, i) =>
        assert.ok(
          i < kth ? v <= vals[kth] : i > kth ? v >= vals[kth] : true,
          `${c.name}: element ${i} on the wrong side`,
        ),
      );
      assert.deepEqual(
        [...vals].sort((p, q) => p - q),
        [...exp].sort((p, q) => p - q),
        `${c.name}: same multiset`,
      );
      return;
    }
    case "qr": {
      const [q, r] = [...(actual as Iterable<Array>)];
      compare([q, r], c.out, c, "");
      const A = mats(input),
        Q = mats(q),
        R = mats(r);
      A.forEach((a, b) => {
        near(matmulJs(Q[b], R[b]), a, tol, `${c.name}: Q R = A`);
        near(matmulJs(tr(Q[b]), Q[b]), eye(Q[b][0].length), tol, `${c.name}: Q^T Q = I`);
        R[b].forEach((row, i) =>
          row.forEach((v, j) => {
            if (j < i) assert.ok(Math.abs(v) < 1e-6, `${c.name}: R upper`);
          }),
        );
      });
      return;
    }
    case "qr-r":
      compare(actual, c.out, c, "");
      return;
    case "svd": {
      const [U, S, Vh] = [...(actual as Iterable<Array>)];
      compare(S, c.out, c, ".S");
      const A = mats(input),
        u = mats(U),
        vh = mats(Vh),
        s = js(S);
      const m = input.shape[input.ndim - 2],
        n = input.shape[input.ndim - 1],
        k = Math.min(m, n);
      assert.deepEqual(U.shape.slice(-2), [m, c.full ? m : k], `${c.name}: U shape`);
      assert.deepEqual(Vh.shape.slice(-2), [c.full ? n : k, n], `${c.name}: Vh shape`);
      A.forEach((a, b) => {
        const us = u[b].map((row) => row.slice(0, k).map((v, j) => v * s[b * k + j]));
        near(matmulJs(us, vh[b].slice(0, k)), a, tol, `${c.name}: U S Vh = A`);
        near(matmulJs(tr(u[b]), u[b]), eye(u[b][0].length), tol, `${c.name}: U^T U = I`);
        near(matmulJs(vh[b], tr(vh[b])), eye(vh[b].length), tol, `${c.name}: Vh Vh^T = I`);
      });
      return;
    }
    case "eigh":
    case "eigh-upper": {
      const res = actual as { eigenvalues: Array; eigenvectors: Array };
      compare(res.eigenvalues, c.out, c, ".eigenvalues");
      const [w2, v2] = [...(actual as Iterable<Array>)];
      assert.equal(w2, res.eigenvalues, "iterable order [eigenvalues, eigenvectors]");
      const A0 = mats(input),
        V = mats(v2),
        w = js(w2),
        n = input.shape[input.ndim - 1];
      A0.forEach((a0, b) => {
        const a =
          c.check === "eigh-upper"
            ? a0.map((row, i) => row.map((v, j) => (j >= i ? v : a0[j][i])))
            : a0.map((row, i) => row.map((v, j) => (v + a0[j][i]) / 2));
        const vw = V[b].map((row) => row.map((v, j) => v * w[b * n + j]));
        near(matmulJs(a, V[b]), vw, tol, `${c.name}: A V = V diag(w)`);
        near(matmulJs(tr(V[b]), V[b]), eye(n), tol, `${c.name}: V^T V = I`);
      });
      return;
    }
    default:
      throw new Error(`unknown check ${c.check}`);
  }
}

/** Loads a fixture file and returns its cases with a runner for each. */
export function fixtureCases(file: string): Case[] {
  return loadFixture<{ cases: Case[] }>(file).cases;
}
export function runCase(fns: Record<string, unknown>, c: Case): void {
  const actual = call(fns, c);
  if (c.check) special(c, actual);
  else compare(actual, c.out, c, "");
}
