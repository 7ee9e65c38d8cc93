/** @file Device programs (one ONNX model, one ORT session per device) and their launch across devices: async (Promise) or blocking. */
import { availableParallelism } from "node:os";
import { ONNX_DTYPE, type DType as GDType, type HostArray } from "../backends/onnx/graph-builder.js";
import { deviceAddon, type DeviceAddon, type DeviceLaunchResult } from "../backends/onnx/ort-runtime.js";
import { config } from "../core/config.js";
import type { DType } from "../core/dtype.js";
import { DeviceBuffer, runtimeDevice, type RuntimeDevice } from "./device.js";

/** The ONNX element types the device runtime moves (bfloat16/float16 programs stay on the emulation for now). */
export const DEVICE_DTYPES: ReadonlySet<DType> = new Set<DType>(["float32", "float64", "int32", "int64", "bool", "int8", "uint8"]);

/** Why the device runtime is unavailable, or null when it is available. */
export function deviceRuntimeUnavailable(): string | null {
  const { api, why } = deviceAddon();
  return api ? null : why || "the native addon is unavailable";
}

function api(): DeviceAddon {
  const { api: a, why } = deviceAddon();
  if (!a) throw new Error(`device runtime: unavailable (${why})`);
  return a;
}

export interface ProgramSignature {
  readonly name: string;
  readonly inputNames: readonly string[];
  readonly inputDTypes: readonly DType[];
  readonly outputNames: readonly string[];
  readonly outputDTypes: readonly DType[];
  readonly outputShapes: readonly (readonly number[])[];
}

/** One compiled per-device program: the same ONNX model in one ORT session per device rank. */
export class DeviceProgram {
  /** @internal */ readonly handle: object;
  constructor(readonly model: Uint8Array, readonly sig: ProgramSignature, readonly numDevices: number, readonly intraOpThreads: number) {
    for (const d of [...sig.inputDTypes, ...sig.outputDTypes]) {
      if (!DEVICE_DTYPES.has(d)) throw new TypeError(`DeviceProgram ${sig.name}: dtype ${d} is not supported by the device runtime (supported: ${[...DEVICE_DTYPES].join(", ")})`);
    }
    this.handle = api().devCreateProgram(model, sig.inputNames, sig.inputDTypes.map((d) => ONNX_DTYPE[d as GDType]), sig.outputNames,
      sig.outputDTypes.map((d) => ONNX_DTYPE[d as GDType]), { numDevices, intraOpNumThreads: intraOpThreads });
  }
}

/** ORT intra-op threads for each device's session: config.deviceIntraOpThreads, else max(1, cores / devices). */
export function deviceIntraOpThreads(numDevices: number): number {
  return config.deviceIntraOpThreads > 0 ? config.deviceIntraOpThreads : Math.max(1, Math.floor(availableParallelism() / Math.max(1, numDevices)));
}

/** Device programs by model bytes and device count (creating N sessions is the expensive part). */
const programs = new Map<string, DeviceProgram>();
const MAX_PROGRAMS = 64;

function modelKey(model: Uint8Array, sig: ProgramSignature, n: number, threads: number): string {
  // FNV-1a over the bytes, plus the length and the signature: a collision would need equal lengths and names too
  let h = 0x811c9dc5;
  for (let i = 0; i < model.length; i++) h = Math.imul(h ^ model[i], 0x01000193);
  return `${n}|${threads}|${model.length}|${(h >>> 0).toString(16)}|${sig.inputNames.join(",")}|${sig.outputNames.join(",")}`;
}

/** The device program for `model` over `numDevices` ranks (cached). */
export function deviceProgram(model: Uint8Array, sig: ProgramSignature, numDevices: number): DeviceProgram {
  const threads = deviceIntraOpThreads(config.numCpuDevices);
  const key = modelKey(model, sig, numDevices, threads);
  let p = programs.get(key);
  if (p && !sameBytes(p.model, model)) p = undefined;
  if (!p) {
    p = new DeviceProgram(model, sig, numDevices, threads);
    if (programs.size >= MAX_PROGRAMS) programs.delete(programs.keys().next().value as string);
    programs.set(key, p);
  }
  return p;
}
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One rank's run as the runtime recorded it (times in microseconds of a monotonic clock). */
export interface RankTiming { rank: number; device: number; thread: number; start: number; end: number }

export interface LaunchResult {
  /** outputs[rank][k]: output k of the device at that rank, on that device. */
  readonly outputs: DeviceBuffer[][];
  readonly timeline: readonly RankTiming[];
}

export interface LaunchOptions {
  /** Collective timeout (default config.collectiveTimeoutMs). */
  timeoutMs?: number;
  /** Test hook: the device at this rank fails before running its program. */
  failRank?: number;
}

interface Prepared { devs: RuntimeDevice[]; outs: DeviceBuffer[][]; args: Parameters<DeviceAddon["devLaunch"]> }

