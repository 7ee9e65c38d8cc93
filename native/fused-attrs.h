/** @file A node's fused elementwise program read from its attributes (jaxts.Fused, AllReduceEpilogue): parsed once. */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fused.h"
#include "ort-api.h"

namespace jaxts {

/**
 * Attributes `num_inputs`, `num_scalars` and `program` (the encoding of src/backends/onnx/native-fused.ts) of a kernel's
 * node. A missing or malformed program leaves `prog` null and says why in `error`, reported by the kernel at compute
 * time with ORT's status (kernel creation has no error path through every ORT version's custom-op ABI).
 */
struct FusedAttrs {
  FusedProgram* prog = nullptr;
  int num_inputs = 0, num_scalars = 0;
  std::string error;

  FusedAttrs() = default;
  FusedAttrs(const FusedAttrs&) = delete;
  FusedAttrs& operator=(const FusedAttrs&) = delete;
  ~FusedAttrs() {
    if (prog) FreeFused(prog);
  }

  void Read(const void* const* api, const OrtKernelInfo* info) {
    num_inputs = int(ort::KernelIntAttr(api, info, "num_inputs", 0));
    num_scalars = int(ort::KernelIntAttr(api, info, "num_scalars", 0));
    const std::vector<int64_t> code64 = ort::KernelIntsAttr(api, info, "program");
    const std::vector<int32_t> code(code64.begin(), code64.end());
    if (code.empty()) error = "missing attribute 'program'";
    else if (num_inputs < 1 || num_scalars < 0) error = "num_inputs must be at least 1 and num_scalars at least 0";
    else prog = ParseFused(code.data(), code.size(), num_inputs, num_scalars, &error);
  }
};

}  // namespace jaxts
