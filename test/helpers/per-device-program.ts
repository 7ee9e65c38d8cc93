/** @file The per-device program a jitted shardMap compiles: its op counts from the lowered text, and a run's outputs. */
import assert from "node:assert/strict";
import { type Array, jit } from "../../src/index.js";
import { lastLaunchTimeline } from "../../src/runtime/index.js";

/** The "// shard_map on ..." line of jit(f).lower(...args).compile().asText() and its op counts ("AllReduce x4"). */
export function perDeviceCounts(
  f: (...a: Array[]) => Array[],
  args: Array[],
): { counts: Record<string, number>; line: string } {
  const text = jit(f)
    .lower(...args)
    .compile()
    .asText();
  const line = text.split("\n").find((l) => l.startsWith("// shard_map on"));
  assert.ok(line, `no per-device program in:\n${text.slice(0, 400)}`);
  const counts: Record<string, number> = {};
  for (const m of line.matchAll(/(\w+) x(\d+)/g)) counts[m[1]] = Number(m[2]);
  return { counts, line };
}

/** perDeviceCounts, and the float32 outputs of a call that must launch on the devices. */
export function countsAndValues(
  f: (...a: Array[]) => Array[],
  args: Array[],
): { counts: Record<string, number>; line: string; vals: number[][] } {
  const { counts, line } = perDeviceCounts(f, args);
  const before = lastLaunchTimeline();
  const vals = f(...args).map((o) => globalThis.Array.from(o.dataSync() as Float32Array));
  assert.notEqual(lastLaunchTimeline(), before, "ran on the devices");
  return { counts, line, vals };
}
