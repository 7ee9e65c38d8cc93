/** @file The thread-local device context an executor sets around each program run; the collective custom ops read it. */
#pragma once

#include <cstdint>

namespace jaxts {

class Communicator;

/** Which device (rank) of which launch the calling thread is running; one ONNX program serves every device. */
struct DeviceContext {
  int rank = 0;               // position of this device in the launch (its row-major mesh index)
  int size = 1;               // devices in the launch
  int device = 0;             // executor (device id) running it
  uint64_t launch = 0;        // launch id (unique per process)
  uint64_t seq = 0;           // collectives this rank has run in this launch so far
  int64_t timeout_ms = 30000;
  Communicator* comm = nullptr;
};

/** The context of the calling thread (nullptr outside a device program run). */
DeviceContext*& CurrentDevice();

}  // namespace jaxts
