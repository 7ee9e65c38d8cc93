/** @file The thread-local device context an executor sets around each program run; the collective custom ops read it. */
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace jaxts {

class Communicator;

/** One collective a rank ran, for the profiler: when it started, when every peer had arrived, when it returned. */
struct CollectiveRecord {
  int kind = 0;           // index into the collective op names (AllReduce, AllGather, ...)
  std::string name, axes; // what the user called and over which mesh axes
  int group_size = 1;
  double bytes = 0;       // this rank's input payload
  double start = 0, ready = 0, end = 0;  // microseconds of the steady clock
  double wait = -1;  // async (jaxts.async): start = CollectiveStart, end = CollectiveDone returned, wait = blocked in it; -1: synchronous
};

/** Microseconds of the steady clock (CLOCK_MONOTONIC: the clock of the launch timestamps and of process.hrtime). */
inline double SteadyNowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** Which device (rank) of which launch the calling thread is running; one ONNX program serves every device. */
struct DeviceContext {
  int rank = 0;               // position of this device in the launch (its row-major mesh index)
  int size = 1;               // devices in the launch
  int device = 0;             // executor (device id) running it
  uint64_t launch = 0;        // launch id (unique per process)
  uint64_t seq = 0;           // collectives this rank has run in this launch so far
  int64_t timeout_ms = 30000;
  Communicator* comm = nullptr;
  std::vector<CollectiveRecord>* records = nullptr;  // set when the launch asked for collective timings
};

/** The context of the calling thread (nullptr outside a device program run). */
DeviceContext*& CurrentDevice();

}  // namespace jaxts
