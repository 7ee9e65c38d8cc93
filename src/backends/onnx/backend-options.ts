/** @file Tunables of the "onnx" backend (tests switch the scalar fast path, strict lowering and fusion). */
/** Tunables (tests switch the scalar fast path and strict lowering). */
export const onnxBackendOptions = {
  /** Run primitives whose operands and results all have at most one element on the reference impl (exact, no ORT call). */
  scalarFastPath: true,
  /** Rethrow errors from lowering rules and session creation instead of falling back to the interpreter. */
  strict: false,
  /** Work (element operations) above which a jitted program gets all intra-op threads. */
  parallelWork: 1 << 18,
  /** Work above which a jitted program gets ORT's full graph optimizations (below: constant folding only, faster to create). */
  optimizeWork: 1 << 14,
  /** Run jitted pure float32 elementwise programs as one fused kernel (single pass over memory). */
  fuseElementwise: true,
  /** Fused kernels run natively (AVX-512/AVX2, native threads) when the native addon is loaded; else WebAssembly SIMD. */
  nativeFused: true,
  /**
   * Async dispatch of single-device jit calls: a program whose last run took at least asyncMinRunUs is enqueued on
   * device 0's executor and its outputs are returned pending (environment JAXTS_SYNC_DISPATCH=1: always synchronous).
   */
  asyncDispatch: process.env.JAXTS_SYNC_DISPATCH !== "1",
  /** Runs shorter than this (microseconds) stay inline on the calling thread (as XLA's CPU client runs cheap ones). */
  asyncMinRunUs: 100,
};
