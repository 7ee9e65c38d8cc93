/** @file Shared helpers of the random tests: the golden vectors of ../shared/golden/random.json and flag scoping. */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { config } from "../../src/core/config.js";

export interface GoldenVector { id: string; kind: string; flag_context: string; inputs: Record<string, unknown>; expected: unknown }

/** The golden random vectors (CI places shared/ beside the clone, so the relative path holds there too). */
export const goldenVectors = (): GoldenVector[] =>
  (JSON.parse(readFileSync(resolve(process.cwd(), "../shared/golden/random.json"), "utf8")) as { vectors: GoldenVector[] }).vectors;

/** Runs f with the given flags, restoring them afterwards. */
export function withFlags<T>(flags: { partitionable?: boolean; x64?: boolean }, f: () => T): T {
  const p = config.threefryPartitionable, x = config.enableX64;
  if (flags.partitionable !== undefined) config.update("threefryPartitionable", flags.partitionable);
  if (flags.x64 !== undefined) config.update("enableX64", flags.x64);
  try { return f(); } finally { config.update("threefryPartitionable", p); config.update("enableX64", x); }
}
