/** @file jaxts's float32 GEMM (packed, cache-blocked, AVX-512 / AVX2 micro-kernels chosen at run time). */
#pragma once

namespace jaxts {

/**
 * C[m, n] = alpha * sum_k op(A)[m, k] * op(B)[k, n] (+ C[m, n] when accumulating, or + beta * Cin[m * cin_rs + n * cin_cs]
 * with a broadcast addend), row-major storage, op = optional transpose.
 */
struct Sgemm {
  int M, N, K;
  const float* A;  // op(A)[i, k] = transA ? A[k * lda + i] : A[i * lda + k]
  long lda;
  bool transA;
  const float* B;  // op(B)[k, j] = transB ? B[j * ldb + k] : B[k * ldb + j]
  long ldb;
  bool transB;
  float alpha;
  float* C;
  long ldc;
  bool accumulate;  // true: C += alpha * AB (C holds the addend); false: C = alpha * AB (+ beta * Cin)
  const float* Cin = nullptr;  // optional addend, read through strides (0 = broadcast along that axis)
  long cin_rs = 0, cin_cs = 0;
  float beta = 1.f;
};

/** The micro-kernel this CPU runs: "avx512", "avx2" or nullptr (no fast kernel: leave GEMMs to ONNX Runtime). */
const char* SgemmKernelName();

/** Computes the block rows [m0, m1) x columns [n0, n1) of C; disjoint blocks may run on different threads. */
void SgemmBlock(const Sgemm& g, int m0, int m1, int n0, int n1);

/** Rows / columns a block should be a multiple of (the micro-tile), for splitting work between threads. */
int SgemmTileRows();
int SgemmTileCols();

}  // namespace jaxts
