/** @file ONNX Runtime wrapper: session creation and execution (sync and async) through jaxts's native runner or onnxruntime-node's binding, host-tensor feeds/fetches, preallocated outputs. The only file that imports ORT. */

import { createRequire } from "node:module";
import ort from "onnxruntime-node";
import {
  ONNX_DTYPE,
  ORT_TYPE,
  dtypeFromOnnx,
  dtypeFromOrt,
  shapeSize,
  type DType,
  type HostArray,
  type HostArrayMap,
} from "./graph-builder.js";
import { type AddonSession, type AddonValueInfo, addon } from "./ort-addon.js";

export {
  deviceAddon,
  nativeArena,
  nativeFusedApi,
  nativeGemmKernel,
  nativeLinalgOps,
  runnerKind,
  trimNativeHeap,
  type CollectiveTiming,
  type DeviceAddon,
  type DeviceLaunchResult,
  type NativeArena,
  type ProcessLaunch,
} from "./ort-addon.js";

/** A host tensor: row-major data in the dtype's host storage (see HostArrayMap). */
export interface HostTensor<D extends DType = DType> {
  readonly dtype: D;
  readonly shape: readonly number[];
  readonly data: HostArrayMap[D];
}

export type GraphOptimizationLevel = "disabled" | "basic" | "extended" | "layout" | "all";

export interface SessionOptions {
  intraOpNumThreads?: number;
  interOpNumThreads?: number;
  /** Defaults to ORT's default ("all"). */
  graphOptimizationLevel?: GraphOptimizationLevel;
  executionMode?: "sequential" | "parallel";
  enableCpuMemArena?: boolean;
  enableMemPattern?: boolean;
  /** 0 verbose .. 4 fatal. */
  logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
  /**
   * ORT session config entries by dotted key (onnxruntime_session_options_config_keys.h),
   * e.g. { "session.intra_op.allow_spinning": "0" }.
   */
  configEntries?: Readonly<Record<string, string>>;
  /**
   * Record ORT's per-node timings; the JSON file (`${prefix}_<date>.json`, chrome://tracing format) is written
   * when the session is released.
   */
  profileFilePrefix?: string;
}

/** Input/output metadata. dtype is null for non-tensor values; shape uses null/string for dynamic dims. */
export interface ValueMeta {
  readonly name: string;
  readonly dtype: DType | null;
  readonly shape: readonly (number | string | null)[];
}

export interface RunOptions {
  /** Output storage ORT writes into directly (shape must match the actual output shape exactly). */
  preallocated?: Readonly<Record<string, HostTensor>>;
  /** Per-output dtype override: "bfloat16" converts a float32 output to bfloat16 bits. */
  outputDTypes?: Readonly<Record<string, DType>>;
  /** Always copy output data into a fresh buffer (ORT already returns owned buffers; default false). */
  copy?: boolean;
}

// ---------------------------------------------------------------------------
// Synchronous native binding (undocumented internal of onnxruntime-node).
// InferenceSession.create/run in the public API are `setImmediate` + these
// synchronous calls, so using them directly changes no blocking behavior.
// ---------------------------------------------------------------------------

interface RawMeta {
  name: string;
  isTensor: boolean;
  symbolicDimensions: string[];
  shape: number[];
  type: number;
}
type OrtFetches = Record<string, ort.Tensor | null>;
type OrtResults = Record<string, ort.Tensor>;
interface NativeSession {
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: object): void;
  readonly inputMetadata: RawMeta[];
  readonly outputMetadata: RawMeta[];
  /** Without `options` the binding uses its default run options (cheaper than parsing an empty object). */
  run(feeds: Record<string, ort.Tensor>, fetches: OrtFetches, options?: object): OrtResults;
  dispose(): void;
}
interface NativeBindingModule {
  binding: { InferenceSession: new () => NativeSession };
  initOrt: () => void;
}

let nativeModule: NativeBindingModule | null | undefined;
function native(): NativeBindingModule | null {
  if (nativeModule === undefined) {
    try {
      const req = createRequire(import.meta.url);
      const m = req("onnxruntime-node/dist/binding.js") as Partial<NativeBindingModule>;
      nativeModule =
        m && typeof m.initOrt === "function" && m.binding && typeof m.binding.InferenceSession === "function"
          ? (m as NativeBindingModule)
          : null;
    } catch {
      nativeModule = null;
    }
  }
  return nativeModule;
}

