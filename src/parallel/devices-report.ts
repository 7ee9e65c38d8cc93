/** @file `jaxts devices`: the CPU devices, their memory in use, and the SPMD runtime the parallel API resolved to. */
import { config } from "../core/config.js";
import { deviceIntraOpThreads, spmdRuntimeInfo } from "../runtime/index.js";
import { localDevices } from "./mesh.js";

/** The device listing: one line per local device, then the SPMD runtime (setting -> resolved, and why). */
export function devicesReport(): string {
  const devs = localDevices();
  const lines = devs.map((d) => {
    const m = d.memoryStats();
    return `  ${String(d)} platform=${d.platform} process=${d.processIndex}: ${m.bytesInUse} bytes in use${m.bytesLimit ? ` of ${m.bytesLimit}` : ""}`;
  });
  const rt = spmdRuntimeInfo();
  const runtime =
    rt.resolved === "devices"
      ? `devices (one executor thread per device, ${deviceIntraOpThreads(devs.length)} ORT intra-op thread(s) each; async dispatch)`
      : `emulation (nested named vmaps in one program)${rt.reason ? `: ${rt.reason}` : ""}`;
  return [
    `${devs.length} CPU device(s) (numCpuDevices=${config.numCpuDevices}; set JAXTS_NUM_CPU_DEVICES to change):`,
    ...lines,
    `spmdRuntime: ${rt.setting} -> ${runtime}`,
    `  (JAXTS_SPMD_RUNTIME=emulation|devices|auto selects it; JAXTS_DEBUG_SPMD=1 notes each fallback to the emulation)`,
  ].join("\n");
}
