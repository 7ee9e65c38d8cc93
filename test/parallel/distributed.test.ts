/**
 * @file Multi-process meshes on MPI: `mpirun -np 2` (2 devices each) and `-np 3` (1 device each) of
 * test/parallel/mpi-worker.ts; every collective across processes equals the single-process emulation, a data-parallel
 * MLP grad step on 2 processes equals the whole batch in 1, processAllgather, a sharded checkpoint; the jobs use the
 * same-host shared-memory transport, one runs with MPI only (JAXTS_MPI_SHM=0) and two across two "hosts", and they
 * must agree (the faults: distributed-faults.test.ts). Skipped, with the reason, where mpirun or the device runtime is
 * absent.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Array as JArray, distributed, loadSharded, processCount, processIndex } from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import { checkTransport, mpirun, skip, type Case, type Result } from "./distributed-helpers.js";

// both jobs start at once (their processes mostly wait on each other)
const ckptDir = skip ? "" : mkdtempSync(join(tmpdir(), "jaxts-mpi-ckpt-"));
const ckptEnv = { JAXTS_TEST_CKPT_DIR: ckptDir };
const jobs = skip
  ? null
  : {
      // the processes share this host: the shared-memory transport (the default)
      two: mpirun(2, "collectives", 2),
      // mailboxes of 192 bytes (a 64-byte slice per process): every exchange runs in many rounds
      three: mpirun(3, "basic", 1, { JAXTS_MPI_SHM_BYTES: "192" }),
      // MPI only: ring pieces of 4 bytes, every ring step of every collective pipelined element by element
      threeMpi: mpirun(3, "basic", 1, { JAXTS_MPI_SHM: "0", JAXTS_MPI_PIECE_BYTES: "4" }),
      // two "hosts" on this machine (JAXTS_HOST_ID = h<rank mod 2>): 2 x 2 processes (2 devices each), and 2 + 1
      hier4: mpirun(4, "basic", 2, { JAXTS_TEST_HOST_MOD: "2" }),
      hier3: mpirun(3, "basic", 1, { JAXTS_TEST_HOST_MOD: "2" }),
      // a sharded checkpoint saved by 2 processes, then loaded by 3
      ckpt: mpirun(2, "ckpt-save", 1, ckptEnv).then(async (saved) => ({
        saved,
        loaded: await mpirun(3, "ckpt-load", 1, ckptEnv),
      })),
    };

function checkCases(r: Result, what: string): void {
  assert.ok(r.cases.length > 0, `${what}: no cases ran`);
  for (const c of r.cases) {
    // meshes over some processes run on the devices of those processes only
    const ranOn =
      c.name === "psum over processes 0 and 1" && r.processIndex > 1
        ? []
        : c.name === "psum within process 0" && r.processIndex > 0
          ? []
          : r.localDevices;
    assert.deepEqual(
      c.ranOn,
      ranOn,
      `${what} ${c.name}: ran on this process's devices of the mesh (none: launched nothing)`,
    );
    assert.equal(c.got.length, c.want.length, `${what} ${c.name}: size`);
    if (c.dtype === "float32")
      c.got.forEach((v, i) =>
        assert.ok(
          Math.abs(v - c.want[i]) <= 1e-5 * Math.max(1, Math.abs(c.want[i])),
          `${what} ${c.name}[${i}]: ${v} vs ${c.want[i]}`,
        ),
      );
    else assert.deepEqual(c.got, c.want, `${what} ${c.name}`);
  }
}
const find = (r: Result, name: string): Case =>
  r.cases.find((c) => c.name === name) ?? assert.fail(`case ${name} missing`);

/** jit with shardings over the global mesh: host inputs (outputs assembled) and global arrays (outputs global). */
function checkJit(r: Result): void {
  for (const k of [0, 1]) {
    assert.equal(find(r, `jit sharded out ${k}`).spans, undefined);
    assert.equal(find(r, `global jit sharded out ${k}`).spans, true, "jit of global arrays gives global arrays");
  }
  assert.deepEqual(find(r, "jit sharded out 1").shape, [2 * r.devices.length, 4]);
}

