/** @file Global configuration flags (jax.config): x64, backend choice, PRNG mode, device count. */

export interface ConfigFlags {
  enableX64: boolean;
  /**
   * The execution backend, one of the registered ones (registeredBackendNames()): "onnx" (ONNX Runtime) and
   * "interpreter" (the pure-TypeScript reference interpreter) ship with jaxts.
   */
  backend: BackendName;
  threefryPartitionable: boolean;
  /** Added to every integer seed of random.key / random.PRNGKey (jax_random_seed_offset; JAX_RANDOM_SEED_OFFSET). */
  randomSeedOffset: number;
  /** random.gumbel's default mode is "high" instead of "low" (jax_high_dynamic_range_gumbel). */
  highDynamicRangeGumbel: boolean;
  numCpuDevices: number;
  /** Check every jaxpr produced by a transformation with the type checker. */
  checkJaxprs: boolean;
  /** Intra-op threads for ONNX Runtime sessions (0 = all cores). */
  intraOpThreads: number;
  /** Every primitive (and jitted call) whose float output holds a NaN raises a FloatingPointError naming it (jax_debug_nans). */
  debugNans: boolean;
  /** Likewise for ±inf outputs (jax_debug_infs). */
  debugInfs: boolean;
  /** Logs every jit trace (with its cause) and program compilation to the compile-log sink (console.warn by default). */
  logCompiles: boolean;
  /**
   * How shardMap / pmap / xmap / devicePut run: "devices" (one compiled per-device program run concurrently on every
   * device of the mesh, collectives as native ops, arrays resident per device; what it cannot run falls back per call
   * to the emulation, saying so once), "emulation" (a nested named vmap in one program: the oracle), or "auto" (the
   * default: "devices" when the native addon is loaded and the backend is "onnx", else "emulation"; its fallbacks are
   * silent unless JAXTS_DEBUG_SPMD=1). runtime.spmdRuntimeInfo() and `jaxts devices` tell what it resolved to.
   */
  spmdRuntime: "auto" | "emulation" | "devices";
  /**
   * Device runtime: a psum feeding only an elementwise update with replicated operands (an optimizer step) runs as
   * one reduce-scatter, the update on each device's 1/n of the elements and one all-gather (exact; XLA's
   * weight-update sharding). Off by default: on the shared-memory communicator an all-reduce already reduces 1/n
   * per rank, and the measured SGD step was not faster with it (notes/devices.md); JAXTS_SPMD_SHARD_UPDATES=1.
   */
  spmdShardUpdates: boolean;
  /** A collective whose peers do not all arrive within this many milliseconds fails (device runtime). */
  collectiveTimeoutMs: number;
  /**
   * Device runtime: collectives of one kind, groups, reduction and dtype with no data dependence between them are
   * combined into one on their concatenation, up to this many bytes per bucket (gradient bucketing; exact;
   * src/compiler/combine-collectives.ts); 0 disables. JAXTS_COLLECTIVE_COMBINE_BYTES, default 0 (off: on the 2x1 MLP step it cost
   * 10% in interleaved A/B runs; the concatenation copies outweigh the saved exchanges at these sizes).
   */
  collectiveCombineBytes: number;
  /** ORT intra-op threads per device program session (0 = max(1, cores / numCpuDevices)). */
  deviceIntraOpThreads: number;
  /** Most traced signatures (jaxpr + compiled program) one jitted function keeps; the least recently used go first. */
  jitCacheSize: number;
  /** Most compiled programs (all jitted functions together) that keep ONNX Runtime sessions loaded; beyond it the least recently run release theirs (recreated if run again). */
  compiledCacheSize: number;
  /** Most eager per-primitive cache entries (each may hold an ONNX Runtime session); the least recently used go first. */
  eagerCacheSize: number;
  /**
   * Records every new array's and device buffer's creating source line, so profiler.deviceMemoryProfile() lists live
   * arrays with their sites (also on while a profiler trace runs; off by default: it captures a stack per array).
   */
  memoryProfile: boolean;
  /** Bytes each runtime device may hold (0 = no limit); a device's own setBytesLimit overrides it. Past it: OutOfMemoryError. */
  deviceBytesLimit: number;
}

/** A registered backend's name (the two shipped with jaxts are spelled out for editors; others are accepted once registered). */
export type BackendName = "onnx" | "interpreter" | (string & {});

