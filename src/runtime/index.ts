/** @file The device runtime: devices with their own memory accounting, device programs and their concurrent launch. */
export {
  allRuntimeDevices, countTransfer, DeviceBuffer, DeviceOutOfMemoryError, RuntimeDevice, runtimeDevice, transferStats, type LiveBufferInfo, type MemoryStats,
  type PendingWork, type TransferStats,
} from "./device.js";
export {
  DEVICE_DTYPES, DeviceProgram, deviceIntraOpThreads, deviceProgram, deviceRuntimeUnavailable, dispatch, failNextLaunch, injectLaunchFault,
  lastLaunchStamps, lastLaunchTimeline, launch, launchCount, launchesInFlight, launchSync, nowUs, openRendezvous, PendingLaunch, setLaunchObserver,
  synchronize, type CollectiveTiming, type LaunchOptions, type LaunchRecord, type LaunchResult, type LaunchStamps, type ProgramSignature,
  type RankTiming,
} from "./launch.js";
export { mpiAddon, type MpiAddon } from "./mpi.js";
