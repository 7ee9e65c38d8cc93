/** @file The reduction kernels every collective reduces with (sum / max / min of n buffers into nd destinations), one per CPU level. */
#pragma once

#include <cstddef>

#include "communicator.h"
#include "cpu-level.h"

namespace jaxts {

/**
 * dsts[d][i] = ins[0][i] op ins[1][i] op ... op ins[n-1][i] for i < count and every d < nd: a left fold in input
 * order (the same rounding on every rank and at every level), integer sums wrapping, max / min NaN-propagating (the
 * first NaN of the fold wins; ties keep the earlier input, so max(+0, -0) = +0). A destination may be ins[0] (never
 * another input at an offset). With `stream` (destinations of at least 4 MiB) an x86 level writes with
 * non-temporal stores when every destination sits at one offset within its vector width (from the first aligned
 * element on), and fences before returning.
 * float16 / bfloat16 fold in float32 and round once per element (IsHalfFloat), at every level the same scalar code.
 * `level` picks the kernel (default: this process's, native/cpu-level.h; a higher one than the CPU has is lowered).
 * False for a reduction the type does not have (a bool / uint8 sum) or an unknown type.
 */
bool ReduceElements(int type, ReduceOp op, const void* const* ins, size_t n, char* const* dsts, size_t nd, size_t count, bool stream,
                    CpuLevel level = TheCpuLevel());

}  // namespace jaxts
