/** @file Shared helpers of the random tests: the golden vectors of test/fixtures/golden/random.json and flag scoping. */
import { config } from "../../src/core/config.js";
import { readFixtureJson } from "../helpers/repo-root.js";

export interface GoldenVector {
  id: string;
  kind: string;
  flag_context: string;
  inputs: Record<string, unknown>;
  expected: unknown;
}

/** The golden random vectors (JAX's outputs, committed under test/fixtures/golden). */
export const goldenVectors = (): GoldenVector[] =>
  readFixtureJson<{ vectors: GoldenVector[] }>("golden/random.json").vectors;

/** Runs f with the given flags, restoring them afterwards. */
export function withFlags<T>(flags: { partitionable?: boolean; x64?: boolean }, f: () => T): T {
  const p = config.threefryPartitionable,
    x = config.enableX64;
  if (flags.partitionable !== undefined) config.update("threefryPartitionable", flags.partitionable);
  if (flags.x64 !== undefined) config.update("enableX64", flags.x64);
  try {
    return f();
  } finally {
    config.update("threefryPartitionable", p);
    config.update("enableX64", x);
  }
}
