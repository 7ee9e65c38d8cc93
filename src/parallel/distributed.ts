/**
 * @file jax.distributed on MPI: initialize / shutdown, processIndex / processCount, and jax.experimental.multihost_utils'
 * processAllgather and syncGlobalDevices. Processes are MPI ranks (Open MPI, loaded at run time by the native addon).
 */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { ShapedArray } from "../core/aval.js";
import { config } from "../core/config.js";
import { allocate, type DType } from "../core/dtype.js";
import { checkArity, checkOptions } from "../core/check-args.js";
import { flatten, unflatten } from "../core/tree.js";
import { mpiAddon, type MpiAddon, type MpiShmInfo } from "../runtime/index.js";
import { setProcessDevices } from "./mesh.js";

/** jax.distributed.initialize's options: both optional under mpirun / mpiexec (read from the launcher). */
export interface InitializeOpts {
  /** Number of processes (checked against the launcher's). */
  numProcesses?: number;
  /** This process's index (checked against the launcher's rank). */
  processId?: number;
}

interface State {
  api: MpiAddon | null;
  self: number;
  count: number;
  launches: number;
}
let state: State | null = null;

/** The launcher's rank and size from its environment (Open MPI, PMIx, or a PMI launcher), or null outside one. */
function launcherEnv(): { rank: number; size: number } | null {
  const e = process.env;
  const pairs: [string | undefined, string | undefined][] = [
    [e.OMPI_COMM_WORLD_RANK, e.OMPI_COMM_WORLD_SIZE],
    [e.PMIX_RANK, e.PMIX_SIZE ?? e.OMPI_COMM_WORLD_SIZE],
    [e.PMI_RANK, e.PMI_SIZE],
  ];
  for (const [r, s] of pairs) if (r !== undefined && s !== undefined) return { rank: Number(r), size: Number(s) };
  return null;
}

/**
 * jax.distributed.initialize: joins this process to the job. Under `mpirun -np N` no options are needed; explicit
 * `{ numProcesses, processId }` are checked against the launcher's. `{ numProcesses: 1 }` outside a launcher runs
 * single-process without MPI. Afterwards devices() lists every process's devices and localDevices() this one's.
 * Call it once, before devices(), makeMesh, pmap, shardMap or devicePut.
 */
export function initialize(opts: InitializeOpts = {}): void {
  checkArity("distributed.initialize", arguments, 1, "distributed.initialize({ numProcesses?, processId? })");
  checkOptions(
    "distributed.initialize",
    opts,
    ["numProcesses", "processId"],
    "distributed.initialize({ numProcesses?, processId? })",
  );
  if (state)
    throw new Error("distributed.initialize: should only be called once (it was already called in this process)");
  const { numProcesses, processId } = opts;
  for (const [k, v] of [
    ["numProcesses", numProcesses],
    ["processId", processId],
  ] as const) {
    if (v !== undefined && (!Number.isInteger(v) || v < 0))
      throw new Error(`distributed.initialize: ${k} must be a non-negative integer, got ${v}`);
  }
  const env = launcherEnv();
  if (!env && numProcesses === 1 && (processId ?? 0) === 0) {
    state = { api: null, self: 0, count: 1, launches: 0 };
    return;
  }
  const { api, why } = mpiAddon();
  if (!api) {
    throw new Error(
      `distributed.initialize: multi-process runs need the native addon with MPI (${why}); install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev), rebuild with npm run build, and start the processes with mpirun -np N node script.js`,
    );
  }
  let info: { rank: number; size: number };
  try {
    info = api.mpiInit();
  } catch (e) {
    throw new Error(`distributed.initialize: cannot start MPI: ${(e as Error).message}`);
  }
  if (numProcesses !== undefined && numProcesses !== info.size) {
    throw new Error(
      `distributed.initialize: numProcesses ${numProcesses} was given but the launcher started ${info.size} process(es)${env ? "" : " (no mpirun/mpiexec environment found: start the job with mpirun -np N)"}`,
    );
  }
  if (processId !== undefined && processId !== info.rank) {
    throw new Error(
      `distributed.initialize: processId ${processId} was given but the launcher made this process rank ${info.rank}`,
    );
  }
  const st: State = { api, self: info.rank, count: info.size, launches: 0 };
  state = st;
  process.once("exit", () => api.mpiFinalize());
  // every process's device count: the global device list (ids stable: process order, then local order)
  const mine = new Int32Array([config.numCpuDevices]);
  const counts = api
    .mpiAllgather(new Uint8Array(mine.buffer), config.collectiveTimeoutMs, "distributed.initialize (device counts)")
    .map((b) => new Int32Array(b.buffer, b.byteOffset, 1)[0]);
  setProcessDevices(counts, st.self);
  // processes on one host exchange collectives' bytes through a shared-memory segment (JAXTS_MPI_SHM=0: MPI only)
  shmReason = api.mpiShmSetup(config.collectiveTimeoutMs, Math.max(...counts));
}