/** Whether synchronous session creation/run is available (jaxts's native runner or onnxruntime-node's binding). */
export function syncAvailable(): boolean {
  return addon() !== null || native() !== null;
}

const LEVEL: Record<GraphOptimizationLevel, number> = { disabled: 0, basic: 1, extended: 2, layout: 3, all: 99 };

function toAddonOptions(given: SessionOptions): object {
  const o: SessionOptions = { ...defaultOptions, ...given };
  const out: Record<string, unknown> = {};
  if (o.intraOpNumThreads !== undefined) out.intraOpNumThreads = o.intraOpNumThreads;
  if (o.interOpNumThreads !== undefined) out.interOpNumThreads = o.interOpNumThreads;
  out.graphOptimizationLevel = LEVEL[o.graphOptimizationLevel ?? "all"];
  if (o.executionMode !== undefined) out.executionMode = o.executionMode === "parallel" ? 1 : 0;
  if (o.enableCpuMemArena !== undefined) out.cpuMemArena = o.enableCpuMemArena ? 1 : 0;
  if (o.enableMemPattern !== undefined) out.memPattern = o.enableMemPattern ? 1 : 0;
  out.logSeverityLevel = o.logSeverityLevel ?? 3;
  if (o.configEntries) out.configEntries = Object.entries(o.configEntries);
  if (o.profileFilePrefix !== undefined) out.profileFilePrefix = o.profileFilePrefix;
  return out;
}

function metaFromAddon(m: AddonValueInfo): ValueMeta {
  let dtype: DType | null = null;
  if (m.type !== 0) {
    try {
      dtype = dtypeFromOnnx(m.type);
    } catch {
      dtype = null;
    }
  }
  return { name: m.name, dtype, shape: m.shape.map((d) => (typeof d === "string" || d >= 0 ? d : null)) };
}

/** An output ORT allocated (the addon copied it into a fresh ArrayBuffer) as host storage of `dtype`. */
function fromAddonOutput(pair: [ArrayBuffer, number[]] | undefined, dtype: DType, name: string): HostArray {
  if (!pair) throw new Error(`ort-runtime: output '${name}' missing from results`);
  return new (storageCtor(dtype))(pair[0]);
}

/** ONNX Runtime version string. */
export function ortVersion(): string {
  return ort.env.versions.node ?? ort.env.versions.common;
}

let defaultOptions: SessionOptions = {};

/**
 * Options merged under every createSession / createSessionSync call's own options.
 * Tip: ORT creates a thread pool per session (~10 ms per session at default size);
 * { intraOpNumThreads: 1 } makes creation ~0.3 ms and tiny runs ~8 us.
 */
export function setDefaultSessionOptions(o: SessionOptions): void {
  defaultOptions = { ...o };
}

export function getDefaultSessionOptions(): SessionOptions {
  return { ...defaultOptions };
}

function toOrtOptions(given: SessionOptions): ort.InferenceSession.SessionOptions {
  const o: SessionOptions = { ...defaultOptions, ...given };
  const out: ort.InferenceSession.SessionOptions = { executionProviders: ["cpu"] };
  if (o.intraOpNumThreads !== undefined) out.intraOpNumThreads = o.intraOpNumThreads;
  if (o.interOpNumThreads !== undefined) out.interOpNumThreads = o.interOpNumThreads;
  if (o.graphOptimizationLevel !== undefined) out.graphOptimizationLevel = o.graphOptimizationLevel as "all";
  if (o.executionMode !== undefined) out.executionMode = o.executionMode;
  if (o.enableCpuMemArena !== undefined) out.enableCpuMemArena = o.enableCpuMemArena;
  if (o.enableMemPattern !== undefined) out.enableMemPattern = o.enableMemPattern;
  if (o.logSeverityLevel !== undefined) out.logSeverityLevel = o.logSeverityLevel;
  if (o.profileFilePrefix !== undefined) {
    out.enableProfiling = true;
    out.profileFilePrefix = o.profileFilePrefix;
  }
  if (o.configEntries) {
    // The node binding flattens nested objects into dotted keys.
    type Nested = { [k: string]: string | Nested };
    const extra: Nested = {};
    for (const [key, value] of Object.entries(o.configEntries)) {
      const parts = key.split(".");
      let node = extra;
      for (const p of parts.slice(0, -1)) {
        const next = node[p];
        node = typeof next === "object" ? next : (node[p] = {});
      }
      node[parts[parts.length - 1]!] = value;
    }
    out.extra = extra;
  }
  return out;
}

