/** @file The device runtime: devices with their own memory accounting, device programs and their concurrent launch. */
export { DeviceBuffer, DeviceOutOfMemoryError, RuntimeDevice, allRuntimeDevices, runtimeDevice, type LiveBufferInfo, type MemoryStats } from "./device.js";
export {
  DEVICE_DTYPES, DeviceProgram, deviceIntraOpThreads, deviceProgram, deviceRuntimeUnavailable, lastLaunchTimeline, launch, launchSync,
  openRendezvous, setLaunchObserver, type LaunchOptions, type LaunchRecord, type CollectiveTiming, type LaunchResult, type ProgramSignature, type RankTiming,
} from "./launch.js";
