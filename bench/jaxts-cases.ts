/** @file jaxts side of the benchmark suite: placeholder (empty), filled in by the lead with jaxts's own cases. */
import type { Case } from "./harness.js";

/*
 * How to plug jaxts in:
 * - Push one `Case` per workload into `jaxtsCases`, each with `name: "jaxts"` (the baseline column)
 *   and `workload` one of the ids in harness.ts `WORKLOADS` ("matmul-256", "matmul-1024",
 *   "matmul-2048", "mlp-compile", "mlp-step", "tanh-1e7", "add-eager-4096", "add-jit-4096").
 * - `setup()` creates inputs (and compiles, except for "mlp-compile", whose body must be the
 *   first call of a fresh jit) and resolves to the timed body. The body must force completion
 *   (blockUntilReady / dataSync as needed) and dispose its outputs; `teardown()` frees the inputs.
 * - Use harness.ts helpers for identical data: `randomF32(n, seed)` (seeds used by competitors:
 *   matmul a=10+N, b=20+N; tanh 30; add 40/41) and `mlpData()`, `MLP`, `TANH_N`, `ADD_N`.
 * - `jaxtsInit` runs once before any case (e.g. configure devices); a rejection marks jaxts
 *   unavailable. `jaxtsNotes` appear under "Contenders" in RESULTS.md.
 */

/** jaxts cases: empty until the lead fills them in. */
export const jaxtsCases: Case[] = [];

/** One-time initialisation of jaxts before its cases run. */
export async function jaxtsInit(): Promise<void> {}

/** Remarks about the jaxts configuration (threads, execution provider) shown in RESULTS.md. */
export const jaxtsNotes: string[] = [];