function prepare(p: DeviceProgram, deviceIds: readonly number[], inputs: readonly (readonly DeviceBuffer[])[], opts: LaunchOptions): Prepared {
  const { sig } = p;
  const fn = `launch(${sig.name})`;
  if (deviceIds.length !== inputs.length) throw new Error(`${fn}: ${deviceIds.length} devices but ${inputs.length} input lists`);
  if (deviceIds.length > p.numDevices) throw new Error(`${fn}: ${deviceIds.length} devices given; the program was created for ${p.numDevices}`);
  if (new Set(deviceIds).size !== deviceIds.length) throw new Error(`${fn}: device ids [${deviceIds.join(", ")}] repeat a device`);
  const devs = deviceIds.map((id) => runtimeDevice(id));
  inputs.forEach((ins, r) => {
    if (ins.length !== sig.inputNames.length) throw new Error(`${fn}: device ${deviceIds[r]} (rank ${r}) has ${ins.length} inputs; the program takes ${sig.inputNames.length}`);
    ins.forEach((b, k) => {
      if (b.dtype !== sig.inputDTypes[k]) throw new TypeError(`${fn}: input ${k} (${sig.inputNames[k]}) of device ${deviceIds[r]} is ${b.dtype}; the program expects ${sig.inputDTypes[k]}`);
      if (b.device !== devs[r]) throw new Error(`${fn}: input ${k} of rank ${r} lives on device ${b.device.id}, not on device ${deviceIds[r]}`);
    });
  });
  // ORT writes every element of each output
  const outs = devs.map((d) => sig.outputDTypes.map((dt, k) => DeviceBuffer.uninitialized(d, dt, sig.outputShapes[k])));
  const timeoutMs = opts.timeoutMs ?? config.collectiveTimeoutMs;
  const args: Prepared["args"] = [
    p.handle, deviceIds, inputs.map((ins) => ins.map((b) => b.data as HostArray)), inputs.map((ins) => ins.map((b) => b.shape)),
    outs.map((os) => os.map((b) => b.data as HostArray)), outs.map((os) => os.map((b) => b.shape)),
    { timeoutMs, ...(opts.failRank !== undefined ? { failRank: opts.failRank } : {}) },
  ];
  return { devs, outs, args };
}

let lastTimeline: readonly RankTiming[] = [];
/** The per-rank timings of the most recent completed launch (tests and the profiler). */
export function lastLaunchTimeline(): readonly RankTiming[] { return lastTimeline; }

function finish(p: DeviceProgram, deviceIds: readonly number[], prep: Prepared, r: DeviceLaunchResult): LaunchResult {
  const timeline = deviceIds.map((device, rank) => ({ rank, device, thread: r.threads[rank], start: r.start[rank], end: r.end[rank] }));
  lastTimeline = timeline;
  const errs = r.errors.map((e, rank) => (e ? { rank, e } : null)).filter((x): x is { rank: number; e: string } => x !== null);
  if (errs.length) {
    for (const os of prep.outs) for (const b of os) b.free();
    // ORT wraps a failing node's message once per enclosing node (If, Loop): keep the innermost
    const clean = errs.map(({ rank, e }) => ({ rank, e: e.replace(/Non-zero status code returned while running \w+ node\. Name:'[^']*' Status Message: /g, "") }));
    // the root cause first (ranks released because a peer failed say so), one line per distinct message
    clean.sort((a, b) => Number(/released because/.test(a.e)) - Number(/released because/.test(b.e)) || a.rank - b.rank);
    const lines: string[] = [];
    const seen = new Map<string, number>();
    for (const { e } of clean) {
      const body = e.replace(/^device \d+ \(rank \d+\): /, "").replace(/ on rank \d+(?=:)/, "");
      if (seen.has(body)) continue;
      seen.set(body, lines.length);
      lines.push(e);
    }
    throw new Error(`device runtime: program ${p.sig.name} failed on devices [${deviceIds.join(", ")}]: ${lines.join("; ")}`);
  }
  return { outputs: prep.outs, timeline };
}

/**
 * Runs `program` on every device of `deviceIds` (rank r on device deviceIds[r], with inputs[r]) concurrently; the
 * promise resolves when all finished. Output buffers are allocated on each device (the caller frees them).
 */
export function launch(program: DeviceProgram, deviceIds: readonly number[], inputs: readonly (readonly DeviceBuffer[])[], opts: LaunchOptions = {}): Promise<LaunchResult> {
  const prep = prepare(program, deviceIds, inputs, opts);
  return new Promise<LaunchResult>((resolve, reject) => {
    const [h, ids, ins, ishapes, outs, oshapes, o] = prep.args;
    api().devLaunch(h, ids, ins, ishapes, outs, oshapes, o, (r: DeviceLaunchResult) => {
      try { resolve(finish(program, deviceIds, prep, r)); } catch (e) { reject(e); }
    });
  });
}

/** launch, blocking the calling thread until every device finished (for synchronous callers). */
export function launchSync(program: DeviceProgram, deviceIds: readonly number[], inputs: readonly (readonly DeviceBuffer[])[], opts: LaunchOptions = {}): LaunchResult {
  const prep = prepare(program, deviceIds, inputs, opts);
  const a = api();
  const h = a.devLaunch(...prep.args);
  return finish(program, deviceIds, prep, a.devWait(h));
}

/** Rendezvous the shared-memory communicator holds open (0 when no launch is in flight). */
export function openRendezvous(): number { return api().devOpenRendezvous(); }