let shmReason = "distributed.initialize was not called";

/**
 * @internal Which transport carries this job's cross-process collectives: "shm" (a shared-memory segment, every
 * process on this host), "hier" (a segment for this host's processes, MPI to other hosts: two-level collectives) or
 * "mpi" with the reason; the exchanges and bytes so far over the segment and over MPI, the number of hosts and of
 * processes sharing this one (tests, the bench). $JAXTS_HOST_ID (read at initialize) overrides the host identity.
 */
export function transportInfo(): Omit<MpiShmInfo, "enabled"> & { transport: "shm" | "hier" | "mpi" } {
  const info = state?.api?.mpiShmInfo() ?? {
    enabled: false,
    reason: shmReason,
    exchanges: 0,
    bytes: 0,
    mpiExchanges: 0,
    mpiBytes: 0,
    mpiRings: 0,
    twoLevel: 0,
    fusedEpilogues: 0,
    onePassEpilogues: 0,
    hosts: 1,
    hostProcesses: 1,
  };
  return {
    transport: info.enabled ? (info.hosts > 1 ? "hier" : "shm") : "mpi",
    reason: info.reason,
    exchanges: info.exchanges,
    bytes: info.bytes,
    mpiExchanges: info.mpiExchanges,
    mpiBytes: info.mpiBytes,
    mpiRings: info.mpiRings,
    twoLevel: info.twoLevel,
    fusedEpilogues: info.fusedEpilogues ?? 0,
    onePassEpilogues: info.onePassEpilogues ?? 0,
    hosts: info.hosts,
    hostProcesses: info.hostProcesses,
  };
}

/** jax.distributed.shutdown: finalizes MPI (collectives across processes fail afterwards). */
export function shutdown(): void {
  state?.api?.mpiFinalize();
}

/** Whether distributed.initialize was called. */
export const isInitialized = (): boolean => state !== null;
/** jax.process_index(): this process's index (0 without distributed.initialize). */
export const processIndex = (): number => state?.self ?? 0;
/** jax.process_count(): the number of processes (1 without distributed.initialize). */
export const processCount = (): number => state?.count ?? 1;

/** @internal The next multi-process launch number (every process launches in the same order, so the numbers agree). */
export function nextProcessLaunch(): number {
  return state ? state.launches++ : 0;
}

/** @internal The bytes of every process (index = process), `what` naming the caller in errors. */
export function allgatherBytes(bytes: Uint8Array, what: string): Uint8Array[] {
  if (!state || state.count === 1 || !state.api) return [bytes.slice()];
  return state.api.mpiAllgather(bytes, config.collectiveTimeoutMs, what);
}

/**
 * @internal Point to point with every process: sends[q] goes to process q and recvBytes[q] bytes come from it (the
 * answer's entry q; this process's entries are ignored). Every process calls it, in the same order as the others.
 */
export function exchangeBytes(sends: Uint8Array[], recvBytes: number[], what: string): Uint8Array[] {
  if (!state || state.count === 1 || !state.api) return sends.map(() => new Uint8Array(0));
  return state.api.mpiExchange(sends, recvBytes, config.collectiveTimeoutMs, what);
}