/** Names of the registered execution backends: core/trace.ts's registerBackend adds each; config.backend accepts these. */
const backendNames = new Set<string>();
/** Records a registered backend's name (called by registerBackend). */
export function noteBackendName(name: string): void {
  backendNames.add(name);
}
/** The registered execution backends' names, sorted (what config.backend accepts). */
export function registeredBackendNames(): string[] {
  return [...backendNames].sort();
}

/** The numeric flags (every one is an integer flag and needs a row in INTEGER_FLAGS). */
type IntegerFlag = { [K in keyof ConfigFlags]: ConfigFlags[K] extends number ? K : never }[keyof ConfigFlags];
/** Integer flags: the environment variable that sets the initial value, its default, the least value accepted and what the number counts (for errors). */
const INTEGER_FLAGS: { readonly [K in IntegerFlag]: { env: string; dflt: number; min: number; what: string } } = {
  numCpuDevices: { env: "JAXTS_NUM_CPU_DEVICES", dflt: 1, min: 1, what: "the number of CPU devices" },
  randomSeedOffset: { env: "JAX_RANDOM_SEED_OFFSET", dflt: 0, min: 0, what: "added to every seed" },
  intraOpThreads: { env: "JAXTS_INTRA_OP_THREADS", dflt: 0, min: 0, what: "0 = all cores" },
  collectiveTimeoutMs: { env: "JAXTS_COLLECTIVE_TIMEOUT_MS", dflt: 30000, min: 1, what: "milliseconds" },
  collectiveCombineBytes: { env: "JAXTS_COLLECTIVE_COMBINE_BYTES", dflt: 0, min: 0, what: "bytes; 0 = off" },
  deviceIntraOpThreads: { env: "JAXTS_DEVICE_INTRA_OP_THREADS", dflt: 0, min: 0, what: "0 = cores / devices" },
  jitCacheSize: { env: "JAXTS_JIT_CACHE_SIZE", dflt: 512, min: 1, what: "a number of cache entries" },
  compiledCacheSize: { env: "JAXTS_COMPILED_CACHE_SIZE", dflt: 1024, min: 1, what: "a number of cache entries" },
  eagerCacheSize: { env: "JAXTS_EAGER_CACHE_SIZE", dflt: 2048, min: 1, what: "a number of cache entries" },
  deviceBytesLimit: { env: "JAXTS_DEVICE_BYTES_LIMIT", dflt: 0, min: 0, what: "bytes; 0 = no limit" },
};
/** String flags and the values they accept. */
const CHOICES: { readonly [K in "spmdRuntime"]: readonly ConfigFlags[K][] } = {
  spmdRuntime: ["auto", "emulation", "devices"],
};

/** config.spmdRuntime's initial value: JAXTS_SPMD_RUNTIME (auto, emulation or devices; unset or empty: auto). */
function envSpmdRuntime(): ConfigFlags["spmdRuntime"] {
  const v = typeof process !== "undefined" ? process.env.JAXTS_SPMD_RUNTIME?.trim() : undefined;
  if (!v) return "auto";
  const choice = CHOICES.spmdRuntime.find((c) => c === v);
  if (!choice)
    throw new RangeError(
      `jaxts config: environment variable JAXTS_SPMD_RUNTIME=${JSON.stringify(v)} must be one of ${CHOICES.spmdRuntime.map((c) => JSON.stringify(c)).join(", ")}`,
    );
  return choice;
}

/** An integer flag's initial value from its environment variable; a set but malformed value raises naming the variable (as JAX's int() of its flags). */
function envInt(flag: IntegerFlag): number {
  const { env: name, dflt, min } = INTEGER_FLAGS[flag];
  const v = typeof process !== "undefined" ? process.env[name] : undefined;
  if (v === undefined || v.trim() === "") return dflt;
  const n = Number(v.trim());
  if (!Number.isInteger(n) || n < min)
    throw new RangeError(
      `jaxts config: environment variable ${name}=${JSON.stringify(v)} must be an integer >= ${min}`,
    );
  return n;
}

