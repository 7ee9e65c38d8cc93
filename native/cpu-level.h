/** @file Which x86 vector extensions jaxts's native kernels may use: detected once per process, lowered by JAXTS_CPU. */
#pragma once

// x86 kernels (AVX-512 / AVX2 / SSE2 intrinsics) exist only on x86 builds; JAXTS_NO_X86=1 (a build macro) makes an
// x86 build take the portable path every other architecture builds, so that path is compiled and tested here too.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(JAXTS_NO_X86)
#define JAXTS_X86 1
#endif

namespace jaxts {

/** Kernel levels, best last; portable = GCC vector extensions only (no intrinsics), the code non-x86 CPUs run. */
enum class CpuLevel : int { kPortable = 0, kSse2 = 1, kAvx2 = 2, kAvx512 = 3 };

/**
 * The level this process runs: the best this CPU supports (avx512: AVX-512 F/DQ/BW/VL; avx2: AVX2 + FMA; sse2: any
 * x86-64), capped by the environment variable JAXTS_CPU=avx512|avx2|sse2|portable (read once, at first use).
 */
CpuLevel TheCpuLevel();
const char* CpuLevelName(CpuLevel level);
/** nullptr, or why JAXTS_CPU is not one of the level names. */
const char* CpuEnvError();

}  // namespace jaxts
