/** @file jaxts's float32 GEMM: Goto/BLIS-style packing and cache blocking around register-tiled AVX-512 / AVX2 micro-kernels. */
// The loop nest follows the well-known Goto / BLIS structure (credit: K. Goto and R. van de Geijn,
// "Anatomy of High-Performance Matrix Multiplication"; the BLIS papers): a KC x NC panel of B is packed
// into NR-wide strips, an MC x KC block of A into MR-tall strips, and a register-resident MR x NR
// micro-tile of C accumulates rank-1 updates over KC. Only the micro-kernel is ISA specific; it is chosen
// once at run time from CPUID (capped by JAXTS_CPU, native/cpu-level.h), so the addon builds for baseline x86-64 and
// runs anywhere. Other architectures (and JAXTS_NO_X86 builds) have no micro-kernel: ORT keeps their GEMMs.
//
// Why jaxts has its own GEMM: on this AMD Zen 4 host (FMA peak 117 GFLOP/s per core) it sustains 95-100 GFLOP/s
// per core on large products (the micro-kernel alone 109), ahead of ONNX Runtime's MLAS by 15-35% from 1024^3 on
// two threads; on thin shapes (K or M ~128) MLAS is faster, so the graph optimizer only hands it large GEMMs.

#include "sgemm.h"

#include "cpu-level.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifdef JAXTS_X86
#include <immintrin.h>
#endif

