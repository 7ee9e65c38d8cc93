/** @file The device runtime: devices with their own memory accounting, device programs and their concurrent launch. */
export { countTransfer, DeviceBuffer, RuntimeDevice, runtimeDevice, transferStats, type MemoryStats, type PendingWork, type TransferStats } from "./device.js";
export {
  DEVICE_DTYPES, DeviceProgram, deviceIntraOpThreads, deviceProgram, deviceRuntimeUnavailable, dispatch, injectLaunchFault, lastLaunchTimeline,
  launch, launchesInFlight, launchSync, nowUs, openRendezvous, PendingLaunch, synchronize, type LaunchOptions, type LaunchResult, type ProgramSignature, type RankTiming,
} from "./launch.js";
