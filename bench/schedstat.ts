/** @file Per-thread CPU and run-queue time of this process from Linux's schedstat, for the benchmarks' CPU columns. */
import { existsSync, readdirSync, readFileSync } from "node:fs";

/** Nanoseconds the JS (main) thread has run on a CPU (its schedstat's first field). */
export const jsThreadNs = (): number =>
  Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);

/** [on-CPU ns, run-queue wait ns] summed over this process's threads other than the JS thread; NaN off Linux. */
export function otherThreadsNs(): [number, number] {
  if (!existsSync("/proc/self/task")) return [NaN, NaN];
  let run = 0,
    wait = 0;
  for (const t of readdirSync("/proc/self/task")) {
    if (t === String(process.pid)) continue;
    try {
      const [a, b] = readFileSync(`/proc/self/task/${t}/schedstat`, "utf8").split(" ").map(Number);
      run += a;
      wait += b;
    } catch {
      // the thread ended meanwhile
    }
  }
  return [run, wait];
}
