/**
 * @file The switch for communication overlapped with compute: shardMap bodies staged inside withCollectiveOverlap
 * run on the device runtime with asynchronous collectives (the graph pass in src/compiler/async-collectives.ts).
 */
export { scheduleAsyncCollectives } from "../compiler/async-collectives.js";

let overlap = 0;
/** Runs f with shardMap bodies traced meanwhile compiled with asynchronous collectives (see the file comment). */
export function withCollectiveOverlap<T>(on: boolean, f: () => T): T {
  const saved = overlap;
  overlap = on ? 1 : 0;
  try {
    return f();
  } finally {
    overlap = saved;
  }
}
/** Whether shardMap bodies staged now get asynchronous collectives. */
export function collectiveOverlapEnabled(): boolean {
  return overlap > 0;
}
