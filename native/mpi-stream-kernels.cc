/** @file The direct same-host all-reduce's streaming kernels: copies with non-temporal stores and the one-pass `w - sum * s` update (see mpi-stream-kernels.h). */
// Why streaming: in a training step the mailbox's lines were last read by the peer, one step ago; a plain store first
// fetches each line and invalidates the peer's copy (RFO), which costs 2-6x depending on where the two cores sit;
// non-temporal stores write whole lines without reading them (notes/multiprocess.md, mpfold section).

#include "mpi-stream-kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cpu-level.h"

#ifdef JAXTS_X86
#include <immintrin.h>
#endif

namespace jaxts {
namespace mpishm {
namespace {

#ifdef JAXTS_X86
__attribute__((target("avx512f"))) void StreamCopy512(char* dst, const char* src, size_t n) {
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    const __m512i a = _mm512_loadu_si512(src + i), b = _mm512_loadu_si512(src + i + 64), c = _mm512_loadu_si512(src + i + 128),
                  d = _mm512_loadu_si512(src + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 192), d);
  }
  for (; i + 64 <= n; i += 64) _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), _mm512_loadu_si512(src + i));
  _mm_sfence();
  if (i < n) std::memcpy(dst + i, src + i, n - i);
}
#endif
}  // namespace