function metaFromRaw(m: RawMeta): ValueMeta {
  let dtype: DType | null = null;
  if (m.isTensor) {
    try {
      dtype = dtypeFromOnnx(m.type);
    } catch {
      dtype = null;
    }
  }
  const shape = (m.shape ?? []).map((d, i) => (d >= 0 ? d : m.symbolicDimensions[i] || null));
  return { name: m.name, dtype, shape };
}

function metaFromPublic(m: ort.InferenceSession.ValueMetadata): ValueMeta {
  if (!m.isTensor) return { name: m.name, dtype: null, shape: [] };
  let dtype: DType | null = null;
  try {
    dtype = dtypeFromOrt(m.type);
  } catch {
    dtype = null;
  }
  return {
    name: m.name,
    dtype,
    shape: m.shape.map((d) => (typeof d === "number" && d >= 0 ? d : d === "" ? null : d)),
  };
}

interface Handles {
  addon: AddonSession | null;
  native: NativeSession | null;
  pub: ort.InferenceSession | null;
}
const handles = new WeakMap<OrtSession, Handles>();
function handlesOf(s: OrtSession): Handles {
  const h = handles.get(s);
  if (!h || (!h.addon && !h.native && !h.pub)) throw new Error("ort-runtime: session was disposed");
  return h;
}

/** The native addon's handle of a session it runs (null: another runtime's session, or disposed). */
export function addonSessionHandle(s: OrtSession): object | null {
  return handles.get(s)?.addon?.handle ?? null;
}

/** A loaded model. Obtain with createSession/createSessionSync; release with dispose(). */
export class OrtSession {
  readonly inputs: readonly ValueMeta[];
  readonly outputs: readonly ValueMeta[];

  private constructor(h: Handles) {
    if (h.addon) {
      this.inputs = h.addon.inputs.map(metaFromAddon);
      this.outputs = h.addon.outputs.map(metaFromAddon);
    } else if (h.native) {
      this.inputs = h.native.inputMetadata.map(metaFromRaw);
      this.outputs = h.native.outputMetadata.map(metaFromRaw);
    } else if (h.pub) {
      this.inputs = h.pub.inputMetadata.map(metaFromPublic);
      this.outputs = h.pub.outputMetadata.map(metaFromPublic);
    } else {
      throw new Error("ort-runtime: no session");
    }
    handles.set(this, h);
  }

  /** @internal */
  static wrap(h: Handles): OrtSession {
    return new OrtSession(h);
  }

  get inputNames(): string[] {
    return this.inputs.map((m) => m.name);
  }
  get outputNames(): string[] {
    return this.outputs.map((m) => m.name);
  }
  /** True when runSessionSync works on this session. */
  get isSync(): boolean {
    const h = handles.get(this);
    return h?.addon != null || h?.native != null;
  }
  /** True when jaxts's native runner executes this session (outputs can be written into caller buffers). */
  get isNative(): boolean {
    return handles.get(this)?.addon != null;
  }
  get disposed(): boolean {
    const h = handles.get(this);
    return !h || (!h.addon && !h.native && !h.pub);
  }

  dispose(): void {
    const h = handles.get(this);
    if (!h) return;
    if (h.addon) addon()!.release(h.addon.handle);
    if (h.native) h.native.dispose();
    if (h.pub) void h.pub.release();
    h.addon = null;
    h.native = null;
    h.pub = null;
  }
}

/** Load a model synchronously (blocks for the duration of ORT's graph optimization). */
export function createSessionSync(modelBytes: Uint8Array, options: SessionOptions = {}): OrtSession {
  const a = addon();
  if (a)
    return OrtSession.wrap({ addon: a.createSession(modelBytes, toAddonOptions(options)), native: null, pub: null });
  const m = native();
  if (!m) throw new Error("ort-runtime: synchronous ORT binding unavailable; use createSession()");
  m.initOrt();
  const s = new m.binding.InferenceSession();
  s.loadModel(modelBytes.buffer, modelBytes.byteOffset, modelBytes.byteLength, toOrtOptions(options));
  return OrtSession.wrap({ addon: null, native: s, pub: null });
}

/**
 * Load a model. Note: ORT-node's own async create is `setImmediate` + a synchronous
 * load on the main thread, so this does not offload work; it only yields once.
 */
