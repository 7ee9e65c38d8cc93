/** @file The device runtime: devices with their own memory accounting, device programs and their concurrent launch. */
export { DeviceBuffer, RuntimeDevice, runtimeDevice, type MemoryStats } from "./device.js";
export {
  DEVICE_DTYPES, DeviceProgram, deviceIntraOpThreads, deviceProgram, deviceRuntimeUnavailable, lastLaunchTimeline, launch, launchSync,
  openRendezvous, type LaunchOptions, type LaunchResult, type ProgramSignature, type RankTiming,
} from "./launch.js";
export { mpiAddon, type MpiAddon } from "./mpi.js";