void CopyStreamed(char* dst, const char* src, size_t n, bool stream) {
#ifdef JAXTS_X86
  if (stream && n >= 4096 && TheCpuLevel() >= CpuLevel::kAvx512) {
    // the head up to a 64-byte boundary of dst with memcpy, the rest streamed
    const size_t head = std::min(n, (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64);
    if (head) std::memcpy(dst, src, head);
    StreamCopy512(dst + head, src + head, n - head);
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

}  // namespace mpishm

namespace mpicomm {
namespace {

// ---------------------------------------------------------------- an SGD-style epilogue in the fold, in one pass
// out[i] = w[i] - (ins[0][i] + ins[1][i] + ...) * s (or the add form): the float32 sum's left fold (ReduceElements'
// order), then the multiply and the add / subtract in the program's operand order, each rounded to float32 (the
// build has no FMA contraction): the same bits as reducing into a tile and evaluating the FusedProgram on it, in one
// pass over the inputs instead of a reduce pass and the evaluator's per-operation passes over 512-element blocks.
template <int B>
struct VecF;  // float vectors of B bytes (GCC vector extensions; a dependent vector_size would be dropped)
template <>
struct VecF<16> {
  typedef float V __attribute__((vector_size(16)));
};
template <>
struct VecF<32> {
  typedef float V __attribute__((vector_size(32)));
};
template <>
struct VecF<64> {
  typedef float V __attribute__((vector_size(64)));
};
template <int B, bool Sub, bool WFirst, bool SFirst>
inline __attribute__((always_inline)) void ScaledUpdateRun(const float* const* ins, size_t k, const float* w, float s, float* out, size_t n) {
  typedef typename VecF<B>::V V;
  constexpr size_t L = B / sizeof(float);
  V vs;
  for (size_t l = 0; l < L; l++) vs[l] = s;
  const auto one = [&](auto sum, auto wv) {
    const auto m = SFirst ? vs * sum : sum * vs;
    return Sub ? wv - m : (WFirst ? wv + m : m + wv);
  };
  size_t i = 0;
  for (; i + L <= n; i += L) {
    V acc, x, wv;
    __builtin_memcpy(&acc, ins[0] + i, B);
    for (size_t j = 1; j < k; j++) {
      __builtin_memcpy(&x, ins[j] + i, B);
      acc = acc + x;
    }
    __builtin_memcpy(&wv, w + i, B);
    const V r = one(acc, wv);
    __builtin_memcpy(out + i, &r, B);
  }
  for (; i < n; i++) {
    float acc = ins[0][i];
    for (size_t j = 1; j < k; j++) acc = acc + ins[j][i];
    const float m = SFirst ? s * acc : acc * s;
    out[i] = Sub ? w[i] - m : (WFirst ? w[i] + m : m + w[i]);
  }
}
template <bool Sub, bool WFirst, bool SFirst>
void ScaledUpdatePortable(const float* const* ins, size_t k, const float* w, float s, float* out, size_t n) {
  ScaledUpdateRun<16, Sub, WFirst, SFirst>(ins, k, w, s, out, n);
}
#ifdef JAXTS_X86
template <bool Sub, bool WFirst, bool SFirst>
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2"))) void ScaledUpdate512(const float* const* ins, size_t k, const float* w, float s,
                                                                                         float* out, size_t n) {
  ScaledUpdateRun<64, Sub, WFirst, SFirst>(ins, k, w, s, out, n);
}
/**
 * The same update written to two destinations (the output and the mailbox) with non-temporal stores, for a fold that
 * streams (the mailbox went cold, see mpishm::CopyStreamed): one pass, no tile copy; false (nothing written) when the
 * destinations are not equally aligned modulo 64 bytes.
 */
template <bool Sub, bool WFirst, bool SFirst>
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2"))) bool ScaledUpdate512Stream(const float* const* ins, size_t k, const float* w, float s,
                                                                                               float* out, float* mbox, size_t n) {
  typedef VecF<64>::V V;
  if ((reinterpret_cast<uintptr_t>(out) - reinterpret_cast<uintptr_t>(mbox)) % 64 != 0 || reinterpret_cast<uintptr_t>(out) % 4 != 0) return false;
  // the head up to out's 64-byte boundary, the tail: stored normally
  const size_t head = std::min(n, (64 - reinterpret_cast<uintptr_t>(out) % 64) % 64 / 4);
  const auto scalar = [&](size_t lo, size_t hi) {
    std::vector<const float*> p(k);
    for (size_t j = 0; j < k; j++) p[j] = ins[j] + lo;
    ScaledUpdateRun<64, Sub, WFirst, SFirst>(p.data(), k, w + lo, s, out + lo, hi - lo);
    std::memcpy(mbox + lo, out + lo, (hi - lo) * sizeof(float));
  };
  if (head) scalar(0, head);
  V vs;
  for (size_t l = 0; l < 16; l++) vs[l] = s;
  size_t i = head;
  for (; i + 16 <= n; i += 16) {
    V acc, x, wv;
    __builtin_memcpy(&acc, ins[0] + i, 64);
    for (size_t j = 1; j < k; j++) {
      __builtin_memcpy(&x, ins[j] + i, 64);
      acc = acc + x;
    }
    __builtin_memcpy(&wv, w + i, 64);
    const V m = SFirst ? vs * acc : acc * vs;
    const V r = Sub ? wv - m : (WFirst ? wv + m : m + wv);
    _mm512_stream_ps(out + i, reinterpret_cast<const __m512&>(r));
    _mm512_stream_ps(mbox + i, reinterpret_cast<const __m512&>(r));
  }
  _mm_sfence();
  if (i < n) scalar(i, n);
  return true;
}
template <bool Sub, bool WFirst, bool SFirst>
__attribute__((target("avx2"))) void ScaledUpdate256(const float* const* ins, size_t k, const float* w, float s, float* out, size_t n) {
  ScaledUpdateRun<32, Sub, WFirst, SFirst>(ins, k, w, s, out, n);
}
#endif
template <bool Sub, bool WFirst, bool SFirst>
ScaledUpdateFn ScaledUpdateAt() {
#ifdef JAXTS_X86
  if (TheCpuLevel() >= CpuLevel::kAvx512) return ScaledUpdate512<Sub, WFirst, SFirst>;
  if (TheCpuLevel() >= CpuLevel::kAvx2) return ScaledUpdate256<Sub, WFirst, SFirst>;
#endif
  return ScaledUpdatePortable<Sub, WFirst, SFirst>;
}
}  // namespace

/** The streaming two-destination kernel for update u, or nullptr (no AVX-512; $JAXTS_MPI_SHM_NT_FOLD=0: the tiles, A/B). */
ScaledUpdateStreamFn ScaledUpdateStreamKernel(const FusedScaledUpdate& u) {
#ifdef JAXTS_X86
  static const bool on = [] {
    const char* e = std::getenv("JAXTS_MPI_SHM_NT_FOLD");
    return !(e && std::string(e) == "0");
  }();
  if (on && TheCpuLevel() >= CpuLevel::kAvx512) {
    if (u.sub) return u.s_first ? ScaledUpdate512Stream<true, true, true> : ScaledUpdate512Stream<true, true, false>;
    if (u.w_first) return u.s_first ? ScaledUpdate512Stream<false, true, true> : ScaledUpdate512Stream<false, true, false>;
    return u.s_first ? ScaledUpdate512Stream<false, false, true> : ScaledUpdate512Stream<false, false, false>;
  }
#endif
  (void)u;
  return nullptr;
}
/** The one-pass kernel for update u (w_first only matters for an add). */
ScaledUpdateFn ScaledUpdateKernel(const FusedScaledUpdate& u) {
  if (u.sub) return u.s_first ? ScaledUpdateAt<true, true, true>() : ScaledUpdateAt<true, true, false>();
  if (u.w_first) return u.s_first ? ScaledUpdateAt<false, true, true>() : ScaledUpdateAt<false, true, false>();
  return u.s_first ? ScaledUpdateAt<false, false, true>() : ScaledUpdateAt<false, false, false>();
}

}  // namespace mpicomm
}  // namespace jaxts