/** global-arrays.ts: the global value of an array spanning processes (gathered), or null for other arrays. */
let gatherGlobal: (x: ArrayImpl, what: string) => ArrayImpl | null = () => null;
/** @internal Installed by global-arrays.ts (which imports this module). */
export function setGlobalGather(f: (x: ArrayImpl, what: string) => ArrayImpl | null): void {
  gatherGlobal = f;
}

const encoder = new TextEncoder(),
  decoder = new TextDecoder();
const bytesOf = (a: ArrayImpl): Uint8Array => new Uint8Array(a.buffer.buffer, a.buffer.byteOffset, a.buffer.byteLength);

/**
 * multihost_utils.process_allgather: every array leaf of `tree` gathered from all processes, stacked on a new
 * leading axis (process order), or concatenated along axis 0 with `tiled`. All processes must call it with arrays of
 * the same shapes and dtypes (checked: the error names the processes that differ). A global array spanning processes
 * (makeArrayFromProcessLocalData, a shardMap over them) gives its global value instead, as in JAX (tiled or not).
 */
export function processAllgather<T>(tree: T, tiled = false): T {
  const fn = "multihostUtils.processAllgather";
  checkArity(fn, arguments, 2, "multihostUtils.processAllgather(tree, tiled?)");
  if (typeof tiled !== "boolean")
    throw new TypeError(
      `${fn}: tiled must be a boolean, got ${JSON.stringify(tiled)}; accepted form: ${fn}(tree, tiled?)`,
    );
  const [leaves, def] = flatten(tree);
  const outs = leaves.map((l, k) => {
    if (!(l instanceof Array)) throw new TypeError(`${fn}: leaf ${k} is ${typeof l}; expected an Array`);
    const x = l as ArrayImpl;
    const desc = `${x.dtype}[${x.shape.join(",")}]`;
    const descs = allgatherBytes(encoder.encode(desc), `${fn} (leaf ${k} shape)`).map((b) => decoder.decode(b));
    const bad = descs.map((d, q) => (d !== desc ? `process ${q} has ${d}` : "")).filter(Boolean);
    if (bad.length)
      throw new Error(
        `${fn}: leaf ${k} differs across processes: this process (${processIndex()}) has ${desc}, ${bad.join(", ")}`,
      );
    const g = gatherGlobal(x, `${fn} (leaf ${k}, a global array)`);
    if (g) return g;
    if (tiled && x.ndim === 0)
      throw new Error(`${fn}: tiled gathering concatenates along axis 0; leaf ${k} is a scalar`);
    const parts = allgatherBytes(bytesOf(x), `${fn} (leaf ${k})`);
    const n = x.size;
    const data = allocate(x.dtype as DType, n * parts.length);
    const dst = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    parts.forEach((p, q) => dst.set(p, q * p.byteLength));
    const shape = tiled ? [x.shape[0] * parts.length, ...x.shape.slice(1)] : [parts.length, ...x.shape];
    return new ArrayImpl(new ShapedArray(shape, x.dtype, x.aval.weakType), data);
  });
  return unflatten(def, outs) as T;
}

/**
 * multihost_utils.sync_global_devices: a barrier of every process; each passes the same `name`, and a process that
 * passes another name (or never arrives within config.collectiveTimeoutMs) makes every process fail naming it.
 */
export function syncGlobalDevices(name: string): void {
  checkArity("multihostUtils.syncGlobalDevices", arguments, 1, "multihostUtils.syncGlobalDevices(name)");
  const names = allgatherBytes(encoder.encode(name), `multihostUtils.syncGlobalDevices(${JSON.stringify(name)})`).map(
    (b) => decoder.decode(b),
  );
  const bad = names.map((nm, q) => (nm !== name ? `process ${q} is at ${JSON.stringify(nm)}` : "")).filter(Boolean);
  if (bad.length)
    throw new Error(
      `multihostUtils.syncGlobalDevices(${JSON.stringify(name)}): processes are at different barriers: ${bad.join(", ")}`,
    );
}