export async function createSession(modelBytes: Uint8Array, options: SessionOptions = {}): Promise<OrtSession> {
  if (syncAvailable()) {
    await new Promise<void>((r) => setImmediate(r));
    return createSessionSync(modelBytes, options);
  }
  const s = await ort.InferenceSession.create(modelBytes, toOrtOptions(options));
  return OrtSession.wrap({ addon: null, native: null, pub: s });
}

// ---------------------------------------------------------------------------
// bfloat16 <-> float32 bit conversion (ORT-JS has no bfloat16 tensor type;
// models take/return float32 at the boundary and Cast inside).
// ---------------------------------------------------------------------------

/** bfloat16 bits -> float32 (exact). */
export function bf16BitsToF32(bits: Uint16Array): Float32Array {
  const u = new Uint32Array(bits.length);
  for (let i = 0; i < bits.length; i++) u[i] = bits[i]! << 16;
  return new Float32Array(u.buffer);
}

/** float32 -> bfloat16 bits, round-to-nearest-even (NaN stays NaN). */
export function f32ToBf16Bits(x: Float32Array): Uint16Array {
  const u = new Uint32Array(x.buffer, x.byteOffset, x.length);
  const out = new Uint16Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const v = u[i]!;
    if ((v & 0x7f800000) === 0x7f800000 && (v & 0x007fffff) !== 0) out[i] = (v >>> 16) | 0x40;
    else out[i] = ((v + 0x7fff + ((v >>> 16) & 1)) >>> 16) & 0xffff;
  }
  return out;
}

// ---------------------------------------------------------------------------
// feeds / fetches
// ---------------------------------------------------------------------------

function toOrtTensor(name: string, t: HostTensor): ort.Tensor {
  const n = shapeSize(t.shape);
  if (t.data.length !== n)
    throw new Error(`ort-runtime: '${name}' has ${t.data.length} elements, shape [${t.shape}] needs ${n}`);
  if (t.dtype === "bfloat16") return new ort.Tensor("float32", bf16BitsToF32(t.data as Uint16Array), [...t.shape]);
  const type = ORT_TYPE[t.dtype]!;
  return new ort.Tensor(type, t.data as ort.Tensor.DataTypeMap[typeof type], [...t.shape]);
}

type AnyTypedArray = HostArray | { buffer: ArrayBufferLike; byteOffset: number; byteLength: number; length: number };

function fromOrtTensor(t: ort.Tensor, copy: boolean, want?: DType): HostTensor {
  const dtype = dtypeFromOrt(t.type);
  const shape = [...t.dims];
  const src = t.data as AnyTypedArray;
  if (want === "bfloat16" && dtype === "float32") {
    return { dtype: "bfloat16", shape, data: f32ToBf16Bits(src as Float32Array) };
  }
  const Ctor = storageCtor(dtype);
  const owned = src instanceof Ctor && src.byteOffset === 0 && src.buffer.byteLength === src.byteLength;
  let data: HostArray;
  if (owned && !copy) data = src as HostArray;
  else {
    // Fresh buffer; also reinterprets e.g. Float16Array (newer Node) as Uint16Array bits.
    const bytes = new Uint8Array(src.byteLength);
    bytes.set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength));
    data = new Ctor(bytes.buffer) as HostArray;
  }
  return { dtype, shape, data };
}

type StorageCtor = {
  new (buf: ArrayBufferLike, byteOffset?: number, length?: number): HostArray;
  new (n: number): HostArray;
  readonly name: string;
};
/** The typed-array class that holds a dtype's host data (see HostArrayMap). */
export function storageCtor(dtype: DType): StorageCtor {
  switch (dtype) {
    case "bool":
    case "uint8":
      return Uint8Array;
    case "int8":
      return Int8Array;
    case "int16":
      return Int16Array;
    case "uint16":
    case "float16":
    case "bfloat16":
      return Uint16Array;
    case "int32":
      return Int32Array;
    case "uint32":
      return Uint32Array;
    case "int64":
      return BigInt64Array;
    case "uint64":
      return BigUint64Array;
    case "float32":
      return Float32Array;
    case "float64":
      return Float64Array;
  }
}

function prepare(
  feeds: Readonly<Record<string, HostTensor>>,
  outputNames: readonly string[],
  opts: RunOptions,
): { ortFeeds: Record<string, ort.Tensor>; fetches: OrtFetches } {
  const ortFeeds: Record<string, ort.Tensor> = {};
  for (const [k, v] of Object.entries(feeds)) ortFeeds[k] = toOrtTensor(k, v);
  const fetches: OrtFetches = {};
  for (const name of outputNames) {
    const pre = opts.preallocated?.[name];
    if (pre?.dtype === "bfloat16") throw new Error(`ort-runtime: cannot preallocate bfloat16 output '${name}'`);
    fetches[name] = pre ? toOrtTensor(name, pre) : null;
  }
  return { ortFeeds, fetches };
}

