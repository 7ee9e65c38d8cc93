/** @file The jaxts.Gemm ONNX Runtime custom op (ONNX Gemm semantics, float32, jaxts's SGEMM): registration interface. */
#pragma once

struct OrtStatus;
struct OrtSessionOptions;

namespace jaxts {

/**
 * Registers the custom-op domain "jaxts" with op "Gemm" against the OrtApi table `api` of ONNX Runtime `version`.
 * Returns the kernel name ("avx512" / "avx2"), or nullptr when the op is unavailable (no fast kernel on this CPU,
 * an ONNX Runtime older than 1.18, or registration failed): then jaxts leaves every GEMM to ONNX Runtime.
 */
const char* RegisterGemmOp(const void* const* api, const char* version);

/** Whether the "jaxts" domain exists with the linalg ops (jaxts.Lu, TriangularSolve, Cholesky, Qr). */
bool LinalgOpsRegistered();

/** Adds the registered domain to a session's options (no-op without one); returns ORT's status (nullptr: ok). */
OrtStatus* AddGemmOpDomain(OrtSessionOptions* options);

}  // namespace jaxts
