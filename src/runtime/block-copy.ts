/** @file Block copies into device buffers (resharding): one native op runs them on the destination devices' executors in stream order and returns at once; a host-thread JS copy when the addon lacks it or the switch says so. */
import { deviceAddon } from "../backends/onnx/ort-runtime.js";
import type { HostArray } from "../backends/onnx/graph-builder.js";
import { itemsize, type TypedArray } from "../core/dtype.js";
import { depsSettled, PendingRun } from "../core/pending-run.js";
import { stridesOf } from "../core/shape.js";
import { DeviceBuffer, failedDependency, type PendingWork } from "./device.js";

/**
 * One rectangular copy: the region `size` at `srcOrigin` of `src` (row-major, shape srcShape) into `dst` at
 * `dstOrigin`. A device buffer source is read once its producer is done; a host source is copied before the call returns.
 */
export interface BlockCopy {
  readonly src: DeviceBuffer | TypedArray;
  readonly srcShape: readonly number[];
  readonly srcOrigin: readonly number[];
  readonly dst: DeviceBuffer;
  readonly dstOrigin: readonly number[];
  readonly size: readonly number[];
}

/** Whether the native op is used (JAXTS_RESHARD_COPY=js starts with the JS path: the bench's switch). */
let nativeOn = process.env.JAXTS_RESHARD_COPY !== "js";
/** Turns the native block copy on or off (off: the host-thread JS copy, the tests' oracle); returns the previous value. */
export function setNativeBlockCopy(on: boolean): boolean {
  const prev = nativeOn;
  nativeOn = on;
  return prev;
}
type CopyApi = {
  devCopyBlocks(b: readonly HostArray[], plan: Float64Array, sync: number): object | undefined;
  devCopyDone(op: object): boolean;
  devCopyWait(op: object): void;
};
/** The native op when it is on and the addon has it, else null. */
function nativeApi(): CopyApi | null {
  if (!nativeOn) return null;
  const a = deviceAddon().api;
  return a?.devCopyBlocks && a.devCopyDone && a.devCopyWait ? (a as CopyApi) : null;
}
/** Whether copyBlocks runs natively now (the addon has the op and the switch is on). */
export function nativeBlockCopy(): boolean {
  return nativeApi() !== null;
}

const offsetOf = (origin: readonly number[], st: readonly number[]) => origin.reduce((o, v, d) => o + v * st[d], 0);

/** The region copy on the host thread (offset of element i = sum_d (origin_d + i_d) * stride_d; last-dim rows contiguous). */
function copyJs(c: BlockCopy, src: TypedArray): void {
  const size = c.size,
    r = size.length,
    dst = c.dst.data;
  // storage lanes per element (complex: 2)
  const lanes = itemsize(c.dst.dtype) / dst.BYTES_PER_ELEMENT;
  const ss = stridesOf(c.srcShape).map((v) => v * lanes),
    ds = stridesOf(c.dst.shape).map((v) => v * lanes);
  if (size.some((n) => n === 0)) return;
  if (r === 0) {
    (dst as Float64Array).set((src as Float64Array).subarray(0, lanes));
    return;
  }
  const inner = size[r - 1] * lanes;
  const pos = new globalThis.Array<number>(r).fill(0);
  for (;;) {
    let s = 0,
      d = 0;
    for (let k = 0; k < r; k++) {
      s += (c.srcOrigin[k] + pos[k]) * ss[k];
      d += (c.dstOrigin[k] + pos[k]) * ds[k];
    }
    (dst as Float64Array).set((src as Float64Array).subarray(s, s + inner), d);
    let k = r - 2;
    for (; k >= 0; k--) {
      if (++pos[k] < size[k]) break;
      pos[k] = 0;
    }
    if (k < 0) return;
  }
}

/** Copies natively dispatched and not yet settled, oldest first. */
const inFlight: PendingCopy[] = [];
const MAX_IN_FLIGHT = 8;

