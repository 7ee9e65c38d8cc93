/**
 * @file The switch for communication overlapped with compute: shardMap bodies staged inside withCollectiveOverlap
 * run on the device runtime with asynchronous collectives (the graph pass in src/compiler/async-collectives.ts),
 * scheduled for the native mode the environment selects (collectiveOverlapKey).
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
export type AsyncSchedule = `${"wide" | "narrow"}${"" | "-every"}${"" | "-late"}`;
/**
 * What selects a shardMap body's compiled program: false without overlap, else its schedule: wide in mailbox mode
 * (a Start stages only its input), narrow for the communication thread (a Start stages the whole output), and
 * narrow in mailbox mode too under JAXTS_ASYNC_SCHEDULE=narrow (the A/B switch of bench/training.ts).
 * JAXTS_ASYNC_SELECT=every splits every collective (the native ops' tests, and the A/B of the cost model).
 * JAXTS_ASYNC_UPDATE=late (wide only) keeps a reduce-scatter's readers, e.g. ZeRO's optimizer update, at the end of
 * the step instead of one reduce-scatter after it (the A/B of AsyncScheduleOptions.earlyUpdates).
 */
export function collectiveOverlapKey(): false | AsyncSchedule {
  if (overlap === 0) return false;
  const wide = asyncCollectivesMode() === "mailbox" && process.env.JAXTS_ASYNC_SCHEDULE !== "narrow";
  const every = process.env.JAXTS_ASYNC_SELECT === "every" ? "-every" : "";
  const late = wide && process.env.JAXTS_ASYNC_UPDATE === "late" ? "-late" : "";
  return `${wide ? "wide" : "narrow"}${every}${late}`;
}
/** The pass's options for a compiled program's key. */
export function asyncScheduleOptions(key: AsyncSchedule): { wide: boolean; every: boolean; earlyUpdates: boolean } {
  return { wide: key.startsWith("wide"), every: key.includes("-every"), earlyUpdates: !key.endsWith("-late") };
}
