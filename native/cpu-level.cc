/** @file CPU feature detection for the native kernels (native/cpu-level.h), with the JAXTS_CPU cap that tests use to run the AVX2, SSE2 and portable paths on an AVX-512 machine. */

#include "cpu-level.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace jaxts {
namespace {

CpuLevel Detect() {
#ifdef JAXTS_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return CpuLevel::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuLevel::kAvx2;
  return CpuLevel::kSse2;
#else
  return CpuLevel::kPortable;
#endif
}

struct Choice {
  CpuLevel level;
  std::string error;
};

const Choice& TheChoice() {
  static const Choice choice = [] {
    Choice c{Detect(), ""};
    const char* want = std::getenv("JAXTS_CPU");
    if (!want || !*want) return c;
    for (CpuLevel l : {CpuLevel::kPortable, CpuLevel::kSse2, CpuLevel::kAvx2, CpuLevel::kAvx512})
      if (std::strcmp(want, CpuLevelName(l)) == 0) {
        if (l < c.level) c.level = l;  // a cap: never a level this CPU (or build) lacks
        return c;
      }
    c.error = std::string("JAXTS_CPU=") + want + ": expected avx512, avx2, sse2 or portable";
    return c;
  }();
  return choice;
}

}  // namespace

CpuLevel TheCpuLevel() { return TheChoice().level; }

const char* CpuLevelName(CpuLevel level) {
  switch (level) {
    case CpuLevel::kAvx512: return "avx512";
    case CpuLevel::kAvx2: return "avx2";
    case CpuLevel::kSse2: return "sse2";
    default: return "portable";
  }
}

const char* CpuEnvError() { return TheChoice().error.empty() ? nullptr : TheChoice().error.c_str(); }

}  // namespace jaxts
