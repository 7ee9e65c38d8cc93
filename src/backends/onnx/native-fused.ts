/**
 * @file Fused float32 elementwise kernels run by jaxts's native addon (native/fused.cc): the WebAssembly kernel's
 * twin with AVX-512 / AVX2 vectors and native helper threads, working in place on the caller's buffers.
 */
import type { FusedOp, FusedSpec } from "./fused-spec.js";
import { nativeFusedApi } from "./ort-runtime.js";

/** Operation codes of native/fused.cc, in its order. */
export const FUSED_OPS: readonly FusedOp[] = [
  "neg",
  "abs",
  "sqrt",
  "rsqrt",
  "floor",
  "ceil",
  "sign",
  "exp",
  "log",
  "tanh",
  "logistic",
  "add",
  "sub",
  "mul",
  "div",
  "max",
  "min",
  "eq",
  "ne",
  "lt",
  "le",
  "gt",
  "ge",
  "and",
  "or",
  "not",
  "select",
];

/** The program encoding fusedCompile reads: [values, outputs, values x (tag, x, a, b, c), outputs]. */
export function encodeFused(spec: FusedSpec): Int32Array {
  const code = new Int32Array(2 + 5 * spec.values.length + spec.outputs.length);
  code[0] = spec.values.length;
  code[1] = spec.outputs.length;
  const bits = new Int32Array(1),
    f = new Float32Array(bits.buffer);
  spec.values.forEach((v, i) => {
    const r = 2 + 5 * i;
    code.fill(-1, r + 2, r + 5);
    if (v.kind === "input") {
      code[r] = 0;
      code[r + 1] = v.index;
    } else if (v.kind === "scalar") {
      code[r] = 1;
      code[r + 1] = v.index;
    } else if (v.kind === "const") {
      code[r] = 2;
      f[0] = v.value;
      code[r + 1] = bits[0];
    } else {
      const op = FUSED_OPS.indexOf(v.op);
      if (op < 0) throw new Error(`native fused kernel: no operation code for '${v.op}'`);
      code[r] = 3;
      code[r + 1] = op;
      v.args.forEach((a, k) => {
        code[r + 2 + k] = a;
      });
    }
  });
  code.set(spec.outputs, 2 + 5 * spec.values.length);
  return code;
}

/** A FusedSpec compiled by the native addon. */
export class NativeFusedKernel {
  private readonly scalarBuf: Float32Array;
  private constructor(
    private readonly api: NonNullable<ReturnType<typeof nativeFusedApi>>,
    private readonly handle: object,
    spec: FusedSpec,
  ) {
    this.scalarBuf = new Float32Array(Math.max(1, spec.numScalars));
  }

  /** null without the native addon. */
  static create(spec: FusedSpec): NativeFusedKernel | null {
    const api = nativeFusedApi();
    if (!api) return null;
    return new NativeFusedKernel(api, api.compile(encodeFused(spec), spec.numInputs, spec.numScalars), spec);
  }

  /** The vector instruction set the addon chose: "avx512", "avx2", "sse2" or "portable" (no intrinsics; see JAXTS_CPU). */
  get isa(): string {
    return this.api.isa();
  }

  /** Evaluates n elements (outputs may be inputs: each element is read before it is written). */
  run(ins: readonly Float32Array[], scalars: readonly number[], outs: readonly Float32Array[], n: number): void {
    for (let i = 0; i < scalars.length; i++) this.scalarBuf[i] = scalars[i];
    this.api.run(this.handle, ins, this.scalarBuf, outs, n);
  }
}