/**
 * Global arrays over n devices, k per process: shapes, this process's shards (rows 2d..2d+2 of the global value on
 * device d), processAllgather of them, the read error, shardMap/pmap over them (as global outputs) equal the emulation.
 */
function checkGlobal(r: Result, n: number, k: number): void {
  const g = r.global ?? assert.fail(`process ${r.processIndex}: no global-array results`);
  const what = `process ${r.processIndex} global arrays`;
  assert.deepEqual(g.shape, [2 * n, 3], `${what}: the global shape`);
  assert.deepEqual(
    g.shards.map(([d]) => d),
    r.localDevices,
    `${what}: addressableShards are this process's devices`,
  );
  for (const [d, index, vals] of g.shards) {
    assert.deepEqual(index, [
      [2 * d, 2 * d + 2],
      [0, 3],
    ]);
    assert.deepEqual(vals, g.full.slice(6 * d, 6 * d + 6), `${what}: the block of device ${d}`);
  }
  assert.equal(g.full.length, 6 * n);
  assert.deepEqual(g.gathered, g.full, `${what}: processAllgather gives the global value`);
  const procs = Array.from({ length: n / k }, (_, q) => q).join(", ");
  assert.match(
    g.readError,
    new RegExp(
      String.raw`^Array\.tolist: the value of f32\[${2 * n},3\] \(NamedSharding\(mesh=Mesh\('i': ${n}\), spec=PartitionSpec\('i'\)\)\) spans devices of processes \[${procs}\] and cannot be fetched on process ${r.processIndex}, which holds only its own shards; gather it with multihostUtils\.processAllgather\(x\)`,
    ),
  );
  assert.equal(g.callbackCalls, k, `${what}: makeArrayFromCallback called back for this process's devices only`);
  assert.equal(g.full2.length, 4 * n);
  assert.deepEqual(g.gathered2, [g.full2, g.full2], `${what}: from single-device arrays and from a callback`);
  const globalCases = [
    "shardMap sin",
    "shardMap psum",
    "pmap psum",
    "2-d psum over d",
    "2-d psum over p+d",
    "shardMap resharded",
  ];
  for (const nm of globalCases)
    assert.equal(find(r, `global ${nm}`).spans, true, `${what}: ${nm} gives a global array`);
}

/**
 * Resharding global arrays over n devices, k per process (test/parallel/mpi-reshard-cases.ts): on every process its
 * shards equal the host value's slices at their indices and the gathered value the host value, exactly (int32 and
 * float32); the bytes the processes sent add up to the minimum counted element by element (and, for P('x') -> P(None),
 * to its closed form: each process lacks n - k of n blocks of 2 x 3 four-byte values); the same sharding sends nothing
 * and returns the array itself; a sharding over other devices and a non-divisible one are refused, naming them; a
 * shardMap and a jit whose in_specs differ from their global arguments equal the emulation of the host values.
 */