export const config: ConfigFlags & {
  update<K extends keyof ConfigFlags>(name: K, value: ConfigFlags[K]): void;
  read<K extends keyof ConfigFlags>(name: K): ConfigFlags[K];
} = {
  enableX64: process.env.JAX_ENABLE_X64 === "1" || process.env.JAX_ENABLE_X64 === "true",
  backend: process.env.JAXTS_BACKEND === "interpreter" ? "interpreter" : "onnx",
  threefryPartitionable: process.env.JAX_THREEFRY_PARTITIONABLE !== "0",
  randomSeedOffset: envInt("randomSeedOffset"),
  highDynamicRangeGumbel:
    process.env.JAX_HIGH_DYNAMIC_RANGE_GUMBEL === "1" || process.env.JAX_HIGH_DYNAMIC_RANGE_GUMBEL === "true",
  numCpuDevices: envInt("numCpuDevices"),
  checkJaxprs: process.env.JAXTS_CHECK_JAXPRS === "1",
  intraOpThreads: envInt("intraOpThreads"),
  debugNans: process.env.JAX_DEBUG_NANS === "1" || process.env.JAX_DEBUG_NANS === "true",
  debugInfs: process.env.JAX_DEBUG_INFS === "1" || process.env.JAX_DEBUG_INFS === "true",
  logCompiles: process.env.JAX_LOG_COMPILES === "1" || process.env.JAX_LOG_COMPILES === "true",
  spmdRuntime: envSpmdRuntime(),
  spmdShardUpdates: process.env.JAXTS_SPMD_SHARD_UPDATES === "1",
  collectiveTimeoutMs: envInt("collectiveTimeoutMs"),
  collectiveCombineBytes: envInt("collectiveCombineBytes"),
  deviceIntraOpThreads: envInt("deviceIntraOpThreads"),
  jitCacheSize: envInt("jitCacheSize"),
  compiledCacheSize: envInt("compiledCacheSize"),
  eagerCacheSize: envInt("eagerCacheSize"),
  memoryProfile: process.env.JAXTS_MEMORY_PROFILE === "1",
  deviceBytesLimit: envInt("deviceBytesLimit"),
  update<K extends keyof ConfigFlags>(name: K, value: ConfigFlags[K]): void {
    if (!(name in defaults)) {
      throw new Error(
        `config.update: unknown option ${JSON.stringify(name)}; known: ${Object.keys(defaults).join(", ")}`,
      );
    }
    if (typeof value !== typeof defaults[name]) {
      throw new TypeError(`config.update: option ${name} expects a ${typeof defaults[name]}, got ${typeof value}`);
    }
    if (name === "backend" && !backendNames.has(value as string)) {
      const known = registeredBackendNames();
      throw new Error(
        `config.update: backend ${JSON.stringify(value)} is not a registered backend; registered: ${known.length ? known.map((c) => JSON.stringify(c)).join(", ") : "none (import jaxts, or a backend module, first)"}`,
      );
    }
    const choices: readonly unknown[] | undefined = Object.hasOwn(CHOICES, name)
      ? CHOICES[name as keyof typeof CHOICES]
      : undefined;
    if (choices && !choices.includes(value)) {
      throw new Error(
        `config.update: ${name} must be ${choices.map((c) => JSON.stringify(c)).join(" or ")}, got ${JSON.stringify(value)}`,
      );
    }
    const bound = Object.hasOwn(INTEGER_FLAGS, name) ? INTEGER_FLAGS[name as IntegerFlag] : undefined;
    if (bound && !(Number.isInteger(value) && (value as number) >= bound.min)) {
      throw new RangeError(
        `config.update: ${name} must be a ${bound.min >= 1 ? "positive" : "non-negative"} integer (${bound.what}), got ${String(value)}`,
      );
    }
    guards.get(name)?.(value);
    (this as ConfigFlags)[name] = value;
    for (const l of listeners) l(name);
  },
  read<K extends keyof ConfigFlags>(name: K): ConfigFlags[K] {
    return (this as ConfigFlags)[name];
  },
};
const defaults: ConfigFlags = { ...config };
const listeners: ((name: keyof ConfigFlags) => void)[] = [];
const guards = new Map<keyof ConfigFlags, (value: unknown) => void>();
/** Lets a later layer refuse a new value (e.g. numCpuDevices once the devices exist, as JAX after backend init). */
export function setConfigGuard<K extends keyof ConfigFlags>(name: K, fn: (value: ConfigFlags[K]) => void): void {
  guards.set(name, fn as (value: unknown) => void);
}
/** Lets caches (jit, sessions) invalidate when a flag that changes semantics flips. */
export function onConfigChange(fn: (name: keyof ConfigFlags) => void): void {
  listeners.push(fn);
}
