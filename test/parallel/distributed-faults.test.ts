/**
 * @file Multi-process meshes on MPI, the faults: a shape mismatch, a device failure, a raise and an early exit over MPI
 * only and across two "hosts", processes at different collectives over shared memory, and a process SIGKILLed mid-run;
 * each fails naming the processes, and a collective after it works. Skipped, with the reason, where mpirun or the device
 * runtime is absent.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { checkTransport, mpirun, skip } from "./distributed-helpers.js";

// the jobs start at once (their processes mostly wait on each other)
const jobs = skip
  ? null
  : {
      // MPI only: the mismatch, a device failure, a raise and an early exit
      faultsMpi: mpirun(2, "faults", 1, { JAXTS_MPI_SHM: "0" }),
      // two "hosts" on this machine (JAXTS_HOST_ID = h<rank mod 2>), 2 + 1 processes: the same faults
      hierFaults: mpirun(3, "faults", 1, { JAXTS_TEST_HOST_MOD: "2" }),
      // shared memory: process 0 runs two psums in a program where process 1 runs one, then an allGather
      outOfStep: mpirun(2, "outofstep", 1),
      // process 2 is SIGKILLed while the others wait for it (--enable-recovery: mpirun lets the survivors run on)
      killed: mpirun(3, "sigkill", 1, {}, ["--enable-recovery"]),
    };

test(
  "2 processes x 1 device over MPI only: a mismatch, a device failure, a raise and an early exit fail naming the process",
  { skip, timeout: 260_000 },
  async () => {
    const { status, results, log } = await jobs!.faultsMpi;
    assert.equal(results.length, 2, `two results expected:\n${log.slice(-3000)}`);
    for (const r of results) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      checkTransport(r, "mpi");
      assert.deepEqual(r.after, [2, 2], "a collective after the mismatch works");
      assert.deepEqual(r.afterFail, [2, 2], "a collective after the device failure works");
      assert.ok(r.deviceFailMs! < 30_000, `process ${r.processIndex}: the device failure took ${r.deviceFailMs} ms`);
    }
    const [r0, r1] = results;
    assert.match(
      r0.mismatch!,
      /psum over mesh axis 'i' \(group of ranks \[0, 1\]\) on process 0: processes disagree: process 1 \(ranks \[1\]\) called AllReduce of float32\[4,3\], this process AllReduce of float32\[2,3\]/,
    );
    assert.match(
      r1.mismatch!,
      /on process 1: processes disagree: process 0 \(ranks \[0\]\) called AllReduce of float32\[2,3\]/,
    );
    assert.match(r0.deviceFail!, /device 0 \(rank 0\): test hook: device failure injected before the program ran/);
    assert.match(
      r1.deviceFail!,
      /on process 1: released early: process 0 failed: device 0 \(rank 0\): test hook: device failure injected/,
    );
    assert.equal(r1.raised, "user error on process 1");
    for (const what of [r0.raised!, r0.early!])
      assert.match(
        what,
        /timed out after 1500 ms waiting for the other processes: no answer from process\(es\) \[1\] before the deadline; process 1 runs ranks \[1\]/,
      );
    assert.ok(r0.earlyMs! < 20_000 && r0.raisedMs! < 20_000, `${r0.earlyMs} / ${r0.raisedMs} ms (timeout 1500 ms)`);
    assert.equal(status, 0, `mpirun exit status:\n${log.slice(-2000)}`);
  },
);

test(
  "hosts of 2 + 1 processes: a mismatch, a device failure and the process on the other host leaving fail naming it",
  { skip, timeout: 260_000 },
  async () => {
    const { status, results, log } = await jobs!.hierFaults;
    assert.equal(results.length, 3, `three results expected:\n${log.slice(-3000)}`);
    for (const r of results) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      assert.match(r.mismatch!, /processes disagree: process \d \(ranks \[\d\]\) called AllReduce of float32\[\d,3\]/);
      assert.deepEqual(r.after, [3, 3], "a collective after the mismatch works");
      assert.deepEqual(r.afterFail, [3, 3], "a collective after the device failure works");
    }
    const [r0, , r2] = results;
    assert.equal(results[1].raised, "user error on process 1");
    // process 1 (alone on its host) leaves: the process whose 1500 ms timeout ends first names it, the other is
    // released early by that failure (which names process 1 too)
    for (const r of [r0, r2])
      assert.match(r.early!, /no answer from process\(es\) \[1\] before the deadline;.* process 1 runs ranks \[1\]/);
    for (const r of [r0, r2]) assert.ok(r.earlyMs! < 20_000, `process ${r.processIndex}: ${r.earlyMs} ms`);
    assert.equal(status, 0, `mpirun exit status:\n${log.slice(-2000)}`);
  },
);

test(
  "2 processes x 1 device over shared memory: processes at different collectives fail naming both positions, not by timeout",
  { skip, timeout: 260_000 },
  async () => {
    const { status, results, log } = await jobs!.outOfStep;
    assert.equal(results.length, 2, `two results expected:\n${log.slice(-3000)}`);
    for (const r of results) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      assert.equal(r.transport?.transport, "shm", `process ${r.processIndex}: ${JSON.stringify(r.transport)}`);
      // the collective timeout is 20 s: the check fires after the peer waited 100 ms at the other collective
      assert.ok(r.outOfStepMs! < 10_000, `process ${r.processIndex}: out of step reported after ${r.outOfStepMs} ms`);
    }
    const [r0, r1] = results;
    assert.match(
      r0.outOfStep!,
      /psum over mesh axis 'i' \(group of ranks \[0, 1\]\) on process 0: processes are out of step: process 1 is at collective #0 of launch #(\d+) \(AllGather of float32\[1,3\]\), this process at collective #1 of launch #(\d+) \(AllReduce of int32\[1,2\]\); process 1 runs ranks \[1\]$/,
    );
    assert.match(
      r1.outOfStep!,
      /all_gather over mesh axis 'i' \(group of ranks \[0, 1\]\) on process 1: processes are out of step: process 0 is at collective #1 of launch #\d+ \(AllReduce of int32\[1,2\]\), this process at collective #0 of launch #\d+ \(AllGather of float32\[1,3\]\); process 0 runs ranks \[0\]$/,
    );
    // process 1 is one launch ahead of process 0
    const [, l1, l0] = /launch #(\d+) .*launch #(\d+)/.exec(r0.outOfStep!)!;
    assert.equal(Number(l1), Number(l0) + 1);
    assert.equal(status, 0, `mpirun exit status:\n${log.slice(-2000)}`);
  },
);

test(
  "3 processes, one SIGKILLed mid-run: the survivors fail naming its process and rank within the timeout, then go on",
  { skip, timeout: 260_000 },
  async () => {
    const { results, log } = await jobs!.killed;
    assert.equal(
      results.length,
      3,
      `three results expected (process 2 reports before it is killed):\n${log.slice(-3000)}`,
    );
    for (const r of results) {
      assert.deepEqual(r.before, [3, 3], `process ${r.processIndex}: the psum before the kill`);
      checkTransport(r, "shm");
    }
    assert.equal(results[2].killed, undefined, "process 2 was killed before its second psum");
    for (const r of results.slice(0, 2)) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      // either its own timeout, or the other survivor's (which told it at once), names process 2 and its rank
      assert.match(
        r.killed!,
        new RegExp(
          String.raw`psum over mesh axis 'i' \(group of ranks \[0, 1, 2\]\) on process ${r.processIndex}(: released early: process \d failed: .* on process \d)? timed out after 1500 ms waiting for the other processes: no answer from process\(es\) \[2\] before the deadline;.* process 2 runs ranks \[2\]`,
        ),
      );
      assert.ok(r.killedMs! < 20_000, `process ${r.processIndex}: the failure took ${r.killedMs} ms (timeout 1500 ms)`);
      // 1 + 2 over the survivors' global array
      assert.deepEqual(r.afterKill, [[3, 3]], `process ${r.processIndex}: a psum among the survivors after the kill`);
    }
  },
);
