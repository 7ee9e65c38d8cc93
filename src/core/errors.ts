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
    super(
      `${program}: out of memory: ${Number.isNaN(bytes) ? "an allocation" : `allocating ${bytes} bytes (${(bytes / 2 ** 20).toFixed(1)} MiB)`} failed (${detail}); inputs: ${inputs.length ? inputs.join(", ") : "none"}`,
    );
  }
}

/**
 * Raised under config debugNans / debugInfs when a primitive's float output holds a NaN (or ±inf), as JAX's
 * FloatingPointError "invalid value (nan) encountered in log". Inside jit the program is re-run equation by
 * equation to find the first offending one: `equation` is its jaxpr line and `site` the user's source frame.
 */
export class FloatingPointError extends Error {
  override readonly name = "FloatingPointError";
  constructor(
    /** The primitive (or "jit(f)") whose output held the value. */
    readonly primitive: string,
    readonly kind: "nan" | "inf",
    /** The jaxpr equation line, when found by re-running a jitted program. */
    readonly equation?: string,
    /** The user's source location (a stack frame), when known. */
    readonly site?: string,
    detail?: string,
  ) {
    super(
      `invalid value (${kind}) encountered in ${primitive}${equation ? `\n  equation: ${equation}` : ""}${site ? `\n  at ${site}` : ""}${detail ? `\n${detail}` : ""}`,
    );
  }
}
