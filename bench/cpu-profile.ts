/** @file startCpuProfile: a V8 CPU profile (node:inspector, 50 us sampling) of a bench's measured part, written to a file. */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

/** Starts profiling when `file` is given; the returned function stops and writes the .cpuprofile (a no-op without a file). */
export async function startCpuProfile(file: string | undefined): Promise<() => Promise<void>> {
  if (!file) return async () => {};
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 50 });
  await session.post("Profiler.start");
  return async () => {
    writeFileSync(file, JSON.stringify((await session.post("Profiler.stop")).profile));
    session.disconnect();
  };
}