/** A dispatched native copy op: the writer of its destination buffers until it settles. */
export class PendingCopy extends PendingRun<void> implements PendingWork {
  #held: DeviceBuffer[];
  #deps: PendingWork[];
  /** @internal */
  constructor(
    readonly api: CopyApi,
    op: object,
    held: DeviceBuffer[],
    deps: PendingWork[],
  ) {
    super(op);
    this.#held = held;
    this.#deps = deps;
  }
  /** Settles when the devices already finished the copies (never blocks); true once settled. */
  poll(): boolean {
    const op = this.handle;
    if (op && this.api.devCopyDone(op)) this.settle();
    return this.settled;
  }
  protected joinNative(op: object): void {
    this.api.devCopyWait(op);
  }
  protected record(): Error | null {
    const error = failedDependency(
      this.#deps,
      (m) => `device runtime: a block copy read an output of a failed launch: ${m}`,
    );
    this.#deps = [];
    for (const b of this.#held) b.free();
    this.#held = [];
    const i = inFlight.indexOf(this);
    if (i >= 0) inFlight.splice(i, 1);
    return error;
  }
  /**
   * The sources' producers first (their errors become this copy's at settle; awaiting them keeps settle from blocking
   * on them), then the op polled on each event-loop turn (every millisecond after the first turns).
   */
  protected async whenDone(): Promise<void> {
    await depsSettled(this.#deps);
    for (let turn = 0; !this.poll(); turn++)
      await new Promise<void>((resolve) => (turn < 16 ? setImmediate(resolve) : setTimeout(resolve, 1)));
  }
}

/** Native block copies dispatched and not yet settled (tests: did a reshard return before its copies ran). */
export function copiesInFlight(): number {
  for (const p of [...inFlight]) p.poll();
  return inFlight.length;
}
/** Waits for every native block copy in flight. */
export function synchronizeCopies(): void {
  while (inFlight.length) inFlight[0].settle();
}

/**
 * Runs `copies` (each destination written whole by the copies into it). Natively: host sources are copied on the
 * calling thread now, device sources on each destination device's executor after the work queued on the source
 * devices (their producers) and the call returns at once with the pending op (also each destination's writer); null
 * when nothing is left pending. Without the native op: every copy on the host thread, waiting for the sources.
 */
export function copyBlocks(copies: readonly BlockCopy[]): PendingCopy | null {
  const api = nativeApi();
  if (!api) {
    for (const c of copies) copyJs(c, c.src instanceof DeviceBuffer ? c.src.ready().data : c.src);
    return null;
  }
  for (const p of [...inFlight]) p.poll();
  while (inFlight.length >= MAX_IN_FLIGHT) inFlight[0].settle();
  const host = copies.filter((c) => !(c.src instanceof DeviceBuffer));
  const dev = copies.filter((c) => c.src instanceof DeviceBuffer);
  if (host.length) api.devCopyBlocks(...encode(host, -1), 1);
  if (!dev.length) return null;
  const [bufs, plan] = encode(dev, 0);
  const held: DeviceBuffer[] = [],
    deps: PendingWork[] = [];
  for (const c of dev) {
    const s = c.src as DeviceBuffer;
    const w = s.writer;
    if (w && !deps.includes(w)) deps.push(w);
    held.push(s.retain(), c.dst.retain());
  }
  const op = api.devCopyBlocks(bufs, plan, 0);
  if (!op) throw new Error("copyBlocks: the native op returned no handle");
  const p = new PendingCopy(api, op, held, deps);
  for (const c of dev) c.dst.setWriter(p);
  inFlight.push(p);
  return p;
}

/** The native op's arguments: the distinct buffers and the plan (see native/block-copy.cc); hostDev -1: host sources. */
function encode(copies: readonly BlockCopy[], hostDev: number): [HostArray[], Float64Array] {
  const bufs: HostArray[] = [];
  const slot = new Map<TypedArray, number>();
  const at = (t: TypedArray): number => {
    let i = slot.get(t);
    if (i === undefined) {
      slot.set(t, (i = bufs.length));
      bufs.push(t as HostArray);
    }
    return i;
  };
  const nums: number[] = [copies.length];
  for (const c of copies) {
    const r = c.size.length;
    const src = c.src instanceof DeviceBuffer ? c.src.data : c.src;
    const ss = stridesOf(c.srcShape),
      ds = stridesOf(c.dst.shape);
    nums.push(
      at(src),
      at(c.dst.data),
      c.src instanceof DeviceBuffer ? c.src.device.id : hostDev,
      c.dst.device.id,
      itemsize(c.dst.dtype),
      r,
      offsetOf(c.srcOrigin, ss),
      offsetOf(c.dstOrigin, ds),
      ...c.size,
      ...ss,
      ...ds,
    );
  }
  return [bufs, Float64Array.from(nums)];
}