function checkReshard(results: Result[], n: number, k: number): void {
  const np = results.length;
  const names = results[0].reshard?.cases.map((c) => c.name) ?? assert.fail("no resharding results");
  assert.equal(names.length, n === 4 ? 16 : 14, `resharding cases: ${names.join("; ")}`);
  for (const [i, name] of names.entries()) {
    const per = results.map((r) => r.reshard!.cases[i]);
    for (const [p, c] of per.entries()) {
      const what = `process ${p} ${name}`;
      assert.equal(c.name, name, `${what}: the processes ran the cases in the same order`);
      assert.equal(c.error, undefined, `${what}: ${c.error}`);
      assert.deepEqual(
        c.shards.map(([d]) => d).sort((a, b) => a - b),
        results[p].localDevices,
        `${what}: addressableShards are this process's devices`,
      );
      assert.deepEqual(
        c.shards.map(([, , v]) => v),
        c.wantShards,
        `${what}: every shard equals the host value at its index`,
      );
      assert.deepEqual(c.gathered, c.want, `${what}: processAllgather gives the host value`);
      assert.equal(c.minBytes, per[0].minBytes);
      assert.equal(
        c.same,
        name.startsWith("same sharding"),
        `${what}: devicePut returns x itself only for its own layout`,
      );
    }
    const sent = per.reduce((a, c) => a + c.sent, 0);
    assert.equal(sent, per[0].minBytes, `${name}: bytes sent between processes = the minimum`);
    if (name.startsWith("x->none")) assert.equal(sent, np * 2 * 3 * 4 * (n - k), `${name}: closed form`);
    if (name.startsWith("same sharding")) assert.equal(sent, 0, `${name}: nothing moves`);
    else if (!name.startsWith("none->x")) assert.ok(sent > 0, `${name}: blocks had to move between processes`);
  }
  for (const r of results) {
    const e = r.reshard!.errors;
    assert.match(
      e.otherDevices,
      new RegExp(
        String.raw`^devicePut: cannot reshard the global array f32\[${2 * n},3\] from NamedSharding\(mesh=Mesh\('x': ${n}\), spec=PartitionSpec\('x'\)\) \(devices \[[\d, ]+\]\) to NamedSharding\(mesh=Mesh\('z': 2\), spec=PartitionSpec\('z'\)\) \(devices \[0, 1\]\): the target sharding must be over the same devices as the array`,
      ),
    );
    assert.match(
      e.indivisible,
      new RegExp(
        String.raw`^devicePut: cannot reshard the global array i32\[${2 * n},5\] of shape \(${2 * n}, 5\) from .*PartitionSpec\('x'\)\) to .*PartitionSpec\(None, 'x'\)\): .*dimension 1 of size 5 is not divisible by ${n}`,
      ),
    );
    assert.equal(r.reshard!.programs.length, 4);
    for (const c of r.reshard!.programs) {
      assert.equal(c.got.length, c.want.length, c.name);
      c.got.forEach((v, i) =>
        assert.ok(
          Math.abs(v - c.want[i]) <= 1e-5 * Math.max(1, Math.abs(c.want[i])),
          `${c.name}[${i}]: ${v} vs ${c.want[i]}`,
        ),
      );
    }
  }
}