function collect(results: OrtResults, outputNames: readonly string[], opts: RunOptions): HostTensor[] {
  return outputNames.map((name) => {
    const pre = opts.preallocated?.[name];
    if (pre) return pre; // ORT wrote into pre.data in place
    const t = results[name];
    if (!t) throw new Error(`ort-runtime: output '${name}' missing from results`);
    return fromOrtTensor(t, opts.copy ?? false, opts.outputDTypes?.[name]);
  });
}

/** runSessionSync through the native runner: bfloat16 values cross the model boundary as float32. */
function runAddon(
  a: AddonSession,
  session: OrtSession,
  feeds: Readonly<Record<string, HostTensor>>,
  outputNames: readonly string[],
  opts: RunOptions,
): HostTensor[] {
  const names = Object.keys(feeds);
  const data: HostArray[] = [],
    shapes: (readonly number[])[] = [],
    types: number[] = [];
  for (const k of names) {
    const t = feeds[k]!;
    const n = shapeSize(t.shape);
    if (t.data.length !== n)
      throw new Error(`ort-runtime: '${k}' has ${t.data.length} elements, shape [${t.shape}] needs ${n}`);
    const bf = t.dtype === "bfloat16";
    data.push(bf ? bf16BitsToF32(t.data as Uint16Array) : t.data);
    shapes.push(t.shape);
    types.push(ONNX_DTYPE[bf ? "float32" : t.dtype]);
  }
  const outMeta = outputNames.map((name) => {
    const m = session.outputs.find((o) => o.name === name);
    if (!m || !m.dtype) throw new Error(`ort-runtime: the model has no tensor output '${name}'`);
    return m;
  });
  const outs: (HostArray | null)[] = [],
    outShapes: (readonly number[] | null)[] = [];
  for (const m of outMeta) {
    const pre = opts.preallocated?.[m.name];
    if (pre?.dtype === "bfloat16") throw new Error(`ort-runtime: cannot preallocate bfloat16 output '${m.name}'`);
    outs.push(pre ? pre.data : null);
    outShapes.push(pre ? pre.shape : null);
  }
  const r = addon()!.runner(
    a.handle,
    names,
    types,
    [...outputNames],
    outMeta.map((m) => ONNX_DTYPE[m.dtype!]),
  );
  const res = addon()!.run(r, data, shapes, outs, outShapes);
  return outMeta.map((m, i) => {
    const pre = opts.preallocated?.[m.name];
    if (pre) return pre;
    const pair = res?.[i];
    const host = fromAddonOutput(pair, m.dtype!, m.name);
    const shape = pair![1];
    if (opts.outputDTypes?.[m.name] === "bfloat16" && m.dtype === "float32")
      return { dtype: "bfloat16", shape, data: f32ToBf16Bits(host as Float32Array) };
    return { dtype: m.dtype!, shape, data: host } as HostTensor;
  });
}

/**
 * Run synchronously (blocks the calling thread for the whole execution).
 * Returns one HostTensor per requested output, in order.
 */
export function runSessionSync(
  session: OrtSession,
  feeds: Readonly<Record<string, HostTensor>>,
  outputNames: readonly string[] = session.outputNames,
  opts: RunOptions = {},
): HostTensor[] {
  const h = handlesOf(session);
  if (h.addon) return runAddon(h.addon, session, feeds, outputNames, opts);
  if (!h.native) throw new Error("ort-runtime: session has no synchronous path; use runSession()");
  const { ortFeeds, fetches } = prepare(feeds, outputNames, opts);
  const results = h.native.run(ortFeeds, fetches);
  return collect(results, outputNames, opts);
}

/** A synchronous runner for one session with fixed input/output names and dtypes (see fastRunner). */
export interface FastRunner {
  /**
   * Runs with one data array and shape per input (in the order given to fastRunner); returns one array per output.
   * With `outputs` (native runner only: see `writesOutputs`), ORT writes output k into `outputs[k]` (shape
   * `outputShapes[k]`, exactly the output's shape) and that same array is returned; null entries are allocated.
   */
  run(
    data: readonly HostArray[],
    shapes: readonly (readonly number[])[],
    outputs?: readonly (HostArray | null)[],
    outputShapes?: readonly (readonly number[] | null)[],
  ): HostArray[];
  /** True when `outputs` are written in place (jaxts's native runner); otherwise they are ignored. */
  readonly writesOutputs: boolean;
}

