/**
 * @file Shared helpers of the multi-process MPI tests: the skip reason, the results each worker process writes, `mpirun`
 * of test/parallel/mpi-worker.ts with a hard timeout, and the transport check.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import type { ReshardCase } from "./mpi-reshard-cases.js";

export const worker = fileURLToPath(new URL("./mpi-worker.js", import.meta.url));
export const probe = spawnSync("mpirun", ["--version"], { encoding: "utf8" });
export const skip: string | false = deviceRuntimeUnavailable()
  ? `the device runtime is unavailable (${deviceRuntimeUnavailable()})`
  : probe.error || probe.status !== 0
    ? `mpirun not found (${probe.error?.message ?? probe.stderr}); install openmpi-bin libopenmpi-dev`
    : false;
if (skip) console.log(`# distributed.test: multi-process tests skipped: ${skip}`);

import type { Case } from "./mpi-case.js";
export type { Case };
export interface GlobalResult {
  shape: number[];
  shards: [number, [number, number][], number[]][];
  full: number[];
  gathered: number[];
  readError: string;
  callbackCalls: number;
  gathered2: number[][];
  full2: number[];
}
export interface Result {
  processIndex: number;
  processCount: number;
  devices: [number, number][];
  localDevices: number[];
  cases: Case[];
  error?: string;
  allgather?: number[][];
  mismatch?: string;
  after?: number[];
  /** Segment exchanges per psum: a small one, a large one (the collectives job). */
  psumExchanges?: number[];
  fusedEpilogues?: number;
  /** Of those, taken by the one-pass `w - sum * s` kernel. */
  onePassEpilogues?: number;
  /** The one-pass kernel's runs for the `w + 0.25 * psum` case. */
  onePassAddForm?: number;
  /** Direct all-reduces that streamed their copies in the case run after a pause. */
  streamedExchanges?: number;
  early?: string;
  earlyMs?: number;
  reshardDead?: string[];
  reshardDeadMs?: number;
  deviceFail?: string;
  deviceFailMs?: number;
  afterFail?: number[];
  raised?: string;
  raisedMs?: number;
  global?: GlobalResult;
  reshard?: {
    cases: ReshardCase[];
    errors: Record<string, string>;
    programs: { name: string; got: number[]; want: number[] }[];
  };
  before?: number[];
  killed?: string;
  killedMs?: number;
  afterKill?: number[][];
  outOfStep?: string;
  outOfStepMs?: number;
  transport?: {
    transport: string;
    reason: string;
    exchanges: number;
    bytes: number;
    mpiRings: number;
    twoLevel: number;
    hosts: number;
    hostProcesses: number;
  };
  loaded?: {
    w: number[];
    r: number[];
    step: number[];
    wShards: [number, [number, number][]][];
    spans: boolean;
  };
}

/** Runs `mpirun -np n` of the worker with a hard timeout (the whole job is killed past it); the results each process wrote. */
export function mpirun(
  n: number,
  scenario: string,
  devs: number,
  extraEnv: Record<string, string> = {},
  mpirunOptions: string[] = [],
): Promise<{ status: number | null; results: Result[]; log: string }> {
  return new Promise((resolve) => {
    const dir = mkdtempSync(join(tmpdir(), "jaxts-mpi-")),
      sessions = mkdtempSync(join(tmpdir(), "jaxts-ompi-"));
    const args = [
      "--allow-run-as-root",
      "--oversubscribe",
      ...mpirunOptions,
      "-np",
      String(n),
      process.execPath,
      worker,
      scenario,
      String(devs),
      dir,
    ];
    // the ONNX Runtime backend preload of the test runner, and nothing of this process's MPI state
    // (containers often forbid the cross-memory attach of Open MPI's shared-memory transport: plain copies instead)
    const env = {
      OMPI_MCA_btl_vader_single_copy_mechanism: "none",
      ...process.env,
      // each job its own session directory: concurrent jobs of one test file raced creating Open MPI 4's shared
      // /tmp/ompi.<host>.<uid> ("A call to mkdir was unable to create the desired directory ... File exists")
      OMPI_MCA_orte_tmpdir_base: sessions,
      JAXTS_SPMD_RUNTIME: "emulation",
      ...extraEnv,
    };
    const child = spawn("mpirun", args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    child.stdout.on("data", (d) => {
      log += String(d);
    });
    child.stderr.on("data", (d) => {
      log += String(d);
    });
    const timer = setTimeout(() => {
      log += "\n[killed: the job ran past 240 s]";
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5000).unref();
    }, 240_000);
    child.on("close", (status) => {
      clearTimeout(timer);
      const results: Result[] = [];
      for (const f of readdirSync(dir).sort()) {
        try {
          results.push(JSON.parse(readFileSync(join(dir, f), "utf8")) as Result);
        } catch (e) {
          log += `\n${f}: ${(e as Error).message}`;
        }
      }
      rmSync(dir, { recursive: true, force: true });
      rmSync(sessions, { recursive: true, force: true });
      resolve({ status, results: results.sort((a, b) => a.processIndex - b.processIndex), log });
    });
  });
}

/**
 * The transport the job's cross-process collectives used: the shared-memory segment (processes on this host, counted
 * exchanges) or MPI (JAXTS_MPI_SHM=0, no shared-memory exchange).
 */
export function checkTransport(r: Result, want: "shm" | "mpi"): void {
  const t = r.transport ?? assert.fail(`process ${r.processIndex}: no transport info`);
  assert.equal(t.transport, want, `process ${r.processIndex}: transport (${t.reason})`);
  if (want === "shm") {
    assert.ok(
      t.exchanges > 0 && t.bytes > 0,
      `process ${r.processIndex}: shared-memory exchanges ${JSON.stringify(t)}`,
    );
  } else {
    assert.match(t.reason, /JAXTS_MPI_SHM=0 on process \d/);
    assert.equal(t.exchanges, 0, `process ${r.processIndex}: no shared-memory exchange`);
  }
}
