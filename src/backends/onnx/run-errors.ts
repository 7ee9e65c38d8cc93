/** @file Run-time failures of compiled steps: failed allocations become OutOfMemoryError, ONNX Runtime failures name the program and its inputs. */
import type { ArrayImpl } from "../../core/array-impl.js";
import type { ShapedArray } from "../../core/aval.js";
import { OutOfMemoryError } from "../../core/errors.js";
import { acquire } from "./buffer-pool.js";
import type { HostArray } from "./graph-builder.js";
import type { storageCtor } from "./ort-runtime.js";

/** An allocation for a program's value failed (reported as an OutOfMemoryError naming the program and its inputs). */
export class AllocationFailure extends Error {
  constructor(
    readonly bytes: number,
    readonly what: string,
    readonly original: unknown,
  ) {
    super(`${what}: ${(original as Error)?.message ?? String(original)}`);
  }
}
/** ONNX Runtime failed while running a session. */
export class RunFailure extends Error {
  constructor(readonly original: Error) {
    super(original.message);
  }
}

/** Storage for output `i` (aval `a`) from the buffer pool; a failed allocation becomes an AllocationFailure. */
export function acquireOutput(ctor: ReturnType<typeof storageCtor>, a: ShapedArray, i: number): HostArray {
  try {
    return acquire(ctor, a.size) as HostArray;
  } catch (e) {
    throw new AllocationFailure(
      a.size * (ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT,
      `output ${i} (${a.str()})`,
      e,
    );
  }
}

// ONNX Runtime's messages for a failed allocation (its CPU allocator, or a C++ bad_alloc)
const ORT_OOM = /Failed to allocate memory|bad_alloc|out of memory/i;
// how the runners frame ORT's status: the native addon's synchronous run, a device executor's run
const RUNNER_PREFIX = /^(?:jaxts-ort: Run: |device \d+ \(rank \d+\): )/;

/**
 * The error a user sees for a failure while running `program` on `inputs`: an OutOfMemoryError for a failed
 * allocation (ours or ONNX Runtime's), a run failure naming the program, or the error itself (a host step's).
 */
export function runError(e: unknown, program: string, inputs: readonly ArrayImpl[]): unknown {
  return runErrorOn(
    e,
    program,
    inputs.map((a) => a.aval),
  );
}

/**
 * runError for inputs known by their avals (an asynchronous run raises after its inputs may be gone): the same error
 * class and message for the same failure, whichever path ran the program.
 */
export function runErrorOn(e: unknown, program: string, inputs: readonly ShapedArray[]): unknown {
  const shapes = () => inputs.map((a) => a.str());
  if (e instanceof AllocationFailure) return new OutOfMemoryError(program, shapes(), e.bytes, e.message);
  if (!(e instanceof RunFailure)) return e;
  // ORT's own message, without the runner's framing (the native addon's synchronous runner prefixes its status with
  // "jaxts-ort: Run: ", device 0's executor with "device 0 (rank 0): "): one message whichever runner ran the program
  const msg = e.original.message.trim().replace(RUNNER_PREFIX, "");
  if (ORT_OOM.test(msg)) {
    const m = /size\s*(\d+)/.exec(msg);
    return new OutOfMemoryError(program, shapes(), m ? Number(m[1]) : NaN, `ONNX Runtime: ${msg}`);
  }
  return new Error(
    `${program}: ONNX Runtime failed running the compiled program on inputs ${shapes().join(", ") || "(none)"}: ${msg}`,
    { cause: e.original },
  );
}
