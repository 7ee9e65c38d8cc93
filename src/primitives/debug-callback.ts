/**
 * @file debug_callback: a staged host callback (jax.debug.callback / jax.debug.print). It has no outputs and no ONNX
 * lowering, so under jit it is a host step between the program's ONNX segments: the values it reads are computed by
 * the segment before it and it runs, in program order, before the segment after it starts. jvp calls back on the
 * primals (as JAX: tangents are not shown); vmap calls back once per batch element (once per device of a shardMap's
 * emulation, whose named axes give the element's axis indices).
 */
import type { Array } from "../core/array.js";
import type { ArrayImpl } from "../core/array-impl.js";
import { Primitive } from "../core/primitive.js";
import { bind } from "../core/trace.js";
import { reshape, sliceInDim } from "./bind-ops.js";

/** What a callback learns about where it runs: the indices along the named (mesh or vmap) axes it was mapped over. */
export interface CallbackContext {
  /** Index along each named axis (a shardMap's mesh axes, a named vmap's axis); empty outside them. */
  readonly axisIndices: Readonly<Record<string, number>>;
  /** Index along each unnamed vmap axis, outermost first. */
  readonly batchIndices: readonly number[];
  /** The device whose values these are, when a shardMap ran on the device runtime (spmdRuntime "devices"). */
  readonly device?: number;
}

export interface DebugCallbackParams {
  [k: string]: unknown;
  /** Receives the concrete values (in the order bound) and where it runs. */
  callback: (values: ArrayImpl[], ctx: CallbackContext) => void;
  /** How the equation prints in a jaxpr. */
  name: string;
  axis_indices: Readonly<Record<string, number>>;
  batch_indices: readonly number[];
  /** Set by the device runtime's shardMap when it calls back with one device's values. */
  device?: number;
}

let ctxStack: CallbackContext[] = [];
/** The context of the callback running now (null outside one). */
export function currentCallbackContext(): CallbackContext | null {
  return ctxStack.length ? ctxStack[ctxStack.length - 1] : null;
}

export const debugCallbackP: Primitive<DebugCallbackParams> = new Primitive<DebugCallbackParams>(
  "debug_callback",
  {
    abstractEval() {
      return [];
    },
    impl(args, p) {
      const ctx: CallbackContext = {
        axisIndices: p.axis_indices,
        batchIndices: p.batch_indices,
        ...(p.device !== undefined ? { device: p.device } : {}),
      };
      ctxStack = [...ctxStack, ctx];
      try {
        p.callback(args, ctx);
      } finally {
        ctxStack = ctxStack.slice(0, -1);
      }
      return [];
    },
    jvp(primals, _tangents, p) {
      bind(debugCallbackP, primals, p);
      return [[], []];
    },
    vmap(axis, args, dims, p) {
      // an unnamed vmap over values none of which is batched calls back once (JAX does not batch it at all)
      if (axis.name === null && dims.every((d) => d === null)) {
        bind(debugCallbackP, args, p);
        return [[], []];
      }
      for (let i = 0; i < axis.size; i++) {
        const elems = args.map((a: Array, k) => {
          const d = dims[k];
          if (d === null) return a;
          return reshape(
            sliceInDim(a, i, i + 1, 1, d),
            a.shape.filter((_, j) => j !== d),
          );
        });
        const q: DebugCallbackParams =
          axis.name === null
            ? { ...p, batch_indices: [i, ...p.batch_indices] }
            : { ...p, axis_indices: { [axis.name]: i, ...p.axis_indices } };
        bind(debugCallbackP, elems, q);
      }
      return [[], []];
    },
    missing: {
      lower:
        "debug_callback calls back into JavaScript: under jit it is a host step between ONNX segments, run in program order",
      transpose: "debug_callback has no outputs; under grad it runs on the primal values in the forward pass",
    },
  },
  { multipleResults: true, effectful: true },
);