namespace jaxts {
namespace {

// One thread's packing buffers (64-byte aligned, grown on demand, kept for the thread's life).
struct PackBuffers {
  float* a = nullptr;
  size_t a_cap = 0;
  float* b = nullptr;
  size_t b_cap = 0;
  ~PackBuffers() { std::free(a); std::free(b); }
  static float* Grow(float*& p, size_t& cap, size_t n) {
    if (n <= cap) return p;
    std::free(p);
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    p = static_cast<float*>(std::aligned_alloc(64, bytes));
    cap = p ? n : 0;
    return p;
  }
};
thread_local PackBuffers t_pack;

// Packs op(A)[i0:i0+mc, k0:k0+kc] into MR-row strips: strip s, step k holds rows s*MR .. s*MR+MR-1 (zero padded).
template <int MR>
void PackA(const Sgemm& g, int i0, int mc, int k0, int kc, float* out) {
  for (int i = 0; i < mc; i += MR) {
    const int mr = std::min(MR, mc - i);
    if (g.transA) {
      // op(A)[r, k] = A[k, r]: each step reads MR contiguous floats
      for (int k = 0; k < kc; k++) {
        const float* src = g.A + (long)(k0 + k) * g.lda + (i0 + i);
        for (int t = 0; t < mr; t++) out[t] = src[t];
        for (int t = mr; t < MR; t++) out[t] = 0.f;
        out += MR;
      }
    } else {
      // rows are contiguous in k: walk each row once, scattering into the strip
      for (int t = 0; t < mr; t++) {
        const float* src = g.A + (long)(i0 + i + t) * g.lda + k0;
        for (int k = 0; k < kc; k++) out[k * MR + t] = src[k];
      }
      for (int t = mr; t < MR; t++)
        for (int k = 0; k < kc; k++) out[k * MR + t] = 0.f;
      out += (long)kc * MR;
    }
  }
}

// Packs op(B)[k0:k0+kc, j0:j0+nc] into NR-column strips (zero padded).
template <int NR>
void PackB(const Sgemm& g, int k0, int kc, int j0, int nc, float* out) {
  for (int j = 0; j < nc; j += NR) {
    const int nr = std::min(NR, nc - j);
    if (!g.transB) {
      for (int k = 0; k < kc; k++) {
        const float* src = g.B + (long)(k0 + k) * g.ldb + (j0 + j);
        if (nr == NR) std::memcpy(out, src, NR * sizeof(float));
        else {
          for (int t = 0; t < nr; t++) out[t] = src[t];
          for (int t = nr; t < NR; t++) out[t] = 0.f;
        }
        out += NR;
      }
    } else {
      // op(B)[k, c] = B[c, k]: columns of op(B) are contiguous rows of B
      for (int t = 0; t < nr; t++) {
        const float* src = g.B + (long)(j0 + j + t) * g.ldb + k0;
        for (int k = 0; k < kc; k++) out[k * NR + t] = src[k];
      }
      for (int t = nr; t < NR; t++)
        for (int k = 0; k < kc; k++) out[k * NR + t] = 0.f;
      out += (long)kc * NR;
    }
  }
}

// What a micro-kernel does with its tile of products P: c = alpha P, c += alpha P (add), or c = alpha P + beta Cin
// (cin: the addend at the tile's origin, read through strides rs/cs, 0 for a broadcast axis).
struct Epilogue {
  float alpha;
  bool add;
  const float* cin;
  long rs, cs;
  float beta;
};

// Micro-kernel contract: c[0:mr, 0:nr] = epilogue of (packed a strip) x (packed b strip).
using MicroKernel = void (*)(int kc, const float* a, const float* b, float* c, long ldc, const Epilogue& e, int mr, int nr);

// Scalar epilogue for partial tiles (or general addend strides), from a full MR x NR tile of products in tmp.
inline void StorePartial(const float* tmp, int nr_full, float* c, long ldc, const Epilogue& e, int mr, int nr) {
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++) {
      const float v = e.alpha * tmp[i * nr_full + j];
      float* ci = c + i * ldc + j;
      *ci = e.add ? *ci + v : e.cin ? v + e.beta * e.cin[i * e.rs + j * e.cs] : v;
    }
}

#ifdef JAXTS_X86
// AVX-512: 14 x 32 tile = 28 zmm accumulators + 2 B vectors + 1 broadcast (of 32 registers).
constexpr int kMR512 = 14, kNR512 = 32;
__attribute__((target("avx512f,fma"))) void Kernel512(int kc, const float* a, const float* b, float* c, long ldc, const Epilogue& e,
                                                     int mr, int nr) {
  __m512 acc0[kMR512], acc1[kMR512];
  for (int i = 0; i < kMR512; i++) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int k = 0; k < kc; k++) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 14
    for (int i = 0; i < kMR512; i++) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc0[i] = _mm512_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm512_fmadd_ps(ai, b1, acc1[i]);
    }
    a += kMR512;
    b += kNR512;
  }
  // spill the tile once (constant indices keep the accumulators in registers inside the k loop)
  alignas(64) float tmp[kMR512 * kNR512];
#pragma GCC unroll 14
  for (int i = 0; i < kMR512; i++) { _mm512_store_ps(tmp + i * kNR512, acc0[i]); _mm512_store_ps(tmp + i * kNR512 + 16, acc1[i]); }
  if (nr != kNR512 || (e.cin && e.cs > 1)) return StorePartial(tmp, kNR512, c, ldc, e, mr, nr);
  const __m512 va = _mm512_set1_ps(e.alpha), vb = _mm512_set1_ps(e.beta);
  for (int i = 0; i < mr; i++) {
    float* ci = c + i * ldc;
    __m512 v0 = _mm512_mul_ps(va, _mm512_load_ps(tmp + i * kNR512)), v1 = _mm512_mul_ps(va, _mm512_load_ps(tmp + i * kNR512 + 16));
    if (e.add) { v0 = _mm512_add_ps(_mm512_loadu_ps(ci), v0); v1 = _mm512_add_ps(_mm512_loadu_ps(ci + 16), v1); }
    else if (e.cin) {
      const float* r = e.cin + i * e.rs;
      const __m512 c0 = e.cs ? _mm512_loadu_ps(r) : _mm512_set1_ps(r[0]), c1 = e.cs ? _mm512_loadu_ps(r + 16) : c0;
      v0 = _mm512_add_ps(v0, _mm512_mul_ps(vb, c0));
      v1 = _mm512_add_ps(v1, _mm512_mul_ps(vb, c1));
    }
    _mm512_storeu_ps(ci, v0);
    _mm512_storeu_ps(ci + 16, v1);
  }
}

