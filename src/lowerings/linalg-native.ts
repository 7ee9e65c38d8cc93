/** @file ONNX lowerings of cholesky, triangular_solve, lu, qr, eigh and svd onto the native runner's float64 custom ops (jaxts.Cholesky, TriangularSolve, Lu, Qr, Eigh, Svd), falling back to the Loop lowerings of linalg.ts / linalg-decomp.ts. */
import type { ShapedArray } from "../core/aval.js";
import type { LoweringContext } from "../core/lowering-types.js";
import type { Primitive, PrimitiveRules } from "../core/primitive.js";
import type { EighParams, SvdParams, TriangularSolveParams } from "../primitives/linalg.js";
import { type LoweringProgram, lowerFun } from "../transforms/lower-fun.js";

// The custom ops (native/linalg-ops.cc) run the reference kernels' float64 algorithms step for step, so like the Loop
// lowerings they cast float32 operands to float64 and round the results back: results equal the interpreter's bit for
// bit. They exist only in sessions of jaxts's native runner (ctx.nativeLinalg); portable compiles (exportOnnx), the
// onnxruntime-node binding and JAXTS_NATIVE=0 get the Loop lowerings.

/** Switches (tests and benchmarks force the Loop lowerings with `enabled: false`; so does JAXTS_NATIVE_LINALG=0). */
export const linalgNativeOptions = { enabled: process.env.JAXTS_NATIVE_LINALG !== "0" };

type Lower<P extends Record<string, unknown>> = NonNullable<PrimitiveRules<P>["lower"]>;
/** Emits the custom-op form of an equation whose operands are float32 or float64. */
type NativeEmit<P> = (ctx: LoweringContext, inputs: string[], params: P, inAvals: ShapedArray[]) => string[];

const ONNX_FLOAT = 1,
  ONNX_DOUBLE = 11;
/** x (float32 or float64) as float64. */
const toF64 = (ctx: LoweringContext, x: string, a: ShapedArray): string =>
  a.dtype === "float64" ? x : ctx.op("Cast", [x], { to: ONNX_DOUBLE });
/** A float64 result rounded to `a`'s dtype (round to nearest, as Float32Array.from in the reference impls). */
const fromF64 = (ctx: LoweringContext, x: string, a: ShapedArray): string =>
  a.dtype === "float64" ? x : ctx.op("Cast", [x], { to: ONNX_FLOAT });

const emitCholesky: NativeEmit<Record<string, unknown>> = (ctx, [a], _p, [av]) => {
  const [l] = ctx.node("Cholesky", [toF64(ctx, a, av)], {}, 1, "jaxts");
  return [fromF64(ctx, l, av)];
};

const emitTriangularSolve: NativeEmit<TriangularSolveParams> = (ctx, [a, b], p, [av, bv]) => {
  // conjugate_a is a no-op for real operands (complex ones take lowerComplex)
  const attrs = {
    left_side: p.left_side ? 1 : 0,
    lower: p.lower ? 1 : 0,
    transpose_a: p.transpose_a ? 1 : 0,
    unit_diagonal: p.unit_diagonal ? 1 : 0,
  };
  const [x] = ctx.node("TriangularSolve", [toF64(ctx, a, av), toF64(ctx, b, bv)], attrs, 1, "jaxts");
  return [fromF64(ctx, x, bv)];
};

const emitQr: NativeEmit<{ full_matrices: boolean }> = (ctx, [a], p, [av]) => {
  const [q, r] = ctx.node("Qr", [toF64(ctx, a, av)], { full_matrices: p.full_matrices ? 1 : 0 }, 2, "jaxts");
  return [fromF64(ctx, q, av), fromF64(ctx, r, av)];
};

const emitLu: NativeEmit<Record<string, unknown>> = (ctx, [a], _p, [av]) => {
  const [lu, pivots, perm] = ctx.node("Lu", [toF64(ctx, a, av)], {}, 3, "jaxts");
  return [fromF64(ctx, lu, av), pivots, perm];
};

const emitEigh: NativeEmit<EighParams> = (ctx, [a], p, [av]) => {
  const attrs = { lower: p.lower ? 1 : 0, sort_eigenvalues: p.sort_eigenvalues ? 1 : 0 };
  const [v, w] = ctx.node("Eigh", [toF64(ctx, a, av)], attrs, 2, "jaxts");
  return [fromF64(ctx, v, av), fromF64(ctx, w, av)];
};

const emitSvd: NativeEmit<SvdParams> = (ctx, [a], p, [av]) => {
  // without compute_uv the op's u and vt are empty ([..., m, 0] and [..., 0, n]) and unused
  const attrs = { full_matrices: p.full_matrices ? 1 : 0, compute_uv: p.compute_uv ? 1 : 0 };
  const [s, u, vt] = ctx.node("Svd", [toF64(ctx, a, av)], attrs, 3, "jaxts");
  const sOut = fromF64(ctx, s, av);
  return p.compute_uv ? [sOut, fromF64(ctx, u, av), fromF64(ctx, vt, av)] : [sOut];
};

/** A lowering rule: the custom op where the session has it and the operands are real floats, else `program`'s Loop lowering. */
function nativeOrLoop<P extends Record<string, unknown>>(
  name: string,
  program: LoweringProgram<P>,
  emit: NativeEmit<P>,
): Lower<P> {
  const loop = lowerFun(name, program) as Lower<P>;
  return (ctx, inputs, params, inAvals, outAvals) => {
    const real = inAvals.every((a) => a.dtype === "float32" || a.dtype === "float64");
    if (linalgNativeOptions.enabled && ctx.nativeLinalg === true && real) return emit(ctx, inputs, params, inAvals);
    return loop(ctx, inputs, params, inAvals, outAvals);
  };
}

/** Installs the custom-op-or-Loop lowering of `prim` (cholesky, triangular_solve, lu, qr, eigh or svd) with the Loop `program`. */
export function setNativeLinalgLowering<P extends Record<string, unknown>>(
  prim: Primitive<P>,
  program: LoweringProgram<P>,
): void {
  const emit = NATIVE_EMITTERS[prim.name] as NativeEmit<P> | undefined;
  if (!emit) throw new Error(`setNativeLinalgLowering: no native linalg op for primitive ${prim.name}`);
  prim.rules.lower = nativeOrLoop(prim.name, program, emit);
  if (prim.rules.missing) delete (prim.rules.missing as { lower?: string }).lower;
}

const NATIVE_EMITTERS: Record<string, NativeEmit<never>> = {
  cholesky: emitCholesky,
  triangular_solve: emitTriangularSolve as NativeEmit<never>,
  lu: emitLu,
  qr: emitQr as NativeEmit<never>,
  eigh: emitEigh as NativeEmit<never>,
  svd: emitSvd as NativeEmit<never>,
};
