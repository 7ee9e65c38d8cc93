/** @file Global configuration flags (jax.config): x64, backend choice, PRNG mode, device count. */

export interface ConfigFlags {
  enableX64: boolean;
  /** "onnx" (ONNX Runtime) or "interpreter" (the pure-TypeScript reference interpreter). */
  backend: "onnx" | "interpreter";
  threefryPartitionable: boolean;
  numCpuDevices: number;
  /** Check every jaxpr produced by a transformation with the type checker. */
  checkJaxprs: boolean;
  /** Intra-op threads for ONNX Runtime sessions (0 = all cores). */
  intraOpThreads: number;
  debugNans: boolean;
  /** Most traced signatures (jaxpr + compiled program) one jitted function keeps; the least recently used go first. */
  jitCacheSize: number;
  /** Most compiled programs (all jitted functions together) that keep ONNX Runtime sessions loaded; beyond it the least recently run release theirs (recreated if run again). */
  compiledCacheSize: number;
  /** Most eager per-primitive cache entries (each may hold an ONNX Runtime session); the least recently used go first. */
  eagerCacheSize: number;
}

function envInt(name: string, dflt: number): number {
  const v = typeof process !== "undefined" ? process.env[name] : undefined;
  const n = v === undefined ? NaN : Number.parseInt(v, 10);
  return Number.isFinite(n) && n > 0 ? n : dflt;
}

export const config: ConfigFlags & { update<K extends keyof ConfigFlags>(name: K, value: ConfigFlags[K]): void; read<K extends keyof ConfigFlags>(name: K): ConfigFlags[K] } = {
  enableX64: process.env.JAX_ENABLE_X64 === "1" || process.env.JAX_ENABLE_X64 === "true",
  backend: process.env.JAXTS_BACKEND === "interpreter" ? "interpreter" : "onnx",
  threefryPartitionable: process.env.JAX_THREEFRY_PARTITIONABLE !== "0",
  numCpuDevices: envInt("JAXTS_NUM_CPU_DEVICES", 1),
  checkJaxprs: process.env.JAXTS_CHECK_JAXPRS === "1",
  intraOpThreads: envInt("JAXTS_INTRA_OP_THREADS", 0),
  debugNans: false,
  jitCacheSize: envInt("JAXTS_JIT_CACHE_SIZE", 512),
  compiledCacheSize: envInt("JAXTS_COMPILED_CACHE_SIZE", 1024),
  eagerCacheSize: envInt("JAXTS_EAGER_CACHE_SIZE", 2048),
  update<K extends keyof ConfigFlags>(name: K, value: ConfigFlags[K]): void {
    if (!(name in defaults)) {
      throw new Error(`config.update: unknown option ${JSON.stringify(name)}; known: ${Object.keys(defaults).join(", ")}`);
    }
    if (typeof value !== typeof defaults[name]) {
      throw new TypeError(`config.update: option ${name} expects a ${typeof defaults[name]}, got ${typeof value}`);
    }
    if (name === "backend" && value !== "onnx" && value !== "interpreter") {
      throw new Error(`config.update: backend must be "onnx" or "interpreter", got ${JSON.stringify(value)}`);
    }
    if (CACHE_SIZES.has(name) && !(Number.isInteger(value) && (value as number) >= 1)) {
      throw new RangeError(`config.update: ${name} must be a positive integer (a number of cache entries), got ${String(value)}`);
    }
    (this as ConfigFlags)[name] = value;
    for (const l of listeners) l(name);
  },
  read<K extends keyof ConfigFlags>(name: K): ConfigFlags[K] {
    return (this as ConfigFlags)[name];
  },
};
const defaults: ConfigFlags = { ...config };
const CACHE_SIZES: ReadonlySet<string> = new Set(["jitCacheSize", "compiledCacheSize", "eagerCacheSize"]);
const listeners: ((name: keyof ConfigFlags) => void)[] = [];
/** Lets caches (jit, sessions) invalidate when a flag that changes semantics flips. */
export function onConfigChange(fn: (name: keyof ConfigFlags) => void): void {
  listeners.push(fn);
}