test(
  "2 processes x 2 devices: every collective over a 1-d and a 2-d mesh and jit with shardings equal the emulation; MLP grads; processAllgather",
  { skip, timeout: 260_000 },
  async () => {
    const { status, results, log } = await jobs!.two;
    assert.equal(results.length, 2, `two results expected:\n${log.slice(-3000)}`);
    for (const r of results) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      assert.equal(r.processCount, 2);
      assert.deepEqual(
        r.devices,
        [
          [0, 0],
          [1, 0],
          [2, 1],
          [3, 1],
        ],
        "global device ids and their processes",
      );
      assert.deepEqual(r.localDevices, r.processIndex === 0 ? [0, 1] : [2, 3]);
      const mlp = r.cases.filter((c) => c.name.startsWith("mlp"));
      assert.equal(mlp.length, 4);
      for (const c of mlp) assert.equal(c.spans, c.name.includes("global") ? true : undefined, c.name);
      for (const c of mlp)
        assert.deepEqual(c.ranOn, [r.localDevices[0]], "the data-parallel step ran on one device per process");
      checkCases({ ...r, cases: r.cases.filter((c) => !c.name.startsWith("mlp")) }, `process ${r.processIndex}`);
      for (const c of mlp)
        c.got.forEach((v, i) =>
          assert.ok(
            Math.abs(v - c.want[i]) <= 1e-5 * Math.max(1e-3, Math.abs(c.want[i])),
            `${c.name}[${i}]: ${v} vs ${c.want[i]}`,
          ),
        );
      assert.deepEqual(r.allgather, [
        [0, 1, 2],
        [10, 11, 12],
      ]);
      assert.deepEqual(r.after, [4, 4], "a collective after the failed one works");
      assert.equal(find(r, "2-d psum over p+d").shape.join(","), "2,3");
      checkGlobal(r, 4, 2);
      checkJit(r);
      checkTransport(r, "shm");
      assert.deepEqual(
        r.psumExchanges,
        [1, 2],
        "segment exchanges: a small psum with its header, a large one in two (header, direct all-reduce)",
      );
      for (const name of [
        "direct psum of 20001 float32 per device",
        "direct pmax of 20001 float32 per device",
        "direct psum of 30001 int32 per device",
        "direct psum + SGD update of 20001 float32 per device",
        "direct psum + SGD update of 20001 float32 per device, streamed",
        "direct psum + update w + 0.25 * psum of 20001 float32 per device",
      ])
        assert.deepEqual(find(r, name).got, find(r, name).want, `${name}: the emulation's bits`);
      assert.equal(
        r.fusedEpilogues,
        1,
        "the SGD update ran inside the direct exchange's fold (one fused AllReduceEpilogue)",
      );
      assert.equal(
        r.onePassEpilogues,
        1,
        "the update `w - psum(g) * 0.5` took the one-pass kernel (sum, scale, subtract)",
      );
      assert.equal(r.onePassAddForm, 1, "the update `w + 0.25 * psum(g)` took the one-pass kernel too");
      assert.ok(
        (r.streamedExchanges ?? 0) >= 1,
        `the psum + update after a 5 ms pause streamed its copies (${r.streamedExchanges} streamed exchanges)`,
      );
      // the data x tensor Transformer step over the 2-process (2, 2) mesh: loss and every parameter as one process's
      // single-device step computes them, within 1e-6 of max(1, |value|)
      const t = find(r, "transformer dxt step");
      assert.ok(t.got.length > 4000, `${t.got.length} values (loss and parameters)`);
      t.got.forEach((v, i) =>
        assert.ok(
          Math.abs(v - t.want[i]) <= 1e-6 * Math.max(1, Math.abs(t.want[i])),
          `transformer value ${i}: ${v} vs ${t.want[i]}`,
        ),
      );
    }
    checkReshard(results, 4, 2);
    // an independent value: psum over 4 blocks of 2 rows of the worker's int32 values
    const v = Array.from({ length: 24 }, (_, i) => ((i * 7919) % 201) - 100);
    const want = Array.from({ length: 6 }, (_, e) => [0, 1, 2, 3].reduce((s, k) => s + v[k * 6 + e], 0));
    assert.deepEqual(find(results[0], "1-d psum int32").got, want);
    // the shape mismatch names both sides on both processes
    assert.match(
      results[0].mismatch!,
      /psum over mesh axis 'i' \(group of ranks \[0, 1, 2, 3\]\) on process 0: processes disagree: process 1 \(ranks \[2, 3\]\) called AllReduce of float32\[4,3\], this process AllReduce of float32\[2,3\]/,
    );
    assert.match(
      results[1].mismatch!,
      /on process 1: processes disagree: process 0 \(ranks \[0, 1\]\) called AllReduce of float32\[2,3\], this process AllReduce of float32\[4,3\]/,
    );
    // process 1 left early: process 0's collective failed at its 1500 ms timeout naming process 1 and its ranks
    assert.match(
      results[0].early!,
      /psum over mesh axis 'i' .* timed out after 1500 ms waiting for the other processes: no answer from process\(es\) \[1\] before the deadline; process 1 runs ranks \[2, 3\]/,
    );
    assert.ok(results[0].earlyMs! < 20_000, `the early-exit failure took ${results[0].earlyMs} ms (timeout 1500 ms)`);
    // then a reshard: its agreement step (an allgather) and the point-to-point exchange time out naming process 1
    assert.match(
      results[0].reshardDead![0],
      /^devicePut \(resharding f32\[8,3\]\) on process 0 timed out after 1500 ms: no answer from process\(es\) \[1\] before the deadline/,
    );
    assert.match(
      results[0].reshardDead![1],
      /^reshard exchange on process 0 timed out after 1500 ms: no answer from process\(es\) \[1\] before the deadline/,
    );
    assert.ok(results[0].reshardDeadMs! < 30_000, `the reshard failures took ${results[0].reshardDeadMs} ms`);
    // a device failing on process 0 releases every process at once (the timeout was 60 s), naming device and rank
    const why = String.raw`device 0 \(rank 0\): test hook: device failure injected before the program ran`;
    assert.match(
      results[0].deviceFail!,
      new RegExp(
        String.raw`^device runtime: program shard_map failed on devices \[0, 1\]: ${why}; device 1 \(rank 1\): .*psum over mesh axis 'i' \(group of ranks \[0, 1, 2, 3\]\) on process 0: released early: ${why}$`,
      ),
    );
    assert.match(
      results[1].deviceFail!,
      new RegExp(
        String.raw`^device runtime: program shard_map failed on devices \[2, 3\]: device 2 \(rank 2\): .*psum over mesh axis 'i' \(group of ranks \[0, 1, 2, 3\]\) on process 1: released early: process 0 failed: ${why}`,
      ),
    );
    for (const r of results) {
      assert.ok(r.deviceFailMs! < 30_000, `process ${r.processIndex}: the device failure took ${r.deviceFailMs} ms`);
      assert.deepEqual(r.afterFail, [4, 4], `process ${r.processIndex}: a collective after the device failure works`);
    }
    // process 1 raised in its shardMap body: process 0 failed at its 1500 ms timeout naming process 1 and its ranks
    assert.equal(results[1].raised, "user error on process 1");
    assert.match(
      results[0].raised!,
      /timed out after 1500 ms waiting for the other processes: no answer from process\(es\) \[1\] before the deadline; process 1 runs ranks \[2, 3\]/,
    );
    assert.ok(
      results[0].raisedMs! < 20_000,
      `the failure after a raise took ${results[0].raisedMs} ms (timeout 1500 ms)`,
    );
    assert.equal(status, 0, `mpirun exit status:\n${log.slice(-2000)}`);
  },
);

