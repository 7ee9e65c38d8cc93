/**
 * @file profiler.deviceMemoryProfile(): the live arrays (and device-runtime buffers) of every device with shape, dtype,
 * sharding and the user's source line that created them. Arrays are tracked only while config memoryProfile is on
 * (a stack capture per array); untracked arrays are summarised by the devices' counters alone.
 */
import { ArrayImpl } from "../core/array-impl.js";
import { checkArity } from "../core/check-args.js";
import { onConfigChange } from "../core/config.js";
import { itemsize, type DType } from "../core/dtype.js";
import { memoryTracking } from "../core/profile-events.js";
import { userSite } from "../core/source-site.js";
import { allRuntimeDevices } from "../runtime/index.js";

/** One live array (or the share of a sharded array one device holds), or a buffer of the device runtime. */
export interface LiveArrayRecord {
  readonly kind: "array" | "buffer";
  readonly device: number;
  /** The shape this device holds (a shard's shape for a sharded array). */
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly bytes: number;
  /** The array's sharding (devicePut / sharded outputs), when it has one. */
  readonly sharding?: string;
  /** The global shape of a sharded array. */
  readonly globalShape?: readonly number[];
  /** The user's source line that created it. */
  readonly site?: string;
}

export interface DeviceMemory {
  readonly device: number;
  /** Bytes of the tracked live arrays and buffers listed below. */
  readonly liveBytes: number;
  /** The runtime's counters (device-runtime buffers only), when the device runtime has used this device. */
  readonly runtime?: { bytesInUse: number; peakBytesInUse: number; bytesLimit?: number };
  /** Largest first. */
  readonly arrays: readonly LiveArrayRecord[];
}

export interface MemoryProfile {
  readonly devices: readonly DeviceMemory[];
  /** True when arrays are being tracked now (config memoryProfile); arrays created untracked are not listed. */
  readonly tracking: boolean;
  /** A readable table: per device its totals and largest arrays with their sites. */
  toString(): string;
}

/** What the tracker needs of a sharding without importing the parallel layer. */
interface ShardingLike {
  readonly deviceSet: readonly { readonly id: number }[];
  shardShape(shape: readonly number[]): number[];
}
function asSharding(p: unknown): ShardingLike | null {
  const s = p as Partial<ShardingLike> | null;
  return s && typeof s === "object" && Array.isArray(s.deviceSet) && typeof s.shardShape === "function"
    ? (s as ShardingLike)
    : null;
}

const tracked = new Map<WeakRef<ArrayImpl>, string | undefined>();
const forget = new FinalizationRegistry<WeakRef<ArrayImpl>>((r) => tracked.delete(r));
function track(a: ArrayImpl): void {
  const r = new WeakRef(a);
  tracked.set(r, userSite());
  forget.register(a, r);
}

/** Installs or removes ArrayImpl's creation hook after config memoryProfile changed. */
export function refreshArrayTracking(): void {
  ArrayImpl.createHook = memoryTracking() ? track : null;
}
onConfigChange((name) => {
  if (name === "memoryProfile") refreshArrayTracking();
});
refreshArrayTracking();

/** The live arrays of every device, largest first per device (see MemoryProfile). */
export function deviceMemoryProfile(): MemoryProfile {
  checkArity("profiler.deviceMemoryProfile", arguments, 0, "profiler.deviceMemoryProfile()");
  const byDevice = new Map<number, LiveArrayRecord[]>();
  const add = (r: LiveArrayRecord) => {
    let l = byDevice.get(r.device);
    if (!l) byDevice.set(r.device, (l = []));
    l.push(r);
  };
  for (const [ref, site] of tracked) {
    const a = ref.deref();
    if (!a || a.isDisposed) {
      tracked.delete(ref);
      continue;
    }
    const sh = asSharding(a.placement);
    const base = { kind: "array" as const, dtype: a.dtype, ...(site ? { site } : {}) };
    if (sh) {
      const shape = sh.shardShape(a.shape);
      const bytes = shape.reduce((x, y) => x * y, 1) * itemsize(a.dtype);
      for (const d of sh.deviceSet)
        add({ ...base, device: d.id, shape, bytes, sharding: String(a.placement), globalShape: [...a.shape] });
    } else add({ ...base, device: a.device.id, shape: [...a.shape], bytes: a.size * itemsize(a.dtype) });
  }
  const runtime = new Map(allRuntimeDevices().map((d) => [d.id, d]));
  for (const d of runtime.values())
    for (const b of d.liveBuffers())
      add({
        kind: "buffer",
        device: b.device,
        shape: b.shape,
        dtype: b.dtype,
        bytes: b.bytes,
        ...(b.site ? { site: b.site } : {}),
      });
  const ids = [...new Set([...byDevice.keys(), ...runtime.keys()])].sort((a, b) => a - b);
  const devices: DeviceMemory[] = ids.map((id) => {
    const arrays = (byDevice.get(id) ?? []).sort((a, b) => b.bytes - a.bytes);
    const rd = runtime.get(id);
    const st = rd?.memoryStats();
    return {
      device: id,
      liveBytes: arrays.reduce((s, r) => s + r.bytes, 0),
      arrays,
      ...(st
        ? {
            runtime: {
              bytesInUse: st.bytesInUse,
              peakBytesInUse: st.peakBytesInUse,
              ...(st.bytesLimit ? { bytesLimit: st.bytesLimit } : {}),
            },
          }
        : {}),
    };
  });
  const tracking = memoryTracking();
  return { devices, tracking, toString: () => formatProfile(devices, tracking) };
}

function formatProfile(devices: readonly DeviceMemory[], tracking: boolean, top = 10): string {
  const lines: string[] = [];
  if (!tracking)
    lines.push('(arrays are tracked only while config memoryProfile is on: config.update("memoryProfile", true))');
  for (const d of devices) {
    const rt = d.runtime
      ? `; runtime buffers ${d.runtime.bytesInUse} B in use, peak ${d.runtime.peakBytesInUse} B${d.runtime.bytesLimit ? `, limit ${d.runtime.bytesLimit} B` : ""}`
      : "";
    lines.push(`Device ${d.device}: ${d.arrays.length} live array(s), ${d.liveBytes} B${rt}`);
    for (const r of d.arrays.slice(0, top)) {
      lines.push(
        `  ${String(r.bytes).padStart(12)} B  ${r.kind === "buffer" ? "buffer " : ""}${r.dtype}[${r.shape.join(",")}]${r.sharding ? ` shard of [${r.globalShape!.join(",")}] ${r.sharding}` : ""}${r.site ? `  at ${r.site}` : ""}`,
      );
    }
    if (d.arrays.length > top) lines.push(`  ... and ${d.arrays.length - top} more`);
  }
  return lines.join("\n");
}
