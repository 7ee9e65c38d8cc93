/** @file Which SPMD runtime the parallel API uses (config spmdRuntime resolved: "auto" -> devices when they can run) and its fallback notes. */
import { config } from "../core/config.js";
import { deviceRuntimeUnavailable } from "./launch.js";

/** What a user can read about the SPMD runtime: the setting, what it resolves to here, and why when not the devices. */
export interface SpmdRuntimeInfo {
  /** config.spmdRuntime as set ("auto" unless JAXTS_SPMD_RUNTIME or config.update chose another). */
  setting: "auto" | "emulation" | "devices";
  /** The runtime shardMap / pmap / xmap / devicePut use (per call, what the device runtime cannot run still falls back). */
  resolved: "emulation" | "devices";
  /** Why the resolved runtime is the emulation (or, with "devices" set, why every call falls back), else null. */
  reason: string | null;
}

/** Why the device runtime cannot serve "auto" here (no addon, another backend), or null when it can. */
function autoUnavailable(): string | null {
  // the interpreter backend is the pure-TypeScript oracle: its parallel API stays pure TypeScript too
  if (config.backend !== "onnx") return `config.backend is ${JSON.stringify(config.backend)}, not "onnx"`;
  const why = deviceRuntimeUnavailable();
  return why ? `the device runtime is unavailable (${why})` : null;
}

/** The SPMD runtime in use: config.spmdRuntime, with "auto" resolved (devices when the native addon is loaded). */
export function resolvedSpmdRuntime(): "emulation" | "devices" {
  const s = config.spmdRuntime;
  if (s !== "auto") return s;
  return autoUnavailable() === null ? "devices" : "emulation";
}

/** The setting, its resolution and the reason (what `jaxts devices` prints). */
export function spmdRuntimeInfo(): SpmdRuntimeInfo {
  const setting = config.spmdRuntime;
  if (setting === "emulation") return { setting, resolved: "emulation", reason: "chosen by config spmdRuntime" };
  if (setting === "devices") {
    const why = deviceRuntimeUnavailable();
    return why
      ? { setting, resolved: "emulation", reason: `the device runtime is unavailable (${why})` }
      : { setting, resolved: "devices", reason: null };
  }
  const why = autoUnavailable();
  return { setting, resolved: why ? "emulation" : "devices", reason: why };
}

const said = new Set<string>();
/**
 * Says once per reason that a parallel-API call runs on the emulation instead of the devices: a warning when the user
 * asked for "devices" explicitly; under "auto" (the default) only with JAXTS_DEBUG_SPMD=1 (on stderr), since the
 * fallback computes the same values.
 */
export function spmdFallbackNote(what: string, why: string): void {
  const explicit = config.spmdRuntime === "devices";
  const debug = process.env.JAXTS_DEBUG_SPMD;
  if (!explicit && (!debug || debug === "0")) return;
  const line = `jaxts: ${what} runs on the emulation (nested vmap), not the device runtime: ${why}`;
  if (said.has(line)) return;
  said.add(line);
  if (explicit) console.warn(line);
  else process.stderr.write(`${line}\n`);
}
