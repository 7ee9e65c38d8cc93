/** @file Helpers shared by the jaxts float kernels' custom ops (linalg-ops.cc, fft-ops.cc): error statuses, shape strings, ORT's intra-op ParallelFor. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ort-api.h"

namespace jaxts {

/** An ORT_INVALID_ARGUMENT status "jaxts.<op>: <msg>". */
inline OrtStatus* OpError(const void* const* api, const char* op, const std::string& msg) {
  return ort::At<OrtStatus* (*)(int, const char*)>(api, ort::kCreateStatus)(2, (std::string("jaxts.") + op + ": " + msg).c_str());
}

/** "[d0,d1,...]". */
inline std::string ShapeStr(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

/** Runs task(i) for i < n on ORT's intra-op threads (inline when there is a single task). */
template <typename Task>
OrtStatus* OpParallelFor(const void* const* api, OrtKernelContext* ctx, size_t n, Task& task) {
  if (n == 0) return nullptr;
  if (n == 1) { task(0); return nullptr; }
  auto run = [](void* p, size_t i) { (*static_cast<Task*>(p))(i); };
  return ort::At<OrtStatus* (*)(const OrtKernelContext*, void (*)(void*, size_t), size_t, size_t, void*)>(
      api, ort::kKernelContextParallelFor)(ctx, run, n, 0, &task);
}

/** ORT's V1 kernel creation over a V2 one (which returns a status and the kernel through `out`). */
template <OrtStatus* (*V2)(const ort::CustomOp*, const void*, const OrtKernelInfo*, void**)>
void* CreateKernelV1(const ort::CustomOp* op, const void* api, const OrtKernelInfo* info) {
  void* k = nullptr;
  V2(op, api, info, &k);
  return k;
}

/** ORT's V1 compute over a V2 one; only reached if ORT ignores KernelComputeV2, so a failure can only be logged. */
template <OrtStatus* (*Compute)(void*, OrtKernelContext*), const void* const* const* Api>
void ComputeKernelV1(void* k, OrtKernelContext* ctx) {
  if (OrtStatus* s = Compute(k, ctx)) {
    std::fprintf(stderr, "jaxts custom op failed\n");
    ort::At<void (*)(OrtStatus*)>(*Api, ort::kReleaseStatus)(s);
  }
}

/** Frees a kernel object created as a T. */
template <typename T>
void DestroyKernel(void* k) {
  delete static_cast<T*>(k);
}

}  // namespace jaxts
