/** @file Errors the runtime raises about resources (memory), with what the user needs to act on them. */

/**
 * Raised when memory for a program's values cannot be allocated (the buffer pool's allocation or ONNX Runtime's
 * own failed): names the program (jitted function or primitive), its input shapes and the bytes requested.
 */
export class OutOfMemoryError extends RangeError {
  override readonly name = "OutOfMemoryError";
  constructor(
    /** The jitted function's (or eager primitive's) name. */
    readonly program: string,
    /** Input avals, e.g. "f32[128,784]". */
    readonly inputs: readonly string[],
    /** Bytes of the allocation that failed (NaN when ONNX Runtime did not say). */
    readonly bytes: number,
    /** What was being allocated, and the underlying error's message. */
    readonly detail: string,
  ) {
    super(`${program}: out of memory: ${Number.isNaN(bytes) ? "an allocation" : `allocating ${bytes} bytes (${(bytes / 2 ** 20).toFixed(1)} MiB)`} failed (${detail}); inputs: ${inputs.length ? inputs.join(", ") : "none"}`);
  }
}