// AVX2 + FMA: 6 x 16 tile = 12 ymm accumulators + 2 B vectors + 1 broadcast (of 16 registers).
constexpr int kMR256 = 6, kNR256 = 16;
__attribute__((target("avx2,fma"))) void Kernel256(int kc, const float* a, const float* b, float* c, long ldc, const Epilogue& e,
                                                  int mr, int nr) {
  __m256 acc0[kMR256], acc1[kMR256];
  for (int i = 0; i < kMR256; i++) acc0[i] = acc1[i] = _mm256_setzero_ps();
  for (int k = 0; k < kc; k++) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMR256; i++) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc0[i] = _mm256_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(ai, b1, acc1[i]);
    }
    a += kMR256;
    b += kNR256;
  }
  alignas(32) float tmp[kMR256 * kNR256];
#pragma GCC unroll 6
  for (int i = 0; i < kMR256; i++) { _mm256_store_ps(tmp + i * kNR256, acc0[i]); _mm256_store_ps(tmp + i * kNR256 + 8, acc1[i]); }
  if (nr != kNR256 || (e.cin && e.cs > 1)) return StorePartial(tmp, kNR256, c, ldc, e, mr, nr);
  const __m256 va = _mm256_set1_ps(e.alpha), vb = _mm256_set1_ps(e.beta);
  for (int i = 0; i < mr; i++) {
    float* ci = c + i * ldc;
    __m256 v0 = _mm256_mul_ps(va, _mm256_load_ps(tmp + i * kNR256)), v1 = _mm256_mul_ps(va, _mm256_load_ps(tmp + i * kNR256 + 8));
    if (e.add) { v0 = _mm256_add_ps(_mm256_loadu_ps(ci), v0); v1 = _mm256_add_ps(_mm256_loadu_ps(ci + 8), v1); }
    else if (e.cin) {
      const float* r = e.cin + i * e.rs;
      const __m256 c0 = e.cs ? _mm256_loadu_ps(r) : _mm256_set1_ps(r[0]), c1 = e.cs ? _mm256_loadu_ps(r + 8) : c0;
      v0 = _mm256_add_ps(v0, _mm256_mul_ps(vb, c0));
      v1 = _mm256_add_ps(v1, _mm256_mul_ps(vb, c1));
    }
    _mm256_storeu_ps(ci, v0);
    _mm256_storeu_ps(ci + 8, v1);
  }
}
#endif

// Blocking for one ISA: MC x KC of A stays in L2, a KC x NR strip of B streams through L1.
template <int MR, int NR>
struct Blocking {
  static constexpr int kKC = MR >= 14 ? 512 : 256;
  static constexpr int kMC = MR * (MR >= 14 ? 12 : 20);
  static constexpr int kNC = 4096;
};

