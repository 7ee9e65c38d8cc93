/**
 * @file The switch for communication overlapped with compute: shardMap bodies staged inside withCollectiveOverlap
 * run on the device runtime with asynchronous collectives (the graph pass in src/compiler/async-collectives.ts),
 * scheduled for the native mode the environment selects (collectiveOverlapKey).
 */
export { scheduleAsyncCollectives } from "../compiler/async-collectives.js";
import { DEFAULT_UPDATE_LAG } from "../compiler/async-collectives.js";

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

/** How the native async ops run: "mailbox" (one-sided, the default) or "thread" (JAXTS_ASYNC_COLLECTIVES=thread). */
export type AsyncCollectivesMode = "mailbox" | "thread";
/**
 * The mode the native ops will use, read from the same switch they read (native/mailbox-collectives.cc,
 * MailboxModeEnabled: JAXTS_ASYNC_COLLECTIVES=thread selects the thread, anything else the mailbox).
 */
export function asyncCollectivesMode(): AsyncCollectivesMode {
  return process.env.JAXTS_ASYNC_COLLECTIVES === "thread" ? "thread" : "mailbox";
}
/**
 * The schedule the graph pass builds: "wide" (post early, await at the reader) or "narrow" (one gather ahead); with
 * "-every", every collective gets the asynchronous form, not only those whose form can pay (asyncFormPays).
 */
export type AsyncSchedule = `${"wide" | "narrow"}${"" | "-every"}${"" | `-lag${number}`}`;
/**
 * What selects a shardMap body's compiled program: false without overlap, else its schedule: wide in mailbox mode
 * (a Start stages only its input), narrow for the communication thread (a Start stages the whole output), and
 * narrow in mailbox mode too under JAXTS_ASYNC_SCHEDULE=narrow (the A/B switch of bench/training.ts).
 * JAXTS_ASYNC_SELECT=every splits every collective (the native ops' tests, and the A/B of the cost model).
 * JAXTS_ASYNC_UPDATE (wide only) = late keeps a reduce-scatter's readers, e.g. ZeRO's optimizer update, at the end of
 * the step, = k (a count) puts them k reduce-scatters after it (AsyncScheduleOptions.updateLag; default DEFAULT_UPDATE_LAG, 2).
 */
export function collectiveOverlapKey(): false | AsyncSchedule {
  if (overlap === 0) return false;
  const wide = asyncCollectivesMode() === "mailbox" && process.env.JAXTS_ASYNC_SCHEDULE !== "narrow";
  const every = process.env.JAXTS_ASYNC_SELECT === "every" ? "-every" : "";
  const lag = wide ? updateLag() : DEFAULT_UPDATE_LAG;
  const suffix: "" | `-lag${number}` = lag === DEFAULT_UPDATE_LAG ? "" : `-lag${lag}`;
  return `${wide ? "wide" : "narrow"}${every}${suffix}`;
}
/** JAXTS_ASYNC_UPDATE as a lag: "late" 0, a count that count, unset the default (anything else is refused, named). */
function updateLag(): number {
  const v = process.env.JAXTS_ASYNC_UPDATE;
  if (v === undefined || v === "") return DEFAULT_UPDATE_LAG;
  if (v === "late") return 0;
  const k = Number(v);
  if (!Number.isInteger(k) || k < 0)
    throw new RangeError(
      `withCollectiveOverlap: JAXTS_ASYNC_UPDATE must be "late" or a count >= 0, got ${JSON.stringify(v)}`,
    );
  return k;
}
/** The pass's options for a compiled program's key. */
export function asyncScheduleOptions(key: AsyncSchedule): { wide: boolean; every: boolean; updateLag: number } {
  const lag = /-lag(\d+)$/.exec(key);
  return {
    wide: key.startsWith("wide"),
    every: key.includes("-every"),
    updateLag: lag ? Number(lag[1]) : DEFAULT_UPDATE_LAG,
  };
}
