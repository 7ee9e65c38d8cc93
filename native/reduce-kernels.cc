/** @file Reduction kernels at each CPU level (AVX-512, AVX2, SSE2 and portable GCC vector extensions) behind ReduceElements, and the test hook that runs one level. */
// The shared-memory all-reduce of 16 MiB float32 over 2 ranks is instruction-bound at SSE2's 16-byte operations:
// one kernel source (native/reduce-kernel.inc) is compiled at 64-, 32- and 16-byte vectors, each under its target,
// and chosen per call by level. Every level computes the same elementwise fold as the scalar rule below.

#include "reduce-kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "half-float.h"
#include "napi-util.h"

#ifdef JAXTS_X86
#include <immintrin.h>
#endif

namespace jaxts {
namespace {

using ReduceFn = void (*)(const void* const* ins, size_t n, char* const* dsts, size_t nd, size_t count, bool stream);

// The scalar rule (tails and the reference): a + b wrapping for integers; max / min with NaN winning (XLA's).
template <typename T, ReduceOp Op>
inline T ScalarCombine(T a, T b) {
  if constexpr (Op == ReduceOp::kSum) {
    if constexpr (std::is_integral<T>::value) return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
    else return a + b;
  } else if constexpr (Op == ReduceOp::kMax) {
    return a != a ? a : (b != b ? b : (b > a ? b : a));
  } else {
    return a != a ? a : (b != b ? b : (b < a ? b : a));
  }
}

#define RK_INLINE inline __attribute__((always_inline))

#ifdef JAXTS_X86
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2")
namespace v64 {
#define RK_BYTES 64
#define RK_STREAM 64
#include "reduce-kernel.inc"
#undef RK_STREAM
#undef RK_BYTES
}  // namespace v64
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2")
namespace v32 {
#define RK_BYTES 32
#define RK_STREAM 32
#include "reduce-kernel.inc"
#undef RK_STREAM
#undef RK_BYTES
}  // namespace v32
#pragma GCC pop_options

namespace v16 {
#define RK_BYTES 16
#define RK_STREAM 16
#include "reduce-kernel.inc"
#undef RK_STREAM
#undef RK_BYTES
}  // namespace v16
#endif

// no intrinsics, no streaming: what non-x86 builds run (and JAXTS_CPU=portable on x86)
namespace portable {
#define RK_BYTES 16
#include "reduce-kernel.inc"
#undef RK_BYTES
}  // namespace portable

ReduceFn KernelAt(CpuLevel level, int type, ReduceOp op) {
  switch (level) {
#ifdef JAXTS_X86
    case CpuLevel::kAvx512: return v64::Kernel(type, op);
    case CpuLevel::kAvx2: return v32::Kernel(type, op);
    case CpuLevel::kSse2: return v16::Kernel(type, op);
#endif
    default: return portable::Kernel(type, op);
  }
}

napi_value Throw(napi_env env, const std::string& msg) {
  napi_throw_error(env, nullptr, msg.c_str());
  return nullptr;
}

// reduceKernel(level, type, op, ins: TypedArray[], outs: TypedArray[], stream, dstOffset) -> the level that ran
// (tests only): ReduceElements at `level` (lowered to what this process may run) over the inputs' length, into one
// 64-byte-aligned scratch destination per output at byte offset dstOffset (so tests choose aligned or not), each
// then copied to its output.
napi_value ReduceKernelFn(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  std::string name;
  int32_t type = 0, op = 0, offset = 0;
  bool stream = false;
  if (argc < 7 || !GetString(env, argv[0], &name) || napi_get_value_int32(env, argv[1], &type) != napi_ok ||
      napi_get_value_int32(env, argv[2], &op) != napi_ok || napi_get_value_bool(env, argv[5], &stream) != napi_ok ||
      napi_get_value_int32(env, argv[6], &offset) != napi_ok || op < 0 || op > 2 || offset < 0 || offset >= 64)
    return Throw(env, "reduceKernel expects (level, onnx type, op 0|1|2, inputs, outputs, stream, dstOffset 0..63)");
  CpuLevel level = CpuLevel::kPortable;
  bool known = false;
  for (CpuLevel l : {CpuLevel::kPortable, CpuLevel::kSse2, CpuLevel::kAvx2, CpuLevel::kAvx512})
    if (name == CpuLevelName(l)) level = l, known = true;
  if (!known) return Throw(env, "reduceKernel: unknown level '" + name + "' (expected avx512, avx2, sse2 or portable)");
  if (level > TheCpuLevel()) level = TheCpuLevel();  // never a level this CPU (or JAXTS_CPU) lacks
  const size_t w = ElementBytes(type);
  if (w == 0) return Throw(env, "reduceKernel: unknown element type " + std::to_string(type));
  size_t count = SIZE_MAX;
  auto arrays = [&](napi_value list, std::vector<void*>* ptrs, const char* what) -> bool {
    uint32_t len = 0;
    if (napi_get_array_length(env, list, &len) != napi_ok || len == 0) {
      Throw(env, std::string("reduceKernel: ") + what + " must be a non-empty array");
      return false;
    }
    for (uint32_t i = 0; i < len; i++) {
      napi_value v, ab;
      napi_get_element(env, list, i, &v);
      napi_typedarray_type tt;
      size_t n = 0, off = 0;
      void* data = nullptr;
      if (napi_get_typedarray_info(env, v, &tt, &n, &data, &ab, &off) != napi_ok || TypedArrayBytes(tt, n) % w ||
          (count != SIZE_MAX && TypedArrayBytes(tt, n) / w != count)) {
        Throw(env, std::string("reduceKernel: ") + what + "[" + std::to_string(i) + "] is not a typed array of the inputs' element count");
        return false;
      }
      count = TypedArrayBytes(tt, n) / w;
      ptrs->push_back(data);
    }
    return true;
  };
  std::vector<void*> ins, outs;
  if (!arrays(argv[3], &ins, "inputs") || !arrays(argv[4], &outs, "outputs")) return nullptr;
  const size_t stride = (count * w + 64 + 63) / 64 * 64;
  std::vector<char> scratch(stride * outs.size() + 64);
  char* base = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  std::vector<char*> dsts;
  for (size_t d = 0; d < outs.size(); d++) dsts.push_back(base + d * stride + size_t(offset));
  std::vector<const void*> cins(ins.begin(), ins.end());
  if (!ReduceElements(type, ReduceOp(op), cins.data(), cins.size(), dsts.data(), dsts.size(), count, stream, level))
    return Throw(env, "reduceKernel: no reduction " + std::to_string(op) + " for element type " + std::to_string(type));
  for (size_t d = 0; d < outs.size(); d++) std::memcpy(outs[d], dsts[d], count * w);
  napi_value v;
  napi_create_string_utf8(env, CpuLevelName(level), NAPI_AUTO_LENGTH, &v);
  return v;
}

}  // namespace

bool ReduceElements(int type, ReduceOp op, const void* const* ins, size_t n, char* const* dsts, size_t nd, size_t count, bool stream,
                    CpuLevel level) {
  if (level > TheCpuLevel()) level = TheCpuLevel();
  const ReduceFn f = KernelAt(level, type, op);
  if (!f) return false;
  if (n > 0 && count > 0) f(ins, n, dsts, nd, count, stream);
  return true;
}

void RegisterReduceKernels(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"reduceKernel", nullptr, ReduceKernelFn, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

}  // namespace jaxts
