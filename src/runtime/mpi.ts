/** @file The native addon's MPI functions (Open MPI loaded at run time): initialization, finalization, and a process allgather of bytes. */
import { deviceAddon } from "../backends/onnx/ort-runtime.js";

/** What the addon's MPI entry points look like (native/mpi-communicator.cc). */
/** Which transport cross-process collectives use, and the exchanges and bytes so far over the segment and over MPI. */
export interface MpiShmInfo {
  enabled: boolean;
  reason: string;
  exchanges: number;
  bytes: number;
  mpiExchanges: number;
  mpiBytes: number;
  mpiRings: number;
  twoLevel: number;
  /** AllReduceEpilogues evaluated inside the direct same-host exchange's fold (each process on its own share). */
  fusedEpilogues?: number;
  /** Of those, the ones of the form `w - sum * s` evaluated by the one-pass kernel ($JAXTS_MPI_SHM_ONEPASS=0: none). */
  onePassEpilogues?: number;
  hosts: number;
  hostProcesses: number;
  /**
   * Where the shared-memory exchanges spent their time so far (us): copying into the own mailbox (put), waiting for
   * peers, taking the peers' bytes (copies, ring folds), the direct all-reduce's fold; waits that yielded / slept.
   */
  profile?: {
    putUs: number;
    waitUs: number;
    takeUs: number;
    foldUs: number;
    yields: number;
    sleeps: number;
    /** Direct all-reduces whose copies streamed (non-temporal stores: the mailbox had gone cold). */
    streamed: number;
  };
}

export interface MpiAddon {
  mpiInit(): { rank: number; size: number; threadLevel: number };
  mpiFinalize(): void;
  mpiAllgather(bytes: Uint8Array, timeoutMs: number, what: string): Uint8Array[];
  /** Point to point: sends[q] to process q, recvBytes[q] bytes from it (this process's entries ignored). */
  mpiExchange(sends: Uint8Array[], recvBytes: number[], timeoutMs: number, what: string): Uint8Array[];
  /** The bench probe: seconds of each of `iters` plain MPI_Allreduce (float32 sum, all processes) of `count` floats. */
  mpiProbeAllreduce(count: number, iters: number): Float64Array;
  /**
   * Sets up the same-host shared-memory transport (every process calls it once, after mpiInit, with the most devices
   * any process has: one mailbox each): "" when cross-process
   * collectives will use it, else why not (another host, JAXTS_MPI_SHM=0, a segment that could not be mapped).
   */
  mpiShmSetup(timeoutMs: number, maxLocalDevices: number): string;
  /** Which transport cross-process collectives use, and the shared-memory exchanges and bytes received so far. */
  mpiShmInfo(): MpiShmInfo;
}

/** The addon's MPI functions, or the reason they are unavailable. */
export function mpiAddon(): { api: MpiAddon | null; why: string } {
  const { api, why } = deviceAddon();
  if (!api) return { api: null, why };
  const a = api as unknown as Partial<MpiAddon>;
  if (typeof a.mpiInit !== "function")
    return { api: null, why: "the native addon was built without MPI support (rebuild it: npm run build)" };
  return { api: a as MpiAddon, why: "" };
}
