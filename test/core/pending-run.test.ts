/** @file PendingRun, the wait skeleton of native asynchronous work: one native wait, one record, the stored error at every read, one completion wait for every ready(), a failed native wait leaving the run pending. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { depsSettled, notified, PendingRun, type NotifyFn } from "../../src/core/pending-run.js";

/** A fake native job: `done` says whether it finished; its result is the error text it ends with ("" = success). */
interface FakeJob {
  done: boolean;
  result: string;
  joinThrows?: Error;
}

/** A PendingRun over a FakeJob that counts the hooks' calls. */
class FakeRun extends PendingRun<string> {
  joins: boolean[] = [];
  records = 0;
  whenDones = 0;
  constructor(readonly job: FakeJob) {
    super(job);
  }
  protected joinNative(h: object, forOutputs: boolean): string {
    assert.equal(h, this.job, "the handle given at construction");
    if (this.job.joinThrows) throw this.job.joinThrows;
    this.joins.push(forOutputs);
    this.job.done = true;
    return this.job.result;
  }
  protected record(result: string): Error | null {
    this.records++;
    assert.ok(this.settled, "record runs after the handle was dropped");
    return result ? new Error(`fake run: ${result}`) : null;
  }
  protected async whenDone(): Promise<void> {
    this.whenDones++;
    while (!this.job.done) await new Promise<void>((r) => setImmediate(r));
  }
}

/** The run's error (read through a call: an earlier assertion on run.error does not narrow it). */
const errorOf = (r: FakeRun): Error | null => r.error;

test("a failed run: one native wait and one record; the same error at every wait; settle never throws", () => {
  const run = new FakeRun({ done: false, result: "boom" });
  assert.ok(!run.settled && run.error === null);
  run.settle();
  assert.equal(run.settled, true);
  const e = errorOf(run);
  assert.ok(e instanceof Error);
  assert.equal(e.message, "fake run: boom");
  assert.throws(
    () => run.wait(),
    (x: unknown) => x === e,
  );
  assert.throws(
    () => run.wait(),
    (x: unknown) => x === e,
    "raised again, the same object",
  );
  run.settle();
  assert.deepEqual(run.joins, [false], "settle() waits not for outputs; later calls do not wait again");
  assert.equal(run.records, 1);
});

test("wait() is a wait for the outputs (forOutputs); a successful run raises nothing", () => {
  const run = new FakeRun({ done: false, result: "" });
  run.wait();
  run.wait();
  assert.deepEqual(run.joins, [true]);
  assert.equal(run.records, 1);
  assert.equal(run.error, null);
});

test("a native wait that throws leaves the run pending; the next wait settles it", () => {
  const job: FakeJob = { done: false, result: "late", joinThrows: new Error("interrupted") };
  const run = new FakeRun(job);
  assert.throws(() => run.wait(), /interrupted/);
  assert.equal(run.settled, false);
  assert.equal(run.records, 0);
  job.joinThrows = undefined;
  assert.throws(() => run.wait(), /fake run: late/);
  assert.equal(run.records, 1);
});

test("ready(): one completion wait for every call, resolving or rejecting with wait()'s outcome", async () => {
  const job: FakeJob = { done: false, result: "async boom" };
  const run = new FakeRun(job);
  const a = run.ready(),
    b = run.ready();
  assert.equal(a, b, "the same promise");
  assert.equal(run.settled, false, "ready() does not block");
  setImmediate(() => (job.done = true));
  await assert.rejects(a, /fake run: async boom/);
  assert.equal(run.whenDones, 1);
  assert.deepEqual(run.joins, [false]);
  const ok = new FakeRun({ done: true, result: "" });
  ok.settle();
  await ok.ready();
  assert.equal(ok.whenDones, 0, "a settled run awaits nothing");
});

test("notified() resolves on the notifier's callback, at once without one or when it declines", async () => {
  const h = {};
  let call: (() => void) | null = null;
  const notify: NotifyFn = (handle, done) => {
    assert.equal(handle, h);
    call = done;
    return true;
  };
  let resolved = false;
  const p = notified(notify, h).then(() => (resolved = true));
  await new Promise<void>((r) => setImmediate(r));
  assert.equal(resolved, false, "pending until the callback");
  call!();
  await p;
  assert.equal(resolved, true);
  await notified(undefined, h);
  await notified(() => false, h);
});

test("depsSettled() waits for the unsettled dependencies and never rejects on their failures", async () => {
  const failing = new FakeRun({ done: false, result: "dep failed" });
  const fine = new FakeRun({ done: false, result: "" });
  const settled = new FakeRun({ done: true, result: "" });
  settled.settle();
  setImmediate(() => {
    failing.job.done = true;
    fine.job.done = true;
  });
  await depsSettled([failing, fine, settled]);
  assert.equal(failing.settled && fine.settled, true);
  assert.equal(failing.error?.message, "fake run: dep failed");
  assert.equal(settled.whenDones, 0);
});
