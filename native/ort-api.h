/** @file The slots of ONNX Runtime's C API table (OrtApi) that jaxts's native code calls, by index, in one place. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct OrtStatus;
struct OrtKernelInfo;
struct OrtKernelContext;
struct OrtCustomOpDomain;
struct OrtSessionOptions;
struct OrtValue;
struct OrtTensorTypeAndShapeInfo;

// The OrtApi table only ever grows (append-only across releases), so these indices hold for every newer runtime.
// Signatures are the ones onnxruntime_c_api.h documents; each call site casts the slot to its signature.
namespace jaxts {
namespace ort {

// The ONNX Runtime release whose onnxruntime_c_api.h these slot indices, their signatures and the OrtCustomOp layout
// (native/gemm-op.cc) were checked against. package.json pins onnxruntime-node to exactly this version (a test holds
// the two together); at load the addon refuses any other runtime, and jaxts uses onnxruntime-node's binding instead.
constexpr const char* kOrtVersion = "1.30.0";
// The OrtApi version requested at load: the newest slot used here (KernelContext_ParallelFor) arrived in API 18.
constexpr unsigned kOrtApiVersion = 18;

enum Slot : int {
  kCreateStatus = 0,
  kGetErrorMessage = 2,
  kCreateEnv = 3,
  kCreateSessionFromArray = 8,
  kRun = 9,
  kCreateSessionOptions = 10,
  kSetSessionExecutionMode = 13,
  kEnableProfiling = 14,
  kEnableMemPattern = 16,
  kDisableMemPattern = 17,
  kEnableCpuMemArena = 18,
  kDisableCpuMemArena = 19,
  kSetSessionLogSeverityLevel = 22,
  kSetSessionGraphOptimizationLevel = 23,
  kSetIntraOpNumThreads = 24,
  kSetInterOpNumThreads = 25,
  kCreateCustomOpDomain = 26,
  kCustomOpDomainAdd = 27,
  kAddCustomOpDomain = 28,
  kSessionGetInputCount = 30,
  kSessionGetOutputCount = 31,
  kSessionGetInputTypeInfo = 33,
  kSessionGetOutputTypeInfo = 34,
  kSessionGetInputName = 36,
  kSessionGetOutputName = 37,
  kCreateTensorWithDataAsOrtValue = 49,
  kGetTensorMutableData = 51,
  kCastTypeInfoToTensorInfo = 55,
  kGetTensorElementType = 60,
  kGetDimensionsCount = 61,
  kGetDimensions = 62,
  kGetSymbolicDimensions = 63,
  kGetTensorShapeElementCount = 64,
  kGetTensorTypeAndShape = 65,
  kCreateCpuMemoryInfo = 69,
  kAllocatorFree = 76,
  kGetAllocatorWithDefaultOptions = 78,
  kKernelInfoGetAttributeFloat = 85,
  kKernelInfoGetAttributeInt64 = 86,
  kKernelInfoGetAttributeString = 87,
  kKernelContextGetInputCount = 88,
  kKernelContextGetInput = 90,
  kKernelContextGetOutput = 91,
  kReleaseStatus = 93,
  kReleaseSession = 95,
  kReleaseValue = 96,
  kReleaseTypeInfo = 98,
  kReleaseTensorTypeAndShapeInfo = 99,
  kReleaseSessionOptions = 100,
  kAddSessionConfigEntry = 130,
  kKernelInfoGetAttributeArrayInt64 = 163,
  kKernelContextParallelFor = 274,  // since ONNX Runtime 1.18 (API 18)
};

/**
 * The OrtCustomOp table a custom op hands to ORT (layout of onnxruntime_c_api.h, members up to version 16 filled in;
 * ORT reads `later` only for version >= 17: shape inference, opset range, in-place and alias hints).
 */
struct CustomOp {
  uint32_t version;
  void* (*CreateKernel)(const CustomOp*, const void* api, const OrtKernelInfo*);
  const char* (*GetName)(const CustomOp*);
  const char* (*GetExecutionProviderType)(const CustomOp*);
  int (*GetInputType)(const CustomOp*, size_t);
  size_t (*GetInputTypeCount)(const CustomOp*);
  int (*GetOutputType)(const CustomOp*, size_t);
  size_t (*GetOutputTypeCount)(const CustomOp*);
  void (*KernelCompute)(void*, OrtKernelContext*);
  void (*KernelDestroy)(void*);
  int (*GetInputCharacteristic)(const CustomOp*, size_t);
  int (*GetOutputCharacteristic)(const CustomOp*, size_t);
  int (*GetInputMemoryType)(const CustomOp*, size_t);
  int (*GetVariadicInputMinArity)(const CustomOp*);
  int (*GetVariadicInputHomogeneity)(const CustomOp*);
  int (*GetVariadicOutputMinArity)(const CustomOp*);
  int (*GetVariadicOutputHomogeneity)(const CustomOp*);
  OrtStatus* (*CreateKernelV2)(const CustomOp*, const void* api, const OrtKernelInfo*, void** kernel);
  OrtStatus* (*KernelComputeV2)(void*, OrtKernelContext*);
  void* later[7];
};

/** Slot s of the table `api`, as a function pointer of type F. */
template <typename F>
F At(const void* const* api, Slot s) { return reinterpret_cast<F>(const_cast<void*>(api[s])); }