test(
  "3 processes x 1 device: every collective, a pmap and jit with shardings equal the emulation; processAllgather; syncGlobalDevices",
  { skip, timeout: 260_000 },
  async () => {
    const { status, results, log } = await jobs!.three;
    assert.equal(results.length, 3, `three results expected:\n${log.slice(-3000)}`);
    for (const r of results) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      assert.deepEqual(r.devices, [
        [0, 0],
        [1, 1],
        [2, 2],
      ]);
      checkCases(r, `process ${r.processIndex}`);
      for (const nm of ["pmap psum int32", "psum over processes 0 and 1", "psum within process 0"])
        assert.ok(
          r.cases.some((c) => c.name === nm),
          nm,
        );
      assert.deepEqual(r.allgather, [
        [0, 1, 2],
        [10, 11, 12],
        [20, 21, 22],
      ]);
      checkGlobal(r, 3, 1);
      checkJit(r);
      checkTransport(r, "shm");
    }
    checkReshard(results, 3, 1);
    assert.equal(status, 0, `mpirun exit status:\n${log.slice(-2000)}`);
  },
);

test(
  "3 processes x 1 device over MPI only (JAXTS_MPI_SHM=0): every collective equals the emulation and the shared-memory job",
  { skip, timeout: 260_000 },
  async () => {
    const [mpi, shm] = [await jobs!.threeMpi, await jobs!.three];
    assert.equal(mpi.results.length, 3, `three results expected:\n${mpi.log.slice(-3000)}`);
    assert.equal(shm.results.length, 3);
    for (const r of mpi.results) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      checkCases(r, `process ${r.processIndex} (MPI)`);
      checkGlobal(r, 3, 1);
      checkTransport(r, "mpi");
      // the same cases as the shared-memory job: bit-identical for int32 and data moves, within rounding for sums
      const other = shm.results[r.processIndex];
      assert.deepEqual(
        r.cases.map((c) => c.name),
        other.cases.map((c) => c.name),
      );
      r.cases.forEach((c, k) => {
        const o = other.cases[k].got;
        if (c.dtype === "float32" && /psum|Scatter|pmean|jit/.test(c.name))
          c.got.forEach((v, i) => assert.ok(Math.abs(v - o[i]) <= 1e-6 * Math.max(1, Math.abs(v)), `${c.name}[${i}]`));
        else assert.deepEqual(c.got, o, `${c.name}: the MPI and the shared-memory transports agree`);
      });
    }
    assert.equal(mpi.status, 0, `mpirun exit status:\n${mpi.log.slice(-2000)}`);
  },
);

