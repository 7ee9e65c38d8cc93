/** @file The wait skeleton shared by work a native runtime runs asynchronously (device launches, block copies, async jit runs): block or await on the native handle, record the outcome once, raise the stored error at every later read. */
import type { PendingWrite } from "./array-impl.js";

/**
 * One piece of asynchronous native work behind an opaque handle. Subclasses say how to block on the handle
 * (joinNative), what a finished run means (record: bookkeeping and the error, in the subclass's own words) and how to
 * wait without blocking the thread (whenDone); this class holds the handle, settles at most once, and keeps the error.
 * R is what joinNative returns (the native wait's result).
 */
export abstract class PendingRun<R> implements PendingWrite {
  #handle: object | null;
  #error: Error | null = null;
  #ready: Promise<void> | null = null;
  protected constructor(handle: object) {
    this.#handle = handle;
  }
  /** Whether the outcome is known (the handle was waited for). */
  get settled(): boolean {
    return this.#handle === null;
  }
  /** The run's error once settled, or null. */
  get error(): Error | null {
    return this.#error;
  }
  /** The native handle while the run is pending, null once settled. */
  protected get handle(): object | null {
    return this.#handle;
  }
  /**
   * Blocks until the native work behind `handle` finished and returns the native wait's result; `forOutputs`: the
   * wait is for the run's outputs (wait()), not settle(). A throw leaves the run pending.
   */
  protected abstract joinNative(handle: object, forOutputs: boolean): R;
  /** Records a finished run (called once, after the handle was dropped) and returns its error, or null. */
  protected abstract record(result: R): Error | null;
  /** Resolves once joinNative would not block, without blocking the thread (it may also settle the run itself). */
  protected abstract whenDone(handle: object): Promise<void>;
  /** Waits (blocking) and records the outcome without throwing. */
  settle(): void {
    this.settleNow(false);
  }
  /** settle(); `forOutputs` as in joinNative. */
  protected settleNow(forOutputs: boolean): void {
    const h = this.#handle;
    if (!h) return;
    const r = this.joinNative(h, forOutputs);
    this.#handle = null;
    this.#error = this.record(r);
  }
  /** Waits (blocking); throws the run's error, every time (its outputs hold no value). */
  wait(): void {
    this.settleNow(true);
    if (this.#error) throw this.#error;
  }
  /**
   * Resolves on the JS thread once the run finished, without blocking it; rejects with wait()'s error. whenDone is
   * started on the first call only (one completion callback per run).
   */
  ready(): Promise<void> {
    return (this.#ready ??= this.#whenSettled());
  }
  async #whenSettled(): Promise<void> {
    const h = this.#handle;
    if (h) await this.whenDone(h);
    this.settleNow(false); // does not block now (unless whenDone could not wait without blocking)
    if (this.#error) throw this.#error;
  }
}

/** The native runtime's completion callback: `notify(handle, done)` calls done once the work finished; false: never. */
export type NotifyFn = (handle: object, done: () => void) => boolean;

/** Resolves once `notify` reports the work behind `handle` finished (at once without a notifier, or when it declines). */
export function notified(notify: NotifyFn | undefined, handle: object): Promise<void> {
  if (!notify) return Promise.resolve();
  return new Promise<void>((resolve) => notify(handle, resolve) || resolve());
}

/** Awaits every unsettled run of `deps` (their failures are read later, at settle; none rejects here). */
export async function depsSettled(deps: readonly PendingWrite[]): Promise<void> {
  const open = deps.filter((d) => !d.settled);
  if (open.length) await Promise.allSettled(open.map((d) => d.ready?.()));
}
