/** @file The jaxts.Lu, jaxts.TriangularSolve, jaxts.Cholesky, jaxts.Qr, jaxts.Eigh and jaxts.Svd ONNX Runtime custom ops (float64, batched): registration interface. */
#pragma once

#include <cstddef>

#include "ort-api.h"

namespace jaxts {

/** Maximum number of ops LinalgCustomOps hands out. */
constexpr size_t kMaxLinalgOps = 6;

/**
 * Stores the linear-algebra custom ops (static tables that outlive every session) in out[0..kMaxLinalgOps) for the
 * OrtApi table `api`; returns how many. The caller adds them to the "jaxts" domain.
 */
size_t LinalgCustomOps(const void* const* api, ort::CustomOp** out);

}  // namespace jaxts