template <int MR, int NR>
void Run(const Sgemm& g, int m0, int m1, int n0, int n1, MicroKernel kernel) {
  using P = Blocking<MR, NR>;
  const int M = m1 - m0, N = n1 - n0, K = g.K;
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    // an empty sum: alpha * 0 (+ C or beta * Cin)
    if (!g.accumulate)
      for (int i = m0; i < m1; i++)
        for (int j = n0; j < n1; j++) g.C[(long)i * g.ldc + j] = g.Cin ? g.beta * g.Cin[i * g.cin_rs + j * g.cin_cs] : 0.f;
    return;
  }
  const int ncmax = std::min(P::kNC, (N + NR - 1) / NR * NR), kcmax = std::min(P::kKC, K);
  const int mcmax = std::min(P::kMC, (M + MR - 1) / MR * MR);
  float* pb = PackBuffers::Grow(t_pack.b, t_pack.b_cap, (size_t)kcmax * ncmax);
  float* pa = PackBuffers::Grow(t_pack.a, t_pack.a_cap, (size_t)kcmax * mcmax);
  if (!pa || !pb) std::abort();  // out of memory for a few hundred KiB: nothing sensible left to do
  for (int jc = 0; jc < N; jc += P::kNC) {
    const int nc = std::min(P::kNC, N - jc);
    for (int pc = 0; pc < K; pc += P::kKC) {
      const int kc = std::min(P::kKC, K - pc);
      const bool add = g.accumulate || pc > 0;
      const bool with_cin = !add && g.Cin;
      PackB<NR>(g, pc, kc, n0 + jc, nc, pb);
      for (int ic = 0; ic < M; ic += P::kMC) {
        const int mc = std::min(P::kMC, M - ic);
        PackA<MR>(g, m0 + ic, mc, pc, kc, pa);
        for (int jr = 0; jr < nc; jr += NR) {
          const float* bs = pb + (long)jr * kc;
          for (int ir = 0; ir < mc; ir += MR) {
            const long row = m0 + ic + ir, col = n0 + jc + jr;
            const Epilogue e{g.alpha, add, with_cin ? g.Cin + row * g.cin_rs + col * g.cin_cs : nullptr, g.cin_rs, g.cin_cs, g.beta};
            kernel(kc, pa + (long)ir * kc, bs, g.C + row * g.ldc + col, g.ldc, e, std::min(MR, mc - ir), std::min(NR, nc - jr));
          }
        }
      }
    }
  }
}

enum class Isa { kNone, kAvx2, kAvx512 };

Isa TheIsa() {
  static const Isa isa = [] {
    // the CPU level (JAXTS_CPU caps it); below AVX2 there is no fast kernel and ORT keeps the GEMMs.
    // JAXTS_SGEMM=avx2 / none narrows the choice further (tests and benchmarks of the fallbacks)
    const CpuLevel level = TheCpuLevel();
    const Isa found = level == CpuLevel::kAvx512 ? Isa::kAvx512 : level == CpuLevel::kAvx2 ? Isa::kAvx2 : Isa::kNone;
    const char* want = std::getenv("JAXTS_SGEMM");
    if (want && std::strcmp(want, "none") == 0) return Isa::kNone;
    if (want && std::strcmp(want, "avx2") == 0 && found != Isa::kNone) return Isa::kAvx2;
    return found;
  }();
  return isa;
}

}  // namespace

const char* SgemmKernelName() {
  switch (TheIsa()) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    default: return nullptr;
  }
}

int SgemmTileRows() { return TheIsa() == Isa::kAvx512 ? 14 : 6; }
int SgemmTileCols() { return TheIsa() == Isa::kAvx512 ? 32 : 16; }

void SgemmBlock(const Sgemm& g, int m0, int m1, int n0, int n1) {
#ifdef JAXTS_X86
  switch (TheIsa()) {
    case Isa::kAvx512: return Run<kMR512, kNR512>(g, m0, m1, n0, n1, Kernel512);
    case Isa::kAvx2: return Run<kMR256, kNR256>(g, m0, m1, n0, n1, Kernel256);
    default: break;
  }
#endif
  // no fast kernel: a plain loop (callers normally check SgemmKernelName() first)
  for (int i = m0; i < m1; i++)
    for (int j = n0; j < n1; j++) {
      float s = 0.f;
      for (int k = 0; k < g.K; k++) {
        const float a = g.transA ? g.A[(long)k * g.lda + i] : g.A[(long)i * g.lda + k];
        const float b = g.transB ? g.B[(long)j * g.ldb + k] : g.B[(long)k * g.ldb + j];
        s += a * b;
      }
      float* c = g.C + (long)i * g.ldc + j;
      *c = g.accumulate ? *c + g.alpha * s : g.Cin ? g.alpha * s + g.beta * g.Cin[i * g.cin_rs + j * g.cin_cs] : g.alpha * s;
    }
}

}  // namespace jaxts
