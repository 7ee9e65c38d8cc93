/** @file The shared primitive harness: JVP vs finite differences (f64), VJP vs JVP, vmap vs loops of slices, jit vs eager, type checks. */
import assert from "node:assert/strict";
import { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import { isFloat } from "../../src/core/dtype.js";
import { typecheckJaxpr } from "../../src/core/jaxpr.js";
import { jit, jvp, makeJaxpr, vjp, vmap } from "../../src/transforms/api.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";

/** One spec row: how to build inputs for a primitive and call it. */
export interface Spec {
  name: string;
  /** builds the primitive application (a closure over static params) */
  f: (...xs: Array[]) => Array | Array[];
  /** input shapes/dtypes and value domains */
  args: { shape: number[]; dtype?: DType; lo?: number; hi?: number; int?: boolean }[];
  /** skip differentiation checks (non-differentiable or piecewise-constant) with the reason */
  noGrad?: string;
  /** indices of arguments to differentiate (default: all float args) */
  diff?: number[];
  /** batch axes to test per argument (default: 0 for every argument, then last axis) */
  vmapAxes?: (number | null)[][];
  tol?: number;
}

let seed = 12345;
function rnd(): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}

export function makeArg(a: Spec["args"][number], batch?: number): Array {
  const shape = batch === undefined ? a.shape : [batch, ...a.shape];
  const n = shape.reduce((x, y) => x * y, 1);
  const lo = a.lo ?? -2,
    hi = a.hi ?? 2;
  const dtype = a.dtype ?? "float64";
  const vals = globalThis.Array.from({ length: n }, () => {
    const v = lo + (hi - lo) * rnd();
    return a.int || !isFloat(dtype) ? Math.floor(v) : v;
  });
  const flat =
    dtype === "bool"
      ? array(
          vals.map((v) => v > 0),
          { dtype },
        )
      : array(vals, { dtype });
  return ops.reshape(flat, shape);
}

const outs = (r: Array | Array[]): Array[] => (globalThis.Array.isArray(r) ? r : [r]);
const toNums = (x: Array): number[] => {
  const o: number[] = [];
  const rec = (v: unknown) => {
    if (globalThis.Array.isArray(v)) v.forEach(rec);
    else o.push(typeof v === "boolean" ? (v ? 1 : 0) : Number(v));
  };
  rec(x.tolist());
  return o;
};
function close(a: Array, b: Array, tol: number, msg: string): void {
  assert.deepEqual(a.shape, b.shape, `${msg}: shape`);
  const x = toNums(a),
    y = toNums(b);
  const scale = Math.max(1, ...y.map(Math.abs).filter(Number.isFinite));
  x.forEach((v, i) => {
    if (Number.isNaN(y[i]) && Number.isNaN(v)) return;
    assert.ok(Math.abs(v - y[i]) <= tol * scale, `${msg}: element ${i}: ${v} vs ${y[i]} (tol ${tol})`);
  });
}
const dot = (a: Array, b: Array): number => toNums(a).reduce((s, v, i) => s + v * toNums(b)[i], 0);

