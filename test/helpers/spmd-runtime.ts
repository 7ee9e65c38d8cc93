/** @file The SPMD runtime a test process started with (JAXTS_SPMD_RUNTIME, else "auto"), and running a test on the device runtime (restored afterwards). */
import { config } from "../../src/core/config.js";
import type { Array } from "../../src/index.js";
import { shardedStorage } from "../../src/parallel/device-arrays.js";
import type { PendingLaunch } from "../../src/runtime/index.js";

/** config.spmdRuntime when this module was first imported (before any test switched it). */
export const INITIAL_SPMD_RUNTIME = config.spmdRuntime;

/** f with spmdRuntime "devices" (INITIAL_SPMD_RUNTIME restored afterwards). */
export function onDevices<T>(f: () => T): T {
  config.update("spmdRuntime", "devices");
  try {
    return f();
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
}
/** onDevices for an async f: the runtime is restored once its promise settles. */
export async function onDevicesAsync<T>(f: () => Promise<T>): Promise<T> {
  config.update("spmdRuntime", "devices");
  try {
    return await f();
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
}
/** The pending launch writing an array's first device buffer (null once settled). */
export const writerOf = (x: Array) => shardedStorage(x)!.buffers[0].writer as PendingLaunch | null;
