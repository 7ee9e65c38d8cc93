/** @file The jaxts.Fft (float32) and jaxts.Fft64 (float64) ONNX Runtime custom ops: a complex DFT along one axis of an interleaved [..., 2] tensor; registration interface. */
#pragma once

#include <cstddef>

#include "ort-api.h"

namespace jaxts {

/** Maximum number of ops FftCustomOps hands out. */
constexpr size_t kMaxFftOps = 2;

/** Stores the FFT custom ops (static tables) in out[0..kMaxFftOps) for the OrtApi table `api`; returns how many. */
size_t FftCustomOps(const void* const* api, ort::CustomOp** out);

}  // namespace jaxts