/**
 * The two-level transport: processes r and r + 2 share "host" r mod 2; the first process of each host in group order
 * (0 and 1) runs the ring over MPI, the others only reach their host's leader through the segment.
 */
function checkHier(r: Result, hostProcesses: number): void {
  const t = r.transport ?? assert.fail(`process ${r.processIndex}: no transport info`);
  const what = `process ${r.processIndex}: ${JSON.stringify(t)}`;
  assert.equal(t.hosts, 2, what);
  assert.equal(t.hostProcesses, hostProcesses, what);
  assert.ok(t.twoLevel > 0, `${what}: two-level collectives`);
  if (hostProcesses > 1) {
    assert.equal(t.transport, "hier", what);
    assert.ok(t.exchanges > 0 && t.bytes > 0, `${what}: shared-memory exchanges within the host`);
  } else {
    assert.equal(t.transport, "mpi", what);
    assert.match(t.reason, /no other process runs on this host \(2 hosts\)/);
    assert.equal(t.exchanges, 0, what);
  }
  if (r.processIndex < 2) assert.ok(t.mpiRings > 0, `${what}: the host leader runs the ring over MPI`);
  else assert.equal(t.mpiRings, 0, `${what}: not a host leader: no ring over MPI`);
}

test(
  "2 hosts x 2 processes x 2 devices (JAXTS_HOST_ID): every collective equals the emulation, in two levels",
  { skip, timeout: 260_000 },
  async () => {
    const { status, results, log } = await jobs!.hier4;
    assert.equal(results.length, 4, `four results expected:\n${log.slice(-3000)}`);
    for (const r of results) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      // the meshes over some processes are built for 1 device per process: their values are checked, not where they ran
      const some = [find(r, "psum within process 0"), find(r, "psum over processes 0 and 1")];
      for (const c of some) assert.deepEqual(c.got, c.want, c.name);
      checkCases({ ...r, cases: r.cases.filter((c) => !some.includes(c)) }, `process ${r.processIndex} (two levels)`);
      checkHier(r, 2);
    }
    assert.equal(status, 0, `mpirun exit status:\n${log.slice(-2000)}`);
  },
);

test(
  "hosts of 2 + 1 processes: every collective equals the emulation and, for int32 and data moves, the MPI-only job",
  { skip, timeout: 260_000 },
  async () => {
    const [hier, mpi] = [await jobs!.hier3, await jobs!.threeMpi];
    assert.equal(hier.results.length, 3, `three results expected:\n${hier.log.slice(-3000)}`);
    for (const r of hier.results) {
      assert.equal(r.error, undefined, `process ${r.processIndex}: ${r.error}`);
      checkCases(r, `process ${r.processIndex} (two levels)`);
      checkHier(r, r.processIndex === 1 ? 1 : 2);
      const other = mpi.results[r.processIndex];
      r.cases.forEach((c, k) => {
        assert.equal(c.name, other.cases[k].name);
        if (c.dtype === "float32" && /psum|Scatter|pmean|jit/.test(c.name))
          c.got.forEach((v, i) =>
            assert.ok(Math.abs(v - other.cases[k].got[i]) <= 1e-6 * Math.max(1, Math.abs(v)), `${c.name}[${i}]`),
          );
        else assert.deepEqual(c.got, other.cases[k].got, `${c.name}: the two-level and the MPI-only transports agree`);
      });
    }
    assert.equal(hier.status, 0, `mpirun exit status:\n${hier.log.slice(-2000)}`);
  },
);