/**
 * A per-call-cheap synchronous runner: the feed and fetch objects are built once and only their data and
 * dims change per call (the native run reads them synchronously and keeps no reference), and outputs are
 * taken as ORT returns them. null when the native binding is missing or a value is bfloat16 (those need
 * conversions: use runSessionSync).
 */
export function fastRunner(
  session: OrtSession,
  inputs: readonly { name: string; dtype: DType }[],
  outputs: readonly { name: string; dtype: DType }[],
): FastRunner | null {
  const h = handlesOf(session);
  if (inputs.some((i) => i.dtype === "bfloat16") || outputs.some((o) => o.dtype === "bfloat16")) return null;
  if (h.addon) return addonRunner(h.addon, inputs, outputs);
  if (!h.native) return null;
  const nat = h.native;
  type Feed = { type: string; data: HostArray | null; dims: readonly number[]; location: "cpu" };
  const feedObjs: Feed[] = inputs.map((i) => ({ type: ORT_TYPE[i.dtype]!, data: null, dims: [], location: "cpu" }));
  const feeds: Record<string, Feed> = {};
  inputs.forEach((i, k) => {
    feeds[i.name] = feedObjs[k]!;
  });
  const fetches: OrtFetches = {};
  for (const o of outputs) fetches[o.name] = null;
  const outNames = outputs.map((o) => o.name);
  const ctors = outputs.map((o) => storageCtor(o.dtype));
  return {
    writesOutputs: false,
    run(data, shapes) {
      for (let k = 0; k < feedObjs.length; k++) {
        const f = feedObjs[k]!;
        f.data = data[k]!;
        f.dims = shapes[k]!;
      }
      let res: OrtResults;
      try {
        res = nat.run(feeds as unknown as Record<string, ort.Tensor>, fetches);
      } finally {
        for (const f of feedObjs) f.data = null;
      }
      const out = new Array<HostArray>(outNames.length);
      for (let k = 0; k < outNames.length; k++) {
        const t = res[outNames[k]!];
        if (!t) throw new Error(`ort-runtime: output '${outNames[k]}' missing from results`);
        const d = t.data as HostArray;
        out[k] =
          d instanceof ctors[k]! && d.byteOffset === 0 && d.byteLength === d.buffer.byteLength
            ? d
            : fromOrtTensor(t, false).data;
      }
      return out;
    },
  };
}

function addonRunner(
  a: AddonSession,
  inputs: readonly { name: string; dtype: DType }[],
  outputs: readonly { name: string; dtype: DType }[],
): FastRunner {
  const m = addon()!;
  const r = m.runner(
    a.handle,
    inputs.map((i) => i.name),
    inputs.map((i) => ONNX_DTYPE[i.dtype]),
    outputs.map((o) => o.name),
    outputs.map((o) => ONNX_DTYPE[o.dtype]),
  );
  const n = outputs.length;
  const none: null[] = new globalThis.Array(n).fill(null);
  return {
    writesOutputs: true,
    run(data, shapes, outs = none, outShapes = none) {
      const res = m.run(r, data, shapes, outs, outShapes);
      if (!res) return outs as HostArray[];
      const out = new globalThis.Array<HostArray>(n);
      for (let k = 0; k < n; k++) out[k] = outs[k] ?? fromAddonOutput(res[k], outputs[k]!.dtype, outputs[k]!.name);
      return out;
    },
  };
}

/**
 * Run asynchronously. As in ORT-node itself, the work still runs on the main
 * thread after one `setImmediate`: the promise does not make execution concurrent.
 */
export async function runSession(
  session: OrtSession,
  feeds: Readonly<Record<string, HostTensor>>,
  outputNames: readonly string[] = session.outputNames,
  opts: RunOptions = {},
): Promise<HostTensor[]> {
  const h = handlesOf(session);
  if (h.addon || h.native) {
    await new Promise<void>((r) => setImmediate(r));
    return runSessionSync(session, feeds, outputNames, opts);
  }
  const { ortFeeds, fetches } = prepare(feeds, outputNames, opts);
  const results = (await h.pub!.run(ortFeeds, fetches)) as OrtResults;
  return collect(results, outputNames, opts);
}
