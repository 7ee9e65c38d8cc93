/** @file The direct same-host all-reduce's streaming kernels: non-temporal copies and the one-pass `w - sum * s` update fused into its fold. */
#pragma once

#include <cstddef>

#include "fused.h"

namespace jaxts {
namespace mpishm {
/**
 * Copies n bytes (into a mailbox that a peer reads next, or into an output); `stream`: with non-temporal stores where
 * the CPU has them (AVX-512), so the copy neither reads the destination's lines first nor keeps them in this core's
 * cache (DirectAllReduce decides: see StreamAfter in native/mpi-shm.cc). Ends with a store fence.
 */
void CopyStreamed(char* dst, const char* src, size_t n, bool stream);

}  // namespace mpishm

namespace mpicomm {

/**
 * out[i] = w[i] - (ins[0][i] + ... + ins[k-1][i]) * s (or the add / operand order of a FusedScaledUpdate): the float32
 * sum's left fold (ReduceElements' order), then the multiply and the add / subtract, each rounded (no FMA): the bits of
 * reducing into a tile and evaluating the FusedProgram on it.
 */
using ScaledUpdateFn = void (*)(const float* const* ins, size_t k, const float* w, float s, float* out, size_t n);
/** The same, stored into `out` and `mbox` with non-temporal stores; false (nothing written) unless equally aligned mod 64. */
using ScaledUpdateStreamFn = bool (*)(const float* const* ins, size_t k, const float* w, float s, float* out, float* mbox, size_t n);
/** The one-pass kernel for update u at this CPU's level. */
ScaledUpdateFn ScaledUpdateKernel(const FusedScaledUpdate& u);
/** The streaming two-destination kernel for update u, or nullptr (no AVX-512; $JAXTS_MPI_SHM_NT_FOLD=0). */
ScaledUpdateStreamFn ScaledUpdateStreamKernel(const FusedScaledUpdate& u);

}  // namespace mpicomm
}  // namespace jaxts