test(
  "sharded checkpoint: saved by 2 processes (each its own rows), loaded by 3 and by 1 (resharded)",
  { skip, timeout: 260_000 },
  async () => {
    try {
      const { saved, loaded } = await jobs!.ckpt;
      assert.equal(saved.results.length, 2, `two results expected:\n${saved.log.slice(-3000)}`);
      for (const r of saved.results) assert.equal(r.error, undefined, `save, process ${r.processIndex}: ${r.error}`);
      // the worker's values: float32 of sin(1.37 i) * 10 + 0.01 i, and int32 ((7919 i) mod 201) - 100
      const w = Array.from({ length: 18 }, (_, i) => Math.fround(Math.sin(i * 1.37) * 10 + i * 0.01));
      const r = Array.from({ length: 4 }, (_, i) => ((i * 7919) % 201) - 100);
      assert.equal(loaded.results.length, 3, `three results expected:\n${loaded.log.slice(-3000)}`);
      for (const res of loaded.results) {
        assert.equal(res.error, undefined, `load, process ${res.processIndex}: ${res.error}`);
        const l = res.loaded!;
        assert.deepEqual(l.w, w, `process ${res.processIndex}: w gathered`);
        assert.deepEqual(l.r, r);
        assert.deepEqual(l.step, [7]);
        const d = res.processIndex;
        assert.deepEqual(l.wShards, [
          [
            d,
            [
              [2 * d, 2 * d + 2],
              [0, 3],
            ],
          ],
        ]);
        assert.equal(l.spans, true, "the loaded w is a global array");
      }
      // one process: the flat leaves (keys sorted: r, step, w) as host arrays
      const flat = loadSharded(ckptDir) as JArray[];
      assert.deepEqual(
        flat.map((x) => [x.tolist()].flat(2)),
        [r, [7], w],
      );
      assert.equal(saved.status, 0, saved.log.slice(-2000));
      assert.equal(loaded.status, 0, loaded.log.slice(-2000));
    } finally {
      rmSync(ckptDir, { recursive: true, force: true });
    }
  },
);

test("distributed.initialize outside a launcher: { numProcesses: 1 } runs single-process; a second call is refused", () => {
  assert.equal(processIndex(), 0);
  assert.equal(processCount(), 1);
  assert.throws(
    () => distributed.initialize({ numProcesses: -1 }),
    /distributed\.initialize: numProcesses must be a non-negative integer, got -1/,
  );
  distributed.initialize({ numProcesses: 1 });
  assert.equal(distributed.isInitialized(), true);
  assert.equal(processCount(), 1);
  assert.throws(() => distributed.initialize(), /distributed\.initialize: should only be called once/);
});

test(
  "distributed.initialize without Open MPI's library: a clear error saying what to install",
  { skip: deviceRuntimeUnavailable() ?? false },
  () => {
    const index = new URL("../../src/index.js", import.meta.url).href;
    const code = `const { distributed } = await import(${JSON.stringify(index)});
try { distributed.initialize({ numProcesses: 2 }); console.log("no error"); } catch (e) { console.log(e.message); }`;
    const env: NodeJS.ProcessEnv = { ...process.env, JAXTS_MPI_LIBRARY: "/nonexistent/libmpi.so.40" };
    for (const k of Object.keys(env)) if (/^(OMPI_|PMIX_|PMI_)/.test(k)) delete env[k];
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], {
      env,
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.match(
      r.stdout,
      /distributed\.initialize: cannot start MPI: cannot load Open MPI's libmpi \(.*\/nonexistent\/libmpi\.so\.40.*\); install Open MPI \(Debian\/Ubuntu: apt-get install openmpi-bin libopenmpi-dev\)/,
      r.stdout + r.stderr,
    );
  },
);