/** Runs all checks of one spec row. Call with x64 enabled (finite differences need float64). */
export function checkSpec(s: Spec): void {
  const prev = config.enableX64;
  config.update("enableX64", true);
  try {
    checkSpecX64(s);
  } finally {
    config.update("enableX64", prev);
  }
}
function checkSpecX64(s: Spec): void {
  const xs = s.args.map((a) => makeArg(a));
  const ys = outs(s.f(...xs));
  const tol = s.tol ?? 1e-6;
  // jit vs eager
  const jy = outs(jit((...a: Array[]) => s.f(...a))(...xs) as Array | Array[]);
  jy.forEach((y, i) => close(y, ys[i], 1e-12, `${s.name} jit vs eager output ${i}`));
  // jaxprs of the transformations type-check
  typecheckJaxpr(makeJaxpr((...a: Array[]) => s.f(...a))(...xs).jaxpr, `${s.name}`);
  const diff = s.diff ?? s.args.map((_, i) => i).filter((i) => isFloat(xs[i].dtype));
  const floatOuts = ys.map((y) => isFloat(y.dtype));
  if (!s.noGrad && diff.length > 0 && floatOuts.some(Boolean)) {
    const g = (...d: Array[]) => {
      const full = [...xs];
      diff.forEach((k, i) => {
        full[k] = d[i];
      });
      return outs(s.f(...full)).filter((_, i) => floatOuts[i]);
    };
    const primals = diff.map((k) => xs[k]);
    const tangents = diff.map((k) => makeArg({ ...s.args[k], lo: -1, hi: 1 }));
    const [, tOut] = jvp(g, primals, tangents) as [Array[], Array[]];
    // central finite differences in float64
    const eps = 1e-6;
    const plus = g(...primals.map((p, i) => ops.add(p, ops.mul(tangents[i], eps))));
    const minus = g(...primals.map((p, i) => ops.sub(p, ops.mul(tangents[i], eps))));
    tOut.forEach((t, i) =>
      close(
        t,
        ops.div(ops.sub(plus[i], minus[i]), 2 * eps),
        Math.max(tol, 1e-5),
        `${s.name} jvp vs finite differences (output ${i})`,
      ),
    );
    // vjp against jvp: <ct, J t> == <J^T ct, t>
    const [yv, pull] = vjp(g, ...primals);
    const cts = (yv as Array[]).map((y) => makeArg({ shape: y.shape, lo: -1, hi: 1 }));
    const back = pull(cts as never) as Array[];
    const lhs = cts.reduce((acc, c, i) => acc + dot(c, tOut[i]), 0);
    const rhs = back.reduce((acc: number, c, i) => acc + dot(c, tangents[i]), 0);
    assert.ok(
      Math.abs(lhs - rhs) <= 1e-8 * Math.max(1, Math.abs(lhs)),
      `${s.name}: <ct, J t> = ${lhs} but <J^T ct, t> = ${rhs}`,
    );
    typecheckJaxpr(makeJaxpr((...p: Array[]) => jvp(g, p, tangents)[1])(...primals).jaxpr, `${s.name} jvp`);
    typecheckJaxpr(makeJaxpr((...p: Array[]) => vjp(g, ...p)[1](cts as never))(...primals).jaxpr, `${s.name} vjp`);
  }
  // vmap against a loop over slices, for each batching pattern
  const B = 3;
  const patterns = s.vmapAxes ?? [
    s.args.map(() => 0),
    s.args.map((a) => a.shape.length),
    s.args.map((_, i) => (i === 0 ? 0 : null)),
  ];
  for (const axes of patterns) {
    if (axes.every((a) => a === null)) continue;
    const bx = s.args.map((a, i) => {
      if (axes[i] === null) return xs[i];
      const b = makeArg(a, B);
      return ops.moveaxis(b, 0, axes[i]!);
    });
    const got = outs(vmap((...a: Array[]) => s.f(...a), { inAxes: axes })(...bx) as Array | Array[]);
    for (let j = 0; j < B; j++) {
      const sl = bx.map((x, i) =>
        axes[i] === null
          ? x
          : ops.reshape(
              ops.sliceInDim(x, j, j + 1, 1, axes[i]!),
              x.shape.filter((_, d) => d !== axes[i]),
            ),
      );
      const want = outs(s.f(...sl));
      want.forEach((w, k) =>
        close(
          ops.reshape(ops.sliceInDim(got[k], j, j + 1, 1, 0), w.shape),
          w,
          1e-12,
          `${s.name} vmap in_axes=${JSON.stringify(axes)} example ${j} output ${k}`,
        ),
      );
    }
    typecheckJaxpr(
      makeJaxpr((...a: Array[]) => vmap((...z: Array[]) => s.f(...z), { inAxes: axes })(...a))(...bx).jaxpr,
      `${s.name} vmap`,
    );
  }
}