/** Attribute `name` (int64) of a custom op kernel's info, or `dflt` when the node does not set it. */
inline int64_t KernelIntAttr(const void* const* api, const OrtKernelInfo* info, const char* name, int64_t dflt) {
  int64_t v = dflt;
  if (OrtStatus* s = At<OrtStatus* (*)(const OrtKernelInfo*, const char*, int64_t*)>(api, kKernelInfoGetAttributeInt64)(info, name, &v)) {
    At<void (*)(OrtStatus*)>(api, kReleaseStatus)(s);
    return dflt;
  }
  return v;
}

/** Attribute `name` (int64 list) of a custom op kernel's info, or an empty list when the node does not set it. */
inline std::vector<int64_t> KernelIntsAttr(const void* const* api, const OrtKernelInfo* info, const char* name) {
  using F = OrtStatus* (*)(const OrtKernelInfo*, const char*, int64_t*, size_t*);
  size_t len = 0;
  if (OrtStatus* s = At<F>(api, kKernelInfoGetAttributeArrayInt64)(info, name, nullptr, &len)) {
    At<void (*)(OrtStatus*)>(api, kReleaseStatus)(s);
    return {};
  }
  std::vector<int64_t> v(len);
  if (len) {
    if (OrtStatus* s = At<F>(api, kKernelInfoGetAttributeArrayInt64)(info, name, v.data(), &len)) {
      At<void (*)(OrtStatus*)>(api, kReleaseStatus)(s);
      return {};
    }
  }
  return v;
}

/** Attribute `name` (string) of a custom op kernel's info, or `dflt` when the node does not set it. */
inline std::string KernelStringAttr(const void* const* api, const OrtKernelInfo* info, const char* name, const char* dflt) {
  using F = OrtStatus* (*)(const OrtKernelInfo*, const char*, char*, size_t*);
  size_t len = 0;
  if (OrtStatus* s = At<F>(api, kKernelInfoGetAttributeString)(info, name, nullptr, &len)) {
    At<void (*)(OrtStatus*)>(api, kReleaseStatus)(s);
    return dflt;
  }
  std::string v(len, '\0');
  if (OrtStatus* s = At<F>(api, kKernelInfoGetAttributeString)(info, name, v.data(), &len)) {
    At<void (*)(OrtStatus*)>(api, kReleaseStatus)(s);
    return dflt;
  }
  if (!v.empty() && v.back() == '\0') v.pop_back();
  return v;
}

/** A tensor a custom op kernel reads or writes: element type (ONNX enum), dims, element count, data. */
struct KernelTensor {
  int type = 0;
  std::vector<int64_t> dims;
  size_t count = 0;
  void* data = nullptr;
};

/** Fills *t from the OrtValue v (its data pointer only when it has elements). */
inline OrtStatus* DescribeTensor(const void* const* api, const OrtValue* v, KernelTensor* t) {
  OrtTensorTypeAndShapeInfo* ti = nullptr;
  if (OrtStatus* s = At<OrtStatus* (*)(const OrtValue*, OrtTensorTypeAndShapeInfo**)>(api, kGetTensorTypeAndShape)(v, &ti)) return s;
  size_t nd = 0;
  At<OrtStatus* (*)(const OrtTensorTypeAndShapeInfo*, int*)>(api, kGetTensorElementType)(ti, &t->type);
  At<OrtStatus* (*)(const OrtTensorTypeAndShapeInfo*, size_t*)>(api, kGetDimensionsCount)(ti, &nd);
  t->dims.resize(nd);
  if (nd) At<OrtStatus* (*)(const OrtTensorTypeAndShapeInfo*, int64_t*, size_t)>(api, kGetDimensions)(ti, t->dims.data(), nd);
  At<OrtStatus* (*)(const OrtTensorTypeAndShapeInfo*, size_t*)>(api, kGetTensorShapeElementCount)(ti, &t->count);
  At<void (*)(OrtTensorTypeAndShapeInfo*)>(api, kReleaseTensorTypeAndShapeInfo)(ti);
  if (t->count) {
    if (OrtStatus* s = At<OrtStatus* (*)(OrtValue*, void**)>(api, kGetTensorMutableData)(const_cast<OrtValue*>(v), &t->data)) return s;
  }
  return nullptr;
}

/**
 * A new custom op domain `name` holding ops[0..n) (they must outlive every session), stored in *out on success.
 * Returns the first failure's status (the caller reports and releases it), or nullptr.
 */
inline OrtStatus* CreateOpDomain(const void* const* api, const char* name, CustomOp* const* ops, size_t n, OrtCustomOpDomain** out) {
  OrtCustomOpDomain* d = nullptr;
  OrtStatus* s = At<OrtStatus* (*)(const char*, OrtCustomOpDomain**)>(api, kCreateCustomOpDomain)(name, &d);
  for (size_t i = 0; i < n && !s; i++) s = At<OrtStatus* (*)(OrtCustomOpDomain*, const void*)>(api, kCustomOpDomainAdd)(d, ops[i]);
  if (!s) *out = d;
  return s;
}

/** Adds a domain made by CreateOpDomain to session options; nothing (nullptr) while it is not registered. */
inline OrtStatus* AddOpDomain(const void* const* api, OrtSessionOptions* options, OrtCustomOpDomain* domain) {
  if (!domain) return nullptr;
  return At<OrtStatus* (*)(OrtSessionOptions*, OrtCustomOpDomain*)>(api, kAddCustomOpDomain)(options, domain);
}

}  // namespace ort
}  // namespace jaxts
